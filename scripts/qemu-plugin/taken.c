/*
 * taken: counts the taken control transfers of a program run under qemu-user (any ISA) -- the
 * peer measure for BOLT's effect where no PMU counts branches (docs/BENCHMARKS.md, "Standard
 * formats out"). A transfer is taken when a translation block starts anywhere but where the
 * previously executed block ended (a block also ends at a not-taken branch or a page limit,
 * and then the next starts where it ended). Calls, returns and jumps count as taken, as an
 * LBR records them. One guest thread is assumed.
 *
 * Build (Debian 12's dynamic qemu-user 7.2 loads plugins of API version 1):
 *     cc -O2 -shared -fPIC -o taken.so scripts/qemu-plugin/taken.c
 * Run:
 *     qemu-x86_64 -plugin ./taken.so ./prog args      # prints "taken N blocks N" on stderr
 *     qemu-x86_64 -plugin ./taken.so,lo=0x401000,hi=0x40a000 ./prog   # transfers from there
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id,
                                               struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
                                           qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
                                          qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb,
                                    void *userdata);
void qemu_plugin_outs(const char *string);

#define EXPORT __attribute__((visibility("default")))
EXPORT int qemu_plugin_version = 1;

/* A block's extent; allocated once per translation and never freed (qemu keeps its
 * callbacks' data for the life of the translation). */
struct extent {
    uint64_t start;
    uint64_t end;
};

static uint64_t prev_end, prev_last, taken, blocks;
static uint64_t lo = 0, hi = UINT64_MAX;

static void exec(unsigned int vcpu, void *udata)
{
    (void)vcpu;
    const struct extent *e = udata;
    blocks++;
    if (prev_end != 0 && e->start != prev_end && prev_last >= lo && prev_last < hi) {
        taken++;
    }
    prev_end = e->end;
    prev_last = e->end - 1;
}

static void trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    if (n == 0) {
        return;
    }
    struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
    struct extent *e = malloc(sizeof *e);
    if (!e) {
        abort();
    }
    e->start = qemu_plugin_tb_vaddr(tb);
    e->end = qemu_plugin_insn_vaddr(last) + qemu_plugin_insn_size(last);
    qemu_plugin_register_vcpu_tb_exec_cb(tb, exec, QEMU_PLUGIN_CB_NO_REGS, e);
}

static void done(qemu_plugin_id_t id, void *p)
{
    (void)id;
    (void)p;
    char line[128];
    snprintf(line, sizeof line, "taken %" PRIu64 " blocks %" PRIu64 "\n", taken, blocks);
    qemu_plugin_outs(line);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                               char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "lo=", 3) == 0) {
            lo = strtoull(argv[i] + 3, NULL, 0);
        } else if (strncmp(argv[i], "hi=", 3) == 0) {
            hi = strtoull(argv[i] + 3, NULL, 0);
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, trans);
    qemu_plugin_register_atexit_cb(id, done, NULL);
    return 0;
}
