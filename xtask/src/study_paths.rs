//! `cargo run --release -p xtask -- study-paths [--workloads a,b] [--svg FILE]`: the path
//! paper's §4 studies on the bundled workloads (docs/studies/paths.md).
//!
//! Each workload runs once under the default timing model, with every branch-record unit of
//! the study attached to that one run, and the exact path counter beside them: the units only
//! observe, so they all see the same execution as the reference. Units: buffer depths 4, 8,
//! 16, 32 × periods 50K…10M cycles (random periods); nine more seeds at 4 entries and 1M
//! cycles (Figure 5: aggregating runs); one with injected imprecision and one recording all
//! branches. Every unit's samples are analyzed four ways (paper; stitch; edge weights; both)
//! and scored against the exact profile. Prints Markdown tables; writes Figure 6 as SVG.

use anyhow::{bail, Context, Result};
use outcrop_paths::{
    accuracy, analyze, Accuracy, Analysis, Cfg, ExactCounter, Filter, IndexCache, LbrConfig,
    LbrUnit, Options, PathKey, PeriodUnit, Regions, Samples, Weighting, HOT,
};
use outcrop_timing::Timed;
use std::collections::HashMap;
use std::path::Path;

const PERIODS: [u64; 8] = [
    50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000,
];
const ENTRIES: [usize; 4] = [4, 8, 16, 32];
const OPERATING: u64 = 1_000_000;
const SEEDS: u64 = 10;
const MAX_PATHS: u64 = 256;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Kind {
    Sweep,
    Seed(u64),
    Imprecise,
    AllBranches,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
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

struct UnitResult {
    kind: Kind,
    entries: usize,
    period: u64,
    samples: u64,
    overhead: f64,
    acc: HashMap<Mode, Accuracy>,
    paper: Analysis,
    estimated_paths: Vec<PathKey>,
}

struct Workload {
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

fn units() -> Vec<(Kind, LbrConfig)> {
    let mut v = Vec::new();
    let mut seed = 1;
    let base = LbrConfig {
        unit: PeriodUnit::Cycles,
        random: true,
        ..LbrConfig::default()
    };
    for &e in &ENTRIES {
        for &p in &PERIODS {
            seed += 1;
            v.push((
                Kind::Sweep,
                LbrConfig {
                    entries: e,
                    period: p,
                    seed,
                    ..base.clone()
                },
            ));
        }
    }
    for s in 1..SEEDS {
        v.push((
            Kind::Seed(s),
            LbrConfig {
                entries: 4,
                period: OPERATING,
                seed: 1000 + s,
                ..base.clone()
            },
        ));
    }
    v.push((
        Kind::Imprecise,
        LbrConfig {
            entries: 4,
            period: OPERATING,
            seed: 77,
            skew: 0.1,
            drop_target: 0.05,
            ..base.clone()
        },
    ));
    v.push((
        Kind::AllBranches,
        LbrConfig {
            entries: 4,
            period: OPERATING,
            seed: 78,
            filter: Filter::All,
            ..base
        },
    ));
    v
}

fn study(root: &Path, name: &str) -> Result<Workload> {
    let bin = root.join("workloads/bin").join(name);
    let elf = std::fs::read(&bin).with_context(|| format!("{}", bin.display()))?;
    let cfg = Cfg::from_elf(&elf)?;
    let regions = Regions::new(&cfg, MAX_PATHS);
    let spec = outcrop_run::ProgramSpec::observed(&bin, &format!("bin/{name}"));
    let mut m = outcrop_run::load(&spec, Box::new(|_| {}))?.machine;
    let specs = units();
    let lbrs = specs
        .iter()
        .map(|(_, c)| LbrUnit::new(c.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let observers = (
        outcrop_paths::BranchRecorder::new(lbrs),
        ExactCounter::new(&cfg, &regions),
    );
    let mut timed = Timed::new(&outcrop_timing::Config::default(), observers);
    m.run(&mut timed);
    timed.finish();
    let cycles = timed.totals().cycles;
    let (s, ex) = timed.into_inner();
    let instructions = s.instructions;
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
        let mut acc = HashMap::new();
        let mut paper = None;
        for mode in MODES {
            if *kind != Kind::Sweep && mode != Mode::Paper {
                continue;
            }
            let (o, w) = mode.options();
            let a = analyze(&cfg, &regions, &samples, o, w, &mut cache);
            acc.insert(mode, accuracy(&exact, &a.estimate.paths, HOT));
            if mode == Mode::Paper {
                paper = Some(a);
            }
        }
        let Some(paper) = paper else {
            bail!("no paper analysis")
        };
        if *kind == Kind::Sweep && c.entries == 4 && c.period == OPERATING {
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
            overhead: samples.overhead(),
            acc,
            paper,
            estimated_paths,
        });
    }
    eprintln!("study-paths: {name} done ({instructions} instructions, {cycles} cycles)");
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

fn pct(x: f64) -> String {
    format!("{:.1}", 100.0 * x)
}

fn mean(v: impl IntoIterator<Item = f64>) -> f64 {
    let v: Vec<f64> = v.into_iter().collect();
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn sweep(w: &Workload, e: usize, p: u64) -> Option<&UnitResult> {
    w.units
        .iter()
        .find(|u| u.kind == Kind::Sweep && u.entries == e && u.period == p)
}

pub fn run(args: &[String]) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut names: Vec<String> = crate::compute_workloads(&root)?
        .into_iter()
        .filter(|n| n != "fileio")
        .collect();
    let mut svg = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--workloads" => {
                names = it
                    .next()
                    .context("--workloads needs a list")?
                    .split(',')
                    .map(str::to_string)
                    .collect()
            }
            "--svg" => svg = Some(it.next().context("--svg needs a file")?.clone()),
            other => bail!("unknown option {other}"),
        }
    }
    // two workloads at a time (two cores)
    let mut results: Vec<Workload> = Vec::new();
    for pair in names.chunks(2) {
        let got: Vec<Result<Workload>> = std::thread::scope(|s| {
            let hs: Vec<_> = pair
                .iter()
                .map(|n| {
                    let root = &root;
                    s.spawn(move || study(root, n))
                })
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| bail!("a study thread panicked"))
                })
                .collect()
        });
        for g in got {
            results.push(g?);
        }
    }
    print_tables(&results);
    if let Some(f) = svg {
        plot_fig6(Path::new(&f), &results)?;
    }
    Ok(())
}

fn print_tables(ws: &[Workload]) {
    println!("### Runs and hot paths (Table 4)\n");
    println!("| workload | instructions | cycles | regions | path executions | unplaced | hot paths (≥ 0.125%) | % of flow |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for w in ws {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            w.name,
            w.instructions,
            w.cycles,
            w.regions,
            w.exact_paths,
            w.unplaced,
            w.hot.hot_paths,
            pct(w.hot.hot_flow)
        );
    }
    println!("\n### Accuracy vs sampling period (Figure 6), paper method, mean over workloads\n");
    print!("| period (cycles) | samples (mean) | modelled overhead |");
    for e in ENTRIES {
        print!(" Wall, {e} entries |");
    }
    println!(" overlap, 4 entries |");
    print!("|---:|---:|---:|");
    for _ in ENTRIES {
        print!("---:|");
    }
    println!("---:|");
    for p in PERIODS {
        let u4: Vec<&UnitResult> = ws.iter().filter_map(|w| sweep(w, 4, p)).collect();
        print!(
            "| {p} | {:.0} | {}% |",
            mean(u4.iter().map(|u| u.samples as f64)),
            pct(mean(u4.iter().map(|u| u.overhead)))
        );
        for e in ENTRIES {
            let a = mean(
                ws.iter()
                    .filter_map(|w| sweep(w, e, p))
                    .map(|u| u.acc[&Mode::Paper].wall),
            );
            print!(" {} |", pct(a));
        }
        println!(
            " {} |",
            pct(mean(u4.iter().map(|u| u.acc[&Mode::Paper].overlap)))
        );
    }
    println!("\n### At {OPERATING} cycles (≈1% modelled overhead): Wall accuracy per workload and method\n");
    println!("| workload | overhead | 4: paper | 4: stitch | 4: edge weights | 4: both | 16: paper | 16: both | 32: paper | 32: both | 4: imprecise | 4: all branches |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut cols: Vec<Vec<f64>> = vec![Vec::new(); 10];
    for w in ws {
        let Some(u4) = sweep(w, 4, OPERATING) else {
            continue;
        };
        let get = |e: usize, m: Mode| sweep(w, e, OPERATING).map_or(0.0, |u| u.acc[&m].wall);
        let other = |k: Kind| {
            w.units
                .iter()
                .find(|u| u.kind == k)
                .map_or(0.0, |u| u.acc[&Mode::Paper].wall)
        };
        let vals = [
            get(4, Mode::Paper),
            get(4, Mode::Stitch),
            get(4, Mode::Edges),
            get(4, Mode::Both),
            get(16, Mode::Paper),
            get(16, Mode::Both),
            get(32, Mode::Paper),
            get(32, Mode::Both),
            other(Kind::Imprecise),
            other(Kind::AllBranches),
        ];
        print!("| {} | {}% |", w.name, pct(u4.overhead));
        for (i, v) in vals.iter().enumerate() {
            cols[i].push(*v);
            print!(" {} |", pct(*v));
        }
        println!();
    }
    print!("| **mean** | |");
    for c in &cols {
        print!(" **{}** |", pct(mean(c.iter().copied())));
    }
    println!();
    print!("| **min** | |");
    for c in &cols {
        print!(" {} |", pct(c.iter().copied().fold(1.0, f64::min)));
    }
    println!();
    println!("\n### Overlap at {OPERATING} cycles\n");
    println!("| workload | 4: paper | 4: both | 16: paper | 16: both | 32: both |");
    println!("|---|---:|---:|---:|---:|---:|");
    for w in ws {
        let get = |e: usize, m: Mode| sweep(w, e, OPERATING).map_or(0.0, |u| u.acc[&m].overlap);
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            w.name,
            pct(get(4, Mode::Paper)),
            pct(get(4, Mode::Both)),
            pct(get(16, Mode::Paper)),
            pct(get(16, Mode::Both)),
            pct(get(32, Mode::Both))
        );
    }
    println!(
        "\n### Partial path lengths in instructions (Table 2), 4 entries, {OPERATING} cycles\n"
    );
    println!("| workload | initial | extended | split at functions | and back edges | fragments (and regions) | discarded samples | cuts |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for w in ws {
        let Some(u) = sweep(w, 4, OPERATING) else {
            continue;
        };
        let s = &u.paper.reconstruction.stats;
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} |",
            w.name,
            s.mean_initial(),
            s.mean_extended(),
            s.mean_func(),
            s.mean_loop(),
            s.mean_fragment(),
            s.discarded,
            s.breaks
        );
    }
    println!(
        "\n### Samples by function boundaries spanned (Table 3), 4 entries, {OPERATING} cycles\n"
    );
    println!("| workload | 0 | 1 | 2 | 3 | 4+ | same with 16 entries: 0 | 1 | 2 | 3 | 4+ |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for w in ws {
        let (Some(a), Some(b)) = (sweep(w, 4, OPERATING), sweep(w, 16, OPERATING)) else {
            continue;
        };
        let x = a.paper.reconstruction.stats.spans;
        let y = b.paper.reconstruction.stats.spans;
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            w.name, x[0], x[1], x[2], x[3], x[4], y[0], y[1], y[2], y[3], y[4]
        );
    }
    println!("\n### Unique paths found when aggregating runs (Figure 5), 4 entries, {OPERATING} cycles\n");
    print!("| workload |");
    for k in 1..=SEEDS {
        print!(" {k} |");
    }
    println!();
    print!("|---|");
    for _ in 1..=SEEDS {
        print!("---:|");
    }
    println!();
    for w in ws {
        let mut runs: Vec<&UnitResult> = Vec::new();
        if let Some(u) = sweep(w, 4, OPERATING) {
            runs.push(u);
        }
        runs.extend(w.units.iter().filter(|u| matches!(u.kind, Kind::Seed(_))));
        let mut seen: std::collections::HashSet<PathKey> = Default::default();
        print!("| {} |", w.name);
        for u in runs {
            seen.extend(u.estimated_paths.iter().copied());
            print!(" {} |", seen.len());
        }
        println!();
    }
    println!(
        "\n### Matching ratio of the five hottest regions (§4.6), 4 entries, {OPERATING} cycles\n"
    );
    println!("| workload | mean over all fragments | hottest regions: (share of flow, ratio) |");
    println!("|---|---:|---|");
    for w in ws {
        let Some(u) = sweep(w, 4, OPERATING) else {
            continue;
        };
        let r: Vec<String> = w
            .region_ratios
            .iter()
            .map(|(f, r)| format!("({}%, {:.2})", pct(*f), r))
            .collect();
        println!(
            "| {} | {:.2} | {} |",
            w.name,
            u.paper.estimate.mean_matching_ratio(),
            r.join(" ")
        );
    }
}

fn plot_fig6(path: &Path, ws: &[Workload]) -> Result<()> {
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("plot: {e}");
    let root = SVGBackend::new(path, (760, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Wall accuracy vs sampling period (mean over workloads)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((20_000u64..20_000_000u64).log_scale(), 50f64..100f64)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("sampling period (cycles)")
        .y_desc("accuracy (%)")
        .draw()
        .map_err(|e| err(&e))?;
    let colors = [RED, BLUE, GREEN, MAGENTA];
    for (i, e) in ENTRIES.iter().enumerate() {
        let pts: Vec<(u64, f64)> = PERIODS
            .iter()
            .map(|&p| {
                (
                    p,
                    100.0
                        * mean(
                            ws.iter()
                                .filter_map(|w| sweep(w, *e, p))
                                .map(|u| u.acc[&Mode::Paper].wall),
                        ),
                )
            })
            .collect();
        let c = colors[i % colors.len()];
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(format!("{e} entries"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
