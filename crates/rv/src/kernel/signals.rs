//! Signals (docs/machine.md, "Signals"): dispositions, per-thread masks and pending sets,
//! `kill`/`tgkill` within the guest, `sigaltstack`, `rt_sigsuspend`/`rt_sigtimedwait`, and the
//! interval and POSIX timers, driven by the machine clock.
//!
//! The kernel only queues signals and chooses their thread; the machine delivers them (builds
//! the frame, enters the handler, or ends the run by the default action) at its scheduling
//! points (`machine/sched.rs`).

use super::threads::{read_timespec, AltStack, SigInfo, Wait};
use super::{Kernel, Ret, SigAction, EAGAIN, EFAULT, EINVAL, ENOMEM, EPERM};
use crate::memory::Memory;

/// SIGKILL's and SIGSTOP's bits: never blocked, caught or ignored.
pub const UNBLOCKABLE: u64 = (1 << 8) | (1 << 18);
/// `SA_SIGINFO`.
pub const SA_SIGINFO: u64 = 4;
/// `SA_ONSTACK`: run the handler on the alternate stack.
pub const SA_ONSTACK: u64 = 0x0800_0000;
/// `SA_RESTART`: restart a system call the signal interrupted.
pub const SA_RESTART: u64 = 0x1000_0000;
/// `SA_RESETHAND`: back to the default action once delivered.
pub const SA_RESETHAND: u64 = 0x8000_0000;
/// `si_code` of a signal from `kill`.
pub const SI_USER: i32 = 0;
/// `si_code` of a signal from the kernel (interval timers, SIGPIPE).
pub const SI_KERNEL: i32 = 0x80;
/// `si_code` of a POSIX timer's signal.
pub const SI_TIMER: i32 = -2;
/// Linux's `MINSIGSTKSZ` on riscv64.
pub const MINSIGSTKSZ: u64 = 2048;
/// Most POSIX timers a guest may create.
pub const MAX_TIMERS: usize = 64;

/// What a signal does when no handler catches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultAction {
    /// Ends the process.
    Terminate,
    /// Ends the process with a core dump (reported as such; no core file is written).
    Core,
    /// Nothing.
    Ignore,
    /// Stops the process (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU): a run cannot be stopped and
    /// continued, so the machine ignores these with a warning.
    Stop,
}

/// Linux's default action for `sig` (signal(7)).
pub fn default_action(sig: u64) -> DefaultAction {
    match sig {
        3 | 4 | 5 | 6 | 7 | 8 | 11 | 24 | 25 | 31 => DefaultAction::Core,
        17 | 18 | 23 | 28 => DefaultAction::Ignore,
        19..=22 => DefaultAction::Stop,
        _ => DefaultAction::Terminate,
    }
}

/// The name of signal `sig` (`SIGSEGV`, `SIGRT3`…).
pub fn signal_name(sig: u64) -> String {
    const NAMES: [&str; 32] = [
        "",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    match sig {
        1..=31 => NAMES[sig as usize].to_string(),
        32..=64 => format!("SIGRT{}", sig - 32),
        _ => format!("signal {sig}"),
    }
}

fn bit(sig: u64) -> u64 {
    1 << (sig - 1)
}

/// One armed (or disarmed) timer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timer {
    /// When it next fires (machine ns); `None` while disarmed.
    pub deadline: Option<u64>,
    /// Its period (0: one shot).
    pub interval: u64,
    /// The signal it sends (0: none, SIGEV_NONE).
    pub signal: u64,
    /// The thread it signals (SIGEV_THREAD_ID), else the process.
    pub thread: Option<u32>,
    /// `si_code`.
    pub code: i32,
    /// `sigev_value`.
    pub value: u64,
    /// Expirations missed since its signal was last delivered.
    pub overrun: u32,
    /// The overruns its last signal carried (`timer_getoverrun`, Linux's
    /// `it_overrun_last`).
    pub last_overrun: u32,
    /// The clock its absolute times are on.
    pub clock: u64,
}

/// Process-wide signal state.
#[derive(Default)]
pub struct Signals {
    /// Signals pending for the process that no thread could take yet.
    pub shared_pending: u64,
    shared_infos: Vec<SigInfo>,
    /// `timer_create`'s timers by id.
    pub timers: Vec<Option<Timer>>,
    /// `setitimer`'s ITIMER_REAL, ITIMER_VIRTUAL and ITIMER_PROF.
    pub itimers: [Timer; 3],
}

impl Signals {
    /// The earliest time one of these timers fires.
    pub(super) fn next_timer(&self) -> Option<u64> {
        self.timers
            .iter()
            .flatten()
            .chain(self.itimers.iter())
            .filter_map(|t| t.deadline)
            .min()
    }
}

impl Kernel {
    /// The disposition of `sig`.
    fn ignored(&self, sig: u64) -> bool {
        let h = self.action(sig).handler;
        h == 1 || (h == 0 && matches!(default_action(sig), DefaultAction::Ignore))
    }

    /// Queues `sig` for live thread `i` (list index); an ignored, unblocked signal is
    /// dropped, as Linux drops it when it is sent.
    pub(super) fn send_to_thread(&mut self, i: usize, sig: u64, info: SigInfo) {
        let t = &mut self.threads.list[i];
        if let Wait::SigWait { set, .. } = t.wait {
            if set & bit(sig) != 0 {
                t.pending |= bit(sig);
                t.infos[sig as usize - 1] = info;
                return;
            }
        }
        let blocked = t.sigmask & bit(sig) != 0;
        if !blocked && self.ignored(sig) {
            return;
        }
        let t = &mut self.threads.list[i];
        if t.pending & bit(sig) == 0 {
            t.infos[sig as usize - 1] = info;
        }
        t.pending |= bit(sig);
        self.io_changed(); // a signalfd read waiting for it looks again
    }

    /// Queues `sig` for the process: a thread waiting for it in `rt_sigtimedwait`, else the
    /// running thread if it does not block it, else the first that does not, else the
    /// process's shared set (taken by the first thread that unblocks it).
    pub(super) fn send_to_process(&mut self, sig: u64, info: SigInfo) {
        let list = &self.threads.list;
        let waiting = list
            .iter()
            .position(|t| matches!(t.wait, Wait::SigWait { set, .. } if set & bit(sig) != 0));
        let cur = self.threads.current;
        let open = |t: &super::threads::Thread| t.sigmask & bit(sig) == 0 && t.wait != Wait::Exited;
        let target = waiting
            .or_else(|| open(&list[cur]).then_some(cur))
            .or_else(|| list.iter().position(open));
        match target {
            Some(i) => self.send_to_thread(i, sig, info),
            None => {
                if self.signals.shared_infos.is_empty() {
                    self.signals.shared_infos = vec![SigInfo::default(); 64];
                }
                if self.signals.shared_pending & bit(sig) == 0 {
                    self.signals.shared_infos[sig as usize - 1] = info;
                }
                self.signals.shared_pending |= bit(sig);
            }
        }
    }

    /// Moves the process-wide pending signals thread `i` does not block to it.
    pub fn take_shared(&mut self, i: usize) {
        let open = self.signals.shared_pending & !self.threads.list[i].sigmask;
        if open == 0 {
            return;
        }
        for sig in 1..=64u64 {
            if open & bit(sig) != 0 {
                self.signals.shared_pending &= !bit(sig);
                let info = self.signals.shared_infos[sig as usize - 1];
                self.send_to_thread(i, sig, info);
            }
        }
    }

    /// The lowest-numbered signal pending for thread `i` that it does not block.
    pub fn deliverable(&self, i: usize) -> Option<u64> {
        let t = &self.threads.list[i];
        let open = t.pending & !t.sigmask;
        (open != 0).then(|| u64::from(open.trailing_zeros()) + 1)
    }

    /// Takes `sig` off thread `i`'s pending set; its siginfo.
    pub fn dequeue(&mut self, i: usize, sig: u64) -> SigInfo {
        let t = &mut self.threads.list[i];
        t.pending &= !bit(sig);
        t.infos[sig as usize - 1]
    }

    /// Raises SIGPIPE at the running thread (a write to a pipe with no reader).
    pub(super) fn raise_sigpipe(&mut self) {
        if self.no_sigpipe {
            return;
        }
        self.raise_signal_here(13);
    }

    /// Signal `sig` from the kernel to the calling thread (`SIGPIPE`, `SIGXFSZ`).
    pub(super) fn raise_signal_here(&mut self, sig: u64) {
        let info = SigInfo {
            code: SI_KERNEL,
            ..SigInfo::default()
        };
        let i = self.threads.current;
        self.send_to_thread(i, sig, info);
    }

    /// Replaces `sig`'s disposition (SA_RESETHAND's reset as a handler is entered).
    pub fn set_action(&mut self, sig: u64, act: SigAction) {
        if let Some(a) = self.actions.get_mut(sig as usize) {
            *a = act;
        }
    }

    /// The blocked-signal mask of the running thread (bit `sig - 1`).
    pub fn sigmask(&self) -> u64 {
        self.threads.cur().sigmask
    }

    /// Replaces the running thread's mask (SIGKILL and SIGSTOP are never blocked).
    pub fn set_sigmask(&mut self, mask: u64) {
        self.threads.cur_mut().sigmask = mask & !UNBLOCKABLE;
        let i = self.threads.current;
        self.take_shared(i);
    }

    /// The running thread's alternate signal stack.
    pub fn altstack(&self) -> AltStack {
        self.threads.cur().altstack
    }

    /// Replaces the running thread's alternate signal stack.
    pub fn set_altstack(&mut self, s: AltStack) {
        self.threads.cur_mut().altstack = s;
    }

    pub(super) fn sys_rt_sigaction(
        &mut self,
        mem: &mut Memory,
        sig: u64,
        act: u64,
        oldact: u64,
        size: u64,
    ) -> i64 {
        // the kernel's struct sigaction on riscv64: handler, flags, mask (no restorer)
        if size != 8 || !(1..=64).contains(&sig) {
            return -EINVAL;
        }
        let old = self.actions[sig as usize];
        let new = if act != 0 {
            let mut b = [0u8; 24];
            if mem.read_bytes(act, &mut b).is_err() {
                return -EFAULT;
            }
            if bit(sig) & UNBLOCKABLE != 0 {
                return -EINVAL; // SIGKILL and SIGSTOP cannot be caught
            }
            let word =
                |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
            Some(SigAction {
                handler: word(0),
                flags: word(1),
                mask: word(2) & !UNBLOCKABLE,
            })
        } else {
            None
        };
        if oldact != 0 {
            let mut b = [0u8; 24];
            b[0..8].copy_from_slice(&old.handler.to_le_bytes());
            b[8..16].copy_from_slice(&old.flags.to_le_bytes());
            b[16..24].copy_from_slice(&old.mask.to_le_bytes());
            if mem.write_bytes(oldact, &b).is_err() {
                return -EFAULT;
            }
        }
        if let Some(n) = new {
            self.actions[sig as usize] = n;
            if self.ignored(sig) {
                // POSIX: setting a pending signal to ignored discards it
                for t in &mut self.threads.list {
                    t.pending &= !bit(sig);
                }
                self.signals.shared_pending &= !bit(sig);
            }
        }
        0
    }

    pub(super) fn sys_rt_sigprocmask(
        &mut self,
        mem: &mut Memory,
        how: u64,
        set: u64,
        oldset: u64,
        size: u64,
    ) -> Result<Ret, i64> {
        if size != 8 {
            return Err(EINVAL);
        }
        let cur = self.sigmask();
        let new = if set != 0 {
            let s = mem.load_u64(set).map_err(|_| EFAULT)?;
            Some(match how {
                0 => cur | s,
                1 => cur & !s,
                2 => s,
                _ => return Err(EINVAL),
            })
        } else {
            None
        };
        if oldset != 0 {
            mem.write_bytes(oldset, &cur.to_le_bytes())
                .map_err(|_| EFAULT)?;
        }
        if let Some(m) = new {
            self.set_sigmask(m);
            if self.deliverable(self.threads.current).is_some() {
                return Ok(Ret::Switch(0));
            }
        }
        Ok(Ret::Value(0))
    }

    pub(super) fn sys_rt_sigpending(&mut self, mem: &mut Memory, set: u64, size: u64) -> i64 {
        if size != 8 {
            return -EINVAL;
        }
        let t = self.threads.cur();
        let p = (t.pending | self.signals.shared_pending) & t.sigmask;
        match mem.write_bytes(set, &p.to_le_bytes()) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    pub(super) fn sys_rt_sigsuspend(
        &mut self,
        mem: &mut Memory,
        mask: u64,
        size: u64,
    ) -> Result<Ret, i64> {
        if size != 8 {
            return Err(EINVAL);
        }
        let m = mem.load_u64(mask).map_err(|_| EFAULT)?;
        let saved_mask = self.sigmask();
        self.set_sigmask(m);
        self.threads.block(Wait::Suspend { saved_mask }, mask);
        Ok(Ret::Block)
    }

    /// `ppoll(fds, nfds, timeout, sigmask, size)`: files and stdio are always ready (a read
    /// that would wait blocks the whole machine); with no descriptors it waits for a signal
    /// or the timeout, under `sigmask` if given, like `rt_sigsuspend`.
    pub(super) fn sys_ppoll(
        &mut self,
        mem: &mut Memory,
        a: [u64; 6],
        instret: u64,
    ) -> Result<Ret, i64> {
        const POLLIN: u16 = 1;
        const POLLOUT: u16 = 4;
        const POLLNVAL: u16 = 0x20;
        let [fds, nfds, timeout, sigmask, size, _] = a;
        // Linux: more than RLIMIT_NOFILE is EINVAL
        if nfds > self.rlimit(super::RLIMIT_NOFILE).min(super::MAX_FDS as u64) {
            return Err(EINVAL);
        }
        const POLLERR: u16 = 8;
        const POLLHUP: u16 = 0x10;
        // a retried call keeps the deadline it first computed
        let deadline = match self.threads.cur().retry_deadline {
            Some(d) => Some(d),
            None if timeout == 0 => None,
            None => Some(
                self.machine_ns(instret)
                    .saturating_add(read_timespec(mem, timeout)?),
            ),
        };
        if nfds > 0 {
            let mut ready = 0;
            let mut wake = deadline;
            for i in 0..nfds {
                let at = fds + 8 * i;
                let fd = mem.load_u32(at).map_err(|_| EFAULT)? as i32;
                let events = mem.load_u16(at + 4).map_err(|_| EFAULT)?;
                if let Some(t) = self.timer_deadline(fd as usize) {
                    wake = Some(wake.map_or(t, |w| w.min(t)));
                }
                let revents = if fd < 0 {
                    0
                } else {
                    match self.fd_ready(fd as usize) {
                        Some((r, w, gone)) => {
                            let mut ev = 0;
                            if r {
                                ev |= events & POLLIN;
                            }
                            if w {
                                ev |= events & POLLOUT;
                            }
                            if gone {
                                // a pipe's write end sees POLLERR, every other end POLLHUP
                                let write_end = matches!(
                                    self.fds.get(fd as usize),
                                    Some(Some(super::Fd::Pipe(p))) if p.write
                                );
                                ev |= if write_end { POLLERR } else { POLLHUP };
                            }
                            ev
                        }
                        None => POLLNVAL,
                    }
                };
                mem.store_u16(at + 6, revents).map_err(|_| EFAULT)?;
                ready += i64::from(revents != 0);
            }
            if ready > 0 || deadline.is_some_and(|d| d <= self.machine_ns(instret)) {
                return Ok(Ret::Value(ready));
            }
            // nothing ready: wait for a change (a pipe, a process), a timer or the deadline
            self.threads.cur_mut().retry_deadline = deadline;
            return Ok(self.block_retry(wake));
        }
        if deadline.is_some_and(|d| d <= self.machine_ns(instret)) {
            return Ok(Ret::Value(0));
        }
        let saved_mask = self.sigmask();
        if sigmask != 0 {
            if size != 8 {
                return Err(EINVAL);
            }
            let m = mem.load_u64(sigmask).map_err(|_| EFAULT)?;
            self.set_sigmask(m);
        }
        match deadline {
            // a timed wait for nothing: a sleep that a signal cuts short (its mask comes back
            // when it ends)
            Some(deadline) => {
                self.threads.cur_mut().restore_mask = (sigmask != 0).then_some(saved_mask);
                self.threads.block(Wait::Sleep { deadline, rem: 0 }, fds)
            }
            None => self.threads.block(Wait::Suspend { saved_mask }, fds),
        }
        Ok(Ret::Block)
    }

    /// Runs a waiting call (`epoll_pwait`, `ppoll`, `pselect6`) under the signal mask at
    /// `sigmask` (0: the thread's own), as Linux does: the mask is set when the call starts
    /// (not again when a retried call runs again) and the thread's own comes back when the
    /// call returns, or, if a signal cuts it short, after that signal's handler (the frame
    /// keeps it).
    pub(super) fn with_call_mask(
        &mut self,
        mem: &mut Memory,
        sigmask: u64,
        size: u64,
        call: impl FnOnce(&mut Self, &mut Memory) -> Result<Ret, i64>,
    ) -> Result<Ret, i64> {
        if sigmask != 0 && self.threads.cur().restore_mask.is_none() {
            if size != 8 {
                return Err(EINVAL);
            }
            let m = mem.load_u64(sigmask).map_err(|_| EFAULT)?;
            let saved = self.sigmask();
            self.set_sigmask(m);
            self.threads.cur_mut().restore_mask = Some(saved);
        }
        let r = call(self, mem);
        if !matches!(r, Ok(Ret::Retry)) {
            if let Some(m) = self.threads.cur_mut().restore_mask.take() {
                self.set_sigmask(m);
            }
        }
        r
    }

    pub(super) fn sys_rt_sigtimedwait(
        &mut self,
        mem: &mut Memory,
        set: u64,
        info: u64,
        timeout: u64,
        size: u64,
        instret: u64,
    ) -> Result<Ret, i64> {
        if size != 8 {
            return Err(EINVAL);
        }
        let set = mem.load_u64(set).map_err(|_| EFAULT)? & !UNBLOCKABLE;
        let i = self.threads.current;
        self.take_shared_in(i, set);
        let t = &self.threads.list[i];
        let ready = t.pending & set;
        if ready != 0 {
            let sig = u64::from(ready.trailing_zeros()) + 1;
            let si = self.dequeue(i, sig);
            if info != 0 {
                write_siginfo(mem, info, sig, si).map_err(|_| EFAULT)?;
            }
            return Ok(Ret::Value(sig as i64));
        }
        let deadline = if timeout == 0 {
            None
        } else {
            let t = read_timespec(mem, timeout)?;
            if t == 0 {
                return Err(EAGAIN);
            }
            Some(self.machine_ns(instret).saturating_add(t))
        };
        self.threads.block(
            Wait::SigWait {
                set,
                info,
                deadline,
            },
            set,
        );
        Ok(Ret::Block)
    }

    /// Moves process-wide pending signals in `set` to thread `i` (rt_sigtimedwait takes
    /// blocked signals too).
    pub(super) fn take_shared_in(&mut self, i: usize, set: u64) {
        let take = self.signals.shared_pending & set;
        for sig in 1..=64u64 {
            if take & bit(sig) != 0 {
                self.signals.shared_pending &= !bit(sig);
                let info = self.signals.shared_infos[sig as usize - 1];
                let t = &mut self.threads.list[i];
                t.pending |= bit(sig);
                t.infos[sig as usize - 1] = info;
            }
        }
    }

    /// Ends thread `i`'s rt_sigtimedwait with the signal that arrived for it, if one did.
    pub fn finish_sigwait(&mut self, i: usize, mem: &mut Memory) -> bool {
        let Wait::SigWait { set, info, .. } = self.threads.list[i].wait else {
            return false;
        };
        let ready = self.threads.list[i].pending & set;
        if ready == 0 {
            return false;
        }
        let sig = u64::from(ready.trailing_zeros()) + 1;
        let si = self.dequeue(i, sig);
        let r = if info != 0 && write_siginfo(mem, info, sig, si).is_err() {
            -EFAULT
        } else {
            sig as i64
        };
        self.threads.wake(i, r);
        true
    }

    /// `sigaltstack(ss, old_ss)` with the running thread's `sp`.
    pub(super) fn sys_sigaltstack(&mut self, mem: &mut Memory, ss: u64, old: u64, sp: u64) -> i64 {
        const SS_ONSTACK: u32 = 1;
        const SS_DISABLE: u32 = 2;
        const SS_AUTODISARM: u32 = 1 << 31;
        let cur = self.altstack();
        let on = cur.contains(sp);
        if old != 0 {
            let mut b = [0u8; 24];
            let flags = if on {
                SS_ONSTACK
            } else if cur.size == 0 {
                SS_DISABLE
            } else {
                0
            } | if cur.autodisarm { SS_AUTODISARM } else { 0 };
            b[..8].copy_from_slice(&cur.sp.to_le_bytes());
            b[8..12].copy_from_slice(&flags.to_le_bytes());
            b[16..].copy_from_slice(&cur.size.to_le_bytes());
            if mem.write_bytes(old, &b).is_err() {
                return -EFAULT;
            }
        }
        if ss != 0 {
            let mut b = [0u8; 24];
            if mem.read_bytes(ss, &mut b).is_err() {
                return -EFAULT;
            }
            let base = u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
            let flags = u32::from_le_bytes(b[8..12].try_into().unwrap_or([0; 4]));
            let size = u64::from_le_bytes(b[16..].try_into().unwrap_or([0; 8]));
            if on {
                return -EPERM;
            }
            let mode = flags & !SS_AUTODISARM;
            if mode != 0 && mode != SS_DISABLE && mode != SS_ONSTACK {
                return -EINVAL;
            }
            let new = if mode == SS_DISABLE {
                AltStack::default()
            } else {
                if size < MINSIGSTKSZ {
                    return -ENOMEM;
                }
                if base.checked_add(size).is_none() {
                    return -EINVAL;
                }
                AltStack {
                    sp: base,
                    size,
                    autodisarm: flags & SS_AUTODISARM != 0,
                }
            };
            self.set_altstack(new);
        }
        0
    }

    /// `kill(pid, sig)`: the guest's own processes only (none of the host's is reachable).
    pub(super) fn sys_kill(&mut self, pid: u64, sig: u64) -> Result<Ret, i64> {
        if sig > 64 {
            return Err(EINVAL);
        }
        if pid == u64::from(super::process::INIT_PID)
            && self.procs.get(super::process::INIT_PID).is_none()
        {
            return Ok(Ret::Value(0)); // init, outside the machine, ignores it
        }
        let info = SigInfo {
            code: SI_USER,
            word16: self.pid() as u64 & 0xffff_ffff,
            word24: 0,
        };
        self.kill_processes(pid as i32 as i64, sig, info)
    }

    /// The earliest time a timer fires, if any is armed.
    pub fn next_timer(&self) -> Option<u64> {
        self.signals.next_timer()
    }

    /// Fires every timer due at machine time `now`: sends its signal, rearms a periodic one
    /// (counting expirations missed as overruns).
    pub fn fire_timers(&mut self, now: u64) {
        let mut due: Vec<Timer> = Vec::new();
        let sigs = &mut self.signals;
        for (id, t) in sigs
            .timers
            .iter_mut()
            .enumerate()
            .filter_map(|(i, t)| Some((i as u64, t.as_mut()?)))
            .map(|(i, t)| (Some(i), t))
            .chain(sigs.itimers.iter_mut().map(|t| (None, t)))
        {
            let Some(d) = t.deadline.filter(|&d| d <= now) else {
                continue;
            };
            let missed = (now - d).checked_div(t.interval);
            t.deadline = missed.map(|m| d.saturating_add((m + 1).saturating_mul(t.interval)));
            let missed = missed.unwrap_or(0);
            t.overrun = t
                .overrun
                .saturating_add(missed.min(u64::from(u32::MAX)) as u32);
            let mut fired = *t;
            if let Some(id) = id {
                fired.code = SI_TIMER;
                // si_tid (the timer id) and si_overrun, then si_value
                fired.overrun = t.overrun;
                fired.clock = id;
                t.last_overrun = t.overrun;
                t.overrun = 0;
            }
            if fired.signal != 0 {
                due.push(fired);
            }
        }
        for t in due {
            let info = if t.code == SI_TIMER {
                SigInfo {
                    code: SI_TIMER,
                    word16: t.clock | (u64::from(t.overrun) << 32),
                    word24: t.value,
                }
            } else {
                SigInfo {
                    code: SI_KERNEL,
                    ..SigInfo::default()
                }
            };
            match t.thread.and_then(|tid| self.threads.by_tid(u64::from(tid))) {
                Some(i) => self.send_to_thread(i, t.signal, info),
                None => self.send_to_process(t.signal, info),
            }
        }
    }

    /// The time now on clock `clock` (for absolute timer values).
    fn clock_now(&self, clock: u64, instret: u64) -> Result<u64, i64> {
        match clock {
            0 | 5 | 8 => Ok(self.realtime_ns(instret)),
            1 | 4 | 6 | 7 | 9 => Ok(self.monotonic_ns(instret)),
            2 | 3 => Ok(instret),
            _ => Err(EINVAL),
        }
    }

    /// `setitimer(which, new, old)`: ITIMER_REAL (SIGALRM), ITIMER_VIRTUAL (SIGVTALRM) and
    /// ITIMER_PROF (SIGPROF), all on the machine clock.
    pub(super) fn sys_setitimer(
        &mut self,
        mem: &mut Memory,
        which: u64,
        new: u64,
        old: u64,
        instret: u64,
    ) -> i64 {
        if which > 2 {
            return -EINVAL;
        }
        let now = self.machine_ns(instret);
        if old != 0 {
            let r = self.sys_getitimer(mem, which, old, instret);
            if r != 0 {
                return r;
            }
        }
        if new != 0 {
            let mut b = [0u8; 32];
            if mem.read_bytes(new, &mut b).is_err() {
                return -EFAULT;
            }
            let tv = |at: usize| -> Result<u64, i64> {
                let s = i64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
                let us = i64::from_le_bytes(b[at + 8..at + 16].try_into().unwrap_or([0; 8]));
                if s < 0 || !(0..1_000_000).contains(&us) {
                    return Err(EINVAL);
                }
                Ok((s as u64)
                    .saturating_mul(1_000_000_000)
                    .saturating_add(us as u64 * 1000))
            };
            let (interval, value) = match (tv(0), tv(16)) {
                (Ok(i), Ok(v)) => (i, v),
                (Err(e), _) | (_, Err(e)) => return -e,
            };
            self.signals.itimers[which as usize] = Timer {
                deadline: (value != 0).then(|| now.saturating_add(value)),
                interval,
                signal: [14, 26, 27][which as usize],
                code: SI_KERNEL,
                ..Timer::default()
            };
        }
        0
    }

    pub(super) fn sys_getitimer(
        &mut self,
        mem: &mut Memory,
        which: u64,
        out: u64,
        instret: u64,
    ) -> i64 {
        if which > 2 {
            return -EINVAL;
        }
        let now = self.machine_ns(instret);
        let t = self.signals.itimers[which as usize];
        let left = t.deadline.map_or(0, |d| d.saturating_sub(now).max(1));
        let mut b = [0u8; 32];
        for (at, ns) in [(0, t.interval), (16, left)] {
            b[at..at + 8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
            b[at + 8..at + 16].copy_from_slice(&((ns % 1_000_000_000) / 1000).to_le_bytes());
        }
        match mem.write_bytes(out, &b) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    /// `timer_create(clock, sevp, timerid)`.
    pub(super) fn sys_timer_create(
        &mut self,
        mem: &mut Memory,
        clock: u64,
        sevp: u64,
        id_out: u64,
    ) -> i64 {
        const SIGEV_SIGNAL: u32 = 0;
        const SIGEV_NONE: u32 = 1;
        const SIGEV_THREAD_ID: u32 = 4;
        if !matches!(clock, 0 | 1 | 2 | 3 | 7) {
            return -EINVAL;
        }
        let slot = match self.signals.timers.iter().position(Option::is_none) {
            Some(s) => s,
            None if self.signals.timers.len() < MAX_TIMERS => {
                self.signals.timers.push(None);
                self.signals.timers.len() - 1
            }
            None => return -EAGAIN,
        };
        let mut t = Timer {
            signal: 14,
            value: slot as u64,
            clock,
            code: SI_TIMER,
            ..Timer::default()
        };
        if sevp != 0 {
            let mut b = [0u8; 24];
            if mem.read_bytes(sevp, &mut b).is_err() {
                return -EFAULT;
            }
            t.value = u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
            let signo = u32::from_le_bytes(b[8..12].try_into().unwrap_or([0; 4]));
            let notify = u32::from_le_bytes(b[12..16].try_into().unwrap_or([0; 4]));
            let tid = u32::from_le_bytes(b[16..20].try_into().unwrap_or([0; 4]));
            match notify {
                SIGEV_NONE => t.signal = 0,
                SIGEV_SIGNAL | SIGEV_THREAD_ID => {
                    if !(1..=64).contains(&signo) {
                        return -EINVAL;
                    }
                    t.signal = u64::from(signo);
                    if notify == SIGEV_THREAD_ID {
                        if self.threads.by_tid(u64::from(tid)).is_none() {
                            return -EINVAL;
                        }
                        t.thread = Some(tid);
                    }
                }
                _ => return -EINVAL,
            }
        }
        if mem.store_u32(id_out, slot as u32).is_err() {
            return -EFAULT;
        }
        self.signals.timers[slot] = Some(t);
        0
    }

    fn timer_mut(&mut self, id: u64) -> Result<&mut Timer, i64> {
        self.signals
            .timers
            .get_mut(id as usize)
            .and_then(Option::as_mut)
            .ok_or(EINVAL)
    }

    /// `timer_settime(id, flags, new, old)`.
    pub(super) fn sys_timer_settime(
        &mut self,
        mem: &mut Memory,
        id: u64,
        flags: u64,
        new: u64,
        old: u64,
        instret: u64,
    ) -> i64 {
        let t = match self.timer_mut(id) {
            Ok(t) => *t,
            Err(e) => return -e,
        };
        let interval = match read_timespec(mem, new) {
            Ok(v) => v,
            Err(e) => return -e,
        };
        let value = match read_timespec(mem, new.wrapping_add(16)) {
            Ok(v) => v,
            Err(e) => return -e,
        };
        if old != 0 {
            let r = self.sys_timer_gettime(mem, id, old, instret);
            if r != 0 {
                return r;
            }
        }
        let now = self.machine_ns(instret);
        let mut missed = 0u64;
        let deadline = if value == 0 {
            None
        } else if flags & 1 != 0 {
            let clock_now = match self.clock_now(t.clock, instret) {
                Ok(c) => c,
                Err(e) => return -e,
            };
            // an absolute time already past: due now, the periods it missed already
            // counted as overruns of its first signal (Linux's hrtimer_forward)
            if value < clock_now {
                missed = (clock_now - value).checked_div(interval).unwrap_or(0);
            }
            Some(now.saturating_add(value.saturating_sub(clock_now)))
        } else {
            Some(now.saturating_add(value))
        };
        if let Ok(t) = self.timer_mut(id) {
            t.deadline = deadline;
            t.interval = interval;
            t.overrun = missed.min(u64::from(u32::MAX)) as u32;
        }
        0
    }

    pub(super) fn sys_timer_gettime(
        &mut self,
        mem: &mut Memory,
        id: u64,
        out: u64,
        instret: u64,
    ) -> i64 {
        let now = self.machine_ns(instret);
        let t = match self.timer_mut(id) {
            Ok(t) => *t,
            Err(e) => return -e,
        };
        let left = t.deadline.map_or(0, |d| d.saturating_sub(now).max(1));
        let mut b = [0u8; 32];
        b[..16].copy_from_slice(&super::threads::timespec_bytes(t.interval));
        b[16..].copy_from_slice(&super::threads::timespec_bytes(left));
        match mem.write_bytes(out, &b) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    pub(super) fn sys_timer_getoverrun(&mut self, id: u64) -> i64 {
        match self.timer_mut(id) {
            Ok(t) => i64::from(t.last_overrun.min(i32::MAX as u32)),
            Err(e) => -e,
        }
    }

    pub(super) fn sys_timer_delete(&mut self, id: u64) -> i64 {
        match self.signals.timers.get_mut(id as usize) {
            Some(t @ Some(_)) => {
                *t = None;
                0
            }
            _ => -EINVAL,
        }
    }
}

/// Writes a 128-byte `siginfo` for `sig` at `addr`.
pub fn write_siginfo(
    mem: &mut Memory,
    addr: u64,
    sig: u64,
    info: SigInfo,
) -> Result<(), crate::memory::AccessError> {
    mem.write_bytes(addr, &siginfo_bytes(sig, info))
}

/// A 128-byte `siginfo`: si_signo, si_errno, si_code, then the union's first 16 bytes.
pub fn siginfo_bytes(sig: u64, info: SigInfo) -> [u8; 128] {
    let mut b = [0u8; 128];
    b[..4].copy_from_slice(&(sig as u32).to_le_bytes());
    b[8..12].copy_from_slice(&info.code.to_le_bytes());
    b[16..24].copy_from_slice(&info.word16.to_le_bytes());
    b[24..32].copy_from_slice(&info.word24.to_le_bytes());
    b
}
