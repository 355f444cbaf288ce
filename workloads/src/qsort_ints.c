/* qsort_ints: sorting integers three ways and checking that they agree.
 *
 * - a hand-written quicksort (median of three, insertion sort for short runs,
 *   recursion on the smaller half) on int,
 * - a hand-written bottom-up merge sort on long with a scratch buffer,
 * - libc qsort() with a comparison callback (indirect calls),
 * over a random array, an array with many duplicates and an almost sorted one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 70000

static unsigned rng_state = 0x12345678u;

/* xorshift32: 32-bit shifts and xors (sllw/srlw/xor). */
static unsigned next_u32(void)
{
    unsigned x = rng_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    rng_state = x;
    return x;
}

static void insertion_sort(int *a, long lo, long hi)
{
    for (long i = lo + 1; i <= hi; i++) {
        int v = a[i];
        long j = i - 1;
        while (j >= lo && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

static void swap_int(int *a, long i, long j)
{
    int t = a[i];
    a[i] = a[j];
    a[j] = t;
}

static void quick_sort(int *a, long lo, long hi)
{
    while (hi - lo > 16) {
        long mid = lo + (hi - lo) / 2;
        if (a[mid] < a[lo]) swap_int(a, mid, lo);
        if (a[hi] < a[lo]) swap_int(a, hi, lo);
        if (a[hi] < a[mid]) swap_int(a, hi, mid);
        int pivot = a[mid];
        long i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot) i++;
            while (a[j] > pivot) j--;
            if (i <= j) {
                swap_int(a, i, j);
                i++;
                j--;
            }
        }
        /* Recurse into the smaller part, loop on the larger one. */
        if (j - lo < hi - i) {
            quick_sort(a, lo, j);
            lo = i;
        } else {
            quick_sort(a, i, hi);
            hi = j;
        }
    }
    insertion_sort(a, lo, hi);
}

static void merge_sort(long *a, long *tmp, long n)
{
    for (long width = 1; width < n; width *= 2) {
        for (long lo = 0; lo < n; lo += 2 * width) {
            long mid = lo + width < n ? lo + width : n;
            long hi = lo + 2 * width < n ? lo + 2 * width : n;
            long i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = a[i] <= a[j] ? a[i++] : a[j++];
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        memcpy(a, tmp, (size_t)n * sizeof *a);
    }
}

static int cmp_int(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    return (a > b) - (a < b);
}

static unsigned long long fnv_ints(const int *a, long n, unsigned long long h)
{
    for (long i = 0; i < n; i++) {
        h ^= (unsigned)a[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static int is_sorted(const int *a, long n)
{
    for (long i = 1; i < n; i++)
        if (a[i - 1] > a[i]) return 0;
    return 1;
}

int main(void)
{
    int *orig = malloc(N * sizeof *orig);
    int *qa = malloc(N * sizeof *qa);
    int *qb = malloc(N * sizeof *qb);
    long *ma = malloc(N * sizeof *ma);
    long *mt = malloc(N * sizeof *mt);
    if (!orig || !qa || !qb || !ma || !mt) return 1;

    unsigned long long h = 0xcbf29ce484222325ull;
    int failures = 0;
    for (int round = 0; round < 3; round++) {
        for (long i = 0; i < N; i++) {
            unsigned r = next_u32();
            if (round == 0)
                orig[i] = (int)r;                      /* full range, signed */
            else if (round == 1)
                orig[i] = (int)(r % 1000u) - 500;      /* many duplicates */
            else
                orig[i] = (int)(i * 3) + (int)(r % 7u); /* almost sorted */
        }
        memcpy(qa, orig, N * sizeof *qa);
        memcpy(qb, orig, N * sizeof *qb);
        for (long i = 0; i < N; i++) ma[i] = orig[i];

        quick_sort(qa, 0, N - 1);
        qsort(qb, N, sizeof *qb, cmp_int);
        merge_sort(ma, mt, N);

        int ok = is_sorted(qa, N) && memcmp(qa, qb, N * sizeof *qa) == 0;
        for (long i = 0; i < N; i++)
            if (ma[i] != qa[i]) ok = 0;
        if (!ok) failures++;
        /* Median and extremes: exercise signed division of a long. */
        long sum = 0;
        for (long i = 0; i < N; i++) sum += qa[i];
        printf("round %d: min %d median %d max %d mean %ld sorted %s\n", round, qa[0],
               qa[N / 2], qa[N - 1], sum / N, ok ? "yes" : "NO");
        h = fnv_ints(qa, N, h);
    }
    free(orig);
    free(qa);
    free(qb);
    free(ma);
    free(mt);
    printf("checksum qsort_ints %016llx\n", h);
    return failures ? 1 : 0;
}
