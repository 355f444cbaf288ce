//! Helpers every module shares: the binary under test, run with arguments.

use std::path::{Path, PathBuf};
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

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The bundled workloads' directory.
pub fn workloads() -> PathBuf {
    root().join("workloads")
}

/// A bundled workload's binary.
pub fn workload(name: &str) -> PathBuf {
    workloads().join("bin").join(name)
}
