#!/usr/bin/env python3
"""Issue 48's figures (docs/BENCHMARKS.md, "Reliability, round four"), an older build and this
one side by side in the same run, alternating:

1. what following the stack pointer and counting switched-out blocks costs `outcrop run`
   (the exact profile, untimed: the compiling tier feeding it by blocks; and timed: the retire
   path): each bundled workload of kind compute and threads, RUNS alternating pairs, the run's
   own wall time (`run.json`'s wall_seconds);
2. hostile inputs, RUNS runs of each build (wall time and peak RSS of the process): a 1 GiB
   sparse file mapped by a guest (`crates/rv/tests/fixtures/dirs/shared`, with qemu-user as the
   peer), `outcrop diff` of two 100 MB profile.json files and of a 120 MB RAP tree JSON, and
   `outcrop import` of a perf.data whose process maps the program 2,000 times and forks 40,000
   times.

3. with REAL=DIR (the programs `xtask real-programs` builds): the same run cost on Lua, SQLite
   and zstd, untimed and timed, with `outcrop exec` (this build) and qemu-user as context.

Usage: OLD=/path/to/old/outcrop [REAL=target/real-programs] scripts/bench-reliability.py [RUNS]
       (NEW: target/release; --hostile: part 2 only, --mappings: its file mappings only;
       --real: part 3 only)"""
import json, os, resource, shutil, statistics, struct, subprocess, sys, tempfile, time, tomllib

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..")
new = os.environ.get("NEW", os.path.join(root, "target/release/outcrop"))
old = os.environ["OLD"]
runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
wl = os.path.join(root, "workloads")
manifest = tomllib.load(open(os.path.join(wl, "manifest.toml"), "rb"))


def measured(cmd, cwd):
    """Wall seconds and peak RSS (MB) of one process, as GNU time reports them (the child's
    own maximum; this script's memory does not count)."""
    out = os.path.join(cwd, ".time")
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out] + cmd, cwd=cwd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    kb = int(open(out).read().split()[-1])
    return wall, kb / 1024, r.returncode


def fmt(v, digits=3):
    return f"{statistics.median(v):.{digits}f} ({min(v):.{digits}f}–{max(v):.{digits}f})"


def run_wall(binary, w, timed, tmp):
    report = os.path.join(tmp, "report")
    shutil.rmtree(report, ignore_errors=True)  # the older build writes no report marker
    for r in w.get("reads", []):
        os.makedirs(os.path.join(tmp, os.path.dirname(r)), exist_ok=True)
        shutil.copy(os.path.join(wl, r), os.path.join(tmp, r))
    cmd = [binary, "run", "--report", report, "-o", "/dev/null", "--allow-rw", "."]
    if timed:
        cmd.append("--timing")
    cmd += ["--", os.path.join(wl, "bin", w.get("binary", w["name"]))] + w.get("args", [])
    subprocess.run(cmd, cwd=tmp, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.load(open(os.path.join(report, "run.json")))["wall_seconds"]


def run_cost():
    print("| workload | mode | older build (s) | this build (s) | this / older |")
    print("|---|---|---|---|---|")
    ratios = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for w in manifest["workload"]:
            if w["kind"] not in ("compute", "threads"):
                continue
            for timed in (False, True):
                a, b = [], []
                for _ in range(runs):
                    a.append(run_wall(old, w, timed, tmp))
                    b.append(run_wall(new, w, timed, tmp))
                r = statistics.median(b) / statistics.median(a)
                ratios[timed].append(r)
                mode = "timed" if timed else "untimed"
                print(f"| {w['name']} | {mode} | {fmt(a)} | {fmt(b)} | {r:.3f} |")
    for timed in (False, True):
        g = statistics.geometric_mean(ratios[timed])
        print(f"| geometric mean | {'timed' if timed else 'untimed'} | | | {g:.3f} |")


def profile_json(path, n):
    zero = '"cycles":0,"mispredicts":0,"l1i_misses":0,"l1d_misses":0,"l2_misses":0'
    with open(path, "w") as f:
        f.write('{"program":"big","instructions":%d,"cycles":null,"functions":[' % (n * (n + 1) // 2))
        for i in range(1, n + 1):
            c = '{"instructions":%d,%s}' % (i, zero)
            f.write(('' if i == 1 else ',') + '{"name":"function_number_%d_with_a_longish_name","start":%d,"size":64,"self":%s,"total":%s,"calls":1}' % (i, 4096 + 64 * i, c, c))
        f.write('],"tree":[{"parent":0,"function":null,"thread":0,"self":{},"total":{}}')
        for i in range(1, n + 1):
            c = '{"instructions":%d,%s}' % (i, zero)
            f.write(',{"parent":0,"function":"function_number_%d_with_a_longish_name","thread":0,"self":%s,"total":%s}' % (i, c, c))
        f.write("]}")


def rap_tree_json(path, tmp, extra):
    vals = os.path.join(tmp, "vals.txt")
    with open(vals, "w") as f:
        f.write("\n".join(str(i) for i in range(1, 100001)))
    small = os.path.join(tmp, "small-tree.json")
    subprocess.run([new, "rap", "--save-tree", small, vals], check=True, stdout=subprocess.DEVNULL)
    t = json.load(open(small))
    # a crafted tail of nodes that are not children of their parents: refused at the end
    t["nodes"] += [{"lo": i * 16, "hi": i * 16 + 15, "depth": 5, "count": 1} for i in range(extra)]
    json.dump(t, open(path, "w"))


def perf_data(path, maps, forks, prog):
    """A perf.data (the layout of crates/perf/tests/it/synthetic.rs): one attribute, pid 1 maps
    `prog` `maps` times, then forks `forks` children."""
    def record(kind, misc, body):
        return struct.pack("<IHH", kind, misc, len(body) + 8) + body
    recs = []
    for i in range(maps):
        name = os.fsencode(prog)
        body = struct.pack("<II", 1, 1) + struct.pack("<QQQ", 0x55_0000_0000 + i * 0x10_0000, 0x1000, 0x1000)
        body += bytes(24) + struct.pack("<II", 5, 2) + name
        body += bytes((-len(body)) % 8 + 8)
        recs.append(record(10, 2, body))
    for pid in range(2, forks + 2):
        recs.append(record(7, 0, struct.pack("<IIIIQ", pid, 1, pid, 1, 0)))
    ip = 0x55_0000_0010
    recs.append(record(9, 2, struct.pack("<QII", ip, 1, 1)))
    attr = bytearray(128)
    struct.pack_into("<I", attr, 4, 128)
    struct.pack_into("<Q", attr, 16, 1000)
    struct.pack_into("<Q", attr, 24, 1 | 2)  # IP | TID
    attrs_off, attr_size = 104, 128 + 16
    ids_off = attrs_off + attr_size
    ids = struct.pack("<Q", 1)
    sec = bytes(attr) + struct.pack("<QQ", ids_off, len(ids))
    data = b"".join(recs)
    data_off = ids_off + len(ids)
    head = struct.pack("<QQQ", 0x32454C4946524550, 104, attr_size)
    head += struct.pack("<QQQQQQ", attrs_off, len(sec), data_off, len(data), 0, 0) + bytes(32)
    open(path, "wb").write(head + sec + ids + data)


def hostile():
    print("| input | older build: s, MB | this build: s, MB | peer |")
    print("|---|---|---|---|")
    shared = os.path.join(root, "crates/rv/tests/fixtures/dirs/shared")
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        cases.append(("guest maps a 1 GiB sparse file (`shared` fixture)",
                      lambda b: [b, "exec", "--allow-rw", ".", "--", shared, "f.bin", "sparse.bin"],
                      ["qemu-riscv64-static", shared, "f.bin", "sparse.bin"]))
        cases.append(("… then writes a 96 MiB file and maps it privately, touching 2 pages",
                      lambda b: [b, "exec", "--allow-rw", ".", "--", shared, "f.bin", "sparse.bin", "dense.bin"],
                      ["qemu-riscv64-static", shared, "f.bin", "sparse.bin", "dense.bin"]))
        if "--mappings" in sys.argv:
            run_cases(cases, tmp)
            return
        for side in ("A", "B"):
            os.makedirs(os.path.join(tmp, side))
            profile_json(os.path.join(tmp, side, "profile.json"), 160_000)
        mb = os.path.getsize(os.path.join(tmp, "A", "profile.json")) >> 20
        cases.append((f"`diff` of two report directories ({mb} MB profile.json each)", lambda b: [b, "diff", "A", "B", "-o", "/dev/null"], None))
        cases.append((f"`diff` of the two {mb} MB profile.json files named directly", lambda b: [b, "diff", "A/profile.json", "B/profile.json", "-o", "/dev/null"], None))
        rap_tree_json(os.path.join(tmp, "tree.json"), tmp, 2_200_000)
        mb = os.path.getsize(os.path.join(tmp, "tree.json")) >> 20
        cases.append((f"`diff` of a {mb} MB RAP tree JSON (refused at its end)", lambda b: [b, "diff", "tree.json", "tree.json"], None))
        prog = os.path.abspath(os.path.join(wl, "bin", "hello"))
        perf_data(os.path.join(tmp, "forks.data"), 2000, 40_000, prog)
        kb = os.path.getsize(os.path.join(tmp, "forks.data")) >> 10
        cases.append((f"`import` of a {kb} KB perf.data: 2,000 mmaps, 40,000 forks",
                      lambda b: [b, "import", "forks.data", "--binary", prog, "-o", "/dev/null"], None))
        run_cases(cases, tmp)


def run_cases(cases, tmp):
    for name, cmd, peer in cases:
        cols = []
        for b in (old, new):
            walls, rss = [], []
            for _ in range(runs):
                w, r, _ = measured(cmd(b), tmp)
                walls.append(w)
                rss.append(r)
            cols.append(f"{fmt(walls, 2)} s, {statistics.median(rss):.0f} MB")
        p = "—"
        if peer and shutil.which(peer[0]):
            walls, rss = [], []
            for _ in range(runs):
                w, r, _ = measured(peer, tmp)
                walls.append(w)
                rss.append(r)
            p = f"qemu: {fmt(walls, 2)} s, {statistics.median(rss):.0f} MB"
        print(f"| {name} | {cols[0]} | {cols[1]} | {p} |")


REAL = [("lua fib.lua", ["./lua", "fib.lua"]), ("lua gc.lua", ["./lua", "gc.lua"]),
        ("sqlite", ["./sqlite"]), ("zstd 3", ["./zstd", "3", "input.txt"])]


def real_cost(d):
    """Part 3: old and new `run` alternating on each real program; exec and qemu as context."""
    print("| program | mode | older build (s) | this build (s) | this / older | exec (s) | qemu (s) |")
    print("|---|---|---|---|---|---|---|")
    ratios = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report")

        def one(binary, argv, timed):
            shutil.rmtree(report, ignore_errors=True)
            cmd = [binary, "run", "--report", report, "-o", "/dev/null", "--allow-rw", "."]
            cmd += (["--timing"] if timed else []) + ["--"] + argv
            subprocess.run(cmd, cwd=d, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return json.load(open(os.path.join(report, "run.json")))["wall_seconds"]

        def wall(cmd):
            t = time.perf_counter()
            subprocess.run(cmd, cwd=d, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return time.perf_counter() - t

        for name, argv in REAL:
            ex = [wall([new, "exec", "--allow-rw", ".", "--"] + argv) for _ in range(runs)]
            qm = [wall(["qemu-riscv64-static"] + argv) for _ in range(runs)]
            for timed in (False, True):
                a, b = [], []
                for _ in range(runs):
                    a.append(one(old, argv, timed))
                    b.append(one(new, argv, timed))
                r = statistics.median(b) / statistics.median(a)
                ratios[timed].append(r)
                mode = "timed" if timed else "untimed"
                print(f"| {name} | {mode} | {fmt(a)} | {fmt(b)} | {r:.3f} | {fmt(ex)} | {fmt(qm)} |")
    for timed in (False, True):
        g = statistics.geometric_mean(ratios[timed])
        print(f"| geometric mean | {'timed' if timed else 'untimed'} | | | {g:.3f} | | |")


if "--real" in sys.argv:
    real_cost(os.environ.get("REAL", os.path.join(root, "target/real-programs")))
    sys.exit(0)
if "--hostile" not in sys.argv and "--mappings" not in sys.argv:
    run_cost()
    print()
hostile()
if os.environ.get("REAL"):
    print()
    real_cost(os.environ["REAL"])
