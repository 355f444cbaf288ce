//! Outcrop's BOLT profile checked by BOLT itself: a bundled workload's source linked with
//! relocations kept (`-Wl,-q`), profiled by `paths record`, its `.fdata` and BOLT pre-aggregated
//! text from `paths report` each given to `llvm-bolt-19` (Debian's `bolt-19`), and the optimized program run: the same output
//! and status, and fewer taken branches — counted by Outcrop and, independently, by qemu-user
//! with the plugin `scripts/qemu-plugin/taken.c` (the two counts agree to 1 in 100,000).
//! Needs the riscv64 cross
//! compiler, `llvm-bolt-19` and qemu-user; skipped without them unless `OUTCROP_REQUIRE_BOLT`
//! is set (`.ci/run` sets it).

use crate::util::outcrop_in as outcrop;
use outcrop_rv::differential::Streams;
use std::path::{Path, PathBuf};
use std::process::Command;

use outcrop_testkit::have;

/// Taken control transfers when `prog` runs to its end under `qemu-riscv64` with the plugin
/// `scripts/qemu-plugin/taken.c` (built into `plugin` on first use): the independent count
/// beside Outcrop's own. `None` without qemu-user or a C compiler.
fn taken_under_qemu(prog: &Path, plugin: &Path) -> Option<u64> {
    if !(have("qemu-riscv64") && have("cc")) {
        assert!(
            std::env::var_os("OUTCROP_REQUIRE_BOLT").is_none(),
            "qemu-riscv64 (qemu-user) or cc missing but OUTCROP_REQUIRE_BOLT is set"
        );
        return None;
    }
    if !plugin.exists() {
        let src = outcrop_testkit::root().join("scripts/qemu-plugin/taken.c");
        let st = Command::new("cc")
            .args(["-O2", "-shared", "-fPIC", "-o"])
            .arg(plugin)
            .arg(&src)
            .status()
            .unwrap();
        assert!(st.success());
    }
    // the environment the machine's deterministic runs give the guest: none
    let o = Command::new("qemu-riscv64")
        .args(["-d", "plugin", "-plugin"])
        .arg(plugin)
        .arg(prog)
        .env_clear()
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let line = err
        .lines()
        .find(|l| l.starts_with("taken "))
        .unwrap_or_else(|| panic!("{err}"));
    Some(line.split_whitespace().nth(1).unwrap().parse().unwrap())
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
    let workloads = outcrop_testkit::workloads();
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
    // the same count from an independent tool: qemu with a plugin counting taken transfers
    let plugin = d.join("taken.so");
    let qa = taken_under_qemu(&prog, &plugin);
    // (they agree to within a few transfers in millions: 12,945,346 under qemu against
    // 12,945,341 here for this program, the difference in start-up and exit)
    let close = |q: u64, o: u64| q.abs_diff(o) <= (o / 100_000).max(16);
    if let Some(qa) = qa {
        assert!(
            close(qa, a),
            "taken transfers: qemu's plugin {qa}, Outcrop {a}"
        );
    }
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
        if let (Some(qa), Some(qb)) = (qa, taken_under_qemu(&d.join(out), &plugin)) {
            assert!(close(qb, b), "{profile:?}: qemu's plugin {qb}, Outcrop {b}");
            assert!(
                qb < qa,
                "{profile:?}: under qemu {qa} before BOLT, {qb} after"
            );
        }
    }
}
