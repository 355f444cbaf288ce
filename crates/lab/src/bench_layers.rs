//! `cargo run --release -p xtask -- bench-layers --baseline OLD/outcrop [--runs R]`: the machine's
//! speed before and after a change to the layers it runs under, side by side in one run. For
//! every compute workload and three modes — the bare machine (`exec`), the class-counter
//! observer (`exec --stats-json`) and the timing model (`exec --timing`) — the baseline binary
//! and this build run alternately, R times each; MIPS = retired instructions / process wall
//! time; medians with min–max, and the ratio this/baseline (above 1: faster now).
//! `--modes bare,timing` runs only the modes named (`bare`, `counter`, `timing`).

use crate::bench::{guest_args, mm, time, BenchOptions};
use crate::Result;
use outcrop_studies::{cells, table::Table};
use std::path::{Path, PathBuf};
use std::process::Command;

const MODES: [(&str, &[&str]); 3] = [
    ("bare", &[]),
    ("class counter", &["--stats-json", "/dev/null"]),
    ("timing", &["--timing", "--stats-json", "/dev/null"]),
];

/// `outcrop exec` of workload `name` with `flags`.
fn exec(bin: &Path, wl: &Path, name: &str, flags: &[&str]) -> Result<Command> {
    let mut cmd = Command::new(bin);
    cmd.current_dir(wl)
        .args(["exec", "--deterministic", "--allow-rw", "."])
        .args(flags)
        .arg("--")
        .arg(format!("bin/{name}"))
        .args(guest_args(name)?);
    Ok(cmd)
}

fn seconds(bin: &Path, wl: &Path, name: &str, flags: &[&str]) -> Result<f64> {
    time(&mut exec(bin, wl, name, flags)?)
}

/// The fields of `--stats-json` read here.
#[derive(serde::Deserialize)]
struct Stats {
    instructions: u64,
}

fn instructions(bin: &Path, wl: &Path, name: &str) -> Result<u64> {
    let stats = tempfile::NamedTempFile::new()?;
    let path = stats.path().to_string_lossy().into_owned();
    time(&mut exec(bin, wl, name, &["--stats-json", &path])?)?;
    let v: Stats = serde_json::from_slice(&std::fs::read(stats.path())?)?;
    Ok(v.instructions)
}

/// Options of `bench-layers`.
#[derive(Debug, Clone)]
pub struct Config {
    /// Runs and workloads.
    pub bench: BenchOptions,
    /// The release `outcrop` of the build to compare against (e.g. a worktree of an older
    /// commit).
    pub baseline: PathBuf,
    /// Which modes: bare, counter, timing.
    pub modes: Vec<String>,
}

/// `xtask bench-layers`: measures and writes its Markdown table to `out` (the module's doc says what and against which peer).
pub fn run(args: Config, out: &mut dyn std::io::Write) -> Result<()> {
    let runs = args.bench.runs(1);
    let baseline = args.baseline.clone();
    let wanted = args.modes.clone();
    let short = |mode: &str| {
        if mode == "class counter" {
            "counter"
        } else {
            mode
        }
        .to_string()
    };
    let (root, outcrop) = crate::release_outcrop()?;
    let wl = root.join("workloads");
    let names = args.bench.names()?;
    say!(
        out,
        "median (min–max) of {runs} runs, alternating; MIPS = instructions / process wall time\n"
    );
    let mut table = Table::new()
        .left("workload")
        .right("instructions")
        .left("mode")
        .right("baseline MIPS")
        .right("this build MIPS")
        .right("this / baseline");
    let mut logs = [0.0f64; 3];
    for name in &names {
        let insns = instructions(&outcrop, &wl, name)? as f64;
        for (m, (mode, flags)) in MODES.iter().enumerate() {
            if !wanted.contains(&short(mode)) {
                continue;
            }
            let (mut old, mut new) = (Vec::new(), Vec::new());
            for _ in 0..runs {
                old.push(insns / seconds(&baseline, &wl, name, flags)? / 1e6);
                new.push(insns / seconds(&outcrop, &wl, name, flags)? / 1e6);
            }
            let (o, n) = (crate::bench::median(&old), crate::bench::median(&new));
            table.row(cells![
                name,
                insns,
                mode,
                mm(&old, 1),
                mm(&new, 1),
                format!("{:.3}", n / o)
            ]);
            logs[m] += (n / o).ln();
        }
    }
    write!(out, "{table}")?;
    let k = names.len().max(1) as f64;
    let means: Vec<String> = MODES
        .iter()
        .enumerate()
        .filter(|(_, (mode, _))| wanted.contains(&short(mode)))
        .map(|(m, (mode, _))| format!("{mode} {:.3}", (logs[m] / k).exp()))
        .collect();
    say!(
        out,
        "\ngeometric mean of this / baseline over {} workloads: {}",
        names.len(),
        means.join(", ")
    );
    Ok(())
}
