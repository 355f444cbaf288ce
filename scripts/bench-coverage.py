#!/usr/bin/env python3
"""Does the sampled estimate's interval hold the full model's CPI as often as it claims?
(docs/BENCHMARKS.md, "Sampled timing's interval"). For every bundled workload of kind compute,
isa, dynamic and threads (or, with REAL=DIR, the real programs scripts/real-programs.sh DIR
builds, plus BUSYBOX=PATH's awk), `outcrop phases --timing --json` with --sample-seed 1..SEEDS
(the default 99.7% interval, ±3% target), and the full model once (--compare on the first
seed). Prints a Markdown table: the full model's CPI, the estimates' worst error, the median
and widest interval, how many intervals held the full CPI, and how many runs re-planned.

Usage: cargo build --release && scripts/bench-coverage.py [SEEDS [FLAG...]]"""
import json, os, statistics, subprocess, sys
from phase_programs import programs, root

outcrop = os.environ.get("OUTCROP", os.path.join(root, "target/release/outcrop"))
seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 15

print("| workload | instructions | phases | CPI, full model | worst error | interval, median (widest) | held the full CPI | re-planned |")
print("|---|---|---|---|---|---|---|---|")
held_all = total_all = 0
for name, options, prog, scratch in programs():
    base = [outcrop, "phases", "--timing", "--json", "-o", "-"] + options + sys.argv[2:]
    full, errs, widths, held, replanned = None, [], [], 0, 0
    for seed in range(1, seeds + 1):
        cmd = base + ["--sample-seed", str(seed)] + (["--compare"] if seed == 1 else []) + prog
        j = json.loads(subprocess.run(cmd, cwd=scratch, check=True, capture_output=True, text=True).stdout)
        e = j["estimate"]
        if seed == 1:
            full = e["full_cpi"]
        err = 100 * (e["cpi"] - full) / full
        errs.append(err)
        widths.append(e["half_width_pct"] or float("inf"))
        held += e["half_width"] is not None and abs(e["cpi"] - full) <= e["half_width"]
        replanned += e["passes"] > 1
    held_all += held
    total_all += seeds
    worst = max(errs, key=abs)
    print(f"| {name} | {j['instructions']:,} | {j['k']} | {full:.4f} | {worst:+.2f}% | ±{statistics.median(widths):.2f}% (±{max(widths):.2f}%) | {held} of {seeds} | {replanned} |", flush=True)
print(f"| all | | | | | | {held_all} of {total_all} ({100 * held_all / max(total_all, 1):.1f}%) | |")
