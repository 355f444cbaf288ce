//! Every record accounted for: per query, how many of its classes' records retired, how many
//! its sampling selected, how many its clauses filtered out, and what became of each send.

use serde::Serialize;

/// One query's accounting over a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueryStats {
    /// Records of its classes (or events) that occurred.
    pub records: u64,
    /// Records its `every N` sampling selected (all of them with `always`).
    pub selected: u64,
    /// Records its sampling selected that the adaptive rate then threw away (not counted in
    /// `selected`; zero unless the hardware model throttles).
    pub throttled: u64,
    /// Selected records its clauses sent nowhere.
    pub filtered: u64,
    /// Messages written into a queue.
    pub sent: u64,
    /// Messages a sampled query dropped because the queue was full.
    pub dropped: u64,
    /// Messages lost because the queue's service thread had stopped (an error).
    pub lost: u64,
    /// Sends that found the queue full and waited (back-pressure on `always` queries).
    pub waited: u64,
    /// Interrupt actions.
    pub interrupts: u64,
    /// Query instructions executed.
    pub steps: u64,
}

impl QueryStats {
    /// Whether anything was lost or dropped.
    pub fn lossless(&self) -> bool {
        self.dropped == 0 && self.lost == 0
    }
}
