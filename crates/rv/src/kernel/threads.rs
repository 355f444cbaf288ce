//! Guest threads on one host thread (docs/machine.md, "Threads"): the thread table, `clone`
//! and `clone3`, thread exit with the cleared-tid wake and the robust list, futexes, sleeps,
//! and the machine clock that timeouts run on.
//!
//! The kernel keeps every thread's state; the machine runs one at a time and switches at the
//! points [`SyscallOutcome::Reschedule`] and the end of a quantum give it (`machine/sched.rs`).
//! Nothing here reads the host's clock or threads: a run is the same every time.

use super::{Kernel, Ret, SyscallOutcome, EAGAIN, EFAULT, EINVAL, ENOSYS, EPERM, ESRCH};
use crate::memory::Memory;

/// Default round-robin quantum, in retired instructions (`--quantum`).
pub const DEFAULT_QUANTUM: u64 = 50_000;
/// Default limit on live threads (`--max-threads`).
pub const DEFAULT_MAX_THREADS: usize = 256;
/// Threads whose statistics are kept one by one; later ones are summed into the last entry.
pub const MAX_THREAD_STATS: usize = 4096;
/// Host bytes charged to the guest's memory budget per live thread (its state here, its
/// saved registers, and its signal records), as Linux charges a kernel stack.
pub const THREAD_CHARGE: u64 = 16 << 10;
/// Most robust-list entries walked when a thread exits (Linux's `ROBUST_LIST_LIMIT`).
const ROBUST_LIST_LIMIT: usize = 2048;
const ETIMEDOUT: i64 = 110;
const EINTR: i64 = 4;

/// A hart's architectural state while its thread is not running.
#[derive(Clone, Debug, Default)]
pub struct Hart {
    /// Integer registers.
    pub x: [u64; 32],
    /// FP registers (raw bits).
    pub f: [u64; 32],
    /// Where it resumes.
    pub pc: u64,
    /// FP exception flags.
    pub fflags: u8,
    /// FP rounding mode.
    pub frm: u8,
    /// The LR/SC reservation.
    pub reservation: Option<u64>,
    /// The basic block it was in (block-stream observers see whole blocks per thread).
    pub block_start: u64,
    /// Instructions of that block retired so far.
    pub block_len: u32,
    /// Their lengths (observers of block lengths only).
    pub block_lens: Vec<u8>,
    /// The vector unit's state.
    pub v: crate::vector::VState,
}

/// What a thread waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Nothing: it can run.
    Runnable,
    /// A futex wake at `addr` matching `bitset`, until `deadline` (machine ns).
    Futex {
        /// The futex word's address.
        addr: u64,
        /// FUTEX_WAIT_BITSET's mask (all ones for FUTEX_WAIT).
        bitset: u32,
        /// When the wait times out.
        deadline: Option<u64>,
        /// The shared memory the word lies in, for a futex that is not process-private:
        /// (object key, offset), what another process's wake names it by.
        shared: Option<(usize, u64)>,
    },
    /// `nanosleep`/`clock_nanosleep` until `deadline`; `rem` gets the time left if a signal
    /// cuts it short.
    Sleep {
        /// When it wakes.
        deadline: u64,
        /// Guest address for the remaining time (0: none).
        rem: u64,
    },
    /// `rt_sigsuspend`: any signal whose handler runs ends it; the thread's own mask is
    /// restored from `saved_mask` after the handler.
    Suspend {
        /// The mask to restore when the handler returns.
        saved_mask: u64,
    },
    /// `rt_sigtimedwait`: a signal in `set` ends it (dequeued, its number returned).
    SigWait {
        /// The signals waited for.
        set: u64,
        /// Guest address for the siginfo (0: none).
        info: u64,
        /// When the wait times out.
        deadline: Option<u64>,
    },
    /// A call that must wait for a pipe, a child or a descriptor: it runs again once
    /// [`Kernel::io_events`] moved past `since`, or at `deadline`.
    Retry {
        /// The change count when it blocked.
        since: u64,
        /// When it gives up (a timed `poll`).
        deadline: Option<u64>,
    },
    /// A `vfork` parent: it goes on when the child calls `execve` or exits.
    Vfork {
        /// The child's pid.
        child: u32,
    },
    /// It exited; the scheduler removes it.
    Exited,
}

impl Wait {
    /// When the wait times out, if it can.
    pub fn deadline(&self) -> Option<u64> {
        match *self {
            Wait::Futex { deadline, .. }
            | Wait::SigWait { deadline, .. }
            | Wait::Retry { deadline, .. } => deadline,
            Wait::Sleep { deadline, .. } => Some(deadline),
            _ => None,
        }
    }

    /// What it waits on, for the deadlock report.
    pub fn describe(&self) -> String {
        match *self {
            Wait::Runnable => "runnable".into(),
            Wait::Futex { addr, deadline, .. } => format!(
                "futex wait on {addr:#x}{}",
                if deadline.is_some() { " (timed)" } else { "" }
            ),
            Wait::Sleep { .. } => "sleeping".into(),
            Wait::Suspend { .. } => "rt_sigsuspend (waiting for a signal)".into(),
            Wait::SigWait { set, .. } => format!("rt_sigtimedwait for signals {set:#x}"),
            Wait::Retry { .. } => "waiting for a pipe, a child process or a descriptor".into(),
            Wait::Vfork { child } => format!("vfork: waiting for child {child} to exec or exit"),
            Wait::Exited => "exited".into(),
        }
    }
}

/// An alternate signal stack (`sigaltstack`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AltStack {
    /// Lowest address.
    pub sp: u64,
    /// Size in bytes (0: none).
    pub size: u64,
    /// `SS_AUTODISARM` was asked.
    pub autodisarm: bool,
}

impl AltStack {
    /// Whether `sp` lies on it.
    pub fn contains(&self, sp: u64) -> bool {
        self.size != 0 && sp > self.sp && sp - self.sp <= self.size
    }
}

/// What a queued signal carries into its handler's `siginfo`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigInfo {
    /// `si_code`.
    pub code: i32,
    /// The first union word (si_pid/si_tid or si_addr's low half…) as 8 bytes at offset 16.
    pub word16: u64,
    /// The 8 bytes at offset 24 (`si_value` for timers and queued signals).
    pub word24: u64,
}

/// One guest thread.
#[derive(Clone, Debug)]
pub struct Thread {
    /// Creation order: 0 is the main thread. What observers and reports name it by.
    pub index: u32,
    /// Its Linux thread id as the guest sees it.
    pub tid: u32,
    /// Its registers while it is not running (stale while it runs).
    pub hart: Hart,
    /// What it waits for.
    pub wait: Wait,
    /// Order in which waits began (futex wakes are first come, first woken).
    pub(super) wait_seq: u64,
    /// `a0` of the system call it blocked in, for a restart.
    pub(super) orig_a0: u64,
    /// Blocked signals (bit `sig - 1`).
    pub sigmask: u64,
    /// Signals pending for this thread.
    pub pending: u64,
    /// Their siginfo, by signal number - 1.
    pub(super) infos: Box<[SigInfo; 64]>,
    /// Its alternate signal stack.
    pub altstack: AltStack,
    /// `CLONE_CHILD_CLEARTID`/`set_tid_address`: zeroed and woken when it exits.
    pub clear_tid: u64,
    /// `set_robust_list`'s head.
    pub robust_list: u64,
    /// Its name (`prctl(PR_SET_NAME)`), NUL-padded.
    pub name: [u8; 16],
    /// The mask `rt_sigsuspend` replaced, for the frame of the handler that ends it.
    pub(crate) restore_mask: Option<u64>,
    /// Bytes a blocking pipe write moved before it waited ([`Wait::Retry`]): the retried
    /// call goes on after them.
    pub(crate) io_done: usize,
    /// The deadline a retried timed call (`ppoll`) keeps across its retries.
    pub(crate) retry_deadline: Option<u64>,
    /// The current call blocked and is being run again (a queue removed meanwhile is
    /// `EIDRM`, not `EINVAL`).
    pub(crate) retrying: bool,
}

impl Thread {
    pub(super) fn new(index: u32, tid: u32) -> Thread {
        Thread {
            index,
            tid,
            hart: Hart::default(),
            wait: Wait::Runnable,
            wait_seq: 0,
            orig_a0: 0,
            sigmask: 0,
            pending: 0,
            infos: Box::new([SigInfo::default(); 64]),
            altstack: AltStack::default(),
            clear_tid: 0,
            robust_list: 0,
            name: [0; 16],
            restore_mask: None,
            io_done: 0,
            retry_deadline: None,
            retrying: false,
        }
    }

    /// Its name as text (empty when none was set).
    pub fn name(&self) -> String {
        let end = self.name.iter().position(|&b| b == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.name[..end]).into_owned()
    }
}

/// What one thread did over the run (`--stats-json`, the per-thread tables).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadStat {
    /// Creation order (0 is the main thread).
    pub index: u32,
    /// Its thread id.
    pub tid: u32,
    /// The process it belongs to.
    pub pid: u32,
    /// Its name at exit or at the end of the run.
    pub name: String,
    /// Instructions it retired.
    pub instructions: u64,
    /// Times it was switched in.
    pub switches: u64,
}

/// The thread table and the scheduling policy's inputs.
pub struct Threads {
    /// Live threads, in creation order.
    pub list: Vec<Thread>,
    /// Index in `list` of the running thread.
    pub current: usize,
    /// Per-thread statistics, by creation index (capped at [`MAX_THREAD_STATS`]).
    pub stats: Vec<ThreadStat>,
    /// Most live threads (`--max-threads`).
    pub max_threads: usize,
    /// The guest asked for more than `max_threads` threads: the run ends.
    pub limit_hit: bool,
    /// The running thread asked to give up the hart (`sched_yield`).
    pub yield_now: bool,
    /// Machine nanoseconds skipped while every thread waited for a deadline.
    pub idle_ns: u64,
    /// The process id (the main thread's tid).
    pub pid: u32,
    next_tid: u32,
    next_index: u32,
    wait_counter: u64,
}

impl Threads {
    pub(super) fn new(main_tid: u32) -> Threads {
        Threads {
            list: vec![Thread::new(0, main_tid)],
            current: 0,
            stats: vec![ThreadStat {
                index: 0,
                tid: main_tid,
                pid: main_tid,
                ..ThreadStat::default()
            }],
            max_threads: DEFAULT_MAX_THREADS,
            limit_hit: false,
            yield_now: false,
            idle_ns: 0,
            pid: main_tid,
            next_tid: main_tid + 1,
            next_index: 1,
            wait_counter: 0,
        }
    }

    /// Takes the next thread id (process ids come from the same sequence, as on Linux).
    pub(super) fn next_tid(&mut self) -> u32 {
        self.next_tid += 1;
        self.next_tid - 1
    }

    /// Takes the next creation index.
    pub(super) fn next_index(&mut self) -> u32 {
        self.next_index += 1;
        self.next_index - 1
    }

    /// The running thread.
    pub fn cur(&self) -> &Thread {
        &self.list[self.current]
    }

    pub(super) fn cur_mut(&mut self) -> &mut Thread {
        &mut self.list[self.current]
    }

    /// The statistics entry of the thread with creation index `index`.
    pub fn stat_mut(&mut self, index: u32) -> Option<&mut ThreadStat> {
        let i = (index as usize).min(MAX_THREAD_STATS - 1);
        self.stats.get_mut(i)
    }

    /// The live thread with id `tid`.
    pub fn by_tid(&self, tid: u64) -> Option<usize> {
        self.list.iter().position(|t| u64::from(t.tid) == tid)
    }

    /// Puts the running thread to sleep on `wait`.
    pub(super) fn block(&mut self, wait: Wait, orig_a0: u64) {
        self.wait_counter += 1;
        let seq = self.wait_counter;
        let t = self.cur_mut();
        t.wait = wait;
        t.wait_seq = seq;
        t.orig_a0 = orig_a0;
    }

    /// Wakes up to `n` threads waiting on futex `addr` whose bitset meets `bitset`, first
    /// come first woken; returns how many.
    pub(super) fn futex_wake(&mut self, addr: u64, bitset: u32, n: u64) -> u64 {
        let mut woken = 0;
        while woken < n {
            let next = self
                .list
                .iter()
                .enumerate()
                .filter(|(_, t)| matches!(t.wait, Wait::Futex { addr: a, bitset: b, .. } if a == addr && b & bitset != 0))
                .min_by_key(|(_, t)| t.wait_seq)
                .map(|(i, _)| i);
            let Some(i) = next else { break };
            self.wake(i, 0);
            woken += 1;
        }
        woken
    }

    /// Moves up to `n` waiters from futex `from` to futex `to` (first come first moved).
    fn futex_requeue(&mut self, from: u64, to: u64, n: u64) -> u64 {
        let mut waiting: Vec<(u64, usize)> = self
            .list
            .iter()
            .enumerate()
            .filter(|(_, t)| matches!(t.wait, Wait::Futex { addr, .. } if addr == from))
            .map(|(i, t)| (t.wait_seq, i))
            .collect();
        waiting.sort_unstable();
        let mut moved = 0;
        for (_, i) in waiting
            .into_iter()
            .take(n.min(u64::from(u32::MAX)) as usize)
        {
            if let Wait::Futex { addr, .. } = &mut self.list[i].wait {
                *addr = to;
                moved += 1;
            }
        }
        moved
    }

    /// Ends thread `i`'s wait with `a0` as its system call's result.
    pub(super) fn wake(&mut self, i: usize, a0: i64) {
        let t = &mut self.list[i];
        t.wait = Wait::Runnable;
        t.hart.x[10] = a0 as u64;
    }

    /// Wakes every waiter whose deadline has passed at machine time `now`.
    pub fn expire(&mut self, now: u64, mem: &mut Memory) {
        for i in 0..self.list.len() {
            let t = &self.list[i];
            if t.wait.deadline().is_some_and(|d| d <= now) {
                if let Wait::Retry { .. } = t.wait {
                    self.list[i].wait = Wait::Runnable; // the call runs again and sees the time
                } else if let Wait::SigWait { .. } = t.wait {
                    self.wake(i, -EAGAIN);
                } else if let Wait::Sleep { .. } = t.wait {
                    // (ppoll's mask, if it set one, comes back)
                    let t = &mut self.list[i];
                    if let Some(m) = t.restore_mask.take() {
                        t.sigmask = m;
                    }
                    self.wake(i, 0);
                } else {
                    self.wake(i, -ETIMEDOUT);
                }
            }
        }
        let _ = mem;
    }

    /// Ends thread `i`'s blocking call because a signal's handler is about to run on it:
    /// restarted when `restart` (SA_RESTART and a restartable call), else `EINTR`.
    pub fn interrupt(&mut self, i: usize, restart: bool, now: u64, mem: &mut Memory) {
        let t = &mut self.list[i];
        match t.wait {
            Wait::Futex { .. } if restart => {
                // back to the `ecall`, with its first argument: it runs again after the handler
                t.hart.pc = t.hart.pc.wrapping_sub(4);
                t.hart.x[10] = t.orig_a0;
                t.wait = Wait::Runnable;
            }
            Wait::Sleep { deadline, rem } => {
                // an unwritable `rem` is EFAULT instead of EINTR, as Linux's copy-out
                let mut r = -EINTR;
                if rem != 0 {
                    let left = deadline.saturating_sub(now);
                    if mem.write_bytes(rem, &timespec_bytes(left)).is_err() {
                        r = -EFAULT;
                    }
                }
                self.wake(i, r);
            }
            // never restarted after a handler (Linux's signal(7)): epoll_pwait(2), pselect6,
            // ppoll, msgsnd, msgrcv, semtimedop, semop
            Wait::Retry { .. }
                if restart
                    && !matches!(t.hart.x[17], 22 | 72 | 73 | 188 | 189 | 192 | 193 | 441) =>
            {
                t.wait = Wait::Runnable
            }
            Wait::Retry { .. } => {
                t.retrying = false;
                // past the `ecall`: the call returns what it moved, else EINTR
                t.hart.pc = t.hart.pc.wrapping_add(4);
                let done = std::mem::take(&mut t.io_done);
                t.retry_deadline = None;
                self.wake(i, if done > 0 { done as i64 } else { -EINTR });
            }
            Wait::Runnable | Wait::Exited => {}
            _ => self.wake(i, -EINTR),
        }
    }
}

/// A `struct timespec` as bytes.
pub(super) fn timespec_bytes(ns: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
    b[8..].copy_from_slice(&(ns % 1_000_000_000).to_le_bytes());
    b
}

/// Reads a `struct timespec` at `addr` as nanoseconds: `EFAULT` if unreadable, `EINVAL` if
/// negative or with nanoseconds out of range.
pub(super) fn read_timespec(mem: &mut Memory, addr: u64) -> Result<u64, i64> {
    let mut b = [0u8; 16];
    mem.read_bytes(addr, &mut b).map_err(|_| EFAULT)?;
    let sec = i64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
    let nsec = i64::from_le_bytes(b[8..].try_into().unwrap_or([0; 8]));
    if sec < 0 || !(0..1_000_000_000).contains(&nsec) {
        return Err(EINVAL);
    }
    Ok((sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(nsec as u64))
}

// clone flags
const CSIGNAL: u64 = 0xff;
const CLONE_VM: u64 = 0x100;
const CLONE_FS: u64 = 0x200;
const CLONE_FILES: u64 = 0x400;
const CLONE_SIGHAND: u64 = 0x800;
const CLONE_THREAD: u64 = 0x10000;
const CLONE_SYSVSEM: u64 = 0x40000;
const CLONE_SETTLS: u64 = 0x80000;
const CLONE_PARENT_SETTID: u64 = 0x100000;
const CLONE_CHILD_CLEARTID: u64 = 0x200000;
const CLONE_DETACHED: u64 = 0x400000;
const CLONE_CHILD_SETTID: u64 = 0x1000000;
/// What a thread must share.
const THREAD_FLAGS: u64 = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD;
/// What may come with them.
const THREAD_OPTIONS: u64 = CLONE_SYSVSEM
    | CLONE_SETTLS
    | CLONE_PARENT_SETTID
    | CLONE_CHILD_CLEARTID
    | CLONE_DETACHED
    | CLONE_CHILD_SETTID;

// futex operations
const FUTEX_WAIT: u64 = 0;
const FUTEX_WAKE: u64 = 1;
const FUTEX_FD: u64 = 2;
const FUTEX_REQUEUE: u64 = 3;
const FUTEX_CMP_REQUEUE: u64 = 4;
const FUTEX_WAKE_OP: u64 = 5;
const FUTEX_LOCK_PI: u64 = 6;
const FUTEX_UNLOCK_PI: u64 = 7;
const FUTEX_TRYLOCK_PI: u64 = 8;
const FUTEX_WAIT_BITSET: u64 = 9;
const FUTEX_WAKE_BITSET: u64 = 10;
const FUTEX_WAIT_REQUEUE_PI: u64 = 11;
const FUTEX_LOCK_PI2: u64 = 13;
const FUTEX_PRIVATE: u64 = 128;
const FUTEX_CLOCK_REALTIME: u64 = 256;
const FUTEX_BITSET_ANY: u32 = u32::MAX;
/// The bitset a LOCK_PI waiter waits with: all bits, as a plain `FUTEX_WAIT`'s (glibc never
/// mixes plain and PI waits on one word; UNLOCK_PI hands the lock to the first waiter).
const PI_BITSET: u32 = u32::MAX;

impl Kernel {
    /// The machine clock in nanoseconds: one per retired instruction plus the time skipped
    /// while every thread waited. Timeouts, sleeps and timers run on it, in every mode.
    pub fn machine_ns(&self, instret: u64) -> u64 {
        instret.saturating_add(self.threads.idle_ns)
    }

    /// The thread table.
    pub fn threads(&self) -> &Threads {
        &self.threads
    }

    /// The thread table, for the scheduler.
    pub fn threads_mut(&mut self) -> &mut Threads {
        &mut self.threads
    }

    /// The thread id of the running thread.
    pub fn tid(&self) -> u32 {
        self.threads.cur().tid
    }

    /// `clone` (a0 flags, a1 stack, a2 parent_tid, a3 tls, a4 child_tid): threads only.
    pub(super) fn sys_clone(
        &mut self,
        mem: &mut Memory,
        x: &mut [u64; 32],
        a: [u64; 6],
    ) -> Result<Ret, i64> {
        let [flags, stack, parent_tid, tls, child_tid, _] = a;
        if flags & CLONE_THREAD == 0 {
            // a process (fork, vfork, posix_spawn): docs/machine.md "Processes"
            let args = [flags & !CSIGNAL, stack, parent_tid, tls, child_tid, 0];
            return self.sys_fork(mem, x, args, flags & CSIGNAL);
        }
        if flags & THREAD_FLAGS != THREAD_FLAGS
            || flags & !(THREAD_FLAGS | THREAD_OPTIONS | CSIGNAL) != 0
            || flags & CSIGNAL != 0
        {
            self.warn_once(
                0x1_0000_0000 | 220,
                &format!(
                    "clone with flags {flags:#x}: only threads (CLONE_VM|CLONE_FS|CLONE_FILES|\
                     CLONE_SIGHAND|CLONE_THREAD, with SYSVSEM, SETTLS, PARENT_SETTID, \
                     CHILD_CLEARTID, CHILD_SETTID) are supported; returning EINVAL"
                ),
            );
            return Err(EINVAL);
        }
        self.spawn(mem, x, [flags, stack, parent_tid, tls, child_tid, 0])
    }

    /// `clone3(args, size)`: the same threads as `clone`, from a `struct clone_args`.
    pub(super) fn sys_clone3(
        &mut self,
        mem: &mut Memory,
        x: &mut [u64; 32],
        args: u64,
        size: u64,
    ) -> Result<Ret, i64> {
        // CLONE_ARGS_SIZE_VER0 is 64 bytes; larger structs must have zeros past what we know
        if !(64..=4096).contains(&size) {
            return Err(EINVAL);
        }
        let mut b = vec![0u8; size as usize];
        mem.read_bytes(args, &mut b).map_err(|_| EFAULT)?;
        let word = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
        // flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
        // set_tid_size, cgroup
        let known = 88.min(b.len());
        if b[known..].iter().any(|&v| v != 0) || (b.len() >= 80 && (word(8) != 0 || word(9) != 0)) {
            return Err(EINVAL); // set_tid and unknown extensions are not supported
        }
        let (flags, exit_signal, stack, stack_size) = (word(0), word(4), word(5), word(6));
        if flags & CSIGNAL != 0
            || exit_signal > 64
            || (exit_signal != 0 && flags & CLONE_THREAD != 0)
        {
            return Err(EINVAL);
        }
        // as Linux's clone3_stack_valid: a stack and its size come together
        if (stack == 0) != (stack_size == 0) {
            return Err(EINVAL);
        }
        let top = stack.checked_add(stack_size).ok_or(EINVAL)?;
        // CLONE_PIDFD's descriptor goes to `pidfd`: an unwritable one is EFAULT first
        const CLONE_PIDFD: u64 = 0x1000;
        if flags & CLONE_PIDFD != 0 && mem.check_range(word(1), 4, crate::memory::perm::W).is_err()
        {
            return Err(EFAULT);
        }
        self.sys_clone(
            mem,
            x,
            [flags | exit_signal, top, word(3), word(7), word(2), 0],
        )
    }

    fn spawn(&mut self, mem: &mut Memory, x: &mut [u64; 32], a: [u64; 6]) -> Result<Ret, i64> {
        let [flags, stack, parent_tid, tls, child_tid, _] = a;
        let threads = &mut self.threads;
        if threads.list.len() >= threads.max_threads {
            // the run ends at the scheduling point this asks for (Outcome::ThreadLimit)
            threads.limit_hit = true;
            return Ok(Ret::Switch(-EAGAIN));
        }
        let charge = (threads.list.len() as u64 + 1) * THREAD_CHARGE;
        if mem.mapped_pages() * crate::memory::PAGE_SIZE + charge > self.memory_limit {
            return Err(super::ENOMEM);
        }
        let tid = threads.next_tid;
        if flags & CLONE_PARENT_SETTID != 0 {
            mem.store_u32(parent_tid, tid).map_err(|_| EFAULT)?;
        }
        if flags & CLONE_CHILD_SETTID != 0 {
            mem.store_u32(child_tid, tid).map_err(|_| EFAULT)?;
        }
        let index = threads.next_index;
        threads.next_tid += 1;
        threads.next_index += 1;
        let parent = threads.cur();
        let mut t = Thread::new(index, tid);
        t.sigmask = parent.sigmask;
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
        t.name = parent.name;
        threads.list.push(t);
        if threads.stats.len() < MAX_THREAD_STATS {
            threads.stats.push(ThreadStat {
                index,
                tid,
                pid: threads.pid,
                ..ThreadStat::default()
            });
        }
        x[10] = u64::from(tid);
        Ok(Ret::Spawned)
    }

    /// `exit` of one thread: the last one's ends the process.
    pub(super) fn sys_exit_thread(&mut self, mem: &mut Memory, code: u64) -> SyscallOutcome {
        let live = self
            .threads
            .list
            .iter()
            .filter(|t| t.wait != Wait::Exited)
            .count();
        if live <= 1 {
            return SyscallOutcome::Exit((code & 0xff) as i32);
        }
        self.thread_exits(mem);
        self.threads.cur_mut().wait = Wait::Exited;
        SyscallOutcome::Reschedule
    }

    /// What Linux does as a thread exits: the robust list's futexes held by it are marked
    /// OWNER_DIED and one waiter each woken, then `*clear_child_tid` is zeroed and woken.
    fn thread_exits(&mut self, mem: &mut Memory) {
        let (tid, robust, clear) = {
            let t = self.threads.cur();
            (t.tid, t.robust_list, t.clear_tid)
        };
        if robust != 0 {
            self.walk_robust_list(mem, tid, robust);
        }
        if clear != 0 && mem.store_u32(clear, 0).is_ok() {
            self.threads.futex_wake(clear, FUTEX_BITSET_ANY, 1);
        }
    }

    /// `struct robust_list_head { next, futex_offset, list_op_pending }`: each entry's futex
    /// word is at entry + offset; a word whose TID bits are `tid` gets OWNER_DIED (bit 30).
    fn walk_robust_list(&mut self, mem: &mut Memory, tid: u32, head: u64) {
        const OWNER_DIED: u32 = 0x4000_0000;
        const WAITERS: u32 = 0x8000_0000;
        let (Ok(mut entry), Ok(offset), Ok(pending)) = (
            mem.load_u64(head),
            mem.load_u64(head.wrapping_add(8)),
            mem.load_u64(head.wrapping_add(16)),
        ) else {
            return;
        };
        let visit = |k: &mut Kernel, mem: &mut Memory, e: u64| {
            let addr = (e & !1).wrapping_add(offset);
            if let Ok(word) = mem.load_u32(addr) {
                if word & 0x3fff_ffff == tid
                    && mem.store_u32(addr, (word & WAITERS) | OWNER_DIED).is_ok()
                {
                    k.threads.futex_wake(addr, FUTEX_BITSET_ANY, 1);
                }
            }
        };
        let mut n = 0;
        while entry != head && entry != 0 && n < ROBUST_LIST_LIMIT {
            visit(self, mem, entry);
            let Ok(next) = mem.load_u64(entry & !1) else {
                break;
            };
            entry = next;
            n += 1;
        }
        if pending != 0 {
            visit(self, mem, pending);
        }
    }

    /// `set_robust_list(head, len)`.
    pub(super) fn sys_set_robust_list(&mut self, head: u64, len: u64) -> i64 {
        if len != 24 {
            return -EINVAL;
        }
        self.threads.cur_mut().robust_list = head;
        0
    }

    /// `get_robust_list(tid, head_ptr, len_ptr)`.
    pub(super) fn sys_get_robust_list(
        &mut self,
        mem: &mut Memory,
        tid: u64,
        head: u64,
        len: u64,
    ) -> i64 {
        let t = if tid == 0 {
            Some(self.threads.current)
        } else {
            self.threads.by_tid(tid)
        };
        let Some(t) = t else { return -ESRCH };
        let h = self.threads.list[t].robust_list;
        if mem.store_u64(head, h).is_err() || mem.store_u64(len, 24).is_err() {
            return -EFAULT;
        }
        0
    }

    /// `set_tid_address(ptr)`: the running thread's clear-child-tid address; returns its tid.
    pub(super) fn sys_set_tid_address(&mut self, ptr: u64) -> i64 {
        let t = self.threads.cur_mut();
        t.clear_tid = ptr;
        i64::from(t.tid)
    }

    /// `futex(uaddr, op, val, timeout/val2, uaddr2, val3)`.
    pub(super) fn sys_futex(
        &mut self,
        mem: &mut Memory,
        a: [u64; 6],
        instret: u64,
    ) -> Result<Ret, i64> {
        let [addr, op, val, timeout, addr2, val3] = a;
        let cmd = op & !(FUTEX_PRIVATE | FUTEX_CLOCK_REALTIME);
        if op & FUTEX_CLOCK_REALTIME != 0
            && !matches!(
                cmd,
                FUTEX_WAIT_BITSET | FUTEX_WAIT_REQUEUE_PI | FUTEX_LOCK_PI2
            )
        {
            return Err(ENOSYS);
        }
        if addr % 4 != 0 {
            return Err(EINVAL);
        }
        let val = val as u32;
        let done = |r: u64| Ok(Ret::Value(r as i64));
        // Linux finds a futex's key before waking or requeueing: a private futex needs only a
        // user address (`access_ok`), a shared one a mapped page (EFAULT otherwise)
        let private = op & FUTEX_PRIVATE != 0;
        let key = |mem: &Memory, a: u64| {
            let user = a
                .checked_add(4)
                .is_some_and(|e| e <= crate::memory::USER_TOP);
            if user && (private || mem.is_mapped(a & !0xfff, 0x1000)) {
                Ok(())
            } else {
                Err(EFAULT)
            }
        };
        match cmd {
            FUTEX_WAIT | FUTEX_WAIT_BITSET => {
                self.futex_wait(mem, [addr, op, u64::from(val), timeout, val3], instret)
            }
            FUTEX_WAKE | FUTEX_WAKE_BITSET => {
                let bitset = if cmd == FUTEX_WAKE {
                    FUTEX_BITSET_ANY
                } else {
                    val3 as u32
                };
                if bitset == 0 {
                    return Err(EINVAL);
                }
                key(mem, addr)?;
                let n = u64::from(val);
                let mut woken = self.threads.futex_wake(addr, bitset, n);
                // a word in shared memory: the other processes' waiters on it too
                if let Some(k) = mem.shared_at(addr).filter(|_| !private && woken < n) {
                    woken += self.futex_wake_parked(k, bitset, n - woken);
                }
                done(woken)
            }
            FUTEX_REQUEUE | FUTEX_CMP_REQUEUE => {
                // a negative count to wake or to requeue is EINVAL (Linux since CVE-2018-6927)
                if addr2 % 4 != 0 || (val as i32) < 0 || (timeout as i32) < 0 {
                    return Err(EINVAL);
                }
                key(mem, addr)?;
                key(mem, addr2)?;
                if cmd == FUTEX_CMP_REQUEUE {
                    let word = mem.load_u32(addr).map_err(|_| EFAULT)?;
                    if word != val3 as u32 {
                        return Err(EAGAIN);
                    }
                }
                let woken = self
                    .threads
                    .futex_wake(addr, FUTEX_BITSET_ANY, u64::from(val));
                let moved = if addr2 == addr {
                    0
                } else {
                    self.threads
                        .futex_requeue(addr, addr2, u64::from(timeout as u32))
                };
                done(woken + if cmd == FUTEX_CMP_REQUEUE { moved } else { 0 })
            }
            FUTEX_WAKE_OP => {
                if addr2 % 4 != 0 {
                    return Err(EINVAL);
                }
                let old = mem.load_u32(addr2).map_err(|_| EFAULT)?;
                let (new, hit) = wake_op(val3 as u32, old)?;
                mem.store_u32(addr2, new).map_err(|_| EFAULT)?;
                let mut woken = self
                    .threads
                    .futex_wake(addr, FUTEX_BITSET_ANY, u64::from(val));
                if hit {
                    woken +=
                        self.threads
                            .futex_wake(addr2, FUTEX_BITSET_ANY, timeout & 0xffff_ffff);
                }
                done(woken)
            }
            // priority inheritance: ownership by thread id in the word, handed to the first
            // waiter at unlock (one hart runs everyone: there is no priority to inherit)
            FUTEX_LOCK_PI | FUTEX_LOCK_PI2 | FUTEX_TRYLOCK_PI => {
                self.futex_lock_pi(mem, [addr, op, timeout], instret)
            }
            FUTEX_UNLOCK_PI => self.futex_unlock_pi(mem, addr),
            // requeueing onto a PI futex: as a kernel built without it answers
            FUTEX_WAIT_REQUEUE_PI | 12 => Err(ENOSYS),
            FUTEX_FD => Err(EINVAL),
            _ => Err(ENOSYS),
        }
    }

    /// `FUTEX_LOCK_PI`, `FUTEX_LOCK_PI2`, `FUTEX_TRYLOCK_PI`: takes the lock word at `addr`
    /// (0, or an owner that is no longer a thread of the process) for the caller, else (not
    /// for TRYLOCK) marks it `FUTEX_WAITERS` and waits until the owner hands it over at
    /// unlock or the absolute deadline passes (CLOCK_REALTIME for LOCK_PI, as Linux; the
    /// op's clock for LOCK_PI2).
    fn futex_lock_pi(&mut self, mem: &mut Memory, a: [u64; 3], instret: u64) -> Result<Ret, i64> {
        const WAITERS: u32 = 0x8000_0000;
        const OWNER_DIED: u32 = 0x4000_0000;
        const EDEADLK: i64 = 35;
        let [addr, op, timeout] = a;
        let cmd = op & !(FUTEX_PRIVATE | FUTEX_CLOCK_REALTIME);
        let tid = self.threads.cur().tid;
        let word = mem.load_u32(addr).map_err(|_| EFAULT)?;
        let owner = word & 0x3fff_ffff;
        if owner == tid {
            return Err(EDEADLK);
        }
        let owner_gone = owner != 0 && self.threads.by_tid(u64::from(owner)).is_none();
        if owner == 0 || owner_gone {
            // free, or its owner exited without the robust list releasing it
            let died = if owner_gone {
                OWNER_DIED
            } else {
                word & OWNER_DIED
            };
            mem.store_u32(addr, tid | died | (word & WAITERS))
                .map_err(|_| EFAULT)?;
            return Ok(Ret::Value(0));
        }
        if cmd == FUTEX_TRYLOCK_PI {
            return Err(EAGAIN);
        }
        mem.store_u32(addr, word | WAITERS).map_err(|_| EFAULT)?;
        let deadline = if timeout == 0 {
            None
        } else {
            let t = read_timespec(mem, timeout)?;
            let realtime = cmd == FUTEX_LOCK_PI || op & FUTEX_CLOCK_REALTIME != 0;
            let clock_now = if realtime {
                self.realtime_ns(instret)
            } else {
                self.monotonic_ns(instret)
            };
            Some(
                self.machine_ns(instret)
                    .saturating_add(t.saturating_sub(clock_now)),
            )
        };
        if deadline.is_some_and(|d| d <= self.machine_ns(instret)) {
            return Err(ETIMEDOUT);
        }
        self.threads.block(
            Wait::Futex {
                addr,
                bitset: PI_BITSET,
                deadline,
                shared: None,
            },
            addr,
        );
        Ok(Ret::Block)
    }

    /// `FUTEX_UNLOCK_PI`: the caller, owning the word at `addr`, hands it to the first
    /// thread waiting in LOCK_PI (the word then names it, with `FUTEX_WAITERS` if others
    /// wait), or frees it.
    fn futex_unlock_pi(&mut self, mem: &mut Memory, addr: u64) -> Result<Ret, i64> {
        const WAITERS: u32 = 0x8000_0000;
        let tid = self.threads.cur().tid;
        let word = mem.load_u32(addr).map_err(|_| EFAULT)?;
        if word & 0x3fff_ffff != tid {
            return Err(EPERM);
        }
        let waiting = |t: &Thread| matches!(t.wait, Wait::Futex { addr: a, bitset: PI_BITSET, .. } if a == addr);
        let next = self
            .threads
            .list
            .iter()
            .enumerate()
            .filter(|(_, t)| waiting(t))
            .min_by_key(|(_, t)| t.wait_seq)
            .map(|(i, t)| (i, t.tid));
        let new = match next {
            Some((i, next_tid)) => {
                let more = self.threads.list.iter().filter(|t| waiting(t)).count() > 1;
                self.threads.wake(i, 0);
                next_tid | if more { WAITERS } else { 0 }
            }
            None => 0,
        };
        mem.store_u32(addr, new).map_err(|_| EFAULT)?;
        Ok(Ret::Switch(0))
    }

    /// `FUTEX_WAIT(_BITSET)`: blocks the thread while the word at `addr` holds `val`, until
    /// woken or the deadline (relative for WAIT; absolute on the clock the op names for
    /// WAIT_BITSET).
    fn futex_wait(&mut self, mem: &mut Memory, a: [u64; 5], instret: u64) -> Result<Ret, i64> {
        let [addr, op, val, timeout, val3] = a;
        let cmd = op & !(FUTEX_PRIVATE | FUTEX_CLOCK_REALTIME);
        let val = val as u32;
        let bitset = if cmd == FUTEX_WAIT {
            FUTEX_BITSET_ANY
        } else {
            val3 as u32
        };
        if bitset == 0 {
            return Err(EINVAL);
        }
        let deadline = if timeout == 0 {
            None
        } else {
            let t = super::threads::read_timespec(mem, timeout)?;
            let now = self.machine_ns(instret);
            Some(if cmd == FUTEX_WAIT {
                now.saturating_add(t) // relative
            } else {
                // absolute, on CLOCK_REALTIME or CLOCK_MONOTONIC: what is left of it,
                // from the clock the guest reads, on the machine clock
                let clock_now = if op & FUTEX_CLOCK_REALTIME != 0 {
                    self.realtime_ns(instret)
                } else {
                    self.monotonic_ns(instret)
                };
                now.saturating_add(t.saturating_sub(clock_now))
            })
        };
        let word = mem.load_u32(addr).map_err(|_| EFAULT)?;
        if word != val {
            return Err(EAGAIN);
        }
        if deadline.is_some_and(|d| d <= self.machine_ns(instret)) {
            return Err(ETIMEDOUT);
        }
        let shared = if op & FUTEX_PRIVATE == 0 {
            mem.shared_at(addr)
        } else {
            None
        };
        self.threads.block(
            Wait::Futex {
                addr,
                bitset,
                deadline,
                shared,
            },
            addr,
        );
        Ok(Ret::Block)
    }

    /// `nanosleep(req, rem)` and `clock_nanosleep(clock, flags, req, rem)`.
    pub(super) fn sys_sleep(
        &mut self,
        mem: &mut Memory,
        clock: Option<(u64, u64)>,
        req: u64,
        rem: u64,
        instret: u64,
    ) -> Result<Ret, i64> {
        let t = read_timespec(mem, req)?;
        let now = self.machine_ns(instret);
        let deadline = match clock {
            Some((clock, flags)) if flags & 1 != 0 => {
                // TIMER_ABSTIME on the named clock
                let clock_now = match clock {
                    0 | 5 | 8 => self.realtime_ns(instret),
                    1 | 4 | 6 | 7 | 2 | 3 => self.monotonic_ns(instret),
                    _ => return Err(EINVAL),
                };
                now.saturating_add(t.saturating_sub(clock_now))
            }
            Some((clock, _)) if clock > 11 => return Err(EINVAL),
            // a thread's CPU clock cannot be slept on (Linux's posix_cpu_nsleep)
            Some((3, _)) => return Err(95), // ENOTSUP
            _ => now.saturating_add(t),
        };
        if deadline <= now {
            return Ok(Ret::Value(0));
        }
        // clock_nanosleep with TIMER_ABSTIME never writes rem
        let rem = if clock.is_some_and(|(_, f)| f & 1 != 0) {
            0
        } else {
            rem
        };
        self.threads.block(Wait::Sleep { deadline, rem }, req);
        Ok(Ret::Block)
    }

    /// `tkill(tid, sig)` and `tgkill(tgid, tid, sig)`: to a thread of this process only.
    pub(super) fn sys_tgkill(&mut self, tgid: Option<u64>, tid: u64, sig: u64) -> Result<Ret, i64> {
        self.signal_thread(tgid, tid, sig, None)
    }

    /// `tgkill`/`tkill` (`info` None: `SI_TKILL` from the caller) and `rt_tgsigqueueinfo`
    /// (the guest's own siginfo).
    pub(super) fn signal_thread(
        &mut self,
        tgid: Option<u64>,
        tid: u64,
        sig: u64,
        queued: Option<SigInfo>,
    ) -> Result<Ret, i64> {
        if sig > 64 {
            return Err(EINVAL);
        }
        if tid as i64 <= 0 || tgid.is_some_and(|g| g as i64 <= 0) {
            return Err(EINVAL);
        }
        // a real-time signal from a thread queues against RLIMIT_SIGPENDING: EAGAIN past it
        const RLIMIT_SIGPENDING: usize = 11;
        if sig >= 32 {
            let queued = self
                .threads
                .list
                .iter()
                .map(|t| u64::from(t.pending.count_ones()))
                .sum::<u64>()
                + u64::from(self.signals.shared_pending.count_ones());
            if queued >= self.rlimit(RLIMIT_SIGPENDING) {
                return Err(EAGAIN);
            }
        }
        let me = self.threads.pid;
        let owner = tgid.map_or(tid as u32, |g| g as u32);
        if u64::from(owner) == tid && owner != me && tgid.is_none_or(|g| g == tid) {
            // the main thread of another of the guest's processes
            let info = queued.unwrap_or(SigInfo {
                code: -6, // SI_TKILL
                word16: self.pid() as u64 & 0xffff_ffff,
                word24: 0,
            });
            return match self.processes().list.iter().find(|p| p.pid == owner) {
                Some(p) if p.status.is_none() => {
                    if sig != 0 {
                        self.signal_process(owner, sig, info);
                    }
                    Ok(Ret::Switch(0))
                }
                _ => Err(ESRCH),
            };
        }
        if tgid.is_some_and(|g| g as i64 != self.pid()) {
            return Err(ESRCH);
        }
        let Some(t) = self.threads.by_tid(tid) else {
            return Err(ESRCH);
        };
        if sig == 0 {
            return Ok(Ret::Value(0));
        }
        let info = queued.unwrap_or(SigInfo {
            code: -6, // SI_TKILL
            word16: self.pid() as u64 & 0xffff_ffff,
            word24: 0,
        });
        self.send_to_thread(t, sig, info);
        Ok(Ret::Value(0))
    }

    /// `rt_sigqueueinfo(tgid, sig, info)` (`tid` None) and `rt_tgsigqueueinfo`: a signal
    /// with the caller's siginfo (`si_code`, the pid/uid word and `si_value`). Another
    /// process may only be sent a negative `si_code` other than `SI_TKILL` (`EPERM`, as Linux:
    /// a process cannot pose as the kernel).
    pub(super) fn sys_sigqueueinfo(
        &mut self,
        mem: &mut Memory,
        tgid: u64,
        tid: Option<u64>,
        sig: u64,
        uinfo: u64,
    ) -> Result<Ret, i64> {
        let mut b = [0u8; 32];
        mem.read_bytes(uinfo, &mut b).map_err(|_| EFAULT)?;
        let code = i32::from_le_bytes([b[8], b[9], b[10], b[11]]);
        let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
        let info = SigInfo {
            code,
            word16: word(16),
            word24: word(24),
        };
        if sig > 64 {
            return Err(EINVAL);
        }
        if (code >= 0 || code == -6)
            && tgid as i64 != self.pid()
            && self.threads.by_tid(tgid).is_none()
        {
            return Err(EPERM);
        }
        match tid {
            Some(t) => self.signal_thread(Some(tgid), t, sig, Some(info)),
            None if (tgid as i64) <= 0 => Err(ESRCH),
            // a thread's id names its process, as for kill
            None if self.threads.by_tid(tgid).is_some() => {
                let me = self.pid();
                self.kill_processes(me, sig, info)
            }
            None => self.kill_processes(tgid as i64, sig, info),
        }
    }

    /// `sched_getaffinity(pid, size, mask)`: one CPU.
    pub(super) fn sys_sched_getaffinity(
        &mut self,
        mem: &mut Memory,
        pid: u64,
        size: u64,
        mask: u64,
    ) -> i64 {
        if pid != 0 && self.threads.by_tid(pid).is_none() {
            return -ESRCH;
        }
        if size < 8 || size % 8 != 0 {
            return -EINVAL;
        }
        if mem.store_u64(mask, 1).is_err() {
            return -EFAULT;
        }
        8
    }

    /// `prctl(option, arg2…)`: the thread's name here, the other options in `misc.rs`.
    pub(super) fn sys_prctl(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        let (option, arg) = (a[0], a[1]);
        const PR_SET_NAME: u64 = 15;
        const PR_GET_NAME: u64 = 16;
        match option {
            PR_SET_NAME => {
                let Ok(s) = mem.read_cstr(arg, 16) else {
                    return -EFAULT;
                };
                let mut name = [0u8; 16];
                let n = s.len().min(15);
                name[..n].copy_from_slice(&s[..n]);
                self.threads.cur_mut().name = name;
                0
            }
            PR_GET_NAME => {
                let name = self.threads.cur().name;
                if mem.write_bytes(arg, &name).is_err() {
                    return -EFAULT;
                }
                0
            }
            _ => self.prctl_other(mem, a),
        }
    }
}

/// `FUTEX_WAKE_OP`'s encoded operation on the old word: the new word, and whether the
/// comparison holds (Linux's `futex_atomic_op_inuser`).
fn wake_op(encoded: u32, old: u32) -> Result<(u32, bool), i64> {
    let oparg = if encoded & (8 << 28) != 0 {
        1u32.checked_shl((encoded >> 12) & 0xfff).unwrap_or(0)
    } else {
        ((encoded << 8) as i32 >> 20) as u32 // sign-extended 12 bits
    };
    let new = match (encoded >> 28) & 7 {
        0 => oparg,
        1 => old.wrapping_add(oparg),
        2 => old | oparg,
        3 => old & !oparg,
        4 => old ^ oparg,
        _ => return Err(ENOSYS),
    };
    let cmparg = ((encoded << 20) as i32 >> 20) as u32;
    let hit = match (encoded >> 24) & 15 {
        0 => old == cmparg,
        1 => old != cmparg,
        2 => (old as i32) < (cmparg as i32),
        3 => (old as i32) <= (cmparg as i32),
        4 => (old as i32) > (cmparg as i32),
        5 => (old as i32) >= (cmparg as i32),
        _ => return Err(ENOSYS),
    };
    Ok((new, hit))
}
