//! The report of `outcrop phases`: the phases with their share, representative interval and
//! hottest functions, and the sampled timing estimate beside the full model.

use crate::profile::thousands;
use crate::Report;
use outcrop_phases::{Bbv, Phases};
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

/// The rows of `phases` found in `bbv`, functions named by `symbols`.
pub fn phase_rows(bbv: &Bbv, phases: &Phases, symbols: Option<&Symbols>) -> Vec<PhaseRow> {
    let name = |b: u32| -> String {
        let addr = bbv.blocks.get(b as usize).copied().unwrap_or(0);
        symbols
            .and_then(|s| s.lookup(addr))
            .map_or_else(|| format!("{addr:#x}"), |f| f.name.to_string())
    };
    phases
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
        .collect()
}

/// A run's phases (`outcrop run --phases`), for its page and `report.json`.
#[derive(Clone, Debug, Serialize)]
pub struct RunPhases {
    /// Instructions per interval.
    pub interval: u64,
    /// Each interval's phase, in run order.
    pub assignment: Vec<usize>,
    /// The phases.
    pub phases: Vec<RunPhaseRow>,
}

/// One phase of a run, with what the timeline says of it.
#[derive(Clone, Debug, Serialize)]
pub struct RunPhaseRow {
    /// The phase.
    #[serde(flatten)]
    pub phase: PhaseRow,
    /// The timeline's counts in the phase's intervals (each timeline interval counted in the
    /// phase of the interval holding its middle instruction), when the profile has a timeline.
    pub counts: Option<outcrop_profile::Counts>,
}

impl RunPhases {
    /// The phases of a run: `bbv` and `phases` from [`outcrop_run::RunSummaries::phases`],
    /// counts per phase from `profile`'s timeline.
    pub fn new(
        bbv: &Bbv,
        phases: &Phases,
        symbols: Option<&Symbols>,
        profile: Option<&outcrop_profile::Profile>,
    ) -> RunPhases {
        let mut counts: Option<Vec<outcrop_profile::Counts>> = None;
        if let Some(p) = profile {
            let marks = &p.timeline.marks;
            if p.timeline.interval > 0 && !marks.is_empty() && !bbv.intervals.is_empty() {
                let mut per = vec![outcrop_profile::Counts::default(); phases.phases.len()];
                let mut prev = outcrop_profile::Counts::default();
                for m in marks {
                    // marks are cumulative; saturating all the same, so that counts out of
                    // order could never wrap
                    let d = |a: u64, b: u64| a.saturating_sub(b);
                    let mid = prev.instructions + d(m.at.instructions, prev.instructions) / 2;
                    let i = bbv
                        .intervals
                        .partition_point(|x| x.start <= mid)
                        .saturating_sub(1);
                    if let Some(c) = phases.assignment.get(i).and_then(|&k| per.get_mut(k)) {
                        c.instructions += d(m.at.instructions, prev.instructions);
                        c.cycles += d(m.at.cycles, prev.cycles);
                        c.mispredicts += d(m.at.mispredicts, prev.mispredicts);
                        c.l1i_misses += d(m.at.l1i_misses, prev.l1i_misses);
                        c.l1d_misses += d(m.at.l1d_misses, prev.l1d_misses);
                        c.l2_misses += d(m.at.l2_misses, prev.l2_misses);
                    }
                    prev = m.at;
                }
                counts = Some(per);
            }
        }
        let rows = phase_rows(bbv, phases, symbols);
        RunPhases {
            interval: bbv.interval,
            assignment: phases.assignment.clone(),
            phases: rows
                .into_iter()
                .enumerate()
                .map(|(k, phase)| RunPhaseRow {
                    phase,
                    counts: counts.as_ref().and_then(|c| c.get(k).copied()),
                })
                .collect(),
        }
    }
}

/// The sampled estimate beside the full model.
#[derive(Clone, Debug, Serialize)]
pub struct EstimateRow {
    /// Σ weight × CPI of the samples.
    pub cpi: f64,
    /// Samples simulated (units, or representative intervals with `--per-phase 1`).
    pub samples: usize,
    /// Instructions simulated in detail (samples and warm-ups).
    pub simulated: u64,
    /// Their share of the run.
    pub simulated_share: f64,
    /// Instructions functionally warmed (caches, TLBs, predictors only).
    pub warmed: u64,
    /// Wall seconds of the sampled run (fast-forwarding and warming included) plus the
    /// vectors' run.
    pub wall_seconds: f64,
    /// The full model's CPI, with `--compare`.
    pub full_cpi: Option<f64>,
    /// Its wall seconds.
    pub full_wall_seconds: Option<f64>,
    /// (estimate − full) / full, in percent.
    pub error_pct: Option<f64>,
    /// Full wall time over sampled wall time.
    pub speedup: Option<f64>,
    /// The confidence of the interval, in percent (99.7).
    pub confidence_pct: f64,
    /// Half the interval's width (CPI units): the full model's CPI lies within `cpi ±
    /// half_width` at that confidence. `None` when a phase has fewer than two samples.
    pub half_width: Option<f64>,
    /// The half-width relative to the estimate, in percent.
    pub half_width_pct: Option<f64>,
    /// Whether `full_cpi` lies in the interval, with `--compare`.
    pub covered: Option<bool>,
    /// Sampling runs: 2 when the first interval missed the target and the samples were
    /// re-planned.
    pub passes: u32,
    /// Each phase's CPI from its samples, with its own interval.
    pub phases: Vec<PhaseCpi>,
    /// The functions with the most cycles in the samples, each with its CPI and interval.
    pub functions: Vec<FunctionCpiRow>,
}

/// One function's CPI in the sampled estimate.
#[derive(Clone, Debug, Serialize)]
pub struct FunctionCpiRow {
    /// Its name.
    pub name: String,
    /// Its estimated share of the run's cycles.
    pub cycle_share: f64,
    /// Its estimated share of the run's instructions.
    pub instruction_share: f64,
    /// Its CPI in the samples.
    pub cpi: f64,
    /// Half the CPI's interval width (`None` when a phase has fewer than two samples).
    pub half_width: Option<f64>,
}

/// Functions shown in the text report.
pub const TEXT_FUNCTIONS: usize = 10;

/// One phase's CPI in the sampled estimate.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseCpi {
    /// The phase.
    pub id: usize,
    /// Its share of the run.
    pub weight: f64,
    /// Samples in it.
    pub samples: usize,
    /// The mean CPI of its samples.
    pub cpi: f64,
    /// Half its interval's width at the estimate's confidence (`None` below two samples).
    pub half_width: Option<f64>,
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
        let phases = phase_rows(bbv, &run.phases, symbols);
        let estimate = run.estimate.as_ref().map(|e| {
            let wall = e.wall.as_secs_f64() + run.bbv_wall.as_secs_f64();
            let full = run.full.as_ref();
            EstimateRow {
                cpi: e.stats.cpi,
                samples: e.windows.len(),
                simulated: e.simulated,
                simulated_share: e.simulated as f64 / run.instructions.max(1) as f64,
                warmed: e.warmed,
                wall_seconds: wall,
                full_cpi: full.map(|f| f.cpi),
                full_wall_seconds: full.map(|f| f.wall.as_secs_f64()),
                error_pct: full
                    .map(|f| 100.0 * (e.stats.cpi - f.cpi) / f.cpi.max(f64::MIN_POSITIVE)),
                speedup: full.map(|f| f.wall.as_secs_f64() / wall.max(1e-9)),
                confidence_pct: 100.0 * e.stats.confidence,
                half_width: e.stats.half_width(),
                half_width_pct: e.stats.relative_half_width().map(|h| 100.0 * h),
                covered: full
                    .filter(|_| e.stats.std_error.is_some())
                    .map(|f| e.stats.covers(f.cpi)),
                passes: e.passes,
                phases: e
                    .stats
                    .strata
                    .iter()
                    .map(|s| PhaseCpi {
                        id: s.id,
                        weight: s.weight,
                        samples: s.units,
                        cpi: s.cpi,
                        half_width: s.half_width,
                    })
                    .collect(),
                functions: e
                    .functions
                    .iter()
                    .map(|f| FunctionCpiRow {
                        name: f.name.clone(),
                        cycle_share: f.cycle_share,
                        instruction_share: f.instruction_share,
                        cpi: f.cpi.ratio,
                        half_width: f.cpi.half_width,
                    })
                    .collect(),
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
                "Sampled timing: CPI {:.4} from {} samples ({} instructions simulated in detail, {:.2}% of the run; {} warmed functionally; {:.2} s with the phases' run)",
                e.cpi,
                thousands(e.samples as u64),
                thousands(e.simulated),
                100.0 * e.simulated_share,
                thousands(e.warmed),
                e.wall_seconds
            );
            match (e.half_width, e.half_width_pct) {
                (Some(h), Some(pct)) => {
                    let _ = writeln!(
                        out,
                        "  interval: CPI {:.4} ± {h:.4} (±{pct:.2}%) at {}% confidence{}",
                        e.cpi,
                        e.confidence_pct,
                        if e.passes > 1 {
                            " (samples re-planned from a first run's variance)"
                        } else {
                            ""
                        }
                    );
                }
                _ => {
                    let _ = writeln!(
                        out,
                        "  interval: none (a phase has fewer than two samples: its variance is unknown)"
                    );
                }
            }
            for p in &e.phases {
                let h = p
                    .half_width
                    .map_or_else(String::new, |h| format!(" ± {h:.4}"));
                let _ = writeln!(
                    out,
                    "  phase {:>2} ({:>6.2}%): CPI {:.4}{h} from {} samples",
                    p.id,
                    100.0 * p.weight,
                    p.cpi,
                    thousands(p.samples as u64)
                );
            }
            for f in e.functions.iter().take(TEXT_FUNCTIONS) {
                let h = f
                    .half_width
                    .map_or_else(String::new, |h| format!(" ± {h:.4}"));
                let _ = writeln!(
                    out,
                    "  {:>6.2}% of cycles ({:>6.2}% of instructions): CPI {:.4}{h}  {}",
                    100.0 * f.cycle_share,
                    100.0 * f.instruction_share,
                    f.cpi,
                    f.name
                );
            }
            if let (Some(f), Some(err), Some(s)) = (e.full_cpi, e.error_pct, e.speedup) {
                let inside = match e.covered {
                    Some(true) => ", inside the interval",
                    Some(false) => ", OUTSIDE the interval",
                    None => "",
                };
                let _ = writeln!(
                    out,
                    "  full timing model: CPI {f:.4} ({:.2} s): estimate error {err:+.2}%{inside}, {s:.1}x faster",
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
