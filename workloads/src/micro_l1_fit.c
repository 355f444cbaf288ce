/* micro_l1_fit: loads that hit L1D (validation input for cache models: an 8 KiB
 * array, a quarter of a 32 KiB L1D).
 *
 * The kernel sums the 1024 words of the array PASSES times; after each pass one
 * word is overwritten with the running sum, so no pass can be skipped or hoisted.
 * The array's 128 lines miss once (cold) and then stay in L1D. Expected: about
 * 128 data misses in the kernel out of PASSES * 1024 loads (~0%); the rest of the
 * program (C start-up, printf) adds a few hundred more. */
#include <stdio.h>

#define WORDS 1024
#define PASSES 8000

static unsigned long array[WORDS];

__attribute__((noinline, noclone)) static unsigned long kernel(unsigned long *a, unsigned passes)
{
    unsigned long sum = 0;
    for (unsigned p = 0; p < passes; p++) {
        for (unsigned i = 0; i < WORDS; i++) sum += a[i];
        a[p % WORDS] = sum;
    }
    return sum;
}

int main(void)
{
    for (unsigned i = 0; i < WORDS; i++) array[i] = i * 2654435761ul;
    unsigned long sum = kernel(array, PASSES);
    printf("%d passes over %zu bytes\n", PASSES, sizeof array);
    printf("checksum micro_l1_fit %016lx\n", sum);
    return 0;
}
