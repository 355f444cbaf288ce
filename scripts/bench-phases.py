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
import json, os, shutil, statistics, subprocess, sys, tempfile, tomllib

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..")
outcrop = os.environ.get("OUTCROP", os.path.join(root, "target/release/outcrop"))
runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
wl = os.path.join(root, "workloads")
manifest = tomllib.load(open(os.path.join(wl, "manifest.toml"), "rb"))

print("| workload | instructions | phases | simulated | CPI, full model | CPI, sampled | error | full (s) | sampled (s) | speed-up |")
print("|---|---|---|---|---|---|---|---|---|---|")
errors, speedups = [], []
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
for w in manifest["workload"]:
    if w["kind"] not in ("compute", "isa", "dynamic", "threads"):
        continue
    if os.environ.get("ONLY") and os.environ["ONLY"] not in w["name"]:
        continue
    if "sysroot" in w and not os.path.exists(w["sysroot"]):
        continue
    # a scratch copy of its inputs, where it may write
    scratch = tempfile.mkdtemp()
    for r in w.get("reads", []):
        os.makedirs(os.path.join(scratch, os.path.dirname(r)), exist_ok=True)
        shutil.copy(os.path.join(wl, r), os.path.join(scratch, r))
    cmd = [outcrop, "phases", "--timing", "--compare", "--json", "-o", "-", "--allow-rw", "."] + sys.argv[2:]
    if real:
        cmd += ["--allow", real]
    if "sysroot" in w:
        cmd += ["--sysroot", w["sysroot"]]
    binary = w.get("binary", w["name"])
    cmd += ["--", binary if os.path.isabs(binary) else os.path.join(wl, "bin", binary)] + w.get("args", [])
    full, sampled, cpis = [], [], set()
    for _ in range(runs):
        out = subprocess.run(cmd, cwd=scratch, check=True, capture_output=True, text=True).stdout
        j = json.loads(out)
        e = j["estimate"]
        full.append(e["full_wall_seconds"])
        sampled.append(e["wall_seconds"])
        cpis.add((round(e["cpi"], 9), round(e["full_cpi"], 9)))
    assert len(cpis) == 1, (w["name"], cpis)
    est, ref = cpis.pop()
    err = 100 * (est - ref) / ref
    sp = statistics.median(full) / statistics.median(sampled)
    errors.append(abs(err))
    speedups.append(sp)
    fmt = lambda v: f"{statistics.median(v):.2f} ({min(v):.2f}–{max(v):.2f})"
    print(f"| {w['name']} | {j['instructions']:,} | {j['k']} | {100 * e['simulated_share']:.1f}% | {ref:.4f} | {est:.4f} | {err:+.2f}% | {fmt(full)} | {fmt(sampled)} | {sp:.1f}× |")
print(f"| all ({len(errors)}) | | | | | | mean abs {statistics.mean(errors):.2f}%, max {max(errors):.2f}% | | | geo. mean {statistics.geometric_mean(speedups):.1f}× |")
