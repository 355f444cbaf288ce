//! Fuzz target: the block engine against its oracle, the single-step interpreter, on arbitrary
//! code. The first two bytes choose the instruction limit and an observer stop; the rest is the
//! program, at a read-write-execute page (so it can rewrite itself), with registers pointing into
//! a data area. Both engines must end in the same state with the same block, branch and class
//! streams (`outcrop_rv::differential`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_rv::differential::{bare_machine, compare_engines, CODE_BASE, DATA_BASE, DATA_BYTES};

fuzz_target!(|data: &[u8]| {
    let [limit, stop, code @ ..] = data else {
        return;
    };
    let limit = 1 + u64::from(*limit) * 40;
    let stop = (*stop != 0).then_some(u64::from(*stop));
    let snapshot = [(CODE_BASE, code.len() as u64), (DATA_BASE, DATA_BYTES)];
    if let Err(e) = compare_engines(&|| bare_machine(code, limit), stop, &snapshot) {
        panic!("{e}");
    }
});
