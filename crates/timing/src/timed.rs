//! [`Timed`]: runs the timing model over a retire stream and hands every retired instruction,
//! with its [`Stamp`], to an inner [`Observer`].
//!
//! Records are delivered one retire cycle at a time, so that each carries the cycle's retire
//! count (the RPA paper's retire rate *n*): a record reaches the inner observer at most
//! `core.width` instructions after the source retired it, and a [`Control::Stop`] it returns
//! takes effect that late. Block-end and taken-branch events are held back with the record of
//! the instruction that caused them and delivered right after it, so the inner observer sees
//! the same order as without timing: retire, branch, block. [`Observer::finish`] delivers the
//! last cycle.

use crate::feedback::{Feedback, NoFeedback};
use crate::model::{Model, Stamp, Totals};
use crate::Config;
use outcrop_events::record::{BranchKind, Control, Observer, Retire, WarmRun};

/// One held-back event.
#[derive(Clone, Copy, Debug)]
enum Pending {
    Retire(Retire, Stamp),
    Branch(u64, u64, BranchKind),
    Block(u64, u32),
    Thread(u32),
    Signal(bool),
}

/// The timing model as an observer, wrapping an inner [`Observer`] that receives stamps, and
/// optionally a [`Feedback`] mechanism acting on the core.
pub struct Timed<O, F = NoFeedback> {
    model: Model,
    /// The inner observer.
    pub inner: O,
    /// The mechanism acting on the core.
    pub feedback: F,
    pending: Vec<Pending>,
    /// Retire records in `pending`.
    group: u8,
    /// Retire cycle of the records in `pending`.
    cycle: u64,
    stopped: bool,
}

impl<O: Observer> Timed<O> {
    /// A cold model with `cfg` around `inner`.
    pub fn new(cfg: &Config, inner: O) -> Timed<O> {
        Timed::with_feedback(cfg, inner, NoFeedback)
    }
}

impl<O: Observer> Timed<O> {
    /// `model` (warmed by [`Warming`], say) around `inner`. The model's totals go on from
    /// where they are: take differences of [`Timed::totals`] for a window.
    pub fn from_model(model: Model, inner: O) -> Timed<O> {
        let width = model.config().core.width as usize;
        Timed {
            model,
            inner,
            feedback: NoFeedback,
            pending: Vec::with_capacity(3 * width),
            group: 0,
            cycle: 0,
            stopped: false,
        }
    }
}

impl<O: Observer, F: Feedback> Timed<O, F> {
    /// A cold model with `cfg` around `inner`, with `feedback` acting on the core.
    pub fn with_feedback(cfg: &Config, inner: O, feedback: F) -> Timed<O, F> {
        Timed {
            model: Model::new(cfg),
            inner,
            feedback,
            pending: Vec::with_capacity(3 * cfg.core.width as usize),
            group: 0,
            cycle: 0,
            stopped: false,
        }
    }

    /// Delivers the records still held back and finishes the inner observer (the same as
    /// [`Observer::finish`], without importing the trait).
    pub fn finish(&mut self) -> Control {
        Observer::finish(self)
    }

    /// Totals so far.
    pub fn totals(&self) -> Totals {
        self.model.totals()
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Unwraps the model (call [`Observer::finish`] first).
    pub fn into_model(self) -> Model {
        self.model
    }

    /// Unwraps the model and the inner observer (call [`Observer::finish`] first).
    pub fn into_parts(self) -> (Model, O) {
        (self.model, self.inner)
    }

    /// Unwraps the inner observer (call [`Observer::finish`] first, or records held back are
    /// lost).
    pub fn into_inner(self) -> O {
        self.inner
    }

    #[inline]
    fn flush(&mut self) {
        let n = self.group;
        for p in self.pending.drain(..) {
            let c = match p {
                Pending::Retire(r, mut t) => {
                    t.retire_group = n;
                    self.inner.retire(&r, Some(&t))
                }
                Pending::Branch(from, to, kind) => self.inner.taken_branch(from, to, kind),
                Pending::Block(start, insns) => self.inner.block(start, insns),
                Pending::Thread(index) => self.inner.thread(index),
                Pending::Signal(entered) => self.inner.signal(entered),
            };
            if c == Control::Stop {
                self.stopped = true;
            }
        }
        self.group = 0;
    }

    #[inline]
    fn verdict(&self) -> Control {
        if self.stopped {
            Control::Stop
        } else {
            Control::Continue
        }
    }
}

/// Functional warming as an observer: every retired instruction updates the model's caches,
/// TLBs and predictors ([`Model::warm`]) and nothing else; no instruction is timed. The
/// sampled timing of `outcrop phases` runs it over the fast-forward before each detailed
/// window, then hands the warmed model to [`Timed::from_model`].
#[derive(Clone, Debug)]
pub struct Warming {
    /// The model being warmed.
    pub model: Model,
}

impl Observer for Warming {
    const RETIRE: bool = true;
    const WARM: bool = true;

    #[inline]
    fn retire(&mut self, r: &Retire, _t: Option<&Stamp>) -> Control {
        self.model.warm(r);
        Control::Continue
    }

    #[inline]
    fn warm(&mut self, run: &WarmRun<'_>) -> Control {
        self.model.warm_run(run);
        Control::Continue
    }
}

impl<O: Observer, F: Feedback> Observer for Timed<O, F> {
    const RETIRE: bool = true;
    // an observer that wants block lengths runs untimed (a timed run gives retire records)
    const BLOCK_LENS: bool = {
        assert!(!O::BLOCK_LENS, "block lengths under the timing model");
        false
    };
    const BLOCKS: bool = O::BLOCKS;
    const BRANCHES: bool = O::BRANCHES;
    const CLASSES: bool = O::CLASSES;
    const MAPPINGS: bool = O::MAPPINGS || F::ACTIVE;

    /// Passed on at once: a mapping is made before any of its code runs, so the inner
    /// observer may hear of it before records still held back.
    fn mapped(&mut self, m: &outcrop_events::record::Mapping<'_>) -> Control {
        if F::ACTIVE {
            self.feedback.mapped(m);
        }
        self.inner.mapped(m)
    }

    #[inline]
    fn retire(&mut self, r: &Retire, _t: Option<&Stamp>) -> Control {
        let t = self.model.step_with(r, &mut self.feedback);
        if self.group > 0 && self.cycle != t.retire {
            self.flush();
        }
        self.cycle = t.retire;
        self.group = self.group.saturating_add(1);
        // an inner observer without retire records costs no copy of each record
        if O::RETIRE {
            self.pending.push(Pending::Retire(*r, t));
        }
        self.verdict()
    }

    /// Class counts need no stamps: delivered at once.
    #[inline]
    fn classes(&mut self, counts: &[u32; 8]) -> Control {
        if self.inner.classes(counts) == Control::Stop {
            self.stopped = true;
        }
        self.verdict()
    }
    #[inline]
    fn class(&mut self, class: outcrop_events::record::Class) -> Control {
        if self.inner.class(class) == Control::Stop {
            self.stopped = true;
        }
        self.verdict()
    }

    #[inline]
    fn block(&mut self, start: u64, insns: u32) -> Control {
        self.pending.push(Pending::Block(start, insns));
        self.verdict()
    }

    #[inline]
    fn taken_branch(&mut self, from: u64, to: u64, kind: BranchKind) -> Control {
        self.pending.push(Pending::Branch(from, to, kind));
        self.verdict()
    }

    /// The core changes thread: the switch costs `core.context_switch` cycles, and the
    /// inner observer hears of it in order with the records.
    fn thread(&mut self, index: u32) -> Control {
        self.model.context_switch();
        self.pending.push(Pending::Thread(index));
        self.verdict()
    }

    /// The records held back belong to the process before: they go first, then the switch
    /// at once, so that the new image's mappings ([`Observer::mapped`], passed on at once)
    /// follow it.
    fn process(&mut self, p: &outcrop_events::ProcessSwitch) -> Control {
        self.flush();
        if F::ACTIVE {
            self.feedback.process(p);
        }
        let c = self.inner.process(p);
        if c == Control::Stop {
            self.stopped = true;
        }
        self.verdict()
    }

    fn signal(&mut self, entered: bool) -> Control {
        self.pending.push(Pending::Signal(entered));
        self.verdict()
    }

    fn finish(&mut self) -> Control {
        if F::ACTIVE {
            self.feedback.finish();
        }
        self.flush();
        let c = self.inner.finish();
        self.verdict().and(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outcrop_events::record::{Class, Stamp, Unit};

    /// Records the order of calls.
    #[derive(Default)]
    struct Log(Vec<String>, u32);

    impl Observer for Log {
        const RETIRE: bool = true;
        const BLOCKS: bool = true;
        const BRANCHES: bool = true;
        fn retire(&mut self, r: &Retire, t: Option<&Stamp>) -> Control {
            assert!(t.is_some_and(|t| t.retire_group >= 1));
            self.0.push(format!("r{:x}", r.pc));
            Control::Continue
        }
        fn taken_branch(&mut self, from: u64, _to: u64, _k: BranchKind) -> Control {
            self.0.push(format!("t{from:x}"));
            Control::Continue
        }
        fn block(&mut self, start: u64, _n: u32) -> Control {
            self.0.push(format!("b{start:x}"));
            Control::Continue
        }
        fn finish(&mut self) -> Control {
            self.1 += 1;
            Control::Continue
        }
    }

    #[test]
    fn block_and_branch_events_follow_their_retire_record() {
        let cfg = Config::preset("default").unwrap();
        let mut timed = Timed::new(&cfg, Log::default());
        let mut expected = Vec::new();
        // a loop of two-instruction blocks: alu, then a taken branch back (as the machine
        // reports them: retire, taken branch, block end)
        for i in 0..50u64 {
            let alu = Retire {
                pc: 0x100,
                len: 4,
                class: Some(Class::Alu),
                unit: Unit::Alu,
                next_pc: 0x104,
                ..Retire::default()
            };
            let br = Retire {
                pc: 0x104,
                len: 4,
                class: Some(Class::Branch),
                unit: Unit::Branch,
                taken: true,
                target: 0x100,
                transfer: Some(BranchKind::Cond),
                next_pc: 0x100,
                ..Retire::default()
            };
            timed.retire(&alu, None);
            timed.retire(&br, None);
            timed.taken_branch(0x104, 0x100, BranchKind::Cond);
            timed.block(0x100, 2);
            expected.extend(["r100", "r104", "t104", "b100"].map(String::from));
            if i == 0 {
                // held back until the cycle is over: nothing delivered yet
                assert!(timed.inner.0.len() <= 4);
            }
        }
        timed.finish();
        assert_eq!(timed.inner.0, expected);
        assert_eq!(timed.inner.1, 1, "finish reaches the inner observer once");
    }
}
