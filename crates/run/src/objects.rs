//! The objects a dynamically linked program maps (its dynamic linker and shared libraries):
//! their symbols, read from the host file each came from when the machine reports the mapping
//! ([`outcrop_events::Mapping`]), placed at the address it was mapped at.
//!
//! A file is read with a bound, and used only when its GNU build-id equals the one read when
//! it was mapped (a file replaced on the host since is not mistaken for the one that ran).

use crate::debuginfo::DebugDirs;
use crate::files::{read_bounded, MAX_PROGRAM_BYTES};
use outcrop_events::Mapping;
use outcrop_rv::symbols::{Names, Symbols};
use std::path::Path;

/// How the code of a run is named: demangled or not, and where debug files are found
/// ([`crate::debuginfo`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Naming {
    /// Demangled (the default) or as the symbol tables spell them.
    pub names: Names,
    /// Where separate debug files are looked for.
    pub debug: DebugDirs,
}

impl Naming {
    /// The function symbols of the object `bytes` (read from `host`) loaded `bias` above its
    /// link-time addresses: from its debug file when there is one (a stripped library's
    /// static functions are only there), else from its own tables.
    pub fn symbols(&self, bytes: &[u8], host: Option<&Path>, bias: u64) -> Option<Symbols> {
        let own = Symbols::from_elf_at(bytes, bias).ok();
        let debug = self
            .debug
            .find(bytes, host)
            .and_then(|(_, d)| Symbols::from_elf_at(&d, bias).ok())
            .filter(|s| s.len() > own.as_ref().map_or(0, Symbols::len));
        Some(debug.or(own)?.with_names(self.names))
    }

    /// The bytes that hold the DWARF line tables of the object `bytes` (read from `host`):
    /// its own when it has `.debug_line`, else its debug file's when that has them.
    pub fn line_bytes(&self, bytes: Vec<u8>, host: Option<&Path>) -> Option<Vec<u8>> {
        if crate::debuginfo::has_contents(&bytes, ".debug_line") {
            return Some(bytes);
        }
        let (_, d) = self.debug.find(&bytes, host)?;
        crate::debuginfo::has_contents(&d, ".debug_line").then_some(d)
    }
}

/// The function symbols of mapped object `m`, at its load address, named as `naming` says;
/// `None` when its file cannot be read, is not the file that was mapped, or has no symbols.
pub fn symbols_of(m: &Mapping<'_>, naming: &Naming) -> Option<Symbols> {
    let bytes = object_bytes(m)?;
    let bias = outcrop_rv::elf::load_bias(&bytes, m.start, m.offset)?;
    naming.symbols(&bytes, m.host_path, bias)
}

/// The bytes of the file `m` was mapped from, when it is still that file.
pub fn object_bytes(m: &Mapping<'_>) -> Option<Vec<u8>> {
    let path = m.host_path?;
    let bytes = read_bounded(path, "shared object", MAX_PROGRAM_BYTES).ok()?;
    let id = outcrop_rv::elf::build_id_in_prefix(&bytes);
    if m.build_id.is_some() && id.as_deref() != m.build_id {
        return None;
    }
    Some(bytes)
}

/// The resolver the exact profiler names shared-library code with.
pub fn profile_resolver(naming: Naming) -> outcrop_profile::ObjectSymbols {
    Box::new(move |m| symbols_of(m, &naming))
}

/// A build-id in lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The objects a run mapped, as the whole-program capture records them; empty for a static
/// program (only the program itself was mapped).
pub fn object_infos(
    objects: &[outcrop_rv::kernel::MappedObject],
) -> Vec<outcrop_strata::ObjectInfo> {
    if objects.len() <= 1 {
        return Vec::new();
    }
    objects
        .iter()
        .map(|o| outcrop_strata::ObjectInfo {
            path: o.guest_path.display().to_string(),
            build_id: o.build_id.as_deref().map(hex).unwrap_or_default(),
            start: o.start,
            len: o.len,
            offset: o.offset,
        })
        .collect()
}

/// What the reports of a dynamically linked run need of the objects it mapped, each file read
/// once after the run: the functions of the program and of every object (named
/// `name@object`, as `names` says), and the objects that carry source lines (only when
/// `lines`). `None` and nothing for a static program.
pub fn after_run(
    program: Option<&Symbols>,
    objects: &[outcrop_rv::kernel::MappedObject],
    lines: bool,
    naming: &Naming,
) -> (Option<Symbols>, Vec<DebugObject>) {
    if objects.len() <= 1 {
        return (None, Vec::new());
    }
    let mut parts: Vec<(Symbols, String)> = Vec::new();
    let mut debug = Vec::new();
    for (i, o) in objects.iter().enumerate().skip(1) {
        let m = o.mapping(i as u32);
        let Some(bytes) = object_bytes(&m) else {
            continue;
        };
        let Some(bias) = outcrop_rv::elf::load_bias(&bytes, m.start, m.offset) else {
            continue;
        };
        if let Some(s) = naming.symbols(&bytes, m.host_path, bias) {
            parts.push((s, format!("@{}", m.name())));
        }
        let line_bytes = if lines {
            naming.line_bytes(bytes, m.host_path)
        } else {
            None
        };
        if let Some(bytes) = line_bytes {
            debug.push(DebugObject {
                bytes: std::sync::Arc::new(bytes),
                bias,
                lo: m.start,
                hi: m.start.saturating_add(m.len),
            });
        }
    }
    (Some(merge(program, &parts)), debug)
}

/// The program's functions and each object's, named with the object's suffix.
fn merge<S: AsRef<str>>(program: Option<&Symbols>, parts: &[(Symbols, S)]) -> Symbols {
    let empty = Symbols::default();
    let mut refs: Vec<(&Symbols, &str)> = vec![(program.unwrap_or(&empty), "")];
    refs.extend(parts.iter().map(|(s, n)| (s, n.as_ref())));
    Symbols::merged(&refs)
}

/// An object a samples or `.wpp` file says its run mapped.
#[derive(Clone, Copy, Debug)]
pub struct Recorded<'a> {
    /// The path the guest opened it by.
    pub path: &'a str,
    /// Its build-id in hex (empty: none recorded).
    pub build_id: &'a str,
    /// Where it was mapped, and the file offset there.
    pub start: u64,
    /// The file offset mapped at `start`.
    pub offset: u64,
}

impl<'a> From<&'a outcrop_sampling::SampledObject> for Recorded<'a> {
    fn from(o: &'a outcrop_sampling::SampledObject) -> Self {
        Recorded {
            path: &o.path,
            build_id: &o.build_id,
            start: o.start,
            offset: o.offset,
        }
    }
}

impl<'a> From<&'a outcrop_strata::ObjectInfo> for Recorded<'a> {
    fn from(o: &'a outcrop_strata::ObjectInfo) -> Self {
        Recorded {
            path: &o.path,
            build_id: &o.build_id,
            start: o.start,
            offset: o.offset,
        }
    }
}

/// A recorded object found again: its bytes, load bias and name.
pub struct Found {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Its load bias in the recorded run.
    pub bias: u64,
    /// `@libc.so.6`, the suffix its functions are named with.
    pub suffix: String,
    /// The host file it was read from.
    pub host: std::path::PathBuf,
}

/// The functions of a recorded run's program and of the objects [`find_recorded`] found,
/// each object's named `name@object` (as `names` says).
pub fn symbols_across(program: Option<&Symbols>, found: &[Found], naming: &Naming) -> Symbols {
    let parts: Vec<(Symbols, &str)> = found
        .iter()
        .filter_map(|f| {
            naming
                .symbols(&f.bytes, Some(&f.host), f.bias)
                .map(|s| (s, f.suffix.as_str()))
        })
        .collect();
    merge(program, &parts)
}

/// Finds the shared objects of a recorded run (every object but the program, index 0): each
/// at `SYSROOT/PATH` when `sysroot` is given, else at its path, read with a bound, and
/// checked against its recorded build-id. A mismatch is an error naming both (a warning with
/// `ignore_ids`), as for the program itself.
pub fn find_recorded(
    objects: &[Recorded<'_>],
    sysroot: Option<&std::path::Path>,
    ignore_ids: bool,
    warn: &mut dyn FnMut(String),
) -> crate::Result<Vec<Found>> {
    let mut out = Vec::new();
    for o in objects.iter().skip(1) {
        let guest = std::path::Path::new(o.path);
        let host = match sysroot {
            Some(root) => root.join(guest.strip_prefix("/").unwrap_or(guest)),
            None => guest.to_path_buf(),
        };
        let bytes = read_bounded(&host, "shared object", MAX_PROGRAM_BYTES).map_err(|e| {
            crate::Error::Config(format!(
                "the run mapped {}, which cannot be read here ({e}){}",
                o.path,
                if sysroot.is_none() {
                    "; name the directory its libraries are under with --sysroot"
                } else {
                    ""
                }
            ))
        })?;
        let id = outcrop_rv::elf::build_id_in_prefix(&bytes)
            .map(|b| hex(&b))
            .unwrap_or_default();
        if !o.build_id.is_empty() && id != o.build_id {
            let msg = format!(
                "{} was build-id {} in the recorded run, but {} has {}",
                o.path,
                o.build_id,
                host.display(),
                if id.is_empty() { "none" } else { &id }
            );
            if ignore_ids {
                warn(format!("{msg} (--ignore-program-id: reading it anyway)"));
            } else {
                return Err(crate::Error::Config(format!(
                    "{msg}; point --sysroot at the libraries the run used, or pass --ignore-program-id"
                )));
            }
        }
        let bias = outcrop_rv::elf::load_bias(&bytes, o.start, o.offset).ok_or_else(|| {
            crate::Error::Config(format!(
                "{}: no loadable segment at file offset {:#x} (not the file that was mapped)",
                host.display(),
                o.offset
            ))
        })?;
        let name = guest
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        out.push(Found {
            bytes,
            bias,
            suffix: format!("@{name}"),
            host,
        });
    }
    Ok(out)
}

/// A shared object with source lines (DWARF), as mapped in a run: what a report needs to
/// name its lines.
#[derive(Clone, Debug)]
pub struct DebugObject {
    /// The file's bytes.
    pub bytes: std::sync::Arc<Vec<u8>>,
    /// Its load bias.
    pub bias: u64,
    /// Where it was mapped.
    pub lo: u64,
    /// One past its mapping.
    pub hi: u64,
}
