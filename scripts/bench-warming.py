#!/usr/bin/env python3
"""Functional warming's speed (docs/BENCHMARKS.md, "Functional warming from compiled code"):
each program run to its end under the timing model's functional warming, from the single-step
interpreter's retire records (`step`, the way before issue 54) and from compiled code's block
runs (`jit`), side by side, alternating, RUNS times each; medians with min–max of MIPS.

usage: scripts/bench-warming.py RUNS   (REAL=DIR, BUSYBOX=PATH, ONLY=TEXT: phase_programs.py)
Builds `cargo build --release -p outcrop-run --example warm_speed` first."""
import os, re, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from phase_programs import programs, root

runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
subprocess.run(["cargo", "build", "--release", "-q", "-p", "outcrop-run", "--example", "warm_speed"],
               cwd=root, check=True)
exe = os.path.join(root, "target", "release", "examples", "warm_speed")


def once(engine, options, prog, scratch):
    out = subprocess.run([exe, engine] + options + prog, cwd=scratch, capture_output=True, text=True)
    m = re.search(r": (\d+) instructions in ([\d.]+) s: (\d+) MIPS, ([\d.]+)% from compiled", out.stdout)
    if not m:
        sys.exit(f"warm_speed failed: {out.stdout} {out.stderr}")
    return int(m[1]), float(m[2]), float(m[4])


def fmt(xs):
    return f"{statistics.median(xs):.0f} ({min(xs):.0f}–{max(xs):.0f})"


ratios = []
print("| program | instructions | retire records, MIPS | compiled code, MIPS | from compiled blocks | speed-up |")
print("|---|---:|---:|---:|---:|---:|")
for name, options, prog, scratch in programs():
    mips = {"step": [], "jit": []}
    share = 0.0
    for _ in range(runs):
        for engine in ("step", "jit"):
            n, s, pct = once(engine, options, prog, scratch)
            mips[engine].append(n / s / 1e6)
            if engine == "jit":
                share = pct
    r = statistics.median(mips["jit"]) / statistics.median(mips["step"])
    ratios.append(r)
    print(f"| {name} | {n / 1e6:.1f} M | {fmt(mips['step'])} | {fmt(mips['jit'])} | {share:.1f}% | {r:.2f}× |",
          flush=True)
geo = statistics.geometric_mean(ratios)
print(f"\ngeometric mean speed-up: {geo:.2f}×")
