/* matmul: dense matrix multiply, integer and floating point, naive and blocked.
 *
 * - int32 matrices: naive i-k-j loop and a cache-blocked version; results must be
 *   identical (integer arithmetic is exact; products wrap as unsigned 32-bit);
 * - double matrices: blocked multiply checked against the naive one within a
 *   tolerance (summation order differs), plus a float (single precision) pass;
 * - a trace and a few entries are printed, all entries feed the checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define N 144
#define BS 24

static unsigned rng = 7u;

static unsigned next_rand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return rng;
}

static void imul_naive(const int *a, const int *b, int *c)
{
    memset(c, 0, N * N * sizeof *c);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < N; k++) {
            unsigned aik = (unsigned)a[i * N + k];
            for (int j = 0; j < N; j++)
                c[i * N + j] = (int)((unsigned)c[i * N + j] + aik * (unsigned)b[k * N + j]);
        }
}

static void imul_blocked(const int *a, const int *b, int *c)
{
    memset(c, 0, N * N * sizeof *c);
    for (int ii = 0; ii < N; ii += BS)
        for (int kk = 0; kk < N; kk += BS)
            for (int jj = 0; jj < N; jj += BS)
                for (int i = ii; i < ii + BS; i++)
                    for (int k = kk; k < kk + BS; k++) {
                        unsigned aik = (unsigned)a[i * N + k];
                        for (int j = jj; j < jj + BS; j++)
                            c[i * N + j] =
                                (int)((unsigned)c[i * N + j] + aik * (unsigned)b[k * N + j]);
                    }
}

static void dmul_naive(const double *a, const double *b, double *c)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0;
            for (int k = 0; k < N; k++) s += a[i * N + k] * b[k * N + j];
            c[i * N + j] = s;
        }
}

static void dmul_blocked(const double *a, const double *b, double *c)
{
    for (int i = 0; i < N * N; i++) c[i] = 0.0;
    for (int ii = 0; ii < N; ii += BS)
        for (int kk = 0; kk < N; kk += BS)
            for (int jj = 0; jj < N; jj += BS)
                for (int i = ii; i < ii + BS; i++)
                    for (int k = kk; k < kk + BS; k++) {
                        double aik = a[i * N + k];
                        for (int j = jj; j < jj + BS; j++) c[i * N + j] += aik * b[k * N + j];
                    }
}

static void fmul_blocked(const float *a, const float *b, float *c)
{
    for (int i = 0; i < N * N; i++) c[i] = 0.0f;
    for (int ii = 0; ii < N; ii += BS)
        for (int kk = 0; kk < N; kk += BS)
            for (int jj = 0; jj < N; jj += BS)
                for (int i = ii; i < ii + BS; i++)
                    for (int k = kk; k < kk + BS; k++) {
                        float aik = a[i * N + k];
                        for (int j = jj; j < jj + BS; j++) c[i * N + j] += aik * b[k * N + j];
                    }
}

static unsigned long long bits_d(double d)
{
    unsigned long long u;
    memcpy(&u, &d, sizeof u);
    return u;
}

int main(void)
{
    int *ia = malloc(N * N * sizeof *ia), *ib = malloc(N * N * sizeof *ib);
    int *ic1 = malloc(N * N * sizeof *ic1), *ic2 = malloc(N * N * sizeof *ic2);
    double *da = malloc(N * N * sizeof *da), *db = malloc(N * N * sizeof *db);
    double *dc1 = malloc(N * N * sizeof *dc1), *dc2 = malloc(N * N * sizeof *dc2);
    float *fa = malloc(N * N * sizeof *fa), *fb = malloc(N * N * sizeof *fb);
    float *fc = malloc(N * N * sizeof *fc);
    if (!ia || !ib || !ic1 || !ic2 || !da || !db || !dc1 || !dc2 || !fa || !fb || !fc) return 1;

    for (int i = 0; i < N * N; i++) {
        ia[i] = (int)(next_rand() >> 20) - 2048;
        ib[i] = (int)(next_rand() % 201u) - 100;
        da[i] = (double)ia[i] / 1024.0;
        db[i] = ((int)(next_rand() >> 16) - 32768) / 32768.0;
        fa[i] = (float)da[i];
        fb[i] = (float)db[i];
    }

    imul_naive(ia, ib, ic1);
    imul_blocked(ia, ib, ic2);
    int int_same = memcmp(ic1, ic2, N * N * sizeof *ic1) == 0;
    long trace = 0;
    unsigned long long check = 0;
    for (int i = 0; i < N; i++) trace += ic2[i * N + i];
    for (int i = 0; i < N * N; i++) check = check * 0x100000001b3ull ^ (unsigned)ic2[i];
    printf("int32: trace %ld, c[0][0] %d, c[%d][%d] %d, naive == blocked: %s\n", trace, ic2[0],
           N - 1, N - 1, ic2[N * N - 1], int_same ? "yes" : "NO");

    dmul_naive(da, db, dc1);
    dmul_blocked(da, db, dc2);
    double max_diff = 0.0, dtrace = 0.0;
    for (int i = 0; i < N * N; i++) max_diff = fmax(max_diff, fabs(dc1[i] - dc2[i]));
    for (int i = 0; i < N; i++) dtrace += dc2[i * N + i];
    for (int i = 0; i < N * N; i++) check = check * 0x100000001b3ull ^ bits_d(dc2[i]);
    printf("double: trace %.9f, max |naive - blocked| %.3e\n", dtrace, max_diff);

    fmul_blocked(fa, fb, fc);
    double fdiff = 0.0;
    float ftrace = 0.0f;
    for (int i = 0; i < N * N; i++) fdiff = fmax(fdiff, fabs((double)fc[i] - dc2[i]));
    for (int i = 0; i < N; i++) ftrace += fc[i * N + i];
    for (int i = 0; i < N * N; i++) {
        unsigned u;
        memcpy(&u, &fc[i], sizeof u);
        check = check * 0x100000001b3ull ^ u;
    }
    printf("float: trace %.4f, max |float - double| %.3e\n", (double)ftrace, fdiff);

    int ok = int_same && max_diff < 1e-9 && fdiff < 1e-2;
    free(ia); free(ib); free(ic1); free(ic2);
    free(da); free(db); free(dc1); free(dc2);
    free(fa); free(fb); free(fc);
    printf("checksum matmul %016llx\n", check);
    return ok ? 0 : 1;
}
