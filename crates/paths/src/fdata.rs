//! The sampled edge profile in LLVM BOLT's `.fdata` text format: one line per edge,
//! `<is_sym> <name> <offset> <is_sym> <name> <offset> <mispredictions> <count>`, offsets in
//! hex relative to the named function (`0 [unknown] <address>` outside every function).
//! Taken edges come from the records; fall-through edges from the walks between records,
//! written the same way with the fall-through target. Mispredictions are not modelled (0).

use crate::cfg::Cfg;
use crate::partial::EdgeProfile;
use std::fmt::Write as _;

fn place(cfg: &Cfg, addr: u64) -> String {
    match cfg.block_containing(addr) {
        Some(b) => {
            let f = &cfg.funcs[cfg.blocks[b as usize].func as usize];
            format!("1 {} {:x}", f.name, addr - f.start)
        }
        None => format!("0 [unknown] {addr:x}"),
    }
}

/// The `.fdata` text, edges sorted by address.
pub fn fdata(cfg: &Cfg, edges: &EdgeProfile) -> String {
    let mut all: Vec<((u64, u64), u64)> = edges
        .branches
        .iter()
        .chain(edges.falls.iter())
        .map(|(k, c)| (*k, *c))
        .collect();
    all.sort();
    // a branch whose target is its fall-through appears in both maps: merge
    let mut merged: Vec<((u64, u64), u64)> = Vec::with_capacity(all.len());
    for (k, c) in all {
        match merged.last_mut() {
            Some((lk, lc)) if *lk == k => *lc += c,
            _ => merged.push((k, c)),
        }
    }
    let mut s = String::new();
    for ((from, to), c) in merged {
        if to == 0 {
            continue;
        }
        let _ = writeln!(s, "{} {} 0 {c}", place(cfg, from), place(cfg, to));
    }
    s
}
