//! System V message queues and semaphores between the guest's processes (docs/machine.md,
//! "Processes"): `msgget`/`msgsnd`/`msgrcv`/`msgctl` and `semget`/`semop`/`semtimedop`/
//! `semctl`, on the machine's own tables (nothing reaches the host's IPC namespace). Every
//! size is bounded: [`MAX_IPC_OBJECTS`] of each kind, [`MSGMAX`] bytes a message,
//! [`MSGMNB`] bytes a queue, [`SEMMSL`] semaphores a set, [`SEMOPM`] operations a call.
//!
//! A call that must wait blocks its thread with [`super::Wait::Retry`] and runs again when
//! something changed. Not modelled: `SEM_UNDO` (accepted, nothing is undone at exit). Shared
//! memory segments are [`super::shm`]'s.

use super::{Kernel, Ret, EAGAIN, EFAULT, EINVAL};
use crate::memory::Memory;
use std::collections::{BTreeMap, VecDeque};

/// Most message queues, and most semaphore sets, at once.
pub const MAX_IPC_OBJECTS: usize = 1024;
/// Largest message (Linux's `MSGMAX`).
pub const MSGMAX: usize = 8192;
/// Default bytes a queue holds (Linux's `MSGMNB`).
pub const MSGMNB: usize = 16384;
/// Most semaphores in a set (Linux allows 32,000; bounded lower here).
pub const SEMMSL: usize = 1024;
/// Most operations in one `semop` (Linux's `SEMOPM`).
pub const SEMOPM: usize = 500;

pub(super) const IPC_CREAT: u64 = 0o1000;
pub(super) const IPC_EXCL: u64 = 0o2000;
const IPC_NOWAIT: u64 = 0o4000;
pub(super) const IPC_RMID: u64 = 0;
pub(super) const IPC_SET: u64 = 1;
pub(super) const IPC_STAT: u64 = 2;
const MSG_NOERROR: u64 = 0o10000;
const MSG_EXCEPT: u64 = 0o20000;
const MSG_COPY: u64 = 0o40000;
const EEXIST: i64 = 17;
pub(super) const ENOENT: i64 = 2;
pub(super) const ENOSPC: i64 = 28;
const E2BIG: i64 = 7;
const ENOMSG: i64 = 42;
const ERANGE: i64 = 34;
const EFBIG: i64 = 27;
const IPC_INFO: u64 = 3;
const MSG_STAT: u64 = 11;
const MSG_INFO: u64 = 12;
const MSG_STAT_ANY: u64 = 13;

/// Who made an object and how it may be used (`struct ipc64_perm`'s fields kept).
#[derive(Clone, Copy, Debug, Default)]
struct Perm {
    key: i32,
    mode: u32,
    ctime: u64,
}

#[derive(Default)]
struct Queue {
    perm: Perm,
    msgs: VecDeque<(i64, Vec<u8>)>,
    bytes: usize,
    qbytes: usize,
    stime: u64,
    rtime: u64,
    lspid: u32,
    lrpid: u32,
}

#[derive(Default)]
struct SemSet {
    perm: Perm,
    /// (value, pid of the last operation).
    sems: Vec<(u16, u32)>,
    otime: u64,
    /// The threads a `semop` on it waits for: tid → (the semaphore whose operation could not
    /// proceed, whether it waits for zero), as `GETNCNT`/`GETZCNT` count them.
    waiters: BTreeMap<u32, (usize, bool)>,
}

/// The machine's System V IPC objects, shared by all the guest's processes.
#[derive(Default)]
pub(crate) struct Ipc {
    queues: BTreeMap<i32, Queue>,
    sets: BTreeMap<i32, SemSet>,
    next: i32,
}

impl Ipc {
    fn new_id(&mut self) -> i32 {
        self.next = self.next.wrapping_add(1) & 0x7fff_ffff;
        self.next
    }
}

/// The `struct ipc64_perm` bytes (48) of riscv64's asm-generic layout.
fn perm_bytes(p: &Perm) -> [u8; 48] {
    let mut b = [0u8; 48];
    b[..4].copy_from_slice(&p.key.to_le_bytes());
    // uid, gid, cuid, cgid: 0 (the guest runs as root, as getuid says)
    b[20..24].copy_from_slice(&p.mode.to_le_bytes());
    b
}

impl Kernel {
    /// `/proc/sysvipc/sem` (`sems`) or `/proc/sysvipc/msg`: one line per set or queue, in
    /// Linux's columns (owners 0: the guest runs as root).
    pub(super) fn ipc_listing(&self, sems: bool) -> Vec<u8> {
        let mut s = String::new();
        if sems {
            s.push_str("       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime\n");
            for (id, set) in &self.ipc.sets {
                s.push_str(&format!(
                    "{:>10} {id:>10}  {:>4o} {:>10} {:>5} {:>5} {:>5} {:>5} {:>10} {:>10}\n",
                    set.perm.key,
                    set.perm.mode,
                    set.sems.len(),
                    0,
                    0,
                    0,
                    0,
                    set.otime,
                    set.perm.ctime
                ));
            }
        } else {
            s.push_str("       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  cgid      stime      rtime      ctime\n");
            for (id, q) in &self.ipc.queues {
                s.push_str(&format!(
                    "{:>10} {id:>10}  {:>4o}  {:>10} {:>10} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>10} {:>10} {:>10}\n",
                    q.perm.key,
                    q.perm.mode,
                    q.bytes,
                    q.msgs.len(),
                    q.lspid,
                    q.lrpid,
                    0,
                    0,
                    0,
                    0,
                    q.stime,
                    q.rtime,
                    q.perm.ctime
                ));
            }
        }
        s.into_bytes()
    }

    /// Whether thread `tid`, of any process, waits in `semop`/`semtimedop`.
    fn waits_in_semop(&self, tid: u32) -> bool {
        let waits = |t: &super::threads::Thread| {
            t.tid == tid
                && matches!(t.wait, super::Wait::Retry { .. })
                && matches!(t.hart.x[17], 192 | 193)
        };
        self.threads.list.iter().any(waits)
            || self
                .procs
                .list
                .iter()
                .filter_map(|p| p.state.as_deref())
                .any(|s| s.threads.iter().any(waits))
    }

    fn ipc_now(&self, instret: u64) -> u64 {
        self.realtime_ns(instret) / 1_000_000_000
    }

    /// `msgget(key, flags)` and `semget(key, nsems, flags)` (`nsems` for a set).
    pub(super) fn sys_ipc_get(
        &mut self,
        key: u64,
        nsems: Option<u64>,
        flags: u64,
        instret: u64,
    ) -> i64 {
        let key = key as i32;
        let now = self.ipc_now(instret);
        let existing = if key == 0 {
            None // IPC_PRIVATE: always a new one
        } else {
            match nsems {
                None => self
                    .ipc
                    .queues
                    .iter()
                    .find(|(_, q)| q.perm.key == key)
                    .map(|(&i, _)| i),
                Some(_) => self
                    .ipc
                    .sets
                    .iter()
                    .find(|(_, s)| s.perm.key == key)
                    .map(|(&i, _)| i),
            }
        };
        if let Some(id) = existing {
            if flags & IPC_CREAT != 0 && flags & IPC_EXCL != 0 {
                return -EEXIST;
            }
            if let (Some(n), Some(s)) = (nsems, self.ipc.sets.get(&id)) {
                if n as usize > s.sems.len() {
                    return -EINVAL;
                }
            }
            return i64::from(id);
        }
        if key != 0 && flags & IPC_CREAT == 0 {
            return -ENOENT;
        }
        let perm = Perm {
            key,
            mode: (flags & 0o777) as u32,
            ctime: now,
        };
        match nsems {
            None => {
                if self.ipc.queues.len() >= MAX_IPC_OBJECTS {
                    return -ENOSPC;
                }
                let id = self.ipc.new_id();
                self.ipc.queues.insert(
                    id,
                    Queue {
                        perm,
                        qbytes: MSGMNB,
                        ..Queue::default()
                    },
                );
                i64::from(id)
            }
            Some(n) => {
                if n == 0 || n as usize > SEMMSL {
                    return -EINVAL;
                }
                if self.ipc.sets.len() >= MAX_IPC_OBJECTS {
                    return -ENOSPC;
                }
                let id = self.ipc.new_id();
                self.ipc.sets.insert(
                    id,
                    SemSet {
                        perm,
                        sems: vec![(0, 0); n as usize],
                        otime: 0,
                        waiters: BTreeMap::new(),
                    },
                );
                i64::from(id)
            }
        }
    }

    /// The error for an identifier that is gone: `EIDRM` if it went while this call waited
    /// on it (the call is running again), else `EINVAL`.
    fn removed_while_waiting(&self) -> i64 {
        if self.threads.cur().retrying {
            43 // EIDRM
        } else {
            EINVAL
        }
    }

    /// `msgsnd(id, msgp, size, flags)`.
    pub(super) fn sys_msgsnd(&mut self, mem: &mut Memory, a: [u64; 6], instret: u64) -> i64 {
        let [id, msgp, size, flags, ..] = a;
        if size as usize > MSGMAX {
            return -EINVAL;
        }
        let Ok(mtype) = mem.load_u64(msgp) else {
            return -EFAULT;
        };
        if (mtype as i64) < 1 {
            return -EINVAL;
        }
        let mut data = vec![0u8; size as usize];
        if mem.read_bytes(msgp.wrapping_add(8), &mut data).is_err() {
            return -EFAULT;
        }
        let (pid, now) = (self.threads.pid, self.ipc_now(instret));
        let removed = self.removed_while_waiting();
        let Some(q) = self.ipc.queues.get_mut(&(id as i32)) else {
            return -removed;
        };
        if q.bytes + data.len() > q.qbytes {
            return if flags & IPC_NOWAIT != 0 {
                -EAGAIN
            } else {
                super::WOULD_BLOCK
            };
        }
        q.bytes += data.len();
        q.msgs.push_back((mtype as i64, data));
        q.stime = now;
        q.lspid = pid;
        self.io_changed();
        0
    }

    /// `msgrcv(id, msgp, size, type, flags)`.
    pub(super) fn sys_msgrcv(&mut self, mem: &mut Memory, a: [u64; 6], instret: u64) -> i64 {
        let [id, msgp, size, mtype, flags, _] = a;
        let want = mtype as i64;
        // MSG_COPY: a copy of the message at index `mtype`, left in the queue; only with
        // IPC_NOWAIT and without MSG_EXCEPT (EINVAL), as Linux
        let copy = flags & MSG_COPY != 0;
        if copy && (flags & IPC_NOWAIT == 0 || flags & MSG_EXCEPT != 0) {
            return -EINVAL;
        }
        let (pid, now) = (self.threads.pid, self.ipc_now(instret));
        let removed = self.removed_while_waiting();
        let Some(q) = self.ipc.queues.get_mut(&(id as i32)) else {
            return -removed;
        };
        let found = match want {
            t if copy => usize::try_from(t).ok().filter(|&i| i < q.msgs.len()),
            0 => (!q.msgs.is_empty()).then_some(0),
            t if t > 0 && flags & MSG_EXCEPT != 0 => q.msgs.iter().position(|m| m.0 != t),
            t if t > 0 => q.msgs.iter().position(|m| m.0 == t),
            t => q
                .msgs
                .iter()
                .enumerate()
                .filter(|(_, m)| m.0 <= t.saturating_neg())
                .min_by_key(|(i, m)| (m.0, *i))
                .map(|(i, _)| i),
        };
        let Some(i) = found else {
            return if flags & IPC_NOWAIT != 0 {
                -ENOMSG
            } else {
                super::WOULD_BLOCK
            };
        };
        let len = q.msgs[i].1.len();
        if len > size as usize && flags & MSG_NOERROR == 0 {
            return -E2BIG;
        }
        let n = len.min(size as usize);
        let (t, data) = &q.msgs[i];
        if mem.store_u64(msgp, *t as u64).is_err()
            || mem.write_bytes(msgp.wrapping_add(8), &data[..n]).is_err()
        {
            return -EFAULT;
        }
        if copy {
            return n as i64;
        }
        q.msgs.remove(i);
        q.bytes -= len;
        q.rtime = now;
        q.lrpid = pid;
        self.io_changed();
        n as i64
    }

    /// `msgctl(id, cmd, buf)`: IPC_STAT, IPC_SET (mode and queue size), IPC_RMID.
    pub(super) fn sys_msgctl(&mut self, mem: &mut Memory, id: u64, cmd: u64, buf: u64) -> i64 {
        let id = id as i32;
        match cmd & 0xff {
            IPC_RMID => {
                if self.ipc.queues.remove(&id).is_none() {
                    return -EINVAL;
                }
                self.io_changed();
                0
            }
            // IPC_STAT; MSG_STAT and MSG_STAT_ANY take the queue's index, which is its id
            // here (ids are handed out from 1 without a sequence number), and return the id
            IPC_STAT | MSG_STAT | MSG_STAT_ANY => {
                let Some(q) = self.ipc.queues.get(&id) else {
                    return -EINVAL;
                };
                let mut b = [0u8; 120];
                b[..48].copy_from_slice(&perm_bytes(&q.perm));
                for (at, v) in [
                    (48, q.stime),
                    (56, q.rtime),
                    (64, q.perm.ctime),
                    (72, q.bytes as u64),
                    (80, q.msgs.len() as u64),
                    (88, q.qbytes as u64),
                ] {
                    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
                }
                b[96..100].copy_from_slice(&q.lspid.to_le_bytes());
                b[100..104].copy_from_slice(&q.lrpid.to_le_bytes());
                if mem.write_bytes(buf, &b).is_err() {
                    return -EFAULT;
                }
                if cmd & 0xff == IPC_STAT {
                    0
                } else {
                    i64::from(id)
                }
            }
            // IPC_INFO: the limits; MSG_INFO: what is in use (queues, messages, bytes);
            // both return the highest index in use
            IPC_INFO | MSG_INFO => {
                let (pool, map, tql) = if cmd & 0xff == MSG_INFO {
                    let q = &self.ipc.queues;
                    let msgs: usize = q.values().map(|q| q.msgs.len()).sum();
                    let bytes: usize = q.values().map(|q| q.bytes).sum();
                    (q.len(), msgs, bytes)
                } else {
                    (MSGMNB * MAX_IPC_OBJECTS / 1024, MSGMNB, MSGMAX)
                };
                // struct msginfo: msgpool, msgmap, msgmax, msgmnb, msgmni, msgssz, msgtql
                // (ints), msgseg (unsigned short)
                let mut b = [0u8; 32];
                let ints = [pool, map, MSGMAX, MSGMNB, MAX_IPC_OBJECTS, 16, tql];
                for (i, v) in ints.iter().enumerate() {
                    b[4 * i..4 * i + 4].copy_from_slice(&(*v as u32).to_le_bytes());
                }
                b[28..30].copy_from_slice(&0xffffu16.to_le_bytes());
                if mem.write_bytes(buf, &b).is_err() {
                    return -EFAULT;
                }
                self.ipc
                    .queues
                    .keys()
                    .next_back()
                    .map_or(0, |&k| i64::from(k))
            }
            IPC_SET => {
                let mut b = [0u8; 120];
                if mem.read_bytes(buf, &mut b).is_err() {
                    return -EFAULT;
                }
                let Some(q) = self.ipc.queues.get_mut(&id) else {
                    return -EINVAL;
                };
                let mode = u32::from_le_bytes(b[20..24].try_into().unwrap_or([0; 4]));
                let qbytes = u64::from_le_bytes(b[88..96].try_into().unwrap_or([0; 8]));
                if qbytes as usize > MSGMNB * 4 {
                    return -EFBIG;
                }
                q.perm.mode = mode & 0o777;
                q.qbytes = qbytes as usize;
                0
            }
            _ => -EINVAL,
        }
    }

    /// `semop(id, sops, n)` and `semtimedop(id, sops, n, timeout)`: every operation at once,
    /// or none (waiting while one cannot proceed, unless it says `IPC_NOWAIT`).
    pub(super) fn sys_semop(
        &mut self,
        mem: &mut Memory,
        a: [u64; 6],
        instret: u64,
    ) -> Result<Ret, i64> {
        let [id, sops, n, timeout, ..] = a;
        if n == 0 || n as usize > SEMOPM {
            return Err(if n == 0 { EINVAL } else { E2BIG });
        }
        let mut raw = vec![0u8; n as usize * 6];
        mem.read_bytes(sops, &mut raw).map_err(|_| EFAULT)?;
        let ops: Vec<(usize, i16, i16)> = raw
            .chunks_exact(6)
            .map(|c| {
                let w = |i: usize| u16::from_le_bytes([c[i], c[i + 1]]);
                (w(0) as usize, w(2) as i16, w(4) as i16)
            })
            .collect();
        let deadline = match self.threads.cur().retry_deadline {
            Some(d) => Some(d),
            None if timeout == 0 => None,
            None => Some(
                self.machine_ns(instret)
                    .saturating_add(super::threads::read_timespec(mem, timeout)?),
            ),
        };
        let (pid, now, tid) = (self.threads.pid, self.ipc_now(instret), self.tid());
        let expired = deadline.is_some_and(|d| d <= self.machine_ns(instret));
        let removed = self.removed_while_waiting();
        let set = self.ipc.sets.get_mut(&(id as i32)).ok_or(removed)?;
        set.waiters.remove(&tid);
        let mut vals: Vec<u16> = set.sems.iter().map(|s| s.0).collect();
        for &(num, op, flags) in &ops {
            let v = vals.get_mut(num).ok_or(EFBIG)?;
            let ok = match op {
                0 => *v == 0,
                o if o > 0 => {
                    let nv = i32::from(*v) + i32::from(o);
                    if nv > 32767 {
                        return Err(ERANGE);
                    }
                    *v = nv as u16;
                    true
                }
                o => {
                    let need = o.unsigned_abs();
                    if *v >= need {
                        *v -= need;
                        true
                    } else {
                        false
                    }
                }
            };
            if !ok {
                if flags as u64 & IPC_NOWAIT != 0 {
                    return Err(EAGAIN);
                }
                if expired {
                    return Err(EAGAIN); // semtimedop's timeout is EAGAIN, as on Linux
                }
                set.waiters.insert(tid, (num, op == 0));
                self.threads.cur_mut().retry_deadline = deadline;
                return Ok(self.block_retry(deadline));
            }
        }
        for (&(num, ..), _) in ops.iter().zip(0..) {
            set.sems[num].1 = pid;
        }
        for (s, v) in set.sems.iter_mut().zip(vals) {
            s.0 = v;
        }
        set.otime = now;
        self.io_changed();
        Ok(Ret::Value(0))
    }

    /// `semctl(id, num, cmd, arg)`: IPC_RMID, IPC_STAT, IPC_SET, IPC_INFO, SEM_INFO,
    /// SEM_STAT(_ANY), GETVAL, SETVAL, GETALL, SETALL, GETPID, GETNCNT, GETZCNT.
    pub(super) fn sys_semctl(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        const GETPID: u64 = 11;
        const GETVAL: u64 = 12;
        const GETALL: u64 = 13;
        const GETNCNT: u64 = 14;
        const GETZCNT: u64 = 15;
        const SETVAL: u64 = 16;
        const SETALL: u64 = 17;
        let [id, num, cmd, arg, ..] = a;
        let id = id as i32;
        let cmd = cmd & 0xff;
        if cmd == IPC_RMID {
            if self.ipc.sets.remove(&id).is_none() {
                return -EINVAL;
            }
            self.io_changed();
            return 0;
        }
        const SEM_STAT: u64 = 18;
        const SEM_INFO: u64 = 19;
        const SEM_STAT_ANY: u64 = 20;
        if matches!(cmd, IPC_INFO | SEM_INFO) {
            // struct seminfo: semmap, semmni, semmns, semmnu, semmsl, semopm, semume, semusz,
            // semvmx, semaem; SEM_INFO puts the sets and semaphores in use in the last two
            // but one and last
            let sets = &self.ipc.sets;
            let (usz, aem) = if cmd == SEM_INFO {
                (sets.len(), sets.values().map(|s| s.sems.len()).sum())
            } else {
                (20, 16384)
            };
            let total = SEMMSL * MAX_IPC_OBJECTS;
            let ints = [
                total,
                MAX_IPC_OBJECTS,
                total,
                total,
                SEMMSL,
                SEMOPM,
                SEMOPM,
                usz,
                32767,
                aem,
            ];
            let b: Vec<u8> = ints
                .iter()
                .flat_map(|&v| (v as u32).to_le_bytes())
                .collect();
            if mem.write_bytes(arg, &b).is_err() {
                return -EFAULT;
            }
            return sets.keys().next_back().map_or(0, |&k| i64::from(k));
        }
        // SEM_STAT: by index (the machine's ids are their indexes), answering the id
        let (cmd, stat_id) = match cmd {
            SEM_STAT | SEM_STAT_ANY => (IPC_STAT, Some(id)),
            c => (c, None),
        };
        let pid = self.threads.pid;
        if matches!(cmd, GETNCNT | GETZCNT) {
            // only threads still waiting in semop count (not one a signal or an exit took)
            let waiting: Vec<u32> = self.ipc.sets.get(&id).map_or_else(Vec::new, |set| {
                set.waiters
                    .keys()
                    .copied()
                    .filter(|&t| self.waits_in_semop(t))
                    .collect()
            });
            if let Some(set) = self.ipc.sets.get_mut(&id) {
                set.waiters.retain(|t, _| waiting.contains(t));
            }
        }
        let Some(set) = self.ipc.sets.get_mut(&id) else {
            return -EINVAL;
        };
        let n = set.sems.len();
        let one = |num: u64| (num as usize) < n;
        match cmd {
            IPC_STAT => {
                let mut b = [0u8; 88];
                b[..48].copy_from_slice(&perm_bytes(&set.perm));
                b[48..56].copy_from_slice(&set.otime.to_le_bytes());
                b[56..64].copy_from_slice(&set.perm.ctime.to_le_bytes());
                b[64..72].copy_from_slice(&(n as u64).to_le_bytes());
                if mem.write_bytes(arg, &b).is_err() {
                    return -EFAULT;
                }
                stat_id.map_or(0, i64::from)
            }
            IPC_SET => match mem.load_u32(arg.wrapping_add(20)) {
                Ok(mode) => {
                    set.perm.mode = mode & 0o777;
                    0
                }
                Err(_) => -EFAULT,
            },
            GETVAL if one(num) => i64::from(set.sems[num as usize].0),
            GETPID if one(num) => i64::from(set.sems[num as usize].1),
            GETNCNT | GETZCNT if one(num) => set
                .waiters
                .values()
                .filter(|&&(at, zero)| at == num as usize && zero == (cmd == GETZCNT))
                .count() as i64,
            SETVAL if one(num) => {
                let v = arg as i32;
                if !(0..=32767).contains(&v) {
                    return -ERANGE;
                }
                set.sems[num as usize] = (v as u16, pid);
                self.io_changed();
                0
            }
            GETALL => {
                let b: Vec<u8> = set.sems.iter().flat_map(|s| s.0.to_le_bytes()).collect();
                if mem.write_bytes(arg, &b).is_err() {
                    return -EFAULT;
                }
                0
            }
            SETALL => {
                let mut b = vec![0u8; n * 2];
                if mem.read_bytes(arg, &mut b).is_err() {
                    return -EFAULT;
                }
                let vals: Vec<u16> = b
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect();
                if vals.iter().any(|&v| v > 32767) {
                    return -ERANGE;
                }
                for (s, v) in set.sems.iter_mut().zip(vals) {
                    *s = (v, pid);
                }
                self.io_changed();
                0
            }
            GETVAL | GETPID | GETNCNT | GETZCNT | SETVAL => -EINVAL,
            _ => -EINVAL,
        }
    }
}
