/* hashtable: two hash tables driven by the same pseudo-random operation stream.
 *
 * - open addressing with linear probing and tombstones, 64-bit integer keys,
 *   power-of-two capacity, rehash on growth;
 * - separate chaining with string keys (strlen/memcmp/memcpy), malloc'd nodes,
 *   prime bucket count (so the bucket index uses an unsigned remainder).
 * Inserts, lookups and deletes are mixed; both tables must agree on every answer.
 * Operation statistics are kept with __atomic builtins (AMO / LR-SC instructions;
 * the program has one thread, the atomics are only there to exercise the A extension). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long u64;

static u64 lcg_state = 0x9e3779b97f4a7c15ull;

static u64 next_u64(void)
{
    /* 64-bit LCG (Knuth MMIX constants), high bits are the good ones. */
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return lcg_state;
}

static u64 mix64(u64 x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* ---------- open addressing ---------- */

enum { SLOT_EMPTY = 0, SLOT_FULL = 1, SLOT_DEAD = 2 };

struct oa_slot {
    u64 key;
    long value;
    unsigned char state;
};

struct oa_table {
    struct oa_slot *slots;
    unsigned long cap; /* power of two */
    unsigned long used; /* full + dead */
    unsigned long live;
};

static void oa_init(struct oa_table *t, unsigned long cap)
{
    t->slots = calloc(cap, sizeof *t->slots);
    t->cap = cap;
    t->used = 0;
    t->live = 0;
}

static void oa_insert(struct oa_table *t, u64 key, long value);

static void oa_grow(struct oa_table *t)
{
    struct oa_slot *old = t->slots;
    unsigned long old_cap = t->cap;
    unsigned long new_cap = t->live * 4 > old_cap ? old_cap * 2 : old_cap;
    oa_init(t, new_cap);
    for (unsigned long i = 0; i < old_cap; i++)
        if (old[i].state == SLOT_FULL) oa_insert(t, old[i].key, old[i].value);
    free(old);
}

/* Returns 1 if the key was new. */
static int oa_put(struct oa_table *t, u64 key, long value)
{
    if ((t->used + 1) * 10 > t->cap * 7) oa_grow(t);
    unsigned long mask = t->cap - 1;
    unsigned long i = mix64(key) & mask;
    long first_dead = -1;
    for (;;) {
        struct oa_slot *s = &t->slots[i];
        if (s->state == SLOT_EMPTY) break;
        if (s->state == SLOT_FULL && s->key == key) {
            s->value = value;
            return 0;
        }
        if (s->state == SLOT_DEAD && first_dead < 0) first_dead = (long)i;
        i = (i + 1) & mask;
    }
    if (first_dead >= 0) {
        i = (unsigned long)first_dead;
    } else {
        t->used++;
    }
    t->slots[i].key = key;
    t->slots[i].value = value;
    t->slots[i].state = SLOT_FULL;
    t->live++;
    return 1;
}

static void oa_insert(struct oa_table *t, u64 key, long value)
{
    oa_put(t, key, value);
}

static struct oa_slot *oa_find(struct oa_table *t, u64 key)
{
    unsigned long mask = t->cap - 1;
    unsigned long i = mix64(key) & mask;
    while (t->slots[i].state != SLOT_EMPTY) {
        if (t->slots[i].state == SLOT_FULL && t->slots[i].key == key) return &t->slots[i];
        i = (i + 1) & mask;
    }
    return NULL;
}

static int oa_delete(struct oa_table *t, u64 key)
{
    struct oa_slot *s = oa_find(t, key);
    if (!s) return 0;
    s->state = SLOT_DEAD;
    t->live--;
    return 1;
}

/* ---------- separate chaining with string keys ---------- */

struct node {
    struct node *next;
    long value;
    unsigned len;
    char key[]; /* NUL terminated */
};

#define NBUCKETS 40009u /* prime */

struct chain_table {
    struct node *buckets[NBUCKETS];
    unsigned long live;
};

static unsigned hash_str(const char *s, unsigned len)
{
    unsigned h = 2166136261u;
    for (unsigned i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

static struct node **ch_slot(struct chain_table *t, const char *key)
{
    unsigned len = (unsigned)strlen(key);
    struct node **pp = &t->buckets[hash_str(key, len) % NBUCKETS];
    while (*pp) {
        if ((*pp)->len == len && memcmp((*pp)->key, key, len) == 0) break;
        pp = &(*pp)->next;
    }
    return pp;
}

static int ch_put(struct chain_table *t, const char *key, long value)
{
    struct node **pp = ch_slot(t, key);
    if (*pp) {
        (*pp)->value = value;
        return 0;
    }
    unsigned len = (unsigned)strlen(key);
    struct node *n = malloc(sizeof *n + len + 1);
    if (!n) exit(1);
    n->next = NULL;
    n->value = value;
    n->len = len;
    memcpy(n->key, key, len + 1);
    *pp = n;
    t->live++;
    return 1;
}

static struct node *ch_find(struct chain_table *t, const char *key)
{
    return *ch_slot(t, key);
}

static int ch_delete(struct chain_table *t, const char *key)
{
    struct node **pp = ch_slot(t, key);
    struct node *n = *pp;
    if (!n) return 0;
    *pp = n->next;
    free(n);
    t->live--;
    return 1;
}

/* Turns a number into a short key string like "k-3f2a-17". */
static void make_key(char *buf, u64 k)
{
    static const char hex[] = "0123456789abcdef";
    char *p = buf;
    *p++ = 'k';
    *p++ = '-';
    unsigned v = (unsigned)(k % 65521u);
    do {
        *p++ = hex[v & 15u];
        v >>= 4;
    } while (v);
    *p++ = '-';
    unsigned w = (unsigned)(k / 65521u);
    do {
        *p++ = (char)('0' + w % 10u);
        w /= 10u;
    } while (w);
    *p = 0;
}

static struct chain_table chains;

static long stat_ops, stat_hits, stat_inserts, stat_deletes;
static int stat_max_live;

int main(void)
{
    struct oa_table oa;
    oa_init(&oa, 1024);
    u64 check = 0;
    int mismatches = 0;
    char key[40];
    const unsigned key_space = 60000;

    for (long op = 0; op < 300000; op++) {
        u64 r = next_u64();
        u64 k = (r >> 40) % key_space;
        unsigned kind = (unsigned)(r >> 20) & 15u;
        make_key(key, k);
        __atomic_fetch_add(&stat_ops, 1, __ATOMIC_RELAXED);
        if (kind < 6) {
            long v = (long)(r & 0xfffff) - 0x80000;
            int a = oa_put(&oa, k, v);
            int b = ch_put(&chains, key, v);
            if (a != b) mismatches++;
            if (a) __atomic_fetch_add(&stat_inserts, 1, __ATOMIC_RELAXED);
        } else if (kind < 13) {
            struct oa_slot *s = oa_find(&oa, k);
            struct node *n = ch_find(&chains, key);
            if ((s == NULL) != (n == NULL) || (s && s->value != n->value)) mismatches++;
            if (s) {
                __atomic_fetch_add(&stat_hits, 1, __ATOMIC_RELAXED);
                check = check * 31u + (u64)s->value + k;
            } else {
                check ^= k << 7;
            }
        } else {
            int a = oa_delete(&oa, k);
            int b = ch_delete(&chains, key);
            if (a != b) mismatches++;
            if (a) __atomic_fetch_add(&stat_deletes, 1, __ATOMIC_RELAXED);
        }
        int live = (int)oa.live;
        int cur = __atomic_load_n(&stat_max_live, __ATOMIC_RELAXED);
        while (live > cur &&
               !__atomic_compare_exchange_n(&stat_max_live, &cur, live, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_RELAXED)) {
        }
    }
    if (oa.live != chains.live) mismatches++;

    /* Walk both tables: the sums of live values must agree. */
    long sum_oa = 0, sum_ch = 0;
    for (unsigned long i = 0; i < oa.cap; i++)
        if (oa.slots[i].state == SLOT_FULL) sum_oa += oa.slots[i].value;
    unsigned long longest = 0;
    for (unsigned b = 0; b < NBUCKETS; b++) {
        unsigned long len = 0;
        for (struct node *n = chains.buckets[b]; n; n = n->next) {
            sum_ch += n->value;
            len++;
        }
        if (len > longest) longest = len;
    }
    if (sum_oa != sum_ch) mismatches++;

    printf("ops %ld hits %ld inserts %ld deletes %ld max-live %d\n", stat_ops, stat_hits,
           stat_inserts, stat_deletes, stat_max_live);
    printf("live %lu capacity %lu longest-chain %lu value-sum %ld mismatches %d\n", oa.live,
           oa.cap, longest, sum_oa, mismatches);

    for (unsigned b = 0; b < NBUCKETS; b++) {
        struct node *n = chains.buckets[b];
        while (n) {
            struct node *next = n->next;
            free(n);
            n = next;
        }
    }
    free(oa.slots);
    printf("checksum hashtable %016llx\n", check ^ (u64)sum_oa);
    return mismatches ? 1 : 0;
}
