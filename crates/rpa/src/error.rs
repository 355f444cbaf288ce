//! The one error type of the RPA's library APIs: each variant says which part of a
//! configuration or a query set was refused, and its message says why (values and names
//! included), as the command line shows it.

/// Why a configuration, a service or a set of queries cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The hardware model's sizes (`--rpa-hw`: networks, buffers, slots, stages, cycles).
    #[error("{0}")]
    Hardware(String),
    /// The adaptive rate's budget, window or levels (`--rpa-adaptive`).
    #[error("{0}")]
    Adaptive(String),
    /// The prefetching service's sizes or latency (`--rpa-prefetch`).
    #[error("{0}")]
    Prefetch(String),
    /// A service cannot read the records its queue carries (a missing item, a bad heap).
    #[error("{0}")]
    Service(String),
    /// The queries, queues and services do not fit together (two record shapes on one
    /// queue, a service for a queue nobody sends to, timing items without timing).
    #[error("{0}")]
    Plan(String),
}
