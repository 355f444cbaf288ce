//! Pipes between the guest's processes and threads (docs/machine.md, "Processes"): `pipe2`,
//! reads that wait for data, writes that wait for room, end of file when the last write end
//! closes, `EPIPE` and `SIGPIPE` when the last read end has.
//!
//! A pipe holds at most [`PIPE_CAPACITY`] bytes (Linux's default 64 KiB): a writer that
//! fills it waits, so a guest cannot grow host memory through a pipe. Writes of at most
//! [`PIPE_BUF`] bytes are atomic, as POSIX requires. A call that must wait blocks its thread
//! with [`super::Wait::Retry`]: it runs the system call again when any pipe, process or
//! descriptor changed ([`Kernel::io_events`]), so no wait keeps a reference to a pipe.

use super::{Fd, Kernel, EAGAIN, EFAULT, EINVAL, EMFILE, EPIPE};
use crate::memory::Memory;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Bytes a pipe holds before a writer waits (Linux's default pipe size).
pub const PIPE_CAPACITY: usize = 64 << 10;
/// Most bytes one `sendfile` between regular files moves (Linux's `MAX_RW_COUNT`).
const MAX_SENDFILE: u64 = 0x7fff_f000;
/// Bytes `sendfile` moves at a time (the host buffer it holds).
const SENDFILE_CHUNK: usize = 1 << 20;
/// Writes up to this size are atomic (POSIX `PIPE_BUF`).
pub const PIPE_BUF: usize = 4096;
/// Largest pipe capacity `F_SETPIPE_SZ` gives (`/proc/sys/fs/pipe-max-size`).
pub const PIPE_MAX_SIZE: usize = 1 << 20;
/// Bytes all pipes and socket pairs of a run hold together: past it a writer waits, as if its
/// pipe were full (host memory stays bounded however many pipes the guest's processes open).
pub const MAX_PIPE_BYTES: u64 = 64 << 20;

const O_NONBLOCK: u64 = 0o4000;
/// Packet mode (asm-generic's `O_DIRECT`).
pub(super) const O_DIRECT: u64 = 0o40000;
const O_CLOEXEC: u64 = 0o2000000;

/// What a pipe call did when it could not finish now.
pub(crate) enum PipeIo {
    /// Done: bytes moved (0 at end of file).
    Done(usize),
    /// It must wait: run the system call again when something changed.
    Wait,
    /// An errno.
    Err(i64),
}

/// The bytes in flight and who holds the ends.
struct Buffer {
    data: VecDeque<u8>,
    /// Most bytes it holds (`F_SETPIPE_SZ`; [`PIPE_CAPACITY`] at first).
    capacity: usize,
    readers: u32,
    writers: u32,
    /// A reader and a writer have each held it (a named pipe's ends come one at a time:
    /// until then a read waits for a writer and a write for a reader, where Linux's open
    /// would have waited).
    ever_readers: bool,
    ever_writers: bool,
    /// Once a packet was written (`O_DIRECT`): the data's segments in order, (length,
    /// whether a packet); their lengths sum to `data.len()`. Empty: all of it is a stream.
    segs: VecDeque<(usize, bool)>,
    /// Wake-ups of its readers (a write, the last writer gone) and of its writers (a read,
    /// the last reader gone): what an edge-triggered epoll entry waits for.
    rd_gen: u64,
    wr_gen: u64,
    /// Bytes at the end of `data` a TCP sender holds back (`MSG_MORE`): not readable yet.
    held: usize,
}

impl Buffer {
    fn new(capacity: usize, ends: u32) -> Buffer {
        Buffer {
            data: VecDeque::new(),
            capacity,
            readers: ends,
            writers: ends,
            ever_readers: ends > 0,
            ever_writers: ends > 0,
            segs: VecDeque::new(),
            rd_gen: 0,
            wr_gen: 0,
            held: 0,
        }
    }

    /// Bytes a reader can take now (all but those held back).
    fn visible(&self) -> usize {
        self.data.len() - self.held
    }

    /// Appends `data`: as one stream, or (`packet`) as packets of at most a page, as Linux's
    /// packet-mode pipes split a write.
    fn push(&mut self, data: &[u8], packet: bool) {
        if packet && self.segs.is_empty() && !self.data.is_empty() {
            self.segs.push_back((self.data.len(), false));
        }
        if packet {
            self.segs
                .extend(data.chunks(PIPE_BUF).map(|c| (c.len(), true)));
        } else if !self.segs.is_empty() {
            match self.segs.back_mut() {
                Some((n, false)) => *n += data.len(),
                _ => self.segs.push_back((data.len(), false)),
            }
        }
        self.data.extend(data);
        self.rd_gen += 1;
    }

    /// Takes up to `out.len()` bytes into `out`: from a stream, or one packet (the rest of
    /// a packet longer than `out` is discarded, as Linux's). (Bytes copied, bytes taken.)
    fn take(&mut self, out: &mut [u8]) -> (usize, usize) {
        if out.is_empty() {
            return (0, 0); // a read of nothing takes nothing, a packet's rest included
        }
        let (avail, packet) = match self.segs.front() {
            Some(&(n, packet)) => (n, packet),
            None => (self.visible(), false),
        };
        let n = out.len().min(avail);
        let taken = if packet { avail } else { n };
        for (o, b) in out.iter_mut().zip(self.data.drain(..taken)) {
            *o = b;
        }
        if let Some(front) = self.segs.front_mut() {
            front.0 -= taken;
            if front.0 == 0 {
                self.segs.pop_front();
            }
        }
        self.wr_gen += 1;
        (n, taken)
    }
}

/// One end of a pipe, as a descriptor holds it. Cloning (dup, fork) adds a holder of that end;
/// dropping the last holder of the write end is end of file for readers.
pub(crate) struct PipeEnd {
    pipe: Arc<Mutex<Buffer>>,
    /// The write end (else the read end).
    pub write: bool,
    /// A named pipe opened `O_RDWR`: the write end that also reads (it counts as a reader
    /// and a writer, so it never sees the other end gone).
    pub rdwr: bool,
    /// `O_NONBLOCK`, shared by the descriptors of this open file (dup, fork), as Linux keeps
    /// status flags on the open file description.
    nonblock: Arc<AtomicBool>,
    /// `O_DIRECT` on a write end: each write is packets (`pipe2(O_DIRECT)`, `F_SETFL`), kept
    /// on the open file description as `nonblock` is.
    packet: Arc<AtomicBool>,
    /// The kernel's change counter ([`Kernel::io_events`]), moved when an end closes.
    events: Arc<AtomicU64>,
    /// Bytes in all the run's pipes ([`MAX_PIPE_BYTES`]).
    total: Arc<AtomicU64>,
}

fn lock(p: &Mutex<Buffer>) -> MutexGuard<'_, Buffer> {
    // one host thread runs the machine: a poisoned lock only means a panic elsewhere
    p.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl PipeEnd {
    /// A new pipe's (read end, write end).
    pub(super) fn pair(
        nonblock: bool,
        events: &Arc<AtomicU64>,
        total: &Arc<AtomicU64>,
    ) -> (PipeEnd, PipeEnd) {
        let pipe = Arc::new(Mutex::new(Buffer::new(PIPE_CAPACITY, 1)));
        let end = |write| PipeEnd {
            pipe: pipe.clone(),
            write,
            rdwr: false,
            nonblock: Arc::new(AtomicBool::new(nonblock)),
            packet: Arc::new(AtomicBool::new(false)),
            events: events.clone(),
            total: total.clone(),
        };
        (end(false), end(true))
    }

    /// Whether calls on it return `EAGAIN` instead of waiting.
    pub fn nonblocking(&self) -> bool {
        self.nonblock.load(Ordering::Relaxed)
    }

    /// Sets `O_NONBLOCK` (`fcntl(F_SETFL)`).
    pub fn set_nonblocking(&self, on: bool) {
        self.nonblock.store(on, Ordering::Relaxed);
    }

    /// Whether writes through it are packets (`O_DIRECT`).
    pub fn packets(&self) -> bool {
        self.packet.load(Ordering::Relaxed)
    }

    /// Sets `O_DIRECT` (`pipe2`, `fcntl(F_SETFL)`).
    pub fn set_packets(&self, on: bool) {
        self.packet.store(on, Ordering::Relaxed);
    }

    /// Reads up to `out.len()` bytes.
    pub fn read(&self, out: &mut [u8]) -> PipeIo {
        let mut p = lock(&self.pipe);
        if self.write && !self.rdwr {
            return PipeIo::Err(super::EBADF);
        }
        if p.visible() == 0 {
            let waiting_for_writer = p.writers == 0 && !p.ever_writers;
            return if (p.writers == 0 && !waiting_for_writer) || out.is_empty() {
                PipeIo::Done(0)
            } else if self.nonblocking() {
                PipeIo::Err(EAGAIN)
            } else {
                PipeIo::Wait
            };
        }
        let (n, taken) = p.take(out);
        self.total.fetch_sub(taken as u64, Ordering::Relaxed);
        self.events.fetch_add(1, Ordering::Relaxed);
        PipeIo::Done(n)
    }

    /// [`PipeEnd::write`], then (`more`) the bytes written and any held before stay held
    /// from the readers, until a write without `more`; a full segment's worth (loopback's
    /// MSS, 65,483 bytes) goes anyway, as TCP sends it.
    pub fn write_more(&self, data: &[u8], more: bool) -> PipeIo {
        const MSS: usize = 65_483;
        let r = self.write(data);
        let mut p = lock(&self.pipe);
        match r {
            PipeIo::Done(n) if more && p.held + n < MSS => p.held += n,
            PipeIo::Done(_) => p.held = 0,
            _ => {}
        }
        r
    }

    /// Writes from `data` as much as fits (all of it or nothing when it is at most
    /// [`PIPE_BUF`] bytes); `Err(EPIPE)` when no reader is left.
    pub fn write(&self, data: &[u8]) -> PipeIo {
        let mut p = lock(&self.pipe);
        if !self.write {
            return PipeIo::Err(super::EBADF);
        }
        if p.readers == 0 && p.ever_readers {
            return PipeIo::Err(EPIPE);
        }
        if p.readers == 0 && !data.is_empty() {
            // a named pipe no reader opened yet: the writer waits for one
            return if self.nonblocking() {
                PipeIo::Err(EAGAIN)
            } else {
                PipeIo::Wait
            };
        }
        let left = MAX_PIPE_BYTES.saturating_sub(self.total.load(Ordering::Relaxed));
        let room = (p.capacity.saturating_sub(p.data.len())).min(left as usize);
        let n = if data.len() <= PIPE_BUF && room < data.len() {
            0
        } else {
            room.min(data.len())
        };
        if n == 0 && !data.is_empty() {
            return if self.nonblocking() {
                PipeIo::Err(EAGAIN)
            } else {
                PipeIo::Wait
            };
        }
        p.push(&data[..n], self.packet.load(Ordering::Relaxed));
        self.total.fetch_add(n as u64, Ordering::Relaxed);
        self.events.fetch_add(1, Ordering::Relaxed);
        PipeIo::Done(n)
    }

    /// `poll` readiness: (bytes to read, writable, the other end is gone). A read end at its
    /// end with nothing left is only hung up (`POLLHUP` without `POLLIN`, as Linux's
    /// `pipe_poll`; `select` counts it readable). A write end with room is writable even
    /// when its readers are gone, as Linux reports it (`POLLOUT` with `POLLERR`: the write
    /// fails with `EPIPE` at once).
    pub fn ready(&self) -> (bool, bool, bool) {
        let p = lock(&self.pipe);
        if self.rdwr {
            let room = p.capacity.saturating_sub(p.data.len()) >= PIPE_BUF.min(p.capacity);
            (!p.data.is_empty(), room, false)
        } else if self.write {
            (
                false,
                p.capacity.saturating_sub(p.data.len()) >= PIPE_BUF.min(p.capacity),
                p.readers == 0 && p.ever_readers,
            )
        } else {
            let ended = p.writers == 0 && p.ever_writers;
            (p.visible() > 0, false, ended)
        }
    }

    /// (wake-ups of the readers, of the writers) so far: an edge-triggered epoll entry
    /// reports a direction again only once its count moved.
    pub fn edges(&self) -> (u64, u64) {
        let p = lock(&self.pipe);
        (p.rd_gen, p.wr_gen)
    }

    /// Bytes a write could put in now (0 when full or when no reader will ever take them).
    pub fn room(&self) -> usize {
        let p = lock(&self.pipe);
        if p.readers == 0 {
            return 0;
        }
        p.capacity.saturating_sub(p.data.len())
    }

    /// Copies up to `out.len()` waiting bytes without taking them (`tee`); `None` when the
    /// pipe is empty and a writer may still come.
    pub fn peek(&self, out: &mut [u8]) -> Option<usize> {
        let p = lock(&self.pipe);
        if p.visible() == 0 {
            return (p.writers == 0 && p.ever_writers).then_some(0);
        }
        let n = out.len().min(p.visible());
        for (o, b) in out.iter_mut().zip(p.data.iter()) {
            *o = *b;
        }
        Some(n)
    }

    /// Whether `other` is an end of the same pipe.
    pub fn same_pipe(&self, other: &PipeEnd) -> bool {
        Arc::ptr_eq(&self.pipe, &other.pipe)
    }

    /// Its capacity (`F_GETPIPE_SZ`).
    pub fn capacity(&self) -> usize {
        lock(&self.pipe).capacity
    }

    /// `F_SETPIPE_SZ`: at least `size` bytes, a power of two of pages as Linux rounds it, at
    /// most [`PIPE_MAX_SIZE`] (`EPERM`, as for a process without `CAP_SYS_RESOURCE`: the
    /// machine's pipes stay small), never below what it holds (`EBUSY`).
    pub fn set_capacity(&self, size: u64) -> Result<usize, i64> {
        const EBUSY: i64 = 16;
        const EPERM: i64 = 1;
        if size > i32::MAX as u64 {
            return Err(super::EINVAL);
        }
        let want = (size.max(4096) as usize).next_power_of_two();
        if want > PIPE_MAX_SIZE {
            return Err(EPERM);
        }
        let mut p = lock(&self.pipe);
        if want < p.data.len() {
            return Err(EBUSY);
        }
        p.capacity = want;
        self.events.fetch_add(1, Ordering::Relaxed);
        Ok(want)
    }

    /// Bytes waiting to be read (`FIONREAD`).
    pub fn pending(&self) -> usize {
        lock(&self.pipe).visible()
    }
}

/// The named pipes (FIFOs) the guest's processes have open: each host FIFO (device, inode)
/// is one machine pipe while any end of it is open. The host FIFO itself is never opened
/// for reading or writing.
#[derive(Default)]
pub(crate) struct Fifos(std::collections::HashMap<(u64, u64), std::sync::Weak<Mutex<Buffer>>>);

impl Fifos {
    /// A new end of the named pipe `key` (created when no end is open): `None` for a
    /// non-blocking write end while no reader has it open (`ENXIO`, as Linux). `rdwr`
    /// (`O_RDWR`) is both ends at once, never `None`.
    pub(super) fn open(
        &mut self,
        key: (u64, u64),
        write: bool,
        rdwr: bool,
        nonblock: bool,
        events: &Arc<AtomicU64>,
        total: &Arc<AtomicU64>,
    ) -> Option<PipeEnd> {
        self.0.retain(|_, w| w.strong_count() > 0);
        let pipe = self.0.get(&key).and_then(std::sync::Weak::upgrade);
        let pipe = match pipe {
            Some(p) => p,
            None => {
                let p = Arc::new(Mutex::new(Buffer::new(PIPE_CAPACITY, 0)));
                self.0.insert(key, Arc::downgrade(&p));
                p
            }
        };
        {
            let mut b = lock(&pipe);
            if rdwr {
                b.readers += 1;
                b.writers += 1;
                b.ever_readers = true;
                b.ever_writers = true;
            } else if write {
                if nonblock && b.readers == 0 {
                    return None;
                }
                b.writers += 1;
                b.ever_writers = true;
            } else {
                b.readers += 1;
                b.ever_readers = true;
            }
        }
        events.fetch_add(1, Ordering::Relaxed);
        Some(PipeEnd {
            pipe,
            write: write || rdwr,
            rdwr,
            nonblock: Arc::new(AtomicBool::new(nonblock)),
            packet: Arc::new(AtomicBool::new(false)),
            events: events.clone(),
            total: total.clone(),
        })
    }
}

impl Clone for PipeEnd {
    fn clone(&self) -> PipeEnd {
        {
            let mut p = lock(&self.pipe);
            if self.write {
                p.writers += 1;
            }
            if !self.write || self.rdwr {
                p.readers += 1;
            }
        }
        PipeEnd {
            pipe: self.pipe.clone(),
            write: self.write,
            rdwr: self.rdwr,
            nonblock: self.nonblock.clone(),
            packet: self.packet.clone(),
            events: self.events.clone(),
            total: self.total.clone(),
        }
    }
}

impl Drop for PipeEnd {
    fn drop(&mut self) {
        let mut p = lock(&self.pipe);
        if self.write {
            p.writers = p.writers.saturating_sub(1);
            p.rd_gen += u64::from(p.writers == 0);
            if p.writers == 0 {
                p.held = 0; // a closing sender's held bytes go
            }
        }
        if !self.write || self.rdwr {
            p.wr_gen += u64::from(p.readers == 1);
            p.readers = p.readers.saturating_sub(1);
            if p.readers == 0 {
                // nobody will read them: the bytes go now
                self.total.fetch_sub(p.data.len() as u64, Ordering::Relaxed);
                p.data = VecDeque::new();
                p.segs = VecDeque::new();
                p.held = 0;
            }
        }
        self.events.fetch_add(1, Ordering::Relaxed);
    }
}

impl Kernel {
    /// `pipe2(fds, flags)`: two descriptors, the read end first.
    pub(super) fn sys_pipe2(&mut self, mem: &mut Memory, fds: u64, flags: u64) -> i64 {
        if flags & !(O_NONBLOCK | O_CLOEXEC | O_DIRECT) != 0 {
            return -EINVAL;
        }
        if mem.check_range(fds, 8, crate::memory::perm::W).is_err() {
            return -EFAULT;
        }
        let (r, w) = PipeEnd::pair(flags & O_NONBLOCK != 0, &self.events, &self.pipe_bytes);
        r.set_packets(flags & O_DIRECT != 0);
        w.set_packets(flags & O_DIRECT != 0);
        let rfd = self.install(Fd::Pipe(r));
        if rfd < 0 {
            return rfd;
        }
        let wfd = self.install(Fd::Pipe(w));
        if wfd < 0 {
            self.sys_close(rfd as u64);
            return -EMFILE;
        }
        if flags & O_CLOEXEC != 0 {
            self.cloexec.insert(rfd as usize);
            self.cloexec.insert(wfd as usize);
        }
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&(rfd as u32).to_le_bytes());
        b[4..].copy_from_slice(&(wfd as u32).to_le_bytes());
        if mem.write_bytes(fds, &b).is_err() {
            self.sys_close(rfd as u64);
            self.sys_close(wfd as u64);
            return -EFAULT;
        }
        0
    }

    /// `ioctl`: `FIONREAD` on a pipe or an inotify instance; everything else is not a terminal (`ENOTTY`).
    pub(super) fn sys_ioctl(&mut self, mem: &mut Memory, fd: u64, req: u64, arg: u64) -> i64 {
        const FIONREAD: u64 = 0x541b;
        // RNDGETENTCNT: the entropy count, as /proc/sys/kernel/random/entropy_avail says
        const RNDGETENTCNT: u64 = 0x8004_5200;
        if let Some(r) = self.socket_ioctl(mem, fd, req, arg) {
            return r;
        }
        match self.fds.get(fd as usize) {
            Some(Some(Fd::Device(super::Device::Random))) if req == RNDGETENTCNT => {
                match mem.store_u32(arg, 256) {
                    Ok(()) => 0,
                    Err(_) => -EFAULT,
                }
            }
            Some(Some(f @ (Fd::Pipe(_) | Fd::Inotify(_)))) if req == FIONREAD => {
                let n = match f {
                    Fd::Pipe(p) => p.pending(),
                    Fd::Inotify(i) => i.pending_bytes(),
                    _ => 0,
                };
                if mem.store_u32(arg, n as u32).is_err() {
                    return -EFAULT;
                }
                0
            }
            Some(Some(Fd::File(f))) if super::files::path_only(f) => -super::EBADF,
            Some(Some(_)) => -super::ENOTTY,
            _ => -super::EBADF,
        }
    }

    /// `sendfile(out, in, offset, count)` from a regular file: its bytes from `*offset` (or
    /// its position, which then moves) to `out`; only what `out` took is consumed. A pipe
    /// that has no room waits. Between regular files up to 2 GiB move in one call, as on
    /// Linux, a megabyte at a time; into anything else, a pipe's capacity.
    pub(super) fn sys_sendfile(
        &mut self,
        mem: &mut Memory,
        out: u64,
        inp: u64,
        offset: u64,
        count: u64,
    ) -> i64 {
        use std::io::Seek;
        use std::os::unix::fs::FileExt;
        // as Linux: both descriptors open, for reading and writing, before anything moves;
        // the offset (read, then written back) must be writable
        let readable = |f: &std::fs::File, write: bool| {
            rustix::fs::fcntl_getfl(f).is_ok_and(|fl| {
                let mode = fl & rustix::fs::OFlags::RWMODE;
                !fl.contains(rustix::fs::OFlags::PATH)
                    && if write {
                        mode != rustix::fs::OFlags::RDONLY
                    } else {
                        mode != rustix::fs::OFlags::WRONLY
                    }
            })
        };
        match self.fds.get(out as usize) {
            Some(Some(Fd::File(f))) if !readable(f, true) => return -super::EBADF,
            Some(Some(_)) => {}
            _ => return -super::EBADF,
        }
        match self.fds.get(inp as usize) {
            Some(Some(Fd::File(f))) if !readable(f, false) => return -super::EBADF,
            Some(Some(_)) => {}
            _ => return -super::EBADF,
        }
        if offset != 0 && mem.check_range(offset, 8, crate::memory::perm::W).is_err() {
            return -EFAULT;
        }
        self.before_file_read(mem, inp);
        let at = if offset != 0 {
            match mem.load_u64(offset) {
                Ok(v) if (v as i64) >= 0 => v,
                Ok(_) => return -EINVAL,
                Err(_) => return -EFAULT,
            }
        } else {
            match self.fd(inp) {
                Ok(Fd::File(f)) => match f.stream_position() {
                    Ok(p) => p,
                    Err(e) => return -super::errno(&e),
                },
                Ok(_) => return -EINVAL,
                Err(e) => return -e,
            }
        };
        // a file to a file moves up to Linux's 2 GiB a call, a chunk at a time; anything
        // else one pipe's worth
        let to_file = matches!(self.fds.get(out as usize), Some(Some(Fd::File(_))));
        let limit = if to_file {
            count.min(MAX_SENDFILE)
        } else {
            count.min(PIPE_CAPACITY as u64)
        };
        let mut done = 0u64;
        let mut tmp = vec![0u8; (limit as usize).min(SENDFILE_CHUNK)];
        while done < limit {
            let n = ((limit - done) as usize).min(tmp.len());
            let got = match self.fd(inp) {
                Ok(Fd::File(f)) => match f.read_at(&mut tmp[..n], at + done) {
                    Ok(g) => g,
                    Err(e) if done == 0 => return -super::errno(&e),
                    Err(_) => break,
                },
                Ok(_) => return -EINVAL,
                Err(e) => return -e,
            };
            if got == 0 {
                break;
            }
            let put = match self.fds.get(out as usize) {
                Some(Some(Fd::Pipe(p))) => match p.write(&tmp[..got]) {
                    PipeIo::Done(k) => k as i64,
                    PipeIo::Wait => return super::WOULD_BLOCK,
                    PipeIo::Err(e) => {
                        if e == EPIPE {
                            self.raise_sigpipe();
                        }
                        return -e;
                    }
                },
                // a datagram socket: one datagram to its peer
                Some(Some(Fd::Net(s))) => {
                    let s = s.clone();
                    let data = tmp[..got].to_vec();
                    self.net_send(mem, &s, [out, 0, got as u64, 0, 0, 0], Some(data))
                }
                Some(Some(_)) => self.write_fd(out, &tmp[..got]),
                _ => return -super::EBADF,
            };
            if put <= 0 {
                if done == 0 {
                    return put;
                }
                break;
            }
            done += put as u64;
            if (put as usize) < got {
                break;
            }
        }
        if done == 0 {
            return 0;
        }
        let end = at + done;
        if offset != 0 {
            if mem.store_u64(offset, end).is_err() {
                return -EFAULT;
            }
        } else if let Ok(Fd::File(f)) = self.fd(inp) {
            let _ = f.seek(std::io::SeekFrom::Start(end));
        }
        done as i64
    }

    /// Changes to pipes, descriptors and processes so far: a thread waiting with
    /// [`super::Wait::Retry`] runs its call again once this moved.
    pub fn io_events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// Notes a change waiters may care about (a process ended, a descriptor closed).
    pub(crate) fn io_changed(&self) {
        self.events.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_moves_bytes_in_order_and_ends_when_the_writers_close() {
        let events = Arc::new(AtomicU64::new(0));
        let total = Arc::new(AtomicU64::new(0));
        let (r, w) = PipeEnd::pair(false, &events, &total);
        assert!(matches!(w.write(b"hello"), PipeIo::Done(5)));
        assert_eq!(total.load(Ordering::Relaxed), 5);
        let mut out = [0u8; 3];
        assert!(matches!(r.read(&mut out), PipeIo::Done(3)));
        assert_eq!(&out, b"hel");
        let w2 = w.clone();
        drop(w);
        assert!(matches!(r.read(&mut out), PipeIo::Done(2)));
        assert!(matches!(r.read(&mut out), PipeIo::Wait)); // a writer is left
        drop(w2);
        assert!(matches!(r.read(&mut out), PipeIo::Done(0)));
        assert_eq!(total.load(Ordering::Relaxed), 0);
        assert!(events.load(Ordering::Relaxed) >= 4);
    }

    #[test]
    fn packet_mode_reads_one_packet_and_a_read_write_fifo_end_is_both() {
        let events = Arc::new(AtomicU64::new(0));
        let total = Arc::new(AtomicU64::new(0));
        let (r, w) = PipeEnd::pair(false, &events, &total);
        assert!(matches!(w.write(b"ab"), PipeIo::Done(2)), "a stream first");
        w.set_packets(true);
        assert!(matches!(w.write(b"hello"), PipeIo::Done(5)));
        assert!(matches!(w.write(&[9; PIPE_BUF + 3]), PipeIo::Done(n) if n == PIPE_BUF + 3));
        let mut out = [0u8; 16];
        // the stream's bytes stop at the packet; a packet longer than the read loses its rest
        assert!(matches!(r.read(&mut out), PipeIo::Done(2)));
        assert!(
            matches!(r.read(&mut []), PipeIo::Done(0)),
            "an empty read keeps the packet"
        );
        assert!(matches!(r.read(&mut out[..3]), PipeIo::Done(3)));
        assert_eq!(&out[..3], b"hel");
        assert!(
            matches!(r.read(&mut out), PipeIo::Done(16)),
            "a page-sized packet"
        );
        assert!(
            matches!(r.read(&mut out), PipeIo::Done(3)),
            "the write's last packet"
        );
        assert_eq!(
            total.load(Ordering::Relaxed),
            0,
            "the discarded bytes are freed"
        );
        w.set_packets(false);
        assert!(matches!(w.write(b"xyz"), PipeIo::Done(3)));
        assert!(matches!(r.read(&mut out), PipeIo::Done(3)));

        let mut fifos = Fifos::default();
        let both = fifos.open((1, 2), false, true, true, &events, &total);
        let both = both.expect("O_RDWR never waits for another end");
        assert_eq!(both.ready(), (false, true, false));
        assert!(matches!(both.write(b"me"), PipeIo::Done(2)));
        assert_eq!(both.ready(), (true, true, false));
        assert!(matches!(both.read(&mut out), PipeIo::Done(2)));
        let reader = fifos.open((1, 2), false, false, true, &events, &total);
        drop(both);
        // the only writer was the O_RDWR end: the reader now sees end of file
        let reader = reader.expect("a reader");
        assert!(matches!(reader.read(&mut out), PipeIo::Done(0)));
    }

    #[test]
    fn a_full_pipe_waits_small_writes_are_atomic_and_a_lost_reader_is_epipe() {
        let events = Arc::new(AtomicU64::new(0));
        let total = Arc::new(AtomicU64::new(MAX_PIPE_BYTES - PIPE_CAPACITY as u64 - 10));
        let (r, w) = PipeEnd::pair(false, &events, &total);
        let big = vec![7u8; PIPE_CAPACITY + 100];
        assert!(matches!(w.write(&big), PipeIo::Done(n) if n == PIPE_CAPACITY));
        assert!(matches!(w.write(b"x"), PipeIo::Wait));
        let mut out = vec![0u8; 10];
        assert!(matches!(r.read(&mut out), PipeIo::Done(10)));
        // 10 bytes of room: a 20-byte write (≤ PIPE_BUF) waits whole, a larger one goes in part
        assert!(matches!(w.write(&[1; 20]), PipeIo::Wait));
        assert!(matches!(w.write(&[1; PIPE_BUF + 1]), PipeIo::Done(10)));
        w.set_nonblocking(true);
        assert!(matches!(w.write(b"x"), PipeIo::Err(EAGAIN)));
        drop(r);
        assert_eq!(
            total.load(Ordering::Relaxed),
            MAX_PIPE_BYTES - PIPE_CAPACITY as u64 - 10
        );
        assert!(matches!(w.write(b"x"), PipeIo::Err(EPIPE)));
        // the lost reader's bytes were dropped: room again, so POLLOUT with POLLERR (Linux)
        assert_eq!(w.ready(), (false, true, true));
    }
}
