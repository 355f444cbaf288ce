//! What a run says on the terminal: the sandbox's refusals with the option that would grant
//! them, the guest's warnings, how an unusual run ended, the timing summary.

use crate::{refuse, Result};
use std::path::Path;

/// The console's hooks for a run: warnings to stderr, and (unless the guest is quiet) the
/// first refusal of each host path with the option that would grant it.
pub fn console_hooks<'a>(stdio: outcrop_run::Stdio) -> outcrop_run::Hooks<'a> {
    outcrop_run::Hooks {
        on_warning: Some(Box::new(|m| eprintln!("outcrop: warning: {m}"))),
        on_denial: (stdio != outcrop_run::Stdio::Quiet)
            .then(|| Box::new(report_denial) as outcrop_run::DenialHook),
        ..Default::default()
    }
}

/// Says on stderr how a run ended when it was unusual (a fault, the instruction limit, an
/// interrupt).
pub fn report_ending(s: &outcrop_run::RunSummaries) {
    if let Some(m) = s.ending() {
        eprintln!("outcrop: {m}");
    }
}

/// The first refusal of a host path: say which option would grant it.
fn report_denial(path: &Path, write: bool) {
    let (flag, grant) = if write {
        let exists = path.exists();
        let target = if exists {
            path
        } else {
            path.parent().unwrap_or(path)
        };
        ("--allow-rw", target)
    } else {
        ("--allow", path)
    };
    eprintln!(
        "outcrop: sandbox: the guest was refused {} ({}); {flag} {} would grant it",
        path.display(),
        if write { "write" } else { "read" },
        grant.display()
    );
}

/// The timing summary printed after a run (to stderr).
pub fn print_timing(t: &outcrop_timing::Totals) {
    eprint!(
        "{}",
        outcrop_events::escape::text(&outcrop_report::timing_summary(t))
    );
}

/// Reads the program `spec` runs, once (an error when none follows `--`).
pub fn read_image(spec: &outcrop_run::ProgramSpec) -> Result<outcrop_run::ProgramImage> {
    if spec.command.is_empty() {
        refuse!("{NO_PROGRAM}");
    }
    Ok(outcrop_run::ProgramImage::read(&spec.path())?.with_names(spec.names))
}

/// The error when no program follows `--`.
const NO_PROGRAM: &str =
    "no program given: name it after `--` (e.g. `outcrop exec -- workloads/bin/hello`)";
