//! Helpers every module shares: the binary under test, run with arguments (and, from
//! `outcrop-testkit`, the repository's paths every crate's tests share).

use std::path::Path;
use std::process::{Command, Output};

/// `outcrop ARGS` in the test's working directory.
pub fn outcrop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(args)
        .output()
        .expect("run outcrop")
}

/// `outcrop ARGS` in `dir`.
pub fn outcrop_in(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run outcrop")
}

pub use outcrop_testkit::{root, workload, workloads};
