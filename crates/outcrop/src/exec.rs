//! `outcrop exec`: run a static RISC-V Linux program on the built-in machine, with its stdio
//! passed through and its exit status returned.

use crate::files::{
    max_rss_bytes, read_bounded, read_text_bounded, write_output, MAX_CONFIG_BYTES,
    MAX_PROGRAM_BYTES,
};
use anyhow::{Context, Result};
use clap::Args;
use outcrop_rv::elf::{self, Program};
use outcrop_rv::inst::Class;
use outcrop_rv::kernel::{KernelConfig, Sandbox};
use outcrop_rv::{ClassCounter, Machine, Outcome};
use outcrop_timing::{Config as TimingConfig, Timed};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit status when the instruction limit stops the guest.
pub const EXIT_INSN_LIMIT: u8 = 124;

/// Options of `outcrop exec` (help text on `Command::Exec` in main.rs).
#[derive(Args, Debug)]
pub struct ExecArgs {
    /// Write run statistics as JSON to FILE (instructions, exit_code, wall_seconds, mips, classes).
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,

    /// Run the timing model: a preset (`default`: 4-wide out-of-order, the branch-on-random
    /// paper's machine; `inorder`) or a TOML file that overrides one (docs/timing.md). Prints
    /// cycles, IPC, miss rates and a CPI stack to stderr, and adds them to --stats-json.
    #[arg(long, value_name = "CONFIG", num_args = 0..=1, require_equals = true,
          default_missing_value = "default")]
    timing: Option<String>,

    #[command(flatten)]
    guest: GuestArgs,
}

/// The guest program and its sandbox (shared by `exec` and `run`).
#[derive(Args, Debug)]
pub struct GuestArgs {
    /// Stop the guest after N instructions (exit status 124).
    #[arg(long, value_name = "N")]
    max_insns: Option<u64>,

    /// Let the guest read PATH (a file or directory tree). Repeatable.
    #[arg(long, value_name = "PATH")]
    allow: Vec<PathBuf>,

    /// Let the guest read and write PATH (a file or directory tree). Repeatable.
    #[arg(long = "allow-rw", value_name = "PATH")]
    allow_rw: Vec<PathBuf>,

    /// Fixed clocks, random bytes and pid, and an empty environment: byte-identical runs.
    #[arg(long)]
    pub deterministic: bool,

    /// Most memory the guest may map, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 4096)]
    memory_limit: u64,

    /// The program (a static riscv64 Linux ELF executable) and its arguments.
    #[arg(required = true, last = true, value_name = "PROG [ARGS]")]
    pub command: Vec<std::ffi::OsString>,
}

/// Guest stdout/stderr: written through at once (the guest's libc already buffers), so the
/// interleaving of the two streams is the guest's.
struct PassThrough<W: Write>(W);

impl<W: Write> Write for PassThrough<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.0.write(buf)?;
        self.0.flush()?;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[derive(Serialize)]
struct Stats {
    program: String,
    instructions: u64,
    exit_code: i32,
    outcome: String,
    wall_seconds: f64,
    mips: f64,
    classes: std::collections::BTreeMap<&'static str, u64>,
    syscalls: std::collections::BTreeMap<u64, u64>,
    /// Peak resident memory of the outcrop process (host bytes), when the host reports it.
    host_max_rss_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timing: Option<outcrop_timing::Totals>,
}

/// `--timing` value: a preset name or a TOML file.
pub fn timing_config(spec: &str) -> Result<TimingConfig> {
    if outcrop_timing::config::PRESETS
        .iter()
        .any(|(name, _)| *name == spec)
    {
        return Ok(TimingConfig::preset(spec)?);
    }
    let path = std::path::Path::new(spec);
    if !path.exists() {
        let names: Vec<&str> = outcrop_timing::config::PRESETS
            .iter()
            .map(|(n, _)| *n)
            .collect();
        anyhow::bail!(
            "--timing={spec}: neither a preset ({}) nor an existing file",
            names.join(", ")
        );
    }
    let text = read_text_bounded(path, "timing config", MAX_CONFIG_BYTES)?;
    TimingConfig::from_toml(&text).with_context(|| format!("timing config {}", path.display()))
}

/// The timing summary printed after a run.
pub fn print_timing(t: &outcrop_timing::Totals) {
    let s = &t.cpi_stack;
    let pct = |v: u64| 100.0 * v as f64 / t.cycles.max(1) as f64;
    eprintln!(
        "outcrop: timing ({}): {} instructions, {} cycles, IPC {:.3}",
        t.config, t.instructions, t.cycles, t.ipc
    );
    eprintln!(
        "outcrop:   L1I miss {:.2}%  L1D miss {:.2}% ({} of {})  L2 miss {:.2}%  DTLB misses {}  ITLB misses {}",
        100.0 * t.l1i_miss_rate(),
        100.0 * t.l1d_miss_rate(),
        t.l1d_misses,
        t.l1d_accesses,
        100.0 * t.l2_miss_rate(),
        t.dtlb_misses,
        t.itlb_misses
    );
    eprintln!(
        "outcrop:   branches: {:.2}% of {} conditional mispredicted, {} return and {} indirect mispredicts, {} BTB misses",
        100.0 * t.cond_mispredict_rate(),
        t.cond_branches,
        t.return_mispredicts,
        t.indirect_mispredicts,
        t.btb_misses
    );
    eprintln!(
        "outcrop:   CPI stack: base {:.1}%  branch {:.1}%  icache {:.1}%  dcache {:.1}%  other {:.1}%",
        pct(s.base),
        pct(s.branch),
        pct(s.icache),
        pct(s.dcache),
        pct(s.other)
    );
}

/// A loaded guest: the machine, ready to run, and the program's path and bytes (for symbols).
pub struct Guest {
    pub machine: Machine,
    pub path: PathBuf,
    pub elf: Vec<u8>,
}

/// Loads the guest `args` describe: sandbox, environment (empty with --deterministic), stdio
/// passed through, instruction limit.
pub fn load_guest(args: &GuestArgs) -> Result<Guest> {
    load_guest_with(args, false)
}

/// As [`load_guest`]; with `quiet`, the guest's stdout and stderr are discarded and its stdin
/// is empty (for a baseline run beside a profiled one).
pub fn load_guest_with(args: &GuestArgs, quiet: bool) -> Result<Guest> {
    let prog_path = PathBuf::from(&args.command[0]);
    let bytes = read_bounded(&prog_path, "program", MAX_PROGRAM_BYTES)?;
    let mut sandbox = Sandbox::new();
    for p in &args.allow {
        sandbox
            .allow_read(p)
            .with_context(|| format!("--allow {}: no such path", p.display()))?;
    }
    for p in &args.allow_rw {
        sandbox
            .allow_write(p)
            .with_context(|| format!("--allow-rw {}: no such path", p.display()))?;
    }
    let exe_path = std::fs::canonicalize(&prog_path).unwrap_or_else(|_| prog_path.clone());
    let kernel = KernelConfig {
        sandbox,
        deterministic: args.deterministic,
        exe_path,
        stdin: if quiet {
            Box::new(std::io::empty())
        } else {
            Box::new(std::io::stdin())
        },
        stdout: if quiet {
            Box::new(std::io::sink())
        } else {
            Box::new(PassThrough(std::io::stdout()))
        },
        stderr: if quiet {
            Box::new(std::io::sink())
        } else {
            Box::new(PassThrough(std::io::stderr()))
        },
        on_warning: Box::new(|m| eprintln!("outcrop: warning: {m}")),
        stdio_mode: None,
    };
    let env = if args.deterministic {
        Vec::new()
    } else {
        std::env::vars_os()
            .map(|(k, v)| {
                let mut kv = k;
                kv.push("=");
                kv.push(v);
                kv
            })
            .collect()
    };
    let program = Program {
        elf: &bytes,
        args: args.command.clone(),
        env,
        memory_limit: args.memory_limit.saturating_mul(1 << 20),
    };
    let mut machine =
        elf::load(program, kernel).with_context(|| format!("{}", prog_path.display()))?;
    if let Some(n) = args.max_insns {
        machine.max_insns = n;
    }
    Ok(Guest {
        machine,
        path: prog_path,
        elf: bytes,
    })
}

/// The exit status and the outcome text of a finished run; reports faults and the
/// instruction limit on stderr.
pub fn outcome_status(outcome: Outcome, machine: &Machine) -> (i32, String) {
    match outcome {
        Outcome::Exited(c) => (c, "exited".to_string()),
        Outcome::Fault(f) => {
            eprintln!("outcrop: {f}");
            (f.exit_status(), format!("fault: {f}"))
        }
        Outcome::InstructionLimit => {
            eprintln!(
                "outcrop: instruction limit reached after {} instructions (pc {:#x})",
                machine.instret, machine.pc
            );
            (i32::from(EXIT_INSN_LIMIT), "instruction limit".to_string())
        }
        Outcome::Stopped => (0, "stopped".to_string()),
    }
}

pub fn run(args: ExecArgs) -> Result<ExitCode> {
    let timing = args.timing.as_deref().map(timing_config).transpose()?;
    let Guest {
        mut machine,
        path: prog_path,
        ..
    } = load_guest(&args.guest)?;
    let start = std::time::Instant::now();
    let mut counter = ClassCounter::default();
    let mut timing_totals = None;
    let outcome = if let Some(cfg) = &timing {
        let mut timed = Timed::new(cfg, ClassCounter::default());
        let outcome = machine.run(&mut timed);
        timed.finish();
        timing_totals = Some(timed.totals());
        counter = timed.inner;
        outcome
    } else if args.stats_json.is_some() {
        machine.run(&mut counter)
    } else {
        machine.run(&mut ())
    };
    let wall = start.elapsed().as_secs_f64();
    let _ = machine.kernel.flush();
    let (code, outcome_text) = outcome_status(outcome, &machine);
    if let Some(t) = &timing_totals {
        print_timing(t);
    }
    if let Some(path) = &args.stats_json {
        let stats = Stats {
            program: prog_path.display().to_string(),
            instructions: machine.instret,
            exit_code: code,
            outcome: outcome_text,
            wall_seconds: wall,
            mips: machine.instret as f64 / wall.max(1e-9) / 1e6,
            classes: Class::ALL
                .iter()
                .map(|c| (c.name(), counter.counts[*c as usize]))
                .collect(),
            syscalls: machine.kernel.syscall_counts.clone(),
            host_max_rss_bytes: max_rss_bytes(),
            timing: timing_totals,
        };
        let json = serde_json::to_string_pretty(&stats)?;
        write_output(path, |f| Ok(f.write_all((json + "\n").as_bytes())?))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::from((code & 0xff) as u8))
}
