//! The crate's one error type.

/// Everything that can go wrong in `outcrop-rap`. Variants carry what and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A [`crate::Config`] field is out of its documented range.
    #[error("invalid RAP config `{field}`: {reason}")]
    InvalidConfig {
        /// The field name.
        field: &'static str,
        /// Why it was rejected.
        reason: String,
    },
    /// A value does not fit in the tree's universe.
    #[error("value {value:#x} is outside the {bits}-bit universe")]
    ValueOutOfRange {
        /// The value.
        value: u64,
        /// Universe bits of the tree.
        bits: u8,
    },
    /// A query range is empty or reaches outside the universe.
    #[error("invalid range [{lo:#x}, {hi:#x}]: {reason}")]
    InvalidRange {
        /// Lower end.
        lo: u64,
        /// Upper end.
        hi: u64,
        /// Why.
        reason: &'static str,
    },
    /// A hot-range fraction is not in (0, 1].
    #[error("hot fraction must be in (0, 1], got {0}")]
    InvalidFraction(f64),
    /// The event count would exceed `u64::MAX`.
    #[error("event count overflow: {n} + {weight} exceeds 2^64 - 1")]
    CountOverflow {
        /// Events so far.
        n: u64,
        /// Weight being added.
        weight: u64,
    },
    /// The node arena is full (2³² node slots).
    #[error("RAP tree capacity exceeded ({nodes} nodes)")]
    CapacityExceeded {
        /// Live nodes when it happened.
        nodes: u64,
    },
    /// Two trees with different configs cannot be merged.
    #[error("cannot merge RAP trees with different configs: {0}")]
    ConfigMismatch(String),
    /// A serialized tree could not be decoded.
    #[error("RAP tree decode error at byte offset {offset}: {reason}")]
    Decode {
        /// Byte offset in the input.
        offset: u64,
        /// What was wrong.
        reason: String,
    },
    /// A JSON tree could not be parsed or does not describe a valid tree.
    #[error("RAP tree JSON error: {0}")]
    Json(String),
}
