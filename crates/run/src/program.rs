//! Program setup: the one loader every command, test and tool uses to put a guest program on
//! the machine — read it with a bound, grant its sandbox, build its environment and stdio,
//! set its limits.

use crate::error::{Error, Result};
use crate::image::ProgramImage;
use outcrop_rv::elf::{self, Program};
use outcrop_rv::kernel::{KernelConfig, Sandbox};
use outcrop_rv::{Machine, Outcome};
use outcrop_sampling::{BrrConfig, BrrUnit};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the guest's standard streams go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stdio {
    /// The host's stdin, stdout and stderr, written through at once.
    #[default]
    Inherit,
    /// Empty stdin and discarded output (a run made only to be
    /// observed, or a baseline beside a profiled one).
    Quiet,
}

/// Everything needed to load a guest.
#[derive(Clone, Debug)]
pub struct ProgramSpec {
    /// The program (a riscv64 Linux ELF, static or dynamically linked) and its arguments; `command[0]` is its path.
    pub command: Vec<OsString>,
    /// Paths the guest may read (files or directory trees).
    pub allow: Vec<PathBuf>,
    /// Paths the guest may read and write.
    pub allow_rw: Vec<PathBuf>,
    /// Fixed clocks, random bytes and pid, and an empty environment: byte-identical runs.
    pub deterministic: bool,
    /// Most memory the guest may map, in bytes.
    pub memory_limit: u64,
    /// Stop the guest after this many instructions.
    pub max_insns: Option<u64>,
    /// Where its stdio goes.
    pub stdio: Stdio,
    /// What the guest sees as `argv[0]`, when not `command[0]`.
    pub argv0: Option<OsString>,
    /// Branch-on-random's unit (docs/machine.md "Branch-on-random"). Its seed is used as
    /// given when `deterministic` or `brr_seeded`; otherwise the host's clock picks one.
    pub brr: BrrConfig,
    /// Whether `brr.seed` was chosen by the user (`--brr-seed`).
    pub brr_seeded: bool,
    /// The guest's working directory (default: the host process's). Relative guest paths
    /// and relative grants resolve against it; it is not granted by being set.
    pub cwd: Option<PathBuf>,
    /// Round-robin quantum of the guest's threads, in retired instructions (`--quantum`).
    pub quantum: u64,
    /// The schedule's seed (`--schedule-seed`): `None` is plain round robin under
    /// `deterministic`, and a seed from the host's clock otherwise (reported in the run's
    /// statistics, so the interleaving can be replayed).
    pub schedule_seed: Option<u64>,
    /// Most guest threads alive at once (`--max-threads`).
    pub max_threads: usize,
    /// Most guest processes alive or unreaped at once (`--max-processes`).
    pub max_processes: usize,
    /// The ISA extensions the machine implements for this run (`--isa`; default: all).
    pub isa: outcrop_rv::inst::Isa,
    /// Bits per vector register (`--vlen`; default 128, as qemu's).
    pub vlen: u32,
    /// The directory a dynamically linked program's interpreter and libraries are found
    /// under (`--sysroot`, as qemu's `-L`): granted read-only as the guest's `/` for paths
    /// no other grant covers.
    pub sysroot: Option<PathBuf>,
    /// `KEY=VALUE` variables set in the guest's environment on top of the inherited one (or
    /// of the empty one under `deterministic`), replacing a variable of the same name.
    pub env: Vec<OsString>,
    /// How reports name its functions and its libraries' (`--no-demangle`: as the symbol
    /// tables spell them).
    pub names: outcrop_rv::symbols::Names,
    /// Directories searched first for separate debug files (`--debug-dir`; then
    /// `SYSROOT/usr/lib/debug` and `/usr/lib/debug`: [`crate::debuginfo`]).
    pub debug_dirs: Vec<PathBuf>,
}

impl ProgramSpec {
    /// `command` with no grants, 4 GiB of memory, no limit, inherited stdio.
    pub fn new(command: Vec<OsString>) -> ProgramSpec {
        ProgramSpec {
            command,
            allow: Vec::new(),
            allow_rw: Vec::new(),
            deterministic: false,
            memory_limit: 4 << 30,
            max_insns: None,
            stdio: Stdio::Inherit,
            argv0: None,
            brr: BrrConfig::default(),
            brr_seeded: false,
            cwd: None,
            env: Vec::new(),
            quantum: outcrop_rv::kernel::threads::DEFAULT_QUANTUM,
            schedule_seed: None,
            max_threads: outcrop_rv::kernel::threads::DEFAULT_MAX_THREADS,
            max_processes: outcrop_rv::kernel::process::DEFAULT_MAX_PROCESSES,
            isa: outcrop_rv::inst::Isa::ALL,
            vlen: outcrop_rv::vector::DEFAULT_VLEN,
            sysroot: None,
            names: outcrop_rv::symbols::Names::Demangled,
            debug_dirs: Vec::new(),
        }
    }

    /// How reports name its code: [`ProgramSpec::names`], and debug files in
    /// [`ProgramSpec::debug_dirs`], the sysroot's `/usr/lib/debug`, then the host's.
    pub fn naming(&self) -> crate::objects::Naming {
        crate::objects::Naming {
            names: self.names,
            debug: crate::debuginfo::DebugDirs::new(&self.debug_dirs, self.sysroot.as_deref()),
        }
    }

    /// The schedule seed a run of this spec uses: the one given, none under
    /// `deterministic`, else one from the host's clock.
    pub fn effective_schedule_seed(&self) -> Option<u64> {
        match self.schedule_seed {
            Some(s) => Some(s),
            None if self.deterministic => None,
            None => Some(host_seed(64)),
        }
    }

    /// A run made only to be observed: `path` with no arguments, seen by the guest as
    /// `argv0`, deterministic, quiet, 1 GiB of memory (how tests, benchmarks and studies run
    /// the bundled workloads).
    pub fn observed(path: impl Into<PathBuf>, argv0: &str) -> ProgramSpec {
        ProgramSpec {
            deterministic: true,
            memory_limit: 1 << 30,
            stdio: Stdio::Quiet,
            argv0: Some(argv0.into()),
            ..ProgramSpec::new(vec![path.into().into_os_string()])
        }
    }

    /// The program's path.
    pub fn path(&self) -> PathBuf {
        self.command.first().map(PathBuf::from).unwrap_or_default()
    }
}

/// A loaded guest: the machine, ready to run, and the program's path and bytes (for symbols
/// and program ids).
pub struct Guest {
    /// The machine, at the program's entry point.
    pub machine: Machine,
    /// The program's path as given.
    pub path: PathBuf,
    /// The program's bytes.
    pub elf: Vec<u8>,
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

/// Loads the guest `spec` describes. Warnings (an unknown system call) go to `on_warning`.
pub fn load(spec: &ProgramSpec, on_warning: Box<dyn FnMut(&str) + Send>) -> Result<Guest> {
    if spec.command.is_empty() {
        return Err(Error::Config("no program given".into()));
    }
    let image = ProgramImage::read(&spec.path())?.with_naming(spec.naming());
    let machine = load_image(spec, &image, on_warning)?;
    Ok(Guest {
        machine,
        path: spec.path(),
        elf: image.bytes().to_vec(),
    })
}

/// A machine at the entry point of `image`, set up as `spec` says (sandbox, environment,
/// stdio, limits, branch-on-random). `spec.command[0]` is the program's path as the guest
/// sees it; `image` is its bytes, read once by the caller.
pub fn load_image(
    spec: &ProgramSpec,
    image: &ProgramImage,
    on_warning: Box<dyn FnMut(&str) + Send>,
) -> Result<Machine> {
    image.count_load();
    let prog_path = image.path().to_path_buf();
    let mut sandbox = Sandbox::new();
    if let Some(dir) = &spec.cwd {
        sandbox.set_cwd(dir).map_err(|reason| Error::Grant {
            flag: "cwd",
            path: dir.clone(),
            reason,
        })?;
    }
    if let Some(dir) = &spec.sysroot {
        sandbox.set_sysroot(dir).map_err(|reason| Error::Grant {
            flag: "--sysroot",
            path: dir.clone(),
            reason,
        })?;
    }
    for p in &spec.allow {
        sandbox.allow_read(p).map_err(|reason| Error::Grant {
            flag: "--allow",
            path: p.clone(),
            reason,
        })?;
    }
    for p in &spec.allow_rw {
        sandbox.allow_write(p).map_err(|reason| Error::Grant {
            flag: "--allow-rw",
            path: p.clone(),
            reason,
        })?;
    }
    // the program's own file, read-only: a program may run itself again (execve of argv[0]
    // or /proc/self/exe); nothing beside it is granted
    let _ = sandbox.allow_read(&prog_path);
    // a dynamically linked program's interpreter, read as the guest would see it (beneath
    // the sysroot); without a sysroot the loader's error names it and suggests --sysroot
    let program_err = |reason| Error::Program {
        path: prog_path.clone(),
        reason,
    };
    let interp = match elf::interpreter(image.bytes()).map_err(program_err)? {
        Some(path) if spec.sysroot.is_some() => {
            let guest = PathBuf::from(&path);
            let (bytes, host) =
                sandbox
                    .read_file(&guest, MAX_INTERP_BYTES)
                    .map_err(|e| Error::Program {
                        path: prog_path.clone(),
                        reason: outcrop_rv::Error::Elf(format!(
                            "its interpreter {path} cannot be read under --sysroot {}: {e}",
                            spec.sysroot.as_deref().unwrap_or(Path::new("")).display()
                        )),
                    })?;
            Some((guest, host, bytes))
        }
        _ => None,
    };
    let exe_path = std::fs::canonicalize(&prog_path).unwrap_or_else(|_| prog_path.clone());
    let quiet = spec.stdio == Stdio::Quiet;
    let kernel = KernelConfig {
        sandbox,
        deterministic: spec.deterministic,
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
        on_warning,
        stdio_mode: None,
    };
    let mut env: Vec<OsString> = if spec.deterministic {
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
    for kv in &spec.env {
        let key = env_key(kv);
        env.retain(|e| env_key(e) != key);
        env.push(kv.clone());
    }
    let mut args = spec.command.clone();
    if args.is_empty() {
        args.push(prog_path.clone().into_os_string());
    }
    if let (Some(a0), Some(first)) = (&spec.argv0, args.first_mut()) {
        *first = a0.clone();
    }
    let program = Program {
        elf: image.bytes(),
        args,
        env,
        memory_limit: spec.memory_limit,
        isa: spec.isa,
    };
    let interp = interp.as_ref().map(|(path, host, bytes)| elf::Interp {
        path: path.clone(),
        host_path: Some(host.clone()),
        elf: bytes,
    });
    let mut machine = elf::load_with(program, interp, kernel).map_err(|reason| Error::Program {
        path: prog_path.clone(),
        reason,
    })?;
    if let Some(n) = spec.max_insns {
        machine.max_insns = n;
    }
    let mut brr = spec.brr.clone();
    if !spec.deterministic && !spec.brr_seeded {
        brr.seed = host_seed(brr.width);
    }
    machine.brr = BrrUnit::new(&brr)
        .map_err(|e| Error::Config(format!("branch-on-random (--brr, --brr-seed): {e}")))?;
    if spec.quantum == 0 {
        return Err(Error::Config(
            "--quantum must be at least 1 instruction".into(),
        ));
    }
    machine.set_schedule(spec.quantum, spec.effective_schedule_seed());
    machine.set_max_threads(spec.max_threads);
    machine.kernel.set_max_processes(spec.max_processes);
    machine
        .set_vlen(spec.vlen)
        .map_err(|e| Error::Config(format!("--vlen: {e}")))?;
    Ok(machine)
}

/// A non-zero LFSR seed of `width` bits from the host's clock (runs that are not
/// `--deterministic` get different branch-on-random sequences, as hardware would).
fn host_seed(width: u8) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let v = outcrop_sampling::SplitMix64::new(nanos ^ u64::from(std::process::id())).next_u64();
    let ones = u64::MAX >> (64 - u32::from(width.clamp(1, 64)));
    (v & ones).max(1)
}

/// The most bytes of an interpreter (dynamic linker) read.
const MAX_INTERP_BYTES: u64 = 64 << 20;

/// Exit status when the instruction limit stops the guest (as `timeout(1)`).
pub const EXIT_INSN_LIMIT: i32 = 124;
/// Exit status when an interrupt (SIGINT) stopped the guest: 128 + 2.
pub const EXIT_INTERRUPTED: i32 = 130;

/// How a run ended, as an exit status and a short text (`exited`, `fault: ...`).
pub fn outcome_status(outcome: &Outcome) -> (i32, String) {
    match outcome {
        Outcome::Exited(c) => (*c, "exited".to_string()),
        Outcome::InstructionLimit => (EXIT_INSN_LIMIT, "instruction limit".to_string()),
        Outcome::Stopped => (0, "stopped".to_string()),
        o => (o.exit_status().unwrap_or(1), o.describe()),
    }
}

/// The name part of a `KEY=VALUE` environment entry.
fn env_key(kv: &OsString) -> &[u8] {
    let b = kv.as_encoded_bytes();
    b.split(|&c| c == b'=').next().unwrap_or(b)
}
