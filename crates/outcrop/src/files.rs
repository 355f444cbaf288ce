//! The binary's files: inputs read with a bound, outputs written so that nothing is lost or
//! clobbered, and partial outputs removed when a run is interrupted.
//!
//! **Inputs** are read with `outcrop_run::files::read_bounded` (re-exported here): regular
//! files no larger than a cap named per kind, refused by name before anything is read.
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
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

pub use outcrop_run::files::{
    read_bounded, read_text_bounded, MAX_CONFIG_BYTES, MAX_PROFILE_BYTES, MAX_PROGRAM_BYTES,
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

/// An output being written: a handle to write through, and (for regular files) the
/// `.partial` name that becomes the real one at [`OutputFile::commit`]. Dropped uncommitted,
/// the `.partial` file is removed and the old output (if any) stays.
pub struct OutputFile {
    file: File,
    /// `(NAME.partial, NAME)` for atomic outputs.
    atomic: Option<(PathBuf, PathBuf)>,
    shown: PathBuf,
}

/// Opens an output at `path` (see the module docs: atomic for regular files and new names,
/// through symlinks, direct for devices, FIFOs and `-`).
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
    let Some(file_name) = final_path.file_name() else {
        bail!("{} is not a file path", path.display());
    };
    let mut tmp_name = file_name.to_os_string();
    tmp_name.push(".partial");
    let tmp = final_path.with_file_name(tmp_name);
    partials().push(tmp.clone());
    let file = match File::create(&tmp) {
        Ok(f) => f,
        Err(e) => {
            partials().retain(|p| p != &tmp);
            return Err(e).with_context(|| format!("cannot create {}", tmp.display()));
        }
    };
    Ok(OutputFile {
        file,
        atomic: Some((tmp, final_path)),
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

    /// Makes the output final: flushes it and renames `NAME.partial` to `NAME`.
    pub fn commit(mut self) -> Result<()> {
        let shown = self.shown.clone();
        let Some((tmp, final_path)) = self.atomic.take() else {
            return self
                .file
                .flush()
                .with_context(|| format!("cannot write {}", shown.display()));
        };
        let result = self
            .file
            .sync_all()
            .with_context(|| format!("cannot write {}", tmp.display()))
            .and_then(|()| {
                std::fs::rename(&tmp, &final_path)
                    .with_context(|| format!("cannot rename to {}", final_path.display()))
            });
        partials().retain(|p| p != &tmp);
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.atomic.take() {
            let _ = std::fs::remove_file(&tmp);
            partials().retain(|p| p != &tmp);
        }
    }
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
    if path.as_os_str() == "-" {
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
        assert!(!dir.path().join("real.txt.partial").exists());
        assert!(partials().is_empty());
        assert!(write_output(dir.path(), |_| Ok(())).is_err());
    }
}
