/* fft: iterative radix-2 complex FFT and inverse, in double and in float.
 *
 * Each round synthesises a signal (a few sinusoids via libm sin/cos plus LCG
 * noise), transforms it, finds the strongest frequency bins, transforms back and
 * measures the round-trip error. The same is then done in single precision with
 * sinf/cosf so that the F extension (flw/fsw/fadd.s/fmul.s/fmadd.s...) is used,
 * not only D. Bit patterns of the spectra feed the checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define LOG2N 11
#define N (1 << LOG2N)
#define ROUNDS 40

static const double PI = 3.14159265358979323846;

static unsigned rng = 0xdeadbeefu;

static unsigned next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static unsigned bit_reverse(unsigned x, int bits)
{
    unsigned r = 0;
    for (int i = 0; i < bits; i++) {
        r = (r << 1) | (x & 1u);
        x >>= 1;
    }
    return r;
}

/* ---------- double ---------- */

static double twid_re[N / 2], twid_im[N / 2];

static void fft_d(double *re, double *im, int inverse)
{
    for (unsigned i = 0; i < N; i++) {
        unsigned j = bit_reverse(i, LOG2N);
        if (j > i) {
            double t = re[i]; re[i] = re[j]; re[j] = t;
            t = im[i]; im[i] = im[j]; im[j] = t;
        }
    }
    for (int size = 2; size <= N; size <<= 1) {
        int half = size / 2, step = N / size;
        for (int start = 0; start < N; start += size) {
            for (int k = 0; k < half; k++) {
                double wr = twid_re[k * step];
                double wi = inverse ? -twid_im[k * step] : twid_im[k * step];
                int a = start + k, b = a + half;
                double xr = re[b] * wr - im[b] * wi;
                double xi = re[b] * wi + im[b] * wr;
                re[b] = re[a] - xr;
                im[b] = im[a] - xi;
                re[a] += xr;
                im[a] += xi;
            }
        }
    }
    if (inverse)
        for (int i = 0; i < N; i++) {
            re[i] /= N;
            im[i] /= N;
        }
}

/* ---------- float ---------- */

static float twid_re_f[N / 2], twid_im_f[N / 2];

static void fft_f(float *re, float *im, int inverse)
{
    for (unsigned i = 0; i < N; i++) {
        unsigned j = bit_reverse(i, LOG2N);
        if (j > i) {
            float t = re[i]; re[i] = re[j]; re[j] = t;
            t = im[i]; im[i] = im[j]; im[j] = t;
        }
    }
    for (int size = 2; size <= N; size <<= 1) {
        int half = size / 2, step = N / size;
        for (int start = 0; start < N; start += size) {
            for (int k = 0; k < half; k++) {
                float wr = twid_re_f[k * step];
                float wi = inverse ? -twid_im_f[k * step] : twid_im_f[k * step];
                int a = start + k, b = a + half;
                float xr = re[b] * wr - im[b] * wi;
                float xi = re[b] * wi + im[b] * wr;
                re[b] = re[a] - xr;
                im[b] = im[a] - xi;
                re[a] += xr;
                im[a] += xi;
            }
        }
    }
    if (inverse) {
        float scale = 1.0f / (float)N;
        for (int i = 0; i < N; i++) {
            re[i] *= scale;
            im[i] *= scale;
        }
    }
}

static unsigned long long bits_d(double d)
{
    unsigned long long u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static unsigned bits_f(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Index of the largest magnitude bin in 1..N/2-1 (ignores DC). */
static int peak_d(const double *re, const double *im, double *mag)
{
    int best = 1;
    double bm = -1.0;
    for (int k = 1; k < N / 2; k++) {
        double m = re[k] * re[k] + im[k] * im[k];
        if (m > bm) {
            bm = m;
            best = k;
        }
    }
    *mag = sqrt(bm);
    return best;
}

int main(void)
{
    static double re[N], im[N], orig[N];
    static float ref[N], imf[N];
    for (int k = 0; k < N / 2; k++) {
        double angle = -2.0 * PI * k / N;
        twid_re[k] = cos(angle);
        twid_im[k] = sin(angle);
        twid_re_f[k] = cosf((float)angle);
        twid_im_f[k] = sinf((float)angle);
    }

    unsigned long long check = 0;
    double worst_d = 0.0;
    float worst_f = 0.0f;
    long peak_sum = 0;
    for (int round = 0; round < ROUNDS; round++) {
        int f1 = 1 + (int)(next_rand() % (N / 2 - 1));
        int f2 = 1 + (int)(next_rand() % (N / 2 - 1));
        double a1 = 1.0 + (next_rand() % 1000u) / 250.0, a2 = 0.5 + (next_rand() % 1000u) / 500.0;
        double phase = (next_rand() % 6283u) / 1000.0;
        for (int i = 0; i < N; i++) {
            double t = 2.0 * PI * i / N;
            double noise = ((int)(next_rand() >> 16) - 32768) / 65536.0;
            orig[i] = a1 * sin(f1 * t + phase) + a2 * cos(f2 * t) + 0.1 * noise;
            re[i] = orig[i];
            im[i] = 0.0;
            ref[i] = (float)orig[i];
            imf[i] = 0.0f;
        }

        fft_d(re, im, 0);
        double mag;
        int peak = peak_d(re, im, &mag);
        peak_sum += peak;
        for (int k = 0; k < N; k += 7) check = check * 0x100000001b3ull ^ bits_d(re[k]) ^ bits_d(im[k]) >> 3;
        fft_d(re, im, 1);
        double err = 0.0;
        for (int i = 0; i < N; i++) err = fmax(err, fabs(re[i] - orig[i]) + fabs(im[i]));
        if (err > worst_d) worst_d = err;

        fft_f(ref, imf, 0);
        for (int k = 0; k < N; k += 7) check = check * 0x100000001b3ull ^ bits_f(ref[k]) ^ (unsigned long long)bits_f(imf[k]) << 32;
        fft_f(ref, imf, 1);
        float errf = 0.0f;
        for (int i = 0; i < N; i++) errf = fmaxf(errf, fabsf(ref[i] - (float)orig[i]) + fabsf(imf[i]));
        if (errf > worst_f) worst_f = errf;

        if (round % 6 == 0)
            printf("round %2d: tones %4d %4d, peak bin %4d magnitude %.6f\n", round, f1, f2, peak,
                   mag);
    }
    printf("peak bin sum %ld\n", peak_sum);
    printf("max round-trip error: double %.3e, float %.3e\n", worst_d, (double)worst_f);
    int ok = worst_d < 1e-9 && worst_f < 1e-3f;
    printf("checksum fft %016llx\n", check);
    return ok ? 0 : 1;
}
