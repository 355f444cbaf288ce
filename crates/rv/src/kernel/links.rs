//! Links, node creation, space allocation and whole-file locks (docs/machine.md, "System
//! calls"): `symlinkat` and `linkat` beneath writable grants (a link never leads out of its
//! grant: `sandbox::Resolved::symlink`), `mknodat` of regular files, `fallocate`, and
//! `flock` kept in the machine's own table as record locks are (the host's files are never
//! locked).

use super::*;

const EOPNOTSUPP: i64 = 95;
const EWOULDBLOCK: i64 = EAGAIN;

/// One `flock` lock: an open file description's shared or exclusive lock on a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FileLock {
    dev: u64,
    ino: u64,
    /// The open file description ([`Kernel::ofd_of`]) holding it.
    owner: u64,
    exclusive: bool,
}

impl Kernel {
    /// The calls this module answers (`None`: not one of them).
    pub(super) fn link_call(&mut self, mem: &mut Memory, nr: u64, a: [u64; 6]) -> Option<i64> {
        Some(match nr {
            36 => self.sys_symlinkat(mem, a[0], a[1] as i64, a[2]),
            37 => self.sys_linkat(mem, a),
            33 => self.sys_mknodat(mem, a[0] as i64, a[1], a[2]),
            47 => self.sys_fallocate(a[0], a[1], a[2] as i64, a[3] as i64),
            32 => self.sys_flock(a[0], a[1]),
            _ => return None,
        })
    }

    fn sys_symlinkat(&mut self, mem: &mut Memory, target: u64, dirfd: i64, path: u64) -> i64 {
        let Ok(t) = mem.read_cstr(target, PATH_MAX) else {
            return -EFAULT;
        };
        let p = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        let t = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(&t));
        match self.resolve_at(dirfd, &p, true).and_then(|r| r.symlink(&t)) {
            Ok(()) => {
                self.notify_created(dirfd, &p);
                0
            }
            Err(e) => -e,
        }
    }

    fn sys_linkat(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        const AT_SYMLINK_FOLLOW: u64 = 0x400;
        if a[4] & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
            return -EINVAL;
        }
        let mut made = None;
        let r = self.with_two_paths(mem, a, |f, t| {
            if f.metadata(true)?.is_dir() {
                return Err(EPERM);
            }
            f.hard_link(t)?;
            made = Some(t.host_path());
            Ok(())
        });
        match r {
            Ok(()) => {
                // the link count's IN_ATTRIB, then IN_CREATE in the new name's directory
                if let Some(s) = made
                    .filter(|_| self.notify.active())
                    .and_then(|h| inotify::Subject::at(&h))
                {
                    self.notify_self(&s, inotify::IN_ATTRIB);
                    if let Some((dir, name)) = &s.parent {
                        self.notify_entry(*dir, inotify::IN_CREATE, 0, name);
                    }
                }
                0
            }
            Err(e) => -e,
        }
    }

    /// `mknodat`: a regular file (what `mknod(path, S_IFREG | mode, 0)` makes) or a named
    /// pipe (`mkfifo`: a host FIFO beneath the grant, opened as the machine's own pipe);
    /// device nodes and sockets are refused with `EPERM` (a guest never makes a host device).
    fn sys_mknodat(&mut self, mem: &mut Memory, dirfd: i64, path: u64, mode: u64) -> i64 {
        const S_IFMT: u64 = 0o170000;
        const S_IFREG: u64 = 0o100000;
        const S_IFIFO: u64 = 0o010000;
        let kind = mode & S_IFMT;
        if kind != 0 && kind != S_IFREG && kind != S_IFIFO {
            return -EPERM;
        }
        let p = match self.guest_path(mem, dirfd, path) {
            Ok(p) => p,
            Err(e) => return -e,
        };
        let umask = self.umask;
        if kind == S_IFIFO {
            let mode = (mode & 0o777) as u32 & !umask;
            return match self
                .resolve_at(dirfd, &p, true)
                .and_then(|r| r.mknod(false, mode))
            {
                Ok(()) => {
                    self.notify_created(dirfd, &p);
                    0
                }
                Err(e) => -e,
            };
        }
        let r = self.resolve_at(dirfd, &p, true).and_then(|r| {
            r.open(OpenFlags {
                read: false,
                write: true,
                append: false,
                truncate: false,
                create: true,
                exclusive: true,
                nofollow: true,
                nonblock: true,
                path_only: false,
                mode: (mode & 0o1777) as u32 & !umask,
                created: true,
            })
        });
        match r {
            Ok(_) => {
                self.notify_created(dirfd, &p);
                0
            }
            Err(e) => -e,
        }
    }

    /// `fallocate`: mode 0 extends the file to `off + len` (zeros); `FALLOC_FL_KEEP_SIZE`
    /// alone changes nothing visible; punching holes and the other modes are `EOPNOTSUPP`.
    fn sys_fallocate(&mut self, fd: u64, mode: u64, off: i64, len: i64) -> i64 {
        const FALLOC_FL_KEEP_SIZE: u64 = 1;
        if off < 0 || len <= 0 {
            return -EINVAL;
        }
        let Some(end) = off.checked_add(len) else {
            return -EFBIG;
        };
        let fsize = self.rlimit(RLIMIT_FSIZE);
        let f = match self.fd(fd) {
            Ok(Fd::File(f)) => f,
            Ok(Fd::Pipe(_) | Fd::Socket(_) | Fd::Net(_)) => return -ESPIPE,
            Ok(Fd::Dir(_)) => return -EISDIR,
            Ok(_) => return -ENODEV,
            Err(e) => return -e,
        };
        let writable = rustix::fs::fcntl_getfl(&*f)
            .is_ok_and(|fl| fl.intersects(rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::RDWR));
        if !writable {
            return -EBADF;
        }
        if mode & !FALLOC_FL_KEEP_SIZE != 0 {
            return -EOPNOTSUPP;
        }
        let meta = match f.metadata() {
            Ok(m) => m,
            Err(e) => return -errno(&e),
        };
        if mode == 0 && (end as u64) > meta.len() {
            if end as u64 > fsize {
                return -EFBIG;
            }
            if let Err(e) = f.set_len(end as u64) {
                return -errno(&e);
            }
        }
        0
    }

    /// The open file description descriptor `fd` shares (`None`: not open), numbered on
    /// first asking.
    pub(super) fn ofd_of(&mut self, fd: usize) -> Option<u64> {
        self.fds.get(fd)?.as_ref()?;
        if let Some(&o) = self.ofds.get(&fd) {
            return Some(o);
        }
        self.last_ofd += 1;
        self.ofds.insert(fd, self.last_ofd);
        Some(self.last_ofd)
    }

    /// Descriptor `fd` (or every one of the process, `None`) goes: an open file description
    /// no descriptor of any process shares any more loses its `flock` locks, as Linux's last
    /// close releases them.
    pub(super) fn forget_ofds(&mut self, fd: Option<usize>) {
        let gone: Vec<u64> = match fd {
            Some(fd) => self.ofds.remove(&fd).into_iter().collect(),
            None => self.ofds.drain().map(|(_, o)| o).collect(),
        };
        if self.flocks.is_empty() {
            return;
        }
        for o in gone {
            let held = self.ofds.values().any(|&x| x == o)
                || self.procs.list.iter().any(|p| {
                    p.state
                        .as_ref()
                        .is_some_and(|s| s.ofds.values().any(|&x| x == o))
                });
            if !held && self.flocks.iter().any(|l| l.owner == o) {
                self.flocks.retain(|l| l.owner != o);
                self.io_changed();
            }
        }
    }

    /// `flock(fd, op)`: LOCK_SH 1, LOCK_EX 2, LOCK_NB 4, LOCK_UN 8. The lock belongs to the
    /// open file description, as on Linux: descriptors from one `open` (`dup`, `fork`) share
    /// it, two `open`s of a file conflict even in one process, and it goes with the last
    /// descriptor of its description.
    fn sys_flock(&mut self, fd: u64, op: u64) -> i64 {
        use std::os::unix::fs::MetadataExt;
        let Some(owner) = self.ofd_of(fd as usize) else {
            return -EBADF;
        };
        let meta = match self.fd(fd) {
            Ok(Fd::File(f)) => f.metadata(),
            Ok(Fd::Dir(d)) => match d.grant.metadata() {
                Ok(m) => {
                    use cap_std::fs::MetadataExt as _;
                    return self.flock_key(m.dev(), m.ino(), owner, op);
                }
                Err(e) => return -e,
            },
            Ok(_) => return -EINVAL,
            Err(e) => return -e,
        };
        match meta {
            Ok(m) => self.flock_key(m.dev(), m.ino(), owner, op),
            Err(e) => -errno(&e),
        }
    }

    fn flock_key(&mut self, dev: u64, ino: u64, owner: u64, op: u64) -> i64 {
        const LOCK_SH: u64 = 1;
        const LOCK_EX: u64 = 2;
        const LOCK_NB: u64 = 4;
        const LOCK_UN: u64 = 8;
        let exclusive = match op & !LOCK_NB {
            LOCK_SH => false,
            LOCK_EX => true,
            LOCK_UN => {
                self.flocks
                    .retain(|l| (l.dev, l.ino, l.owner) != (dev, ino, owner));
                self.io_changed();
                return 0;
            }
            _ => return -EINVAL,
        };
        let busy = self.flocks.iter().any(|l| {
            (l.dev, l.ino) == (dev, ino) && l.owner != owner && (exclusive || l.exclusive)
        });
        if busy {
            return if op & LOCK_NB != 0 {
                -EWOULDBLOCK
            } else {
                WOULD_BLOCK
            };
        }
        if self.flocks.len() >= locks::MAX_LOCKS {
            return -ENOLCK;
        }
        self.flocks
            .retain(|l| (l.dev, l.ino, l.owner) != (dev, ino, owner));
        self.flocks.push(FileLock {
            dev,
            ino,
            owner,
            exclusive,
        });
        self.io_changed(); // a shared lock turned exclusive or back: waiters look again
        0
    }

    /// `fcntl(F_SETLEASE)` (`set`) and `F_GETLEASE`. A read lease needs a descriptor that
    /// cannot write and no writer of the file in the guest; a write lease needs this to be
    /// the file's only descriptor (`EAGAIN` otherwise, as Linux). Leases are kept per process
    /// and file; another open does not break one (no `SIGIO` is sent).
    pub(super) fn sys_lease(&mut self, fd: u64, set: Option<u64>) -> i64 {
        use std::os::unix::fs::MetadataExt;
        const F_RDLCK: u64 = 0;
        const F_WRLCK: u64 = 1;
        const F_UNLCK: u64 = 2;
        let (key, writable) = match self.fd(fd) {
            Ok(Fd::File(f)) => match f.metadata() {
                Ok(m) if m.is_file() => (
                    (m.dev(), m.ino()),
                    rustix::fs::fcntl_getfl(&*f).is_ok_and(|fl| {
                        fl.intersects(rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::RDWR)
                    }),
                ),
                Ok(_) => return -EINVAL,
                Err(e) => return -errno(&e),
            },
            Ok(_) => return -EINVAL,
            Err(e) => return -e,
        };
        let pid = self.threads.pid;
        let held = self
            .leases
            .iter()
            .position(|&(d, i, p, _)| (d, i, p) == (key.0, key.1, pid));
        let Some(kind) = set else {
            return held.map_or(F_UNLCK, |i| self.leases[i].3) as i64;
        };
        let (opens, writers) = self.opens_of(key.0, key.1);
        match kind {
            F_RDLCK if writable || writers > 0 => return -EAGAIN,
            F_WRLCK if opens > 1 => return -EAGAIN,
            F_RDLCK | F_WRLCK => {
                // another process's lease on the file conflicts
                let other = self.leases.iter().any(|&(d, i, p, t)| {
                    (d, i) == key && p != pid && (t == F_WRLCK || kind == F_WRLCK)
                });
                if other {
                    return -EAGAIN;
                }
            }
            F_UNLCK => {}
            _ => return -EINVAL,
        }
        if let Some(i) = held {
            self.leases.swap_remove(i);
        }
        if kind != F_UNLCK {
            if self.leases.len() >= locks::MAX_LOCKS {
                return -ENOLCK;
            }
            self.leases.push((key.0, key.1, pid, kind));
        }
        0
    }

    /// A process ended: its leases go (its `flock` locks go with its descriptors).
    pub(super) fn drop_flocks(&mut self, pid: u32) {
        self.leases.retain(|l| l.2 != pid);
    }
}

const EFBIG: i64 = 27;
const ENODEV: i64 = 19;
const ENOLCK: i64 = 37;
const RLIMIT_FSIZE: usize = 1;
