/* micro_random_branch: a loop whose one conditional branch depends on a
 * pseudo-random bit, taken about half of the time with no pattern to learn
 * (validation input for branch predictors).
 *
 * The bit is the top bit of xorshift64* output (the xorshift state times an odd
 * constant; the multiply makes the bit a nonlinear function of the state, so no
 * history-based predictor can do better than chance). One arm increments a
 * volatile counter, which gcc cannot turn into a conditional select, so the
 * branch stays a real branch. Expected: ~50% of that branch mispredicted, i.e.
 * about ROUNDS / 2 mispredictions in the whole run; the loop's own backward
 * branch predicts well.
 *
 * Assembly check (riscv64-linux-gnu-gcc 12.2 -O2; riscv64-linux-gnu-objdump -d
 * bin/micro_random_branch), the loop in kernel:
 *     loop: srl a3,a5,0xc; xor a5,a5,a3; sll a3,a5,0x19; xor a5,a5,a3;
 *           srl a3,a5,0x1b; xor a5,a5,a3; mul a3,a5,a1; add a4,a4,-1;
 *           bgez a3,skip                      <- the unpredictable branch
 *           ld a2,0(a6); add a2,a2,1; sd a2,0(a6)   (taken++, volatile)
 *     skip: add a0,a0,a3; bnez a4,loop
 * A real conditional branch on the product's sign bit, no branchless select. */
#include <stdio.h>

#define ROUNDS 2500000ul

static volatile unsigned long taken;

__attribute__((noinline, noclone)) static unsigned long kernel(unsigned long n, unsigned long state)
{
    unsigned long sum = 0;
    for (unsigned long i = 0; i < n; i++) {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        unsigned long r = state * 0x2545f4914f6cdd1dul;
        if (r >> 63) taken++;
        sum += r;
    }
    return sum;
}

int main(void)
{
    unsigned long sum = kernel(ROUNDS, 0x9e3779b97f4a7c15ul);
    unsigned long t = taken;
    printf("%lu rounds, branch taken %lu times (%.3f%%)\n", ROUNDS, t, 100.0 * (double)t / (double)ROUNDS);
    printf("checksum micro_random_branch %016lx\n", sum ^ (t << 32));
    return 0;
}
