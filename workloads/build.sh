#!/bin/sh
# Builds the guest programs in src/*.c into bin/<name> (static RV64GC Linux
# binaries, symbol table and DWARF debug info kept (-g: reports show source lines; -g
# does not change the code GCC generates); <name>_zb with the B extension and
# <name>_dyn dynamically linked, see `march` below) and records the toolchain in
# bin/TOOLCHAIN.
#
#   ./build.sh           rebuild bin/ in place
#   ./build.sh --check   rebuild into a temporary directory and compare with the
#                        committed bin/: exit 0 if every binary is byte-identical,
#                        1 if some binary is stale, missing or extra,
#                        2 if this machine's toolchain differs from bin/TOOLCHAIN
#                        (binaries are then still compared and listed).
#   ./build.sh --instrumented DIR [INTERVAL]
#                        builds every instrumented variant of every program into DIR:
#                        DIR/<name>.<sites>.<sampling> for sites entries|edges and sampling
#                        full, counter, brr, counter-dup, brr-dup (Full-Duplication), the
#                        sampled ones at 1/INTERVAL (default 1024), each from the same
#                        `gcc -O2 -S` assembly rewritten by `outcrop instrument` and linked with
#                        runtime/outcrop_rt.c; DIR/<name>.s is that assembly. Needs the outcrop
#                        binary: $OUTCROP, else ../target/release/outcrop.
#
# The build is reproducible: the same toolchain gives byte-identical binaries
# regardless of the checkout's location (relative source paths, -ffile-prefix-map
# maps the checkout out of the debug info; the GNU build-id is a hash of the content).
# Environment: CROSS (default "riscv64-linux-gnu-") selects the tool prefix.
set -eu

CROSS=${CROSS:-riscv64-linux-gnu-}
CC=${CROSS}gcc
STRIP=${CROSS}strip
export LC_ALL=C

cd "$(dirname "$0")"
here=$(pwd)
CFLAGS="-O2 -mabi=lp64d -Wall -Wextra -ffile-prefix-map=$here=."

# march NAME: how a program is built besides CFLAGS. NAME_zb is built with the B extension
# (Zba, Zbb, Zbs: GCC 12's names) and NAME_dyn dynamically linked (the cross toolchain's
# default: a PIE that needs /usr/riscv64-linux-gnu at run time), each from a source that
# includes another's; every other program is static RV64GC.
march() {
    case "$1" in
    *_zb) echo "-static -march=rv64gc_zba_zbb_zbs" ;;
    *_dyn) echo "-march=rv64gc" ;;
    *) echo "-static -march=rv64gc" ;;
    esac
}

toolchain() {
    "$CC" --version | head -1
    "${CROSS}ld" --version | head -1
    # The static C library is part of every binary; record its package version
    # where the package manager can tell it.
    libc=$(dpkg-query -W -f='${Version}' libc6-dev-riscv64-cross 2>/dev/null || true)
    echo "libc6-dev-riscv64-cross ${libc:-unknown}"
}

# build_into DIR: compiles every src/*.c into DIR/<name> and writes DIR/TOOLCHAIN.
build_into() {
    out=$1
    mkdir -p "$out"
    for src in src/*.c; do
        name=$(basename "$src" .c)
        "$CC" $CFLAGS -g $(march "$name") -o "$out/$name" "$src" -lm
    done
    toolchain > "$out/TOOLCHAIN"
}

if ! command -v "$CC" >/dev/null 2>&1; then
    echo "build.sh: $CC not found (Debian: apt-get install gcc-riscv64-linux-gnu libc6-dev-riscv64-cross)" >&2
    exit 2
fi

case "${1:-}" in
"")
    build_into bin
    for src in src/*.c; do
        name=$(basename "$src" .c)
        printf '%-20s %8s bytes\n' "$name" "$(wc -c < "bin/$name")"
    done
    echo "toolchain: $(head -1 bin/TOOLCHAIN)"
    ;;
--check)
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/outcrop-workloads.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    build_into "$tmp"
    status=0
    if ! cmp -s "$tmp/TOOLCHAIN" bin/TOOLCHAIN 2>/dev/null; then
        echo "TOOLCHAIN DIFFERS: the committed binaries were built with"
        sed 's/^/    /' bin/TOOLCHAIN 2>/dev/null || echo "    (no bin/TOOLCHAIN)"
        echo "but this machine has"
        sed 's/^/    /' "$tmp/TOOLCHAIN"
        echo "byte-identical rebuilds cannot be expected; differences below may be due to that."
        status=2
    fi
    stale=""
    for src in src/*.c; do
        name=$(basename "$src" .c)
        if [ ! -f "bin/$name" ]; then
            stale="$stale $name(missing)"
        elif ! cmp -s "$tmp/$name" "bin/$name"; then
            stale="$stale $name"
        fi
    done
    for bin in bin/*; do
        name=$(basename "$bin")
        [ "$name" = TOOLCHAIN ] && continue
        [ -f "src/$name.c" ] || stale="$stale $name(no-source)"
    done
    if [ -n "$stale" ]; then
        echo "stale binaries in workloads/bin (run workloads/build.sh):$stale"
        [ $status -eq 0 ] && status=1
    else
        echo "all $(ls src/*.c | wc -l) binaries in workloads/bin are up to date"
    fi
    exit $status
    ;;
--instrumented)
    out=${2:?usage: $0 --instrumented DIR [INTERVAL]}
    interval=${3:-1024}
    outcrop=${OUTCROP:-$here/../target/release/outcrop}
    if [ ! -x "$outcrop" ]; then
        echo "build.sh: no outcrop binary at $outcrop (cargo build --release, or set OUTCROP)" >&2
        exit 2
    fi
    mkdir -p "$out"
    for src in src/*.c; do
        name=$(basename "$src" .c)
        "$CC" $CFLAGS $(march "$name") -S -o "$out/$name.s" "$src"
        for sites in entries edges; do
            for sampling in full counter brr counter-dup brr-dup; do
                case $sampling in
                *-dup) flags="--sampling ${sampling%-dup} --full-duplication" ;;
                *) flags="--sampling $sampling" ;;
                esac
                v="$out/$name.$sites.$sampling"
                "$outcrop" instrument "$out/$name.s" -o "$v.s" --sites $sites $flags \
                    --interval "$interval" --unit "$name" 2>/dev/null
                "$CC" $CFLAGS $(march "$name") -o "$v" "$v.s" runtime/outcrop_rt.c -lm
                "$STRIP" --strip-debug "$v"
                rm -f "$v.s"
            done
        done
    done
    toolchain > "$out/TOOLCHAIN"
    echo "$(ls src/*.c | wc -l) programs x 10 variants in $out (interval $interval)"
    ;;
*)
    echo "usage: $0 [--check | --instrumented DIR [INTERVAL]]" >&2
    exit 2
    ;;
esac
