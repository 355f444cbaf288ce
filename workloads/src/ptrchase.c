/* ptrchase: pointer chasing through a randomly permuted linked list (~40 MiB).
 *
 * The nodes live in 40 separately malloc'd 1 MiB chunks (each one an mmap in
 * glibc). A Fisher-Yates shuffle of the node indices decides the order in which
 * the nodes are linked into a single cycle, so consecutive hops land far apart.
 * Several passes walk the cycle: read-only sums, a read-modify-write pass, and a
 * pass that follows a second "skip" pointer. Each hop depends on the previous
 * load, so the workload is bound by memory latency, not by arithmetic. */
#include <stdio.h>
#include <stdlib.h>

#define CHUNK_BYTES (1u << 20)
#define NCHUNKS 40

struct node {
    struct node *next;
    struct node *skip; /* the node 1000 hops ahead */
    unsigned key;
    unsigned visits;
    unsigned long payload;
};

#define PER_CHUNK (CHUNK_BYTES / sizeof(struct node))
#define NNODES ((unsigned)(PER_CHUNK * NCHUNKS))

static struct node *chunks[NCHUNKS];

static struct node *node_at(unsigned i)
{
    return &chunks[i / PER_CHUNK][i % PER_CHUNK];
}

static unsigned long long rng = 0x853c49e6748fea9bull;

static unsigned next_rand(void)
{
    /* A 64-bit LCG; return the high word. */
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 32);
}

int main(void)
{
    for (int c = 0; c < NCHUNKS; c++) {
        chunks[c] = malloc(CHUNK_BYTES);
        if (!chunks[c]) return 1;
    }
    unsigned *order = malloc(NNODES * sizeof *order);
    if (!order) return 1;
    for (unsigned i = 0; i < NNODES; i++) {
        order[i] = i;
        struct node *n = node_at(i);
        n->key = i * 2654435761u;
        n->visits = 0;
        n->payload = (unsigned long)i * 40503u;
    }
    for (unsigned i = NNODES - 1; i > 0; i--) {
        unsigned j = next_rand() % (i + 1);
        unsigned t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (unsigned i = 0; i < NNODES; i++) {
        node_at(order[i])->next = node_at(order[(i + 1) % NNODES]);
        node_at(order[i])->skip = node_at(order[(i + 1000) % NNODES]);
    }
    struct node *head = node_at(order[0]);
    free(order);

    printf("%u nodes of %zu bytes in %d chunks (%u MiB)\n", NNODES, sizeof(struct node),
           NCHUNKS, (unsigned)(NCHUNKS * (CHUNK_BYTES >> 20)));

    unsigned long long check = 0;
    /* Read-only passes. */
    for (int pass = 0; pass < 2; pass++) {
        unsigned long sum = 0;
        unsigned count = 0, odd = 0;
        const struct node *n = head;
        do {
            sum += n->payload ^ n->key;
            odd += n->key & 1u;
            count++;
            n = n->next;
        } while (n != head);
        printf("pass %d: %u hops, %u odd keys, sum %016lx\n", pass, count, odd, sum);
        check = check * 31 + sum + count;
    }

    /* Read-modify-write pass: each node accumulates its predecessor's key. */
    {
        struct node *n = head;
        unsigned carry = 7;
        do {
            n->visits++;
            n->payload += carry;
            carry = (n->key >> 3) ^ (carry * 5u);
            n = n->next;
        } while (n != head);
        check = check * 31 + carry;
    }

    /* Skip pointers: a cycle of NNODES hops along 1000-step jumps also returns home
     * after NNODES / gcd(NNODES, 1000) hops. */
    {
        unsigned long sum = 0;
        unsigned hops = 0;
        const struct node *n = head;
        do {
            sum += n->payload % 1000003u;
            hops++;
            n = n->skip;
        } while (n != head);
        printf("skip pass: %u hops, sum %lu\n", hops, sum);
        check = check * 31 + sum + hops;
    }

    /* Final linear sweep in address order to verify that every node was visited once. */
    unsigned bad = 0;
    for (unsigned i = 0; i < NNODES; i++)
        if (node_at(i)->visits != 1) bad++;
    printf("nodes not visited exactly once: %u\n", bad);

    for (int c = 0; c < NCHUNKS; c++) free(chunks[c]);
    printf("checksum ptrchase %016llx\n", check);
    return bad ? 1 : 0;
}
