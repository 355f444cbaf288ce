#!/usr/bin/env python3
"""Two builds of outcrop side by side: every program under every engine, the builds alternating
run by run so that drift in the machine's load hits both alike. Prints, per program and engine,
each build's median (min-max) wall seconds over RUNS runs and the median of the paired ratios
NEW/BASE (below 1: the new build is faster).

    scripts/compare-builds.py BASE NEW [--runs 5] [--engines jit,blocks,step] [--dir DIR]
        [--observed | --timing] -- PROGRAM [ARGS...] [-- PROGRAM [ARGS...]]...

Programs run in DIR (default: workloads/) with it granted read-write, output discarded (a
non-zero exit status stops the comparison);
--observed runs `outcrop run -o -` (the exact profile) instead of `outcrop exec`; --timing
runs `outcrop run --timing -o -` (the exact profile and the timing model)."""
import argparse
import statistics
import subprocess
import sys
import time


def main():
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(usage=__doc__)
    p.add_argument("base")
    p.add_argument("new")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--engines", default="jit,blocks,step")
    p.add_argument("--dir", default="workloads")
    p.add_argument("--observed", action="store_true")
    p.add_argument("--timing", action="store_true")
    a = p.parse_args(argv[:split])
    programs, cur = [], None
    for word in argv[split:]:
        if word == "--":
            cur = None
            continue
        if cur is None:
            cur = [word]
            programs.append(cur)
        else:
            cur.append(word)
    print(f"{a.runs} runs each, alternating; median (min-max) wall seconds; ratio = median of NEW/BASE per pair")
    print("| program | engine | base | new | new/base |")
    print("|---|---|---|---|---|")
    for prog in programs:
        for engine in a.engines.split(","):
            times = {a.base: [], a.new: []}
            for _ in range(a.runs):
                for build in (a.base, a.new):
                    if a.observed or a.timing:
                        cmd = [build, "run", "-o", "-", "--engine", engine, "--allow-rw", "."]
                        cmd += ["--timing"] if a.timing else []
                        cmd += ["--", *prog]
                    else:
                        cmd = [build, "exec", "--engine", engine, "--allow-rw", ".", "--", *prog]
                    t = time.perf_counter()
                    r = subprocess.run(cmd, cwd=a.dir, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
                    times[build].append(time.perf_counter() - t)
                    if r.returncode != 0:
                        sys.exit(f"{' '.join(cmd)}: exit status {r.returncode}")
            b, n = times[a.base], times[a.new]
            ratios = sorted(x / y for x, y in zip(n, b))
            cell = lambda v: f"{statistics.median(v):.3f} ({min(v):.3f}–{max(v):.3f})"
            print(f"| {' '.join(prog)} | {engine} | {cell(b)} | {cell(n)} | "
                  f"{statistics.median(ratios):.3f} ({ratios[0]:.3f}–{ratios[-1]:.3f}) |",
                  flush=True)


main()
