#!/usr/bin/env bash
# Runs a conformance suite built for riscv64 under qemu-riscv64-static and under
# `outcrop exec`, side by side, and lists every test that passes under qemu but not under
# Outcrop (docs/machine.md, "Conformance").
#
#   scripts/conformance.sh LIBC_TEST_DIR [OUT.tsv]
#   scripts/conformance.sh --ltp LTP_DIR [OUT.tsv] [FILTER]
#
# --ltp: the Linux Test Project's system-call tests (runtest/syscalls; FILTER an extended
# regular expression on the test names), built statically for riscv64 from LTP's source:
#   make autotools && ./configure --host=riscv64-linux-gnu CC=riscv64-linux-gnu-gcc LDFLAGS=-static
#   make -C lib -j2 && make -C testcases/kernel/syscalls -j2 -k
# Each test runs with its runtest arguments in a scratch directory that is its TMPDIR, 30 s
# timeout; under Outcrop with GUEST_BUSYBOX's sysroot (below: LTP runs shell commands and
# zcat) and the host's /proc/config.gz granted (LTP checks the kernel's configuration, which
# qemu shows it from the host). qemu runs as the unprivileged user nobody (a test run as root under qemu acts on
# the host: its clock, mounts, swap); the machine runs its own sandbox and says uid 0, so a
# test that needs root runs there and mostly fails: neither counts as a pass. LTP's status is
# 0 pass, 32 TCONF (not applicable here), anything else a failure or a timeout (124).
# QEMU_FROM=an earlier OUT.tsv takes qemu's statuses from it (same LTP build) instead of
# rerunning qemu, which halves the time when only Outcrop changed. Prints
# `test<TAB>qemu status<TAB>outcrop status` lines and the counts.
#
# LIBC_TEST_DIR is musl's libc-test (git.musl-libc.org/libc-test; a mirror: Boeing/libc-test)
# built against Debian's cross glibc:
#   cp config.mak.def config.mak
#   printf 'CC=riscv64-linux-gnu-gcc\nCROSS_COMPILE=riscv64-linux-gnu-\n' >> config.mak
#   make -k -j2 $(make -s debug | grep '^BINS' | cut -d' ' -f2-)
# Every src/*/*.exe is run directly (not through libc-test's runtest.exe, so that a test's
# status is its own), in a scratch working directory, with /tmp granted read-write,
# a 30 s timeout and 2 GiB of guest memory each, dynamically linked ones with the cross sysroot. A test passes when it
# exits 0. Prints `test<TAB>qemu status<TAB>outcrop status` lines to OUT (default
# conformance.tsv) and the counts.
set -u
sysroot=/usr/riscv64-linux-gnu
# Tests that run /bin/sh or `echo` (popen, system, vfork, posix_spawnp, execle): qemu-user
# hands their execve to the host kernel, which runs the host's x86-64 /bin/sh; the machine runs
# riscv64 programs only. With GUEST_BUSYBOX=a static riscv64 busybox, Outcrop's sysroot is a
# copy of the cross sysroot with busybox as bin/sh, bin/echo and a few more.
osysroot=$sysroot
if [ -n "${GUEST_BUSYBOX:-}" ]; then
    osysroot=$(mktemp -d)
    cp -a "$sysroot/." "$osysroot/"
    mkdir -p "$osysroot/bin"
    cp "$GUEST_BUSYBOX" "$osysroot/bin/busybox"
    for a in sh echo cat true false kill env sleep zcat gzip; do ln -f "$osysroot/bin/busybox" "$osysroot/bin/$a"; done
    # the users and groups a test looks up (nobody, root), as the host's /etc gives qemu
    mkdir -p "$osysroot/etc"
    grep -E '^(root|nobody|daemon|bin):' /etc/passwd > "$osysroot/etc/passwd"
    grep -E '^(root|nogroup|daemon|bin):' /etc/group > "$osysroot/etc/group"
fi
if [ "${1:-}" = "--ltp" ]; then
    dir=${2:?usage: $0 --ltp LTP_DIR [OUT.tsv] [FILTER]}
    out=${3:-ltp.tsv}
    filter=${4:-.}
    here=$(cd "$(dirname "$0")/.." && pwd)
    outcrop=${OUTCROP:-$here/target/release/outcrop}
    [ -x "$outcrop" ] || { echo "no outcrop binary at $outcrop (cargo build --release)" >&2; exit 2; }
    # the host kernel's configuration, which LTP reads (through zcat) under qemu too
    kconfig=""
    [ -r /proc/config.gz ] && kconfig="--allow /proc/config.gz"
    bins=$(mktemp -d)
    find "$dir/testcases/kernel/syscalls" -type f -perm -u+x ! -name '*.sh' ! -name '*.o' | while read -r f; do
        [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && ln -sf "$f" "$bins/$(basename "$f")"
    done
    : > "$out"
    pass_q=0 pass_o=0 total=0 both=0 conf_q=0 conf_o=0
    while read -r name cmd args; do
        case "$name" in ''|'#'*) continue ;; esac
        echo "$name" | grep -Eq "$filter" || continue
        exe=$bins/$cmd
        [ -e "$exe" ] || continue
        exe=$(readlink -f "$exe")
        q=""
        [ -n "${QEMU_FROM:-}" ] && q=$(awk -F'\t' -v n="$name" '$1 == n { print $2; exit }' "$QEMU_FROM")
        if [ -z "$q" ]; then
            scratch=$(mktemp -d); chmod 777 "$scratch"
            # shellcheck disable=SC2086
            ( cd "$scratch" && TMPDIR=$scratch timeout 30 setpriv --reuid=65534 --regid=65534 --clear-groups \
                qemu-riscv64-static -R 2G "$exe" $args >/dev/null 2>&1 </dev/null ); q=$?
            rm -rf "$scratch"
        fi
        scratch=$(mktemp -d)
        # shellcheck disable=SC2086
        ( cd "$scratch" && TMPDIR=$scratch timeout 30 "$outcrop" exec --memory-limit 2048 --allow-rw "$scratch" \
            --allow "$dir" --sysroot "$osysroot" $kconfig -- "$exe" $args >/dev/null 2>&1 </dev/null ); o=$?
        rm -rf "$scratch"
        total=$((total + 1))
        [ $q -eq 0 ] && pass_q=$((pass_q + 1))
        [ $o -eq 0 ] && pass_o=$((pass_o + 1))
        [ $q -eq 32 ] && conf_q=$((conf_q + 1))
        [ $o -eq 32 ] && conf_o=$((conf_o + 1))
        [ $q -eq 0 ] && [ $o -eq 0 ] && both=$((both + 1))
        printf '%s\t%s\t%s\n' "$name" "$q" "$o" >> "$out"
    done < "$dir/runtest/syscalls"
    rm -rf "$bins"
    echo "tests: $total; pass under qemu: $pass_q (TCONF $conf_q); under outcrop: $pass_o (TCONF $conf_o); both: $both"
    echo "pass under qemu, not under outcrop:"
    awk -F'\t' '$2 == 0 && $3 != 0 { print "  " $1 " (outcrop status " $3 ")" }' "$out"
    echo "pass under outcrop, not under qemu:"
    awk -F'\t' '$2 != 0 && $3 == 0 { print "  " $1 " (qemu status " $2 ")" }' "$out"
    exit 0
fi
dir=${1:?usage: $0 LIBC_TEST_DIR [OUT.tsv]}
out=${2:-conformance.tsv}
here=$(cd "$(dirname "$0")/.." && pwd)
outcrop=${OUTCROP:-$here/target/release/outcrop}
sysroot=/usr/riscv64-linux-gnu
[ -x "$outcrop" ] || { echo "no outcrop binary at $outcrop (cargo build --release)" >&2; exit 2; }
: > "$out"
pass_q=0 pass_o=0 total=0 both=0
for exe in $(cd "$dir" && ls src/*/*.exe | sort); do
    case $exe in src/common/*) continue ;; esac
    scratch=$(mktemp -d)
    # qemu's guest address space reserved at 2 GiB (-R), the machine's memory limited to
    # 2 GiB: the malloc-failure tests would otherwise take the host's memory
    ( cd "$scratch" && timeout 30 qemu-riscv64-static -R 2G -L "$sysroot" "$dir/$exe" >/dev/null 2>&1 ); q=$?
    rm -rf "$scratch"; scratch=$(mktemp -d)
    ( cd "$scratch" && timeout 30 "$outcrop" exec --memory-limit 2048 --sysroot "$osysroot" --allow-rw . --allow-rw /tmp \
        --allow "$dir" -- "$dir/$exe" >/dev/null 2>&1 ); o=$?
    rm -rf "$scratch"
    total=$((total + 1))
    [ $q -eq 0 ] && pass_q=$((pass_q + 1))
    [ $o -eq 0 ] && pass_o=$((pass_o + 1))
    [ $q -eq 0 ] && [ $o -eq 0 ] && both=$((both + 1))
    printf '%s\t%s\t%s\n' "$exe" "$q" "$o" >> "$out"
done
echo "tests: $total; pass under qemu: $pass_q; under outcrop: $pass_o; both: $both"
echo "pass under qemu, not under outcrop:"
awk -F'\t' '$2 == 0 && $3 != 0 { print "  " $1 " (outcrop status " $3 ")" }' "$out"
echo "pass under outcrop, not under qemu:"
awk -F'\t' '$2 != 0 && $3 == 0 { print "  " $1 " (qemu status " $2 ")" }' "$out"
