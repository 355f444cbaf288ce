//! A program's phases and a sampled timing estimate (`outcrop phases`): one run collects
//! basic-block vectors on the fast engine; [`outcrop_phases::cluster`] finds the phases;
//! with a timing model, a second run simulates only each phase's representative interval
//! (after a warm-up), fast-forwarding between them, and weighs their CPIs into an estimate
//! of the whole run's; a third, optional, runs the full model for the error. Every run is
//! deterministic, so all three execute the same instructions. docs/phases.md.

use crate::program::{load, ProgramSpec};
use crate::{Error, Result};
use outcrop_phases::{cluster, Bbv, BbvCollector, ClusterOptions, Phases};
use outcrop_rv::Outcome;
use outcrop_timing::Config as TimingConfig;
use outcrop_timing::Timed;
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
    /// Instructions simulated (not counted) before each representative, to warm the caches
    /// and predictors.
    pub warmup: u64,
    /// Also run the full timing model, for the estimate's error.
    pub compare: bool,
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
}

/// The sampled estimate.
#[derive(Clone, Debug, Serialize)]
pub struct Estimate {
    /// The representatives, in run order.
    pub windows: Vec<WindowTiming>,
    /// Σ weight × CPI of the representatives.
    pub cpi: f64,
    /// Instructions simulated in detail (representatives and warm-ups).
    pub simulated: u64,
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

/// Finds the phases of `spec`'s run and, with a timing model, estimates its CPI from one
/// representative interval per phase. `spec` is run deterministically (each pass must
/// execute the same instructions).
pub fn phases(spec: &ProgramSpec, config: &PhaseConfig) -> Result<PhaseRun> {
    let mut spec = spec.clone();
    spec.deterministic = true;
    let quiet = |_: &str| {};
    // pass 1: the vectors, on the fast engine
    let mut guest = load(&spec, Box::new(quiet))?;
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
    let program = spec.path().display().to_string();
    let Some(timing) = &config.timing else {
        return Ok(PhaseRun {
            program,
            outcome,
            instructions,
            bbv,
            phases: found,
            bbv_wall,
            estimate: None,
            full: None,
        });
    };
    // pass 2: the representatives in run order, each after its warm-up
    let mut reps: Vec<(u64, u64, usize, f64)> = found
        .phases
        .iter()
        .map(|p| {
            let i = &bbv.intervals[p.representative];
            (i.start, i.start + i.instructions, p.id, p.weight)
        })
        .collect();
    reps.sort_unstable_by_key(|r| r.0);
    let mut guest = load(&spec, Box::new(quiet))?;
    let m = &mut guest.machine;
    let limit = m.max_insns;
    let started = Instant::now();
    let mut windows = Vec::new();
    let mut simulated = 0;
    for (a, b, phase, weight) in reps {
        let warm_from = a.saturating_sub(config.warmup).max(m.instret);
        if m.instret < warm_from {
            m.max_insns = warm_from;
            let o = m.run(&mut ());
            if o != Outcome::InstructionLimit {
                return Err(Error::Config(format!(
                    "the sampled run ended at {} instructions ({}) before phase {phase}'s representative at {a}: the program does not run the same way twice",
                    m.instret,
                    o.describe()
                )));
            }
        }
        let mut timed = Timed::new(timing, ());
        let w0 = m.instret;
        m.max_insns = a;
        if m.instret < a {
            m.run(&mut timed);
        }
        let c0 = timed.totals().cycles;
        let i0 = m.instret;
        m.max_insns = b.min(limit);
        m.run(&mut timed);
        timed.finish();
        let cycles = timed.totals().cycles.saturating_sub(c0);
        simulated += m.instret - w0;
        windows.push(WindowTiming {
            phase,
            weight,
            start: i0,
            instructions: m.instret - i0,
            cycles,
            warmup: i0 - w0,
        });
    }
    let wall = started.elapsed();
    let cpi = windows
        .iter()
        .map(|w| w.weight * w.cycles as f64 / w.instructions.max(1) as f64)
        .sum();
    let estimate = Estimate {
        windows,
        cpi,
        simulated,
        wall,
    };
    // pass 3: the full model
    let full = if config.compare {
        let mut guest = load(&spec, Box::new(quiet))?;
        let started = Instant::now();
        let mut timed = Timed::new(timing, ());
        guest.machine.run(&mut timed);
        timed.finish();
        let t = timed.totals();
        Some(FullTiming {
            instructions: guest.machine.instret,
            cycles: t.cycles,
            cpi: t.cycles as f64 / guest.machine.instret.max(1) as f64,
            wall: started.elapsed(),
        })
    } else {
        None
    };
    Ok(PhaseRun {
        program,
        outcome,
        instructions,
        bbv,
        phases: found,
        bbv_wall,
        estimate: Some(estimate),
        full,
    })
}
