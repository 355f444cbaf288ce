#!/bin/sh
# Runs every instrumented variant that `build.sh --instrumented DIR` built, on Outcrop's
# machine and under qemu-riscv64-static (where brr is emulated by the runtime's SIGILL
# handler), and compares stdout and exit status with expected/ (the uninstrumented programs'
# reference outputs). Prints one line per variant and run; exits 1 if any differs.
#
#   ./check-instrumented.sh DIR [machine|qemu|both]     (default both)
#
# Needs the outcrop binary ($OUTCROP, else ../target/release/outcrop) and qemu-riscv64-static.
# Under qemu every brr traps: variants with millions of checks take up to a minute each.
set -u
cd "$(dirname "$0")"
here=$(pwd)
dir=${1:?usage: $0 DIR [machine|qemu|both]}
which=${2:-both}
outcrop=${OUTCROP:-$here/../target/release/outcrop}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/outcrop-check.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/bin" "$scratch/src"
cp src/fileio.c "$scratch/src/"
fail=0
for src in src/*.c; do
    name=$(basename "$src" .c)
    args=""
    [ "$name" = fileio ] && args=src/fileio.c
    for v in "$dir/$name".entries.* "$dir/$name".edges.*; do
        case $v in *.s | *.sites*) continue ;; esac
        [ -f "$v" ] || continue
        cp "$v" "$scratch/bin/$name"
        for where in machine qemu; do
            [ "$which" = both ] || [ "$which" = "$where" ] || continue
            rm -f "$scratch/sites.txt"
            start=$(date +%s)
            if [ $where = machine ]; then
                # shellcheck disable=SC2086
                (cd "$scratch" && "$outcrop" exec --deterministic --allow-rw . \
                    --env OUTCROP_PROFILE=sites.txt -- "bin/$name" $args) \
                    < /dev/null > "$scratch/out" 2> /dev/null
            else
                # shellcheck disable=SC2086
                (cd "$scratch" && env -i OUTCROP_PROFILE=sites.txt qemu-riscv64-static \
                    -0 "bin/$name" "bin/$name" $args) < /dev/null > "$scratch/out" 2> /dev/null
            fi
            status=$?
            secs=$(($(date +%s) - start))
            if cmp -s "$scratch/out" "expected/$name.stdout" &&
                [ "$status" = "$(cat "expected/$name.status")" ] && [ -f "$scratch/sites.txt" ]; then
                echo "ok   $where $(basename "$v") (${secs}s)"
            else
                echo "FAIL $where $(basename "$v"): status $status"
                fail=1
            fi
        done
    done
done
exit $fail
