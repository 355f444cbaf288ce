//! [`Timed`]: runs the timing model as a machine [`Observer`] and hands every retired
//! instruction, with its [`Stamp`], to a [`TimedObserver`].
//!
//! Records are delivered one retire cycle at a time, so that each carries the cycle's retire
//! count (the RPA paper's retire rate *n*): a record reaches the inner observer at most
//! `core.width` instructions after the machine retired it, and a [`Control::Stop`] it returns
//! takes effect that late. Block and taken-branch callbacks are forwarded at once.

use crate::model::{Model, Stamp, Totals};
use crate::Config;
use outcrop_rv::{BranchKind, Control, Observer, Retire};

/// Receives timed retire records (and, if it asks, the machine's derived streams).
pub trait TimedObserver {
    /// Forward [`Observer::block`] calls.
    const BLOCKS: bool = false;
    /// Forward [`Observer::taken_branch`] calls.
    const BRANCHES: bool = false;
    /// One retired instruction and its timing.
    fn retire(&mut self, r: &Retire, t: &Stamp) -> Control;
    /// See [`Observer::block`].
    #[inline]
    fn block(&mut self, _start: u64, _insns: u32) -> Control {
        Control::Continue
    }
    /// See [`Observer::taken_branch`].
    #[inline]
    fn taken_branch(&mut self, _from: u64, _to: u64, _kind: BranchKind) -> Control {
        Control::Continue
    }
}

/// Only the totals.
impl TimedObserver for () {
    #[inline]
    fn retire(&mut self, _r: &Retire, _t: &Stamp) -> Control {
        Control::Continue
    }
}

/// The timing model as an observer, wrapping an inner [`TimedObserver`].
pub struct Timed<O> {
    model: Model,
    /// The inner observer.
    pub inner: O,
    group: Vec<(Retire, Stamp)>,
    stopped: bool,
}

impl<O: TimedObserver> Timed<O> {
    /// A cold model with `cfg` around `inner`.
    pub fn new(cfg: &Config, inner: O) -> Timed<O> {
        Timed {
            model: Model::new(cfg),
            inner,
            group: Vec::with_capacity(cfg.core.width as usize),
            stopped: false,
        }
    }

    /// Delivers the records still held back (call after the run ends).
    pub fn finish(&mut self) -> Control {
        self.flush();
        if self.stopped {
            Control::Stop
        } else {
            Control::Continue
        }
    }

    /// Totals so far.
    pub fn totals(&self) -> Totals {
        self.model.totals()
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    #[inline]
    fn flush(&mut self) {
        let n = self.group.len() as u8;
        for (r, mut t) in self.group.drain(..) {
            t.retire_group = n;
            if self.inner.retire(&r, &t) == Control::Stop {
                self.stopped = true;
            }
        }
    }
}

impl<O: TimedObserver> Observer for Timed<O> {
    const RETIRE: bool = true;
    const BLOCKS: bool = O::BLOCKS;
    const BRANCHES: bool = O::BRANCHES;

    #[inline]
    fn retire(&mut self, r: &Retire) -> Control {
        let t = self.model.step(r);
        if self.group.first().is_some_and(|g| g.1.retire != t.retire) {
            self.flush();
        }
        self.group.push((*r, t));
        if self.stopped {
            Control::Stop
        } else {
            Control::Continue
        }
    }

    #[inline]
    fn block(&mut self, start: u64, insns: u32) -> Control {
        self.inner.block(start, insns)
    }

    #[inline]
    fn taken_branch(&mut self, from: u64, to: u64, kind: BranchKind) -> Control {
        self.inner.taken_branch(from, to, kind)
    }
}
