//! `outcrop exec`: run a RISC-V Linux program on the built-in machine, with its stdio
//! passed through and its exit status returned.

use crate::files::{max_rss_bytes, write_output};
use anyhow::{Context, Result};
use clap::Args;
use outcrop_cli::console::{console_hooks, print_timing, read_image, report_ending};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

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
    pub allow: Vec<PathBuf>,

    /// Let the guest read and write PATH (a file or directory tree). Repeatable.
    #[arg(long = "allow-rw", value_name = "PATH")]
    pub allow_rw: Vec<PathBuf>,

    /// Fixed clocks, random bytes and pid, and an empty environment: byte-identical runs.
    #[arg(long)]
    pub deterministic: bool,

    /// Most memory the guest may map, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 4096)]
    memory_limit: u64,

    /// The interpreter: `jit` (the default: the block engine with the compiling tier, which
    /// compiles hot code to host code with Cranelift), `blocks` (pre-decoded basic blocks
    /// only) or `step` (the single-step interpreter the others are tested against; slower, for
    /// checking a suspected engine bug: all give the same output, counts, profiles and exit
    /// status). Observers of retire records (--timing, RPA) use `step` whatever this says.
    #[arg(long, value_name = "ENGINE", default_value = "jit", value_parser = ["jit", "blocks", "step"])]
    engine: String,

    /// How branch-on-random (`brr LEVEL`, taken with probability 1/2^(LEVEL+1); see
    /// workloads/outcrop.h) decides: lfsr (the paper's 20-bit LFSR, the default), counter
    /// (every 2^(LEVEL+1)-th brr is taken), always, never, or trap (brr is an illegal
    /// instruction, as on a machine without it: the guest's SIGILL handler can emulate it).
    #[arg(long, value_name = "MODE", default_value = "lfsr",
          value_parser = |s: &str| BrrMode::parse(s).map_err(|e| e.to_string()))]
    brr: BrrMode,

    /// Seed of the brr LFSR (default: fixed with --deterministic, from the clock otherwise).
    #[arg(long, value_name = "N")]
    brr_seed: Option<u64>,

    /// LFSR steps per brr decision, 1 to 64 (default 1, the paper's register; 20 leaps over
    /// the whole register, removing the correlation between consecutive decisions).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub brr_leap: u8,

    /// Round-robin quantum of the guest's threads (of all its processes) on the one hart, in
    /// retired instructions; a thread also gives way where it blocks, yields or exits.
    #[arg(long, value_name = "N", default_value_t = crate::outcrop_rv::kernel::threads::DEFAULT_QUANTUM,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub quantum: u64,

    /// Seed of the thread schedule: quanta vary between ½ and 1½ of --quantum and the next
    /// thread is drawn at random. Without it, --deterministic runs use plain round robin and
    /// other runs a seed from the clock, which --stats-json reports (`schedule_seed`) so the
    /// interleaving can be replayed.
    #[arg(long, value_name = "N")]
    pub schedule_seed: Option<u64>,

    /// Most guest threads alive at once; a guest that starts more ends with an error (a
    /// thread bomb cannot exhaust the host).
    #[arg(long, value_name = "N", default_value_t = crate::outcrop_rv::kernel::threads::DEFAULT_MAX_THREADS as u64,
          value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub max_threads: u64,

    /// Most guest processes at once, counting unreaped ones; past it `fork` fails with EAGAIN
    /// (a fork bomb cannot exhaust the host).
    #[arg(long, value_name = "N", default_value_t = crate::outcrop_rv::kernel::process::DEFAULT_MAX_PROCESSES as u64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub max_processes: u64,

    /// The ISA extensions of this run: an -march string (rv64gc, rv64gcv, rv64imac) or a profile
    /// (rva20u64, rva22u64, rva23u64); default all (RVA23U64's, Zbc, branch-on-random). An
    /// instruction of one left out faults naming it: see what a program needs.
    #[arg(long, value_name = "MARCH",
          value_parser = |s: &str| crate::outcrop_rv::inst::Isa::parse(s))]
    pub isa: Option<crate::outcrop_rv::inst::Isa>,

    /// VLEN, bits per vector register: a power of two from 128 to 1024 (qemu's vlen=N).
    #[arg(long, value_name = "BITS", default_value_t = crate::outcrop_rv::vector::DEFAULT_VLEN)]
    pub vlen: u32,
    /// A dynamically linked program's interpreter and libraries' root, as qemu's -L: read-only.
    #[arg(long, value_name = "DIR")]
    pub sysroot: Option<std::path::PathBuf>,

    /// Set KEY=VALUE in the guest's environment (on top of the host's, or of the empty one
    /// under --deterministic). Repeatable.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = outcrop_cli::input::parse_env)]
    pub env: Vec<std::ffi::OsString>,

    /// Show C++ and Rust function names as the symbol table spells them (`_ZL6workerii`)
    /// instead of demangled (`worker(int, int)`). JSON reports carry both either way
    /// (`name`, and `mangled` where they differ).
    #[arg(long)]
    pub no_demangle: bool,

    /// Look for separate debug files (a stripped program's or library's symbols, lines and
    /// call-frame information) in DIR first: by build-id (DIR/.build-id/ab/cdef….debug) and
    /// by .gnu_debuglink name, as gdb and perf do. Then SYSROOT/usr/lib/debug and
    /// /usr/lib/debug. Repeatable.
    #[arg(long, value_name = "DIR")]
    pub debug_dir: Vec<std::path::PathBuf>,

    /// The program (a riscv64 Linux ELF executable: static, or dynamically linked with
    /// --sysroot) and its arguments (`outcrop run` without one profiles the bundled workloads).
    #[arg(last = true, value_name = "PROG [ARGS]")]
    pub command: Vec<std::ffi::OsString>,
}

pub use outcrop_cli::input::timing_config;

use crate::outcrop_sampling::{BrrConfig, BrrMode};

impl GuestArgs {
    /// A run of the program these options describe on the engine they ask for, with nothing
    /// attached.
    pub fn run_config(&self) -> outcrop_run::RunConfig {
        let mut config = outcrop_run::RunConfig::new(self.spec());
        config.engine = match self.engine.as_str() {
            "step" => crate::outcrop_rv::Engine::Step,
            "blocks" => crate::outcrop_rv::Engine::Blocks,
            _ => crate::outcrop_rv::Engine::Jit,
        };
        config
    }

    /// The program spec these options describe.
    pub fn spec(&self) -> outcrop_run::ProgramSpec {
        outcrop_run::ProgramSpec {
            command: self.command.clone(),
            allow: self.allow.clone(),
            allow_rw: self.allow_rw.clone(),
            deterministic: self.deterministic,
            memory_limit: self.memory_limit.saturating_mul(1 << 20),
            max_insns: self.max_insns,
            stdio: outcrop_run::Stdio::Inherit,
            argv0: None,
            brr: BrrConfig {
                mode: self.brr,
                seed: self.brr_seed.unwrap_or(BrrConfig::default().seed),
                leap: self.brr_leap,
                ..BrrConfig::default()
            },
            brr_seeded: self.brr_seed.is_some(),
            cwd: None,
            env: self.env.clone(),
            quantum: self.quantum,
            schedule_seed: self.schedule_seed,
            max_threads: self.max_threads as usize,
            max_processes: self.max_processes as usize,
            isa: self.isa.unwrap_or_default(),
            vlen: self.vlen,
            sysroot: self.sysroot.clone(),
            names: if self.no_demangle {
                crate::outcrop_rv::symbols::Names::Mangled
            } else {
                crate::outcrop_rv::symbols::Names::Demangled
            },
            debug_dirs: self.debug_dir.clone(),
        }
    }
}

pub fn run(args: ExecArgs) -> Result<ExitCode> {
    if let Some(path) = &args.stats_json {
        crate::files::check_output(path)?;
    }
    let config = args.config()?;
    let image = read_image(&config.program)?;
    let mut s = outcrop_run::execute(&config, &image, console_hooks(config.program.stdio))?;
    s.host_max_rss_bytes = max_rss_bytes();
    report_ending(&s);
    if let Some(t) = &s.timing {
        print_timing(t);
    }
    if let Some(path) = &args.stats_json {
        let json = serde_json::to_string_pretty(&outcrop_report::run_report::exec_stats(&s))?;
        write_output(path, |f| Ok(f.write_all((json + "\n").as_bytes())?))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::from((s.status().0 & 0xff) as u8))
}

impl ExecArgs {
    /// The one conversion of these options: the run they ask for.
    fn config(&self) -> Result<outcrop_run::RunConfig> {
        let mut config = self.guest.run_config();
        config.timing = self.timing.as_deref().map(timing_config).transpose()?;
        config.classes = self.stats_json.is_some();
        Ok(config)
    }
}
