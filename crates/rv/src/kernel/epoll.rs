//! `epoll` and `eventfd` inside the guest (docs/machine.md, "Processes"): what event loops
//! (libuv, libevent, Python's `selectors`, servers that fork) wait with.
//!
//! An epoll instance is an interest list keyed by descriptor number, shared by the
//! descriptors that refer to it (`dup`, `fork`); `epoll_pwait` asks each listed descriptor of
//! the *calling* process for its readiness ([`Kernel::fd_ready`]) and, when none is ready,
//! blocks its thread until any pipe, socket, process or descriptor changes
//! ([`super::Wait::Retry`]) or the timeout passes. An edge-triggered entry (`EPOLLET`) on a
//! pipe or a Unix or loopback stream socket reports a direction again only after that
//! direction was woken since its last report (a write wakes the readers, a read the writers,
//! an end gone both), as Linux's ready list does; on other descriptors (eventfd, timerfd,
//! inotify, datagram sockets) it is reported as a level-triggered one, which a correct
//! edge-triggered loop, draining before it waits, cannot tell apart. `EPOLLONESHOT`
//! disables an entry after one report until `EPOLL_CTL_MOD`. An entry goes away when its
//! descriptor is closed in the process that waits.
//!
//! An eventfd is a 64-bit counter: a write adds, a read takes the whole count (or one, with
//! `EFD_SEMAPHORE`), a read of zero waits, a write that would pass `u64::MAX - 1` waits.

use super::{Fd, Kernel, Ret, EAGAIN, EFAULT, EINVAL};
use crate::memory::Memory;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

const EEXIST: i64 = 17;
const ENOENT: i64 = 2;
const EPERM: i64 = 1;
const ELOOP: i64 = 40;

const EPOLL_CTL_ADD: u64 = 1;
const EPOLL_CTL_DEL: u64 = 2;
const EPOLL_CTL_MOD: u64 = 3;

const EPOLLIN: u32 = 0x1;
const EPOLLOUT: u32 = 0x4;
const EPOLLERR: u32 = 0x8;
const EPOLLHUP: u32 = 0x10;
const EPOLLRDNORM: u32 = 0x40;
const EPOLLWRNORM: u32 = 0x100;
const EPOLLRDHUP: u32 = 0x2000;
const EPOLLONESHOT: u32 = 1 << 30;
const EPOLLET: u32 = 1 << 31;

const O_CLOEXEC: u64 = 0o2000000;
const O_NONBLOCK: u64 = 0o4000;
const EFD_SEMAPHORE: u64 = 1;
/// Deepest epoll nesting below an instance (Linux's `EP_MAX_NESTS` is 4).
const MAX_NESTING: usize = 4;

/// Most events one `epoll_pwait` returns (Linux: `INT_MAX / sizeof(struct epoll_event)`;
/// here the descriptor limit bounds an interest list anyway).
const MAX_EVENTS: u64 = (i32::MAX / 16) as u64;

/// One descriptor's registration.
#[derive(Clone, Copy, Debug)]
struct Entry {
    events: u32,
    data: u64,
    /// An `EPOLLONESHOT` entry that has reported: silent until `EPOLL_CTL_MOD`.
    disarmed: bool,
    /// An `EPOLLET` entry's descriptor's wake-up counts when it last reported
    /// ([`Kernel::fd_edges`]; `None`: not yet, or since `EPOLL_CTL_MOD`).
    seen: Option<(u64, u64)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // one host thread runs the machine: a poisoned lock only means a panic elsewhere
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An epoll instance, as descriptors hold it: cloning (dup, fork) shares it.
#[derive(Clone)]
pub(crate) struct Epoll {
    interest: Arc<Mutex<BTreeMap<i32, Entry>>>,
}

impl Epoll {
    /// Whether it is `other` (the same instance).
    fn same(&self, other: &Epoll) -> bool {
        Arc::ptr_eq(&self.interest, &other.interest)
    }

    /// Drops `fd`'s registration (its descriptor closed).
    pub fn forget(&self, fd: i32) {
        lock(&self.interest).remove(&fd);
    }
}

/// An eventfd, as descriptors hold it: cloning (dup, fork) shares the counter and the
/// `O_NONBLOCK` flag of the open file.
#[derive(Clone)]
pub(crate) struct EventFd {
    count: Arc<Mutex<u64>>,
    semaphore: bool,
    nonblock: Arc<AtomicBool>,
    /// The kernel's change counter, moved by every read and write.
    events: Arc<AtomicU64>,
}

impl EventFd {
    /// (readable, writable, hung up).
    pub fn ready(&self) -> (bool, bool, bool) {
        let c = *lock(&self.count);
        (c > 0, c < u64::MAX - 1, false)
    }

    /// Whether calls wait.
    pub fn nonblocking(&self) -> bool {
        self.nonblock.load(Ordering::Relaxed)
    }

    /// Sets `O_NONBLOCK`.
    pub fn set_nonblocking(&self, on: bool) {
        self.nonblock.store(on, Ordering::Relaxed);
    }

    /// A read into `out`: the count (or 1) as 8 bytes; `None` when it must wait.
    pub fn read(&self, out: &mut [u8]) -> Result<Option<usize>, i64> {
        if out.len() < 8 {
            return Err(EINVAL);
        }
        let mut c = lock(&self.count);
        if *c == 0 {
            return if self.nonblocking() {
                Err(EAGAIN)
            } else {
                Ok(None)
            };
        }
        let v = if self.semaphore { 1 } else { *c };
        *c -= v;
        out[..8].copy_from_slice(&v.to_le_bytes());
        self.events.fetch_add(1, Ordering::Relaxed);
        Ok(Some(8))
    }

    /// A write of the 8-byte value in `data`; `None` when it must wait.
    pub fn write(&self, data: &[u8]) -> Result<Option<usize>, i64> {
        let Some(v) = data.get(..8) else {
            return Err(EINVAL);
        };
        let v = u64::from_le_bytes(v.try_into().map_err(|_| EINVAL)?);
        if v == u64::MAX {
            return Err(EINVAL);
        }
        let mut c = lock(&self.count);
        if *c > u64::MAX - 1 - v {
            return if self.nonblocking() {
                Err(EAGAIN)
            } else {
                Ok(None)
            };
        }
        *c += v;
        self.events.fetch_add(1, Ordering::Relaxed);
        Ok(Some(8))
    }
}

impl Kernel {
    /// `epoll_create1(flags)` (`EPOLL_CLOEXEC` is `O_CLOEXEC`).
    pub(super) fn sys_epoll_create1(&mut self, flags: u64) -> i64 {
        if flags & !O_CLOEXEC != 0 {
            return -EINVAL;
        }
        let fd = self.install(Fd::Epoll(Epoll {
            interest: Arc::new(Mutex::new(BTreeMap::new())),
        }));
        if fd >= 0 && flags & O_CLOEXEC != 0 {
            self.cloexec.insert(fd as usize);
        }
        fd
    }

    /// `eventfd2(initval, flags)`.
    pub(super) fn sys_eventfd2(&mut self, init: u64, flags: u64) -> i64 {
        if flags & !(O_CLOEXEC | O_NONBLOCK | EFD_SEMAPHORE) != 0 {
            return -EINVAL;
        }
        let fd = self.install(Fd::Event(EventFd {
            count: Arc::new(Mutex::new(init & 0xffff_ffff)),
            semaphore: flags & EFD_SEMAPHORE != 0,
            nonblock: Arc::new(AtomicBool::new(flags & O_NONBLOCK != 0)),
            events: self.events.clone(),
        }));
        if fd >= 0 && flags & O_CLOEXEC != 0 {
            self.cloexec.insert(fd as usize);
        }
        fd
    }

    /// `epoll_ctl(epfd, op, fd, event)`.
    /// The epoll instances registered in `ep`.
    fn inner_epolls(&self, ep: &Epoll) -> Vec<Epoll> {
        lock(&ep.interest)
            .keys()
            .filter_map(|&fd| match self.fds.get(fd as usize) {
                Some(Some(Fd::Epoll(e))) => Some(e.clone()),
                _ => None,
            })
            .collect()
    }

    /// Levels of epolls below `ep` (0: it holds none); `None` past [`MAX_NESTING`] + 1 or
    /// on reaching `target` (a cycle).
    fn depth_below(&self, ep: &Epoll, target: &Epoll, depth: usize) -> Option<usize> {
        if ep.same(target) || depth > MAX_NESTING + 1 {
            return None;
        }
        let mut most = 0;
        for e in self.inner_epolls(ep) {
            most = most.max(1 + self.depth_below(&e, target, depth + 1)?);
        }
        Some(most)
    }

    /// Levels of epolls (open in this process) above `ep`.
    fn depth_above(&self, ep: &Epoll, depth: usize) -> usize {
        if depth > MAX_NESTING + 1 {
            return depth;
        }
        let outer: Vec<Epoll> = self
            .fds
            .iter()
            .flatten()
            .filter_map(|f| match f {
                Fd::Epoll(o) if self.inner_epolls(o).iter().any(|i| i.same(ep)) => Some(o.clone()),
                _ => None,
            })
            .collect();
        outer
            .iter()
            .map(|o| 1 + self.depth_above(o, depth + 1))
            .max()
            .unwrap_or(0)
    }

    /// Whether registering epoll `inner` in `outer` makes a cycle or a chain deeper than
    /// Linux allows (`ELOOP`).
    fn epoll_loops(&self, inner: &Epoll, outer: &Epoll) -> bool {
        match self.depth_below(inner, outer, 0) {
            None => true,
            Some(below) => self.depth_above(outer, 0) + 1 + below > MAX_NESTING,
        }
    }

    /// An epoll instance as a descriptor in a `poll` or another epoll: readable when one of
    /// its descriptors has an event it asks for.
    pub(super) fn epoll_ready(&self, ep: &Epoll, depth: usize) -> bool {
        if depth > MAX_NESTING {
            return false;
        }
        let entries: Vec<(i32, Entry)> = lock(&ep.interest)
            .iter()
            .filter(|(_, e)| !e.disarmed)
            .map(|(&fd, &e)| (fd, e))
            .collect();
        entries.iter().any(|&(fd, e)| {
            let ready = match self.fds.get(fd as usize) {
                Some(Some(Fd::Epoll(inner))) => (self.epoll_ready(inner, depth + 1), false, false),
                Some(Some(_)) => self.fd_ready(fd as usize).unwrap_or_default(),
                _ => return false,
            };
            (ready.0 && e.events & (EPOLLIN | EPOLLRDNORM) != 0)
                || (ready.1 && e.events & (EPOLLOUT | EPOLLWRNORM) != 0)
                || ready.2
        })
    }

    pub(super) fn sys_epoll_ctl(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        let [epfd, op, fd, ev, ..] = a;
        let ep = match self.fd(epfd) {
            Ok(Fd::Epoll(e)) => e.clone(),
            Ok(_) => return -EINVAL,
            Err(e) => return -e,
        };
        match self.fd(fd) {
            Err(e) => return -e,
            // regular files and directories are always ready: Linux refuses them
            Ok(Fd::File(_) | Fd::Dir(_)) => return -EPERM,
            Ok(Fd::Epoll(_)) if fd == epfd => return -EINVAL,
            // an epoll inside an epoll: no cycle, at most 4 levels below (Linux's limits)
            Ok(Fd::Epoll(inner)) => {
                let inner = inner.clone();
                if a[1] == EPOLL_CTL_ADD && self.epoll_loops(&inner, &ep) {
                    return -ELOOP;
                }
            }
            Ok(_) => {}
        }
        let fd = fd as i32;
        let read_event = |mem: &mut Memory| -> Result<(u32, u64), i64> {
            let events = mem.load_u32(ev).map_err(|_| EFAULT)?;
            let data = mem.load_u64(ev + 8).map_err(|_| EFAULT)?;
            Ok((events, data))
        };
        let mut set = lock(&ep.interest);
        match op {
            EPOLL_CTL_ADD | EPOLL_CTL_MOD => {
                let (events, data) = match read_event(mem) {
                    Ok(e) => e,
                    Err(e) => return -e,
                };
                let present = set.contains_key(&fd);
                if op == EPOLL_CTL_ADD && present {
                    return -EEXIST;
                }
                if op == EPOLL_CTL_MOD && !present {
                    return -ENOENT;
                }
                set.insert(
                    fd,
                    Entry {
                        events,
                        data,
                        disarmed: false,
                        seen: None,
                    },
                );
            }
            EPOLL_CTL_DEL => {
                if set.remove(&fd).is_none() {
                    return -ENOENT;
                }
            }
            _ => return -EINVAL,
        }
        drop(set);
        self.io_changed();
        0
    }

    /// `epoll_pwait(epfd, events, maxevents, timeout_ms, sigmask, size)` and, with
    /// `timespec` (`epoll_pwait2`), its timeout as a `struct timespec` (0: forever).
    pub(super) fn sys_epoll_pwait(
        &mut self,
        mem: &mut Memory,
        a: [u64; 6],
        instret: u64,
        timespec: bool,
    ) -> Result<Ret, i64> {
        let [epfd, out, max, timeout, ..] = a;
        let max = max as i32;
        if max <= 0 || max as u64 > MAX_EVENTS {
            return Err(EINVAL);
        }
        let ep = match self.fd(epfd) {
            Ok(Fd::Epoll(e)) => e.clone(),
            Ok(_) => return Err(EINVAL),
            Err(e) => return Err(e),
        };
        if mem
            .check_range(out, max as u64 * 16, crate::memory::perm::W)
            .is_err()
        {
            return Err(EFAULT);
        }
        // a retried call keeps the deadline it first computed
        let deadline = match self.threads.cur().retry_deadline {
            Some(d) => Some(d),
            None if timespec && timeout == 0 => None,
            None if timespec => Some(
                self.machine_ns(instret)
                    .saturating_add(super::threads::read_timespec(mem, timeout)?),
            ),
            None if timeout as i32 >= 0 => Some(
                self.machine_ns(instret)
                    .saturating_add((timeout as i32) as u64 * 1_000_000),
            ),
            None => None,
        };
        let mut found: Vec<(u32, u64)> = Vec::new();
        let mut wake = deadline;
        {
            let mut set = lock(&ep.interest);
            // a descriptor closed since it was added has gone from the list
            set.retain(|&fd, _| matches!(self.fds.get(fd as usize), Some(Some(_))));
            for (&fd, e) in set.iter_mut() {
                if found.len() >= max as usize {
                    break;
                }
                if e.disarmed {
                    continue;
                }
                if let Some(t) = self.timer_deadline(fd as usize) {
                    wake = Some(wake.map_or(t, |w| w.min(t)));
                }
                let Some((mut r, mut w, mut hup)) = self.fd_ready(fd as usize) else {
                    continue;
                };
                // edge-triggered: a direction reports again only after a wake-up of it (a
                // write for the readers, a read for the writers, an end gone), as Linux's
                // ready list holds an entry only once its file woke it
                let edges = (e.events & EPOLLET != 0)
                    .then(|| self.fd_edges(fd as usize))
                    .flatten();
                if let (Some(now), Some(seen)) = (edges, e.seen) {
                    r &= now.0 != seen.0;
                    w &= now.1 != seen.1;
                    hup &= now != seen;
                }
                let mut got = 0u32;
                if r {
                    got |= e.events & (EPOLLIN | EPOLLRDNORM);
                }
                if w {
                    got |= e.events & (EPOLLOUT | EPOLLWRNORM);
                }
                let socket = match self.fds.get(fd as usize) {
                    Some(Some(Fd::Socket(s))) => Some(s.read_hung_up()),
                    _ => None,
                };
                if socket == Some(true)
                    && edges.is_none_or(|now| e.seen.is_none_or(|s| s.0 != now.0))
                {
                    // a socket whose reading side ended (shut here, or by the peer)
                    got |= e.events & EPOLLRDHUP;
                }
                if hup {
                    // a pipe's write end sees EPOLLERR, every other end EPOLLHUP (always
                    // reported, asked for or not)
                    let write_end = matches!(
                        self.fds.get(fd as usize),
                        Some(Some(Fd::Pipe(p))) if p.write
                    );
                    got |= if write_end { EPOLLERR } else { EPOLLHUP };
                }
                if got != 0 {
                    found.push((got, e.data));
                    if e.events & EPOLLONESHOT != 0 {
                        e.disarmed = true;
                    }
                    if edges.is_some() {
                        e.seen = edges;
                    }
                }
            }
        }
        if found.is_empty() && deadline.is_none_or(|d| d > self.machine_ns(instret)) {
            // nothing ready: wait for a change (a pipe, a socket, a process) or the deadline
            self.threads.cur_mut().retry_deadline = deadline;
            return Ok(self.block_retry(wake));
        }
        for (i, (events, data)) in found.iter().enumerate() {
            let at = out + 16 * i as u64;
            mem.store_u32(at, *events).map_err(|_| EFAULT)?;
            mem.store_u32(at + 4, 0).map_err(|_| EFAULT)?;
            mem.store_u64(at + 8, *data).map_err(|_| EFAULT)?;
        }
        Ok(Ret::Value(found.len() as i64))
    }

    /// Descriptor `fd` closed: every epoll instance of this process forgets it.
    pub(super) fn epoll_forget(&mut self, fd: usize) {
        for f in self.fds.iter().flatten() {
            if let Fd::Epoll(e) = f {
                e.forget(fd as i32);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn efd(init: u64, semaphore: bool, nonblock: bool) -> EventFd {
        EventFd {
            count: Arc::new(Mutex::new(init)),
            semaphore,
            nonblock: Arc::new(AtomicBool::new(nonblock)),
            events: Arc::new(AtomicU64::new(0)),
        }
    }

    #[test]
    fn an_eventfd_counts_and_waits_at_its_bounds() {
        let e = efd(0, false, false);
        let mut b = [0u8; 8];
        assert_eq!(e.read(&mut b), Ok(None), "zero: wait");
        assert_eq!(e.write(&3u64.to_le_bytes()), Ok(Some(8)));
        assert_eq!(e.write(&4u64.to_le_bytes()), Ok(Some(8)));
        assert_eq!(e.ready(), (true, true, false));
        assert_eq!(e.read(&mut b), Ok(Some(8)));
        assert_eq!(u64::from_le_bytes(b), 7, "the whole count");
        assert_eq!(e.read(&mut [0u8; 4]), Err(EINVAL), "short buffer");
        assert_eq!(e.write(&u64::MAX.to_le_bytes()), Err(EINVAL));
        assert_eq!(e.write(&(u64::MAX - 1).to_le_bytes()), Ok(Some(8)));
        assert_eq!(e.ready(), (true, false, false), "full");
        assert_eq!(
            e.write(&1u64.to_le_bytes()),
            Ok(None),
            "would pass the bound"
        );
        e.set_nonblocking(true);
        assert_eq!(e.write(&1u64.to_le_bytes()), Err(EAGAIN));
        let s = efd(2, true, true);
        assert_eq!(s.read(&mut b), Ok(Some(8)));
        assert_eq!(u64::from_le_bytes(b), 1, "a semaphore takes one");
        assert_eq!(s.read(&mut b), Ok(Some(8)));
        assert_eq!(s.read(&mut b), Err(EAGAIN));
    }
}
