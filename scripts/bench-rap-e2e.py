#!/usr/bin/env python3
"""`outcrop rap FILE` end to end, two binaries side by side (docs/BENCHMARKS.md).

usage: scripts/bench-rap-e2e.py OLD NEW RUNS FILE...

Each file is read once first (warm page cache); then the two binaries alternate, RUNS times
each. Prints one Markdown row per file: M events/s, median (min-max), for each binary, and
their ratio. The event count is the file's size / 8 for raw u64le files, else read from
`outcrop trace info`.
"""
import os
import re
import statistics
import subprocess
import sys
import time


def events(binary, path):
    if path.endswith(".otr"):
        out = subprocess.run([binary, "trace", "info", path], capture_output=True, text=True).stdout
        m = re.search(r"(\d+) values", out)
        if not m:
            raise SystemExit(f"no event count for {path}")
        return int(m.group(1))
    return os.path.getsize(path) // 8


def run(binary, path):
    start = time.perf_counter()
    subprocess.run([binary, "rap", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main():
    old, new, runs, files = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    print("| file | events | before | after | after / before |")
    print("|---|---:|---:|---:|---:|")
    for f in files:
        n = events(new, f)
        run(new, f)
        times = {old: [], new: []}
        for _ in range(runs):
            for b in (old, new):
                times[b].append(run(b, f))
        rate = lambda ts: [n / t / 1e6 for t in ts]
        cell = lambda r: f"{statistics.median(r):.1f} ({min(r):.1f}–{max(r):.1f})"
        ro, rn = rate(times[old]), rate(times[new])
        print(f"| {os.path.basename(f)} | {n} | {cell(ro)} | {cell(rn)} | {statistics.median(rn) / statistics.median(ro):.2f}x |")


if __name__ == "__main__":
    main()
