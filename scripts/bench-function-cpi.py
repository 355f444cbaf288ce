#!/usr/bin/env python3
"""Per-function CPIs from sampled timing against the exact profile (docs/BENCHMARKS.md,
"Sampled timing's interval"): for each program (the bundled workloads, or REAL=DIR's real
programs; see phase_programs.py), `outcrop run --timing --report` gives each function's exact
self cycles and instructions under the full model, and `outcrop phases --timing --json
--sample-seed SEED` the sampled estimate; prints, for the TOP functions with the most cycles in
the samples, the sampled CPI with its interval beside the exact one (the profile's `pcs`
summed over the function's symbol, as the samples attribute them), and whether the interval
holds it (a function met in fewer than 30 samples has no interval).

Usage: cargo build --release && scripts/bench-function-cpi.py [TOP [SEED]]"""
import json, os, subprocess, sys, tempfile
from phase_programs import programs, root

outcrop = os.environ.get("OUTCROP", os.path.join(root, "target/release/outcrop"))
top = int(sys.argv[1]) if len(sys.argv) > 1 else 3
seed = sys.argv[2] if len(sys.argv) > 2 else "1"

print("| program | function | share of cycles (sampled / exact) | CPI, sampled | CPI, exact | held |")
print("|---|---|---|---|---|---|")
held = total = 0
for name, options, prog, scratch in programs():
    report = tempfile.mkdtemp()
    subprocess.run([outcrop, "run", "--timing", "--report", report] + options + prog, cwd=scratch,
                   check=True, capture_output=True)
    profile = json.load(open(os.path.join(report, "profile.json")))
    # each function's exact cycles and instructions by its symbol's addresses, as the samples
    # count them (the profile's own rows split out inlined functions by DWARF lines)
    cols = profile["pcs"]["columns"]
    pc, ni, nc = cols.index("pc"), cols.index("instructions"), cols.index("cycles")
    rows = profile["pcs"]["rows"]
    def exact_of(f):
        lo, hi = f["start"], f["start"] + f["size"]
        sel = [r for r in rows if lo <= r[pc] < hi]
        return {"instructions": sum(r[ni] for r in sel), "cycles": sum(r[nc] for r in sel)}
    exact = {f["name"]: f for f in profile["functions"] if f["size"] > 0}
    out = subprocess.run([outcrop, "phases", "--timing", "--json", "-o", "-", "--sample-seed", seed]
                         + options + prog, cwd=scratch, check=True, capture_output=True, text=True).stdout
    functions = json.loads(out)["estimate"]["functions"]
    for f in functions[:top]:
        e = exact_of(exact[f["name"]]) if f["name"] in exact else None
        if not e or not e["instructions"]:
            print(f"| {name} | {f['name']} | {100 * f['cycle_share']:.2f}% / — | {f['cpi']:.4f} | not in the profile | |")
            continue
        cpi = e["cycles"] / e["instructions"]
        h = f["half_width"]
        inside = h is not None and abs(f["cpi"] - cpi) <= h
        held += inside
        total += h is not None
        hw = f" ± {h:.4f}" if h is not None else ""
        print(f"| {name} | {f['name']} | {100 * f['cycle_share']:.2f}% / {100 * e['cycles'] / profile['cycles']:.2f}% | {f['cpi']:.4f}{hw} | {cpi:.4f} | {'yes' if inside else ('no' if h is not None else 'no interval')} |", flush=True)
print(f"| all | | | | | {held} of {total} |")
