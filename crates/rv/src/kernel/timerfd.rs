//! Timers and signals as descriptors (docs/machine.md, "Event loops"): `timerfd_create`,
//! `timerfd_settime`, `timerfd_gettime` and `signalfd4`. A timer counts its expirations on
//! machine time, as the machine's other timers do (deterministic under `--deterministic`);
//! reading it returns the count, waiting for the next expiry when there is none. A signalfd
//! takes the thread's pending signals in its mask, as `rt_sigtimedwait` does, each as a
//! 128-byte `signalfd_siginfo`.
//!
//! `poll` and epoll waiting on a timer wake at its next expiry.

use super::threads::SigInfo;
use super::*;
use std::sync::{Arc, Mutex};

const TFD_NONBLOCK: u64 = 0o4000;
const TFD_CLOEXEC: u64 = 0o2000000;
const TFD_TIMER_ABSTIME: u64 = 1;
const TFD_TIMER_CANCEL_ON_SET: u64 = 2;
const NS: u64 = 1_000_000_000;

/// A timer's state: when it next expires (machine ns), its period, and the expirations not
/// yet read.
#[derive(Debug, Default)]
struct TimerState {
    clock: u64,
    deadline: Option<u64>,
    interval: u64,
    count: u64,
}

impl TimerState {
    /// Counts the expirations up to `now`, rearming a periodic timer.
    fn advance(&mut self, now: u64) {
        let Some(d) = self.deadline else { return };
        if d > now {
            return;
        }
        match (now - d).checked_div(self.interval) {
            // a one-shot timer
            None => {
                self.count = self.count.saturating_add(1);
                self.deadline = None;
            }
            Some(k) => {
                let n = k.saturating_add(1);
                self.count = self.count.saturating_add(n);
                self.deadline = Some(d.saturating_add(n.saturating_mul(self.interval)));
            }
        }
    }
}

/// A timerfd: shared by its duplicates.
#[derive(Clone, Debug)]
pub(crate) struct TimerFd {
    state: Arc<Mutex<TimerState>>,
    nonblock: Arc<std::sync::atomic::AtomicBool>,
}

impl TimerFd {
    fn lock(&self) -> std::sync::MutexGuard<'_, TimerState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether an expiry is waiting at machine time `now` (`poll`'s readable).
    pub fn ready(&self, now: u64) -> bool {
        let mut s = self.lock();
        s.advance(now);
        s.count > 0
    }

    pub fn nonblocking(&self) -> bool {
        self.nonblock.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn set_nonblocking(&self, on: bool) {
        self.nonblock
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A signalfd: the signals it takes.
#[derive(Clone, Debug)]
pub(crate) struct SignalFd {
    mask: Arc<std::sync::atomic::AtomicU64>,
    nonblock: Arc<std::sync::atomic::AtomicBool>,
}

impl SignalFd {
    pub fn mask(&self) -> u64 {
        self.mask.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn nonblocking(&self) -> bool {
        self.nonblock.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn set_nonblocking(&self, on: bool) {
        self.nonblock
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }
}

/// An `itimerspec`'s (interval, value) in ns; `EINVAL` for a field out of range.
fn read_itimerspec(mem: &mut Memory, at: u64) -> Result<(u64, u64), i64> {
    let mut b = [0u8; 32];
    mem.read_bytes(at, &mut b).map_err(|_| EFAULT)?;
    let w = |i: usize| i64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]));
    let ns = |sec: i64, nsec: i64| -> Result<u64, i64> {
        if sec < 0 || !(0..NS as i64).contains(&nsec) {
            return Err(EINVAL);
        }
        Ok((sec as u64).saturating_mul(NS).saturating_add(nsec as u64))
    };
    Ok((ns(w(0), w(1))?, ns(w(2), w(3))?))
}

fn write_itimerspec(mem: &mut Memory, at: u64, interval: u64, value: u64) -> Result<(), i64> {
    let mut b = [0u8; 32];
    for (i, v) in [interval / NS, interval % NS, value / NS, value % NS]
        .iter()
        .enumerate()
    {
        b[8 * i..8 * i + 8].copy_from_slice(&v.to_le_bytes());
    }
    mem.write_bytes(at, &b).map_err(|_| EFAULT)
}

impl Kernel {
    /// The calls this module answers (`None`: not one of them).
    pub(super) fn timer_fd_call(
        &mut self,
        mem: &mut Memory,
        nr: u64,
        a: [u64; 6],
        instret: u64,
    ) -> Option<i64> {
        let r = match nr {
            85 => self.sys_timerfd_create(a[0], a[1]),
            86 => self.sys_timerfd_settime(mem, a, instret),
            87 => self.sys_timerfd_gettime(mem, a[0], a[1], instret),
            74 => self.sys_signalfd4(mem, a),
            _ => return None,
        };
        Some(r.unwrap_or_else(|e| -e))
    }

    fn sys_timerfd_create(&mut self, clock: u64, flags: u64) -> Result<i64, i64> {
        // REALTIME, MONOTONIC, BOOTTIME, REALTIME_ALARM, BOOTTIME_ALARM
        if !matches!(clock, 0 | 1 | 7 | 8 | 9) || flags & !(TFD_NONBLOCK | TFD_CLOEXEC) != 0 {
            return Err(EINVAL);
        }
        let fd = self.install(Fd::Timer(TimerFd {
            state: Arc::new(Mutex::new(TimerState {
                clock,
                ..TimerState::default()
            })),
            nonblock: Arc::new((flags & TFD_NONBLOCK != 0).into()),
        }));
        if fd >= 0 && flags & TFD_CLOEXEC != 0 {
            self.cloexec.insert(fd as usize);
        }
        Ok(fd)
    }

    fn timer_of(&mut self, fd: u64) -> Result<TimerFd, i64> {
        match self.fd(fd)? {
            Fd::Timer(t) => Ok(t.clone()),
            _ => Err(EINVAL),
        }
    }

    /// (interval, time to the next expiry) of a timer at machine time `now`.
    fn timer_remaining(t: &TimerFd, now: u64) -> (u64, u64) {
        let mut s = t.lock();
        s.advance(now);
        (
            s.interval,
            s.deadline.map_or(0, |d| d.saturating_sub(now).max(1)),
        )
    }

    fn sys_timerfd_settime(
        &mut self,
        mem: &mut Memory,
        a: [u64; 6],
        instret: u64,
    ) -> Result<i64, i64> {
        let [fd, flags, new, old, ..] = a;
        if flags & !(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET) != 0 {
            return Err(EINVAL);
        }
        let t = self.timer_of(fd)?;
        let (interval, value) = read_itimerspec(mem, new)?;
        let now = self.machine_ns(instret);
        if old != 0 {
            let (i, v) = Self::timer_remaining(&t, now);
            write_itimerspec(mem, old, i, v)?;
        }
        let clock_now = |k: &Kernel, clock: u64| {
            if matches!(clock, 0 | 8) {
                k.realtime_ns(instret)
            } else {
                k.monotonic_ns(instret)
            }
        };
        let mut s = t.lock();
        let deadline = match value {
            0 => None,
            v if flags & TFD_TIMER_ABSTIME != 0 => Some(
                now.saturating_add(v.saturating_sub(clock_now(self, s.clock)))
                    .max(now),
            ),
            v => Some(now.saturating_add(v)),
        };
        s.deadline = deadline;
        s.interval = interval;
        s.count = 0;
        drop(s);
        self.io_changed();
        Ok(0)
    }

    fn sys_timerfd_gettime(
        &mut self,
        mem: &mut Memory,
        fd: u64,
        cur: u64,
        instret: u64,
    ) -> Result<i64, i64> {
        let t = self.timer_of(fd)?;
        let (i, v) = Self::timer_remaining(&t, self.machine_ns(instret));
        write_itimerspec(mem, cur, i, v)?;
        Ok(0)
    }

    /// `read` of a timerfd: the expirations since the last read (8 bytes), waiting for the
    /// next expiry when there is none.
    pub(super) fn read_timerfd(
        &mut self,
        mem: &mut Memory,
        t: TimerFd,
        buf: u64,
        count: u64,
    ) -> i64 {
        if count < 8 {
            return -EINVAL;
        }
        let now = self.now_ns;
        let mut s = t.lock();
        s.advance(now);
        if s.count == 0 {
            return match s.deadline {
                _ if t.nonblocking() => -EAGAIN,
                Some(d) => {
                    drop(s);
                    self.threads.cur_mut().retry_deadline = Some(d);
                    WOULD_BLOCK
                }
                // a disarmed timer: only a settime from another thread ends the wait
                None => WOULD_BLOCK,
            };
        }
        let n = std::mem::take(&mut s.count);
        drop(s);
        match mem.write_bytes(buf, &n.to_le_bytes()) {
            Ok(()) => 8,
            Err(_) => -EFAULT,
        }
    }

    /// `signalfd4(fd, mask, sizemask, flags)`: a new signalfd (`fd` -1) or a new mask for one.
    fn sys_signalfd4(&mut self, mem: &mut Memory, a: [u64; 6]) -> Result<i64, i64> {
        let [fd, mask, size, flags, ..] = a;
        if size != 8 || flags & !(TFD_NONBLOCK | TFD_CLOEXEC) != 0 {
            return Err(EINVAL);
        }
        // SIGKILL and SIGSTOP are never taken
        let set = mem.load_u64(mask).map_err(|_| EFAULT)? & !((1 << 8) | (1 << 18));
        if fd as i64 != -1 {
            return match self.fd(fd)? {
                Fd::Signal(s) => {
                    s.mask.store(set, std::sync::atomic::Ordering::Relaxed);
                    Ok(fd as i64)
                }
                _ => Err(EINVAL),
            };
        }
        let fd = self.install(Fd::Signal(SignalFd {
            mask: Arc::new(set.into()),
            nonblock: Arc::new((flags & TFD_NONBLOCK != 0).into()),
        }));
        if fd >= 0 && flags & TFD_CLOEXEC != 0 {
            self.cloexec.insert(fd as usize);
        }
        Ok(fd)
    }

    /// When descriptor `fd`'s timer next expires, if it is an armed timerfd: a `poll` or
    /// `epoll_wait` waiting on it wakes then.
    pub(super) fn timer_deadline(&self, fd: usize) -> Option<u64> {
        match self.fds.get(fd)?.as_ref()? {
            Fd::Timer(t) => t.lock().deadline,
            _ => None,
        }
    }

    /// Whether a signal in `mask` is pending for the running thread (`poll`'s readable).
    pub(super) fn signal_pending_in(&self, mask: u64) -> bool {
        let t = &self.threads.list[self.threads.current];
        (t.pending | self.signals.shared_pending) & mask != 0
    }

    /// `read` of a signalfd: as many pending signals in its mask as fit, 128 bytes each.
    pub(super) fn read_signalfd(
        &mut self,
        mem: &mut Memory,
        s: SignalFd,
        buf: u64,
        count: u64,
    ) -> i64 {
        const SIZE: u64 = 128;
        if count < SIZE {
            return -EINVAL;
        }
        let set = s.mask();
        let i = self.threads.current;
        self.take_shared_in(i, set);
        let mut n = 0;
        while n + SIZE <= count.min(MAX_IO as u64) {
            let ready = self.threads.list[i].pending & set;
            if ready == 0 {
                break;
            }
            let sig = u64::from(ready.trailing_zeros()) + 1;
            let info = self.dequeue(i, sig);
            if mem
                .write_bytes(buf + n, &signalfd_siginfo(sig, info))
                .is_err()
            {
                return if n > 0 { n as i64 } else { -EFAULT };
            }
            n += SIZE;
        }
        if n > 0 {
            n as i64
        } else if s.nonblocking() {
            -EAGAIN
        } else {
            WOULD_BLOCK
        }
    }
}

/// A `signalfd_siginfo`: signo, errno, code, pid, uid, …, `ssi_int` and `ssi_ptr` from the
/// value a queued signal carries.
fn signalfd_siginfo(sig: u64, info: SigInfo) -> [u8; 128] {
    let mut b = [0u8; 128];
    b[..4].copy_from_slice(&(sig as u32).to_le_bytes());
    b[8..12].copy_from_slice(&info.code.to_le_bytes());
    b[12..16].copy_from_slice(&(info.word16 as u32).to_le_bytes()); // ssi_pid
    b[16..20].copy_from_slice(&((info.word16 >> 32) as u32).to_le_bytes()); // ssi_uid
    b[44..48].copy_from_slice(&(info.word24 as u32).to_le_bytes()); // ssi_int
    b[48..56].copy_from_slice(&info.word24.to_le_bytes()); // ssi_ptr
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timer_counts_every_expiry_and_rearms_on_its_period() {
        let mut t = TimerState {
            deadline: Some(100),
            interval: 30,
            ..TimerState::default()
        };
        t.advance(99);
        assert_eq!((t.count, t.deadline), (0, Some(100)), "not yet");
        t.advance(100);
        assert_eq!((t.count, t.deadline), (1, Some(130)));
        t.advance(191); // 130, 160 and 190 passed
        assert_eq!((t.count, t.deadline), (4, Some(220)));
        let mut once = TimerState {
            deadline: Some(5),
            ..TimerState::default()
        };
        once.advance(1_000);
        assert_eq!(
            (once.count, once.deadline),
            (1, None),
            "a one-shot timer fires once"
        );
        let mut huge = TimerState {
            deadline: Some(0),
            interval: 1,
            count: u64::MAX - 1,
            ..TimerState::default()
        };
        huge.advance(u64::MAX);
        assert_eq!(huge.count, u64::MAX, "the count saturates");
    }
}
