//! The machine's own answers to a few `/proc` and `/sys` files programs read to size
//! themselves (docs/machine.md, "Files"): `/proc/meminfo` (the machine's memory limit and what
//! its processes map, as `sysinfo` says), `/proc/stat`, `/proc/loadavg`, `/proc/cpuinfo` (one hart and the
//! machine's extensions) and `/sys/devices/system/cpu/online`
//! and `possible` (one CPU, as `sched_getaffinity` says). They are generated when opened,
//! read-only, and never read from the host, so they are the same on every host and under
//! `--deterministic`; a grant of the host's `/proc` is not needed nor consulted for them.

use super::{Fd, Kernel};
use crate::memory::{Memory, PAGE_SIZE};
use std::sync::{Arc, Mutex};

const EACCES: i64 = 13;
const ENOENT: i64 = 2;
const O_ACCMODE: u64 = 3;
const O_CLOEXEC: u64 = 0o2000000;
const O_DIRECTORY: u64 = 0o200000;
const ENOTDIR: i64 = 20;

/// A directory entry as `getdents64` gives it: inode, `d_type`, name.
pub(super) type DirEntry = (u64, u8, Vec<u8>);
/// A generated directory's entries, shared by the descriptors of one open.
type Listing = Arc<Mutex<Vec<DirEntry>>>;

/// An open generated file: its bytes and the offset shared by its descriptors.
#[derive(Clone)]
pub(crate) struct ProcFile {
    data: Arc<Vec<u8>>,
    pos: Arc<Mutex<usize>>,
    /// A generated directory (`/proc/PID/fd`…: the pid and which) and its entries (inode,
    /// `d_type`, name) as listed when its offset was last at 0, `pos` counting them; `data`
    /// is then empty.
    dir: Option<(u32, PidFile, Listing)>,
    /// Opened by a thread's name (`task/TID`, `thread-self`): not a pidfd.
    thread_dir: bool,
}

impl ProcFile {
    /// The process whose `/proc/PID` directory this is (a pidfd, as Linux's
    /// `pidfd_send_signal` takes one).
    pub fn process_dir(&self) -> Option<u32> {
        match self.dir {
            Some((pid, PidFile::Dir, _)) if !self.thread_dir => Some(pid),
            _ => None,
        }
    }

    /// A generated directory (`read` is `EISDIR`, `getdents64` lists it).
    pub fn is_dir(&self) -> bool {
        self.dir.is_some()
    }

    /// `getdents64` of a generated directory: the records that fit in `count` bytes from the
    /// offset, which moves past them (`None`: not a directory). At offset 0 the listing is
    /// made again by `list`, as Linux lists the directory as it is when read.
    pub fn list(
        &self,
        count: usize,
        list: impl FnOnce(u32, PidFile) -> Result<Vec<DirEntry>, i64>,
    ) -> Option<Result<Vec<u8>, i64>> {
        let (pid, file, entries) = self.dir.as_ref()?;
        let mut pos = self
            .pos
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut entries = entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *pos == 0 {
            match list(*pid, *file) {
                Ok(e) => *entries = e,
                Err(e) => return Some(Err(e)),
            }
        }
        Some(super::files::dirents(&entries, &mut pos, count))
    }

    /// Reads from the offset into `out`.
    pub fn read(&self, out: &mut [u8]) -> usize {
        let mut pos = self
            .pos
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let start = (*pos).min(self.data.len());
        let n = out.len().min(self.data.len() - start);
        out[..n].copy_from_slice(&self.data[start..start + n]);
        *pos = start + n;
        n
    }

    /// `lseek`: the new offset (`whence` 0, 1, 2), or `None` if it would be negative.
    pub fn seek(&self, off: i64, whence: u64) -> Option<i64> {
        let mut pos = self
            .pos
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let base = match whence {
            0 => 0,
            1 => *pos as i64,
            2 => self.data.len() as i64,
            _ => return None,
        };
        let to = base.checked_add(off).filter(|&t| t >= 0)?;
        *pos = usize::try_from(to).ok()?;
        Some(to)
    }
}

/// A file the machine generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gen {
    Meminfo,
    Stat,
    Cpuinfo,
    Uptime,
    /// `/proc/loadavg`: no load (the machine runs one thread at a time, and `sysinfo` says
    /// 0), the live processes, the newest pid.
    Loadavg,
    /// A `/proc/sys` value or another fixed answer.
    Fixed(&'static [u8]),
    /// `/proc/sysvipc/shm`, `sem`, `msg`: the System V segments, sets and queues.
    SysvShm,
    SysvSem,
    SysvMsg,
    /// `/proc/PID/FILE` or `/proc/PID/task/TID/FILE` (`self` and `thread-self` resolved).
    Pid {
        pid: u32,
        tid: Option<u32>,
        file: PidFile,
    },
    /// A path under `/proc/PID` the machine does not generate: `ENOENT`, never the host's.
    Missing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PidFile {
    Stat,
    Status,
    Comm,
    Maps,
    /// `/proc/PID` and `/proc/PID/task/TID` themselves.
    Dir,
    /// The `fd`, `fdinfo` and `task` directories.
    FdDir,
    FdInfoDir,
    TaskDir,
    /// `fdinfo/FD`: the descriptor's offset and flags, an inotify instance's watches.
    FdInfo(u32),
}

/// Parses a decimal pid (no sign, no leading zero).
fn number(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 10 || s[0] == b'0' || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// What the machine answers for `path` (`None`: not one of its files), `pid`/`tid` being the
/// caller's.
fn generated(path: &[u8], pid: u32, tid: u32) -> Option<Gen> {
    let fixed = |b: &'static [u8]| Some(Gen::Fixed(b));
    match path {
        b"/proc/meminfo" => return Some(Gen::Meminfo),
        b"/proc/stat" => return Some(Gen::Stat),
        b"/proc/cpuinfo" => return Some(Gen::Cpuinfo),
        b"/proc/uptime" => return Some(Gen::Uptime),
        b"/proc/loadavg" => return Some(Gen::Loadavg),
        b"/proc/sysvipc/shm" => return Some(Gen::SysvShm),
        b"/proc/sysvipc/sem" => return Some(Gen::SysvSem),
        b"/proc/sysvipc/msg" => return Some(Gen::SysvMsg),
        b"/sys/devices/system/cpu/online" | b"/sys/devices/system/cpu/possible" => {
            return fixed(b"0\n")
        }
        b"/proc/sys/kernel/pid_max" => return fixed(b"4194304\n"),
        // Linux 5.18 and later: always 256 (RNDGETENTCNT agrees)
        b"/proc/sys/kernel/random/entropy_avail" => return fixed(b"256\n"),
        b"/proc/sys/kernel/tainted" => return fixed(b"0\n"),
        b"/proc/sys/kernel/hostname" => return fixed(b"outcrop\n"),
        b"/proc/sys/kernel/domainname" => return fixed(b"(none)\n"),
        b"/proc/sys/kernel/osrelease" => return fixed(b"6.1.0-outcrop\n"),
        b"/proc/sys/kernel/ostype" => return fixed(b"Linux\n"),
        b"/proc/sys/kernel/version" => return fixed(b"#1 SMP\n"),
        b"/proc/sys/kernel/core_pattern" => return fixed(b"core\n"),
        b"/proc/sys/kernel/shmmni" => return fixed(b"4096\n"),
        // Linux's defaults, as `shmctl(IPC_INFO)` says (the memory limit bounds a segment)
        b"/proc/sys/kernel/shmmax" | b"/proc/sys/kernel/shmall" => {
            return fixed(b"18446744073692774399\n")
        }
        b"/proc/sys/kernel/msgmni" => return fixed(b"1024\n"),
        // SEMMSL, SEMMNS, SEMOPM, SEMMNI: the machine's bounds (super::ipc)
        b"/proc/sys/kernel/sem" => return fixed(b"1024\t1048576\t500\t1024\n"),
        b"/proc/sys/kernel/msgmax" => return fixed(b"8192\n"),
        b"/proc/sys/kernel/msgmnb" => return fixed(b"16384\n"),
        b"/proc/sys/fs/pipe-max-size" => return fixed(b"1048576\n"),
        b"/proc/sys/fs/nr_open" => return fixed(b"1048576\n"),
        // the machine's inotify limits (super::inotify)
        b"/proc/sys/fs/inotify/max_queued_events" => return fixed(b"16384\n"),
        b"/proc/sys/fs/inotify/max_user_instances" => return fixed(b"128\n"),
        b"/proc/sys/fs/inotify/max_user_watches" => return fixed(b"8192\n"),
        b"/proc/sys/fs/pipe-user-pages-soft" => return fixed(b"16384\n"),
        b"/proc/sys/fs/pipe-user-pages-hard" => return fixed(b"0\n"),
        _ => {}
    }
    let rest = path.strip_prefix(b"/proc/")?;
    // a directory may be named with a trailing slash (`/proc/PID/task/`)
    let rest = rest.strip_suffix(b"/").unwrap_or(rest);
    let mut parts = rest.split(|&b| b == b'/');
    let head = parts.next()?;
    let (pid, mut tid) = match head {
        b"self" => (pid, None),
        b"thread-self" => (pid, Some(tid)),
        n => (number(n)?, None),
    };
    let mut name = parts.next().unwrap_or(b"");
    if name == b"task" && tid.is_none() {
        match parts.next().map(number) {
            Some(Some(t)) => tid = Some(t),
            Some(None) => return Some(Gen::Missing),
            None => {
                let file = PidFile::TaskDir;
                return Some(Gen::Pid { pid, tid, file });
            }
        }
        name = parts.next().unwrap_or(b"");
    }
    if matches!(name, b"fd" | b"fdinfo") && rest.ends_with(name) {
        let file = match name {
            b"fd" => PidFile::FdDir,
            _ => PidFile::FdInfoDir,
        };
        return Some(Gen::Pid { pid, tid, file });
    }
    if name == b"fdinfo" {
        let fd = parts
            .next()
            .and_then(|n| if n == b"0" { Some(0) } else { number(n) });
        return match (fd, parts.next()) {
            (Some(fd), None) => Some(Gen::Pid {
                pid,
                tid,
                file: PidFile::FdInfo(fd),
            }),
            _ => Some(Gen::Missing),
        };
    }
    if parts.next().is_some() {
        return Some(Gen::Missing);
    }
    let file = match name {
        b"" => PidFile::Dir,
        b"stat" => PidFile::Stat,
        b"status" => PidFile::Status,
        b"comm" => PidFile::Comm,
        b"maps" => PidFile::Maps,
        _ => return Some(Gen::Missing),
    };
    Some(Gen::Pid { pid, tid, file })
}

impl Kernel {
    /// The bytes of generated file `what` (`None`: no such process or thread).
    fn generate(&self, mem: &Memory, what: Gen, instret: u64) -> Option<Vec<u8>> {
        Some(match what {
            Gen::Meminfo => {
                let total = self.memory_limit / 1024;
                let free = self
                    .memory_limit
                    .saturating_sub(mem.mapped_pages() * PAGE_SIZE)
                    / 1024;
                let mut s = String::new();
                for (k, v) in [
                    ("MemTotal", total),
                    ("MemFree", free),
                    ("MemAvailable", free),
                    ("Buffers", 0),
                    ("Cached", 0),
                    ("SwapCached", 0),
                    ("Active", 0),
                    ("Inactive", 0),
                    ("SwapTotal", 0),
                    ("SwapFree", 0),
                    ("Dirty", 0),
                    ("Shmem", 0),
                    ("CommitLimit", total),
                    ("Committed_AS", total - free),
                    ("HugePages_Total", 0),
                    ("HugePages_Free", 0),
                    ("Hugepagesize", 2048),
                ] {
                    let unit = if k.starts_with("HugePages_") {
                        ""
                    } else {
                        " kB"
                    };
                    s.push_str(&format!("{:<16}{:>8}{unit}\n", format!("{k}:"), v));
                }
                s.into_bytes()
            }
            Gen::Stat => {
                // one CPU; its time in clock ticks (100 Hz) of machine time, all "user"
                let ticks = self.monotonic_ns(instret) / 10_000_000;
                format!(
                    "cpu  {ticks} 0 0 0 0 0 0 0 0 0\ncpu0 {ticks} 0 0 0 0 0 0 0 0 0\n\
                     intr 0\nctxt 0\nbtime 0\nprocesses {}\nprocs_running 1\n\
                     procs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n",
                    self.procs.history.len()
                )
                .into_bytes()
            }
            Gen::Cpuinfo => b"processor\t: 0\nhart\t\t: 0\n\
                isa\t\t: rv64imafdc_zicsr_zifencei_zba_zbb_zbc_zbs\nmmu\t\t: sv48\n\
                uarch\t\t: outcrop\n\n"
                .to_vec(),
            Gen::Uptime => {
                let cs = self.monotonic_ns(instret) / 10_000_000;
                format!("{}.{:02} 0.00\n", cs / 100, cs % 100).into_bytes()
            }
            Gen::Loadavg => {
                let procs = self.processes();
                let newest = procs.list.iter().map(|p| p.pid).max().unwrap_or(1);
                format!("0.00 0.00 0.00 1/{} {newest}\n", procs.live()).into_bytes()
            }
            Gen::Fixed(b) => b.to_vec(),
            Gen::SysvShm => self.shm_listing(),
            Gen::SysvSem => self.ipc_listing(true),
            Gen::SysvMsg => self.ipc_listing(false),
            Gen::Missing => return None,
            Gen::Pid { pid, tid, file } => self.pid_file(mem, pid, tid, file)?,
        })
    }

    /// `/proc/PID/FILE`, or a thread's under `task/TID`.
    fn pid_file(&self, mem: &Memory, pid: u32, tid: Option<u32>, file: PidFile) -> Option<Vec<u8>> {
        let v = self.process_view(pid)?;
        let thread = match tid {
            Some(t) => Some(v.threads.iter().find(|th| th.0 == t)?),
            None => v.threads.first(),
        };
        let comm = thread.map_or(&v.comm, |t| &t.1);
        let comm_text = String::from_utf8_lossy(comm);
        let id = thread.map_or(pid, |t| t.0);
        Some(match file {
            PidFile::Comm => [comm.as_slice(), b"\n"].concat(),
            PidFile::Stat => {
                // the 52 fields of proc(5); times, faults and sizes are 0
                // a thread's own state under task/TID
                let state = match (tid, thread) {
                    (Some(_), Some(t)) => t.4,
                    _ => v.state,
                };
                let mut s = format!(
                    "{id} ({comm_text}) {} {} {} {} 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 {} 0 0 0 0",
                    state as char,
                    v.ppid,
                    v.pgid,
                    v.sid,
                    v.threads.len().max(1)
                );
                s.push_str(&" 0".repeat(52 - 23));
                s.push('\n');
                s.into_bytes()
            }
            PidFile::Status => {
                let own = match (tid, thread) {
                    (Some(_), Some(t)) => t.4,
                    _ => v.state,
                };
                let state = match own {
                    b'R' => "R (running)",
                    b'S' => "S (sleeping)",
                    _ => "Z (zombie)",
                };
                let (blocked, pending) = thread.map_or((0, 0), |t| (t.2, t.3));
                format!(
                    "Name:\t{comm_text}\nUmask:\t{:04o}\nState:\t{state}\nTgid:\t{pid}\nNgid:\t0\n\
                     Pid:\t{id}\nPPid:\t{}\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n\
                     FDSize:\t64\nGroups:\t\nThreads:\t{}\nSigQ:\t0/63536\nSigPnd:\t{pending:016x}\n\
                     ShdPnd:\t0000000000000000\nSigBlk:\t{blocked:016x}\nSigIgn:\t0000000000000000\n\
                     SigCgt:\t0000000000000000\nCapInh:\t0000000000000000\n\
                     CapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n\
                     CapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\nNoNewPrivs:\t0\n\
                     Seccomp:\t0\nCpus_allowed:\t1\nCpus_allowed_list:\t0\n",
                    self.umask,
                    v.ppid,
                    v.threads.len().max(1)
                )
                .into_bytes()
            }
            PidFile::Maps => {
                // only the caller's own memory is at hand
                if pid != self.current_pid() {
                    return None;
                }
                self.maps(mem)
            }
            // directories: their entries, by `entries`
            PidFile::Dir | PidFile::FdDir | PidFile::FdInfoDir | PidFile::TaskDir => Vec::new(),
            PidFile::FdInfo(fd) => {
                // only the caller's own descriptors are at hand
                if pid != self.current_pid() {
                    return None;
                }
                self.fdinfo(fd as usize)?
            }
        })
    }

    /// `/proc/self/fdinfo/FD`: `pos`, `flags` (octal) and `mnt_id` as Linux prints them,
    /// then an inotify instance's `inotify wd:…` lines.
    fn fdinfo(&self, fd: usize) -> Option<Vec<u8>> {
        use std::io::Seek;
        let f = self.fds.get(fd)?.as_ref()?;
        let (pos, flags, extra) = match f {
            Fd::File(file) => (
                (&*file).stream_position().unwrap_or(0),
                rustix::fs::fcntl_getfl(file).map_or(2, |fl| fl.bits()),
                String::new(),
            ),
            Fd::Inotify(i) => (0, if i.nonblocking() { 0o4000 } else { 0 }, i.fdinfo()),
            Fd::Stdout | Fd::Stderr => (0, 1, String::new()),
            Fd::Stdin | Fd::Dir(_) | Fd::Proc(_) | Fd::Pid(_) => (0, 0, String::new()),
            _ => (0, 2, String::new()),
        };
        let cloexec = if self.cloexec.contains(&fd) {
            O_CLOEXEC as u32
        } else {
            0
        };
        Some(
            format!(
                "pos:\t{pos}\nflags:\t0{:o}\nmnt_id:\t15\n{extra}",
                flags | cloexec
            )
            .into_bytes(),
        )
    }

    /// `/proc/self/maps`: the mapped ranges with their permissions and the files they show.
    fn maps(&self, mem: &Memory) -> Vec<u8> {
        let mut s = String::new();
        for (start, end, perm) in mem.mapped_ranges(MAX_MAPS_LINES) {
            let p = |bit: u8, c: char| if perm & bit != 0 { c } else { '-' };
            let shared = if self.shared.overlaps(start, start + 1)
                || self.file_maps.overlaps(start, start + 1)
            {
                's'
            } else {
                'p'
            };
            let name = self
                .objects
                .iter()
                .find(|o| o.start <= start && start < o.start + o.len)
                .map(|o| o.guest_path.display().to_string())
                .unwrap_or_default();
            s.push_str(&format!(
                "{start:08x}-{end:08x} {}{}{}{shared} 00000000 00:00 0{}{name}\n",
                p(crate::memory::perm::R, 'r'),
                p(crate::memory::perm::W, 'w'),
                p(crate::memory::perm::X, 'x'),
                if name.is_empty() {
                    ""
                } else {
                    "                          "
                },
            ));
        }
        s.into_bytes()
    }

    /// `openat` of a generated file (`None`: not one): read-only.
    pub(super) fn proc_open(
        &mut self,
        mem: &mut Memory,
        path: u64,
        flags: u64,
        instret: u64,
    ) -> Option<i64> {
        let p = mem.read_cstr(path, 64).ok()?;
        let what = generated(&p, self.current_pid(), self.tid())?;
        if flags & O_ACCMODE != 0 {
            return Some(-EACCES);
        }
        let Some(data) = self.generate(mem, what, instret) else {
            return Some(-ENOENT);
        };
        let thread_dir = matches!(what, Gen::Pid { tid: Some(_), .. });
        let dir = match what {
            Gen::Pid { pid, file, .. } => match self.entries(pid, file) {
                Some(Ok(_)) => Some((pid, file, Arc::new(Mutex::new(Vec::new())))),
                Some(Err(e)) => return Some(-e),
                None => None,
            },
            _ => None,
        };
        if dir.is_none() && flags & O_DIRECTORY != 0 {
            return Some(-ENOTDIR);
        }
        let fd = self.install(Fd::Proc(ProcFile {
            data: Arc::new(data),
            pos: Arc::new(Mutex::new(0)),
            dir,
            thread_dir,
        }));
        if fd >= 0 && flags & O_CLOEXEC != 0 {
            self.cloexec.insert(fd as usize);
        }
        Some(fd)
    }

    /// The entries of a generated directory `/proc/PID/fd`, `fdinfo` or `task`, "." and ".."
    /// first as Linux lists them (`None`: `file` is not a directory; `ENOENT`: another
    /// process's descriptors, which are not at hand).
    pub(super) fn entries(&self, pid: u32, file: PidFile) -> Option<Result<Vec<DirEntry>, i64>> {
        const DT_DIR: u8 = 4;
        const DT_REG: u8 = 8;
        const DT_LNK: u8 = 10;
        let kind = match file {
            PidFile::FdDir => DT_LNK,
            PidFile::FdInfoDir => DT_REG,
            PidFile::TaskDir | PidFile::Dir => DT_DIR,
            _ => return None,
        };
        let mut e = vec![(1, DT_DIR, b".".to_vec()), (1, DT_DIR, b"..".to_vec())];
        if file == PidFile::Dir {
            // what the machine generates beneath a process's or a thread's directory
            self.process_view(pid)?;
            let names: [(&[u8], u8); 7] = [
                (b"comm", DT_REG),
                (b"fd", DT_DIR),
                (b"fdinfo", DT_DIR),
                (b"maps", DT_REG),
                (b"stat", DT_REG),
                (b"status", DT_REG),
                (b"task", DT_DIR),
            ];
            e.extend(names.iter().zip(3..).map(|(&(n, t), i)| (i, t, n.to_vec())));
        } else if file == PidFile::TaskDir {
            let v = self.process_view(pid)?;
            e.extend(
                v.threads
                    .iter()
                    .map(|t| (u64::from(t.0) << 8, DT_DIR, t.0.to_string().into_bytes())),
            );
        } else if pid != self.current_pid() {
            return Some(Err(ENOENT));
        } else {
            e.extend(
                self.fds
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.is_some())
                    .map(|(n, _)| ((n as u64) << 8 | 2, kind, n.to_string().into_bytes())),
            );
        }
        Some(Ok(e))
    }

    /// `readlinkat` of `/proc/self/fd/N` (or the caller's own pid's): what the descriptor
    /// names as Linux prints it (`None`: not such a path).
    pub(super) fn proc_fd_link(&self, path: &[u8]) -> Option<Result<Vec<u8>, i64>> {
        let rest = path.strip_prefix(b"/proc/")?;
        let (head, rest) = rest.split_at(rest.iter().position(|&b| b == b'/')?);
        let own = head == b"self" || number(head) == Some(self.current_pid());
        let n = rest
            .strip_prefix(b"/fd/")
            .filter(|n| !n.is_empty() && n != b"/")?;
        let fd = if n == b"0" { Some(0) } else { number(n) };
        if !own {
            return None;
        }
        let Some(fd) = fd.map(|n| n as usize) else {
            return Some(Err(ENOENT));
        };
        let Some(Some(f)) = self.fds.get(fd) else {
            return Some(Err(ENOENT));
        };
        let id = (fd as u64) << 8 | 2;
        Some(Ok(match f {
            Fd::Pipe(_) => format!("pipe:[{id}]").into_bytes(),
            Fd::Socket(_) | Fd::Net(_) => format!("socket:[{id}]").into_bytes(),
            Fd::Epoll(_) => b"anon_inode:[eventpoll]".to_vec(),
            Fd::Event(_) => b"anon_inode:[eventfd]".to_vec(),
            Fd::Inotify(_) => b"anon_inode:inotify".to_vec(),
            Fd::Stdin | Fd::Stdout | Fd::Stderr => b"/dev/pts/0".to_vec(),
            _ => match self.fd_paths.get(&fd) {
                Some(p) if p.is_absolute() => p.as_os_str().as_encoded_bytes().to_vec(),
                Some(p) => self
                    .cwd_now()
                    .join(p)
                    .as_os_str()
                    .as_encoded_bytes()
                    .to_vec(),
                None => format!("anon_inode:[{id}]").into_bytes(),
            },
        }))
    }

    /// `newfstatat` of a generated path (`None`: not one): a read-only directory or regular
    /// file as Linux's procfs shows them, `/proc/self/fd/N` a link (followed: its
    /// descriptor's own), a process or thread that is not there `ENOENT`.
    pub(super) fn proc_stat(
        &mut self,
        mem: &mut Memory,
        path: &[u8],
        nofollow: bool,
        buf: u64,
    ) -> Option<i64> {
        if let Some(link) = self.proc_fd_link(path) {
            return Some(match link {
                Err(e) => -e,
                Ok(_) if nofollow => Self::write_fixed_stat(mem, buf, 0o120777),
                Ok(_) => {
                    let fd = path
                        .rsplit(|&b| b == b'/')
                        .next()
                        .and_then(|n| std::str::from_utf8(n).ok()?.parse::<u64>().ok())?;
                    self.sys_fstat(mem, fd, buf)
                }
            });
        }
        let what = generated(path, self.current_pid(), self.tid())?;
        let mode = match what {
            Gen::Missing => return Some(-ENOENT),
            Gen::Pid { pid, tid, file } => {
                let exists = self
                    .process_view(pid)
                    .is_some_and(|v| tid.is_none_or(|t| v.threads.iter().any(|th| th.0 == t)));
                if !exists {
                    return Some(-ENOENT);
                }
                match file {
                    PidFile::Dir | PidFile::FdDir | PidFile::FdInfoDir | PidFile::TaskDir => {
                        0o40555
                    }
                    _ => 0o100444,
                }
            }
            _ => 0o100444,
        };
        Some(Self::write_fixed_stat(mem, buf, mode))
    }

    /// `faccessat` of a generated file: readable, nothing else.
    pub(super) fn proc_access(&mut self, mem: &mut Memory, path: u64, mode: u64) -> Option<i64> {
        let p = mem.read_cstr(path, 64).ok()?;
        let what = generated(&p, self.current_pid(), self.tid())?;
        if let Gen::Pid { pid, tid, .. } = what {
            let exists = self
                .process_view(pid)
                .is_some_and(|v| tid.is_none_or(|t| v.threads.iter().any(|th| th.0 == t)));
            if !exists {
                return Some(-ENOENT);
            }
        } else if what == Gen::Missing {
            return Some(-ENOENT);
        }
        // W_OK 2, X_OK 1
        Some(if mode & 3 != 0 { -EACCES } else { 0 })
    }
}

/// Most lines of a generated `/proc/self/maps`.
const MAX_MAPS_LINES: usize = 65_536;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_file_reads_and_seeks_like_a_file() {
        let f = ProcFile {
            data: Arc::new(b"0\n".to_vec()),
            pos: Arc::new(Mutex::new(0)),
            dir: None,
            thread_dir: false,
        };
        let mut b = [0u8; 8];
        assert_eq!(f.read(&mut b), 2);
        assert_eq!(&b[..2], b"0\n");
        assert_eq!(f.read(&mut b), 0, "end of file");
        assert_eq!(f.seek(0, 0), Some(0));
        assert_eq!(f.seek(-1, 2), Some(1));
        assert_eq!(f.read(&mut b), 1);
        assert_eq!(f.seek(-5, 1), None, "before the start");
        assert_eq!(generated(b"/proc/meminfo", 7, 8), Some(Gen::Meminfo));
        assert_eq!(generated(b"/proc/version", 7, 8), None);
        assert_eq!(
            generated(b"/proc/self/stat", 7, 8),
            Some(Gen::Pid {
                pid: 7,
                tid: None,
                file: PidFile::Stat
            })
        );
        assert_eq!(
            generated(b"/proc/thread-self/comm", 7, 8),
            Some(Gen::Pid {
                pid: 7,
                tid: Some(8),
                file: PidFile::Comm
            })
        );
        assert_eq!(
            generated(b"/proc/12/task/13/status", 7, 8),
            Some(Gen::Pid {
                pid: 12,
                tid: Some(13),
                file: PidFile::Status
            })
        );
        assert_eq!(generated(b"/proc/12/environ", 7, 8), Some(Gen::Missing));
        assert_eq!(generated(b"/proc/012/stat", 7, 8), None, "not a pid");
        assert_eq!(
            generated(b"/proc/self/task/x/stat", 7, 8),
            Some(Gen::Missing)
        );
    }
}
