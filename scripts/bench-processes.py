#!/usr/bin/env python3
"""Processes and pipes against qemu-user (docs/BENCHMARKS.md, "Whole programs: processes").

Runs, RUNS times alternating, each workload under qemu-riscv64-static, `outcrop exec` and
`outcrop run` (the exact profile, one per process and program), checks that exec's stdout is
byte-identical to qemu's, and prints wall-time medians with min–max and their ratios:

* `procs`: the fork/vfork/pipe/wait/kill guest (crates/outcrop/tests/fixtures/guest/procs.c);
* `net`: the loopback-socket guest (…/guest/net.c: a forking TCP echo server and its clients,
  UDP, Unix stream and datagram sockets; qemu-user uses the host's loopback);
* `shm`: the shared-memory guest (…/guest/shm.c: anonymous and System V shared memory,
  `/dev/shm`, a named semaphore, a memfd, a process-shared condition variable);
* `pingpong-1`, `pingpong-64`: two processes taking 20,000 turns each through process-shared
  semaphores, the child touching a page of a 1 MiB or 64 MiB shared region each turn
  (…/guest/pingpong.c): what a switch of process costs when processes share memory;
* `shell`: busybox's ash running pipelines of its applets (sort, uniq, awk, grep, sed, tr, cut,
  wc, seq; 3 to 5 processes a line) and a loop of 200 subshells (`$(...)`), every one a fork.

busybox 1.35 is built from Debian's source for riscv64, static, with its defconfig plus
FEATURE_PREFER_APPLETS and FEATURE_SH_STANDALONE: applets then run in forked children without
execve, which qemu-user cannot do for a riscv64 program without binfmt_misc — so both run the
same processes. Give BUSYBOX=path to use a build of your own, ONLY=a,b to run some workloads.

    scripts/bench-processes.py [RUNS]
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTCROP = os.path.join(ROOT, "target/release/outcrop")
PROCS = os.path.join(ROOT, "crates/outcrop/tests/fixtures/guest/procs")
NET = os.path.join(ROOT, "crates/outcrop/tests/fixtures/guest/net")
SHM = os.path.join(ROOT, "crates/outcrop/tests/fixtures/guest/shm")
PINGPONG = os.path.join(ROOT, "crates/outcrop/tests/fixtures/guest/pingpong")

SCRIPT = r"""
i=0
while [ $i -lt 3000 ]; do echo $((i * 7919 % 1000)); i=$((i+1)); done | sort -n | uniq -c | sort -rn | head -5
seq 1 200000 | awk '{ s += $1 } END { print s }'
seq 1 50000 | grep 7 | wc -l
seq 1 20000 | sed 's/1/one/g' | tr a-z A-Z | cut -c1-4 | sort | uniq | wc -l
n=0
for k in $(seq 1 200); do n=$((n + $(echo $k | wc -c))); done
echo $n
"""


def build_busybox(work):
    """busybox from Debian's source, riscv64, static, applets without exec."""
    src = os.path.join(work, "src")
    os.makedirs(src)
    subprocess.run(["apt-get", "source", "-q", "busybox"], cwd=src, check=True,
                   stdout=subprocess.DEVNULL)
    tree = next(os.path.join(src, d) for d in os.listdir(src)
                if d.startswith("busybox-") and os.path.isdir(os.path.join(src, d)))
    subprocess.run(["make", "defconfig"], cwd=tree, check=True, stdout=subprocess.DEVNULL)
    cfg = os.path.join(tree, ".config")
    text = open(cfg).read()
    for opt in ["STATIC", "FEATURE_PREFER_APPLETS", "FEATURE_SH_STANDALONE"]:
        text = text.replace(f"# CONFIG_{opt} is not set", f"CONFIG_{opt}=y")
    text = text.replace("CONFIG_TC=y", "# CONFIG_TC is not set")  # needs kernel headers
    open(cfg, "w").write(text)
    subprocess.run("yes '' | make oldconfig", shell=True, cwd=tree, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(["make", "-j2", "CROSS_COMPILE=riscv64-linux-gnu-"], cwd=tree, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return os.path.join(tree, "busybox")


def timed(cmd, cwd):
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return time.perf_counter() - t, p


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "outcrop"], cwd=ROOT, check=True)
    work = tempfile.mkdtemp(prefix="bench-processes-")
    busybox = os.environ.get("BUSYBOX") or build_busybox(work)
    shutil.copy(busybox, os.path.join(work, "busybox"))
    open(os.path.join(work, "pipe.sh"), "w").write(SCRIPT)
    workloads = {
        "procs": ([PROCS], [PROCS]),
        "net": ([NET], [NET]),
        "shm": ([SHM], [SHM]),
        "pingpong-1": ([PINGPONG, "20000", "1"], [PINGPONG, "20000", "1"]),
        "pingpong-64": ([PINGPONG, "20000", "64"], [PINGPONG, "20000", "64"]),
        "shell": (["./busybox", "sh", "pipe.sh"], ["./busybox", "sh", "pipe.sh"]),
    }
    only = os.environ.get("ONLY")
    if only:
        workloads = {k: v for k, v in workloads.items() if k in only.split(",")}
    print(f"{'workload':8} {'qemu s (min-max)':>22} {'outcrop s (min-max)':>22} {'ratio':>6}"
          f"  processes  identical {'profiled s (min-max)':>22} {'/exec':>6} {'/qemu':>6}  rows")
    for name, (q, o) in workloads.items():
        tq, to, tp = [], [], []
        same = True
        procs = "?"
        for _ in range(runs):
            dq, pq = timed(["qemu-riscv64-static"] + q, work)
            stats = os.path.join(work, "stats.json")
            do, po = timed([OUTCROP, "exec", "--allow", work, "--stats-json", stats, "--"] + o,
                           work)
            dp, pp = timed([OUTCROP, "run", "--allow", work, "--"] + o, work)
            assert pp.returncode == po.returncode, pp.stderr
            tq.append(dq)
            to.append(do)
            tp.append(dp)
            same &= pq.stdout == po.stdout and pq.returncode == po.returncode
            procs = len(json.load(open(stats)).get("processes", [])) or 1
        report = os.path.join(work, "report")
        subprocess.run([OUTCROP, "run", "--allow", work, "--report", report, "--"] + o, cwd=work,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        prof = json.load(open(os.path.join(report, "profile.json")))
        rows = len(prof.get("processes", {}).get("rows", [])) or 1
        mq, mo, mp = (statistics.median(t) for t in (tq, to, tp))
        print(f"{name:8} {mq:8.3f} ({min(tq):.3f}-{max(tq):.3f}) "
              f"{mo:8.3f} ({min(to):.3f}-{max(to):.3f}) {mo / mq:6.2f}  {procs:9}  {same!s:9} "
              f"{mp:8.3f} ({min(tp):.3f}-{max(tp):.3f}) {mp / mo:6.2f} {mp / mq:6.2f}  {rows}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
