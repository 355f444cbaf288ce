//! `cargo run --release -p xtask -- bench-profile [--runs R]`: what the exact profile costs.
//! For every compute workload, alternately: `outcrop run --no-profile` and `outcrop run` (the
//! profile on), without and with `--timing`. Medians with min–max of R runs, process wall time.
//! The peer is the same run without the profile: no exact profiler runs RISC-V guests here.

use crate::bench_compose::{summary, timed};
use anyhow::Result;

pub fn run(args: &[String]) -> Result<()> {
    let runs = crate::runs_flag(args)?;
    let (root, outcrop) = crate::release_outcrop()?;
    let wl = root.join("workloads");
    let names = crate::compute_workloads(&root)?;
    println!("median (min–max) of {runs} runs, alternating; process wall time in seconds\n");
    println!("| workload | run --no-profile | run (profile) | ratio | run --timing --no-profile | run --timing (profile) | ratio |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let (mut log, mut log_t) = (0.0, 0.0);
    for name in &names {
        let mut v: [Vec<f64>; 4] = Default::default();
        for _ in 0..runs {
            v[0].push(timed(
                &outcrop,
                &wl,
                &["run", "--no-profile", "--no-progress"],
                name,
            )?);
            v[1].push(timed(&outcrop, &wl, &["run", "--no-progress"], name)?);
            v[2].push(timed(
                &outcrop,
                &wl,
                &["run", "--timing", "--no-profile", "--no-progress"],
                name,
            )?);
            v[3].push(timed(
                &outcrop,
                &wl,
                &["run", "--timing", "--no-progress"],
                name,
            )?);
        }
        let s: Vec<(f64, f64, f64)> = v.into_iter().map(summary).collect();
        let cell = |(m, lo, hi): (f64, f64, f64)| format!("{m:.2} ({lo:.2}–{hi:.2})");
        let (r, rt) = (s[1].0 / s[0].0, s[3].0 / s[2].0);
        println!(
            "| {name} | {} | {} | {r:.3} | {} | {} | {rt:.3} |",
            cell(s[0]),
            cell(s[1]),
            cell(s[2]),
            cell(s[3])
        );
        log += r.ln();
        log_t += rt.ln();
    }
    let n = names.len().max(1) as f64;
    println!(
        "\ngeometric mean of profile / no profile over {} workloads: {:.3} without timing, {:.3} with",
        names.len(),
        (log / n).exp(),
        (log_t / n).exp()
    );
    Ok(())
}
