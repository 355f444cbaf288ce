//! `cargo run --release -p xtask -- bench-timing [--runs R]`: speed of the timing model. For
//! every compute workload, side by side in one run: `outcrop exec` with the class counter (no
//! timing), `--timing` (default preset) and `--timing=inorder`; MIPS from the guest's own
//! `--stats-json` wall time; the three modes alternate, R runs each (at least 5); medians with
//! min–max, geometric means of the medians at the end.

use crate::bench::{guest_args, mm, time, BenchOptions};
use crate::Result;
use outcrop_studies::{cells, table::Table};
use std::process::Command;

/// Options of `bench-timing`.
#[derive(Debug, Clone)]
pub struct Config {
    /// Runs and workloads.
    pub bench: BenchOptions,
}

/// The fields of `--stats-json` read here.
#[derive(serde::Deserialize)]
struct Stats {
    instructions: u64,
    mips: f64,
    timing: Option<Timing>,
}

#[derive(serde::Deserialize)]
struct Timing {
    ipc: f64,
}

/// `xtask bench-timing`: measures and writes its Markdown table to `out` (the module's doc says what and against which peer).
pub fn run(args: Config, out: &mut dyn std::io::Write) -> Result<()> {
    let runs = args.bench.runs(5);
    let (root, outcrop) = crate::release_outcrop()?;
    let wl = root.join("workloads");
    let names = args.bench.names()?;
    let stats_file = tempfile::NamedTempFile::new()?;
    let stats = stats_file.path();
    let modes: [(&str, Option<&str>); 3] = [
        ("no timing", None),
        ("default", Some("--timing=default")),
        ("inorder", Some("--timing=inorder")),
    ];
    say!(out, "{runs} runs per mode, alternating; median (min–max); MIPS = retired instructions / guest wall time\n");
    let mut table = Table::new()
        .left("workload")
        .right("instructions")
        .right("MIPS, no timing")
        .right("MIPS, default")
        .right("slowdown")
        .right("MIPS, inorder")
        .right("slowdown")
        .right("IPC default")
        .right("IPC inorder");
    let mut logs = [0.0f64; 3];
    let mut k = 0.0;
    for name in &names {
        let extra = guest_args(name)?;
        let mut mips = [0.0f64; 3];
        let mut ipc = [0.0f64; 3];
        let mut insns = 0;
        let mut samples: [Vec<f64>; 3] = Default::default();
        for _ in 0..runs {
            for (m, (_, flag)) in modes.iter().enumerate() {
                let mut cmd = Command::new(&outcrop);
                cmd.current_dir(&wl)
                    .args(["exec", "--deterministic", "--allow-rw", ".", "--stats-json"])
                    .arg(stats);
                if let Some(f) = flag {
                    cmd.arg(f);
                }
                time(cmd.arg("--").arg(format!("bin/{name}")).args(&extra))?;
                let v: Stats = serde_json::from_slice(&std::fs::read(stats)?)?;
                samples[m].push(v.mips);
                insns = v.instructions;
                ipc[m] = v.timing.map_or(0.0, |t| t.ipc);
            }
        }
        let mut shown: [String; 3] = Default::default();
        for m in 0..3 {
            mips[m] = crate::bench::median(&samples[m]);
            shown[m] = mm(&samples[m], if m == 0 { 0 } else { 1 });
        }
        table.row(cells![
            name,
            insns,
            shown[0],
            shown[1],
            format!("{:.1}x", mips[0] / mips[1].max(1e-9)),
            shown[2],
            format!("{:.1}x", mips[0] / mips[2].max(1e-9)),
            format!("{:.2}", ipc[1]),
            format!("{:.2}", ipc[2])
        ]);
        for m in 0..3 {
            logs[m] += mips[m].max(1e-9).ln();
        }
        k += 1.0;
    }
    write!(out, "{table}")?;
    let g = |m: usize| (logs[m] / f64::max(k, 1.0)).exp();
    say!(out,
        "\ngeometric means over {} workloads: {:.0} MIPS without timing, {:.1} MIPS default preset ({:.1}x slower), {:.1} MIPS inorder ({:.1}x slower)",
        names.len(),
        g(0),
        g(1),
        g(0) / g(1),
        g(2),
        g(0) / g(2)
    );
    Ok(())
}
