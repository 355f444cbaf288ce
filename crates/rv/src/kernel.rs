//! Linux system calls for static riscv64 glibc programs (asm-generic numbers; see
//! `shared/notes/riscv-linux.md`), file descriptors, and the sandbox.
//!
//! Sandbox: the guest sees only host paths granted with [`Sandbox::allow_read`] (read-only)
//! or [`Sandbox::allow_write`] (read-write), plus the stdio streams it was given; every path is
//! opened beneath a granted root's directory handle, race-free (see [`crate::sandbox`]).
//! Everything else fails with `EACCES`. Unknown system calls return `ENOSYS` with a one-time
//! warning.
//!
//! Every guest-controlled size is checked before the host allocates or loops on it: I/O is
//! done in chunks of at most 1 MiB, mappings are checked against the memory limit and the
//! user address space first, and unmap/remap/protect walk mapped pages, not address ranges.
//!
//! Determinism: with [`KernelConfig::deterministic`], clocks derive from the instruction count
//! and random bytes from a fixed seed, so runs are byte-identical.

use crate::memory::{perm, Memory, PAGE_SIZE, USER_TOP};
use crate::sandbox::OpenFlags;

pub mod mapping;
pub mod signals;
pub mod threads;
pub use mapping::MappedObject;

pub use crate::sandbox::Sandbox;
use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
pub use threads::{Hart, Thread, ThreadStat, Threads, Wait};

// errno values (asm-generic)
const EPERM: i64 = 1;
const ESRCH: i64 = 3;
const EBADF: i64 = 9;
const EAGAIN: i64 = 11;
const EPIPE: i64 = 32;
const ENOMEM: i64 = 12;
const EFAULT: i64 = 14;
const EACCES: i64 = 13;
const EINVAL: i64 = 22;
const EMFILE: i64 = 24;
const ENOTTY: i64 = 25;
const ESPIPE: i64 = 29;
const ENOSYS: i64 = 38;
const ENAMETOOLONG: i64 = 36;
const ENOTDIR: i64 = 20;
const EISDIR: i64 = 21;
const EEXIST: i64 = 17;

/// Longest path the guest may pass, with its NUL (Linux's PATH_MAX).
const PATH_MAX: usize = 4096;

const AT_FDCWD: i64 = -100;
const AT_EMPTY_PATH: u64 = 0x1000;
pub(crate) const MAX_FDS: usize = 1024;
const MAX_IO: usize = 1 << 20;

/// `st_mode` of fds 0–2 under [`KernelConfig::deterministic`] when no
/// [`KernelConfig::stdio_mode`] is given: a character device, like `/dev/null`.
pub const DETERMINISTIC_STDIO_MODE: u32 = 0o020666;

/// How the kernel behaves.
pub struct KernelConfig {
    /// Paths the guest may open.
    pub sandbox: Sandbox,
    /// Fixed clocks and random bytes.
    pub deterministic: bool,
    /// What `readlink("/proc/self/exe")` returns.
    pub exe_path: PathBuf,
    /// Guest stdin.
    pub stdin: Box<dyn Read + Send>,
    /// Guest stdout.
    pub stdout: Box<dyn Write + Send>,
    /// Guest stderr.
    pub stderr: Box<dyn Write + Send>,
    /// Called once per unknown system call number, with a message naming it.
    pub on_warning: Box<dyn FnMut(&str) + Send>,
    /// `st_mode` that fstat reports for fds 0–2; `None` reports what the host's own
    /// stdin/stdout/stderr are (as qemu-user does), except under `deterministic`, which reports
    /// [`DETERMINISTIC_STDIO_MODE`]: glibc's buffering (and so the instruction stream) depends
    /// on it.
    pub stdio_mode: Option<u32>,
}

impl KernelConfig {
    /// A deterministic kernel with no host files, no stdin, discarded stdout/stderr and
    /// warnings, and fds 0–2 reported as /dev/null: for tools and tests that run a program
    /// only to observe it, or load it only to read its code.
    pub fn silent(exe_path: std::path::PathBuf) -> KernelConfig {
        KernelConfig {
            sandbox: Sandbox::new(),
            deterministic: true,
            exe_path,
            stdin: Box::new(std::io::empty()),
            stdout: Box::new(std::io::sink()),
            stderr: Box::new(std::io::sink()),
            on_warning: Box::new(|_| {}),
            stdio_mode: Some(0o020666),
        }
    }
}

enum Fd {
    Stdin,
    Stdout,
    Stderr,
    File(File),
    /// A directory: the base of `*at` calls, and what getdents64 lists.
    Dir(DirFd),
    /// One of the machine's own devices (`/dev/null`, `/dev/zero`, `/dev/urandom`…): no
    /// host file is involved.
    Device(Device),
}

/// The character devices every guest has, whatever it was granted (they reach nothing on
/// the host): reads of `/dev/null` end at once, of `/dev/zero` give zeros, of
/// `/dev/urandom` and `/dev/random` the kernel's random bytes (fixed under
/// `--deterministic`); writes to any of them are discarded (`/dev/full`: ENOSPC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Device {
    Null,
    Zero,
    Full,
    Random,
}

impl Device {
    fn at(path: &std::path::Path) -> Option<Device> {
        Some(match path.as_os_str().as_bytes() {
            b"/dev/null" => Device::Null,
            b"/dev/zero" => Device::Zero,
            b"/dev/full" => Device::Full,
            b"/dev/urandom" | b"/dev/random" => Device::Random,
            _ => return None,
        })
    }

    /// `(major, minor)` as Linux numbers them.
    fn rdev(self) -> (u64, u64) {
        match self {
            Device::Null => (1, 3),
            Device::Zero => (1, 5),
            Device::Full => (1, 7),
            Device::Random => (1, 9),
        }
    }
}

impl Fd {
    /// Another descriptor for the same open file (`dup`): the host descriptor is duplicated,
    /// so the two share its offset, as on Linux.
    fn try_clone(&self) -> Result<Fd, i64> {
        Ok(match self {
            Fd::Stdin => Fd::Stdin,
            Fd::Stdout => Fd::Stdout,
            Fd::Stderr => Fd::Stderr,
            Fd::File(f) => Fd::File(f.try_clone().map_err(|e| errno(&e))?),
            Fd::Dir(d) => Fd::Dir(DirFd {
                grant: d.grant.try_clone()?,
                listing: None,
                pos: 0,
            }),
            Fd::Device(d) => Fd::Device(*d),
        })
    }
}

/// An open directory.
struct DirFd {
    grant: crate::sandbox::DirGrant,
    /// Its entries, read at the first getdents64 (or after a rewind), and the next one.
    listing: Option<Vec<(u64, u8, Vec<u8>)>>,
    pos: usize,
}

const RLIMIT_DATA: usize = 2;
const RLIMIT_NOFILE: usize = 7;
const RLIMIT_AS: usize = 9;

/// The limits a process starts with (Linux's defaults as a shell leaves them).
fn default_rlimits() -> [(u64, u64); 16] {
    let mut l = [(u64::MAX, u64::MAX); 16];
    l[3] = (8 << 20, u64::MAX); // RLIMIT_STACK
    l[4] = (0, u64::MAX); // RLIMIT_CORE
    l[RLIMIT_NOFILE] = (MAX_FDS as u64, MAX_FDS as u64);
    l[8] = (8 << 20, 8 << 20); // RLIMIT_MEMLOCK
    l
}

/// Most entries one directory listing holds: `getdents64` on a larger directory is `ENOMEM`
/// (with a warning), never a listing that ends early as if complete.
const MAX_DIR_ENTRIES: usize = 1 << 20;

/// A signal's disposition, as `rt_sigaction` set it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigAction {
    /// Handler address; 0 is the default action (SIG_DFL), 1 ignores (SIG_IGN).
    pub handler: u64,
    /// `SA_*` flags.
    pub flags: u64,
    /// Signals blocked while the handler runs.
    pub mask: u64,
}

/// `SA_NODEFER`: the signal is not blocked while its own handler runs.
pub const SA_NODEFER: u64 = 0x4000_0000;

/// What a system call did to the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyscallOutcome {
    /// Return to the guest (the result is in a0).
    Continue,
    /// The guest exited with this status.
    Exit(i32),
    /// The scheduler must run before the guest goes on: the thread blocked, exited or
    /// yielded, or a signal is pending for it (a0 holds the result unless it blocked).
    Reschedule,
    /// A new thread was added last to [`Threads::list`] with the caller's integer
    /// registers; the machine completes its hart (pc, FP state) and then reschedules.
    Spawned,
}

/// What a system call's handler returns beyond a plain value.
pub(crate) enum Ret {
    /// a0 = the value.
    Value(i64),
    /// The thread blocked (its a0 is written when it wakes).
    Block,
    /// a0 = the value, then the scheduler runs.
    Switch(i64),
    /// A thread was created (a0 holds its tid).
    Spawned,
}

/// The emulated kernel: brk and mmap state, file descriptors, clocks.
pub struct Kernel {
    config: KernelConfig,
    fds: Vec<Option<Fd>>,
    brk_start: u64,
    brk: u64,
    mmap_next: u64,
    warned: HashSet<u64>,
    rng: u64,
    /// Handlers by signal number (1..=64), as rt_sigaction set them.
    actions: Box<[SigAction; 65]>,
    /// The threads (docs/machine.md, "Threads").
    threads: Threads,
    /// Process-wide pending signals and timers.
    signals: signals::Signals,
    start: std::time::Instant,
    memory_limit: u64,
    /// Every distinct system call number the guest made, with counts (for statistics).
    pub syscall_counts: std::collections::BTreeMap<u64, u64>,
    /// Told of the first refusal of each host path (see [`Kernel::on_denial`]).
    denial_hook: Option<DenialHook>,
    denied: HashSet<PathBuf>,
    /// Objects mapped executable ([`Kernel::mapped_objects`]).
    objects: Vec<MappedObject>,
    /// Where the `MAP_SHARED` file mappings are (they never become writable).
    shared: mapping::SharedRanges,
    /// Where any file mapping is (`MADV_DONTNEED` leaves them be).
    file_maps: mapping::SharedRanges,
    /// The host files behind lazily read file mappings, one handle per file.
    sources: mapping::Sources,
    /// Resource limits the guest set (`prlimit64`): (soft, hard) by resource number.
    rlimits: [(u64, u64); 16],
    /// The guest path and host path each open file descriptor was opened by.
    fd_paths: std::collections::HashMap<usize, PathBuf>,
    fd_hosts: std::collections::HashMap<usize, PathBuf>,
}

/// Called with an absolute host path the sandbox refused and whether writing was asked.
pub type DenialHook = Box<dyn FnMut(&std::path::Path, bool) + Send>;

/// Base of the region where mmap places anonymous mappings.
pub const MMAP_BASE: u64 = 0x20_0000_0000;

impl Kernel {
    /// Calls `hook` the first time the guest is refused each host path because no grant
    /// covers it (so a user can see which `--allow` would grant it). Purely informative: the
    /// guest still gets `EACCES`.
    pub fn on_denial(&mut self, hook: DenialHook) {
        self.denial_hook = Some(hook);
    }

    /// Resolves a guest path against the sandbox (for writing if `write`); a refusal because
    /// no grant covers it is reported to the denial hook, once per path (at most 1024 paths).
    fn resolve(
        &mut self,
        path: &std::path::Path,
        write: bool,
    ) -> Result<crate::sandbox::Resolved<'_>, i64> {
        let resolved = self.config.sandbox.resolve(path, write);
        if let (Some(hook), Err(crate::sandbox::EACCES)) = (self.denial_hook.as_mut(), &resolved) {
            let host = self.config.sandbox.host_path(path);
            let abs = std::path::absolute(&host).unwrap_or(host);
            if self.denied.len() < 1024 && self.denied.insert(abs.clone()) {
                hook(&abs, write);
            }
        }
        resolved
    }

    /// A kernel whose program break starts at `brk_start` (page aligned, after .bss).
    pub fn new(config: KernelConfig, brk_start: u64, memory_limit: u64) -> Self {
        let rng = if config.deterministic {
            0x0123_4567_89ab_cdef
        } else {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            t ^ (u64::from(std::process::id()) << 32) | 1
        };
        let pid = if config.deterministic {
            1000
        } else {
            std::process::id()
        };
        Kernel {
            threads: Threads::new(pid),
            signals: signals::Signals::default(),
            config,
            fds: vec![Some(Fd::Stdin), Some(Fd::Stdout), Some(Fd::Stderr)],
            brk_start,
            brk: brk_start,
            mmap_next: MMAP_BASE,
            warned: HashSet::new(),
            rng,
            actions: Box::new([SigAction::default(); 65]),
            start: std::time::Instant::now(),
            memory_limit,
            syscall_counts: Default::default(),
            denial_hook: None,
            denied: HashSet::new(),
            objects: Vec::new(),
            shared: mapping::SharedRanges::default(),
            file_maps: mapping::SharedRanges::default(),
            sources: mapping::Sources::default(),
            rlimits: default_rlimits(),
            fd_paths: Default::default(),
            fd_hosts: Default::default(),
        }
    }

    /// Whether clocks and random bytes are fixed.
    pub fn deterministic(&self) -> bool {
        self.config.deterministic
    }

    /// Flushes the guest's stdout and stderr.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.config.stdout.flush()?;
        self.config.stderr.flush()
    }

    /// 16 bytes for AT_RANDOM (from the same source as getrandom).
    pub fn random_bytes(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let v = self.next_random().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }

    fn next_random(&mut self) -> u64 {
        // SplitMix64
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Nanoseconds since start (monotonic): the machine clock in deterministic mode, else
    /// the host's, plus the time skipped while every thread waited.
    fn monotonic_ns(&self, instret: u64) -> u64 {
        if self.config.deterministic {
            self.machine_ns(instret)
        } else {
            (self.start.elapsed().as_nanos() as u64).saturating_add(self.threads.idle_ns)
        }
    }

    fn realtime_ns(&self, instret: u64) -> u64 {
        if self.config.deterministic {
            1_700_000_000_000_000_000 + self.machine_ns(instret)
        } else {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
                .saturating_add(self.threads.idle_ns)
        }
    }

    /// Passes a warning to the run's warning hook.
    pub fn warn(&mut self, msg: &str) {
        (self.config.on_warning)(msg);
    }

    /// Warns once per `key` (a system call number, or a number with high bits for a
    /// particular refusal).
    fn warn_once(&mut self, key: u64, msg: &str) {
        if self.warned.insert(key) {
            (self.config.on_warning)(msg);
        }
    }

    /// The `time` CSR: a 10 MHz timebase.
    pub fn time_ticks(&self, instret: u64) -> u64 {
        self.monotonic_ns(instret) / 100
    }

    /// Handles `ecall`: number in a7, arguments in a0–a5, result to a0.
    pub fn syscall(&mut self, mem: &mut Memory, x: &mut [u64; 32], instret: u64) -> SyscallOutcome {
        let nr = x[17];
        let a = [x[10], x[11], x[12], x[13], x[14], x[15]];
        *self.syscall_counts.entry(nr).or_insert(0) += 1;
        let r: Result<Ret, i64> = match nr {
            93 => return self.sys_exit_thread(mem, a[0]),
            94 => return SyscallOutcome::Exit((a[0] & 0xff) as i32),
            220 => self.sys_clone(mem, x, a),
            435 => self.sys_clone3(mem, x, a[0], a[1]),
            98 => self.sys_futex(mem, a, instret),
            101 => self.sys_sleep(mem, None, a[0], a[1], instret),
            115 => self.sys_sleep(mem, Some((a[0], a[1])), a[2], a[3], instret),
            124 => {
                self.threads.yield_now = true;
                Ok(Ret::Switch(0))
            }
            129 => self.sys_kill(a[0], a[1]),
            130 => self.sys_tgkill(None, a[0], a[1]),
            131 => self.sys_tgkill(Some(a[0]), a[1], a[2]),
            133 => self.sys_rt_sigsuspend(mem, a[0], a[1]),
            135 => self.sys_rt_sigprocmask(mem, a[0], a[1], a[2], a[3]),
            73 => self.sys_ppoll(mem, a, instret),
            137 => self.sys_rt_sigtimedwait(mem, a[0], a[1], a[2], a[3], instret),
            // arming a timer moves the machine's next stop: through the scheduler
            103 => Ok(Ret::Switch(
                self.sys_setitimer(mem, a[0], a[1], a[2], instret),
            )),
            110 => Ok(Ret::Switch(
                self.sys_timer_settime(mem, a[0], a[1], a[2], a[3], instret),
            )),
            _ => Ok(Ret::Value(self.simple_syscall(mem, x, nr, a, instret))),
        };
        let (value, outcome) = match r {
            Ok(Ret::Value(v)) => (Some(v), SyscallOutcome::Continue),
            Ok(Ret::Switch(v)) => (Some(v), SyscallOutcome::Reschedule),
            Ok(Ret::Block) => (None, SyscallOutcome::Reschedule),
            Ok(Ret::Spawned) => (None, SyscallOutcome::Spawned),
            Err(e) => (Some(-e), SyscallOutcome::Continue),
        };
        if let Some(v) = value {
            x[10] = v as u64;
        }
        // a signal the call made deliverable (to itself, by unblocking, SIGPIPE) runs next
        if outcome == SyscallOutcome::Continue && self.deliverable(self.threads.current).is_some() {
            return SyscallOutcome::Reschedule;
        }
        outcome
    }

    /// The system calls that only compute a value.
    fn simple_syscall(
        &mut self,
        mem: &mut Memory,
        x: &mut [u64; 32],
        nr: u64,
        a: [u64; 6],
        instret: u64,
    ) -> i64 {
        match nr {
            63 => self.sys_read(mem, a[0], a[1], a[2]),
            64 => self.sys_write(mem, a[0], a[1], a[2]),
            66 => self.sys_writev(mem, a[0], a[1], a[2]),
            56 => self.sys_openat(mem, a[0] as i64, a[1], a[2], a[3]),
            57 => self.sys_close(a[0]),
            62 => self.sys_lseek(a[0], a[1] as i64, a[2]),
            79 => self.sys_newfstatat(mem, a[0] as i64, a[1], a[2], a[3]),
            80 => self.sys_fstat(mem, a[0], a[1]),
            29 => -ENOTTY,
            48 | 439 => self.sys_faccessat(mem, a[0] as i64, a[1]),
            35 => self.sys_unlinkat(mem, a[0] as i64, a[1], a[2]),
            78 => self.sys_readlinkat(mem, a[0] as i64, a[1], a[2], a[3]),
            34 => self.sys_mkdirat(mem, a[0] as i64, a[1], a[2]),
            276 => self.sys_renameat2(mem, a),
            38 => self.sys_renameat2(mem, [a[0], a[1], a[2], a[3], 0, 0]),
            61 => self.sys_getdents64(mem, a[0], a[1], a[2]),
            23 => self.sys_dup(a[0], 0, None),
            24 => self.sys_dup3(a[0], a[1], a[2]),
            25 => self.sys_fcntl(a[0], a[1], a[2]),
            65 => self.sys_readv(mem, a[0], a[1], a[2]),
            67 => self.sys_pread(mem, a[0], a[1], a[2], a[3]),
            68 => self.sys_pwrite(mem, a[0], a[1], a[2], a[3]),
            17 => self.sys_getcwd(mem, a[0], a[1]),
            46 => self.sys_ftruncate(mem, a[0], a[1]),
            45 => self.sys_truncate(mem, a[0], a[1]),
            88 => self.sys_utimensat(mem, a[0] as i64, a[1], a[2], a[3]),
            43 => self.sys_statfs(mem, a[0], a[1], true),
            44 => self.sys_statfs(mem, a[0], a[1], false),
            82 | 83 => match self.fd(a[0]) {
                Ok(_) => 0, // fsync, fdatasync: the host writes through its own cache
                Err(e) => -e,
            },
            214 => self.sys_brk(mem, a[0]) as i64,
            222 => self.sys_mmap(mem, a[0], a[1], a[2], a[3], a[4] as i64, a[5]),
            215 => self.sys_munmap(mem, a[0], a[1]),
            216 => self.sys_mremap(mem, a[0], a[1], a[2], a[3]),
            226 => self.sys_mprotect(mem, a[0], a[1], a[2]),
            233 => self.sys_madvise(mem, a[0], a[1], a[2]),
            172 => self.pid(),
            173 => 1, // getppid
            178 => i64::from(self.tid()),
            96 => self.sys_set_tid_address(a[0]),
            99 => self.sys_set_robust_list(a[0], a[1]),
            100 => self.sys_get_robust_list(mem, a[0], a[1], a[2]),
            122 => 0, // sched_setaffinity: one CPU, whatever is asked
            123 => self.sys_sched_getaffinity(mem, a[0], a[1], a[2]),
            167 => self.sys_prctl(mem, a[0], a[1]),
            168 => {
                // getcpu: CPU 0, node 0
                for p in [a[0], a[1]] {
                    if p != 0 && mem.store_u32(p, 0).is_err() {
                        return -EFAULT;
                    }
                }
                0
            }
            102 => self.sys_getitimer(mem, a[0], a[1], instret),
            107 => self.sys_timer_create(mem, a[0], a[1], a[2]),
            108 => self.sys_timer_gettime(mem, a[0], a[1], instret),
            109 => self.sys_timer_getoverrun(a[0]),
            111 => self.sys_timer_delete(a[0]),
            132 => self.sys_sigaltstack(mem, a[0], a[1], x[2]),
            136 => self.sys_rt_sigpending(mem, a[0], a[1]),
            174..=177 => 0, // getuid, geteuid, getgid, getegid
            261 => self.sys_prlimit64(mem, a[0], a[1], a[2], a[3]),
            278 => self.sys_getrandom(mem, a[0], a[1]),
            113 => self.sys_clock_gettime(mem, a[0], a[1], instret),
            169 => self.sys_gettimeofday(mem, a[0], instret),
            160 => self.sys_uname(mem, a[0]),
            179 => self.sys_sysinfo(mem, a[0], instret),
            134 => self.sys_rt_sigaction(mem, a[0], a[1], a[2], a[3]),
            258 | 293 => -ENOSYS, // riscv_hwprobe, rseq: glibc copes
            283 => -ENOSYS,       // membarrier: glibc does not call it
            259 => 0,             // riscv_flush_icache: our cache follows every store
            _ => {
                if self.warned.insert(nr) {
                    (self.config.on_warning)(&format!(
                        "unsupported system call {nr} ({}); returning ENOSYS",
                        syscall_name(nr)
                    ));
                }
                -ENOSYS
            }
        }
    }

    fn pid(&self) -> i64 {
        i64::from(self.threads.pid)
    }

    fn fd(&mut self, fd: u64) -> Result<&mut Fd, i64> {
        self.fds
            .get_mut(fd as usize)
            .and_then(Option::as_mut)
            .ok_or(EBADF)
    }

    fn sys_read(&mut self, mem: &mut Memory, fd: u64, buf: u64, count: u64) -> i64 {
        let n = (count as usize).min(MAX_IO);
        if mem.check_range(buf, n as u64, perm::W).is_err() {
            return -EFAULT;
        }
        let mut tmp = vec![0u8; n];
        let got = match self.fd(fd) {
            Err(e) => return -e,
            Ok(Fd::Stdin) => self.config.stdin.read(&mut tmp),
            Ok(Fd::File(f)) => f.read(&mut tmp),
            Ok(Fd::Dir(_)) => return -EISDIR,
            Ok(Fd::Device(Device::Null)) => Ok(0),
            Ok(Fd::Device(Device::Zero | Device::Full)) => Ok(n),
            Ok(Fd::Device(Device::Random)) => {
                self.random_bytes(&mut tmp);
                Ok(n)
            }
            Ok(_) => return -EBADF,
        };
        match got {
            Ok(got) => match mem.write_bytes(buf, &tmp[..got]) {
                Ok(()) => got as i64,
                Err(_) => -EFAULT,
            },
            Err(e) => -errno(&e),
        }
    }

    fn write_fd(&mut self, fd: u64, data: &[u8]) -> i64 {
        let r = match self.fd(fd) {
            Err(e) => return -e,
            Ok(Fd::Stdout) => self.config.stdout.write_all(data),
            Ok(Fd::Stderr) => self
                .config
                .stderr
                .write_all(data)
                .and_then(|()| self.config.stderr.flush()),
            Ok(Fd::File(f)) => f.write_all(data),
            Ok(Fd::Device(Device::Full)) => return -28, // ENOSPC
            Ok(Fd::Device(_)) => Ok(()),
            Ok(Fd::Stdin | Fd::Dir(_)) => return -EBADF,
        };
        match r {
            Ok(()) => data.len() as i64,
            Err(e) => {
                let e = errno(&e);
                if e == EPIPE {
                    self.raise_sigpipe(); // the reader is gone: SIGPIPE, as Linux sends it
                }
                -e
            }
        }
    }

    fn sys_write(&mut self, mem: &mut Memory, fd: u64, buf: u64, count: u64) -> i64 {
        let n = (count as usize).min(MAX_IO);
        let mut tmp = vec![0u8; n];
        if mem.read_bytes(buf, &mut tmp).is_err() {
            return -EFAULT;
        }
        let r = self.write_fd(fd, &tmp);
        self.written(mem, fd, None, &tmp, r);
        r
    }

    /// After a write of `data` to `fd` that returned `r` (at file offset `at`, or where the
    /// file position now ends it): the file's shared mappings show what was written.
    fn written(&mut self, mem: &mut Memory, fd: u64, at: Option<u64>, data: &[u8], r: i64) {
        use std::io::Seek;
        if self.file_maps.is_empty() || r <= 0 {
            return;
        }
        let n = (r as usize).min(data.len());
        let Ok(Fd::File(f)) = self.fd(fd) else {
            return;
        };
        let start = match at {
            Some(a) => Some(a),
            None => f
                .stream_position()
                .ok()
                .and_then(|p| p.checked_sub(n as u64)),
        };
        let (Some(start), Ok(meta)) = (start, f.metadata()) else {
            return;
        };
        self.write_through_shared(mem, &meta, start, &data[..n]);
    }

    fn sys_writev(&mut self, mem: &mut Memory, fd: u64, iov: u64, cnt: u64) -> i64 {
        if cnt > 1024 {
            return -EINVAL;
        }
        let mut data = Vec::new();
        for i in 0..cnt {
            let at = iov.wrapping_add(16 * i);
            let (Ok(base), Ok(len)) = (mem.load_u64(at), mem.load_u64(at.wrapping_add(8))) else {
                return -EFAULT;
            };
            // each length is guest-controlled: bound it before adding or allocating
            if len > (MAX_IO - data.len()) as u64 {
                return -EINVAL;
            }
            let start = data.len();
            data.resize(start + len as usize, 0);
            if mem.read_bytes(base, &mut data[start..]).is_err() {
                return -EFAULT;
            }
        }
        let r = self.write_fd(fd, &data);
        self.written(mem, fd, None, &data, r);
        r
    }

    fn guest_path(&self, mem: &mut Memory, dirfd: i64, addr: u64) -> Result<PathBuf, i64> {
        let bytes = mem.read_cstr(addr, PATH_MAX).map_err(|_| EFAULT)?;
        if bytes.len() >= PATH_MAX {
            return Err(ENAMETOOLONG); // no NUL within PATH_MAX bytes: never truncate
        }
        // Linux paths are bytes, not necessarily UTF-8
        let _ = dirfd; // resolved by `resolve_at`
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(&bytes)))
    }

    /// Resolves `path` as an `*at` call does: absolute paths and `AT_FDCWD` against the
    /// sandbox's grants, relative ones beneath the directory `dirfd` names (`ENOTDIR` for a
    /// file, `EBADF` for no descriptor).
    fn resolve_at(
        &mut self,
        dirfd: i64,
        path: &std::path::Path,
        write: bool,
    ) -> Result<crate::sandbox::Resolved<'_>, i64> {
        // beneath one of the machine's devices there is nothing: not a directory
        if path.ancestors().skip(1).any(|a| Device::at(a).is_some()) {
            return Err(ENOTDIR);
        }
        if path.is_absolute() || dirfd == AT_FDCWD {
            return self.resolve(path, write);
        }
        let fd = usize::try_from(dirfd).map_err(|_| EBADF)?;
        match self.fds.get(fd).and_then(Option::as_ref) {
            Some(Fd::Dir(d)) => d.grant.resolve(path, write),
            Some(_) => Err(ENOTDIR),
            None => Err(EBADF),
        }
    }

    fn sys_openat(
        &mut self,
        mem: &mut Memory,
        dirfd: i64,
        path: u64,
        flags: u64,
        mode: u64,
    ) -> i64 {
        let path = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        const O_CREAT: u64 = 0o100;
        const O_EXCL: u64 = 0o200;
        const O_TRUNC: u64 = 0o1000;
        const O_APPEND: u64 = 0o2000;
        const O_DIRECTORY: u64 = 0o200000;
        const O_NOFOLLOW: u64 = 0o400000;
        const O_NONBLOCK: u64 = 0o4000;
        let acc = flags & 3;
        let write = acc != 0 || flags & (O_CREAT | O_TRUNC) != 0;
        if path.is_absolute() {
            if let Some(d) = Device::at(&path) {
                if flags & O_DIRECTORY != 0 {
                    return -ENOTDIR;
                }
                return self.install(Fd::Device(d));
            }
        }
        let opened = self.resolve_at(dirfd, &path, write).and_then(|r| {
            let host = r.host_path();
            let opened = r.open(OpenFlags {
                read: acc == 0 || acc == 2,
                write: acc == 1 || acc == 2,
                append: flags & O_APPEND != 0,
                truncate: flags & O_TRUNC != 0,
                create: flags & O_CREAT != 0,
                exclusive: flags & O_EXCL != 0,
                nofollow: flags & O_NOFOLLOW != 0,
                nonblock: flags & O_NONBLOCK != 0,
                mode: (mode & 0o7777) as u32,
            })?;
            let is_dir = opened.metadata().is_ok_and(|m| m.is_dir());
            if flags & O_DIRECTORY != 0 && !is_dir {
                return Err(ENOTDIR);
            }
            // a directory becomes the base of *at calls, beneath the same grant
            let fd = if is_dir {
                Fd::Dir(DirFd {
                    grant: r.dir_grant(opened),
                    listing: None,
                    pos: 0,
                })
            } else {
                Fd::File(opened)
            };
            Ok((fd, host))
        });
        match opened {
            Ok((f, host)) => {
                let fd = self.install(f);
                if fd >= 0 {
                    self.fd_paths.insert(fd as usize, path);
                    self.fd_hosts.insert(fd as usize, host);
                }
                fd
            }
            Err(e) => -e,
        }
    }

    /// dup / F_DUPFD: a copy of `fd` at the lowest free number ≥ `min` (or exactly `at`).
    fn sys_dup(&mut self, fd: u64, min: u64, at: Option<u64>) -> i64 {
        let copy = match self.fd(fd).and_then(|f| f.try_clone()) {
            Ok(c) => c,
            Err(e) => return -e,
        };
        let (path, host) = (
            self.fd_paths.get(&(fd as usize)).cloned(),
            self.fd_hosts.get(&(fd as usize)).cloned(),
        );
        let limit = (self.rlimit(RLIMIT_NOFILE) as usize).min(MAX_FDS);
        let slot = match at {
            Some(n) => n as usize,
            None => {
                let free =
                    (min as usize..limit).find(|&i| self.fds.get(i).is_none_or(Option::is_none));
                match free {
                    Some(i) => i,
                    None => return -EMFILE,
                }
            }
        };
        if slot >= limit {
            return if at.is_some() { -EBADF } else { -EMFILE };
        }
        if self.fds.len() <= slot {
            self.fds.resize_with(slot + 1, || None);
        }
        self.fds[slot] = Some(copy);
        self.fd_paths.remove(&slot);
        self.fd_hosts.remove(&slot);
        if let Some(p) = path {
            self.fd_paths.insert(slot, p);
        }
        if let Some(h) = host {
            self.fd_hosts.insert(slot, h);
        }
        slot as i64
    }

    fn sys_dup3(&mut self, old: u64, new: u64, flags: u64) -> i64 {
        const O_CLOEXEC: u64 = 0o2000000;
        if old == new || flags & !O_CLOEXEC != 0 {
            return -EINVAL;
        }
        self.sys_dup(old, 0, Some(new))
    }

    /// fcntl: F_DUPFD(_CLOEXEC), and the flag queries programs make (close-on-exec is
    /// remembered nowhere: there is no exec).
    fn sys_fcntl(&mut self, fd: u64, cmd: u64, arg: u64) -> i64 {
        const F_DUPFD: u64 = 0;
        const F_GETFD: u64 = 1;
        const F_SETFD: u64 = 2;
        const F_GETFL: u64 = 3;
        const F_SETFL: u64 = 4;
        const F_SETLK: u64 = 6;
        const F_SETLKW: u64 = 7;
        const F_GETLK: u64 = 5;
        const F_DUPFD_CLOEXEC: u64 = 1030;
        const O_RDWR: i64 = 2;
        match cmd {
            F_DUPFD | F_DUPFD_CLOEXEC => {
                if arg as usize >= MAX_FDS {
                    return -EINVAL;
                }
                self.sys_dup(fd, arg, None)
            }
            F_GETFD | F_SETFD => match self.fd(fd) {
                Ok(_) => 0,
                Err(e) => -e,
            },
            F_GETFL => match self.fd(fd) {
                Ok(Fd::File(f)) => rustix::fs::fcntl_getfl(&*f)
                    .map(|fl| i64::from(fl.bits()))
                    .unwrap_or(O_RDWR),
                Ok(Fd::Stdin) => 0,
                Ok(Fd::Stdout | Fd::Stderr) => 1,
                Ok(Fd::Device(_)) => O_RDWR,
                Ok(Fd::Dir(_)) => 0o200000, // O_DIRECTORY | O_RDONLY
                Err(e) => -e,
            },
            // status flags (O_APPEND, O_NONBLOCK) are not changed on the host descriptor
            F_SETFL => match self.fd(fd) {
                Ok(_) => 0,
                Err(e) => -e,
            },
            // advisory locks: one process, nothing to contend with
            F_GETLK | F_SETLK | F_SETLKW => match self.fd(fd) {
                Ok(_) => 0,
                Err(e) => -e,
            },
            _ => -EINVAL,
        }
    }

    fn sys_readv(&mut self, mem: &mut Memory, fd: u64, iov: u64, cnt: u64) -> i64 {
        if cnt > 1024 {
            return -EINVAL;
        }
        let mut total = 0i64;
        for i in 0..cnt {
            let at = iov.wrapping_add(16 * i);
            let (Ok(base), Ok(len)) = (mem.load_u64(at), mem.load_u64(at.wrapping_add(8))) else {
                return -EFAULT;
            };
            if len == 0 {
                continue;
            }
            let n = self.sys_read(mem, fd, base, len);
            if n < 0 {
                return if total > 0 { total } else { n };
            }
            total += n;
            if (n as u64) < len {
                break; // a short read ends the vector, as Linux does
            }
        }
        total
    }

    fn sys_pread(&mut self, mem: &mut Memory, fd: u64, buf: u64, count: u64, off: u64) -> i64 {
        use std::os::unix::fs::FileExt;
        if (off as i64) < 0 {
            return -EINVAL;
        }
        let n = (count as usize).min(MAX_IO);
        if mem.check_range(buf, n as u64, perm::W).is_err() {
            return -EFAULT;
        }
        let f = match self.fd(fd) {
            Ok(Fd::File(f)) => f,
            Ok(Fd::Dir(_)) => return -EISDIR,
            Ok(_) => return -ESPIPE,
            Err(e) => return -e,
        };
        let mut tmp = vec![0u8; n];
        match f.read_at(&mut tmp, off) {
            Ok(got) => match mem.write_bytes(buf, &tmp[..got]) {
                Ok(()) => got as i64,
                Err(_) => -EFAULT,
            },
            Err(e) => -errno(&e),
        }
    }

    fn sys_pwrite(&mut self, mem: &mut Memory, fd: u64, buf: u64, count: u64, off: u64) -> i64 {
        use std::os::unix::fs::FileExt;
        if (off as i64) < 0 {
            return -EINVAL;
        }
        let n = (count as usize).min(MAX_IO);
        let mut tmp = vec![0u8; n];
        if mem.read_bytes(buf, &mut tmp).is_err() {
            return -EFAULT;
        }
        let r = match self.fd(fd) {
            Ok(Fd::File(f)) => match f.write_at(&tmp, off) {
                Ok(w) => w as i64,
                Err(e) => -errno(&e),
            },
            Ok(Fd::Dir(_)) => -EISDIR,
            Ok(_) => -ESPIPE,
            Err(e) => -e,
        };
        self.written(mem, fd, Some(off), &tmp, r);
        r
    }

    fn sys_getcwd(&mut self, mem: &mut Memory, buf: u64, size: u64) -> i64 {
        const ERANGE: i64 = 34;
        let cwd = self.config.sandbox.host_path(std::path::Path::new("."));
        let cwd = std::path::absolute(&cwd).unwrap_or(cwd);
        let mut bytes: Vec<u8> = cwd
            .components()
            .filter(|c| *c != std::path::Component::CurDir)
            .collect::<PathBuf>()
            .as_os_str()
            .as_bytes()
            .to_vec();
        bytes.push(0);
        if (bytes.len() as u64) > size {
            return -ERANGE;
        }
        match mem.write_bytes(buf, &bytes) {
            Ok(()) => bytes.len() as i64,
            Err(_) => -EFAULT,
        }
    }

    /// utimensat / futimens: set a file's access and modification times (`UTIME_NOW`,
    /// `UTIME_OMIT`), beneath a read-write grant.
    fn sys_utimensat(
        &mut self,
        mem: &mut Memory,
        dirfd: i64,
        path: u64,
        times: u64,
        flags: u64,
    ) -> i64 {
        const UTIME_NOW: u64 = (1 << 30) - 1;
        const UTIME_OMIT: u64 = (1 << 30) - 2;
        const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return -EINVAL;
        }
        let now = std::time::SystemTime::UNIX_EPOCH
            + std::time::Duration::from_nanos(self.realtime_ns(0));
        let mut ts = [None, None];
        if times != 0 {
            for (i, t) in ts.iter_mut().enumerate() {
                let at = times.wrapping_add(16 * i as u64);
                let (Ok(sec), Ok(nsec)) = (mem.load_u64(at), mem.load_u64(at.wrapping_add(8)))
                else {
                    return -EFAULT;
                };
                *t = match nsec {
                    UTIME_OMIT => None,
                    UTIME_NOW => Some(now),
                    n if n < 1_000_000_000 && (sec as i64) >= 0 => Some(
                        std::time::SystemTime::UNIX_EPOCH + std::time::Duration::new(sec, n as u32),
                    ),
                    _ => return -EINVAL,
                };
            }
        } else {
            ts = [Some(now), Some(now)];
        }
        let mut set = std::fs::FileTimes::new();
        if let Some(a) = ts[0] {
            set = set.set_accessed(a);
        }
        if let Some(m) = ts[1] {
            set = set.set_modified(m);
        }
        // futimens: a null path names the descriptor itself
        if path == 0 {
            return match self.fd(dirfd as u64) {
                Ok(Fd::File(f)) => match f.set_times(set) {
                    Ok(()) => 0,
                    Err(e) => -errno(&e),
                },
                Ok(Fd::Device(_) | Fd::Stdin | Fd::Stdout | Fd::Stderr) => 0,
                Ok(Fd::Dir(_)) => -crate::sandbox::EACCES,
                Err(e) => -e,
            };
        }
        let p = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        if Device::at(&p).is_some() {
            return 0;
        }
        let r = self.resolve_at(dirfd, &p, true).and_then(|r| {
            let f = r.open(OpenFlags {
                write: true,
                nofollow: flags & AT_SYMLINK_NOFOLLOW != 0,
                ..OpenFlags::default()
            });
            // a directory cannot be opened for writing: its times are left alone
            match f {
                Ok(f) => f.set_times(set).map_err(|e| errno(&e)),
                Err(e) => Err(e),
            }
        });
        match r {
            Ok(()) => 0,
            Err(e) => -e,
        }
    }

    /// statfs / fstatfs: a fixed description of one ext4-like file system (the host's is not
    /// the guest's business): 4 KiB blocks, 16 Mi blocks, half free.
    fn sys_statfs(&mut self, mem: &mut Memory, target: u64, buf: u64, by_path: bool) -> i64 {
        if by_path {
            let p = match self.guest_path(mem, AT_FDCWD, target) {
                Ok(p) => p,
                Err(e) => return -e,
            };
            if Device::at(&p).is_none() {
                if let Err(e) = self.resolve(&p, false).and_then(|r| r.metadata(false)) {
                    return -e;
                }
            }
        } else if let Err(e) = self.fd(target) {
            return -e;
        }
        let mut s = [0u8; 120];
        let words: [u64; 7] = [0xef53, 4096, 1 << 24, 1 << 23, 1 << 23, 1 << 20, 1 << 19];
        for (i, w) in words.iter().enumerate() {
            s[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
        }
        s[64..72].copy_from_slice(&255u64.to_le_bytes()); // f_namelen
        s[72..80].copy_from_slice(&4096u64.to_le_bytes()); // f_frsize
        match mem.write_bytes(buf, &s) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    /// `truncate(path, len)`: as `ftruncate` on the file the path names (beneath a grant that
    /// allows writing), its shared mappings following.
    fn sys_truncate(&mut self, mem: &mut Memory, path: u64, len: u64) -> i64 {
        if (len as i64) < 0 {
            return -EINVAL;
        }
        let path = match self.guest_path(mem, AT_FDCWD, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        let opened = self.resolve_at(AT_FDCWD, &path, true).and_then(|r| {
            r.open(crate::sandbox::OpenFlags {
                write: true,
                ..Default::default()
            })
        });
        let f = match opened {
            Ok(f) => f,
            Err(e) => return -e,
        };
        if let Ok(m) = f.metadata() {
            if m.is_dir() {
                return -EISDIR;
            }
        }
        if let Err(e) = f.set_len(len) {
            return -errno(&e);
        }
        if let Ok(meta) = f.metadata() {
            self.follow_truncation(mem, &meta, len);
        }
        0
    }

    fn sys_ftruncate(&mut self, mem: &mut Memory, fd: u64, len: u64) -> i64 {
        if (len as i64) < 0 {
            return -EINVAL;
        }
        let meta = match self.fd(fd) {
            Ok(Fd::File(f)) => match f.set_len(len) {
                Ok(()) => f.metadata(),
                Err(e) => return -errno(&e),
            },
            Ok(Fd::Dir(_)) => return -EISDIR,
            Ok(_) => return -EINVAL,
            Err(e) => return -e,
        };
        // the file's shared mappings end where it now ends (SIGBUS past it), as on Linux
        if let Ok(meta) = meta {
            self.follow_truncation(mem, &meta, len);
        }
        0
    }

    fn install(&mut self, fd: Fd) -> i64 {
        let limit = (self.rlimit(RLIMIT_NOFILE) as usize).min(MAX_FDS);
        if let Some(i) = self.fds.iter().position(Option::is_none) {
            if i >= limit {
                return -EMFILE;
            }
            self.fds[i] = Some(fd);
            return i as i64;
        }
        if self.fds.len() >= limit {
            return -EMFILE;
        }
        self.fds.push(Some(fd));
        (self.fds.len() - 1) as i64
    }

    fn sys_close(&mut self, fd: u64) -> i64 {
        match self.fds.get_mut(fd as usize) {
            Some(slot @ Some(_)) => {
                *slot = None;
                self.fd_paths.remove(&(fd as usize));
                self.fd_hosts.remove(&(fd as usize));
                0
            }
            _ => -EBADF,
        }
    }

    fn sys_lseek(&mut self, fd: u64, off: i64, whence: u64) -> i64 {
        let pos = match whence {
            0 if off >= 0 => SeekFrom::Start(off as u64),
            1 => SeekFrom::Current(off),
            2 => SeekFrom::End(off),
            _ => return -EINVAL,
        };
        match self.fd(fd) {
            Ok(Fd::File(f)) => match f.seek(pos) {
                Ok(p) => p as i64,
                Err(e) => -errno(&e),
            },
            // a directory's position is its next entry (rewinddir seeks to 0)
            Ok(Fd::Dir(d)) => match pos {
                SeekFrom::Start(p) => {
                    if p == 0 {
                        d.listing = None;
                    }
                    d.pos = usize::try_from(p).unwrap_or(usize::MAX);
                    p as i64
                }
                SeekFrom::Current(0) => d.pos as i64,
                _ => -EINVAL,
            },
            Ok(Fd::Device(_)) => 0,
            Ok(_) => -ESPIPE,
            Err(e) => -e,
        }
    }

    fn write_stat(mem: &mut Memory, buf: u64, m: &impl StatFields) -> i64 {
        let mut s = [0u8; 128];
        let mut put = |off: usize, v: &[u8]| s[off..off + v.len()].copy_from_slice(v);
        let [dev, ino, mode, nlink, uid, gid, rdev, size, blksize, blocks, at, atn, mt, mtn, ct, ctn] =
            m.fields();
        put(0, &dev.to_le_bytes());
        put(8, &ino.to_le_bytes());
        put(16, &(mode as u32).to_le_bytes());
        put(20, &(nlink as u32).to_le_bytes());
        put(24, &(uid as u32).to_le_bytes());
        put(28, &(gid as u32).to_le_bytes());
        put(32, &rdev.to_le_bytes());
        put(48, &size.to_le_bytes());
        put(56, &(blksize as i32).to_le_bytes());
        put(64, &blocks.to_le_bytes());
        for (off, v) in [
            (72, at),
            (80, atn),
            (88, mt),
            (96, mtn),
            (104, ct),
            (112, ctn),
        ] {
            put(off, &v.to_le_bytes());
        }
        match mem.write_bytes(buf, &s) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    /// The stat of one of the machine's devices (a character device, mode 0666).
    fn write_device_stat(mem: &mut Memory, buf: u64, d: Device) -> i64 {
        let (major, minor) = d.rdev();
        let mut s = [0u8; 128];
        s[16..20].copy_from_slice(&0o020666u32.to_le_bytes());
        s[20..24].copy_from_slice(&1u32.to_le_bytes()); // nlink
        s[32..40].copy_from_slice(&((major << 8) | minor).to_le_bytes()); // rdev
        s[56..60].copy_from_slice(&4096i32.to_le_bytes()); // blksize
        match mem.write_bytes(buf, &s) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    fn write_fixed_stat(mem: &mut Memory, buf: u64, mode: u32) -> i64 {
        let mut s = [0u8; 128];
        s[16..20].copy_from_slice(&mode.to_le_bytes());
        s[20..24].copy_from_slice(&1u32.to_le_bytes()); // nlink
        s[56..60].copy_from_slice(&4096i32.to_le_bytes()); // blksize
        match mem.write_bytes(buf, &s) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    fn sys_fstat(&mut self, mem: &mut Memory, fd: u64, buf: u64) -> i64 {
        let meta = match self.fd(fd) {
            Err(e) => return -e,
            Ok(Fd::File(f)) => f.metadata(),
            Ok(Fd::Dir(d)) => {
                return match d.grant.metadata() {
                    Ok(m) => Self::write_stat(mem, buf, &m),
                    Err(e) => -e,
                }
            }
            Ok(Fd::Device(d)) => {
                let d = *d;
                return Self::write_device_stat(mem, buf, d);
            }
            // deterministic runs never see the host's stdio (its type and inode change glibc's
            // buffering, and so the instruction stream)
            Ok(_) => match self.config.stdio_mode.or(self
                .config
                .deterministic
                .then_some(DETERMINISTIC_STDIO_MODE))
            {
                Some(mode) => return Self::write_fixed_stat(mem, buf, mode),
                // the host's view of its own stdio, as qemu-user reports it
                None => std::fs::metadata(format!("/proc/self/fd/{fd}")),
            },
        };
        match meta {
            Ok(m) => Self::write_stat(mem, buf, &m),
            Err(e) => -errno(&e),
        }
    }

    fn sys_newfstatat(
        &mut self,
        mem: &mut Memory,
        dirfd: i64,
        path: u64,
        buf: u64,
        flags: u64,
    ) -> i64 {
        if flags & AT_EMPTY_PATH != 0 && matches!(mem.load_u8(path), Ok(0)) {
            return self.sys_fstat(mem, dirfd as u64, buf);
        }
        const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
        let path = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        if let Some(d) = Device::at(&path) {
            return Self::write_device_stat(mem, buf, d);
        }
        let meta = self
            .resolve_at(dirfd, &path, false)
            .and_then(|r| r.metadata(flags & AT_SYMLINK_NOFOLLOW != 0));
        match meta {
            Ok(m) => Self::write_stat(mem, buf, &m),
            Err(e) => -e,
        }
    }

    fn sys_faccessat(&mut self, mem: &mut Memory, dirfd: i64, path: u64) -> i64 {
        let path = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        match self
            .resolve_at(dirfd, &path, false)
            .and_then(|r| r.metadata(false))
        {
            Ok(_) => 0,
            Err(e) => -e,
        }
    }

    fn sys_unlinkat(&mut self, mem: &mut Memory, dirfd: i64, path: u64, flags: u64) -> i64 {
        const AT_REMOVEDIR: u64 = 0x200;
        let path = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        match self
            .resolve_at(dirfd, &path, true)
            .and_then(|r| r.remove(flags & AT_REMOVEDIR != 0))
        {
            Ok(()) => 0,
            Err(e) => -e,
        }
    }

    fn sys_readlinkat(
        &mut self,
        mem: &mut Memory,
        dirfd: i64,
        path: u64,
        buf: u64,
        size: u64,
    ) -> i64 {
        let p = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        if size == 0 || size > i32::MAX as u64 {
            return -EINVAL;
        }
        let target = if p.as_os_str() == "/proc/self/exe" {
            // the program's own path
            self.config.exe_path.as_os_str().as_bytes().to_vec()
        } else {
            match self
                .resolve_at(dirfd, &p, false)
                .and_then(|r| r.read_link())
            {
                Ok(t) => t.as_os_str().as_bytes().to_vec(),
                Err(e) => return -e,
            }
        };
        let n = target.len().min(size as usize);
        match mem.write_bytes(buf, &target[..n]) {
            Ok(()) => n as i64,
            Err(_) => -EFAULT,
        }
    }

    fn sys_mkdirat(&mut self, mem: &mut Memory, dirfd: i64, path: u64, mode: u64) -> i64 {
        let p = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        match self
            .resolve_at(dirfd, &p, true)
            .and_then(|r| r.mkdir((mode & 0o7777) as u32))
        {
            Ok(()) => 0,
            Err(e) => -e,
        }
    }

    fn sys_renameat2(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        const RENAME_NOREPLACE: u64 = 1;
        let (olddir, newdir, flags) = (a[0] as i64, a[2] as i64, a[4]);
        if flags & !RENAME_NOREPLACE != 0 {
            return -EINVAL; // RENAME_EXCHANGE and RENAME_WHITEOUT are not supported
        }
        let (from, to) = match (
            self.guest_path(mem, olddir, a[1]),
            self.guest_path(mem, newdir, a[3]),
        ) {
            (Ok(f), Ok(t)) => (f, t),
            (Err(e), _) | (_, Err(e)) => return -e,
        };
        // both ends resolved beneath writable grants; `resolve_at` borrows the kernel, so
        // the first is checked, then both are taken from shared borrows
        if let Err(e) = self.resolve_at(olddir, &from, true).map(drop) {
            return -e;
        }
        if let Err(e) = self.resolve_at(newdir, &to, true).map(drop) {
            return -e;
        }
        let this = &*self;
        let r = this.resolve_at_shared(olddir, &from).and_then(|f| {
            let t = this.resolve_at_shared(newdir, &to)?;
            if flags & RENAME_NOREPLACE != 0 && t.metadata(true).is_ok() {
                return Err(EEXIST);
            }
            f.rename(&t)
        });
        match r {
            Ok(()) => 0,
            Err(e) => -e,
        }
    }

    /// [`Kernel::resolve_at`] for writing, without the denial hook (the caller checked).
    fn resolve_at_shared(
        &self,
        dirfd: i64,
        path: &std::path::Path,
    ) -> Result<crate::sandbox::Resolved<'_>, i64> {
        if path.is_absolute() || dirfd == AT_FDCWD {
            return self.config.sandbox.resolve(path, true);
        }
        let fd = usize::try_from(dirfd).map_err(|_| EBADF)?;
        match self.fds.get(fd).and_then(Option::as_ref) {
            Some(Fd::Dir(d)) => d.grant.resolve(path, true),
            Some(_) => Err(ENOTDIR),
            None => Err(EBADF),
        }
    }

    /// getdents64: the directory's entries from its position, as `linux_dirent64` records
    /// (inode, next position, record length, type, name), as many as fit in `count` bytes.
    fn sys_getdents64(&mut self, mem: &mut Memory, fd: u64, buf: u64, count: u64) -> i64 {
        let count = count.min(MAX_IO as u64) as usize;
        let d = match self.fd(fd) {
            Ok(Fd::Dir(d)) => d,
            Ok(_) => return -ENOTDIR,
            Err(e) => return -e,
        };
        if d.listing.is_none() {
            match d.grant.entries(MAX_DIR_ENTRIES) {
                Ok(l) => d.listing = Some(l),
                Err(ENOMEM) => {
                    self.warn_once(
                        61 | 1 << 40,
                        &format!(
                            "getdents64: a directory has more than {MAX_DIR_ENTRIES} entries or {} MiB of names; the guest's listing fails with ENOMEM",
                            crate::sandbox::MAX_DIR_BYTES >> 20
                        ),
                    );
                    return -ENOMEM;
                }
                Err(e) => return -e,
            }
        }
        let listing = d.listing.as_deref().unwrap_or_default();
        let mut out = Vec::new();
        let mut pos = d.pos;
        while let Some((ino, kind, name)) = listing.get(pos) {
            let reclen = (19 + name.len() + 1).next_multiple_of(8);
            if out.len() + reclen > count {
                break;
            }
            out.extend_from_slice(&ino.to_le_bytes());
            out.extend_from_slice(&((pos + 1) as i64).to_le_bytes());
            out.extend_from_slice(&(reclen as u16).to_le_bytes());
            out.push(*kind);
            out.extend_from_slice(name);
            out.resize(out.len() + reclen - 19 - name.len(), 0);
            pos += 1;
        }
        if out.is_empty() && pos < listing.len() {
            return -EINVAL; // the buffer holds not even one entry
        }
        d.pos = pos;
        match mem.write_bytes(buf, &out) {
            Ok(()) => out.len() as i64,
            Err(_) => -EFAULT,
        }
    }

    fn sys_brk(&mut self, mem: &mut Memory, addr: u64) -> u64 {
        if addr < self.brk_start {
            return self.brk;
        }
        let old_end = self.brk.next_multiple_of(PAGE_SIZE);
        let Some(new_end) = addr.checked_next_multiple_of(PAGE_SIZE) else {
            return self.brk;
        };
        if new_end > old_end {
            if !self.within_rlimits(mem, new_end - old_end, true)
                || addr - self.brk_start > self.rlimit(RLIMIT_DATA)
                || !mem.is_free(old_end, new_end - old_end)
                || mem
                    .map(old_end, new_end - old_end, perm::R | perm::W)
                    .is_err()
            {
                return self.brk;
            }
        } else if new_end < old_end {
            let _ = mem.unmap(new_end, old_end - new_end);
        }
        self.brk = addr;
        addr
    }

    #[allow(clippy::too_many_arguments)]
    fn sys_mmap(
        &mut self,
        mem: &mut Memory,
        addr: u64,
        len: u64,
        prot: u64,
        flags: u64,
        fd: i64,
        offset: u64,
    ) -> i64 {
        const MAP_FIXED: u64 = 0x10;
        const MAP_ANONYMOUS: u64 = 0x20;
        if len == 0 || len > self.memory_limit {
            return if len == 0 { -EINVAL } else { -ENOMEM };
        }
        const PROT_WRITE: u64 = 2;
        const MAP_PRIVATE: u64 = 2;
        let data = prot & PROT_WRITE != 0 && flags & 3 == MAP_PRIVATE;
        if !self.within_rlimits(mem, len.next_multiple_of(PAGE_SIZE), data) {
            return -ENOMEM;
        }
        if flags & MAP_ANONYMOUS == 0 {
            return self.mmap_file(mem, addr, len, prot, flags, fd, offset);
        }
        // len ≤ the memory limit, so rounding cannot overflow
        let len = len.next_multiple_of(PAGE_SIZE);
        let p = prot_to_perm(prot);
        let start = match self.mmap_place(mem, addr, len, flags & MAP_FIXED != 0) {
            Ok(a) => a,
            Err(e) => return -e,
        };
        match mem.map(start, len, p) {
            Ok(()) => start as i64,
            Err(_) => -ENOMEM,
        }
    }

    /// Where a new mapping of `len` (page-rounded) bytes goes: `addr` exactly for `MAP_FIXED`
    /// (whatever was there unmapped), else a free range.
    fn mmap_place(
        &mut self,
        mem: &mut Memory,
        addr: u64,
        len: u64,
        fixed: bool,
    ) -> Result<u64, i64> {
        if fixed {
            if addr % PAGE_SIZE != 0 {
                return Err(EINVAL);
            }
            if addr.checked_add(len).is_none_or(|e| e > USER_TOP) {
                return Err(ENOMEM);
            }
            let _ = mem.unmap(addr, len);
            self.forget_ranges(addr, addr + len);
            Ok(addr)
        } else {
            self.find_free(mem, len).ok_or(ENOMEM)
        }
    }

    /// A free range of `len` bytes for a new mapping: after the last one, else anywhere above
    /// [`MMAP_BASE`]. Walks the mapped ranges, not the address space.
    fn find_free(&mut self, mem: &Memory, len: u64) -> Option<u64> {
        let a = mem
            .find_free(self.mmap_next, len)
            .or_else(|| mem.find_free(MMAP_BASE, len))?;
        self.mmap_next = a.checked_add(len)?;
        Some(a)
    }

    fn sys_munmap(&mut self, mem: &mut Memory, addr: u64, len: u64) -> i64 {
        // as Linux: the range must lie in the user address space
        if addr % PAGE_SIZE != 0 || len == 0 || addr.checked_add(len).is_none_or(|e| e > USER_TOP) {
            return -EINVAL;
        }
        match mem.unmap(addr, len) {
            Ok(()) => {
                self.forget_ranges(addr, addr.saturating_add(len));
                0
            }
            Err(_) => -EINVAL,
        }
    }

    /// `madvise`: advice is accepted and ignored, except `MADV_DONTNEED` (and
    /// `MADV_FREE`, which may act so), whose private anonymous pages read as zeros afterwards,
    /// as on Linux. Pages of file mappings keep their bytes (Linux would read a private file
    /// page from the file again).
    fn sys_madvise(&mut self, mem: &mut Memory, addr: u64, len: u64, advice: u64) -> i64 {
        const MADV_DONTNEED: u64 = 4;
        const MADV_FREE: u64 = 8;
        if addr % PAGE_SIZE != 0 || addr.checked_add(len).is_none_or(|e| e > USER_TOP) {
            return -EINVAL;
        }
        if len == 0 {
            return 0;
        }
        if advice == MADV_DONTNEED || advice == MADV_FREE {
            let end = addr.saturating_add(len.saturating_add(PAGE_SIZE - 1) & !(PAGE_SIZE - 1));
            if !mem.is_mapped(addr, end - addr) {
                return -ENOMEM;
            }
            if !self.file_maps.overlaps(addr, end) {
                let _ = mem.discard(addr, end - addr);
            }
        }
        0
    }

    fn sys_mprotect(&mut self, mem: &mut Memory, addr: u64, len: u64, prot: u64) -> i64 {
        const PROT_WRITE: u64 = 2;
        if addr % PAGE_SIZE != 0 {
            return -EINVAL;
        }
        if len == 0 {
            return 0;
        }
        let end = addr.saturating_add(len.saturating_add(PAGE_SIZE - 1) & !(PAGE_SIZE - 1));
        if prot & PROT_WRITE != 0 && self.shared.overlaps(addr, end) {
            // a shared file mapping's stores would not reach the file: refused, never lost
            return -EACCES;
        }
        match mem.protect(addr, len, prot_to_perm(prot)) {
            Ok(()) => 0,
            Err(_) => -ENOMEM,
        }
    }

    /// mremap: shrink in place, grow in place, or move (MREMAP_MAYMOVE). Moving relinks the
    /// pages; nothing the size of the mapping is allocated on the host, and every length is
    /// checked against the address space and the memory limit first.
    fn sys_mremap(
        &mut self,
        mem: &mut Memory,
        old: u64,
        old_len: u64,
        new_len: u64,
        flags: u64,
    ) -> i64 {
        const MREMAP_MAYMOVE: u64 = 1;
        if old % PAGE_SIZE != 0 || new_len == 0 || flags & !MREMAP_MAYMOVE != 0 {
            return -EINVAL; // MREMAP_FIXED and MREMAP_DONTUNMAP are not supported
        }
        let (Some(old_len), Some(new_len)) = (
            old_len.checked_next_multiple_of(PAGE_SIZE),
            new_len.checked_next_multiple_of(PAGE_SIZE),
        ) else {
            return -EINVAL;
        };
        if old_len == 0 || old.checked_add(old_len).is_none_or(|e| e > USER_TOP) {
            return -EINVAL;
        }
        if !mem.is_mapped(old, old_len) {
            return -EFAULT;
        }
        if new_len <= old_len {
            if new_len < old_len {
                let _ = mem.unmap(old + new_len, old_len - new_len);
                self.forget_ranges(old + new_len, old + old_len);
            }
            return old as i64;
        }
        if new_len > self.memory_limit {
            return -ENOMEM;
        }
        let p = mem.perm_at(old);
        let grow = new_len - old_len;
        if old
            .checked_add(new_len)
            .is_some_and(|e| e <= USER_TOP && mem.is_free(old + old_len, grow))
        {
            return match mem.map(old + old_len, grow, p) {
                Ok(()) => old as i64,
                Err(_) => -ENOMEM,
            };
        }
        if flags & MREMAP_MAYMOVE == 0 {
            return -ENOMEM;
        }
        if mem.mapped_pages() + grow / PAGE_SIZE > mem.limit_bytes() / PAGE_SIZE {
            return -ENOMEM;
        }
        let Some(new) = self.find_free(mem, new_len) else {
            return -ENOMEM;
        };
        if mem.move_pages(old, old_len, new).is_err() {
            return -ENOMEM;
        }
        // a file mapping moved stays one (its grown tail is new, anonymous memory)
        let (shared, file) = (
            self.shared.overlaps(old, old + old_len),
            self.file_maps.overlaps(old, old + old_len),
        );
        let (key, file_key) = (self.shared.key_at(old), self.file_maps.key_at(old));
        self.forget_ranges(old, old + old_len);
        if shared {
            let _ = self.shared.insert_file(new, new + old_len, key);
        }
        if file {
            let _ = self.file_maps.insert_file(new, new + old_len, file_key);
        }
        match mem.map(new + old_len, grow, p) {
            Ok(()) => new as i64,
            Err(_) => {
                // cannot happen after the budget check above; undo rather than lose the data
                let _ = mem.move_pages(new, old_len, old);
                -ENOMEM
            }
        }
    }

    /// prlimit64 on this process: the limits it sets are kept and those the machine can
    /// enforce are: RLIMIT_NOFILE (descriptor numbers), RLIMIT_DATA (the program break and
    /// private writable mappings) and RLIMIT_AS (everything mapped), on top of
    /// `--memory-limit`. A soft limit above the hard one, or a hard one raised, is EINVAL /
    /// EPERM as on Linux.
    fn sys_prlimit64(
        &mut self,
        mem: &mut Memory,
        pid: u64,
        resource: u64,
        new: u64,
        old: u64,
    ) -> i64 {
        const EPERM_: i64 = EPERM;
        if pid != 0 && pid as i64 != self.pid() {
            return -ESRCH;
        }
        let Some(&(cur, max)) = self.rlimits.get(resource as usize) else {
            return -EINVAL;
        };
        let set = if new != 0 {
            let (Ok(c), Ok(m)) = (mem.load_u64(new), mem.load_u64(new.wrapping_add(8))) else {
                return -EFAULT;
            };
            if c > m {
                return -EINVAL;
            }
            if m > max {
                return -EPERM_;
            }
            Some((c, m))
        } else {
            None
        };
        if old != 0 {
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&u64::to_le_bytes(cur));
            b[8..].copy_from_slice(&u64::to_le_bytes(max));
            if mem.write_bytes(old, &b).is_err() {
                return -EFAULT;
            }
        }
        if let Some(l) = set {
            self.rlimits[resource as usize] = l;
        }
        0
    }

    /// The soft limit of `resource`.
    fn rlimit(&self, resource: usize) -> u64 {
        self.rlimits.get(resource).map_or(u64::MAX, |l| l.0)
    }

    /// Whether mapping `len` more bytes stays within RLIMIT_AS (and RLIMIT_DATA for a
    /// private writable mapping).
    fn within_rlimits(&self, mem: &Memory, len: u64, data: bool) -> bool {
        let now = mem.mapped_pages().saturating_mul(PAGE_SIZE);
        let total = now.saturating_add(len);
        total <= self.rlimit(RLIMIT_AS) && (!data || total <= self.rlimit(RLIMIT_DATA))
    }

    fn sys_getrandom(&mut self, mem: &mut Memory, buf: u64, len: u64) -> i64 {
        let n = (len as usize).min(MAX_IO);
        let mut tmp = vec![0u8; n];
        self.random_bytes(&mut tmp);
        match mem.write_bytes(buf, &tmp) {
            Ok(()) => n as i64,
            Err(_) => -EFAULT,
        }
    }

    fn sys_clock_gettime(&mut self, mem: &mut Memory, clock: u64, tp: u64, instret: u64) -> i64 {
        let ns = match clock {
            0 | 5 | 8 => self.realtime_ns(instret), // REALTIME, REALTIME_COARSE, REALTIME_ALARM
            1 | 4 | 6 | 7 | 2 | 3 => self.monotonic_ns(instret), // MONOTONIC*, BOOTTIME, CPUTIME
            _ => return -EINVAL,
        };
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
        b[8..].copy_from_slice(&(ns % 1_000_000_000).to_le_bytes());
        match mem.write_bytes(tp, &b) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    fn sys_gettimeofday(&mut self, mem: &mut Memory, tv: u64, instret: u64) -> i64 {
        if tv == 0 {
            return 0;
        }
        let ns = self.realtime_ns(instret);
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
        b[8..].copy_from_slice(&((ns % 1_000_000_000) / 1000).to_le_bytes());
        match mem.write_bytes(tv, &b) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    fn sys_uname(&mut self, mem: &mut Memory, buf: u64) -> i64 {
        let mut b = [0u8; 65 * 6];
        for (i, s) in [
            "Linux",
            "outcrop",
            "6.1.0-outcrop",
            "#1 SMP",
            "riscv64",
            "(none)",
        ]
        .iter()
        .enumerate()
        {
            b[65 * i..65 * i + s.len()].copy_from_slice(s.as_bytes());
        }
        match mem.write_bytes(buf, &b) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    fn sys_sysinfo(&mut self, mem: &mut Memory, buf: u64, instret: u64) -> i64 {
        let mut b = [0u8; 112];
        b[..8].copy_from_slice(&(self.monotonic_ns(instret) / 1_000_000_000).to_le_bytes());
        b[32..40].copy_from_slice(&self.memory_limit.to_le_bytes()); // totalram
        let free = self
            .memory_limit
            .saturating_sub(mem.mapped_pages() * PAGE_SIZE);
        b[40..48].copy_from_slice(&free.to_le_bytes()); // freeram
        b[80..82].copy_from_slice(&1u16.to_le_bytes()); // procs
        b[104..108].copy_from_slice(&1u32.to_le_bytes()); // mem_unit
        match mem.write_bytes(buf, &b) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    /// The action for signal `sig` (1..=64; the default action otherwise).
    pub fn action(&self, sig: u64) -> SigAction {
        self.actions.get(sig as usize).copied().unwrap_or_default()
    }
}

fn prot_to_perm(prot: u64) -> u8 {
    let mut p = 0;
    if prot & 1 != 0 {
        p |= perm::R;
    }
    if prot & 2 != 0 {
        p |= perm::W;
    }
    if prot & 4 != 0 {
        p |= perm::X;
    }
    p
}

fn errno(e: &std::io::Error) -> i64 {
    e.raw_os_error().map_or(EPERM, i64::from)
}

/// The `stat` fields, from std's or cap-std's metadata.
trait StatFields {
    fn fields(&self) -> [u64; 16];
}

macro_rules! stat_fields {
    ($t:ty, $ext:path) => {
        impl StatFields for $t {
            fn fields(&self) -> [u64; 16] {
                use $ext as _;
                [
                    self.dev(),
                    self.ino(),
                    u64::from(self.mode()),
                    self.nlink(),
                    u64::from(self.uid()),
                    u64::from(self.gid()),
                    self.rdev(),
                    self.size(),
                    self.blksize(),
                    self.blocks(),
                    self.atime() as u64,
                    self.atime_nsec() as u64,
                    self.mtime() as u64,
                    self.mtime_nsec() as u64,
                    self.ctime() as u64,
                    self.ctime_nsec() as u64,
                ]
            }
        }
    };
}
stat_fields!(std::fs::Metadata, std::os::unix::fs::MetadataExt);
stat_fields!(cap_std::fs::Metadata, cap_std::fs::MetadataExt);

/// asm-generic system call names, numbers 0–243 (`include/uapi/asm-generic/unistd.h`).
const SYSCALLS_0: &[&str] = &[
    "io_setup",
    "io_destroy",
    "io_submit",
    "io_cancel",
    "io_getevents",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "getxattr",
    "lgetxattr",
    "fgetxattr",
    "listxattr",
    "llistxattr",
    "flistxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "getcwd",
    "lookup_dcookie",
    "eventfd2",
    "epoll_create1",
    "epoll_ctl",
    "epoll_pwait",
    "dup",
    "dup3",
    "fcntl",
    "inotify_init1",
    "inotify_add_watch",
    "inotify_rm_watch",
    "ioctl",
    "ioprio_set",
    "ioprio_get",
    "flock",
    "mknodat",
    "mkdirat",
    "unlinkat",
    "symlinkat",
    "linkat",
    "renameat",
    "umount2",
    "mount",
    "pivot_root",
    "nfsservctl",
    "statfs",
    "fstatfs",
    "truncate",
    "ftruncate",
    "fallocate",
    "faccessat",
    "chdir",
    "fchdir",
    "chroot",
    "fchmod",
    "fchmodat",
    "fchownat",
    "fchown",
    "openat",
    "close",
    "vhangup",
    "pipe2",
    "quotactl",
    "getdents64",
    "lseek",
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "preadv",
    "pwritev",
    "sendfile",
    "pselect6",
    "ppoll",
    "signalfd4",
    "vmsplice",
    "splice",
    "tee",
    "readlinkat",
    "newfstatat",
    "fstat",
    "sync",
    "fsync",
    "fdatasync",
    "sync_file_range",
    "timerfd_create",
    "timerfd_settime",
    "timerfd_gettime",
    "utimensat",
    "acct",
    "capget",
    "capset",
    "personality",
    "exit",
    "exit_group",
    "waitid",
    "set_tid_address",
    "unshare",
    "futex",
    "set_robust_list",
    "get_robust_list",
    "nanosleep",
    "getitimer",
    "setitimer",
    "kexec_load",
    "init_module",
    "delete_module",
    "timer_create",
    "timer_gettime",
    "timer_getoverrun",
    "timer_settime",
    "timer_delete",
    "clock_settime",
    "clock_gettime",
    "clock_getres",
    "clock_nanosleep",
    "syslog",
    "ptrace",
    "sched_setparam",
    "sched_setscheduler",
    "sched_getscheduler",
    "sched_getparam",
    "sched_setaffinity",
    "sched_getaffinity",
    "sched_yield",
    "sched_get_priority_max",
    "sched_get_priority_min",
    "sched_rr_get_interval",
    "restart_syscall",
    "kill",
    "tkill",
    "tgkill",
    "sigaltstack",
    "rt_sigsuspend",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigpending",
    "rt_sigtimedwait",
    "rt_sigqueueinfo",
    "rt_sigreturn",
    "setpriority",
    "getpriority",
    "reboot",
    "setregid",
    "setgid",
    "setreuid",
    "setuid",
    "setresuid",
    "getresuid",
    "setresgid",
    "getresgid",
    "setfsuid",
    "setfsgid",
    "times",
    "setpgid",
    "getpgid",
    "getsid",
    "setsid",
    "getgroups",
    "setgroups",
    "uname",
    "sethostname",
    "setdomainname",
    "getrlimit",
    "setrlimit",
    "getrusage",
    "umask",
    "prctl",
    "getcpu",
    "gettimeofday",
    "settimeofday",
    "adjtimex",
    "getpid",
    "getppid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "gettid",
    "sysinfo",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    "msgget",
    "msgctl",
    "msgrcv",
    "msgsnd",
    "semget",
    "semctl",
    "semtimedop",
    "semop",
    "shmget",
    "shmctl",
    "shmat",
    "shmdt",
    "socket",
    "socketpair",
    "bind",
    "listen",
    "accept",
    "connect",
    "getsockname",
    "getpeername",
    "sendto",
    "recvfrom",
    "setsockopt",
    "getsockopt",
    "shutdown",
    "sendmsg",
    "recvmsg",
    "readahead",
    "brk",
    "munmap",
    "mremap",
    "add_key",
    "request_key",
    "keyctl",
    "clone",
    "execve",
    "mmap",
    "fadvise64",
    "swapon",
    "swapoff",
    "mprotect",
    "msync",
    "mlock",
    "munlock",
    "mlockall",
    "munlockall",
    "mincore",
    "madvise",
    "remap_file_pages",
    "mbind",
    "get_mempolicy",
    "set_mempolicy",
    "migrate_pages",
    "move_pages",
    "rt_tgsigqueueinfo",
    "perf_event_open",
    "accept4",
    "recvmmsg",
];
/// Numbers 260–294.
const SYSCALLS_260: &[&str] = &[
    "wait4",
    "prlimit64",
    "fanotify_init",
    "fanotify_mark",
    "name_to_handle_at",
    "open_by_handle_at",
    "clock_adjtime",
    "syncfs",
    "setns",
    "sendmmsg",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "finit_module",
    "sched_setattr",
    "sched_getattr",
    "renameat2",
    "seccomp",
    "getrandom",
    "memfd_create",
    "bpf",
    "execveat",
    "userfaultfd",
    "membarrier",
    "mlock2",
    "copy_file_range",
    "preadv2",
    "pwritev2",
    "pkey_mprotect",
    "pkey_alloc",
    "pkey_free",
    "statx",
    "io_pgetevents",
    "rseq",
    "kexec_file_load",
];
/// Numbers 424–462.
const SYSCALLS_424: &[&str] = &[
    "pidfd_send_signal",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "pidfd_open",
    "clone3",
    "close_range",
    "openat2",
    "pidfd_getfd",
    "faccessat2",
    "process_madvise",
    "epoll_pwait2",
    "mount_setattr",
    "quotactl_fd",
    "landlock_create_ruleset",
    "landlock_add_rule",
    "landlock_restrict_self",
    "memfd_secret",
    "process_mrelease",
    "futex_waitv",
    "set_mempolicy_home_node",
    "cachestat",
    "fchmodat2",
    "map_shadow_stack",
    "futex_wake",
    "futex_wait",
    "futex_requeue",
    "statmount",
    "listmount",
    "lsm_get_self_attr",
    "lsm_set_self_attr",
    "lsm_list_modules",
    "mseal",
];

/// The Linux name of RISC-V (asm-generic) system call `nr`, for messages and statistics;
/// `"unknown"` for numbers Linux does not define on riscv64.
pub fn syscall_name(nr: u64) -> &'static str {
    let at = |table: &[&'static str], base: u64| {
        nr.checked_sub(base)
            .and_then(|i| table.get(usize::try_from(i).ok()?).copied())
    };
    match nr {
        258 => "riscv_hwprobe",
        259 => "riscv_flush_icache",
        _ => at(SYSCALLS_0, 0)
            .or_else(|| at(SYSCALLS_260, 260))
            .or_else(|| at(SYSCALLS_424, 424))
            .unwrap_or("unknown"),
    }
}

#[cfg(test)]
mod tests {
    use super::syscall_name;

    /// Every number Linux defines on riscv64 has its name (138 was "unknown" once).
    #[test]
    fn system_calls_are_named_by_their_linux_names() {
        for (nr, name) in [
            (0, "io_setup"),
            (56, "openat"),
            (63, "read"),
            (93, "exit"),
            (138, "rt_sigqueueinfo"),
            (172, "getpid"),
            (222, "mmap"),
            (243, "recvmmsg"),
            (258, "riscv_hwprobe"),
            (260, "wait4"),
            (293, "rseq"),
            (424, "pidfd_send_signal"),
            (435, "clone3"),
            (462, "mseal"),
        ] {
            assert_eq!(syscall_name(nr), name, "{nr}");
        }
        for nr in [244, 257, 295, 423, 463, u64::MAX] {
            assert_eq!(syscall_name(nr), "unknown", "{nr}");
        }
    }
}
