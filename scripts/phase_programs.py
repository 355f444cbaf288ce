"""The programs scripts/bench-phases.py and scripts/bench-coverage.py time, written once.

programs() yields (name, outcrop options, the program and its arguments, scratch directory):
every bundled workload of kind compute, isa, dynamic and threads (its inputs copied into a
scratch directory it may write), or with REAL=DIR in the environment the real programs
scripts/real-programs.sh DIR builds (Lua 5.5 running fib.lua, the SQLite 3.53.2 driver, zstd -3
and zlib's minigzip compressing input.txt) and with BUSYBOX=PATH busybox's awk counting
input.txt's words. ONLY=TEXT keeps the programs whose name holds TEXT."""
import os, shutil, tempfile, tomllib

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..")
workloads = os.path.join(root, "workloads")


def programs():
    manifest = tomllib.load(open(os.path.join(workloads, "manifest.toml"), "rb"))["workload"]
    real = os.environ.get("REAL")
    if real:
        real = os.path.abspath(real)
        text = os.path.join(real, "input.txt")
        manifest = [
            {"name": "lua fib.lua", "binary": os.path.join(real, "lua"), "args": [os.path.join(real, "fib.lua")]},
            {"name": "sqlite (driver)", "binary": os.path.join(real, "sqlite"), "args": []},
            {"name": "zstd -3", "binary": os.path.join(real, "zstd"), "args": ["-3", "-c", "-f", text]},
            {"name": "minigzip", "binary": os.path.join(real, "minigzip"), "args": ["-c", text]},
        ]
        if os.environ.get("BUSYBOX"):
            manifest.append({"name": "busybox awk (word counts)", "binary": os.environ["BUSYBOX"],
                             "args": ["awk", "{for(i=1;i<=NF;i++)c[$i]++} END{for(w in c)n++; print n}", text]})
    for w in manifest:
        if w.get("kind", "compute") not in ("compute", "isa", "dynamic", "threads"):
            continue
        if "sysroot" in w and not os.path.exists(w["sysroot"]):
            continue
        if os.environ.get("ONLY") and os.environ["ONLY"] not in w["name"]:
            continue
        scratch = tempfile.mkdtemp()
        for r in w.get("reads", []):
            os.makedirs(os.path.join(scratch, os.path.dirname(r)), exist_ok=True)
            shutil.copy(os.path.join(workloads, r), os.path.join(scratch, r))
        options = ["--allow-rw", "."] + (["--allow", real] if real else [])
        if "sysroot" in w:
            options += ["--sysroot", w["sysroot"]]
        binary = w.get("binary", w["name"])
        if not os.path.isabs(binary):
            binary = os.path.join(workloads, "bin", binary)
        yield w["name"], options, ["--", binary] + w.get("args", []), scratch
