//! Fuzz target: `outcrop_timing::Config::from_toml` on arbitrary text.
//!
//! Parsing must return (an error is fine) without panicking; a configuration it accepts must
//! build a model that times a few instructions without panicking (no division by zero, no
//! out-of-range table index from odd sizes) and without exceeding libFuzzer's RSS limit (run
//! with `-rss_limit_mb=2048`: every accepted config must be buildable).
//!
//! Inputs starting with a byte ≥ 0x80 are not text: they pick numeric keys and large values
//! (powers of two and their neighbours up to 2^40) to build a document, so the campaign spends
//! its time where sizes multiply.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_rv::inst::{Class, Op};
use outcrop_rv::Retire;
use outcrop_timing::{Config, Model};

/// Numeric keys whose product sizes an allocation.
const KEYS: &[&str] = &[
    "l1i.size", "l1i.line", "l1i.ways", "l1d.size", "l1d.line", "l1d.ways", "l2.size",
    "l2.line", "l2.ways", "itlb.entries", "itlb.ways", "dtlb.entries", "dtlb.ways",
    "predictor.bimodal_entries", "predictor.chooser_entries", "predictor.btb_entries",
    "predictor.btb_ways", "predictor.gshare_history", "predictor.ras_entries", "core.rob",
    "core.width", "core.fetch_width",
];

/// A TOML document of large values chosen by `data`.
fn large_sizes(data: &[u8]) -> String {
    let mut tables: std::collections::BTreeMap<&str, std::collections::BTreeMap<&str, u64>> =
        Default::default();
    for pair in data.chunks_exact(2) {
        let key = KEYS[usize::from(pair[0]) % KEYS.len()];
        let shift = u32::from(pair[1] % 41);
        let base = 1u64 << shift;
        let value = match pair[1] / 41 {
            0 => base,
            1 => base - 1,
            2 => base + 1,
            3 => base * 3,
            4 => base / 2 * 3,
            _ => base,
        };
        let (table, field) = key.split_once('.').unwrap_or(("core", key));
        tables.entry(table).or_default().insert(field, value);
    }
    let mut doc = String::new();
    for (table, fields) in tables {
        doc.push_str(&format!("[{table}]\n"));
        for (field, value) in fields {
            doc.push_str(&format!("{field} = {value}\n"));
        }
    }
    doc
}

fuzz_target!(|data: &[u8]| {
    let generated;
    let text = match data.split_first() {
        Some((&b, rest)) if b >= 0x80 => {
            generated = large_sizes(rest);
            generated.as_str()
        }
        _ => match std::str::from_utf8(data) {
            Ok(t) => t,
            Err(_) => return,
        },
    };
    let Ok(cfg) = Config::from_toml(text) else {
        return;
    };
    let mut m = Model::new(&cfg);
    for i in 0..64u64 {
        let op = if i % 3 == 0 { Op::Ld } else { Op::Beq };
        let r = Retire {
            pc: 0x1000 + 4 * (i % 8),
            len: 4,
            class: Some(if i % 3 == 0 { Class::Load } else { Class::Branch }),
            unit: op.unit(),
            mem_addr: i * 4096,
            mem_size: if i % 3 == 0 { 8 } else { 0 },
            taken: i % 2 == 0,
            regs: op.reg_use((i % 32) as u8, 1, 2, 0),
            ..Retire::default()
        };
        let t = m.step(&r);
        assert!(t.retire > t.complete);
    }
    let totals = m.totals();
    let s = totals.cpi_stack;
    assert_eq!(s.base + s.branch + s.icache + s.dcache + s.other, totals.cycles);
});
