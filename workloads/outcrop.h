/* outcrop.h -- Outcrop's guest-side ISA extension: branch-on-random.
 *
 * brr LEVEL, TARGET is a branch taken with probability (1/2)^(LEVEL+1), LEVEL 0..15
 * (1/2 down to 1/65536), decided by the machine (an LFSR at decode; docs/machine.md
 * "Branch-on-random"). It is encoded in RISC-V's custom-0 major opcode (0x0b) with the
 * J-type immediate of jal (an offset of +-1 MiB) and LEVEL in the rd field:
 *
 *     31........12  11  10..7   6......0
 *     imm[20|10:1|11|19:12]  0  LEVEL   0001011
 *
 * In assembly (GNU as), after including this header or copying the macro:
 *
 *     brr 9, 1f          # taken once in 1024 executions, on average
 *
 * In C:
 *
 *     if (OUTCROP_BRR(9)) record_sample();
 *
 * Machines without brr (qemu, real hardware) raise SIGILL on it; a SIGILL handler that
 * emulates it in software keeps such binaries running there (the paper's method, §3.4).
 */
#ifndef OUTCROP_H
#define OUTCROP_H

#ifdef __ASSEMBLER__
.macro brr level, target
    .insn j 0x0b, x\level, \target
.endm
#else
__asm__(".macro brr level, target\n"
        "    .insn j 0x0b, x\\level, \\target\n"
        ".endm\n");

/* 1 when a brr of LEVEL (a literal 0..15) is taken, else 0. The taken path is out of line,
 * so the common case falls through (the paper's Figure 8 layout). */
#define OUTCROP_BRR(level)                                                          \
    __extension__({                                                                 \
        __label__ outcrop_taken_, outcrop_done_;                                    \
        int outcrop_t_ = 0;                                                         \
        __asm__ goto("brr " #level ", %l0" : : : : outcrop_taken_);                 \
        goto outcrop_done_;                                                         \
    outcrop_taken_: __attribute__((cold));                                          \
        outcrop_t_ = 1;                                                             \
    outcrop_done_:                                                                  \
        outcrop_t_;                                                                 \
    })
#endif

#endif /* OUTCROP_H */
