//! The report of a path profile estimated from branch-record samples (`outcrop paths report`,
//! path-profiling paper §3–4, Tables 2 and 3): the model, its JSON and its text.

use outcrop_paths::{Accuracy, ExactStats, Options, PartialStats, Weighting};
use outcrop_sampling::PeriodUnit;
use serde::Serialize;
use std::fmt::Write as _;

/// One hot path, estimated (and exact when a reference was given).
#[derive(Clone, Debug, Serialize)]
pub struct HotPathReport {
    /// rank.
    pub rank: usize,
    /// region.
    pub region: u32,
    /// id.
    pub id: u64,
    /// function.
    pub function: String,
    /// estimated.
    pub estimated: f64,
    /// estimated share.
    pub estimated_share: f64,
    /// exact share.
    pub exact_share: Option<f64>,
    /// blocks.
    pub blocks: Vec<String>,
    /// instructions.
    pub instructions: u64,
    /// disassembly.
    pub disassembly: Vec<String>,
}

/// The report of a samples file (`outcrop paths report`).
#[derive(Clone, Debug, Serialize)]
pub struct PathsReport {
    /// program.
    pub program: String,
    /// entries.
    pub entries: usize,
    /// period.
    pub period: u64,
    /// unit.
    pub unit: PeriodUnit,
    /// samples.
    pub samples: u64,
    /// distinct traces.
    pub distinct_traces: usize,
    /// instructions.
    pub instructions: u64,
    /// cycles.
    pub cycles: u64,
    /// handler cycles.
    pub handler_cycles: u64,
    /// overhead.
    pub overhead: f64,
    /// options.
    pub options: Options,
    /// weights.
    pub weights: Weighting,
    /// regions.
    pub regions: usize,
    /// max paths.
    pub max_paths: u64,
    /// partial.
    pub partial: PartialStats,
    /// matched.
    pub matched: u64,
    /// unmatched.
    pub unmatched: u64,
    /// mean matching ratio.
    pub mean_matching_ratio: f64,
    /// hot paths.
    pub hot_paths: Vec<HotPathReport>,
    /// exact.
    pub exact: Option<ExactStats>,
    /// accuracy.
    pub accuracy: Option<Accuracy>,
}

impl PathsReport {
    /// The report of analyzed samples (`outcrop_run::paths::PathsAnalysis`): the run's
    /// parameters and the partial paths' statistics, the `top` hottest estimated paths with
    /// their blocks and disassembly (and exact shares when a reference was read), and the
    /// accuracy metrics.
    pub fn new(a: &outcrop_run::paths::PathsAnalysis, top: usize) -> PathsReport {
        let (cfg, regions, est) = (&a.cfg, &a.regions, &a.analysis.estimate);
        let est_total: f64 = est.paths.values().sum();
        let exact_total: u64 = a.exact.as_ref().map_or(0, |(e, _)| e.values().sum());
        let ranked = outcrop_paths::accuracy::ranked(&est.paths);
        let hot_paths = ranked
            .iter()
            .take(top)
            .enumerate()
            .map(|(i, ((r, id), w))| {
                let blocks = regions.decode(*r, *id).unwrap_or_default();
                let block = |b: u32| &cfg.blocks[b as usize];
                HotPathReport {
                    rank: i + 1,
                    region: *r,
                    id: *id,
                    function: blocks
                        .first()
                        .map(|&b| cfg.funcs[block(b).func as usize].name.clone())
                        .unwrap_or_default(),
                    estimated: *w,
                    estimated_share: if est_total > 0.0 { w / est_total } else { 0.0 },
                    exact_share: a.exact.as_ref().map(|(e, _)| {
                        e.get(&(*r, *id)).copied().unwrap_or(0) as f64 / exact_total.max(1) as f64
                    }),
                    blocks: blocks
                        .iter()
                        .map(|&b| cfg.describe(block(b).start))
                        .collect(),
                    instructions: blocks.iter().map(|&b| u64::from(block(b).insns)).sum(),
                    disassembly: blocks.iter().flat_map(|&b| cfg.disassemble(b)).collect(),
                }
            })
            .collect();
        let m = &a.samples.meta;
        PathsReport {
            program: a.binary.display().to_string(),
            entries: m.config.entries,
            period: m.config.period,
            unit: m.config.unit,
            samples: m.samples,
            distinct_traces: a.samples.traces.len(),
            instructions: m.instructions,
            cycles: m.cycles,
            handler_cycles: m.config.handler_cycles,
            overhead: a.samples.overhead(),
            options: a.options,
            weights: a.weights,
            regions: regions.regions.len(),
            max_paths: regions.limit,
            partial: a.analysis.reconstruction.stats.clone(),
            matched: est.matched,
            unmatched: est.unmatched,
            mean_matching_ratio: est.mean_matching_ratio(),
            hot_paths,
            exact: a.exact.as_ref().map(|(_, s)| s.clone()),
            accuracy: a.accuracy.clone(),
        }
    }
}

impl crate::Report for PathsReport {
    fn write_text(&self, out: &mut String) {
        let _ = write_text(out, self);
    }
}

fn write_text(out: &mut String, r: &PathsReport) -> std::fmt::Result {
    let p = &r.partial;
    writeln!(out, "program: {}", r.program)?;
    writeln!(
        out,
        "samples: {} ({} distinct traces), {} entries, period {} {}, {} instructions{}",
        r.samples,
        r.distinct_traces,
        r.entries,
        r.period,
        match r.unit {
            PeriodUnit::Instructions => "instructions",
            PeriodUnit::Cycles => "cycles",
        },
        r.instructions,
        if r.cycles > 0 {
            format!(", {} cycles", r.cycles)
        } else {
            String::new()
        }
    )?;
    writeln!(
        out,
        "modelled overhead: {:.3}% ({} cycles per sample{})",
        100.0 * r.overhead,
        r.handler_cycles,
        if r.cycles == 0 { ", CPI 1 assumed" } else { "" }
    )?;
    writeln!(
        out,
        "partial paths (paper Table 2, mean instructions): initial {:.1}, extended {:.1}, split at functions {:.1}, and loops {:.1}; fragments {:.1}",
        p.mean_initial(),
        p.mean_extended(),
        p.mean_func(),
        p.mean_loop(),
        p.mean_fragment()
    )?;
    writeln!(
        out,
        "samples by function boundaries spanned (Table 3): 0: {}, 1: {}, 2: {}, 3: {}, 4+: {}",
        p.spans[0], p.spans[1], p.spans[2], p.spans[3], p.spans[4]
    )?;
    writeln!(
        out,
        "discarded samples {}, cuts {}, snapped sources {}, recovered targets {}",
        p.discarded, p.breaks, p.snapped, p.recovered_targets
    )?;
    writeln!(
        out,
        "regions: {} (fewer than {} paths each); fragments matched {}, unmatched {}, mean matching ratio {:.2}",
        r.regions, r.max_paths, r.matched, r.unmatched, r.mean_matching_ratio
    )?;
    if let (Some(a), Some(e)) = (&r.accuracy, &r.exact) {
        writeln!(
            out,
            "exact reference: {} path executions ({} unplaced, {} blocks outside the CFG)",
            e.paths, e.unplaced, e.unknown_blocks
        )?;
        writeln!(
            out,
            "accuracy: Wall {:.1}% ({} of {} hot paths found; hot paths carry {:.1}% of the flow), overlap {:.1}%",
            100.0 * a.wall,
            a.hot_found,
            a.hot_paths,
            100.0 * a.hot_flow,
            100.0 * a.overlap
        )?;
    }
    writeln!(out, "\nhottest paths (estimated):")?;
    for h in &r.hot_paths {
        writeln!(
            out,
            "#{:<3} {:6.2}%{}  {} ({} blocks, {} instructions)",
            h.rank,
            100.0 * h.estimated_share,
            match h.exact_share {
                Some(s) => format!(" (exact {:6.2}%)", 100.0 * s),
                None => String::new(),
            },
            h.function,
            h.blocks.len(),
            h.instructions
        )?;
        writeln!(out, "     {}", h.blocks.join(" → "))?;
        for d in h.disassembly.iter().take(24) {
            writeln!(out, "       {d}")?;
        }
        if h.disassembly.len() > 24 {
            writeln!(out, "       … {} more", h.disassembly.len() - 24)?;
        }
    }
    Ok(())
}
