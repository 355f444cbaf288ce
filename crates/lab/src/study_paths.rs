//! `cargo run --release -p xtask -- study-paths [--workloads a,b] [--svg FILE]`: the path
//! paper's §4 studies on every bundled compute workload (docs/studies/paths.md).
//!
//! Each workload runs once under the default timing model, with every branch-record unit of
//! the study attached to that one run and the exact path counter beside them: the units only
//! observe, so they all see the same execution as the reference. Every cell is measured with
//! [`SEEDS`] seeds (independent random periods) and reported as the median with min–max.
//! Units per seed: buffer depths 4, 8, 16, 32 × the paper's periods 50 K…10 M cycles plus
//! 750 K (the 1% point of the `perf-lbr` cost preset); the same depths at the paper's sample
//! count ([`PAPER_SAMPLES`] samples per run, periods in instructions); one with injected
//! imprecision and one recording all branches. Five more seeds at 4 entries and 1 M cycles
//! aggregate runs (Figure 5). Samples are analyzed the paper's way and with our extensions
//! (stitch + edge weights; each alone at the operating points) and scored against the exact
//! profile. Overhead is modelled under both cost presets (`outcrop_sampling::CostModel`).
//! Prints Markdown tables; writes Figure 6 as SVG.

use crate::sweep::SweepOptions;
use crate::{Context, Result};
use outcrop_paths::{
    accuracy, analyze, Accuracy, Cfg, ExactCounter, Filter, IndexCache, LbrConfig, LbrUnit,
    Options, PathKey, PeriodUnit, Regions, Samples, Weighting, HOT,
};
use outcrop_sampling::CostModel;
use outcrop_studies::chart::{grid, Panel, Series};
use outcrop_studies::stats::pct;
use outcrop_studies::stats::{median, Spread};
use outcrop_studies::{cells, table::Table};
use outcrop_studies::{Job, Manifest, Study};
use outcrop_timing::Timed;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const PERIODS: [u64; 9] = [
    50_000, 100_000, 200_000, 500_000, 750_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000,
];
const ENTRIES: [usize; 4] = [4, 8, 16, 32];
/// Our operating point: the period at which `perf-lbr` costs 1% (750 K cycles).
const OURS: u64 = 750_000;
/// The paper's operating point: 10 M cycles, ~1% on its Itanium 2 (`itanium2-perfmon`).
const PAPERS: u64 = 10_000_000;
/// Where the old tables stood (1 M cycles), kept for the aggregation and Table 2/3 studies.
const OPERATING: u64 = 1_000_000;
/// Seeds per cell: enough for a worst decile (the 2nd lowest of 15) beside the median.
const SEEDS: u64 = 15;
/// Seeds of Figure 5's aggregation (then [`EXTRA`] more runs).
const FIG5_SEEDS: u64 = 5;
/// Extra seeds for Figure 5 (aggregating runs): SEEDS + EXTRA runs in all.
const EXTRA: u64 = 5;
/// Samples per run at the paper's sample count. Its SPEC 2000 reference runs on a 1–1.5 GHz
/// Itanium 2 take roughly 10^11–10^12 cycles, so its 10 M-cycle period yields 10^4–10^5
/// samples a run; we take the low end. Our runs are 10^8 cycles: at 10 M we get ~20 samples.
const PAPER_SAMPLES: u64 = 20_000;
const MAX_PATHS: u64 = 256;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
enum Kind {
    Sweep(u64),
    Count(u64),
    Extra(u64),
    Imprecise(u64),
    AllBranches(u64),
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
enum Mode {
    Paper,
    Stitch,
    Edges,
    Both,
}

const MODES: [Mode; 4] = [Mode::Paper, Mode::Stitch, Mode::Edges, Mode::Both];

impl Mode {
    fn options(self) -> (Options, Weighting) {
        let stitch = matches!(self, Mode::Stitch | Mode::Both);
        let w = if matches!(self, Mode::Edges | Mode::Both) {
            Weighting::Edges
        } else {
            Weighting::Equal
        };
        (
            Options {
                stitch,
                ..Options::default()
            },
            w,
        )
    }
}

/// What the tables read of the paper's analysis of one unit's samples.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct PaperSummary {
    /// Table 2: mean partial-path lengths (initial, extended, split at functions, and back
    /// edges, fragments), discarded samples, cuts.
    lengths: [f64; 5],
    discarded: u64,
    breaks: u64,
    /// Table 3: samples by function boundaries spanned (0..3, 4+).
    spans: [u64; 5],
    /// §4.6: mean matching ratio over all fragments.
    mean_matching_ratio: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct UnitResult {
    kind: Kind,
    entries: usize,
    period: u64,
    samples: u64,
    /// Modelled overhead under `perf-lbr` and `itanium2-perfmon`.
    overhead: [f64; 2],
    acc: Vec<(Mode, Accuracy)>,
    paper: PaperSummary,
    estimated_paths: Vec<PathKey>,
}

impl UnitResult {
    fn acc(&self, mode: Mode) -> Option<&Accuracy> {
        self.acc.iter().find(|(m, _)| *m == mode).map(|(_, a)| a)
    }
}

/// One workload's job output.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Workload {
    name: String,
    instructions: u64,
    cycles: u64,
    regions: usize,
    exact_paths: u64,
    unplaced: u64,
    hot: Accuracy,
    units: Vec<UnitResult>,
    /// Per hot region (by exact flow): (flow share, matching ratio) at the operating point.
    region_ratios: Vec<(f64, f64)>,
}

fn units(instructions: u64) -> Vec<(Kind, LbrConfig)> {
    let mut v = Vec::new();
    let base = LbrConfig {
        unit: PeriodUnit::Cycles,
        random: true,
        ..LbrConfig::default()
    };
    for s in 0..SEEDS {
        let seed = |k: u64| 1 + 1000 * s + k;
        for (i, &e) in ENTRIES.iter().enumerate() {
            for (j, &p) in PERIODS.iter().enumerate() {
                v.push((
                    Kind::Sweep(s),
                    LbrConfig {
                        entries: e,
                        period: p,
                        seed: seed((i * PERIODS.len() + j) as u64),
                        ..base.clone()
                    },
                ));
            }
            v.push((
                Kind::Count(s),
                LbrConfig {
                    entries: e,
                    period: (instructions / PAPER_SAMPLES).max(1),
                    unit: PeriodUnit::Instructions,
                    seed: seed(500 + i as u64),
                    ..base.clone()
                },
            ));
        }
        v.push((
            Kind::Imprecise(s),
            LbrConfig {
                entries: 4,
                period: OPERATING,
                seed: seed(600),
                skew: 0.1,
                drop_target: 0.05,
                ..base.clone()
            },
        ));
        v.push((
            Kind::AllBranches(s),
            LbrConfig {
                entries: 4,
                period: OPERATING,
                seed: seed(700),
                filter: Filter::All,
                ..base.clone()
            },
        ));
    }
    for s in 0..EXTRA {
        v.push((
            Kind::Extra(s),
            LbrConfig {
                entries: 4,
                period: OPERATING,
                seed: 90_000 + s,
                ..base.clone()
            },
        ));
    }
    v
}

/// The analyses a unit gets: the paper's and ours (both extensions) always; each extension
/// alone at the operating points of 4 and 16 entries.
fn modes_for(kind: Kind, c: &LbrConfig) -> &'static [Mode] {
    match kind {
        Kind::Sweep(_)
            if [OURS, OPERATING, PAPERS].contains(&c.period) && [4, 16].contains(&c.entries) =>
        {
            &MODES
        }
        Kind::Sweep(_) | Kind::Count(_) => &[Mode::Paper, Mode::Both],
        _ => &[Mode::Paper],
    }
}

/// Options of `study-paths`.
#[derive(Debug, Clone)]
pub struct Config {
    /// The sweep: workloads, jobs, results, Slurm.
    pub study: SweepOptions,
    /// Write Figure 6 (accuracy against the sampling period) to FILE.
    pub svg: Option<PathBuf>,
    /// Leave out the programs nobody here wrote (SQLite, Lua, zstd; built by
    /// `xtask real-programs`, which this runs first).
    pub no_real: bool,
}

/// The study: one job per workload, every unit of it on one run.
pub struct PathsStudy {
    /// Workload names (empty: the compute set).
    pub workloads: Vec<String>,
    /// The programs nobody here wrote (`xtask real-programs`) and which of them run.
    pub real: Option<(Manifest, Vec<String>)>,
}

/// The real programs of the study: a database, an interpreter, a compressor.
pub(crate) const REAL: [(&str, &str, &[&str]); 3] = [
    ("sqlite", "sqlite", &[]),
    ("lua-fib", "lua", &["fib.lua"]),
    ("zstd-3", "zstd", &["3", "input.txt"]),
];

impl Study for PathsStudy {
    type Params = ();
    type Output = Workload;

    fn name(&self) -> &str {
        "paths"
    }

    fn jobs(&self, m: &Manifest) -> Vec<Job<()>> {
        let mut jobs: Vec<Job<()>> = if self.workloads.is_empty() && self.real.is_some() {
            m.compute()
                .map(|w| Job::new(&w.name, &w.name, ()))
                .collect()
        } else {
            let bundled: Vec<String> = self
                .workloads
                .iter()
                .filter(|w| m.get(w).is_ok())
                .cloned()
                .collect();
            if bundled.is_empty() && !self.workloads.is_empty() {
                Vec::new()
            } else {
                m.select(&bundled)
                    .map(|ws| ws.iter().map(|w| Job::new(&w.name, &w.name, ())).collect())
                    .unwrap_or_default()
            }
        };
        if let Some((_, names)) = &self.real {
            jobs.extend(names.iter().map(|n| Job::new(n, n, ())));
        }
        jobs
    }

    fn run(
        &self,
        m: &Manifest,
        job: &Job<()>,
        scratch: &Path,
    ) -> outcrop_studies::Result<Workload> {
        let m = match &self.real {
            Some((r, _)) if r.get(&job.workload).is_ok() => r,
            _ => m,
        };
        study(m, &job.workload, scratch).map_err(|e| outcrop_studies::Error::Job(format!("{e:#}")))
    }
}

/// Runs a program once under the default timing model with a branch-record unit per config
/// and the exact path counter beside them: the recorder, the counter and the run's cycles.
pub(crate) fn timed_run<'a>(
    (spec, image): (&outcrop_run::ProgramSpec, &outcrop_run::ProgramImage),
    (cfg, regions): (&'a Cfg, &'a Regions),
    configs: impl Iterator<Item = &'a LbrConfig>,
    name: &str,
) -> Result<(outcrop_paths::BranchRecorder, ExactCounter<'a>, u64)> {
    let lbrs = configs
        .map(|c| LbrUnit::new(c.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let observers = (
        outcrop_paths::BranchRecorder::new(lbrs),
        ExactCounter::new(cfg, regions),
    );
    let mut m = outcrop_run::load_image(spec, image, Box::new(|_| {}))?;
    let mut timed = Timed::new(&outcrop_timing::Config::default(), observers);
    let outcome = m.run(&mut timed);
    crate::ensure!(
        matches!(outcome, outcrop_rv::Outcome::Exited(_)),
        "{name}: the run ended with {outcome:?}"
    );
    timed.finish();
    let cycles = timed.totals().cycles;
    let (s, ex) = timed.into_inner();
    Ok((s, ex, cycles))
}

fn study(manifest: &Manifest, name: &str, scratch: &Path) -> Result<Workload> {
    let spec = manifest.spec(name, scratch)?;
    let image = outcrop_run::ProgramImage::read(&spec.path())?;
    let cfg = Cfg::from_elf(image.bytes())?;
    let regions = Regions::new(&cfg, MAX_PATHS);
    // a bare run first, for the instruction count the sample-count units need
    let mut bare = outcrop_run::load_image(&spec, &image, Box::new(|_| {}))?;
    bare.run(&mut ());
    let specs = units(bare.instret);
    let (s, ex, cycles) = timed_run(
        (&spec, &image),
        (&cfg, &regions),
        specs.iter().map(|(_, c)| c),
        name,
    )?;
    let instructions = s.instructions;
    crate::ensure!(
        instructions == bare.instret,
        "{name}: the observed run retired {instructions} instructions, the bare run {}",
        bare.instret
    );
    let (exact, est) = ex.finish_run();
    let hot = accuracy(
        &exact,
        &exact.iter().map(|(k, v)| (*k, *v as f64)).collect(),
        HOT,
    );
    let mut cache = IndexCache::default();
    let mut out = Vec::new();
    let mut region_ratios = Vec::new();
    for ((kind, _), u) in specs.iter().zip(s.units) {
        let c = u.config().clone();
        let samples: Samples = u.into_samples(name, instructions, cycles);
        let mut acc = Vec::new();
        let mut paper = None;
        for &mode in modes_for(*kind, &c) {
            let (o, w) = mode.options();
            let a = analyze(&cfg, &regions, &samples, o, w, &mut cache);
            acc.push((mode, accuracy(&exact, &a.estimate.paths, HOT)));
            if mode == Mode::Paper {
                paper = Some(a);
            }
        }
        let paper = paper.context("no paper analysis")?;
        if *kind == Kind::Sweep(0) && c.entries == 4 && c.period == OPERATING {
            // matching ratio of the hottest regions
            let total: u64 = exact.values().sum();
            let mut flow: HashMap<u32, u64> = HashMap::new();
            for ((r, _), n) in &exact {
                *flow.entry(*r).or_default() += n;
            }
            let mut fl: Vec<(u32, u64)> = flow.into_iter().collect();
            fl.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            for (r, n) in fl.into_iter().take(5) {
                if let Some(ratio) = paper.estimate.matching_ratio(r) {
                    region_ratios.push((n as f64 / total.max(1) as f64, ratio));
                }
            }
        }
        let estimated_paths = paper.estimate.paths.keys().copied().collect();
        out.push(UnitResult {
            kind: *kind,
            entries: c.entries,
            period: c.period,
            samples: samples.meta.samples,
            overhead: [
                CostModel::PERF_LBR.overhead(samples.meta.samples, cycles),
                CostModel::ITANIUM2_PERFMON.overhead(samples.meta.samples, cycles),
            ],
            acc,
            paper: PaperSummary {
                lengths: {
                    let s = &paper.reconstruction.stats;
                    [
                        s.mean_initial(),
                        s.mean_extended(),
                        s.mean_func(),
                        s.mean_loop(),
                        s.mean_fragment(),
                    ]
                },
                discarded: paper.reconstruction.stats.discarded,
                breaks: paper.reconstruction.stats.breaks,
                spans: paper.reconstruction.stats.spans,
                mean_matching_ratio: paper.estimate.mean_matching_ratio(),
            },
            estimated_paths,
        });
    }
    Ok(Workload {
        name: name.to_string(),
        instructions,
        cycles,
        regions: regions.regions.len(),
        exact_paths: est.paths,
        unplaced: est.unplaced,
        hot,
        units: out,
        region_ratios,
    })
}

fn mean(v: impl IntoIterator<Item = f64>) -> f64 {
    let v: Vec<f64> = v.into_iter().collect();
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Median, worst decile and min–max of fractions, as percentages: `94.3 [93.0] (92.1–96.0)`.
fn spread(v: &[f64]) -> String {
    match Spread::of(v) {
        None => "–".into(),
        Some(s) => format!(
            "{} [{}] ({}–{})",
            pct(s.median, 1),
            pct(worst_decile(v), 1),
            pct(s.min, 1),
            pct(s.max, 1)
        ),
    }
}

/// The 10th percentile by nearest rank: the ⌈n/10⌉-th lowest value (the 2nd of 15).
fn worst_decile(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(v.len().div_ceil(10).saturating_sub(1))
        .copied()
        .unwrap_or(f64::NAN)
}

fn unit(w: &Workload, kind: Kind, e: usize, p: Option<u64>) -> Option<&UnitResult> {
    w.units
        .iter()
        .find(|u| u.kind == kind && u.entries == e && p.is_none_or(|p| u.period == p))
}

fn sweep(w: &Workload, e: usize, p: u64) -> Option<&UnitResult> {
    unit(w, Kind::Sweep(0), e, Some(p))
}

/// One value per seed.
fn per_seed(f: impl Fn(u64) -> Option<f64>) -> Vec<f64> {
    (0..SEEDS).filter_map(f).collect()
}

/// Wall accuracy of one workload's `kind(seed)` unit with `e` entries (and period `p`) under
/// `mode`, one value per seed.
fn wall(w: &Workload, kind: fn(u64) -> Kind, e: usize, p: Option<u64>, mode: Mode) -> Vec<f64> {
    per_seed(|s| {
        unit(w, kind(s), e, p)
            .and_then(|u| u.acc(mode))
            .map(|a| a.wall)
    })
}

/// The mean over workloads of the same, one value per seed.
fn wall_mean(
    ws: &[Workload],
    kind: fn(u64) -> Kind,
    e: usize,
    p: Option<u64>,
    mode: Mode,
) -> Vec<f64> {
    per_seed(|s| {
        let v: Vec<f64> = ws
            .iter()
            .filter_map(|w| {
                unit(w, kind(s), e, p)
                    .and_then(|u| u.acc(mode))
                    .map(|a| a.wall)
            })
            .collect();
        (v.len() == ws.len()).then(|| mean(v))
    })
}

/// The minimum over workloads of each workload's median.
fn wall_min(
    ws: &[Workload],
    kind: fn(u64) -> Kind,
    e: usize,
    p: Option<u64>,
    mode: Mode,
) -> (f64, String) {
    ws.iter()
        .map(|w| (median(&wall(w, kind, e, p, mode)), w.name.clone()))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap_or((0.0, String::new()))
}

/// `study-paths`: runs the sweep and writes the tables of docs/studies/paths.md to `out`.
pub fn run(
    args: Config,
    out: &mut dyn std::io::Write,
    log: &mut (dyn std::io::Write + Send),
) -> Result<()> {
    let manifest = crate::sweep::manifest()?;
    let is_real = |w: &String| REAL.iter().any(|r| r.0 == w);
    let real_names: Vec<String> = if args.no_real {
        Vec::new()
    } else if args.study.workloads.is_empty() {
        REAL.iter().map(|r| r.0.to_string()).collect()
    } else {
        args.study
            .workloads
            .iter()
            .filter(|w| is_real(w))
            .cloned()
            .collect()
    };
    let bundled: Vec<String> = args
        .study
        .workloads
        .iter()
        .filter(|w| !is_real(w))
        .cloned()
        .collect();
    manifest.select(&bundled)?;
    let study = PathsStudy {
        workloads: args.study.workloads.clone(),
        real: if real_names.is_empty() {
            None
        } else {
            Some((crate::real_programs::manifest(&REAL, log)?, real_names))
        },
    };
    let Some(records) = crate::sweep::run(&study, &manifest, &args.study, log)? else {
        return Ok(());
    };
    let results: Vec<Workload> = records
        .into_iter()
        .map(|r| r.output.ok_or_else(|| crate::err!("{}: no output", r.job)))
        .collect::<Result<_>>()?;
    let (real, ours): (Vec<Workload>, Vec<Workload>) =
        results.into_iter().partition(|w| is_real(&w.name));
    if !ours.is_empty() {
        print_tables(&ours, out)?;
    }
    if !real.is_empty() {
        print_real(&real, out)?;
    }
    if let Some(f) = args.svg {
        std::fs::write(&f, plot_fig6(&ours)?)
            .with_context(|| format!("writing {}", f.display()))?;
    }
    Ok(())
}

/// The programs nobody here wrote: our operating point with 16 and 32 entries.
fn print_real(ws: &[Workload], out: &mut dyn std::io::Write) -> Result<()> {
    say!(out, "\n### Programs this project did not write (`xtask real-programs`), at {OURS} cycles (1% under perf-lbr)\n");
    say!(
        out,
        "Cells: Wall accuracy, median [worst decile] (min–max) over {SEEDS} seeds.\n"
    );
    let mut t = Table::new()
        .left("program")
        .right("instructions")
        .right("cycles")
        .right(format!("samples per run at {OURS}"))
        .right("hot paths (% of flow)")
        .right("16: paper")
        .right("16: both")
        .right("32: paper")
        .right("32: both")
        .right("overhead (perf-lbr)");
    for w in ws {
        let samples = median(&per_seed(|s| {
            unit(w, Kind::Sweep(s), 16, Some(OURS)).map(|u| u.samples as f64)
        }));
        let overhead = median(&per_seed(|s| {
            unit(w, Kind::Sweep(s), 16, Some(OURS)).map(|u| u.overhead[0])
        }));
        t.row(cells![
            w.name,
            w.instructions,
            w.cycles,
            format!("{samples:.0}"),
            format!("{} ({}%)", w.hot.hot_paths, pct(w.hot.hot_flow, 1)),
            spread(&wall(w, Kind::Sweep, 16, Some(OURS), Mode::Paper)),
            spread(&wall(w, Kind::Sweep, 16, Some(OURS), Mode::Both)),
            spread(&wall(w, Kind::Sweep, 32, Some(OURS), Mode::Paper)),
            spread(&wall(w, Kind::Sweep, 32, Some(OURS), Mode::Both)),
            format!("{}%", pct(overhead, 1))
        ]);
    }
    write!(out, "{t}")?;
    say!(out, "\nThe same programs at other periods (16 entries, both extensions; samples per run and Wall accuracy):\n");
    let mut t = Table::new()
        .left("program")
        .rights(PERIODS.iter().map(|p| p.to_string()));
    for w in ws {
        let mut row = vec![w.name.clone()];
        for p in PERIODS {
            let n = median(&per_seed(|s| {
                unit(w, Kind::Sweep(s), 16, Some(p)).map(|u| u.samples as f64)
            }));
            let v = wall(w, Kind::Sweep, 16, Some(p), Mode::Both);
            row.push(format!(
                "{n:.0}: {} [{}]",
                pct(median(&v), 1),
                pct(worst_decile(&v), 1)
            ));
        }
        t.row(row);
    }
    write!(out, "{t}")?;
    Ok(())
}

fn print_tables(ws: &[Workload], out: &mut dyn std::io::Write) -> Result<()> {
    let seeds: Vec<String> = (0..SEEDS).map(|s| format!("{}", 1 + 1000 * s)).collect();
    say!(out,
        "Seeds: {SEEDS} per cell (unit seeds {}+k; Figure 5 adds {EXTRA} runs, seeds 90000–{}). Cells are the median over seeds, the worst decile in brackets (the 10th percentile by nearest rank: the 2nd lowest of 15) and min–max in parentheses; \"mean\" rows are the mean over workloads, per seed, then the same of those. Targets are judged on the worst decile.\n",
        seeds.join(", "),
        90_000 + EXTRA - 1
    );
    table4_runs(ws, out)?;
    fig6_period(ws, out)?;
    operating_points(ws, out)?;
    at_ours(ws, out)?;
    overlap(ws, out)?;
    table2_lengths(ws, out)?;
    table3_spans(ws, out)?;
    fig5_unique(ws, out)?;
    matching(ws, out)?;
    Ok(())
}

fn table4_runs(ws: &[Workload], out: &mut dyn std::io::Write) -> Result<()> {
    say!(out, "### Runs and hot paths (Table 4)\n");
    let mut t = Table::new()
        .left("workload")
        .right("instructions")
        .right("cycles")
        .right("regions")
        .right("path executions")
        .right("unplaced")
        .right("hot paths (≥ 0.125%)")
        .right("% of flow");
    for w in ws {
        t.row(cells![
            w.name,
            w.instructions,
            w.cycles,
            w.regions,
            w.exact_paths,
            w.unplaced,
            w.hot.hot_paths,
            pct(w.hot.hot_flow, 1)
        ]);
    }
    write!(out, "{t}")?;
    Ok(())
}

fn fig6_period(ws: &[Workload], out: &mut dyn std::io::Write) -> Result<()> {
    say!(
        out,
        "\n### Accuracy vs sampling period (Figure 6), paper method, mean over workloads\n"
    );
    let mut t = Table::new()
        .rights([
            "period (cycles)",
            "samples (mean)",
            "overhead, perf-lbr",
            "overhead, itanium2-perfmon",
        ])
        .rights(ENTRIES.iter().map(|e| format!("Wall, {e} entries")))
        .right("Wall, 16 entries + both extensions")
        .left("lowest workload, 16 + both");
    for p in PERIODS {
        let u4: Vec<&UnitResult> = ws.iter().filter_map(|w| sweep(w, 4, p)).collect();
        let mut row = cells![
            p,
            format!("{:.0}", mean(u4.iter().map(|u| u.samples as f64))),
            format!("{}%", pct(mean(u4.iter().map(|u| u.overhead[0])), 1)),
            format!("{}%", pct(mean(u4.iter().map(|u| u.overhead[1])), 1))
        ];
        for e in ENTRIES {
            row.push(spread(&wall_mean(ws, Kind::Sweep, e, Some(p), Mode::Paper)));
        }
        let (lo, who) = wall_min(ws, Kind::Sweep, 16, Some(p), Mode::Both);
        row.push(spread(&wall_mean(ws, Kind::Sweep, 16, Some(p), Mode::Both)));
        row.push(format!("{} {}", who, pct(lo, 1)));
        t.row(row);
    }
    write!(out, "{t}")?;
    // the headline: each side's operating point
    Ok(())
}

fn operating_points(ws: &[Workload], out: &mut dyn std::io::Write) -> Result<()> {
    say!(
        out,
        "\n### Operating points side by side: Wall accuracy per workload\n"
    );
    say!(out, "* **paper @ 10 M**: the paper's period and hardware (4 entries, its method); ~1% under `itanium2-perfmon`, {} samples per run on average here.", {
        let v: Vec<f64> = ws.iter().filter_map(|w| sweep(w, 4, PAPERS)).map(|u| u.samples as f64).collect();
        format!("{:.0}", mean(v))
    });
    let count_units: Vec<&UnitResult> = ws
        .iter()
        .filter_map(|w| unit(w, Kind::Count(0), 4, None))
        .collect();
    say!(out,
        "* **paper's sample count**: {PAPER_SAMPLES} samples per run (period = instructions ÷ {PAPER_SAMPLES}), what the paper's 10 M period yields on SPEC-length runs. On our short runs that many samples would cost {}% under `perf-lbr` and {}% under `itanium2-perfmon` (mean over workloads): the column separates the method from the run length; it is not an operating point.",
        pct(mean(count_units.iter().map(|u| u.overhead[0])), 1),
        pct(mean(count_units.iter().map(|u| u.overhead[1])), 1)
    );
    say!(
        out,
        "* **ours @ 750 K**: 1% under `perf-lbr` (7,500 cycles per sample).\n"
    );
    let mut t = Table::new()
        .left("workload")
        .right("paper @ 10 M: 4, paper")
        .right("paper's count: 4, paper")
        .right("paper's count: 16, both")
        .right("ours @ 750 K: 4, paper")
        .right("ours: 16, paper")
        .right("ours: 16, both")
        .right("ours: 32, both")
        .right("overhead @ 750 K (perf-lbr)");
    type Col = (fn(u64) -> Kind, usize, Option<u64>, Mode);
    let cols: [Col; 7] = [
        (Kind::Sweep, 4, Some(PAPERS), Mode::Paper),
        (Kind::Count, 4, None, Mode::Paper),
        (Kind::Count, 16, None, Mode::Both),
        (Kind::Sweep, 4, Some(OURS), Mode::Paper),
        (Kind::Sweep, 16, Some(OURS), Mode::Paper),
        (Kind::Sweep, 16, Some(OURS), Mode::Both),
        (Kind::Sweep, 32, Some(OURS), Mode::Both),
    ];
    for w in ws {
        let mut row = vec![w.name.clone()];
        for (k, e, p, m) in cols {
            row.push(spread(&wall(w, k, e, p, m)));
        }
        let overhead = median(&per_seed(|s| {
            unit(w, Kind::Sweep(s), 4, Some(OURS)).map(|u| u.overhead[0])
        }));
        row.push(format!("{}%", pct(overhead, 1)));
        t.row(row);
    }
    let mut row = vec!["**mean**".to_string()];
    for (k, e, p, m) in cols {
        row.push(format!("**{}**", spread(&wall_mean(ws, k, e, p, m))));
    }
    t.row(row);
    let mut row = vec!["**lowest workload (median)**".to_string()];
    for (k, e, p, m) in cols {
        let (v, who) = wall_min(ws, k, e, p, m);
        row.push(format!("{} {}", who, pct(v, 1)));
    }
    t.row(row);
    write!(out, "{t}")?;
    Ok(())
}

fn at_ours(ws: &[Workload], out: &mut dyn std::io::Write) -> Result<()> {
    say!(
        out,
        "\n### At {OURS} cycles (1% under perf-lbr): Wall accuracy per workload and method\n"
    );
    let mut t = Table::new()
        .left("workload")
        .right("4: paper")
        .right("4: stitch")
        .right("4: edge weights")
        .right("4: both")
        .right("16: paper")
        .right("16: stitch")
        .right("16: edge weights")
        .right("16: both")
        .right("4 @ 1 M: imprecise")
        .right("4 @ 1 M: all branches");
    let mut means: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); SEEDS as usize]; 10];
    for w in ws {
        let mut vals: Vec<Vec<f64>> = Vec::new();
        for e in [4, 16] {
            for m in MODES {
                vals.push(wall(w, Kind::Sweep, e, Some(OURS), m));
            }
        }
        vals.push(wall(w, Kind::Imprecise, 4, None, Mode::Paper));
        vals.push(wall(w, Kind::AllBranches, 4, None, Mode::Paper));
        let mut row = vec![w.name.clone()];
        for (i, v) in vals.iter().enumerate() {
            row.push(spread(v));
            for (s, x) in v.iter().enumerate() {
                means[i][s].push(*x);
            }
        }
        t.row(row);
    }
    let mut row = vec!["**mean**".to_string()];
    for c in &means {
        let v: Vec<f64> = c.iter().map(|x| mean(x.iter().copied())).collect();
        row.push(format!("**{}**", spread(&v)));
    }
    t.row(row);
    write!(out, "{t}")?;
    Ok(())
}

fn overlap(ws: &[Workload], out: &mut dyn std::io::Write) -> Result<()> {
    say!(out, "\n### Overlap at {OURS} cycles\n");
    let mut t = Table::new()
        .left("workload")
        .right("4: paper")
        .right("4: both")
        .right("16: paper")
        .right("16: both")
        .right("32: both");
    for w in ws {
        let ov = |e: usize, m: Mode| {
            spread(&per_seed(|s| {
                unit(w, Kind::Sweep(s), e, Some(OURS))
                    .and_then(|u| u.acc(m))
                    .map(|a| a.overlap)
            }))
        };
        t.row(cells![
            w.name,
            ov(4, Mode::Paper),
            ov(4, Mode::Both),
            ov(16, Mode::Paper),
            ov(16, Mode::Both),
            ov(32, Mode::Both)
        ]);
    }
    write!(out, "{t}")?;
    Ok(())
}

fn table2_lengths(ws: &[Workload], out: &mut dyn std::io::Write) -> Result<()> {
    say!(out,
        "\n### Partial path lengths in instructions (Table 2), 4 entries, {OPERATING} cycles, seed 1\n"
    );
    let mut t = Table::new()
        .left("workload")
        .right("initial")
        .right("extended")
        .right("split at functions")
        .right("and back edges")
        .right("fragments (and regions)")
        .right("discarded samples")
        .right("cuts");
    for w in ws {
        let Some(u) = sweep(w, 4, OPERATING) else {
            continue;
        };
        let p = &u.paper;
        t.row(cells![
            w.name,
            format!("{:.1}", p.lengths[0]),
            format!("{:.1}", p.lengths[1]),
            format!("{:.1}", p.lengths[2]),
            format!("{:.1}", p.lengths[3]),
            format!("{:.1}", p.lengths[4]),
            p.discarded,
            p.breaks
        ]);
    }
    write!(out, "{t}")?;
    Ok(())
}

fn table3_spans(ws: &[Workload], out: &mut dyn std::io::Write) -> Result<()> {
    say!(out,
        "\n### Samples by function boundaries spanned (Table 3), 4 entries, {OPERATING} cycles, seed 1\n"
    );
    let mut t = Table::new()
        .left("workload")
        .right("0")
        .right("1")
        .right("2")
        .right("3")
        .right("4+")
        .right("same with 16 entries: 0")
        .right("1")
        .right("2")
        .right("3")
        .right("4+");
    for w in ws {
        let (Some(a), Some(b)) = (sweep(w, 4, OPERATING), sweep(w, 16, OPERATING)) else {
            continue;
        };
        let x = a.paper.spans;
        let y = b.paper.spans;
        t.row(cells![
            w.name, x[0], x[1], x[2], x[3], x[4], y[0], y[1], y[2], y[3], y[4]
        ]);
    }
    write!(out, "{t}")?;
    Ok(())
}

fn fig5_unique(ws: &[Workload], out: &mut dyn std::io::Write) -> Result<()> {
    say!(out, "\n### Unique paths found when aggregating runs (Figure 5), 4 entries, {OPERATING} cycles\n");
    let total = FIG5_SEEDS + EXTRA;
    let mut t = Table::new()
        .left("workload")
        .rights((1..=total).map(|k| k.to_string()));
    for w in ws {
        let mut runs: Vec<&UnitResult> = (0..FIG5_SEEDS)
            .filter_map(|s| unit(w, Kind::Sweep(s), 4, Some(OPERATING)))
            .collect();
        runs.extend((0..EXTRA).filter_map(|s| unit(w, Kind::Extra(s), 4, None)));
        let mut seen: std::collections::HashSet<PathKey> = Default::default();
        let mut row = vec![w.name.clone()];
        for u in runs {
            seen.extend(u.estimated_paths.iter().copied());
            row.push(seen.len().to_string());
        }
        t.row(row);
    }
    write!(out, "{t}")?;
    Ok(())
}

fn matching(ws: &[Workload], out: &mut dyn std::io::Write) -> Result<()> {
    say!(out,
        "\n### Matching ratio of the five hottest regions (§4.6), 4 entries, {OPERATING} cycles, seed 1\n"
    );
    let mut t = Table::new()
        .left("workload")
        .right("mean over all fragments")
        .left("hottest regions: (share of flow, ratio)");
    for w in ws {
        let Some(u) = sweep(w, 4, OPERATING) else {
            continue;
        };
        let r: Vec<String> = w
            .region_ratios
            .iter()
            .map(|(f, r)| format!("({}%, {:.2})", pct(*f, 1), r))
            .collect();
        t.row(cells![
            w.name,
            format!("{:.2}", u.paper.mean_matching_ratio),
            r.join(" ")
        ]);
    }
    write!(out, "{t}")?;
    Ok(())
}

/// Figure 6: wall accuracy against the sampling period, one line per buffer depth (mean
/// over workloads, median of seeds).
fn plot_fig6(ws: &[Workload]) -> Result<String> {
    let series = ENTRIES
        .iter()
        .map(|&e| Series {
            name: format!("{e} entries"),
            points: PERIODS
                .iter()
                .map(|&p| {
                    let wall = wall_mean(ws, Kind::Sweep, e, Some(p), Mode::Paper);
                    (p as f64, 100.0 * median(&wall))
                })
                .collect(),
            ..Series::default()
        })
        .collect();
    let panel = Panel {
        title: "Wall accuracy vs sampling period (mean over workloads, median of seeds)".into(),
        x: "sampling period (cycles)".into(),
        y: "accuracy (%)".into(),
        log_x: true,
        series,
        ..Panel::default()
    };
    Ok(grid(&[panel], 1, (760, 480))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_decile_is_the_nearest_rank_10th_percentile() {
        let v: Vec<f64> = (1..=15).rev().map(f64::from).collect();
        assert_eq!(worst_decile(&v), 2.0, "2nd lowest of 15");
        assert_eq!(worst_decile(&[0.9, 0.5]), 0.5, "1st of 2");
        assert_eq!(
            worst_decile(&(1..=20).map(f64::from).collect::<Vec<_>>()),
            2.0
        );
        assert!(worst_decile(&[]).is_nan());
        assert_eq!(spread(&[0.95, 0.9, 0.99]), "95.0 [90.0] (90.0–99.0)");
    }
}
