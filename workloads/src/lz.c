/* lz: an LZ77-style compressor and decompressor, with a round-trip check.
 *
 * Compressor: hash of the next 3 bytes -> head of a chain of earlier positions
 * (window 32 KiB), longest match over a bounded chain walk, lazy evaluation of
 * one position. Output format: a control byte per item,
 *   0x00-0x7f  literal run of (c + 1) bytes follows,
 *   0x80-0xff  match of length (c & 0x7f) + 3, followed by a 2-byte distance.
 * Decompressor: byte-wise copy (overlapping matches allowed).
 * Input: generated text-like data with repetitions, plus a stretch of noise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 32768
#define HASH_BITS 15
#define MIN_MATCH 3
#define MAX_MATCH (127 + MIN_MATCH)
#define MAX_CHAIN 48

typedef unsigned char u8;

static unsigned rng = 2463534242u;

static unsigned next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static long gen_input(u8 *buf, long cap)
{
    static const char *const words[] = {
        "the ",     "profile ", "sample ", "branch ", "taken ",  "not ",  "of ",
        "counter ", "range ",   "hot ",    "cold ",   "path ",   "and ",  "in ",
        "record ",  "cycle ",   "miss ",   "cache ",  "return ", "call ", "jump ",
        "loop ",    "tree ",    "node ",   "split ",  "merge ",  ", ",    ".\n"};
    const unsigned nwords = sizeof words / sizeof words[0];
    long n = 0;
    while (n < cap - 64) {
        unsigned r = next_rand();
        if (r % 97u == 0) {
            /* A short burst of incompressible bytes. */
            unsigned len = 8 + (r >> 8) % 40u;
            for (unsigned i = 0; i < len; i++) buf[n++] = (u8)(next_rand() >> 24);
        } else if (r % 13u == 0 && n > 1000) {
            /* Repeat a recent stretch (long-range redundancy). */
            long dist = 1 + (long)((r >> 8) % 20000u);
            if (dist > n) dist = n;
            long len = 10 + (long)((r >> 20) % 200u);
            if (len > cap - n) len = cap - n;
            for (long i = 0; i < len; i++, n++) buf[n] = buf[n - dist];
        } else {
            const char *w = words[(r >> 16) % nwords];
            size_t l = strlen(w);
            memcpy(buf + n, w, l);
            n += (long)l;
        }
    }
    return n;
}

static unsigned hash3(const u8 *p)
{
    unsigned v = (unsigned)p[0] | (unsigned)p[1] << 8 | (unsigned)p[2] << 16;
    return (v * 2654435761u) >> (32 - HASH_BITS);
}

struct matcher {
    int head[1 << HASH_BITS];
    int prev[WINDOW];
};

static void insert_pos(struct matcher *m, const u8 *in, long pos)
{
    unsigned h = hash3(in + pos);
    m->prev[pos & (WINDOW - 1)] = m->head[h];
    m->head[h] = (int)pos;
}

static long longest_match(const struct matcher *m, const u8 *in, long n, long pos, long *dist)
{
    long best = 0;
    long limit = n - pos < MAX_MATCH ? n - pos : MAX_MATCH;
    if (limit < MIN_MATCH) return 0;
    long cand = m->head[hash3(in + pos)];
    int chain = MAX_CHAIN;
    while (cand >= 0 && pos - cand <= WINDOW - 1 && chain-- > 0) {
        if (in[cand + best] == in[pos + best]) {
            long len = 0;
            while (len < limit && in[cand + len] == in[pos + len]) len++;
            if (len > best) {
                best = len;
                *dist = pos - cand;
                if (len == limit) break;
            }
        }
        long next = m->prev[cand & (WINDOW - 1)];
        if (next >= cand) break; /* stale entry from an older window */
        cand = next;
    }
    return best >= MIN_MATCH ? best : 0;
}

static long flush_literals(u8 *out, long o, const u8 *lit, long nlit)
{
    while (nlit > 0) {
        long run = nlit > 128 ? 128 : nlit;
        out[o++] = (u8)(run - 1);
        memcpy(out + o, lit, (size_t)run);
        o += run;
        lit += run;
        nlit -= run;
    }
    return o;
}

static long compress(const u8 *in, long n, u8 *out, long *nmatches)
{
    static struct matcher m;
    memset(m.head, 0xff, sizeof m.head);
    long o = 0, lit_start = 0, pos = 0;
    *nmatches = 0;
    while (pos < n) {
        long dist = 0, len = 0;
        if (pos + MIN_MATCH <= n) {
            len = longest_match(&m, in, n, pos, &dist);
            insert_pos(&m, in, pos);
        }
        if (len && pos + 1 + MIN_MATCH <= n) {
            /* Lazy: prefer a longer match starting one byte later. */
            long dist2 = 0;
            long len2 = longest_match(&m, in, n, pos + 1, &dist2);
            if (len2 > len + 1) {
                pos++;
                insert_pos(&m, in, pos);
                len = len2;
                dist = dist2;
            }
        }
        if (len) {
            o = flush_literals(out, o, in + lit_start, pos - lit_start);
            out[o++] = (u8)(0x80 | (len - MIN_MATCH));
            out[o++] = (u8)(dist & 0xff);
            out[o++] = (u8)(dist >> 8);
            (*nmatches)++;
            for (long i = 1; i < len; i++)
                if (pos + i + MIN_MATCH <= n) insert_pos(&m, in, pos + i);
            pos += len;
            lit_start = pos;
        } else {
            pos++;
        }
    }
    return flush_literals(out, o, in + lit_start, n - lit_start);
}

static long decompress(const u8 *in, long n, u8 *out, long cap)
{
    long i = 0, o = 0;
    while (i < n) {
        unsigned c = in[i++];
        if (c < 0x80) {
            long run = (long)c + 1;
            if (o + run > cap || i + run > n) return -1;
            memcpy(out + o, in + i, (size_t)run);
            o += run;
            i += run;
        } else {
            long len = (long)(c & 0x7f) + MIN_MATCH;
            if (i + 2 > n) return -1;
            long dist = (long)in[i] | (long)in[i + 1] << 8;
            i += 2;
            if (dist == 0 || dist > o || o + len > cap) return -1;
            for (long k = 0; k < len; k++, o++) out[o] = out[o - dist];
        }
    }
    return o;
}

static unsigned long long fnv(const u8 *p, long n)
{
    unsigned long long h = 0xcbf29ce484222325ull;
    for (long i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int main(void)
{
    const long cap = 1 << 20;
    u8 *in = malloc((size_t)cap);
    u8 *packed = malloc((size_t)cap + cap / 64 + 16);
    u8 *back = malloc((size_t)cap);
    if (!in || !packed || !back) return 1;

    unsigned long long check = 0;
    int bad = 0;
    long sizes[] = {600 * 1024, 40 * 1024, 100};
    for (int r = 0; r < 3; r++) {
        long n = gen_input(in, sizes[r]);
        long nmatches;
        long packed_len = compress(in, n, packed, &nmatches);
        long back_len = decompress(packed, packed_len, back, cap);
        int ok = back_len == n && memcmp(in, back, (size_t)n) == 0;
        if (!ok) bad++;
        /* Ratio in per-mille: integer division. */
        long permille = n > 0 ? packed_len * 1000 / n : 0;
        printf("input %ld bytes -> %ld bytes (%ld.%ld%%), %ld matches, round trip %s\n", n,
               packed_len, permille / 10, permille % 10, nmatches, ok ? "ok" : "FAILED");
        check = check * 0x9e3779b97f4a7c15ull ^ fnv(packed, packed_len);
    }
    free(in);
    free(packed);
    free(back);
    printf("checksum lz %016llx\n", check);
    return bad ? 1 : 0;
}
