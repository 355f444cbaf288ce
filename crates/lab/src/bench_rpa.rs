//! `cargo run --release -p xtask -- bench-rpa [--runs R] [--workloads a,b]`: the Relational
//! Profiling Architecture on every workload, as a user runs it.
//!
//! * Cost: `outcrop run --no-profile` with and without the paper's edge query (Figure 2a,
//!   1/256 of the conditional branches, the edges service on its own thread), alternating,
//!   R runs each; medians with min–max of the process wall time, and the ratio.
//! * Accuracy, on a lossless run (`--deterministic`: sampled queries wait instead of
//!   dropping, so the numbers do not depend on the host's scheduling): the edge profile's
//!   overlap with the exact counts of the same run and the mean error of the hot branches;
//!   the CPI query (Figure 2d, 1/1024 of every instruction, with the timing model): total
//!   cycles estimated against exact, and the largest error among functions with ≥ 1% of
//!   the cycles.
//! * The GC guest (`workloads/study/gc.c`, built when the cross compiler is present): the
//!   Figure 2c query, always: cost against the bare run, and whether the barrier saw every
//!   non-null reference store exactly once.
//!
//! Results: docs/BENCHMARKS.md, "Relational profiling".

use crate::bench::{guest_args, mm, time, BenchOptions};
use crate::{Context, Result};
use outcrop_studies::{cells, table::Table};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

const EDGES: &str = "for opBRANCH * every 256 collect pc misc ;\nsend 1 stop;\n";
const CPI: &str = "for opJMP * opBRANCH * opLOAD *\nopSTORE * opALU * opMULT *\nopFLOAT * opSYS *\nevery 1024 collect pc rrate;\nsend 4 stop;\n";
const GC: &str =
    "for opSTORE 1 always collect op1 op2 op3;\nif op1 <> 0 then send 3 stop else stop;\n";

fn outcrop() -> PathBuf {
    crate::root().join("target/release/outcrop")
}

fn command(wl: &Path, prog: &Path, extra_args: &[String], flags: &[&str]) -> Command {
    let mut cmd = Command::new(outcrop());
    cmd.current_dir(wl)
        .args(["run", "--no-profile", "--no-progress", "--allow-rw", "."])
        .args(flags)
        .arg("--")
        .arg(prog)
        .args(extra_args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    cmd
}

/// The fields of `outcrop run --query … --json` (the RPA report, docs/formats.md) read here.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RpaView {
    queries: Vec<QueryView>,
    queues: Vec<QueueView>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct QueryView {
    stats: StatsView,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StatsView {
    records: u64,
    sent: u64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct QueueView {
    detail: DetailView,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DetailView {
    accuracy: Option<AccuracyView>,
    stores: Option<u64>,
    exact_stores: Option<u64>,
    checksum: Option<String>,
    exact_checksum: Option<String>,
    collector: Option<CollectorView>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct AccuracyView {
    overlap_pct: f64,
    hot_mean_error_pct: f64,
    exact_cycles: f64,
    estimated_cycles: f64,
    groups: Vec<GroupView>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct GroupView {
    exact_cpi: f64,
    estimated_cpi: f64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CollectorView {
    collections: u64,
    freed: u64,
    unsafe_frees: u64,
}

/// Whether `st` is how the guest ends (the `exitcode` workload exits with 3 on purpose).
fn ok(prog: &Path, st: std::process::ExitStatus) -> bool {
    st.success() || (prog.ends_with("bin/exitcode") && st.code() == Some(3))
}

fn seconds(wl: &Path, prog: &Path, extra: &[String], flags: &[&str]) -> Result<f64> {
    let mut cmd = command(wl, prog, extra, flags);
    if prog.ends_with("bin/exitcode") {
        // exits with 3 on purpose: timed by hand
        let t = std::time::Instant::now();
        let st = cmd.status()?;
        crate::ensure!(ok(prog, st), "{}: {st}", prog.display());
        return Ok(t.elapsed().as_secs_f64());
    }
    time(&mut cmd)
}

fn report(wl: &Path, prog: &Path, extra: &[String], flags: &[&str]) -> Result<RpaView> {
    let out = tempfile::NamedTempFile::new()?;
    let o = out.path().to_string_lossy().into_owned();
    let mut f: Vec<&str> = flags.to_vec();
    f.extend(["--deterministic", "--json", "-o", &o]);
    let st = command(wl, prog, extra, &f).status()?;
    crate::ensure!(ok(prog, st), "{}: {st}", prog.display());
    Ok(serde_json::from_slice(&std::fs::read(out.path())?)?)
}

fn cell(v: &[f64]) -> String {
    mm(v, 2)
}

/// Options of `bench-rpa`.
#[derive(Debug, Clone)]
pub struct Config {
    /// Runs and workloads.
    pub bench: BenchOptions,
}

/// `xtask bench-rpa`: measures and writes its Markdown table to `out` (the module's doc says what and against which peer).
pub fn run(args: Config, out: &mut dyn std::io::Write) -> Result<()> {
    let runs = args.bench.runs(1);
    let wl = crate::root().join("workloads");
    let wl = std::path::absolute(&wl)?;
    crate::ensure!(
        outcrop().exists(),
        "build the release binary first: cargo build --release -p outcrop"
    );
    let tmp = tempfile::tempdir()?;
    let q = |name: &str, text: &str| -> Result<String> {
        let p = tmp.path().join(name);
        std::fs::write(&p, text)?;
        Ok(p.to_string_lossy().into_owned())
    };
    let (edges, cpi, gc) = (q("edges.rpa", EDGES)?, q("cpi.rpa", CPI)?, q("gc.rpa", GC)?);
    // every bundled workload (not only the compute set), or --workloads
    let manifest = crate::bench::manifest()?;
    let mut names: Vec<String> = if args.bench.workloads.is_empty() {
        manifest.workloads.iter().map(|w| w.name.clone()).collect()
    } else {
        args.bench.names()?
    };
    names.sort();
    say!(
        out,
        "runs per cell: {runs}; wall seconds, median (min–max)\n"
    );
    let mut table = Table::new()
        .left("workload")
        .left("bare run")
        .left("+ edge query 1/256")
        .left("ratio")
        .left("edge overlap")
        .left("hot-branch error")
        .left("CPI total error")
        .left("worst hot-function CPI error");
    let mut ratios = Vec::new();
    for name in &names {
        let prog = PathBuf::from(format!("bin/{name}"));
        let extra = guest_args(name)?;
        let (mut bare, mut with) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            bare.push(seconds(&wl, &prog, &extra, &[])?);
            with.push(seconds(&wl, &prog, &extra, &["--query", &edges])?);
        }
        let ratio = crate::bench::median(&with) / crate::bench::median(&bare);
        ratios.push(ratio);
        let e = report(&wl, &prog, &extra, &["--query", &edges])
            .with_context(|| format!("{name}: edges"))?;
        let acc = e
            .queues
            .first()
            .and_then(|q| q.detail.accuracy.as_ref())
            .context("no edge accuracy")?;
        let c = report(&wl, &prog, &extra, &["--timing", "--query", &cpi])
            .with_context(|| format!("{name}: cpi"))?;
        let ca = c
            .queues
            .first()
            .and_then(|q| q.detail.accuracy.as_ref())
            .context("no CPI accuracy")?;
        let (exact, est) = (ca.exact_cycles, ca.estimated_cycles);
        let worst = ca
            .groups
            .iter()
            .map(|f| {
                let (x, y) = (f.exact_cpi, f.estimated_cpi);
                if x > 0.0 {
                    100.0 * (y - x).abs() / x
                } else {
                    0.0
                }
            })
            .fold(0.0, f64::max);
        table.row(cells![
            name,
            cell(&bare),
            cell(&with),
            format!("{ratio:.2}×"),
            format!("{:.2}%", acc.overlap_pct),
            format!("{:.2}%", acc.hot_mean_error_pct),
            format!(
                "{:.2}%",
                if exact > 0.0 {
                    100.0 * (est - exact).abs() / exact
                } else {
                    0.0
                }
            ),
            format!("{worst:.2}%")
        ]);
    }
    write!(out, "{table}")?;
    let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len().max(1) as f64).exp();
    say!(
        out,
        "\ngeometric mean ratio (edge query / bare run): {geo:.2}×"
    );

    gc_guest(&wl, tmp.path(), &gc, runs, out)
}

/// The GC guest (workloads/study/gc.c) bare and under the GC query, always.
fn gc_guest(
    wl: &Path,
    tmp: &Path,
    gc: &str,
    runs: usize,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    let cc = Command::new("riscv64-linux-gnu-gcc")
        .arg("--version")
        .output();
    if !matches!(cc, Ok(ref o) if o.status.success()) {
        say!(out, "\nGC guest: skipped (no riscv64-linux-gnu-gcc)");
        return Ok(());
    }
    let gc_bin = tmp.join("gc");
    let st = Command::new("riscv64-linux-gnu-gcc")
        .args(["-O2", "-static", "-o"])
        .arg(&gc_bin)
        .arg(wl.join("study/gc.c"))
        .status()?;
    crate::ensure!(st.success(), "building the GC guest");
    let (mut bare, mut with) = (Vec::new(), Vec::new());
    let heap = ["--query", gc, "--gc-heap", "gc_arena:gc_roots:64"];
    for _ in 0..runs {
        bare.push(seconds(wl, &gc_bin, &[], &[])?);
        with.push(seconds(wl, &gc_bin, &[], &heap)?);
    }
    let g = report(wl, &gc_bin, &[], &heap)?;
    let d = &g.queues.first().context("no queue")?.detail;
    let s = &g.queries.first().context("no query")?.stats;
    let c = d.collector.as_ref();
    let mut table = Table::new()
        .left("GC guest (400,000 operations)")
        .left("bare run")
        .left("+ GC query, always")
        .left("ratio")
        .left("records")
        .left("sent")
        .left("barrier = exact")
        .left("collector: collections, freed, unsafe");
    table.row(cells![
        "gc",
        cell(&bare),
        cell(&with),
        format!(
            "{:.2}×",
            crate::bench::median(&with) / crate::bench::median(&bare)
        ),
        s.records,
        s.sent,
        d.stores == d.exact_stores && d.checksum == d.exact_checksum,
        format!(
            "{}, {}, {}",
            c.map_or(0, |c| c.collections),
            c.map_or(0, |c| c.freed),
            c.map_or(0, |c| c.unsafe_frees)
        )
    ]);
    write!(out, "\n{table}")?;
    Ok(())
}
