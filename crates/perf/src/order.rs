//! perf's event order: `perf record` writes each CPU's buffer in turn, so a process's `MMAP`
//! record can come after samples another CPU took in that process once it was mapped. `perf
//! report` sorts by time stamp, flushing at each `FINISHED_ROUND` record every event older
//! than the round before it ended (tools/perf/util/ordered-events.c); [`Ordered`] does the
//! same, with a bound on what it holds.

use crate::data::Event;

/// `PERF_RECORD_FINISHED_ROUND`.
pub const FINISHED_ROUND: u32 = 68;

/// Most events held back before the oldest half is released regardless (a file without
/// round markers is then ordered within windows of this size).
pub const MAX_HELD: usize = 1 << 18;

/// Events in time order (see the module docs).
#[derive(Default)]
pub struct Ordered {
    held: Vec<(u64, u64, u64, Event)>,
    seq: u64,
    /// The latest time stamp seen.
    max: u64,
    /// The latest time stamp seen when the previous round ended.
    previous_round: u64,
    ready: std::collections::VecDeque<(u64, Event)>,
}

impl Ordered {
    /// An empty queue.
    pub fn new() -> Ordered {
        Ordered::default()
    }

    /// Takes event `e` read at byte `at` with time stamp `time` (events without one keep
    /// the time of the one before them).
    pub fn push(&mut self, at: u64, time: Option<u64>, e: Event) {
        if matches!(e, Event::Other(FINISHED_ROUND)) {
            let limit = self.previous_round;
            self.previous_round = self.max;
            self.release(|t| t <= limit, usize::MAX);
            return;
        }
        let t = time.unwrap_or(self.max);
        self.max = self.max.max(t);
        self.held.push((t, self.seq, at, e));
        self.seq += 1;
        if self.held.len() >= MAX_HELD {
            self.release(|_| true, MAX_HELD / 2);
        }
    }

    /// Every event held, in order (at the end of the input).
    pub fn finish(&mut self) {
        self.release(|_| true, usize::MAX);
    }

    /// The next event in order that is ready, with its byte offset.
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.ready.pop_front()
    }

    /// Releases, oldest first, at most `most` held events whose time `keep` accepts.
    fn release(&mut self, keep: impl Fn(u64) -> bool, most: usize) {
        self.held.sort_unstable_by_key(|&(t, s, _, _)| (t, s));
        let n = self
            .held
            .iter()
            .take(most)
            .take_while(|&&(t, _, _, _)| keep(t))
            .count();
        for (_, _, at, e) in self.held.drain(..n) {
            self.ready.push_back((at, e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(n: u32) -> Event {
        Event::Lost {
            count: u64::from(n),
        }
    }

    #[test]
    fn events_come_out_by_time_once_their_round_is_past() {
        let mut o = Ordered::new();
        o.push(0, Some(20), ev(2));
        o.push(1, Some(10), ev(1));
        o.push(2, None, ev(3)); // no time: the latest seen (20), after the 20
        o.push(3, None, Event::Other(FINISHED_ROUND));
        assert!(o.pop().is_none(), "the first round waits for the next");
        o.push(4, Some(15), ev(4)); // from another CPU's buffer, older than the round's end
        o.push(5, None, Event::Other(FINISHED_ROUND));
        let got: Vec<u64> = std::iter::from_fn(|| o.pop()).map(|(at, _)| at).collect();
        assert_eq!(got, [1, 4, 0, 2]);
        o.push(6, Some(30), ev(5));
        o.finish();
        assert_eq!(o.pop().map(|(at, _)| at), Some(6));
    }

    #[test]
    fn without_round_markers_what_is_held_stays_bounded() {
        let mut o = Ordered::new();
        for i in 0..(MAX_HELD as u64 + 10) {
            o.push(i, Some(i), ev(0));
        }
        assert!(o.held.len() < MAX_HELD);
        o.finish();
        let n = std::iter::from_fn(|| o.pop()).count();
        assert_eq!(n, MAX_HELD + 10);
    }
}
