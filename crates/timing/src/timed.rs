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

use crate::model::{Model, Stamp, Totals};
use crate::Config;
use outcrop_events::record::{BranchKind, Control, Observer, Retire};

/// One held-back event.
#[derive(Clone, Copy, Debug)]
enum Pending {
    Retire(Retire, Stamp),
    Branch(u64, u64, BranchKind),
    Block(u64, u32),
}

/// The timing model as an observer, wrapping an inner [`Observer`] that receives stamps.
pub struct Timed<O> {
    model: Model,
    /// The inner observer.
    pub inner: O,
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
        Timed {
            model: Model::new(cfg),
            inner,
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

impl<O: Observer> Observer for Timed<O> {
    const RETIRE: bool = true;
    const BLOCKS: bool = O::BLOCKS;
    const BRANCHES: bool = O::BRANCHES;

    #[inline]
    fn retire(&mut self, r: &Retire, _t: Option<&Stamp>) -> Control {
        let t = self.model.step(r);
        if self.group > 0 && self.cycle != t.retire {
            self.flush();
        }
        self.cycle = t.retire;
        self.group = self.group.saturating_add(1);
        self.pending.push(Pending::Retire(*r, t));
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

    fn finish(&mut self) -> Control {
        self.flush();
        let c = self.inner.finish();
        self.verdict().and(c)
    }
}
