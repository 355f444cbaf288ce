//! POSIX record locks between the guest's processes (docs/machine.md, "Processes"):
//! `fcntl(F_SETLK, F_SETLKW, F_GETLK)` (and the open-file-description variants, kept per
//! process here). The machine keeps its own table, by file (device, inode) and process; the
//! host's files are never locked, so a guest cannot block a host process.
//!
//! A lock goes when its process unlocks it, closes any descriptor of the file, or ends, as
//! POSIX says. At most [`MAX_LOCKS`] are held at once (`ENOLCK` past it).

use super::{Fd, Kernel, EAGAIN, EFAULT, EINVAL};
use crate::memory::Memory;

/// Most record locks held at once, over all processes.
pub const MAX_LOCKS: usize = 65_536;

const F_RDLCK: i16 = 0;
const F_WRLCK: i16 = 1;
const F_UNLCK: i16 = 2;
const ENOLCK: i64 = 37;

/// One held lock on bytes `[start, end)` of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RecordLock {
    dev: u64,
    ino: u64,
    start: u64,
    /// Exclusive; `u64::MAX` is to the end of the file, however it grows.
    end: u64,
    write: bool,
    pid: u32,
}

impl RecordLock {
    fn overlaps(&self, dev: u64, ino: u64, start: u64, end: u64) -> bool {
        self.dev == dev && self.ino == ino && self.start < end && start < self.end
    }
}

/// The held locks.
#[derive(Default)]
pub(crate) struct Locks(Vec<RecordLock>);

impl Locks {
    /// The lock of another process that a lock of `kind` on the range would conflict with:
    /// the one starting first, as Linux's `F_GETLK` reports it.
    fn conflict(
        &self,
        pid: u32,
        dev: u64,
        ino: u64,
        r: (u64, u64),
        write: bool,
    ) -> Option<RecordLock> {
        self.0
            .iter()
            .filter(|l| l.pid != pid && l.overlaps(dev, ino, r.0, r.1) && (write || l.write))
            .min_by_key(|l| l.start)
            .copied()
    }

    /// Takes `[start, end)` out of `pid`'s locks on the file, splitting those it cuts.
    fn release(&mut self, pid: u32, dev: u64, ino: u64, start: u64, end: u64) {
        let mut kept = Vec::with_capacity(self.0.len());
        for l in self.0.drain(..) {
            if l.pid != pid || !l.overlaps(dev, ino, start, end) {
                kept.push(l);
                continue;
            }
            if l.start < start {
                kept.push(RecordLock { end: start, ..l });
            }
            if l.end > end {
                kept.push(RecordLock { start: end, ..l });
            }
        }
        self.0 = kept;
    }

    /// Drops every lock `pid` holds (its end), or those on one file (a close).
    pub fn drop_owner(&mut self, pid: u32, file: Option<(u64, u64)>) {
        self.0
            .retain(|l| l.pid != pid || file.is_some_and(|(d, i)| (l.dev, l.ino) != (d, i)));
    }

    /// Whether any lock is held.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Kernel {
    /// `fcntl(fd, F_GETLK | F_SETLK | F_SETLKW, &flock)`; `wait` for F_SETLKW.
    pub(super) fn sys_record_lock(
        &mut self,
        mem: &mut Memory,
        fd: u64,
        arg: u64,
        op: LockOp,
    ) -> i64 {
        use std::io::Seek;
        use std::os::unix::fs::MetadataExt;
        let mut b = [0u8; 32];
        if mem.read_bytes(arg, &mut b).is_err() {
            return -EFAULT;
        }
        let kind = i16::from_le_bytes([b[0], b[1]]);
        let whence = i16::from_le_bytes([b[2], b[3]]);
        let start = i64::from_le_bytes(b[8..16].try_into().unwrap_or([0; 8]));
        let len = i64::from_le_bytes(b[16..24].try_into().unwrap_or([0; 8]));
        let (meta, pos) = match self.fd(fd) {
            Ok(Fd::File(f)) => match f.metadata() {
                Ok(m) => {
                    let pos = if whence == 1 {
                        f.stream_position().unwrap_or(0)
                    } else {
                        0
                    };
                    (m, pos)
                }
                Err(e) => return -super::errno(&e),
            },
            Ok(_) => return -EINVAL,
            Err(e) => return -e,
        };
        let base = match whence {
            0 => 0i64,
            1 => pos as i64,
            2 => meta.len() as i64,
            _ => return -EINVAL,
        };
        let Some(from) = base.checked_add(start) else {
            return -EINVAL;
        };
        let (lo, hi) = match len {
            0 => (from, i64::MAX),
            l if l > 0 => (from, from.saturating_add(l)),
            l => (from.saturating_add(l), from),
        };
        if lo < 0 || !(F_RDLCK..=F_UNLCK).contains(&kind) {
            return -EINVAL;
        }
        let range = (lo as u64, if hi == i64::MAX { u64::MAX } else { hi as u64 });
        let (dev, ino, pid) = (meta.dev(), meta.ino(), self.threads.pid);
        let write = kind == F_WRLCK;
        match op {
            LockOp::Get => {
                let out = match self.locks.conflict(pid, dev, ino, range, write) {
                    Some(l) if kind != F_UNLCK => {
                        let mut o = [0u8; 32];
                        o[..2].copy_from_slice(
                            &(if l.write { F_WRLCK } else { F_RDLCK }).to_le_bytes(),
                        );
                        o[8..16].copy_from_slice(&l.start.to_le_bytes());
                        let len = if l.end == u64::MAX {
                            0
                        } else {
                            l.end - l.start
                        };
                        o[16..24].copy_from_slice(&len.to_le_bytes());
                        o[24..28].copy_from_slice(&l.pid.to_le_bytes());
                        o
                    }
                    _ => {
                        let mut o = b;
                        o[..2].copy_from_slice(&F_UNLCK.to_le_bytes());
                        o
                    }
                };
                if mem.write_bytes(arg, &out).is_err() {
                    return -EFAULT;
                }
                0
            }
            LockOp::Set { wait } => {
                if kind != F_UNLCK && self.locks.conflict(pid, dev, ino, range, write).is_some() {
                    return if wait { super::WOULD_BLOCK } else { -EAGAIN };
                }
                self.locks.release(pid, dev, ino, range.0, range.1);
                if kind != F_UNLCK {
                    if self.locks.0.len() >= MAX_LOCKS {
                        return -ENOLCK;
                    }
                    self.locks.0.push(RecordLock {
                        dev,
                        ino,
                        start: range.0,
                        end: range.1,
                        write,
                        pid,
                    });
                }
                self.io_changed(); // a waiter in F_SETLKW may go on
                0
            }
        }
    }

    /// A process closes a descriptor of a file: its locks on that file go (POSIX).
    pub(super) fn closing(&mut self, fd: usize) {
        use std::os::unix::fs::MetadataExt;
        if self.locks.is_empty() {
            return;
        }
        if let Some(Some(Fd::File(f))) = self.fds.get(fd) {
            if let Ok(m) = f.metadata() {
                let pid = self.threads.pid;
                self.locks.drop_owner(pid, Some((m.dev(), m.ino())));
            }
        }
    }
}

/// What a lock call does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LockOp {
    /// `F_GETLK`: the lock that would conflict.
    Get,
    /// `F_SETLK` (`wait`: `F_SETLKW`).
    Set {
        /// Wait for a conflicting lock to go.
        wait: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_release_and_split_as_posix_says() {
        let mut l = Locks::default();
        let lock = |start, end, write, pid| RecordLock {
            dev: 1,
            ino: 2,
            start,
            end,
            write,
            pid,
        };
        l.0.push(lock(0, 100, false, 1));
        assert!(
            l.conflict(2, 1, 2, (50, 60), false).is_none(),
            "two readers"
        );
        assert!(
            l.conflict(2, 1, 2, (50, 60), true).is_some(),
            "a writer against a reader"
        );
        assert!(
            l.conflict(1, 1, 2, (50, 60), true).is_none(),
            "its own lock"
        );
        assert!(
            l.conflict(2, 1, 3, (50, 60), true).is_none(),
            "another file"
        );
        l.release(1, 1, 2, 40, 60);
        assert_eq!(l.0, vec![lock(0, 40, false, 1), lock(60, 100, false, 1)]);
        l.0.push(lock(0, u64::MAX, true, 3));
        l.drop_owner(1, Some((1, 2)));
        assert_eq!(l.0, vec![lock(0, u64::MAX, true, 3)]);
        l.drop_owner(3, None);
        assert!(l.is_empty());
    }
}
