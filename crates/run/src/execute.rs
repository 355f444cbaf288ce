//! [`execute`]: one [`RunConfig`] and one [`ProgramImage`] in, one [`RunSummaries`] out — the
//! way up every command and study takes. It loads the machine from the image, resolves the
//! RPA's names against it, attaches what the configuration asks for through the [`Run`]
//! builder, runs once, and hands back every mechanism's typed result (files are the caller's:
//! the whole-program capture writes to a sink it is given).

use crate::config::RunConfig;
use crate::image::ProgramImage;
use crate::program::{load_image, outcome_status, EXIT_INTERRUPTED};
use crate::{Progress, Result, Run, WppSink, WppSpec};
use outcrop_profile::Profile;
use outcrop_rap::observe::{RapProfiler, RapSpec};
use outcrop_rpa::observe::RpaResult;
use outcrop_rv::{Machine, Outcome};
use outcrop_sampling::{BranchRecorder, Samples};
use outcrop_strata::{FileStats, RunInfo};
use outcrop_timing::Totals;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// A warning of the machine.
pub type WarningHook = Box<dyn FnMut(&str) + Send>;

/// A refused host path: the path and whether a write was refused.
pub type DenialHook = outcrop_rv::kernel::DenialHook;

/// What a run reports back while it runs, and the writers it is given.
#[derive(Default)]
pub struct Hooks<'a> {
    /// Called every [`crate::SLICE_INSNS`] instructions.
    pub progress: Option<&'a mut dyn FnMut(Progress)>,
    /// Stops the guest once set; every mechanism keeps what it collected.
    pub interrupt: Option<&'a AtomicBool>,
    /// Warnings of the machine (an unknown system call).
    pub on_warning: Option<WarningHook>,
    /// The first refusal of each host path by the sandbox.
    pub on_denial: Option<DenialHook>,
    /// Where the whole-program capture writes its `.wpp` (needed with `config.wpp`).
    pub wpp_sink: Option<WppSink<'a>>,
}

/// The machine's own counts at the end of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineCounts {
    /// The pc the guest stopped at.
    pub pc: u64,
    /// Signals delivered to the guest's handlers.
    pub signals_delivered: u64,
    /// Code-cache flushes (`fence.i`, stores into code).
    pub code_flushes: u64,
    /// System calls by number.
    pub syscalls: BTreeMap<u64, u64>,
    /// Every thread the guest ran, in creation order, with the instructions it retired
    /// (they sum to the run's) and the times it was switched in.
    pub threads: Vec<outcrop_rv::kernel::ThreadStat>,
    /// Every process the guest had, in creation order (one for a program that never
    /// forked).
    pub processes: Vec<outcrop_rv::kernel::ProcessStat>,
    /// Context switches between the guest's threads.
    pub context_switches: u64,
    /// The schedule's seed (`None`: plain round robin), to replay the interleaving with
    /// `--schedule-seed`.
    pub schedule_seed: Option<u64>,
    /// Each thread and what it waited on, when the run ended in a deadlock.
    pub deadlock: Option<String>,
    /// The faulting thread's call stack, innermost first, when the run ended in a fault.
    pub backtrace: Vec<crate::faults::StackFrame>,
    /// What the compiling tier did (`None`: it never compiled anything).
    pub jit: Option<JitCounts>,
}

/// What the compiling tier did in a run (docs/machine.md, "The compiling tier").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JitCounts {
    /// Units compiled and installed.
    pub units: u64,
    /// Guest blocks in them.
    pub blocks: u64,
    /// Host code bytes produced.
    pub code_bytes: u64,
    /// Time spent compiling (on the compiling thread, or inline), in nanoseconds.
    pub compile_nanos: u64,
    /// Times compiled code was dropped (code changed, or the decoded-code budget was full).
    pub flushes: u64,
    /// Calls into compiled code.
    pub entries: u64,
    /// How they ended: a pc not compiled, the instruction budget, an instruction for the
    /// engine, a code change.
    pub exits: [u64; 5],
    /// Of the units, the baseline tier's and Cranelift's.
    pub tiers: [TierCounts; 2],
    /// Chain sites patched to their targets' code.
    pub patched: u64,
}

/// What one tier of the compiling tier compiled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TierCounts {
    /// Units.
    pub units: u64,
    /// Guest instructions in them.
    pub insns: u64,
    /// Host code bytes.
    pub code_bytes: u64,
    /// Time compiling, in nanoseconds.
    pub compile_nanos: u64,
}

/// The whole-program capture's result (its file went to the sink).
#[derive(Clone, Debug)]
pub struct WppResult {
    /// The file's `STAT` section.
    pub stats: FileStats,
    /// Bytes written.
    pub bytes: u64,
}

/// Everything one run produced, typed, mechanism by mechanism.
pub struct RunSummaries {
    /// The program's path as given.
    pub program: String,
    /// The guest's arguments after its program name.
    pub args: Vec<String>,
    /// Whether the run was deterministic (fixed clocks and seeds, lossless queues).
    pub deterministic: bool,
    /// How the guest ended ([`Outcome::Stopped`] when interrupted); `None` when no program
    /// ran: the summaries come from samples taken elsewhere ([`RunSummaries::sampled`]).
    pub outcome: Option<Outcome>,
    /// Whether the interrupt flag stopped it.
    pub interrupted: bool,
    /// Instructions retired.
    pub instructions: u64,
    /// Wall time of the run (machine and mechanisms, not loading).
    pub wall: Duration,
    /// Retired instructions per class, indexed like `Class::ALL`.
    pub classes: Option<[u64; 8]>,
    /// Timing-model totals.
    pub timing: Option<Totals>,
    /// The machine's counts.
    pub machine: MachineCounts,
    /// The host's peak resident set, when the caller measured it.
    pub host_max_rss_bytes: Option<u64>,
    /// The exact profile (of the first process's first program when the guest ran more).
    pub profile: Option<Profile>,
    /// With more than one process or program: each (process, program)'s exact profile, the
    /// first process's first program first (docs/machine.md, "Processes").
    pub processes: Vec<outcrop_profile::ProcessProfile>,
    /// The basic-block vectors and the phases found in them.
    pub phases: Option<(outcrop_phases::Bbv, outcrop_phases::Phases)>,
    /// The RAP trees, finished, with the spec that made them.
    pub rap: Option<(RapSpec, RapProfiler)>,
    /// One samples file per branch-record unit (program name and id filled in): the first
    /// process's first program's when the guest ran more.
    pub samples: Vec<Samples>,
    /// With more than one process or program: every other (process, program)'s samples
    /// (docs/machine.md, "Processes").
    pub process_samples: Vec<ProcessSamples>,
    /// The whole-program capture.
    pub wpp: Option<WppResult>,
    /// The RPA's accounting, services and exact references.
    pub rpa: Option<RpaResult>,
    /// The objects the run mapped executable (the program first; more for a dynamically
    /// linked program).
    pub objects: Vec<outcrop_rv::kernel::MappedObject>,
    /// The functions of the program and of every object it mapped (`name@object`), for
    /// labelling code; `None` for a static program (the program's own symbols serve).
    pub symbols: Option<outcrop_rv::symbols::Symbols>,
    /// The shared objects it mapped that carry source lines (DWARF), for the lines report.
    pub debug_objects: Vec<crate::objects::DebugObject>,
    /// Set when the summaries come from samples taken elsewhere (`outcrop import`), not a
    /// run of the machine: what they are, for every report to say.
    pub sampled: Option<String>,
    /// With a range: the instructions every mechanism observed.
    pub window: Option<crate::Window>,
}

impl RunSummaries {
    /// The exit status and outcome text (`exited`, `fault: …`; 130 and `interrupted` when
    /// interrupted; 124 at the instruction limit; 0 and `imported samples …` when no program
    /// ran).
    pub fn status(&self) -> (i32, String) {
        match &self.outcome {
            _ if self.interrupted => (EXIT_INTERRUPTED, "interrupted".to_string()),
            Some(o) => outcome_status(o),
            None => (0, "imported samples (not a run of the machine)".to_string()),
        }
    }

    /// Whether the profiles cover only part of the program's execution.
    pub fn truncated(&self) -> bool {
        self.interrupted || matches!(&self.outcome, Some(o) if !matches!(o, Outcome::Exited(_)))
    }

    /// Instructions per second of wall time, in millions.
    pub fn mips(&self) -> f64 {
        self.instructions as f64 / self.wall.as_secs_f64().max(1e-9) / 1e6
    }

    /// What a person should be told about how the run ended, if anything unusual: a fault,
    /// the instruction limit (with signals delivered), an interrupt.
    pub fn ending(&self) -> Option<String> {
        let m = &self.machine;
        let outcome = self.outcome.as_ref()?;
        match outcome {
            _ if self.interrupted => Some(format!(
                "interrupted after {} instructions; the profiles cover the run so far (truncated)",
                self.instructions
            )),
            Outcome::Fault(f) => {
                let mut s = f.to_string();
                if let Some(top) = m.backtrace.first() {
                    if let Some(func) = &top.function {
                        s += &format!("\n  in {func}");
                        if let Some(line) = &top.line {
                            s += &format!(" at {line}");
                        }
                    }
                }
                if m.backtrace.len() > 1 {
                    s += "\n  backtrace (innermost first):";
                    for (i, frame) in m.backtrace.iter().enumerate() {
                        s += &format!("\n    #{i:<2} {frame}");
                    }
                }
                Some(s)
            }
            Outcome::Signaled { .. } | Outcome::ThreadLimit => Some(format!(
                "{} after {} instructions (pc {:#x})",
                outcome.describe(),
                self.instructions,
                m.pc
            )),
            Outcome::Deadlock => Some(format!(
                "{} after {} instructions:\n{}",
                outcome.describe(),
                self.instructions,
                m.deadlock.as_deref().unwrap_or("").trim_end()
            )),
            Outcome::InstructionLimit if m.signals_delivered > 0 => Some(format!(
                "instruction limit reached after {} instructions and {} signals delivered (pc {:#x})",
                self.instructions, m.signals_delivered, m.pc
            )),
            Outcome::InstructionLimit => Some(format!(
                "instruction limit reached after {} instructions (pc {:#x})",
                self.instructions, m.pc
            )),
            _ => None,
        }
    }
}

/// A run whose guest called `execve` with RPA profile tags says that the tags name only the
/// first program's instructions (docs/rpa.md, "Processes"): every other program's have tag 0.
fn warn_if_tags_left_behind(config: &RunConfig, machine: &mut Machine, tagged: bool) {
    let execs: u32 = machine
        .kernel
        .processes()
        .history
        .iter()
        .map(|p| p.execs)
        .sum();
    if execs > 0 && tagged && config.rpa.is_some() {
        machine.kernel.warn(&format!(
            "the guest ran {execs} program{} with execve; the RPA's profile tags name the first \
             program's instructions, so every other program's have tag 0 (their records are \
             kept per process and program)",
            if execs == 1 { "" } else { "s" },
        ));
    }
}

/// Runs `image` as `config` says, once, with every mechanism it asks for attached.
pub fn execute(config: &RunConfig, image: &ProgramImage, hooks: Hooks<'_>) -> Result<RunSummaries> {
    config.validate()?;
    let Hooks {
        progress,
        interrupt,
        on_warning,
        on_denial,
        wpp_sink,
    } = hooks;
    if config.wpp.is_some() && wpp_sink.is_none() {
        return Err(crate::Error::Config(
            "a whole-program capture needs somewhere to write its file".into(),
        ));
    }
    let resolve = |r: &crate::config::RpaConfig| r.resolve(image, config.program.deterministic);
    let rpa = config.rpa.as_ref().map(resolve).transpose()?;
    let spec = &config.program;
    let warn = on_warning.unwrap_or_else(|| Box::new(|_| {}));
    let mut machine = load_image(spec, image, warn)?;
    machine.engine = config.engine;
    if let Some(d) = on_denial {
        machine.kernel.on_denial(d);
    }
    let args: Vec<String> = spec
        .command
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let program = image.name();
    let mut run = Run::new(&mut machine).timing(config.timing.clone());
    if config.classes {
        run = run.classes();
    }
    if let Some(p) = progress {
        run = run.progress(p);
    }
    if let Some(f) = interrupt {
        run = run.interrupt(f);
    }
    if let Some((a, b)) = config.range {
        run = run.range(a, b);
    }
    run = run.phases(config.phases);
    if config.profile {
        run = run
            .profile(image.symbols().cloned().unwrap_or_default())
            .naming(image.naming().clone())
            .timeline(config.timeline);
    }
    if let Some(r) = &config.rap {
        run = run.rap(r.clone());
    }
    if !config.paths.is_empty() {
        run = run.paths(config.paths.clone());
    }
    let tagged = rpa.as_ref().is_some_and(|r| !r.tags.is_empty());
    if let Some(r) = rpa {
        run = run.rpa(r);
    }
    if let (Some(options), Some(sink)) = (&config.wpp, wpp_sink) {
        let info = RunInfo {
            program: program.clone(),
            args: args.clone(),
            program_id: image.program_id()?.to_string(),
            baseline_seconds: if spec.deterministic {
                0.0
            } else {
                options.baseline_seconds
            },
            ..RunInfo::default()
        };
        run = run.wpp(WppSpec {
            sink,
            options: *options,
            info,
            deterministic: spec.deterministic,
        });
    }
    let mut result = run.execute()?;
    warn_if_tags_left_behind(config, &mut machine, tagged);
    let wpp = match result.wpp.take() {
        Some(mut c) => {
            c.writer
                .flush()
                .map_err(|e| crate::Error::Wpp(outcrop_strata::Error::Io { source: e }))?;
            Some(WppResult {
                stats: c.stats,
                bytes: c.bytes.total(),
            })
        }
        None => None,
    };
    let (samples, process_samples) = match result.paths.take() {
        Some(rec) => samples_by_process(rec, image, &program, &machine)?,
        None => (Vec::new(), Vec::new()),
    };
    let rap = match (result.rap.take(), &config.rap) {
        (Some(p), Some(s)) => Some((s.clone(), p)),
        _ => None,
    };
    let summaries = RunSummaries {
        program,
        args,
        deterministic: spec.deterministic,
        outcome: Some(result.outcome),
        interrupted: result.interrupted,
        instructions: result.instructions,
        wall: result.wall,
        classes: result.classes,
        timing: result.timing.take(),
        machine: MachineCounts::default(),
        host_max_rss_bytes: None,
        profile: result.profile.take(),
        processes: std::mem::take(&mut result.processes),
        phases: result.phases.take(),
        rap,
        samples,
        process_samples,
        wpp,
        rpa: result.rpa.take(),
        objects: machine.kernel.mapped_objects().to_vec(),
        symbols: None,
        debug_objects: Vec::new(),
        sampled: None,
        window: result.window,
    };
    drop(result);
    // (a static program maps only itself: its symbols are not read for this)
    let (symbols, debug_objects) = if machine.kernel.mapped_objects().len() > 1 {
        crate::objects::after_run(
            image.symbols().ok(),
            machine.kernel.mapped_objects(),
            config.profile,
            image.naming(),
        )
    } else {
        (None, Vec::new())
    };
    let summaries = RunSummaries {
        symbols,
        debug_objects,
        ..summaries
    };
    Ok(RunSummaries {
        machine: final_counts(&mut machine, &summaries, image),
        ..summaries
    })
}

/// The samples each branch-record unit of `rec` took, with the program's identity and the
/// objects the run mapped.
fn samples_of(
    rec: BranchRecorder,
    image: &ProgramImage,
    program: &str,
    machine: &Machine,
) -> Result<Vec<Samples>> {
    let id = image.program_id()?;
    let objects: Vec<_> = crate::objects::object_infos(machine.kernel.mapped_objects())
        .into_iter()
        .map(|o| outcrop_sampling::SampledObject {
            path: o.path,
            build_id: o.build_id,
            start: o.start,
            len: o.len,
            offset: o.offset,
        })
        .collect();
    Ok(unit_samples(rec, program, id, &objects))
}

/// One samples file per unit of `rec`, for `program` (`id` its program id).
fn unit_samples(
    rec: BranchRecorder,
    program: &str,
    id: &str,
    objects: &[outcrop_sampling::SampledObject],
) -> Vec<Samples> {
    rec.units
        .into_iter()
        .map(|u| {
            let mut s = u.into_samples(program, rec.instructions, rec.cycles);
            s.meta.program_id = id.to_string();
            s.meta.objects = objects.to_vec();
            s
        })
        .collect()
}

/// The branch-record units' samples: the first process's first program's, and, when the
/// guest ran more, every other (process, program)'s, each for its own program (its id read
/// from the host file it was loaded from; empty when that cannot be read).
fn samples_by_process(
    mut rec: BranchRecorder,
    image: &ProgramImage,
    program: &str,
    machine: &Machine,
) -> Result<(Vec<Samples>, Vec<ProcessSamples>)> {
    let Some(rows) = rec.finish_processes() else {
        return Ok((samples_of(rec, image, program, machine)?, Vec::new()));
    };
    let mut rows = rows.into_iter();
    let first = match rows.next() {
        Some((_, r)) => samples_of(r, image, program, machine)?,
        None => Vec::new(),
    };
    let own = std::fs::canonicalize(image.path()).ok();
    let mut ids: Vec<(std::path::PathBuf, String)> = Vec::new();
    let others = rows
        .map(|(key, r)| {
            let host = key
                .host_path
                .as_ref()
                .and_then(|p| std::fs::canonicalize(p).ok());
            let id = match &host {
                Some(h) if Some(h) == own.as_ref() => image.program_id()?.to_string(),
                Some(h) => match ids.iter().find(|(p, _)| p == h) {
                    Some((_, id)) => id.clone(),
                    None => {
                        let id = crate::files::read_bounded(
                            h,
                            "program",
                            crate::files::MAX_PROGRAM_BYTES,
                        )
                        .ok()
                        .and_then(|b| outcrop_rv::elf::program_id(&b).ok())
                        .unwrap_or_default();
                        ids.push((h.clone(), id.clone()));
                        id
                    }
                },
                None => String::new(),
            };
            let name = if key.program.is_empty() {
                program.to_string()
            } else {
                key.program.clone()
            };
            let samples = unit_samples(r, &name, &id, &[]);
            Ok(ProcessSamples { key, samples })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((first, others))
}

/// The samples of one (process, program) other than the first process's first program.
#[derive(Clone, Debug)]
pub struct ProcessSamples {
    /// Which process and program.
    pub key: outcrop_events::processes::ProcessKey,
    /// One samples file per branch-record unit, for its program.
    pub samples: Vec<Samples>,
}

/// [`machine_counts`], with the faulting thread's call stack when the run ended in a fault.
fn final_counts(
    machine: &mut Machine,
    summaries: &RunSummaries,
    image: &ProgramImage,
) -> MachineCounts {
    let mut counts = machine_counts(machine, summaries, image);
    if matches!(summaries.outcome, Some(Outcome::Fault(_))) {
        let symbols = summaries.symbols.as_ref().or(image.symbols().ok());
        counts.backtrace = crate::faults::backtrace(machine, image, symbols);
    }
    counts
}

/// The machine's own counts at the end of a run (a deadlock's report names functions by
/// the symbols the summaries hold, or else the program's).
fn machine_counts(
    machine: &Machine,
    summaries: &RunSummaries,
    image: &ProgramImage,
) -> MachineCounts {
    MachineCounts {
        pc: machine.pc,
        signals_delivered: machine.signals_delivered(),
        code_flushes: machine.code_flushes,
        syscalls: machine.kernel.syscall_counts.clone(),
        threads: machine.thread_stats(),
        processes: machine.kernel.processes().history.clone(),
        context_switches: machine.context_switches(),
        schedule_seed: machine.schedule_seed(),
        jit: machine.jit_stats_if_used().map(|s| JitCounts {
            units: s.units,
            blocks: s.blocks,
            code_bytes: s.code_bytes,
            compile_nanos: u64::try_from(s.compile_time.as_nanos()).unwrap_or(u64::MAX),
            flushes: s.flushes,
            entries: s.entries,
            exits: s.exits,
            tiers: {
                let nanos =
                    |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                [
                    TierCounts {
                        units: s.baseline_units,
                        insns: s.baseline_insns,
                        code_bytes: s.baseline_bytes,
                        compile_nanos: nanos(s.baseline_time),
                    },
                    TierCounts {
                        units: s.units - s.baseline_units,
                        insns: s.cranelift_insns,
                        code_bytes: s.code_bytes - s.baseline_bytes,
                        compile_nanos: nanos(s.compile_time.saturating_sub(s.baseline_time)),
                    },
                ]
            },
            patched: s.patched,
        }),
        backtrace: Vec::new(),
        deadlock: (summaries.outcome == Some(Outcome::Deadlock)).then(|| {
            let symbols = summaries.symbols.as_ref().or(image.symbols().ok());
            machine.deadlock_report_with(|pc| {
                let f = symbols?.lookup(pc)?;
                Some(f.name.to_string())
            })
        }),
    }
}
