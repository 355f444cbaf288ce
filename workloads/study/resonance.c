/* resonance.c -- a loop calling a short, fixed cycle of leaf functions: the pattern where a
 * sampling counter resonates with the program (the branch-on-random paper, §4.2: "a loop
 * body containing calls to two leaf methods will result in only one of the two methods
 * getting sampled for a counter-based sampling interval that is a multiple of two").
 * Each iteration calls mix_a, mix_b, mix_a, mix_c: invocation shares 50%, 25%, 25%.
 * Study program of docs/studies/brr.md; prints a checksum. */
#include <stdio.h>

static unsigned long state = 88172645463325252ul;

__attribute__((noinline)) static void mix_a(unsigned long i) { state = state * 6364136223846793005ul + i; }
__attribute__((noinline)) static void mix_b(unsigned long i) { state ^= state >> 29 ^ i; }
__attribute__((noinline)) static void mix_c(unsigned long i) { state += (state << 7) | i; }

int main(void) {
    for (unsigned long i = 0; i < 1000000; i++) {
        mix_a(i);
        mix_b(i);
        mix_a(i + 1);
        mix_c(i);
    }
    printf("checksum resonance %016lx\n", state);
    return 0;
}
