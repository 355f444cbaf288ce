//! What the paper reports about a run (§III.D, §V.B–D), computed from a [`WppFile`]: hot
//! paths, path length against trip count (Figure 2), stratum length distributions (Figure 3),
//! compression ratios (Table 2).

use crate::format::WppFile;
use serde::Serialize;

/// Bytes per instruction the paper assumes for the "uncompressed" size (§V.B).
pub const PAPER_BYTES_PER_INSN: f64 = 4.2;

/// One of the hottest paths.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HotPath {
    /// Path id.
    pub id: u32,
    /// Executions over the run.
    pub executions: u64,
    /// Instructions per execution.
    pub insns: u64,
    /// `executions × insns` (the paper's ranking, §III.D).
    pub weight: u64,
    /// Share of all retired instructions.
    pub share: f64,
    /// (start address, instructions) of its blocks.
    pub blocks: Vec<(u64, u32)>,
}

/// The `n` hottest paths by executions × instructions (ties: lower id first).
pub fn hot_paths(f: &WppFile, counts: &[Vec<u64>], n: usize) -> Vec<HotPath> {
    let total = f.stats.build.instructions.max(1) as f64;
    let mut v: Vec<HotPath> = counts[0]
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(id, &c)| {
            let id = id as u32;
            let insns = f.path_insns(id);
            let weight = c.saturating_mul(insns);
            HotPath {
                id,
                executions: c,
                insns,
                weight,
                share: weight as f64 / total,
                blocks: f
                    .path(id)
                    .iter()
                    .map(|&b| (f.block_addrs[b as usize], f.block_insns[b as usize]))
                    .collect(),
            }
        })
        .collect();
    v.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.id.cmp(&b.id)));
    v.truncate(n);
    v
}

/// Figure 2: for every executed path, (length in blocks, executions).
pub fn path_length_vs_trips(f: &WppFile, counts: &[Vec<u64>]) -> Vec<(u64, u64)> {
    counts[0]
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(id, &c)| (f.path(id as u32).len() as u64, c))
        .collect()
}

/// One bar of a length distribution.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LengthBin {
    /// Element length (repeated elements of the layer below).
    pub length: u64,
    /// Distinct elements of that length.
    pub unique: u64,
    /// Executions of elements of that length.
    pub executions: u64,
}

/// Figure 3: the length distribution of stratum layer `layer`'s elements (lengths in repeated
/// elements of the layer below: repeated paths for layer 0).
pub fn stratum_lengths(f: &WppFile, counts: &[Vec<u64>], layer: usize) -> Vec<LengthBin> {
    let Some(l) = f.layers.get(layer) else {
        return Vec::new();
    };
    let mut bins: std::collections::BTreeMap<u64, (u64, u64)> = Default::default();
    for (e, &c) in counts[layer + 1].iter().enumerate().take(l.len()) {
        let b = bins.entry(l.element(e as u32).len() as u64).or_default();
        b.0 += 1;
        b.1 = b.1.saturating_add(c);
    }
    bins.into_iter()
        .map(|(length, (unique, executions))| LengthBin {
            length,
            unique,
            executions,
        })
        .collect()
}

/// Compression ratios of a file of `file_bytes`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ratios {
    /// instructions × 4.2 ÷ file bytes (the paper's "adjusted compression ratio", §V.B).
    pub paper: f64,
    /// blocks × 8 ÷ file bytes: against a raw trace of 8-byte block start addresses.
    pub raw_trace: f64,
}

/// The compression ratios of `f`.
pub fn ratios(f: &WppFile) -> Ratios {
    let bytes = f.bytes.total().max(1) as f64;
    Ratios {
        paper: f.stats.build.instructions as f64 * PAPER_BYTES_PER_INSN / bytes,
        raw_trace: f.stats.build.blocks as f64 * 8.0 / bytes,
    }
}
