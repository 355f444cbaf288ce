//! Linux system calls for static riscv64 glibc programs (asm-generic numbers; see
//! `shared/notes/riscv-linux.md`), file descriptors, and the sandbox.
//!
//! Sandbox: the guest sees only host paths granted with [`Sandbox::allow_read`] (read-only)
//! or [`Sandbox::allow_write`] (read-write), plus the stdio streams it was given. Paths are
//! resolved against the host's working directory and canonicalized (symlinks and `..`
//! resolved) before the check, so a granted directory cannot be escaped. Everything else
//! fails with `EACCES`. Unknown system calls return `ENOSYS` with a one-time warning.
//!
//! Determinism: with [`KernelConfig::deterministic`], clocks derive from the instruction count
//! and random bytes from a fixed seed, so runs are byte-identical.

use crate::memory::{perm, Memory, PAGE_SIZE};
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

// errno values (asm-generic)
const EPERM: i64 = 1;
const ENOENT: i64 = 2;
const EBADF: i64 = 9;
const ENOMEM: i64 = 12;
const EACCES: i64 = 13;
const EFAULT: i64 = 14;
const EINVAL: i64 = 22;
const EMFILE: i64 = 24;
const ENOTTY: i64 = 25;
const ESPIPE: i64 = 29;
const ENOSYS: i64 = 38;

const AT_FDCWD: i64 = -100;
const AT_EMPTY_PATH: u64 = 0x1000;
const MAX_FDS: usize = 1024;
const MAX_IO: usize = 1 << 20;

/// Paths the guest may open.
#[derive(Clone, Debug, Default)]
pub struct Sandbox {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
}

impl Sandbox {
    /// No host paths at all.
    pub fn new() -> Self {
        Self::default()
    }
    /// Grants read-only access to `path` (a file or a directory tree).
    pub fn allow_read(&mut self, path: &Path) -> std::io::Result<()> {
        self.read.push(std::fs::canonicalize(path)?);
        Ok(())
    }
    /// Grants read-write access to `path` (a file or a directory tree).
    pub fn allow_write(&mut self, path: &Path) -> std::io::Result<()> {
        self.write.push(std::fs::canonicalize(path)?);
        Ok(())
    }

    /// Canonical host path for `path` if it may be accessed (`write` for writing/creating).
    fn check(&self, path: &Path, write: bool) -> Result<PathBuf, i64> {
        let abs = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir().map_err(|_| ENOENT)?.join(path)
        };
        let canonical = match std::fs::canonicalize(&abs) {
            Ok(p) => p,
            Err(_) => {
                // not existing yet (O_CREAT): canonicalize the parent, keep the final name
                let name = match abs.components().next_back() {
                    Some(Component::Normal(n)) => n.to_os_string(),
                    _ => return Err(ENOENT),
                };
                let parent = abs.parent().ok_or(ENOENT)?;
                std::fs::canonicalize(parent)
                    .map_err(|_| ENOENT)?
                    .join(name)
            }
        };
        let inside = |roots: &[PathBuf]| roots.iter().any(|r| canonical.starts_with(r));
        if inside(&self.write) || (!write && inside(&self.read)) {
            Ok(canonical)
        } else {
            Err(EACCES)
        }
    }
}

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
    /// stdin/stdout/stderr are (as qemu-user does). Tests fix it, since glibc's buffering
    /// (and so the instruction stream) depends on it.
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
}

/// What a system call did to the run.
pub enum SyscallOutcome {
    /// Return to the guest (the result is in a0).
    Continue,
    /// The guest exited with this status.
    Exit(i32),
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
    sigmask: u64,
    start: std::time::Instant,
    memory_limit: u64,
    /// Every distinct system call number the guest made, with counts (for statistics).
    pub syscall_counts: std::collections::BTreeMap<u64, u64>,
}

/// Base of the region where mmap places anonymous mappings.
pub const MMAP_BASE: u64 = 0x20_0000_0000;

impl Kernel {
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
        Kernel {
            config,
            fds: vec![Some(Fd::Stdin), Some(Fd::Stdout), Some(Fd::Stderr)],
            brk_start,
            brk: brk_start,
            mmap_next: MMAP_BASE,
            warned: HashSet::new(),
            rng,
            sigmask: 0,
            start: std::time::Instant::now(),
            memory_limit,
            syscall_counts: Default::default(),
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

    /// Nanoseconds since start (monotonic): instructions in deterministic mode.
    fn monotonic_ns(&self, instret: u64) -> u64 {
        if self.config.deterministic {
            instret
        } else {
            self.start.elapsed().as_nanos() as u64
        }
    }

    fn realtime_ns(&self, instret: u64) -> u64 {
        if self.config.deterministic {
            1_700_000_000_000_000_000 + instret
        } else {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
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
        let r: i64 = match nr {
            93 | 94 => return SyscallOutcome::Exit((a[0] & 0xff) as i32),
            63 => self.sys_read(mem, a[0], a[1], a[2]),
            64 => self.sys_write(mem, a[0], a[1], a[2]),
            66 => self.sys_writev(mem, a[0], a[1], a[2]),
            56 => self.sys_openat(mem, a[0] as i64, a[1], a[2], a[3]),
            57 => self.sys_close(a[0]),
            62 => self.sys_lseek(a[0], a[1] as i64, a[2]),
            79 => self.sys_newfstatat(mem, a[0] as i64, a[1], a[2], a[3]),
            80 => self.sys_fstat(mem, a[0], a[1]),
            29 => -ENOTTY,
            48 => self.sys_faccessat(mem, a[0] as i64, a[1]),
            35 => self.sys_unlinkat(mem, a[0] as i64, a[1], a[2]),
            78 => self.sys_readlinkat(mem, a[1], a[2], a[3]),
            214 => self.sys_brk(mem, a[0]) as i64,
            222 => self.sys_mmap(mem, a[0], a[1], a[2], a[3], a[4] as i64),
            215 => match mem.unmap(a[0] & !(PAGE_SIZE - 1), a[1]) {
                Ok(()) => 0,
                Err(_) => -EINVAL,
            },
            216 => self.sys_mremap(mem, a[0], a[1], a[2], a[3]),
            226 => match mem.protect(a[0], a[1], prot_to_perm(a[2])) {
                Ok(()) => 0,
                Err(_) => -ENOMEM,
            },
            233 => 0, // madvise
            96 | 172 | 178 => self.pid(),
            99 => -ENOSYS,  // set_robust_list: no futexes (as qemu-user)
            174..=177 => 0, // getuid, geteuid, getgid, getegid
            261 => self.sys_prlimit64(mem, a[1], a[3]),
            278 => self.sys_getrandom(mem, a[0], a[1]),
            113 => self.sys_clock_gettime(mem, a[0], a[1], instret),
            169 => self.sys_gettimeofday(mem, a[0], instret),
            160 => self.sys_uname(mem, a[0]),
            179 => self.sys_sysinfo(mem, a[0], instret),
            134 => self.sys_rt_sigaction(mem, a[2]),
            135 => self.sys_rt_sigprocmask(mem, a[0], a[1], a[2]),
            129..=131 => {
                // kill/tkill/tgkill of itself: no signal delivery; a fatal signal ends the run
                let sig = if nr == 131 { a[2] } else { a[1] };
                if sig == 0 {
                    0
                } else {
                    return SyscallOutcome::Exit(128 + (sig & 0x7f) as i32);
                }
            }
            258 | 293 => -ENOSYS, // riscv_hwprobe, rseq: glibc copes
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
        };
        x[10] = r as u64;
        SyscallOutcome::Continue
    }

    fn pid(&self) -> i64 {
        if self.config.deterministic {
            1000
        } else {
            i64::from(std::process::id())
        }
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
            Ok(Fd::Stdin) => return -EBADF,
        };
        match r {
            Ok(()) => data.len() as i64,
            Err(e) => -errno(&e),
        }
    }

    fn sys_write(&mut self, mem: &mut Memory, fd: u64, buf: u64, count: u64) -> i64 {
        let n = (count as usize).min(MAX_IO);
        let mut tmp = vec![0u8; n];
        if mem.read_bytes(buf, &mut tmp).is_err() {
            return -EFAULT;
        }
        self.write_fd(fd, &tmp)
    }

    fn sys_writev(&mut self, mem: &mut Memory, fd: u64, iov: u64, cnt: u64) -> i64 {
        if cnt > 1024 {
            return -EINVAL;
        }
        let mut data = Vec::new();
        for i in 0..cnt {
            let (Ok(base), Ok(len)) = (mem.load_u64(iov + 16 * i), mem.load_u64(iov + 16 * i + 8))
            else {
                return -EFAULT;
            };
            let len = len as usize;
            if data.len() + len > MAX_IO {
                return -EINVAL;
            }
            let start = data.len();
            data.resize(start + len, 0);
            if mem.read_bytes(base, &mut data[start..]).is_err() {
                return -EFAULT;
            }
        }
        self.write_fd(fd, &data)
    }

    fn guest_path(&self, mem: &mut Memory, dirfd: i64, addr: u64) -> Result<PathBuf, i64> {
        let bytes = mem.read_cstr(addr, 4096).map_err(|_| EFAULT)?;
        // Linux paths are bytes, not necessarily UTF-8
        let p = PathBuf::from(std::ffi::OsStr::from_bytes(&bytes));
        if p.is_absolute() || dirfd == AT_FDCWD {
            Ok(p)
        } else {
            Err(EBADF) // directory file descriptors are not supported
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
        let acc = flags & 3;
        let write = acc != 0 || flags & 0x40 != 0 || flags & 0x200 != 0;
        let host = match self.config.sandbox.check(&path, write) {
            Ok(h) => h,
            Err(e) => return -e,
        };
        let mut o = OpenOptions::new();
        o.read(acc == 0 || acc == 2)
            .write(acc == 1 || acc == 2)
            .append(flags & 0x400 != 0)
            .truncate(flags & 0x200 != 0)
            .mode((mode & 0o7777) as u32);
        if flags & 0x40 != 0 {
            if flags & 0x80 != 0 {
                o.create_new(true);
            } else {
                o.create(true);
            }
        }
        match o.open(&host) {
            Ok(f) => {
                if flags & 0x10000 != 0 && !f.metadata().is_ok_and(|m| m.is_dir()) {
                    return -20; // ENOTDIR
                }
                self.install(Fd::File(f))
            }
            Err(e) => -errno(&e),
        }
    }

    fn install(&mut self, fd: Fd) -> i64 {
        if let Some(i) = self.fds.iter().position(Option::is_none) {
            self.fds[i] = Some(fd);
            return i as i64;
        }
        if self.fds.len() >= MAX_FDS {
            return -EMFILE;
        }
        self.fds.push(Some(fd));
        (self.fds.len() - 1) as i64
    }

    fn sys_close(&mut self, fd: u64) -> i64 {
        match self.fds.get_mut(fd as usize) {
            Some(slot @ Some(_)) => {
                *slot = None;
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
            Ok(_) => -ESPIPE,
            Err(e) => -e,
        }
    }

    fn write_stat(mem: &mut Memory, buf: u64, m: &std::fs::Metadata) -> i64 {
        let mut s = [0u8; 128];
        let mut put = |off: usize, v: &[u8]| s[off..off + v.len()].copy_from_slice(v);
        put(0, &m.dev().to_le_bytes());
        put(8, &m.ino().to_le_bytes());
        put(16, &m.mode().to_le_bytes());
        put(20, &(m.nlink() as u32).to_le_bytes());
        put(24, &m.uid().to_le_bytes());
        put(28, &m.gid().to_le_bytes());
        put(32, &m.rdev().to_le_bytes());
        put(48, &m.size().to_le_bytes());
        put(56, &(m.blksize() as i32).to_le_bytes());
        put(64, &m.blocks().to_le_bytes());
        put(72, &m.atime().to_le_bytes());
        put(80, &(m.atime_nsec() as u64).to_le_bytes());
        put(88, &m.mtime().to_le_bytes());
        put(96, &(m.mtime_nsec() as u64).to_le_bytes());
        put(104, &m.ctime().to_le_bytes());
        put(112, &(m.ctime_nsec() as u64).to_le_bytes());
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
            Ok(_) => match self.config.stdio_mode {
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
        let path = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        match self.config.sandbox.check(&path, false) {
            Ok(host) => match std::fs::metadata(host) {
                Ok(m) => Self::write_stat(mem, buf, &m),
                Err(e) => -errno(&e),
            },
            Err(e) => -e,
        }
    }

    fn sys_faccessat(&mut self, mem: &mut Memory, dirfd: i64, path: u64) -> i64 {
        let path = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        match self.config.sandbox.check(&path, false) {
            Ok(host) if host.exists() => 0,
            Ok(_) => -ENOENT,
            Err(e) => -e,
        }
    }

    fn sys_unlinkat(&mut self, mem: &mut Memory, dirfd: i64, path: u64, flags: u64) -> i64 {
        let path = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        match self.config.sandbox.check(&path, true) {
            Ok(host) => {
                let r = if flags & 0x200 != 0 {
                    std::fs::remove_dir(host)
                } else {
                    std::fs::remove_file(host)
                };
                match r {
                    Ok(()) => 0,
                    Err(e) => -errno(&e),
                }
            }
            Err(e) => -e,
        }
    }

    fn sys_readlinkat(&mut self, mem: &mut Memory, path: u64, buf: u64, size: u64) -> i64 {
        let Ok(p) = mem.read_cstr(path, 4096) else {
            return -EFAULT;
        };
        if p != b"/proc/self/exe" {
            return -EINVAL; // only the program's own path is visible
        }
        let exe = self
            .config
            .exe_path
            .to_string_lossy()
            .into_owned()
            .into_bytes();
        let n = exe.len().min(size as usize);
        match mem.write_bytes(buf, &exe[..n]) {
            Ok(()) => n as i64,
            Err(_) => -EFAULT,
        }
    }

    fn sys_brk(&mut self, mem: &mut Memory, addr: u64) -> u64 {
        if addr < self.brk_start {
            return self.brk;
        }
        let old_end = self.brk.next_multiple_of(PAGE_SIZE);
        let new_end = addr.next_multiple_of(PAGE_SIZE);
        if new_end > old_end {
            if !mem.is_free(old_end, new_end - old_end)
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

    fn sys_mmap(
        &mut self,
        mem: &mut Memory,
        addr: u64,
        len: u64,
        prot: u64,
        flags: u64,
        fd: i64,
    ) -> i64 {
        const MAP_FIXED: u64 = 0x10;
        const MAP_ANONYMOUS: u64 = 0x20;
        if len == 0 || len > self.memory_limit {
            return if len == 0 { -EINVAL } else { -ENOMEM };
        }
        if flags & MAP_ANONYMOUS == 0 || fd != -1 {
            return -19; // ENODEV: file-backed mappings are not supported
        }
        let len = len.next_multiple_of(PAGE_SIZE);
        let p = prot_to_perm(prot);
        let start = if flags & MAP_FIXED != 0 {
            if addr % PAGE_SIZE != 0 {
                return -EINVAL;
            }
            let _ = mem.unmap(addr, len);
            addr
        } else {
            match self.find_free(mem, len) {
                Some(a) => a,
                None => return -ENOMEM,
            }
        };
        match mem.map(start, len, p) {
            Ok(()) => start as i64,
            Err(_) => -ENOMEM,
        }
    }

    fn find_free(&mut self, mem: &Memory, len: u64) -> Option<u64> {
        let mut a = self.mmap_next;
        for _ in 0..1 << 16 {
            if mem.is_free(a, len) {
                self.mmap_next = a + len;
                return Some(a);
            }
            a = a.checked_add(PAGE_SIZE * 16)?;
        }
        None
    }

    fn sys_mremap(
        &mut self,
        mem: &mut Memory,
        old: u64,
        old_len: u64,
        new_len: u64,
        flags: u64,
    ) -> i64 {
        if old % PAGE_SIZE != 0 || new_len == 0 {
            return -EINVAL;
        }
        let old_len = old_len.next_multiple_of(PAGE_SIZE);
        let new_len = new_len.next_multiple_of(PAGE_SIZE);
        if new_len <= old_len {
            if new_len < old_len {
                let _ = mem.unmap(old + new_len, old_len - new_len);
            }
            return old as i64;
        }
        let p = mem.perm_at(old);
        if mem.is_free(old + old_len, new_len - old_len) {
            return match mem.map(old + old_len, new_len - old_len, p) {
                Ok(()) => old as i64,
                Err(_) => -ENOMEM,
            };
        }
        if flags & 1 == 0 {
            return -ENOMEM; // MREMAP_MAYMOVE not given
        }
        let Some(new) = self.find_free(mem, new_len) else {
            return -ENOMEM;
        };
        let mut data = vec![0u8; old_len as usize];
        if mem.read_bytes(old, &mut data).is_err() || mem.map(new, new_len, p).is_err() {
            return -ENOMEM;
        }
        if mem.poke_bytes(new, &data).is_err() {
            return -EFAULT;
        }
        let _ = mem.unmap(old, old_len);
        new as i64
    }

    fn sys_prlimit64(&mut self, mem: &mut Memory, resource: u64, old: u64) -> i64 {
        if old != 0 {
            let (cur, max) = match resource {
                3 => (8 << 20, u64::MAX), // RLIMIT_STACK
                7 => (1024, 1024),        // RLIMIT_NOFILE
                _ => (u64::MAX, u64::MAX),
            };
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&u64::to_le_bytes(cur));
            b[8..].copy_from_slice(&u64::to_le_bytes(max));
            if mem.write_bytes(old, &b).is_err() {
                return -EFAULT;
            }
        }
        0
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

    fn sys_rt_sigaction(&mut self, mem: &mut Memory, oldact: u64) -> i64 {
        // Handlers are accepted but never run (no signal delivery yet); old action: default.
        if oldact != 0 && mem.write_bytes(oldact, &[0u8; 32]).is_err() {
            return -EFAULT;
        }
        0
    }

    fn sys_rt_sigprocmask(&mut self, mem: &mut Memory, how: u64, set: u64, oldset: u64) -> i64 {
        if oldset != 0
            && mem
                .write_bytes(oldset, &self.sigmask.to_le_bytes())
                .is_err()
        {
            return -EFAULT;
        }
        if set != 0 {
            let Ok(s) = mem.load_u64(set) else {
                return -EFAULT;
            };
            self.sigmask = match how {
                0 => self.sigmask | s,
                1 => self.sigmask & !s,
                2 => s,
                _ => return -EINVAL,
            };
        }
        0
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

/// A name for the warning about an unknown system call.
fn syscall_name(nr: u64) -> &'static str {
    match nr {
        17 => "getcwd",
        23 => "dup",
        24 => "dup3",
        25 => "fcntl",
        34 => "mkdirat",
        46 => "ftruncate",
        59 => "pipe2",
        61 => "getdents64",
        67 => "pread64",
        68 => "pwrite64",
        73 => "ppoll",
        98 => "futex",
        101 => "nanosleep",
        124 => "sched_yield",
        132 => "sigaltstack",
        220 => "clone",
        221 => "execve",
        260 => "wait4",
        _ => "unknown",
    }
}
