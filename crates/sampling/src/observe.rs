//! [`BranchRecorder`]: branch-record units attached to a retire stream, or ([`BranchFeed`]) to
//! the class and taken-branch streams, which the machine delivers per block.
//!
//! Several units can watch one run: they only observe, so a sweep over periods and buffer
//! depths needs one run, and every unit sees the very same execution. With timing stamps the
//! cycle-period units count the model's cycles; without, cycles stay 0.

use crate::lbr::LbrUnit;
use crate::lbr::TakenRow;
use crate::lbr::{Filter, PeriodUnit};
use outcrop_events::processes::{ProcessKey, ProcessRows};
use outcrop_events::record::{
    BranchKind, Class, Control, Mapping, Observer, ProcessSwitch, Retire, Stamp,
};

/// Branch-record units on one run.
#[derive(Clone, Debug, Default)]
pub struct BranchRecorder {
    /// The branch-record units.
    pub units: Vec<LbrUnit>,
    /// Instructions retired so far.
    pub instructions: u64,
    /// Cycle of the last retirement (timed runs; 0 otherwise).
    pub cycles: u64,
    /// What the units took in each other process and program (docs/machine.md,
    /// "Processes"): the samples of each are its own, as perf's are by pid.
    rows: ProcessRows<Taken>,
    /// The running row's instructions and cycles before its last switch in, and the
    /// run's counts then.
    row_counts: (u64, u64),
    since: (u64, u64),
}

/// What every unit took in one process and program, and what it retired there.
#[derive(Clone, Debug, Default)]
struct Taken {
    units: Vec<TakenRow>,
    instructions: u64,
    cycles: u64,
}

impl BranchRecorder {
    /// Units for one run.
    pub fn new(units: Vec<LbrUnit>) -> BranchRecorder {
        BranchRecorder {
            units,
            ..BranchRecorder::default()
        }
    }

    /// The records from here are `p`'s process and program's: what the units took so far
    /// is put aside with the running one's, and `p`'s taken up (none the first time). A
    /// sample never mixes two processes' branches: each thread has its own ring, and an
    /// `execve` empties its thread's.
    fn switch_process(&mut self, p: &ProcessSwitch) {
        if p.pid == p.from_pid {
            for u in &mut self.units {
                u.clear_ring();
            }
        }
        let mut running = self.take_running();
        let n = self.units.len();
        self.rows.switch(p, &mut running, || Taken {
            units: vec![TakenRow::default(); n],
            ..Taken::default()
        });
        self.put_running(running);
    }

    /// The running row's takings, moved out of the units.
    fn take_running(&mut self) -> Taken {
        let mut t = Taken {
            units: vec![TakenRow::default(); self.units.len()],
            instructions: self.row_counts.0 + (self.instructions - self.since.0),
            cycles: self.row_counts.1 + self.cycles.saturating_sub(self.since.1),
        };
        for (u, row) in self.units.iter_mut().zip(&mut t.units) {
            u.swap_taken(row);
        }
        t
    }

    fn put_running(&mut self, mut t: Taken) {
        for (u, row) in self.units.iter_mut().zip(&mut t.units) {
            u.swap_taken(row);
        }
        self.row_counts = (t.instructions, t.cycles);
        self.since = (self.instructions, self.cycles);
    }

    /// When the guest ran more than one process or program: one recorder per (process,
    /// program), the first process's first program's first, each with what its units took
    /// there and what it retired; else `None` (this recorder is the run's).
    pub fn finish_processes(&mut self) -> Option<Vec<(ProcessKey, BranchRecorder)>> {
        if !self.rows.switched() {
            return None;
        }
        let running = self.take_running();
        let rows = std::mem::take(&mut self.rows).finish(running);
        let made = rows
            .into_iter()
            .map(|(key, mut t)| {
                let mut rec = BranchRecorder {
                    units: self.units.clone(),
                    instructions: t.instructions,
                    cycles: t.cycles,
                    ..BranchRecorder::default()
                };
                for (u, row) in rec.units.iter_mut().zip(&mut t.units) {
                    u.swap_taken(row);
                }
                (key, rec)
            })
            .collect();
        Some(made)
    }
}

impl Observer for BranchRecorder {
    const RETIRE: bool = true;
    const MAPPINGS: bool = true;

    fn process(&mut self, p: &ProcessSwitch) -> Control {
        self.switch_process(p);
        Control::Continue
    }

    fn mapped(&mut self, m: &Mapping<'_>) -> Control {
        self.rows.mapped(m);
        Control::Continue
    }

    #[inline]
    fn retire(&mut self, r: &Retire, t: Option<&Stamp>) -> Control {
        self.instructions += 1;
        if let Some(t) = t {
            self.cycles = t.retire;
        }
        let branch = r.class == Some(Class::Branch);
        for u in &mut self.units {
            if r.transfer.is_some() {
                u.branch(r.pc, r.next_pc, true);
            } else if branch {
                u.branch(r.pc, r.next_pc, false);
            }
            u.tick(self.instructions, self.cycles);
        }
        Control::Continue
    }

    fn thread(&mut self, index: u32) -> Control {
        for u in &mut self.units {
            u.switch_thread(index);
        }
        Control::Continue
    }
}

impl BranchRecorder {
    /// Whether some unit needs retire records: one that also records not-taken branches, or
    /// counts its period in cycles (which come with retire records, from the timing model).
    /// The others can be fed by a [`BranchFeed`].
    pub fn needs_retire(&self) -> bool {
        self.units
            .iter()
            .any(|u| u.config().filter == Filter::All || u.config().unit == PeriodUnit::Cycles)
    }
}

/// Branch-record units fed from the class and taken-branch streams instead of retire
/// records, for units that record taken branches and count instructions
/// ([`BranchRecorder::needs_retire`] is false): the machine then runs its block engine. The
/// units see the same branches and take the same samples as under [`BranchRecorder`]'s
/// retire stream (checked against it on every workload in `outcrop-run`'s tests).
///
/// How: a taken branch is always the last instruction of the class counts delivered just
/// before it, so the units advance to the instruction before it, record it, then advance
/// past it; [`crate::LbrUnit::tick`] takes every sample the period reaches on the way.
pub struct BranchFeed<'a> {
    recorder: &'a mut BranchRecorder,
    /// The last counted instruction has not been ticked yet.
    pending: bool,
    /// The least instruction count at which a unit takes its next sample: ticks short of it
    /// change nothing, so they are skipped.
    due: u64,
}

impl<'a> BranchFeed<'a> {
    /// A feed into `recorder` (its units must not need retire records).
    pub fn new(recorder: &'a mut BranchRecorder) -> BranchFeed<'a> {
        let mut feed = BranchFeed {
            recorder,
            pending: false,
            due: 0,
        };
        feed.due = feed.next_due();
        feed
    }

    fn next_due(&self) -> u64 {
        let units = self.recorder.units.iter();
        units.map(LbrUnit::next_sample).min().unwrap_or(u64::MAX)
    }

    /// Every unit advanced to `now` retired instructions.
    #[inline]
    fn tick(&mut self, now: u64) {
        if now >= self.due {
            for u in &mut self.recorder.units {
                u.tick(now, 0);
            }
            self.due = self.next_due();
        }
    }

    #[inline]
    fn settle(&mut self) {
        if self.pending {
            self.tick(self.recorder.instructions);
            self.pending = false;
        }
    }
}

/// Compiled code feeds it too ([`Observer::COUNTS`] with [`Observer::RING`]): it writes
/// each taken branch into the machine's ring, stops where a sample falls due
/// ([`Observer::budget`]), and hands over the branches ([`Observer::ring`]) and then the
/// instructions ([`Observer::retired`]) — a store per taken branch, no hook per block.
impl Observer for BranchFeed<'_> {
    const CLASSES: bool = true;
    const BRANCHES: bool = true;
    const COUNTS: bool = true;
    const RING: bool = true;
    const UNCOUNTED: bool = true;
    const MAPPINGS: bool = true;

    fn process(&mut self, p: &ProcessSwitch) -> Control {
        self.settle();
        self.recorder.switch_process(p);
        Control::Continue
    }

    fn mapped(&mut self, m: &Mapping<'_>) -> Control {
        self.recorder.rows.mapped(m);
        Control::Continue
    }

    #[inline]
    fn ring(&mut self, last: &[[u64; 2]], total: u64) -> Control {
        self.settle();
        for u in &mut self.recorder.units {
            u.taken_run(last, total);
        }
        Control::Continue
    }

    /// Instructions retired in compiled code: at most up to the next sample, which is then
    /// taken with the branches [`Observer::ring`] just delivered.
    #[inline]
    fn retired(&mut self, _first: u64, n: u64) -> Control {
        self.settle();
        if n > 0 {
            self.recorder.instructions += n;
            self.tick(self.recorder.instructions);
        }
        Control::Continue
    }

    #[inline]
    fn budget(&mut self) -> u64 {
        self.settle();
        self.due.saturating_sub(self.recorder.instructions).max(1)
    }

    #[inline]
    fn classes(&mut self, counts: &[u32; 8]) -> Control {
        self.settle();
        let n: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        if n > 0 {
            self.recorder.instructions += n;
            self.tick(self.recorder.instructions - 1);
            self.pending = true;
        }
        Control::Continue
    }

    #[inline]
    fn taken_branch(&mut self, from: u64, to: u64, _kind: BranchKind) -> Control {
        for u in &mut self.recorder.units {
            u.branch(from, to, true);
        }
        self.settle();
        Control::Continue
    }

    fn thread(&mut self, index: u32) -> Control {
        self.settle();
        self.recorder.thread(index)
    }

    fn finish(&mut self) -> Control {
        self.settle();
        Control::Continue
    }
}
