//! Processes and pipes (docs/machine.md, "Processes"): the `procs` guest's fork, pipe and
//! wait output equals qemu-user's; its execve and posix_spawn output equals a native build's
//! (qemu-user cannot exec a riscv64 program without binfmt_misc); `#!` scripts; the hostile
//! patterns of `forkbomb` end bounded; deterministic runs are byte-identical.

use crate::util::outcrop;
use std::path::{Path, PathBuf};

fn guest(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/guest")
        .join(name)
}

fn expected(name: &str) -> String {
    std::fs::read_to_string(guest(name)).expect("expected output")
}

fn exec(args: &[&str]) -> std::process::Output {
    let mut all = vec!["exec", "--deterministic", "--max-processes", "16", "--"];
    all.extend_from_slice(args);
    outcrop(&all)
}

/// `outcrop exec` of `procs ARGS` succeeds and prints the fixture file `want`.
fn prints(args: &[&str], want: &str) {
    let p = guest("procs");
    let mut all = vec![p.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = exec(&all);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected(want));
}

#[test]
fn fork_pipes_and_waits_print_what_qemu_prints() {
    prints(&[], "procs.expected");
}

#[test]
fn execve_and_posix_spawn_print_what_a_native_build_prints() {
    prints(&["exec"], "procs-exec.expected");
}

#[test]
fn a_script_runs_under_its_interpreter_beneath_the_grants_only() {
    let dir = tempfile::tempdir().unwrap();
    let procs = guest("procs");
    let script = dir.path().join("hello.sh");
    std::fs::write(&script, format!("#!{} child\n", procs.display())).unwrap();
    let mut perm = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&script, perm).unwrap();
    let (p, s) = (procs.to_str().unwrap(), script.to_str().unwrap());
    let d = dir.path().to_str().unwrap();
    // granted: the interpreter (the program itself) runs with the script's path
    let out = outcrop(&["exec", "--allow", d, "--", p, "run", s]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("exec'd child says {s}")) && text.contains("exited 7"),
        "{text}"
    );
    // not granted: EACCES, the exec fails in the child, nothing runs
    let out = outcrop(&["exec", "--", p, "run", s]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("exec failed: errno 13"), "{text}");
}

#[test]
fn deterministic_runs_with_processes_are_byte_identical() {
    let p = guest("procs");
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| {
        let stats = dir.path().join(name);
        let out = outcrop(&[
            "exec",
            "--deterministic",
            "--stats-json",
            stats.to_str().unwrap(),
            "--",
            p.to_str().unwrap(),
            "exec",
        ]);
        assert!(out.status.success());
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        (
            out.stdout,
            v["instructions"].clone(),
            v["processes"].clone(),
            v["threads"].clone(),
        )
    };
    let a = run("a.json");
    let b = run("b.json");
    assert_eq!(a, b);
    let procs = a.2.as_array().unwrap();
    assert_eq!(procs.len(), 12, "{procs:?}");
    assert_eq!(procs[0]["pid"], 1000);
    assert_eq!(procs[0]["exit"], "exited 0");
    assert!(procs.iter().any(|p| p["exit"] == "killed by SIGPIPE"));
    assert!(procs
        .iter()
        .any(|p| p["execs"] == 1 && p["exit"] == "exited 7"));
    // every thread's instructions sum to the run's, whatever process it was in
    let sum: u64 =
        a.3.as_array()
            .unwrap()
            .iter()
            .map(|t| t["instructions"].as_u64().unwrap())
            .sum();
    assert_eq!(sum, a.1.as_u64().unwrap());
}

#[test]
fn hostile_process_patterns_end_bounded() {
    let p = guest("forkbomb");
    let p = p.to_str().unwrap();
    // a fork bomb: fork fails with EAGAIN at the limit, and the bomb winds down
    let out = exec(&[p, "bomb"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-processes (16"));
    // unreaped children count against the limit, and can be reaped afterwards
    let out = exec(&[p, "zombies"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "zombies before fork failed: 15 (errno 11)\nreaped 15\n"
    );
    // two processes each reading a pipe only the other writes: a deadlock report naming both
    let out = exec(&[p, "deadlock"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("deadlock") && err.matches("waiting for a pipe").count() == 2,
        "{err}"
    );
    // descriptors: EMFILE at the table's size
    let out = exec(&[p, "fds"]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("pipes until Too many open files"));
    // a child left spinning does not keep the run going
    let out = exec(&[p, "spin"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("leaving 1 process running"));
}

#[test]
fn threads_of_every_process_take_equal_turns() {
    let p = guest("forkbomb");
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("s.json");
    let out = outcrop(&[
        "exec",
        "--deterministic",
        "--max-insns",
        "3000000",
        "--stats-json",
        stats.to_str().unwrap(),
        "--",
        p.to_str().unwrap(),
        "fair",
    ]);
    assert_eq!(out.status.code(), Some(124));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    let threads = v["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 3, "{threads:?}");
    let pids: Vec<u64> = threads.iter().map(|t| t["pid"].as_u64().unwrap()).collect();
    assert_eq!(pids, [1000, 1000, 1002]);
    for t in threads {
        let n = t["instructions"].as_u64().unwrap();
        assert!((900_000..=1_100_000).contains(&n), "{threads:?}");
    }
}

/// Every (process, program) has its own exact profile: the rows sum to the run on every
/// engine and under timing (cycles too), an `execve` starts a new row named by the new
/// program's symbols, the engines give byte-identical profiles, and the Firefox export has
/// a track group per row.
#[test]
fn each_process_and_program_has_its_own_exact_profile_on_every_engine() {
    let p = guest("procs");
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| -> (serde_json::Value, serde_json::Value, String) {
        let report = dir.path().join(name);
        let mut args = vec![
            "run",
            "--deterministic",
            "--max-processes",
            "16",
            "--report",
            report.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        args.extend(["--", p.to_str().unwrap(), "exec"]);
        let out = outcrop(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        let read = |f: &str| std::fs::read_to_string(report.join(f)).unwrap();
        let profile: serde_json::Value = serde_json::from_str(&read("profile.json")).unwrap();
        let run: serde_json::Value = serde_json::from_str(&read("run.json")).unwrap();
        let firefox = read("profile.firefox.json");
        (profile, run, firefox)
    };
    let (jit, stats, firefox) = run("jit", &[]);
    let rows = jit["processes"]["rows"].as_array().expect("process rows");
    let sum: u64 = rows
        .iter()
        .map(|r| r["instructions"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, stats["instructions"].as_u64().unwrap());
    // the first row is the first process's first program: the report's functions are its
    assert_eq!(rows[0]["depth"], 0);
    assert_eq!(rows[0]["instructions"], jit["instructions"]);
    // the self-exec: a second row for one pid, its own `main` and `_start`
    let execd: Vec<&serde_json::Value> = rows.iter().filter(|r| r["image"] == 1).collect();
    assert!(!execd.is_empty(), "{rows:?}");
    for r in &execd {
        assert!(r["program"].as_str().unwrap().ends_with("procs"), "{r}");
        let names: Vec<&str> = r["functions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f[0].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"main") && names.contains(&"_start"),
            "{names:?}"
        );
        assert!(rows.iter().any(|o| o["pid"] == r["pid"] && o["image"] == 0));
    }
    assert!(
        rows.iter().any(|r| r["depth"] == 1),
        "children are under the parent"
    );
    let ff: serde_json::Value = serde_json::from_str(&firefox).unwrap();
    let mut pids: Vec<&str> = ff["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["pid"].as_str().unwrap())
        .collect();
    pids.dedup();
    assert!(pids.len() > 1, "{pids:?}");
    for engine in ["blocks", "step"] {
        let (other, _, _) = run(engine, &["--engine", engine]);
        assert_eq!(other, jit, "{engine}");
    }
    // timed: the rows' cycles sum to the run's
    let (timed, stats, _) = run("timed", &["--timing"]);
    let rows = timed["processes"]["rows"].as_array().unwrap();
    let cycles: u64 = rows.iter().map(|r| r["cycles"].as_u64().unwrap()).sum();
    assert_eq!(cycles, stats["timing"]["cycles"].as_u64().unwrap());
}

/// The machine's loopback network: a forking TCP echo server and its clients, UDP datagrams
/// with their senders, Unix stream and datagram sockets by abstract name, a non-blocking
/// accept, a refused connection and a port in use print what qemu-user (on the host's
/// loopback) prints; an address outside the loopback is unreachable, with a warning.
#[test]
fn loopback_sockets_print_what_qemu_prints_and_the_host_network_is_unreachable() {
    let net = guest("net");
    let out = exec(&[net.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        expected("net.expected")
    );
    let out = exec(&[net.to_str().unwrap(), "far"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("connect far: -1 ENETUNREACH")
            && text.contains("sendto far: -1 ENETUNREACH")
            && text.contains("inet6: -1 EAFNOSUPPORT"),
        "{text}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("host's network is never reachable"), "{err}");
}

/// RAP's trees and the branch-record units' samples are kept per process and program: the
/// rows' pc events (timed: the retire stream) are each row's instructions of the exact
/// profile, and sum to the run's; each row's samples file counts its own instructions (the
/// files sum to the run's), the same on the compiling tier and the step engine, and
/// `outcrop paths report` reads one with its program.
#[test]
fn rap_trees_and_branch_samples_are_kept_per_process_and_program() {
    let p = guest("procs");
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| -> PathBuf {
        let report = dir.path().join(name);
        let mut args = vec!["run", "--deterministic", "--max-processes", "16"];
        args.extend_from_slice(extra);
        args.extend(["--report", report.to_str().unwrap()]);
        args.extend(["--", p.to_str().unwrap(), "exec"]);
        let out = outcrop(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(!err.contains("mixes every program"), "{err}");
        report
    };
    let json = |dir: &Path, f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap()
    };
    // RAP, timed: one pc tree per (process, program), each its row's instructions
    let timed = run("timed", &["--timing", "--rap", "pc"]);
    let rap = json(&timed, "rap.json");
    let profile = json(&timed, "profile.json");
    let instructions = json(&timed, "run.json")["instructions"].as_u64().unwrap();
    let rows = profile["processes"]["rows"].as_array().unwrap();
    let streams = rap["streams"].as_array().unwrap();
    assert!(streams.len() > 5, "{streams:?}");
    let sum: u64 = streams.iter().map(|s| s["n"].as_u64().unwrap()).sum();
    assert_eq!(sum, instructions);
    for s in streams {
        let n = s["n"].as_u64().unwrap();
        let (pid, image) = match s["process"].as_str() {
            None => (rows[0]["pid"].as_u64().unwrap(), 0),
            Some(label) => {
                let mut words = label.split([' ', ',']).filter(|w| !w.is_empty());
                let pid = words.nth(1).unwrap().parse().unwrap();
                let image = words.nth(1).unwrap().parse().unwrap();
                (pid, image)
            }
        };
        let row = rows
            .iter()
            .find(|r| r["pid"].as_u64() == Some(pid) && r["image"].as_u64() == Some(image))
            .unwrap();
        assert_eq!(row["instructions"].as_u64(), Some(n), "{s}");
    }
    // branch-record samples, untimed, on two engines
    let samples = |report: &Path| -> Vec<(String, u64, u64)> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(report.join("samples"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files.push(report.join("branch.samples"));
        files
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(f).unwrap();
                let field = |k: &str| -> u64 {
                    let line = text.lines().find(|l| l.starts_with(k)).unwrap();
                    line[k.len()..].trim().parse().unwrap()
                };
                let name = f.file_name().unwrap().to_string_lossy().into_owned();
                (name, field("instructions "), field("samples "))
            })
            .collect()
    };
    let jit = samples(&run("paths-jit", &["--paths", "16:10000"]));
    let step = samples(&run(
        "paths-step",
        &["--paths", "16:10000", "--engine", "step"],
    ));
    assert_eq!(jit, step);
    assert!(jit.len() > 5, "{jit:?}");
    let sum: u64 = jit.iter().map(|r| r.1).sum();
    assert_eq!(sum, instructions);
    assert!(jit.iter().filter(|r| r.2 > 0).count() > 2, "{jit:?}");
    let page = std::fs::read_to_string(dir.path().join("paths-jit/report.html")).unwrap();
    assert!(
        page.contains("samples/pid1002.0.samples"),
        "per-process files listed"
    );
    let out = outcrop(&[
        "paths",
        "report",
        dir.path()
            .join("paths-jit/samples/pid1002.0.samples")
            .to_str()
            .unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The capture marks each process and program: the `.wpp` file names every (process,
/// program) row, is byte-identical on the compiling tier and the step engine, replays every
/// block, and no warning says the capture mixed programs.
#[test]
fn the_capture_marks_every_process_and_program() {
    let p = guest("procs");
    let dir = tempfile::tempdir().unwrap();
    let capture = |engine: &str| -> (Vec<u8>, PathBuf) {
        let file = dir.path().join(format!("{engine}.wpp"));
        let out = outcrop(&[
            "run",
            "--deterministic",
            "--engine",
            engine,
            "--wpp",
            file.to_str().unwrap(),
            "--",
            p.to_str().unwrap(),
            "exec",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(!err.contains("mixes every program"), "{err}");
        (std::fs::read(&file).unwrap(), file)
    };
    let (jit, file) = capture("jit");
    let (step, _) = capture("step");
    assert!(jit == step, "the engines' captures differ");
    let out = outcrop(&["wpp", "report", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("processes: 14 (process, program)s recorded apart"),
        "{text}"
    );
    let blocks: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("run: "))
        .and_then(|l| l.split(" in ").nth(1))
        .and_then(|l| l.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    let out = outcrop(&["wpp", "replay", file.to_str().unwrap()]);
    assert!(out.status.success());
    assert_eq!(
        out.stdout.iter().filter(|&&b| b == b'\n').count() as u64,
        blocks
    );
}

/// The RPA keeps each (process, program)'s records apart, as an operating system switches a
/// process's profiling context: every row's accounting matches its own exact reference, the
/// rows' records add up to the run's branches, the engines agree, and the hardware model's
/// path (records handed over at retire groups) splits the same way.
#[test]
fn rpa_records_are_kept_per_process_and_program() {
    let p = guest("procs");
    let dir = tempfile::tempdir().unwrap();
    let query = dir.path().join("edges.rpa");
    std::fs::write(
        &query,
        "for opBRANCH * every 16 collect pc misc ;\nsend 1 stop;\n",
    )
    .unwrap();
    let run = |name: &str, extra: &[&str]| -> (serde_json::Value, u64, String) {
        let report = dir.path().join(name);
        let mut args = vec!["run", "--deterministic", "--max-processes", "16"];
        args.extend(["--query", query.to_str().unwrap()]);
        args.extend_from_slice(extra);
        args.extend(["--report", report.to_str().unwrap()]);
        args.extend(["--", p.to_str().unwrap(), "exec"]);
        let out = outcrop(&args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        assert!(!err.contains("mixes every program"), "{err}");
        let read = |f: &str| -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(report.join(f)).unwrap()).unwrap()
        };
        let classes = read("run.json")["classes"].clone();
        let branches = classes
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c[0] == "branch")
            .unwrap()[1]
            .as_u64()
            .unwrap();
        (read("rpa.json"), branches, err)
    };
    let records = |r: &serde_json::Value| -> Vec<(String, u64)> {
        let mut rows = vec![r.clone()];
        rows.extend(r["processes"].as_array().unwrap().iter().cloned());
        rows.iter()
            .map(|row| {
                let n = row["queries"][0]["stats"]["records"].as_u64().unwrap();
                let exact = &row["queues"][0]["detail"]["accuracy"]["executions"];
                assert_eq!(exact.as_u64(), Some(n), "{row}");
                (row["process"].as_str().unwrap().to_string(), n)
            })
            .collect()
    };
    let (jit, branches, text) = run("jit", &[]);
    let (step, _, _) = run("step", &["--engine", "step"]);
    assert_eq!(jit, step, "the engines' RPA reports differ");
    let rows = records(&jit);
    assert_eq!(rows.len(), 14, "{rows:?}");
    assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), branches);
    assert!(rows.iter().any(|r| r.0.ends_with("(exec 1)")), "{rows:?}");
    assert!(
        text.contains("(the first process's first program;"),
        "{text}"
    );
    // the child's hot loop is named by its own profile
    assert!(text.contains("  pid 1002 procs:"), "{text}");
    let (hw, hw_branches, _) = run("hw", &["--timing", "--rpa-hw", "paper"]);
    let hw_rows = records(&hw);
    assert_eq!(hw_rows.len(), rows.len());
    assert_eq!(hw_rows.iter().map(|r| r.1).sum::<u64>(), hw_branches);
}

/// Memory shared between processes: anonymous `MAP_SHARED` and `/dev/zero` across two
/// forks, System V segments (attach counts, a read-only second attach, `IPC_RMID`, keys),
/// `shm_open` files (two views of a page, `pwrite` from a child, a private copy, unlink),
/// a named semaphore a parent waits on and a child posts (a futex woken across processes),
/// a memfd, and a process-shared mutex and condition variable: every engine prints what
/// qemu-user prints, and no host file is made.
#[test]
fn shared_memory_between_processes_prints_what_qemu_prints_on_every_engine() {
    prints_what_qemu_prints("shm");
}

/// Runs guest `name` on every engine: its output is `name.expected` (what qemu-user
/// prints), with nothing on stderr.
fn prints_what_qemu_prints(name: &str) {
    let p = guest(name);
    for engine in ["jit", "blocks", "step"] {
        let out = outcrop(&[
            "exec",
            "--deterministic",
            "--engine",
            engine,
            "--",
            p.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{engine}: {err}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            expected(&format!("{name}.expected")),
            "{engine}"
        );
        assert!(err.is_empty(), "{err}");
    }
}

/// An event loop: eventfd counters (semaphore, non-blocking, short reads), epoll's errors,
/// timeouts, `EPOLLONESHOT`, a closed descriptor leaving the list, a pipe's write end
/// without readers (`EPOLLERR | EPOLLOUT`), `MSG_NOSIGNAL`, `sendmsg`/`recvmsg` with several
/// buffers on a loopback datagram (truncated, with its sender) and on a stream, and an epoll
/// loop over a socket pair, a pipe and an eventfd fed by a forked child: every engine prints
/// what qemu-user prints, with no warning.
#[test]
fn an_epoll_event_loop_prints_what_qemu_prints_on_every_engine() {
    prints_what_qemu_prints("evloop");
}

/// Working directories and modes: `chdir`, `fchdir`, `getcwd`, relative paths after a
/// `chdir`, a forked child's own directory, `chmod`/`fchmod` on a granted file, `chown`, the
/// `set*id` calls, `msync`, and the machine's own `/proc/meminfo` and
/// `/sys/devices/system/cpu/online`: every engine prints what qemu-user prints, run in a
/// scratch directory granted read-write, with no warning.
#[test]
fn working_directories_and_modes_print_what_qemu_prints_on_every_engine() {
    for dir in prints_what_qemu_prints_in_a_scratch_directory("cwd") {
        assert!(dir.path().join("sub/deeper/child.txt").exists());
    }
}

/// Runs guest `name` on every engine in a scratch directory granted read-write: its output is
/// `name.expected` (what qemu prints there), with no warning. The directories, to check.
fn prints_what_qemu_prints_in_a_scratch_directory(name: &str) -> Vec<tempfile::TempDir> {
    let p = guest(name);
    let mut dirs = Vec::new();
    for engine in ["jit", "blocks", "step"] {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_outcrop"))
            .current_dir(dir.path())
            .args([
                "exec",
                "--deterministic",
                "--allow-rw",
                ".",
                "--engine",
                engine,
            ])
            .arg("--")
            .arg(&p)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{engine}: {err}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            expected(&format!("{name}.expected")),
            "{engine}"
        );
        assert!(err.is_empty(), "{err}");
        dirs.push(dir);
    }
    dirs
}

/// The files and calls LTP's system-call tests needed (symlinks, hard links, a named pipe
/// between two processes, preadv/pwritev, fallocate, flock, leases, pipe sizes, the
/// scheduling, priority, capability and prctl calls, mincore, /proc/self's stat, status and
/// maps, a paused child's state, timerfd, signalfd, pidfd, splice, tee, vmsplice and nested
/// epolls) print what qemu prints on every engine.
#[test]
fn files_links_fifos_and_process_queries_print_what_qemu_prints_on_every_engine() {
    for dir in prints_what_qemu_prints_in_a_scratch_directory("sysfile") {
        // the named pipe is a host FIFO beneath the grant; the symlink was removed
        let fifo = std::fs::symlink_metadata(dir.path().join("fifo")).unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(fifo.file_type().is_fifo());
        assert!(!dir.path().join("sym").exists());
    }
}

/// A guest's symlink never leads out of its grant: a target with `..` or an absolute one
/// outside it is refused, so a later reader (Outcrop's own outputs, the user) cannot be led
/// out through it.
#[test]
fn a_guest_cannot_make_a_symlink_that_leads_out_of_its_grant() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let inside = dir.path().join("sub/file");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .current_dir(dir.path())
        .args(["exec", "--deterministic", "--allow-rw", "sub", "--"])
        .arg(guest("symlink"))
        .args([
            "../outside",
            "sub/up",
            "/etc/passwd",
            "sub/abs",
            "a/../../b",
            "sub/mid",
        ])
        .args(["file", "sub/ok", "sub/dir/x", "sub/nested"])
        .arg(&inside)
        .arg("sub/absolute-inside")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout,
        "sub/up errno 13\nsub/abs errno 13\nsub/mid errno 13\nsub/ok ok\nsub/nested ok\n\
         sub/absolute-inside ok\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for refused in ["up", "abs", "mid"] {
        assert!(std::fs::symlink_metadata(dir.path().join("sub").join(refused)).is_err());
    }
}

/// A `--range` window hears of the process and program it opens in: windows across the run
/// give rows that sum to the window, each row no more than it retired in the whole run, and
/// the row of the process a window opens in only what it retired from there on.
#[test]
fn a_range_window_profiles_the_process_and_program_it_opens_in() {
    let p = guest("procs");
    let dir = tempfile::tempdir().unwrap();
    let run = |range: Option<String>, name: &str| -> Vec<(u64, u64, u64)> {
        let report = dir.path().join(name);
        let mut args = vec![
            "run".to_string(),
            "--deterministic".into(),
            "--report".into(),
            report.to_str().unwrap().into(),
        ];
        if let Some(r) = range {
            args.extend(["--range".into(), r]);
        }
        args.extend(["--".into(), p.to_str().unwrap().into(), "exec".into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = outcrop(&args);
        assert!(
            out.status.code().is_some(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(report.join("profile.json")).unwrap();
        let prof: serde_json::Value = serde_json::from_str(&text).unwrap();
        let n = |v: &serde_json::Value| v.as_u64().unwrap();
        prof["processes"]["rows"].as_array().map_or_else(
            || vec![(0, 0, n(&prof["instructions"]))],
            |rows| {
                rows.iter()
                    .map(|r| (n(&r["pid"]), n(&r["image"]), n(&r["instructions"])))
                    .collect()
            },
        )
    };
    let all = run(None, "all");
    let total: u64 = all.iter().map(|r| r.2).sum();
    let mut partial = 0;
    for k in 1..8 {
        let start = total * k / 8;
        let rows = run(Some(format!("{start}..{}", total + 1)), &format!("w{k}"));
        let sum: u64 = rows.iter().map(|r| r.2).sum();
        assert_eq!(sum, total - start, "window {k}");
        for r in &rows {
            let whole = all
                .iter()
                .find(|a| (a.0, a.1) == (r.0, r.1))
                .map_or(0, |a| a.2);
            assert!(
                r.2 <= whole,
                "window {k}: {r:?} over the whole run's {whole}"
            );
            if r.2 > 0 && r.2 < whole {
                partial += 1;
            }
        }
    }
    assert!(partial > 0, "no window opened inside a process");
}
