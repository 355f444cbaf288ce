//! Project automation: the commands that make the tables of docs/BENCHMARKS.md and
//! docs/studies. Each module's doc says what it measures and against which peer:
//! `bench-rap` (RAP against exact hash maps, and `outcrop rap` end to end; `bench_rap.rs`),
//! `bench-exec` (the machine against qemu), `cachegrind` (the timing model's misses against
//! valgrind), `bench-timing`, `bench-wpp` (whole-program profiles against zstd and xz),
//! `bench-hostile`, `bench-layers`, `bench-compose`, `bench-profile`, `bench-rpa`, and the
//! papers' studies `study-rap`, `study-paths`, `study-strata`, `study-brr`, `study-rpa`.
//! Run without arguments for the usage line.

mod bench_compose;
mod bench_hostile;
mod bench_layers;
mod bench_profile;
mod bench_rap;
mod bench_rpa;
mod bench_timing;
mod bench_wpp;
mod cachegrind;
mod study_brr;
mod study_paths;
mod study_rap;
mod study_rpa;
mod study_strata;
mod sweep;

use anyhow::{bail, Result};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;

/// Counts every allocation, so benchmarks can measure the bytes a structure holds (bench-rap).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;
use outcrop_rap::{Config, ExactRanges, RapTree};
use std::time::Instant;

/// Project automation: the studies and benchmarks behind docs/BENCHMARKS.md and
/// docs/studies (each task's module doc says what it measures and against which peer).
#[derive(clap::Parser)]
#[command(name = "xtask")]
struct Cli {
    #[command(subcommand)]
    command: Task,
}

#[derive(clap::Subcommand)]
enum Task {
    /// The RAP paper's §4 studies (Figures 5–10, narrow operands) on the compute workloads,
    /// at ε = 10% and 1%; a job per workload and ε, locally on every core or as a Slurm
    /// job array (--slurm).
    StudyRap(study_rap::Args),
    /// The path-profiling paper's §4 studies (accuracy against period and depth, overhead,
    /// Tables 2–4, Figures 5–6) on the compute workloads: a job per workload, every
    /// branch-record unit on one timed run beside the exact path counter.
    StudyPaths(study_paths::Args),
    /// The strata paper's §IV results (Tables 3–4, Figures 2–3, compression against zstd,
    /// capture slowdown against native and the bare machine): a job per workload.
    StudyStrata(study_strata::Args),
    /// The relational profiling paper's resource and overhead study (§6, Figures 7–8,
    /// Table 6), or `prefetch` / `adaptive`: a job per workload and configuration.
    StudyRpa(study_rpa::Args),
    /// The branch-on-random paper's studies (accuracy, sensitivity, overhead, the
    /// microbenchmark): a job per program, builds cached by what makes them.
    StudyBrr(study_brr::Args),
    /// Tasks not yet on the shared study options (their own argument loops).
    #[command(external_subcommand)]
    Other(Vec<String>),
}

fn main() -> Result<()> {
    use clap::Parser;
    match Cli::parse().command {
        Task::StudyRap(a) => study_rap::run(a),
        Task::StudyPaths(a) => study_paths::run(a),
        Task::StudyStrata(a) => study_strata::run(a),
        Task::StudyRpa(a) => study_rpa::run(a),
        Task::StudyBrr(a) => study_brr::run(a),
        Task::Other(args) => other(&args),
    }
}

fn other(args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("bench-rap") => bench_rap::run(&args[1..]),
        Some("bounds") => bounds(),
        Some("bench-exec") => bench_exec(runs_flag(args)?.max(5)),
        Some("cachegrind") => cachegrind::run(&args[1..]),
        Some("bench-timing") => bench_timing::run(&args[1..]),
        Some("bench-wpp") => bench_wpp::run(&args[1..]),
        Some("bench-hostile") => bench_hostile::run(&args[1..]),
        Some("bench-layers") => bench_layers::run(&args[1..]),
        Some("bench-compose") => bench_compose::run(&args[1..]),
        Some("bench-profile") => bench_profile::run(&args[1..]),
        Some("bench-rpa") => bench_rpa::run(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo run --release -p xtask -- bench-rap [--events N] [--runs R] | bounds \
                 | bench-exec [--runs R] | cachegrind [--json] [--workloads a,b] \
                 | bench-timing [--runs R] \
                 | bench-wpp [--runs R] [--workloads a,b] [--no-peers] \
                 | bench-hostile [--baseline OUTCROP] [--runs R] [--timeout S] \
                 | bench-layers --baseline OUTCROP [--runs R] [--modes bare,counter,timing] | bench-compose [--runs R] | bench-profile [--runs R] [--dir DIR -- RUN-ARGS...] \
                 | bench-rpa [--runs R] [--workloads a,b] \
                 | study-rap --help"
            );
            bail!("unknown or missing task")
        }
    }
}

/// The bundled workloads' names (the binaries in `workloads/bin`), sorted.
fn workload_names(wl: &std::path::Path) -> Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(wl.join("bin"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.contains('.') && n != "TOOLCHAIN")
        .collect();
    names.sort();
    Ok(names)
}

/// `--runs R` (default 3, at least 1).
fn runs_flag(args: &[String]) -> Result<usize> {
    Ok(args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(3usize)
        .max(1))
}

/// The repository root, and the release `outcrop` binary (which must be built).
fn release_outcrop() -> Result<(std::path::PathBuf, std::path::PathBuf)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let outcrop = root.join("target/release/outcrop");
    anyhow::ensure!(
        outcrop.exists(),
        "build first: cargo build --release -p outcrop"
    );
    Ok((root, outcrop))
}

/// The compute workloads in `workloads/bin`, sorted: not `micro_*` (timing-model validation),
/// not `hello`/`exitcode` (start-up only).
fn compute_workloads(root: &std::path::Path) -> Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(root.join("workloads/bin"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            !n.contains('.')
                && n != "TOOLCHAIN"
                && !n.starts_with("micro_")
                && n != "hello"
                && n != "exitcode"
        })
        .collect();
    names.sort();
    Ok(names)
}

/// Worst-case node bounds by branching factor and merge ratio (our Figures 2 and 3).
fn bounds() -> Result<()> {
    println!("| universe | b | H | ε | q | frontier after merge | nodes after merge | frontier peak | nodes at peak | peak bytes (16 B/node) |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for bits in [32u8, 64] {
        for eps in [0.10, 0.01] {
            for b in [2u8, 4, 8, 16] {
                for q in [2u32, 3, 4] {
                    if q != 2 && b != 4 {
                        continue;
                    }
                    let c = Config::builder()
                        .bits(bits)
                        .branching(b)
                        .eps(eps)
                        .merge_ratio(q)
                        .build()?;
                    let s = outcrop_rap::bound::steady_state_bounds(&c);
                    println!(
                        "| {bits} | {b} | {} | {}% | {q} | {} | {} | {} | {} | {} |",
                        c.height(),
                        eps * 100.0,
                        s.frontier_after_merge,
                        s.after_merge,
                        s.frontier_peak,
                        s.peak,
                        s.peak * 16
                    );
                }
            }
        }
    }
    Ok(())
}

/// One row of the accuracy table: RAP with `eps` on `values`, hot ranges ≥ 10%, vs `exact`.
fn accuracy_row(name: &str, eps: f64, values: &[u64], exact: &ExactRanges) -> Result<String> {
    let mut t = RapTree::new(Config::builder().eps(eps).build()?);
    for v in values.chunks(1 << 16) {
        t.add_batch(v)?;
    }
    let log = t.merge_log();
    let nodes_avg = if log.is_empty() {
        t.node_count() as f64
    } else {
        log.iter()
            .map(|m| (m.nodes_before + m.nodes_after) as f64 / 2.0)
            .sum::<f64>()
            / log.len() as f64
    };
    let acc = t.accuracy(0.10, exact)?;
    Ok(format!(
        "| {name} | {}% | {} | {:.0} | {} | {:.3}% | {:.3}% | {:.3}% | {:.3}% |",
        eps * 100.0,
        t.peak_nodes(),
        nodes_avg,
        acc.ranges.len(),
        acc.max_error_pct,
        acc.mean_error_pct,
        acc.max_exclusive_error_pct,
        acc.mean_exclusive_error_pct
    ))
}

/// Six phases of equal length; in each, 70% of events hit one 64-instruction loop and 30% are
/// uniform over 4 Mi addresses. Deterministic (SplitMix64, seed 3).
fn phased_stream(events: usize) -> Vec<u64> {
    let mut state = 3u64;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let bases = [0x10000u64, 0x80000, 0x10000, 0x200000, 0x3000, 0x90000];
    let per = events.div_ceil(bases.len());
    (0..events)
        .map(|i| {
            let base = bases[(i / per).min(bases.len() - 1)];
            let r = next();
            if r % 10 < 7 {
                base + 4 * ((r >> 8) % 64)
            } else {
                (r >> 16) % (1 << 22)
            }
        })
        .collect()
}

/// `outcrop exec` on every bundled workload (no observer, class counter) against
/// `qemu-riscv64-static` on the same binaries, in the same run. Needs a release build of
/// `outcrop` (`cargo build --release`) and qemu-user-static. The `micro_*` programs are left
/// out: they are validation inputs for the timing model (one branch or access pattern each),
/// not compute workloads, and would skew the geometric means.
fn bench_exec(runs: usize) -> Result<()> {
    use std::process::{Command, Stdio};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let outcrop = root.join("target/release/outcrop");
    anyhow::ensure!(
        outcrop.exists(),
        "build first: cargo build --release -p outcrop"
    );
    let wl = root.join("workloads");
    let tmp = std::env::temp_dir().join(format!("outcrop-bench-{}", std::process::id()));
    std::fs::create_dir_all(tmp.join("src"))?;
    let _ = std::fs::copy(wl.join("src/fileio.c"), tmp.join("src/fileio.c"));
    let mut names: Vec<String> = std::fs::read_dir(wl.join("bin"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.contains('.') && n != "TOOLCHAIN" && !n.starts_with("micro_"))
        .collect();
    names.sort();
    let timed = |cmd: &mut Command| -> Result<f64> {
        let t = Instant::now();
        let st = cmd
            .current_dir(&tmp)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        let secs = t.elapsed().as_secs_f64();
        anyhow::ensure!(st.code().is_some(), "killed by a signal");
        Ok(secs)
    };
    println!("{runs} runs each, alternating outcrop, outcrop with the class counter and qemu; median (min–max); MIPS = retired instructions / wall time\n");
    println!("| workload | instructions | outcrop s | MIPS | class counter s | MIPS | counter overhead | qemu s | outcrop / qemu |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mm = |v: &[f64]| {
        let (m, lo, hi) = bench_rap::spread(v);
        format!("{m:.3} ({lo:.3}–{hi:.3})")
    };
    let (mut g_mips, mut g_over, mut g_ratio, mut k) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let mut startup = Vec::new();
    for name in names {
        let bin = wl.join("bin").join(&name);
        let args: Vec<String> = if name == "fileio" {
            vec!["src/fileio.c".into()]
        } else {
            vec![]
        };
        let stats = tmp.join("stats.json");
        let mut base = Command::new(&outcrop);
        base.args(["exec", "--allow-rw", ".", "--stats-json"])
            .arg(&stats)
            .arg("--")
            .arg(&bin)
            .args(&args);
        timed(&mut base)?;
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats)?)?;
        let insns = json["instructions"].as_u64().unwrap_or(0);
        let mut plain = vec![];
        let mut counted = vec![];
        let mut qemu = vec![];
        for _ in 0..runs {
            plain.push(timed(
                Command::new(&outcrop)
                    .args(["exec", "--allow-rw", ".", "--"])
                    .arg(&bin)
                    .args(&args),
            )?);
            counted.push(timed(
                Command::new(&outcrop)
                    .args(["exec", "--allow-rw", ".", "--stats-json"])
                    .arg(&stats)
                    .arg("--")
                    .arg(&bin)
                    .args(&args),
            )?);
            qemu.push(timed(
                Command::new("qemu-riscv64-static").arg(&bin).args(&args),
            )?);
        }
        let ratio = |a: &[f64], b: &[f64]| {
            let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
            let (m, lo, hi) = bench_rap::spread(&r);
            format!("{m:.2}x ({lo:.2}–{hi:.2})")
        };
        let (p, c, q) = (
            bench_rap::spread(&plain).0,
            bench_rap::spread(&counted).0,
            bench_rap::spread(&qemu).0,
        );
        let mips = insns as f64 / p / 1e6;
        println!(
            "| {name} | {insns} | {} | {mips:.0} | {} | {:.0} | {} | {} | {} |",
            mm(&plain),
            mm(&counted),
            insns as f64 / c / 1e6,
            ratio(&counted, &plain),
            mm(&qemu),
            ratio(&plain, &qemu)
        );
        if insns < 1_000_000 {
            // startup-only programs (hello, exitcode) measure process start, not the loop
            startup.push(format!("{name} {:.1} ms (qemu {:.1} ms)", p * 1e3, q * 1e3));
            continue;
        }
        g_mips += mips.ln();
        g_over += (c / p).ln();
        g_ratio += (p / q).ln();
        k += 1.0;
    }
    if !startup.is_empty() {
        println!(
            "\nstartup (whole run of a program under 1M instructions): {}",
            startup.join(", ")
        );
    }
    if k > 0.0 {
        println!(
            "\ngeometric means over the {k} compute workloads: {:.0} MIPS, class-counter overhead {:.2}x, {:.1}x qemu's wall time",
            (g_mips / k).exp(),
            (g_over / k).exp(),
            (g_ratio / k).exp()
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}
