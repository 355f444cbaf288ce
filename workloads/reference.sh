#!/bin/sh
# Produces the reference outputs expected/<name>.stdout, .stderr and .status by
# running every bin/<name> under qemu-riscv64-static, the project's correctness
# reference.
#
#   ./reference.sh           regenerate expected/ from bin/
#   ./reference.sh --check   run again into a temporary directory and exit 1,
#                            listing the programs, if any output or status differs
#
# Exact invocation for each program (Outcrop's machine must be run the same way
# to compare):
#   working directory  workloads/
#   command            qemu-riscv64-static bin/<name>            (argv[0] = "bin/<name>")
#                      qemu-riscv64-static -L /usr/riscv64-linux-gnu bin/<name>_dyn
#                      qemu-riscv64-static bin/fileio src/fileio.c   (fileio only)
#   environment        empty (env -i)
#   stdin              /dev/null
# Environment: QEMU (default "qemu-riscv64-static") selects the emulator.
set -eu

QEMU=${QEMU:-qemu-riscv64-static}
export LC_ALL=C
cd "$(dirname "$0")"

if ! command -v "$QEMU" >/dev/null 2>&1; then
    echo "reference.sh: $QEMU not found (Debian: apt-get install qemu-user-static)" >&2
    exit 2
fi
qemu_path=$(command -v "$QEMU")

# What qemu needs besides the program: the cross sysroot for dynamically linked ones (-L).
qemu_flags() {
    case "$1" in
    *_dyn) echo "-L /usr/riscv64-linux-gnu" ;;
    *) echo "" ;;
    esac
}

# Arguments given to each program (only fileio takes one).
args_for() {
    case "$1" in
    fileio) echo "src/fileio.c" ;;
    *) echo "" ;;
    esac
}

# run_into DIR: runs every program and writes DIR/<name>.{stdout,stderr,status}.
run_into() {
    out=$1
    mkdir -p "$out"
    for src in src/*.c; do
        name=$(basename "$src" .c)
        status=0
        # shellcheck disable=SC2046 # word splitting of the argument list is intended
        env -i "$qemu_path" $(qemu_flags "$name") "bin/$name" $(args_for "$name") \
            < /dev/null > "$out/$name.stdout" 2> "$out/$name.stderr" || status=$?
        echo "$status" > "$out/$name.status"
    done
}

case "${1:-}" in
"")
    run_into expected
    for src in src/*.c; do
        name=$(basename "$src" .c)
        printf '%-20s status %s  %s\n' "$name" "$(cat "expected/$name.status")" \
            "$(grep '^checksum ' "expected/$name.stdout" || echo 'NO CHECKSUM LINE')"
    done
    ;;
--check)
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/outcrop-reference.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    run_into "$tmp"
    bad=""
    for src in src/*.c; do
        name=$(basename "$src" .c)
        for kind in stdout stderr status; do
            if ! cmp -s "$tmp/$name.$kind" "expected/$name.$kind"; then
                bad="$bad $name.$kind"
            fi
        done
    done
    if [ -n "$bad" ]; then
        echo "outputs under $QEMU differ from workloads/expected:$bad"
        exit 1
    fi
    echo "all $(ls src/*.c | wc -l) programs match workloads/expected under $QEMU"
    ;;
*)
    echo "usage: $0 [--check]" >&2
    exit 2
    ;;
esac
