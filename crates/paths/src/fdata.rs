//! The sampled edge profile in LLVM BOLT's `.fdata` text format: one line per edge,
//! `<is_sym> <name> <offset> <is_sym> <name> <offset> <mispredictions> <count>`, offsets in
//! hex relative to the named function (`0 [unknown] <address>` outside every function).
//! Taken edges come from the records; fall-through edges from the walks between records,
//! written the same way with the fall-through target. Mispredictions are not modelled (0).

use crate::cfg::Cfg;
use crate::partial::EdgeProfile;
use std::fmt::Write as _;

fn place_in(cfg: &Cfg, addr: u64) -> String {
    let func = cfg
        .block_containing(addr)
        .map(|b| &cfg.funcs[cfg.blocks[b as usize].func as usize])
        .map(|f| (f.name.as_str(), f.start));
    place(func, addr)
}

/// An address as a `.fdata` place: `1 <name> <hex offset>` inside function `func` (its name
/// and start), `0 [unknown] <hex address>` outside every function. The name is escaped
/// ([`outcrop_events::escape::field`]) so that it stays one field of the line.
pub fn place(func: Option<(&str, u64)>, addr: u64) -> String {
    match func {
        Some((name, start)) => format!(
            "1 {} {:x}",
            outcrop_events::escape::field(name),
            addr.wrapping_sub(start)
        ),
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
        let _ = writeln!(s, "{} {} 0 {c}", place_in(cfg, from), place_in(cfg, to));
    }
    s
}
