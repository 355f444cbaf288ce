//! The branch-record unit (the hardware side, paper §3.1): a circular buffer of the last N
//! branches, sampled every P retired instructions or every P cycles, the samples aggregated
//! in a hash table with counts.
//!
//! * N = 4 models Itanium 2's branch trace buffer (8 registers, two per branch); 8, 16 and 32
//!   model modern LBRs.
//! * The period may be randomized (uniform in [P/2, 3P/2), mean P) so that samples do not
//!   lock onto loops whose length divides P.
//! * Filter: taken branches only (the default, as in the paper) or all conditional
//!   branches (not-taken ones recorded as a transfer to the next instruction).
//! * Injected imprecision (§3.2 "Complications"): with probability `skew` a record's
//!   source address is moved by a few instruction slots; with probability `drop_target`
//!   its target is lost (recorded as 0).
//! * The cost of taking a sample (an interrupt handler reading the buffer) is
//!   `handler_cycles`; [`Samples::overhead`] reports it relative to the run.

use crate::error::{Error, Result};
use crate::period::PeriodSampler;
use crate::rng::{SplitMix64, GOLDEN};
use crate::samples::{Meta, Samples};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// One branch record: a taken branch (or, with the all-branches filter, a not-taken one)
/// from `from` to `to`. `to == 0` marks a record whose target was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Record {
    /// Address of the branch instruction.
    pub from: u64,
    /// Address it went to; 0 if unknown.
    pub to: u64,
}

/// What the period counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PeriodUnit {
    /// Retired instructions.
    #[default]
    Instructions,
    /// Cycles of the timing model.
    Cycles,
}

/// Which branches the buffer records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Filter {
    /// Taken branches and jumps (the paper's configuration).
    #[default]
    Taken,
    /// Also not-taken conditional branches.
    All,
}

/// Configuration of one unit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LbrConfig {
    /// Buffer entries, 1..=256.
    pub entries: usize,
    /// Sampling period, ≥ 1.
    pub period: u64,
    /// What the period counts.
    pub unit: PeriodUnit,
    /// Randomize each period.
    pub random: bool,
    /// Seed of the randomization and the injected imprecision.
    pub seed: u64,
    /// Which branches are recorded.
    pub filter: Filter,
    /// Probability that a record's source is skewed.
    pub skew: f64,
    /// Largest skew in bytes (a multiple of 2).
    pub skew_bytes: u64,
    /// Probability that a record's target is lost.
    pub drop_target: f64,
    /// Cycles one sample costs (interrupt, reading the buffer, storing the trace).
    pub handler_cycles: u64,
}

impl Default for LbrConfig {
    fn default() -> LbrConfig {
        LbrConfig {
            entries: 4,
            period: 1_000_000,
            unit: PeriodUnit::Instructions,
            random: false,
            seed: 1,
            filter: Filter::Taken,
            skew: 0.0,
            skew_bytes: 8,
            drop_target: 0.0,
            handler_cycles: crate::CostModel::PERF_LBR.cycles_per_sample,
        }
    }
}

impl LbrConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        if !(1..=256).contains(&self.entries) {
            return Err(Error::Config(format!(
                "entries must be 1..=256, not {}",
                self.entries
            )));
        }
        PeriodSampler::new(self.period, self.random)?;
        for (n, p) in [("skew", self.skew), ("drop-target", self.drop_target)] {
            if !(0.0..=1.0).contains(&p) {
                return Err(Error::Config(format!("{n} must be a probability, not {p}")));
            }
        }
        Ok(())
    }
}

/// One branch-record unit.
#[derive(Clone, Debug)]
pub struct LbrUnit {
    cfg: LbrConfig,
    ring: Vec<Record>,
    head: usize,
    filled: usize,
    next: u64,
    period: PeriodSampler,
    rng: SplitMix64,
    traces: FxHashMap<Vec<Record>, u64>,
    samples: u64,
    recorded: u64,
    /// The running thread (creation index) whose branches the ring holds.
    thread: u32,
    /// The rings of the threads not running (ring, head, filled).
    parked: FxHashMap<u32, (Vec<Record>, usize, usize)>,
}

/// What a unit took in one process and program while another ran.
#[derive(Clone, Debug, Default)]
pub(crate) struct TakenRow {
    traces: FxHashMap<Vec<Record>, u64>,
    samples: u64,
    recorded: u64,
}

impl LbrUnit {
    /// A unit with `cfg`.
    pub fn new(cfg: LbrConfig) -> Result<LbrUnit> {
        cfg.validate()?;
        let mut u = LbrUnit {
            ring: vec![Record { from: 0, to: 0 }; cfg.entries],
            head: 0,
            filled: 0,
            next: 0,
            period: PeriodSampler::new(cfg.period, cfg.random)?,
            rng: SplitMix64::new(cfg.seed ^ GOLDEN),
            traces: FxHashMap::default(),
            samples: 0,
            recorded: 0,
            thread: 0,
            parked: FxHashMap::default(),
            cfg,
        };
        u.next = u.period();
        Ok(u)
    }

    /// The configuration.
    pub fn config(&self) -> &LbrConfig {
        &self.cfg
    }

    fn period(&mut self) -> u64 {
        self.period.next_interval(&mut self.rng)
    }

    /// A branch retired: `taken` or, for a not-taken conditional branch, `!taken` with `to`
    /// the next instruction.
    #[inline]
    pub fn branch(&mut self, from: u64, to: u64, taken: bool) {
        if !taken && self.cfg.filter == Filter::Taken {
            return;
        }
        self.ring[self.head] = Record { from, to };
        self.head += 1;
        if self.head == self.ring.len() {
            self.head = 0;
        }
        self.filled = (self.filled + 1).min(self.ring.len());
        self.recorded += 1;
    }

    /// `total` taken branches retired, the latest of them `last` (oldest first; all of them
    /// when `total == last.len()`): the ring holds what [`LbrUnit::branch`] would have left in
    /// it had each been recorded as it retired. Only for the taken-branch filter.
    pub fn taken_run(&mut self, last: &[[u64; 2]], total: u64) {
        let keep = last.len().min(self.ring.len());
        for &[from, to] in &last[last.len() - keep..] {
            self.ring[self.head] = Record { from, to };
            self.head += 1;
            if self.head == self.ring.len() {
                self.head = 0;
            }
        }
        self.filled = (self.filled as u64 + total).min(self.ring.len() as u64) as usize;
        self.recorded += total;
    }

    /// The retired-instruction count at which the next sample is due (beyond the last count
    /// [`LbrUnit::tick`] reached); `u64::MAX` for a period in cycles.
    pub fn next_sample(&self) -> u64 {
        match self.cfg.unit {
            PeriodUnit::Instructions => self.next,
            PeriodUnit::Cycles => u64::MAX,
        }
    }

    /// Thread `index` runs from now on: the ring is the hart's, so it is saved with the
    /// thread that leaves and the arriving thread's is put back (empty for a new thread) —
    /// what Linux does with the LBR across a context switch in call-stack mode, and what
    /// a unit per hart gives. A sample never mixes two threads' branches; the period keeps
    /// counting across the switch, as the core's counter does.
    pub fn switch_thread(&mut self, index: u32) {
        if index == self.thread {
            return;
        }
        let incoming = self
            .parked
            .remove(&index)
            .unwrap_or_else(|| (vec![Record { from: 0, to: 0 }; self.ring.len()], 0, 0));
        let outgoing = (
            std::mem::replace(&mut self.ring, incoming.0),
            std::mem::replace(&mut self.head, incoming.1),
            std::mem::replace(&mut self.filled, incoming.2),
        );
        self.parked.insert(self.thread, outgoing);
        self.thread = index;
    }

    /// Time advanced to `insns` retired instructions and `cycles` cycles.
    #[inline]
    pub fn tick(&mut self, insns: u64, cycles: u64) {
        let now = match self.cfg.unit {
            PeriodUnit::Instructions => insns,
            PeriodUnit::Cycles => cycles,
        };
        match self.cfg.unit {
            // a sample at every instruction count the period reaches, so that a caller may
            // advance many instructions at once (the block-level feed) and get the samples it
            // would have got one instruction at a time
            PeriodUnit::Instructions => {
                while now >= self.next {
                    self.sample();
                    self.next += self.period();
                }
            }
            PeriodUnit::Cycles => {
                if now >= self.next {
                    self.sample();
                    self.next = now + self.period();
                }
            }
        }
    }

    fn sample(&mut self) {
        if self.filled == 0 {
            return;
        }
        let n = self.ring.len();
        let mut trace = Vec::with_capacity(self.filled);
        for i in 0..self.filled {
            let mut r = self.ring[(self.head + n - self.filled + i) % n];
            if self.rng.chance(self.cfg.skew) {
                let slots = (self.cfg.skew_bytes / 2).max(1);
                let d = 2 * (1 + self.rng.next_u64() % slots);
                r.from = if self.rng.next_u64() & 1 == 0 {
                    r.from.wrapping_add(d)
                } else {
                    r.from.wrapping_sub(d)
                };
            }
            if self.rng.chance(self.cfg.drop_target) {
                r.to = 0;
            }
            trace.push(r);
        }
        *self.traces.entry(trace).or_default() += 1;
        self.samples += 1;
    }

    /// Swaps what the unit took (its traces and counts) with `row`'s: the records from here
    /// belong to another process or program ([`crate::BranchRecorder`]). The ring and the
    /// period go on.
    pub(crate) fn swap_taken(&mut self, row: &mut TakenRow) {
        std::mem::swap(&mut self.traces, &mut row.traces);
        std::mem::swap(&mut self.samples, &mut row.samples);
        std::mem::swap(&mut self.recorded, &mut row.recorded);
    }

    /// Empties the running thread's ring: its branches were another program's (`execve`).
    pub(crate) fn clear_ring(&mut self) {
        self.head = 0;
        self.filled = 0;
    }

    /// Samples taken so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The aggregated samples, with the run's totals. `meta.program_id` is left empty for the
    /// caller, who has the program's bytes, to fill in.
    pub fn into_samples(self, program: &str, instructions: u64, cycles: u64) -> Samples {
        Samples {
            meta: Meta {
                program: program.to_string(),
                program_id: String::new(),
                objects: Vec::new(),
                config: self.cfg,
                instructions,
                cycles,
                samples: self.samples,
                recorded: self.recorded,
            },
            traces: self.traces,
        }
    }
}
