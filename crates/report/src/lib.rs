//! `outcrop-report`: report models and renderers. Profiles come in as the summaries'
//! own types (RAP hot ranges, timing totals, ...); text (and, later, JSON, SVG and HTML pages)
//! come out as strings, so that callers decide where they go.
//!
//! # Design constraints
//! No file or terminal I/O, no threads, no machine runs: renderers return `String`s. The
//! report of a run ([`run_report::RunReport`]) is made from `outcrop-run`'s typed summaries
//! and the program's image; every other model takes the mechanisms' own types, so a report
//! can also be made from files alone.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod annotate;
pub mod brr;
pub mod diff;
pub mod html;
pub mod import;
pub mod paths;
pub mod phases;
pub mod pprof;
pub mod processes;
pub mod profile;
pub mod query;
pub mod rap_run;
pub mod rap_tree;
pub mod rpa;
pub mod run_dir;
pub mod run_report;
pub mod wpp;

pub use rap_run::{HotEntry, RapRunReport, StreamReport};
pub use run_report::{FileNames, RunReport};

use outcrop_rap::{AccuracyReport, HotRange};
use serde::Serialize;

/// A report: a serializable model (its JSON is the machine-readable form, documented in
/// docs/formats.md) with a text rendering for people.
pub trait Report: Serialize {
    /// Appends the text rendering to `out`.
    fn write_text(&self, out: &mut String);

    /// Pretty-printed JSON, newline-terminated.
    fn to_json(&self) -> String {
        json(self)
    }

    /// The text rendering.
    fn to_text(&self) -> String {
        let mut s = String::new();
        self.write_text(&mut s);
        s
    }
}

/// `part` as a percentage of `whole` (0 for a whole of 0).
pub(crate) fn pct(part: u64, whole: u64) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

/// A parameter such as ε as a person reads it: the shortest decimal that round-trips
/// (`0.01`) while that is short, else scientific notation (`1e-300`, not 300 digits).
pub fn short_float(x: f64) -> String {
    let plain = format!("{x}");
    if plain.len() <= 12 {
        plain
    } else {
        format!("{x:e}")
    }
}

/// `value` as pretty-printed JSON, newline-terminated.
pub fn json<T: Serialize + ?Sized>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap_or_default();
    s.push('\n');
    s
}
use outcrop_timing::Totals;
use std::fmt::Write as _;

/// The timing model's summary of a run: cycles, IPC, miss rates, branch predictions and the
/// CPI stack, four lines each starting `outcrop:`.
pub fn timing_summary(t: &Totals) -> String {
    let mut out = String::new();
    let s = &t.cpi_stack;
    let pct = |v: u64| 100.0 * v as f64 / t.cycles.max(1) as f64;
    let _ = writeln!(
        out,
        "outcrop: timing ({}): {} instructions, {} cycles, IPC {:.3}",
        t.config, t.instructions, t.cycles, t.ipc
    );
    let _ = writeln!(
        out,
        "outcrop:   L1I miss {:.2}%  L1D miss {:.2}% ({} of {})  L2 miss {:.2}%  DTLB misses {}  ITLB misses {}",
        100.0 * t.l1i_miss_rate(),
        100.0 * t.l1d_miss_rate(),
        t.l1d_misses,
        t.l1d_accesses,
        100.0 * t.l2_miss_rate(),
        t.dtlb_misses,
        t.itlb_misses
    );
    let _ = writeln!(
        out,
        "outcrop:   branches: {:.2}% of {} conditional mispredicted, {} return and {} indirect mispredicts, {} BTB misses",
        100.0 * t.cond_mispredict_rate(),
        t.cond_branches,
        t.return_mispredicts,
        t.indirect_mispredicts,
        t.btb_misses
    );
    // branch-on-random appears only in runs that executed it
    let brr = if t.brr > 0 {
        let _ = writeln!(
            out,
            "outcrop:   branch-on-random: {} executed, {} taken ({:.4}%), never predicted",
            t.brr,
            t.brr_taken,
            100.0 * t.brr_taken as f64 / t.brr as f64
        );
        format!("  brr {:.1}%", pct(s.brr))
    } else {
        String::new()
    };
    let hold = if t.dispatch_holds > 0 {
        format!("  hold {:.1}%", pct(s.hold))
    } else {
        String::new()
    };
    let switch = if t.context_switches > 0 {
        format!(
            "  switch {:.1}% ({} thread switches)",
            pct(s.switch),
            t.context_switches
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "outcrop:   CPI stack: base {:.1}%  branch {:.1}%{brr}  icache {:.1}%  dcache {:.1}%{hold}{switch}  other {:.1}%",
        pct(s.base),
        pct(s.branch),
        pct(s.icache),
        pct(s.dcache),
        pct(s.other)
    );
    out
}

/// The hot-range table: one row per range (pre-order), with exact counts and percent errors
/// when `accuracy` is given, and a label column (e.g. function names) when `labels` is.
pub fn hot_table(
    bits: u8,
    hot: &[HotRange],
    accuracy: Option<&AccuracyReport>,
    labels: Option<&[String]>,
) -> String {
    let entries = rap_run::StreamReport::entries(hot, accuracy, labels);
    entries_table(bits, &entries, accuracy.is_some(), labels.is_some())
}

/// The hot-range table of `entries`; `exact` adds the exact-count columns, `labelled` the code
/// column.
pub fn entries_table(
    bits: u8,
    entries: &[rap_run::HotEntry],
    exact: bool,
    labelled: bool,
) -> String {
    let mut s = String::new();
    let out = &mut s;
    let w = (u32::from(bits)).div_ceil(4) as usize + 2;
    // the range column is indented by nesting, so nested ranges read as a tree
    let levels = nesting(entries);
    let deepest = levels.iter().copied().max().unwrap_or(0);
    let rw = (2 * w + 2 + 2 * deepest).max(24);
    let _ = write!(
        out,
        "  {:<rw$} {:>5} {:>14} {:>8} {:>8}",
        "range (nested)", "depth", "count", "incl.", "excl."
    );
    if exact {
        let _ = write!(out, " {:>14} {:>7} {:>9}", "exact", "err%", "excl.err%");
    }
    if labelled {
        let _ = write!(out, "  code");
    }
    let _ = writeln!(out);
    for (e, level) in entries.iter().zip(&levels) {
        let h = &e.range;
        let range = format!("{}{:#x}..{:#x}", "  ".repeat(*level), h.lo, h.hi);
        let _ = write!(
            out,
            "  {range:<rw$} {:>5} {:>14} {:>7.2}% {:>7.2}%",
            h.depth,
            h.count,
            100.0 * h.share,
            100.0 * h.exclusive_share
        );
        if exact {
            let _ = write!(
                out,
                " {:>14} {:>7.3} {:>9.3}",
                e.exact_inclusive.unwrap_or(0),
                e.error_pct.unwrap_or(0.0),
                e.exclusive_error_pct.unwrap_or(0.0)
            );
        }
        if let Some(l) = e.code.as_ref().filter(|_| labelled) {
            let _ = write!(out, "  {l}");
        }
        let _ = writeln!(out);
    }
    if entries.is_empty() {
        let _ = writeln!(out, "  (none)");
    } else {
        // exclusive weights of hot ranges are disjoint: the rest of the stream is in none
        let rest = 1.0 - entries.iter().map(|e| e.range.exclusive_share).sum::<f64>();
        if rest > 1e-9 {
            let _ = writeln!(
                out,
                "  {:<rw$} {:>5} {:>14} {:>8} {:>7.2}%",
                "(in no hot range)",
                "",
                "",
                "",
                100.0 * rest
            );
        }
    }
    s
}

/// For hot ranges in pre-order, how many of the ranges before each contain it (its indent
/// in a tree view).
pub fn nesting(entries: &[rap_run::HotEntry]) -> Vec<usize> {
    let mut open: Vec<(u64, u64)> = Vec::new();
    entries
        .iter()
        .map(|e| {
            while open
                .last()
                .is_some_and(|&(lo, hi)| !(lo <= e.range.lo && e.range.hi <= hi))
            {
                open.pop();
            }
            let level = open.len();
            open.push((e.range.lo, e.range.hi));
            level
        })
        .collect()
}

/// The legend of [`entries_table`], one line per column, with the paper's figure numbers.
pub const RANGE_LEGEND: &str = "  range: a hot range [lo..hi] (RAP §4.1: its own events plus those of its non-hot sub-ranges reach the threshold), indented under the hot range that contains it
  count: events the tree counts inside the range (a lower bound, within ε of the truth)
  incl.: count as a share of the stream
  excl.: events in the range but in none of its hot sub-ranges (the paper's Figure 5 annotation); with the last row, these sum to 100%
  exact, err%, excl.err%: exact counts of the same run and the tree's percent errors (Figure 8)
  code: the functions whose instructions ran in the range, most first, with their shares (the exact
        profile's counts), until 90% are named; without the profile, the first and last function the
        range spans, with +? when some of its bytes lie in no function (padding, unsymbolized code)
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_print_short() {
        assert_eq!(short_float(0.01), "0.01");
        assert_eq!(short_float(0.5), "0.5");
        assert_eq!(short_float(1e-300), "1e-300");
        assert_eq!(short_float(1.0 / 3.0), "3.333333333333333e-1");
        assert!(short_float(f64::MIN_POSITIVE).len() < 30);
    }

    #[test]
    fn hot_table_lists_ranges_with_errors_and_labels() {
        let h = HotRange {
            lo: 0x1000,
            hi: 0x1fff,
            depth: 2,
            count: 500,
            exclusive: 250,
            upper: 500,
            share: 0.5,
            exclusive_share: 0.25,
        };
        let t = hot_table(16, &[h], None, Some(&["main".to_string()]));
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[0].contains("count") && lines[0].ends_with("code"),
            "{t}"
        );
        // the rest of the stream is in no hot range: exclusive shares sum to 100%
        assert!(
            lines[2].starts_with("  (in no hot range)") && lines[2].ends_with("75.00%"),
            "{t}"
        );
        assert!(
            lines[1].contains("0x1000") && lines[1].contains("50.00%"),
            "{t}"
        );
        assert!(lines[1].ends_with("main"), "{t}");
        assert!(hot_table(16, &[], None, None).contains("(none)"));
    }

    #[test]
    fn timing_summary_has_four_lines() {
        let t = Totals {
            instructions: 10,
            cycles: 20,
            ipc: 0.5,
            ..Totals::default()
        };
        let s = timing_summary(&t);
        assert_eq!(s.lines().count(), 4, "{s}");
        assert!(s.contains("10 instructions, 20 cycles, IPC 0.500"), "{s}");
    }
}
