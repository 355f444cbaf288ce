//! Hardware cost model of the pipelined RAP engine (RAP §3.3–3.4, Figure 4), so a user can size
//! the hardware for a stream: TCAM entries and SRAM bytes (peak nodes × entry size), split
//! stalls, merge-batch scan cycles and average cycles per event.
//!
//! The engine: stage 0 buffers and combines identical events; stage 1 matches all ranges in a
//! TCAM; stage 2 picks the longest match with a priority arbiter; stage 3 increments the SRAM
//! counter; stage 4 compares it with the split threshold. One tree update enters per cycle.
//! A split flushes the pipeline and writes the new children (TCAM entry + SRAM word each).
//! A merge batch stalls the pipeline while every entry is scanned bottom-up and folded entries
//! are deleted. The paper's unpipelined figure, 2 TCAM + 2 SRAM cycles per event, is reported
//! alongside.

use crate::RapTree;
use serde::{Deserialize, Serialize};

/// Timing and sizing parameters of the modelled engine. Defaults follow RAP §3.3–3.4.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HardwareModel {
    /// Pipeline stages (Figure 4: stages 0–4).
    pub pipeline_depth: u32,
    /// Cycles of a TCAM lookup (§3.4: 2).
    pub tcam_cycles: u32,
    /// Cycles of an SRAM access (§3.4: 2).
    pub sram_cycles: u32,
    /// Cycles to write one new entry (TCAM row + SRAM word) during a split.
    pub write_cycles: u32,
    /// Cycles to scan one entry during a merge batch.
    pub scan_cycles: u32,
    /// Counter width in bits; 0 = just wide enough for this run's `n`.
    pub counter_bits: u32,
}

impl Default for HardwareModel {
    fn default() -> Self {
        HardwareModel {
            pipeline_depth: 5,
            tcam_cycles: 2,
            sram_cycles: 2,
            write_cycles: 1,
            scan_cycles: 1,
            counter_bits: 0,
        }
    }
}

/// What a run needs from the engine.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HardwareReport {
    /// TCAM entries needed: the run's peak node count.
    pub tcam_entries: u64,
    /// Ternary cells per TCAM entry (the universe bits).
    pub tcam_entry_bits: u32,
    /// SRAM bits per entry: counter + child pointer + child presence bits.
    pub sram_entry_bits: u32,
    /// SRAM bytes: entries × entry bits / 8, rounded up.
    pub sram_bytes: u64,
    /// Events in the stream.
    pub events: u64,
    /// Updates that entered the pipeline (after stage-0 combining).
    pub engine_updates: u64,
    /// Splits, each a pipeline flush.
    pub splits: u64,
    /// Cycles stalled by splits (flushes + child writes).
    pub split_stall_cycles: u64,
    /// Merge batches.
    pub merge_batches: u64,
    /// Cycles stalled by merge batches (entry scans + deletions).
    pub merge_scan_cycles: u64,
    /// All cycles: one per update plus stalls plus the pipeline fill.
    pub total_cycles: u64,
    /// `total_cycles / events`.
    pub cycles_per_event: f64,
    /// Unpipelined latency per update, TCAM + SRAM (the paper's "4 cycles").
    pub unpipelined_cycles_per_update: u32,
}

fn bits_for(v: u64) -> u32 {
    (64 - v.leading_zeros()).max(1)
}

impl HardwareModel {
    /// Sizes the engine for the run recorded in `tree`.
    pub fn report(&self, tree: &RapTree) -> HardwareReport {
        let stats = tree.stats();
        let entries = tree.peak_nodes();
        let counter_bits = if self.counter_bits == 0 {
            bits_for(tree.n())
        } else {
            self.counter_bits
        };
        let b = u32::from(tree.config().branching());
        let sram_entry_bits = counter_bits + bits_for(entries) + b;
        let sram_bytes = (u128::from(entries) * u128::from(sram_entry_bits)).div_ceil(8) as u64;
        let split_stall_cycles = stats.splits * u64::from(self.pipeline_depth)
            + stats.nodes_created * u64::from(self.write_cycles);
        let merge_scan_cycles = stats.merge_scanned * u64::from(self.scan_cycles)
            + stats.nodes_folded * u64::from(self.write_cycles);
        let total_cycles = stats.tree_updates
            + split_stall_cycles
            + merge_scan_cycles
            + u64::from(self.pipeline_depth);
        HardwareReport {
            tcam_entries: entries,
            tcam_entry_bits: u32::from(tree.config().bits()),
            sram_entry_bits,
            sram_bytes,
            events: tree.n(),
            engine_updates: stats.tree_updates,
            splits: stats.splits,
            split_stall_cycles,
            merge_batches: stats.merge_batches,
            merge_scan_cycles,
            total_cycles,
            cycles_per_event: total_cycles as f64 / tree.n().max(1) as f64,
            unpipelined_cycles_per_update: self.tcam_cycles + self.sram_cycles,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    fn loop_stream() -> Vec<u64> {
        // a hot loop of 8 blocks plus a sprinkle of cold ones
        (0..200_000u64)
            .map(|i| {
                if i % 10 == 0 {
                    (i * 7919) % (1 << 20)
                } else {
                    0x4000 + 16 * (i % 8)
                }
            })
            .collect()
    }

    #[test]
    fn sizes_follow_the_peak_and_the_formulas() {
        let mut tree = RapTree::new(Config::builder().bits(32).build().unwrap());
        for &v in &loop_stream() {
            tree.add(v).unwrap();
        }
        let m = HardwareModel::default();
        let r = m.report(&tree);
        let s = tree.stats();
        assert_eq!(r.tcam_entries, tree.peak_nodes());
        assert_eq!(r.tcam_entry_bits, 32);
        // counter wide enough for n = 200000 (18 bits), pointer for the entries, b presence bits
        let ptr = 64 - tree.peak_nodes().leading_zeros();
        assert_eq!(r.sram_entry_bits, 18 + ptr + 4);
        assert_eq!(
            r.sram_bytes,
            (r.tcam_entries * u64::from(r.sram_entry_bits)).div_ceil(8)
        );
        assert_eq!(
            r.engine_updates, 200_000,
            "unit adds: every event enters the pipeline"
        );
        assert_eq!(r.split_stall_cycles, s.splits * 5 + s.nodes_created);
        assert_eq!(r.merge_scan_cycles, s.merge_scanned + s.nodes_folded);
        assert_eq!(
            r.total_cycles,
            200_000 + r.split_stall_cycles + r.merge_scan_cycles + 5
        );
        assert!((r.cycles_per_event - r.total_cycles as f64 / 200_000.0).abs() < 1e-12);
        assert_eq!(r.unpipelined_cycles_per_update, 4);
        let wide = HardwareModel {
            counter_bits: 64,
            ..m
        }
        .report(&tree);
        assert_eq!(wide.sram_entry_bits, 64 + ptr + 4);
    }

    #[test]
    fn stage0_combining_cuts_pipeline_updates() {
        let values = loop_stream();
        let mut unit = RapTree::new(Config::builder().bits(32).build().unwrap());
        let mut combined = unit.clone();
        values.iter().for_each(|&v| unit.add(v).unwrap());
        combined.add_batch(&values).unwrap();
        let (u, c) = (
            HardwareModel::default().report(&unit),
            HardwareModel::default().report(&combined),
        );
        assert_eq!(u.events, c.events);
        // 90% of each 1024-event window is 8 distinct loop blocks
        assert!(
            c.engine_updates * 5 < u.engine_updates,
            "{} vs {}",
            c.engine_updates,
            u.engine_updates
        );
        assert!(c.cycles_per_event < u.cycles_per_event);
    }
}
