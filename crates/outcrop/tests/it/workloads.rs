//! Differential test: every bundled workload produces, under `outcrop exec`, exactly the
//! stdout, stderr and exit status that `qemu-riscv64-static` produced
//! (`workloads/expected/`, written by `workloads/reference.sh`).
//!
//! Invocation as in reference.sh: working directory with `bin/` and `src/`, argv[0] =
//! `bin/<name>`, `fileio` gets `src/fileio.c`, empty environment (`--deterministic`), stdin
//! empty. Each program runs in its own scratch copy of that layout, so runs never share the
//! file `fileio` creates.

use crate::util::workloads;
use std::process::{Command, Stdio};

fn names() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(workloads().join("src"))
        .expect("workloads/src")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".c")
                .map(str::to_owned)
        })
        .collect();
    v.sort();
    v
}

fn run_one(name: &str) -> Result<(), String> {
    let wl = workloads();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir.path().join("bin")).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir.path().join("src")).map_err(|e| e.to_string())?;
    std::fs::copy(wl.join("bin").join(name), dir.path().join("bin").join(name))
        .map_err(|e| e.to_string())?;
    std::fs::copy(wl.join("src/fileio.c"), dir.path().join("src/fileio.c"))
        .map_err(|e| e.to_string())?;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_outcrop"));
    cmd.current_dir(dir.path())
        .args(["exec", "--deterministic", "--allow-rw", "."]);
    if name.ends_with("_dyn") {
        cmd.args(["--sysroot", "/usr/riscv64-linux-gnu"]);
    }
    cmd.arg("--")
        .arg(format!("bin/{name}"))
        .stdin(Stdio::null());
    if name == "fileio" {
        cmd.arg("src/fileio.c");
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    let expected = |ext: &str| std::fs::read(wl.join("expected").join(format!("{name}.{ext}")));
    let want_out = expected("stdout").map_err(|e| e.to_string())?;
    let want_err = expected("stderr").map_err(|e| e.to_string())?;
    let want_status: i32 = String::from_utf8_lossy(&expected("status").map_err(|e| e.to_string())?)
        .trim()
        .parse()
        .map_err(|e| format!("{e}"))?;
    let mut problems = Vec::new();
    if out.stdout != want_out {
        problems.push(format!(
            "stdout differs:\n  got:  {:?}\n  want: {:?}",
            String::from_utf8_lossy(&out.stdout).lines().last(),
            String::from_utf8_lossy(&want_out).lines().last()
        ));
    }
    if out.stderr != want_err {
        problems.push(format!(
            "stderr differs: {:?}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    if out.status.code() != Some(want_status) {
        problems.push(format!(
            "status {:?}, want {want_status}",
            out.status.code()
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{name}: {}", problems.join("; ")))
    }
}

#[test]
fn every_workload_matches_qemu_byte_for_byte() {
    let names = names();
    assert!(
        names.len() >= 12,
        "expected at least 12 workloads, found {names:?}"
    );
    // two at a time (the CI machine has 2 cores)
    let failures: Vec<String> = names
        .chunks(2)
        .flat_map(|pair| {
            let handles: Vec<_> = pair
                .iter()
                .map(|n| {
                    let n = n.clone();
                    std::thread::spawn(move || run_one(&n))
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| h.join().ok()?.err())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
