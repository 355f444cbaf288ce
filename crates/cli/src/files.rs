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

use crate::{refuse, Doing, Result};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

pub use outcrop_run::files::{
    open_regular, read_bounded, read_text_bounded, MAX_CONFIG_BYTES, MAX_PROFILE_BYTES,
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
                // a .partial file, or a report directory being staged
                if std::fs::remove_file(&p).is_err() {
                    let _ = std::fs::remove_dir_all(&p);
                }
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
        std::io::stdout()
            .flush()
            .doing(|| "cannot write stdout".into())?;
        std::io::stdout().as_fd().try_clone_to_owned()
    } else {
        std::io::stderr().as_fd().try_clone_to_owned()
    };
    let name = if which == 1 { "stdout" } else { "stderr" };
    Ok(File::from(fd.doing(|| format!("cannot use {name}"))?))
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
            Err(e) => return Err(e).doing(|| format!("cannot stat {}", p.display())),
        };
        if meta.file_type().is_symlink() {
            let to = std::fs::read_link(&p)
                .doing(|| format!("cannot read the symlink {}", p.display()))?;
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
            refuse!("{} is a directory", p.display());
        }
        // a FIFO with no reader must not hang the run: open without blocking (ENXIO then),
        // then write in blocking mode
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
            .open(&p)
            .doing(|| {
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
        outcrop_run::files::set_blocking(&f).doing(|| format!("cannot use {}", p.display()))?;
        return Ok(Target::Direct(f));
    }
    refuse!("{}: too many levels of symbolic links", path.display())
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
        refuse!("{} is not a file path", path.display());
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
        .doing(|| {
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
            .doing(|| format!("cannot use {}", self.shown.display()))
    }

    /// Makes the output final: flushes it and renames the temporary file onto the name.
    pub fn commit(mut self) -> Result<()> {
        let shown = self.shown.clone();
        let Some((tmp, final_path)) = self.atomic.take() else {
            return self
                .file
                .flush()
                .doing(|| format!("cannot write {}", shown.display()));
        };
        let tmp_name = tmp.to_path_buf();
        let result = self
            .file
            .sync_all()
            .doing(|| format!("cannot write {}", tmp.display()))
            .and_then(|()| {
                // on failure the TempPath is dropped with the error, which removes the file
                tmp.persist(&final_path)
                    .map_err(|e| e.error)
                    .doing(|| format!("cannot rename to {}", final_path.display()))
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
pub fn write_report_file<E: From<crate::Error>>(
    path: &Path,
    write: impl FnOnce(&mut File) -> Result<(), E>,
) -> Result<(), E> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        refuse!("{} is a directory", path.display());
    }
    let mut out = atomic_output(path.to_path_buf(), path)?;
    write(&mut out.file)?;
    Ok(out.commit()?)
}

/// Writes an output at `path` in one go (see [`create_output`]).
pub fn write_output<E: From<crate::Error>>(
    path: &Path,
    write: impl FnOnce(&mut File) -> Result<(), E>,
) -> Result<(), E> {
    let mut out = create_output(path)?;
    write(&mut out.file)?;
    Ok(out.commit()?)
}

/// The file that marks a directory as an Outcrop report directory, which a later run may
/// replace whole.
pub const REPORT_MARKER: &str = ".outcrop-report";

/// Checks, before any work, that `dir` may become a report directory: a new name, an empty
/// directory, or a directory that carries [`REPORT_MARKER`] (Outcrop's own, replaced whole).
/// A symlink at `dir`, a file, or a non-empty directory without the marker is refused with
/// what to do: a report never mixes with, or replaces, files Outcrop did not write.
pub fn check_report_dir(dir: &Path) -> Result<()> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).doing(|| format!("--report {}", dir.display())),
    };
    if meta.file_type().is_symlink() {
        refuse!(
            "--report {}: is a symlink; a report directory is replaced whole, so give the directory itself (or a new name)",
            dir.display()
        );
    }
    if !meta.is_dir() {
        refuse!("--report {}: exists and is not a directory", dir.display());
    }
    if dir.join(REPORT_MARKER).is_file() {
        return Ok(());
    }
    let mut entries = std::fs::read_dir(dir).doing(|| format!("--report {}", dir.display()))?;
    if entries.next().is_some() {
        refuse!(
            "--report {}: the directory holds files and is not an Outcrop report (no {REPORT_MARKER} in it); a report directory is replaced whole, so choose a new or empty directory",
            dir.display()
        );
    }
    Ok(())
}

/// A report directory being written: every file goes into a private staging directory beside
/// it (`.NAME.XXXXXX.partial`), which [`ReportDir::commit`] swaps in for the old one as a set
/// (`renameat2` with `RENAME_EXCHANGE`, then the old one removed): no file of an earlier run
/// survives beside the new ones, and a run that fails (a full disk included) or is
/// interrupted leaves the old directory as it was and removes the staging one.
pub struct ReportDir {
    /// Where the report will be.
    pub dir: PathBuf,
    staging: Option<PathBuf>,
}

impl ReportDir {
    /// Starts writing the report directory `dir` ([`check_report_dir`] first).
    pub fn begin(dir: &Path) -> Result<ReportDir> {
        check_report_dir(dir)?;
        let name = dir.file_name().ok_or_else(|| {
            crate::Error::Refused(format!("--report {}: not a directory name", dir.display()))
        })?;
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(parent).doing(|| {
            format!(
                "--report {}: cannot create {}",
                dir.display(),
                parent.display()
            )
        })?;
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        let staging = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".partial")
            .tempdir_in(parent)
            .doing(|| {
                format!(
                    "--report {}: cannot create a directory in {}",
                    dir.display(),
                    parent.display()
                )
            })?
            .keep();
        // the mode a plain mkdir gives, not tempfile's private 0700
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o755));
        partials().push(staging.clone());
        Ok(ReportDir {
            dir: dir.to_path_buf(),
            staging: Some(staging),
        })
    }

    /// Where files are written until the commit.
    pub fn path(&self) -> &Path {
        self.staging.as_deref().unwrap_or(&self.dir)
    }

    /// `p`, a path in the report directory, as it is written now (in the staging directory);
    /// any other path as given.
    pub fn place(&self, p: &Path) -> PathBuf {
        match p.strip_prefix(&self.dir) {
            Ok(rel) => self.path().join(rel),
            Err(_) => p.to_path_buf(),
        }
    }

    /// Writes the marker and swaps the staging directory in for `dir`.
    pub fn commit(mut self) -> Result<()> {
        let Some(staging) = self.staging.take() else {
            return Ok(());
        };
        let done = (|| -> Result<()> {
            std::fs::write(
                staging.join(REPORT_MARKER),
                "This directory is an Outcrop report: the next run with --report here replaces it whole.\n",
            )
            .doing(|| format!("writing {}", self.dir.display()))?;
            // checked again: something may have appeared at the name during the run
            check_report_dir(&self.dir)?;
            if self.dir.exists() {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &staging,
                    rustix::fs::CWD,
                    &self.dir,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .doing(|| format!("cannot replace {}", self.dir.display()))?;
                // the staging name now holds the old report
                std::fs::remove_dir_all(&staging)
                    .doing(|| format!("cannot remove the old report {}", staging.display()))?;
            } else {
                std::fs::rename(&staging, &self.dir)
                    .doing(|| format!("cannot create {}", self.dir.display()))?;
            }
            Ok(())
        })();
        if done.is_err() {
            let _ = std::fs::remove_dir_all(&staging);
        }
        partials().retain(|p| p != &staging);
        done
    }
}

impl Drop for ReportDir {
    fn drop(&mut self) {
        if let Some(staging) = self.staging.take() {
            partials().retain(|p| p != &staging);
            let _ = std::fs::remove_dir_all(staging);
        }
    }
}

/// The device and inode of the file at `p` (symlinks followed), if there is one.
fn identity(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

/// Refuses, before any work, an output that is one of the command's inputs: the same file
/// (device and inode, through any symlink or hard link), or — for a report directory, which
/// is replaced whole — a directory that holds an input.
pub fn distinct_outputs(inputs: &[&Path], outputs: &[&Path], report_dirs: &[&Path]) -> Result<()> {
    for out in outputs {
        if standard_stream(out).is_some() {
            continue;
        }
        // an input that is a directory (a report read whole) holds no output either
        let real_out = std::fs::canonicalize(out).ok().or_else(|| {
            let parent = match out.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            Some(std::fs::canonicalize(parent).ok()?.join(out.file_name()?))
        });
        for input in inputs.iter().filter(|i| i.is_dir()) {
            if let (Some(o), Ok(d)) = (&real_out, std::fs::canonicalize(input)) {
                if o.starts_with(&d) {
                    refuse!(
                        "output {} is inside the input {}: Outcrop never changes what it reads; choose another name",
                        out.display(),
                        input.display()
                    );
                }
            }
        }
        let Some(id) = identity(out) else { continue };
        if let Some(input) = inputs.iter().find(|i| identity(i) == Some(id)) {
            refuse!(
                "output {} is the same file as the input {}: Outcrop never replaces a file it reads; choose another name",
                out.display(),
                input.display()
            );
        }
    }
    for dir in report_dirs {
        let Ok(real_dir) = std::fs::canonicalize(dir) else {
            continue;
        };
        for input in inputs {
            if let Ok(real) = std::fs::canonicalize(input) {
                if real.starts_with(&real_dir) {
                    refuse!(
                        "--report {} holds the input {}, and a report directory is replaced whole: choose another directory",
                        dir.display(),
                        input.display()
                    );
                }
            }
        }
    }
    Ok(())
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
            refuse!("output {} is a directory", path.display());
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
        Ok(_) => refuse!(
            "output {}: {} is not a directory",
            path.display(),
            dir.display()
        ),
        Err(e) => refuse!(
            "output {}: directory {}: {e}",
            path.display(),
            dir.display()
        ),
    }
    tempfile::Builder::new()
        .prefix(".outcrop-check")
        .tempfile_in(dir)
        .map(drop)
        .doing(|| {
            format!(
                "output {}: cannot create files in {}",
                path.display(),
                dir.display()
            )
        })
}

/// Refuses, before anything is read, inputs of `len` bytes in all whose parse and comparison
/// need about `factor` times their size in address space, plus `reserve` (the allocator's
/// per-thread arenas), when the address-space limit (`ulimit -v`, `prlimit --as`) would not
/// leave that much: an error naming the inputs and the numbers, never an abort when an
/// allocation fails halfway through.
pub fn check_memory_for(what: &str, len: u64, factor: u64, reserve: u64) -> Result<()> {
    let Ok(limit) = rustix::process::getrlimit(rustix::process::Resource::As)
        .current
        .ok_or(())
    else {
        return Ok(()); // unlimited
    };
    let used = vm_size_bytes().unwrap_or(0);
    let needed = len.saturating_mul(factor).saturating_add(reserve);
    if used.saturating_add(needed) > limit {
        refuse!(
            "{what}: {len} bytes of input need about {needed} bytes of address space to compare, and the limit ({limit} bytes, {used} in use) does not leave them; raise it (ulimit -v) or give smaller files"
        );
    }
    Ok(())
}

/// This process's virtual size (`VmSize`), if the host says.
fn vm_size_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The most resident memory this process has used, in bytes (`VmHWM`), if the host says.
pub fn max_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Writes a report directory at `shown` in one go: every `(name, bytes)` into a staging
/// directory, swapped in whole at the end ([`ReportDir`]).
pub fn write_report_dir(shown: &Path, files: &[(String, Vec<u8>)]) -> Result<()> {
    let staged = ReportDir::begin(shown)?;
    for (name, bytes) in files {
        write_report_file(&staged.path().join(name), |f| {
            f.write_all(bytes)
                .doing(|| format!("writing {}", shown.join(name).display()))
        })?;
    }
    staged.commit()
}

/// Writes a command's text output to `output` (`None`: stdout, control characters escaped
/// for the terminal; a file is written whole or not at all).
pub fn emit(output: Option<&Path>, text: &str) -> Result<()> {
    match output {
        Some(p) => write_output(p, |f| {
            f.write_all(text.as_bytes())
                .map_err(|e| crate::Error::Refused(format!("writing {}: {e}", p.display())))
        }),
        None => std::io::stdout()
            .lock()
            .write_all(outcrop_run::mechanisms::events::escape::text(text).as_bytes())
            .map_err(|e| crate::Error::Refused(format!("writing stdout: {e}"))),
    }
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
        write_output(&link, |f| f.write_all(b"new").doing(|| "test".into())).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        // a dangling link: its target is created
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink("made.txt", &dangling).unwrap();
        write_output(&dangling, |f| f.write_all(b"x").doing(|| "test".into())).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("made.txt")).unwrap(),
            "x"
        );
        // a device is written, not replaced
        write_output(Path::new("/dev/null"), |f| {
            f.write_all(b"x").doing(|| "test".into())
        })
        .unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        // a failed write leaves the old file and no .partial
        let e = write_output(&real, |_| -> Result<()> { refuse!("boom") });
        assert!(e.is_err());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            4,
            "a temporary file stayed"
        );
        assert!(partials().is_empty());
        assert!(write_output(dir.path(), |_| Result::<()>::Ok(())).is_err());
    }
}
