//! Fuzz target: `outcrop_rv::demangle::demangle` on arbitrary bytes (a symbol name is a
//! stranger's text). It must return without panicking, within the output bound, and keep a
//! mangled-looking prefix only for names it read.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_rv::demangle::{demangle, MAX_DEMANGLED};

fuzz_target!(|data: &[u8]| {
    if let Some(d) = demangle(data) {
        assert!(d.len() <= MAX_DEMANGLED);
        assert!(data.starts_with(b"_Z") || data.starts_with(b"_R") || data.starts_with(b"__Z"));
    }
});
