/* micro_stride_miss: loads that miss every cache (validation input for cache
 * models: L1D 32 KiB 4-way, L2 1 MiB 8-way, 64-byte lines, LRU).
 *
 * A 64 MiB array (malloc, so an mmap of its own) is written once in setup: the
 * first 8-byte word of each of its 2^20 64-byte blocks. The kernel then loads one
 * word every 4096 + 64 bytes, wrapping around the array. The stride is 65 lines:
 * consecutive loads fall in different lines, in different sets of both caches
 * (65 is odd, so the walk visits all 2^20 lines before repeating), and a line
 * comes back only after about a million other lines -- 64 times what L2 holds.
 * Expected: every kernel load misses L1D and L2 (STEPS load misses each), and so
 * does every setup store (2^20 write misses, write-allocate). */
#include <stdio.h>
#include <stdlib.h>

#define ARRAY_BYTES (64ul << 20)
#define LINE 64ul
#define STRIDE (4096ul + 64ul)
#define STEPS 4000000ul

#define WORDS (ARRAY_BYTES / sizeof(unsigned long))
#define LINE_WORDS (LINE / sizeof(unsigned long))
#define STRIDE_WORDS (STRIDE / sizeof(unsigned long))

__attribute__((noinline, noclone)) static unsigned long kernel(const unsigned long *a,
                                                               unsigned long steps)
{
    unsigned long sum = 0, i = 0;
    for (unsigned long n = 0; n < steps; n++) {
        sum += a[i];
        i = (i + STRIDE_WORDS) & (WORDS - 1);
    }
    return sum;
}

int main(void)
{
    unsigned long *a = malloc(ARRAY_BYTES);
    if (!a) return 1;
    for (unsigned long w = 0; w < WORDS; w += LINE_WORDS) a[w] = w * 0x9e3779b97f4a7c15ul;
    unsigned long sum = kernel(a, STEPS);
    printf("%lu loads, stride %lu bytes, over %lu MiB\n", STEPS, STRIDE, ARRAY_BYTES >> 20);
    free(a);
    printf("checksum micro_stride_miss %016lx\n", sum);
    return 0;
}
