//! `splice`, `tee` and `vmsplice` (docs/machine.md, "Pipes"): bytes moved between a pipe and
//! a file, another pipe or the guest's memory. The machine copies them (Linux moves page
//! references); what a guest sees is the same: counts, offsets, blocking, and the errors.

use super::pipe::{PipeEnd, PipeIo};
use super::*;

const SPLICE_F_NONBLOCK: u64 = 2;
const SPLICE_FLAGS: u64 = 0xf; // MOVE, NONBLOCK, MORE, GIFT

/// One side of a splice: a pipe end, a connected socket's direction (moved as a pipe's
/// bytes are) or a regular file (with the guest's offset pointer).
enum Side {
    Pipe(PipeEnd),
    Socket(PipeEnd),
    File(std::fs::File),
}

impl Side {
    /// The pipe its bytes move through, if not a file.
    fn pipe(&self) -> Option<&PipeEnd> {
        match self {
            Side::Pipe(p) | Side::Socket(p) => Some(p),
            Side::File(_) => None,
        }
    }
}

impl Kernel {
    /// The calls this module answers (`None`: not one of them).
    pub(super) fn splice_call(&mut self, mem: &mut Memory, nr: u64, a: [u64; 6]) -> Option<i64> {
        let r = match nr {
            76 => self.sys_splice(mem, a),
            77 => self.sys_tee(a[0], a[1], a[2], a[3]),
            75 => self.sys_vmsplice(mem, a[0], a[1], a[2], a[3]),
            _ => return None,
        };
        Some(r.unwrap_or_else(|e| -e))
    }

    fn side(&mut self, fd: u64, write: bool) -> Result<Side, i64> {
        match self.fd(fd)? {
            Fd::Pipe(p) if p.write == write => Ok(Side::Pipe(p.clone())),
            Fd::Pipe(_) => Err(EBADF),
            Fd::Socket(so) => {
                let dir = if write { &so.tx } else { &so.rx };
                dir.clone().map(Side::Socket).ok_or(EPIPE)
            }
            Fd::File(f) => {
                let fl = rustix::fs::fcntl_getfl(&*f).map_err(|e| i64::from(e.raw_os_error()))?;
                let acc = fl & rustix::fs::OFlags::RWMODE;
                let ok = if write {
                    acc != rustix::fs::OFlags::RDONLY
                } else {
                    acc != rustix::fs::OFlags::WRONLY
                };
                if !ok {
                    return Err(EBADF);
                }
                if write && fl.contains(rustix::fs::OFlags::APPEND) {
                    return Err(EINVAL);
                }
                f.try_clone().map(Side::File).map_err(|e| errno(&e))
            }
            _ => Err(EINVAL),
        }
    }

    fn sys_splice(&mut self, mem: &mut Memory, a: [u64; 6]) -> Result<i64, i64> {
        use std::io::{Read, Write};
        use std::os::unix::fs::FileExt;
        let [fd_in, off_in, fd_out, off_out, len, flags] = a;
        if flags & !SPLICE_FLAGS != 0 {
            return Err(EINVAL);
        }
        let (src, dst) = (self.side(fd_in, false)?, self.side(fd_out, true)?);
        let offset = |mem: &mut Memory, at: u64, side: &Side| -> Result<Option<u64>, i64> {
            match (at, side) {
                (0, _) => Ok(None),
                (_, Side::Pipe(_) | Side::Socket(_)) => Err(ESPIPE),
                (at, Side::File(_)) => {
                    let v = mem.load_u64(at).map_err(|_| EFAULT)?;
                    if (v as i64) < 0 {
                        return Err(EINVAL);
                    }
                    Ok(Some(v))
                }
            }
        };
        let (oi, oo) = (offset(mem, off_in, &src)?, offset(mem, off_out, &dst)?);
        if !matches!(src, Side::Pipe(_)) && !matches!(dst, Side::Pipe(_)) {
            return Err(EINVAL); // one side must be a pipe
        }
        if let (Some(a), Some(b)) = (src.pipe(), dst.pipe()) {
            if a.same_pipe(b) {
                return Err(EINVAL);
            }
        }
        if len == 0 {
            return Ok(0);
        }
        let nonblock = flags & SPLICE_F_NONBLOCK != 0;
        // how much may move now: what the destination pipe has room for
        let mut n = (len as usize).min(MAX_IO);
        if let Some(p) = dst.pipe() {
            let room = p.room();
            if room == 0 {
                return match p.write(&[]) {
                    PipeIo::Err(e) => Err(e),
                    _ if nonblock || p.nonblocking() => Err(EAGAIN),
                    _ => Ok(WOULD_BLOCK),
                };
            }
            n = n.min(room);
        }
        let mut tmp = vec![0u8; n];
        let got = match &src {
            Side::Pipe(p) | Side::Socket(p) => match p.read(&mut tmp) {
                PipeIo::Done(g) => g,
                PipeIo::Wait if nonblock => return Err(EAGAIN),
                PipeIo::Wait => return Ok(WOULD_BLOCK),
                PipeIo::Err(e) => return Err(e),
            },
            Side::File(f) => match oi {
                Some(o) => f.read_at(&mut tmp, o),
                None => (&*f).read(&mut tmp),
            }
            .map_err(|e| errno(&e))?,
        };
        if got == 0 {
            return Ok(0);
        }
        let put = match &dst {
            Side::Pipe(p) | Side::Socket(p) => match p.write(&tmp[..got]) {
                PipeIo::Done(k) => k,
                PipeIo::Wait => 0,
                PipeIo::Err(e) => {
                    if e == EPIPE {
                        self.raise_sigpipe();
                    }
                    return Err(e);
                }
            },
            Side::File(f) => {
                match oo {
                    Some(o) => f.write_all_at(&tmp[..got], o),
                    None => (&*f).write_all(&tmp[..got]),
                }
                .map_err(|e| errno(&e))?;
                got
            }
        };
        for (at, off) in [(off_in, oi), (off_out, oo)] {
            if let Some(o) = off {
                mem.store_u64(at, o + put as u64).map_err(|_| EFAULT)?;
            }
        }
        Ok(put as i64)
    }

    /// `tee(in, out, len, flags)`: copies waiting bytes of pipe `in` into pipe `out` without
    /// taking them.
    fn sys_tee(&mut self, fd_in: u64, fd_out: u64, len: u64, flags: u64) -> Result<i64, i64> {
        if flags & !SPLICE_FLAGS != 0 {
            return Err(EINVAL);
        }
        let (Side::Pipe(src), Side::Pipe(dst)) = (
            self.side(fd_in, false).map_err(|_| EINVAL)?,
            self.side(fd_out, true).map_err(|_| EINVAL)?,
        ) else {
            return Err(EINVAL);
        };
        if fd_in == fd_out || src.same_pipe(&dst) {
            return Err(EINVAL);
        }
        if len == 0 {
            return Ok(0);
        }
        let nonblock = flags & SPLICE_F_NONBLOCK != 0;
        let n = (len as usize).min(dst.room());
        if n == 0 {
            return if nonblock {
                Err(EAGAIN)
            } else {
                Ok(WOULD_BLOCK)
            };
        }
        let mut tmp = vec![0u8; n];
        let got = match src.peek(&mut tmp) {
            Some(g) => g,
            None if nonblock || src.nonblocking() => return Err(EAGAIN),
            None => return Ok(WOULD_BLOCK),
        };
        if got == 0 {
            return Ok(0);
        }
        match dst.write(&tmp[..got]) {
            PipeIo::Done(k) => Ok(k as i64),
            PipeIo::Wait => Ok(WOULD_BLOCK),
            PipeIo::Err(e) => Err(e),
        }
    }

    /// `vmsplice(fd, iov, nr, flags)`: the guest's buffers into a pipe's write end (as
    /// `writev`), or a pipe's bytes into them from its read end (as `readv`).
    fn sys_vmsplice(
        &mut self,
        mem: &mut Memory,
        fd: u64,
        iov: u64,
        nr: u64,
        flags: u64,
    ) -> Result<i64, i64> {
        if flags & !SPLICE_FLAGS != 0 {
            return Err(EINVAL);
        }
        let write = match self.fd(fd)? {
            Fd::Pipe(p) => p.write,
            _ => return Err(EBADF),
        };
        if nr == 0 {
            return Ok(0);
        }
        if !write {
            return Ok(self.sys_readv_at(mem, fd, iov, nr, None));
        }
        // into the pipe as much as fits now: waiting only while nothing fits, as Linux
        let list = Self::iovecs(mem, iov, nr)?;
        let Ok(Fd::Pipe(p)) = self.fd(fd) else {
            return Err(EBADF);
        };
        let p = p.clone();
        let mut total = 0usize;
        for (base, len) in list {
            let n = (len as usize).min(p.room()).min(MAX_IO - total);
            if n == 0 {
                break;
            }
            let mut tmp = vec![0u8; n];
            mem.read_bytes(base, &mut tmp).map_err(|_| EFAULT)?;
            match p.write(&tmp) {
                PipeIo::Done(k) => total += k,
                PipeIo::Wait => break,
                PipeIo::Err(e) if total == 0 => return Err(e),
                PipeIo::Err(_) => break,
            }
            if n < len as usize {
                break;
            }
        }
        if total > 0 {
            return Ok(total as i64);
        }
        match p.write(&[]) {
            PipeIo::Err(e) => Err(e),
            _ if flags & SPLICE_F_NONBLOCK != 0 || p.nonblocking() => Err(EAGAIN),
            _ => Ok(WOULD_BLOCK),
        }
    }
}
