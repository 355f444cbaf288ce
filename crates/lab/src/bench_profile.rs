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

use crate::bench::{mm, outcrop_on, time, BenchOptions};
use crate::{Context, Result};
use outcrop_studies::{cells, table::Table};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const MODES: [&[&str]; 4] = [
    &["run", "--no-profile", "--no-progress"],
    &["run", "--no-progress"],
    &["run", "--timing", "--no-profile", "--no-progress"],
    &["run", "--timing", "--no-progress"],
];

/// Seconds for `outcrop MODE --deterministic RUN-ARGS` in `dir`.
fn timed_program(bin: &Path, dir: &Path, mode: &[&str], run_args: &[String]) -> Result<f64> {
    time(
        Command::new(bin)
            .current_dir(dir)
            .args(mode)
            .arg("--deterministic")
            .args(run_args)
            .stdin(Stdio::null()),
    )
}

/// Options of `bench-profile`.
#[derive(Debug, Clone)]
pub struct Config {
    /// Runs and workloads.
    pub bench: BenchOptions,
    /// Measure one program of your own instead: run in DIR with RUN-ARGS (what follows `--`,
    /// as `outcrop run` takes it).
    pub dir: Option<PathBuf>,
    /// With --dir: the program and its options for `outcrop run`.
    pub run_args: Vec<String>,
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
    crate::ensure!(st.success(), "{run_args:?}: {st}");
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("run.json"))?)?;
    let _ = std::fs::remove_dir_all(&out);
    run["instructions"]
        .as_u64()
        .context("run.json has no instructions")
}

/// `xtask bench-profile`: measures and writes its Markdown table to `out` (the module's doc says what and against which peer).
pub fn run(args: Config, out: &mut dyn std::io::Write) -> Result<()> {
    let runs = args.bench.runs(1);
    let run_args = &args.run_args[..];
    let dir = args.dir.as_deref();
    let (root, outcrop) = crate::release_outcrop()?;
    let outcrop = std::path::absolute(outcrop)?;
    let wl = root.join("workloads");
    let names = match dir {
        Some(_) => vec![run_args.join(" ")],
        None => args.bench.names()?,
    };
    say!(
        out,
        "median (min–max) of {runs} runs, alternating; process wall time in seconds\n"
    );
    let mut table = Table::new()
        .left("workload")
        .right("instructions")
        .right("run --no-profile")
        .right("run (profile)")
        .right("ratio")
        .right("run --timing --no-profile")
        .right("run --timing (profile)")
        .right("ratio");
    let (mut log, mut log_t) = (0.0, 0.0);
    for name in &names {
        let insns = match dir {
            Some(d) => instructions(&outcrop, d, run_args)?,
            None => {
                let mut args = vec!["--allow-rw".to_string(), ".".into(), "--".into()];
                args.push(format!("bin/{name}"));
                args.extend(crate::bench::guest_args(name)?);
                instructions(&outcrop, &wl, &args)?
            }
        };
        let mut v: [Vec<f64>; 4] = Default::default();
        for _ in 0..runs {
            for (i, mode) in MODES.iter().enumerate() {
                v[i].push(match dir {
                    Some(d) => timed_program(&outcrop, d, mode, run_args)?,
                    None => outcrop_on(&outcrop, &wl, mode, name)?,
                });
            }
        }
        let m: Vec<f64> = v.iter().map(|x| crate::bench::median(x)).collect();
        let (r, rt) = (m[1] / m[0], m[3] / m[2]);
        table.row(cells![
            name,
            insns,
            mm(&v[0], 2),
            mm(&v[1], 2),
            format!("{r:.3}"),
            mm(&v[2], 2),
            mm(&v[3], 2),
            format!("{rt:.3}")
        ]);
        log += r.ln();
        log_t += rt.ln();
    }
    write!(out, "{table}")?;
    if names.len() > 1 {
        let n = names.len() as f64;
        say!(out,
            "\ngeometric mean of profile / no profile over {} workloads: {:.3} without timing, {:.3} with",
            names.len(),
            (log / n).exp(),
            (log_t / n).exp()
        );
    }
    Ok(())
}
