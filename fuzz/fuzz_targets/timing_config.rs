//! Fuzz target: `outcrop_timing::Config::from_toml` on arbitrary text.
//!
//! Parsing must return (an error is fine) without panicking; a configuration it accepts must
//! build a model that times a few instructions without panicking (no division by zero, no
//! out-of-range table index from odd sizes).

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_rv::inst::{Class, Op};
use outcrop_rv::Retire;
use outcrop_timing::{Config, Model};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(cfg) = Config::from_toml(text) else {
        return;
    };
    let mut m = Model::new(&cfg);
    for i in 0..64u64 {
        let r = Retire {
            pc: 0x1000 + 4 * (i % 8),
            len: 4,
            op: Some(if i % 3 == 0 { Op::Ld } else { Op::Beq }),
            class: Some(if i % 3 == 0 { Class::Load } else { Class::Branch }),
            mem_addr: i * 4096,
            mem_size: if i % 3 == 0 { 8 } else { 0 },
            taken: i % 2 == 0,
            regs: [(i % 32) as u8, 1, 2, 0],
            ..Retire::default()
        };
        let t = m.step(&r);
        assert!(t.retire > t.complete);
    }
    let totals = m.totals();
    let s = totals.cpi_stack;
    assert_eq!(s.base + s.branch + s.icache + s.dcache + s.other, totals.cycles);
});
