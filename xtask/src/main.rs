//! Project automation: the commands that make the tables of docs/BENCHMARKS.md and
//! docs/studies. Each study and benchmark is declared in `outcrop-lab` (crates/lab), whose
//! modules say what each measures and against which peer; this binary only parses the
//! arguments (`args.rs`), turns them into the lab's configurations and hands its tables to
//! stdout and its progress to stderr. Run without arguments for the usage line.

mod args;

use anyhow::Result;
use args::*;
use outcrop_lab as lab;
use stats_alloc::StatsAlloc;
use std::alloc::System;

/// Counts every allocation, so benchmarks can measure the bytes a structure holds (bench-rap).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = lab::COUNTING;

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
    StudyRap(StudyRap),
    /// The path-profiling paper's §4 studies (accuracy against period and depth, overhead,
    /// Tables 2–4, Figures 5–6) on the compute workloads: a job per workload, every
    /// branch-record unit on one timed run beside the exact path counter.
    StudyPaths(StudyPaths),
    /// Per-path bias of the path estimators against the exact counts on one timed run of each
    /// program: which hot paths are over- or under-estimated, grouped by length, how they end,
    /// region size and flow (issue 55).
    PathsBias(PathsBias),
    /// The strata paper's §IV results (Tables 3–4, Figures 2–3, compression against zstd,
    /// capture slowdown against native and the bare machine): a job per workload.
    StudyStrata(StudyStrata),
    /// The relational profiling paper's resource and overhead study (§6, Figures 7–8,
    /// Table 6), or `prefetch` / `adaptive`: a job per workload and configuration.
    StudyRpa(StudyRpa),
    /// The branch-on-random paper's studies (accuracy, sensitivity, overhead, the
    /// microbenchmark): a job per program, builds cached by what makes them.
    StudyBrr(StudyBrr),
    /// One `outcrop run` with every mechanism against three runs with one each.
    BenchCompose(BenchCompose),
    /// The exact profile's cost: `outcrop run` with and without it, timed and untimed.
    BenchProfile(BenchProfile),
    /// This build's machine against a baseline build's, mode by mode (MIPS).
    BenchLayers(BenchLayers),
    /// The timing model's cost: MIPS without timing and under each preset.
    BenchTiming(BenchTiming),
    /// The RPA's cost and accuracy per workload (edge and CPI queries, the GC guest).
    BenchRpa(BenchRpa),
    /// Whole-program capture: file sizes against zstd and xz, capture and replay speed.
    BenchWpp(BenchWpp),
    /// Hostile inputs: crafted programs and files against a baseline build (time, memory,
    /// how each ended).
    BenchHostile(BenchHostile),
    /// RAP against exact hash maps (speed, bytes held, accuracy), and `outcrop rap` end to end.
    BenchRap(BenchRap),
    /// Builds Lua, SQLite and zstd for riscv64 from the C sources vendored in crates (lua-src,
    /// libsqlite3-sys, zstd-sys): the real programs of the studies' and benchmarks' rows.
    RealPrograms(RealPrograms),
    /// Worst-case RAP tree sizes by branching factor and merge ratio.
    Bounds,
    /// The machine against qemu-riscv64-static on every bundled workload.
    BenchExec(BenchExec),
    /// Observed runs (exact profile, capture, branch records) under the compiling tier
    /// against qemu-user with a block-counting plugin, on programs of your own.
    BenchObserved(BenchObserved),
    /// Threaded programs against qemu-riscv64-static, and the scheduler's cost per switch.
    BenchThreads(BenchThreads),
    /// The timing model's cache misses against valgrind's cachegrind on native builds.
    Cachegrind(Cachegrind),
    /// A study end to end: one job at a time, on every core, as a Slurm job array.
    BenchStudies(BenchStudies),
}

fn main() -> Result<()> {
    use clap::Parser;
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr());
    let (out, log) = (&mut stdout, &mut stderr);
    let done = match Cli::parse().command {
        Task::StudyRap(a) => lab::study_rap::run(a.into(), out, log),
        Task::StudyPaths(a) => lab::study_paths::run(a.into(), out, log),
        Task::PathsBias(a) => lab::paths_bias::run(a.into(), out, log),
        Task::StudyStrata(a) => lab::study_strata::run(a.into(), out, log),
        Task::StudyRpa(a) => lab::study_rpa::run(a.into(), out, log),
        Task::StudyBrr(a) => lab::study_brr::run(a.into(), out, log),
        Task::BenchCompose(a) => lab::bench_compose::run(a.into(), out),
        Task::BenchProfile(a) => lab::bench_profile::run(a.into(), out),
        Task::BenchLayers(a) => lab::bench_layers::run(a.into(), out),
        Task::BenchTiming(a) => lab::bench_timing::run(a.into(), out),
        Task::BenchRpa(a) => lab::bench_rpa::run(a.into(), out),
        Task::BenchWpp(a) => lab::bench_wpp::run(a.into(), out, log),
        Task::BenchHostile(a) => lab::bench_hostile::run(a.into(), out),
        Task::BenchRap(a) => lab::bench_rap::run(a.into(), out),
        Task::RealPrograms(a) => lab::real_programs::run(a.into(), out, log),
        Task::Bounds => lab::bench_rap::bounds(out),
        Task::BenchExec(a) => lab::bench_exec::run(a.into(), out),
        Task::BenchObserved(a) => lab::bench_observed::run(a.into(), out),
        Task::BenchThreads(a) => lab::bench_threads::run(a.into(), out),
        Task::Cachegrind(a) => lab::cachegrind::run(a.into(), out, log),
        Task::BenchStudies(a) => lab::bench_studies::run(a.into(), out),
    };
    match done {
        // a closed pipe (`xtask … | head`) ends quietly
        Err(lab::Error::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}
