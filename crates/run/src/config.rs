//! [`RunConfig`]: everything one run is asked to do, as plain data. The binary turns its
//! arguments into one (each clap struct has exactly one conversion), a study builds one per
//! job, a library user writes one; [`crate::execute`] takes it with the program's image.
//!
//! Values that name places in the program (an RPA tag on a function, the collector's heap
//! symbols) stay names here and are resolved against the [`ProgramImage`] when the run
//! starts ([`RpaConfig::resolve`]).

use crate::image::ProgramImage;
use crate::{CaptureOptions, Error, ProgramSpec, Result};
use outcrop_rap::observe::RapSpec;
use outcrop_rpa::hw::{AdaptiveConfig, HwConfig};
use outcrop_rpa::observe::{RpaSpec, QUEUES};
use outcrop_rpa::prefetch::PrefetchConfig;
use outcrop_rpa::services::{HeapLayout, Kind};
use outcrop_rpa::Assembled;
use outcrop_sampling::{LbrConfig, PeriodUnit};
use outcrop_timing::Config as TimingConfig;

/// One run: the program and its sandbox, the engine, the timing model, and which mechanisms
/// to attach.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The program, its arguments, grants, limits and stdio.
    pub program: ProgramSpec,
    /// The interpreter when no observer needs retire records (`outcrop exec --engine`).
    pub engine: outcrop_rv::Engine,
    /// The timing model (`None`: untimed).
    pub timing: Option<TimingConfig>,
    /// Count retired instructions per class (always on with timing).
    pub classes: bool,
    /// The exact profile by function, line and call chain.
    pub profile: bool,
    /// The profile's timeline interval: a mark every N retired instructions (cycles under
    /// timing); 0: none.
    pub timeline: u64,
    /// The program's phases: basic-block vectors every N retired instructions, clustered
    /// (`outcrop run --phases`; [`crate::Run::phases`]); 0: none.
    pub phases: u64,
    /// Observe only retired instructions `[start, end)` of the run (`outcrop run --range`;
    /// [`crate::Run::range`]).
    pub range: Option<(u64, u64)>,
    /// RAP trees over event streams, and the report's hot-range threshold.
    pub rap: Option<RapSpec>,
    /// Branch-record units, one per configuration (none: no unit). Periods count cycles
    /// under timing, instructions otherwise ([`RunConfig::validate`] checks).
    pub paths: Vec<LbrConfig>,
    /// The whole-program capture's builder, codec and threading (the file it writes is a
    /// writer given to [`crate::execute`]).
    pub wpp: Option<CaptureOptions>,
    /// The Relational Profiling Architecture's queries and services.
    pub rpa: Option<RpaConfig>,
}

impl RunConfig {
    /// A run of `program` with nothing attached: the default engine (the compiling tier), no
    /// timing.
    pub fn new(program: ProgramSpec) -> RunConfig {
        RunConfig {
            program,
            engine: outcrop_rv::Engine::default(),
            timing: None,
            classes: false,
            profile: false,
            timeline: crate::DEFAULT_TIMELINE,
            phases: 0,
            range: None,
            rap: None,
            paths: Vec::new(),
            wpp: None,
            rpa: None,
        }
    }

    /// The branch-record unit `--paths ENTRIES[:PERIOD]` describes for this run: its period
    /// counts cycles when the run is timed.
    pub fn lbr(&self, entries: usize, period: Option<u64>) -> LbrConfig {
        LbrConfig {
            entries,
            period: period.unwrap_or(LbrConfig::default().period),
            unit: if self.timing.is_some() {
                PeriodUnit::Cycles
            } else {
                PeriodUnit::Instructions
            },
            ..LbrConfig::default()
        }
    }

    /// Checks the values a run would otherwise refuse halfway (the combination of mechanisms
    /// is checked again by the [`crate::Run`] builder).
    pub fn validate(&self) -> Result<()> {
        if self.program.command.is_empty() {
            return Err(Error::Config("no program given".into()));
        }
        if let Some(r) = &self.rap {
            if !(r.hot > 0.0 && r.hot <= 1.0) {
                return Err(Error::Config(format!("--hot {}: must be in (0, 1]", r.hot)));
            }
        }
        for c in &self.paths {
            c.validate()
                .map_err(|e| Error::Config(format!("--paths: {e}")))?;
        }
        Ok(())
    }
}

/// Where a command-line tag goes (`--tag WHERE=T`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TagPlace {
    /// Every instruction of the function of this name.
    Function(String),
    /// The addresses `[lo, hi)`.
    Range(u64, u64),
    /// The instruction at this address.
    Address(u64),
}

/// The guest heap a collector on the gc service scans (`--gc-heap`), by symbol names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GcHeap {
    /// The arena's data symbol.
    pub arena: String,
    /// The root array's data symbol.
    pub roots: String,
    /// Bytes per object (a multiple of 8, at least 16).
    pub object_size: u32,
    /// Barrier stores between collections.
    pub period: u64,
}

/// The RPA's part of a run: the assembled queries and how their services, tags and hardware
/// model are set up (docs/rpa.md).
#[derive(Clone, Debug)]
pub struct RpaConfig {
    /// The assembled query file.
    pub program: Assembled,
    /// The service reading a queue (`Some(q)`) or every queue (`None`); later entries win.
    pub services: Vec<(Option<u8>, Kind)>,
    /// Tags given on the command line, after the program's own.
    pub tags: Vec<(TagPlace, u8)>,
    /// The heap of a collector on the gc service.
    pub gc_heap: Option<GcHeap>,
    /// Seed of the query engine's LFSR.
    pub seed: u64,
    /// Messages per queue (§3.4.2).
    pub capacity: usize,
    /// The hardware model (`--rpa-hw`).
    pub hardware: Option<HwConfig>,
    /// Figure 2b's prefetching loop.
    pub prefetch: Option<PrefetchConfig>,
    /// The adaptive rate.
    pub adaptive: Option<AdaptiveConfig>,
    /// Compute each service's exact reference on the same run (on by default: the report
    /// checks every service against it; a study of overhead alone turns it off).
    pub exact: bool,
}

impl RpaConfig {
    /// The queries of `program` with the defaults of `outcrop run --query`.
    pub fn new(program: Assembled) -> RpaConfig {
        let spec = RpaSpec::new(program);
        RpaConfig {
            seed: spec.seed,
            capacity: spec.capacity,
            program: spec.program,
            services: Vec::new(),
            tags: Vec::new(),
            gc_heap: None,
            hardware: None,
            prefetch: None,
            adaptive: None,
            exact: spec.exact,
        }
    }

    /// The run-time configuration for `image`: tags and heap symbols looked up in it.
    /// `lossless` (deterministic runs) makes every query wait for a full queue.
    pub fn resolve(&self, image: &ProgramImage, lossless: bool) -> Result<RpaSpec> {
        let mut spec = RpaSpec::new(self.program.clone());
        spec.seed = self.seed;
        spec.capacity = self.capacity;
        spec.lossless = lossless;
        spec.hardware = self.hardware;
        spec.prefetch = self.prefetch;
        spec.adaptive = self.adaptive;
        spec.exact = self.exact;
        for &(queue, kind) in &self.services {
            match queue {
                Some(q) if usize::from(q) < QUEUES => {
                    spec.services.insert(q, kind);
                }
                Some(q) => {
                    return Err(Error::Config(format!(
                        "--service {q}={}: queue `{q}` must be 0 to {}",
                        kind.name(),
                        QUEUES - 1
                    )))
                }
                None => {
                    for qs in &spec.program.insns {
                        if let outcrop_rpa::isa::Act::Send(q) = qs.act {
                            spec.services.insert(q, kind);
                        }
                    }
                }
            }
        }
        // tags: the program's own, then the command line's
        let own = image.tags().map_err(Error::Config)?.to_vec();
        let mut ranges = Vec::new();
        for (place, tag) in &self.tags {
            let (lo, hi) = match place {
                TagPlace::Range(lo, hi) => (*lo, *hi),
                TagPlace::Address(a) => (*a, a.saturating_add(2)),
                TagPlace::Function(name) => {
                    let f = image.symbols().ok().and_then(|s| s.named(name));
                    let f = f.ok_or_else(|| {
                        Error::Config(format!(
                            "--tag {name}={tag}: the program has no function `{name}`"
                        ))
                    })?;
                    (f.start, f.end())
                }
            };
            ranges.push((lo, hi, u64::from(*tag)));
        }
        spec.tags = outcrop_rpa::tags::Tags::new(own, ranges)
            .map_err(|e| Error::Config(format!("--tag: {e}")))?;
        if let Some(h) = &self.gc_heap {
            let sym = |name: &str| -> Result<(u32, u32)> {
                let found = image.data_symbol(name).map_err(Error::Config)?;
                let (a, n) = found.ok_or_else(|| {
                    Error::Config(format!("--gc-heap: the program has no symbol `{name}`"))
                })?;
                match a.checked_add(n) {
                    Some(e) if e <= u64::from(u32::MAX) && n > 0 => Ok((a as u32, n as u32)),
                    _ => Err(Error::Config(format!(
                        "--gc-heap: `{name}` ({a:#x}, {n} bytes) must be non-empty and below 4 GiB: records carry 32-bit addresses"
                    ))),
                }
            };
            let (arena, arena_len) = sym(&h.arena)?;
            let (roots, roots_len) = sym(&h.roots)?;
            spec.heap = Some(HeapLayout {
                arena,
                arena_len,
                object_size: h.object_size,
                roots,
                roots_len,
                period: h.period,
            });
        }
        Ok(spec)
    }
}
