//! The machine's own loopback network (docs/machine.md, "Processes"): `AF_INET` stream and
//! datagram sockets on 127.0.0.0/8 (and the any address, which is the same host here) and
//! `AF_UNIX` ones, between the guest's own processes and threads only. Nothing reaches the
//! host: a name bound here is in the machine's table, never a host port, and an address
//! outside the loopback is unreachable. A Unix socket bound to a path makes its socket file
//! beneath a read-write grant, as Linux does, and is found by that file's inode: only the
//! guest's own sockets are ever connected to.
//!
//! A stream connection is two of the machine's pipes, one each way, as a socket pair is
//! ([`super::socket::SocketEnd`]); `connect` puts the server's end on the listener's backlog,
//! where `accept` takes it. A datagram goes whole into the receiver's queue. Every byte queued
//! counts against the run's pipe bytes ([`super::pipe::MAX_PIPE_BYTES`]), so host memory
//! stays bounded however many sockets the guest opens.

use super::pipe::{PipeEnd, PipeIo};
use super::socket::SocketEnd;
use super::{Fd, Kernel, EAGAIN, EFAULT, EINVAL};
use crate::memory::Memory;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

pub(super) const AF_UNIX: u16 = 1;
pub(super) const AF_INET: u16 = 2;
const SOCK_STREAM: u64 = 1;
const SOCK_DGRAM: u64 = 2;
pub(super) const SOCK_NONBLOCK: u64 = 0o4000;
pub(super) const SOCK_CLOEXEC: u64 = 0o2000000;
const IPPROTO_TCP: u64 = 6;
const IPPROTO_UDP: u64 = 17;
const MSG_PEEK: u64 = 2;
pub(super) const MSG_TRUNC: u64 = 0x20;
const MSG_DONTWAIT: u64 = 0x40;
const MSG_MORE: u64 = 0x8000;
pub(super) const ENOTSOCK: i64 = 88;
const EDESTADDRREQ: i64 = 89;
const EMSGSIZE: i64 = 90;
pub(super) const EPROTONOSUPPORT: i64 = 93;
const ESOCKTNOSUPPORT: i64 = 94;
const EOPNOTSUPP: i64 = 95;
pub(super) const EAFNOSUPPORT: i64 = 97;
const EADDRINUSE: i64 = 98;
const EADDRNOTAVAIL: i64 = 99;
const ENETUNREACH: i64 = 101;
const ENOBUFS: i64 = 105;
const EISCONN: i64 = 106;
pub(super) const ENOTCONN: i64 = 107;
const ECONNREFUSED: i64 = 111;

/// Bytes a socket's datagram queue holds (Linux's default receive buffer).
pub const RCVBUF: usize = 212_992;
/// The largest datagram (UDP's limit; a Unix datagram may be as large as the buffer).
const MAX_INET_DATAGRAM: usize = 65_507;
/// Most names bound at once over the run.
pub const MAX_NAMES: usize = 65_536;
/// Most connections waiting on one listener (Linux's `SOMAXCONN`).
const SOMAXCONN: usize = 4096;
/// The ports bound by the kernel's choice (Linux's default `ip_local_port_range`).
const EPHEMERAL: (u16, u16) = (32_768, 60_999);

/// A socket address: an IPv4 address and port, or a Unix path (empty: unnamed; a leading
/// NUL byte: Linux's abstract namespace).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Addr {
    Inet([u8; 4], u16),
    Unix(Vec<u8>),
    /// What a Unix socket bound to a path is looked up by: its file's device and inode
    /// (never an address the guest sees); device `u64::MAX`: an end of a datagram
    /// `socketpair`, numbered.
    Node(u64, u64),
}

impl Addr {
    /// The `sockaddr` bytes the guest reads.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        match self {
            Addr::Inet(ip, port) => {
                let mut b = vec![0u8; 16];
                b[..2].copy_from_slice(&AF_INET.to_le_bytes());
                b[2..4].copy_from_slice(&port.to_be_bytes());
                b[4..8].copy_from_slice(ip);
                b
            }
            Addr::Unix(path) => {
                let mut b = AF_UNIX.to_le_bytes().to_vec();
                b.extend_from_slice(path);
                if !path.is_empty() && path[0] != 0 {
                    b.push(0);
                }
                b
            }
            Addr::Node(..) => AF_UNIX.to_le_bytes().to_vec(),
        }
    }

    /// What a name is looked up by: an IPv4 port is the same on every loopback address.
    fn key(&self) -> Addr {
        match self {
            Addr::Inet(_, port) => Addr::Inet([0; 4], *port),
            a => a.clone(),
        }
    }

    fn unnamed(&self) -> bool {
        matches!(self, Addr::Inet(_, 0)) || matches!(self, Addr::Unix(p) if p.is_empty())
    }
}

/// A connection on a listener's backlog: the server's end, and the client's address.
struct Pending {
    end: SocketEnd,
    peer: Addr,
}

/// A socket that is not a connected stream: unbound, bound, listening, or a datagram socket.
pub(crate) struct Sock {
    family: u16,
    stream: bool,
    local: Option<Addr>,
    /// Listening: the backlog's bound and the connections waiting.
    listen: Option<(usize, VecDeque<Pending>)>,
    /// Datagrams received (sender, bytes), and their bytes.
    queue: VecDeque<(Addr, Vec<u8>)>,
    queued: usize,
    /// A datagram socket's `connect`ed peer.
    pub(super) peer: Option<Addr>,
    /// The process that made it listen (`SO_PEERCRED` of the ends connected to it).
    listener_pid: u32,
    /// The run's pipe bytes ([`super::pipe::MAX_PIPE_BYTES`]).
    total: Arc<AtomicU64>,
    /// A UDP datagram sent in parts with `MSG_MORE`, not sent yet (counted in `total`).
    cork: Vec<u8>,
}

impl Drop for Sock {
    fn drop(&mut self) {
        let held = self.queued + self.cork.len();
        self.total.fetch_sub(held as u64, Ordering::Relaxed);
    }
}

/// A descriptor's socket ([`Fd::Net`]). Cloning (dup, fork) shares it.
#[derive(Clone)]
pub(crate) struct NetSocket {
    sock: Arc<Mutex<Sock>>,
    nonblock: Arc<AtomicBool>,
}

impl NetSocket {
    /// (family, stream, listening).
    pub(super) fn kind(&self) -> (u16, bool, bool) {
        let g = lock(&self.sock);
        (g.family, g.stream, g.listen.is_some())
    }

    /// Whether the socket has a peer (a `connect`ed datagram socket; a connected stream is
    /// an [`Fd::Socket`]).
    pub(super) fn has_peer(&self) -> bool {
        lock(&self.sock).peer.is_some()
    }
}

fn lock(s: &Mutex<Sock>) -> MutexGuard<'_, Sock> {
    // one host thread runs the machine: a poisoned lock only means a panic elsewhere
    s.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl NetSocket {
    /// Whether calls return `EAGAIN` rather than wait.
    pub fn nonblocking(&self) -> bool {
        self.nonblock.load(Ordering::Relaxed)
    }

    /// Sets `O_NONBLOCK`.
    pub fn set_nonblocking(&self, on: bool) {
        self.nonblock.store(on, Ordering::Relaxed);
    }

    /// `poll` readiness: (a connection or a datagram waits, writable, hung up).
    pub fn ready(&self) -> (bool, bool, bool) {
        let s = lock(&self.sock);
        let readable = s.listen.as_ref().is_some_and(|(_, q)| !q.is_empty()) || !s.queue.is_empty();
        (readable, !s.stream, false)
    }

    /// `read` of a datagram socket: the next datagram, cut to `out`.
    pub fn read(&self, out: &mut [u8]) -> PipeIo {
        let mut s = lock(&self.sock);
        if s.stream {
            return PipeIo::Err(ENOTCONN);
        }
        match s.queue.pop_front() {
            Some((_, d)) => {
                let n = d.len().min(out.len());
                out[..n].copy_from_slice(&d[..n]);
                s.queued -= d.len();
                s.total.fetch_sub(d.len() as u64, Ordering::Relaxed);
                PipeIo::Done(n)
            }
            None if self.nonblocking() => PipeIo::Err(EAGAIN),
            None => PipeIo::Wait,
        }
    }
}

/// The names bound in the machine, and the next port the kernel picks.
#[derive(Default)]
pub(crate) struct Net {
    names: Vec<(bool, Addr, Weak<Mutex<Sock>>)>,
    next_port: u16,
    /// The last key given a datagram `socketpair`'s end.
    last_pair: u64,
}

impl Net {
    /// The live socket bound to `addr` (streams or datagrams).
    fn find(&self, stream: bool, addr: &Addr) -> Option<Arc<Mutex<Sock>>> {
        let key = addr.key();
        self.names
            .iter()
            .filter(|(s, k, _)| *s == stream && *k == key)
            .find_map(|(_, _, w)| w.upgrade())
    }

    /// Binds `addr` (a port or path of 0 or empty: one the kernel picks) to `sock`; `node`:
    /// the file a path name just made, which replaces any name its inode had before.
    fn bind(
        &mut self,
        sock: &Arc<Mutex<Sock>>,
        stream: bool,
        addr: Addr,
        node: Option<Addr>,
    ) -> Result<Addr, i64> {
        self.names.retain(|(_, _, w)| w.strong_count() > 0);
        if self.names.len() >= MAX_NAMES {
            return Err(ENOBUFS);
        }
        let addr = match addr {
            Addr::Inet(ip, 0) => {
                let span = EPHEMERAL.1 - EPHEMERAL.0 + 1;
                let free = (0..span).find_map(|k| {
                    let port = EPHEMERAL.0 + (self.next_port.wrapping_add(k)) % span;
                    let a = Addr::Inet(ip, port);
                    self.find(stream, &a).is_none().then_some((k, a))
                });
                let (k, a) = free.ok_or(EADDRINUSE)?;
                self.next_port = self.next_port.wrapping_add(k + 1) % span;
                a
            }
            a => {
                if let Some(n) = &node {
                    // a fresh file: a name its inode number had belongs to a removed one
                    self.names.retain(|(_, k, _)| k != n);
                } else if self.find(stream, &a).is_some() {
                    return Err(EADDRINUSE);
                }
                a
            }
        };
        if !addr.unnamed() {
            let key = node.unwrap_or_else(|| addr.key());
            self.names.push((stream, key, Arc::downgrade(sock)));
        }
        Ok(addr)
    }
}

/// Reads the `sockaddr` of `len` bytes at `at`: `Err(errno)` when it is unreadable or not of
/// a family the machine has.
fn read_addr(mem: &mut Memory, at: u64, len: u64) -> Result<Addr, i64> {
    if !(2..=128).contains(&len) {
        return Err(EINVAL);
    }
    let mut b = vec![0u8; len as usize];
    mem.read_bytes(at, &mut b).map_err(|_| EFAULT)?;
    match u16::from_le_bytes([b[0], b[1]]) {
        AF_INET if len >= 16 => Ok(Addr::Inet(
            [b[4], b[5], b[6], b[7]],
            u16::from_be_bytes([b[2], b[3]]),
        )),
        AF_INET => Err(EINVAL),
        AF_UNIX => {
            let path = &b[2..];
            let path = match path.first() {
                // abstract: every byte counts
                Some(0) => path.to_vec(),
                _ => path.iter().take_while(|&&c| c != 0).copied().collect(),
            };
            // as Linux: at most a `sockaddr_un` (108 bytes of path, NUL or not)
            if len > 110 {
                return Err(EINVAL);
            }
            Ok(Addr::Unix(path))
        }
        _ => Err(EAFNOSUPPORT),
    }
}

/// Writes `addr` to the guest's `sockaddr` buffer `at` of `*len_at` bytes (cut to it) and
/// its full length to `*len_at`, as Linux does.
fn write_addr(mem: &mut Memory, addr: &Addr, at: u64, len_at: u64) -> Result<(), i64> {
    if at == 0 {
        return Ok(());
    }
    write_name(mem, addr, at, len_at)
}

/// `getsockname`/`getpeername`'s copy out, as Linux's `move_addr_to_user`: the length
/// is read first (`EFAULT`), a negative one is `EINVAL`, and a room of bytes at a null or
/// unwritable address `EFAULT`.
fn write_name(mem: &mut Memory, addr: &Addr, at: u64, len_at: u64) -> Result<(), i64> {
    let room = mem.load_u32(len_at).map_err(|_| EFAULT)?;
    if (room as i32) < 0 {
        return Err(EINVAL);
    }
    let room = room as usize;
    let b = addr.bytes();
    let n = room.min(b.len());
    mem.write_bytes(at, &b[..n]).map_err(|_| EFAULT)?;
    mem.store_u32(len_at, b.len() as u32).map_err(|_| EFAULT)
}

fn loopback(ip: [u8; 4]) -> bool {
    ip[0] == 127 || ip == [0; 4]
}

impl Kernel {
    fn net_socket(&mut self, fd: u64) -> Result<NetSocket, i64> {
        match self.fd(fd) {
            Ok(Fd::Net(s)) => Ok(s.clone()),
            Ok(Fd::Socket(_)) => Err(-EISCONN),
            // an O_PATH descriptor is no descriptor to the socket calls (Linux's fdget)
            Ok(Fd::File(f)) if super::files::path_only(f) => Err(-super::EBADF),
            Ok(_) => Err(-ENOTSOCK),
            Err(e) => Err(-e),
        }
    }

    /// Says once that the host's network is never reached.
    fn unreachable(&mut self, what: &str) -> i64 {
        self.warn_once(
            0x6_0000_0000,
            &format!(
                "the guest {what}: the machine's network is its own loopback (127.0.0.0/8 and \
                 Unix names between its processes); the host's network is never reachable — \
                 returning ENETUNREACH"
            ),
        );
        -ENETUNREACH
    }

    /// `socket(domain, type, protocol)`: an `AF_INET` or `AF_UNIX` stream or datagram socket
    /// on the machine's own loopback.
    pub(super) fn sys_socket(&mut self, domain: u64, kind: u64, protocol: u64) -> i64 {
        let (family, stream) = match socket_kind(domain, kind, protocol) {
            Ok(k) => k,
            Err(e) => return -e,
        };
        let sock = self.new_socket(family, stream, kind & SOCK_NONBLOCK != 0);
        let fd = self.install(Fd::Net(sock));
        if fd >= 0 && kind & SOCK_CLOEXEC != 0 {
            self.cloexec.insert(fd as usize);
        }
        fd
    }

    fn new_socket(&self, family: u16, stream: bool, nonblock: bool) -> NetSocket {
        NetSocket {
            sock: Arc::new(Mutex::new(Sock {
                family,
                stream,
                local: None,
                listen: None,
                queue: VecDeque::new(),
                queued: 0,
                peer: None,
                listener_pid: 0,
                total: self.pipe_bytes.clone(),
                cork: Vec::new(),
            })),
            nonblock: Arc::new(AtomicBool::new(nonblock)),
        }
    }

    /// A `socketpair` of two Unix datagram sockets: unnamed, each the other's peer (found by
    /// a key no file has).
    pub(super) fn datagram_pair(&mut self, nonblock: bool) -> Result<[NetSocket; 2], i64> {
        let ends = [(); 2].map(|()| self.new_socket(AF_UNIX, false, nonblock));
        self.net.names.retain(|(_, _, w)| w.strong_count() > 0);
        if self.net.names.len() + 2 > MAX_NAMES {
            return Err(ENOBUFS);
        }
        let keys = [(); 2].map(|()| {
            self.net.last_pair += 1;
            Addr::Node(u64::MAX, self.net.last_pair)
        });
        for (end, key) in ends.iter().zip(&keys) {
            self.net
                .names
                .push((false, key.clone(), Arc::downgrade(&end.sock)));
        }
        for (end, peer) in ends.iter().zip(keys.iter().rev()) {
            let mut g = lock(&end.sock);
            g.local = Some(Addr::Unix(Vec::new()));
            g.peer = Some(peer.clone());
        }
        Ok(ends)
    }
}

/// `socket`'s (family, stream) for `domain`, `kind` and `protocol`, or Linux's error for them.
pub(super) fn socket_kind(domain: u64, kind: u64, protocol: u64) -> Result<(u16, bool), i64> {
    {
        let family = match domain {
            1 => AF_UNIX,
            2 => AF_INET,
            _ => return Err(EAFNOSUPPORT),
        };
        const SOCK_RAW: u64 = 3;
        let stream = match kind & 0xf {
            SOCK_STREAM => true,
            SOCK_DGRAM => false,
            // as Linux: past SOCK_PACKET is no type at all; a raw IP socket has no protocol
            // 0 (and no other here)
            t if t >= 11 => return Err(EINVAL),
            SOCK_RAW if family == AF_INET => return Err(EPROTONOSUPPORT),
            _ => return Err(ESOCKTNOSUPPORT),
        };
        if kind & !(0xf | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
            return Err(EINVAL);
        }
        let proto_ok = match (family, stream) {
            (AF_INET, true) => protocol == 0 || protocol == IPPROTO_TCP,
            (AF_INET, false) => protocol == 0 || protocol == IPPROTO_UDP,
            _ => protocol == 0,
        };
        if !proto_ok {
            return Err(EPROTONOSUPPORT);
        }
        Ok((family, stream))
    }
}

impl Kernel {
    /// Binds `s` to `addr`, checked against its family and the loopback.
    fn bind_to(&mut self, s: &NetSocket, addr: Addr) -> Result<Addr, i64> {
        let (family, stream) = {
            let g = lock(&s.sock);
            (g.family, g.stream)
        };
        let mut node = None;
        match (&addr, family) {
            (Addr::Inet(ip, _), AF_INET) if loopback(*ip) => {}
            (Addr::Inet(..), AF_INET) => return Err(EADDRNOTAVAIL),
            (Addr::Unix(p), AF_UNIX) => node = self.unix_node(p, true)?,
            // as Linux's inet_bind: another family is not supported
            (Addr::Unix(_), AF_INET) => return Err(EAFNOSUPPORT),
            _ => return Err(EINVAL),
        }
        let bound = self.net.bind(&s.sock, stream, addr, node)?;
        lock(&s.sock).local = Some(bound.clone());
        Ok(bound)
    }

    /// A Unix path name's file (`create`: made now, as `bind` makes it: `EADDRINUSE` if the
    /// path exists), beneath the grants from the working directory, as its lookup key;
    /// `None` for an abstract or empty name. A path that is not a socket's file refuses.
    fn unix_node(&mut self, path: &[u8], create: bool) -> Result<Option<Addr>, i64> {
        use cap_fs_ext::FileTypeExt as _;
        use cap_std::fs::MetadataExt as _;
        use std::os::unix::ffi::OsStrExt as _;
        if path.first().is_none_or(|&c| c == 0) {
            return Ok(None);
        }
        let p = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(path));
        let mode = 0o777 & !self.umask;
        let r = self.resolve_at(super::AT_FDCWD, &p, create)?;
        if create {
            r.mknod(true, mode)
                .map_err(|e| if e == 17 { EADDRINUSE } else { e })?;
        }
        let m = r.metadata(false)?;
        if !m.file_type().is_socket() {
            return Err(ECONNREFUSED);
        }
        let key = Addr::Node(m.dev(), m.ino());
        if create {
            self.notify_created(super::AT_FDCWD, &p);
        }
        Ok(Some(key))
    }

    /// What `addr` is looked up by: a path name's file, else the address.
    fn lookup_key(&mut self, addr: &Addr) -> Result<Addr, i64> {
        match addr {
            Addr::Unix(p) => Ok(self.unix_node(p, false)?.unwrap_or_else(|| addr.clone())),
            a => Ok(a.clone()),
        }
    }

    /// The address a socket sends from, bound now if it was not (an ephemeral port; an
    /// unnamed Unix socket).
    fn autobind(&mut self, s: &NetSocket) -> Result<Addr, i64> {
        let (family, local) = {
            let g = lock(&s.sock);
            (g.family, g.local.clone())
        };
        match local {
            Some(a) => Ok(a),
            None if family == AF_INET => self.bind_to(s, Addr::Inet([127, 0, 0, 1], 0)),
            None => {
                lock(&s.sock).local = Some(Addr::Unix(Vec::new()));
                Ok(Addr::Unix(Vec::new()))
            }
        }
    }

    /// `bind(fd, addr, len)`.
    pub(super) fn sys_bind(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        let s = match self.net_socket(a[0]) {
            Ok(s) => s,
            Err(e) => return e,
        };
        if lock(&s.sock).local.is_some() {
            return -EINVAL;
        }
        match read_addr(mem, a[1], a[2]).and_then(|addr| self.bind_to(&s, addr)) {
            Ok(_) => 0,
            Err(e) => -e,
        }
    }

    /// `listen(fd, backlog)`: an unbound `AF_INET` socket gets a port first, as on Linux.
    pub(super) fn sys_listen(&mut self, fd: u64, backlog: u64) -> i64 {
        let s = match self.net_socket(fd) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let (stream, family, bound) = {
            let g = lock(&s.sock);
            (g.stream, g.family, g.local.is_some())
        };
        if !stream {
            return -EOPNOTSUPP;
        }
        if !bound {
            if family == AF_UNIX {
                return -EINVAL;
            }
            if let Err(e) = self.bind_to(&s, Addr::Inet([0; 4], 0)) {
                return -e;
            }
        }
        let max = (backlog as i32).clamp(1, SOMAXCONN as i32) as usize;
        let pid = self.current_pid();
        let mut g = lock(&s.sock);
        match &mut g.listen {
            Some((m, _)) => *m = max,
            None => g.listen = Some((max, VecDeque::new())),
        }
        g.listener_pid = pid;
        0
    }

    /// `connect(fd, addr, len)`: a stream socket is connected at once to a listener in the
    /// machine (its backlog takes the server's end; a full one waits, or `EAGAIN`); a
    /// datagram socket gets its default peer.
    pub(super) fn sys_connect(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        let s = match self.net_socket(a[0]) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let addr = match read_addr(mem, a[1], a[2]) {
            Ok(a) => a,
            Err(e) => return -e,
        };
        if let Addr::Inet(ip, _) = addr {
            if !loopback(ip) {
                return self.unreachable(&format!(
                    "connected to {}.{}.{}.{}",
                    ip[0], ip[1], ip[2], ip[3]
                ));
            }
        }
        let stream = lock(&s.sock).stream;
        // a UDP socket's connect only sets where it sends: nobody need hold the port
        if !stream && matches!(addr, Addr::Inet(..)) {
            if let Err(e) = self.autobind(&s) {
                return -e;
            }
            lock(&s.sock).peer = Some(addr);
            return 0;
        }
        let key = match self.lookup_key(&addr) {
            Ok(k) => k,
            Err(e) => return -e,
        };
        // a path that does not exist was ENOENT above; a name nobody holds refuses
        let Some(target) = self.net.find(stream, &key) else {
            return -ECONNREFUSED;
        };
        let local = match self.autobind(&s) {
            Ok(l) => l,
            Err(e) => return -e,
        };
        if !stream {
            lock(&s.sock).peer = Some(addr);
            return 0;
        }
        let mut t = lock(&target);
        let server = t.local.clone().unwrap_or(addr);
        let Some((max, backlog)) = t.listen.as_mut() else {
            return -ECONNREFUSED;
        };
        if backlog.len() >= *max {
            return if s.nonblocking() {
                -EAGAIN
            } else {
                super::WOULD_BLOCK
            };
        }
        let (c_rx, s_tx) = PipeEnd::pair(false, &self.events, &self.pipe_bytes);
        let (s_rx, c_tx) = PipeEnd::pair(false, &self.events, &self.pipe_bytes);
        let names = |l: &Addr, p: &Addr| Some(Arc::new((l.clone(), p.clone())));
        let (me, listener) = (self.threads.pid, t.listener_pid);
        let Some((_, backlog)) = t.listen.as_mut() else {
            return -ECONNREFUSED;
        };
        backlog.push_back(Pending {
            end: SocketEnd {
                rx: Some(s_rx),
                tx: Some(s_tx),
                names: names(&server, &local),
                peer_pid: me,
            },
            peer: local.clone(),
        });
        drop(t);
        let client = SocketEnd {
            rx: Some(c_rx),
            tx: Some(c_tx),
            names: names(&local, &server),
            peer_pid: listener,
        };
        client.set_nonblocking(s.nonblocking());
        if let Some(slot) = self.fds.get_mut(a[0] as usize) {
            *slot = Some(Fd::Socket(client));
        }
        self.io_changed();
        0
    }

    /// `accept4(fd, addr, len, flags)` (`accept` with no flags).
    pub(super) fn sys_accept(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        let s = match self.net_socket(a[0]) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let flags = a[3];
        if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
            return -EINVAL;
        }
        let pending = {
            let mut g = lock(&s.sock);
            if !g.stream {
                return -EOPNOTSUPP; // a datagram socket never accepts
            }
            let Some((_, backlog)) = g.listen.as_mut() else {
                return -EINVAL;
            };
            backlog.pop_front()
        };
        let Some(p) = pending else {
            return if s.nonblocking() {
                -EAGAIN
            } else {
                super::WOULD_BLOCK
            };
        };
        p.end.set_nonblocking(flags & SOCK_NONBLOCK != 0);
        let peer = p.peer.clone();
        let fd = self.install(Fd::Socket(p.end));
        if fd < 0 {
            return fd;
        }
        if flags & SOCK_CLOEXEC != 0 {
            self.cloexec.insert(fd as usize);
        }
        self.io_changed();
        if let Err(e) = write_addr(mem, &peer, a[1], a[2]) {
            return -e;
        }
        fd
    }

    /// `sendto` on a socket of the machine's network: a datagram to `addr` (or the
    /// connected peer) goes whole into the receiver's queue.
    pub(super) fn net_sendto(&mut self, mem: &mut Memory, s: &NetSocket, a: [u64; 6]) -> i64 {
        self.net_send(mem, s, a, None)
    }

    /// [`Kernel::net_sendto`] of the bytes `given` (gathered by `sendmsg`) instead of the
    /// guest's buffer at `a[1]`.
    pub(super) fn net_send(
        &mut self,
        mem: &mut Memory,
        s: &NetSocket,
        a: [u64; 6],
        given: Option<Vec<u8>>,
    ) -> i64 {
        let (stream, family, peer) = {
            let g = lock(&s.sock);
            (g.stream, g.family, g.peer.clone())
        };
        const MSG_OOB: u64 = 1;
        const MSG_NOSIGNAL: u64 = 0x4000;
        if stream {
            // as Linux: TCP not connected is EPIPE (and SIGPIPE); a Unix stream
            // ENOTCONN, or EOPNOTSUPP given an address
            return match (family, a[4] != 0) {
                (AF_INET, _) => {
                    self.no_sigpipe = a[3] & MSG_NOSIGNAL != 0;
                    self.raise_sigpipe();
                    self.no_sigpipe = false;
                    -super::EPIPE
                }
                (_, true) => -EOPNOTSUPP,
                (_, false) => -ENOTCONN,
            };
        }
        if a[3] & MSG_OOB != 0 {
            return -EOPNOTSUPP; // no urgent data in datagrams
        }
        let to = if a[4] != 0 {
            match read_addr(mem, a[4], a[5]) {
                Ok(t) => t,
                Err(e) => return -e,
            }
        } else {
            match peer {
                Some(p) => p,
                None => return -EDESTADDRREQ,
            }
        };
        let len = given.as_ref().map_or(a[2] as usize, Vec::len);
        let max = if family == AF_INET {
            MAX_INET_DATAGRAM
        } else {
            RCVBUF
        };
        if len > max {
            return -EMSGSIZE;
        }
        if let Addr::Inet(ip, _) = to {
            if !loopback(ip) {
                return self.unreachable(&format!(
                    "sent a datagram to {}.{}.{}.{}",
                    ip[0], ip[1], ip[2], ip[3]
                ));
            }
        }
        let mut data = match given {
            Some(d) => d,
            None => {
                let mut data = vec![0u8; len];
                if mem.read_bytes(a[1], &mut data).is_err() {
                    return -EFAULT;
                }
                data
            }
        };
        if family == AF_INET {
            // MSG_MORE: the parts of one datagram, sent with the first send without it
            let mut g = lock(&s.sock);
            let corked = g.cork.len();
            if corked + len > max {
                return -EMSGSIZE;
            }
            if a[3] & MSG_MORE != 0 {
                if g.total.load(Ordering::Relaxed) + len as u64 > super::pipe::MAX_PIPE_BYTES {
                    return -ENOBUFS;
                }
                g.total.fetch_add(len as u64, Ordering::Relaxed);
                g.cork.extend_from_slice(&data);
                return len as i64;
            }
            if corked > 0 {
                g.total.fetch_sub(corked as u64, Ordering::Relaxed);
                let mut whole = std::mem::take(&mut g.cork);
                whole.extend_from_slice(&data);
                data = whole;
            }
        }
        let (len, given_len) = (data.len(), len);
        let from = match self.autobind(s) {
            Ok(f) => f,
            Err(e) => return -e,
        };
        let key = match self.lookup_key(&to) {
            Ok(k) => k,
            Err(e) => return -e,
        };
        let Some(target) = self.net.find(false, &key) else {
            // UDP to a port nobody holds is lost; a Unix name must be bound
            return if family == AF_INET {
                given_len as i64
            } else {
                -ECONNREFUSED
            };
        };
        let mut t = lock(&target);
        let total = t.total.load(Ordering::Relaxed);
        if t.queued + len > RCVBUF || total + len as u64 > super::pipe::MAX_PIPE_BYTES {
            drop(t);
            return if s.nonblocking() || a[3] & MSG_DONTWAIT != 0 {
                -EAGAIN
            } else if family == AF_INET {
                given_len as i64 // a full UDP queue drops the datagram
            } else {
                super::WOULD_BLOCK
            };
        }
        t.queued += len;
        t.total.fetch_add(len as u64, Ordering::Relaxed);
        t.queue.push_back((from, data));
        drop(t);
        self.io_changed();
        given_len as i64
    }

    /// `recvfrom` on a datagram socket: the next datagram and its sender.
    pub(super) fn net_recvfrom(&mut self, mem: &mut Memory, s: &NetSocket, a: [u64; 6]) -> i64 {
        self.net_recv(mem, s, a, None)
    }

    /// [`Kernel::net_recvfrom`] into `out` (for `recvmsg` to scatter) instead of the guest's
    /// buffer at `a[1]`: at most `a[2]` bytes.
    pub(super) fn net_recv(
        &mut self,
        mem: &mut Memory,
        s: &NetSocket,
        a: [u64; 6],
        out: Option<&mut Vec<u8>>,
    ) -> i64 {
        let flags = a[3];
        let mut g = lock(&s.sock);
        if g.stream {
            return -ENOTCONN;
        }
        let Some((from, d)) = g.queue.front() else {
            drop(g);
            return if s.nonblocking() || flags & MSG_DONTWAIT != 0 {
                -EAGAIN
            } else {
                super::WOULD_BLOCK
            };
        };
        let n = d.len().min(a[2] as usize);
        match out {
            Some(out) => out.extend_from_slice(&d[..n]),
            None => {
                if mem.write_bytes(a[1], &d[..n]).is_err() {
                    return -EFAULT;
                }
            }
        }
        let (from, full) = (from.clone(), d.len());
        if flags & MSG_PEEK == 0 {
            g.queue.pop_front();
            g.queued -= full;
            g.total.fetch_sub(full as u64, Ordering::Relaxed);
        }
        drop(g);
        if a[4] != 0 {
            if let Err(e) = write_addr(mem, &from, a[4], a[5]) {
                return -e;
            }
        }
        if flags & MSG_TRUNC != 0 {
            full as i64
        } else {
            n as i64
        }
    }

    /// `getsockname` (`peer` false) or `getpeername` of a socket of the machine's network.
    pub(super) fn net_name(
        &mut self,
        mem: &mut Memory,
        s: &NetSocket,
        a: [u64; 3],
        peer: bool,
    ) -> i64 {
        let g = lock(&s.sock);
        let addr = if peer {
            match &g.peer {
                Some(p) => p.clone(),
                None => return -ENOTCONN,
            }
        } else {
            g.local.clone().unwrap_or(match g.family {
                AF_INET => Addr::Inet([0; 4], 0),
                _ => Addr::Unix(Vec::new()),
            })
        };
        drop(g);
        match write_name(mem, &addr, a[1], a[2]) {
            Ok(()) => 0,
            Err(e) => -e,
        }
    }
}
