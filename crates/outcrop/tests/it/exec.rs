//! `outcrop exec` end to end: the sandbox, guest faults, limits, statistics and bad programs,
//! using the `probe` guest (tests/fixtures/guest/probe.c; expected values are qemu's).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn probe() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/guest/probe")
}

fn exec(opts: &[&str], guest_args: &[&str]) -> Output {
    let probe = probe();
    let mut args: Vec<&str> = vec!["exec"];
    args.extend_from_slice(opts);
    args.push("--");
    args.push(probe.to_str().unwrap());
    args.extend_from_slice(guest_args);
    Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(&args)
        .output()
        .unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const EACCES: &str = "err 13\n";

#[test]
fn host_files_are_invisible_unless_granted() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "12345").unwrap();
    let s = secret.to_str().unwrap();
    assert_eq!(out(&exec(&[], &["read", s])), EACCES);
    let granted = exec(&["--allow", dir.path().to_str().unwrap()], &["read", s]);
    assert_eq!(out(&granted), "ok 5\n");
    assert_eq!(granted.status.code(), Some(0));
    // granting the file alone is enough; a sibling stays hidden
    std::fs::write(dir.path().join("other"), "x").unwrap();
    assert_eq!(out(&exec(&["--allow", s], &["read", s])), "ok 5\n");
    let other = dir.path().join("other");
    assert_eq!(
        out(&exec(&["--allow", s], &["read", other.to_str().unwrap()])),
        EACCES
    );
}

#[test]
fn writing_needs_allow_rw() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("made.txt");
    let t = target.to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    assert_eq!(out(&exec(&[], &["write", t])), EACCES);
    assert_eq!(
        out(&exec(&["--allow", d], &["write", t])),
        EACCES,
        "read-only grant must not allow writes"
    );
    assert!(!target.exists());
    assert_eq!(out(&exec(&["--allow-rw", d], &["write", t])), "ok\n");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "probe\n");
    assert_eq!(out(&exec(&["--allow", d], &["unlink", t])), EACCES);
    assert_eq!(out(&exec(&["--allow-rw", d], &["unlink", t])), "ok\n");
    assert!(!target.exists());
}

#[test]
fn dot_dot_and_symlinks_cannot_escape_a_grant() {
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("inner");
    std::fs::create_dir(&inner).unwrap();
    std::fs::write(dir.path().join("outside.txt"), "nope").unwrap();
    std::os::unix::fs::symlink(dir.path(), inner.join("up")).unwrap();
    let i = inner.to_str().unwrap();
    let via_dotdot = format!("{i}/../outside.txt");
    let via_link = format!("{i}/up/outside.txt");
    assert_eq!(
        out(&exec(&["--allow-rw", i], &["read", &via_dotdot])),
        EACCES
    );
    assert_eq!(out(&exec(&["--allow-rw", i], &["read", &via_link])), EACCES);
    assert_eq!(
        out(&exec(
            &["--allow-rw", i],
            &["write", &format!("{i}/up/new.txt")]
        )),
        EACCES
    );
    assert!(!dir.path().join("new.txt").exists());
    // system files too
    assert_eq!(
        out(&exec(&["--allow-rw", i], &["read", "/etc/passwd"])),
        EACCES
    );
}

#[test]
fn non_utf8_file_names_work() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(dir.path().join(name), "xy").unwrap();
    let probe = probe();
    let o = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .current_dir(dir.path())
        .args(["exec", "--allow", ".", "--"])
        .arg(probe)
        .arg("read")
        .arg(name)
        .output()
        .unwrap();
    assert_eq!(out(&o), "ok 2\n");
}

#[test]
fn relative_paths_resolve_in_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rel.txt"), "abc").unwrap();
    let probe = probe();
    let o = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .current_dir(dir.path())
        .args([
            "exec",
            "--allow",
            ".",
            "--",
            probe.to_str().unwrap(),
            "read",
            "rel.txt",
        ])
        .output()
        .unwrap();
    assert_eq!(out(&o), "ok 3\n");
}

#[test]
fn guest_faults_are_reported_with_pc_instruction_and_signal_status() {
    for (mode, status, needle) in [
        (
            "illegal",
            132,
            "illegal instruction; instruction 0xffffffff",
        ),
        ("segv", 139, "store to 0x8"),
        (
            "ebreak",
            133,
            "breakpoint (ebreak); instruction 0x9002 `ebreak`",
        ),
    ] {
        let o = exec(&[], &[mode]);
        assert_eq!(o.status.code(), Some(status), "{mode}: {}", err(&o));
        let e = err(&o);
        assert!(
            e.contains("guest fault at pc 0x") && e.contains(needle),
            "{mode}: {e}"
        );
        assert!(!e.contains("panicked"));
    }
}

#[test]
fn the_instruction_limit_stops_a_spinning_guest() {
    let o = exec(&["--max-insns", "200000"], &["loop"]);
    assert_eq!(o.status.code(), Some(124));
    assert!(err(&o).contains("instruction limit reached after 200000 instructions"));
}

#[test]
fn the_memory_limit_makes_allocation_fail_inside_the_guest() {
    // 64 MiB does not fit a 32 MiB budget: malloc's mmap gets ENOMEM, the guest sees NULL
    let o = exec(&["--memory-limit", "32"], &["alloc", "64"]);
    assert_eq!((out(&o).as_str(), o.status.code()), ("fail\n", Some(1)));
    let o = exec(&["--memory-limit", "256"], &["alloc", "64"]);
    assert_eq!((out(&o).as_str(), o.status.code()), ("ok\n", Some(0)));
}

#[test]
fn fp_exception_flags_match_qemu() {
    assert_eq!(out(&exec(&[], &["fflags"])), "inexact 1\ndivzero 8\n");
}

#[test]
fn every_instruction_group_gives_qemus_values() {
    // isa.c: integer ALU, shifts, M, loads/stores of every width (misaligned too), branches,
    // atomics and F/D on edge operands; isa.expected is qemu-riscv64-static's output
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/guest");
    let o = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["exec", "--"])
        .arg(dir.join("isa"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let want = std::fs::read_to_string(dir.join("isa.expected")).unwrap();
    for (got, want) in out(&o).lines().zip(want.lines()) {
        assert_eq!(got, want);
    }
    assert_eq!(out(&o).lines().count(), want.lines().count());
}

#[test]
fn a_zbc_program_gives_qemus_values_on_every_engine() {
    // zbc.c: clmul, clmulh and clmulr on edge operands, and a CRC-32 of 1 MiB folded with
    // carry-less products (hot enough to be compiled); zbc.expected is
    // qemu-riscv64-static -cpu rv64,zbc=true's output
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/guest");
    let prog = dir.join("zbc");
    let want = std::fs::read_to_string(dir.join("zbc.expected")).unwrap();
    for engine in ["step", "blocks", "jit"] {
        let o = Command::new(env!("CARGO_BIN_EXE_outcrop"))
            .args(["exec", "--engine", engine, "--"])
            .arg(&prog)
            .output()
            .unwrap();
        assert!(o.status.success(), "{engine}: {}", err(&o));
        assert_eq!(out(&o), want, "{engine}");
    }
    // switched off, the first carry-less product is an illegal instruction naming Zbc
    let o = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["exec", "--isa", "rv64gc", "--"])
        .arg(&prog)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(err(&o).contains("is a Zbc instruction"), "{}", err(&o));
}

#[test]
fn self_modifying_code_runs_the_new_instructions() {
    // the instruction cache must notice stores to executable pages
    assert_eq!(out(&exec(&[], &["smc"])), "smc 1 2\n");
}

#[test]
fn both_engines_give_the_same_output_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let run = |engine: &str| {
        let stats = dir.path().join(format!("{engine}.json"));
        let o = exec(
            &["--engine", engine, "--stats-json", stats.to_str().unwrap()],
            &["fflags"],
        );
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        (
            o.status.code(),
            o.stdout,
            v["instructions"].clone(),
            v["classes"].clone(),
        )
    };
    assert_eq!(run("blocks"), run("step"));
    assert_eq!(run("jit"), run("step"));
    // and unobserved (no --stats-json): the same status and output
    let plain = |engine: &str| {
        let o = exec(&["--engine", engine], &["fflags"]);
        (o.status.code(), o.stdout)
    };
    assert_eq!(plain("jit"), plain("blocks"));
    let o = exec(&["--engine", "turbo"], &["fflags"]);
    assert!(!o.status.success());
    assert!(err(&o).contains("jit"), "{}", err(&o));
}

#[test]
fn class_counts_are_the_same_with_and_without_timing() {
    // untimed, the block engine counts classes per block; timed, the single-step
    // interpreter counts them per instruction through the timing model
    let dir = tempfile::tempdir().unwrap();
    let counts = |timing: &[&str], name: &str| {
        let stats = dir.path().join(name);
        let mut opts = timing.to_vec();
        opts.extend(["--stats-json", stats.to_str().unwrap()]);
        assert!(exec(&opts, &["fflags"]).status.success());
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        (v["classes"].clone(), v["instructions"].as_u64().unwrap())
    };
    let (plain, n) = counts(&[], "plain.json");
    let (timed, m) = counts(&["--timing=default"], "timed.json");
    assert_eq!(n, m);
    assert_eq!(plain, timed);
    let total: u64 = plain
        .as_object()
        .unwrap()
        .values()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(total, n);
}

#[test]
fn stats_json_has_the_documented_fields() {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("s.json");
    let o = exec(&["--stats-json", stats.to_str().unwrap()], &["fflags"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    for k in [
        "instructions",
        "exit_code",
        "wall_seconds",
        "mips",
        "classes",
    ] {
        assert!(!v[k].is_null(), "missing {k}");
    }
    let classes = v["classes"].as_object().unwrap();
    let total: u64 = classes.values().map(|c| c.as_u64().unwrap()).sum();
    assert_eq!(total, v["instructions"].as_u64().unwrap());
    assert!(classes["float"].as_u64().unwrap() > 0);
    // system calls by number and by name count the same calls
    let by_nr: u64 = v["syscalls"]
        .as_object()
        .unwrap()
        .values()
        .map(|c| c.as_u64().unwrap())
        .sum();
    let by_name = v["syscalls_by_name"].as_object().unwrap();
    let named: u64 = by_name.values().map(|c| c.as_u64().unwrap()).sum();
    assert_eq!(by_nr, named);
    assert!(
        by_name.contains_key("exit_group") && !by_name.contains_key("unknown"),
        "{by_name:?}"
    );
}

#[test]
fn deterministic_runs_are_identical() {
    let a = exec(&["--deterministic"], &["fflags"]);
    let b = exec(&["--deterministic"], &["fflags"]);
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn non_programs_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("not-elf");
    std::fs::write(&text, "#!/bin/sh\necho hi\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["exec", "--", text.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("cannot load ELF program"), "{}", err(&o));
    let host = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["exec", "--", env!("CARGO_BIN_EXE_outcrop")])
        .output()
        .unwrap();
    assert_eq!(host.status.code(), Some(1));
    assert!(err(&host).contains("not RISC-V"), "{}", err(&host));
    let missing = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["exec", "--", "/nonexistent/prog"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
}

/// A guest fixture of the machine's thread tests.
fn thread_fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rv/tests/fixtures/threads")
        .join(name)
}

#[test]
fn a_deadlock_is_an_error_naming_each_thread_and_where_it_waits() {
    let o = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["exec", "--deterministic", "--"])
        .arg(thread_fixture("deadlock"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("deadlock: every thread waits"), "{err}");
    for t in ["thread 0 (tid 1000)", "thread 1 (tid 1001)"] {
        assert!(err.contains(t), "{err}");
    }
    assert_eq!(
        err.matches("called from pthread_mutex_lock: futex wait on")
            .count(),
        2,
        "{err}"
    );
}

#[test]
fn signal_deaths_and_thread_bombs_are_never_silent() {
    let run = |args: &[&str], prog: &str| {
        Command::new(env!("CARGO_BIN_EXE_outcrop"))
            .arg("exec")
            .args(args)
            .arg("--")
            .arg(thread_fixture(prog))
            .output()
            .unwrap()
    };
    let o = run(&["--deterministic"], "signals");
    assert_eq!(o.status.code(), Some(138));
    assert!(String::from_utf8_lossy(&o.stderr).contains("killed by SIGUSR1"));
    let o = run(&["--deterministic", "--max-threads", "8"], "bomb");
    assert_eq!(o.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--max-threads"));
    let o = run(&["--quantum", "0"], "bomb");
    assert!(!o.status.success(), "a zero quantum is refused");
}

#[test]
fn a_write_to_a_closed_pipe_raises_sigpipe() {
    // the reader leaves while the guest writes 4 MB: SIGPIPE's default action ends it, 141
    // as under qemu (`outcrop exec -- prog | head -c1`; the program would exit 3)
    let mut child = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["exec", "--deterministic", "--"])
        .arg(thread_fixture("writer"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(141));
    assert!(String::from_utf8_lossy(&o.stderr).contains("killed by SIGPIPE"));
}

#[test]
fn stats_json_reports_what_the_compiling_tier_did() {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("s.json");
    let bin = outcrop_testkit::workload("qsort_ints");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["exec", "--stats-json", stats.to_str().unwrap(), "--"])
        .arg(&bin)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    let t = &v["compiling_tier"];
    assert!(t["units"].as_u64().unwrap() > 10, "{t}");
    assert!(t["entries"].as_u64().unwrap() > 0, "{t}");
    assert!(t["compile_seconds"].as_f64().unwrap() > 0.0, "{t}");
    assert!(t["compile_us_per_unit"].as_f64().unwrap() > 0.0, "{t}");
    let share = t["compile_share"].as_f64().unwrap();
    assert!(share > 0.0 && share.is_finite(), "{t}");
    let exits = t["exits"].as_object().unwrap();
    let total: u64 = exits.values().map(|e| e.as_u64().unwrap()).sum();
    assert_eq!(
        total,
        t["entries"].as_u64().unwrap(),
        "every entry ends once"
    );
    // the block engine alone compiles nothing, and says nothing about it
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args([
            "exec",
            "--engine",
            "blocks",
            "--stats-json",
            stats.to_str().unwrap(),
            "--",
        ])
        .arg(&bin)
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert!(v.get("compiling_tier").is_none(), "{v}");
}

/// A program whose `PT_GNU_STACK` asks for an executable stack (GCC's trampolines for a
/// nested function whose address is taken) runs code on its stack, as under Linux and qemu
/// (it faulted here once: the stack was never executable). Built with the cross compiler
/// (skipped without it unless `OUTCROP_REQUIRE_CROSS`).
#[test]
fn an_executable_stack_is_executable_when_the_program_asks() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("nest.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n\
         static int apply(int (*f)(int), int x) { return f(x); }\n\
         int main(int argc, char **argv) {\n\
             int k = argc + 41;\n\
             int add(int x) { return x + k; }\n\
             printf(\"%d\\n\", apply(add, 1));\n\
             return 0;\n\
         }\n",
    )
    .unwrap();
    let prog = dir.path().join("nest");
    let built = Command::new("riscv64-linux-gnu-gcc")
        .args(["-O1", "-static", "-o"])
        .arg(&prog)
        .arg(&src)
        .output()
        .is_ok_and(|o| o.status.success());
    if !built {
        assert!(
            std::env::var_os("OUTCROP_REQUIRE_CROSS").is_none(),
            "riscv64-linux-gnu-gcc missing but OUTCROP_REQUIRE_CROSS is set"
        );
        eprintln!("skipped: no riscv64-linux-gnu-gcc");
        return;
    }
    let o = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["exec", "--"])
        .arg(&prog)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "43\n");
}
