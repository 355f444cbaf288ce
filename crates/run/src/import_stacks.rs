//! An import's call stacks: each sample's frames (`perf record -g`'s call chain, or its IP
//! alone) named through every object the recorded process mapped — the program from its own
//! symbols, each shared library from its file (found as `perf report` finds it: under
//! `--symfs`, else at the recorded path, checked against the recorded build-id) and its debug
//! file, the kernel as one `[kernel]` frame — and counted by stack, for
//! [`outcrop_profile::Profile::from_stacks`].

use crate::files::{read_beneath, read_bounded, MAX_PROGRAM_BYTES};
use crate::objects::Naming;
use object::{Object, ObjectSegment};
use outcrop_perf::{Frame, Importer, MappedObject, Sample};
use outcrop_profile::sampled::{SampledFunction, Stack};
use outcrop_profile::Profile;
use outcrop_rv::symbols::Symbols;
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};

/// Most distinct stacks kept: past it, a new stack is kept as its innermost frame alone (the
/// functions' self samples stay exact; the tree loses that stack's callers).
pub const MAX_STACKS: usize = 1 << 20;

/// Most frames kept over all distinct stacks (2^26, 256 MiB of frame ids): past it, a new
/// stack is kept as its innermost frame alone, as past [`MAX_STACKS`].
pub const MAX_STACK_FRAMES: usize = 1 << 26;

/// What an object's frames are named with.
struct Loaded {
    /// Its symbols at the address its first mapping placed it (`None`: no usable file).
    symbols: Option<Symbols>,
    /// Its loadable segments: (file offset, size, link-time address).
    segments: Vec<(u64, u64, u64)>,
    /// Runtime minus link-time address of its first mapping.
    bias: u64,
    /// `@libc.so.6`.
    suffix: String,
    /// Where its file was read from.
    file: Option<PathBuf>,
}

/// Which function a frame is in: the program's, an object's, or a pseudo-function.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Program(u32),
    Object(u32, u32),
    ObjectUnknown(u32),
    /// A JIT map's function: (process, index in its map).
    Jit(u32, u32),
    Kernel,
    Unknown,
}

/// A stack's functions (outermost first), its innermost address and its thread.
type StackKey = (Vec<u32>, u64, u32);

/// Stacks being counted, and the functions they name.
pub struct Stacks {
    naming: Naming,
    symfs: Option<PathBuf>,
    /// perf's build-id cache (`~/.debug`), where `perf record` keeps the objects it sampled.
    cache: Option<PathBuf>,
    /// Where JIT maps (`perf-PID.map`) are read from (`None`: not read).
    jit_dir: Option<PathBuf>,
    /// Each process's JIT map, read the first time one of its frames needs it.
    jit: FxHashMap<u32, Vec<JitSymbol>>,
    program: Option<Symbols>,
    loaded: FxHashMap<u32, Loaded>,
    functions: Vec<SampledFunction>,
    ids: FxHashMap<Key, u32>,
    stacks: FxHashMap<StackKey, u64>,
    threads: FxHashMap<u32, u32>,
    /// Frames held by the distinct stacks.
    frames_kept: usize,
    /// The bounds: (distinct stacks, frames over them).
    limits: (usize, usize),
    /// Stacks cut to their innermost frame because [`MAX_STACKS`] stacks or
    /// [`MAX_STACK_FRAMES`] frames were kept.
    pub truncated: u64,
}

/// A shared object's file as an import found it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ObjectFile {
    /// The path the recording named.
    pub path: String,
    /// The file read for it, if any.
    pub file: Option<String>,
    /// Functions its symbols (or its debug file's) name.
    pub functions: usize,
}

impl Stacks {
    /// Counts stacks of the program named by `program` (its link-time symbols), finding
    /// other objects' files under `symfs` (else at their recorded paths) and their debug
    /// files as `naming` says.
    pub fn new(program: Option<Symbols>, naming: Naming, symfs: Option<PathBuf>) -> Stacks {
        Stacks {
            naming,
            symfs,
            cache: None,
            jit_dir: None,
            jit: FxHashMap::default(),
            program,
            loaded: FxHashMap::default(),
            functions: Vec::new(),
            ids: FxHashMap::default(),
            stacks: FxHashMap::default(),
            threads: FxHashMap::default(),
            frames_kept: 0,
            limits: (MAX_STACKS, MAX_STACK_FRAMES),
            truncated: 0,
        }
    }

    /// Also looks for objects in perf's build-id cache `dir` (`$PERF_BUILDID_DIR`, else
    /// `~/.debug`): `.build-id/ab/cdef…/elf` (or `vdso`, `debug`), as `perf report` does.
    pub fn with_build_id_cache(mut self, dir: Option<PathBuf>) -> Stacks {
        self.cache = dir;
        self
    }

    /// Names code in anonymous mappings from JIT maps in `dir` (`perf-PID.map`, written by
    /// JITs for perf: a line `START SIZE NAME` in hex per function), as `perf report` does
    /// from /tmp.
    pub fn with_jit_maps(mut self, dir: Option<PathBuf>) -> Stacks {
        self.jit_dir = dir;
        self
    }

    /// Counts sample `s`'s stack (as `imp` resolves its frames) when its process runs the
    /// program.
    pub fn add(&mut self, imp: &Importer, s: &Sample) {
        if !imp.runs_program(s.pid) {
            return;
        }
        let frames = imp.frames(s);
        if frames.is_empty() {
            return;
        }
        let mut leaf = (0, 0);
        let mut ids: Vec<u32> = Vec::with_capacity(frames.len());
        for f in frames.iter().rev() {
            let (id, at) = self.function(imp.objects(), *f, s.pid);
            // the kernel's frames are one `[kernel]` frame, unmapped addresses one `[unknown]`
            let pseudo = matches!(f, Frame::Kernel(_) | Frame::Unmapped(_));
            if !(pseudo && ids.last() == Some(&id)) {
                ids.push(id);
            }
            leaf = (id, at);
        }
        let n = self.threads.len() as u32;
        let thread = *self.threads.entry(s.tid).or_insert(n);
        self.count(ids, leaf.1, thread, leaf);
    }

    /// Counts one sample of stack `ids` (outermost first) at `pc`; a new stack past the
    /// bounds is kept as `leaf` (its innermost function and address) alone.
    fn count(&mut self, ids: Vec<u32>, pc: u64, thread: u32, leaf: (u32, u64)) {
        debug_assert!(!ids.is_empty());
        let key = (ids, pc, thread);
        if let Some(n) = self.stacks.get_mut(&key) {
            *n += 1;
            return;
        }
        let (max_stacks, max_frames) = self.limits;
        let key = if self.stacks.len() >= max_stacks || self.frames_kept + key.0.len() > max_frames
        {
            self.truncated += 1;
            (vec![leaf.0], leaf.1, thread)
        } else {
            key
        };
        let len = key.0.len();
        let n = self.stacks.entry(key).or_insert_with(|| 0);
        if *n == 0 {
            self.frames_kept += len;
        }
        *n += 1;
    }

    /// The profile of the stacks counted.
    pub fn profile(&self) -> Profile {
        let mut v: Vec<(&StackKey, &u64)> = self.stacks.iter().collect();
        v.sort_unstable();
        Profile::from_stacks(
            &self.functions,
            v.into_iter().map(|((frames, pc, thread), &samples)| Stack {
                frames,
                pc: *pc,
                samples,
                thread: *thread,
            }),
        )
    }

    /// The shared objects whose files were looked for, in the order first met.
    pub fn object_files(&self, objects: &[MappedObject]) -> Vec<ObjectFile> {
        let mut v: Vec<(&u32, &Loaded)> = self.loaded.iter().collect();
        v.sort_by_key(|(i, _)| **i);
        v.into_iter()
            .map(|(&i, l)| ObjectFile {
                path: objects
                    .get(i as usize)
                    .map_or_else(String::new, |o| o.path.clone()),
                file: l.file.as_ref().map(|p| p.display().to_string()),
                functions: l.symbols.as_ref().map_or(0, Symbols::len),
            })
            .collect()
    }

    /// The function of frame `f` and its address (link-time in the program, runtime of the
    /// object's first mapping elsewhere).
    fn function(&mut self, objects: &[MappedObject], f: Frame, pid: u32) -> (u32, u64) {
        let jit = match f {
            // code a JIT made: an anonymous mapping, or none the file recorded
            Frame::Object { object, addr, .. }
                if objects
                    .get(object as usize)
                    .is_some_and(|o| is_anonymous(&o.path)) =>
            {
                Some(addr)
            }
            Frame::Unmapped(a) => Some(a),
            _ => None,
        };
        if let Some((a, i)) = jit.and_then(|a| Some((a, self.jit_symbol(pid, a)?))) {
            return self.intern(objects, Key::Jit(pid, i), a);
        }
        let (key, at) = match f {
            Frame::Program(a) => (
                self.program
                    .as_ref()
                    .and_then(|s| s.lookup(a))
                    .map_or(Key::Unknown, |s| Key::Program(s.id.0)),
                a,
            ),
            Frame::Object {
                object,
                offset,
                addr,
            } => {
                let l = self.load(objects, object);
                let at = l
                    .segments
                    .iter()
                    .find(|&&(o, size, _)| offset >= o && offset - o < size)
                    .map(|&(o, _, v)| (v + (offset - o)).wrapping_add(l.bias));
                let key = at
                    .and_then(|a| l.symbols.as_ref()?.lookup(a))
                    .map_or(Key::ObjectUnknown(object), |s| Key::Object(object, s.id.0));
                (key, at.unwrap_or(addr))
            }
            Frame::Kernel(a) => (Key::Kernel, a),
            Frame::Unmapped(a) => (Key::Unknown, a),
        };
        self.intern(objects, key, at)
    }

    /// The id of function `key` (described the first time it is met), with `at`.
    fn intern(&mut self, objects: &[MappedObject], key: Key, at: u64) -> (u32, u64) {
        if let Some(&id) = self.ids.get(&key) {
            return (id, at);
        }
        let info = self.describe(objects, key);
        let id = self.functions.len() as u32;
        self.functions.push(info);
        self.ids.insert(key, id);
        (id, at)
    }

    fn describe(&self, objects: &[MappedObject], key: Key) -> SampledFunction {
        let pseudo = |name: String, start: u64| SampledFunction {
            name,
            start,
            ..SampledFunction::default()
        };
        match key {
            Key::Program(id) => self
                .program
                .as_ref()
                .and_then(|s| s.function(outcrop_rv::symbols::FunctionId(id)))
                .map_or_else(
                    || pseudo("[unknown]".into(), 0),
                    |f| SampledFunction {
                        name: f.name.to_string(),
                        mangled: f.mangled.map(str::to_string),
                        start: f.start,
                        size: f.size,
                    },
                ),
            Key::Object(o, id) => {
                let l = &self.loaded[&o];
                l.symbols
                    .as_ref()
                    .and_then(|s| s.function(outcrop_rv::symbols::FunctionId(id)))
                    .map_or_else(
                        || pseudo(format!("[unknown]{}", l.suffix), 0),
                        |f| SampledFunction {
                            name: format!("{}{}", f.name, l.suffix),
                            mangled: f.mangled.map(|m| format!("{m}{}", l.suffix)),
                            start: f.start,
                            size: f.size,
                        },
                    )
            }
            Key::ObjectUnknown(o) => pseudo(
                format!("[unknown]@{}", base_name(objects.get(o as usize))),
                objects.get(o as usize).map_or(0, |m| m.start),
            ),
            Key::Jit(pid, i) => {
                let j = &self.jit[&pid][i as usize];
                SampledFunction {
                    name: format!("{}@perf-{pid}.map", j.name),
                    mangled: None,
                    start: j.start,
                    size: j.size,
                }
            }
            Key::Kernel => pseudo("[kernel]".into(), 0),
            Key::Unknown => pseudo("[unknown]".into(), 0),
        }
    }

    /// Object `o`'s symbols and segments, read the first time it is needed.
    fn load(&mut self, objects: &[MappedObject], o: u32) -> &Loaded {
        if !self.loaded.contains_key(&o) {
            let l = objects.get(o as usize).map_or_else(
                || Loaded {
                    symbols: None,
                    segments: Vec::new(),
                    bias: 0,
                    suffix: "@?".into(),
                    file: None,
                },
                |m| self.read_object(m),
            );
            self.loaded.insert(o, l);
        }
        &self.loaded[&o]
    }

    fn read_object(&self, m: &MappedObject) -> Loaded {
        let suffix = format!("@{}", base_name(Some(m)));
        let mut l = Loaded {
            symbols: None,
            segments: Vec::new(),
            bias: 0,
            suffix,
            file: None,
        };
        let Some((file, bytes)) = self.find_file(m) else {
            return l;
        };
        let Ok(elf) = object::File::parse(bytes.as_slice()) else {
            return l;
        };
        l.segments = elf
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address())
            })
            .collect();
        if l.segments.len() >= 2 && l.segments[1..].iter().all(|&(_, size, _)| size == 0) {
            // a debug file alone (`--only-keep-debug` zeroes its segments' file sizes): take
            // file offsets as addresses, as linkers lay out shared objects by default
            l.segments = elf
                .segments()
                .map(|s| (s.address(), s.size(), s.address()))
                .collect();
        }
        l.bias = outcrop_rv::elf::load_bias(&bytes, m.start, m.pgoff & !0xfff).unwrap_or(0);
        l.symbols = self.naming.symbols(&bytes, Some(&file), l.bias);
        l.file = Some(file);
        l
    }

    /// The file of object `m`: under `--symfs` when given, else at its recorded path, else
    /// its debug file by build-id; a file whose build-id is not the recorded one is not it.
    fn find_file(&self, m: &MappedObject) -> Option<(PathBuf, Vec<u8>)> {
        let rel = Path::new(m.path.trim_start_matches('/'));
        // [vdso], [anon:…], [heap]: no file of their own
        let named = !(m.path.starts_with('[') || m.path.is_empty());
        let read = match &self.symfs {
            _ if !named => None,
            Some(root) => read_beneath(root, rel, "shared object", MAX_PROGRAM_BYTES)
                .ok()
                .map(|b| (root.join(rel), b)),
            None => read_bounded(Path::new(&m.path), "shared object", MAX_PROGRAM_BYTES)
                .ok()
                .map(|b| (PathBuf::from(&m.path), b)),
        };
        let same = |b: &[u8]| match (&m.build_id, outcrop_rv::elf::build_id_in_prefix(b)) {
            (Some(want), Some(have)) => trim(want) == trim(&have),
            _ => true,
        };
        if let Some((p, b)) = read.filter(|(_, b)| same(b)) {
            return Some((p, b));
        }
        // the file is gone or another build (or has no path: the vdso): perf's build-id
        // cache, then the debug file by build-id, have it
        let want = m.build_id.as_deref().filter(|id| trim(id).len() >= 2)?;
        let hex = crate::objects::hex(trim(want));
        let cached = self.cache.as_ref().and_then(|c| {
            let dir = c.join(".build-id").join(&hex[..2]).join(&hex[2..]);
            ["elf", "vdso", "debug"].iter().find_map(|f| {
                let p = dir.join(f);
                let b = read_bounded(&p, "shared object", MAX_PROGRAM_BYTES).ok()?;
                same(&b).then_some((p, b))
            })
        });
        if cached.is_some() {
            return cached;
        }
        self.naming.debug.dirs().iter().find_map(|d| {
            let p = d
                .join(".build-id")
                .join(&hex[..2])
                .join(format!("{}.debug", &hex[2..]));
            let b = read_bounded(&p, "debug file", MAX_PROGRAM_BYTES).ok()?;
            same(&b).then_some((p, b))
        })
    }
}

impl Stacks {
    /// The JIT map entry of process `pid` that covers `a`, reading its map if need be.
    fn jit_symbol(&mut self, pid: u32, a: u64) -> Option<u32> {
        let dir = self.jit_dir.as_ref()?;
        let map = self.jit.entry(pid).or_insert_with(|| {
            let path = dir.join(format!("perf-{pid}.map"));
            crate::files::read_text_bounded(&path, "JIT map", MAX_JIT_MAP_BYTES)
                .map(|t| parse_jit_map(&t))
                .unwrap_or_default()
        });
        let i = map.partition_point(|j| j.start <= a).checked_sub(1)?;
        let j = &map[i];
        (a - j.start < j.size.max(1)).then_some(i as u32)
    }
}

/// Largest JIT map read (64 MiB).
pub const MAX_JIT_MAP_BYTES: u64 = 64 << 20;

/// One function of a JIT map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitSymbol {
    /// First byte.
    pub start: u64,
    /// Length in bytes.
    pub size: u64,
    /// Its name (control characters escaped, at most 4 KiB).
    pub name: String,
}

/// The functions of a JIT map's text (`START SIZE NAME` per line, hex, as perf reads
/// /tmp/perf-PID.map), sorted by address; lines that do not parse are skipped, and a later
/// entry at the same address replaces an earlier one (a JIT reusing its memory).
pub fn parse_jit_map(text: &str) -> Vec<JitSymbol> {
    let mut v: Vec<JitSymbol> = text
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ' ');
            let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
            let start = hex(parts.next()?)?;
            let size = hex(parts.next()?)?;
            let mut name: String = parts.next()?.trim_end().chars().take(4096).collect();
            name = outcrop_events::escape::terminal(&name).into_owned();
            (!name.is_empty() && start.checked_add(size).is_some()).then_some(JitSymbol {
                start,
                size,
                name,
            })
        })
        .collect();
    // stable: of entries at one address, the last written wins
    v.sort_by_key(|j| j.start);
    v.reverse();
    v.dedup_by_key(|j| j.start);
    v.reverse();
    v
}

/// Whether a mapping's path names no file: JIT code lives in such mappings.
fn is_anonymous(path: &str) -> bool {
    path == "//anon" || path.starts_with("[anon") || path.starts_with("/memfd:") || path.is_empty()
}

/// A build-id without the zero padding a build-id table adds to short ids.
fn trim(id: &[u8]) -> &[u8] {
    &id[..id.len() - id.iter().rev().take_while(|&&b| b == 0).count()]
}

/// The file name of an object's path (`libc.so.6`).
fn base_name(m: Option<&MappedObject>) -> String {
    m.map_or_else(
        || "?".into(),
        |m| {
            Path::new(&m.path)
                .file_name()
                .map_or_else(|| m.path.clone(), |n| n.to_string_lossy().into_owned())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_past_the_frame_bound_keep_their_innermost_frame_and_every_sample() {
        let mut st = Stacks::new(None, Naming::default(), None);
        st.limits = (100, 10);
        st.count(vec![1, 2, 3, 4], 0x40, 0, (4, 0x40));
        st.count(vec![1, 2, 3, 5], 0x50, 0, (5, 0x50));
        st.count(vec![1, 2, 3, 4], 0x40, 0, (4, 0x40)); // already kept: counted whole
        st.count(vec![1, 2, 3, 6], 0x60, 0, (6, 0x60)); // 12 frames > 10: cut
        st.count(vec![1, 2, 3, 6], 0x60, 0, (6, 0x60)); // the cut stack, counted again
        assert_eq!(st.truncated, 2);
        assert_eq!(st.frames_kept, 9);
        assert_eq!(st.stacks[&(vec![1, 2, 3, 4], 0x40, 0)], 2);
        assert_eq!(st.stacks[&(vec![6], 0x60, 0)], 2);
        assert_eq!(st.stacks.values().sum::<u64>(), 5);
        st.limits = (3, 1000);
        st.count(vec![7, 8], 0x80, 1, (8, 0x80)); // a fourth stack: cut
        assert_eq!(st.stacks[&(vec![8], 0x80, 1)], 1);
        assert!(st.frames_kept <= 10);
    }

    #[test]
    fn a_jit_map_parses_as_perf_reads_it_and_bad_lines_are_skipped() {
        let text = "7f0000001000 20 first\n\
                    garbage line\n\
                    7f0000000000 10 Lua::fn \x1b[31mred\n\
                    7f0000001000 40 first again\n\
                    ffffffffffffffff 10 overflows\n\
                    0x10 8 hex prefix\n";
        let m = parse_jit_map(text);
        let names: Vec<&str> = m.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names.len(), 3, "{names:?}");
        assert_eq!(m[0].start, 0x10);
        assert!(
            !names[1].contains('\x1b'),
            "control characters escaped: {names:?}"
        );
        assert_eq!(
            (m[2].name.as_str(), m[2].size),
            ("first again", 0x40),
            "the last wins"
        );
    }
}
