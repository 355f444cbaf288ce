/* outcrop_rt.c -- the runtime of `outcrop instrument`'s counting instrumentation.
 *
 * Link it into a program whose assembly `outcrop instrument` rewrote:
 *
 *     riscv64-linux-gnu-gcc -O2 -static -o prog prog.instrumented.s outcrop_rt.c
 *
 * It does two things, both from a constructor, so the program's own code is unchanged:
 *
 * 1. At exit, if $OUTCROP_PROFILE names a file, it writes one `COUNT NAME` line per site
 *    (docs/formats.md "Site profiles"), in the order the sites appear in each file, files in
 *    link order. Every rewritten file has a descriptor in section `outcrop_sites` (the linker
 *    defines __start_/__stop_outcrop_sites around them). A program that ends with _exit() or a
 *    signal writes nothing.
 *
 * 2. It emulates branch-on-random on machines without it (qemu-riscv64-static, real RISC-V
 *    hardware, `outcrop exec --brr trap`), the branch-on-random paper's §4.1 method: brr is
 *    an illegal instruction there, and a SIGILL handler decides it with the same 20-bit LFSR,
 *    taps and bit selection as Outcrop's machine (docs/machine.md "Branch-on-random"), kept in
 *    thread-local storage and seeded from $OUTCROP_BRR_SEED (default 0x5a5a5, the machine's
 *    default; $OUTCROP_BRR_LEAP steps per decision like --brr-leap, default 1), then moves the pc to the target or past the instruction. Any other illegal
 *    instruction gets the default action (the process dies of SIGILL, as without us).
 *
 * Written for this project; freestanding apart from libc's sigaction, getenv, atexit and
 * stdio.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

/* One per rewritten file; the layout `outcrop instrument` emits. */
struct outcrop_sites {
    uint64_t *counts;
    const char *names; /* `n` NUL-terminated names, back to back */
    uint64_t n;
    uint64_t interval; /* 1 for full instrumentation */
    uint64_t kind;     /* 0 full, 1 counter, 2 brr; +16 full duplication; +256 edge sites */
};

extern const struct outcrop_sites __start_outcrop_sites[] __attribute__((weak));
extern const struct outcrop_sites __stop_outcrop_sites[] __attribute__((weak));

/* The software counter (countdown, reset), defined by the rewritten files that use it. */
extern uint64_t __outcrop_counter[2] __attribute__((weak));

static void outcrop_dump(void) {
    const char *path = getenv("OUTCROP_PROFILE");
    if (!path || !*path) return;
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "outcrop_rt: cannot write the site profile to %s\n", path);
        return;
    }
    const struct outcrop_sites *d;
    uint64_t interval = 0;
    for (d = __start_outcrop_sites; d && d < __stop_outcrop_sites; d++) {
        if ((d->kind & 15) != 0) {
            if (interval && interval != d->interval)
                fprintf(stderr, "outcrop_rt: files instrumented at different intervals "
                                "(%llu and %llu)\n",
                        (unsigned long long)interval, (unsigned long long)d->interval);
            interval = d->interval;
        }
    }
    fprintf(f, "# outcrop instrument site counts; interval %llu\n",
            (unsigned long long)(interval ? interval : 1));
    for (d = __start_outcrop_sites; d && d < __stop_outcrop_sites; d++) {
        const char *name = d->names;
        for (uint64_t i = 0; i < d->n; i++) {
            fprintf(f, "%llu %s\n", (unsigned long long)d->counts[i], name);
            name += strlen(name) + 1;
        }
    }
    if (fclose(f) != 0) fprintf(stderr, "outcrop_rt: error writing %s\n", path);
}

/* The machine's default brr unit: a 20-bit Fibonacci LFSR, feedback taps 20 and 17, level k
 * taken when the first k+1 of these bits are all set. */
static _Thread_local uint32_t outcrop_lfsr;
static uint32_t outcrop_seed = 0x5a5a5;
static unsigned outcrop_leap = 1; /* LFSR steps per decision ($OUTCROP_BRR_LEAP, as --brr-leap) */
static const unsigned char outcrop_bits[16] = {0, 2, 5, 9, 14, 1, 7, 12, 18, 4, 11, 17, 3, 10, 16, 6};

static void outcrop_sigill(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)si;
    ucontext_t *uc = ctx;
    uintptr_t pc = uc->uc_mcontext.__gregs[0];
    uint16_t lo, hi;
    memcpy(&lo, (const void *)pc, 2); /* pc may be 2-aligned (compressed code) */
    if ((lo & 0x7f) != 0x0b || (lo & 0x800) != 0) {
        signal(SIGILL, SIG_DFL); /* not a brr: die as without the runtime */
        return;
    }
    memcpy(&hi, (const void *)(pc + 2), 2);
    uint32_t w = (uint32_t)lo | ((uint32_t)hi << 16);
    unsigned level = (w >> 7) & 15;
    int64_t off = ((int64_t)(int32_t)(w & 0x80000000u) >> 11) | (w & 0xff000) |
                  ((w >> 9) & 0x800) | ((w >> 20) & 0x7fe);
    if (outcrop_lfsr == 0) outcrop_lfsr = outcrop_seed;
    uint32_t m = 0;
    for (unsigned i = 0; i <= level; i++) m |= 1u << outcrop_bits[i];
    int taken = (outcrop_lfsr & m) == m;
    for (unsigned i = 0; i < outcrop_leap; i++)
        outcrop_lfsr = (outcrop_lfsr >> 1) | (((outcrop_lfsr ^ (outcrop_lfsr >> 3)) & 1) << 19);
    uc->uc_mcontext.__gregs[0] = taken ? pc + off : pc + 4;
}

__attribute__((constructor)) static void outcrop_init(void) {
    const char *seed = getenv("OUTCROP_BRR_SEED");
    if (seed && *seed) {
        uint32_t s = (uint32_t)strtoul(seed, 0, 0) & 0xfffff;
        outcrop_seed = s ? s : 0x5a5a5;
    }
    const char *leap = getenv("OUTCROP_BRR_LEAP");
    if (leap && *leap) {
        unsigned long l = strtoul(leap, 0, 0);
        outcrop_leap = l >= 1 && l <= 64 ? (unsigned)l : 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = outcrop_sigill;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGILL, &sa, 0);
    atexit(outcrop_dump);
}
