//! From perf's events to Outcrop's samples for one program: runtime addresses are mapped to
//! the program's link-time addresses through each process's own mappings (so several
//! processes, each with the program loaded at its own address, are kept apart), branch stacks
//! become traces oldest first, and IP samples become a histogram by address.

use crate::data::{Event, Mmap, Sample};
use outcrop_sampling::{Filter, LbrConfig, Meta, PeriodUnit, Record, Samples};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Where a branch record's end lay outside the program (another object, the kernel, or an
/// address no mapping covers): no block of the program's CFG contains it.
pub const OUTSIDE: u64 = u64::MAX;

/// Longest trace kept (the samples file's limit); longer stacks keep their newest entries.
pub const MAX_TRACE: usize = 256;

/// A loadable segment of the program: file bytes `offset .. offset + size` at `vaddr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// File offset.
    pub offset: u64,
    /// Link-time address.
    pub vaddr: u64,
    /// Bytes in the file.
    pub size: u64,
}

/// The program whose samples are wanted.
#[derive(Clone, Debug, Default)]
pub struct Target {
    /// Its file name (a mapping whose path ends in `/NAME` or is `NAME` is the program).
    pub name: String,
    /// Its GNU build-id; when set, a mapping is the program if its build-id (from the record
    /// or the file's build-id table) matches, whatever its path.
    pub build_id: Option<Vec<u8>>,
    /// Its executable loadable segments.
    pub segments: Vec<Segment>,
    /// Text input (`perf script`) has no mappings: its addresses are taken as link-time
    /// addresses of the program.
    pub identity: bool,
}

impl Target {
    fn vaddr_of_offset(&self, off: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|s| off >= s.offset && off - s.offset < s.size)
            .map(|s| s.vaddr + (off - s.offset))
    }
    fn contains_vaddr(&self, a: u64) -> bool {
        self.segments
            .iter()
            .any(|s| a >= s.vaddr && a - s.vaddr < s.size)
    }
}

/// What an import read and kept.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Records read.
    pub records: u64,
    /// Samples read.
    pub samples: u64,
    /// Samples taken in the kernel.
    pub kernel_samples: u64,
    /// Samples with a call chain (`perf record -g`).
    pub callchains: u64,
    /// Samples whose IP lies in the program.
    pub samples_in_program: u64,
    /// Branch-stack entries read.
    pub branches: u64,
    /// Entries whose source and target both lie in the program.
    pub branches_in_program: u64,
    /// Entries flagged mispredicted.
    pub mispredicted: u64,
    /// Entries with a cycle count.
    pub with_cycles: u64,
    /// Entries on a wrong speculative path (dropped, as perf2bolt and AutoFDO do).
    pub wrong_path: u64,
    /// Samples with the LBR's hardware index.
    pub with_hw_idx: u64,
    /// Entries with branch counters (kernel 6.8+).
    pub with_counters: u64,
    /// Deepest branch stack.
    pub max_entries: u64,
    /// Records the kernel reported lost.
    pub lost: u64,
    /// Mappings of the program seen (over all processes).
    pub program_mappings: u64,
    /// Processes with at least one sample, and their samples (pid → samples).
    pub processes: BTreeMap<u32, u64>,
    /// Threads with at least one sample.
    pub threads: u64,
}

/// One code mapping in one process.
#[derive(Clone, Copy, Debug)]
struct Map {
    start: u64,
    len: u64,
    pgoff: u64,
    /// Index into [`Importer::objects`].
    object: u32,
}

/// Most distinct mapped objects an import tells apart (a file that maps more shares the
/// last one's entry: their frames are `[unknown]`).
pub const MAX_OBJECTS: usize = 4096;

/// A file mapped for code by a sampled process (the program, a shared library, the vdso).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MappedObject {
    /// Its path as the recording host named it (untrusted: a name in the input).
    pub path: String,
    /// Its build-id, from the record or the file's build-id table.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "hex")]
    pub build_id: Option<Vec<u8>>,
    /// Whether it is the program ([`Target`]).
    pub program: bool,
    /// Samples whose innermost frame lies in it.
    pub samples: u64,
    /// Where its first code mapping started, in the process that made it.
    pub start: u64,
    /// The file offset that mapping started at.
    pub pgoff: u64,
}

fn hex<S: serde::Serializer>(id: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
    let text: Option<String> = id
        .as_ref()
        .map(|b| b.iter().map(|x| format!("{x:02x}")).collect());
    serde::Serialize::serialize(&text, s)
}

/// One frame of a sample's call chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Frame {
    /// In the program, at this link-time address.
    Program(u64),
    /// In another mapped object ([`Importer::objects`]), at this file offset.
    Object {
        /// Index into [`Importer::objects`].
        object: u32,
        /// File offset of the address.
        offset: u64,
        /// The address itself (in the sampled process).
        addr: u64,
    },
    /// In the kernel, at this address.
    Kernel(u64),
    /// At a user address no mapping covers.
    Unmapped(u64),
}

/// An import in progress.
pub struct Importer {
    target: Target,
    /// Build-ids by path, from the file's table.
    ids_by_path: FxHashMap<String, Vec<u8>>,
    /// Code mappings by process, shared copy-on-write between a parent and the children
    /// forked from it (40,000 forks of a process with 2,000 mappings hold one copy, not
    /// 40,000).
    maps: FxHashMap<u32, std::sync::Arc<Vec<Map>>>,
    /// Every object mapped for code, in the order first seen.
    objects: Vec<MappedObject>,
    object_ids: FxHashMap<(String, Option<Vec<u8>>), u32>,
    traces: FxHashMap<Vec<Record>, u64>,
    ips: FxHashMap<u64, u64>,
    data_addrs: FxHashMap<u64, u64>,
    threads: rustc_hash::FxHashSet<(u32, u32)>,
    trace: Vec<Record>,
    /// What was read.
    pub stats: Stats,
}

/// The result of an import.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The branch stacks as Outcrop's samples (program addresses; [`OUTSIDE`] elsewhere).
    pub samples: Samples,
    /// IP samples by program address.
    pub ips: BTreeMap<u64, u64>,
    /// Data addresses of samples that carry one (`ADDR`), by address.
    pub data_addrs: BTreeMap<u64, u64>,
    /// What was read.
    pub stats: Stats,
    /// Every object mapped for code, in the order first seen, with its samples.
    pub objects: Vec<MappedObject>,
}

impl Importer {
    /// Starts an import of `target`'s samples; `build_ids` is the file's build-id table.
    pub fn new(target: Target, build_ids: &[crate::data::BuildId]) -> Importer {
        Importer {
            target,
            ids_by_path: build_ids
                .iter()
                .map(|b| (b.path.clone(), b.id.clone()))
                .collect(),
            maps: FxHashMap::default(),
            objects: Vec::new(),
            object_ids: FxHashMap::default(),
            traces: FxHashMap::default(),
            ips: FxHashMap::default(),
            data_addrs: FxHashMap::default(),
            threads: Default::default(),
            trace: Vec::new(),
            stats: Stats::default(),
        }
    }

    fn is_program(&self, m: &Mmap) -> bool {
        if let Some(want) = &self.target.build_id {
            let id = m
                .build_id
                .as_ref()
                .or_else(|| self.ids_by_path.get(&m.path));
            if let Some(id) = id {
                // tables without a size field pad short ids (xxHash's 8 bytes) to 20
                let trim = |b: &[u8]| b.len() - b.iter().rev().take_while(|&&x| x == 0).count();
                return id[..trim(id)] == want[..trim(want)];
            }
        }
        let name = &self.target.name;
        !name.is_empty()
            && (m.path == *name
                || m.path
                    .strip_suffix(name.as_str())
                    .is_some_and(|p| p.ends_with('/')))
    }

    /// The program's link-time address of runtime address `a` in process `pid`.
    pub fn vaddr(&self, pid: u32, a: u64) -> Option<u64> {
        if self.target.identity {
            return self.target.contains_vaddr(a).then_some(a);
        }
        let m = self.map_of(pid, a)?;
        if !self.objects[m.object as usize].program {
            return None;
        }
        self.target
            .vaddr_of_offset((a - m.start).checked_add(m.pgoff)?)
    }

    /// The newest code mapping of process `pid` that covers `a`.
    fn map_of(&self, pid: u32, a: u64) -> Option<&Map> {
        self.maps
            .get(&pid)?
            .iter()
            .rev()
            .find(|m| a >= m.start && a - m.start < m.len)
    }

    /// Whether process `pid` has the program mapped (text input: every sample's process).
    pub fn runs_program(&self, pid: u32) -> bool {
        self.target.identity
            || self
                .maps
                .get(&pid)
                .is_some_and(|m| m.iter().any(|m| self.objects[m.object as usize].program))
    }

    /// The frame of user address `a` in process `pid`.
    fn frame(&self, pid: u32, a: u64) -> Frame {
        if let Some(v) = self.vaddr(pid, a) {
            return Frame::Program(v);
        }
        match self.map_of(pid, a) {
            Some(m) if !self.objects[m.object as usize].program => Frame::Object {
                object: m.object,
                offset: (a - m.start).saturating_add(m.pgoff),
                addr: a,
            },
            _ => Frame::Unmapped(a),
        }
    }

    /// The frames of sample `s`, innermost first: its call chain when it has one, else its
    /// IP alone. A caller's frame is at its return address less one (inside the call); the
    /// first address of each context (the IP, or the user IP a kernel sample interrupted)
    /// is taken as it is.
    pub fn frames(&self, s: &Sample) -> Vec<Frame> {
        let kernel_ip = s.mode == Some(crate::data::CpuMode::Kernel);
        let mut out = Vec::new();
        if s.callchain.is_empty() {
            if let Some(ip) = s.ip {
                out.push(if kernel_ip {
                    Frame::Kernel(ip)
                } else {
                    self.frame(s.pid, ip)
                });
            }
            return out;
        }
        let mut kernel = kernel_ip;
        let mut skip = false;
        // the first address of each context is where it was interrupted (the sample's IP, or
        // the user IP a kernel sample interrupted), not a return address
        let mut first = true;
        for &e in &s.callchain {
            if e >= crate::data::CONTEXT_MAX {
                // another context's addresses follow; a guest's or hypervisor's are skipped
                kernel = e == crate::data::CONTEXT_KERNEL;
                skip = e != crate::data::CONTEXT_KERNEL && e != crate::data::CONTEXT_USER;
                first = true;
                continue;
            }
            if skip {
                continue;
            }
            let a = if first { e } else { e.saturating_sub(1) };
            first = false;
            out.push(if kernel {
                Frame::Kernel(a)
            } else {
                self.frame(s.pid, a)
            });
        }
        out
    }

    /// Every object mapped for code so far (the program's entries have `program` set).
    pub fn objects(&self) -> &[MappedObject] {
        &self.objects
    }

    /// The index of the object `m` maps, new or seen before.
    fn object_of(&mut self, m: &Mmap) -> u32 {
        let id = m
            .build_id
            .clone()
            .or_else(|| self.ids_by_path.get(&m.path).cloned());
        let key = (m.path.clone(), id);
        if let Some(&i) = self.object_ids.get(&key) {
            return i;
        }
        if self.objects.len() >= MAX_OBJECTS {
            return MAX_OBJECTS as u32 - 1;
        }
        let i = self.objects.len() as u32;
        self.objects.push(MappedObject {
            path: m.path.clone(),
            build_id: key.1.clone(),
            program: self.is_program(m),
            samples: 0,
            start: m.start,
            pgoff: m.pgoff,
        });
        self.object_ids.insert(key, i);
        i
    }

    /// Takes one event; for a sample whose IP lies in the program, returns that IP (a
    /// link-time address) and the sample's data address, if it has one.
    pub fn event(&mut self, e: &Event) -> Option<(u64, Option<u64>)> {
        self.stats.records += 1;
        match e {
            Event::Sample(s) => return self.sample(s),
            Event::Mmap(m) if m.exec => {
                let object = self.object_of(m);
                if self.objects[object as usize].program {
                    self.stats.program_mappings += 1;
                }
                let maps = std::sync::Arc::make_mut(self.maps.entry(m.pid).or_default());
                if maps.len() < 4096 {
                    maps.push(Map {
                        start: m.start,
                        len: m.len,
                        pgoff: m.pgoff,
                        object,
                    });
                }
            }
            Event::Task {
                fork: true,
                pid,
                ppid,
                ..
            } if pid != ppid => {
                // a new process starts with its parent's mappings
                if let Some(m) = self.maps.get(ppid) {
                    let m = std::sync::Arc::clone(m);
                    self.maps.entry(*pid).or_insert(m);
                }
            }
            Event::Lost { count } => self.stats.lost = self.stats.lost.saturating_add(*count),
            _ => {}
        }
        None
    }

    /// Takes one sample; returns its IP and data address as [`Importer::event`] does.
    pub fn sample(&mut self, s: &Sample) -> Option<(u64, Option<u64>)> {
        let st = &mut self.stats;
        st.samples += 1;
        if s.mode == Some(crate::data::CpuMode::Kernel) {
            st.kernel_samples += 1;
        }
        st.callchains += u64::from(!s.callchain.is_empty());
        *st.processes.entry(s.pid).or_default() += 1;
        if self.threads.len() < 1 << 20 {
            self.threads.insert((s.pid, s.tid));
        }
        let mut hit = None;
        if let Some(o) =
            s.ip.filter(|_| s.mode != Some(crate::data::CpuMode::Kernel))
                .and_then(|ip| self.map_of(s.pid, ip))
                .map(|m| m.object as usize)
        {
            self.objects[o].samples += 1;
        }
        if let Some(ip) = s.ip {
            if let Some(v) = self.vaddr(s.pid, ip) {
                self.stats.samples_in_program += 1;
                *self.ips.entry(v).or_default() += 1;
                if let Some(a) = s.addr {
                    *self.data_addrs.entry(a).or_default() += 1;
                }
                hit = Some((v, s.addr));
            }
        }
        if s.hw_idx.is_some() {
            self.stats.with_hw_idx += 1;
        }
        self.stats.max_entries = self.stats.max_entries.max(s.branches.len() as u64);
        let mut trace = std::mem::take(&mut self.trace);
        trace.clear();
        let mut inside_any = false;
        for b in s.branches.iter().take(MAX_TRACE).rev() {
            let st = &mut self.stats;
            st.branches += 1;
            st.mispredicted += u64::from(b.mispred);
            st.with_cycles += u64::from(b.cycles != 0);
            st.with_counters += u64::from(b.counters.is_some());
            if b.spec == 1 {
                st.wrong_path += 1;
                continue;
            }
            let from = self.vaddr(s.pid, b.from);
            let to = self.vaddr(s.pid, b.to);
            if from.is_some() && to.is_some() {
                self.stats.branches_in_program += 1;
            }
            inside_any |= from.is_some() || to.is_some();
            trace.push(Record {
                from: from.unwrap_or(OUTSIDE),
                to: to.unwrap_or(OUTSIDE),
            });
        }
        if inside_any {
            if let Some(c) = self.traces.get_mut(trace.as_slice()) {
                *c += 1;
            } else {
                self.traces.insert(trace.clone(), 1);
            }
        }
        self.trace = trace;
        hit
    }

    /// The samples file and histograms. `program` and `program_id` name the program as
    /// Outcrop's files do; `period` is the event's sampling period (0 if by frequency).
    pub fn finish(mut self, program: &str, program_id: &str, period: u64) -> Imported {
        self.stats.threads = self.threads.len() as u64;
        let entries = (self.stats.max_entries as usize).clamp(1, MAX_TRACE);
        // the file counts the samples it keeps: those with a record in the program
        let kept: u64 = self.traces.values().sum();
        let recorded: u64 = self.traces.iter().map(|(t, c)| t.len() as u64 * c).sum();
        let samples = Samples {
            meta: Meta {
                program: program.to_string(),
                program_id: program_id.to_string(),
                objects: Vec::new(),
                config: LbrConfig {
                    entries,
                    period: period.max(1),
                    unit: PeriodUnit::Cycles,
                    random: false,
                    seed: 0,
                    filter: Filter::Taken,
                    skew: 0.0,
                    skew_bytes: 0,
                    drop_target: 0.0,
                    handler_cycles: 0,
                },
                instructions: 0,
                cycles: 0,
                samples: kept,
                recorded,
            },
            traces: self.traces,
        };
        Imported {
            samples,
            ips: self.ips.into_iter().collect(),
            data_addrs: self.data_addrs.into_iter().collect(),
            stats: self.stats,
            objects: self.objects,
        }
    }
}
