//! Limits, time and the system: `prlimit64`, `getrandom`, the clocks, `uname`, `sysinfo`.

use super::*;

impl Kernel {
    /// prlimit64 on this process: the limits it sets are kept and those the machine can
    /// enforce are: RLIMIT_NOFILE (descriptor numbers), RLIMIT_DATA (the program break and
    /// private writable mappings) and RLIMIT_AS (everything mapped), on top of
    /// `--memory-limit`. A soft limit above the hard one, or a hard one raised, is EINVAL /
    /// EPERM as on Linux.
    pub(super) fn sys_prlimit64(
        &mut self,
        mem: &mut Memory,
        pid: u64,
        resource: u64,
        new: u64,
        old: u64,
    ) -> i64 {
        const EPERM_: i64 = EPERM;
        if pid != 0 && pid as i64 != self.pid() {
            return -ESRCH;
        }
        let Some(&(cur, max)) = self.rlimits.get(resource as usize) else {
            return -EINVAL;
        };
        let set = if new != 0 {
            let (Ok(c), Ok(m)) = (mem.load_u64(new), mem.load_u64(new.wrapping_add(8))) else {
                return -EFAULT;
            };
            if c > m {
                return -EINVAL;
            }
            if m > max {
                return -EPERM_;
            }
            Some((c, m))
        } else {
            None
        };
        if old != 0 {
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&u64::to_le_bytes(cur));
            b[8..].copy_from_slice(&u64::to_le_bytes(max));
            if mem.write_bytes(old, &b).is_err() {
                return -EFAULT;
            }
        }
        if let Some(l) = set {
            self.rlimits[resource as usize] = l;
        }
        0
    }

    /// The soft limit of `resource`.
    pub(super) fn rlimit(&self, resource: usize) -> u64 {
        self.rlimits.get(resource).map_or(u64::MAX, |l| l.0)
    }

    /// Whether mapping `len` more bytes stays within RLIMIT_AS (and RLIMIT_DATA for a
    /// private writable mapping).
    pub(super) fn within_rlimits(&self, mem: &Memory, len: u64, data: bool) -> bool {
        let now = mem.mapped_pages().saturating_mul(PAGE_SIZE);
        let total = now.saturating_add(len);
        total <= self.rlimit(RLIMIT_AS) && (!data || total <= self.rlimit(RLIMIT_DATA))
    }

    pub(super) fn sys_getrandom(
        &mut self,
        mem: &mut Memory,
        buf: u64,
        len: u64,
        flags: u64,
    ) -> i64 {
        // GRND_NONBLOCK 1, GRND_RANDOM 2, GRND_INSECURE 4 (not with GRND_RANDOM)
        if flags & !7 != 0 || flags & 6 == 6 {
            return -EINVAL;
        }
        let n = (len as usize).min(MAX_IO);
        let mut tmp = vec![0u8; n];
        self.random_bytes(&mut tmp);
        match mem.write_bytes(buf, &tmp) {
            Ok(()) => n as i64,
            Err(_) => -EFAULT,
        }
    }

    pub(super) fn sys_clock_gettime(
        &mut self,
        mem: &mut Memory,
        clock: u64,
        tp: u64,
        instret: u64,
    ) -> i64 {
        let ns = match clock {
            0 | 5 | 8 => self.realtime_ns(instret), // REALTIME, REALTIME_COARSE, REALTIME_ALARM
            1 | 4 | 6 | 7 | 2 | 3 => self.monotonic_ns(instret), // MONOTONIC*, BOOTTIME, CPUTIME
            _ => return -EINVAL,
        };
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
        b[8..].copy_from_slice(&(ns % 1_000_000_000).to_le_bytes());
        match mem.write_bytes(tp, &b) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    pub(super) fn sys_gettimeofday(
        &mut self,
        mem: &mut Memory,
        tv: u64,
        tz: u64,
        instret: u64,
    ) -> i64 {
        // the time zone: UTC, no daylight saving
        if tz != 0 && mem.write_bytes(tz, &[0u8; 8]).is_err() {
            return -EFAULT;
        }
        if tv == 0 {
            return 0;
        }
        let ns = self.realtime_ns(instret);
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
        b[8..].copy_from_slice(&((ns % 1_000_000_000) / 1000).to_le_bytes());
        match mem.write_bytes(tv, &b) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    pub(super) fn sys_uname(&mut self, mem: &mut Memory, buf: u64) -> i64 {
        let mut b = [0u8; 65 * 6];
        for (i, s) in [
            "Linux",
            "outcrop",
            "6.1.0-outcrop",
            "#1 SMP",
            "riscv64",
            "(none)",
        ]
        .iter()
        .enumerate()
        {
            b[65 * i..65 * i + s.len()].copy_from_slice(s.as_bytes());
        }
        match mem.write_bytes(buf, &b) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }

    pub(super) fn sys_sysinfo(&mut self, mem: &mut Memory, buf: u64, instret: u64) -> i64 {
        let mut b = [0u8; 112];
        b[..8].copy_from_slice(&(self.monotonic_ns(instret) / 1_000_000_000).to_le_bytes());
        b[32..40].copy_from_slice(&self.memory_limit.to_le_bytes()); // totalram
        let free = self
            .memory_limit
            .saturating_sub(mem.mapped_pages() * PAGE_SIZE);
        b[40..48].copy_from_slice(&free.to_le_bytes()); // freeram
        b[80..82].copy_from_slice(&1u16.to_le_bytes()); // procs
        b[104..108].copy_from_slice(&1u32.to_le_bytes()); // mem_unit
        match mem.write_bytes(buf, &b) {
            Ok(()) => 0,
            Err(_) => -EFAULT,
        }
    }
}
