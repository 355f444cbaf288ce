//! Mechanisms that act on the core, not only watch it: a [`Feedback`] can hold an instruction
//! at dispatch until a resource it needs frees (the RPA's profile networks and buffers), and
//! can ask for cache lines to be filled at a later cycle ([`Fills`]: a prefetching service).
//!
//! The model consults a feedback only when its type says it is [`Feedback::ACTIVE`]; the model
//! without one ([`NoFeedback`]) is compiled without the calls and without the fill checks, so a
//! run that uses no feedback pays nothing (docs/BENCHMARKS.md measures it).

use outcrop_events::record::{Retire, Stamp};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// A mechanism attached to the core.
pub trait Feedback {
    /// Whether the model calls it at all.
    const ACTIVE: bool = true;

    /// The earliest cycle instruction `r` may dispatch, given `d`, the cycle the core would
    /// dispatch it in. Return `d` to let it go; a later cycle holds it (and every younger
    /// instruction: dispatch is in order).
    fn dispatch(&mut self, r: &Retire, d: u64) -> u64;

    /// `r` has its final cycles `s` (resources held until retire free at `s.retire`); fills
    /// asked for now enter the caches at their cycle.
    fn stamped(&mut self, r: &Retire, s: &Stamp, fills: &mut Fills);

    /// The run is over: finish what waits for a later instruction.
    fn finish(&mut self) {}

    /// The records from here are another process and program's (every record before it has
    /// been stamped).
    fn process(&mut self, _p: &outcrop_events::ProcessSwitch) {}

    /// An object was mapped executable.
    fn mapped(&mut self, _m: &outcrop_events::record::Mapping<'_>) {}
}

/// No feedback: the model as it always was.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoFeedback;

impl Feedback for NoFeedback {
    const ACTIVE: bool = false;

    #[inline(always)]
    fn dispatch(&mut self, _r: &Retire, d: u64) -> u64 {
        d
    }

    #[inline(always)]
    fn stamped(&mut self, _r: &Retire, _s: &Stamp, _fills: &mut Fills) {}
}

impl<F: Feedback> Feedback for &mut F {
    const ACTIVE: bool = F::ACTIVE;

    #[inline]
    fn dispatch(&mut self, r: &Retire, d: u64) -> u64 {
        (**self).dispatch(r, d)
    }

    #[inline]
    fn stamped(&mut self, r: &Retire, s: &Stamp, fills: &mut Fills) {
        (**self).stamped(r, s, fills)
    }

    #[inline]
    fn finish(&mut self) {
        (**self).finish()
    }

    fn process(&mut self, p: &outcrop_events::ProcessSwitch) {
        (**self).process(p)
    }

    fn mapped(&mut self, m: &outcrop_events::record::Mapping<'_>) {
        (**self).mapped(m)
    }
}

/// Most fills in flight; asking for more drops the request (and counts it).
pub const MAX_FILLS: usize = 4096;

/// Cache fills asked for by a mechanism, each arriving at a cycle: the line enters the L2
/// (and with `l1`, the L1D) when an access at or after that cycle needs it. A demand miss on a
/// line whose fill is still in flight waits only for the fill.
#[derive(Clone, Debug, Default)]
pub struct Fills {
    /// log2 of the L2 line size: lines in flight are tracked per L2 line.
    shift: u32,
    queue: BinaryHeap<Reverse<(u64, u64, bool)>>,
    /// Arrival cycle of each line in flight (its earliest request).
    in_flight: HashMap<u64, u64>,
    /// Fills asked for.
    pub requested: u64,
    /// Requests dropped because [`MAX_FILLS`] were in flight.
    pub dropped: u64,
    /// Fills that entered the caches.
    pub filled: u64,
    /// Demand misses that found their line in flight (a late fill: partly hidden).
    pub late: u64,
}

/// Equal when the same fills are in flight (the queue's order compared sorted).
impl PartialEq for Fills {
    fn eq(&self, o: &Fills) -> bool {
        let sorted = |f: &Fills| {
            let mut q: Vec<_> = f.queue.iter().map(|r| r.0).collect();
            q.sort_unstable();
            q
        };
        (self.shift, &self.in_flight, self.requested, self.dropped)
            == (o.shift, &o.in_flight, o.requested, o.dropped)
            && (self.filled, self.late) == (o.filled, o.late)
            && sorted(self) == sorted(o)
    }
}

impl Fills {
    /// No fills, lines of `1 << shift` bytes.
    pub(crate) fn new(shift: u32) -> Fills {
        Fills {
            shift,
            ..Fills::default()
        }
    }

    /// Asks for the line of `addr` to arrive at cycle `at` (in the L1D too with `l1`).
    pub fn push(&mut self, addr: u64, at: u64, l1: bool) {
        self.requested += 1;
        if self.queue.len() >= MAX_FILLS {
            self.dropped += 1;
            return;
        }
        self.queue.push(Reverse((at, addr, l1)));
        let e = self.in_flight.entry(addr >> self.shift).or_insert(at);
        *e = (*e).min(at);
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Removes and returns the fills that have arrived by `cycle`.
    pub(crate) fn arrived(&mut self, cycle: u64, mut each: impl FnMut(u64, bool)) {
        while let Some(&Reverse((at, addr, l1))) = self.queue.peek() {
            if at > cycle {
                break;
            }
            self.queue.pop();
            let line = addr >> self.shift;
            if self.in_flight.get(&line).is_some_and(|&a| a <= cycle) {
                self.in_flight.remove(&line);
            }
            self.filled += 1;
            each(addr, l1);
        }
    }

    /// The cycle the line of `addr` arrives, if a fill for it is in flight.
    pub(crate) fn arriving(&self, addr: u64) -> Option<u64> {
        self.in_flight.get(&(addr >> self.shift)).copied()
    }
}
