#!/usr/bin/env python3
"""What `--stats-json` costs: `outcrop exec -- PROG` against `outcrop exec --stats-json F --
PROG`, alternating, N runs each, wall time; medians with min-max and the ratio of medians.

usage: scripts/bench-stats-json.py OUTCROP DIR RUNS 'prog args' ['prog args' ...]
(run in DIR, the guest granted DIR; docs/BENCHMARKS.md "What a perf user expects")
"""
import shlex, statistics, subprocess, sys, tempfile, time

outcrop, where, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("| program | bare (s) | --stats-json (s) | ratio |")
print("|---|---|---|---|")
for prog in sys.argv[4:]:
    bare, stats = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            for kind, out in (("bare", bare), ("stats", stats)):
                extra = ["--stats-json", f"{tmp}/s.json"] if kind == "stats" else []
                cmd = [outcrop, "exec", "--allow", "."] + extra + ["--"] + shlex.split(prog)
                t = time.perf_counter()
                subprocess.run(cmd, cwd=where, check=True, stdout=subprocess.DEVNULL)
                out.append(time.perf_counter() - t)
    mb, ms = statistics.median(bare), statistics.median(stats)
    print(f"| `{prog}` | {mb:.3f} ({min(bare):.3f}–{max(bare):.3f}) | "
          f"{ms:.3f} ({min(stats):.3f}–{max(stats):.3f}) | {ms / mb:.2f}× |")
