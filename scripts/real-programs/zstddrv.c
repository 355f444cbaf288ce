/* zstd's one-shot compression as a command: zstd LEVEL FILE compresses FILE (at most 64 MiB)
 * at LEVEL, checks that it decompresses to the input, and prints both sizes. (The zstd-sys
 * crate vendors the library, not the zstd program.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zstd.h"
int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: zstd LEVEL FILE\n"); return 2; }
    int level = atoi(argv[1]);
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 1; }
    size_t cap = 64u << 20, n = 0;
    char *in = malloc(cap);
    if (!in) return 1;
    n = fread(in, 1, cap, f);
    fclose(f);
    size_t bound = ZSTD_compressBound(n);
    char *out = malloc(bound), *back = malloc(n + 1);
    if (!out || !back) return 1;
    size_t c = ZSTD_compress(out, bound, in, n, level);
    if (ZSTD_isError(c)) { fprintf(stderr, "zstd: %s\n", ZSTD_getErrorName(c)); return 1; }
    size_t d = ZSTD_decompress(back, n + 1, out, c);
    if (ZSTD_isError(d) || d != n || memcmp(back, in, n) != 0) { fprintf(stderr, "zstd: round trip failed\n"); return 1; }
    printf("%zu -> %zu bytes at level %d\n", n, c, level);
    return 0;
}
