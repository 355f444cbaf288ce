//! RAP over the machine's event streams (the RAP paper's §4 studies): which 64-bit value each
//! stream takes from a retired instruction, and an observer that feeds one RAP tree (and,
//! optionally, exact counts) per stream.
//!
//! ```no_run
//! # use outcrop_rap::observe::{RapProfiler, Stream};
//! # fn demo(machine: &mut outcrop_rv::Machine) -> Result<(), outcrop_rap::Error> {
//! let config = outcrop_rap::Config::builder().eps(0.01).build()?;
//! let mut prof = RapProfiler::new(&[Stream::Pc, Stream::LoadValue], &config, true);
//! machine.run(&mut prof);
//! prof.finish_trees()?;
//! for p in &prof.profiles {
//!     println!("{}: {} events, {} hot ranges", p.stream, p.tree.n(), p.tree.hot_ranges(0.1)?.len());
//! }
//! # Ok(()) }
//! ```

use crate::{Config, ExactCounts, RapTree};
use outcrop_events::processes::{ProcessKey, ProcessRows};
use outcrop_events::record::{Class, Control, Observer, Retire, Stamp, TimingEvents as Events};
use outcrop_events::record::{Mapping, ProcessSwitch};
use std::fmt;

/// RAP trees to build during a run.
#[derive(Clone, Debug)]
pub struct RapSpec {
    /// The streams, one tree each.
    pub streams: Vec<Stream>,
    /// Every tree's configuration.
    pub config: Config,
    /// Also count every stream exactly (for percent errors).
    pub exact: bool,
    /// The hot-range threshold its report uses, a fraction of each stream in (0, 1]
    /// (RAP §4.1; 0.1 by default).
    pub hot: f64,
    /// Also a tree per guest thread for every stream (`outcrop run --rap-per-thread`).
    pub per_thread: bool,
}

impl RapSpec {
    /// Trees with `config` over `streams`; `exact` adds exact counts.
    pub fn new(streams: &[Stream], config: Config, exact: bool) -> RapSpec {
        RapSpec {
            streams: streams.to_vec(),
            config,
            exact,
            hot: 0.1,
            per_thread: false,
        }
    }

    /// The profiler that builds these trees (with a tree per thread if asked).
    pub fn profiler(self) -> RapProfiler {
        let p = RapProfiler::new(&self.streams, &self.config, self.exact);
        if self.per_thread {
            p.per_thread()
        } else {
            p
        }
    }
}

/// An event stream of the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stream {
    /// The pc of every retired instruction.
    Pc,
    /// Basic-block start addresses, weighted by the block's instruction count.
    Block,
    /// Values loaded (loads, LR, AMOs).
    LoadValue,
    /// Addresses loaded from.
    LoadAddr,
    /// Addresses stored to.
    StoreAddr,
    /// Values of loads that missed the L1 data cache (timing model).
    L1dMissValue,
    /// Values of loads that missed the L2 (timing model).
    L2MissValue,
    /// PCs of loads and stores that missed the L1 data cache (timing model).
    L1dMissPc,
    /// PCs of instructions whose register source operands all fit in 16 bits (signed).
    NarrowPc,
    /// Addresses from which a zero was loaded.
    ZeroLoadAddr,
}

impl Stream {
    /// Every stream, in report order.
    pub const ALL: [Stream; 10] = [
        Stream::Pc,
        Stream::Block,
        Stream::LoadValue,
        Stream::LoadAddr,
        Stream::StoreAddr,
        Stream::L1dMissValue,
        Stream::L2MissValue,
        Stream::L1dMissPc,
        Stream::NarrowPc,
        Stream::ZeroLoadAddr,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Stream::Pc => "pc",
            Stream::Block => "block",
            Stream::LoadValue => "load-value",
            Stream::LoadAddr => "load-addr",
            Stream::StoreAddr => "store-addr",
            Stream::L1dMissValue => "l1d-miss-value",
            Stream::L2MissValue => "l2-miss-value",
            Stream::L1dMissPc => "l1d-miss-pc",
            Stream::NarrowPc => "narrow-pc",
            Stream::ZeroLoadAddr => "zero-load-addr",
        }
    }

    /// One line on what the stream holds.
    pub fn description(self) -> &'static str {
        match self {
            Stream::Pc => "pc of every retired instruction",
            Stream::Block => "basic-block start addresses, weighted by block length",
            Stream::LoadValue => "values loaded",
            Stream::LoadAddr => "addresses loaded from",
            Stream::StoreAddr => "addresses stored to",
            Stream::L1dMissValue => "values of loads that missed the L1D",
            Stream::L2MissValue => "values of loads that missed the L2",
            Stream::L1dMissPc => "pcs of memory accesses that missed the L1D",
            Stream::NarrowPc => "pcs of instructions whose source operands fit in 16 bits",
            Stream::ZeroLoadAddr => "addresses from which a zero was loaded",
        }
    }

    /// Parses a stream name.
    pub fn parse(name: &str) -> Option<Stream> {
        Stream::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether the stream needs the timing model (cache events).
    pub fn needs_timing(self) -> bool {
        matches!(
            self,
            Stream::L1dMissValue | Stream::L2MissValue | Stream::L1dMissPc
        )
    }

    /// Whether the values are code addresses (reports name their functions).
    pub fn is_code(self) -> bool {
        matches!(
            self,
            Stream::Pc | Stream::Block | Stream::L1dMissPc | Stream::NarrowPc
        )
    }

    /// The value this instruction contributes to the stream, if any (all streams but
    /// [`Stream::Block`], which comes from block boundaries). `t` is the timing of the
    /// instruction; without it the cache streams yield nothing.
    #[inline]
    pub fn value(self, r: &Retire, t: Option<&Stamp>) -> Option<u64> {
        let is_load = r.class == Some(Class::Load) && r.mem_size > 0;
        let missed = |e: Events| t.is_some_and(|t| t.events.contains(e));
        match self {
            Stream::Pc => Some(r.pc),
            Stream::Block => None,
            Stream::LoadValue => is_load.then_some(r.mem_value),
            Stream::LoadAddr => is_load.then_some(r.mem_addr),
            Stream::StoreAddr => {
                (r.class == Some(Class::Store) && r.mem_size > 0).then_some(r.mem_addr)
            }
            Stream::L1dMissValue => (is_load && missed(Events::L1D_MISS)).then_some(r.mem_value),
            Stream::L2MissValue => (is_load && missed(Events::L2D_MISS)).then_some(r.mem_value),
            Stream::L1dMissPc => missed(Events::L1D_MISS).then_some(r.pc),
            Stream::NarrowPc => narrow(r).then_some(r.pc),
            Stream::ZeroLoadAddr => (is_load && r.mem_value == 0).then_some(r.mem_addr),
        }
    }
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether every register source operand of `r` fits in 16 bits as a signed value
/// (instructions without register sources are not counted).
#[inline]
fn narrow(r: &Retire) -> bool {
    let regs = r.regs;
    let fits = |v: u64| (v as i64) >= -(1 << 15) && (v as i64) < (1 << 15);
    match (regs.src[0] != 0, regs.src[1] != 0) {
        (false, false) => false,
        (true, false) => fits(r.src1),
        (false, true) => fits(r.src2),
        (true, true) => fits(r.src1) && fits(r.src2),
    }
}

/// Events buffered per stream before a combined batch update (RAP's stage-0 buffer).
const BATCH: usize = 4096;
/// Tree size is sampled every this many events of a stream (the Figure 6 curve).
const SAMPLE_EVERY: u64 = 1 << 16;

/// One stream's summary.
pub struct StreamProfile {
    /// Which stream.
    pub stream: Stream,
    /// The RAP tree.
    pub tree: RapTree,
    /// Exact counts of the same stream, if asked for.
    pub exact: Option<ExactCounts>,
    /// `(n, live nodes)` every 65,536 events, and just before and after every merge batch.
    pub sizes: Vec<(u64, u64)>,
    pending: Vec<u64>,
    next_sample: u64,
}

impl StreamProfile {
    fn new(stream: Stream, config: &Config, exact: bool) -> StreamProfile {
        StreamProfile {
            stream,
            tree: RapTree::new(*config),
            exact: exact.then(ExactCounts::new),
            sizes: Vec::new(),
            pending: Vec::with_capacity(BATCH),
            next_sample: SAMPLE_EVERY,
        }
    }

    #[inline]
    fn push(&mut self, v: u64) -> Result<(), crate::Error> {
        self.pending.push(v);
        if self.pending.len() == BATCH {
            self.drain()?;
        }
        Ok(())
    }

    fn drain(&mut self) -> Result<(), crate::Error> {
        if let Some(e) = self.exact.as_mut() {
            self.pending.iter().for_each(|&v| e.add(v));
        }
        let merges = self.tree.merge_log().len();
        self.tree.add_batch(&self.pending)?;
        self.pending.clear();
        self.record_size(merges);
        Ok(())
    }

    fn add_weighted(&mut self, v: u64, w: u64) -> Result<(), crate::Error> {
        if let Some(e) = self.exact.as_mut() {
            e.add_weighted(v, w);
        }
        let merges = self.tree.merge_log().len();
        self.tree.add_weighted(v, w)?;
        self.record_size(merges);
        Ok(())
    }

    fn record_size(&mut self, merges_before: usize) {
        for m in &self.tree.merge_log()[merges_before..] {
            self.sizes.push((m.n, m.nodes_before));
            self.sizes.push((m.n, m.nodes_after));
        }
        if self.tree.n() >= self.next_sample {
            self.sizes.push((self.tree.n(), self.tree.node_count()));
            self.next_sample = (self.tree.n() / SAMPLE_EVERY + 1) * SAMPLE_EVERY;
        }
    }

    /// Largest tree size seen (nodes) — the RAP paper's Figure 7 "maximum".
    pub fn max_nodes(&self) -> u64 {
        self.tree.peak_nodes()
    }

    /// Mean tree size over the stream (Figure 7's "average"), weighted by events: the
    /// trapezoid integral of the size over `n` through every recorded point (the samples
    /// taken every 65,536 events and both sides of every merge batch), divided by `n`. A merge
    /// batch happens at one `n`, so its drop takes no width; nothing is filtered out.
    pub fn mean_nodes(&self) -> f64 {
        event_weighted_mean(&self.sizes, self.tree.n(), self.tree.node_count())
    }

    /// Mean of the tree size just before and just after each merge batch, over every batch
    /// (the figure `xtask bench-rap` gives); the current size if no batch ran.
    pub fn mean_nodes_at_merges(&self) -> f64 {
        let log = self.tree.merge_log();
        if log.is_empty() {
            return self.tree.node_count() as f64;
        }
        log.iter()
            .map(|m| (m.nodes_before + m.nodes_after) as f64 / 2.0)
            .sum::<f64>()
            / log.len() as f64
    }
}

/// Event-weighted mean of a piecewise-linear size curve through `points` (`(n, size)`, `n`
/// non-decreasing), starting at `(0, 0)` and ending at `(end, last)`.
fn event_weighted_mean(points: &[(u64, u64)], end: u64, last: u64) -> f64 {
    if end == 0 {
        return last as f64;
    }
    let mut area = 0.0f64;
    let mut prev = (0u64, 0u64);
    for &p in points.iter().chain(std::iter::once(&(end, last))) {
        let w = p.0.saturating_sub(prev.0) as f64;
        area += w * (prev.1 + p.1) as f64 / 2.0;
        prev = p;
    }
    area / end as f64
}

/// Feeds every requested stream of a run into its own RAP tree. Use it directly as the
/// machine's [`Observer`] (no timing: the cache streams stay empty) or inside
/// `outcrop_timing::Timed`.
pub struct RapProfiler {
    /// One profile per requested stream, in the order requested.
    pub profiles: Vec<StreamProfile>,
    /// Index of the block stream in `profiles`, if requested.
    block: Option<usize>,
    /// Retire streams (all but block): (index in `profiles`, stream).
    retire: Vec<(usize, Stream)>,
    error: Option<crate::Error>,
    /// With [`RapProfiler::per_thread`]: each guest thread's own profiles of the same
    /// streams, by thread (creation index), after [`RapProfiler::finish_trees`].
    pub threads: std::collections::BTreeMap<u32, Vec<StreamProfile>>,
    /// The running thread's own profiles (per-thread mode), and its index.
    current: Option<(u32, Vec<StreamProfile>)>,
    /// How to make a thread's profiles (per-thread mode).
    per_thread: Option<(Vec<Stream>, Config, bool)>,
    /// With more than one process or program, after [`RapProfiler::finish_trees`]: each
    /// other (process, program)'s own profiles of the same streams, in the order they first
    /// ran; `profiles` holds the first process's first program's (docs/machine.md,
    /// "Processes").
    pub processes: Vec<(ProcessKey, Vec<StreamProfile>)>,
    /// The other (process, program)s' profiles while the run goes on.
    rows: ProcessRows<Vec<StreamProfile>>,
}

impl RapProfiler {
    /// Profiles for `streams` (duplicates are ignored), each a tree with `config`; `exact`
    /// also counts every stream exactly.
    pub fn new(streams: &[Stream], config: &Config, exact: bool) -> RapProfiler {
        let mut profiles: Vec<StreamProfile> = Vec::new();
        for &s in streams {
            if !profiles.iter().any(|p| p.stream == s) {
                profiles.push(StreamProfile::new(s, config, exact));
            }
        }
        let block = profiles.iter().position(|p| p.stream == Stream::Block);
        let retire = profiles
            .iter()
            .enumerate()
            .filter(|(_, p)| p.stream != Stream::Block)
            .map(|(i, p)| (i, p.stream))
            .collect();
        RapProfiler {
            profiles,
            block,
            retire,
            error: None,
            threads: std::collections::BTreeMap::new(),
            current: None,
            per_thread: None,
            processes: Vec::new(),
            rows: ProcessRows::new(),
        }
    }

    /// The streams, tree configuration and exactness of this profiler's profiles.
    fn template(&self) -> (Vec<Stream>, Config, bool) {
        let streams: Vec<Stream> = self.profiles.iter().map(|p| p.stream).collect();
        let config = *self
            .profiles
            .first()
            .map_or(&Config::default(), |p| p.tree.config());
        let exact = self.profiles.iter().any(|p| p.exact.is_some());
        (streams, config, exact)
    }

    /// The records from here are `p`'s process and program's: its profiles are swapped in
    /// (new ones the first time).
    fn switch_process(&mut self, p: &ProcessSwitch) {
        let (streams, config, exact) = self.template();
        let fresh = || {
            streams
                .iter()
                .map(|&s| StreamProfile::new(s, &config, exact))
                .collect()
        };
        self.rows.switch(p, &mut self.profiles, fresh);
    }

    /// Also builds one tree per guest thread for every stream (each thread's events only),
    /// besides the whole program's.
    pub fn per_thread(mut self) -> RapProfiler {
        let (streams, config, exact) = self.template();
        let fresh = streams
            .iter()
            .map(|&s| StreamProfile::new(s, &config, exact))
            .collect();
        self.current = Some((0, fresh));
        self.per_thread = Some((streams, config, exact));
        self
    }

    /// Adds what is still buffered; reports the first tree error of the run, if any.
    pub fn finish_trees(&mut self) -> Result<(), crate::Error> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        for p in &mut self.profiles {
            p.drain()?;
        }
        if let Some((index, cur)) = self.current.take() {
            self.threads.insert(index, cur);
        }
        for ps in self.threads.values_mut().chain(self.rows.parked_mut()) {
            for p in ps {
                p.drain()?;
            }
        }
        if self.rows.switched() {
            let rows = std::mem::take(&mut self.rows);
            let mut rows = rows.finish(std::mem::take(&mut self.profiles)).into_iter();
            if let Some((_, first)) = rows.next() {
                self.profiles = first;
            }
            self.processes = rows.collect();
        }
        Ok(())
    }

    #[inline]
    fn record(&mut self, r: &Retire, t: Option<&Stamp>) -> Control {
        for k in 0..self.retire.len() {
            let (i, s) = self.retire[k];
            if let Some(v) = s.value(r, t) {
                if self.push(i, v) == Control::Stop {
                    return Control::Stop;
                }
            }
        }
        Control::Continue
    }

    /// `v` for the profile at `i` (and the running thread's, per thread); a tree error stops
    /// the run and is kept for [`RapProfiler::finish_trees`].
    #[inline]
    fn push(&mut self, i: usize, v: u64) -> Control {
        let mut res = self.profiles[i].push(v);
        if let Some((_, cur)) = self.current.as_mut() {
            res = res.and_then(|()| cur[i].push(v));
        }
        match res {
            Ok(()) => Control::Continue,
            Err(e) => {
                self.error = Some(e);
                Control::Stop
            }
        }
    }

    #[inline]
    fn record_block(&mut self, start: u64, insns: u32) -> Control {
        if let Some(i) = self.block {
            let mut res = self.profiles[i].add_weighted(start, insns.into());
            if let Some((_, cur)) = self.current.as_mut() {
                res = res.and_then(|()| cur[i].add_weighted(start, insns.into()));
            }
            if let Err(e) = res {
                self.error = Some(e);
                return Control::Stop;
            }
        }
        Control::Continue
    }

    /// Per-thread mode: the running thread's profiles are put aside and thread `index`'s
    /// taken up (new ones the first time it runs).
    fn switch_thread(&mut self, index: u32) {
        let Some((streams, config, exact)) = &self.per_thread else {
            return;
        };
        let incoming = self.threads.remove(&index).unwrap_or_else(|| {
            streams
                .iter()
                .map(|&s| StreamProfile::new(s, config, *exact))
                .collect()
        });
        if let Some((old, profiles)) = self.current.replace((index, incoming)) {
            self.threads.insert(old, profiles);
        }
    }
}

impl RapProfiler {
    /// Whether every stream can be fed from basic blocks ([`RapProfiler::by_blocks`]): the pc
    /// and block streams, which block-level streams carry in retire order; the others need
    /// each instruction's operands or the timing model.
    pub fn block_fed(&self) -> bool {
        self.retire.iter().all(|&(_, s)| s == Stream::Pc)
    }

    /// This profiler fed from basic blocks and their instruction lengths instead of retire
    /// records, so the machine can run its block engine and compiling tier: the pc stream gets
    /// every instruction of each block in order, the block stream each block, exactly the
    /// values (and per thread, the same split) the retire path gives. Only for profilers whose
    /// streams are all [`RapProfiler::block_fed`]; other streams get nothing.
    pub fn by_blocks(&mut self) -> RapBlocks<'_> {
        RapBlocks {
            rap: self,
            parts: std::collections::BTreeMap::new(),
            thread: 0,
        }
    }

    /// The pc `pc` for every pc stream.
    #[inline]
    fn record_pc(&mut self, pc: u64) -> Control {
        for k in 0..self.retire.len() {
            if self.push(self.retire[k].0, pc) == Control::Stop {
                return Control::Stop;
            }
        }
        Control::Continue
    }

    /// The pcs of `lens.len()` instructions of these lengths from `start`, skipping the
    /// first `skip`.
    fn record_pcs(&mut self, start: u64, lens: &[u8], skip: usize) -> Control {
        let mut pc = start;
        for (i, &l) in lens.iter().enumerate() {
            if i >= skip && self.record_pc(pc) == Control::Stop {
                return Control::Stop;
            }
            pc = pc.wrapping_add(u64::from(l));
        }
        Control::Continue
    }
}

/// A [`RapProfiler`] fed from basic blocks ([`RapProfiler::by_blocks`]).
pub struct RapBlocks<'a> {
    rap: &'a mut RapProfiler,
    /// Per thread, the basic block a switch interrupted: its start and the instructions of it
    /// already given to the pc streams ([`Observer::block_part`]), so that each pc goes to
    /// the thread that ran it, when it ran.
    parts: std::collections::BTreeMap<u32, (u64, usize)>,
    /// The running thread.
    thread: u32,
}

impl Observer for RapBlocks<'_> {
    const BLOCKS: bool = true;
    const BLOCK_LENS: bool = true;
    const MAPPINGS: bool = true;

    #[inline]
    fn block_lens(&mut self, start: u64, lens: &[u8]) -> Control {
        let skip = match self.parts.remove(&self.thread) {
            Some((s, done)) if s == start => done.min(lens.len()),
            _ => 0,
        };
        if !self.rap.retire.is_empty() && self.rap.record_pcs(start, lens, skip) == Control::Stop {
            return Control::Stop;
        }
        self.rap.record_block(start, lens.len() as u32)
    }

    fn block_part(&mut self, start: u64, lens: &[u8]) -> Control {
        let done = match self.parts.get(&self.thread) {
            Some(&(s, n)) if s == start => n.min(lens.len()),
            _ => 0,
        };
        self.parts.insert(self.thread, (start, lens.len()));
        if self.rap.retire.is_empty() {
            return Control::Continue;
        }
        let skip_bytes: u64 = lens[..done].iter().map(|&l| u64::from(l)).sum();
        self.rap
            .record_pcs(start.wrapping_add(skip_bytes), &lens[done..], 0)
    }

    fn thread(&mut self, index: u32) -> Control {
        self.thread = index;
        self.rap.switch_thread(index);
        Control::Continue
    }

    fn process(&mut self, p: &ProcessSwitch) -> Control {
        self.rap.switch_process(p);
        Control::Continue
    }

    fn mapped(&mut self, m: &Mapping<'_>) -> Control {
        self.rap.rows.mapped(m);
        Control::Continue
    }
}

impl Observer for RapProfiler {
    const RETIRE: bool = true;
    const BLOCKS: bool = true;
    const MAPPINGS: bool = true;

    fn process(&mut self, p: &ProcessSwitch) -> Control {
        self.switch_process(p);
        Control::Continue
    }

    fn mapped(&mut self, m: &Mapping<'_>) -> Control {
        self.rows.mapped(m);
        Control::Continue
    }

    #[inline]
    fn retire(&mut self, r: &Retire, t: Option<&Stamp>) -> Control {
        self.record(r, t)
    }

    #[inline]
    fn block(&mut self, start: u64, insns: u32) -> Control {
        self.record_block(start, insns)
    }

    fn thread(&mut self, index: u32) -> Control {
        self.switch_thread(index);
        Control::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outcrop_rv::inst::Op;

    fn load(addr: u64, value: u64) -> Retire {
        Retire {
            pc: 0x1000,
            class: Some(Class::Load),
            unit: Op::Ld.unit(),
            mem_addr: addr,
            mem_size: 8,
            mem_value: value,
            regs: Op::Ld.reg_use(10, 11, 0, 0),
            src1: addr,
            ..Retire::default()
        }
    }

    #[test]
    fn event_weighted_mean_uses_every_point() {
        // 0..100: grows 0 → 10; merge at 100 drops to 4; 100..200: stays 4.
        let pts = [(100, 10), (100, 4), (200, 4)];
        assert_eq!(
            event_weighted_mean(&pts, 200, 4),
            (100.0 * 5.0 + 100.0 * 4.0) / 200.0
        );
        // points not on any sampling grid count just the same
        let pts = [(3, 6), (7, 6)];
        assert_eq!(
            event_weighted_mean(&pts, 7, 6),
            (3.0 * 3.0 + 4.0 * 6.0) / 7.0
        );
        assert_eq!(event_weighted_mean(&[], 0, 5), 5.0);
    }

    #[test]
    fn streams_take_the_right_field() {
        let r = load(0x8000, 0);
        assert_eq!(Stream::Pc.value(&r, None), Some(0x1000));
        assert_eq!(Stream::LoadValue.value(&r, None), Some(0));
        assert_eq!(Stream::LoadAddr.value(&r, None), Some(0x8000));
        assert_eq!(Stream::ZeroLoadAddr.value(&r, None), Some(0x8000));
        assert_eq!(Stream::StoreAddr.value(&r, None), None);
        assert_eq!(Stream::L1dMissValue.value(&r, None), None);
        let miss = Stamp {
            events: Events(Events::L1D_MISS.0 | Events::L2D_MISS.0),
            ..Stamp::default()
        };
        assert_eq!(Stream::L1dMissValue.value(&r, Some(&miss)), Some(0));
        assert_eq!(Stream::L2MissValue.value(&r, Some(&miss)), Some(0));
        assert_eq!(Stream::L1dMissPc.value(&r, Some(&miss)), Some(0x1000));
        assert_eq!(Stream::ZeroLoadAddr.value(&load(0x8000, 5), None), None);
        // the address operand 0x8000 does not fit in 16 signed bits; 0x7fff does
        assert_eq!(Stream::NarrowPc.value(&r, None), None);
        assert_eq!(Stream::NarrowPc.value(&load(0x7fff, 1), None), Some(0x1000));
        let lui = Retire {
            class: Some(Class::Alu),
            regs: Op::Lui.reg_use(5, 0, 0, 0),
            ..Retire::default()
        };
        assert_eq!(Stream::NarrowPc.value(&lui, None), None, "no sources");
    }

    #[test]
    fn names_round_trip() {
        for s in Stream::ALL {
            assert_eq!(Stream::parse(s.name()), Some(s));
        }
        assert_eq!(Stream::parse("pcs"), None);
    }
}
