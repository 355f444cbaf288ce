//! File descriptors and paths: read and write (vectored, positioned), open, dup, fcntl,
//! seek, close, stat, directories, links, renames, truncation, `getdents64` (docs/machine.md,
//! "System calls"). Every path is resolved beneath a grant ([`crate::sandbox`]).

use super::*;

impl Kernel {
    pub(super) fn fd(&mut self, fd: u64) -> Result<&mut Fd, i64> {
        self.fds
            .get_mut(fd as usize)
            .and_then(Option::as_mut)
            .ok_or(EBADF)
    }

    pub(super) fn sys_read(&mut self, mem: &mut Memory, fd: u64, buf: u64, count: u64) -> i64 {
        let n = (count as usize).min(self.io_cap(fd));
        if mem.check_range(buf, n as u64, perm::W).is_err() {
            return -EFAULT;
        }
        self.before_file_read(mem, fd);
        match self.fd(fd) {
            Ok(Fd::Timer(t)) => {
                let t = t.clone();
                return self.read_timerfd(mem, t, buf, count);
            }
            Ok(Fd::Signal(s)) => {
                let s = s.clone();
                return self.read_signalfd(mem, s, buf, count);
            }
            Ok(Fd::Inotify(i)) => {
                let i = i.clone();
                return self.read_inotify(mem, i, buf, count);
            }
            _ => {}
        }
        let mut tmp = vec![0u8; n];
        let got = match self.fd(fd) {
            Err(e) => return -e,
            Ok(Fd::Stdin) => self.config.stdin.read(&mut tmp),
            Ok(Fd::File(f)) => f.read(&mut tmp),
            Ok(Fd::Dir(_)) => return -EISDIR,
            Ok(Fd::Device(Device::Null)) => Ok(0),
            Ok(Fd::Device(Device::Zero | Device::Full)) => Ok(n),
            Ok(Fd::Device(Device::Random)) => {
                self.random_bytes(&mut tmp);
                Ok(n)
            }
            Ok(Fd::Pipe(p)) => match p.read(&mut tmp) {
                pipe::PipeIo::Done(n) => Ok(n),
                pipe::PipeIo::Wait => return WOULD_BLOCK,
                pipe::PipeIo::Err(e) => return -e,
            },
            Ok(Fd::Socket(s)) => match s.read(&mut tmp) {
                pipe::PipeIo::Done(n) => Ok(n),
                pipe::PipeIo::Wait => return WOULD_BLOCK,
                pipe::PipeIo::Err(e) => return -e,
            },
            Ok(Fd::Net(s)) => match s.read(&mut tmp) {
                pipe::PipeIo::Done(n) => Ok(n),
                pipe::PipeIo::Wait => return WOULD_BLOCK,
                pipe::PipeIo::Err(e) => return -e,
            },
            Ok(Fd::Event(e)) => match e.read(&mut tmp) {
                Ok(Some(n)) => Ok(n),
                Ok(None) => return WOULD_BLOCK,
                Err(e) => return -e,
            },
            Ok(Fd::Proc(p)) if p.is_dir() => return -EISDIR,
            Ok(Fd::Proc(p)) => Ok(p.read(&mut tmp)),
            Ok(_) => return -EBADF,
        };
        let r = match got {
            Ok(got) => match mem.write_bytes(buf, &tmp[..got]) {
                Ok(()) => got as i64,
                Err(_) => -EFAULT,
            },
            Err(e) => -errno(&e),
        };
        self.notify_io(fd, r, inotify::IN_ACCESS);
        r
    }

    pub(super) fn write_fd(&mut self, fd: u64, data: &[u8]) -> i64 {
        if let Ok(Fd::Pipe(_) | Fd::Socket(_)) = self.fd(fd) {
            return self.write_pipe(fd, data);
        }
        let room = match self.fsize_room(fd, None, data.len()) {
            Ok(r) => r,
            Err(e) => return -e,
        };
        let data = &data[..room];
        let r = match self.fd(fd) {
            Err(e) => return -e,
            Ok(Fd::Stdout) => self.config.stdout.write_all(data),
            Ok(Fd::Stderr) => self
                .config
                .stderr
                .write_all(data)
                .and_then(|()| self.config.stderr.flush()),
            Ok(Fd::File(f)) => f.write_all(data),
            Ok(Fd::Device(Device::Full)) => return -28, // ENOSPC
            Ok(Fd::Device(_)) => Ok(()),
            Ok(Fd::Event(e)) => {
                return match e.write(data) {
                    Ok(Some(n)) => n as i64,
                    Ok(None) => WOULD_BLOCK,
                    Err(e) => -e,
                }
            }
            Ok(Fd::Epoll(_) | Fd::Pid(_) | Fd::Timer(_) | Fd::Signal(_) | Fd::Inotify(_)) => {
                return -EINVAL
            }
            Ok(Fd::Proc(_)) => return -EBADF,
            // (`write` reaches a shared file first: `Kernel::shm_fd_call`)
            Ok(Fd::Shm(_)) => return -EBADF,
            Ok(Fd::Stdin | Fd::Dir(_) | Fd::Pipe(_) | Fd::Socket(_)) => return -EBADF,
            // (`write` sends a datagram socket's to its peer: `sys_write`)
            Ok(Fd::Net(_)) => return -107, // ENOTCONN
        };
        match r {
            Ok(()) => data.len() as i64,
            Err(e) => {
                let e = errno(&e);
                if e == EPIPE {
                    self.raise_sigpipe(); // the reader is gone: SIGPIPE, as Linux sends it
                }
                -e
            }
        }
    }

    /// A write to a pipe: a blocking one waits until all of `data` went in (going on after
    /// what it moved before, [`Thread::io_done`]); a lost reader is `EPIPE` and `SIGPIPE`.
    fn write_pipe(&mut self, fd: u64, data: &[u8]) -> i64 {
        let done = self.threads.cur().io_done.min(data.len());
        let (r, nonblocking) = match self.fds.get(fd as usize) {
            Some(Some(Fd::Pipe(p))) => (p.write(&data[done..]), p.nonblocking()),
            Some(Some(Fd::Socket(s))) => {
                // MSG_MORE holds bytes on TCP only (a Unix stream ignores it, as Linux's)
                let more = self.msg_more && s.inet();
                (s.write(&data[done..], more), s.nonblocking())
            }
            _ => return -EBADF,
        };
        match r {
            pipe::PipeIo::Done(n) if done + n < data.len() && !nonblocking => {
                self.threads.cur_mut().io_done = done + n;
                WOULD_BLOCK
            }
            pipe::PipeIo::Done(n) => (done + n) as i64,
            pipe::PipeIo::Wait => WOULD_BLOCK,
            pipe::PipeIo::Err(e) => {
                if e == EPIPE {
                    self.raise_sigpipe();
                }
                if done > 0 {
                    done as i64
                } else {
                    -e
                }
            }
        }
    }

    pub(super) fn sys_write(&mut self, mem: &mut Memory, fd: u64, buf: u64, count: u64) -> i64 {
        if let Ok(Fd::Net(s)) = self.fd(fd) {
            // a datagram to the connected peer
            let s = s.clone();
            return self.net_sendto(mem, &s, [fd, buf, count, 0, 0, 0]);
        }
        let n = (count as usize).min(self.io_cap(fd));
        if mem.check_range(buf, n as u64, perm::R).is_err() {
            return -EFAULT;
        }
        let mut tmp = vec![0u8; n];
        if mem.read_bytes(buf, &mut tmp).is_err() {
            return -EFAULT;
        }
        let r = self.write_fd(fd, &tmp);
        self.written(mem, fd, None, &tmp, r);
        r
    }

    /// How much of a write of `len` bytes to regular file `fd` (at `at`, else its position or,
    /// appending, its end) `RLIMIT_FSIZE` lets through: all below the limit, the part up to
    /// it, or none — `EFBIG` with `SIGXFSZ`, as Linux's `generic_write_check_limits`.
    fn fsize_room(&mut self, fd: u64, at: Option<u64>, len: usize) -> Result<usize, i64> {
        use std::io::Seek;
        let limit = self.rlimit(1); // RLIMIT_FSIZE
        if limit == u64::MAX || len == 0 {
            return Ok(len);
        }
        let Ok(Fd::File(f)) = self.fd(fd) else {
            return Ok(len);
        };
        let append =
            rustix::fs::fcntl_getfl(&*f).is_ok_and(|fl| fl.contains(rustix::fs::OFlags::APPEND));
        let pos = match at {
            Some(a) => a,
            None if append => f.metadata().map_or(0, |m| m.len()),
            None => f.stream_position().unwrap_or(0),
        };
        if pos >= limit {
            self.raise_signal_here(25); // SIGXFSZ
            return Err(27); // EFBIG
        }
        Ok(len.min(usize::try_from(limit - pos).unwrap_or(usize::MAX)))
    }

    /// The most bytes one `read` or `write` of `fd` moves: a regular file's as Linux's (which
    /// moves them all) up to [`MAX_FILE_IO`], what a program reading a file whole in one call
    /// expects; [`MAX_IO`] for the rest. The caller checks the guest's buffer is mapped
    /// before allocating so much.
    fn io_cap(&mut self, fd: u64) -> usize {
        match self.fd(fd) {
            Ok(Fd::File(_)) => MAX_FILE_IO,
            _ => MAX_IO,
        }
    }

    /// After a write of `data` to `fd` that returned `r` (at file offset `at`, or where the
    /// file position now ends it): the file's shared mappings show what was written.
    pub(super) fn written(
        &mut self,
        mem: &mut Memory,
        fd: u64,
        at: Option<u64>,
        data: &[u8],
        r: i64,
    ) {
        use std::io::Seek;
        self.notify_io(fd, r, inotify::IN_MODIFY);
        if (self.file_maps.is_empty() && self.host_files.is_empty()) || r <= 0 {
            return;
        }
        let n = (r as usize).min(data.len());
        let Ok(Fd::File(f)) = self.fd(fd) else {
            return;
        };
        let start = match at {
            Some(a) => Some(a),
            None => f
                .stream_position()
                .ok()
                .and_then(|p| p.checked_sub(n as u64)),
        };
        let (Some(start), Ok(meta)) = (start, f.metadata()) else {
            return;
        };
        self.host_file_written(mem, &meta, start, &data[..n]);
        self.write_through_shared(mem, &meta, start, &data[..n]);
    }

    pub(super) fn sys_writev(&mut self, mem: &mut Memory, fd: u64, iov: u64, cnt: u64) -> i64 {
        let list = match Self::iovecs(mem, iov, cnt) {
            Ok(l) => l,
            Err(e) => return -e,
        };
        let mut data = Vec::new();
        for (base, len) in list {
            // each length is guest-controlled: bound it before adding or allocating
            if len > (MAX_IO - data.len()) as u64 {
                return -EINVAL;
            }
            let start = data.len();
            data.resize(start + len as usize, 0);
            if mem.read_bytes(base, &mut data[start..]).is_err() {
                return -EFAULT;
            }
        }
        let r = self.write_fd(fd, &data);
        self.written(mem, fd, None, &data, r);
        r
    }

    pub(super) fn guest_path(
        &self,
        mem: &mut Memory,
        dirfd: i64,
        addr: u64,
    ) -> Result<PathBuf, i64> {
        let bytes = mem.read_cstr(addr, PATH_MAX).map_err(|_| EFAULT)?;
        if bytes.len() >= PATH_MAX {
            return Err(ENAMETOOLONG); // no NUL within PATH_MAX bytes: never truncate
        }
        // Linux paths are bytes, not necessarily UTF-8
        let _ = dirfd; // resolved by `resolve_at`
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(&bytes)))
    }

    /// Resolves `path` as an `*at` call does: absolute paths and `AT_FDCWD` against the
    /// sandbox's grants, relative ones beneath the directory `dirfd` names (`ENOTDIR` for a
    /// file, `EBADF` for no descriptor).
    pub(super) fn resolve_at(
        &mut self,
        dirfd: i64,
        path: &std::path::Path,
        write: bool,
    ) -> Result<crate::sandbox::Resolved<'_>, i64> {
        // beneath one of the machine's devices there is nothing: not a directory
        if path.ancestors().skip(1).any(|a| Device::at(a).is_some()) {
            return Err(ENOTDIR);
        }
        if path.is_absolute() || dirfd == AT_FDCWD {
            return self.resolve(path, write);
        }
        let fd = usize::try_from(dirfd).map_err(|_| EBADF)?;
        match self.fds.get(fd).and_then(Option::as_ref) {
            Some(Fd::Dir(d)) => d.grant.resolve(path, write),
            Some(_) => Err(ENOTDIR),
            None => Err(EBADF),
        }
    }

    pub(super) fn sys_openat(
        &mut self,
        mem: &mut Memory,
        dirfd: i64,
        path: u64,
        flags: u64,
        mode: u64,
    ) -> i64 {
        let path = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        const O_CREAT: u64 = 0o100;
        const O_EXCL: u64 = 0o200;
        const O_TRUNC: u64 = 0o1000;
        const O_APPEND: u64 = 0o2000;
        const O_DIRECTORY: u64 = 0o200000;
        const O_NOFOLLOW: u64 = 0o400000;
        const O_NONBLOCK: u64 = 0o4000;
        const O_CLOEXEC: u64 = 0o2000000;
        const O_PATH: u64 = 0o10000000;
        let acc = flags & 3;
        let write = acc != 0 || flags & (O_CREAT | O_TRUNC) != 0;
        if path.is_absolute() {
            if let Some(d) = Device::at(&path) {
                if flags & O_DIRECTORY != 0 {
                    return -ENOTDIR;
                }
                let fd = self.install(Fd::Device(d));
                if fd >= 0 && flags & O_CLOEXEC != 0 {
                    self.cloexec.insert(fd as usize);
                }
                return fd;
            }
        }
        let umask = self.umask;
        let mut fifo = None;
        // whether O_CREAT made the file (inotify's IN_CREATE)
        let existed = flags & O_CREAT == 0 || self.path_subject(dirfd, &path).is_some();
        let opened = self.resolve_at(dirfd, &path, write).and_then(|r| {
            let host = r.host_path();
            let opened = r
                .open(OpenFlags {
                    read: acc == 0 || acc == 2,
                    write: acc == 1 || acc == 2,
                    append: flags & O_APPEND != 0,
                    truncate: flags & O_TRUNC != 0,
                    create: flags & O_CREAT != 0,
                    exclusive: flags & O_EXCL != 0,
                    nofollow: flags & O_NOFOLLOW != 0,
                    nonblock: flags & O_NONBLOCK != 0,
                    path_only: flags & O_PATH != 0,
                    // never a set-id bit on a host file (see `sys_chmod`); the guest's umask
                    mode: (mode & 0o1777) as u32 & !umask,
                    created: !existed,
                })
                .inspect_err(|&e| {
                    // a named pipe is refused as a host file and opened as the machine's own
                    use cap_fs_ext::FileTypeExt as _;
                    if e == EACCES {
                        if let Ok(m) = r.metadata(flags & O_NOFOLLOW != 0) {
                            if m.file_type().is_fifo() {
                                use cap_std::fs::MetadataExt as _;
                                fifo = Some((m.dev(), m.ino()));
                            }
                        }
                    }
                })?;
            let is_dir = opened.metadata().is_ok_and(|m| m.is_dir());
            if flags & O_DIRECTORY != 0 && !is_dir {
                return Err(ENOTDIR);
            }
            // a directory becomes the base of *at calls, beneath the same grant
            let fd = if is_dir {
                Fd::Dir(DirFd {
                    grant: r.dir_grant(opened),
                    listing: None,
                    pos: 0,
                })
            } else {
                Fd::File(opened)
            };
            Ok((fd, host))
        });
        if let Some(key) = fifo {
            return self.open_fifo(key, flags);
        }
        match opened {
            Ok((f, host)) => {
                let fd = self.install(f);
                if fd >= 0 && flags & O_CLOEXEC != 0 {
                    self.cloexec.insert(fd as usize);
                }
                if fd >= 0 {
                    self.fd_paths.insert(fd as usize, path);
                    self.fd_hosts.insert(fd as usize, host);
                    if let Some(s) = self.fd_subject(fd as u64) {
                        if let (Some((dir, name)), false) = (&s.parent, existed) {
                            self.notify_entry(*dir, inotify::IN_CREATE, 0, name);
                        }
                        self.notify(&s, inotify::IN_OPEN);
                        // truncating an existing file: IN_MODIFY after IN_OPEN, as Linux's
                        // handle_truncate
                        if flags & O_TRUNC != 0 && existed && !s.dir {
                            self.notify(&s, inotify::IN_MODIFY);
                        }
                    }
                }
                fd
            }
            Err(e) => -e,
        }
    }

    /// `openat` of a named pipe (`key`: its device and inode): an end of the machine's pipe
    /// for it. `O_RDWR` gets the read end.
    fn open_fifo(&mut self, key: (u64, u64), flags: u64) -> i64 {
        const O_NONBLOCK: u64 = 0o4000;
        const O_CLOEXEC: u64 = 0o2000000;
        const O_DIRECTORY: u64 = 0o200000;
        const ENXIO: i64 = 6;
        if flags & O_DIRECTORY != 0 {
            return -ENOTDIR;
        }
        let end = self.fifos.open(
            key,
            flags & 3 == 1,
            flags & 3 == 2,
            flags & O_NONBLOCK != 0,
            &self.events,
            &self.pipe_bytes,
        );
        let Some(end) = end else {
            return -ENXIO;
        };
        let fd = self.install(Fd::Pipe(end));
        if fd >= 0 && flags & O_CLOEXEC != 0 {
            self.cloexec.insert(fd as usize);
        }
        fd
    }

    /// dup / F_DUPFD: a copy of `fd` at the lowest free number ≥ `min` (or exactly `at`).
    pub(super) fn sys_dup(&mut self, fd: u64, min: u64, at: Option<u64>) -> i64 {
        let copy = match self.fd(fd).and_then(|f| f.try_clone()) {
            Ok(c) => c,
            Err(e) => return -e,
        };
        let (path, host) = (
            self.fd_paths.get(&(fd as usize)).cloned(),
            self.fd_hosts.get(&(fd as usize)).cloned(),
        );
        let ofd = self.ofd_of(fd as usize);
        let limit = (self.rlimit(RLIMIT_NOFILE) as usize).min(MAX_FDS);
        let slot = match at {
            Some(n) => n as usize,
            None => {
                let free =
                    (min as usize..limit).find(|&i| self.fds.get(i).is_none_or(Option::is_none));
                match free {
                    Some(i) => i,
                    None => return -EMFILE,
                }
            }
        };
        if slot >= limit {
            return if at.is_some() { -EBADF } else { -EMFILE };
        }
        if self.fds.len() <= slot {
            self.fds.resize_with(slot + 1, || None);
        }
        self.closing(slot);
        self.fds[slot] = Some(copy);
        self.cloexec.remove(&slot);
        self.fd_paths.remove(&slot);
        self.fd_hosts.remove(&slot);
        self.forget_ofds(Some(slot));
        if let Some(o) = ofd {
            self.ofds.insert(slot, o);
        }
        if let Some(p) = path {
            self.fd_paths.insert(slot, p);
        }
        if let Some(h) = host {
            self.fd_hosts.insert(slot, h);
        }
        slot as i64
    }

    pub(super) fn sys_dup3(&mut self, old: u64, new: u64, flags: u64) -> i64 {
        const O_CLOEXEC: u64 = 0o2000000;
        if old == new || flags & !O_CLOEXEC != 0 {
            return -EINVAL;
        }
        let r = self.sys_dup(old, 0, Some(new));
        if r >= 0 && flags & O_CLOEXEC != 0 {
            self.cloexec.insert(r as usize);
        }
        r
    }

    /// fcntl: F_DUPFD(_CLOEXEC), and the flag queries programs make (close-on-exec is
    /// remembered nowhere: there is no exec).
    pub(super) fn sys_fcntl(&mut self, mem: &mut Memory, fd: u64, cmd: u64, arg: u64) -> i64 {
        const F_DUPFD: u64 = 0;
        const F_GETFD: u64 = 1;
        const F_SETFD: u64 = 2;
        const F_GETFL: u64 = 3;
        const F_SETFL: u64 = 4;
        const F_SETLK: u64 = 6;
        const F_SETLKW: u64 = 7;
        const F_GETLK: u64 = 5;
        const F_OFD_GETLK: u64 = 36;
        const F_OFD_SETLK: u64 = 37;
        const F_OFD_SETLKW: u64 = 38;
        const F_DUPFD_CLOEXEC: u64 = 1030;
        const O_RDWR: i64 = 2;
        const O_NONBLOCK: i64 = 0o4000;
        // F_ADD_SEALS, F_GET_SEALS: a memfd's or /dev/shm file's; EINVAL on anything else
        if matches!(cmd, 1033 | 1034) {
            let add = (cmd == 1033).then_some(arg);
            return match self.shm_seals(fd, add) {
                Some(r) => r,
                None => self.fd(fd).map_or_else(|e| -e, |_| -EINVAL),
            };
        }
        match cmd {
            F_DUPFD | F_DUPFD_CLOEXEC => {
                if arg as usize >= MAX_FDS {
                    return -EINVAL;
                }
                let new = self.sys_dup(fd, arg, None);
                if new >= 0 && cmd == F_DUPFD_CLOEXEC {
                    self.cloexec.insert(new as usize);
                }
                new
            }
            F_GETFD => match self.fd(fd) {
                Ok(_) => i64::from(self.cloexec.contains(&(fd as usize))),
                Err(e) => -e,
            },
            F_SETFD => match self.fd(fd) {
                Ok(_) => {
                    if arg & 1 != 0 {
                        self.cloexec.insert(fd as usize);
                    } else {
                        self.cloexec.remove(&(fd as usize));
                    }
                    0
                }
                Err(e) => -e,
            },
            F_GETFL => match self.fd(fd) {
                Ok(Fd::File(f)) => rustix::fs::fcntl_getfl(&*f)
                    .map(|fl| i64::from(fl.bits()))
                    .unwrap_or(O_RDWR),
                Ok(Fd::Stdin) => 0,
                Ok(Fd::Stdout | Fd::Stderr) => 1,
                Ok(Fd::Device(_)) => O_RDWR,
                Ok(Fd::Dir(_)) => 0o200000, // O_DIRECTORY | O_RDONLY
                Ok(Fd::Pipe(p)) => {
                    let acc = if p.rdwr { O_RDWR } else { i64::from(p.write) };
                    let direct = if p.packets() {
                        pipe::O_DIRECT as i64
                    } else {
                        0
                    };
                    acc | direct | if p.nonblocking() { O_NONBLOCK } else { 0 }
                }
                Ok(Fd::Socket(s)) => O_RDWR | if s.nonblocking() { O_NONBLOCK } else { 0 },
                Ok(Fd::Net(s)) => O_RDWR | if s.nonblocking() { O_NONBLOCK } else { 0 },
                Ok(Fd::Shm(s)) => s.flags(),
                Ok(Fd::Event(e)) => O_RDWR | if e.nonblocking() { O_NONBLOCK } else { 0 },
                Ok(Fd::Proc(_)) => 0,
                Ok(Fd::Epoll(_)) => O_RDWR,
                Ok(Fd::Pid(_)) => 0,
                Ok(Fd::Timer(t)) => O_RDWR | if t.nonblocking() { O_NONBLOCK } else { 0 },
                Ok(Fd::Signal(s)) => O_RDWR | if s.nonblocking() { O_NONBLOCK } else { 0 },
                Ok(Fd::Inotify(i)) => {
                    if i.nonblocking() {
                        O_NONBLOCK
                    } else {
                        0
                    }
                }
                Err(e) => -e,
            },
            // status flags (O_APPEND, O_NONBLOCK) are not changed on the host descriptor; a
            // pipe's O_NONBLOCK is the machine's own
            F_SETFL => match self.fd(fd) {
                Ok(Fd::Pipe(p)) => {
                    p.set_nonblocking(arg as i64 & O_NONBLOCK != 0);
                    p.set_packets(arg & pipe::O_DIRECT != 0);
                    0
                }
                Ok(Fd::Socket(s)) => {
                    s.set_nonblocking(arg as i64 & O_NONBLOCK != 0);
                    0
                }
                Ok(Fd::Net(s)) => {
                    s.set_nonblocking(arg as i64 & O_NONBLOCK != 0);
                    0
                }
                Ok(Fd::Event(e)) => {
                    e.set_nonblocking(arg as i64 & O_NONBLOCK != 0);
                    0
                }
                Ok(Fd::Timer(t)) => {
                    t.set_nonblocking(arg as i64 & O_NONBLOCK != 0);
                    0
                }
                Ok(Fd::Signal(s)) => {
                    s.set_nonblocking(arg as i64 & O_NONBLOCK != 0);
                    0
                }
                Ok(Fd::Inotify(i)) => {
                    i.set_nonblocking(arg as i64 & O_NONBLOCK != 0);
                    0
                }
                Ok(_) => 0,
                Err(e) => -e,
            },
            // F_SETLEASE, F_GETLEASE
            1024 => self.sys_lease(fd, Some(arg)),
            1025 => self.sys_lease(fd, None),
            // F_SETPIPE_SZ, F_GETPIPE_SZ
            1031 | 1032 => match self.fd(fd) {
                Ok(Fd::Pipe(p)) if cmd == 1032 => p.capacity() as i64,
                Ok(Fd::Pipe(p)) => p.set_capacity(arg).map_or_else(|e| -e, |n| n as i64),
                Ok(_) => -EBADF,
                Err(e) => -e,
            },
            // record locks between the guest's processes (open-file-description locks are
            // kept per process too)
            F_GETLK | F_OFD_GETLK => self.sys_record_lock(mem, fd, arg, locks::LockOp::Get),
            F_SETLK | F_OFD_SETLK => {
                self.sys_record_lock(mem, fd, arg, locks::LockOp::Set { wait: false })
            }
            F_SETLKW | F_OFD_SETLKW => {
                self.sys_record_lock(mem, fd, arg, locks::LockOp::Set { wait: true })
            }
            _ => -EINVAL,
        }
    }

    /// The guest's `iovec` array: at most 1,024 `(base, len)` pairs whose lengths sum to at
    /// most `isize::MAX` (`EINVAL` otherwise, as Linux checks before any transfer).
    pub(super) fn iovecs(mem: &mut Memory, iov: u64, cnt: u64) -> Result<Vec<(u64, u64)>, i64> {
        if cnt > 1024 {
            return Err(EINVAL);
        }
        let mut out = Vec::with_capacity(cnt as usize);
        let mut total: u64 = 0;
        for i in 0..cnt {
            let at = iov.wrapping_add(16 * i);
            let (Ok(base), Ok(len)) = (mem.load_u64(at), mem.load_u64(at.wrapping_add(8))) else {
                return Err(EFAULT);
            };
            total = total.checked_add(len).ok_or(EINVAL)?;
            if total > i64::MAX as u64 {
                return Err(EINVAL);
            }
            out.push((base, len));
        }
        Ok(out)
    }

    /// `readv`, and `preadv`/`preadv2` with `off` (`None`: at the file's offset).
    pub(super) fn sys_readv_at(
        &mut self,
        mem: &mut Memory,
        fd: u64,
        iov: u64,
        cnt: u64,
        off: Option<u64>,
    ) -> i64 {
        let list = match Self::iovecs(mem, iov, cnt) {
            Ok(l) => l,
            Err(e) => return -e,
        };
        if off.is_some_and(|o| (o as i64) < 0) {
            return -EINVAL;
        }
        self.before_file_read(mem, fd);
        let mut total = 0i64;
        for (base, len) in list {
            if len == 0 {
                continue;
            }
            let n = match off {
                Some(o) => self.sys_pread(mem, fd, base, len, o + total as u64),
                None => self.sys_read(mem, fd, base, len),
            };
            if n < 0 {
                return if total > 0 { total } else { n };
            }
            total += n;
            if (n as u64) < len {
                break; // a short read ends the vector, as Linux does
            }
        }
        total
    }

    /// `pwritev`/`pwritev2` at `off` (`writev` gathers in one write instead).
    pub(super) fn sys_pwritev(
        &mut self,
        mem: &mut Memory,
        fd: u64,
        iov: u64,
        cnt: u64,
        off: u64,
    ) -> i64 {
        let list = match Self::iovecs(mem, iov, cnt) {
            Ok(l) => l,
            Err(e) => return -e,
        };
        if (off as i64) < 0 {
            return -EINVAL;
        }
        let mut total = 0i64;
        for (base, len) in list {
            if len == 0 {
                continue;
            }
            let n = self.sys_pwrite(mem, fd, base, len, off + total as u64);
            if n < 0 {
                return if total > 0 { total } else { n };
            }
            total += n;
            if (n as u64) < len {
                break;
            }
        }
        total
    }

    /// `preadv2`/`pwritev2`: an offset of -1 is the file's own; the flags are hints the
    /// machine need not act on (`RWF_NOWAIT` and `RWF_APPEND` included), others `EOPNOTSUPP`.
    pub(super) fn sys_rw2(&mut self, mem: &mut Memory, a: [u64; 6], write: bool) -> i64 {
        const EOPNOTSUPP: i64 = 95;
        if a[5] & !0x1f != 0 {
            return -EOPNOTSUPP;
        }
        let off = (a[3] as i64 != -1).then_some(a[3]);
        match (write, off) {
            (false, off) => self.sys_readv_at(mem, a[0], a[1], a[2], off),
            (true, Some(o)) => self.sys_pwritev(mem, a[0], a[1], a[2], o),
            (true, None) => self.sys_writev(mem, a[0], a[1], a[2]),
        }
    }

    pub(super) fn sys_pread(
        &mut self,
        mem: &mut Memory,
        fd: u64,
        buf: u64,
        count: u64,
        off: u64,
    ) -> i64 {
        use std::os::unix::fs::FileExt;
        if (off as i64) < 0 {
            return -EINVAL;
        }
        let n = (count as usize).min(self.io_cap(fd));
        if mem.check_range(buf, n as u64, perm::W).is_err() {
            return -EFAULT;
        }
        self.before_file_read(mem, fd);
        let f = match self.fd(fd) {
            Ok(Fd::File(f)) => f,
            Ok(Fd::Dir(_)) => return -EISDIR,
            Ok(_) => return -ESPIPE,
            Err(e) => return -e,
        };
        let mut tmp = vec![0u8; n];
        let r = match f.read_at(&mut tmp, off) {
            Ok(got) => match mem.write_bytes(buf, &tmp[..got]) {
                Ok(()) => got as i64,
                Err(_) => -EFAULT,
            },
            Err(e) => -errno(&e),
        };
        self.notify_io(fd, r, inotify::IN_ACCESS);
        r
    }

    pub(super) fn sys_pwrite(
        &mut self,
        mem: &mut Memory,
        fd: u64,
        buf: u64,
        count: u64,
        off: u64,
    ) -> i64 {
        use std::os::unix::fs::FileExt;
        if (off as i64) < 0 {
            return -EINVAL;
        }
        let n = (count as usize).min(self.io_cap(fd));
        if mem.check_range(buf, n as u64, perm::R).is_err() {
            return -EFAULT;
        }
        let mut tmp = vec![0u8; n];
        if mem.read_bytes(buf, &mut tmp).is_err() {
            return -EFAULT;
        }
        let room = match self.fsize_room(fd, Some(off), tmp.len()) {
            Ok(r) => r,
            Err(e) => return -e,
        };
        let r = match self.fd(fd) {
            Ok(Fd::File(f)) => match f.write_at(&tmp[..room], off) {
                Ok(w) => w as i64,
                Err(e) => -errno(&e),
            },
            Ok(Fd::Dir(_)) => -EISDIR,
            Ok(_) => -ESPIPE,
            Err(e) => -e,
        };
        self.written(mem, fd, Some(off), &tmp, r);
        r
    }

    /// `path` as the running process's working directory makes it: a relative path joined to
    /// the directory its `chdir` named (unchanged before any `chdir`: the sandbox resolves it
    /// against its own).
    pub(super) fn at_cwd<'p>(
        &self,
        path: &'p std::path::Path,
    ) -> std::borrow::Cow<'p, std::path::Path> {
        match &self.cwd {
            Some(cwd) if path.is_relative() => std::borrow::Cow::Owned(cwd.join(path)),
            _ => std::borrow::Cow::Borrowed(path),
        }
    }

    /// The running process's working directory, absolute, as the guest names it.
    pub(super) fn cwd_now(&self) -> PathBuf {
        match &self.cwd {
            Some(c) => c.clone(),
            None => {
                let cwd = self.config.sandbox.host_path(std::path::Path::new("."));
                std::path::absolute(&cwd).unwrap_or(cwd)
            }
        }
    }

    /// `chdir(path)` (`fd` `None`) or `fchdir(fd)`: the directory must exist beneath a grant.
    /// `..` is taken lexically (a symbolic link's parent is the link's, not its target's).
    pub(super) fn sys_chdir(&mut self, mem: &mut Memory, path: u64, fd: Option<u64>) -> i64 {
        let target = match fd {
            Some(fd) => match self.fds.get(fd as usize) {
                Some(Some(Fd::Dir(_))) => match self.fd_paths.get(&(fd as usize)) {
                    Some(p) if p.is_absolute() => p.clone(),
                    _ => match self.fd_hosts.get(&(fd as usize)) {
                        Some(h) => h.clone(),
                        None => return -EBADF,
                    },
                },
                Some(Some(_)) => return -ENOTDIR,
                _ => return -EBADF,
            },
            None => match self.guest_path(mem, AT_FDCWD, path) {
                Ok(p) if p.as_os_str().is_empty() => return -crate::sandbox::ENOENT,
                Ok(p) => p,
                Err(e) => return -e,
            },
        };
        let joined = self.cwd_now().join(&target);
        let mut abs = PathBuf::from("/");
        for c in joined.components() {
            match c {
                std::path::Component::ParentDir => {
                    abs.pop();
                }
                std::path::Component::Normal(n) => abs.push(n),
                _ => {}
            }
        }
        match self.resolve(&abs, false).and_then(|r| r.metadata(false)) {
            Ok(m) if m.is_dir() => {
                self.cwd = Some(abs);
                0
            }
            Ok(_) => -ENOTDIR,
            Err(e) => -e,
        }
    }

    /// `fchmodat(dirfd, path, mode, flags)`, `fchmod(fd, mode)` (`by_fd`), and with `chown`
    /// `fchownat`/`fchown`. A mode is set on the host file beneath a read-write grant, never
    /// with the set-user-ID or set-group-ID bit (Outcrop may run as root: a guest must not
    /// make a host program that runs as its owner). Ownership is never changed: the guest is
    /// uid 0 in its own view, and a change of owner succeeds without effect. The machine's
    /// own files (devices, pipes, sockets, `/dev/shm`) accept either without effect.
    pub(super) fn sys_chmod(
        &mut self,
        mem: &mut Memory,
        a: [u64; 6],
        by_fd: bool,
        chown: bool,
    ) -> i64 {
        let mode = (a[if by_fd { 1 } else { 2 }] & 0o1777) as u32;
        let set = |f: &File| -> i64 {
            if chown {
                return 0;
            }
            use std::os::unix::fs::PermissionsExt;
            match f.set_permissions(std::fs::Permissions::from_mode(mode)) {
                Ok(()) => 0,
                Err(e) => -errno(&e),
            }
        };
        if by_fd {
            let r = match self.fd(a[0]) {
                Ok(Fd::File(f)) if path_only(f) => -EBADF,
                Ok(Fd::File(f)) => set(f),
                Ok(_) => 0,
                Err(e) => -e,
            };
            if r == 0 {
                if let Some(s) = self.fd_subject(a[0]) {
                    self.notify(&s, inotify::IN_ATTRIB);
                }
            }
            return r;
        }
        const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
        let flags = a[if chown { 4 } else { 3 }];
        let p = match self.guest_path(mem, a[0] as i64, a[1]) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        if p.as_os_str().is_empty() {
            return -crate::sandbox::ENOENT;
        }
        if Device::at(&p).is_some() {
            return 0;
        }
        let opened = self.resolve_at(a[0] as i64, &p, true).and_then(|r| {
            r.open(OpenFlags {
                read: true,
                nofollow: flags & AT_SYMLINK_NOFOLLOW != 0,
                ..OpenFlags::default()
            })
        });
        let r = match opened {
            Ok(f) => set(&f),
            Err(e) => -e,
        };
        if r == 0 {
            if let Some(s) = self.path_subject(a[0] as i64, &p) {
                self.notify(&s, inotify::IN_ATTRIB);
            }
        }
        r
    }

    /// `umask(mask)`: the running process's file-creation mask (0o022 at start, inherited at
    /// `fork`), applied to `openat` and `mkdirat` modes; the old one.
    pub(super) fn sys_umask(&mut self, mask: u64) -> i64 {
        let old = self.umask;
        self.umask = (mask & 0o777) as u32;
        i64::from(old)
    }

    pub(super) fn sys_getcwd(&mut self, mem: &mut Memory, buf: u64, size: u64) -> i64 {
        const ERANGE: i64 = 34;
        let cwd = self.cwd_now();
        let mut bytes: Vec<u8> = cwd
            .components()
            .filter(|c| *c != std::path::Component::CurDir)
            .collect::<PathBuf>()
            .as_os_str()
            .as_bytes()
            .to_vec();
        bytes.push(0);
        if (bytes.len() as u64) > size {
            return -ERANGE;
        }
        match mem.write_bytes(buf, &bytes) {
            Ok(()) => bytes.len() as i64,
            Err(_) => -EFAULT,
        }
    }

    /// utimensat / futimens: set a file's access and modification times (`UTIME_NOW`,
    /// `UTIME_OMIT`), beneath a read-write grant.
    pub(super) fn sys_utimensat(
        &mut self,
        mem: &mut Memory,
        dirfd: i64,
        path: u64,
        times: u64,
        flags: u64,
    ) -> i64 {
        const UTIME_NOW: u64 = (1 << 30) - 1;
        const UTIME_OMIT: u64 = (1 << 30) - 2;
        const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
            return -EINVAL;
        }
        let now = std::time::SystemTime::UNIX_EPOCH
            + std::time::Duration::from_nanos(self.realtime_ns(0));
        let mut ts = [None, None];
        if times != 0 {
            for (i, t) in ts.iter_mut().enumerate() {
                let at = times.wrapping_add(16 * i as u64);
                let (Ok(sec), Ok(nsec)) = (mem.load_u64(at), mem.load_u64(at.wrapping_add(8)))
                else {
                    return -EFAULT;
                };
                *t = match nsec {
                    UTIME_OMIT => None,
                    UTIME_NOW => Some(now),
                    n if n < 1_000_000_000 && (sec as i64) >= 0 => Some(
                        std::time::SystemTime::UNIX_EPOCH + std::time::Duration::new(sec, n as u32),
                    ),
                    _ => return -EINVAL,
                };
            }
        } else {
            ts = [Some(now), Some(now)];
        }
        let mut set = std::fs::FileTimes::new();
        if let Some(a) = ts[0] {
            set = set.set_accessed(a);
        }
        if let Some(m) = ts[1] {
            set = set.set_modified(m);
        }
        // as Linux's fsnotify_change: both times IN_ATTRIB, one IN_ACCESS or IN_MODIFY
        let event = match ts {
            [Some(_), Some(_)] => inotify::IN_ATTRIB,
            [Some(_), None] => inotify::IN_ACCESS,
            [None, Some(_)] => inotify::IN_MODIFY,
            [None, None] => 0,
        };
        // futimens: a null path names the descriptor itself
        if path == 0 {
            return match self.fd(dirfd as u64) {
                Ok(Fd::File(f)) => match f.set_times(set) {
                    Ok(()) => {
                        self.notify_io(dirfd as u64, i64::from(event != 0), event);
                        0
                    }
                    Err(e) => -errno(&e),
                },
                Ok(Fd::Device(_) | Fd::Stdin | Fd::Stdout | Fd::Stderr | Fd::Shm(_)) => 0,
                Ok(
                    Fd::Dir(_)
                    | Fd::Pipe(_)
                    | Fd::Socket(_)
                    | Fd::Net(_)
                    | Fd::Epoll(_)
                    | Fd::Event(_)
                    | Fd::Proc(_)
                    | Fd::Pid(_)
                    | Fd::Timer(_)
                    | Fd::Signal(_)
                    | Fd::Inotify(_),
                ) => -crate::sandbox::EACCES,
                Err(e) => -e,
            };
        }
        let p = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        if Device::at(&p).is_some() {
            return 0;
        }
        let r = self.resolve_at(dirfd, &p, true).and_then(|r| {
            let f = r.open(OpenFlags {
                write: true,
                nofollow: flags & AT_SYMLINK_NOFOLLOW != 0,
                ..OpenFlags::default()
            });
            // a directory cannot be opened for writing: its times are left alone
            match f {
                Ok(f) => f.set_times(set).map_err(|e| errno(&e)),
                Err(e) => Err(e),
            }
        });
        match r {
            Ok(()) => {
                if let (Some(s), true) = (self.path_subject(dirfd, &p), event != 0) {
                    self.notify(&s, event);
                }
                0
            }
            Err(e) => -e,
        }
    }

    /// statfs / fstatfs: a fixed description of one ext4-like file system (the host's is not
    /// the guest's business): 4 KiB blocks, 16 Mi blocks, half free.
    pub(super) fn sys_statfs(
        &mut self,
        mem: &mut Memory,
        target: u64,
        buf: u64,
        by_path: bool,
    ) -> i64 {
        if by_path {
            let p = match self.guest_path(mem, AT_FDCWD, target) {
                Ok(p) => p,
                Err(e) => return -e,
            };
            if Device::at(&p).is_none() {
                if let Err(e) = self.resolve(&p, false).and_then(|r| r.metadata(false)) {
                    return -e;
                }
            }
        } else if let Err(e) = self.fd(target) {
            return -e;
        }
        let mut s = [0u8; 120];
        let words: [u64; 7] = [0xef53, 4096, 1 << 24, 1 << 23, 1 << 23, 1 << 20, 1 << 19];
        for (i, w) in words.iter().enumerate() {
            s[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
        }
        s[64..72].copy_from_slice(&255u64.to_le_bytes()); // f_namelen
        s[72..80].copy_from_slice(&4096u64.to_le_bytes()); // f_frsize
        match mem.write_bytes(buf, &s) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    /// `truncate(path, len)`: as `ftruncate` on the file the path names (beneath a grant that
    /// allows writing), its shared mappings following.
    pub(super) fn sys_truncate(&mut self, mem: &mut Memory, path: u64, len: u64) -> i64 {
        if (len as i64) < 0 {
            return -EINVAL;
        }
        let path = match self.guest_path(mem, AT_FDCWD, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        let opened = self.resolve_at(AT_FDCWD, &path, true).and_then(|r| {
            r.open(crate::sandbox::OpenFlags {
                write: true,
                ..Default::default()
            })
        });
        let f = match opened {
            Ok(f) => f,
            Err(e) => return -e,
        };
        if let Ok(m) = f.metadata() {
            if m.is_dir() {
                return -EISDIR;
            }
        }
        if let Err(e) = f.set_len(len) {
            return -errno(&e);
        }
        if let Ok(meta) = f.metadata() {
            self.follow_truncation(mem, &meta, len);
        }
        if let Some(s) = self.path_subject(AT_FDCWD, &path) {
            self.notify(&s, inotify::IN_MODIFY);
        }
        0
    }

    pub(super) fn sys_ftruncate(&mut self, mem: &mut Memory, fd: u64, len: u64) -> i64 {
        if (len as i64) < 0 {
            return -EINVAL;
        }
        let meta = match self.fd(fd) {
            Ok(Fd::File(f)) => match f.set_len(len) {
                Ok(()) => f.metadata(),
                Err(e) => return -errno(&e),
            },
            Ok(Fd::Dir(_)) => return -EISDIR,
            Ok(_) => return -EINVAL,
            Err(e) => return -e,
        };
        // the file's shared mappings end where it now ends (SIGBUS past it), as on Linux
        if let Ok(meta) = meta {
            self.follow_truncation(mem, &meta, len);
        }
        self.notify_io(fd, 1, inotify::IN_MODIFY);
        0
    }

    pub(super) fn install(&mut self, fd: Fd) -> i64 {
        let limit = (self.rlimit(RLIMIT_NOFILE) as usize).min(MAX_FDS);
        if let Some(i) = self.fds.iter().position(Option::is_none) {
            if i >= limit {
                return -EMFILE;
            }
            self.fds[i] = Some(fd);
            self.cloexec.remove(&i);
            return i as i64;
        }
        if self.fds.len() >= limit {
            return -EMFILE;
        }
        self.fds.push(Some(fd));
        (self.fds.len() - 1) as i64
    }

    pub(super) fn sys_close(&mut self, fd: u64) -> i64 {
        match self.fds.get_mut(fd as usize) {
            Some(Some(_)) => {
                self.closing(fd as usize);
                self.notify_close(fd as usize);
                self.fds[fd as usize] = None;
                self.epoll_forget(fd as usize);
                self.cloexec.remove(&(fd as usize));
                self.io_changed();
                self.fd_paths.remove(&(fd as usize));
                self.fd_hosts.remove(&(fd as usize));
                self.forget_ofds(Some(fd as usize));
                0
            }
            _ => -EBADF,
        }
    }

    pub(super) fn sys_lseek(&mut self, fd: u64, off: i64, whence: u64) -> i64 {
        if let Ok(Fd::Proc(p)) = self.fd(fd) {
            return p.seek(off, whence).unwrap_or(-EINVAL);
        }
        // SEEK_DATA, SEEK_HOLE: the host file's own data and holes
        if let (3 | 4, Ok(Fd::File(f))) = (whence, self.fd(fd)) {
            let Ok(off) = u64::try_from(off) else {
                return -6; // ENXIO, as Linux for a negative offset
            };
            let to = if whence == 3 {
                rustix::fs::SeekFrom::Data(off)
            } else {
                rustix::fs::SeekFrom::Hole(off)
            };
            return match rustix::fs::seek(&*f, to) {
                Ok(p) => p as i64,
                Err(e) => -i64::from(e.raw_os_error()),
            };
        }
        let pos = match whence {
            0 if off >= 0 => SeekFrom::Start(off as u64),
            1 => SeekFrom::Current(off),
            2 => SeekFrom::End(off),
            _ => return -EINVAL,
        };
        match self.fd(fd) {
            Ok(Fd::File(f)) => match f.seek(pos) {
                Ok(p) => p as i64,
                Err(e) => -errno(&e),
            },
            // a directory's position is its next entry (rewinddir seeks to 0)
            Ok(Fd::Dir(d)) => match pos {
                SeekFrom::Start(p) => {
                    if p == 0 {
                        d.listing = None;
                    }
                    d.pos = usize::try_from(p).unwrap_or(usize::MAX);
                    p as i64
                }
                SeekFrom::Current(0) => d.pos as i64,
                _ => -EINVAL,
            },
            Ok(Fd::Device(_)) => 0,
            Ok(_) => -ESPIPE,
            Err(e) => -e,
        }
    }

    pub(super) fn write_stat(mem: &mut Memory, buf: u64, m: &impl StatFields) -> i64 {
        let mut s = [0u8; 128];
        let mut put = |off: usize, v: &[u8]| s[off..off + v.len()].copy_from_slice(v);
        let [dev, ino, mode, nlink, uid, gid, rdev, size, blksize, blocks, at, atn, mt, mtn, ct, ctn] =
            m.fields();
        put(0, &dev.to_le_bytes());
        put(8, &ino.to_le_bytes());
        put(16, &(mode as u32).to_le_bytes());
        put(20, &(nlink as u32).to_le_bytes());
        put(24, &(uid as u32).to_le_bytes());
        put(28, &(gid as u32).to_le_bytes());
        put(32, &rdev.to_le_bytes());
        put(48, &size.to_le_bytes());
        put(56, &(blksize as i32).to_le_bytes());
        put(64, &blocks.to_le_bytes());
        for (off, v) in [
            (72, at),
            (80, atn),
            (88, mt),
            (96, mtn),
            (104, ct),
            (112, ctn),
        ] {
            put(off, &v.to_le_bytes());
        }
        match mem.write_bytes(buf, &s) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    /// The stat of one of the machine's devices (a character device, mode 0666).
    pub(super) fn write_device_stat(mem: &mut Memory, buf: u64, d: Device) -> i64 {
        let (major, minor) = d.rdev();
        let mut s = [0u8; 128];
        s[16..20].copy_from_slice(&0o020666u32.to_le_bytes());
        s[20..24].copy_from_slice(&1u32.to_le_bytes()); // nlink
        s[32..40].copy_from_slice(&((major << 8) | minor).to_le_bytes()); // rdev
        s[56..60].copy_from_slice(&4096i32.to_le_bytes()); // blksize
        match mem.write_bytes(buf, &s) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    pub(super) fn write_fixed_stat(mem: &mut Memory, buf: u64, mode: u32) -> i64 {
        let mut s = [0u8; 128];
        s[16..20].copy_from_slice(&mode.to_le_bytes());
        s[20..24].copy_from_slice(&1u32.to_le_bytes()); // nlink
        s[56..60].copy_from_slice(&4096i32.to_le_bytes()); // blksize
        match mem.write_bytes(buf, &s) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    pub(super) fn sys_fstat(&mut self, mem: &mut Memory, fd: u64, buf: u64) -> i64 {
        let meta = match self.fd(fd) {
            Err(e) => return -e,
            Ok(Fd::File(f)) => f.metadata(),
            Ok(Fd::Dir(d)) => {
                return match d.grant.metadata() {
                    Ok(m) => Self::write_stat(mem, buf, &m),
                    Err(e) => -e,
                }
            }
            Ok(Fd::Device(d)) => {
                let d = *d;
                return Self::write_device_stat(mem, buf, d);
            }
            Ok(Fd::Pipe(_)) => return Self::write_fixed_stat(mem, buf, 0o010600),
            Ok(Fd::Socket(_) | Fd::Net(_)) => return Self::write_fixed_stat(mem, buf, 0o140777),
            // an anonymous inode, as Linux's
            Ok(Fd::Epoll(_) | Fd::Event(_) | Fd::Inotify(_)) => {
                return Self::write_fixed_stat(mem, buf, 0o600)
            }
            // a proc file: regular, read-only, size 0 (as Linux's); a directory r-x
            Ok(Fd::Proc(p)) if p.is_dir() => return Self::write_fixed_stat(mem, buf, 0o40555),
            Ok(Fd::Proc(_)) => return Self::write_fixed_stat(mem, buf, 0o100444),
            // deterministic runs never see the host's stdio (its type and inode change glibc's
            // buffering, and so the instruction stream)
            Ok(_) => match self.config.stdio_mode.or(self
                .config
                .deterministic
                .then_some(DETERMINISTIC_STDIO_MODE))
            {
                Some(mode) => return Self::write_fixed_stat(mem, buf, mode),
                // the host's view of its own stdio, as qemu-user reports it
                None => std::fs::metadata(format!("/proc/self/fd/{fd}")),
            },
        };
        match meta {
            Ok(m) => Self::write_stat(mem, buf, &m),
            Err(e) => -errno(&e),
        }
    }

    pub(super) fn sys_newfstatat(
        &mut self,
        mem: &mut Memory,
        dirfd: i64,
        path: u64,
        buf: u64,
        flags: u64,
    ) -> i64 {
        const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
        // as Linux's vfs_fstatat: AT_NO_AUTOMOUNT and AT_STATX_* are the only others
        if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | 0x800 | 0x6000) != 0 {
            return -EINVAL;
        }
        if flags & AT_EMPTY_PATH != 0 && matches!(mem.load_u8(path), Ok(0)) {
            return self.sys_fstat(mem, dirfd as u64, buf);
        }
        let path = match self.guest_path(mem, dirfd, path) {
            Ok(p) if p.as_os_str().is_empty() => return -ENOENT, // without AT_EMPTY_PATH
            Ok(p) => p,
            Err(e) => return -e,
        };
        if let Some(d) = Device::at(&path) {
            return Self::write_device_stat(mem, buf, d);
        }
        let nofollow = flags & AT_SYMLINK_NOFOLLOW != 0;
        if path.is_absolute() {
            if let Some(r) = self.proc_stat(mem, path.as_os_str().as_bytes(), nofollow, buf) {
                return r;
            }
        }
        let meta = self
            .resolve_at(dirfd, &path, false)
            .and_then(|r| r.metadata(nofollow));
        match meta {
            Ok(m) => Self::write_stat(mem, buf, &m),
            Err(e) => -e,
        }
    }

    /// `statx(dirfd, path, flags, mask, buf)`: what `newfstatat` answers (every path,
    /// descriptor, device and generated file it knows), in `struct statx`'s layout with
    /// `STATX_BASIC_STATS` (the birth time and mount id are not known: their bits stay
    /// clear, as a file system without them answers).
    pub(super) fn sys_statx(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
        const AT_NO_AUTOMOUNT: u64 = 0x800;
        const AT_STATX_SYNC_TYPE: u64 = 0x6000;
        const STATX_RESERVED: u64 = 0x8000_0000;
        const STATX_BASIC_STATS: u32 = 0x7ff;
        let [dirfd, path, flags, mask, buf, _] = a;
        let known = AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE;
        if flags & !known != 0
            || flags & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE
            || mask & STATX_RESERVED != 0
        {
            return -EINVAL;
        }
        if mem.check_range(buf, 256, crate::memory::perm::W).is_err() {
            return -EFAULT;
        }
        // newfstatat's struct stat, written where the statx goes, then rearranged
        let r = self.sys_newfstatat(
            mem,
            dirfd as i32 as i64,
            path,
            buf,
            flags & !AT_STATX_SYNC_TYPE,
        );
        if r < 0 {
            return r;
        }
        let mut st = [0u8; 128];
        if mem.read_bytes(buf, &mut st).is_err() {
            return -EFAULT;
        }
        let u32_at = |o: usize| u32::from_le_bytes([st[o], st[o + 1], st[o + 2], st[o + 3]]);
        let u64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&st[o..o + 8]);
            u64::from_le_bytes(b)
        };
        // glibc's gnu_dev_major/minor
        let split = |d: u64| {
            let major = ((d >> 8) & 0xfff) | ((d >> 32) & !0xfff);
            let minor = (d & 0xff) | ((d >> 12) & !0xff);
            (major as u32, minor as u32)
        };
        let mut x = [0u8; 256];
        let mut put = |off: usize, v: &[u8]| x[off..off + v.len()].copy_from_slice(v);
        put(0, &STATX_BASIC_STATS.to_le_bytes());
        put(4, &u32_at(56).to_le_bytes()); // blksize
        put(16, &u32_at(20).to_le_bytes()); // nlink
        put(20, &u32_at(24).to_le_bytes()); // uid
        put(24, &u32_at(28).to_le_bytes()); // gid
        put(28, &(u32_at(16) as u16).to_le_bytes()); // mode
        put(32, &u64_at(8).to_le_bytes()); // ino
        put(40, &u64_at(48).to_le_bytes()); // size
        put(48, &u64_at(64).to_le_bytes()); // blocks
                                            // atime, ctime, mtime: { i64 sec, u32 nsec, i32 }
        for (to, from) in [(64, 72), (96, 104), (112, 88)] {
            put(to, &u64_at(from).to_le_bytes());
            put(to + 8, &(u64_at(from + 8) as u32).to_le_bytes());
        }
        let (rmaj, rmin) = split(u64_at(32));
        let (dmaj, dmin) = split(u64_at(0));
        for (off, v) in [(128, rmaj), (132, rmin), (136, dmaj), (140, dmin)] {
            put(off, &v.to_le_bytes());
        }
        match mem.write_bytes(buf, &x) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    pub(super) fn sys_faccessat(&mut self, mem: &mut Memory, dirfd: i64, path: u64) -> i64 {
        let path = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        if self.is_own_exe(&path) {
            return 0; // the running program (busybox checks it before running an applet)
        }
        match self
            .resolve_at(dirfd, &path, false)
            .and_then(|r| r.metadata(false))
        {
            Ok(_) => 0,
            Err(e) => -e,
        }
    }

    pub(super) fn sys_unlinkat(
        &mut self,
        mem: &mut Memory,
        dirfd: i64,
        path: u64,
        flags: u64,
    ) -> i64 {
        const AT_REMOVEDIR: u64 = 0x200;
        if flags & !AT_REMOVEDIR != 0 {
            return -EINVAL;
        }
        let path = match self.guest_path(mem, dirfd, path) {
            Ok(p) if p.as_os_str().is_empty() => return -ENOENT, // as Linux: no empty names
            Ok(p) => p,
            Err(e) => return -e,
        };
        let before = self.path_subject(dirfd, &path);
        match self
            .resolve_at(dirfd, &path, true)
            .and_then(|r| r.remove(flags & AT_REMOVEDIR != 0))
        {
            Ok(()) => {
                if let Some(s) = before {
                    let entry = s.parent.clone();
                    self.notify_unlinked(&s, entry.as_ref().map(|(k, n)| (*k, n.as_slice())));
                }
                0
            }
            Err(e) => -e,
        }
    }

    pub(super) fn sys_readlinkat(
        &mut self,
        mem: &mut Memory,
        dirfd: i64,
        path: u64,
        buf: u64,
        size: u64,
    ) -> i64 {
        let p = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        if size == 0 || size > i32::MAX as u64 {
            return -EINVAL;
        }
        let target = if p.as_os_str() == "/proc/self/exe" {
            // the program's own path
            self.exe_path.as_os_str().as_bytes().to_vec()
        } else if let Some(link) = self.proc_fd_link(p.as_os_str().as_bytes()) {
            match link {
                Ok(t) => t,
                Err(e) => return -e,
            }
        } else {
            match self
                .resolve_at(dirfd, &p, false)
                .and_then(|r| r.read_link())
            {
                Ok(t) => t.as_os_str().as_bytes().to_vec(),
                Err(e) => return -e,
            }
        };
        let n = target.len().min(size as usize);
        match mem.write_bytes(buf, &target[..n]) {
            Ok(()) => n as i64,
            Err(_) => -EFAULT,
        }
    }

    pub(super) fn sys_mkdirat(
        &mut self,
        mem: &mut Memory,
        dirfd: i64,
        path: u64,
        mode: u64,
    ) -> i64 {
        let p = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        let mode = (mode & 0o1777) as u32 & !self.umask;
        match self.resolve_at(dirfd, &p, true).and_then(|r| r.mkdir(mode)) {
            Ok(()) => {
                self.notify_created(dirfd, &p);
                0
            }
            Err(e) => -e,
        }
    }

    pub(super) fn sys_renameat2(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        const RENAME_NOREPLACE: u64 = 1;
        const RENAME_EXCHANGE: u64 = 2;
        let flags = a[4];
        // RENAME_WHITEOUT (an overlay file system's) is not supported; the other two
        // together are EINVAL, as on Linux
        if flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE) != 0
            || flags == RENAME_NOREPLACE | RENAME_EXCHANGE
        {
            return -EINVAL;
        }
        if flags & RENAME_EXCHANGE != 0 {
            return match self.with_two_paths(mem, a, |f, t| f.exchange(t)) {
                Ok(()) => 0,
                Err(e) => -e,
            };
        }
        let mut moved = None;
        let watching = self.notify.active();
        let r = self.with_two_paths(mem, a, |f, t| {
            if flags & RENAME_NOREPLACE != 0 && t.metadata(true).is_ok() {
                return Err(EEXIST);
            }
            let (from, to) = (f.host_path(), t.host_path());
            let before = watching.then(|| (inotify::Subject::at(&from), inotify::Subject::at(&to)));
            f.rename(t)?;
            moved = before.map(|(s, over)| (s, over, inotify::Subject::parent_of(&to)));
            Ok(())
        });
        match r {
            Ok(()) => {
                if let Some((Some(s), over, to)) = moved {
                    self.notify_moved(&s, over.as_ref(), to);
                }
                self.follow_renamed_cwd(mem, a);
                0
            }
            Err(e) => -e,
        }
    }

    /// After a rename of `a[1]` to `a[3]` (from the working directory or absolute): a
    /// working directory at or beneath the old name is now beneath the new one, in every
    /// process, as a Linux process's working directory is the directory, not its name.
    fn follow_renamed_cwd(&mut self, mem: &mut Memory, a: [u64; 6]) {
        let lexical = |p: PathBuf| -> PathBuf {
            let mut out = PathBuf::new();
            for c in p.components() {
                match c {
                    std::path::Component::CurDir => {}
                    std::path::Component::ParentDir => {
                        out.pop();
                    }
                    c => out.push(c),
                }
            }
            out
        };
        let (Ok(from), Ok(to)) = (
            self.guest_path(mem, a[0] as i64, a[1]),
            self.guest_path(mem, a[2] as i64, a[3]),
        ) else {
            return;
        };
        let here = self.cwd_now();
        let whole = |p: PathBuf, dirfd: u64| {
            (p.is_absolute() || dirfd as i64 == AT_FDCWD).then(|| lexical(here.join(p)))
        };
        let (Some(from), Some(to)) = (whole(from, a[0]), whole(to, a[2])) else {
            return;
        };
        let start = self.config.sandbox.host_path(std::path::Path::new("."));
        let start = std::path::absolute(&start).unwrap_or(start);
        let moved = |cwd: &Option<PathBuf>| -> Option<PathBuf> {
            let c = lexical(cwd.clone().unwrap_or_else(|| start.clone()));
            c.strip_prefix(&from).ok().map(|rest| to.join(rest))
        };
        if let Some(c) = moved(&self.cwd) {
            self.cwd = Some(c);
        }
        for p in &mut self.procs.list {
            if let Some(st) = p.state.as_mut() {
                if let Some(c) = moved(&st.cwd) {
                    st.cwd = Some(c);
                }
            }
        }
    }

    /// Resolves `(olddirfd, oldpath, newdirfd, newpath)` (`a[0..4]`) both beneath writable
    /// grants and runs `op` on them (rename, link). `resolve_at` borrows the kernel, so each
    /// is checked (naming a refusal) first, then both are taken from shared borrows.
    pub(super) fn with_two_paths(
        &mut self,
        mem: &mut Memory,
        a: [u64; 6],
        op: impl FnOnce(&crate::sandbox::Resolved<'_>, &crate::sandbox::Resolved<'_>) -> Result<(), i64>,
    ) -> Result<(), i64> {
        let (olddir, newdir) = (a[0] as i64, a[2] as i64);
        let from = self.guest_path(mem, olddir, a[1])?;
        let to = self.guest_path(mem, newdir, a[3])?;
        self.resolve_at(olddir, &from, true).map(drop)?;
        self.resolve_at(newdir, &to, true).map(drop)?;
        let this = &*self;
        let f = this.resolve_at_shared(olddir, &from)?;
        let t = this.resolve_at_shared(newdir, &to)?;
        op(&f, &t)
    }

    /// [`Kernel::resolve_at`] for writing, without the denial hook (the caller checked).
    pub(super) fn resolve_at_shared(
        &self,
        dirfd: i64,
        path: &std::path::Path,
    ) -> Result<crate::sandbox::Resolved<'_>, i64> {
        if path.is_absolute() || dirfd == AT_FDCWD {
            return self.config.sandbox.resolve(&self.at_cwd(path), true);
        }
        let fd = usize::try_from(dirfd).map_err(|_| EBADF)?;
        match self.fds.get(fd).and_then(Option::as_ref) {
            Some(Fd::Dir(d)) => d.grant.resolve(path, true),
            Some(_) => Err(ENOTDIR),
            None => Err(EBADF),
        }
    }

    /// getdents64: the directory's entries from its position, as `linux_dirent64` records
    /// (inode, next position, record length, type, name), as many as fit in `count` bytes.
    pub(super) fn sys_getdents64(
        &mut self,
        mem: &mut Memory,
        fd: u64,
        buf: u64,
        count: u64,
    ) -> i64 {
        let count = count.min(MAX_IO as u64) as usize;
        let d = match self.fd(fd) {
            Ok(Fd::Dir(d)) => d,
            Ok(Fd::Proc(p)) => {
                let p = p.clone();
                let list = |pid, file| self.entries(pid, file).unwrap_or(Ok(Vec::new()));
                return match p.list(count, list) {
                    None => -ENOTDIR,
                    Some(Err(e)) => -e,
                    Some(Ok(out)) => match mem.write_bytes(buf, &out) {
                        Ok(()) => out.len() as i64,
                        Err(_) => -EFAULT,
                    },
                };
            }
            Ok(_) => return -ENOTDIR,
            Err(e) => return -e,
        };
        if d.listing.is_none() {
            match d.grant.entries(MAX_DIR_ENTRIES) {
                Ok(l) => d.listing = Some(l),
                Err(ENOMEM) => {
                    self.warn_once(
                        61 | 1 << 40,
                        &format!(
                            "getdents64: a directory has more than {MAX_DIR_ENTRIES} entries or {} MiB of names; the guest's listing fails with ENOMEM",
                            crate::sandbox::MAX_DIR_BYTES >> 20
                        ),
                    );
                    return -ENOMEM;
                }
                Err(e) => return -e,
            }
        }
        let listing = d.listing.as_deref().unwrap_or_default();
        let out = match dirents(listing, &mut d.pos, count) {
            Ok(out) => out,
            Err(e) => return -e,
        };
        match mem.write_bytes(buf, &out) {
            Ok(()) => out.len() as i64,
            Err(_) => -EFAULT,
        }
    }
}

/// `getdents64`'s records for `listing` (inode, type, name) from entry `*pos`, as many as fit
/// in `count` bytes; `*pos` moves past them. `EINVAL` if not even one fits.
pub(super) fn dirents(
    listing: &[(u64, u8, Vec<u8>)],
    pos: &mut usize,
    count: usize,
) -> Result<Vec<u8>, i64> {
    let mut out = Vec::new();
    let mut at = *pos;
    while let Some((ino, kind, name)) = listing.get(at) {
        let reclen = (19 + name.len() + 1).next_multiple_of(8);
        if out.len() + reclen > count {
            break;
        }
        out.extend_from_slice(&ino.to_le_bytes());
        out.extend_from_slice(&((at + 1) as i64).to_le_bytes());
        out.extend_from_slice(&(reclen as u16).to_le_bytes());
        out.push(*kind);
        out.extend_from_slice(name);
        out.resize(out.len() + reclen - 19 - name.len(), 0);
        at += 1;
    }
    if out.is_empty() && at < listing.len() {
        return Err(EINVAL); // the buffer holds not even one entry
    }
    *pos = at;
    Ok(out)
}

/// The `stat` fields, from std's or cap-std's metadata.
pub(super) trait StatFields {
    fn fields(&self) -> [u64; 16];
}

macro_rules! stat_fields {
    ($t:ty, $ext:path) => {
        impl StatFields for $t {
            fn fields(&self) -> [u64; 16] {
                use $ext as _;
                [
                    self.dev(),
                    self.ino(),
                    u64::from(self.mode()),
                    self.nlink(),
                    u64::from(self.uid()),
                    u64::from(self.gid()),
                    self.rdev(),
                    self.size(),
                    self.blksize(),
                    self.blocks(),
                    self.atime() as u64,
                    self.atime_nsec() as u64,
                    self.mtime() as u64,
                    self.mtime_nsec() as u64,
                    self.ctime() as u64,
                    self.ctime_nsec() as u64,
                ]
            }
        }
    };
}
stat_fields!(std::fs::Metadata, std::os::unix::fs::MetadataExt);
stat_fields!(cap_std::fs::Metadata, cap_std::fs::MetadataExt);

/// Whether host file `f` was opened `O_PATH` (it names the file; its contents and
/// attributes are not reached through it: `EBADF`).
pub(super) fn path_only(f: &File) -> bool {
    rustix::fs::fcntl_getfl(f).is_ok_and(|fl| fl.contains(rustix::fs::OFlags::PATH))
}
