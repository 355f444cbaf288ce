//! The calls that ask about or advise the system and change nothing a program can observe on
//! one hart (docs/machine.md, "System calls"): clock resolution, resource usage, scheduling
//! priorities and policies, `personality`, capabilities, I/O priorities, memory locking and
//! residency, and file advice. Each checks its arguments as Linux does (the errors LTP tests)
//! and keeps what a later query reads back: a priority, a policy, a personality.

use super::*;

const SCHED_OTHER: u64 = 0;
const SCHED_FIFO: u64 = 1;
const SCHED_RR: u64 = 2;
const SCHED_BATCH: u64 = 3;
const SCHED_IDLE: u64 = 5;
const SCHED_DEADLINE: u64 = 6;
/// Linux's default timer slack (50 µs).
const TIMER_SLACK_NS: u64 = 50_000;
/// Capabilities 32..=40 (Linux 6.1 has 41).
const ALL_CAPS_HIGH: u32 = 0x1ff;
const CAP_LAST_CAP: u64 = 40;

/// What the scheduling calls keep of a process: its nice value, policy and real-time priority,
/// its I/O priority and its personality.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SchedState {
    pub nice: i64,
    pub policy: u64,
    pub priority: u64,
    pub ioprio: u64,
    pub personality: u64,
    /// `prctl` values read back: (PDEATHSIG, DUMPABLE, KEEPCAPS, TIMERSLACK, NO_NEW_PRIVS,
    /// CHILD_SUBREAPER, THP_DISABLE, the default TIMERSLACK).
    pub prctl: [u64; 8],
    /// `capset`'s (effective, permitted, inheritable) sets, two 32-bit words each.
    pub caps: [[u32; 3]; 2],
}

impl Default for SchedState {
    fn default() -> Self {
        SchedState {
            nice: 0,
            policy: SCHED_OTHER,
            priority: 0,
            // IOPRIO_CLASS_BE, level 4: what Linux reports for a process that never set one
            ioprio: (2 << 13) | 4,
            personality: 0,
            prctl: [0, 1, 0, TIMER_SLACK_NS, 0, 0, 0, TIMER_SLACK_NS],
            caps: [[u32::MAX; 3], [ALL_CAPS_HIGH; 3]],
        }
    }
}

fn priority_range(policy: u64) -> Option<(u64, u64)> {
    match policy {
        SCHED_OTHER | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE => Some((0, 0)),
        SCHED_FIFO | SCHED_RR => Some((1, 99)),
        _ => None,
    }
}

impl Kernel {
    /// The calls this module answers (`None`: not one of them).
    pub(super) fn quiet_call(
        &mut self,
        mem: &mut Memory,
        nr: u64,
        a: [u64; 6],
        instret: u64,
    ) -> Option<i64> {
        Some(match nr {
            114 => self.sys_clock_getres(mem, a[0], a[1]),
            153 => self.sys_times(mem, a[0], instret),
            165 => self.sys_getrusage(mem, a[0] as i64, a[1], instret),
            163 => self.sys_prlimit64(mem, 0, a[0], 0, a[1]), // getrlimit
            164 => self.sys_prlimit64(mem, 0, a[0], a[1], 0), // setrlimit
            140 => self.sys_setpriority(a[0], a[1], a[2] as i32 as i64),
            141 => self.sys_getpriority(a[0], a[1]),
            118 => self.sys_sched_setscheduler(mem, a[0], None, a[1]),
            119 => self.sys_sched_setscheduler(mem, a[0], Some(a[1]), a[2]),
            120 => self.sched_of(a[0]).map_or_else(|e| -e, |s| s.policy as i64),
            121 => self.sys_sched_getparam(mem, a[0], a[1]),
            125 | 126 => match priority_range(a[0]) {
                Some((lo, hi)) => (if nr == 125 { hi } else { lo }) as i64,
                None => -EINVAL,
            },
            127 => self.sys_sched_rr_get_interval(mem, a[0], a[1]),
            274 => self.sys_sched_setattr(mem, a),
            275 => self.sys_sched_getattr(mem, a),
            92 => self.sys_personality(a[0]),
            90 => self.sys_capget(mem, a[0], a[1]),
            91 => self.sys_capset(mem, a[0], a[1]),
            30 => self.sys_ioprio(a[0], a[1], Some(a[2])),
            31 => self.sys_ioprio(a[0], a[1], None),
            // setfsuid, setfsgid: the previous value, 0, whatever is asked (the guest is root)
            151 | 152 => 0,
            228 | 229 => self.sys_mlock(mem, a[0], a[1], 0),
            284 => self.sys_mlock(mem, a[0], a[1], a[2]),
            230 if a[0] == 0 || a[0] & !7 != 0 || a[0] == 4 => -EINVAL, // mlockall
            230 | 231 => 0,
            232 => self.sys_mincore(mem, a[0], a[1], a[2]),
            213 => self.sys_readahead(a[0]),
            223 => self.sys_fadvise(a[0], a[2] as i64, a[3]),
            84 if a[3] & !7 != 0 || (a[1] as i64) < 0 || (a[2] as i64) < 0 => -EINVAL,
            // sync_file_range: the host writes through; only files and directories (ESPIPE)
            84 => match self.fd(a[0]) {
                Ok(Fd::File(_) | Fd::Dir(_) | Fd::Shm(_)) => 0,
                Ok(_) => -ESPIPE,
                Err(e) => -e,
            },
            69 => self.sys_readv_at(mem, a[0], a[1], a[2], Some(a[3])),
            70 => self.sys_pwritev(mem, a[0], a[1], a[2], a[3]),
            286 | 287 => self.sys_rw2(mem, a, nr == 287),
            82 | 83 => match self.fd(a[0]) {
                // fsync, fdatasync: a pipe or socket cannot be synced
                Ok(
                    Fd::Pipe(_)
                    | Fd::Socket(_)
                    | Fd::Net(_)
                    | Fd::Epoll(_)
                    | Fd::Event(_)
                    | Fd::Inotify(_)
                    | Fd::Device(_),
                ) => -EINVAL,
                Ok(_) => 0, // the host writes through its own cache
                Err(e) => -e,
            },

            51 => self.sys_chroot(mem, a[0]),
            // clock_settime, settimeofday: bad values EINVAL; the machine's clock is the
            // host's (or the deterministic one) and is never set: EPERM
            112 | 170 => self.sys_settime(mem, nr, a),
            171 => self.sys_clock_adjtime(mem, a[0], instret), // adjtimex
            266 if a[0] != 0 => -EINVAL,                       // clock_adjtime: CLOCK_REALTIME only
            266 => self.sys_clock_adjtime(mem, a[1], instret),
            _ => return None,
        })
    }

    /// `chroot(path)`: the path's errors as Linux gives them (`ENOENT`, `ENOTDIR`,
    /// `ENAMETOOLONG`, `ELOOP`, `EFAULT`, `EACCES`); a directory it names is `EPERM`: the
    /// guest's root is the sandbox's and does not move.
    fn sys_chroot(&mut self, mem: &mut Memory, path: u64) -> i64 {
        let path = match self.guest_path(mem, AT_FDCWD, path) {
            Ok(p) if p.as_os_str().is_empty() => return -ENOENT,
            Ok(p) => p,
            Err(e) => return -e,
        };
        match self
            .resolve_at(AT_FDCWD, &path, false)
            .and_then(|r| r.metadata(false))
        {
            Ok(m) if !m.is_dir() => -ENOTDIR,
            Ok(_) => -EPERM,
            Err(e) => -e,
        }
    }

    /// `clock_settime(clock, ts)` (112) or `settimeofday(tv, tz)` (170).
    fn sys_settime(&mut self, mem: &mut Memory, nr: u64, a: [u64; 6]) -> i64 {
        let (at, clock) = if nr == 112 { (a[1], a[0]) } else { (a[0], 0) };
        if nr == 112 && clock != 0 {
            return -EINVAL; // only CLOCK_REALTIME can be set
        }
        if at == 0 {
            return if nr == 170 { 0 } else { -EFAULT }; // settimeofday(NULL, tz): nothing set
        }
        let (Ok(sec), Ok(frac)) = (mem.load_u64(at), mem.load_u64(at.wrapping_add(8))) else {
            return -EFAULT;
        };
        let limit = if nr == 112 { 1_000_000_000 } else { 1_000_000 };
        if (sec as i64) < 0 || frac >= limit {
            return -EINVAL;
        }
        -EPERM
    }

    /// `clock_adjtime(CLOCK_REALTIME, timex)`, `adjtimex(timex)`: reading (`modes` 0) fills
    /// the time, a 10 ms tick and an unsynchronized status and answers `TIME_ERROR`, as an
    /// unsynchronized Linux clock; `ADJ_ADJTIME` without `ADJ_OFFSET_SINGLESHOT` is
    /// `EINVAL`; any other change is `EPERM` (the clock is never adjusted).
    fn sys_clock_adjtime(&mut self, mem: &mut Memory, buf: u64, instret: u64) -> i64 {
        const ADJ_ADJTIME: u32 = 0x8000;
        const ADJ_OFFSET_SINGLESHOT: u32 = 0x0001;
        const STA_UNSYNC: u64 = 0x40;
        const TIME_ERROR: i64 = 5;
        // struct timex: 208 bytes, modes at 0, status at 64, time at 72, tick at 88
        let Ok(modes) = mem.load_u32(buf) else {
            return -EFAULT;
        };
        if mem.check_range(buf, 208, perm::W).is_err() {
            return -EFAULT;
        }
        if modes & ADJ_ADJTIME != 0 && modes & ADJ_OFFSET_SINGLESHOT == 0 {
            return -EINVAL;
        }
        if modes != 0 {
            return -EPERM;
        }
        let now = self.realtime_ns(instret);
        let mut t = [0u8; 208];
        t[64..72].copy_from_slice(&STA_UNSYNC.to_le_bytes());
        t[72..80].copy_from_slice(&(now / 1_000_000_000).to_le_bytes());
        t[80..88].copy_from_slice(&(now % 1_000_000_000 / 1000).to_le_bytes());
        t[88..96].copy_from_slice(&10_000u64.to_le_bytes());
        match mem.write_bytes(buf, &t) {
            Ok(()) => TIME_ERROR,
            Err(_) => -EFAULT,
        }
    }

    /// The scheduling state of process `pid` (0: the caller).
    fn sched_of(&self, pid: u64) -> Result<SchedState, i64> {
        let pid = self.sched_pid(pid)?;
        Ok(self.sched.get(&pid).copied().unwrap_or_default())
    }

    fn sched_pid(&self, pid: u64) -> Result<u32, i64> {
        let pid = pid as i64;
        if pid < 0 {
            return Err(EINVAL);
        }
        let pid = if pid == 0 {
            self.threads.pid
        } else {
            pid as u32
        };
        match self.procs.get(pid) {
            Some(p) if p.status.is_none() => Ok(pid),
            // a thread of the caller's names it too
            _ if self.threads.list.iter().any(|t| t.tid == pid) => Ok(self.threads.pid),
            _ => Err(ESRCH),
        }
    }

    fn sys_clock_getres(&mut self, mem: &mut Memory, clock: u64, res: u64) -> i64 {
        let ns: u64 = match clock {
            5 | 6 => 4_000_000, // the coarse clocks: a 250 Hz tick
            0..=4 | 7..=11 if clock != 10 => 1,
            _ => return -EINVAL,
        };
        if res == 0 {
            return 0;
        }
        let mut b = [0u8; 16];
        b[8..].copy_from_slice(&ns.to_le_bytes());
        if mem.write_bytes(res, &b).is_err() {
            return -EFAULT;
        }
        0
    }

    /// The machine time the process ran, in 100 Hz ticks, split as Linux splits user and
    /// system time: the system calls' share is not modelled, so all of it is user time.
    fn cpu_ticks(&self, instret: u64) -> u64 {
        self.monotonic_ns(instret) / 10_000_000
    }

    fn sys_times(&mut self, mem: &mut Memory, buf: u64, instret: u64) -> i64 {
        let ticks = self.cpu_ticks(instret);
        if buf != 0 {
            let mut b = [0u8; 32];
            b[..8].copy_from_slice(&ticks.to_le_bytes());
            if mem.write_bytes(buf, &b).is_err() {
                return -EFAULT;
            }
        }
        ticks as i64
    }

    fn sys_getrusage(&mut self, mem: &mut Memory, who: i64, buf: u64, instret: u64) -> i64 {
        // RUSAGE_SELF 0, RUSAGE_CHILDREN -1, RUSAGE_THREAD 1
        if !(-1..=1).contains(&who) {
            return -EINVAL;
        }
        let mut b = [0u8; 144];
        if who != -1 {
            let us = self.monotonic_ns(instret) / 1000;
            b[..8].copy_from_slice(&(us / 1_000_000).to_le_bytes());
            b[8..16].copy_from_slice(&(us % 1_000_000).to_le_bytes());
            let rss_kb = mem.mapped_pages() * (PAGE_SIZE / 1024);
            b[32..40].copy_from_slice(&rss_kb.to_le_bytes()); // ru_maxrss
        }
        if mem.write_bytes(buf, &b).is_err() {
            return -EFAULT;
        }
        0
    }

    /// The processes `which`/`who` names for the priority calls.
    fn priority_targets(&self, which: u64, who: u64) -> Result<Vec<u32>, i64> {
        const PRIO_PROCESS: u64 = 0;
        const PRIO_PGRP: u64 = 1;
        const PRIO_USER: u64 = 2;
        let who = who as u32;
        let live = self.procs.list.iter().filter(|p| p.status.is_none());
        let out: Vec<u32> = match which {
            PRIO_PROCESS => return self.sched_pid(u64::from(who)).map(|p| vec![p]),
            PRIO_PGRP => {
                let g = if who == 0 {
                    self.procs.get(self.threads.pid).map_or(0, |p| p.pgid)
                } else {
                    who
                };
                live.filter(|p| p.pgid == g).map(|p| p.pid).collect()
            }
            // every guest process is uid 0
            PRIO_USER if who == 0 => live.map(|p| p.pid).collect(),
            PRIO_USER => Vec::new(),
            _ => return Err(EINVAL),
        };
        if out.is_empty() {
            Err(ESRCH)
        } else {
            Ok(out)
        }
    }

    fn sys_getpriority(&mut self, which: u64, who: u64) -> i64 {
        match self.priority_targets(which, who) {
            // the lowest nice value, as 20 - nice (the raw call's encoding)
            Ok(pids) => pids
                .iter()
                .map(|p| 20 - self.sched.get(p).copied().unwrap_or_default().nice)
                .max()
                .unwrap_or(20),
            Err(e) => -e,
        }
    }

    fn sys_setpriority(&mut self, which: u64, who: u64, nice: i64) -> i64 {
        match self.priority_targets(which, who) {
            Ok(pids) => {
                for p in pids {
                    self.sched.entry(p).or_default().nice = nice.clamp(-20, 19);
                }
                0
            }
            Err(e) => -e,
        }
    }

    fn sys_sched_getparam(&mut self, mem: &mut Memory, pid: u64, param: u64) -> i64 {
        if param == 0 {
            return -EINVAL;
        }
        match self.sched_of(pid) {
            Ok(s) => match mem.store_u32(param, s.priority as u32) {
                Ok(()) => 0,
                Err(_) => -EFAULT,
            },
            Err(e) => -e,
        }
    }

    /// `sched_setscheduler` (`policy` given) and `sched_setparam` (the policy kept).
    fn sys_sched_setscheduler(
        &mut self,
        mem: &mut Memory,
        pid: u64,
        policy: Option<u64>,
        param: u64,
    ) -> i64 {
        const SCHED_RESET_ON_FORK: u64 = 0x4000_0000;
        if param == 0 || (pid as i64) < 0 {
            return -EINVAL;
        }
        if policy.is_some_and(|p| priority_range(p & !SCHED_RESET_ON_FORK).is_none()) {
            return -EINVAL;
        }
        let Ok(prio) = mem.load_u32(param) else {
            return -EFAULT;
        };
        let pid = match self.sched_pid(pid) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        let cur = self.sched.get(&pid).copied().unwrap_or_default();
        let policy = policy.map_or(cur.policy, |p| p & !SCHED_RESET_ON_FORK);
        match priority_range(policy) {
            Some((lo, hi)) if (lo..=hi).contains(&u64::from(prio)) => {
                let s = self.sched.entry(pid).or_default();
                s.policy = policy;
                s.priority = u64::from(prio);
                0
            }
            _ => -EINVAL,
        }
    }

    fn sys_sched_rr_get_interval(&mut self, mem: &mut Memory, pid: u64, tp: u64) -> i64 {
        let s = match self.sched_of(pid) {
            Ok(s) => s,
            Err(e) => return -e,
        };
        // SCHED_RR's 100 ms slice; 0 for the other policies
        let ns: u64 = if s.policy == SCHED_RR { 100_000_000 } else { 0 };
        let mut b = [0u8; 16];
        b[8..].copy_from_slice(&ns.to_le_bytes());
        match mem.write_bytes(tp, &b) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    fn sys_personality(&mut self, persona: u64) -> i64 {
        let pid = self.threads.pid;
        let s = self.sched.entry(pid).or_default();
        let old = s.personality;
        if persona as u32 != u32::MAX {
            s.personality = u64::from(persona as u32);
        }
        old as i64
    }

    /// `capget`: the guest is root with every capability.
    fn sys_capget(&mut self, mem: &mut Memory, hdr: u64, data: u64) -> i64 {
        let Some(words) = self.cap_header(mem, hdr) else {
            return -EFAULT;
        };
        let words = match words {
            Ok(w) => w,
            Err(e) => return -e,
        };
        if data == 0 {
            return 0;
        }
        // {effective, permitted, inheritable} per 32 capabilities
        let caps = self
            .sched
            .get(&self.threads.pid)
            .copied()
            .unwrap_or_default()
            .caps;
        let mut b = vec![0u8; 12 * words];
        for (chunk, set) in b.chunks_mut(12).zip(caps) {
            for (k, w) in set.iter().enumerate() {
                chunk[4 * k..4 * k + 4].copy_from_slice(&w.to_le_bytes());
            }
        }
        match mem.write_bytes(data, &b) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    /// `capset`: the caller's own sets only (`EPERM` for another process, as Linux), never
    /// more than it holds: a dropped capability stays dropped (it changes nothing else).
    fn sys_capset(&mut self, mem: &mut Memory, hdr: u64, data: u64) -> i64 {
        let words = match self.cap_header(mem, hdr) {
            None => return -EFAULT,
            Some(Err(e)) => return -e,
            Some(Ok(w)) => w,
        };
        let pid = mem.load_u32(hdr.wrapping_add(4)).unwrap_or(0);
        if pid != 0 && pid != self.threads.pid {
            return -EPERM;
        }
        let mut b = [0u8; 24];
        if mem.read_bytes(data, &mut b[..12 * words]).is_err() {
            return -EFAULT;
        }
        let me = self.threads.pid;
        let cur = self.sched.get(&me).copied().unwrap_or_default();
        let mut new = cur.caps;
        for (i, set) in new.iter_mut().enumerate().take(words) {
            for (k, w) in set.iter_mut().enumerate() {
                let at = 12 * i + 4 * k;
                *w = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
            }
        }
        // effective ⊆ permitted, and permitted never grows
        for (n, c) in new.iter().zip(cur.caps) {
            if n[1] & !c[1] != 0 || n[0] & !n[1] != 0 {
                return -EPERM;
            }
        }
        self.sched.entry(me).or_default().caps = new;
        0
    }

    /// `prctl` options besides the thread's name: the values a program sets and reads back
    /// (none changes what the machine does: there is no core dump, no parent-death signal
    /// yet, and timers are exact).
    pub(super) fn prctl_other(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        let (option, arg) = (a[0], a[1]);
        // the arguments past the ones an option takes must be 0 (Linux's checks)
        let rest_zero = |from: usize| a[from..5].iter().all(|&v| v == 0);
        const PR_SET_SECUREBITS: u64 = 28;
        const PR_CAPBSET_DROP: u64 = 24;
        const PR_SET_THP_DISABLE: u64 = 41;
        const PR_GET_THP_DISABLE: u64 = 42;
        const PR_CAP_AMBIENT: u64 = 47;
        const PR_GET_SPECULATION_CTRL: u64 = 52;
        match option {
            // the machine changes no capabilities: as for a process without CAP_SETPCAP
            PR_SET_SECUREBITS | PR_CAPBSET_DROP => return -EPERM,
            PR_SET_THP_DISABLE if !rest_zero(2) => return -EINVAL,
            PR_SET_THP_DISABLE => {
                self.sched.entry(self.threads.pid).or_default().prctl[6] = u64::from(arg != 0);
                return 0;
            }
            PR_GET_THP_DISABLE if !rest_zero(1) => return -EINVAL,
            PR_GET_THP_DISABLE => {
                return self.sched.get(&self.threads.pid).map_or(0, |s| s.prctl[6]) as i64
            }
            // PR_CAP_AMBIENT_IS_SET 1 of a capability, CLEAR_ALL 4 with nothing after: none
            // is ever raised
            PR_CAP_AMBIENT => {
                return match arg {
                    1 if a[2] <= CAP_LAST_CAP && rest_zero(3) => 0,
                    4 if rest_zero(2) => 0,
                    _ => -EINVAL,
                }
            }
            // no speculation control is offered (PR_SPEC_NOT_AFFECTED 0 for the store bypass
            // and indirect branch ones)
            PR_GET_SPECULATION_CTRL if !rest_zero(2) => return -EINVAL,
            PR_GET_SPECULATION_CTRL if arg <= 2 => return 0,
            PR_GET_SPECULATION_CTRL => return -19, // ENODEV
            38 if arg != 1 || !rest_zero(2) => return -EINVAL, // PR_SET_NO_NEW_PRIVS
            39 if !rest_zero(1) => return -EINVAL, // PR_GET_NO_NEW_PRIVS
            _ => {}
        }
        const PR_SET_PDEATHSIG: u64 = 1;
        const PR_GET_PDEATHSIG: u64 = 2;
        const PR_GET_DUMPABLE: u64 = 3;
        const PR_SET_DUMPABLE: u64 = 4;
        const PR_GET_KEEPCAPS: u64 = 7;
        const PR_SET_KEEPCAPS: u64 = 8;
        const PR_CAPBSET_READ: u64 = 23;
        const PR_SET_TIMERSLACK: u64 = 29;
        const PR_GET_TIMERSLACK: u64 = 30;
        const PR_SET_CHILD_SUBREAPER: u64 = 36;
        const PR_GET_CHILD_SUBREAPER: u64 = 37;
        const PR_SET_NO_NEW_PRIVS: u64 = 38;
        const PR_GET_NO_NEW_PRIVS: u64 = 39;
        let me = self.threads.pid;
        let st = self.sched.get(&me).copied().unwrap_or_default();
        let (slot, value) = match option {
            PR_SET_PDEATHSIG if arg <= 64 => (0, arg),
            PR_SET_DUMPABLE if arg <= 1 => (1, arg),
            PR_SET_KEEPCAPS if arg <= 1 => (2, arg),
            PR_SET_TIMERSLACK => (3, if arg == 0 { st.prctl[7] } else { arg }),
            PR_SET_NO_NEW_PRIVS if arg == 1 => (4, 1),
            PR_SET_CHILD_SUBREAPER => (5, u64::from(arg != 0)),
            PR_GET_DUMPABLE => return st.prctl[1] as i64,
            PR_GET_KEEPCAPS => return st.prctl[2] as i64,
            PR_GET_TIMERSLACK => return st.prctl[3] as i64,
            PR_GET_NO_NEW_PRIVS => return st.prctl[4] as i64,
            PR_CAPBSET_READ if arg <= CAP_LAST_CAP => return 1,
            PR_GET_PDEATHSIG | PR_GET_CHILD_SUBREAPER => {
                let v = st.prctl[if option == PR_GET_PDEATHSIG { 0 } else { 5 }];
                return match mem.store_u32(arg, v as u32) {
                    Ok(()) => 0,
                    Err(_) => -EFAULT,
                };
            }
            _ => return -EINVAL,
        };
        self.sched.entry(me).or_default().prctl[slot] = value;
        0
    }

    /// A capability header's data words (1 for version 1, 2 after), or `EINVAL` with the
    /// preferred version written back; `ESRCH` for a pid that is not a guest process.
    fn cap_header(&mut self, mem: &mut Memory, hdr: u64) -> Option<Result<usize, i64>> {
        const V1: u32 = 0x1998_0330;
        const V2: u32 = 0x2007_1026;
        const V3: u32 = 0x2008_0522;
        let version = mem.load_u32(hdr).ok()?;
        let pid = mem.load_u32(hdr.wrapping_add(4)).ok()? as i32;
        let words = match version {
            V1 => 1,
            V2 | V3 => 2,
            _ => {
                mem.store_u32(hdr, V3).ok()?;
                return Some(Err(EINVAL));
            }
        };
        if pid < 0 {
            return Some(Err(EINVAL));
        }
        Some(self.sched_pid(pid as u64).map(|_| words))
    }

    /// `ioprio_get` (`set` None) and `ioprio_set` for IOPRIO_WHO_PROCESS, PGRP and USER.
    fn sys_ioprio(&mut self, which: u64, who: u64, set: Option<u64>) -> i64 {
        if !(1..=3).contains(&which) {
            return -EINVAL;
        }
        let pids = match self.priority_targets(which - 1, who) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        match set {
            Some(prio) => {
                let (class, level) = (prio >> 13, prio & 0x1fff);
                // NONE 0, RT 1, BE 2 (levels 0..8), IDLE 3
                if class > 3 || (matches!(class, 1 | 2) && level >= 8) || prio > 0xffff {
                    return -EINVAL;
                }
                for p in pids {
                    self.sched.entry(p).or_default().ioprio = prio;
                }
                0
            }
            None => pids
                .iter()
                .map(|p| self.sched.get(p).copied().unwrap_or_default().ioprio as i64)
                .min()
                .unwrap_or(0),
        }
    }

    /// `mlock`, `munlock`, `mlock2`: the range must be mapped (every page is resident).
    fn sys_mlock(&mut self, mem: &mut Memory, addr: u64, len: u64, flags: u64) -> i64 {
        if flags & !1 != 0 {
            return -EINVAL;
        }
        let start = addr & !(PAGE_SIZE - 1);
        let Some(end) = addr.checked_add(len) else {
            return -EINVAL;
        };
        if len == 0 {
            return 0;
        }
        if !mem.is_mapped(start, end - start) {
            return -ENOMEM;
        }
        // as Linux: locked pages are faulted in (resident, as `mincore` says); `MLOCK_ONFAULT`
        // leaves them until touched
        if flags & 1 == 0 {
            mem.populate(start, end - start);
        }
        0
    }

    /// `mincore`: a page is resident once it holds bytes (written or read from its file).
    fn sys_mincore(&mut self, mem: &mut Memory, addr: u64, len: u64, vec: u64) -> i64 {
        if addr % PAGE_SIZE != 0 {
            return -EINVAL;
        }
        let Some(pages) = len
            .checked_add(PAGE_SIZE - 1)
            .map(|l| l / PAGE_SIZE)
            .filter(|&p| p <= USER_TOP / PAGE_SIZE)
        else {
            return -ENOMEM;
        };
        if pages == 0 {
            return 0;
        }
        if !mem.is_mapped(addr, pages * PAGE_SIZE) {
            return -ENOMEM;
        }
        // the mapped pages are bounded by the memory limit, so this is too
        if mem.check_range(vec, pages, perm::W).is_err() {
            return -EFAULT;
        }
        let mut chunk = [0u8; 4096];
        let mut at = 0;
        while at < pages {
            let n = (pages - at).min(chunk.len() as u64);
            for (k, b) in chunk[..n as usize].iter_mut().enumerate() {
                *b = u8::from(mem.resident(addr + (at + k as u64) * PAGE_SIZE));
            }
            if mem.write_bytes(vec + at, &chunk[..n as usize]).is_err() {
                return -EFAULT;
            }
            at += n;
        }
        0
    }

    fn sys_readahead(&mut self, fd: u64) -> i64 {
        match self.fd(fd) {
            Ok(Fd::File(f)) if super::files::path_only(f) => -EBADF,
            Ok(Fd::File(_)) => 0,
            Ok(Fd::Shm(_)) => 0,
            Ok(_) => -EINVAL,
            Err(e) => -e,
        }
    }

    /// `fadvise64`: advice is accepted and ignored; pipes and sockets are `ESPIPE`.
    fn sys_fadvise(&mut self, fd: u64, len: i64, advice: u64) -> i64 {
        let f = match self.fd(fd) {
            Ok(f) => f,
            Err(e) => return -e,
        };
        if matches!(f, Fd::Pipe(_) | Fd::Socket(_) | Fd::Net(_)) {
            return -ESPIPE;
        }
        if advice > 5 || len < 0 {
            return -EINVAL;
        }
        0
    }
}

impl Kernel {
    /// `sched_getattr(pid, attr, size, flags)`: the policy, nice value and priority as a
    /// version-0 `sched_attr` (48 bytes).
    pub(super) fn sys_sched_getattr(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        const SCHED_ATTR_SIZE_VER0: u64 = 48;
        let [pid, attr, size, flags, ..] = a;
        if attr == 0 || flags != 0 || !(SCHED_ATTR_SIZE_VER0..=4096).contains(&size) {
            return -EINVAL;
        }
        let s = match self.sched_of(pid) {
            Ok(s) => s,
            Err(e) => return -e,
        };
        let mut b = [0u8; 48];
        b[..4].copy_from_slice(&(SCHED_ATTR_SIZE_VER0 as u32).to_le_bytes());
        b[4..8].copy_from_slice(&(s.policy as u32).to_le_bytes());
        b[16..20].copy_from_slice(&(s.nice as i32).to_le_bytes());
        b[20..24].copy_from_slice(&(s.priority as u32).to_le_bytes());
        match mem.write_bytes(attr, &b) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    /// `sched_setattr(pid, attr, flags)`: the policy, nice value and priority of a `sched_attr`
    /// (`SCHED_DEADLINE`'s runtime, deadline and period are not modelled: such a request is
    /// refused with `EBUSY`, as Linux refuses one it cannot admit).
    pub(super) fn sys_sched_setattr(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        const EBUSY: i64 = 16;
        let [pid, attr, flags, ..] = a;
        if attr == 0 || flags != 0 || (pid as i64) < 0 {
            return -EINVAL;
        }
        let mut b = [0u8; 48];
        if mem.read_bytes(attr, &mut b).is_err() {
            return -EFAULT;
        }
        let size = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let policy = u64::from(u32::from_le_bytes([b[4], b[5], b[6], b[7]]));
        let nice = i64::from(i32::from_le_bytes([b[16], b[17], b[18], b[19]]));
        let prio = u64::from(u32::from_le_bytes([b[20], b[21], b[22], b[23]]));
        if size != 0 && size < 48 {
            return -E2BIG;
        }
        let Some((lo, hi)) = priority_range(policy) else {
            return -EINVAL;
        };
        if !(lo..=hi).contains(&prio) {
            return -EINVAL;
        }
        if policy == SCHED_DEADLINE {
            return -EBUSY;
        }
        let pid = match self.sched_pid(pid) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        let s = self.sched.entry(pid).or_default();
        s.policy = policy;
        s.priority = prio;
        if matches!(policy, SCHED_OTHER | SCHED_BATCH) {
            s.nice = nice.clamp(-20, 19);
        }
        0
    }
}

const E2BIG: i64 = 7;
