#!/usr/bin/env bash
# Call chains and libraries in `outcrop import` against `perf report` (docs/BENCHMARKS.md,
# "What a perf user expects on day one"): a native x86-64 program whose time is in libc's
# qsort (built here, -O2 -g, frame pointers in the program only, as a user builds it), recorded
# with `perf record -g -F 4000`; prints perf report's sample counts (self, --children) beside
# Outcrop's, then RUNS alternating timings of `outcrop import` and `perf report --children`.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
OUT=${OUT:-target/bench-callchains}
mkdir -p "$OUT"
O=$PWD/target/release/outcrop
cargo build --release -q -p outcrop
cat > "$OUT/qsort.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void *a, const void *b) {
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}
int main(int argc, char **argv) {
    int n = 200000, rounds = argc > 1 ? atoi(argv[1]) : 40;
    unsigned *v = malloc(n * sizeof *v), seed = 1;
    unsigned long sum = 0;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) v[i] = seed = seed * 1103515245u + 12345u;
        qsort(v, n, sizeof *v, cmp);
        sum += v[n / 2];
    }
    printf("%lu\n", sum);
    return 0;
}
C
cd "$OUT"
cc -O2 -g -fno-omit-frame-pointer -o prog qsort.c
perf record -q -g -F 4000 -o perf.data ./prog 200 > /dev/null
echo "== perf report -n (self samples), then --children (total %)"
perf report -i perf.data --stdio --no-children -n --sort dso,sym 2>/dev/null | grep -E '^ +[0-9]' | head -6
perf report -i perf.data --stdio --children --sort sym 2>/dev/null | grep -E '^ +[0-9]' | head -6
echo "== outcrop import"
"$O" import perf.data --binary prog -o prog.samples --top 6 | sed -n '/^samples by object/,$p'
t() { local s; s=$(date +%s.%N); "$@" > /dev/null 2>&1; echo "$(date +%s.%N) - $s" | bc; }
echo "== wall seconds: outcrop import, perf report --children"
for _ in $(seq "$RUNS"); do
    echo "$(t "$O" import perf.data --binary prog -o prog.samples) $(t perf report -i perf.data --stdio --children)"
done
