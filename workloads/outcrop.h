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

/* Profile tags (the RPA paper, §3.1): two bits per instruction that split its class, so a
 * query can ask for "stores with tag 1" only. Outcrop keeps them beside the code: each tagged
 * instruction's address and tag go into the non-allocated section `outcrop_tags` (pairs of
 * 64-bit words), which `outcrop run --query` reads; other machines ignore the section, so a
 * tagged binary runs unchanged under qemu or on hardware.
 *
 * OUTCROP_TAG_HERE(tag) is an assembly string that tags the instruction written right after
 * it, for use inside __asm__. OUTCROP_TAG_NEXT(tag) tags whatever instruction the compiler
 * emits next (it decides what that is: check with objdump, or prefer OUTCROP_STORE_REF).
 * OUTCROP_STORE_REF(slot, value, tag) stores the pointer-sized `value` at `slot` with one
 * `sd` that carries the tag: exact, as a VM's reference stores would be (Figure 2c). */
#define OUTCROP_TAG_HERE(tag)                                                       \
    "1:\n"                                                                           \
    ".pushsection outcrop_tags,\"\",@progbits\n"                                       \
    ".balign 8\n"                                                                    \
    ".quad 1b\n"                                                                     \
    ".quad " #tag "\n"                                                               \
    ".popsection\n"

#define OUTCROP_TAG_NEXT(tag) __asm__ volatile(OUTCROP_TAG_HERE(tag))

#define OUTCROP_STORE_REF(slot, value, tag)                                         \
    __asm__ volatile(OUTCROP_TAG_HERE(tag) "sd %1, 0(%0)"                           \
                     : : "r"(slot), "r"(value) : "memory")
#endif

#endif /* OUTCROP_H */
