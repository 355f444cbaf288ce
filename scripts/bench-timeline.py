#!/usr/bin/env python3
"""The timeline's cost (docs/BENCHMARKS.md, "The timeline's cost"): every bundled workload of
kind compute, isa, dynamic and threads run by `outcrop run` with the timeline off
(`--timeline 0`) and on (the default, a mark every 100,000 instructions, or cycles with
--timing), untimed (the compiling tier feeding the profile by blocks) and timed (the retire
path), RUNS alternating pairs each; the run's own wall time (`--stats-json`'s wall_seconds:
the machine and its mechanisms, not loading) is compared. Prints a Markdown table.

Usage: cargo build --release && scripts/bench-timeline.py [RUNS]"""
import json, os, statistics, subprocess, sys, tempfile, tomllib

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..")
outcrop = os.environ.get("OUTCROP", os.path.join(root, "target/release/outcrop"))
runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
wl = os.path.join(root, "workloads")
manifest = tomllib.load(open(os.path.join(wl, "manifest.toml"), "rb"))


def wall(w, timeline, timed, tmp):
    stats = os.path.join(tmp, "s.json")
    cmd = [outcrop, "run", "--timeline", str(timeline), "--stats-json", stats, "-o", "/dev/null"]
    if timed:
        cmd.append("--timing")
    for r in w.get("reads", []):
        cmd += ["--allow", r]
    if w.get("writes"):
        cmd += ["--allow-rw", tmp]
    if "sysroot" in w:
        cmd += ["--sysroot", w["sysroot"]]
    cmd += ["--", "bin/" + w.get("binary", w["name"])] + w.get("args", [])
    subprocess.run(cmd, cwd=wl, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.load(open(stats))["wall_seconds"]


print("| workload | mode | timeline off (s) | timeline on (s) | on / off |")
print("|---|---|---|---|---|")
ratios = {False: [], True: []}
with tempfile.TemporaryDirectory() as tmp:
    for w in manifest["workload"]:
        if w["kind"] not in ("compute", "isa", "dynamic", "threads"):
            continue
        if "sysroot" in w and not os.path.exists(w["sysroot"]):
            continue
        for timed in (False, True):
            off, on = [], []
            for _ in range(runs):
                off.append(wall(w, 0, timed, tmp))
                on.append(wall(w, 100_000, timed, tmp))
            r = statistics.median(on) / statistics.median(off)
            ratios[timed].append(r)
            fmt = lambda v: f"{statistics.median(v):.3f} ({min(v):.3f}–{max(v):.3f})"
            print(f"| {w['name']} | {'timed' if timed else 'untimed'} | {fmt(off)} | {fmt(on)} | {r:.3f} |")
for timed in (False, True):
    g = statistics.geometric_mean(ratios[timed])
    print(f"| geometric mean | {'timed' if timed else 'untimed'} | | | {g:.3f} |")
