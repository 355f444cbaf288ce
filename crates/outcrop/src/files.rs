//! The binary's files: `outcrop_cli::files` (atomic outputs, report directories, bounded
//! inputs), with the writers' results as the binary's `anyhow` results.

pub use outcrop_cli::files::*;
use std::fs::File;
use std::path::Path;

/// [`outcrop_cli::files::write_output`], the writer returning the binary's result.
pub fn write_output(
    path: &Path,
    write: impl FnOnce(&mut File) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    outcrop_cli::files::write_output(path, write)
}
