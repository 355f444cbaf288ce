//! [`Sampler`]: branch-record units (and optionally the exact counter) attached to the
//! machine, bare ([`Observer`]) or under the timing model ([`TimedObserver`]).
//!
//! Several units can watch one run: they only observe, so a sweep over periods and buffer
//! depths needs one run, and every unit sees the very same execution as the exact counter.

use crate::exact::ExactCounter;
use crate::lbr::LbrUnit;
use outcrop_rv::inst::Class;
use outcrop_rv::{Control, Observer, Retire};
use outcrop_timing::{Stamp, TimedObserver};

/// Units and an exact counter on one run.
pub struct Sampler<'a> {
    /// The branch-record units.
    pub units: Vec<LbrUnit>,
    /// The exact reference, when wanted.
    pub exact: Option<ExactCounter<'a>>,
    /// Instructions retired so far.
    pub instructions: u64,
    /// Cycle of the last retirement (timed runs).
    pub cycles: u64,
}

impl<'a> Sampler<'a> {
    /// Units (and an exact counter) for one run.
    pub fn new(units: Vec<LbrUnit>, exact: Option<ExactCounter<'a>>) -> Sampler<'a> {
        Sampler {
            units,
            exact,
            instructions: 0,
            cycles: 0,
        }
    }

    #[inline]
    fn on_retire(&mut self, r: &Retire, cycle: u64) {
        self.instructions += 1;
        self.cycles = cycle;
        let branch = r.class == Some(Class::Branch);
        for u in &mut self.units {
            if r.transfer.is_some() {
                u.branch(r.pc, r.next_pc, true);
            } else if branch {
                u.branch(r.pc, r.next_pc, false);
            }
            u.tick(self.instructions, cycle);
        }
    }

    #[inline]
    fn on_block(&mut self, start: u64) -> Control {
        if let Some(e) = &mut self.exact {
            e.push_block(start);
        }
        Control::Continue
    }
}

impl Observer for Sampler<'_> {
    const RETIRE: bool = true;
    const BLOCKS: bool = true;

    #[inline]
    fn retire(&mut self, r: &Retire) -> Control {
        self.on_retire(r, 0);
        Control::Continue
    }

    #[inline]
    fn block(&mut self, start: u64, _insns: u32) -> Control {
        self.on_block(start)
    }
}

impl TimedObserver for Sampler<'_> {
    const BLOCKS: bool = true;

    #[inline]
    fn retire(&mut self, r: &Retire, t: &Stamp) -> Control {
        self.on_retire(r, t.retire);
        Control::Continue
    }

    #[inline]
    fn block(&mut self, start: u64, _insns: u32) -> Control {
        self.on_block(start)
    }
}
