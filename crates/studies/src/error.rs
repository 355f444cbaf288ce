//! The one error type of the studies library.

use std::path::PathBuf;

/// What can go wrong declaring, running or reading a study. Each variant names what and
/// where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The workload manifest could not be read or parsed.
    #[error("{}: {detail}", path.display())]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong (with the line, for a parse error).
        detail: String,
    },
    /// A workload named by a study or a flag is not in the manifest.
    #[error("no workload `{0}` in the manifest (workloads/manifest.toml)")]
    UnknownWorkload(String),
    /// A file or directory of the study could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A result record could not be read back.
    #[error("{}: not a result record of this study: {detail}", path.display())]
    Record {
        /// The record's file.
        path: PathBuf,
        /// The decoding error.
        detail: String,
    },
    /// A run failed.
    #[error(transparent)]
    Run(#[from] outcrop_run::Error),
    /// A job failed for a reason of the study's own.
    #[error("{0}")]
    Job(String),
    /// Slurm refused the submission or is not there.
    #[error("slurm: {0}")]
    Slurm(String),
    /// Jobs failed (their ids and errors); the rest of the sweep was recorded.
    #[error("{} job(s) failed: {}", .0.len(), .0.iter().map(|(j, e)| format!("{j}: {e}")).collect::<Vec<_>>().join("; "))]
    Failed(Vec<(String, String)>),
    /// A chart could not be drawn.
    #[error("chart: {0}")]
    Chart(String),
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: &std::path::Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
