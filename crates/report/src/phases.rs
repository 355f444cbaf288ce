//! The report of `outcrop phases`: the phases with their share, representative interval and
//! hottest functions, and the sampled timing estimate beside the full model.

use crate::profile::thousands;
use crate::Report;
use outcrop_run::phases::PhaseRun;
use outcrop_rv::symbols::Symbols;
use serde::Serialize;
use std::fmt::Write as _;

/// Functions listed per phase.
pub const PHASE_FUNCTIONS: usize = 5;

/// One phase of [`PhasesReport`].
#[derive(Clone, Debug, Serialize)]
pub struct PhaseRow {
    /// Its number (by first occurrence).
    pub id: usize,
    /// Its share of the run's instructions.
    pub weight: f64,
    /// Its intervals.
    pub intervals: usize,
    /// The representative interval: its index, first instruction and length.
    pub representative: (usize, u64, u64),
    /// Its hottest functions over all its intervals: name and share of the phase's
    /// instructions.
    pub functions: Vec<(String, f64)>,
}

/// The sampled estimate beside the full model.
#[derive(Clone, Debug, Serialize)]
pub struct EstimateRow {
    /// Σ weight × CPI of the representatives.
    pub cpi: f64,
    /// Instructions simulated in detail (representatives and warm-ups).
    pub simulated: u64,
    /// Their share of the run.
    pub simulated_share: f64,
    /// Wall seconds of the sampled run (fast-forwarding included) plus the vectors' run.
    pub wall_seconds: f64,
    /// The full model's CPI, with `--compare`.
    pub full_cpi: Option<f64>,
    /// Its wall seconds.
    pub full_wall_seconds: Option<f64>,
    /// (estimate − full) / full, in percent.
    pub error_pct: Option<f64>,
    /// Full wall time over sampled wall time.
    pub speedup: Option<f64>,
}

/// `outcrop phases`' report (its `--json`).
#[derive(Clone, Debug, Serialize)]
pub struct PhasesReport {
    /// The program.
    pub program: String,
    /// Instructions retired.
    pub instructions: u64,
    /// Instructions per interval.
    pub interval: u64,
    /// Intervals.
    pub intervals: usize,
    /// Distinct basic blocks.
    pub blocks: usize,
    /// Phases chosen.
    pub k: usize,
    /// `(k, BIC)` for every k tried.
    pub bic: Vec<(usize, f64)>,
    /// Each interval's phase, in run order.
    pub assignment: Vec<usize>,
    /// The phases.
    pub phases: Vec<PhaseRow>,
    /// The sampled timing estimate (with a timing model).
    pub estimate: Option<EstimateRow>,
    /// Wall seconds of the run collecting the vectors.
    pub bbv_wall_seconds: f64,
}

impl PhasesReport {
    /// The report of `run`, functions named by `symbols`.
    pub fn new(run: &PhaseRun, symbols: Option<&Symbols>) -> PhasesReport {
        let bbv = &run.bbv;
        let name = |b: u32| -> String {
            let addr = bbv.blocks.get(b as usize).copied().unwrap_or(0);
            symbols
                .and_then(|s| s.lookup(addr))
                .map_or_else(|| format!("{addr:#x}"), |f| f.name.to_string())
        };
        let phases = run
            .phases
            .phases
            .iter()
            .map(|p| {
                let mut by: std::collections::BTreeMap<String, u64> = Default::default();
                let mut total = 0u64;
                for &i in &p.intervals {
                    for &(b, c) in &bbv.intervals[i].counts {
                        *by.entry(name(b)).or_default() += c;
                        total += c;
                    }
                }
                let mut functions: Vec<(String, f64)> = by
                    .into_iter()
                    .map(|(f, c)| (f, c as f64 / total.max(1) as f64))
                    .collect();
                functions.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                functions.truncate(PHASE_FUNCTIONS);
                let r = &bbv.intervals[p.representative];
                PhaseRow {
                    id: p.id,
                    weight: p.weight,
                    intervals: p.intervals.len(),
                    representative: (p.representative, r.start, r.instructions),
                    functions,
                }
            })
            .collect();
        let estimate = run.estimate.as_ref().map(|e| {
            let wall = e.wall.as_secs_f64() + run.bbv_wall.as_secs_f64();
            let full = run.full.as_ref();
            EstimateRow {
                cpi: e.cpi,
                simulated: e.simulated,
                simulated_share: e.simulated as f64 / run.instructions.max(1) as f64,
                wall_seconds: wall,
                full_cpi: full.map(|f| f.cpi),
                full_wall_seconds: full.map(|f| f.wall.as_secs_f64()),
                error_pct: full.map(|f| 100.0 * (e.cpi - f.cpi) / f.cpi.max(f64::MIN_POSITIVE)),
                speedup: full.map(|f| f.wall.as_secs_f64() / wall.max(1e-9)),
            }
        });
        PhasesReport {
            program: run.program.clone(),
            instructions: run.instructions,
            interval: bbv.interval,
            intervals: bbv.intervals.len(),
            blocks: bbv.blocks.len(),
            k: run.phases.k,
            bic: run.phases.bic.clone(),
            assignment: run.phases.assignment.clone(),
            phases,
            estimate,
            bbv_wall_seconds: run.bbv_wall.as_secs_f64(),
        }
    }
}

impl Report for PhasesReport {
    fn write_text(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "Phases of {} (SimPoint style: {} intervals of {} instructions, {} basic blocks; k = {} by BIC)",
            self.program,
            thousands(self.intervals as u64),
            thousands(self.interval),
            thousands(self.blocks as u64),
            self.k
        );
        let _ = writeln!(
            out,
            "  {:>5}  {:>7}  {:>9}  {:>30}  hottest functions",
            "phase", "share", "intervals", "representative (interval: at)"
        );
        for p in &self.phases {
            let f: Vec<String> = p
                .functions
                .iter()
                .map(|(n, s)| format!("{n} {:.0}%", 100.0 * s))
                .collect();
            let _ = writeln!(
                out,
                "  {:>5}  {:>6.2}%  {:>9}  {:>30}  {}",
                p.id,
                100.0 * p.weight,
                p.intervals,
                format!("{}: {}", p.representative.0, thousands(p.representative.1)),
                f.join(", ")
            );
        }
        // the run as a strip of phase numbers (at most 100 characters)
        let n = self.assignment.len();
        if n > 0 {
            let width = n.min(100);
            let strip: String = (0..width)
                .map(|c| {
                    let p = self.assignment[c * n / width];
                    char::from_digit((p % 36) as u32, 36).unwrap_or('?')
                })
                .collect();
            let _ = writeln!(out, "  over time: {strip}");
        }
        if let Some(e) = &self.estimate {
            let _ = writeln!(
                out,
                "Sampled timing: CPI {:.4} from the representatives ({} instructions simulated, {:.2}% of the run, {:.2} s)",
                e.cpi,
                thousands(e.simulated),
                100.0 * e.simulated_share,
                e.wall_seconds
            );
            if let (Some(f), Some(err), Some(s)) = (e.full_cpi, e.error_pct, e.speedup) {
                let _ = writeln!(
                    out,
                    "  full timing model: CPI {f:.4} ({:.2} s): estimate error {err:+.2}%, {s:.1}x faster",
                    e.full_wall_seconds.unwrap_or(0.0)
                );
            }
        }
        let _ = writeln!(
            out,
            "  share: the phase's share of the run's instructions; representative: the interval closest to the phase's centroid, simulated in detail for the estimate"
        );
    }
}
