//! Project automation: the commands that make the tables of docs/BENCHMARKS.md and
//! docs/studies. Each module's doc says what it measures and against which peer:
//! `bench-rap` (RAP against exact hash maps, and `outcrop rap` end to end; `bench_rap.rs`),
//! `bench-exec` (the machine against qemu), `cachegrind` (the timing model's misses against
//! valgrind), `bench-timing`, `bench-wpp` (whole-program profiles against zstd and xz),
//! `bench-hostile`, `bench-layers`, `bench-compose`, `bench-profile`, `bench-rpa`, and the
//! papers' studies `study-rap`, `study-paths`, `study-strata`, `study-brr`, `study-rpa`.
//! Run without arguments for the usage line.

mod bench;
mod bench_compose;
mod bench_exec;
mod bench_hostile;
mod bench_layers;
mod bench_observed;
mod bench_profile;
mod bench_rap;
mod bench_rpa;
mod bench_studies;
mod bench_threads;
mod bench_timing;
mod bench_wpp;
mod cachegrind;
mod real_programs;
mod study_brr;
mod study_paths;
mod study_rap;
mod study_rpa;
mod study_strata;
mod sweep;

use anyhow::Result;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;

/// Counts every allocation, so benchmarks can measure the bytes a structure holds (bench-rap).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

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
    /// One `outcrop run` with every mechanism against three runs with one each.
    BenchCompose(bench_compose::Args),
    /// The exact profile's cost: `outcrop run` with and without it, timed and untimed.
    BenchProfile(bench_profile::Args),
    /// This build's machine against a baseline build's, mode by mode (MIPS).
    BenchLayers(bench_layers::Args),
    /// The timing model's cost: MIPS without timing and under each preset.
    BenchTiming(bench_timing::Args),
    /// The RPA's cost and accuracy per workload (edge and CPI queries, the GC guest).
    BenchRpa(bench_rpa::Args),
    /// Whole-program capture: file sizes against zstd and xz, capture and replay speed.
    BenchWpp(bench_wpp::Args),
    /// Hostile inputs: crafted programs and files against a baseline build (time, memory,
    /// how each ended).
    BenchHostile(bench_hostile::Args),
    /// RAP against exact hash maps (speed, bytes held, accuracy), and `outcrop rap` end to end.
    BenchRap(bench_rap::Args),
    /// Builds Lua, SQLite and zstd for riscv64 from the C sources vendored in crates (lua-src,
    /// libsqlite3-sys, zstd-sys): the real programs of the studies' and benchmarks' rows.
    RealPrograms(real_programs::Args),
    /// Worst-case RAP tree sizes by branching factor and merge ratio.
    Bounds,
    /// The machine against qemu-riscv64-static on every bundled workload.
    BenchExec(bench_exec::Args),
    /// Observed runs (exact profile, capture, branch records) under the compiling tier
    /// against qemu-user with a block-counting plugin, on programs of your own.
    BenchObserved(bench_observed::Args),
    /// Threaded programs against qemu-riscv64-static, and the scheduler's cost per switch.
    BenchThreads(bench_threads::Args),
    /// The timing model's cache misses against valgrind's cachegrind on native builds.
    Cachegrind(cachegrind::CachegrindConfig),
    /// A study end to end: one job at a time, on every core, as a Slurm job array.
    BenchStudies(bench_studies::Args),
}

fn main() -> Result<()> {
    use clap::Parser;
    match Cli::parse().command {
        Task::StudyRap(a) => study_rap::run(a),
        Task::StudyPaths(a) => study_paths::run(a),
        Task::StudyStrata(a) => study_strata::run(a),
        Task::StudyRpa(a) => study_rpa::run(a),
        Task::StudyBrr(a) => study_brr::run(a),
        Task::BenchCompose(a) => bench_compose::run(a),
        Task::BenchProfile(a) => bench_profile::run(a),
        Task::BenchLayers(a) => bench_layers::run(a),
        Task::BenchTiming(a) => bench_timing::run(a),
        Task::BenchRpa(a) => bench_rpa::run(a),
        Task::BenchWpp(a) => bench_wpp::run(a),
        Task::BenchHostile(a) => bench_hostile::run(a),
        Task::BenchRap(a) => bench_rap::run(a),
        Task::RealPrograms(a) => real_programs::run(a),
        Task::Bounds => bench_rap::bounds(),
        Task::BenchExec(a) => bench_exec::run(a),
        Task::BenchObserved(a) => bench_observed::run(a),
        Task::BenchThreads(a) => bench_threads::run(a),
        Task::Cachegrind(c) => cachegrind::run(c),
        Task::BenchStudies(a) => bench_studies::run(a),
    }
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
