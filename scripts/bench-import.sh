#!/usr/bin/env bash
# Import speed and memory (docs/BENCHMARKS.md, "Real hardware in"): a large perf.data made by
# repeating the data records of google/autofdo's test.lbr N times (default 100: 923,200
# samples, 14.8 M branch records, ~390 MB), read by `outcrop import` and, side by side, by
# `perf script -F ip,brstack` piped to a minimal text parser (awk counting entries), and
# `perf script` alone. RUNS runs each, alternating; medians with min–max; peak RSS.
#
# `scripts/bench-import.sh bolt`: what llvm-bolt-19 does with the profile Outcrop imports,
# on the fixtures: test.binary BOLTed from test.lbr, its output compared and its taken
# control transfers counted under qemu-x86_64 (scripts/qemu-plugin/taken.c) and timed natively;
# and BOLT's own estimate (-dyno-stats) from our profile vs from perf2bolt's, both fixtures.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-100}
RUNS=${RUNS:-5}
OUT=${OUT:-target/bench-import}
mkdir -p "$OUT"
F=crates/perf/tests/fixtures
O=target/release/outcrop
cargo build --release -q -p outcrop
if [ "${1:-speed}" = bolt ]; then
    cp "$F/test.binary" "$F/test.lbr" "$F/propeller_sample_1.perfdata1" "$OUT/"
    cp "$F/propeller_sample_1.bin" "$OUT/propeller_sample_1.bin.gen"
    chmod +x "$OUT/test.binary"
    cc -O2 -shared -fPIC -o "$OUT/taken.so" scripts/qemu-plugin/taken.c
    # Debian names it perf2bolt-19; BOLT picks its mode from the name "perf2bolt"
    ln -sf "$(readlink -f "$(command -v perf2bolt-19)")" "$OUT/perf2bolt"
    cd "$OUT"
    python3 -c "open('in.dat','wb').write(bytes(((i*2654435761)&0xffffffff)>>27 for i in range(300000)))"
    for p in test propeller; do
        case $p in
            test) bin=test.binary; data=test.lbr ;;
            propeller) bin=propeller_sample_1.bin.gen; data=propeller_sample_1.perfdata1 ;;
        esac
        ../../$O import "$data" --binary "$bin" -o "$p.samples" > /dev/null
        ../../$O paths report "$p.samples" --binary "$bin" --bolt-preagg "$p.preagg" --top 0 > /dev/null
        echo "== $p: llvm-bolt-19 with Outcrop's pre-aggregated profile"
        llvm-bolt-19 "$bin" -o "$p.ours" -pa -p "$p.preagg" -reorder-blocks=ext-tsp -dyno-stats 2>&1 |
            grep -E "aggregated LBR|mismatching|non-empty execution profile|modified layout|taken branches" || true
        echo "== $p: perf2bolt-19, then llvm-bolt-19 with its .fdata"
        ./perf2bolt -p "$data" -o "$p.fdata" "$bin" 2>&1 | grep -E "PERF2BOLT-ERROR|read [0-9]+ samples|out of range|wrote" || true
        if [ -s "$p.fdata" ]; then
            llvm-bolt-19 "$bin" -o "$p.theirs" -data="$p.fdata" -reorder-blocks=ext-tsp -dyno-stats 2>&1 |
                grep -E "non-empty execution profile|modified layout|taken branches|ERROR" || true
        fi
    done
    chmod +x test.ours
    ./test.binary in.dat > a.out; ./test.ours in.dat > b.out
    cmp a.out b.out && echo "test.binary and its BOLTed copy print the same"
    for b in test.binary test.ours; do
        echo "$b: $(qemu-x86_64 -d plugin -plugin ./taken.so ./$b in.dat 2>&1 >/dev/null | grep taken)"
    done
    : > wall.txt
    for r in $(seq "$RUNS"); do
        for b in test.binary test.ours; do
            echo "$b $(/usr/bin/time -f %e ./$b in.dat 2>&1 >/dev/null | tail -1)" >> wall.txt
        done
    done
    python3 - wall.txt <<'PY'
import sys, statistics
rows = {}
for l in open(sys.argv[1]):
    k, v = l.split(); rows.setdefault(k, []).append(float(v))
for k, v in rows.items():
    print(f"{k}: wall {statistics.median(v):.3f} s ({min(v):.3f}-{max(v):.3f})")
PY
    exit 0
fi
python3 - "$F/test.lbr" "$OUT/big.data" "$N" <<'PY'
import struct, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = open(src, 'rb').read()
ao, asz, do, dsz = struct.unpack_from('<4Q', d, 24)
attr_size = struct.unpack_from('<Q', d, 16)[0]
data = d[do:do + dsz]
# header + attributes + ids as in the file (ids lie before the data), data repeated, no features
head = bytearray(d[:do])
struct.pack_into('<Q', head, 48, dsz * n)          # data size
struct.pack_into('<4Q', head, 72, 0, 0, 0, 0)       # no feature sections
with open(dst, 'wb') as f:
    f.write(head)
    for _ in range(n):
        f.write(data)
PY
ls -la "$OUT/big.data"
cp "$F/test.binary" "$OUT/test.binary"
perf script -F ip,brstack -i "$OUT/big.data" > "$OUT/big.txt" 2>/dev/null
t() { /usr/bin/time -f "%e %M" "$@" 2>&1 >/dev/null | tail -1; }
: > "$OUT/times.txt"
for r in $(seq "$RUNS"); do
    echo "import $(t $O import "$OUT/big.data" --binary "$OUT/test.binary" -o "$OUT/big.samples")" >> "$OUT/times.txt"
    echo "import-text $(t $O import "$OUT/big.txt" --binary "$OUT/test.binary" -o "$OUT/big2.samples")" >> "$OUT/times.txt"
    echo "perf-script-awk $(t sh -c "perf script -F ip,brstack -i $OUT/big.data 2>/dev/null | awk '{n+=NF-1} END{print n}'")" >> "$OUT/times.txt"
    echo "perf-script $(t sh -c "perf script -F ip,brstack -i $OUT/big.data > /dev/null 2>&1")" >> "$OUT/times.txt"
done
records=$(awk '{n+=NF-1} END{print n}' "$OUT/big.txt")
python3 - "$OUT/times.txt" "$records" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    k, s, m = line.split()
    rows.setdefault(k, []).append((float(s), int(m)))
records = int(sys.argv[2])
base = statistics.median(s for s, _ in rows['perf-script-awk'])
print(f"{records} branch records")
print("| reader | wall s, median (min–max) | M records/s | vs perf script + awk | peak RSS MB |")
print("|---|---|---|---|---|")
for k, v in rows.items():
    ss = [s for s, _ in v]
    med = statistics.median(ss)
    print(f"| {k} | {med:.2f} ({min(ss):.2f}–{max(ss):.2f}) | {records / med / 1e6:.1f} | {base / med:.2f}× | {max(m for _, m in v) / 1024:.0f} |")
PY
