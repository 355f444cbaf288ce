//! The report of one RAP tree over a value stream (`outcrop rap`): the model, its JSON and its
//! text.

use crate::hot_table;
use outcrop_rap::{bound, AccuracyReport, HardwareReport, HotRange, MergeRecord, SplitPolicy};
use serde::Serialize;
use std::fmt::Write as _;

/// The report of one RAP tree (`outcrop rap`).
#[derive(Clone, Debug, Serialize)]
pub struct TreeReport<'a> {
    /// input.
    pub input: &'a str,
    /// n.
    pub n: u64,
    /// eps.
    pub eps: f64,
    /// branching.
    pub branching: u8,
    /// bits.
    pub bits: u8,
    /// split.
    pub split: SplitPolicy,
    /// hot fraction.
    pub hot_fraction: f64,
    /// combined.
    pub combined: bool,
    /// split threshold.
    pub split_threshold: u64,
    /// nodes.
    pub nodes: u64,
    /// peak nodes.
    pub peak_nodes: u64,
    /// bytes.
    pub bytes: u64,
    /// peak bytes.
    pub peak_bytes: u64,
    /// node bound now.
    pub node_bound_now: u64,
    /// node bound steady.
    pub node_bound_steady: bound::SteadyStateBounds,
    /// merge batches.
    pub merge_batches: u64,
    /// hot.
    pub hot: &'a [HotRange],
    /// accuracy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<&'a AccuracyReport>,
    /// hardware.
    pub hardware: HardwareReport,
    /// merge log.
    pub merge_log: &'a [MergeRecord],
}

impl TreeReport<'_> {
    /// Pretty-printed JSON, newline-terminated.
    pub fn to_json(&self) -> String {
        crate::json(self)
    }

    /// The text report; `hardware` adds the hardware engine's figures.
    pub fn to_text(&self, hardware: bool) -> String {
        let mut s = String::new();
        let _ = write_text(&mut s, self, hardware);
        s
    }
}

fn write_text(out: &mut String, r: &TreeReport<'_>, hardware: bool) -> std::fmt::Result {
    writeln!(
        out,
        "RAP over {}: n = {} events, ε = {}, b = {}, {}-bit universe{}",
        r.input,
        r.n,
        crate::short_float(r.eps),
        r.branching,
        r.bits,
        if r.combined { "" } else { " (no combining)" }
    )?;
    writeln!(
        out,
        "tree: {} nodes now, {} at peak ({} bytes; worst case {} nodes), {} merge batches, split threshold {}",
        r.nodes, r.peak_nodes, r.peak_bytes, r.node_bound_steady.peak, r.merge_batches, r.split_threshold
    )?;
    writeln!(
        out,
        "\nhot ranges (count + non-hot descendants ≥ {}% of n):",
        100.0 * r.hot_fraction
    )?;
    out.push_str(&hot_table(r.bits, r.hot, r.accuracy, None));
    if let Some(a) = r.accuracy {
        writeln!(
            out,
            "\npercent error vs exact counts: max {:.3}%, mean {:.3}% (exclusive: max {:.3}%, mean {:.3}%)",
            a.max_error_pct, a.mean_error_pct, a.max_exclusive_error_pct, a.mean_exclusive_error_pct
        )?;
    }
    writeln!(out, "\nLegend")?;
    out.push_str(crate::RANGE_LEGEND);
    if hardware {
        let h = &r.hardware;
        writeln!(out, "\nhardware engine (RAP §3.3-3.4 model):")?;
        writeln!(
            out,
            "  TCAM: {} entries x {} ternary bits; SRAM: {} entries x {} bits = {} bytes",
            h.tcam_entries, h.tcam_entry_bits, h.tcam_entries, h.sram_entry_bits, h.sram_bytes
        )?;
        writeln!(
            out,
            "  {} engine updates for {} events; {} splits stall {} cycles; {} merge batches scan {} cycles",
            h.engine_updates, h.events, h.splits, h.split_stall_cycles, h.merge_batches, h.merge_scan_cycles
        )?;
        writeln!(
            out,
            "  {:.3} cycles/event pipelined ({} cycles per update unpipelined)",
            h.cycles_per_event, h.unpipelined_cycles_per_update
        )?;
    }
    Ok(())
}
