//! inotify (docs/machine.md, "File events"): instances (`inotify_init1`), watches on files
//! and directories (`inotify_add_watch`, `inotify_rm_watch`) and the events the guest's own
//! file operations raise, queued and read as Linux's `struct inotify_event` records.
//!
//! Events follow Linux's `fsnotify` hooks: an event on a file is reported first to a watch on
//! its directory (with the file's name) and then to a watch on the file itself (without);
//! names in a directory (`IN_CREATE`, `IN_DELETE`, `IN_MOVED_FROM`/`TO`) only to the
//! directory's watches; `IN_DELETE_SELF` once the last link and the last descriptor are gone,
//! then `IN_IGNORED` as the watch goes. An event equal to the last one queued is merged, and
//! past [`MAX_QUEUED`] events one `IN_Q_OVERFLOW` ends the queue, as on Linux.
//!
//! Objects are told apart by the host's device and inode numbers. Only the guest's own
//! operations raise events: another host process changing a watched file is not seen.

use super::*;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

pub(super) const IN_ACCESS: u32 = 0x1;
pub(super) const IN_MODIFY: u32 = 0x2;
pub(super) const IN_ATTRIB: u32 = 0x4;
pub(super) const IN_CLOSE_WRITE: u32 = 0x8;
pub(super) const IN_CLOSE_NOWRITE: u32 = 0x10;
pub(super) const IN_OPEN: u32 = 0x20;
pub(super) const IN_MOVED_FROM: u32 = 0x40;
pub(super) const IN_MOVED_TO: u32 = 0x80;
pub(super) const IN_CREATE: u32 = 0x100;
pub(super) const IN_DELETE: u32 = 0x200;
pub(super) const IN_DELETE_SELF: u32 = 0x400;
pub(super) const IN_MOVE_SELF: u32 = 0x800;
const IN_ALL_EVENTS: u32 = 0xfff;
const IN_Q_OVERFLOW: u32 = 0x4000;
const IN_IGNORED: u32 = 0x8000;
const IN_ONLYDIR: u32 = 0x0100_0000;
const IN_DONT_FOLLOW: u32 = 0x0200_0000;
const IN_EXCL_UNLINK: u32 = 0x0400_0000;
const IN_MASK_CREATE: u32 = 0x1000_0000;
const IN_MASK_ADD: u32 = 0x2000_0000;
pub(super) const IN_ISDIR: u32 = 0x4000_0000;
const IN_ONESHOT: u32 = 0x8000_0000;
/// The flags a watch may carry besides its events.
const WATCH_FLAGS: u32 =
    IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK | IN_MASK_CREATE | IN_MASK_ADD | IN_ONESHOT;
const IN_NONBLOCK: u64 = 0o4000;
const IN_CLOEXEC: u64 = 0o2000000;
/// `/proc/sys/fs/inotify/max_queued_events`: events one instance holds before
/// `IN_Q_OVERFLOW`.
pub(super) const MAX_QUEUED: usize = 16384;
/// Bytes of records all instances hold together: past it an instance's next event is its
/// `IN_Q_OVERFLOW` (so 128 full queues of long names never hold more host memory than this).
const MAX_QUEUED_BYTES: usize = 32 << 20;
/// `max_user_instances`: instances alive at once (then `EMFILE`).
pub(super) const MAX_INSTANCES: usize = 128;
/// `max_user_watches`, here per instance (then `ENOSPC`).
pub(super) const MAX_WATCHES: usize = 8192;
/// The fixed part of `struct inotify_event`.
const EVENT_SIZE: usize = 16;

/// A host object: (device, inode).
pub(super) type Key = (u64, u64);

struct Watch {
    wd: i32,
    key: Key,
    mask: u32,
}

#[derive(PartialEq, Eq)]
struct Event {
    wd: i32,
    mask: u32,
    cookie: u32,
    name: Vec<u8>,
}

impl Event {
    /// Bytes of the record: the name NUL-padded to a multiple of 16, as Linux pads it.
    fn len(&self) -> usize {
        EVENT_SIZE + Self::name_len(&self.name)
    }

    fn name_len(name: &[u8]) -> usize {
        if name.is_empty() {
            0
        } else {
            (name.len() + 1).div_ceil(EVENT_SIZE) * EVENT_SIZE
        }
    }
}

struct Instance {
    watches: Vec<Watch>,
    queue: VecDeque<Event>,
    last_wd: i32,
    /// Bytes of the records queued here, and in every instance of the run.
    bytes: usize,
    total: Arc<AtomicUsize>,
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.total.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

impl Instance {
    fn new(total: Arc<AtomicUsize>) -> Instance {
        Instance {
            watches: Vec::new(),
            queue: VecDeque::new(),
            last_wd: 0,
            bytes: 0,
            total,
        }
    }

    fn push(&mut self, e: Event) {
        if self.queue.back() == Some(&e) {
            return; // merged with the last, as Linux's inotify_merge
        }
        let full = self.total.load(Ordering::Relaxed) + e.len() > MAX_QUEUED_BYTES;
        if self.queue.len() >= MAX_QUEUED || full {
            // one overflow event ends the queue (its 16 bytes may pass the bound)
            if self.queue.back().is_none_or(|l| l.mask != IN_Q_OVERFLOW) {
                self.enqueue(Event {
                    wd: -1,
                    mask: IN_Q_OVERFLOW,
                    cookie: 0,
                    name: Vec::new(),
                });
            }
            return;
        }
        self.enqueue(e);
    }

    fn enqueue(&mut self, e: Event) {
        self.bytes += e.len();
        self.total.fetch_add(e.len(), Ordering::Relaxed);
        self.queue.push_back(e);
    }

    fn pop(&mut self) {
        if let Some(e) = self.queue.pop_front() {
            self.bytes -= e.len();
            self.total.fetch_sub(e.len(), Ordering::Relaxed);
        }
    }

    /// Removes watch `wd` and queues its `IN_IGNORED`.
    fn drop_watch(&mut self, wd: i32) {
        self.watches.retain(|w| w.wd != wd);
        self.push(Event {
            wd,
            mask: IN_IGNORED,
            cookie: 0,
            name: Vec::new(),
        });
    }
}

/// An inotify descriptor: clones (`dup`, `fork`) share the instance and `O_NONBLOCK`.
#[derive(Clone)]
pub(crate) struct Inotify {
    inner: Arc<Mutex<Instance>>,
    nonblock: Arc<AtomicBool>,
}

fn lock(m: &Mutex<Instance>) -> std::sync::MutexGuard<'_, Instance> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Inotify {
    /// Readable when an event is queued.
    pub fn ready(&self) -> bool {
        !lock(&self.inner).queue.is_empty()
    }

    pub fn nonblocking(&self) -> bool {
        self.nonblock.load(Ordering::Relaxed)
    }

    pub fn set_nonblocking(&self, on: bool) {
        self.nonblock.store(on, Ordering::Relaxed);
    }

    /// Bytes queued (`FIONREAD`).
    pub fn pending_bytes(&self) -> usize {
        lock(&self.inner).queue.iter().map(Event::len).sum()
    }

    /// A read of at most `room` bytes: whole records from the queue's head; `EINVAL` when the
    /// first does not fit; `None` when the queue is empty and the call must wait.
    pub fn read(&self, room: usize) -> Result<Option<Vec<u8>>, i64> {
        let mut inst = lock(&self.inner);
        if inst.queue.is_empty() {
            return if self.nonblocking() {
                Err(EAGAIN)
            } else {
                Ok(None)
            };
        }
        let mut out = Vec::new();
        while let Some(e) = inst.queue.front() {
            if out.len() + e.len() > room {
                break;
            }
            out.extend_from_slice(&e.wd.to_le_bytes());
            out.extend_from_slice(&e.mask.to_le_bytes());
            out.extend_from_slice(&e.cookie.to_le_bytes());
            let n = Event::name_len(&e.name);
            out.extend_from_slice(&(n as u32).to_le_bytes());
            out.extend_from_slice(&e.name);
            out.resize(out.len() + n - e.name.len(), 0);
            inst.pop();
        }
        if out.is_empty() {
            return Err(EINVAL);
        }
        Ok(Some(out))
    }

    /// `/proc/PID/fdinfo` lines for its watches, as Linux prints them.
    pub fn fdinfo(&self) -> String {
        lock(&self.inner)
            .watches
            .iter()
            .map(|w| {
                format!(
                    "inotify wd:{} ino:{:x} sdev:{:x} mask:{:x} ignored_mask:0\n",
                    w.wd, w.key.1, w.key.0, w.mask
                )
            })
            .collect()
    }
}

/// Every instance of every process, for the events to find their watches.
#[derive(Default)]
pub(crate) struct Notify {
    instances: Vec<Weak<Mutex<Instance>>>,
    last_cookie: u32,
    /// Bytes queued in all instances ([`MAX_QUEUED_BYTES`]).
    total: Arc<AtomicUsize>,
}

impl Notify {
    /// Whether any live instance holds a watch (else no event needs looking for).
    pub fn active(&mut self) -> bool {
        self.instances.retain(|w| w.strong_count() > 0);
        self.instances
            .iter()
            .filter_map(Weak::upgrade)
            .any(|i| !lock(&i).watches.is_empty())
    }

    /// A fresh cookie tying an `IN_MOVED_FROM` to its `IN_MOVED_TO`.
    pub fn cookie(&mut self) -> u32 {
        self.last_cookie = self.last_cookie.wrapping_add(1).max(1);
        self.last_cookie
    }

    /// Reports `mask` on `key` to every watch of it that asks for one of its events, named
    /// `name` (a directory's watch hearing of an entry); `unlinked`: the object has no name
    /// left (watches with `IN_EXCL_UNLINK` on its directory skip it). Returns whether an
    /// event was queued.
    pub fn report(
        &mut self,
        key: Key,
        mask: u32,
        cookie: u32,
        name: &[u8],
        unlinked: bool,
    ) -> bool {
        let mut queued = false;
        for inst in self.instances.iter().filter_map(Weak::upgrade) {
            let mut inst = lock(&inst);
            let hits: Vec<(i32, u32)> = inst
                .watches
                .iter()
                .filter(|w| w.key == key && w.mask & mask & IN_ALL_EVENTS != 0)
                .filter(|w| !(unlinked && !name.is_empty() && w.mask & IN_EXCL_UNLINK != 0))
                .map(|w| (w.wd, w.mask))
                .collect();
            for (wd, wmask) in hits {
                inst.push(Event {
                    wd,
                    mask,
                    cookie,
                    name: name.to_vec(),
                });
                if wmask & IN_ONESHOT != 0 {
                    inst.drop_watch(wd);
                }
                queued = true;
            }
        }
        queued
    }

    /// The object `key` is gone: each watch of it goes with `IN_IGNORED`.
    pub fn forget(&mut self, key: Key) -> bool {
        let mut queued = false;
        for inst in self.instances.iter().filter_map(Weak::upgrade) {
            let mut inst = lock(&inst);
            let wds: Vec<i32> = inst
                .watches
                .iter()
                .filter(|w| w.key == key)
                .map(|w| w.wd)
                .collect();
            for wd in wds {
                inst.drop_watch(wd);
                queued = true;
            }
        }
        queued
    }
}

/// What an event is about: the object, whether it is a directory, its links, and the
/// directory it was reached through with its name there.
pub(super) struct Subject {
    pub key: Key,
    pub dir: bool,
    pub nlink: u64,
    pub parent: Option<(Key, Vec<u8>)>,
}

impl Subject {
    /// The object at host path `host` (not following a last symbolic link). The host path
    /// only routes events (its metadata, never its contents, is read): the guest reached it
    /// through its grants already.
    pub fn at(host: &std::path::Path) -> Option<Subject> {
        let m = std::fs::symlink_metadata(host).ok()?;
        let mut s = Self::of(&m);
        s.parent = Self::parent_of(host);
        Some(s)
    }

    fn of(m: &std::fs::Metadata) -> Subject {
        use std::os::unix::fs::MetadataExt;
        Subject {
            key: (m.dev(), m.ino()),
            dir: m.is_dir(),
            nlink: m.nlink(),
            parent: None,
        }
    }

    /// The directory holding host path `host`, and the name there.
    pub fn parent_of(host: &std::path::Path) -> Option<(Key, Vec<u8>)> {
        use std::os::unix::fs::MetadataExt;
        let name = host.file_name()?.as_bytes().to_vec();
        let m = std::fs::metadata(host.parent()?).ok()?;
        Some(((m.dev(), m.ino()), name))
    }
}

impl Kernel {
    /// The calls on inotify instances (`None`: not one of them).
    pub(super) fn inotify_call(&mut self, mem: &mut Memory, nr: u64, a: [u64; 6]) -> Option<i64> {
        let r = match nr {
            26 => self.sys_inotify_init1(a[0]),
            27 => self.sys_inotify_add_watch(mem, a[0], a[1], a[2] as u32),
            28 => self.sys_inotify_rm_watch(a[0], a[1] as i32),
            _ => return None,
        };
        Some(r.unwrap_or_else(|e| -e))
    }

    fn sys_inotify_init1(&mut self, flags: u64) -> Result<i64, i64> {
        if flags & !(IN_NONBLOCK | IN_CLOEXEC) != 0 {
            return Err(EINVAL);
        }
        self.notify.instances.retain(|w| w.strong_count() > 0);
        if self.notify.instances.len() >= MAX_INSTANCES {
            return Err(EMFILE);
        }
        let inner = Arc::new(Mutex::new(Instance::new(self.notify.total.clone())));
        let fd = self.install(Fd::Inotify(Inotify {
            inner: inner.clone(),
            nonblock: Arc::new(AtomicBool::new(flags & IN_NONBLOCK != 0)),
        }));
        if fd >= 0 {
            self.notify.instances.push(Arc::downgrade(&inner));
            if flags & IN_CLOEXEC != 0 {
                self.cloexec.insert(fd as usize);
            }
        }
        Ok(fd)
    }

    fn instance(&mut self, fd: u64) -> Result<Arc<Mutex<Instance>>, i64> {
        match self.fd(fd)? {
            Fd::Inotify(i) => Ok(i.inner.clone()),
            _ => Err(EINVAL),
        }
    }

    fn sys_inotify_add_watch(
        &mut self,
        mem: &mut Memory,
        fd: u64,
        path: u64,
        mask: u32,
    ) -> Result<i64, i64> {
        use cap_std::fs::MetadataExt as _;
        let inst = self.instance(fd)?;
        if mask & IN_ALL_EVENTS == 0
            || mask & !(IN_ALL_EVENTS | WATCH_FLAGS) != 0
            || mask & (IN_MASK_ADD | IN_MASK_CREATE) == IN_MASK_ADD | IN_MASK_CREATE
        {
            return Err(EINVAL);
        }
        let path = self.guest_path(mem, AT_FDCWD, path)?;
        let m = if let Some(d) = Device::at(&path) {
            let (major, minor) = d.rdev();
            // the machine's devices: a key of their own, never a host inode
            ((u64::MAX, (major << 8) | minor), false)
        } else {
            let r = self.resolve_at(AT_FDCWD, &path, false)?;
            let m = r.metadata(mask & IN_DONT_FOLLOW != 0)?;
            ((m.dev(), m.ino()), m.is_dir())
        };
        let (key, dir) = m;
        if mask & IN_ONLYDIR != 0 && !dir {
            return Err(ENOTDIR);
        }
        let mut i = lock(&inst);
        if let Some(w) = i.watches.iter_mut().find(|w| w.key == key) {
            if mask & IN_MASK_CREATE != 0 {
                return Err(EEXIST);
            }
            let keep = if mask & IN_MASK_ADD != 0 { w.mask } else { 0 };
            w.mask = keep | (mask & !(IN_MASK_ADD | IN_MASK_CREATE));
            return Ok(i64::from(w.wd));
        }
        if i.watches.len() >= MAX_WATCHES {
            return Err(28); // ENOSPC
        }
        i.last_wd += 1;
        let wd = i.last_wd;
        i.watches.push(Watch {
            wd,
            key,
            mask: mask & !(IN_MASK_ADD | IN_MASK_CREATE),
        });
        Ok(i64::from(wd))
    }

    fn sys_inotify_rm_watch(&mut self, fd: u64, wd: i32) -> Result<i64, i64> {
        let inst = self.instance(fd)?;
        let mut i = lock(&inst);
        if !i.watches.iter().any(|w| w.wd == wd) {
            return Err(EINVAL);
        }
        i.drop_watch(wd);
        drop(i);
        self.io_changed();
        Ok(0)
    }

    /// A read of an inotify descriptor into `buf` (`count` bytes).
    pub(super) fn read_inotify(
        &mut self,
        mem: &mut Memory,
        i: Inotify,
        buf: u64,
        count: u64,
    ) -> i64 {
        match i.read(usize::try_from(count).unwrap_or(usize::MAX)) {
            Ok(Some(bytes)) => match mem.write_bytes(buf, &bytes) {
                Ok(()) => bytes.len() as i64,
                Err(_) => -EFAULT,
            },
            Ok(None) => WOULD_BLOCK,
            Err(e) => -e,
        }
    }

    /// Reports event `mask` on `s`: to its directory's watches with its name, then to its
    /// own (as Linux's `fsnotify_parent`).
    pub(super) fn notify(&mut self, s: &Subject, mask: u32) {
        let mask = if s.dir { mask | IN_ISDIR } else { mask };
        let mut queued = false;
        if let Some((parent, name)) = &s.parent {
            queued |= self.notify.report(*parent, mask, 0, name, s.nlink == 0);
        }
        queued |= self.notify.report(s.key, mask, 0, b"", false);
        if queued {
            self.io_changed();
        }
    }

    /// Reports `mask` on `s` to its own watches only (`IN_DELETE_SELF`, `IN_MOVE_SELF`,
    /// a link count's `IN_ATTRIB`); the two `_SELF` events never carry `IN_ISDIR`.
    pub(super) fn notify_self(&mut self, s: &Subject, mask: u32) {
        let mask = if s.dir && mask & (IN_DELETE_SELF | IN_MOVE_SELF) == 0 {
            mask | IN_ISDIR
        } else {
            mask
        };
        if self.notify.report(s.key, mask, 0, b"", false) {
            self.io_changed();
        }
    }

    /// Reports a change of entry `name` in directory `dir` (`IN_CREATE`, `IN_DELETE`,
    /// `IN_MOVED_*`) to the directory's watches.
    pub(super) fn notify_entry(&mut self, dir: Key, mask: u32, cookie: u32, name: &[u8]) {
        if self.notify.report(dir, mask, cookie, name, false) {
            self.io_changed();
        }
    }

    /// The subject descriptor `fd` is open on (a host file or directory), when any watch
    /// is alive.
    pub(super) fn fd_subject(&mut self, fd: u64) -> Option<Subject> {
        if !self.notify.active() {
            return None;
        }
        let m = match self.fds.get(fd as usize)?.as_ref()? {
            Fd::File(f) => f.metadata().ok()?,
            Fd::Dir(d) => {
                use cap_std::fs::MetadataExt as _;
                let m = d.grant.metadata().ok()?;
                return Some(Subject {
                    key: (m.dev(), m.ino()),
                    dir: true,
                    nlink: m.nlink(),
                    parent: None,
                });
            }
            _ => return None,
        };
        let mut s = Subject::of(&m);
        s.parent = self
            .fd_hosts
            .get(&(fd as usize))
            .and_then(|h| Subject::parent_of(h));
        Some(s)
    }

    /// After `fd` read (`IN_ACCESS`) or wrote (`IN_MODIFY`) `n` bytes.
    pub(super) fn notify_io(&mut self, fd: u64, n: i64, mask: u32) {
        if n > 0 {
            if let Some(s) = self.fd_subject(fd) {
                self.notify(&s, mask);
            }
        }
    }

    /// The subject at guest path `path` (from `dirfd`), when any watch is alive.
    pub(super) fn path_subject(&mut self, dirfd: i64, path: &std::path::Path) -> Option<Subject> {
        if !self.notify.active() {
            return None;
        }
        let host = self.resolve_at(dirfd, path, false).ok()?.host_path();
        Subject::at(&host)
    }

    /// Whether a descriptor of any process (but `except` of this one) is open on `key`.
    pub(super) fn open_anywhere(&self, key: Key, except: Option<usize>) -> bool {
        use std::os::unix::fs::MetadataExt;
        let on = |f: &Fd| match f {
            Fd::File(f) => f.metadata().is_ok_and(|m| (m.dev(), m.ino()) == key),
            _ => false,
        };
        let here = self
            .fds
            .iter()
            .enumerate()
            .any(|(i, f)| Some(i) != except && f.as_ref().is_some_and(on));
        here || self.procs.list.iter().any(|p| {
            p.state
                .as_ref()
                .is_some_and(|s| s.fds.iter().flatten().any(on))
        })
    }

    /// After a link of `s` went (`unlink`, `rmdir`): its link count's `IN_ATTRIB` (files),
    /// `IN_DELETE_SELF` and the watches' `IN_IGNORED` if nothing holds it (Linux's
    /// `fsnotify_inoderemove`), then `IN_DELETE` in its directory (`entry`).
    pub(super) fn notify_unlinked(&mut self, s: &Subject, entry: Option<(Key, &[u8])>) {
        if !s.dir {
            self.notify_self(s, IN_ATTRIB);
        }
        if (s.dir || s.nlink <= 1) && !self.open_anywhere(s.key, None) {
            self.notify_self(s, IN_DELETE_SELF);
            if self.notify.forget(s.key) {
                self.io_changed();
            }
        }
        if let Some((dir, name)) = entry {
            let mask = if s.dir {
                IN_DELETE | IN_ISDIR
            } else {
                IN_DELETE
            };
            self.notify_entry(dir, mask, 0, name);
        }
    }

    /// Before descriptor `fd` closes: `IN_CLOSE_WRITE` or `IN_CLOSE_NOWRITE` when it is the
    /// last of its open file description, then `IN_DELETE_SELF` if it held the last of an
    /// unlinked file.
    pub(super) fn notify_close(&mut self, fd: usize) {
        let Some(s) = self.fd_subject(fd as u64) else {
            return;
        };
        if let Some(&o) = self.ofds.get(&fd) {
            let shared = self.ofds.iter().any(|(&f, &x)| x == o && f != fd)
                || self.procs.list.iter().any(|p| {
                    p.state
                        .as_ref()
                        .is_some_and(|st| st.ofds.values().any(|&x| x == o))
                });
            if shared {
                return;
            }
        }
        let write = match self.fds.get(fd).and_then(Option::as_ref) {
            Some(Fd::File(f)) => rustix::fs::fcntl_getfl(f).is_ok_and(|fl| fl.bits() & 3 != 0),
            _ => false,
        };
        self.notify(
            &s,
            if write {
                IN_CLOSE_WRITE
            } else {
                IN_CLOSE_NOWRITE
            },
        );
        if s.nlink == 0 {
            let held = self.open_anywhere(s.key, Some(fd));
            if !held {
                self.notify_self(&s, IN_DELETE_SELF);
                if self.notify.forget(s.key) {
                    self.io_changed();
                }
            }
        }
    }

    /// After `path` (from `dirfd`) was made (`mkdir`, `mknod`, `symlink`, `link`):
    /// `IN_CREATE` in its directory.
    pub(super) fn notify_created(&mut self, dirfd: i64, path: &std::path::Path) {
        if let Some(s) = self.path_subject(dirfd, path) {
            if let Some((dir, name)) = &s.parent {
                let mask = if s.dir {
                    IN_CREATE | IN_ISDIR
                } else {
                    IN_CREATE
                };
                self.notify_entry(*dir, mask, 0, name);
            }
        }
    }

    /// After `s` was renamed (to the name `to` names; `over`: what that name held before),
    /// as Linux's `fsnotify_move`: `IN_MOVED_FROM` and `IN_MOVED_TO` with one cookie, the
    /// replaced file's link count, `IN_MOVE_SELF`, then the replaced file's end.
    pub(super) fn notify_moved(
        &mut self,
        s: &Subject,
        over: Option<&Subject>,
        to: Option<(Key, Vec<u8>)>,
    ) {
        let cookie = self.notify.cookie();
        let isdir = if s.dir { IN_ISDIR } else { 0 };
        if let Some((dir, name)) = &s.parent {
            self.notify_entry(*dir, IN_MOVED_FROM | isdir, cookie, name);
        }
        if let Some((dir, name)) = &to {
            self.notify_entry(*dir, IN_MOVED_TO | isdir, cookie, name);
        }
        let over = over.filter(|o| o.key != s.key);
        if let Some(o) = over {
            self.notify_self(o, IN_ATTRIB);
        }
        self.notify_self(s, IN_MOVE_SELF);
        if let Some(o) = over {
            if (o.dir || o.nlink <= 1) && !self.open_anywhere(o.key, None) {
                self.notify_self(o, IN_DELETE_SELF);
                if self.notify.forget(o.key) {
                    self.io_changed();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str) -> Event {
        Event {
            wd: 1,
            mask: IN_CREATE,
            cookie: 0,
            name: name.as_bytes().to_vec(),
        }
    }

    /// Every instance's records count against one bound: near it, an instance's next event
    /// is its overflow; what is read or dropped gives the room back.
    #[test]
    fn all_instances_together_hold_at_most_the_bound() {
        let total = Arc::new(AtomicUsize::new(MAX_QUEUED_BYTES - 40));
        let mut a = Instance::new(total.clone());
        a.push(event("a")); // 32 bytes: fits
        assert_eq!(total.load(Ordering::Relaxed), MAX_QUEUED_BYTES - 8);
        let mut b = Instance::new(total.clone());
        b.push(event("b"));
        b.push(event("c"));
        assert_eq!(b.queue.len(), 1, "one overflow event");
        assert_eq!(b.queue[0].mask, IN_Q_OVERFLOW);
        assert_eq!(total.load(Ordering::Relaxed), MAX_QUEUED_BYTES + 8);
        a.pop();
        b.pop();
        assert_eq!((a.bytes, b.bytes), (0, 0));
        b.push(event("d"));
        assert_eq!(b.queue[0].mask, IN_CREATE, "room again");
        drop(b);
        assert_eq!(total.load(Ordering::Relaxed), MAX_QUEUED_BYTES - 40);
    }
}
