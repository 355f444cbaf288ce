//! The files of a report directory (`outcrop run --report DIR`, docs/formats.md "The report
//! directory"): the run's statistics and each mechanism's summary.

use serde::Serialize;

/// The run's statistics (`DIR/run.json`).
#[derive(Clone, Debug, Serialize)]
pub struct RunSummary<'a> {
    /// program.
    pub program: &'a str,
    /// args.
    pub args: Vec<String>,
    /// instructions.
    pub instructions: u64,
    /// exit code.
    pub exit_code: i32,
    /// outcome.
    pub outcome: &'a str,
    /// truncated.
    pub truncated: bool,
    /// Set when the summaries come from imported samples: what they are.
    pub sampled: Option<&'a str>,
    /// With `--range`: the instructions every mechanism observed.
    pub window: Option<&'a outcrop_run::Window>,
    /// wall seconds.
    pub wall_seconds: f64,
    /// mips.
    pub mips: f64,
    /// mechanisms.
    pub mechanisms: Vec<&'static str>,
    /// classes.
    pub classes: Option<Vec<(&'static str, u64)>>,
    /// timing.
    pub timing: Option<&'a outcrop_timing::Totals>,
    /// host max rss bytes.
    pub host_max_rss_bytes: Option<u64>,
    /// What the compiling tier did, as in `exec --stats-json` (absent when it compiled
    /// nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compiling_tier: Option<CompilingTier>,
    /// The faulting thread's call stack, innermost first (absent unless the guest faulted).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub backtrace: Vec<FrameRow>,
}

/// One frame of a faulting guest's call stack.
#[derive(Clone, Debug, Serialize)]
pub struct FrameRow {
    /// The pc (a return address beyond frame 0).
    pub pc: u64,
    /// `function+0xoffset`, when a symbol covers the pc.
    pub function: Option<String>,
    /// `file:line`, when the line tables cover it.
    pub line: Option<String>,
}

impl FrameRow {
    /// The rows of a run's backtrace.
    pub fn of(frames: &[outcrop_run::faults::StackFrame]) -> Vec<FrameRow> {
        frames
            .iter()
            .map(|f| FrameRow {
                pc: f.pc,
                function: f.function.clone(),
                line: f.line.clone(),
            })
            .collect()
    }
}

/// The whole-program capture's summary (`DIR/wpp.json`).
#[derive(Clone, Debug, Serialize)]
pub struct WppSummary<'a> {
    /// file.
    pub file: String,
    /// bytes.
    pub bytes: u64,
    /// stats.
    pub stats: &'a outcrop_strata::FileStats,
}

/// The branch-record samples' summary (`DIR/paths.json`).
#[derive(Clone, Debug, Serialize)]
pub struct PathsSummary<'a> {
    /// file.
    pub file: String,
    /// samples.
    pub samples: u64,
    /// distinct traces.
    pub distinct_traces: usize,
    /// recorded branches.
    pub recorded_branches: u64,
    /// instructions.
    pub instructions: u64,
    /// cycles.
    pub cycles: u64,
    /// modelled overhead.
    pub modelled_overhead: f64,
    /// config.
    pub config: &'a outcrop_sampling::LbrConfig,
    /// The program's absolute path when it was recorded (what `paths report` falls back on
    /// when the samples file's relative path does not resolve).
    pub program: Option<String>,
    /// When the guest ran more than one process or program: every other (process,
    /// program)'s samples, whose files are `samples/pid<PID>.<IMAGE>.samples` in the report
    /// directory (docs/machine.md, "Processes").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<ProcessSamplesRow>,
}

/// One other (process, program)'s branch-record samples.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessSamplesRow {
    /// The process.
    pub pid: u32,
    /// Which of its programs (0: the one it started with).
    pub image: u32,
    /// The program, as the guest named it.
    pub program: String,
    /// Samples taken there.
    pub samples: u64,
    /// Instructions it retired there.
    pub instructions: u64,
    /// Its samples file, in the report directory.
    pub file: String,
}

/// One profiled program, for the suite's index.
#[derive(Clone, Debug, Serialize)]
pub struct SuiteEntry {
    /// program.
    pub program: String,
    /// exit code.
    pub exit_code: i32,
    /// outcome.
    pub outcome: String,
    /// instructions.
    pub instructions: u64,
    /// wall seconds.
    pub wall_seconds: f64,
    /// truncated.
    pub truncated: bool,
    /// report.
    pub report: Option<String>,
}

/// `outcrop exec --stats-json FILE`: one run's statistics.
#[derive(Clone, Debug, Serialize)]
pub struct ExecStats {
    /// The program path as given.
    pub program: String,
    /// Retired instructions.
    pub instructions: u64,
    /// The guest's exit status.
    pub exit_code: i32,
    /// How the run ended.
    pub outcome: String,
    /// Host time of the run.
    pub wall_seconds: f64,
    /// Instructions per microsecond of host time.
    pub mips: f64,
    /// Retired instructions per class.
    pub classes: std::collections::BTreeMap<&'static str, u64>,
    /// System calls by number, with counts.
    pub syscalls: std::collections::BTreeMap<u64, u64>,
    /// The same counts by Linux name (`"unknown"` collects numbers without one).
    pub syscalls_by_name: std::collections::BTreeMap<&'static str, u64>,
    /// Peak resident memory of the outcrop process (host bytes), when the host reports it.
    pub host_max_rss_bytes: Option<u64>,
    /// Signals delivered to the guest's handlers (each a trapping instruction that retired
    /// nothing; counted against `--max-insns` with the instructions).
    pub signals_delivered: u64,
    /// Times the machine dropped all its decoded code: code it held changed (a store to a
    /// page it had run code from, `munmap`, `mprotect`), or the decoded-code budget was full.
    /// High in self-modifying programs.
    pub code_flushes: u64,
    /// Every guest thread in creation order (index 0 is the main thread) with the
    /// instructions it retired — they sum to `instructions` — and its switches.
    pub threads: Vec<ThreadRow>,
    /// Every process when the guest had more than one (`fork`, `execve`): pid, parent, the
    /// program it ran last and how it ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<ProcessRow>,
    /// Context switches between the guest's threads.
    pub context_switches: u64,
    /// The schedule's seed, to replay the interleaving with `--schedule-seed` (`null`: plain
    /// round robin, as under `--deterministic`).
    pub schedule_seed: Option<u64>,
    /// Timing-model totals, with `--timing`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<outcrop_timing::Totals>,
    /// What the compiling tier did (absent when it compiled nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compiling_tier: Option<CompilingTier>,
    /// The faulting thread's call stack, innermost first (absent unless the guest faulted).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub backtrace: Vec<FrameRow>,
}

/// The compiling tier in `--stats-json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompilingTier {
    /// Units compiled and installed.
    pub units: u64,
    /// Guest blocks in them.
    pub guest_blocks: u64,
    /// Host code bytes produced.
    pub code_bytes: u64,
    /// Seconds spent compiling (on the compiling thread, beside the guest).
    pub compile_seconds: f64,
    /// Compile time per unit, in microseconds.
    pub compile_us_per_unit: f64,
    /// Compile time over the run's wall time (compiling overlaps the run on a second core).
    pub compile_share: f64,
    /// Times compiled code was dropped.
    pub flushes: u64,
    /// Compile time per guest instruction compiled, in microseconds.
    pub compile_us_per_guest_instruction: f64,
    /// The baseline tier's units (x86-64 from templates, microseconds each) and Cranelift's.
    pub tiers: Tiers,
    /// Direct exits patched to jump straight to their target's code.
    pub chains_patched: u64,
    /// Calls into compiled code.
    pub entries: u64,
    /// How they ended.
    pub exits: CompiledExits,
}

/// The compiling tier's two compilers in `--stats-json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tiers {
    /// The baseline tier.
    pub baseline: TierRow,
    /// Cranelift.
    pub cranelift: TierRow,
}

/// What one compiler of the compiling tier did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TierRow {
    /// Units compiled.
    pub units: u64,
    /// Guest instructions in them.
    pub guest_instructions: u64,
    /// Host code bytes.
    pub code_bytes: u64,
    /// Seconds compiling.
    pub compile_seconds: f64,
    /// Compile time per guest instruction, in microseconds.
    pub compile_us_per_guest_instruction: f64,
}

/// How calls into compiled code ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CompiledExits {
    /// At a pc with no compiled unit (the block engine goes on there).
    pub not_compiled: u64,
    /// At the instruction budget (a limit, a time slice, a record buffer's worth).
    pub budget: u64,
    /// At an instruction the engine runs (a system call, a CSR, a fault), inside a unit or
    /// at a pc where no unit can start.
    pub engine: u64,
    /// After a store that changed code.
    pub code_changed: u64,
    /// At a pc whose unit is compiled but was not in the jump cache (an indirect jump whose
    /// target's slot another unit held).
    pub jump_cache: u64,
}

/// One guest process in `--stats-json`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessRow {
    /// Its process id.
    pub pid: u32,
    /// Its parent's (1: none in the machine).
    pub ppid: u32,
    /// The program it ran last (host path).
    pub program: String,
    /// Programs it ran with `execve`.
    pub execs: u32,
    /// How it ended: `exited N` or `killed by SIGNAME` (`null`: still running at the end).
    pub exit: Option<String>,
}

/// One guest thread in `--stats-json`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ThreadRow {
    /// Creation order (0 is the main thread).
    pub index: u32,
    /// Its thread id as the guest saw it.
    pub tid: u32,
    /// The process it belonged to.
    #[serde(default)]
    pub pid: u32,
    /// Its name (`prctl(PR_SET_NAME)`, `pthread_setname_np`), empty if none was set.
    pub name: String,
    /// Instructions it retired.
    pub instructions: u64,
    /// Times it was switched in.
    pub switches: u64,
}
