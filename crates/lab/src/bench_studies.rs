//! `bench-studies`: what the studies library buys. One study (`study-rap` on a few workloads,
//! every record dropped first) timed end to end: one job at a time, on every core, as a Slurm
//! job array on the cluster `sbatch` reaches, and (with `--baseline`) an older xtask's own
//! sequential run. Alternating, R runs each; the Slurm overhead per task is the array's wall
//! time over the local pool's, spread over its tasks.

use crate::bench::{median, mm, time, BenchOptions};
use crate::Result;
use outcrop_studies::{cells, table::Table};
use std::path::PathBuf;
use std::process::Command;

/// Options of `bench-studies`.
#[derive(Debug, Clone)]
pub struct Config {
    /// Runs and workloads.
    pub bench: BenchOptions,
    /// An older xtask whose `study-rap --jobs 1 --fresh` is the sequential baseline.
    pub baseline: Option<PathBuf>,
    /// Leave out the Slurm runs.
    pub no_slurm: bool,
}

/// `xtask bench-studies`: measures and writes its Markdown table to `out` (the module's doc says what and against which peer).
pub fn run(args: Config, out: &mut dyn std::io::Write) -> Result<()> {
    let runs = args.bench.runs(5);
    let names = if args.bench.workloads.is_empty() {
        vec!["lz".to_string(), "qsort_ints".into()]
    } else {
        args.bench.names()?
    };
    let list = names.join(",");
    let jobs = names.len() * 2;
    let me = std::env::current_exe()?;
    let tmp = tempfile::tempdir()?;
    let results = |mode: &str| tmp.path().join(mode).to_string_lossy().into_owned();
    let study = |exe: &PathBuf, mode: &str, extra: &[&str]| -> Command {
        let mut c = Command::new(exe);
        c.args(["study-rap", "--workloads", &list, "--fresh", "--results"])
            .arg(results(mode))
            .args(extra);
        c
    };
    let slurm = !args.no_slurm && outcrop_studies::slurm::available();
    let mut modes: Vec<(&str, Vec<f64>)> =
        vec![("one job at a time", vec![]), ("every core", vec![])];
    if slurm {
        modes.push(("Slurm job array", vec![]));
    }
    if args.baseline.is_some() {
        modes.push(("baseline xtask, --jobs 1", vec![]));
    }
    for _ in 0..runs {
        for (name, v) in modes.iter_mut() {
            let secs = match *name {
                "one job at a time" => time(&mut study(&me, "seq", &["--jobs", "1"]))?,
                "every core" => time(&mut study(&me, "pool", &[]))?,
                "Slurm job array" => time(&mut study(&me, "slurm", &["--slurm"]))?,
                _ => {
                    let old = args.baseline.clone().unwrap_or_default();
                    // the old study keeps its cache in its own target/; --fresh drops it
                    time(Command::new(old).args([
                        "study-rap",
                        "--workloads",
                        &list,
                        "--jobs",
                        "1",
                        "--fresh",
                    ]))?
                }
            };
            v.push(secs);
        }
    }
    say!(out,
        "study-rap on {list} ({jobs} jobs), every record dropped first; {runs} runs each, alternating; wall seconds, median (min–max); cores: {}\n",
        outcrop_studies::executor::cores()
    );
    let mut table = Table::new()
        .left("mode")
        .right("wall s")
        .right("against one job at a time");
    let seq = median(&modes[0].1);
    for (name, v) in &modes {
        table.row(cells![name, mm(v, 1), format!("{:.2}×", median(v) / seq)]);
    }
    write!(out, "{table}")?;
    if slurm {
        let pool = median(&modes[1].1);
        let array = median(&modes[2].1);
        let cores = outcrop_studies::executor::cores() as f64;
        say!(
            out,
            "\nSlurm overhead: {:.1} s per task ((array − pool) × cores ÷ tasks)",
            (array - pool) * cores / jobs as f64
        );
    }
    Ok(())
}
