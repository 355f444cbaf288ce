//! [`BranchRecorder`]: branch-record units attached to a retire stream.
//!
//! Several units can watch one run: they only observe, so a sweep over periods and buffer
//! depths needs one run, and every unit sees the very same execution. With timing stamps the
//! cycle-period units count the model's cycles; without, cycles stay 0.

use crate::lbr::LbrUnit;
use outcrop_events::record::{Class, Control, Observer, Retire, Stamp};

/// Branch-record units on one run.
#[derive(Clone, Debug, Default)]
pub struct BranchRecorder {
    /// The branch-record units.
    pub units: Vec<LbrUnit>,
    /// Instructions retired so far.
    pub instructions: u64,
    /// Cycle of the last retirement (timed runs; 0 otherwise).
    pub cycles: u64,
}

impl BranchRecorder {
    /// Units for one run.
    pub fn new(units: Vec<LbrUnit>) -> BranchRecorder {
        BranchRecorder {
            units,
            instructions: 0,
            cycles: 0,
        }
    }
}

impl Observer for BranchRecorder {
    const RETIRE: bool = true;

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
}
