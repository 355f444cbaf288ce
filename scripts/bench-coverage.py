#!/usr/bin/env python3
"""Does the sampled estimate's interval hold the full model's CPI as often as it claims?
(docs/BENCHMARKS.md, "Sampled timing's interval"). For every bundled workload of kind compute,
isa, dynamic and threads (or, with REAL=DIR, the real programs scripts/real-programs.sh DIR
builds, plus BUSYBOX=PATH's awk), `outcrop phases --timing --json` with --sample-seed 1..SEEDS
(the default 99.7% interval, ±3% target), and the full model once (--compare on the first
seed). Prints a Markdown table: the full model's CPI, the estimates' worst error, the median
and widest interval, how many intervals held the full CPI, and how many runs re-planned.

Usage: cargo build --release && scripts/bench-coverage.py [SEEDS [FLAG...]]"""
import json, os, shutil, statistics, subprocess, sys, tempfile, tomllib

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..")
outcrop = os.environ.get("OUTCROP", os.path.join(root, "target/release/outcrop"))
seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
wl = os.path.join(root, "workloads")
manifest = tomllib.load(open(os.path.join(wl, "manifest.toml"), "rb"))
real = os.environ.get("REAL")
if real:
    real = os.path.abspath(real)
    manifest = {"workload": [
        {"name": "lua fib.lua", "kind": "compute", "binary": os.path.join(real, "lua"), "args": [os.path.join(real, "fib.lua")]},
        {"name": "sqlite (driver)", "kind": "compute", "binary": os.path.join(real, "sqlite"), "args": []},
        {"name": "zstd -3", "kind": "compute", "binary": os.path.join(real, "zstd"), "args": ["-3", "-c", "-f", os.path.join(real, "input.txt")]},
        {"name": "minigzip", "kind": "compute", "binary": os.path.join(real, "minigzip"), "args": ["-c", os.path.join(real, "input.txt")]},
    ]}
    bb = os.environ.get("BUSYBOX")
    if bb:
        manifest["workload"].append({"name": "busybox awk (word counts)", "kind": "compute", "binary": bb,
            "args": ["awk", "{for(i=1;i<=NF;i++)c[$i]++} END{for(w in c)n++; print n}", os.path.join(real, "input.txt")]})

print("| workload | instructions | phases | CPI, full model | worst error | interval, median (widest) | held the full CPI | re-planned |")
print("|---|---|---|---|---|---|---|---|")
held_all = total_all = 0
for w in manifest["workload"]:
    if w["kind"] not in ("compute", "isa", "dynamic", "threads"):
        continue
    if os.environ.get("ONLY") and os.environ["ONLY"] not in w["name"]:
        continue
    if "sysroot" in w and not os.path.exists(w["sysroot"]):
        continue
    scratch = tempfile.mkdtemp()
    for r in w.get("reads", []):
        os.makedirs(os.path.join(scratch, os.path.dirname(r)), exist_ok=True)
        shutil.copy(os.path.join(wl, r), os.path.join(scratch, r))
    base = [outcrop, "phases", "--timing", "--json", "-o", "-", "--allow-rw", "."] + sys.argv[2:]
    if real:
        base += ["--allow", real]
    if "sysroot" in w:
        base += ["--sysroot", w["sysroot"]]
    prog = ["--", w["binary"] if os.path.isabs(w.get("binary", "")) else os.path.join(wl, "bin", w.get("binary", w["name"]))] + w.get("args", [])
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
    print(f"| {w['name']} | {j['instructions']:,} | {j['k']} | {full:.4f} | {worst:+.2f}% | ±{statistics.median(widths):.2f}% (±{max(widths):.2f}%) | {held} of {seeds} | {replanned} |", flush=True)
print(f"| all | | | | | | {held_all} of {total_all} ({100 * held_all / max(total_all, 1):.1f}%) | |")
