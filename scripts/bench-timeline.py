#!/usr/bin/env python3
"""The timeline's cost (docs/BENCHMARKS.md, "The timeline's cost"): every bundled workload of
kind compute, isa, dynamic and threads run by `outcrop run` with the timeline off
(`--timeline 0`) and on (the default, a mark every 100,000 instructions, or cycles with
--timing), untimed (the compiling tier feeding the profile by blocks) and timed (the retire
path), RUNS alternating pairs each; the run's own wall time (`run.json`'s wall_seconds:
the machine and its mechanisms, not loading or writing the report) is compared. Prints a Markdown table.

With `--phases` after RUNS it measures `outcrop run --phases` instead: the default run (timeline
on) without and with the phases' basic-block vectors ("The page's phases' cost").

Usage: cargo build --release && scripts/bench-timeline.py [RUNS [--phases]]"""
import json, os, shutil, statistics, subprocess, sys, tempfile, tomllib

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..")
outcrop = os.environ.get("OUTCROP", os.path.join(root, "target/release/outcrop"))
runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
phases = "--phases" in sys.argv[2:]
what = "phases" if phases else "timeline"
wl = os.path.join(root, "workloads")
manifest = tomllib.load(open(os.path.join(wl, "manifest.toml"), "rb"))


def wall(w, on, timed, tmp):
    report = os.path.join(tmp, "report")
    # a scratch copy of its inputs, where it may write
    for r in w.get("reads", []):
        os.makedirs(os.path.join(tmp, os.path.dirname(r)), exist_ok=True)
        shutil.copy(os.path.join(wl, r), os.path.join(tmp, r))
    if phases:
        flags = ["--phases"] if on else []
    else:
        flags = ["--timeline", "100000" if on else "0"]
    cmd = [outcrop, "run"] + flags + ["--report", report, "-o", "/dev/null", "--allow-rw", "."]
    if timed:
        cmd.append("--timing")
    if "sysroot" in w:
        cmd += ["--sysroot", w["sysroot"]]
    cmd += ["--", os.path.join(wl, "bin", w.get("binary", w["name"]))] + w.get("args", [])
    subprocess.run(cmd, cwd=tmp, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.load(open(os.path.join(report, "run.json")))["wall_seconds"]


print(f"| workload | mode | {what} off (s) | {what} on (s) | on / off |")
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
                off.append(wall(w, False, timed, tmp))
                on.append(wall(w, True, timed, tmp))
            r = statistics.median(on) / statistics.median(off)
            ratios[timed].append(r)
            fmt = lambda v: f"{statistics.median(v):.3f} ({min(v):.3f}–{max(v):.3f})"
            print(f"| {w['name']} | {'timed' if timed else 'untimed'} | {fmt(off)} | {fmt(on)} | {r:.3f} |")
for timed in (False, True):
    g = statistics.geometric_mean(ratios[timed])
    print(f"| geometric mean | {'timed' if timed else 'untimed'} | | | {g:.3f} |")
