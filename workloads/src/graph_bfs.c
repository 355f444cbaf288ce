/* graph_bfs: traversals of a random sparse undirected graph in CSR form.
 *
 * Build: random edge list -> degree count -> prefix sums -> adjacency array.
 * Then: breadth-first search from several sources (distance histogram),
 * iterative depth-first search with an explicit stack (visit order hash),
 * and connected components twice (BFS labelling and union-find with path
 * halving), which must agree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NV 250000
#define NE 190000 /* average degree 1.52: a giant component plus many small ones */

static unsigned long long rng = 0x2545f4914f6cdd1dull;

static unsigned next_rand(void)
{
    rng = rng * 6364136223846793005ull + 1ull;
    return (unsigned)(rng >> 33);
}

struct csr {
    int *offset; /* NV + 1 */
    int *adj;    /* 2 * NE */
};

static void build(struct csr *g, const int *src, const int *dst)
{
    g->offset = calloc(NV + 1, sizeof(int));
    g->adj = malloc(2 * NE * sizeof(int));
    int *fill = malloc(NV * sizeof(int));
    for (int e = 0; e < NE; e++) {
        g->offset[src[e] + 1]++;
        g->offset[dst[e] + 1]++;
    }
    for (int v = 0; v < NV; v++) g->offset[v + 1] += g->offset[v];
    memcpy(fill, g->offset, NV * sizeof(int));
    for (int e = 0; e < NE; e++) {
        g->adj[fill[src[e]]++] = dst[e];
        g->adj[fill[dst[e]]++] = src[e];
    }
    free(fill);
}

/* Returns the number of reached vertices; fills dist (-1 = unreached). */
static int bfs(const struct csr *g, int source, int *dist, int *queue)
{
    for (int v = 0; v < NV; v++) dist[v] = -1;
    int head = 0, tail = 0;
    dist[source] = 0;
    queue[tail++] = source;
    while (head < tail) {
        int v = queue[head++];
        for (int i = g->offset[v]; i < g->offset[v + 1]; i++) {
            int w = g->adj[i];
            if (dist[w] < 0) {
                dist[w] = dist[v] + 1;
                queue[tail++] = w;
            }
        }
    }
    return tail;
}

static unsigned long long dfs_all(const struct csr *g, int *stack, unsigned char *seen)
{
    unsigned long long h = 1469598103934665603ull;
    memset(seen, 0, NV);
    long order = 0;
    for (int root = 0; root < NV; root++) {
        if (seen[root]) continue;
        int sp = 0;
        stack[sp++] = root;
        while (sp > 0) {
            int v = stack[--sp];
            if (seen[v]) continue;
            seen[v] = 1;
            h = (h ^ (unsigned long long)v) * 1099511628211ull ^ (unsigned long long)(order++);
            for (int i = g->offset[v + 1] - 1; i >= g->offset[v]; i--)
                if (!seen[g->adj[i]]) stack[sp++] = g->adj[i];
        }
    }
    return h;
}

static int find(int *parent, int x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

int main(void)
{
    int *src = malloc(NE * sizeof(int)), *dst = malloc(NE * sizeof(int));
    for (int e = 0; e < NE; e++) {
        src[e] = (int)(next_rand() % NV);
        /* Mostly local edges, some long-range ones. */
        if (next_rand() % 4u)
            dst[e] = (src[e] + 1 + (int)(next_rand() % 64u)) % NV;
        else
            dst[e] = (int)(next_rand() % NV);
    }
    struct csr g;
    build(&g, src, dst);

    int *dist = malloc(NV * sizeof(int)), *queue = malloc(NV * sizeof(int));
    int *stack = malloc(2 * NE * sizeof(int) + NV * sizeof(int));
    unsigned char *seen = malloc(NV);
    unsigned long long check = 0;

    /* BFS from several sources. */
    for (int s = 0; s < 10; s++) {
        /* Sources with at least two neighbours, so most land in the giant component. */
        int source = (int)(next_rand() % NV);
        while (g.offset[source + 1] - g.offset[source] < 2) source = (source + 1) % NV;
        int reached = bfs(&g, source, dist, queue);
        long total = 0;
        int maxd = 0;
        for (int v = 0; v < NV; v++)
            if (dist[v] >= 0) {
                total += dist[v];
                if (dist[v] > maxd) maxd = dist[v];
            }
        double mean = reached > 1 ? (double)total / (reached - 1) : 0.0;
        printf("bfs from %6d: reached %6d eccentricity %3d mean distance %.4f\n", source,
               reached, maxd, mean);
        check = check * 31 + (unsigned long long)total + (unsigned long long)reached;
    }

    unsigned long long dfs_hash = dfs_all(&g, stack, seen);
    printf("dfs order hash %016llx\n", dfs_hash);
    check ^= dfs_hash;

    /* Components by BFS labelling. */
    int *label = malloc(NV * sizeof(int));
    for (int v = 0; v < NV; v++) label[v] = -1;
    int ncomp = 0, largest = 0, isolated = 0;
    for (int v = 0; v < NV; v++) {
        if (label[v] >= 0) continue;
        int head = 0, tail = 0;
        queue[tail++] = v;
        label[v] = ncomp;
        while (head < tail) {
            int x = queue[head++];
            for (int i = g.offset[x]; i < g.offset[x + 1]; i++)
                if (label[g.adj[i]] < 0) {
                    label[g.adj[i]] = ncomp;
                    queue[tail++] = g.adj[i];
                }
        }
        if (tail > largest) largest = tail;
        if (tail == 1) isolated++;
        ncomp++;
    }

    /* Components by union-find; must agree with the labelling. */
    int *parent = malloc(NV * sizeof(int));
    for (int v = 0; v < NV; v++) parent[v] = v;
    int uf_comp = NV;
    for (int e = 0; e < NE; e++) {
        int a = find(parent, src[e]), b = find(parent, dst[e]);
        if (a != b) {
            if (a < b) parent[b] = a;
            else parent[a] = b;
            uf_comp--;
        }
    }
    int disagree = uf_comp != ncomp;
    for (int e = 0; e < NE; e++)
        if (label[src[e]] != label[dst[e]]) disagree = 1;

    printf("components %d (union-find %d), largest %d, isolated %d, agree %s\n", ncomp,
           uf_comp, largest, isolated, disagree ? "NO" : "yes");
    check = check * 1000003ull + (unsigned long long)ncomp * 7 + (unsigned long long)largest;

    free(src);
    free(dst);
    free(g.offset);
    free(g.adj);
    free(dist);
    free(queue);
    free(stack);
    free(seen);
    free(label);
    free(parent);
    printf("checksum graph_bfs %016llx\n", check);
    return disagree;
}
