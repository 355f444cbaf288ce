//! `cargo run --release -p xtask -- bench-layers --baseline OLD/outcrop [--runs R]`: the machine's
//! speed before and after a change to the layers it runs under, side by side in one run. For
//! every compute workload and three modes — the bare machine (`exec`), the class-counter
//! observer (`exec --stats-json`) and the timing model (`exec --timing`) — the baseline binary
//! and this build run alternately, R times each; MIPS = retired instructions / process wall
//! time; medians with min–max, and the ratio this/baseline (above 1: faster now).
//! `--modes bare,timing` runs only the modes named (`bare`, `counter`, `timing`).

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const MODES: [(&str, &[&str]); 3] = [
    ("bare", &[]),
    ("class counter", &["--stats-json", "/dev/null"]),
    ("timing", &["--timing", "--stats-json", "/dev/null"]),
];

/// `outcrop exec` of workload `name` with `flags`, its output discarded.
fn exec(bin: &Path, wl: &Path, name: &str, flags: &[&str]) -> Command {
    let extra: &[&str] = if name == "fileio" {
        &["src/fileio.c"]
    } else {
        &[]
    };
    let mut cmd = Command::new(bin);
    cmd.current_dir(wl)
        .args(["exec", "--deterministic", "--allow-rw", "."])
        .args(flags)
        .arg("--")
        .arg(format!("bin/{name}"))
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn seconds(bin: &Path, wl: &Path, name: &str, flags: &[&str]) -> Result<f64> {
    let t = Instant::now();
    let st = exec(bin, wl, name, flags).status()?;
    anyhow::ensure!(st.success(), "{}: {name}: {st}", bin.display());
    Ok(t.elapsed().as_secs_f64())
}

fn instructions(bin: &Path, wl: &Path, name: &str) -> Result<u64> {
    let stats = std::env::temp_dir().join(format!("outcrop-bl-{}.json", std::process::id()));
    let path = stats.to_string_lossy().into_owned();
    exec(bin, wl, name, &["--stats-json", &path]).status()?;
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats)?)?;
    Ok(v["instructions"].as_u64().unwrap_or(0))
}

fn summary(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

pub fn run(args: &[String]) -> Result<()> {
    let runs = crate::runs_flag(args)?;
    let baseline: PathBuf = args
        .iter()
        .position(|a| a == "--baseline")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
        .context("--baseline OLD/outcrop is required")?;
    let wanted: Vec<String> = args
        .iter()
        .position(|a| a == "--modes")
        .and_then(|i| args.get(i + 1))
        .map_or_else(
            || vec!["bare".into(), "counter".into(), "timing".into()],
            |m| m.split(',').map(str::to_string).collect(),
        );
    for w in &wanted {
        anyhow::ensure!(
            ["bare", "counter", "timing"].contains(&w.as_str()),
            "--modes: unknown mode `{w}` (modes: bare, counter, timing)"
        );
    }
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
    let names = crate::compute_workloads(&root)?;
    println!(
        "median (min–max) of {runs} runs, alternating; MIPS = instructions / process wall time\n"
    );
    println!(
        "| workload | instructions | mode | baseline MIPS | this build MIPS | this / baseline |"
    );
    println!("|---|---:|---|---:|---:|---:|");
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
            let (o, olo, ohi) = summary(old);
            let (n, nlo, nhi) = summary(new);
            println!(
                "| {name} | {insns} | {mode} | {o:.1} ({olo:.1}–{ohi:.1}) | {n:.1} ({nlo:.1}–{nhi:.1}) | {:.3} |",
                n / o
            );
            logs[m] += (n / o).ln();
        }
    }
    let k = names.len().max(1) as f64;
    let means: Vec<String> = MODES
        .iter()
        .enumerate()
        .filter(|(_, (mode, _))| wanted.contains(&short(mode)))
        .map(|(m, (mode, _))| format!("{mode} {:.3}", (logs[m] / k).exp()))
        .collect();
    println!(
        "\ngeometric mean of this / baseline over {} workloads: {}",
        names.len(),
        means.join(", ")
    );
    Ok(())
}
