//! Helpers every Outcrop crate's tests share (a dev-dependency only, never a dependency):
//! where the repository and the bundled workloads are, and whether an external tool (the
//! cross toolchain, qemu-user, LLVM, BOLT, perf) is installed — with the `OUTCROP_REQUIRE_*`
//! guard that turns a skipped test into a failure where CI promises the tool.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The bundled workloads' directory (`workloads/`: the manifest, sources, inputs).
pub fn workloads() -> PathBuf {
    root().join("workloads")
}

/// A bundled workload's binary (`workloads/bin/NAME`).
pub fn workload(name: &str) -> PathBuf {
    workloads().join("bin").join(name)
}

/// Whether `tool --version` runs and succeeds here.
pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether `tool` is here. Without it the test that asks skips its part (a note on stderr),
/// unless the environment variable `require` is set — CI sets it where it installs the tool,
/// so a tool that went missing fails there instead of passing silently.
pub fn have_or_skip(tool: &str, require: &str) -> bool {
    if have(tool) {
        return true;
    }
    assert!(
        std::env::var_os(require).is_none(),
        "{tool} missing but {require} is set"
    );
    eprintln!("note: no {tool}: skipped (set {require} to make this a failure)");
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paths_are_the_repositorys() {
        assert!(workloads().join("manifest.toml").is_file());
        assert!(root().join("Cargo.toml").is_file());
        assert!(workload("hello").ends_with("workloads/bin/hello"));
    }

    #[test]
    fn a_missing_tool_is_skipped_unless_required() {
        assert!(!have("outcrop-no-such-tool"));
        assert!(!have_or_skip(
            "outcrop-no-such-tool",
            "OUTCROP_TESTKIT_NEVER_SET"
        ));
        assert!(have("cargo"));
    }
}
