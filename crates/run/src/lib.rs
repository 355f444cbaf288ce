//! `outcrop-run`: where a source, the timing model and the mechanisms meet.
//!
//! * [`program`]: the one loader every command, test and tool uses ([`load`]).
//! * [`Run`]: a builder for one run of a guest — timing on or off, any set of profilers (a
//!   class counter, RAP trees over event streams, a whole-program capture, branch-record
//!   units) — that runs the machine once and hands back every mechanism's result
//!   ([`RunResult`]). Progress reports and an interrupt flag are checked between slices of
//!   instructions, so they cost nothing per instruction.
//! * [`pipeline`]: bounded SPSC rings carrying batches from the machine thread to service
//!   threads, all inside one thread scope ([`capture`] is the first user).
//!
//! Each mechanism's observer lives in its own crate (`outcrop_rap::observe`,
//! `outcrop_rpa::observe`, `outcrop_sampling::BranchRecorder`, `outcrop_profile::Profiler`);
//! this crate only composes them, and starts the threads the RPA's services and the
//! whole-program capture run on.
//!
//! # Design constraints
//! The only crate that composes: it depends on the sources, the mechanisms and the summaries,
//! and nothing but the binary (and tools) depends on it. It owns threads; it reads only the
//! files it is told to (the program, bounded by [`files::read_bounded`]); it writes only to
//! the writers it is given; it never touches the terminal (progress and warnings go to
//! callbacks).
//!
//! # Example
//!
//! ```no_run
//! use outcrop_run::{load, ProgramSpec, Run, Stdio};
//! use outcrop_rap::observe::{RapSpec, Stream};
//!
//! # fn main() -> Result<(), outcrop_run::Error> {
//! let mut spec = ProgramSpec::new(vec!["workloads/bin/qsort_ints".into()]);
//! spec.stdio = Stdio::Quiet;
//! spec.deterministic = true;
//! let mut guest = load(&spec, Box::new(|_| {}))?;
//! let rap = RapSpec::new(&[Stream::Block], outcrop_rap::Config::default(), false);
//! let result = Run::new(&mut guest.machine)
//!     .rap(rap)
//!     .paths(vec![outcrop_sampling::LbrConfig { period: 10_000, ..Default::default() }])
//!     .execute()?;
//! if let Some(rap) = &result.rap {
//!     println!("{} instructions, {} hot ranges", result.instructions,
//!              rap.profiles[0].tree.hot_ranges(0.1)?.len());
//! }
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod capture;
pub mod config;
pub mod debuginfo;
pub mod diff;
mod error;
mod execute;
pub mod faults;
pub mod files;
pub mod image;
pub mod import;
pub mod import_stacks;
pub mod objects;
pub mod paths;
pub mod phases;
pub mod pipeline;
pub mod program;
pub mod wpp;

pub use capture::{CaptureOptions, Captured};

/// The mechanisms a run is configured with and reports from, re-exported so that a front end
/// (the `outcrop` binary) depends on `run`, `report` and its own terminal crate only: a
/// `RunConfig`'s fields are these crates' types (`rap::observe::RapSpec`,
/// `timing::Config`, `sampling::BrrConfig`, …), and the file commands read their formats.
pub mod mechanisms {
    pub use outcrop_diff as diff;
    pub use outcrop_events as events;
    pub use outcrop_instrument as instrument;
    pub use outcrop_paths as paths;
    pub use outcrop_phases as phases;
    pub use outcrop_profile as profile;
    pub use outcrop_rap as rap;
    pub use outcrop_rpa as rpa;
    pub use outcrop_rv as rv;
    pub use outcrop_sampling as sampling;
    pub use outcrop_strata as strata;
    pub use outcrop_timing as timing;
}

/// docs/library.md's examples, compiled as doctests so that they move with the code.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
mod library_examples {}
pub use config::{GcHeap, RpaConfig, RunConfig, TagPlace};
pub use error::{Error, Result};
pub use execute::{
    execute, DenialHook, Hooks, JitCounts, MachineCounts, ProcessSamples, RunSummaries, TierCounts,
    WarningHook, WppResult,
};
pub use image::{ParseCounts, ProgramImage};
pub use outcrop_rv::kernel::Denial;
pub use program::{load, load_image, outcome_status, Guest, ProgramSpec, Stdio};

use outcrop_events::record::{ClassCounter, Observer};
use outcrop_phases::BbvCollector;
use outcrop_profile::{Profile, Profiler};

/// The timeline's default interval: a mark every 100,000 retired instructions (cycles under
/// timing).
pub const DEFAULT_TIMELINE: u64 = 100_000;
use outcrop_rap::observe::{RapProfiler, RapSpec};
use outcrop_rpa::observe as rpa;
use outcrop_rv::symbols::Symbols;
use outcrop_rv::{Machine, Outcome};
use outcrop_sampling::{BranchFeed, BranchRecorder, LbrConfig, LbrUnit, PeriodUnit};
use outcrop_strata::RunInfo;
use outcrop_timing::{Config as TimingConfig, Timed, Totals};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Where a whole-program capture writes.
pub type WppSink<'a> = Box<dyn Write + Send + 'a>;

/// A whole-program capture to make during the run.
pub struct WppSpec<'a> {
    /// Where the `.wpp` file goes.
    pub sink: WppSink<'a>,
    /// Builder, codec and threading.
    pub options: CaptureOptions,
    /// What the file says about the run (program, arguments, program id, baseline).
    pub info: RunInfo,
    /// Write 0 seconds into the file, so that it is byte-identical across runs.
    pub deterministic: bool,
}

/// Progress of a run, reported between slices of instructions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Instructions retired so far.
    pub instructions: u64,
    /// Time since the run started.
    pub elapsed: Duration,
}

/// Instructions between progress reports and interrupt checks (about 0.05–0.5 s).
pub const SLICE_INSNS: u64 = 1 << 23;

/// One run of a guest with any set of mechanisms attached.
pub struct Run<'a, 's> {
    machine: &'a mut Machine,
    timing: Option<TimingConfig>,
    classes: bool,
    rap: Option<RapSpec>,
    wpp: Option<WppSpec<'s>>,
    paths: Vec<LbrConfig>,
    profile: Option<Symbols>,
    naming: objects::Naming,
    timeline: u64,
    phases: Option<u64>,
    range: Option<(u64, u64)>,
    rpa: Option<rpa::RpaSpec>,
    progress: Option<&'a mut dyn FnMut(Progress)>,
    interrupt: Option<&'a AtomicBool>,
}

/// The part of a run the mechanisms observed ([`Run::range`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Window {
    /// The range asked for: retired instructions `[start, end)`.
    pub requested: (u64, u64),
    /// The first instruction observed (the program's instruction count there).
    pub start: u64,
    /// Where observing stopped: `requested.1`, or earlier when the program ended (equal to
    /// `start` when it ended before the window).
    pub end: u64,
}

/// What a run produced, mechanism by mechanism.
pub struct RunResult<'a> {
    /// How the guest ended ([`Outcome::Stopped`] when interrupted).
    pub outcome: Outcome,
    /// Whether the interrupt flag stopped it (every profile then covers the instructions run
    /// so far, like a run stopped by an instruction limit).
    pub interrupted: bool,
    /// Instructions retired.
    pub instructions: u64,
    /// Wall time of the run (machine and mechanisms, not loading).
    pub wall: Duration,
    /// Retired instructions per class (with [`Run::classes`] or timing), indexed like
    /// `Class::ALL`.
    pub classes: Option<[u64; 8]>,
    /// Timing-model totals.
    pub timing: Option<Totals>,
    /// The RAP trees, finished.
    pub rap: Option<RapProfiler>,
    /// The whole-program capture, written and flushed.
    pub wpp: Option<Captured<WppSink<'a>>>,
    /// The branch-record units, with the run's instruction and cycle counts.
    pub paths: Option<BranchRecorder>,
    /// The exact profile by function, instruction and call chain.
    pub profile: Option<Profile>,
    /// With more than one process or program: each (process, program)'s exact profile, the
    /// first process's first program first (`profile` is its).
    pub processes: Vec<outcrop_profile::ProcessProfile>,
    /// The basic-block vectors and the phases found in them ([`Run::phases`]).
    pub phases: Option<(outcrop_phases::Bbv, outcrop_phases::Phases)>,
    /// With [`Run::range`]: the instructions every mechanism observed.
    pub window: Option<Window>,
    /// The RPA: accounting, services, exact references.
    pub rpa: Option<rpa::RpaResult>,
}

impl RunResult<'_> {
    /// The exit status and outcome text of the run (130 when interrupted).
    pub fn status(&self) -> (i32, String) {
        if self.interrupted {
            (program::EXIT_INTERRUPTED, "interrupted".to_string())
        } else {
            outcome_status(&self.outcome)
        }
    }

    /// Whether the profiles cover only part of the program's execution.
    pub fn truncated(&self) -> bool {
        self.interrupted || !matches!(self.outcome, Outcome::Exited(_))
    }
}

impl<'a, 's> Run<'a, 's> {
    /// A run of `machine` (loaded, at its entry point) with nothing attached yet.
    pub fn new(machine: &'a mut Machine) -> Run<'a, 's> {
        Run {
            machine,
            timing: None,
            classes: false,
            rap: None,
            wpp: None,
            paths: Vec::new(),
            profile: None,
            naming: objects::Naming::default(),
            timeline: DEFAULT_TIMELINE,
            phases: None,
            range: None,
            rpa: None,
            progress: None,
            interrupt: None,
        }
    }

    /// Runs the timing model (`None`: no timing).
    pub fn timing(mut self, config: Option<TimingConfig>) -> Self {
        self.timing = config;
        self
    }

    /// Counts retired instructions per class.
    pub fn classes(mut self) -> Self {
        self.classes = true;
        self
    }

    /// RAP trees over event streams.
    pub fn rap(mut self, spec: RapSpec) -> Self {
        self.rap = Some(spec);
        self
    }

    /// A whole-program capture.
    pub fn wpp(mut self, spec: WppSpec<'s>) -> Self {
        self.wpp = Some(spec);
        self
    }

    /// Branch-record units, one per configuration (none: no unit).
    pub fn paths(mut self, units: Vec<LbrConfig>) -> Self {
        self.paths = units;
        self
    }

    /// The exact profile ([`outcrop_profile::Profiler`]): instructions (and, under timing,
    /// cycles and events) by function, instruction and call chain, functions named by
    /// `symbols`.
    pub fn profile(mut self, symbols: Symbols) -> Self {
        self.profile = Some(symbols);
        self
    }

    /// How the exact profile names the functions of shared objects mapped during the run
    /// (default: demangled, no debug directories searched; the program's are named by the
    /// `Symbols` given to [`Run::profile`]).
    pub fn naming(mut self, naming: objects::Naming) -> Self {
        self.naming = naming;
        self
    }

    /// Attaches every mechanism only to retired instructions `[start, end)` of the run: the
    /// guest runs to `start` with nothing attached (on the fastest engine), then with every
    /// mechanism (the timing model starting cold) to `end`, then to its end with nothing
    /// attached again. [`RunResult::window`] says what was observed.
    pub fn range(mut self, start: u64, end: u64) -> Self {
        self.range = Some((start, end.max(start)));
        self
    }

    /// The program's phases: basic-block vectors every `interval` retired instructions of
    /// the observed run, clustered as `outcrop phases` does ([`outcrop_phases::cluster`],
    /// default options); [`RunResult::phases`].
    pub fn phases(mut self, interval: u64) -> Self {
        self.phases = (interval > 0).then_some(interval);
        self
    }

    /// The exact profile's timeline ([`outcrop_profile::Timeline`]): a mark every `interval`
    /// retired instructions, or cycles under timing (default [`DEFAULT_TIMELINE`]; 0: none).
    pub fn timeline(mut self, interval: u64) -> Self {
        self.timeline = interval;
        self
    }

    /// The Relational Profiling Architecture: queries on the retire stream, a service
    /// thread per queue ([`rpa`]).
    pub fn rpa(mut self, spec: rpa::RpaSpec) -> Self {
        self.rpa = Some(spec);
        self
    }

    /// Calls `f` every [`SLICE_INSNS`] instructions.
    pub fn progress(mut self, f: &'a mut dyn FnMut(Progress)) -> Self {
        self.progress = Some(f);
        self
    }

    /// Stops the guest (within [`SLICE_INSNS`] instructions) once `flag` is set; the
    /// mechanisms then finish with what they collected.
    pub fn interrupt(mut self, flag: &'a AtomicBool) -> Self {
        self.interrupt = Some(flag);
        self
    }

    /// Checks the combination before anything runs.
    fn validate(&self) -> Result<()> {
        if let Some(rap) = &self.rap {
            if self.timing.is_none() {
                if let Some(s) = rap.streams.iter().find(|s| s.needs_timing()) {
                    return Err(Error::Config(format!(
                        "the RAP stream {s} needs the timing model (--timing)"
                    )));
                }
            }
        }
        if self.timing.is_none() {
            if let Some(c) = self.paths.iter().find(|c| c.unit == PeriodUnit::Cycles) {
                return Err(Error::Config(format!(
                    "a branch-record period of {} cycles needs the timing model (--timing)",
                    c.period
                )));
            }
        }
        if let Some(t) = &self.timing {
            t.validate()?;
        }
        if let Some(w) = &self.wpp {
            w.options.config.validate()?;
        }
        if let Some(r) = &self.rpa {
            r.plan(self.timing.is_some())?;
        }
        Ok(())
    }

    /// Runs the guest to its end (or its limit, or the interrupt) with every mechanism
    /// attached, and finishes each.
    pub fn execute(self) -> Result<RunResult<'s>> {
        self.validate()?;
        let Run {
            machine,
            timing,
            classes,
            rap,
            wpp,
            paths,
            profile,
            naming,
            timeline,
            phases,
            range,
            rpa,
            progress,
            interrupt,
        } = self;
        let mut bbv = phases.map(BbvCollector::new);
        let mut profiler = profile.map(|s| {
            Profiler::new(s)
                .with_objects(objects::profile_resolver(naming))
                .with_timeline(timeline)
        });
        let mut rap = rap.map(RapSpec::profiler);
        let mut recorder = branch_recorder(paths)?;
        let mut counter = (classes || timing.is_some()).then(ClassCounter::default);
        let (rpa_obs, rpa_ends) = match &rpa {
            Some(spec) => {
                rpa::RpaObserver::new(spec, timing.as_ref()).map(|(o, e)| (Some(o), e))?
            }
            None => (None, Vec::new()),
        };
        let mut driver = Driver::new(machine, timing, progress, interrupt);
        let limit = driver.machine.max_insns;
        let ended_before = driver.enter_window(range, limit);
        let window_start = driver.machine.instret;
        let (outcome, wpp, rpa_out) = std::thread::scope(|scope| -> Result<_> {
            // owned here: if the machine panics, unwinding drops the queues' producers, so
            // the service threads stop and the scope can join them
            let mut rpa_obs = rpa_obs;
            let services = start_rpa_services(scope, rpa_ends)?;
            let mut stage = wpp
                .map(|w| capture::start(scope, w.sink, w.options, w.info, w.deterministic))
                .transpose()?;
            let front = stage.as_mut().map(|s| &mut s.front);
            // branch-record units that count instructions and record taken branches, untimed,
            // without RAP or capture
            let feedable = rap.is_none()
                && front.is_none()
                && driver.timing.is_none()
                && recorder.as_ref().is_some_and(|r| !r.needs_retire());
            let outcome = match rpa_obs.as_mut() {
                // the program ended before the window: nothing to observe
                _ if ended_before.is_some() => ended_before.unwrap_or(Outcome::Stopped),
                // the phases' basic-block vectors ride as an option beside the rest, in one
                // loop per engine rather than doubling every combination's
                None if bbv.is_some() => {
                    if driver.timing.is_none() && rap.is_none() && recorder.is_none() {
                        let by_blocks = profiler.as_mut().map(Profiler::by_blocks);
                        driver.drive_untimed((counter.as_mut(), front, by_blocks, bbv.as_mut()))
                    } else {
                        let rest = (rap.as_mut(), front, recorder.as_mut());
                        driver.drive((counter.as_mut(), rest, profiler.as_mut(), bbv.as_mut()))
                    }
                }
                // branch-record units, untimed, taken branches, instruction periods: fed from
                // the class and taken-branch streams and from the ring compiled code writes,
                // so the machine runs its block engine and compiling tier (no retire records);
                // the exact profile and the class counter ride along from counts
                None if feedable => {
                    let by_blocks = profiler.as_mut().map(Profiler::by_blocks);
                    let feed = recorder.as_mut().map(BranchFeed::new);
                    dispatch!(driver.drive_untimed; [counter.as_mut(), by_blocks, feed])
                }
                // untimed, no RAP, no branch-record unit: the exact profile is fed from basic
                // blocks and taken branches (`Profiler::by_blocks`), so the machine runs its
                // block engine and compiling tier (no retire records)
                None if driver.timing.is_none() && rap.is_none() && recorder.is_none() => {
                    let by_blocks = profiler.as_mut().map(Profiler::by_blocks);
                    dispatch!(driver.drive_untimed; [counter.as_mut(), front, by_blocks])
                }
                // RAP's pc and block streams, untimed, no branch-record unit: fed from basic
                // blocks in retire order (`RapProfiler::by_blocks`), so the machine runs its
                // block engine and compiling tier too (the others ride as options)
                None if driver.timing.is_none()
                    && recorder.is_none()
                    && rap.as_ref().is_some_and(RapProfiler::block_fed) =>
                {
                    let by_blocks = profiler.as_mut().map(Profiler::by_blocks);
                    let rap_blocks = rap.as_mut().map(RapProfiler::by_blocks);
                    driver.drive_untimed((counter.as_mut(), front, by_blocks, rap_blocks))
                }
                None => {
                    dispatch!(driver.drive; [counter.as_mut(), rap.as_mut(), front, recorder.as_mut(), profiler.as_mut()])
                }
                // the RPA's hardware acts on the core: the observer is the timing model's
                // feedback, and the other mechanisms ride as options
                Some(q) if q.hardware() => {
                    let rest = Some((rap.as_mut(), front, recorder.as_mut(), bbv.as_mut()));
                    let obs = (counter.as_mut(), rest, profiler.as_mut());
                    driver.drive_hw(q, obs)
                }
                // with the RPA, the other mechanisms ride along as options (a branch per
                // event) rather than doubling the monomorphized loops again
                Some(q) => {
                    let rest = Some((rap.as_mut(), front, recorder.as_mut(), bbv.as_mut()));
                    dispatch!(driver.drive; [Some(q), counter.as_mut(), rest, profiler.as_mut()])
                }
            };
            let cycles = driver.totals.as_ref().map_or(0, |t| t.cycles);
            let rpa_out = match (rpa_obs.take(), rpa) {
                (Some(o), Some(spec)) => Some(finish_rpa(o, spec, services, cycles)?),
                _ => None,
            };
            let objects = || objects::object_infos(driver.machine.kernel.mapped_objects());
            let captured = stage.map(|s| s.finish(&outcome, objects())).transpose()?;
            Ok((outcome, captured, rpa_out))
        })?;
        let window_end = driver.machine.instret;
        let outcome = driver.leave_window(range, limit, ended_before.is_none(), outcome);
        let wall = driver.start.elapsed();
        let _ = driver.machine.kernel.flush();
        if let Some(r) = rap.as_mut() {
            r.finish_trees()?;
        }
        let (profile, processes) = profiler.map(Profiler::finish_processes).unzip();
        Ok(RunResult {
            outcome,
            interrupted: driver.interrupted,
            instructions: driver.machine.instret,
            wall,
            classes: counter.map(|c| c.counts),
            timing: driver.totals,
            rap,
            wpp,
            paths: recorder,
            profile,
            processes: processes.unwrap_or_default(),
            phases: bbv.map(phases_of),
            rpa: rpa_out,
            window: range.map(|(a, b)| Window {
                requested: (a, b),
                start: window_start,
                end: window_end,
            }),
        })
    }
}

/// The basic-block vectors collected and the phases clustered from them.
fn phases_of(c: BbvCollector) -> (outcrop_phases::Bbv, outcrop_phases::Phases) {
    let bbv = c.finish_bbv();
    let found = outcrop_phases::cluster(&bbv, &outcrop_phases::ClusterOptions::default());
    (bbv, found)
}

/// The branch-record units of `specs` recording together, if any.
fn branch_recorder(specs: Vec<LbrConfig>) -> Result<Option<BranchRecorder>> {
    if specs.is_empty() {
        return Ok(None);
    }
    let units = specs
        .into_iter()
        .map(LbrUnit::new)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(Some(BranchRecorder::new(units)))
}

/// A service thread per RPA queue end, in `scope`.
fn start_rpa_services<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    ends: Vec<rpa::ServiceEnd>,
) -> Result<Services<'scope>> {
    ends.into_iter()
        .map(|end| {
            std::thread::Builder::new()
                .name(format!("rpa-queue-{}", end.plan.queue))
                .spawn_scoped(scope, move || end.run())
        })
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| Error::Config(format!("cannot start an RPA service thread: {e}")))
}

/// The RPA's service threads: each gives back its queue's plan, its count and its service.
type Services<'scope> = Vec<
    std::thread::ScopedJoinHandle<
        'scope,
        (rpa::QueuePlan, Vec<(u64, outcrop_rpa::services::Service)>),
    >,
>;

/// The RPA's results once the run is over: the observer's queries and hardware report at
/// `cycles`, and each service thread's summary (joined).
fn finish_rpa(
    mut o: rpa::RpaObserver,
    spec: rpa::RpaSpec,
    services: Services<'_>,
    cycles: u64,
) -> Result<rpa::RpaResult> {
    let hardware = o.hardware_report(cycles);
    let closed = o.close();
    let mut queues = Vec::new();
    for h in services {
        let joined = h.join();
        queues.push(joined.map_err(|_| Error::Config("an RPA service thread panicked".into()))?);
    }
    Ok(closed.into_result(spec.program, queues, hardware))
}

/// Calls `$self.$method(tuple)` with a tuple of the `Some` values of the listed options, so that
/// each combination of mechanisms gets its own monomorphized machine loop (a mechanism that
/// is absent costs nothing, not even a branch per event).
macro_rules! dispatch {
    ($s:ident.$m:ident; [$($opt:expr),*]) => {
        dispatch!(@go $s.$m; []; [$($opt),*])
    };
    (@go $s:ident.$m:ident; [$($done:ident),*]; []) => {
        $s.$m(($($done,)*))
    };
    (@go $s:ident.$m:ident; [$($done:ident),*]; [$head:expr $(, $rest:expr)*]) => {
        match $head {
            Some(p) => dispatch!(@go $s.$m; [$($done,)* p]; [$($rest),*]),
            None => dispatch!(@go $s.$m; [$($done),*]; [$($rest),*]),
        }
    };
}
use dispatch;

/// Runs the machine in slices, with or without timing.
struct Driver<'a, 'm> {
    machine: &'m mut Machine,
    timing: Option<TimingConfig>,
    progress: Option<&'a mut dyn FnMut(Progress)>,
    interrupt: Option<&'a AtomicBool>,
    start: Instant,
    interrupted: bool,
    totals: Option<Totals>,
}

impl<'a, 'm> Driver<'a, 'm> {
    fn new(
        machine: &'m mut Machine,
        timing: Option<TimingConfig>,
        progress: Option<&'a mut dyn FnMut(Progress)>,
        interrupt: Option<&'a AtomicBool>,
    ) -> Self {
        Driver {
            machine,
            timing,
            progress,
            interrupt,
            start: Instant::now(),
            interrupted: false,
            totals: None,
        }
    }

    /// A window of the run (`range`: its first and last instruction): runs to its start with
    /// nothing attached (the mechanisms attach there) and sets the limit to its end. The
    /// outcome if the program ended before the window.
    fn enter_window(&mut self, range: Option<(u64, u64)>, limit: u64) -> Option<Outcome> {
        let (a, b) = range?;
        let mut ended_before = None;
        if a > 0 {
            self.machine.max_insns = a.min(limit);
            let o = self.sliced(&mut ());
            self.machine.max_insns = limit;
            if o != Outcome::InstructionLimit || self.machine.instret < a || a >= limit {
                ended_before = Some(o);
            }
        }
        self.machine.max_insns = b.min(limit);
        ended_before
    }

    /// After a window the mechanisms observed (`outcome`: how it ended): the rest of the run
    /// with nothing attached, back to the run's own `limit`.
    fn leave_window(
        &mut self,
        range: Option<(u64, u64)>,
        limit: u64,
        entered: bool,
        outcome: Outcome,
    ) -> Outcome {
        let window_end = self.machine.instret;
        self.machine.max_insns = limit;
        match range {
            Some((_, b))
                if entered
                    && outcome == Outcome::InstructionLimit
                    && window_end >= b
                    && b < limit
                    && !self.interrupted =>
            {
                self.sliced(&mut ())
            }
            _ => outcome,
        }
    }

    /// Tells an observer attached now which guest thread runs, when it is not the first
    /// (the observer starts with thread 0: a window of the run may open in any thread).
    fn attach<O: Observer>(&self, obs: &mut O) {
        let running = self.machine.thread_index();
        if running != 0 {
            let _ = obs.thread(running);
        }
    }

    fn drive<O: Observer>(&mut self, mut obs: O) -> Outcome {
        self.attach(&mut obs);
        match self.timing.take() {
            Some(cfg) => {
                let mut timed = Timed::new(&cfg, obs);
                let outcome = self.sliced(&mut timed);
                timed.finish();
                self.totals = Some(timed.totals());
                outcome
            }
            None => {
                let mut obs = obs;
                let outcome = self.sliced(&mut obs);
                if outcome == Outcome::InstructionLimit {
                    self.machine.flush_blocks(&mut obs);
                }
                obs.finish();
                outcome
            }
        }
    }

    /// [`Driver::drive`] for a run without the timing model (observers that the timing
    /// model's wrapper cannot carry, such as [`outcrop_profile::ByBlocks`]).
    fn drive_untimed<O: Observer>(&mut self, mut obs: O) -> Outcome {
        self.attach(&mut obs);
        let outcome = self.sliced(&mut obs);
        if outcome == Outcome::InstructionLimit {
            // a block in progress at the limit (`--range`'s end, `--max-insns`) is counted
            self.machine.flush_blocks(&mut obs);
        }
        obs.finish();
        outcome
    }

    /// [`Driver::drive`] with the RPA's hardware model acting on the core (timing is on:
    /// [`rpa::RpaSpec::plan`] checked it).
    fn drive_hw<O: Observer>(&mut self, rpa: &mut rpa::RpaObserver, mut obs: O) -> Outcome {
        self.attach(&mut obs);
        let Some(cfg) = self.timing.take() else {
            let mut obs = obs;
            let outcome = self.sliced(&mut obs);
            obs.finish();
            return outcome;
        };
        let mut timed = Timed::with_feedback(&cfg, obs, rpa);
        let outcome = self.sliced(&mut timed);
        timed.finish();
        self.totals = Some(timed.totals());
        outcome
    }

    /// Runs to the end in slices of [`SLICE_INSNS`], reporting progress and checking the
    /// interrupt flag between them. Without either, one call.
    fn sliced<O: Observer>(&mut self, obs: &mut O) -> Outcome {
        if self.progress.is_none() && self.interrupt.is_none() {
            return self.machine.run(obs);
        }
        let limit = self.machine.max_insns;
        loop {
            self.machine.max_insns = limit.min(self.machine.instret.saturating_add(SLICE_INSNS));
            let outcome = self.machine.run(obs);
            self.machine.max_insns = limit;
            if outcome != Outcome::InstructionLimit || self.machine.instret >= limit {
                return outcome;
            }
            if let Some(f) = self.progress.as_mut() {
                f(Progress {
                    instructions: self.machine.instret,
                    elapsed: self.start.elapsed(),
                });
            }
            if self.interrupt.is_some_and(|f| f.load(Ordering::Relaxed)) {
                self.interrupted = true;
                return Outcome::Stopped;
            }
        }
    }
}
