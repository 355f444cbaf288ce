//! Outcrop's BOLT profile checked by BOLT itself: a bundled workload's source linked with
//! relocations kept (`-Wl,-q`), profiled by `paths record`, its `.fdata` and BOLT pre-aggregated
//! text from `paths report` each given to `llvm-bolt-19` (Debian's `bolt-19`), and the optimized program run: the same output
//! and status, and fewer taken branches. Needs the riscv64 cross compiler and `llvm-bolt-19`;
//! skipped without them unless `OUTCROP_REQUIRE_BOLT` is set (`.ci/run` sets it).

use outcrop_rv::differential::Streams;
use std::path::{Path, PathBuf};
use std::process::Command;

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn outcrop(args: &[&str], dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Taken branches and jumps when `prog` runs to its end.
fn taken_branches(prog: &Path) -> u64 {
    let spec = outcrop_run::ProgramSpec::observed(prog, "bfs");
    let mut guest = outcrop_run::load(&spec, Box::new(|_| {})).unwrap();
    let mut streams = Streams::default();
    let outcome = guest.machine.run(&mut streams);
    assert!(
        matches!(outcome, outcrop_rv::Outcome::Exited(0)),
        "{outcome:?}"
    );
    streams.branches
}

#[test]
fn llvm_bolt_accepts_our_fdata_and_the_program_it_writes_runs_the_same_with_fewer_taken_branches() {
    let gcc = "riscv64-linux-gnu-gcc";
    let bolt = "llvm-bolt-19";
    if !(have(gcc) && have(bolt)) {
        assert!(
            std::env::var_os("OUTCROP_REQUIRE_BOLT").is_none(),
            "{gcc} or {bolt} missing but OUTCROP_REQUIRE_BOLT is set"
        );
        eprintln!("skipped: {gcc} or {bolt} missing");
        return;
    }
    let workloads = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog: PathBuf = d.join("bfs");
    let st = Command::new(gcc)
        .args(["-O2", "-static", "-Wl,-q", "-I"])
        .arg(&workloads)
        .arg("-o")
        .arg(&prog)
        .arg(workloads.join("src/graph_bfs.c"))
        .status()
        .unwrap();
    assert!(st.success());
    let o = outcrop(
        &[
            "paths",
            "record",
            "--deterministic",
            "--entries",
            "16",
            "--period",
            "20000",
            "-o",
            "bfs.samples",
            "--",
            "./bfs",
        ],
        d,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = outcrop(
        &[
            "paths",
            "report",
            "bfs.samples",
            "--fdata",
            "bfs.fdata",
            "--bolt-preagg",
            "bfs.preagg",
        ],
        d,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = |p: &str| {
        let o = outcrop(&["exec", "--deterministic", "--", p], d);
        (o.status.code(), o.stdout)
    };
    let before = run("./bfs");
    assert_eq!(before.0, Some(0));
    let a = taken_branches(&prog);
    // the same records as .fdata and as BOLT's pre-aggregated text
    for (out, profile) in [
        ("bfs.bolt", vec!["-data=bfs.fdata"]),
        ("bfs.pa.bolt", vec!["-pa", "-p", "bfs.preagg"]),
    ] {
        let o = Command::new(bolt)
            .arg(&prog)
            .args(["-o", out, "-reorder-blocks=ext-tsp"])
            .args(&profile)
            .current_dir(d)
            .output()
            .unwrap();
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(o.status.success(), "{log}");
        // BOLT used the profile: it moved blocks of the profiled functions
        assert!(
            log.contains("basic block reordering modified layout"),
            "{profile:?}: {log}"
        );
        assert_eq!(
            run(&format!("./{out}")),
            before,
            "the optimized program's output and status ({profile:?})"
        );
        let b = taken_branches(&d.join(out));
        eprintln!("{profile:?}: taken branches: {a} before BOLT, {b} after");
        assert!(
            b < a,
            "{profile:?}: taken branches: {a} before BOLT, {b} after"
        );
    }
}
