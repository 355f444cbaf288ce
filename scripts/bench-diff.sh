#!/bin/sh
# `outcrop diff` on two builds of two real programs (docs/BENCHMARKS.md, "Comparing two
# runs"): Lua 5.5 running fib.lua and SQLite 3.53.2 running the driver, each built -O1 -g
# and -O2 -g from the sources scripts/real-programs.sh fetched into DIR. Every run is timed
# (--timing) with RAP over pcs and a 16-entry branch-record unit; the diff's JSON is then
# checked row by row (A + diff = B, and every column summing to each run's totals), and the
# diff itself timed over 5 runs. The peer is pprof's differential profile (`go tool pprof
# -top -diff_base`, golang-go) over the same runs' profile.pb.gz: every function row the diff
# did not merge from compiler clones must give pprof's flat change exactly, and both are timed
# over 5 alternating runs (outcrop on the profile.json pair, the same data pprof reads, and
# on the whole directories).
# Usage: scripts/real-programs.sh DIR && scripts/bench-diff.sh DIR
set -eu
dir=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
outcrop=${OUTCROP:-$here/../target/release/outcrop}
CC=riscv64-linux-gnu-gcc
cd "$dir"
for o in 1 2; do
    [ -x lua-O$o ] || $CC -O$o -g -static -DLUA_USE_LINUX -o lua-O$o lua-src/onelua.c -lm 2>/dev/null
    [ -x sqlite-O$o ] || $CC -O$o -g -static -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION \
        -Isq/package/deps/sqlite3 -o sqlite-O$o "$here/real-programs/sqldrv.c" sq/package/deps/sqlite3/sqlite3.c
done
for p in lua sqlite; do
    args=""; [ $p = lua ] && args=fib.lua
    for o in 1 2; do
        [ -f d-$p-O$o/run.json ] || "$outcrop" run --timing --rap pc --paths 16 --report d-$p-O$o \
            -o /dev/null --allow . -- ./$p-O$o $args >/dev/null 2>&1
    done
    "$outcrop" diff d-$p-O1 d-$p-O2 --report d-$p-diff -o d-$p-diff.txt
    "$outcrop" diff d-$p-O1 d-$p-O2 --json -o d-$p-diff.json
    python3 - d-$p-O1 d-$p-O2 d-$p-diff.json <<'PY'
import json, sys
a, b, d = sys.argv[1:]
ra, rb = (json.load(open(x + "/run.json")) for x in (a, b))
p = json.load(open(d))["profile"]
keys = ["instructions", "cycles", "mispredicts", "l1i_misses", "l1d_misses", "l2_misses"]
rows = 0
for table in ["functions", "lines", "call_paths"]:
    sa = {k: 0 for k in keys}; sb = dict(sa)
    for r in p[table]:
        x, y, z = (r["a"]["self"], r["b"]["self"], r["delta"]["self"]) if table == "functions" else (r["a"], r["b"], r["delta"])
        for k in keys:
            assert x[k] + z[k] == y[k], (table, r)
            sa[k] += x[k]; sb[k] += y[k]
        rows += 1
    assert sa["instructions"] == ra["instructions"] and sb["instructions"] == rb["instructions"], table
    assert sa["cycles"] == ra["timing"]["cycles"] and sb["cycles"] == rb["timing"]["cycles"], table
u = p["unmatched"]
print(f"{a} -> {b}: A + diff = B on all {rows} rows (functions {len(p['functions'])}, lines {len(p['lines'])}, call paths {len(p['call_paths'])}); "
      f"cycles {ra['timing']['cycles']:,} -> {rb['timing']['cycles']:,}; overlap {100*p['overlap']:.1f}%; "
      f"only A {u['only_a']} functions ({u['only_a_pct']:.2f}%), only B {u['only_b']} ({u['only_b_pct']:.2f}%)")
PY
    pprof="go tool pprof -top -nodecount=1000000 -nodefraction=0 -edgefraction=0 -sample_index=cycles"
    $pprof -diff_base d-$p-O1/profile.pb.gz d-$p-O2/profile.pb.gz 2>/dev/null > d-$p-pprof.txt
    python3 - d-$p-diff.json d-$p-pprof.txt <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["profile"]
flat = {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) == 6 and f[1].endswith("%") and f[4].endswith("%"):
        try:
            flat[f[5]] = flat.get(f[5], 0) + int(f[0])
        except ValueError:
            pass
checked = 0
for r in p["functions"]:
    if r["symbols"] if "symbols" in r else False:
        continue
    d = r["delta"]["self"]["cycles"]
    assert flat.get(r["function"], 0) == d, (r["function"], d, flat.get(r["function"]))
    checked += 1
print(f"pprof -diff_base agrees on all {checked} unmerged function rows (of {len(p['functions'])})")
PY
    t_dir=""; t_json=""; t_pprof=""
    for i in 1 2 3 4 5; do
        s=$(date +%s.%N); "$outcrop" diff d-$p-O1 d-$p-O2 -o /dev/null; e=$(date +%s.%N)
        t_dir="$t_dir $(echo "$e - $s" | bc)"
        s=$(date +%s.%N); "$outcrop" diff d-$p-O1/profile.json d-$p-O2/profile.json -o /dev/null; e=$(date +%s.%N)
        t_json="$t_json $(echo "$e - $s" | bc)"
        s=$(date +%s.%N); $pprof -diff_base d-$p-O1/profile.pb.gz d-$p-O2/profile.pb.gz >/dev/null 2>&1; e=$(date +%s.%N)
        t_pprof="$t_pprof $(echo "$e - $s" | bc)"
    done
    echo "$p: wall seconds, outcrop diff DIRS:$t_dir"
    echo "$p: wall seconds, outcrop diff profile.json pair:$t_json"
    echo "$p: wall seconds, go tool pprof -top -diff_base:$t_pprof"
    head -22 d-$p-diff.txt | tail -14
done
