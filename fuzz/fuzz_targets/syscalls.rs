//! Fuzz target: short random system-call sequences against the kernel layer, arguments biased
//! to boundaries (0, -1, 2^31, 2^62, 2^64 - k, addresses around the mapped pages). No call may
//! panic or hang, and the host memory the guest causes must stay within the memory limit's
//! documented bound. The driver is shared with crates/rv/tests/it/syscall_sequences.rs.

#![no_main]

#[path = "../../crates/rv/tests/common/syscall_driver.rs"]
mod driver;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    driver::run(data);
});
