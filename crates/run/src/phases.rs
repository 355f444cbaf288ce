//! A program's phases and a sampled timing estimate (`outcrop phases`): one run collects
//! basic-block vectors on the fast engine; [`outcrop_phases::cluster`] finds the phases;
//! with a timing model, a second run simulates only samples of each phase (after a warm-up),
//! warming the caches and predictors functionally between them, and weighs their CPIs into
//! an estimate of the whole run's with a confidence interval, per phase and per function
//! too ([`outcrop_phases::estimate`]); when the interval misses its target the samples are
//! re-planned and that run repeated once; a last, optional, runs the full model for the
//! error. Every run is deterministic, so all of them execute the same instructions.
//! docs/phases.md.

use crate::program::{load, ProgramSpec};
use crate::{Error, Result};
use outcrop_events::record::{Control, Observer, Retire, Stamp};
use outcrop_phases::{
    cluster, Bbv, BbvCollector, ClusterOptions, CpiEstimate, Phases, RatioEstimate,
};
use outcrop_rv::symbols::Symbols;
use outcrop_rv::Outcome;
use outcrop_sampling::rng::SplitMix64;
use outcrop_timing::Config as TimingConfig;
use outcrop_timing::{Model, Timed, Warming};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::time::{Duration, Instant};

/// What [`phases`] does.
#[derive(Clone, Debug)]
pub struct PhaseConfig {
    /// Instructions per interval.
    pub interval: u64,
    /// The clustering.
    pub cluster: ClusterOptions,
    /// Estimate the CPI with this timing model from the representatives alone.
    pub timing: Option<TimingConfig>,
    /// Instructions simulated in detail (not counted) before each representative, to fill
    /// the pipeline and finish warming.
    pub warmup: u64,
    /// Functional warming before each detailed warm-up: the last this many instructions of
    /// the fast-forward update the caches, TLBs and predictors without timing
    /// ([`outcrop_timing::Warming`]); `u64::MAX` warms the whole fast-forward (SMARTS), 0
    /// none.
    pub warming: u64,
    /// Intervals simulated per phase: 1 simulates each phase's representative (SimPoint);
    /// more spreads that many over the phase's intervals in run order, each weighed by an
    /// equal part of the phase's share (stratified sampling: a phase whose intervals run the
    /// same code with different caches or branch outcomes is not judged by one of them).
    pub per_phase: usize,
    /// Instructions measured in detail from the start of each sampled interval (at most the
    /// interval; 0 means the whole interval).
    pub unit: u64,
    /// Also run the full timing model, for the estimate's error.
    pub compare: bool,
    /// Where each phase's units start within their parts of it: `None` at the middles of
    /// the parts; `Some(seed)` at one random offset per phase, the same in every part
    /// (SMARTS's systematic sampling with a random start, which its interval assumes).
    pub sample_seed: Option<u64>,
    /// The confidence of the printed interval (0.997 for 99.7%).
    pub confidence: f64,
    /// The interval's target half-width, relative to the estimate (0.03 for ±3%): when the
    /// first sampling run's interval is wider, the units are re-planned from its variance
    /// (Neyman's allocation over the phases) and the sampling run repeated once (SMARTS
    /// §3.2). `None` keeps the first run's.
    pub target: Option<f64>,
    /// The engine every pass runs on (all give the same vectors, phases and estimate; the
    /// single-step interpreter warms from retire records alone).
    pub engine: outcrop_rv::Engine,
}

impl PhaseConfig {
    /// Checks what a user can get wrong, naming the option (`--interval`, ...).
    pub fn check(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::Config(what.to_string()));
        if self.interval == 0 || self.cluster.max_k == 0 {
            return bad("--interval and --max-k must be at least 1");
        }
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return bad("--confidence must lie between 0 and 100 (percent)");
        }
        if self.target.is_some_and(|t| !(t >= 0.0 && t.is_finite())) {
            return bad("--target must be a percentage, 0 or more");
        }
        Ok(())
    }
}

/// `--warming`: a count of instructions, or "all" (`u64::MAX`).
pub fn parse_warming(s: &str) -> std::result::Result<u64, String> {
    if s == "all" {
        return Ok(u64::MAX);
    }
    s.parse()
        .map_err(|_| format!("`{s}` is not a number of instructions or \"all\""))
}

/// One representative interval simulated.
#[derive(Clone, Debug, Serialize)]
pub struct WindowTiming {
    /// The phase it represents.
    pub phase: usize,
    /// Its weight (the phase's share of the run's instructions).
    pub weight: f64,
    /// Its first instruction.
    pub start: u64,
    /// Instructions simulated and counted.
    pub instructions: u64,
    /// Their cycles.
    pub cycles: u64,
    /// Instructions simulated before it to warm up (not counted).
    pub warmup: u64,
    /// Instructions functionally warmed before the warm-up.
    pub warmed: u64,
    /// Its instructions and cycles by function (`(function id or [`OUTSIDE`], instructions,
    /// cycles)`, by id): each instruction is charged the cycles from the retirement before it
    /// to its own, so the cycles sum to the unit's.
    #[serde(skip)]
    pub functions: Vec<(u32, u64, u64)>,
}

/// The function id of code outside every function of the program's symbol table (a shared
/// library's, the vDSO's, or a program without symbols).
pub const OUTSIDE: u32 = u32::MAX;

/// One function's CPI estimated from the samples.
#[derive(Clone, Debug, Serialize)]
pub struct FunctionCpi {
    /// Its name (`[outside the program's functions]` for [`OUTSIDE`]).
    pub name: String,
    /// Its estimated share of the run's cycles.
    pub cycle_share: f64,
    /// Its estimated share of the run's instructions.
    pub instruction_share: f64,
    /// Its cycles over its instructions in the samples, with the interval.
    pub cpi: RatioEstimate,
}

/// Functions listed in an estimate, by their share of the cycles.
pub const FUNCTIONS: usize = 50;

/// Samples a function must appear in for its CPI to have an interval (the usual rule of thumb
/// for the normal approximation; a function met in a few samples gets its ratio alone).
pub const MIN_SEEN: usize = 30;

/// The sampled estimate.
#[derive(Clone, Debug, Serialize)]
pub struct Estimate {
    /// The representatives, in run order.
    pub windows: Vec<WindowTiming>,
    /// The statistics: the run's and each phase's CPI with their confidence intervals.
    pub stats: CpiEstimate,
    /// Sampling runs made: 1, or 2 when the first run's interval missed the target and the
    /// units were re-planned.
    pub passes: u32,
    /// The functions taking the most cycles in the samples (at most [`FUNCTIONS`]), each with
    /// its CPI and interval.
    pub functions: Vec<FunctionCpi>,
    /// Instructions simulated in detail (representatives and warm-ups).
    pub simulated: u64,
    /// Instructions functionally warmed (caches and predictors only).
    pub warmed: u64,
    /// Wall time of the sampled run (fast-forwarding included).
    pub wall: Duration,
}

/// The full timing model's result, for comparison.
#[derive(Clone, Debug, Serialize)]
pub struct FullTiming {
    /// Instructions.
    pub instructions: u64,
    /// Cycles.
    pub cycles: u64,
    /// Cycles per instruction.
    pub cpi: f64,
    /// Wall time.
    pub wall: Duration,
}

/// What [`phases`] found.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseRun {
    /// The program as named.
    pub program: String,
    /// How its run ended.
    #[serde(skip)]
    pub outcome: Outcome,
    /// Instructions retired.
    pub instructions: u64,
    /// The basic-block vectors.
    #[serde(skip)]
    pub bbv: Bbv,
    /// The phases.
    pub phases: Phases,
    /// Wall time of the run collecting the vectors (the fast engine).
    pub bbv_wall: Duration,
    /// With a timing model: the estimate from the representatives.
    pub estimate: Option<Estimate>,
    /// With `compare`: the full model.
    pub full: Option<FullTiming>,
}

/// Finds the phases of `spec`'s run and, with a timing model, estimates its CPI from samples
/// of each phase (functions named by `symbols`). `spec` is run deterministically (each pass
/// must execute the same instructions).
pub fn phases(
    spec: &ProgramSpec,
    symbols: Option<&Symbols>,
    config: &PhaseConfig,
) -> Result<PhaseRun> {
    let mut spec = spec.clone();
    spec.deterministic = true;
    // pass 1: the vectors, on the fast engine
    let mut guest = load_on(&spec, config.engine)?;
    let started = Instant::now();
    let mut collector = BbvCollector::new(config.interval);
    let outcome = guest.machine.run(&mut collector);
    if outcome == Outcome::InstructionLimit {
        // the block in progress at the limit counts too
        guest.machine.flush_blocks(&mut collector);
    }
    let bbv_wall = started.elapsed();
    let instructions = guest.machine.instret;
    let bbv = collector.finish_bbv();
    let found = cluster(&bbv, &config.cluster);
    let (estimate, full) = match &config.timing {
        Some(timing) => {
            let (e, f) = timed_passes(&spec, config, (timing, symbols), (&bbv, &found))?;
            (Some(e), f)
        }
        None => (None, None),
    };
    Ok(PhaseRun {
        program: spec.path().display().to_string(),
        outcome,
        instructions,
        bbv,
        phases: found,
        bbv_wall,
        estimate,
        full,
    })
}

/// Passes 2 and 3 of [`phases`]: the samples in run order, each after its warm-up (a second
/// sampling run with units re-planned from the first's variance when its interval misses the
/// target), and with `compare` the full model.
fn timed_passes(
    spec: &ProgramSpec,
    config: &PhaseConfig,
    (timing, symbols): (&TimingConfig, Option<&Symbols>),
    (bbv, found): (&Bbv, &Phases),
) -> Result<(Estimate, Option<FullTiming>)> {
    let strata: Vec<(usize, f64)> = found.phases.iter().map(|p| (p.id, p.weight)).collect();
    let started = Instant::now();
    let plan = vec![config.per_phase; found.phases.len()];
    let mut offsets = config.sample_seed.map(SplitMix64::new);
    let sample = |plan: &[usize], offsets: Option<&mut SplitMix64>| {
        sample_run(spec, config, (timing, symbols), (bbv, found), plan, offsets)
    };
    let mut pass = sample(&plan, offsets.as_mut())?;
    let mut stats = unit_stats(&strata, &pass.0, config.confidence);
    let mut passes = 1;
    if let Some(target) = config.target {
        let wide = stats.relative_half_width().is_none_or(|h| h > target);
        if wide && config.per_phase > 1 {
            // planned for 90% of the target (the plan's standard deviations are estimates: for
            // the target itself, half the second runs would miss it narrowly); no phase gets
            // fewer units than the first run gave it (a phase whose few units happened to
            // agree would otherwise be judged by fewer still)
            let plan: Vec<usize> = stats
                .tuned_plan(0.9 * target, 2, MAX_PER_PHASE)
                .into_iter()
                .zip(&stats.strata)
                .map(|(n, s)| n.max(s.units))
                .collect();
            pass = sample(&plan, offsets.as_mut())?;
            stats = unit_stats(&strata, &pass.0, config.confidence);
            passes = 2;
        }
    }
    let (windows, simulated, warmed) = pass;
    let functions = function_cpis(&strata, &windows, symbols, config.confidence);
    let estimate = Estimate {
        functions,
        windows,
        stats,
        passes,
        simulated,
        warmed,
        wall: started.elapsed(),
    };
    if !config.compare {
        return Ok((estimate, None));
    }
    let mut guest = load_on(spec, config.engine)?;
    let started = Instant::now();
    let mut timed = Timed::new(timing, ());
    guest.machine.run(&mut timed);
    timed.finish();
    let t = timed.totals();
    let full = FullTiming {
        instructions: guest.machine.instret,
        cycles: t.cycles,
        cpi: t.cycles as f64 / guest.machine.instret.max(1) as f64,
        wall: started.elapsed(),
    };
    Ok((estimate, Some(full)))
}

/// The timing model's inner observer in a sample: charges each instruction the cycles from
/// the retirement before it (the first: from `prev`, the warm-up's last) to its own, by
/// function.
struct FunctionCycles<'a> {
    symbols: Option<&'a Symbols>,
    /// The last range looked up, `[lo, hi)`, and the function it names (a sample stays in a
    /// few).
    last: (u64, u64, u32),
    prev: u64,
    counts: FxHashMap<u32, (u64, u64)>,
}

impl<'a> FunctionCycles<'a> {
    fn new(symbols: Option<&'a Symbols>, prev: u64) -> Self {
        FunctionCycles {
            symbols,
            last: (0, 0, OUTSIDE),
            prev,
            counts: FxHashMap::default(),
        }
    }

    fn function(&mut self, pc: u64) -> u32 {
        if !(self.last.0 <= pc && pc < self.last.1) {
            // the range over which the lookup names the same function (an inner function's
            // extent inside an outer one's is a range of its own), or the gap outside them
            self.last = match self.symbols {
                Some(s) => {
                    let (lo, hi) = s.steady_range(pc);
                    (lo, hi, s.lookup(pc).map_or(OUTSIDE, |f| f.id.0))
                }
                None => (0, u64::MAX, OUTSIDE),
            };
        }
        self.last.2
    }
}

impl Observer for FunctionCycles<'_> {
    const RETIRE: bool = true;

    fn retire(&mut self, r: &Retire, t: Option<&Stamp>) -> Control {
        let at = t.map_or(self.prev, |t| t.retire);
        let f = self.function(r.pc);
        let e = self.counts.entry(f).or_default();
        e.0 += 1;
        e.1 += at.saturating_sub(self.prev);
        self.prev = at;
        Control::Continue
    }
}

/// The [`FUNCTIONS`] functions with the most cycles in `windows`, each with its CPI estimated
/// over the phases `strata` (a ratio over every unit, zeros included).
fn function_cpis(
    strata: &[(usize, f64)],
    windows: &[WindowTiming],
    symbols: Option<&Symbols>,
    confidence: f64,
) -> Vec<FunctionCpi> {
    let weight: FxHashMap<usize, f64> = strata.iter().copied().collect();
    let mut units_in: FxHashMap<usize, f64> = FxHashMap::default();
    for w in windows {
        *units_in.entry(w.phase).or_default() += 1.0;
    }
    // each function's weighed cycles and instructions, to rank them
    let mut totals: FxHashMap<u32, (f64, f64)> = FxHashMap::default();
    let (mut all_cycles, mut all_insns) = (0.0, 0.0);
    for w in windows {
        let share = weight.get(&w.phase).copied().unwrap_or(0.0)
            / units_in.get(&w.phase).copied().unwrap_or(1.0);
        for &(f, n, c) in &w.functions {
            let e = totals.entry(f).or_default();
            e.0 += share * c as f64;
            e.1 += share * n as f64;
            all_cycles += share * c as f64;
            all_insns += share * n as f64;
        }
    }
    let mut ranked: Vec<(u32, f64, f64)> =
        totals.into_iter().map(|(f, (c, n))| (f, c, n)).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(FUNCTIONS);
    ranked
        .into_iter()
        .map(|(f, c, n)| {
            let units: Vec<(usize, f64, f64)> = windows
                .iter()
                .map(|w| {
                    let (_, n, c) = w
                        .functions
                        .binary_search_by_key(&f, |x| x.0)
                        .map_or((f, 0, 0), |i| w.functions[i]);
                    (w.phase, c as f64, n as f64)
                })
                .collect();
            let name = (f != OUTSIDE)
                .then(|| symbols?.function(outcrop_rv::symbols::FunctionId(f)))
                .flatten()
                .map_or_else(
                    || "[outside the program's functions]".to_string(),
                    |s| s.name.to_string(),
                );
            FunctionCpi {
                name,
                cycle_share: c / all_cycles.max(f64::MIN_POSITIVE),
                instruction_share: n / all_insns.max(f64::MIN_POSITIVE),
                cpi: RatioEstimate::new(strata, &units, confidence, MIN_SEEN),
            }
        })
        .collect()
}

/// The statistics of a sampling run's units over the phases `strata`.
fn unit_stats(strata: &[(usize, f64)], windows: &[WindowTiming], confidence: f64) -> CpiEstimate {
    let units: Vec<(usize, f64)> = windows
        .iter()
        .map(|w| (w.phase, w.cycles as f64 / w.instructions.max(1) as f64))
        .collect();
    CpiEstimate::new(strata, &units, confidence)
}

/// One sampling run: `plan[i]` units of phase `i` (as [`samples`] places them), each after its
/// detailed warm-up and the functional warming before that, the rest fast-forwarded. Returns
/// the units, the instructions simulated in detail and those warmed.
fn sample_run(
    spec: &ProgramSpec,
    config: &PhaseConfig,
    (timing, symbols): (&TimingConfig, Option<&Symbols>),
    (bbv, found): (&Bbv, &Phases),
    plan: &[usize],
    mut offsets: Option<&mut SplitMix64>,
) -> Result<(Vec<WindowTiming>, u64, u64)> {
    let mut reps: Vec<(u64, u64, usize, f64)> = Vec::new();
    for (p, &n) in found.phases.iter().zip(plan) {
        // one random start per phase (the middles without a seed)
        let offset = offsets.as_deref_mut().map_or(0.5, SplitMix64::next_f64);
        reps.extend(samples(bbv, p, n, config.unit, offset));
    }
    reps.sort_unstable_by_key(|r| r.0);
    let mut guest = load_on(spec, config.engine)?;
    let m = &mut guest.machine;
    let limit = m.max_insns;
    let mut windows = Vec::new();
    let mut simulated = 0;
    let mut warmed = 0;
    // one model for the whole run: each window inherits the caches and predictors of the
    // last, brought up to date by the functional warming before it
    let mut model = Model::new(timing);
    let ended_early = |m: &outcrop_rv::Machine, o: Outcome, phase: usize, a: u64| {
        Error::Config(format!(
            "the sampled run ended at {} instructions ({}) before phase {phase}'s representative at {a}: the program does not run the same way twice",
            m.instret,
            o.describe()
        ))
    };
    for (a, b, phase, weight) in reps {
        let detail_from = a.saturating_sub(config.warmup).max(m.instret);
        let warm_from = detail_from.saturating_sub(config.warming).max(m.instret);
        if m.instret < warm_from {
            m.max_insns = warm_from;
            let o = m.run(&mut ());
            if o != Outcome::InstructionLimit {
                return Err(ended_early(m, o, phase, a));
            }
        }
        let f0 = m.instret;
        if m.instret < detail_from {
            m.max_insns = detail_from;
            let mut warming = Warming { model };
            let o = m.run(&mut warming);
            model = warming.model;
            if o != Outcome::InstructionLimit {
                return Err(ended_early(m, o, phase, a));
            }
        }
        warmed += m.instret - f0;
        let w0 = m.instret;
        // the detailed warm-up with no inner observer (no record copied), then the sample
        // with its cycles attributed by function: one model throughout
        let mut warmup = Timed::from_model(model, ());
        m.max_insns = a;
        if m.instret < a {
            m.run(&mut warmup);
        }
        warmup.finish();
        let c0 = warmup.totals().cycles;
        let mut timed = Timed::from_model(warmup.into_model(), FunctionCycles::new(symbols, c0));
        let i0 = m.instret;
        m.max_insns = b.min(limit);
        m.run(&mut timed);
        timed.finish();
        let cycles = timed.totals().cycles.saturating_sub(c0);
        let (warmed_model, by_function) = timed.into_parts();
        model = warmed_model;
        let mut functions: Vec<(u32, u64, u64)> = by_function
            .counts
            .into_iter()
            .map(|(f, (n, c))| (f, n, c))
            .collect();
        functions.sort_unstable();
        simulated += m.instret - w0;
        windows.push(WindowTiming {
            phase,
            weight,
            start: i0,
            instructions: m.instret - i0,
            cycles,
            warmup: i0 - w0,
            warmed: w0 - f0,
            functions,
        });
    }
    Ok((windows, simulated, warmed))
}

/// `spec` loaded to run on `engine`.
fn load_on(spec: &ProgramSpec, engine: outcrop_rv::Engine) -> Result<crate::Guest> {
    let mut guest = load(spec, Box::new(|_: &str| {}))?;
    guest.machine.engine = engine;
    Ok(guest)
}

/// Most samples taken of one phase, whatever `--per-phase` asks (the samples are held in
/// memory before the run that simulates them).
pub const MAX_PER_PHASE: usize = 10_000;

/// What to simulate of phase `p`, as (first, end, phase, weight): its representative
/// interval whole when `per_phase` ≤ 1 (SimPoint); otherwise `per_phase` units of `unit`
/// instructions (the whole interval when `unit` is 0) spread evenly over the phase's
/// instructions in run order, one in each of equal parts of them, sharing the phase's weight
/// (SMARTS's systematic sampling within each phase: stratified by phase). `offset` (in
/// [0, 1)) places each unit in its part: 0.5 at its middle, a random number for SMARTS's
/// random start (the same in every part: systematic).
fn samples(
    bbv: &Bbv,
    p: &outcrop_phases::Phase,
    per_phase: usize,
    unit: u64,
    offset: f64,
) -> Vec<(u64, u64, usize, f64)> {
    let whole = |k: usize, w: f64| {
        let i = &bbv.intervals[k];
        (i.start, i.start + i.instructions, p.id, w)
    };
    if per_phase <= 1 || p.intervals.is_empty() {
        return vec![whole(p.representative, p.weight)];
    }
    if unit == 0 {
        let n = p.intervals.len();
        let m = per_phase.min(n).min(MAX_PER_PHASE);
        // the interval at `offset` through each of m equal parts of the phase's intervals
        let at = |j: usize| ((j as f64 + offset.clamp(0.0, 1.0)) * n as f64 / m as f64) as usize;
        let mut picked: Vec<usize> = (0..m).map(|j| p.intervals[at(j).min(n - 1)]).collect();
        picked.dedup();
        let w = p.weight / picked.len() as f64;
        return picked.into_iter().map(|k| whole(k, w)).collect();
    }
    let total: u64 = p
        .intervals
        .iter()
        .map(|&k| bbv.intervals[k].instructions)
        .sum();
    let m = (per_phase.min(MAX_PER_PHASE) as u64)
        .min(total / unit.max(1))
        .max(1);
    let w = p.weight / m as f64;
    let mut out = Vec::with_capacity(m as usize);
    let mut ks = p.intervals.iter().map(|&k| &bbv.intervals[k]).peekable();
    let mut before = 0; // instructions of the phase in intervals already passed
                        // where in its part a unit starts: `offset` of the room the part leaves beside it
    let part = total / m;
    let room = part.saturating_sub(unit);
    let into = (offset.clamp(0.0, 1.0) * room as f64) as u64;
    let into = into.min(room);
    for j in 0..m {
        // the start of the j-th of m equal parts (in u128: j · total overflows 64 bits on a
        // long run sampled densely), then the offset into it
        let part_start = (u128::from(j) * u128::from(total) / u128::from(m)) as u64;
        let at = part_start + into;
        while let Some(i) = ks.peek() {
            if before + i.instructions > at {
                break;
            }
            before += i.instructions;
            ks.next();
        }
        let Some(i) = ks.peek() else { break };
        let first = i.start + (at - before);
        let end = (first + unit).min(i.start + i.instructions);
        out.push((first, end, p.id, w));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use outcrop_phases::{Interval, Phase};

    fn bbv(lens: &[u64]) -> Bbv {
        let mut start = 0;
        let intervals = lens
            .iter()
            .map(|&n| {
                let i = Interval {
                    start,
                    instructions: n,
                    counts: vec![(0, n)],
                };
                start += n;
                i
            })
            .collect();
        Bbv {
            interval: 1000,
            blocks: vec![0],
            intervals,
        }
    }

    #[test]
    fn units_lie_in_their_phase_spread_evenly_and_share_its_weight() {
        let b = bbv(&[1000, 1000, 1000, 1000, 1000, 1000, 500]);
        let p = Phase {
            id: 3,
            intervals: vec![1, 2, 5, 6],
            weight: 0.5,
            representative: 2,
        };
        for (per, unit, offset) in [
            (1, 100, 0.5),
            (4, 100, 0.5),
            (4, 100, 0.0),
            (4, 100, 0.999),
            (7, 100, 0.37),
            (30, 100, 0.5),
            (30, 100, 0.9),
            (3, 0, 0.5),
            (3, 0, 0.0),
            (9, 0, 0.99),
            (5, 5000, 0.5),
            (5, 5000, 0.25),
        ] {
            let s = samples(&b, &p, per, unit, offset);
            assert!(!s.is_empty());
            let w: f64 = s.iter().map(|x| x.3).sum();
            assert!((w - 0.5).abs() < 1e-12, "{per} {unit}: {w}");
            for &(first, end, id, _) in &s {
                assert_eq!(id, 3);
                assert!(first < end);
                // inside one of the phase's intervals
                assert!(
                    p.intervals.iter().any(|&k| {
                        let i = &b.intervals[k];
                        first >= i.start && end <= i.start + i.instructions
                    }),
                    "{per} {unit}: {first}..{end}"
                );
                if unit > 0 && per > 1 {
                    assert!(end - first <= unit);
                }
            }
            // in run order, no two alike
            assert!(s.windows(2).all(|w| w[0].0 < w[1].0), "{per} {unit}: {s:?}");
        }
        // systematic: the same offset in every part, so units of a random start are evenly
        // spaced where the phase's instructions are contiguous (its intervals 1 and 2)
        let s = samples(&b, &p, 7, 100, 0.3);
        assert_eq!(s[1].0 - s[0].0, 500);
        assert_eq!(s[0].0, 1000 + 120);
        // one per phase: the representative, whole
        assert_eq!(samples(&b, &p, 1, 100, 0.5), vec![(2000, 3000, 3, 0.5)]);
        // 35 units of 100 over the phase's 3,500 instructions: one every 100
        let s = samples(&b, &p, 35, 100, 0.5);
        assert_eq!(s.len(), 35);
        assert_eq!(s[0].0, 1000);
        assert_eq!(s[10].0, 2000);
        assert_eq!(s[20].0, 5000);
        // an absurd request is bounded, and a long run's positions do not overflow
        let long = bbv(&[u64::MAX / 4, u64::MAX / 4]);
        let q = Phase {
            id: 0,
            intervals: vec![0, 1],
            weight: 1.0,
            representative: 0,
        };
        let s = samples(&long, &q, usize::MAX, 1, 0.5);
        assert_eq!(s.len(), MAX_PER_PHASE);
        assert!(s.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(s.last().unwrap().0 > u64::MAX / 4);
    }
}
