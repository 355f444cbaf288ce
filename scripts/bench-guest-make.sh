#!/usr/bin/env bash
# A build inside the guest (docs/BENCHMARKS.md, "Processes, fourth part"): GNU make, busybox sh
# and TinyCC, all riscv64, build Lua's src/ in one `outcrop exec`, against the same compiler
# commands run one by one under qemu-riscv64-static and under `outcrop exec`; RUNS alternating
# runs from a clean tree, seconds per run, then whether the last build's outputs equal qemu's.
#
#   scripts/bench-guest-make.sh LUA_SRC SYSROOT TCC_ROOT MAKE [RUNS]
#
# LUA_SRC: lua-5.4.4/src of the upstream tarball; SYSROOT: the cross sysroot with a static
# busybox as bin/sh; TCC_ROOT: a riscv64 tcc (bin/tcc) whose include and library paths lie
# beneath it; MAKE: a static riscv64 GNU make. Recipes in docs/BENCHMARKS.md.
set -eu
src=$(cd "${1:?usage: $0 LUA_SRC SYSROOT TCC_ROOT MAKE [RUNS]}" && pwd)
sysroot=${2:?}; tcc=${3:?}; make=${4:?}; runs=${5:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
o=${OUTCROP:-$here/target/release/outcrop}
top=$(dirname "$src")
vars=(CC="$tcc/bin/tcc" "AR=$tcc/bin/tcc -ar rcu" RANLIB=true SYSCFLAGS=-DLUA_USE_LINUX "SYSLIBS=-rdynamic -ldl")
clean() { rm -f "$src"/*.o "$src"/*.a "$src"/lua "$src"/luac; }
secs() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s.%N); echo "$e - $s" | bc; }
inside() { (cd "$src" && "$o" exec --sysroot "$sysroot" --allow-rw "$top" --allow "$tcc" --allow "$(dirname "$make")" -- "$make" all "${vars[@]}"); }
clean
(cd "$src" && "$o" exec --sysroot "$sysroot" --allow-rw "$top" --allow "$tcc" --allow "$(dirname "$make")" -- "$make" -n all "${vars[@]}") 2>/dev/null \
    | grep "^$tcc/bin/tcc" > "$top/commands.txt"
one_by_one() { (cd "$src" && while read -r c; do "$@" $c; done < "$top/commands.txt"); }
for i in $(seq 1 "$runs"); do
    clean; a=$(secs inside)
    clean; b=$(secs one_by_one qemu-riscv64-static)
    clean; c=$(secs one_by_one "$o" exec --allow-rw "$top" --allow "$tcc" --)
    echo "run $i: make inside outcrop $a s; commands under qemu $b s; commands under outcrop $c s"
done
mkdir -p "$top/by-outcrop-make"; clean; inside >/dev/null 2>&1 || true
for f in "$src"/*.o "$src"/liblua.a "$src"/lua "$src"/luac; do cp "$f" "$top/by-outcrop-make/"; done
clean; one_by_one qemu-riscv64-static >/dev/null 2>&1 || true
same=0; differ=0
for f in "$top"/by-outcrop-make/*; do
    if cmp -s "$f" "$src/$(basename "$f")"; then same=$((same + 1)); else differ=$((differ + 1)); echo "differs: $(basename "$f")"; fi
done
echo "outputs: $same identical to qemu's, $differ differ"
