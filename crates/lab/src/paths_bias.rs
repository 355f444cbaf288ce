//! Per-path bias of the path-profile estimators against the exact counts (issue 55;
//! docs/studies/paths.md, "Where the estimate is biased").
//!
//! One timed run of a program carries the exact path counter and, for each period asked for,
//! `seeds` branch-record units. For every hot path (flow ≥ 0.125%) it compares the estimate's
//! share of all flow, averaged over the seeds, with the exact share, and groups the hot paths
//! by what might bias them: their length in taken branches against the record depth, how
//! their region's path ends (a call, a return, a back edge, an indirect jump), how many paths
//! their region holds, and how close they are to the hot threshold. For each group it gives the
//! flow the estimate gives it against the exact flow, and the flow Wall's accuracy loses there
//! (hot paths the estimate does not rank among its top ones).

use crate::Result;
use outcrop_paths::{
    accuracy, analyze, Cfg, IndexCache, LbrConfig, Options, PathKey, PeriodUnit, Regions, Samples,
    Weighting, HOT,
};
use outcrop_paths::{BlockId, Term};
use outcrop_studies::table::Table;
use rustc_hash::FxHashMap;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// Options of `paths-bias`.
#[derive(Debug, Clone)]
pub struct Config {
    /// Programs: bundled workloads or the real programs of `study-paths` (`sqlite`,
    /// `lua-fib`, `zstd-3`).
    pub workloads: Vec<String>,
    /// Record depth.
    pub entries: usize,
    /// Sampling periods in cycles.
    pub periods: Vec<u64>,
    /// Seeds per period.
    pub seeds: u64,
}

/// The estimators compared: the paper's, and both extensions.
const MODES: [(&str, bool, Weighting); 2] = [
    ("paper", false, Weighting::Equal),
    ("both", true, Weighting::Edges),
];

/// Runs the diagnostic and writes its tables as markdown.
pub fn run(
    args: Config,
    out: &mut dyn std::io::Write,
    log: &mut (dyn std::io::Write + Send),
) -> Result<()> {
    let bundled = crate::sweep::manifest()?;
    // the real programs are built (xtask real-programs) only if a name is not bundled; an
    // unknown name is then refused by their manifest, by name
    let real = if args.workloads.iter().any(|n| bundled.get(n).is_err()) {
        Some(crate::real_programs::manifest(
            &crate::study_paths::REAL,
            log,
        )?)
    } else {
        None
    };
    for name in &args.workloads {
        let manifest = match &real {
            Some(r) if bundled.get(name).is_err() => r,
            _ => &bundled,
        };
        let scratch = tempfile::tempdir()?;
        writeln!(log, "paths-bias: {name}")?;
        let text = one(manifest, name, scratch.path(), &args)?;
        out.write_all(text.as_bytes())?;
    }
    Ok(())
}

/// What a hot path is, for grouping.
struct PathFacts {
    taken: usize,
    end: &'static str,
    region_paths: u64,
    flow: f64,
}

fn facts(cfg: &Cfg, regions: &Regions, key: PathKey, flow: f64) -> PathFacts {
    let blocks: Vec<BlockId> = regions.decode(key.0, key.1).unwrap_or_default();
    let taken = blocks
        .windows(2)
        .filter(|w| cfg.blocks[w[1] as usize].start != cfg.blocks[w[0] as usize].end)
        .count();
    let end = match blocks.last().map(|&b| cfg.blocks[b as usize].term) {
        Some(Term::Call { .. }) => "call",
        Some(Term::Return) => "return",
        Some(Term::Indirect) => "indirect",
        // the CFG's own back-edge mark on the edge to the branch's target
        Some(Term::Cond { target } | Term::Jump { target })
            if blocks.last().is_some_and(|&b| {
                cfg.block_containing(target)
                    .and_then(|t| cfg.edge(b, t))
                    .is_some_and(|e| e.back)
            }) =>
        {
            "back edge"
        }
        _ => "other",
    };
    PathFacts {
        taken,
        end,
        region_paths: regions.regions[key.0 as usize].paths,
        flow,
    }
}

/// The groups of one hot path: (dimension, group).
fn groups(f: &PathFacts, entries: usize) -> Vec<(&'static str, String)> {
    let len = if f.taken < entries / 2 {
        format!("< {} taken", entries / 2)
    } else if f.taken < entries {
        format!("{}–{} taken", entries / 2, entries - 1)
    } else {
        format!("≥ {entries} taken")
    };
    let paths = match f.region_paths {
        0..=1 => "1 path",
        2..=8 => "2–8 paths",
        9..=64 => "9–64 paths",
        _ => "65+ paths",
    };
    let near = if f.flow < 2.0 * HOT {
        "< 2× threshold"
    } else if f.flow < 8.0 * HOT {
        "2–8× threshold"
    } else {
        "≥ 8× threshold"
    };
    vec![
        ("length", len),
        ("ends at", f.end.to_string()),
        ("region", paths.to_string()),
        ("flow", near.to_string()),
    ]
}

/// Wall's accuracy of `n` paths drawn independently from the exact profile: what an unbiased
/// estimator that observes `n` whole paths, each independent of the others, would score. Real
/// fragments are partial and come in correlated windows, so a real estimator with `n`
/// fragments scores less on average; this is the ceiling the sample count sets.
fn iid_wall(exact: &rustc_hash::FxHashMap<PathKey, u64>, n: u64, seed: u64) -> f64 {
    let mut keys: Vec<(PathKey, u64)> = exact.iter().map(|(k, v)| (*k, *v)).collect();
    keys.sort();
    let mut cum = Vec::with_capacity(keys.len());
    let mut total = 0u64;
    for (_, c) in &keys {
        total += c;
        cum.push(total);
    }
    if total == 0 {
        return 0.0;
    }
    let mut rng = outcrop_sampling::SplitMix64::new(seed ^ 0x5EED);
    let mut drawn: rustc_hash::FxHashMap<PathKey, f64> = Default::default();
    for _ in 0..n {
        let x = rng.next_u64() % total;
        let i = cum.partition_point(|&c| c <= x);
        *drawn.entry(keys[i].0).or_default() += 1.0;
    }
    accuracy(exact, &drawn, HOT).wall
}

/// Wall's accuracy of the path profile an edge profile implies when branches are independent
/// (each region's entries times the product of its branches' probabilities), with the exact
/// edge profile: the best any estimator built on edge frequencies alone can do.
fn markov_wall(regions: &Regions, exact: &rustc_hash::FxHashMap<PathKey, u64>) -> f64 {
    // per region: its paths' blocks and counts; edge and block-visit counts inside it
    let mut by_region: HashMap<u32, Vec<(u64, Vec<BlockId>, u64)>> = HashMap::new();
    for (&(r, id), &c) in exact {
        let blocks = regions.decode(r, id).unwrap_or_default();
        by_region.entry(r).or_default().push((id, blocks, c));
    }
    let mut est: rustc_hash::FxHashMap<PathKey, f64> = Default::default();
    for (r, paths) in by_region {
        let mut out: HashMap<(BlockId, Option<BlockId>), u64> = HashMap::new();
        let mut visits: HashMap<BlockId, u64> = HashMap::new();
        let mut entries = 0;
        for (_, blocks, c) in &paths {
            entries += c;
            for (i, b) in blocks.iter().enumerate() {
                *visits.entry(*b).or_default() += c;
                *out.entry((*b, blocks.get(i + 1).copied())).or_default() += c;
            }
        }
        for id in 0..regions.regions[r as usize].paths {
            let Some(blocks) = regions.decode(r, id) else {
                continue;
            };
            let mut p = entries as f64;
            for (i, b) in blocks.iter().enumerate() {
                let v = visits.get(b).copied().unwrap_or(0);
                let o = out
                    .get(&(*b, blocks.get(i + 1).copied()))
                    .copied()
                    .unwrap_or(0);
                p *= if v == 0 { 0.0 } else { o as f64 / v as f64 };
            }
            if p > 0.0 {
                est.insert((r, id), p);
            }
        }
    }
    accuracy(exact, &est, HOT).wall
}

/// One timed run of `name` with the exact counter and `args`' units: the program's CFG and
/// regions, the exact path counts and each unit's samples.
type Recorded = (
    Cfg,
    Regions,
    FxHashMap<PathKey, u64>,
    Vec<(LbrConfig, Samples)>,
);

fn record(
    manifest: &outcrop_studies::Manifest,
    name: &str,
    scratch: &std::path::Path,
    args: &Config,
) -> Result<Recorded> {
    let spec = manifest.spec(name, scratch)?;
    let image = outcrop_run::ProgramImage::read(&spec.path())?;
    let cfg = Cfg::from_elf(image.bytes())?;
    let regions = Regions::new(&cfg, 256);
    let mut configs = Vec::new();
    for &period in &args.periods {
        for s in 0..args.seeds {
            configs.push(LbrConfig {
                entries: args.entries,
                period,
                unit: PeriodUnit::Cycles,
                random: true,
                seed: 1 + 1000 * s + period % 997,
                ..LbrConfig::default()
            });
        }
    }
    let (s, ex, cycles) =
        crate::study_paths::timed_run((&spec, &image), (&cfg, &regions), configs.iter(), name)?;
    let (exact, _) = ex.finish_run();
    let units = configs
        .into_iter()
        .zip(s.units)
        .map(|(c, u)| {
            let samples = u.into_samples(name, s.instructions, cycles);
            (c, samples)
        })
        .collect();
    Ok((cfg, regions, exact, units))
}

/// One estimator at one period, over the seeds.
#[derive(Default)]
struct Cell {
    /// Per hot path: its share of the estimate's flow, summed over seeds.
    est_share: HashMap<PathKey, f64>,
    /// Per hot path: its exact share, summed over the seeds that left it out of the top ranks.
    missed: HashMap<PathKey, f64>,
    walls: Vec<f64>,
    /// Wall's accuracy of as many independently drawn paths as the seed's matched fragments.
    bound: Vec<f64>,
    fragments: u64,
    samples: u64,
}

fn cell(
    (cfg, regions, exact, units): &Recorded,
    hot: &[PathKey],
    period: u64,
    (stitch, weighting): (bool, Weighting),
    cache: &mut IndexCache,
) -> Cell {
    let total: u64 = exact.values().sum();
    let share = |k: &PathKey| exact.get(k).copied().unwrap_or(0) as f64 / total.max(1) as f64;
    let opts = Options {
        stitch,
        ..Options::default()
    };
    let mut c = Cell::default();
    for (config, smp) in units.iter().filter(|(c, _)| c.period == period) {
        c.samples += smp.meta.samples;
        let a = analyze(cfg, regions, smp, opts, weighting, cache);
        let est = &a.estimate.paths;
        let sum: f64 = est.values().sum::<f64>().max(f64::MIN_POSITIVE);
        let top: HashSet<PathKey> = outcrop_paths::accuracy::ranked(est)
            .into_iter()
            .take(hot.len())
            .map(|(k, _)| k)
            .collect();
        for k in hot {
            *c.est_share.entry(*k).or_default() += est.get(k).copied().unwrap_or(0.0) / sum;
            if !top.contains(k) {
                *c.missed.entry(*k).or_default() += share(k);
            }
        }
        c.walls.push(accuracy(exact, est, HOT).wall);
        c.fragments += a.estimate.matched;
        c.bound
            .push(iid_wall(exact, a.estimate.matched, config.seed));
    }
    c.walls.sort_by(f64::total_cmp);
    c.bound.sort_by(f64::total_cmp);
    c
}

/// The cell's summary line, its table by group and the hot paths it missed most often.
fn render(
    c: &Cell,
    facts: &HashMap<PathKey, PathFacts>,
    head: &str,
    args: &Config,
) -> Result<String> {
    let n = args.seeds.max(1);
    let mid = |v: &[f64]| 100.0 * v.get(v.len() / 2).copied().unwrap_or(0.0);
    let low = |v: &[f64]| 100.0 * v.first().copied().unwrap_or(0.0);
    let mut text = format!(
        "{head}: {} samples and {} matched fragments a run; Wall median {:.1}% (min {:.1}%); \
         the same number of paths drawn independently from the exact profile: {:.1}% (min \
         {:.1}%)\n\n",
        c.samples / n,
        c.fragments / n,
        mid(&c.walls),
        low(&c.walls),
        mid(&c.bound),
        low(&c.bound),
    );
    let n = n as f64;
    let mut rows: Vec<((&str, String), [f64; 4])> = Vec::new();
    let mut keys: Vec<&PathKey> = facts.keys().collect();
    keys.sort();
    for k in keys {
        let f = &facts[k];
        for g in groups(f, args.entries) {
            let i = match rows.iter().position(|(gg, _)| *gg == g) {
                Some(i) => i,
                None => {
                    rows.push((g, [0.0; 4]));
                    rows.len() - 1
                }
            };
            let r = &mut rows[i].1;
            r[0] += 1.0;
            r[1] += f.flow;
            r[2] += c.est_share[k] / n;
            r[3] += c.missed.get(k).copied().unwrap_or(0.0) / n;
        }
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let mut table = Table::new().left("by").left("group").rights([
        "hot paths",
        "exact flow",
        "estimated flow",
        "estimate / exact",
        "Wall lost",
    ]);
    for ((dim, g), r) in &rows {
        table.row([
            dim.to_string(),
            g.clone(),
            format!("{}", r[0]),
            format!("{:.2}%", 100.0 * r[1]),
            format!("{:.2}%", 100.0 * r[2]),
            format!("{:.2}", r[2] / r[1].max(f64::MIN_POSITIVE)),
            format!("{:.2}%", 100.0 * r[3]),
        ]);
    }
    writeln!(text, "{table}")?;
    let mut worst: Vec<(&PathKey, f64)> = c.missed.iter().map(|(k, v)| (k, *v / n)).collect();
    worst.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let list: Vec<String> = worst
        .iter()
        .take(8)
        .map(|(k, lost)| {
            let f = &facts[k];
            format!(
                "{k:?} flow {:.2}% est {:.2}% taken {} ends {} region {} paths (lost {:.2}%)",
                100.0 * f.flow,
                100.0 * c.est_share[k] / n,
                f.taken,
                f.end,
                f.region_paths,
                100.0 * lost
            )
        })
        .collect();
    writeln!(text, "\nMissed most often: {}\n", list.join("; "))?;
    Ok(text)
}

fn one(
    manifest: &outcrop_studies::Manifest,
    name: &str,
    scratch: &std::path::Path,
    args: &Config,
) -> Result<String> {
    let rec = record(manifest, name, scratch, args)?;
    let (cfg, regions, exact, _) = &rec;
    let total: u64 = exact.values().sum();
    let share = |k: &PathKey| exact.get(k).copied().unwrap_or(0) as f64 / total.max(1) as f64;
    let hot: Vec<PathKey> = exact.keys().filter(|k| share(k) >= HOT).copied().collect();
    let facts: HashMap<PathKey, PathFacts> = hot
        .iter()
        .map(|&k| (k, facts(cfg, regions, k, share(&k))))
        .collect();
    let mut text = format!(
        "\n### {name}: {} hot paths, {:.1}% of the flow; {} entries\n\n\
         Independent branches with the exact edge profile: Wall {:.1}%\n\n",
        hot.len(),
        100.0 * hot.iter().map(share).sum::<f64>(),
        args.entries,
        100.0 * markov_wall(regions, exact)
    );
    let mut cache = IndexCache::default();
    for &period in &args.periods {
        for (mode, stitch, weighting) in MODES {
            let c = cell(&rec, &hot, period, (stitch, weighting), &mut cache);
            text.push_str(&render(
                &c,
                &facts,
                &format!("{mode}, period {period}"),
                args,
            )?);
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten paths of one region with flows 1..=10 (all hot).
    fn profile() -> rustc_hash::FxHashMap<PathKey, u64> {
        (1..=10u64).map(|i| ((0, i), i * 1000)).collect()
    }

    #[test]
    fn many_independent_draws_find_the_hot_set_and_none_find_nothing() {
        let exact = profile();
        assert!(iid_wall(&exact, 200_000, 1) > 0.999);
        assert_eq!(iid_wall(&exact, 0, 1), 0.0);
        // a handful of draws cannot rank ten paths: below a perfect score
        let few: f64 = (0..20).map(|s| iid_wall(&exact, 5, s)).sum::<f64>() / 20.0;
        assert!(few < 0.99, "{few}");
    }

    #[test]
    fn draws_are_reproducible_per_seed() {
        let exact = profile();
        assert_eq!(iid_wall(&exact, 50, 7), iid_wall(&exact, 50, 7));
    }
}
