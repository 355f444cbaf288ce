//! The report of RAP trees over a run's event streams (`outcrop run --rap`): the model, its
//! JSON (docs/formats.md, "`outcrop run --json` reports") and its text.

use crate::entries_table;
use outcrop_rap::{AccuracyReport, HotRange, MergeRecord};
use outcrop_timing::Totals;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// One hot range with what is known about it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HotEntry {
    /// The range.
    #[serde(flatten)]
    pub range: HotRange,
    /// Function label (code streams).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Exact inclusive count (with exact counting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact_inclusive: Option<u64>,
    /// Percent error of the inclusive count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_pct: Option<f64>,
    /// Percent error of the exclusive count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclusive_error_pct: Option<f64>,
}

/// One stream's tree.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StreamReport {
    /// Stream name (`block`, `l1d-miss-value`, ...).
    pub stream: String,
    /// The guest thread (creation index) whose events alone the tree holds, with
    /// `--rap-per-thread`; absent for the whole program's tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<u32>,
    /// The process and program whose events alone the tree holds, when the guest ran more
    /// than one (`pid 1002, program 1 (/usr/bin/sort)`); absent for the first process's
    /// first program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// What the stream is.
    pub description: String,
    /// Events.
    pub n: u64,
    /// Tree nodes at the end.
    pub nodes: u64,
    /// Largest tree (RAP Figure 7 "maximum").
    pub max_nodes: u64,
    /// Mean tree size over the stream, weighted by events (Figure 7 "average"; every sample
    /// and both sides of every merge batch, trapezoid rule).
    pub mean_nodes: f64,
    /// Mean of the sizes just before and just after each merge batch, over every batch.
    pub mean_nodes_at_merges: f64,
    /// Merge batches run.
    pub merge_batches: u64,
    /// The split threshold at the end.
    pub split_threshold: u64,
    /// Hot ranges in pre-order.
    pub hot: Vec<HotEntry>,
    /// Largest inclusive percent error (with exact counting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_error_pct: Option<f64>,
    /// Mean inclusive percent error (with exact counting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_error_pct: Option<f64>,
    /// `[n, nodes]`: periodic samples and both sides of every merge batch.
    pub sizes: Vec<(u64, u64)>,
    /// Every merge batch (text report, Figure 6).
    #[serde(skip)]
    pub merges: Vec<MergeRecord>,
}

impl StreamReport {
    /// Hot entries from `hot`, with `accuracy` (same order) and `labels` when known.
    pub fn entries(
        hot: &[HotRange],
        accuracy: Option<&AccuracyReport>,
        labels: Option<&[String]>,
    ) -> Vec<HotEntry> {
        hot.iter()
            .enumerate()
            .map(|(i, h)| {
                let acc = accuracy.and_then(|a| a.ranges.get(i));
                HotEntry {
                    range: *h,
                    code: labels.and_then(|l| l.get(i)).cloned(),
                    exact_inclusive: acc.map(|a| a.exact_inclusive),
                    error_pct: acc.map(|a| a.error_pct),
                    exclusive_error_pct: acc.map(|a| a.exclusive_error_pct),
                }
            })
            .collect()
    }
}

/// The whole report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RapRunReport {
    /// The program path as given.
    pub program: String,
    /// Retired instructions.
    pub instructions: u64,
    /// The guest's exit status.
    pub exit_code: i32,
    /// How the run ended.
    pub outcome: String,
    /// Host time of the run.
    pub wall_seconds: f64,
    /// The trees' ε.
    pub eps: f64,
    /// The trees' branching factor.
    pub branching: u8,
    /// The hot threshold.
    pub hot_fraction: f64,
    /// Timing-model totals.
    pub timing: Option<Totals>,
    /// One per stream, in the order requested.
    pub streams: Vec<StreamReport>,
}

impl crate::Report for RapRunReport {
    fn write_text(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "RAP on {}: {} instructions, ε = {}, b = {}, hot ≥ {}% ({})",
            self.program,
            self.instructions,
            crate::short_float(self.eps),
            self.branching,
            100.0 * self.hot_fraction,
            self.outcome
        );
        for s in &self.streams {
            stream_text(out, s);
        }
        if !self.streams.is_empty() {
            let _ = writeln!(out, "\nLegend");
            out.push_str(crate::RANGE_LEGEND);
            let _ = writeln!(
                out,
                "  nodes now/max/mean: tree size at the end, its largest, and its mean (RAP Figure 7); merge batches before→after@n: the tree's size over time (Figure 6)"
            );
        }
    }
}

fn stream_text(out: &mut String, s: &StreamReport) {
    match s.thread {
        _ if s.process.is_some() => {
            let p = s.process.as_deref().unwrap_or_default();
            let _ = writeln!(out, "\n== {}, {p} ({}) ==", s.stream, s.description);
        }
        Some(t) => {
            let _ = writeln!(
                out,
                "\n== {}, thread {t} only ({}) ==",
                s.stream, s.description
            );
        }
        None => {
            let _ = writeln!(out, "\n== {} ({}) ==", s.stream, s.description);
        }
    }
    let _ = writeln!(
        out,
        "n = {} events; tree: {} nodes now, {} max, {:.1} mean, {} merge batches",
        s.n, s.nodes, s.max_nodes, s.mean_nodes, s.merge_batches
    );
    if s.n == 0 {
        let _ = writeln!(out, "  (empty stream)");
        return;
    }
    let exact = s.max_error_pct.is_some();
    let labelled = s.hot.iter().any(|h| h.code.is_some());
    out.push_str(&entries_table(64, &s.hot, exact, labelled));
    if s.hot.is_empty() {
        let _ = writeln!(out, "  (no hot ranges)");
    }
    if let (Some(max), Some(mean)) = (s.max_error_pct, s.mean_error_pct) {
        let _ = writeln!(
            out,
            "percent error vs exact counts: max {max:.3}%, mean {mean:.3}%"
        );
        let merges: Vec<String> = s
            .merges
            .iter()
            .map(|m| format!("{}→{}@{}", m.nodes_before, m.nodes_after, m.n))
            .collect();
        let _ = writeln!(
            out,
            "tree size at merge batches, before→after@n: {}",
            merges.join(" ")
        );
    }
}
