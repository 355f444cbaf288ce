#!/usr/bin/env python3
"""Sampled timing against the full model (docs/BENCHMARKS.md, "Phases and sampled timing"):
every bundled workload of kind compute, isa, dynamic and threads through
`outcrop phases --timing --compare --json` (defaults: 1,000,000-instruction intervals,
k <= 10, 300 samples of 1,000 instructions per phase after 4,000 of detailed warm-up,
functional warming over the whole fast-forward), RUNS times. The sampled wall time includes
the run that finds the phases. The CPIs are deterministic
(the same in every run); the wall times are medians (min-max). Prints a Markdown table.

Usage: cargo build --release && scripts/bench-phases.py [RUNS [FLAG...]]
(FLAGs go to `outcrop phases`, e.g. --warming 0 --warmup 100000). With REAL=DIR in the
environment, the programs are instead real ones built by scripts/real-programs.sh DIR:
Lua 5.5 running fib.lua, the SQLite 3.53.2 driver, zstd -3 and zlib's minigzip compressing
input.txt, and with BUSYBOX=PATH busybox's awk counting input.txt's words."""
import json, os, statistics, subprocess, sys
from phase_programs import programs, root

outcrop = os.environ.get("OUTCROP", os.path.join(root, "target/release/outcrop"))
runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5

print("| workload | instructions | phases | simulated | CPI, full model | CPI, sampled | error | full (s) | sampled (s) | speed-up |")
print("|---|---|---|---|---|---|---|---|---|---|")
errors, speedups = [], []
for name, options, prog, scratch in programs():
    cmd = [outcrop, "phases", "--timing", "--compare", "--json", "-o", "-"] + options + sys.argv[2:] + prog
    full, sampled, cpis = [], [], set()
    for _ in range(runs):
        out = subprocess.run(cmd, cwd=scratch, check=True, capture_output=True, text=True).stdout
        j = json.loads(out)
        e = j["estimate"]
        full.append(e["full_wall_seconds"])
        sampled.append(e["wall_seconds"])
        cpis.add((round(e["cpi"], 9), round(e["full_cpi"], 9)))
    assert len(cpis) == 1, (name, cpis)
    est, ref = cpis.pop()
    err = 100 * (est - ref) / ref
    sp = statistics.median(full) / statistics.median(sampled)
    errors.append(abs(err))
    speedups.append(sp)
    fmt = lambda v: f"{statistics.median(v):.2f} ({min(v):.2f}–{max(v):.2f})"
    print(f"| {name} | {j['instructions']:,} | {j['k']} | {100 * e['simulated_share']:.1f}% | {ref:.4f} | {est:.4f} | {err:+.2f}% | {fmt(full)} | {fmt(sampled)} | {sp:.1f}× |")
print(f"| all ({len(errors)}) | | | | | | mean abs {statistics.mean(errors):.2f}%, max {max(errors):.2f}% | | | geo. mean {statistics.geometric_mean(speedups):.1f}× |")
