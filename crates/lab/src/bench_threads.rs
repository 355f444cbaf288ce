//! `xtask bench-threads [--runs N]`: multi-threaded programs on the machine against
//! `qemu-riscv64-static` side by side (the bundled `threads` workload and the programs of
//! crates/rv/tests/fixtures/threads built as their users build them: a pthread ring with
//! timers and signals, an OpenMP loop, C++ `std::async`/`std::thread`), and the scheduler's
//! cost per context switch: `threads` at quanta from 50,000 down to 100 instructions, the
//! extra wall time divided by the extra switches.
//!
//! Note what the qemu column is: qemu-user runs each guest thread on a host thread of its own,
//! so on this 2-core host it may use both cores; Outcrop runs every guest thread on one.

use crate::bench::{median, mm, ratio, time, BenchOptions};
use crate::{Context, Result};
use outcrop_studies::{cells, table::Table};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Options.
#[derive(Debug, Clone)]
pub struct Config {
    /// Runs and workloads.
    pub bench: BenchOptions,
}

/// (label, program, its arguments) of every program timed.
fn programs(root: &Path) -> Vec<(&'static str, PathBuf)> {
    let fx = root.join("crates/rv/tests/fixtures/threads");
    vec![
        ("threads (bundled)", root.join("workloads/bin/threads")),
        ("tsig (ring, timers, signals)", fx.join("tsig")),
        ("omp (OpenMP, libgomp)", fx.join("omp")),
        (
            "cppthreads (std::async, std::thread)",
            fx.join("cppthreads"),
        ),
    ]
}

/// `--stats-json` of one deterministic run with `extra` arguments: (instructions, switches).
fn stats(outcrop: &Path, prog: &Path, extra: &[&str]) -> Result<(u64, u64)> {
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("s.json");
    time(
        Command::new(outcrop)
            .args(["exec", "--deterministic", "--stats-json"])
            .arg(&out)
            .args(extra)
            .arg("--")
            .arg(prog),
    )?;
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out)?)?;
    let n = |k: &str| {
        v[k].as_u64()
            .with_context(|| format!("{k} in --stats-json"))
    };
    Ok((n("instructions")?, n("context_switches")?))
}

/// Runs the benchmark and prints its tables.
pub fn run(args: Config, out: &mut dyn std::io::Write) -> Result<()> {
    let (root, outcrop) = crate::release_outcrop()?;
    let runs = args.bench.runs(5);
    say!(
        out,
        "### Threaded programs against qemu (`xtask bench-threads --runs {runs}`)\n"
    );
    let mut table = Table::new()
        .left("program")
        .right("threads")
        .right("instructions")
        .right("switches")
        .right("outcrop s")
        .right("MIPS")
        .right("qemu s")
        .right("outcrop / qemu");
    let mut ratios = Vec::new();
    for (label, prog) in programs(&root) {
        let (insns, switches) = stats(&outcrop, &prog, &[])?;
        let dir = tempfile::tempdir()?;
        let stats_file = dir.path().join("s.json");
        time(
            Command::new(&outcrop)
                .args(["exec", "--deterministic", "--stats-json"])
                .arg(&stats_file)
                .arg("--")
                .arg(&prog),
        )?;
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats_file)?)?;
        let threads = v["threads"].as_array().map_or(0, Vec::len);
        let (mut ours, mut qemu) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            ours.push(time(
                Command::new(&outcrop)
                    .args(["exec", "--deterministic", "--"])
                    .arg(&prog),
            )?);
            qemu.push(time(Command::new("qemu-riscv64-static").arg(&prog))?);
        }
        let (r, cell) = ratio(&ours, &qemu);
        ratios.push(r);
        table.row(cells![
            label,
            threads,
            insns,
            switches,
            mm(&ours, 3),
            format!("{:.0}", insns as f64 / median(&ours) / 1e6),
            mm(&qemu, 3),
            cell
        ]);
    }
    write!(out, "{table}")?;
    let geo = outcrop_studies::stats::geomean(&ratios).unwrap_or(0.0);
    say!(
        out,
        "\ngeometric mean of the ratios: {geo:.2}× qemu's wall time\n"
    );

    say!(
        out,
        "### The scheduler's cost per switch (`threads`, quantum sweep)\n"
    );
    let mut table = Table::new()
        .right("quantum")
        .right("switches")
        .right("instructions")
        .right("outcrop s")
        .right("extra s vs 50000")
        .right("µs per extra switch");
    let prog = root.join("workloads/bin/threads");
    let quanta = [50_000u64, 5_000, 1_000, 300, 100];
    let mut base: Option<(f64, u64)> = None;
    for q in quanta {
        let qs = q.to_string();
        let (insns, switches) = stats(&outcrop, &prog, &["--quantum", &qs])?;
        let mut t = Vec::new();
        for _ in 0..runs {
            t.push(time(
                Command::new(&outcrop)
                    .args(["exec", "--deterministic", "--quantum", &qs, "--"])
                    .arg(&prog),
            )?);
        }
        let m = median(&t);
        let (extra, per) = match base {
            None => {
                base = Some((m, switches));
                ("–".to_string(), "–".to_string())
            }
            Some((bt, bs)) => {
                let ds = switches.saturating_sub(bs).max(1) as f64;
                (
                    format!("{:.3}", m - bt),
                    format!("{:.2}", (m - bt) / ds * 1e6),
                )
            }
        };
        table.row(cells![q, switches, insns, mm(&t, 3), extra, per]);
    }
    write!(out, "{table}")?;
    Ok(())
}
