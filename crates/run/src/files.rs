//! Bounded reads: every file Outcrop reads is opened by [`open_regular`], which opens without
//! blocking (a FIFO with no writer cannot hang the open) and refuses anything but a regular
//! file, by the type of the descriptor it opened (no race with a rename); [`read_bounded`] then
//! refuses a file over a cap named per kind before reading a byte, and stops at the cap while
//! reading (a file that grows meanwhile cannot exhaust memory).

use crate::error::{Error, Result};
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Largest program (ELF file) Outcrop reads: 1 GiB.
pub const MAX_PROGRAM_BYTES: u64 = 1 << 30;
/// Largest profile Outcrop reads (`.wpp`, samples file, text trace): 1 GiB.
pub const MAX_PROFILE_BYTES: u64 = 1 << 30;
/// Largest configuration file (`--timing=FILE`): 1 MiB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Opens `path`, `what` it is (for messages), for reading: with `O_NONBLOCK`, so that a FIFO
/// or a device cannot block the open, then checked with `fstat` on the opened descriptor: a
/// FIFO, socket, device or directory is refused by name. The file is returned in blocking mode
/// with its metadata.
pub fn open_regular(path: &Path, what: &'static str) -> Result<(File, std::fs::Metadata)> {
    use std::os::unix::fs::OpenOptionsExt;
    let p = path.display();
    let fail = |detail: String| Error::Read {
        what,
        path: path.to_path_buf(),
        detail,
    };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(path)
        .map_err(|e| fail(format!("cannot open {what} {p}: {e}")))?;
    let meta = f
        .metadata()
        .map_err(|e| fail(format!("cannot stat {what} {p}: {e}")))?;
    if !meta.is_file() {
        let kind = file_kind(&meta);
        return Err(fail(format!("{what} {p} is not a regular file ({kind})")));
    }
    set_blocking(&f).map_err(|e| fail(format!("cannot use {what} {p}: {e}")))?;
    Ok((f, meta))
}

/// Clears `O_NONBLOCK` on a file opened with it.
pub fn set_blocking(f: &File) -> std::io::Result<()> {
    use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
    let flags = fcntl_getfl(f)?;
    fcntl_setfl(f, flags - OFlags::NONBLOCK)?;
    Ok(())
}

/// Reads `path`, `what` it is (for messages), refusing anything but a regular file of at most
/// `cap` bytes.
pub fn read_bounded(path: &Path, what: &'static str, cap: u64) -> Result<Vec<u8>> {
    let (f, meta) = open_regular(path, what)?;
    read_opened(f, &meta, path, what, cap)
}

/// The bytes of `f` (opened from `path`, a regular file with `meta`), at most `cap`.
fn read_opened(
    f: File,
    meta: &std::fs::Metadata,
    path: &Path,
    what: &'static str,
    cap: u64,
) -> Result<Vec<u8>> {
    let p = path.display();
    let fail = |detail: String| Error::Read {
        what,
        path: path.to_path_buf(),
        detail,
    };
    if meta.len() > cap {
        return Err(fail(format!(
            "{what} {p} has {} bytes; the most Outcrop reads is {cap} bytes",
            meta.len()
        )));
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    f.take(cap + 1)
        .read_to_end(&mut out)
        .map_err(|e| fail(format!("cannot read {what} {p}: {e}")))?;
    if out.len() as u64 > cap {
        return Err(fail(format!(
            "{what} {p} grew past {cap} bytes while being read"
        )));
    }
    Ok(out)
}

/// Opens `rel`, a path read from a file in `root` (a manifest, a report's summary), beneath
/// `root` and nowhere else: absolute paths, `..` above `root` and symlinks that lead out of it
/// are refused by the kernel during the lookup itself (`openat2` with `RESOLVE_BENEATH`), so
/// nothing can swap a component between a check and the open. `flags` are added to
/// `O_CLOEXEC|O_NOCTTY|O_NONBLOCK` (`O_CLOEXEC` alone with `O_PATH`).
fn open_beneath(root: &Path, rel: &Path, flags: rustix::fs::OFlags) -> std::io::Result<File> {
    use rustix::fs::{openat2, Mode, OFlags, ResolveFlags};
    let dir = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let fd = openat2(
        &dir,
        rel,
        // (openat2 refuses flags that mean nothing with O_PATH)
        if flags.contains(OFlags::PATH) {
            flags | OFlags::CLOEXEC
        } else {
            flags | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK
        },
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    )
    .map_err(|e| {
        if e == rustix::io::Errno::XDEV {
            std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("it leads out of {}", root.display()),
            )
        } else {
            e.into()
        }
    })?;
    Ok(File::from(fd))
}

/// As [`read_bounded`], for `rel`, a path named inside a file in directory `root`: resolved
/// beneath `root` only (see `open_beneath`: an absolute path, `..` out of it or a symlink
/// that leaves it is refused, race-free).
pub fn read_beneath(root: &Path, rel: &Path, what: &'static str, cap: u64) -> Result<Vec<u8>> {
    let path = root.join(rel);
    let fail = |detail: String| Error::Read {
        what,
        path: path.clone(),
        detail,
    };
    let f = open_beneath(root, rel, rustix::fs::OFlags::RDONLY)
        .map_err(|e| fail(format!("cannot open {what} {}: {e}", path.display())))?;
    let meta = f
        .metadata()
        .map_err(|e| fail(format!("cannot stat {what} {}: {e}", path.display())))?;
    if !meta.is_file() {
        let kind = file_kind(&meta);
        return Err(fail(format!(
            "{what} {} is not a regular file ({kind})",
            path.display()
        )));
    }
    set_blocking(&f).map_err(|e| fail(format!("cannot use {what} {}: {e}", path.display())))?;
    read_opened(f, &meta, &path, what, cap)
}

/// The real path of `rel` (a path named inside a file in directory `root`), resolved beneath
/// `root` as [`read_beneath`] resolves (race-free) and then named by the kernel: absolute, with
/// no symlink left in it, inside `root`'s own real path. For a directory or program a run
/// grants or loads by name; a component swapped for a symlink after this call would be
/// followed then, so `root` should be a directory its owner does not change during the run.
pub fn resolve_beneath(root: &Path, rel: &Path, what: &'static str) -> Result<std::path::PathBuf> {
    let path = root.join(rel);
    let f = open_beneath(root, rel, rustix::fs::OFlags::PATH).map_err(|e| Error::Read {
        what,
        path: path.clone(),
        detail: format!("cannot use {what} {}: {e}", path.display()),
    })?;
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())).map_err(|e| Error::Read {
        what,
        path: path.clone(),
        detail: format!("cannot name {what} {}: {e}", path.display()),
    })
}

/// As [`read_bounded`], as UTF-8 text; invalid UTF-8 is an error naming the line and byte.
/// A leading byte order mark is dropped (it is not part of the text).
pub fn read_text_bounded(path: &Path, what: &'static str, cap: u64) -> Result<String> {
    let mut bytes = read_bounded(path, what, cap)?;
    if bytes.starts_with("\u{feff}".as_bytes()) {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        Error::Read {
            what,
            path: path.to_path_buf(),
            detail: format!(
                "{}:{line}: invalid UTF-8 at byte offset {at} (is this a {what}?)",
                path.display()
            ),
        }
    })
}

/// A word for what a non-regular file is.
pub fn file_kind(meta: &std::fs::Metadata) -> &'static str {
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
        let e = read_bounded(Path::new("/"), "profile", 1 << 20).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        std::fs::write(&p, vec![0u8; 100]).unwrap();
        let e = read_bounded(&p, "samples file", 99).unwrap_err();
        assert!(e.to_string().contains("100 bytes"), "{e}");
        assert_eq!(read_bounded(&p, "samples file", 100).unwrap().len(), 100);
        std::fs::write(&p, b"ok\n\xff").unwrap();
        let e = read_text_bounded(&p, "samples file", 100).unwrap_err();
        assert!(
            e.to_string().contains(":2: invalid UTF-8 at byte offset 3"),
            "{e}"
        );
    }
}
