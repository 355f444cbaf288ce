//! The crate's one error type (loading; guest faults are [`crate::Outcome::Fault`]).

/// What can go wrong before the guest runs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The program is not a static RV64 ELF executable we can load.
    #[error("cannot load ELF program: {0}")]
    Elf(String),
    /// The memory limit is too small.
    #[error("out of guest memory while {0}")]
    OutOfMemory(String),
}
