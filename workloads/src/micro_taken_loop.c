/* micro_taken_loop: one counted loop whose backward branch is taken on every
 * iteration but the last (validation input for branch predictors).
 *
 * The kernel runs a 64-bit LCG step per iteration: no data-dependent branches,
 * nothing gcc can reduce to a closed form. At -O2 (riscv64, GCC 12.2) the loop is
 * four instructions -- mul, add, addi, bne -- and its bne is the only branch
 * executed millions of times, so a predictor should mispredict it about once (at
 * the exit), plus a warm-up miss or two. Expected: ~0% mispredictions. */
#include <stdio.h>

#define ITERATIONS 8000000ul

__attribute__((noinline, noclone)) static unsigned long kernel(unsigned long n, unsigned long x)
{
    for (unsigned long i = 0; i < n; i++) x = x * 6364136223846793005ul + i;
    return x;
}

int main(void)
{
    unsigned long x = kernel(ITERATIONS, 1);
    printf("%lu iterations of the always-taken loop\n", ITERATIONS);
    printf("checksum micro_taken_loop %016lx\n", x);
    return 0;
}
