//! Runs short system-call sequences decoded from arbitrary bytes against the kernel layer, with
//! arguments biased to the boundaries where sizes overflow (0, -1, 2^31, 2^32, 2^62, 2^63,
//! 2^64 - k, addresses in and around the mapped pages). Shared by the `syscalls` fuzz target
//! (fuzz/fuzz_targets/syscalls.rs) and the `syscall_sequences` property test.
//!
//! Every call must return (the caller's time limit catches a hang) without panicking, and
//! afterwards the host memory the guest caused must stay within the documented bound: at most
//! 1.51 × the memory limit for guest pages and page tables.

use outcrop_rv::kernel::{Kernel, KernelConfig, SyscallOutcome};
use outcrop_rv::memory::{perm, Memory, PAGE_SIZE};

/// Memory limit of the driven kernel.
pub const LIMIT: u64 = 8 << 20;
/// Where the driver maps its scratch pages (filled with input bytes: paths, iovecs, buffers).
pub const SCRATCH: u64 = 0x10_0000;
const SCRATCH_PAGES: u64 = 4;

/// System calls worth hitting (the implemented ones and a few unknown).
const NUMBERS: &[u64] = &[
    63, 64, 66, 56, 57, 62, 79, 80, 29, 48, 35, 78, 214, 222, 215, 216, 226, 233, 96, 172, 99, 261,
    278, 113, 169, 160, 179, 134, 135, 258, 259, 293, 17, 220, 221,
    1000, // threads and signals:
    435, 98, 98, 98, 93, 100, 101, 115, 122, 123, 124, 129, 130, 131, 132, 133, 136, 137, 102, 103,
    107, 108, 109, 110, 111, 167, 168, 178, 73,
    // files, directories, devices and limits (issue 32)
    23, 24, 25, 34, 38, 43, 44, 46, 61, 65, 67, 68, 82, 88, 276, 439, 261, 222,
    // processes, pipes, sockets, locks (issue 53)
    59, 59, 71, 72, 95, 154, 155, 156, 157, 173, 198, 199, 199, 204, 206, 207, 210, 260, 260, 186,
    187, 188, 189, 190, 191, 192, 193, 194, // the machine's loopback network
    198, 198, 200, 200, 201, 202, 203, 203, 205, 208, 209, 242,
    // shared memory: System V segments, memfd, /dev/shm, shared anonymous mappings
    194, 194, 195, 196, 196, 197, 279, 279, 37, 47, 222, 222, 215,
    // event loops: eventfd, epoll, sendmsg/recvmsg
    19, 19, 20, 20, 21, 21, 21, 22, 22, 441, 211, 211, 212, 212,
    // working directories, modes, identities, msync
    49, 49, 50, 52, 53, 54, 55, 143, 144, 145, 146, 147, 148, 149, 150, 227, 166,
    // links, named pipes, vectors at an offset, flock, the scheduling and capability calls
    36, 36, 37, 33, 33, 47, 32, 32, 69, 70, 286, 287, 114, 153, 165, 163, 164, 140, 141, 118, 119,
    120, 121, 125, 126, 127, 92, 90, 91, 30, 31, 151, 228, 229, 230, 232, 232, 213, 223, 84,
];

/// Boundary values for arguments.
const EDGES: &[u64] = &[
    0,
    1,
    4095,
    4096,
    1 << 20,
    (1 << 31) - 1,
    1 << 31,
    1 << 32,
    32 << 30,
    1 << 46,
    1 << 47,
    1 << 62,
    1 << 63,
    u64::MAX,
    u64::MAX - 4095,
    u64::MAX - 15,
    -100i64 as u64, // AT_FDCWD
    0x20_0000_0000, // MMAP_BASE
];

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn u64(&mut self) -> Option<u64> {
        let mut v = [0u8; 8];
        for b in &mut v {
            *b = self.u8()?;
        }
        Some(u64::from_le_bytes(v))
    }
    /// An argument: a boundary, an address in or near the scratch pages, a small number, or
    /// raw bits.
    fn arg(&mut self) -> Option<u64> {
        let sel = self.u8()?;
        Some(match sel % 5 {
            0 => EDGES[usize::from(sel / 5) % EDGES.len()],
            1 => {
                let off = u64::from(self.u8()?) * 64;
                SCRATCH.wrapping_add(off).wrapping_sub(512)
            }
            2 => u64::from(self.u8()?),
            3 => EDGES[usize::from(sel / 5) % EDGES.len()].wrapping_sub(u64::from(self.u8()?)),
            _ => self.u64()?,
        })
    }
}

/// A kernel and memory as a freshly loaded program has them, with scratch pages holding the
/// first bytes of `data`.
pub fn setup(data: &[u8]) -> (Kernel, Memory) {
    let mut mem = Memory::new(LIMIT);
    let len = SCRATCH_PAGES * PAGE_SIZE;
    mem.map(SCRATCH, len, perm::R | perm::W)
        .expect("scratch pages fit the limit");
    let fill = &data[..data.len().min(len as usize)];
    mem.poke_bytes(SCRATCH, fill).expect("scratch is mapped");
    let kernel = Kernel::new(
        KernelConfig::silent("/prog".into()),
        SCRATCH + len + PAGE_SIZE,
        LIMIT,
    );
    (kernel, mem)
}

/// Decodes and runs up to 32 system calls from `data`; returns how many ran.
pub fn run(data: &[u8]) -> usize {
    let (mut kernel, mut mem) = setup(data);
    let mut input = Bytes(data.get(256..).unwrap_or_default());
    let mut x = [0u64; 32];
    let mut ran = 0;
    while ran < 32 {
        let Some(sel) = input.u8() else { break };
        let nr = if sel < 240 {
            NUMBERS[usize::from(sel) % NUMBERS.len()]
        } else {
            match input.u64() {
                Some(n) => n,
                None => break,
            }
        };
        for i in 0..6 {
            match input.arg() {
                Some(a) => x[10 + i] = a,
                None => return ran,
            }
        }
        x[17] = nr;
        let outcome = kernel.syscall(&mut mem, &mut x, ran as u64);
        ran += 1;
        let host = mem.host_bytes();
        assert!(
            host <= LIMIT * 151 / 100 + (64 << 10),
            "system call {nr} left {host} host bytes for a {LIMIT}-byte limit"
        );
        assert!(mem.mapped_pages() * PAGE_SIZE <= LIMIT);
        let threads = kernel.threads();
        assert!(threads.list.len() <= threads.max_threads);
        assert!(threads.current < threads.list.len());
        let procs = kernel.processes();
        assert!(procs.list.len() <= procs.max);
        if let SyscallOutcome::Exit(_) = outcome {
            break;
        }
    }
    ran
}
