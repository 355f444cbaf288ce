//! The tasks' options: one clap struct per task, each turned into its `outcrop-lab`
//! configuration exactly once (`From`), so that nothing below this binary sees clap.

#![allow(missing_docs)]

use outcrop_lab as lab;
use std::path::PathBuf;

/// Options of every study.
#[derive(clap::Args, Debug, Clone)]
pub struct StudyArgs {
    /// Workloads to run (default: the compute workloads of workloads/manifest.toml).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub workloads: Vec<String>,
    /// Jobs at once on this machine (default: every core).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub jobs: usize,
    /// Where the records go (one JSON file per job, in DIR/STUDY/); a later run resumes
    /// with the jobs that have none, and directories from several machines merge by copying.
    #[arg(long, value_name = "DIR", default_value = "target/studies")]
    pub results: PathBuf,
    /// Drop the study's records first and run every job.
    #[arg(long)]
    pub fresh: bool,
    /// Drop the failed records first, so that their jobs run again.
    #[arg(long)]
    pub retry_failed: bool,
    /// Run the missing jobs as a Slurm job array (one task per job, records to --results,
    /// which every node must reach), wait for it, then make the tables.
    #[arg(long)]
    pub slurm: bool,
    /// With --slurm: only write the sbatch script (DIR/slurm/STUDY.sbatch) for a real
    /// cluster; run the study again afterwards to make the tables from the records.
    #[arg(long, requires = "slurm")]
    pub slurm_script: bool,
    /// With --slurm: return once the array is queued.
    #[arg(long, requires = "slurm")]
    pub no_wait: bool,
    /// With --slurm: the partition.
    #[arg(long, value_name = "NAME", requires = "slurm")]
    pub partition: Option<String>,
    /// With --slurm: the time limit per task (e.g. 01:00:00).
    #[arg(long, value_name = "TIME", requires = "slurm")]
    pub time: Option<String>,
    /// With --slurm: memory per task (e.g. 4G).
    #[arg(long, value_name = "MEM", requires = "slurm")]
    pub mem: Option<String>,
    /// Run only job N (what each Slurm array task does).
    #[arg(long, value_name = "N", hide = true)]
    pub task: Option<usize>,
}

impl From<StudyArgs> for lab::sweep::SweepOptions {
    fn from(a: StudyArgs) -> Self {
        Self {
            workloads: a.workloads,
            jobs: a.jobs,
            results: a.results,
            fresh: a.fresh,
            retry_failed: a.retry_failed,
            slurm: a.slurm,
            slurm_script: a.slurm_script,
            no_wait: a.no_wait,
            partition: a.partition,
            time: a.time,
            mem: a.mem,
            task: a.task,
            command: std::env::current_exe()
                .map(|e| e.to_string_lossy().into_owned())
                .into_iter()
                .chain(std::env::args().skip(1))
                .collect(),
        }
    }
}

/// Options of every benchmark.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Timed runs of each configuration (alternating, so that drift hits each alike).
    #[arg(long, value_name = "R", default_value_t = 5)]
    pub runs: usize,
    /// Workloads (default: the compute workloads of workloads/manifest.toml).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub workloads: Vec<String>,
}

impl From<BenchArgs> for lab::bench::BenchOptions {
    fn from(a: BenchArgs) -> Self {
        Self {
            runs: a.runs,
            workloads: a.workloads,
        }
    }
}

/// Options of `study-rap`.
#[derive(clap::Args, Debug)]
pub struct StudyRap {
    #[command(flatten)]
    study: StudyArgs,
    /// Write Figure 6 (the code tree's size over each run) to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

impl From<StudyRap> for lab::study_rap::Config {
    fn from(a: StudyRap) -> Self {
        Self {
            study: a.study.into(),
            svg: a.svg,
        }
    }
}

/// Options of `paths-bias`.
#[derive(clap::Args, Debug)]
pub struct PathsBias {
    /// Programs: bundled workloads, or `sqlite`, `lua-fib`, `zstd-3` (built by
    /// `xtask real-programs`, which this runs first).
    #[arg(required = true)]
    workloads: Vec<String>,
    /// Record depth.
    #[arg(long, default_value_t = 16)]
    entries: usize,
    /// Sampling periods in cycles (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "50000,750000")]
    periods: Vec<u64>,
    /// Seeds per period.
    #[arg(long, default_value_t = 5)]
    seeds: u64,
}

impl From<PathsBias> for lab::paths_bias::Config {
    fn from(a: PathsBias) -> Self {
        lab::paths_bias::Config {
            workloads: a.workloads,
            entries: a.entries,
            periods: a.periods,
            seeds: a.seeds,
        }
    }
}

/// Options of `study-paths`.
#[derive(clap::Args, Debug)]
pub struct StudyPaths {
    #[command(flatten)]
    study: StudyArgs,
    /// Write Figure 6 (accuracy against the sampling period) to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Leave out the programs nobody here wrote (SQLite, Lua, zstd; built by
    /// `xtask real-programs`, which this runs first).
    #[arg(long)]
    no_real: bool,
}

impl From<StudyPaths> for lab::study_paths::Config {
    fn from(a: StudyPaths) -> Self {
        Self {
            study: a.study.into(),
            svg: a.svg,
            no_real: a.no_real,
        }
    }
}

/// Options of `study-strata`.
#[derive(clap::Args, Debug)]
pub struct StudyStrata {
    #[command(flatten)]
    study: StudyArgs,
    /// Timed runs of each program (at least 5).
    #[arg(long, value_name = "R", default_value_t = 5)]
    runs: usize,
    /// Write strata-fig2.svg and strata-fig3.svg into DIR.
    #[arg(long, value_name = "DIR")]
    svg_dir: Option<PathBuf>,
}

impl From<StudyStrata> for lab::study_strata::Config {
    fn from(a: StudyStrata) -> Self {
        Self {
            study: a.study.into(),
            runs: a.runs,
            svg_dir: a.svg_dir,
        }
    }
}

/// Options of `study-rpa`.
#[derive(clap::Args, Debug)]
pub struct StudyRpa {
    /// `prefetch` (Figure 2b's loop closed) or `adaptive` (the adaptive rate); default: the
    /// resource and overhead study (Figures 7, 8, Table 6).
    #[arg(value_name = "STUDY", value_parser = ["prefetch", "adaptive"])]
    which: Option<String>,
    #[command(flatten)]
    study: StudyArgs,
    /// Write rpa-fig7.svg and rpa-fig8.svg into DIR (default docs/studies, only when every
    /// workload ran).
    #[arg(long, value_name = "DIR")]
    svg_dir: Option<std::path::PathBuf>,
}

impl From<StudyRpa> for lab::study_rpa::Config {
    fn from(a: StudyRpa) -> Self {
        Self {
            which: a.which,
            study: a.study.into(),
            svg_dir: a.svg_dir,
        }
    }
}

/// Options of `study-brr`.
#[derive(clap::Args, Debug)]
pub struct StudyBrr {
    #[command(flatten)]
    study: StudyArgs,
    /// Leave out the overhead runs (Figure 12).
    #[arg(long)]
    no_overhead: bool,
    /// Leave out the microbenchmark (Figures 13, 14).
    #[arg(long)]
    no_micro: bool,
    /// Write the plots into DIR (default docs/studies, only when every program ran).
    #[arg(long, value_name = "DIR")]
    svg_dir: Option<PathBuf>,
    /// Where assembly and builds are cached (default: target/study-brr/KEY, KEY a hash of
    /// this program, the C sources and the cross compiler).
    #[arg(long, value_name = "DIR")]
    work: Option<PathBuf>,
    /// Only the every-sampler-on-the-same-run tables.
    #[arg(long)]
    same_run_only: bool,
    /// Only the LFSR's correlation table.
    #[arg(long)]
    correlation_only: bool,
}

impl From<StudyBrr> for lab::study_brr::Config {
    fn from(a: StudyBrr) -> Self {
        Self {
            study: a.study.into(),
            no_overhead: a.no_overhead,
            no_micro: a.no_micro,
            svg_dir: a.svg_dir,
            work: a.work,
            same_run_only: a.same_run_only,
            correlation_only: a.correlation_only,
        }
    }
}

/// Options of `bench-compose`.
#[derive(clap::Args, Debug)]
pub struct BenchCompose {
    #[command(flatten)]
    bench: BenchArgs,
}

impl From<BenchCompose> for lab::bench_compose::Config {
    fn from(a: BenchCompose) -> Self {
        Self {
            bench: a.bench.into(),
        }
    }
}

/// Options of `bench-profile`.
#[derive(clap::Args, Debug)]
pub struct BenchProfile {
    #[command(flatten)]
    bench: BenchArgs,
    /// Measure one program of your own instead: run in DIR with RUN-ARGS (what follows `--`,
    /// as `outcrop run` takes it).
    #[arg(long, value_name = "DIR", requires = "run_args")]
    dir: Option<PathBuf>,
    /// With --dir: the program and its options for `outcrop run`.
    #[arg(last = true, value_name = "RUN-ARGS")]
    run_args: Vec<String>,
}

impl From<BenchProfile> for lab::bench_profile::Config {
    fn from(a: BenchProfile) -> Self {
        Self {
            bench: a.bench.into(),
            dir: a.dir,
            run_args: a.run_args,
        }
    }
}

/// Options of `bench-layers`.
#[derive(clap::Args, Debug)]
pub struct BenchLayers {
    #[command(flatten)]
    bench: BenchArgs,
    /// The release `outcrop` of the build to compare against (e.g. a worktree of an older
    /// commit).
    #[arg(long, value_name = "OUTCROP")]
    baseline: PathBuf,
    /// Which modes: bare, counter, timing.
    #[arg(long, value_delimiter = ',', default_values_t = ["bare".to_string(), "counter".into(), "timing".into()],
          value_parser = ["bare", "counter", "timing"])]
    modes: Vec<String>,
}

impl From<BenchLayers> for lab::bench_layers::Config {
    fn from(a: BenchLayers) -> Self {
        Self {
            bench: a.bench.into(),
            baseline: a.baseline,
            modes: a.modes,
        }
    }
}

/// Options of `bench-timing`.
#[derive(clap::Args, Debug)]
pub struct BenchTiming {
    #[command(flatten)]
    bench: BenchArgs,
}

impl From<BenchTiming> for lab::bench_timing::Config {
    fn from(a: BenchTiming) -> Self {
        Self {
            bench: a.bench.into(),
        }
    }
}

/// Options of `bench-rpa`.
#[derive(clap::Args, Debug)]
pub struct BenchRpa {
    #[command(flatten)]
    bench: BenchArgs,
}

impl From<BenchRpa> for lab::bench_rpa::Config {
    fn from(a: BenchRpa) -> Self {
        Self {
            bench: a.bench.into(),
        }
    }
}

/// Options of `bench-wpp`.
#[derive(clap::Args, Debug)]
pub struct BenchWpp {
    #[command(flatten)]
    bench: BenchArgs,
    /// Leave out the peers (zstd, xz).
    #[arg(long)]
    no_peers: bool,
    /// The programs nobody here wrote instead of the workloads (`xtask real-programs`, built
    /// first): Lua 5.5.1 running fib.lua, SQLite 3.54.1, zstd 1.5.7 at level 3.
    #[arg(long)]
    real: bool,
}

impl From<BenchWpp> for lab::bench_wpp::Config {
    fn from(a: BenchWpp) -> Self {
        Self {
            bench: a.bench.into(),
            no_peers: a.no_peers,
            real: a.real,
        }
    }
}

/// Options of `bench-hostile`.
#[derive(clap::Args, Debug)]
pub struct BenchHostile {
    /// Runs per case.
    #[arg(long, value_name = "R", default_value_t = 5)]
    runs: usize,
    /// A baseline build's release `outcrop` to run every case beside.
    #[arg(long, value_name = "OUTCROP")]
    baseline: Option<PathBuf>,
    /// Seconds before a run is killed.
    #[arg(long, value_name = "S", default_value_t = 60)]
    timeout: u64,
}

impl From<BenchHostile> for lab::bench_hostile::Config {
    fn from(a: BenchHostile) -> Self {
        Self {
            runs: a.runs,
            baseline: a.baseline,
            timeout: a.timeout,
        }
    }
}

/// Options of `bench-rap`.
#[derive(clap::Args, Debug)]
pub struct BenchRap {
    /// Events per synthetic stream.
    #[arg(long, value_name = "N", default_value_t = 10_000_000)]
    events: usize,
    /// Timed runs of each measurement.
    #[arg(long, value_name = "R", default_value_t = 5)]
    runs: usize,
    /// Only the memory held by stream length (RAP, exact first, a presized FxHashMap).
    #[arg(long)]
    memory_only: bool,
}

impl From<BenchRap> for lab::bench_rap::RapBenchConfig {
    fn from(a: BenchRap) -> Self {
        Self {
            events: a.events,
            runs: a.runs,
            memory_only: a.memory_only,
        }
    }
}

/// Options of `real-programs`.
#[derive(clap::Args, Debug)]
pub struct RealPrograms {
    /// Where the programs and their inputs go (default target/real-programs).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

impl From<RealPrograms> for lab::real_programs::Config {
    fn from(a: RealPrograms) -> Self {
        Self { dir: a.dir }
    }
}

/// `outcrop exec` on every bundled workload (no observer, class counter) against
/// `qemu-riscv64-static` on the same binaries, in the same run. Needs a release build of
/// `outcrop` (`cargo build --release`) and qemu-user-static. The `micro_*` programs are left
/// out: they are validation inputs for the timing model (one branch or access pattern each),
/// not compute workloads, and would skew the geometric means.
/// Options of `bench-exec`.
#[derive(clap::Args, Debug)]
pub struct BenchExec {
    #[command(flatten)]
    bench: BenchArgs,
    /// Instead of the bundled workloads, these programs (each `PROG ARGS...` quoted as one
    /// argument, run in --dir with it granted read-write), against qemu with the same
    /// `--sysroot` (qemu's -L) when given: programs the project did not write.
    #[arg(long = "program", value_name = "'PROG ARGS'")]
    programs: Vec<String>,
    /// The directory the --program commands run in.
    #[arg(long, value_name = "DIR")]
    dir: Option<std::path::PathBuf>,
    /// Where the --program commands' libraries are (dynamically linked programs).
    #[arg(long, value_name = "DIR")]
    sysroot: Option<std::path::PathBuf>,
    /// With --program: keep one host core busy with another job (a spinning thread) while
    /// measuring, as on a shared 2-core machine.
    #[arg(long)]
    busy: bool,
}

impl From<BenchExec> for lab::bench_exec::Config {
    fn from(a: BenchExec) -> Self {
        Self {
            bench: a.bench.into(),
            programs: a.programs,
            dir: a.dir,
            sysroot: a.sysroot,
            busy: a.busy,
        }
    }
}

/// Options of `bench-observed`.
#[derive(clap::Args, Debug)]
pub struct BenchObserved {
    /// Runs of each mode per program.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// The programs (each `PROG ARGS...` quoted as one argument), run in --dir with it
    /// granted read-write.
    #[arg(long = "program", value_name = "'PROG ARGS'", required = true)]
    programs: Vec<String>,
    /// The directory the programs run in.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
}

impl From<BenchObserved> for lab::bench_observed::Config {
    fn from(a: BenchObserved) -> Self {
        Self {
            runs: a.runs,
            programs: a.programs,
            dir: a.dir,
        }
    }
}

/// Options.
#[derive(clap::Args, Debug)]
pub struct BenchThreads {
    #[command(flatten)]
    bench: BenchArgs,
}

impl From<BenchThreads> for lab::bench_threads::Config {
    fn from(a: BenchThreads) -> Self {
        Self {
            bench: a.bench.into(),
        }
    }
}

/// Options of the `cachegrind` task.
#[derive(clap::Args, Debug)]
pub struct Cachegrind {
    /// Workloads to compare (default: the data-bound ones the table uses).
    #[arg(long, value_delimiter = ',', value_name = "A,B",
          default_values_t = lab::cachegrind::DEFAULT_WORKLOADS.iter().map(|s| s.to_string()))]
    workloads: Vec<String>,
    /// Print the table as JSON.
    #[arg(long)]
    json: bool,
}

impl From<Cachegrind> for lab::cachegrind::CachegrindConfig {
    fn from(a: Cachegrind) -> Self {
        Self {
            workloads: a.workloads,
            json: a.json,
        }
    }
}

/// Options of `bench-studies`.
#[derive(clap::Args, Debug)]
pub struct BenchStudies {
    #[command(flatten)]
    bench: BenchArgs,
    /// An older xtask whose `study-rap --jobs 1 --fresh` is the sequential baseline.
    #[arg(long, value_name = "XTASK")]
    baseline: Option<PathBuf>,
    /// Leave out the Slurm runs.
    #[arg(long)]
    no_slurm: bool,
}

impl From<BenchStudies> for lab::bench_studies::Config {
    fn from(a: BenchStudies) -> Self {
        Self {
            bench: a.bench.into(),
            baseline: a.baseline,
            no_slurm: a.no_slurm,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cachegrind_options() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            c: Cachegrind,
        }
        use clap::Parser;
        let parse = |s: &[&str]| {
            Cli::try_parse_from(std::iter::once("x").chain(s.iter().copied()))
                .map(|c| lab::cachegrind::CachegrindConfig::from(c.c))
        };
        let c = parse(&[]).unwrap();
        assert_eq!(c.workloads, lab::cachegrind::DEFAULT_WORKLOADS);
        assert!(!c.json);
        let c = parse(&["--json", "--workloads", "a,b"]).unwrap();
        assert_eq!(c.workloads, ["a", "b"]);
        assert!(c.json);
        assert!(parse(&["--workloads"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
    }
}
