/* charstat.c -- the branch-on-random paper's microbenchmark (§5.3): checksums and character
 * distributions of half a million characters stored in memory. The character loop has
 * data-dependent paths that update the checksum differently for upper-case, lower-case and
 * other characters; instrumenting its branch edges gives an edge profile (the branch biases).
 * Study program of docs/studies/brr.md; prints the distribution and a checksum. */
#include <stdio.h>

#define N 500000
static unsigned char text[N];
static unsigned long dist[256];

int main(void) {
    unsigned long x = 0x2545F4914F6CDD1Dul;
    for (int i = 0; i < N; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* mostly letters and spaces, some digits and punctuation */
        unsigned r = (unsigned)(x >> 32) % 100;
        text[i] = r < 45 ? 'a' + r % 26 : r < 60 ? 'A' + r % 26 : r < 80 ? ' ' : r < 90 ? '0' + r % 10 : ".,;:!?-()"[r % 9];
    }
    unsigned long sum = 0, upper = 0, lower = 0, other = 0;
    for (int i = 0; i < N; i++) {
        unsigned c = text[i];
        dist[c]++;
        if (c >= 'A' && c <= 'Z') {
            sum = (sum << 1 | sum >> 63) ^ c;
            upper++;
        } else if (c >= 'a' && c <= 'z') {
            sum += c * 31;
            lower++;
        } else {
            sum ^= c << (i & 15);
            other++;
        }
    }
    unsigned long d = 0;
    for (int c = 0; c < 256; c++) d = d * 1099511628211ul ^ dist[c];
    printf("upper %lu lower %lu other %lu\n", upper, lower, other);
    printf("checksum charstat %016lx %016lx\n", sum, d);
    return 0;
}
