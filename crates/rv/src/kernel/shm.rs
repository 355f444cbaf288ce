//! Shared memory between the guest's processes (docs/machine.md, "Processes": shared memory): System V
//! segments (`shmget`, `shmat`, `shmdt`, `shmctl`), the files of `/dev/shm` (what `shm_open`
//! and `sem_open` make) and `memfd_create`. Each is one of the machine's own
//! [`SharedObject`]s; nothing reaches the host's IPC namespace or its `/dev/shm`. (Anonymous
//! `MAP_SHARED` memory is an object no one names: [`Kernel::sys_mmap`].)
//!
//! Every size is bounded: all segments and files together hold at most the memory limit
//! (as a tmpfs is sized), at most [`MAX_SHM_OBJECTS`] segments and as many names.

use super::{Fd, Kernel, EACCES, EBADF, EEXIST, EFAULT, EINVAL, ENOMEM, ENOTDIR, MAX_IO};
use crate::memory::{perm, MapError, Memory, SharedObject, PAGE_SIZE};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Most System V segments, and most `/dev/shm` names, at once.
pub const MAX_SHM_OBJECTS: usize = 4096;
use super::ipc::{ENOENT, ENOSPC, IPC_CREAT, IPC_EXCL, IPC_RMID, IPC_SET, IPC_STAT};
const EXDEV: i64 = 18;
const SHM_LOCK: u64 = 11;
const SHM_UNLOCK: u64 = 12;
const IPC_INFO: u64 = 3;
const SHM_STAT: u64 = 13;
const SHM_INFO: u64 = 14;
const SHM_STAT_ANY: u64 = 15;
/// `shm_perm.mode` bits: removed (goes with its last attach), locked.
const SHM_DEST: u32 = 0o1000;
const SHM_LOCKED: u32 = 0o2000;
const SHM_RDONLY: u64 = 0o10000;
const SHM_RND: u64 = 0o20000;
const SHM_REMAP: u64 = 0o40000;
const SHM_EXEC: u64 = 0o100000;
/// The device number `/dev/shm` files report (a tmpfs's anonymous device).
const SHM_DEV: u64 = 0x19;

/// A shared object with a size the guest may change, counted against the machine's budget
/// for named shared memory.
pub(crate) struct ShmNode {
    object: Arc<SharedObject>,
    ino: u64,
    mode: std::sync::atomic::AtomicU32,
    budget: Arc<AtomicU64>,
    /// `F_ADD_SEALS`' seals (`F_SEAL_SEAL` from the start unless `MFD_ALLOW_SEALING`).
    seals: std::sync::atomic::AtomicU32,
}

const F_SEAL_SEAL: u32 = 1;
const F_SEAL_SHRINK: u32 = 2;
const F_SEAL_GROW: u32 = 4;
const F_SEAL_WRITE: u32 = 8;
const F_SEAL_FUTURE_WRITE: u32 = 0x10;
const EPERM: i64 = 1;

impl Drop for ShmNode {
    fn drop(&mut self) {
        self.budget.fetch_sub(self.object.len(), Ordering::Relaxed);
    }
}

impl ShmNode {
    /// Sets the length to `len` if the budget (`limit` bytes for all nodes) allows:
    /// `ENOSPC` if not. The running process's frames are given back around it.
    fn resize(&self, mem: &mut Memory, len: u64, limit: u64) -> Result<(), i64> {
        let old = self.object.len();
        if len > old {
            let used = self.budget.load(Ordering::Relaxed);
            if used.saturating_add(len - old) > limit {
                return Err(ENOSPC);
            }
            self.budget.fetch_add(len - old, Ordering::Relaxed);
        } else {
            self.budget.fetch_sub(old - len, Ordering::Relaxed);
        }
        mem.release_shared();
        self.object.resize(len);
        mem.take_shared();
        Ok(())
    }

    /// `struct stat` fields of a regular file.
    fn stat(&self, links: u64) -> [u64; 16] {
        let len = self.object.len();
        let mode = 0o100000 | u64::from(self.mode.load(Ordering::Relaxed));
        let blocks = len.div_ceil(512);
        [
            SHM_DEV, self.ino, mode, links, 0, 0, 0, len, PAGE_SIZE, blocks, 0, 0, 0, 0, 0, 0,
        ]
    }
}

/// An open `/dev/shm` file or memfd: its node and the position its duplicates share.
#[derive(Clone)]
pub(crate) struct ShmFd {
    node: Arc<ShmNode>,
    pos: Arc<AtomicU64>,
    read: bool,
    write: bool,
    append: bool,
}

impl ShmFd {
    /// `fcntl(F_GETFL)`'s access mode and `O_APPEND`.
    pub(super) fn flags(&self) -> i64 {
        let acc = match (self.read, self.write) {
            (true, true) => 2,
            (false, true) => 1,
            _ => 0,
        };
        acc | if self.append { 0o2000 } else { 0 }
    }
}

/// A System V segment's attach token: its holders are its attaches ([`Memory::attach`]).
struct Attach(i32);

struct Segment {
    key: i32,
    size: u64,
    node: Arc<ShmNode>,
    token: Arc<Attach>,
    cpid: u32,
    lpid: u32,
    atime: u64,
    dtime: u64,
    ctime: u64,
    /// `IPC_RMID` was asked: it goes when the last attach does.
    removed: bool,
    /// `SHM_LOCK` was asked (shown in the mode; nothing is swapped anyway).
    locked: bool,
}

impl Segment {
    fn nattch(&self) -> u64 {
        Arc::strong_count(&self.token) as u64 - 1
    }
}

/// The machine's named shared memory, one table for every process.
#[derive(Default)]
pub(crate) struct Shm {
    segments: BTreeMap<i32, Segment>,
    next_id: i32,
    names: BTreeMap<Vec<u8>, Arc<ShmNode>>,
    next_ino: u64,
    /// Bytes held by every segment and file.
    bytes: Arc<AtomicU64>,
}

impl Shm {
    fn node(&mut self, len: u64, mode: u32) -> Arc<ShmNode> {
        self.next_ino += 1;
        self.bytes.fetch_add(len, Ordering::Relaxed);
        Arc::new(ShmNode {
            object: SharedObject::new(len),
            ino: self.next_ino,
            mode: std::sync::atomic::AtomicU32::new(mode),
            budget: self.bytes.clone(),
            seals: std::sync::atomic::AtomicU32::new(F_SEAL_SEAL),
        })
    }

    /// Forgets the removed segments no one attaches any more.
    fn purge(&mut self) {
        self.segments.retain(|_, s| !(s.removed && s.nattch() == 0));
    }

    /// Links to a name: how many names show `node` (a stat's `st_nlink`).
    fn links(&self, node: &Arc<ShmNode>) -> u64 {
        self.names.values().filter(|n| Arc::ptr_eq(n, node)).count() as u64
    }
}

/// The name of a `/dev/shm` file in `path`, if it names one (`Err` if the name is too long).
pub(super) fn shm_name(path: &[u8]) -> Option<Result<&[u8], i64>> {
    let name = path.strip_prefix(b"/dev/shm/")?;
    if name.is_empty() || name.contains(&b'/') || name == b"." || name == b".." {
        return None;
    }
    Some(if name.len() > 255 {
        Err(super::ENAMETOOLONG)
    } else {
        Ok(name)
    })
}

/// Whether `path` is the `/dev/shm` directory itself.
fn is_shm_dir(path: &[u8]) -> bool {
    matches!(path, b"/dev/shm" | b"/dev/shm/")
}

impl Kernel {
    fn shm_now(&self, instret: u64) -> u64 {
        self.realtime_ns(instret) / 1_000_000_000
    }

    /// `shmget(key, size, flags)`.
    pub(super) fn sys_shmget(&mut self, key: u64, size: u64, flags: u64, instret: u64) -> i64 {
        self.shm.purge();
        let key = key as i32;
        let existing = (key != 0)
            .then(|| {
                self.shm
                    .segments
                    .iter()
                    .find(|(_, s)| s.key == key && !s.removed)
            })
            .flatten();
        if let Some((&id, s)) = existing {
            if flags & IPC_CREAT != 0 && flags & IPC_EXCL != 0 {
                return -EEXIST;
            }
            if size > s.size {
                return -EINVAL;
            }
            return i64::from(id);
        }
        if key != 0 && flags & IPC_CREAT == 0 {
            return -ENOENT;
        }
        if size == 0 || size > self.memory_limit {
            return -EINVAL;
        }
        if self.shm.segments.len() >= MAX_SHM_OBJECTS
            || self.shm.bytes.load(Ordering::Relaxed).saturating_add(size) > self.memory_limit
        {
            return -ENOSPC;
        }
        let node = self.shm.node(size, (flags & 0o777) as u32);
        let id = loop {
            self.shm.next_id = self.shm.next_id.wrapping_add(1) & 0x7fff_ffff;
            if !self.shm.segments.contains_key(&self.shm.next_id) {
                break self.shm.next_id;
            }
        };
        let segment = Segment {
            key,
            size,
            node,
            token: Arc::new(Attach(id)),
            cpid: self.threads.pid,
            lpid: 0,
            atime: 0,
            dtime: 0,
            ctime: self.shm_now(instret),
            removed: false,
            locked: false,
        };
        self.shm.segments.insert(id, segment);
        i64::from(id)
    }

    /// `shmat(id, addr, flags)`.
    pub(super) fn sys_shmat(&mut self, mem: &mut Memory, a: [u64; 3], instret: u64) -> i64 {
        let [id, addr, flags] = a;
        let Some(s) = self.shm.segments.get(&(id as i32)) else {
            return -EINVAL;
        };
        let (len, object, token) = (
            s.size.next_multiple_of(PAGE_SIZE),
            s.node.object.clone(),
            s.token.clone(),
        );
        let addr = if flags & SHM_RND != 0 {
            addr & !(PAGE_SIZE - 1)
        } else {
            addr
        };
        let start = if addr == 0 {
            match self.find_free(mem, len) {
                Some(a) => a,
                None => return -ENOMEM,
            }
        } else {
            if addr % PAGE_SIZE != 0 || addr.checked_add(len).is_none() {
                return -EINVAL;
            }
            if !mem.is_free(addr, len) {
                if flags & SHM_REMAP == 0 {
                    return -EINVAL;
                }
                let _ = mem.unmap(addr, len);
                self.forget_ranges(addr, addr + len);
            }
            addr
        };
        let mut p = perm::R;
        if flags & SHM_RDONLY == 0 {
            p |= perm::W;
        }
        if flags & SHM_EXEC != 0 {
            p |= perm::X;
        }
        if let Err(e) = self.map_object(mem, start, len, p, &object, 0) {
            return -e;
        }
        mem.attach(start, start + len, token);
        let (pid, now) = (self.threads.pid, self.shm_now(instret));
        if let Some(s) = self.shm.segments.get_mut(&(id as i32)) {
            s.lpid = pid;
            s.atime = now;
        }
        start as i64
    }

    /// Maps `object`'s pages from `first` at `start`: `Err(errno)` as `mmap` answers.
    pub(super) fn map_object(
        &mut self,
        mem: &mut Memory,
        start: u64,
        len: u64,
        p: u8,
        object: &Arc<SharedObject>,
        first: u64,
    ) -> Result<(), i64> {
        match mem.map_shared(start, len, p, object, first) {
            Ok(()) => Ok(()),
            Err(MapError::OutOfMemory) => Err(ENOMEM),
            Err(_) => Err(EINVAL),
        }
    }

    /// `shmdt(addr)`.
    pub(super) fn sys_shmdt(&mut self, mem: &mut Memory, addr: u64, instret: u64) -> i64 {
        let Some((end, token)) = mem.attachment(addr) else {
            return -EINVAL;
        };
        let id = token.downcast_ref::<Attach>().map(|a| a.0);
        let _ = mem.unmap(addr, end - addr);
        self.forget_ranges(addr, end);
        let (pid, now) = (self.threads.pid, self.shm_now(instret));
        if let Some(s) = id.and_then(|id| self.shm.segments.get_mut(&id)) {
            s.lpid = pid;
            s.dtime = now;
        }
        self.shm.purge();
        0
    }

    /// `shmctl(id, cmd, buf)`: `IPC_STAT`, `IPC_SET` (the mode), `IPC_RMID`, `SHM_LOCK` and
    /// `SHM_UNLOCK` (nothing is swapped: accepted).
    pub(super) fn sys_shmctl(&mut self, mem: &mut Memory, a: [u64; 3], instret: u64) -> i64 {
        let [id, cmd, buf] = a;
        let now = self.shm_now(instret);
        if let Some(r) = self.shm_info(mem, cmd & 0xff, buf) {
            return r;
        }
        let Some(s) = self.shm.segments.get_mut(&(id as i32)) else {
            return -EINVAL;
        };
        match cmd & 0xff {
            IPC_RMID => {
                s.removed = true;
                s.key = 0;
                self.shm.purge();
                0
            }
            // SHM_STAT and SHM_STAT_ANY take the segment's index, which is its id here, and
            // return the id
            IPC_STAT | SHM_STAT | SHM_STAT_ANY => {
                let mut b = [0u8; 112];
                // struct ipc64_perm: key; uid, gid, cuid, cgid 0 (the guest runs as root)
                b[..4].copy_from_slice(&s.key.to_le_bytes());
                let mode = s.node.mode.load(Ordering::Relaxed)
                    | if s.removed { SHM_DEST } else { 0 }
                    | if s.locked { SHM_LOCKED } else { 0 };
                b[20..24].copy_from_slice(&mode.to_le_bytes());
                for (at, v) in [
                    (48, s.size),
                    (56, s.atime),
                    (64, s.dtime),
                    (72, s.ctime),
                    (88, s.nattch()),
                ] {
                    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
                }
                b[80..84].copy_from_slice(&s.cpid.to_le_bytes());
                b[84..88].copy_from_slice(&s.lpid.to_le_bytes());
                match mem.write_bytes(buf, &b) {
                    Ok(()) if cmd & 0xff == IPC_STAT => 0,
                    Ok(()) => id as i64,
                    Err(_) => -EFAULT,
                }
            }
            IPC_SET => {
                let Ok(mode) = mem.load_u32(buf.wrapping_add(20)) else {
                    return -EFAULT;
                };
                s.node.mode.store(mode & 0o777, Ordering::Relaxed);
                s.ctime = now;
                0
            }
            // (nothing is swapped: locking only shows in the mode)
            SHM_LOCK | SHM_UNLOCK => {
                s.locked = cmd & 0xff == SHM_LOCK;
                0
            }
            _ => -EINVAL,
        }
    }

    /// `shmctl(_, IPC_INFO | SHM_INFO, buf)`: the limits (`struct shminfo64`) or what is in
    /// use (`struct shm_info`); both return the highest index in use. `None`: another command.
    fn shm_info(&mut self, mem: &mut Memory, cmd: u64, buf: u64) -> Option<i64> {
        const SHMMAX: u64 = 18_446_744_073_692_774_399;
        let b: Vec<u8> = match cmd {
            IPC_INFO => [SHMMAX, 1, MAX_SHM_OBJECTS as u64, 4096, SHMMAX, 0, 0, 0, 0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
            SHM_INFO => {
                let segs = &self.shm.segments;
                let pages: u64 = segs.values().map(|s| s.size.div_ceil(PAGE_SIZE)).sum();
                let mut b = (segs.len() as u32).to_le_bytes().to_vec();
                b.extend_from_slice(&[0; 4]);
                for v in [pages, pages, 0, 0, 0] {
                    b.extend_from_slice(&v.to_le_bytes());
                }
                b
            }
            _ => return None,
        };
        if mem.write_bytes(buf, &b).is_err() {
            return Some(-EFAULT);
        }
        Some(
            self.shm
                .segments
                .keys()
                .next_back()
                .map_or(0, |&k| i64::from(k)),
        )
    }

    /// `memfd_create(name, flags)`: an unnamed shared file.
    pub(super) fn sys_memfd_create(&mut self, mem: &mut Memory, name: u64, flags: u64) -> i64 {
        const MFD_CLOEXEC: u64 = 1;
        const MFD_ALLOW_SEALING: u64 = 2;
        // as Linux: the name is read (EFAULT) and holds at most 249 bytes (EINVAL)
        const MFD_NAME_MAX: usize = 249;
        match mem.read_cstr(name, MFD_NAME_MAX + 1) {
            Err(_) => return -EFAULT,
            Ok(n) if n.len() > MFD_NAME_MAX => return -EINVAL,
            Ok(_) => {}
        }
        if flags & !(MFD_CLOEXEC | MFD_ALLOW_SEALING) != 0 {
            return -EINVAL;
        }
        let node = self.shm.node(0, 0o777);
        if flags & MFD_ALLOW_SEALING != 0 {
            node.seals.store(0, Ordering::Relaxed);
        }
        self.install_shm(node, 2, false, flags & MFD_CLOEXEC != 0)
    }

    /// `fcntl(F_ADD_SEALS)` (`add`) or `F_GET_SEALS` on a memfd or `/dev/shm` file (`None`:
    /// not one): seals only add, never once `F_SEAL_SEAL` is there, only through a
    /// descriptor open for writing (`EPERM`).
    pub(super) fn shm_seals(&mut self, fd: u64, add: Option<u64>) -> Option<i64> {
        let Some(Some(Fd::Shm(f))) = self.fds.get(fd as usize) else {
            return None;
        };
        let seals = &f.node.seals;
        let Some(add) = add else {
            return Some(i64::from(seals.load(Ordering::Relaxed)));
        };
        let all = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_FUTURE_WRITE;
        if add & !u64::from(all) != 0 {
            return Some(-EINVAL);
        }
        if !f.write || seals.load(Ordering::Relaxed) & F_SEAL_SEAL != 0 {
            return Some(-EPERM);
        }
        seals.fetch_or(add as u32, Ordering::Relaxed);
        Some(0)
    }

    fn install_shm(&mut self, node: Arc<ShmNode>, acc: u64, append: bool, cloexec: bool) -> i64 {
        let fd = self.install(Fd::Shm(ShmFd {
            node,
            pos: Arc::new(AtomicU64::new(0)),
            read: acc != 1,
            write: acc != 0,
            append,
        }));
        if fd >= 0 && cloexec {
            self.cloexec.insert(fd as usize);
        }
        fd
    }

    /// A path call on `/dev/shm` or its files, answered here (`None`: not such a path).
    /// `nr` is the system call, `a` its arguments.
    pub(super) fn shm_path_call(&mut self, mem: &mut Memory, nr: u64, a: [u64; 6]) -> Option<i64> {
        let at = match nr {
            56 | 35 | 79 | 48 | 439 | 53 | 54 => 1,
            37 | 38 | 276 => 1,
            _ => return None,
        };
        let path = mem.read_cstr(a[at], 4096).ok()?;
        if !path.starts_with(b"/dev/shm") {
            return None;
        }
        if is_shm_dir(&path) {
            return match nr {
                48 | 439 => Some(0),
                79 => Some(Self::write_stat(mem, a[2], &DirStat)),
                _ => None,
            };
        }
        let name = match shm_name(&path)? {
            Ok(n) => n.to_vec(),
            Err(e) => return Some(-e),
        };
        Some(match nr {
            56 => self.shm_open(mem, name, a[2], a[3]),
            // chmod, chown: accepted without effect
            53 | 54 if self.shm.names.contains_key(&name) => 0,
            53 | 54 => -ENOENT,
            35 => {
                const AT_REMOVEDIR: u64 = 0x200;
                if a[2] & AT_REMOVEDIR != 0 {
                    -ENOTDIR
                } else if self.shm.names.remove(&name).is_some() {
                    0
                } else {
                    -ENOENT
                }
            }
            79 | 48 | 439 => match self.shm.names.get(&name).cloned() {
                None => -ENOENT,
                Some(_) if nr != 79 => 0,
                Some(n) => {
                    let links = self.shm.links(&n);
                    Self::write_stat(mem, a[2], &n.stat(links))
                }
            },
            // linkat(olddir, old, newdir, new, flags), renameat(2)(olddir, old, newdir, new)
            _ => {
                let Ok(to) = mem.read_cstr(a[3], 4096) else {
                    return Some(-EFAULT);
                };
                let to = match shm_name(&to) {
                    Some(Ok(t)) => t.to_vec(),
                    Some(Err(e)) => return Some(-e),
                    None => return Some(-EXDEV),
                };
                let Some(node) = self.shm.names.get(&name).cloned() else {
                    return Some(-ENOENT);
                };
                const RENAME_NOREPLACE: u64 = 1;
                let noreplace = nr == 37 || (nr == 276 && a[4] & RENAME_NOREPLACE != 0);
                if noreplace && self.shm.names.contains_key(&to) {
                    return Some(-EEXIST);
                }
                if nr != 37 {
                    self.shm.names.remove(&name);
                } else if self.shm.names.len() >= MAX_SHM_OBJECTS {
                    return Some(-ENOSPC);
                }
                self.shm.names.insert(to, node);
                0
            }
        })
    }

    fn shm_open(&mut self, mem: &mut Memory, name: Vec<u8>, flags: u64, mode: u64) -> i64 {
        const O_CREAT: u64 = 0o100;
        const O_EXCL: u64 = 0o200;
        const O_TRUNC: u64 = 0o1000;
        const O_APPEND: u64 = 0o2000;
        const O_DIRECTORY: u64 = 0o200000;
        const O_CLOEXEC: u64 = 0o2000000;
        if flags & O_DIRECTORY != 0 {
            return -ENOTDIR;
        }
        let node = match self.shm.names.get(&name) {
            Some(_) if flags & O_CREAT != 0 && flags & O_EXCL != 0 => return -EEXIST,
            Some(n) => n.clone(),
            None if flags & O_CREAT == 0 => return -ENOENT,
            None if self.shm.names.len() >= MAX_SHM_OBJECTS => return -ENOSPC,
            None => {
                let n = self.shm.node(0, (mode & 0o777) as u32);
                self.shm.names.insert(name, n.clone());
                n
            }
        };
        let acc = flags & 3;
        if flags & O_TRUNC != 0 && acc != 0 {
            // (the running process's frames given back first, as for `ftruncate`; shrinking
            // needs no budget, so it cannot fail)
            let _ = node.resize(mem, 0, self.memory_limit);
        }
        self.install_shm(node, acc, flags & O_APPEND != 0, flags & O_CLOEXEC != 0)
    }

    /// A call on an open `/dev/shm` file or memfd, answered here (`None`: `a[0]` is not
    /// one, or `nr` is not a call this answers).
    pub(super) fn shm_fd_call(&mut self, mem: &mut Memory, nr: u64, a: [u64; 6]) -> Option<i64> {
        if !matches!(nr, 46 | 47 | 62..=68 | 79 | 80 | 222) {
            return None;
        }
        let fd_at = if nr == 222 { 4 } else { 0 };
        let Some(Some(Fd::Shm(f))) = self.fds.get(a[fd_at] as usize) else {
            return None;
        };
        let f = f.clone();
        let limit = self.memory_limit;
        Some(match nr {
            63 | 64 | 67 | 68 => {
                let at = match nr {
                    67 | 68 if (a[3] as i64) < 0 => return Some(-EINVAL),
                    67 | 68 => Some(a[3]),
                    _ => None,
                };
                self.shm_io(mem, &f, [a[1], a[2]], at, nr == 64 || nr == 68, limit)
            }
            65 | 66 => {
                if a[2] > 1024 {
                    return Some(-EINVAL);
                }
                let mut total = 0i64;
                for i in 0..a[2] {
                    let at = a[1].wrapping_add(16 * i);
                    let (Ok(base), Ok(len)) = (mem.load_u64(at), mem.load_u64(at.wrapping_add(8)))
                    else {
                        return Some(-EFAULT);
                    };
                    let r = self.shm_io(mem, &f, [base, len], None, nr == 66, limit);
                    if r < 0 {
                        return Some(if total > 0 { total } else { r });
                    }
                    total += r;
                    if (r as u64) < len {
                        break; // a short transfer ends the vector, as Linux does
                    }
                }
                total
            }
            62 => {
                let len = f.node.object.len() as i64;
                let new = match a[2] {
                    0 => Some(a[1] as i64),
                    1 => (f.pos.load(Ordering::Relaxed) as i64).checked_add(a[1] as i64),
                    2 => len.checked_add(a[1] as i64),
                    3 if (a[1] as i64) < len => Some(a[1] as i64), // SEEK_DATA
                    4 if (a[1] as i64) < len => Some(len),         // SEEK_HOLE
                    3 | 4 => return Some(-6),                      // ENXIO
                    _ => None,
                };
                match new {
                    Some(p) if p >= 0 => {
                        f.pos.store(p as u64, Ordering::Relaxed);
                        p
                    }
                    _ => -EINVAL,
                }
            }
            80 => {
                let links = self.shm.links(&f.node);
                Self::write_stat(mem, a[1], &f.node.stat(links))
            }
            79 => {
                // fstatat(fd, "", buf, AT_EMPTY_PATH): the descriptor's file
                if a[3] & super::AT_EMPTY_PATH == 0 || !matches!(mem.load_u8(a[1]), Ok(0)) {
                    return None;
                }
                let links = self.shm.links(&f.node);
                Self::write_stat(mem, a[2], &f.node.stat(links))
            }
            46 | 47 => {
                // ftruncate(fd, len); fallocate(fd, mode 0, offset, len) grows only
                let len = if nr == 46 {
                    a[1]
                } else if a[1] != 0 {
                    return Some(-95); // EOPNOTSUPP
                } else {
                    a[2].saturating_add(a[3]).max(f.node.object.len())
                };
                if (len as i64) < 0 || !f.write {
                    return Some(-EINVAL);
                }
                let seals = f.node.seals.load(Ordering::Relaxed);
                let old = f.node.object.len();
                if (len < old && seals & F_SEAL_SHRINK != 0)
                    || (len > old && seals & F_SEAL_GROW != 0)
                {
                    return Some(-EPERM);
                }
                match f.node.resize(mem, len, limit) {
                    Ok(()) => 0,
                    Err(e) => -e,
                }
            }
            _ => self.shm_mmap(mem, &f, a),
        })
    }

    /// `read`/`write` (`pread`/`pwrite` at `at`) of `[buf, count]` on a shared file.
    fn shm_io(
        &mut self,
        mem: &mut Memory,
        f: &ShmFd,
        [buf, count]: [u64; 2],
        at: Option<u64>,
        write: bool,
        limit: u64,
    ) -> i64 {
        if (write && !f.write) || (!write && !f.read) {
            return -EBADF;
        }
        let n = (count as usize).min(MAX_IO);
        let obj = &f.node.object;
        let pos = match at {
            Some(p) => p,
            None if write && f.append => obj.len(),
            None => f.pos.load(Ordering::Relaxed),
        };
        let done = if write {
            let mut tmp = vec![0u8; n];
            if mem.read_bytes(buf, &mut tmp).is_err() {
                return -EFAULT;
            }
            let Some(end) = pos.checked_add(n as u64) else {
                return -EINVAL;
            };
            let seals = f.node.seals.load(Ordering::Relaxed);
            if seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) != 0
                || (end > obj.len() && seals & F_SEAL_GROW != 0)
            {
                return -EPERM;
            }
            if end > obj.len() {
                if let Err(e) = f.node.resize(mem, end, limit) {
                    return -e;
                }
            }
            mem.release_shared();
            obj.write(pos, &tmp);
            mem.take_shared();
            n
        } else {
            if mem.check_range(buf, n as u64, perm::W).is_err() {
                return -EFAULT;
            }
            let mut tmp = vec![0u8; n];
            mem.release_shared();
            let got = obj.read(pos, &mut tmp);
            mem.take_shared();
            if mem.write_bytes(buf, &tmp[..got]).is_err() {
                return -EFAULT;
            }
            got
        };
        if at.is_none() {
            f.pos.store(pos + done as u64, Ordering::Relaxed);
        }
        done as i64
    }

    /// `mmap` of a shared file: `MAP_SHARED` maps its pages; `MAP_PRIVATE` a copy of them.
    fn shm_mmap(&mut self, mem: &mut Memory, f: &ShmFd, a: [u64; 6]) -> i64 {
        let [addr, len, prot, flags, _, offset] = a;
        const MAP_FIXED: u64 = 0x10;
        if len == 0 || offset % PAGE_SIZE != 0 || flags & 3 == 0 {
            return -EINVAL;
        }
        if len > self.memory_limit {
            return -ENOMEM;
        }
        let shared = flags & 3 != 2;
        if !f.read || (shared && prot & 2 != 0 && !f.write) {
            return -EACCES;
        }
        let sealed = f.node.seals.load(Ordering::Relaxed) & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE);
        if shared && prot & 2 != 0 && sealed != 0 {
            return -EPERM;
        }
        let len = len.next_multiple_of(PAGE_SIZE);
        let start = match self.mmap_place(mem, addr, len, flags & MAP_FIXED != 0) {
            Ok(a) => a,
            Err(e) => return -e,
        };
        let p = super::prot_to_perm(prot);
        if shared {
            return match self.map_object(mem, start, len, p, &f.node.object, offset / PAGE_SIZE) {
                Ok(()) => start as i64,
                Err(e) => -e,
            };
        }
        // a private copy of the file's bytes now (later stores to the file do not show)
        if mem.map(start, len, p).is_err() {
            return -ENOMEM;
        }
        let mut bytes = vec![0u8; len as usize];
        mem.release_shared();
        f.node.object.read(offset, &mut bytes);
        mem.take_shared();
        let _ = mem.poke_bytes(start, &bytes);
        start as i64
    }
}

/// The `/dev/shm` directory's stat: a world-writable sticky directory.
struct DirStat;

impl super::files::StatFields for DirStat {
    fn fields(&self) -> [u64; 16] {
        [
            SHM_DEV, 1, 0o041777, 2, 0, 0, 0, 40, PAGE_SIZE, 0, 0, 0, 0, 0, 0, 0,
        ]
    }
}

impl super::files::StatFields for [u64; 16] {
    fn fields(&self) -> [u64; 16] {
        *self
    }
}

impl Kernel {
    /// `/proc/sysvipc/shm`: a header line and one line per segment, as Linux lists them.
    pub(super) fn shm_listing(&self) -> Vec<u8> {
        let mut s = String::from(
            "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  \
             cuid  cgid      atime      dtime      ctime                   rss                  swap\n",
        );
        for (id, g) in &self.shm.segments {
            let mode = g.node.mode.load(Ordering::Relaxed);
            s.push_str(&format!(
                "{:>10} {id:>10} {mode:>5o} {:>21} {:>5} {:>5} {:>6} {:>5} {:>5} {:>5} {:>5} \
                 {:>10} {:>10} {:>10} {:>21} {:>21}\n",
                g.key,
                g.size,
                g.cpid,
                g.lpid,
                g.nattch(),
                0,
                0,
                0,
                0,
                g.atime,
                g.dtime,
                g.ctime,
                0,
                0
            ));
        }
        s.into_bytes()
    }
}
