//! Sockets inside the guest (docs/machine.md, "Processes"): `socketpair(AF_UNIX,
//! SOCK_STREAM)` — two connected ends, each a pair of the machine's pipes, one each way — with
//! read/write, `sendto`/`recvfrom` without addresses, `shutdown`, and `pselect6` over every
//! descriptor the machine can wait on. Other sockets are the machine's own loopback
//! ([`super::net`]): no guest reaches the host's network.

use super::pipe::{PipeEnd, PipeIo};
use super::{Fd, Kernel, Ret, EFAULT, EINVAL};
use crate::memory::Memory;

use super::net::{ENOTCONN, ENOTSOCK, MSG_TRUNC, SOCK_CLOEXEC, SOCK_NONBLOCK};

const EOPNOTSUPP: i64 = 95;
/// A send that loses its reader is `EPIPE` without `SIGPIPE`.
const MSG_NOSIGNAL: u64 = 0x4000;
const EMSGSIZE: i64 = 90;
/// Most buffers one `sendmsg`/`recvmsg` takes (Linux's `UIO_MAXIOV`).
const MAX_IOV: u64 = 1024;

/// The fields of a `struct msghdr` (riscv64: 56 bytes) a call reads.
struct MsgHdr {
    name: u64,
    namelen: u64,
    iov: u64,
    iovlen: u64,
    controllen: u64,
}

fn read_msghdr(mem: &mut Memory, at: u64) -> Result<MsgHdr, i64> {
    let u64_at = |mem: &mut Memory, off: u64| mem.load_u64(at + off).map_err(|_| EFAULT);
    Ok(MsgHdr {
        name: u64_at(mem, 0)?,
        namelen: u64::from(mem.load_u32(at + 8).map_err(|_| EFAULT)?),
        iov: u64_at(mem, 16)?,
        iovlen: u64_at(mem, 24)?,
        controllen: u64_at(mem, 40)?,
    })
}

/// Each `struct iovec` of the array at `iov`: (base, length), at most [`MAX_IOV`] and
/// [`super::MAX_IO`] bytes in all (`EMSGSIZE` past them).
fn iovecs(mem: &mut Memory, iov: u64, n: u64) -> Result<Vec<(u64, usize)>, i64> {
    if n > MAX_IOV {
        return Err(EMSGSIZE);
    }
    let mut v = Vec::with_capacity(n as usize);
    let mut total = 0usize;
    for i in 0..n {
        let base = mem.load_u64(iov + 16 * i).map_err(|_| EFAULT)?;
        let len = mem.load_u64(iov + 16 * i + 8).map_err(|_| EFAULT)?;
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        total = total.checked_add(len).ok_or(EINVAL)?;
        if total > super::MAX_IO {
            return Err(EMSGSIZE);
        }
        v.push((base, len));
    }
    Ok(v)
}

/// The bytes of the buffers at `iov`, in order.
fn gather(mem: &mut Memory, iov: u64, n: u64) -> Result<Vec<u8>, i64> {
    let parts = iovecs(mem, iov, n)?;
    let mut data = vec![0u8; parts.iter().map(|p| p.1).sum()];
    let mut at = 0;
    for (base, len) in parts {
        mem.read_bytes(base, &mut data[at..at + len])
            .map_err(|_| EFAULT)?;
        at += len;
    }
    Ok(data)
}

/// Bytes the buffers at `iov` hold, each checked writable.
fn iov_room(mem: &mut Memory, iov: u64, n: u64) -> Result<usize, i64> {
    let parts = iovecs(mem, iov, n)?;
    for &(base, len) in &parts {
        mem.check_range(base, len as u64, crate::memory::perm::W)
            .map_err(|_| EFAULT)?;
    }
    Ok(parts.iter().map(|p| p.1).sum())
}

/// `data` written over the buffers at `iov`, in order.
fn scatter(mem: &mut Memory, iov: u64, n: u64, data: &[u8]) -> Result<(), i64> {
    let mut at = 0;
    for (base, len) in iovecs(mem, iov, n)? {
        let k = len.min(data.len() - at);
        mem.write_bytes(base, &data[at..at + k])
            .map_err(|_| EFAULT)?;
        at += k;
        if at == data.len() {
            break;
        }
    }
    Ok(())
}

const AF_UNIX: u64 = 1;
const SOCK_DGRAM: u64 = 2;
const MSG_MORE: u64 = 0x8000;

/// One end of a connected stream socket pair.
pub(crate) struct SocketEnd {
    /// What the peer wrote (`None` after `shutdown(SHUT_RD)`).
    pub rx: Option<PipeEnd>,
    /// Toward the peer (`None` after `shutdown(SHUT_WR)`: the peer reads end of file).
    pub tx: Option<PipeEnd>,
    /// (this end's address, the peer's) of a connection made on the machine's network
    /// (`None`: a `socketpair`, unnamed).
    pub names: Option<std::sync::Arc<(super::net::Addr, super::net::Addr)>>,
    /// The peer's process (`SO_PEERCRED`): the connecting one for an accepted end, the
    /// listening one for a connecting end, the creator for a pair.
    pub peer_pid: u32,
}

impl SocketEnd {
    /// Another descriptor for this end (dup, fork).
    pub fn try_clone(&self) -> SocketEnd {
        SocketEnd {
            rx: self.rx.clone(),
            tx: self.tx.clone(),
            names: self.names.clone(),
            peer_pid: self.peer_pid,
        }
    }

    /// `poll` readiness: (readable or at end, writable, hung up).
    pub fn ready(&self) -> (bool, bool, bool) {
        let r = self.rx.as_ref().map_or((true, false, true), PipeEnd::ready);
        let w = self
            .tx
            .as_ref()
            .map_or((false, false, true), PipeEnd::ready);
        // a socket at its end is readable (Linux's RCV_SHUTDOWN), unlike a pipe
        (r.0 || r.2, w.1, r.2 && w.2)
    }

    /// Wake-ups of its reading side and of its writing side so far (see
    /// [`PipeEnd::edges`]); a direction shut counts as one more.
    pub fn edges(&self) -> (u64, u64) {
        let rd = self.rx.as_ref().map_or(u64::MAX, |p| p.edges().0);
        let wr = self.tx.as_ref().map_or(u64::MAX, |p| p.edges().1);
        (rd, wr)
    }

    /// Its reading side is at its end: shut here, or the peer's writing side shut or gone
    /// (`EPOLLRDHUP`, `POLLRDHUP`).
    pub fn read_hung_up(&self) -> bool {
        self.rx.as_ref().is_none_or(|p| p.ready().2)
    }

    /// Sets `O_NONBLOCK` on both directions.
    pub fn set_nonblocking(&self, on: bool) {
        for p in self.rx.iter().chain(self.tx.iter()) {
            p.set_nonblocking(on);
        }
    }

    /// Whether calls wait.
    pub fn nonblocking(&self) -> bool {
        self.rx
            .as_ref()
            .or(self.tx.as_ref())
            .is_some_and(PipeEnd::nonblocking)
    }

    /// Reads what the peer wrote.
    pub fn read(&self, out: &mut [u8]) -> PipeIo {
        match &self.rx {
            Some(p) => p.read(out),
            None => PipeIo::Done(0),
        }
    }

    /// Whether it is a TCP connection on the machine's loopback (not a Unix socket).
    pub fn inet(&self) -> bool {
        self.names
            .as_ref()
            .is_some_and(|n| matches!(n.0, super::net::Addr::Inet(..)))
    }

    /// Writes toward the peer (`EPIPE` once it or this end shut the direction); `more`
    /// (`MSG_MORE`) holds the bytes back from the peer until a write without it.
    pub fn write(&self, data: &[u8], more: bool) -> PipeIo {
        match &self.tx {
            Some(p) => p.write_more(data, more),
            None => PipeIo::Err(super::EPIPE),
        }
    }
}

impl Kernel {
    /// `socketpair(AF_UNIX, SOCK_STREAM or SOCK_DGRAM [|NONBLOCK|CLOEXEC], 0, sv)`.
    pub(super) fn sys_socketpair(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        let [domain, kind, protocol, sv, ..] = a;
        // as Linux: the socket is made (socket's errors), then only Unix ones pair
        match super::net::socket_kind(domain, kind, protocol) {
            Ok((f, _)) if u64::from(f) == AF_UNIX => {}
            Ok(_) => return -EOPNOTSUPP,
            Err(e) => return -e,
        }
        if mem.check_range(sv, 8, crate::memory::perm::W).is_err() {
            return -EFAULT;
        }
        let nonblock = kind & SOCK_NONBLOCK != 0;
        let pid = self.current_pid();
        let ends = if kind & 0xf == SOCK_DGRAM {
            match self.datagram_pair(nonblock) {
                Ok(e) => e.map(Fd::Net),
                Err(e) => return -e,
            }
        } else {
            let (a_rx, b_tx) = PipeEnd::pair(nonblock, &self.events, &self.pipe_bytes);
            let (b_rx, a_tx) = PipeEnd::pair(nonblock, &self.events, &self.pipe_bytes);
            [(a_rx, a_tx), (b_rx, b_tx)].map(|(rx, tx)| {
                Fd::Socket(SocketEnd {
                    rx: Some(rx),
                    tx: Some(tx),
                    names: None,
                    peer_pid: pid,
                })
            })
        };
        let mut fds = [0i64; 2];
        for (slot, end) in fds.iter_mut().zip(ends) {
            let fd = self.install(end);
            if fd < 0 {
                if fds[0] > 0 {
                    self.sys_close(fds[0] as u64);
                }
                return fd;
            }
            if kind & SOCK_CLOEXEC != 0 {
                self.cloexec.insert(fd as usize);
            }
            *slot = fd;
        }
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&(fds[0] as u32).to_le_bytes());
        b[4..].copy_from_slice(&(fds[1] as u32).to_le_bytes());
        if mem.write_bytes(sv, &b).is_err() {
            self.sys_close(fds[0] as u64);
            self.sys_close(fds[1] as u64);
            return -EFAULT;
        }
        0
    }

    /// `shutdown(fd, how)`: SHUT_RD (0), SHUT_WR (1: the peer reads end of file), SHUT_RDWR.
    pub(super) fn sys_shutdown(&mut self, fd: u64, how: u64) -> i64 {
        if how > 2 {
            return -EINVAL;
        }
        match self.fd(fd) {
            Ok(Fd::Socket(s)) => {
                if how != 1 {
                    s.rx = None;
                }
                if how != 0 {
                    s.tx = None;
                }
                self.io_changed();
                0
            }
            // a listening or unconnected socket has nothing to shut down; a connected
            // datagram socket's shutdown has no effect here
            Ok(Fd::Net(n)) if n.has_peer() => 0,
            Ok(Fd::Net(_)) => -ENOTCONN,
            Ok(_) => -ENOTSOCK,
            Err(e) => -e,
        }
    }

    /// `sendto(fd, buf, len, flags, addr, addrlen)` on a connected pair: a write. An address
    /// is `EISCONN` on a Unix stream and ignored on TCP, as Linux answers.
    pub(super) fn sys_sendto(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        match self.fd(a[0]) {
            Ok(Fd::Net(n)) => {
                let n = n.clone();
                self.net_sendto(mem, &n, a)
            }
            Ok(Fd::Socket(s))
                if a[4] != 0
                    && !s
                        .names
                        .as_ref()
                        .is_some_and(|n| matches!(n.0, super::net::Addr::Inet(..))) =>
            {
                -106 // EISCONN
            }
            Ok(Fd::Socket(_)) => {
                self.no_sigpipe = a[3] & MSG_NOSIGNAL != 0;
                self.msg_more = a[3] & MSG_MORE != 0;
                let r = self.sys_write(mem, a[0], a[1], a[2]);
                (self.no_sigpipe, self.msg_more) = (false, false);
                r
            }
            Ok(_) => -ENOTSOCK,
            Err(e) => -e,
        }
    }

    /// `recvfrom(fd, buf, len, flags, addr, addrlen)` on a connected pair: a read (the
    /// peer's address is left unset: `*addrlen` becomes 0).
    pub(super) fn sys_recvfrom(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        match self.fd(a[0]) {
            Ok(Fd::Net(n)) => {
                let n = n.clone();
                self.net_recvfrom(mem, &n, a)
            }
            Ok(Fd::Socket(_)) => {
                // as a Linux stream socket: no urgent data (MSG_OOB EINVAL), an empty error
                // queue (MSG_ERRQUEUE EAGAIN), a negative address length EINVAL
                const MSG_OOB: u64 = 1;
                const MSG_ERRQUEUE: u64 = 0x2000;
                if a[3] & MSG_OOB != 0 {
                    return -EINVAL;
                }
                if a[3] & MSG_ERRQUEUE != 0 {
                    return -super::EAGAIN;
                }
                if a[4] != 0 && a[5] != 0 {
                    match mem.load_u32(a[5]) {
                        Ok(l) if (l as i32) < 0 => return -EINVAL,
                        Ok(_) => {}
                        Err(_) => return -EFAULT,
                    }
                }
                let n = self.recv_stream(mem, a);
                if n >= 0 && a[5] != 0 && mem.store_u32(a[5], 0).is_err() {
                    return -EFAULT;
                }
                n
            }
            Ok(_) => -ENOTSOCK,
            Err(e) => -e,
        }
    }

    /// A read of a connected stream socket with `recv`'s flags: `MSG_DONTWAIT` (this call
    /// does not wait) and `MSG_PEEK` (the bytes stay).
    fn recv_stream(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        const MSG_PEEK: u64 = 2;
        const MSG_DONTWAIT: u64 = 0x40;
        let Ok(Fd::Socket(s)) = self.fd(a[0]) else {
            return -ENOTSOCK;
        };
        let dontwait = a[3] & MSG_DONTWAIT != 0;
        if a[3] & MSG_PEEK != 0 {
            let mut tmp = vec![0u8; (a[2] as usize).min(super::MAX_IO)];
            let got = match &s.rx {
                Some(rx) => rx.peek(&mut tmp),
                None => Some(0),
            };
            return match got {
                Some(n) => match mem.write_bytes(a[1], &tmp[..n]) {
                    Ok(()) => n as i64,
                    Err(_) => -EFAULT,
                },
                None if dontwait || s.nonblocking() => -super::EAGAIN,
                None => super::WOULD_BLOCK,
            };
        }
        let was = s.nonblocking();
        if dontwait && !was {
            s.set_nonblocking(true);
        }
        let n = self.sys_read(mem, a[0], a[1], a[2]);
        if dontwait && !was {
            if let Ok(Fd::Socket(s)) = self.fd(a[0]) {
                s.set_nonblocking(false);
            }
        }
        n
    }

    /// `sendmsg(fd, msg, flags)`: the buffers of `msg_iov` gathered into one write or one
    /// datagram, to `msg_name` if given. Ancillary data (`msg_control`: passing descriptors,
    /// credentials) is refused with `EOPNOTSUPP` and a warning.
    pub(super) fn sys_sendmsg(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        let [fd, msg, flags, ..] = a;
        let h = match read_msghdr(mem, msg) {
            Ok(h) => h,
            Err(e) => return -e,
        };
        if h.controllen != 0 {
            self.warn_once(
                0x7_0000_0001,
                "sendmsg with ancillary data (SCM_RIGHTS, SCM_CREDENTIALS): not supported; \
                 returning EOPNOTSUPP",
            );
            return -EOPNOTSUPP;
        }
        let data = match gather(mem, h.iov, h.iovlen) {
            Ok(d) => d,
            Err(e) => return -e,
        };
        match self.fd(fd) {
            Ok(Fd::Net(n)) => {
                let n = n.clone();
                self.net_send(mem, &n, [fd, 0, 0, flags, h.name, h.namelen], Some(data))
            }
            Ok(Fd::Socket(_)) if h.name != 0 => -106, // EISCONN
            Ok(Fd::Socket(_)) => {
                self.no_sigpipe = flags & MSG_NOSIGNAL != 0;
                self.msg_more = flags & MSG_MORE != 0;
                let r = self.write_fd(fd, &data);
                (self.no_sigpipe, self.msg_more) = (false, false);
                r
            }
            Ok(_) => -ENOTSOCK,
            Err(e) => -e,
        }
    }

    /// `recvmsg(fd, msg, flags)`: one read or one datagram scattered over `msg_iov`; the
    /// sender's address into `msg_name` when there is one, no ancillary data
    /// (`msg_controllen` 0), `MSG_TRUNC` in `msg_flags` when a datagram did not fit.
    pub(super) fn sys_recvmsg(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        let [fd, msg, flags, ..] = a;
        let h = match read_msghdr(mem, msg) {
            Ok(h) => h,
            Err(e) => return -e,
        };
        if (h.namelen as u32 as i32) < 0 {
            return -EINVAL; // as Linux's copy_msghdr_from_user
        }
        if let Ok(Fd::Socket(_)) = self.fd(fd) {
            // a stream has no urgent data (MSG_OOB) and an empty error queue (MSG_ERRQUEUE)
            const MSG_OOB: u64 = 1;
            const MSG_ERRQUEUE: u64 = 0x2000;
            if flags & MSG_OOB != 0 {
                return -EINVAL;
            }
            if flags & MSG_ERRQUEUE != 0 {
                return -super::EAGAIN;
            }
        }
        let room = match iov_room(mem, h.iov, h.iovlen) {
            Ok(r) => r,
            Err(e) => return -e,
        };
        let mut got = Vec::new();
        let mut truncated = false;
        let r = match self.fd(fd) {
            Ok(Fd::Net(n)) => {
                let n = n.clone();
                // the full length comes back: whether it was cut is for msg_flags
                let full = self.net_recv(
                    mem,
                    &n,
                    [fd, 0, room as u64, flags | MSG_TRUNC, h.name, msg + 8],
                    Some(&mut got),
                );
                if full >= 0 {
                    truncated = full as usize > got.len();
                    if flags & MSG_TRUNC != 0 {
                        full
                    } else {
                        got.len() as i64
                    }
                } else {
                    full
                }
            }
            Ok(Fd::Socket(s)) => {
                let mut tmp = vec![0u8; room];
                match s.read(&mut tmp) {
                    PipeIo::Done(n) => {
                        got.extend_from_slice(&tmp[..n]);
                        // a stream has no sender's address
                        if h.name != 0 && mem.store_u32(msg + 8, 0).is_err() {
                            return -EFAULT;
                        }
                        n as i64
                    }
                    PipeIo::Wait => return super::WOULD_BLOCK,
                    PipeIo::Err(e) => return -e,
                }
            }
            Ok(_) => return -ENOTSOCK,
            Err(e) => return -e,
        };
        if r < 0 {
            return r;
        }
        if let Err(e) = scatter(mem, h.iov, h.iovlen, &got) {
            return -e;
        }
        let msg_flags: u32 = if truncated { MSG_TRUNC as u32 } else { 0 };
        if mem.store_u64(msg + 40, 0).is_err() || mem.store_u32(msg + 48, msg_flags).is_err() {
            return -EFAULT;
        }
        r
    }

    /// `getsockname` (`peer` false) or `getpeername`: a connection's names, an unnamed
    /// `AF_UNIX` address for a pair's end.
    pub(super) fn sys_sockname(&mut self, mem: &mut Memory, a: [u64; 3], peer: bool) -> i64 {
        let [fd, addr, len] = a;
        match self.fd(fd) {
            Ok(Fd::Net(n)) => {
                let n = n.clone();
                self.net_name(mem, &n, a, peer)
            }
            Ok(Fd::Socket(s)) if s.tx.is_none() && s.rx.is_none() => -ENOTCONN,
            Ok(Fd::Socket(s)) => {
                // as Linux's `move_addr_to_user`: a negative length is EINVAL
                let room = match mem.load_u32(len) {
                    Ok(r) if (r as i32) < 0 => return -EINVAL,
                    Ok(r) => r,
                    Err(_) => return -EFAULT,
                };
                let bytes = match &s.names {
                    Some(n) if peer => n.1.bytes(),
                    Some(n) => n.0.bytes(),
                    None => (AF_UNIX as u16).to_le_bytes().to_vec(),
                };
                let n = (room as usize).min(bytes.len());
                if mem.write_bytes(addr, &bytes[..n]).is_err()
                    || mem.store_u32(len, bytes.len() as u32).is_err()
                {
                    return -EFAULT;
                }
                0
            }
            Ok(_) => -ENOTSOCK,
            Err(e) => -e,
        }
    }

    /// Whether descriptor `fd` is (readable or at end, writable, hung up); `None` if it is
    /// not open. Files, devices and stdio are always ready, as Linux's regular files are.
    /// An edge-triggered entry's wake-up counts for `fd` ([`PipeEnd::edges`]); `None` for
    /// descriptors reported level-triggered whatever the entry asks.
    pub(super) fn fd_edges(&self, fd: usize) -> Option<(u64, u64)> {
        match self.fds.get(fd)?.as_ref()? {
            Fd::Pipe(p) => Some(p.edges()),
            Fd::Socket(s) => Some(s.edges()),
            _ => None,
        }
    }

    pub(super) fn fd_ready(&self, fd: usize) -> Option<(bool, bool, bool)> {
        match self.fds.get(fd)?.as_ref()? {
            Fd::Pipe(p) => Some(p.ready()),
            Fd::Socket(s) => Some(s.ready()),
            Fd::Net(s) => Some(s.ready()),
            Fd::Event(e) => Some(e.ready()),
            Fd::Inotify(i) => Some((i.ready(), false, false)),
            Fd::Epoll(e) => Some((self.epoll_ready(e, 0), false, false)),
            Fd::Timer(t) => Some((t.ready(self.now_ns), false, false)),
            Fd::Signal(s) => Some((self.signal_pending_in(s.mask()), false, false)),
            // a process descriptor: readable once the process has ended
            Fd::Pid(pid) => {
                let ended = self.procs.get(*pid).is_none_or(|p| p.status.is_some());
                Some((ended, false, false))
            }
            _ => Some((true, true, false)),
        }
    }

    /// `pselect6(nfds, readfds, writefds, exceptfds, timeout, sigmask)`: which of the
    /// descriptors in the sets are ready, waiting (until the timeout) while none is.
    pub(super) fn sys_pselect6(
        &mut self,
        mem: &mut Memory,
        a: [u64; 6],
        instret: u64,
    ) -> Result<Ret, i64> {
        let [nfds, rd, wr, ex, timeout, _] = a;
        if nfds > super::MAX_FDS as u64 {
            return Err(EINVAL);
        }
        let bytes = nfds.div_ceil(64) as usize * 8;
        let read_set = |mem: &mut Memory, at: u64| -> Result<Vec<u8>, i64> {
            let mut v = vec![0u8; bytes];
            if at != 0 {
                mem.read_bytes(at, &mut v).map_err(|_| EFAULT)?;
            }
            Ok(v)
        };
        let (r_in, w_in, e_in) = (read_set(mem, rd)?, read_set(mem, wr)?, read_set(mem, ex)?);
        let deadline = match self.threads.cur().retry_deadline {
            Some(d) => Some(d),
            None if timeout == 0 => None,
            None => Some(
                self.machine_ns(instret)
                    .saturating_add(super::threads::read_timespec(mem, timeout)?),
            ),
        };
        let (mut r_out, mut w_out) = (vec![0u8; bytes], vec![0u8; bytes]);
        let mut ready = 0i64;
        for fd in 0..nfds as usize {
            let bit = |s: &[u8]| s[fd / 8] & (1 << (fd % 8)) != 0;
            let (want_r, want_w, want_e) = (bit(&r_in), bit(&w_in), bit(&e_in));
            if !(want_r || want_w || want_e) {
                continue;
            }
            let Some((r, w, gone)) = self.fd_ready(fd) else {
                return Err(super::EBADF);
            };
            if want_r && (r || gone) {
                r_out[fd / 8] |= 1 << (fd % 8);
                ready += 1;
            }
            if want_w && (w || gone) {
                w_out[fd / 8] |= 1 << (fd % 8);
                ready += 1;
            }
        }
        if ready == 0 && deadline.is_none_or(|d| d > self.machine_ns(instret)) {
            self.threads.cur_mut().retry_deadline = deadline;
            return Ok(self.block_retry(deadline));
        }
        for (at, set) in [(rd, &r_out), (wr, &w_out), (ex, &vec![0u8; bytes])] {
            if at != 0 {
                mem.write_bytes(at, set).map_err(|_| EFAULT)?;
            }
        }
        Ok(Ret::Value(ready))
    }
}
