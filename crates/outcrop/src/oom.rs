//! Running out of host memory is an error a user can act on, not an abort (docs/security.md,
//! "Memory"): the one audited `unsafe` module of the binary.
//!
//! Rust's default answer to a failed allocation prints "memory allocation of N bytes failed"
//! and aborts (SIGABRT, a core file, exit status 134). Outcrop bounds what it can before it
//! allocates (`files::check_memory_for`, the guest's `--memory-limit`, per-byte bounds in
//! every reader), but a host cap below what a run needs (`ulimit -v`, `prlimit --as`, a
//! container) can still make an allocation fail anywhere. [`Allocator`] is the system
//! allocator with one change: an allocation that fails ends the process with a one-line error
//! naming the size and the host's limit, and exit status 1. Report directories and outputs
//! are written beside their final names and swapped in when complete (`outcrop_cli::files`), so a run
//! that ends here has replaced nothing a user had (its hidden `.partial` staging stays, as
//! after SIGKILL: removing it would allocate).
//!
//! Contract: every method forwards to [`System`] with its arguments unchanged, so the
//! allocator's guarantees are `System`'s; nothing here allocates; [`out_of_memory`] writes
//! one message with `write(2)` and ends the process with `_exit(2)` (no destructors, no
//! `atexit` handlers, which could allocate again).
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};

/// The system allocator, ending the process with an error when an allocation fails.
pub struct Allocator;

// SAFETY: each method calls the same method of `System` with the caller's arguments, under
// the caller's `GlobalAlloc` contract, and returns its result unchanged (a null result never
// returns: `out_of_memory` ends the process).
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract (a layout of non-zero size).
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, i.e. from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` with `layout`; the caller upholds `new_size`'s
        // contract (non-zero, no overflow when rounded to the alignment).
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            out_of_memory(new_size);
        }
        p
    }
}

/// A message assembled on the stack (nothing here may allocate).
struct Message {
    buf: [u8; 400],
    len: usize,
}

impl Message {
    fn push(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
    }

    fn number(&mut self, mut v: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }
}

/// Writes the error and ends the process with exit status 1.
#[cold]
fn out_of_memory(size: usize) -> ! {
    let mut m = Message {
        buf: [0; 400],
        len: 0,
    };
    m.push(b"outcrop: error: out of host memory: an allocation of ");
    m.number(size as u64);
    m.push(b" bytes failed");
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable `rlimit` for the call's duration.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } == 0;
    if got && limit.rlim_cur != libc::RLIM_INFINITY {
        m.push(b" under an address-space limit of ");
        m.number(limit.rlim_cur >> 20);
        m.push(b" MiB (ulimit -v, prlimit --as)");
    }
    m.push(b"; raise the limit, or lower --memory-limit or the input's size. No earlier output was replaced (a hidden .NAME.XXXXXX.partial beside one may remain).\n");
    // SAFETY: the buffer is valid for `len` bytes; descriptor 2 may be closed, in which case
    // write fails harmlessly. `_exit` never returns.
    unsafe {
        libc::write(2, m.buf.as_ptr().cast(), m.len);
        libc::_exit(1)
    }
}
