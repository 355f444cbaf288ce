//! `outcrop exec`: run a static RISC-V Linux program on the built-in machine, with its stdio
//! passed through and its exit status returned.

use anyhow::{Context, Result};
use clap::Args;
use outcrop_rv::elf::{self, Program};
use outcrop_rv::inst::Class;
use outcrop_rv::kernel::{KernelConfig, Sandbox};
use outcrop_rv::{ClassCounter, Outcome};
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
    deterministic: bool,

    /// Most memory the guest may map, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 4096)]
    memory_limit: u64,

    /// The program (a static riscv64 Linux ELF executable) and its arguments.
    #[arg(required = true, last = true, value_name = "PROG [ARGS]")]
    command: Vec<std::ffi::OsString>,
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
}

pub fn run(args: ExecArgs) -> Result<ExitCode> {
    let prog_path = PathBuf::from(&args.command[0]);
    let bytes = std::fs::read(&prog_path)
        .with_context(|| format!("cannot read {}", prog_path.display()))?;
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
        stdin: Box::new(std::io::stdin()),
        stdout: Box::new(PassThrough(std::io::stdout())),
        stderr: Box::new(PassThrough(std::io::stderr())),
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
    let start = std::time::Instant::now();
    let mut counter = ClassCounter::default();
    let outcome = if args.stats_json.is_some() {
        machine.run(&mut counter)
    } else {
        machine.run(&mut ())
    };
    let wall = start.elapsed().as_secs_f64();
    let _ = machine.kernel.flush();
    let (code, outcome_text) = match outcome {
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
    };
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
        };
        let json = serde_json::to_string_pretty(&stats)?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::from((code & 0xff) as u8))
}
