//! Separate debug information, found as gdb, perf and addr2line find it: a distribution ships
//! its programs and libraries stripped, and their symbol tables, line tables and call-frame
//! information in debug files apart (Debian's `-dbg` and `-dbgsym` packages), named two ways:
//!
//! 1. by **build-id**: `DIR/.build-id/ab/cdef….debug`, where `abcdef…` is the object's GNU
//!    build-id in hex;
//! 2. by **`.gnu_debuglink`** (a file name and the CRC-32 of the debug file): next to the
//!    object, in a `.debug` directory beside it, and under each `DIR` at the object's own
//!    directory (`DIR/usr/lib/x86_64-linux-gnu/NAME`).
//!
//! `DIR` is each `--debug-dir`, then `SYSROOT/usr/lib/debug` under `--sysroot`, then
//! `/usr/lib/debug`. A candidate is used only when it is the object's: found by build-id, it
//! has the same build-id; found by the debug link's name, its CRC-32 is the one the link
//! names. The name a debug link gives is
//! a stranger's text: only a plain file name is looked up (no `/`, not `.` or `..`). Every
//! file is read with a bound.

use crate::files::{read_bounded, MAX_PROGRAM_BYTES};
use object::{Object, ObjectSection};
use std::path::{Path, PathBuf};

/// Where debug files are looked for, in order (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DebugDirs {
    dirs: Vec<PathBuf>,
}

impl DebugDirs {
    /// `extra` (`--debug-dir`, in order), then `SYSROOT/usr/lib/debug`, then
    /// `/usr/lib/debug`.
    pub fn new(extra: &[PathBuf], sysroot: Option<&Path>) -> DebugDirs {
        let mut dirs = extra.to_vec();
        if let Some(root) = sysroot {
            dirs.push(root.join("usr/lib/debug"));
        }
        dirs.push(PathBuf::from("/usr/lib/debug"));
        DebugDirs { dirs }
    }

    /// No directories at all (only a debug link's places beside the object).
    pub fn none() -> DebugDirs {
        DebugDirs::default()
    }

    /// The directories, in the order they are searched.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The debug file of the object `bytes` (read from `host`, when known): its path and
    /// bytes, or `None` when none is found or none is the object's.
    pub fn find(&self, bytes: &[u8], host: Option<&Path>) -> Option<(PathBuf, Vec<u8>)> {
        let file = object::File::parse(bytes).ok()?;
        let build_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
        let link = file
            .gnu_debuglink()
            .ok()
            .flatten()
            .and_then(|(name, crc)| Some((plain_name(name)?, crc)));
        if build_id.is_none() && link.is_none() {
            return None;
        }
        // each candidate with what makes it the object's: its build-id where it is named by
        // one, the debug link's CRC where it is named by the link
        let mut candidates: Vec<(PathBuf, Same)> = Vec::new();
        if let Some(id) = build_id.as_deref().filter(|id| id.len() >= 2) {
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            for d in &self.dirs {
                let name = format!("{}.debug", &hex[2..]);
                let path = d.join(".build-id").join(&hex[..2]).join(name);
                candidates.push((path, Same::BuildId(id)));
            }
        }
        if let Some((name, crc)) = &link {
            if let Some(dir) = host.and_then(Path::parent) {
                candidates.push((dir.join(name), Same::Crc(*crc)));
                candidates.push((dir.join(".debug").join(name), Same::Crc(*crc)));
                let rel = dir.strip_prefix("/").unwrap_or(dir);
                for d in &self.dirs {
                    candidates.push((d.join(rel).join(name), Same::Crc(*crc)));
                }
            }
        }
        for (path, same) in candidates {
            if host.is_some_and(|h| h == path) || !path.is_file() {
                continue;
            }
            let Ok(data) = read_bounded(&path, "debug file", MAX_PROGRAM_BYTES) else {
                continue;
            };
            if is_companion(&data, same) {
                return Some((path, data));
            }
        }
        None
    }
}

/// The debug link's file name when it is a plain name (nothing that leads elsewhere).
fn plain_name(name: &[u8]) -> Option<String> {
    let name = std::str::from_utf8(name).ok()?;
    (!name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\0'))
        .then(|| name.to_string())
}

/// What a candidate debug file must match to be the object's.
#[derive(Clone, Copy)]
enum Same<'a> {
    /// The object's build-id (a file found by build-id).
    BuildId(&'a [u8]),
    /// The CRC-32 the object's debug link names (a file found by the link's name).
    Crc(u32),
}

/// Whether `data` is the debug file `same` asks for, with something to offer (a symbol
/// table or DWARF).
fn is_companion(data: &[u8], same: Same<'_>) -> bool {
    let Ok(file) = object::File::parse(data) else {
        return false;
    };
    let useful = file.section_by_name(".symtab").is_some()
        || file.section_by_name(".debug_info").is_some()
        || file.section_by_name(".debug_line").is_some();
    useful
        && match same {
            Same::BuildId(id) => file.build_id().ok().flatten() == Some(id),
            Same::Crc(crc) => crc32fast::hash(data) == crc,
        }
}

/// Whether `data` has a section named `name` with contents in the file (not `NOBITS`, as a
/// debug file keeps `.text`).
pub fn has_contents(data: &[u8], name: &str) -> bool {
    object::File::parse(data)
        .ok()
        .and_then(|f| f.section_by_name(name).map(|s| s.file_range().is_some()))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_debug_link_name_leads_nowhere_else() {
        assert_eq!(
            plain_name(b"libc.so.6.debug").as_deref(),
            Some("libc.so.6.debug")
        );
        for bad in [
            &b"../../etc/passwd"[..],
            b"/etc/passwd",
            b"..",
            b".",
            b"",
            b"a/b",
        ] {
            assert_eq!(plain_name(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_search_order_is_gdbs() {
        let d = DebugDirs::new(&[PathBuf::from("/x")], Some(Path::new("/sys")));
        assert_eq!(
            d.dirs(),
            [
                PathBuf::from("/x"),
                PathBuf::from("/sys/usr/lib/debug"),
                PathBuf::from("/usr/lib/debug")
            ]
        );
    }
}
