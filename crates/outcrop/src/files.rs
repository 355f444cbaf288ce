//! The binary's files: inputs read with a bound, outputs written so that nothing is lost or
//! clobbered, and partial outputs removed when a run is interrupted.
//!
//! **Inputs** ([`read_bounded`], [`read_text_bounded`]) must be regular files no larger than a
//! cap named per kind ([`MAX_PROGRAM_BYTES`], [`MAX_PROFILE_BYTES`], [`MAX_CONFIG_BYTES`]):
//! `/dev/zero`, a FIFO or a directory is refused by name before anything is read, and the read
//! itself stops at the cap, so a file that grows meanwhile cannot exhaust memory either.
//!
//! **Outputs** ([`write_output`]):
//! * a new name or an existing regular file is written atomically: `NAME.partial` beside it,
//!   then a rename, so a failed or interrupted run never leaves half a file in its place;
//! * a symlink is followed and its target replaced that way (the link stays a link);
//! * a device, FIFO or socket (`/dev/null`, `/dev/stdout`, a pipe) and `-` (stdout) are written
//!   directly: renaming over them would replace the node itself.
//!
//! **Interrupts:** [`remove_partials_on_signals`] installs handlers for SIGINT, SIGTERM and
//! SIGHUP that delete every `.partial` file being written and exit with 128 + the signal. A
//! SIGKILL cannot be caught: its `.partial` stays, and the next run to the same output
//! overwrites it (the name has no pid in it for that reason).

use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Largest program (ELF file) Outcrop reads: 1 GiB.
pub const MAX_PROGRAM_BYTES: u64 = 1 << 30;
/// Largest profile Outcrop reads (`.wpp`, samples file, text trace): 1 GiB.
pub const MAX_PROFILE_BYTES: u64 = 1 << 30;
/// Largest configuration file (`--timing=FILE`): 1 MiB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads `path`, `what` it is (for messages), refusing anything but a regular file of at most
/// `cap` bytes.
pub fn read_bounded(path: &Path, what: &str, cap: u64) -> Result<Vec<u8>> {
    let f = File::open(path).with_context(|| format!("cannot open {what} {}", path.display()))?;
    let meta = f
        .metadata()
        .with_context(|| format!("cannot stat {what} {}", path.display()))?;
    if !meta.is_file() {
        bail!(
            "{what} {} is not a regular file ({})",
            path.display(),
            file_kind(&meta)
        );
    }
    if meta.len() > cap {
        bail!(
            "{what} {} has {} bytes; the most Outcrop reads is {} bytes",
            path.display(),
            meta.len(),
            cap
        );
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    f.take(cap + 1)
        .read_to_end(&mut out)
        .with_context(|| format!("cannot read {what} {}", path.display()))?;
    if out.len() as u64 > cap {
        bail!(
            "{what} {} grew past {} bytes while being read",
            path.display(),
            cap
        );
    }
    Ok(out)
}

/// As [`read_bounded`], as UTF-8 text; invalid UTF-8 is an error naming the line and byte.
pub fn read_text_bounded(path: &Path, what: &str, cap: u64) -> Result<String> {
    let bytes = read_bounded(path, what, cap)?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        anyhow::anyhow!(
            "{}:{line}: invalid UTF-8 at byte offset {at} (is this a {what}?)",
            path.display()
        )
    })
}

fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// `.partial` files being written now (removed by the signal handler).
static PARTIALS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn partials() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    PARTIALS.lock().unwrap_or_else(|e| e.into_inner())
}

/// On SIGINT, SIGTERM or SIGHUP: remove the `.partial` files being written and exit with
/// status 128 + signal. Call once, from `main`.
pub fn remove_partials_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return; // no handlers: partial files may stay, as after a SIGKILL
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            for p in partials().drain(..) {
                let _ = std::fs::remove_file(p);
            }
            std::process::exit(128 + sig);
        }
    });
}

/// Where an output goes.
enum Target {
    /// Write directly (stdout, a device, a FIFO, a socket).
    Direct(File),
    /// Write `NAME.partial`, then rename it to this path.
    Atomic(PathBuf),
}

/// Follows symlinks at `path` (at most 40, as Linux does) to the node an output replaces.
fn target(path: &Path) -> Result<Target> {
    if path.as_os_str() == "-" {
        use std::os::fd::AsFd;
        let fd = std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .context("cannot use stdout")?;
        return Ok(Target::Direct(File::from(fd)));
    }
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        let meta = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Target::Atomic(p)),
            Err(e) => return Err(e).with_context(|| format!("cannot stat {}", p.display())),
        };
        if meta.file_type().is_symlink() {
            let to = std::fs::read_link(&p)
                .with_context(|| format!("cannot read the symlink {}", p.display()))?;
            p = match p.parent() {
                Some(dir) if to.is_relative() => dir.join(to),
                _ => to,
            };
            continue;
        }
        if meta.is_file() {
            return Ok(Target::Atomic(p));
        }
        if meta.is_dir() {
            bail!("{} is a directory", p.display());
        }
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .with_context(|| format!("cannot open {} for writing", p.display()))?;
        return Ok(Target::Direct(f));
    }
    bail!("{}: too many levels of symbolic links", path.display())
}

/// Writes an output at `path` (see the module docs: atomic for regular files and new names,
/// through symlinks, direct for devices, FIFOs and `-`).
pub fn write_output(path: &Path, write: impl FnOnce(&mut File) -> Result<()>) -> Result<()> {
    let final_path = match target(path)? {
        Target::Direct(mut f) => {
            write(&mut f)?;
            return f
                .flush()
                .with_context(|| format!("cannot write {}", path.display()));
        }
        Target::Atomic(p) => p,
    };
    let Some(file_name) = final_path.file_name() else {
        bail!("{} is not a file path", path.display());
    };
    let mut tmp_name = file_name.to_os_string();
    tmp_name.push(".partial");
    let tmp = final_path.with_file_name(tmp_name);
    partials().push(tmp.clone());
    let result = (|| {
        let mut f =
            File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        write(&mut f)?;
        f.sync_all()
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &final_path)
            .with_context(|| format!("cannot rename to {}", final_path.display()))
    })();
    partials().retain(|p| p != &tmp);
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Checks that `elf` (read from `binary`) is the program `profile` was recorded from, by the
/// program id the profile keeps (`recorded`; empty in files from before ids were kept, which
/// are let through with a warning). A mismatch is an error naming both, unless `ignore`
/// (`--ignore-program-id`) makes it a warning.
pub fn check_program(
    profile: &Path,
    recorded: &str,
    binary: &Path,
    elf: &[u8],
    ignore: bool,
) -> Result<()> {
    if recorded.is_empty() {
        eprintln!(
            "outcrop: warning: {} does not say which build of its program it profiles (an older file); cannot check {}",
            profile.display(),
            binary.display()
        );
        return Ok(());
    }
    let actual = outcrop_rv::elf::program_id(elf).with_context(|| binary.display().to_string())?;
    if actual == recorded {
        return Ok(());
    }
    let msg = format!(
        "{} was recorded from a program with {recorded}, but {} has {actual}",
        profile.display(),
        binary.display()
    );
    if ignore {
        eprintln!("outcrop: warning: {msg} (--ignore-program-id: reading it anyway)");
        Ok(())
    } else {
        bail!("{msg}; name the program it was recorded from with --binary, or pass --ignore-program-id")
    }
}

/// The most resident memory this process has used, in bytes (`VmHWM`), if the host says.
pub fn max_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_regular_and_oversized_inputs_are_refused_by_name() {
        let e = read_bounded(Path::new("/dev/zero"), "program", 1 << 20).unwrap_err();
        assert!(
            e.to_string()
                .contains("/dev/zero is not a regular file (a character device)"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let e = read_bounded(dir.path(), "profile", 1 << 20).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let big = dir.path().join("big");
        std::fs::write(&big, vec![0u8; 100]).unwrap();
        let e = read_bounded(&big, "config", 99).unwrap_err();
        assert!(e.to_string().contains("has 100 bytes"), "{e}");
        assert_eq!(read_bounded(&big, "config", 100).unwrap().len(), 100);
        std::fs::write(&big, b"ok\n\xff").unwrap();
        let e = read_text_bounded(&big, "samples file", 100).unwrap_err();
        assert!(
            e.to_string().contains(":2: invalid UTF-8 at byte offset 3"),
            "{e}"
        );
    }

    #[test]
    fn outputs_replace_files_follow_symlinks_and_write_devices_directly() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        std::fs::write(&real, "old").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink("real.txt", &link).unwrap();
        write_output(&link, |f| Ok(f.write_all(b"new")?)).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        // a dangling link: its target is created
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink("made.txt", &dangling).unwrap();
        write_output(&dangling, |f| Ok(f.write_all(b"x")?)).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("made.txt")).unwrap(),
            "x"
        );
        // a device is written, not replaced
        write_output(Path::new("/dev/null"), |f| Ok(f.write_all(b"x")?)).unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        // a failed write leaves the old file and no .partial
        let e = write_output(&real, |_| bail!("boom"));
        assert!(e.is_err());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        assert!(!dir.path().join("real.txt.partial").exists());
        assert!(partials().is_empty());
        assert!(write_output(dir.path(), |_| Ok(())).is_err());
    }
}
