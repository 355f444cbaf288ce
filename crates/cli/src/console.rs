//! What a run says on the terminal: the sandbox's refusals with the option that would grant
//! them, the guest's warnings, how an unusual run ended, the timing summary.

use crate::{refuse, Result};
use std::path::Path;

/// The console's hooks for a run: warnings to stderr, and (unless the guest is quiet) the
/// first refusal of each host path with the option that would grant it.
pub fn console_hooks<'a>(stdio: outcrop_run::Stdio) -> outcrop_run::Hooks<'a> {
    outcrop_run::Hooks {
        on_warning: Some(Box::new(|m| eprintln!("outcrop: warning: {m}"))),
        on_denial: (stdio != outcrop_run::Stdio::Quiet).then(|| {
            let mut hints = DenialHints::default();
            Box::new(move |path: &Path, denial| {
                if let Some(line) = hints.hint(path, denial) {
                    eprintln!("{line}");
                }
            }) as outcrop_run::DenialHook
        }),
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

/// The hint for the first refusal of a host path, and for a path the sysroot lacks that
/// the host has: which option would grant it. Locale and time-zone data are named as such
/// (the guest silently falls back to the C locale and UTC without them), locale data once
/// for all its files; a path the host lacks too gets no `--allow` (a `TZ` rule such as
/// `EST5EDT,M3.2.0,M11.1.0` is looked up as a file first).
#[derive(Default)]
pub struct DenialHints {
    locale_shown: bool,
}

/// What kind of host data a path is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum HostData {
    Locale,
    TimeZone,
    Other,
}

fn host_data(path: &Path) -> HostData {
    let s = path.to_string_lossy();
    let under = |dir: &str| {
        s.strip_prefix(dir)
            .is_some_and(|r| r.is_empty() || r.starts_with('/'))
    };
    if under("/usr/lib/locale")
        || under("/usr/share/locale")
        || under("/usr/share/i18n")
        || (s.starts_with("/usr/lib/") && s.contains("/gconv/"))
    {
        HostData::Locale
    } else if under("/usr/share/zoneinfo") || s == "/etc/localtime" || s == "/etc/timezone" {
        HostData::TimeZone
    } else {
        HostData::Other
    }
}

/// Where docs/machine.md tells how to run locale-dependent programs.
const LOCALE_DOCS: &str = "docs/machine.md \"Locales and time zones\"";

impl DenialHints {
    /// The line to print for `path`, denied as `denial` (`None`: nothing worth saying).
    pub fn hint(&mut self, path: &Path, denial: outcrop_run::Denial) -> Option<String> {
        use outcrop_run::Denial;
        let on_host = path.exists();
        let how = match denial {
            Denial::Refused { .. } => "was refused",
            Denial::NotInSysroot => "is not in the sysroot",
        };
        match (host_data(path), denial) {
            (_, Denial::Refused { write: true }) => Some(refused_write(path)),
            // (a riscv64 gconv module the host has no build of, say)
            (HostData::Locale, _) if self.locale_shown || !on_host => None,
            (HostData::Locale, _) => {
                let dirs: Vec<&str> = ["/usr/lib/locale", "/usr/share/locale"]
                    .into_iter()
                    .filter(|d| Path::new(d).is_dir())
                    .collect();
                if dirs.is_empty() {
                    return None;
                }
                self.locale_shown = true;
                let grants: Vec<String> = dirs.iter().map(|d| format!("--allow {d}")).collect();
                Some(format!(
                    "outcrop: sandbox: the guest looked for locale data ({} {how}), so it runs in the C locale; {} would give it the host's locales ({LOCALE_DOCS})",
                    path.display(),
                    grants.join(" ")
                ))
            }
            // a TZ rule looked up as a file, or a zone the host lacks: nothing to grant
            (HostData::TimeZone, _) if !on_host => None,
            (HostData::TimeZone, _) => {
                let mut grants = vec![format!("--allow {}", path.display())];
                if let Ok(target) = std::fs::canonicalize(path) {
                    if target != path {
                        grants.push(format!("--allow {}", target.display()));
                    }
                }
                Some(format!(
                    "outcrop: sandbox: the guest looked for time-zone data ({} {how}), so it keeps UTC; {} would grant it ({LOCALE_DOCS})",
                    path.display(),
                    grants.join(" ")
                ))
            }
            // the dynamic linker probes many paths a sysroot lacks
            (HostData::Other, Denial::NotInSysroot) => None,
            (HostData::Other, Denial::Refused { .. }) if !on_host => Some(format!(
                "outcrop: sandbox: the guest was refused {} (read; it does not exist on the host either)",
                path.display()
            )),
            (HostData::Other, Denial::Refused { .. }) => Some(format!(
                "outcrop: sandbox: the guest was refused {} (read); --allow {} would grant it",
                path.display(),
                path.display()
            )),
        }
    }
}

/// The hint for a refused write: the file, or the directory to create it in.
fn refused_write(path: &Path) -> String {
    let target = if path.exists() {
        path
    } else {
        path.parent().unwrap_or(path)
    };
    format!(
        "outcrop: sandbox: the guest was refused {} (write); --allow-rw {} would grant it",
        path.display(),
        target.display()
    )
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
    Ok(outcrop_run::ProgramImage::read(&spec.path())?.with_naming(spec.naming()))
}

/// The error when no program follows `--`.
const NO_PROGRAM: &str =
    "no program given: name it after `--` (e.g. `outcrop exec -- workloads/bin/hello`)";
