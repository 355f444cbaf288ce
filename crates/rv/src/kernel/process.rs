//! Processes in one machine (docs/machine.md, "Processes"): `fork`/`vfork`/`clone` without
//! `CLONE_THREAD`, `execve` (static, dynamic through the sysroot, `#!` scripts), `wait4` and
//! `waitid`, exit statuses and `SIGCHLD`, process groups and sessions, and `kill` between the
//! guest's own processes.
//!
//! The kernel holds the running process's state in its own fields, as it did with one process;
//! every other process's state (descriptors, mappings' records, signal handlers, threads) is
//! parked in its [`Process`] entry and swapped in when the scheduler picks one of its threads
//! ([`Kernel::load_process`]). The machine swaps the guest memory and decoded code the same
//! way. Nothing is shared between processes but what Linux shares after `fork`: open files
//! (their host descriptors are duplicated, so offsets are shared as on Linux) and pipes.
//!
//! A `vfork` child gets a copy of its parent's memory, not the same memory, and the parent
//! waits until the child calls `execve` or exits, as Linux's parent does; a program that
//! writes its parent's memory from a vfork child (posix_spawn's error report in glibc) is not
//! seen by the parent: the exec failure shows as exit status 127 instead.

use super::signals::Signals;
use super::threads::SigInfo;
use super::threads::{Thread, ThreadStat, MAX_THREAD_STATS};
use super::*;
use std::collections::{BTreeSet, HashMap};

/// Default limit on processes alive or not yet reaped (`--max-processes`).
pub const DEFAULT_MAX_PROCESSES: usize = 64;

const SIGCHLD: u64 = 17;
const ECHILD: i64 = 10;
const WNOHANG: u64 = 1;
const WEXITED: u64 = 4;
const WNOWAIT: u64 = 0x0100_0000;

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// `exit`/`exit_group` with this status.
    Exited(u8),
    /// A signal's default action ended it.
    Signaled {
        /// The signal.
        signal: u8,
        /// It would have dumped core.
        core: bool,
    },
}

impl ExitStatus {
    /// The status word `wait4` stores (`WIFEXITED`, `WEXITSTATUS`, `WTERMSIG`, `WCOREDUMP`).
    pub fn wait_status(self) -> u32 {
        match self {
            ExitStatus::Exited(c) => u32::from(c) << 8,
            ExitStatus::Signaled { signal, core } => {
                u32::from(signal) | if core { 0x80 } else { 0 }
            }
        }
    }
}

/// The state a process keeps while another runs: what [`Kernel`] holds in its fields for the
/// running one.
pub(crate) struct ProcessState {
    pub(super) fds: Vec<Option<Fd>>,
    fd_paths: HashMap<usize, PathBuf>,
    pub(super) ofds: HashMap<usize, u64>,
    fd_hosts: HashMap<usize, PathBuf>,
    cloexec: BTreeSet<usize>,
    brk_start: u64,
    brk: u64,
    mmap_next: u64,
    actions: Box<[SigAction; 65]>,
    signals: Signals,
    objects: Vec<MappedObject>,
    shared: mapping::SharedRanges,
    file_maps: mapping::SharedRanges,
    sources: mapping::Sources,
    rlimits: [(u64, u64); 16],
    exe_path: PathBuf,
    pub(super) cwd: Option<PathBuf>,
    umask: u32,
    pub(super) threads: Vec<Thread>,
    current: usize,
}

/// One of the guest's processes.
pub struct Process {
    /// Its process id.
    pub pid: u32,
    /// Its parent's (1 when the parent is outside the machine or gone).
    pub ppid: u32,
    /// Its process group.
    pub pgid: u32,
    /// Its session.
    pub sid: u32,
    /// How it ended: a zombie until its parent reaps it.
    pub status: Option<ExitStatus>,
    /// Its state while it is not running (`None` while it runs, and once it ended).
    pub(crate) state: Option<Box<ProcessState>>,
    /// A parent waits in `vfork` until this process calls `execve` or exits.
    pub(crate) vfork_pending: bool,
    /// The signal its parent gets when it ends (`SIGCHLD` after `fork`).
    pub exit_signal: u8,
    /// Programs it ran with `execve`.
    pub execs: u32,
}

/// Most processes whose history is kept one by one ([`Processes::history`]).
pub const MAX_PROCESS_STATS: usize = 4096;

/// What one process did over the run (`--stats-json`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessStat {
    /// Its process id.
    pub pid: u32,
    /// Its parent's when it was created (1: none in the machine).
    pub ppid: u32,
    /// The program it ran last (its path on the host).
    pub program: String,
    /// Programs it ran with `execve`.
    pub execs: u32,
    /// How it ended (`None`: it was still running when the run ended).
    pub status: Option<ExitStatus>,
}

/// The process table.
pub struct Processes {
    /// Processes alive or not yet reaped, in creation order.
    pub list: Vec<Process>,
    /// Most entries at once (`--max-processes`).
    pub max: usize,
    /// The first process's id: the run's exit status is its.
    pub initial: u32,
    /// How the first process ended, once it has.
    pub initial_status: Option<ExitStatus>,
    /// Processes created so far (the first included).
    pub created: u64,
    /// `fork`s refused by the limit.
    pub refused: u64,
    /// Every process the run had, in creation order (the first [`MAX_PROCESS_STATS`]).
    pub history: Vec<ProcessStat>,
}

/// The pid the first process's parent has: an init outside the machine that every guest
/// process sees (`getpgid`, `/proc/1/stat`) and none can signal (it ignores them, as a
/// Linux init without handlers does).
pub(super) const INIT_PID: u32 = 1;

impl Processes {
    pub(super) fn new(pid: u32, program: &std::path::Path) -> Processes {
        Processes {
            list: vec![Process {
                pid,
                ppid: INIT_PID,
                pgid: pid,
                sid: pid,
                status: None,
                state: None,
                vfork_pending: false,
                exit_signal: SIGCHLD as u8,
                execs: 0,
            }],
            max: DEFAULT_MAX_PROCESSES,
            initial: pid,
            initial_status: None,
            created: 1,
            refused: 0,
            history: vec![ProcessStat {
                pid,
                ppid: 1,
                program: program.display().to_string(),
                execs: 0,
                status: None,
            }],
        }
    }

    pub(super) fn stat_mut(&mut self, pid: u32) -> Option<&mut ProcessStat> {
        self.history.iter_mut().rev().find(|s| s.pid == pid)
    }

    /// The live or unreaped process `pid`.
    pub fn get(&self, pid: u32) -> Option<&Process> {
        self.list.iter().find(|p| p.pid == pid)
    }

    pub(super) fn get_mut(&mut self, pid: u32) -> Option<&mut Process> {
        self.list.iter_mut().find(|p| p.pid == pid)
    }

    /// Processes that have not ended.
    pub fn live(&self) -> usize {
        self.list.iter().filter(|p| p.status.is_none()).count()
    }
}

/// Which children `wait4` and `waitid` look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Select {
    /// Any child.
    Any,
    /// Those in the caller's process group.
    MyGroup,
    /// Those in this group.
    Group(u32),
    /// This one.
    Pid(u32),
}

/// What a fork asks of the machine, which owns the memory to copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fork {
    /// The child's pid.
    pub child: u32,
    /// `CLONE_VFORK`: the parent waits for the child's exec or exit.
    pub vfork: bool,
    /// `CLONE_CHILD_SETTID`'s address in the child's memory.
    pub child_tid: Option<u64>,
}

impl Kernel {
    /// The process table.
    pub fn processes(&self) -> &Processes {
        &self.procs
    }

    /// Most processes alive or unreaped at once (`--max-processes`; at least 1).
    pub fn set_max_processes(&mut self, n: usize) {
        self.procs.max = n.max(1);
    }

    /// The running process's id.
    pub fn current_pid(&self) -> u32 {
        self.threads.pid
    }

    /// Exchanges the running process's state with `s`.
    fn swap_state(&mut self, s: &mut ProcessState) {
        use std::mem::swap;
        swap(&mut self.fds, &mut s.fds);
        swap(&mut self.fd_paths, &mut s.fd_paths);
        swap(&mut self.ofds, &mut s.ofds);
        swap(&mut self.fd_hosts, &mut s.fd_hosts);
        swap(&mut self.cloexec, &mut s.cloexec);
        swap(&mut self.brk_start, &mut s.brk_start);
        swap(&mut self.brk, &mut s.brk);
        swap(&mut self.mmap_next, &mut s.mmap_next);
        swap(&mut self.actions, &mut s.actions);
        swap(&mut self.signals, &mut s.signals);
        swap(&mut self.objects, &mut s.objects);
        swap(&mut self.shared, &mut s.shared);
        swap(&mut self.file_maps, &mut s.file_maps);
        swap(&mut self.sources, &mut s.sources);
        swap(&mut self.rlimits, &mut s.rlimits);
        swap(&mut self.exe_path, &mut s.exe_path);
        swap(&mut self.cwd, &mut s.cwd);
        swap(&mut self.umask, &mut s.umask);
        swap(&mut self.threads.list, &mut s.threads);
        swap(&mut self.threads.current, &mut s.current);
    }

    /// Makes `pid` the running process (its threads, descriptors, handlers), parking the
    /// running one's. The machine swaps its memory alongside. `false` if `pid` has no
    /// parked state (it runs already, or it ended).
    pub(crate) fn load_process(&mut self, pid: u32) -> bool {
        let cur = self.threads.pid;
        if pid == cur {
            return true;
        }
        let Some(mut state) = self.procs.get_mut(pid).and_then(|p| p.state.take()) else {
            return false;
        };
        self.swap_state(&mut state);
        self.threads.yield_now = false;
        if let Some(p) = self.procs.get_mut(cur) {
            p.state = Some(state);
        }
        self.threads.pid = pid;
        true
    }

    /// Wakes up to `n` threads of the parked processes waiting on the shared futex `key`
    /// whose bitset meets `bitset`, first come first woken; returns how many.
    pub(super) fn futex_wake_parked(&mut self, key: (usize, u64), bitset: u32, n: u64) -> u64 {
        let mut woken = 0;
        while woken < n {
            let mut first: Option<(u64, usize, usize)> = None;
            for (pi, p) in self.procs.list.iter().enumerate() {
                let Some(state) = &p.state else { continue };
                for (ti, t) in state.threads.iter().enumerate() {
                    let waits = matches!(t.wait, Wait::Futex { shared: Some(k), bitset: b, .. }
                        if k == key && b & bitset != 0);
                    if waits && first.is_none_or(|f| t.wait_seq < f.0) {
                        first = Some((t.wait_seq, pi, ti));
                    }
                }
            }
            let Some((_, pi, ti)) = first else { break };
            if let Some(t) = self.procs.list[pi]
                .state
                .as_mut()
                .and_then(|s| s.threads.get_mut(ti))
            {
                t.wait = Wait::Runnable;
                t.hart.x[10] = 0;
            }
            woken += 1;
        }
        if woken > 0 {
            self.io_changed();
        }
        woken
    }

    /// Live processes other than the running one, in creation order starting after it.
    pub(crate) fn other_processes(&self) -> Vec<u32> {
        let cur = self.threads.pid;
        let i = self
            .procs
            .list
            .iter()
            .position(|p| p.pid == cur)
            .unwrap_or(0);
        let n = self.procs.list.len();
        (1..n)
            .map(|k| &self.procs.list[(i + k) % n])
            .filter(|p| p.status.is_none() && p.state.is_some())
            .map(|p| p.pid)
            .collect()
    }

    /// `clone` without `CLONE_THREAD`: a new process running a copy of the caller (its
    /// memory is copied by the machine, [`SyscallOutcome::Forked`]).
    pub(super) fn sys_fork(
        &mut self,
        mem: &mut Memory,
        x: &mut [u64; 32],
        a: [u64; 6],
        exit_signal: u64,
    ) -> Result<Ret, i64> {
        const CLONE_VM: u64 = 0x100;
        const CLONE_FS: u64 = 0x200;
        const CLONE_VFORK: u64 = 0x4000;
        const CLONE_SETTLS: u64 = 0x80000;
        const CLONE_PARENT_SETTID: u64 = 0x100000;
        const CLONE_CHILD_CLEARTID: u64 = 0x200000;
        const CLONE_CHILD_SETTID: u64 = 0x1000000;
        const CLONE_PARENT: u64 = 0x8000;
        let [flags, stack, parent_tid, tls, child_tid, _] = a;
        let allowed = CLONE_VM
            | CLONE_FS
            | CLONE_VFORK
            | CLONE_SETTLS
            | CLONE_PARENT_SETTID
            | CLONE_CHILD_CLEARTID
            | CLONE_CHILD_SETTID
            | CLONE_PARENT;
        if flags & !allowed != 0 || exit_signal > 64 {
            self.warn_once(
                0x2_0000_0000 | 220,
                &format!(
                    "clone of a process with flags {flags:#x}: shared descriptor tables or \
                     signal handlers between processes are not supported; returning EINVAL"
                ),
            );
            return Err(EINVAL);
        }
        if flags & CLONE_VM != 0 && flags & CLONE_VFORK == 0 {
            // a process sharing its parent's memory while both run: not modelled
            self.warn_once(
                0x3_0000_0000 | 220,
                "clone with CLONE_VM but neither CLONE_THREAD nor CLONE_VFORK: not supported; \
                 returning EINVAL",
            );
            return Err(EINVAL);
        }
        if self.procs.list.len() >= self.procs.max
            || self.threads.stats.len() as u64 >= u64::from(u32::MAX)
        {
            self.procs.refused += 1;
            self.warn_once(
                0x4_0000_0000 | 220,
                &format!(
                    "the guest reached --max-processes ({}, counting zombies not yet reaped): \
                     fork returns EAGAIN",
                    self.procs.max
                ),
            );
            return Err(EAGAIN);
        }
        let mut fds = Vec::with_capacity(self.fds.len());
        for f in &self.fds {
            fds.push(match f {
                Some(f) => Some(f.try_clone()?),
                None => None,
            });
        }
        let pid = self.threads.next_tid();
        if flags & CLONE_PARENT_SETTID != 0 {
            mem.store_u32(parent_tid, pid).map_err(|_| EFAULT)?;
        }
        let index = self.threads.next_index();
        let parent = self.threads.cur();
        let mut t = Thread::new(index, pid);
        t.sigmask = parent.sigmask;
        t.altstack = parent.altstack;
        t.name = parent.name;
        t.hart.x = *x;
        t.hart.x[10] = 0;
        if stack != 0 {
            t.hart.x[2] = stack;
        }
        if flags & CLONE_SETTLS != 0 {
            t.hart.x[4] = tls;
        }
        if flags & CLONE_CHILD_CLEARTID != 0 {
            t.clear_tid = child_tid;
        }
        if self.threads.stats.len() < MAX_THREAD_STATS {
            self.threads.stats.push(ThreadStat {
                index,
                tid: pid,
                pid,
                ..ThreadStat::default()
            });
        }
        // the child's descriptors share their open file descriptions with the parent's
        for fd in 0..self.fds.len() {
            self.ofd_of(fd);
        }
        let state = self.fork_state(fds, t);
        let me = self.threads.pid;
        let (ppid, pgid, sid) = match self.procs.get(me) {
            Some(p) if flags & CLONE_PARENT != 0 => (p.ppid, p.pgid, p.sid),
            Some(p) => (me, p.pgid, p.sid),
            None => (me, me, me),
        };
        if self.sched.len() > 2 * self.procs.max {
            let procs = &self.procs;
            self.sched.retain(|p, _| procs.get(*p).is_some());
        }
        if let Some(mut s) = self.sched.get(&me).copied() {
            // the child's default timer slack is the parent's current one (Linux's fork)
            s.prctl[7] = s.prctl[3];
            self.sched.insert(pid, s); // priorities and policy are inherited
        }
        self.procs.list.push(Process {
            pid,
            ppid,
            pgid,
            sid,
            status: None,
            state: Some(Box::new(state)),
            vfork_pending: flags & CLONE_VFORK != 0,
            exit_signal: exit_signal as u8,
            execs: 0,
        });
        self.procs.created += 1;
        if self.procs.history.len() < MAX_PROCESS_STATS {
            self.procs.history.push(ProcessStat {
                pid,
                ppid,
                program: self.exe_path.display().to_string(),
                execs: 0,
                status: None,
            });
        }
        self.io_changed();
        x[10] = u64::from(pid);
        Ok(Ret::Forked(Fork {
            child: pid,
            vfork: flags & CLONE_VFORK != 0,
            child_tid: (flags & CLONE_CHILD_SETTID != 0).then_some(child_tid),
        }))
    }

    /// The state of a fork's child: copies of the caller's descriptors `fds` (made already),
    /// handlers and records, and its one thread `t`; no pending signals or timers.
    fn fork_state(&self, fds: Vec<Option<Fd>>, t: Thread) -> ProcessState {
        ProcessState {
            fds,
            fd_paths: self.fd_paths.clone(),
            ofds: self.ofds.clone(),
            fd_hosts: self.fd_hosts.clone(),
            cloexec: self.cloexec.clone(),
            brk_start: self.brk_start,
            brk: self.brk,
            mmap_next: self.mmap_next,
            actions: self.actions.clone(),
            signals: Signals::default(),
            objects: self.objects.clone(),
            shared: self.shared.clone(),
            file_maps: self.file_maps.clone(),
            sources: self.sources.clone(),
            rlimits: self.rlimits,
            exe_path: self.exe_path.clone(),
            cwd: self.cwd.clone(),
            umask: self.umask,
            threads: vec![t],
            current: 0,
        }
    }

    /// Notes how the running process ended (its statistics; the run's status if it is the
    /// first process).
    pub(crate) fn record_exit(&mut self, status: ExitStatus) {
        let pid = self.threads.pid;
        if pid == self.procs.initial {
            self.procs.initial_status = Some(status);
        }
        if let Some(s) = self.procs.stat_mut(pid) {
            s.status = Some(status);
        }
    }

    /// Takes back a fork the machine could not complete (no memory for the copy).
    pub(crate) fn undo_fork(&mut self, pid: u32) {
        self.procs.list.retain(|p| p.pid != pid);
        self.procs.created -= 1;
        if self.procs.history.last().is_some_and(|s| s.pid == pid) {
            self.procs.history.pop();
        }
    }

    /// The parked first thread of process `pid` (a fork's child, for the machine to finish).
    pub(crate) fn parked_thread_mut(&mut self, pid: u32) -> Option<&mut Thread> {
        self.procs.get_mut(pid)?.state.as_mut()?.threads.first_mut()
    }

    /// Ends the running process with `status`: its descriptors close, its children go to
    /// init (ended ones are reaped), its parent gets its exit signal, a `vfork` parent goes
    /// on. Loads another live process and returns its pid (the parent if it lives), or
    /// `None` when no process is left.
    pub(crate) fn end_process(&mut self, status: ExitStatus) -> Option<u32> {
        let pid = self.threads.pid;
        self.locks.drop_owner(pid, None);
        self.drop_flocks(pid);
        self.fds.clear();
        self.fd_paths.clear();
        self.forget_ofds(None);
        self.fd_hosts.clear();
        self.cloexec.clear();
        for t in &mut self.threads.list {
            t.wait = Wait::Exited;
        }
        self.record_exit(status);
        let (ppid, exit_signal) = match self.procs.get_mut(pid) {
            Some(p) => {
                p.status = Some(status);
                p.vfork_pending = false;
                (p.ppid, u64::from(p.exit_signal))
            }
            None => (1, 0),
        };
        // orphans go to init, which reaps the ended ones
        for p in &mut self.procs.list {
            if p.ppid == pid {
                p.ppid = 1;
            }
        }
        self.procs
            .list
            .retain(|p| !(p.ppid == 1 && p.status.is_some() && p.pid != pid));
        self.io_changed();
        let parent_live = self
            .procs
            .get(ppid)
            .is_some_and(|p| p.status.is_none() && p.state.is_some());
        let next = if parent_live {
            Some(ppid)
        } else {
            self.other_processes().first().copied()
        };
        let Some(next) = next else {
            self.procs.list.retain(|p| p.pid != pid || p.ppid != 1);
            return None;
        };
        self.load_process(next);
        // the ended process's state is of no use now (its threads, its handlers)
        if let Some(p) = self.procs.get_mut(pid) {
            p.state = None;
        }
        if parent_live {
            // SIG_IGN or SA_NOCLDWAIT for SIGCHLD: the child is reaped at once
            const SA_NOCLDWAIT: u64 = 2;
            let act = self.action(SIGCHLD);
            if act.handler == 1 || act.flags & SA_NOCLDWAIT != 0 {
                self.procs.list.retain(|p| p.pid != pid);
            }
            if exit_signal != 0 {
                let (code, st) = match status {
                    ExitStatus::Exited(c) => (1, i64::from(c)),
                    ExitStatus::Signaled { signal, core } => {
                        (if core { 3 } else { 2 }, i64::from(signal))
                    }
                };
                let info = SigInfo {
                    code,
                    word16: u64::from(pid),
                    word24: st as u64,
                };
                self.send_to_process(exit_signal, info);
            }
        } else {
            self.procs.list.retain(|p| p.pid != pid);
        }
        Some(self.threads.pid)
    }

    /// The running thread waits for its `vfork` child `child` to exec or exit.
    pub(crate) fn vfork_wait(&mut self, child: u32) {
        self.threads.block(Wait::Vfork { child }, 0);
    }

    /// Sets where the program break starts (the loader, after placing the program).
    pub(crate) fn set_brk_start(&mut self, brk_start: u64) {
        self.brk_start = brk_start;
        self.brk = brk_start;
    }

    /// The memory limit of all the guest's processes together.
    pub fn memory_limit(&self) -> u64 {
        self.memory_limit
    }

    /// Ends thread `i`'s wait if what it waits for happened: a [`Wait::Retry`] once
    /// anything changed (its call runs again), a [`Wait::Vfork`] once the child exec'd or
    /// ended (a0 = the child's pid).
    pub(crate) fn wake_if_ready(&mut self, i: usize) -> bool {
        let events = self.io_events();
        match self.threads.list[i].wait {
            Wait::Retry { since, .. } if since != events => {
                self.threads.list[i].wait = Wait::Runnable;
                true
            }
            Wait::Vfork { child } if self.vfork_done(child) => {
                self.threads.wake(i, i64::from(child));
                true
            }
            _ => false,
        }
    }

    /// The parked processes' threads, with their pids.
    pub fn parked_threads(&self) -> impl Iterator<Item = (u32, &Thread)> + '_ {
        self.procs
            .list
            .iter()
            .filter_map(|p| Some((p.pid, p.state.as_deref()?)))
            .flat_map(|(pid, s)| s.threads.iter().map(move |t| (pid, t)))
    }

    /// The deadlines the parked processes' threads and timers wait for.
    pub(crate) fn parked_deadlines(&self) -> impl Iterator<Item = u64> + '_ {
        self.procs
            .list
            .iter()
            .filter_map(|p| p.state.as_deref())
            .flat_map(|s| {
                s.threads
                    .iter()
                    .filter_map(|t| t.wait.deadline())
                    .chain(s.signals.next_timer())
            })
    }

    /// Whether process `child`'s `vfork` is over (it ran `execve` or ended).
    pub(crate) fn vfork_done(&self, child: u32) -> bool {
        self.procs.get(child).is_none_or(|p| !p.vfork_pending)
    }

    /// The children of the running process that `sel` selects.
    fn waitable(&self, sel: Select) -> impl Iterator<Item = &Process> {
        let me = self.threads.pid;
        let my_pgid = self.procs.get(me).map_or(me, |p| p.pgid);
        self.procs.list.iter().filter(move |p| {
            p.ppid == me
                && match sel {
                    Select::Any => true,
                    Select::MyGroup => p.pgid == my_pgid,
                    Select::Group(g) => p.pgid == g,
                    Select::Pid(c) => p.pid == c,
                }
        })
    }

    /// `wait4(pid, wstatus, options, rusage)`.
    pub(super) fn sys_wait4(&mut self, mem: &mut Memory, a: [u64; 6]) -> Result<Ret, i64> {
        let [pid, wstatus, options, rusage, ..] = a;
        const KNOWN: u64 = WNOHANG | 2 | 8 | 0x2000_0000 | 0x4000_0000 | 0x8000_0000;
        if options & !KNOWN != 0 {
            return Err(EINVAL);
        }
        let sel = match pid as i32 {
            -1 => Select::Any,
            0 => Select::MyGroup,
            i32::MIN => return Err(ESRCH),
            g if g < 0 => Select::Group(g.unsigned_abs()),
            c => Select::Pid(c as u32),
        };
        let mut any = false;
        let mut ended = None;
        for p in self.waitable(sel) {
            any = true;
            if let Some(s) = p.status {
                ended = Some((p.pid, s));
                break;
            }
        }
        if !any {
            return Err(ECHILD);
        }
        let Some((child, status)) = ended else {
            return if options & WNOHANG != 0 {
                Ok(Ret::Value(0))
            } else {
                Ok(self.block_retry(None))
            };
        };
        if wstatus != 0 {
            mem.store_u32(wstatus, status.wait_status())
                .map_err(|_| EFAULT)?;
        }
        if rusage != 0 {
            mem.write_bytes(rusage, &[0u8; 144]).map_err(|_| EFAULT)?;
        }
        self.procs.list.retain(|p| p.pid != child);
        Ok(Ret::Value(i64::from(child)))
    }

    /// `waitid(idtype, id, infop, options, rusage)`.
    pub(super) fn sys_waitid(&mut self, mem: &mut Memory, a: [u64; 6]) -> Result<Ret, i64> {
        let [idtype, id, infop, options, rusage, _] = a;
        const KNOWN: u64 =
            WNOHANG | 2 | WEXITED | 8 | WNOWAIT | 0x2000_0000 | 0x4000_0000 | 0x8000_0000;
        if options & !KNOWN != 0 || options & (WEXITED | 2 | 8) == 0 {
            return Err(EINVAL);
        }
        let sel = match (idtype, id as i32) {
            (0, _) => Select::Any,                      // P_ALL
            (1, c) if c > 0 => Select::Pid(c as u32),   // P_PID
            (2, 0) => Select::MyGroup,                  // P_PGID of the caller
            (2, g) if g > 0 => Select::Group(g as u32), // P_PGID
            _ => return Err(EINVAL),
        };
        let mut any = false;
        let mut ended = None;
        if options & WEXITED != 0 || options & (2 | 8) != 0 {
            for p in self.waitable(sel) {
                any = true;
                if let (Some(s), true) = (p.status, options & WEXITED != 0) {
                    ended = Some((p.pid, s));
                    break;
                }
            }
        }
        if !any {
            return Err(ECHILD);
        }
        let Some((child, status)) = ended else {
            if options & WNOHANG != 0 {
                if infop != 0 {
                    mem.write_bytes(infop, &[0u8; 128]).map_err(|_| EFAULT)?;
                }
                return Ok(Ret::Value(0));
            }
            return Ok(self.block_retry(None));
        };
        if infop != 0 {
            let (code, st) = match status {
                ExitStatus::Exited(c) => (1i32, i32::from(c)),
                ExitStatus::Signaled { signal, core } => {
                    (if core { 3 } else { 2 }, i32::from(signal))
                }
            };
            let mut b = [0u8; 128];
            b[..4].copy_from_slice(&(SIGCHLD as i32).to_le_bytes());
            b[8..12].copy_from_slice(&code.to_le_bytes());
            b[16..20].copy_from_slice(&(child as i32).to_le_bytes());
            b[24..28].copy_from_slice(&st.to_le_bytes());
            mem.write_bytes(infop, &b).map_err(|_| EFAULT)?;
        }
        if rusage != 0 {
            mem.write_bytes(rusage, &[0u8; 144]).map_err(|_| EFAULT)?;
        }
        if options & WNOWAIT == 0 {
            self.procs.list.retain(|p| p.pid != child);
        }
        Ok(Ret::Value(0))
    }

    /// Blocks the running thread until something changes ([`Wait::Retry`]), then its
    /// system call runs again.
    pub(super) fn block_retry(&mut self, deadline: Option<u64>) -> Ret {
        let since = self.io_events();
        // (a0 stays as it is: the call runs again with the same arguments)
        self.threads.block(Wait::Retry { since, deadline }, 0);
        self.threads.cur_mut().retrying = true;
        Ret::Retry
    }

    /// `kcmp(pid1, pid2, type, idx1, idx2)` between the guest's own processes: 0 when the two
    /// share the resource, else 1 or 2 by an order that stays the same for the run.
    /// `KCMP_FILE` compares the open file descriptions of descriptors `idx1` and `idx2` (those
    /// a `dup` or a `fork` made share one); every other resource (memory, descriptor table,
    /// working directory, handlers, I/O context, System V undo) belongs to the process here,
    /// so it compares the processes. `KCMP_EPOLL_TFD` is `EOPNOTSUPP`.
    pub(super) fn sys_kcmp(&mut self, a: [u64; 6]) -> i64 {
        const KCMP_FILE: u64 = 0;
        const KCMP_EPOLL_TFD: u64 = 7;
        const KCMP_TYPES: u64 = 8;
        let [pid1, pid2, kind, idx1, idx2, _] = a;
        let alive = |k: &Self, pid: u64| {
            u32::try_from(pid)
                .ok()
                .filter(|&p| k.procs.get(p).is_some_and(|p| p.status.is_none()))
        };
        let (Some(p1), Some(p2)) = (alive(self, pid1), alive(self, pid2)) else {
            return -ESRCH;
        };
        if kind >= KCMP_TYPES || kind as i32 as i64 != kind as i64 {
            return -EINVAL;
        }
        let order = |x: u64, y: u64| match x.cmp(&y) {
            std::cmp::Ordering::Equal => 0,
            std::cmp::Ordering::Less => 1,
            std::cmp::Ordering::Greater => 2,
        };
        match kind {
            KCMP_FILE => {
                let (Some(o1), Some(o2)) = (self.ofd_in(p1, idx1), self.ofd_in(p2, idx2)) else {
                    return -EBADF;
                };
                order(o1, o2)
            }
            KCMP_EPOLL_TFD => -95, // EOPNOTSUPP
            _ => order(u64::from(p1), u64::from(p2)),
        }
    }

    /// The open file description of descriptor `fd` of process `pid` (`None`: not open).
    fn ofd_in(&mut self, pid: u32, fd: u64) -> Option<u64> {
        let fd = usize::try_from(fd).ok()?;
        if pid == self.threads.pid {
            return self.ofd_of(fd);
        }
        let s = self.procs.get(pid)?.state.as_deref()?;
        s.fds.get(fd)?.as_ref()?;
        s.ofds.get(&fd).copied()
    }

    /// `getppid`.
    pub(super) fn sys_getppid(&self) -> i64 {
        self.procs
            .get(self.threads.pid)
            .map_or(1, |p| i64::from(p.ppid))
    }

    /// `getpgid(pid)` (0: the caller) and `getsid(pid)`.
    pub(super) fn sys_getpgid(&self, pid: u64, session: bool) -> i64 {
        let pid = if pid == 0 {
            self.threads.pid
        } else {
            pid as u32
        };
        match self.procs.get(pid) {
            Some(p) if p.status.is_none() => i64::from(if session { p.sid } else { p.pgid }),
            None if pid == INIT_PID => i64::from(INIT_PID),
            _ => -ESRCH,
        }
    }

    /// `setpgid(pid, pgid)`: the caller or a child of it, into a group of its session.
    pub(super) fn sys_setpgid(&mut self, pid: u64, pgid: u64) -> i64 {
        let me = self.threads.pid;
        let pid = if pid == 0 { me } else { pid as u32 };
        // (a pid_t: the low 32 bits, negative is EINVAL, as Linux)
        if pgid as i64 > i64::from(i32::MAX) || (pgid as i32) < 0 {
            return -EINVAL;
        }
        let Some(p) = self.procs.get(pid) else {
            return -ESRCH;
        };
        if pid != me && p.ppid != me {
            return -ESRCH;
        }
        let sid = p.sid;
        if p.pid == p.sid {
            return -EPERM; // a session leader stays in its group
        }
        let pgid = if pgid == 0 { pid } else { pgid as u32 };
        let group_ok = pgid == pid
            || self
                .procs
                .list
                .iter()
                .any(|q| q.pgid == pgid && q.sid == sid && q.status.is_none());
        if !group_ok {
            return -EPERM;
        }
        if let Some(p) = self.procs.get_mut(pid) {
            p.pgid = pgid;
        }
        0
    }

    /// `setsid()`: a new session and group led by the caller.
    pub(super) fn sys_setsid(&mut self) -> i64 {
        let me = self.threads.pid;
        // a process group leader cannot start a session
        if self.procs.list.iter().any(|p| p.pgid == me) {
            return -EPERM;
        }
        match self.procs.get_mut(me) {
            Some(p) => {
                p.pgid = me;
                p.sid = me;
                i64::from(me)
            }
            None => -ESRCH,
        }
    }

    /// Queues `sig` for process `pid` (the running one or a parked one).
    pub(super) fn signal_process(&mut self, pid: u32, sig: u64, info: SigInfo) {
        let me = self.threads.pid;
        if pid == me {
            self.send_to_process(sig, info);
        } else if self.load_process(pid) {
            // only the kernel's side is swapped: sending touches no guest memory
            self.send_to_process(sig, info);
            self.load_process(me);
        }
    }

    /// `kill(pid, sig)` within the guest's processes: `pid` > 0 one process, 0 the caller's
    /// group, -1 every process but the caller, < -1 the group `-pid`.
    pub(super) fn kill_processes(&mut self, pid: i64, sig: u64, info: SigInfo) -> Result<Ret, i64> {
        let me = self.threads.pid;
        let my_pgid = self.procs.get(me).map_or(me, |p| p.pgid);
        let targets: Vec<(u32, bool)> = self
            .procs
            .list
            .iter()
            .filter(|p| match pid {
                0 => p.pgid == my_pgid,
                -1 => p.pid != me,
                p2 if p2 < -1 => i64::from(p.pgid) == -p2,
                p2 => i64::from(p.pid) == p2,
            })
            .map(|p| (p.pid, p.status.is_none()))
            .collect();
        if targets.is_empty() {
            return Err(ESRCH);
        }
        if sig != 0 {
            for (p, live) in targets {
                if live {
                    self.signal_process(p, sig, info);
                }
            }
        }
        Ok(Ret::Switch(0))
    }
}

/// What `/proc/PID/…` shows of a process (`kernel/procfs.rs`).
pub(super) struct ProcView {
    pub ppid: u32,
    pub pgid: u32,
    pub sid: u32,
    /// `R` running or runnable, `S` every thread waits, `Z` ended and not reaped.
    pub state: u8,
    /// Its main thread's name, or its program's file name (at most 15 bytes).
    pub comm: Vec<u8>,
    /// Its threads: (tid, name as `comm` shows it, blocked signals, pending signals, state
    /// as `stat` shows it).
    pub threads: Vec<(u32, Vec<u8>, u64, u64, u8)>,
}

/// A thread's `comm`: its `PR_SET_NAME` name, else the program's file name (15 bytes at most).
fn comm_of(t: &Thread, exe: &std::path::Path) -> Vec<u8> {
    let end = t.name.iter().position(|&b| b == 0).unwrap_or(16);
    if end > 0 {
        return t.name[..end].to_vec();
    }
    use std::os::unix::ffi::OsStrExt;
    let base = exe.file_name().map(|n| n.as_bytes()).unwrap_or(b"");
    base[..base.len().min(15)].to_vec()
}

impl Kernel {
    /// The process `pid` as `/proc/PID/…` shows it (`None`: no such process of the guest's).
    pub(super) fn process_view(&self, pid: u32) -> Option<ProcView> {
        if pid == INIT_PID && self.procs.get(pid).is_none() {
            // the parent of the first process: a sleeping init in its own group and session
            return Some(ProcView {
                ppid: 0,
                pgid: INIT_PID,
                sid: INIT_PID,
                state: b'S',
                comm: b"init".to_vec(),
                threads: vec![(INIT_PID, b"init".to_vec(), 0, 0, b'S')],
            });
        }
        let p = self.procs.get(pid)?;
        let running = pid == self.threads.pid;
        let (threads, exe): (&[Thread], &std::path::Path) = if running {
            (&self.threads.list, &self.exe_path)
        } else {
            match p.state.as_deref() {
                Some(s) => (&s.threads, &s.exe_path),
                None => (&[], std::path::Path::new("")),
            }
        };
        let state = if p.status.is_some() || (threads.is_empty() && !running) {
            b'Z'
        } else if !running && threads.iter().all(|t| t.wait != Wait::Runnable) {
            b'S'
        } else {
            b'R'
        };
        let comm = threads.first().map_or_else(Vec::new, |t| comm_of(t, exe));
        Some(ProcView {
            ppid: p.ppid,
            pgid: p.pgid,
            sid: p.sid,
            state,
            comm,
            threads: threads
                .iter()
                .map(|t| {
                    let state = match t.wait {
                        Wait::Runnable => b'R',
                        Wait::Exited => b'Z',
                        _ => b'S',
                    };
                    (t.tid, comm_of(t, exe), t.sigmask, t.pending, state)
                })
                .collect(),
        })
    }
}

impl Kernel {
    /// Descriptors of every guest process open on host file (`dev`, `ino`), and how many of
    /// them can write (what a lease asks).
    pub(super) fn opens_of(&self, dev: u64, ino: u64) -> (usize, usize) {
        use std::os::unix::fs::MetadataExt;
        let parked = self
            .procs
            .list
            .iter()
            .filter_map(|p| p.state.as_deref())
            .flat_map(|s| s.fds.iter());
        let mut n = (0, 0);
        for f in self.fds.iter().chain(parked).flatten() {
            if let Fd::File(f) = f {
                if f.metadata().is_ok_and(|m| (m.dev(), m.ino()) == (dev, ino)) {
                    n.0 += 1;
                    let w = rustix::fs::fcntl_getfl(f).is_ok_and(|fl| {
                        fl.intersects(rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::RDWR)
                    });
                    n.1 += usize::from(w);
                }
            }
        }
        n
    }
}

impl Kernel {
    /// `pidfd_open(pid, flags)`: a descriptor of one of the guest's processes (flags 0 or
    /// `PIDFD_NONBLOCK`).
    pub(super) fn sys_pidfd_open(&mut self, pid: u64, flags: u64) -> i64 {
        const PIDFD_NONBLOCK: u64 = 0o4000;
        if flags & !PIDFD_NONBLOCK != 0 || pid as i64 <= 0 {
            return -EINVAL;
        }
        let pid = pid as u32;
        match self.procs.get(pid) {
            Some(p) if p.status.is_none() => {}
            _ => return -ESRCH,
        }
        let fd = self.install(Fd::Pid(pid));
        if fd >= 0 {
            self.cloexec.insert(fd as usize); // pidfds are close-on-exec
        }
        fd
    }

    /// `pidfd_send_signal(pidfd, sig, info, flags)`: `kill` through a process descriptor, or
    /// `rt_sigqueueinfo` when `info` is given.
    pub(super) fn sys_pidfd_send_signal(
        &mut self,
        mem: &mut Memory,
        a: [u64; 6],
    ) -> Result<Ret, i64> {
        let [fd, sig, info, flags, ..] = a;
        if flags != 0 {
            return Err(EINVAL);
        }
        // a process descriptor, or a /proc/PID directory (Linux takes both)
        let pid = match self.fd(fd)? {
            Fd::Pid(p) => *p,
            Fd::Proc(p) => p.process_dir().ok_or(EBADF)?,
            _ => return Err(EBADF),
        };
        if pid == INIT_PID && self.procs.get(pid).is_none() {
            return Err(EPERM); // the init outside the machine is not the guest's to signal
        }
        if self.procs.get(pid).is_none_or(|p| p.status.is_some()) {
            return Err(ESRCH);
        }
        if info != 0 && sig != 0 {
            // the siginfo must name the signal sent
            let signo = mem.load_u32(info).map_err(|_| EFAULT)?;
            if u64::from(signo) != sig {
                return Err(EINVAL);
            }
        }
        if info != 0 {
            return self.sys_sigqueueinfo(mem, u64::from(pid), None, sig, info);
        }
        self.sys_kill(u64::from(pid), sig)
    }
}
