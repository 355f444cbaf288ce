/* strsearch: substring search over generated text, four ways.
 *
 * The text is made of pseudo-random "words" built from a small syllable set, so
 * patterns recur often and partial matches are common. Every pattern is counted
 * with a naive scan (first-byte filter + memcmp), Knuth-Morris-Pratt,
 * Boyer-Moore-Horspool and libc strstr; the four counts must agree.
 * Line statistics use strchr and strlen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_CAP (300 * 1024)
#define NPAT 12

static unsigned long long rng = 88172645463325252ull;

static unsigned next_rand(void)
{
    /* xorshift64 */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 32);
}

static const char *const syllables[] = {"ab", "ra", "ca", "da", "bra", "ka", "ta", "an",
                                        "ba", "na", "ar", "dab", "rac", "a",  "cad", "abra"};

static long gen_text(char *t, long cap)
{
    long n = 0;
    int words_on_line = 0;
    while (n < cap - 32) {
        unsigned nsyl = 1 + next_rand() % 4u;
        for (unsigned s = 0; s < nsyl; s++) {
            const char *syl = syllables[next_rand() & 15u];
            size_t l = strlen(syl);
            memcpy(t + n, syl, l);
            n += (long)l;
        }
        if (++words_on_line >= 8 + (int)(next_rand() % 5u)) {
            t[n++] = '\n';
            words_on_line = 0;
        } else {
            t[n++] = ' ';
        }
    }
    t[n] = 0;
    return n;
}

static long count_naive(const char *t, long n, const char *p, long m)
{
    long count = 0;
    char first = p[0];
    for (long i = 0; i + m <= n; i++)
        if (t[i] == first && memcmp(t + i, p, (size_t)m) == 0) count++;
    return count;
}

static long count_kmp(const char *t, long n, const char *p, long m, int *fail)
{
    fail[0] = 0;
    for (long i = 1, k = 0; i < m; i++) {
        while (k > 0 && p[i] != p[k]) k = fail[k - 1];
        if (p[i] == p[k]) k++;
        fail[i] = (int)k;
    }
    long count = 0;
    for (long i = 0, k = 0; i < n; i++) {
        while (k > 0 && t[i] != p[k]) k = fail[k - 1];
        if (t[i] == p[k]) k++;
        if (k == m) {
            count++;
            k = fail[k - 1];
        }
    }
    return count;
}

static long count_bmh(const char *t, long n, const char *p, long m)
{
    long shift[256];
    for (int c = 0; c < 256; c++) shift[c] = m;
    for (long i = 0; i < m - 1; i++) shift[(unsigned char)p[i]] = m - 1 - i;
    long count = 0;
    long i = 0;
    while (i + m <= n) {
        long j = m - 1;
        while (j >= 0 && t[i + j] == p[j]) j--;
        if (j < 0) count++;
        i += shift[(unsigned char)t[i + m - 1]];
    }
    return count;
}

static long count_strstr(const char *t, const char *p)
{
    long count = 0;
    const char *q = t;
    while ((q = strstr(q, p)) != NULL) {
        count++;
        q++;
    }
    return count;
}

int main(void)
{
    char *text = malloc(TEXT_CAP);
    int *fail = malloc(256 * sizeof *fail);
    if (!text || !fail) return 1;
    long n = gen_text(text, TEXT_CAP);

    /* Line statistics with strchr/strlen. */
    long lines = 0, longest = 0;
    unsigned long line_hash = 0;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        long len = (long)strlen(line);
        if (len > longest) longest = len;
        line_hash = line_hash * 1000003ul + (unsigned long)len;
        lines++;
        if (!nl) break;
        *nl = '\n';
        line = nl + 1;
    }
    printf("text %ld bytes, %ld lines, longest line %ld\n", n, lines, longest);

    char pats[NPAT][48];
    unsigned long long check = line_hash;
    int disagreements = 0;
    for (int k = 0; k < NPAT; k++) {
        long m = 3 + (long)(next_rand() % 20u);
        if (k % 3 == 2) {
            /* A short pattern over the letters of the text that may not occur at all. */
            m = 3 + (long)(next_rand() % 4u);
            for (long i = 0; i < m; i++) pats[k][i] = "abrcdnkt"[next_rand() & 7u];
        } else {
            /* A pattern cut out of the text (occurs at least once). */
            long at = (long)(next_rand() % (unsigned)(n - m));
            memcpy(pats[k], text + at, (size_t)m);
        }
        pats[k][m] = 0;
        long a = count_naive(text, n, pats[k], m);
        long b = count_kmp(text, n, pats[k], m, fail);
        long c = count_bmh(text, n, pats[k], m);
        long d = count_strstr(text, pats[k]);
        if (a != b || a != c || a != d) disagreements++;
        /* Show printable patterns: replace newlines. */
        char shown[48];
        for (long i = 0; i <= m; i++) shown[i] = pats[k][i] == '\n' ? '/' : pats[k][i];
        printf("pattern %2d len %2ld %-24s count %ld\n", k, m, shown, a);
        check = check * 0x100000001b3ull ^ (unsigned long long)a;
    }
    printf("disagreements %d\n", disagreements);
    free(text);
    free(fail);
    printf("checksum strsearch %016llx\n", check);
    return disagreements ? 1 : 0;
}
