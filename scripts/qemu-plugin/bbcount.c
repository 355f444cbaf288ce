/*
 * bbcount: the peer for Outcrop's observed-run benchmarks (docs/BENCHMARKS.md, "The
 * compiling tier"): an exact block profile from qemu-user, every translation block's
 * executions counted by an inline add that TCG compiles into the block.
 *
 * Build (Debian 12's dynamic qemu-user 7.2 loads plugins of API version 1):
 *     cc -O2 -shared -fPIC -o bbcount.so scripts/qemu-plugin/bbcount.c
 * Run:
 *     qemu-riscv64 -plugin ./bbcount.so,out=blocks.txt ./prog args
 * At exit it writes one line per block, "vaddr instructions executions" (hexadecimal vaddr),
 * sorted by address, to the file `out=` names (none: only the totals), and the totals
 * ("blocks N instructions N") to qemu's plugin output (stderr).
 *
 * The few declarations of qemu's plugin API (include/qemu/qemu-plugin.h, version 1) this
 * needs are written here, so that building it needs no qemu source tree.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id,
                                               struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
                                           qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
                                              enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb,
                                    void *userdata);
void qemu_plugin_outs(const char *string);

#define EXPORT __attribute__((visibility("default")))
EXPORT int qemu_plugin_version = 1;

/* One block: where it starts, its instructions, its executions (the inline add's target). */
struct block {
    uint64_t vaddr;
    uint64_t insns;
    uint64_t count;
};

/* Blocks by (vaddr, insns) in an open-addressing table of pointers; blocks are allocated
 * one by one and never move, so TCG's inline adds keep pointing at them. */
static struct block **table;
static size_t cap = 1 << 16, used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *out_path;

static size_t slot(uint64_t vaddr, uint64_t insns)
{
    uint64_t h = (vaddr ^ (insns << 48)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

static void grow(void)
{
    struct block **old = table;
    size_t old_cap = cap;
    cap *= 2;
    table = calloc(cap, sizeof *table);
    if (!table) {
        abort();
    }
    for (size_t i = 0; i < old_cap; i++) {
        struct block *b = old[i];
        if (b) {
            size_t j = slot(b->vaddr, b->insns);
            while (table[j]) {
                j = (j + 1) & (cap - 1);
            }
            table[j] = b;
        }
    }
    free(old);
}

static struct block *lookup(uint64_t vaddr, uint64_t insns)
{
    size_t j = slot(vaddr, insns);
    while (table[j]) {
        if (table[j]->vaddr == vaddr && table[j]->insns == insns) {
            return table[j];
        }
        j = (j + 1) & (cap - 1);
    }
    struct block *b = calloc(1, sizeof *b);
    if (!b) {
        abort();
    }
    b->vaddr = vaddr;
    b->insns = insns;
    table[j] = b;
    if (++used * 2 > cap) {
        grow();
    }
    return b;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
    uint64_t insns = qemu_plugin_tb_n_insns(tb);
    pthread_mutex_lock(&lock);
    struct block *b = lookup(vaddr, insns);
    pthread_mutex_unlock(&lock);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->count, 1);
}

static int by_vaddr(const void *a, const void *b)
{
    const struct block *x = *(struct block *const *)a, *y = *(struct block *const *)b;
    if (x->vaddr != y->vaddr) {
        return x->vaddr < y->vaddr ? -1 : 1;
    }
    return x->insns < y->insns ? -1 : x->insns > y->insns;
}

static void at_exit(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    struct block **list = malloc((used + 1) * sizeof *list);
    size_t n = 0;
    uint64_t total = 0;
    for (size_t i = 0; list && i < cap; i++) {
        if (table[i]) {
            list[n++] = table[i];
            total += table[i]->insns * table[i]->count;
        }
    }
    if (out_path && list) {
        qsort(list, n, sizeof *list, by_vaddr);
        FILE *f = fopen(out_path, "w");
        if (f) {
            for (size_t i = 0; i < n; i++) {
                fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n", list[i]->vaddr,
                        list[i]->insns, list[i]->count);
            }
            fclose(f);
        }
    }
    char line[128];
    snprintf(line, sizeof line, "blocks %zu instructions %" PRIu64 "\n", n, total);
    qemu_plugin_outs(line);
    free(list);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                               char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            out_path = strdup(argv[i] + 4);
        }
    }
    table = calloc(cap, sizeof *table);
    if (!table) {
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
