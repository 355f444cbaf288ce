#!/bin/sh
# Vectorised programs under Outcrop and qemu 10, side by side (docs/BENCHMARKS.md, "Vectors").
# Builds plb2's matmul, sudoku and bedcov (attractivechaos/plb2 1181b3b) and zstd
# (facebook/zstd 2dddf0905) with clang-19 -O3, once for rv64gcv (RVV 1.0: the loops clang
# vectorises) and once for rv64gc (the same programs without vectors, the scalar baseline),
# then runs each program RUNS times, alternating qemu and Outcrop's default engine, checks
# the outputs are identical and prints medians with min–max.
# Usage: scripts/bench-vector.sh DIR PLB2_GIT_DIR ZSTD_GIT_DIR [RUNS]
#   (the git directories: e.g. what `fetch` brings, /work/.mirror/OWNER+NAME/repo)
set -eu
out=$(mkdir -p "$1" && cd "$1" && pwd)
runs=${4:-5}
here=$(cd "$(dirname "$0")" && pwd)
oc=${OUTCROP:-$here/../target/release/outcrop}
q=$("$here/qemu10.sh")
cd "$out"
[ -d plb2 ] || { mkdir plb2 && git --git-dir="$2" archive 1181b3b | tar -x -C plb2; }
[ -d zstd ] || { mkdir zstd && git --git-dir="$3" archive 2dddf0905 | tar -x -C zstd; }
for march in rv64gcv rv64gc; do
    cc="clang-19 --target=riscv64-linux-gnu -march=$march -fuse-ld=lld"
    for p in matmul sudoku bedcov; do
        [ -x "$p-$march" ] || $cc -O3 -static -o "$p-$march" "plb2/src/c/$p.c" -lm
    done
    [ -x "zstd-$march" ] || {
        make -s -C zstd/programs clean >/dev/null
        make -s -j2 -C zstd/programs zstd CC="$cc" CFLAGS=-O3 LDFLAGS=-static HAVE_THREAD=0 \
            HAVE_ZLIB=0 HAVE_LZMA=0 HAVE_LZ4=0 >/dev/null
        cp zstd/programs/zstd "zstd-$march"
    }
done
[ -f input.txt ] || cat "$here"/../crates/*/src/*.rs "$here"/../crates/*/src/*/*.rs > input.txt
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {printf "%.2f (%.2f–%.2f)", a[int((NR+1)/2)], a[1], a[NR]}'; }
printf '| program | build | qemu s | Outcrop s | ratio | outputs |\n|---|---|---:|---:|---:|---|\n'
for prog in "matmul 300" "sudoku 40" "bedcov 300000" "zstd -c -5 input.txt" "zstd -c -19 input.txt"; do
    set -- $prog
    name=$1; shift
    for march in rv64gcv rv64gc; do
        rm -f q.t o.t
        n=$runs
        [ "$*" = "-c -19 input.txt" ] && n=1
        i=0
        while [ $i -lt "$n" ]; do
            a=$(now); "$q" -cpu rv64,v=true,vlen=128,elen=64,vext_spec=v1.0 "./$name-$march" "$@" > q.out; b=$(now)
            "$oc" exec --allow . -- "./$name-$march" "$@" > o.out 2>/dev/null; c=$(now)
            echo "$b - $a" | bc >> q.t
            echo "$c - $b" | bc >> o.t
            i=$((i + 1))
        done
        same=$(cmp -s q.out o.out && echo identical || echo DIFFER)
        qm=$(median < q.t); om=$(median < o.t)
        ratio=$(echo "$(echo "$om" | cut -d' ' -f1) / $(echo "$qm" | cut -d' ' -f1)" | bc -l)
        printf '| %s %s | %s | %s | %s | %.2f× | %s |\n' "$name" "$*" "$march" "$qm" "$om" "$ratio" "$same"
    done
done
