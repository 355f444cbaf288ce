//! `cargo run --release -p xtask -- bench-profile [--runs R] [--dir DIR -- RUN-ARGS...]`: what
//! the exact profile costs. For every compute workload, alternately: `outcrop run --no-profile`
//! and `outcrop run` (the profile on), without and with `--timing`. Medians with min–max of R
//! runs, process wall time. The peer is the same run without the profile: no exact profiler
//! runs RISC-V guests here.
//!
//! With `--dir DIR -- RUN-ARGS...`, the same four modes for one program of your own instead:
//! `outcrop run MODE --deterministic RUN-ARGS...` in DIR, where RUN-ARGS are `outcrop run`'s
//! (sandbox grants, then `--`, the program and its arguments), e.g.
//! `--dir lua -- --allow fib.lua -- ./lua fib.lua`.

use crate::bench_compose::{summary, timed};
use anyhow::{Context, Result};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const MODES: [&[&str]; 4] = [
    &["run", "--no-profile", "--no-progress"],
    &["run", "--no-progress"],
    &["run", "--timing", "--no-profile", "--no-progress"],
    &["run", "--timing", "--no-progress"],
];

/// Seconds for `outcrop MODE --deterministic RUN-ARGS` in `dir`.
fn timed_program(bin: &Path, dir: &Path, mode: &[&str], run_args: &[String]) -> Result<f64> {
    let t = Instant::now();
    let st = Command::new(bin)
        .current_dir(dir)
        .args(mode)
        .arg("--deterministic")
        .args(run_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    anyhow::ensure!(st.success(), "{mode:?} {run_args:?}: {st}");
    Ok(t.elapsed().as_secs_f64())
}

/// Instructions of one profiled run of the program (its `run.json`).
fn instructions(bin: &Path, dir: &Path, run_args: &[String]) -> Result<u64> {
    let out = std::env::temp_dir().join(format!("outcrop-bp-{}", std::process::id()));
    let st = Command::new(bin)
        .current_dir(dir)
        .args(["run", "--no-progress", "--deterministic", "--report"])
        .arg(&out)
        .args(run_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    anyhow::ensure!(st.success(), "{run_args:?}: {st}");
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("run.json"))?)?;
    let _ = std::fs::remove_dir_all(&out);
    run["instructions"]
        .as_u64()
        .context("run.json has no instructions")
}

pub fn run(args: &[String]) -> Result<()> {
    let (own, run_args) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let runs = crate::runs_flag(own)?;
    let dir = own
        .iter()
        .position(|a| a == "--dir")
        .map(|i| own.get(i + 1).context("--dir DIR"))
        .transpose()?;
    let (root, outcrop) = crate::release_outcrop()?;
    let outcrop = std::path::absolute(outcrop)?;
    let wl = root.join("workloads");
    let names = match dir {
        Some(_) => {
            anyhow::ensure!(!run_args.is_empty(), "--dir DIR needs -- RUN-ARGS...");
            vec![run_args.join(" ")]
        }
        None => crate::compute_workloads(&root)?,
    };
    println!("median (min–max) of {runs} runs, alternating; process wall time in seconds\n");
    println!("| workload | instructions | run --no-profile | run (profile) | ratio | run --timing --no-profile | run --timing (profile) | ratio |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let (mut log, mut log_t) = (0.0, 0.0);
    for name in &names {
        let insns = match dir {
            Some(d) => instructions(&outcrop, Path::new(d), run_args)?,
            None => {
                let mut args = vec!["--allow-rw".to_string(), ".".into(), "--".into()];
                args.push(format!("bin/{name}"));
                if name == "fileio" {
                    args.push("src/fileio.c".into());
                }
                instructions(&outcrop, &wl, &args)?
            }
        };
        let mut v: [Vec<f64>; 4] = Default::default();
        for _ in 0..runs {
            for (i, mode) in MODES.iter().enumerate() {
                v[i].push(match dir {
                    Some(d) => timed_program(&outcrop, Path::new(d), mode, run_args)?,
                    None => timed(&outcrop, &wl, mode, name)?,
                });
            }
        }
        let s: Vec<(f64, f64, f64)> = v.into_iter().map(summary).collect();
        let cell = |(m, lo, hi): (f64, f64, f64)| format!("{m:.2} ({lo:.2}–{hi:.2})");
        let (r, rt) = (s[1].0 / s[0].0, s[3].0 / s[2].0);
        println!(
            "| {name} | {insns} | {} | {} | {r:.3} | {} | {} | {rt:.3} |",
            cell(s[0]),
            cell(s[1]),
            cell(s[2]),
            cell(s[3])
        );
        log += r.ln();
        log_t += rt.ln();
    }
    if names.len() > 1 {
        let n = names.len() as f64;
        println!(
            "\ngeometric mean of profile / no profile over {} workloads: {:.3} without timing, {:.3} with",
            names.len(),
            (log / n).exp(),
            (log_t / n).exp()
        );
    }
    Ok(())
}
