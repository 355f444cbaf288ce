//! The machine's own answers to a few `/proc` and `/sys` files programs read to size
//! themselves (docs/machine.md, "Files"): `/proc/meminfo` (the machine's memory limit and what
//! its processes map, as `sysinfo` says), `/proc/stat`, `/proc/cpuinfo` (one hart and the
//! machine's extensions) and `/sys/devices/system/cpu/online`
//! and `possible` (one CPU, as `sched_getaffinity` says). They are generated when opened,
//! read-only, and never read from the host, so they are the same on every host and under
//! `--deterministic`; a grant of the host's `/proc` is not needed nor consulted for them.

use super::{Fd, Kernel};
use crate::memory::{Memory, PAGE_SIZE};
use std::sync::{Arc, Mutex};

const EACCES: i64 = 13;
const O_ACCMODE: u64 = 3;
const O_CLOEXEC: u64 = 0o2000000;

/// An open generated file: its bytes and the offset shared by its descriptors.
#[derive(Clone)]
pub(crate) struct ProcFile {
    data: Arc<Vec<u8>>,
    pos: Arc<Mutex<usize>>,
}

impl ProcFile {
    /// Reads from the offset into `out`.
    pub fn read(&self, out: &mut [u8]) -> usize {
        let mut pos = self
            .pos
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let start = (*pos).min(self.data.len());
        let n = out.len().min(self.data.len() - start);
        out[..n].copy_from_slice(&self.data[start..start + n]);
        *pos = start + n;
        n
    }

    /// `lseek`: the new offset (`whence` 0, 1, 2), or `None` if it would be negative.
    pub fn seek(&self, off: i64, whence: u64) -> Option<i64> {
        let mut pos = self
            .pos
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let base = match whence {
            0 => 0,
            1 => *pos as i64,
            2 => self.data.len() as i64,
            _ => return None,
        };
        let to = base.checked_add(off).filter(|&t| t >= 0)?;
        *pos = usize::try_from(to).ok()?;
        Some(to)
    }
}

/// Whether the machine answers `path` itself.
pub(super) fn generated(path: &[u8]) -> bool {
    matches!(
        path,
        b"/proc/meminfo"
            | b"/proc/stat"
            | b"/proc/cpuinfo"
            | b"/sys/devices/system/cpu/online"
            | b"/sys/devices/system/cpu/possible"
    )
}

impl Kernel {
    /// The bytes of generated file `path`.
    fn generate(&self, mem: &Memory, path: &[u8], instret: u64) -> Vec<u8> {
        match path {
            b"/proc/meminfo" => {
                let total = self.memory_limit / 1024;
                let free = self
                    .memory_limit
                    .saturating_sub(mem.mapped_pages() * PAGE_SIZE)
                    / 1024;
                let mut s = String::new();
                for (k, v) in [
                    ("MemTotal", total),
                    ("MemFree", free),
                    ("MemAvailable", free),
                    ("Buffers", 0),
                    ("Cached", 0),
                    ("SwapCached", 0),
                    ("Active", 0),
                    ("Inactive", 0),
                    ("SwapTotal", 0),
                    ("SwapFree", 0),
                    ("Dirty", 0),
                    ("Shmem", 0),
                    ("CommitLimit", total),
                    ("Committed_AS", total - free),
                    ("HugePages_Total", 0),
                    ("HugePages_Free", 0),
                    ("Hugepagesize", 2048),
                ] {
                    let unit = if k.starts_with("HugePages_") {
                        ""
                    } else {
                        " kB"
                    };
                    s.push_str(&format!("{:<16}{:>8}{unit}\n", format!("{k}:"), v));
                }
                s.into_bytes()
            }
            b"/proc/stat" => {
                // one CPU; its time in clock ticks (100 Hz) of machine time, all "user"
                let ticks = self.monotonic_ns(instret) / 10_000_000;
                format!(
                    "cpu  {ticks} 0 0 0 0 0 0 0 0 0\ncpu0 {ticks} 0 0 0 0 0 0 0 0 0\n\
                     intr 0\nctxt 0\nbtime 0\nprocesses {}\nprocs_running 1\n\
                     procs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n",
                    self.procs.history.len()
                )
                .into_bytes()
            }
            b"/proc/cpuinfo" => b"processor\t: 0\nhart\t\t: 0\n\
                isa\t\t: rv64imafdc_zicsr_zifencei_zba_zbb_zbc_zbs\nmmu\t\t: sv48\n\
                uarch\t\t: outcrop\n\n"
                .to_vec(),
            _ => b"0\n".to_vec(),
        }
    }

    /// `openat` of a generated file (`None`: not one): read-only.
    pub(super) fn proc_open(
        &mut self,
        mem: &mut Memory,
        path: u64,
        flags: u64,
        instret: u64,
    ) -> Option<i64> {
        let p = mem.read_cstr(path, 64).ok()?;
        if !generated(&p) {
            return None;
        }
        if flags & O_ACCMODE != 0 {
            return Some(-EACCES);
        }
        let data = self.generate(mem, &p, instret);
        let fd = self.install(Fd::Proc(ProcFile {
            data: Arc::new(data),
            pos: Arc::new(Mutex::new(0)),
        }));
        if fd >= 0 && flags & O_CLOEXEC != 0 {
            self.cloexec.insert(fd as usize);
        }
        Some(fd)
    }

    /// `faccessat` of a generated file: readable, nothing else.
    pub(super) fn proc_access(&mut self, mem: &mut Memory, path: u64, mode: u64) -> Option<i64> {
        let p = mem.read_cstr(path, 64).ok()?;
        if !generated(&p) {
            return None;
        }
        // W_OK 2, X_OK 1
        Some(if mode & 3 != 0 { -EACCES } else { 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_file_reads_and_seeks_like_a_file() {
        let f = ProcFile {
            data: Arc::new(b"0\n".to_vec()),
            pos: Arc::new(Mutex::new(0)),
        };
        let mut b = [0u8; 8];
        assert_eq!(f.read(&mut b), 2);
        assert_eq!(&b[..2], b"0\n");
        assert_eq!(f.read(&mut b), 0, "end of file");
        assert_eq!(f.seek(0, 0), Some(0));
        assert_eq!(f.seek(-1, 2), Some(1));
        assert_eq!(f.read(&mut b), 1);
        assert_eq!(f.seek(-5, 1), None, "before the start");
        assert!(generated(b"/proc/meminfo") && !generated(b"/proc/self/maps"));
    }
}
