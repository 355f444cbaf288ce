//! One exact profile per process and program (docs/machine.md, "Processes"): the profiler
//! keeps a [`Profiler`] for each (process, image) the source names through
//! [`Observer::process`], swaps the running one in when its records come, and gives each back
//! as a [`ProcessProfile`] at the end.
//!
//! A process's first image is named by its program's mapping ([`Observer::mapped`] index 0),
//! whose symbols come from the resolver the profiler was given
//! ([`Profiler::with_objects`]); the same file mapped at the same place is resolved once.
//! The time of a timed run is the machine's: each process is charged the cycles from the
//! record before its own.

use crate::{Profile, Profiler};
use outcrop_events::record::{Control, Mapping};
use outcrop_events::ProcessSwitch;
use outcrop_rv::symbols::Symbols;
use serde::Serialize;

/// Most (process, image) profiles kept; past it, a new one's records join the last one made
/// (a guest that forks without end cannot grow the profiler without bound).
pub const MAX_PROCESS_PROFILES: usize = 4096;

/// Most resolved objects kept for reuse by later processes.
const MAX_CACHED: usize = 256;

/// The exact profile of one program one process ran.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessProfile {
    /// The process.
    pub pid: u32,
    /// Its parent.
    pub parent: u32,
    /// Which of its programs: 0 the one it started with (a forked child's is its parent's),
    /// one more per `execve`.
    pub image: u32,
    /// The program's path as the guest named it (empty when it was never mapped).
    pub program: String,
    /// What it retired there.
    pub profile: Profile,
}

/// A resolved object: (host path, start, offset), its symbols.
type Cached = ((std::path::PathBuf, u64, u64), Option<Symbols>);

/// The profilers of the processes not running.
pub(crate) struct Processes {
    /// The running one's (pid, image).
    key: (u32, u32),
    /// The first process's first image: [`Profiler::finish_processes`] gives it first.
    first: (u32, u32),
    parked: Vec<((u32, u32), Profiler)>,
    /// Profiles made so far (at most [`MAX_PROCESS_PROFILES`]).
    made: usize,
    cache: Vec<Cached>,
}

impl Profiler {
    /// The records from here belong to `p`'s process and image: its profiler is swapped in
    /// (made on its first record, named by the mappings that follow).
    pub(crate) fn switch_process(&mut self, p: &ProcessSwitch) -> Control {
        let from = (p.from_pid, p.from_image);
        let mut procs = self.processes.take().unwrap_or_else(|| {
            Box::new(Processes {
                key: from,
                first: from,
                parked: Vec::new(),
                made: 1,
                cache: Vec::new(),
            })
        });
        let key = (p.pid, p.image);
        if key == procs.key {
            self.processes = Some(procs);
            return Control::Continue;
        }
        let next = match procs.parked.iter().position(|(k, _)| *k == key) {
            Some(i) => Some(procs.parked.swap_remove(i).1),
            None if procs.made < MAX_PROCESS_PROFILES => {
                procs.made += 1;
                let mut n = Profiler::new(Symbols::default()).with_timeline(self.timeline.interval);
                n.image = Some(ImageInfo {
                    parent: p.parent,
                    program: String::new(),
                    named: false,
                });
                // the thread goes on across an `execve`; a switch names its own next
                n.thread = self.thread;
                Some(n)
            }
            None => None, // past the bound: the running profile takes these records
        };
        if let Some(mut next) = next {
            next.last_retire = next.last_retire.max(self.last_retire);
            next.timed |= self.timed;
            next.resolver = self.resolver.take();
            std::mem::swap(self, &mut next);
            procs.parked.push((procs.key, next));
            procs.key = key;
        }
        self.processes = Some(procs);
        Control::Continue
    }

    /// The symbols of mapped object `m` from the resolver, once per file and place over
    /// every process.
    pub(crate) fn object_symbols(&mut self, m: &Mapping<'_>) -> Option<Symbols> {
        let resolver = self.resolver.as_mut()?;
        let Some(procs) = self.processes.as_mut() else {
            return resolver(m);
        };
        let key = (m.host_path?.to_path_buf(), m.start, m.offset);
        if let Some((_, s)) = procs.cache.iter().find(|(k, _)| *k == key) {
            return s.clone();
        }
        let s = resolver(m);
        if procs.cache.len() < MAX_CACHED {
            procs.cache.push((key, s.clone()));
        }
        s
    }

    /// The program of a process's image, from its mapping (index 0): its symbols, when the
    /// profiler was made for it (the first process's were given).
    pub(crate) fn name_program(&mut self, m: &Mapping<'_>) {
        let named = match &self.image {
            Some(i) => i.named,
            None => {
                self.image = Some(ImageInfo {
                    parent: 0,
                    program: m.path.display().to_string(),
                    named: true,
                });
                return;
            }
        };
        if named || self.instructions > 0 {
            return;
        }
        let symbols = self.object_symbols(m);
        if let Some(i) = self.image.as_mut() {
            i.program = m.path.display().to_string();
            i.named = true;
        }
        if let Some(s) = symbols {
            self.pcs = (0..s.len()).map(|_| Vec::new()).collect();
            self.symbols = s;
        }
    }

    /// Each (process, image)'s profile, the first process's first image first, then in
    /// order of pid and image; empty when the source named no process (one process ran:
    /// [`Profiler::finish_profile`] is its profile).
    pub fn finish_processes(mut self) -> (Profile, Vec<ProcessProfile>) {
        let Some(mut procs) = self.processes.take() else {
            return (Profile::build(self), Vec::new());
        };
        procs.parked.push((procs.key, self));
        procs.parked.sort_by_key(|(k, _)| (*k != procs.first, *k));
        let out: Vec<ProcessProfile> = procs
            .parked
            .into_iter()
            .map(|((pid, image), p)| {
                let (parent, program) = p
                    .image
                    .as_ref()
                    .map_or((0, String::new()), |i| (i.parent, i.program.clone()));
                ProcessProfile {
                    pid,
                    parent,
                    image,
                    program,
                    profile: Profile::build(p),
                }
            })
            .collect();
        let first = out[0].profile.clone();
        (first, out)
    }
}

/// What a profiler knows of the image it profiles.
pub(crate) struct ImageInfo {
    /// The process's parent.
    pub(crate) parent: u32,
    /// The program's guest path.
    pub(crate) program: String,
    /// Whether its symbols were read (or given).
    pub(crate) named: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::insn;
    use outcrop_events::record::Observer;

    fn switch(p: &mut Profiler, from: (u32, u32), to: (u32, u32), parent: u32) {
        let _ = p.process(&ProcessSwitch {
            pid: to.0,
            parent,
            image: to.1,
            from_pid: from.0,
            from_image: from.1,
        });
    }

    /// Each (process, image) keeps its own counts, a return to one goes on with its profile,
    /// the first process's first image comes first, and the rows sum to what was retired.
    #[test]
    fn each_process_and_image_counts_its_own_instructions() {
        let mut p = Profiler::new(Symbols::default());
        for i in 0..5 {
            let _ = p.retire(&insn(0x1000 + 4 * i), None);
        }
        switch(&mut p, (7, 0), (8, 0), 7);
        for i in 0..3 {
            let _ = p.retire(&insn(0x2000 + 4 * i), None);
        }
        switch(&mut p, (8, 0), (7, 0), 1);
        let _ = p.retire(&insn(0x1100), None);
        switch(&mut p, (7, 0), (7, 1), 1);
        for i in 0..2 {
            let _ = p.retire(&insn(0x3000 + 4 * i), None);
        }
        let (first, rows) = p.finish_processes();
        let got: Vec<(u32, u32, u32, u64)> = rows
            .iter()
            .map(|r| (r.pid, r.image, r.parent, r.profile.instructions))
            .collect();
        assert_eq!(got, vec![(7, 0, 0, 6), (7, 1, 1, 2), (8, 0, 7, 3)]);
        assert_eq!(first.instructions, 6);
        assert_eq!(first.pcs.len(), 6);
        assert!(rows[2]
            .profile
            .pcs
            .iter()
            .all(|c| c.pc >= 0x2000 && c.pc < 0x3000));
    }

    /// A source that names more processes than the bound: the profiles stop growing, and
    /// every instruction is still counted once.
    #[test]
    fn the_profiles_are_bounded_and_lose_no_instruction() {
        let mut p = Profiler::new(Symbols::default());
        let n = MAX_PROCESS_PROFILES as u32 + 50;
        let mut from = (1, 0);
        for pid in 2..n + 2 {
            switch(&mut p, from, (pid, 0), 1);
            let _ = p.retire(&insn(0x1000), None);
            from = (pid, 0);
        }
        let (_, rows) = p.finish_processes();
        assert_eq!(rows.len(), MAX_PROCESS_PROFILES);
        let total: u64 = rows.iter().map(|r| r.profile.instructions).sum();
        assert_eq!(total, u64::from(n));
    }

    /// Without a process named, there is one profile and no rows.
    #[test]
    fn one_process_gives_no_rows() {
        let mut p = Profiler::new(Symbols::default());
        let _ = p.retire(&insn(0x1000), None);
        let (first, rows) = p.finish_processes();
        assert!(rows.is_empty());
        assert_eq!(first.instructions, 1);
    }
}
