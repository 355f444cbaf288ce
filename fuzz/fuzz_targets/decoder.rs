//! Fuzz target: decoding and disassembling arbitrary instruction parcels.
//!
//! Every 16/32-bit pattern must decode (possibly to `Op::Illegal`) and print without
//! panicking; a legal 32-bit instruction re-decodes from its raw bits to the same result.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_rv::inst::{decode, Op};

fuzz_target!(|data: &[u8]| {
    for w in data.chunks_exact(4) {
        let lo = u16::from_le_bytes([w[0], w[1]]);
        let hi = u16::from_le_bytes([w[2], w[3]]);
        let inst = decode(lo, hi);
        let text = inst.to_string();
        assert!(!text.is_empty());
        if inst.op != Op::Illegal && inst.len == 4 {
            assert_eq!(decode(inst.raw as u16, (inst.raw >> 16) as u16), inst);
        }
        let _ = inst.class();
    }
});
