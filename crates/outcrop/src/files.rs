//! The binary's files: inputs read with a bound, outputs written so that nothing is lost or
//! clobbered, and partial outputs removed when a run is interrupted.
//!
//! **Inputs** are read with `outcrop_run::files::read_bounded` (re-exported here): opened
//! without blocking, refused by name unless a regular file no larger than a cap named per kind,
//! before anything is read (docs/machine.md, "Security model").
//!
//! **Outputs** ([`write_output`], [`create_output`]):
//! * `-`, `/dev/stdout` and `/dev/stderr` (also as `/dev/fd/1`, `/proc/self/fd/2`, …) are
//!   written to the descriptor this process already holds, never re-opened or re-created: with
//!   stdout redirected to a file, the guest's output before it stays;
//! * a new name or an existing regular file is written atomically: a temporary file created
//!   beside it with `O_CREAT|O_EXCL` under a random name (`.NAME.XXXXXX.partial`, which a
//!   planted file or symlink cannot be: creation fails rather than follow it, and a new random
//!   name is tried), then renamed onto the name, so a failed or interrupted run never leaves
//!   half a file in its place;
//! * a symlink at the name is followed and its target replaced that way (the link stays a link);
//! * another device, FIFO or socket (`/dev/null`, a named pipe) is written directly: renaming
//!   over it would replace the node itself.
//!
//! **Interrupts:** [`remove_partials_on_signals`] installs handlers for SIGINT, SIGTERM and
//! SIGHUP that delete every temporary file being written and exit with 128 + the signal. A
//! SIGKILL cannot be caught: its `.partial` file stays (a hidden name beside the output).

use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

pub use outcrop_run::files::{
    open_regular, read_bounded, read_text_bounded, MAX_CONFIG_BYTES, MAX_PROFILE_BYTES,
    MAX_PROGRAM_BYTES,
};

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
        for sig in signals.forever() {
            if sig == SIGINT
                && INTERRUPTIBLE.load(Ordering::SeqCst)
                && !INTERRUPT.swap(true, Ordering::SeqCst)
            {
                continue; // the run stops the guest and finishes its profiles
            }
            for p in partials().drain(..) {
                let _ = std::fs::remove_file(p);
            }
            std::process::exit(128 + sig);
        }
    });
}

/// Where an output goes.
enum Target {
    /// Write directly (stdout, stderr, a device, a FIFO, a socket).
    Direct(File),
    /// Write a temporary file beside this path, then rename it onto the path.
    Atomic(PathBuf),
}

/// The standard stream a path names, if it names one: `-` (stdout), `/dev/stdout`,
/// `/dev/stderr`, `/dev/fd/1|2`, `/proc/self/fd/1|2`. Matched by name, before any lookup: the
/// node behind these names is this process's own descriptor, which re-opening would replace
/// (a regular file) or cannot create (a pipe).
fn standard_stream(path: &Path) -> Option<u8> {
    let s = path.as_os_str().to_str()?;
    match s {
        "-" | "/dev/stdout" | "/dev/fd/1" | "/proc/self/fd/1" => Some(1),
        "/dev/stderr" | "/dev/fd/2" | "/proc/self/fd/2" => Some(2),
        _ => None,
    }
}

/// Another descriptor for stdout (1) or stderr (2), whatever it is (file, pipe, terminal).
fn dup_standard(which: u8) -> Result<File> {
    use std::os::fd::AsFd;
    let fd = if which == 1 {
        // what the guest wrote through our stdout goes first
        std::io::stdout().flush().context("cannot write stdout")?;
        std::io::stdout().as_fd().try_clone_to_owned()
    } else {
        std::io::stderr().as_fd().try_clone_to_owned()
    };
    let name = if which == 1 { "stdout" } else { "stderr" };
    Ok(File::from(
        fd.with_context(|| format!("cannot use {name}"))?,
    ))
}

/// Follows symlinks at `path` (at most 40, as Linux does) to the node an output replaces.
fn target(path: &Path) -> Result<Target> {
    if let Some(which) = standard_stream(path) {
        return Ok(Target::Direct(dup_standard(which)?));
    }
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        if let Some(which) = standard_stream(&p) {
            return Ok(Target::Direct(dup_standard(which)?));
        }
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
        // a FIFO with no reader must not hang the run: open without blocking (ENXIO then),
        // then write in blocking mode
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
            .open(&p)
            .with_context(|| {
                format!(
                    "cannot open {} for writing{}",
                    p.display(),
                    if std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()) {
                        " (a FIFO nobody reads)"
                    } else {
                        ""
                    }
                )
            })?;
        outcrop_run::files::set_blocking(&f)
            .with_context(|| format!("cannot use {}", p.display()))?;
        return Ok(Target::Direct(f));
    }
    bail!("{}: too many levels of symbolic links", path.display())
}

/// An output being written: a handle to write through, and (for regular files) the temporary
/// file that becomes the real one at [`OutputFile::commit`]. Dropped uncommitted, the
/// temporary file is removed and the old output (if any) stays.
pub struct OutputFile {
    file: File,
    /// The temporary file and the final name, for atomic outputs.
    atomic: Option<(tempfile::TempPath, PathBuf)>,
    shown: PathBuf,
}

/// Opens an output at `path` (see the module docs: atomic for regular files and new names,
/// through symlinks, direct for the standard streams, devices and FIFOs).
pub fn create_output(path: &Path) -> Result<OutputFile> {
    let final_path = match target(path)? {
        Target::Direct(file) => {
            return Ok(OutputFile {
                file,
                atomic: None,
                shown: path.to_path_buf(),
            })
        }
        Target::Atomic(p) => p,
    };
    atomic_output(final_path, path)
}

/// A temporary file beside `final_path` that [`OutputFile::commit`] renames onto it (`shown`
/// in messages).
fn atomic_output(final_path: PathBuf, shown: &Path) -> Result<OutputFile> {
    let path = shown;
    let Some(file_name) = final_path.file_name() else {
        bail!("{} is not a file path", path.display());
    };
    let dir = match final_path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(file_name);
    prefix.push(".");
    // O_CREAT|O_EXCL under a random name (tempfile retries on a collision); the mode is the
    // one a plain create would get (0666 less the umask), not tempfile's private 0600
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".partial")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .with_context(|| {
            format!(
                "cannot create a file in {} for {}",
                dir.display(),
                path.display()
            )
        })?;
    let (file, tmp_path) = tmp.into_parts();
    partials().push(tmp_path.to_path_buf());
    Ok(OutputFile {
        file,
        atomic: Some((tmp_path, final_path)),
        shown: path.to_path_buf(),
    })
}

impl OutputFile {
    /// Another handle to the file (for a writer that must own one).
    pub fn file(&self) -> Result<File> {
        self.file
            .try_clone()
            .with_context(|| format!("cannot use {}", self.shown.display()))
    }

    /// Makes the output final: flushes it and renames the temporary file onto the name.
    pub fn commit(mut self) -> Result<()> {
        let shown = self.shown.clone();
        let Some((tmp, final_path)) = self.atomic.take() else {
            return self
                .file
                .flush()
                .with_context(|| format!("cannot write {}", shown.display()));
        };
        let tmp_name = tmp.to_path_buf();
        let result = self
            .file
            .sync_all()
            .with_context(|| format!("cannot write {}", tmp.display()))
            .and_then(|()| {
                // on failure the TempPath is dropped with the error, which removes the file
                tmp.persist(&final_path)
                    .map_err(|e| e.error)
                    .with_context(|| format!("cannot rename to {}", final_path.display()))
            });
        partials().retain(|p| p != &tmp_name);
        result
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.atomic.take() {
            partials().retain(|p| p != &*tmp);
            drop(tmp); // removes the file
        }
    }
}

/// Writes a file of a report directory in one go: as [`write_output`], except that a symlink
/// at `path` is replaced by the new file rather than followed (rename replaces the link
/// itself): a report directory's names are Outcrop's, and the directory may be an untrusted
/// checkout with links planted in it.
pub fn write_report_file(path: &Path, write: impl FnOnce(&mut File) -> Result<()>) -> Result<()> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        bail!("{} is a directory", path.display());
    }
    let mut out = atomic_output(path.to_path_buf(), path)?;
    write(&mut out.file)?;
    out.commit()
}

/// Writes an output at `path` in one go (see [`create_output`]).
pub fn write_output(path: &Path, write: impl FnOnce(&mut File) -> Result<()>) -> Result<()> {
    let mut out = create_output(path)?;
    write(&mut out.file)?;
    out.commit()
}

/// Set by the first SIGINT while a run is interruptible ([`interrupt_flag`]).
static INTERRUPT: AtomicBool = AtomicBool::new(false);
/// Whether a SIGINT should stop the guest rather than exit.
static INTERRUPTIBLE: AtomicBool = AtomicBool::new(false);

/// Makes SIGINT stop the guest (the run then finishes every profile with what it collected)
/// instead of exiting; a second SIGINT exits as usual. Returns the flag the run watches.
pub fn interrupt_flag() -> &'static AtomicBool {
    INTERRUPTIBLE.store(true, Ordering::SeqCst);
    &INTERRUPT
}

/// Checks, before a run starts, that `path` can be written when the run ends: `-` or an
/// existing device/FIFO, or a name in an existing directory where a file can be created (a
/// scratch file is made and removed to be sure). A directory is refused.
pub fn check_output(path: &Path) -> Result<()> {
    if standard_stream(path).is_some() {
        return Ok(());
    }
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.is_dir() {
            bail!("output {} is a directory", path.display());
        }
        if !meta.is_file() {
            return Ok(()); // a device, FIFO or socket: written directly
        }
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => bail!(
            "output {}: {} is not a directory",
            path.display(),
            dir.display()
        ),
        Err(e) => bail!(
            "output {}: directory {}: {e}",
            path.display(),
            dir.display()
        ),
    }
    tempfile::Builder::new()
        .prefix(".outcrop-check")
        .tempfile_in(dir)
        .map(drop)
        .with_context(|| {
            format!(
                "output {}: cannot create files in {}",
                path.display(),
                dir.display()
            )
        })
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
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            4,
            "a temporary file stayed"
        );
        assert!(partials().is_empty());
        assert!(write_output(dir.path(), |_| Ok(())).is_err());
    }
}
