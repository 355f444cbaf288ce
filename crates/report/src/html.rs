//! One self-contained, offline HTML page per run (`outcrop run --report DIR` writes
//! `DIR/report.html` beside `DIR/report.json`, the data it is made from), and an index page
//! for a suite.
//!
//! The page has no script, loads nothing (a Content-Security-Policy forbids every fetch; the
//! charts are inline SVG) and is byte-identical for the same data: no clock, no host
//! statistics. docs/formats.md "The HTML report" lists its sections.

use crate::pct;
use crate::profile::{escape, thousands, ProfileReport};
use crate::rap_run::StreamReport;
use outcrop_profile::Profile;
use outcrop_timing::Totals;
use serde::Serialize;
use std::fmt::Write as _;

/// Function rows on the page.
pub const PAGE_ROWS: usize = 40;

pub(crate) const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1280px;color:#222;padding:0 1em}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;font-size:13px}td,th{padding:2px 8px;text-align:right;white-space:nowrap}\
th{background:#eee}td.l,th.l{text-align:left}tr:nth-child(even){background:#f7f7f7}\
.legend{color:#555;font-size:12px}.legend dt{font-weight:bold;float:left;clear:left;width:8em}.legend dd{margin-left:9em}\
.note{color:#8a4b00}code{background:#f3f3f3;padding:0 3px}svg.flame text{pointer-events:none}\
.bar{display:inline-block;height:10px;background:#c85a1a;vertical-align:middle}";

/// What one run's page shows (serialized as `report.json`).
#[derive(Serialize)]
pub struct RunPage<'a> {
    /// The program.
    pub program: &'a str,
    /// Its arguments.
    pub args: &'a [String],
    /// Exit status.
    pub exit_code: i32,
    /// How it ended.
    pub outcome: &'a str,
    /// Whether the profiles cover only part of the run.
    pub truncated: bool,
    /// Set when the profiles come from imported samples (`outcrop import`): what they are.
    pub sampled: Option<&'a str>,
    /// With `--range`: the instructions every mechanism observed.
    pub window: Option<&'a outcrop_run::Window>,
    /// Instructions retired.
    pub instructions: u64,
    /// Retired instructions by class.
    pub classes: Option<Vec<(&'static str, u64)>>,
    /// Timing totals, with the CPI stack.
    pub timing: Option<&'a Totals>,
    /// The exact profile.
    pub profile: Option<&'a ProfileReport>,
    /// The hottest functions annotated by instruction and line.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub annotations: &'a [crate::annotate::Annotation],
    /// The run's phases (`--phases`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases: Option<&'a crate::phases::RunPhases>,
    /// RAP streams.
    pub rap: Option<RapSection<'a>>,
    /// Branch-record sampling.
    pub paths: Option<serde_json::Value>,
    /// Whole-program paths and strata: sizes per layer.
    pub strata: Option<&'a outcrop_strata::FileStats>,
    /// Relational profiling: queries, services, exact checks.
    pub rpa: Option<&'a crate::rpa::RpaReport>,
    /// The other files of the directory, for links.
    pub files: Vec<(&'static str, &'static str)>,
}

/// RAP's part of a page.
#[derive(Serialize)]
pub struct RapSection<'a> {
    /// ε.
    pub eps: f64,
    /// Branching factor.
    pub branching: u8,
    /// Hot threshold.
    pub hot_fraction: f64,
    /// One per stream.
    pub streams: &'a [StreamReport],
}

fn bar(share: f64) -> String {
    format!(
        r#"<span class="bar" style="width:{:.0}px"></span>"#,
        (share * 120.0).clamp(0.0, 120.0)
    )
}

pub(crate) fn head(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
<title>{}</title><style>{STYLE}</style></head><body>\n",
        escape(title)
    );
}

/// The hottest functions by instruction and line, each folded under its name (what
/// `outcrop annotate` prints).
fn annotations_section(o: &mut String, annotations: &[crate::annotate::Annotation]) {
    if annotations.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "<h2 id=\"annotate\">Annotated hot functions</h2><p class=\"legend\">The hottest functions of the program, every instruction under its source line with what it retired (exact), jumps within the function marked (<code>→ +0x1c</code> at a jump, <code>&gt;</code> at its target): <code>outcrop annotate DIR FUNCTION</code> prints the same with the source text.</p>"
    );
    for a in annotations {
        let _ = writeln!(
            o,
            "<details><summary><code>{}</code></summary><pre>{}</pre></details>",
            escape(&a.function),
            escape(&a.to_text())
        );
    }
}

/// The page of one run; `profile` is the exact profile the report was made from (for the
/// flame graph).
pub fn run_page(page: &RunPage<'_>, profile: Option<&Profile>) -> String {
    let mut o = String::new();
    head(&mut o, &format!("Outcrop: {}", page.program));
    let _ = writeln!(
        o,
        "<h1>Outcrop report: <code>{}</code></h1>",
        escape(page.program)
    );
    let _ = writeln!(o, "<table><tbody>");
    let args = page.args.join(" ");
    let mut rows = vec![
        ("command", format!("{} {}", page.program, args)),
        (
            "outcome",
            format!("{} (exit status {})", page.outcome, page.exit_code),
        ),
        ("instructions", thousands(page.instructions)),
    ];
    if let Some(note) = page.sampled {
        rows[0] = ("source", note.to_string());
        rows[2] = ("IP samples", thousands(page.instructions));
    }
    if let Some(w) = page.window {
        rows.push((
            "window",
            format!(
                "instructions {}–{} (--range {}..{}): every section below covers only these",
                thousands(w.start),
                thousands(w.end),
                w.requested.0,
                w.requested.1
            ),
        ));
    }
    if let Some(t) = page.timing {
        rows.push((
            "cycles",
            format!(
                "{} (IPC {:.3}, timing model {})",
                thousands(t.cycles),
                t.ipc,
                t.config
            ),
        ));
    }
    for (k, v) in rows {
        let _ = writeln!(
            o,
            "<tr><th class=\"l\">{k}</th><td class=\"l\">{}</td></tr>",
            escape(&v)
        );
    }
    let _ = writeln!(o, "</tbody></table>");
    if page.truncated {
        let _ = writeln!(
            o,
            "<p class=\"note\">The run did not finish (interrupted or stopped by a limit): every profile covers the instructions run so far.</p>"
        );
    }
    if let Some(p) = page.profile {
        functions_section(&mut o, p, page.sampled.is_some());
        threads_section(&mut o, p);
        if let Some(t) = &p.processes {
            t.write_html(&mut o);
        }
    }
    if let Some(p) = profile {
        let _ = writeln!(
            o,
            "<h2 id=\"flame\">Flame graph</h2><p class=\"legend\">Every call chain, exact: width is {} (the caller below, its callees above); hover a frame for its numbers. Click a frame holding at least {:.0}% of the run to zoom on it (the {} widest have a view; Back or \u{201c}Reset zoom\u{201d} returns); pick a function under \u{201c}Find a function\u{201d} to colour its frames. Frames narrower than half a pixel are left out.</p>",
            if p.timed { "cycles" } else { "instructions" },
            100.0 * crate::profile::FLAME_ZOOM_SHARE,
            crate::profile::FLAME_ZOOMS
        );
        o.push_str(&crate::profile::flame_html(p, 1240));
        timeline_section(&mut o, p);
    }
    annotations_section(&mut o, page.annotations);
    if let Some(ph) = page.phases {
        phases_section(&mut o, ph);
    }
    if let Some(t) = page.timing {
        timing_section(&mut o, t);
    }
    if let Some(r) = &page.rap {
        rap_section(&mut o, r);
    }
    if let Some(p) = &page.paths {
        let _ = writeln!(o, "<h2 id=\"paths\">Branch-record sampling (paths)</h2>");
        let _ = writeln!(
            o,
            "<p>{} samples of the last {} taken branches, {} distinct traces, modelled overhead {:.2}%. Reconstruct the hot paths with <code>outcrop paths report {}</code>.</p>",
            p["samples"],
            p["config"]["entries"],
            p["distinct_traces"],
            100.0 * p["modelled_overhead"].as_f64().unwrap_or(0.0),
            escape(p["file"].as_str().unwrap_or(""))
        );
        if let Some(rows) = p["processes"].as_array() {
            let _ = writeln!(
                o,
                "<p>Those are the first process's first program's. Each other process and program has its own samples, of its own program (reconstruct each with that program):</p><table><thead><tr><th>pid</th><th>program</th><th>samples</th><th>instructions</th><th class=\"l\">file</th></tr></thead><tbody>"
            );
            for r in rows {
                let file = escape(r["file"].as_str().unwrap_or(""));
                let _ = writeln!(
                    o,
                    "<tr><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td><td class=\"l\"><a href=\"{file}\">{file}</a></td></tr>",
                    r["pid"],
                    r["image"],
                    escape(r["program"].as_str().unwrap_or("")),
                    r["samples"],
                    r["instructions"]
                );
            }
            let _ = writeln!(o, "</tbody></table>");
        }
    }
    if let Some(s) = page.strata {
        strata_section(&mut o, s);
    }
    if let Some(r) = page.rpa {
        use crate::Report as _;
        let _ = writeln!(
            o,
            "<h2 id=\"rpa\">Relational profiling</h2><p>Every record of each query accounted for, and each service beside the exact reference of the same run (docs/rpa.md).</p><pre>{}</pre>",
            escape(&r.to_text())
        );
    }
    if !page.files.is_empty() {
        let _ = writeln!(o, "<h2 id=\"files\">Files</h2><ul>");
        for (f, what) in &page.files {
            let _ = writeln!(o, "<li><a href=\"{f}\">{f}</a>: {what}</li>");
        }
        let _ = writeln!(o, "</ul>");
    }
    o.push_str("</body></html>\n");
    o
}

/// The run's phases: a strip of the run coloured by phase, and a table per phase (share,
/// intervals, representative, CPI and misses from the timeline when timed, hottest
/// functions).
fn phases_section(o: &mut String, ph: &crate::phases::RunPhases) {
    let n = ph.assignment.len();
    if n == 0 {
        return;
    }
    let timed = ph
        .phases
        .iter()
        .any(|r| r.counts.is_some_and(|c| c.cycles > 0));
    let _ = writeln!(
        o,
        "<h2 id=\"phases\">Phases</h2><p class=\"legend\">The run cut into {} intervals of {} instructions; intervals that run the same code in the same proportions (their basic-block vectors, clustered as SimPoint does: docs/phases.md) form a phase. The strip shows each interval's phase, in run order.{}</p>",
        thousands(n as u64),
        thousands(ph.interval),
        if timed {
            " CPI and misses per phase come from the timeline's marks, each counted in the phase of the interval holding its middle."
        } else {
            ""
        }
    );
    let (w, h) = (1240.0f64, 24.0f64);
    let bars = n.min(TIMELINE_BARS);
    let bw = w / bars as f64;
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="phases over time">"#
    );
    for b in 0..bars {
        let i = b * n / bars;
        let k = ph.assignment[i];
        let _ = writeln!(
            o,
            r#"<rect x="{:.2}" y="0" width="{:.2}" height="{h}" fill="{}"><title>interval {i} (instructions {}–): phase {k}</title></rect>"#,
            b as f64 * bw,
            bw.max(0.5),
            PALETTE[k % PALETTE.len()],
            thousands(i as u64 * ph.interval),
        );
    }
    let _ = writeln!(o, "</svg>");
    let _ = write!(
        o,
        "<table><thead><tr><th>phase</th><th>share</th><th>intervals</th><th>representative at</th>"
    );
    if timed {
        let _ = write!(
            o,
            "<th>CPI</th><th>mispredicts /1k</th><th>L1D misses /1k</th><th>L2 misses /1k</th>"
        );
    }
    let _ = writeln!(
        o,
        "<th class=\"l\">hottest functions</th></tr></thead><tbody>"
    );
    for r in &ph.phases {
        let p = &r.phase;
        let _ = write!(
            o,
            "<tr><td><span style=\"color:{}\">&#9632;</span> {}</td><td>{:.1}%</td><td>{}</td><td>{}</td>",
            PALETTE[p.id % PALETTE.len()],
            p.id,
            100.0 * p.weight,
            thousands(p.intervals as u64),
            thousands(p.representative.1)
        );
        if timed {
            match r.counts {
                Some(c) if c.instructions > 0 => {
                    let k = |v: u64| 1000.0 * v as f64 / c.instructions as f64;
                    let _ = write!(
                        o,
                        "<td>{:.3}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td>",
                        c.cycles as f64 / c.instructions as f64,
                        k(c.mispredicts),
                        k(c.l1d_misses),
                        k(c.l2_misses)
                    );
                }
                _ => {
                    let _ = write!(o, "<td></td><td></td><td></td><td></td>");
                }
            }
        }
        let fs: Vec<String> = p
            .functions
            .iter()
            .take(3)
            .map(|(f, share)| format!("{} {:.0}%", escape(f), 100.0 * share))
            .collect();
        let _ = writeln!(o, "<td class=\"l\">{}</td></tr>", fs.join(", "));
    }
    let _ = writeln!(o, "</tbody></table>");
}

/// Bars in the page's timeline strip (intervals are grouped to fit).
pub const TIMELINE_BARS: usize = 600;

/// Colours of the timeline's most frequent functions (the rest are grey).
const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
];

/// The function on top at a mark: its name, or `thread N` / `(start)` for a root.
fn mark_function(p: &Profile, node: u32) -> String {
    match p.nodes.get(node as usize) {
        Some(n) => match n.function {
            Some(f) => p.functions[f as usize].name.clone(),
            None if node == 0 => "(start)".to_string(),
            None => format!("thread {}", n.thread),
        },
        None => String::new(),
    }
}

/// The timeline strip: the run in at most [`TIMELINE_BARS`] bars, each coloured by the
/// function most often on top at its marks; under timing a bar's height is its IPC.
fn timeline_section(o: &mut String, p: &Profile) {
    let t = &p.timeline;
    let n = t.marks.len();
    if t.interval == 0 || n == 0 {
        return;
    }
    let unit = if t.cycles { "cycles" } else { "instructions" };
    let bars = n.min(TIMELINE_BARS);
    // functions by marks on top, weighted by their intervals, for the palette
    let mut on_top: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    let mut prev = 0u64;
    let time = |c: &outcrop_profile::Counts| if t.cycles { c.cycles } else { c.instructions };
    for m in &t.marks {
        *on_top.entry(mark_function(p, m.node)).or_default() += time(&m.at) - prev;
        prev = time(&m.at);
    }
    let mut ranked: Vec<(&String, &u64)> = on_top.iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let colour = |f: &str| {
        ranked
            .iter()
            .take(PALETTE.len())
            .position(|(g, _)| g.as_str() == f)
            .map_or("#bbb", |i| PALETTE[i])
    };
    // bins of marks: instructions, cycles, and the function on top longest
    let mut bins = Vec::with_capacity(bars);
    let mut start = outcrop_profile::Counts::default();
    for b in 0..bars {
        let (lo, hi) = (b * n / bars, (b + 1) * n / bars);
        let end = t.marks[hi - 1].at;
        let mut tops: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
        let mut before = start;
        for m in &t.marks[lo..hi] {
            *tops.entry(mark_function(p, m.node)).or_default() += time(&m.at) - time(&before);
            before = m.at;
        }
        let top = tops
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(f, w)| (f.clone(), *w))
            .unwrap_or_default();
        bins.push((start, end, top, hi - lo));
        start = end;
    }
    let ipc = |a: &outcrop_profile::Counts, b: &outcrop_profile::Counts| {
        (b.instructions - a.instructions) as f64 / (b.cycles - a.cycles).max(1) as f64
    };
    let max_ipc = bins
        .iter()
        .map(|(a, b, _, _)| ipc(a, b))
        .fold(0.0f64, f64::max)
        .max(0.01);
    let _ = writeln!(
        o,
        "<h2 id=\"timeline\">Timeline</h2><p class=\"legend\">The run from left to right: a mark every {} {unit} ({} marks{}), each bar coloured by the function on top of the stack at most of its marks{}. The Firefox Profiler file (<code>profile.firefox.json</code>) holds the same marks as samples with times (1 ns = 1 {}), for range selection.</p>",
        thousands(t.interval),
        thousands(n as u64),
        if bars < n { format!(", {bars} bars") } else { String::new() },
        if t.cycles {
            format!("; height is the interval's IPC (top of the strip: {max_ipc:.2})")
        } else {
            String::new()
        },
        if t.cycles { "cycle" } else { "instruction" }
    );
    let (w, h) = (1240.0f64, 90.0f64);
    let bw = w / bars as f64;
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="timeline">"#
    );
    for (i, (a, b, (f, fw), k)) in bins.iter().enumerate() {
        let bh = if t.cycles {
            (ipc(a, b) / max_ipc * h).max(1.0)
        } else {
            h
        };
        let share = 100.0 * *fw as f64 / (time(b) - time(a)).max(1) as f64;
        let _ = writeln!(
            o,
            r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{}"><title>instructions {}–{}{}; on top: {} ({share:.0}% of {k} marks)</title></rect>"#,
            i as f64 * bw,
            h - bh,
            bw.max(0.5),
            bh,
            colour(f),
            thousands(a.instructions),
            thousands(b.instructions),
            if t.cycles {
                format!(
                    ", cycles {}–{}, IPC {:.2}",
                    thousands(a.cycles),
                    thousands(b.cycles),
                    ipc(a, b)
                )
            } else {
                String::new()
            },
            escape(f)
        );
    }
    let _ = writeln!(o, "</svg>");
    let total = time(&t.marks[n - 1].at).max(1);
    let _ = write!(o, "<p class=\"legend\">");
    for (i, (f, v)) in ranked.iter().take(PALETTE.len()).enumerate() {
        let _ = write!(
            o,
            r#"<span style="display:inline-block;width:10px;height:10px;background:{}"></span> {} {:.1}% &nbsp; "#,
            PALETTE[i],
            escape(f),
            100.0 * **v as f64 / total as f64
        );
    }
    if ranked.len() > PALETTE.len() {
        let _ = write!(
            o,
            r#"<span style="display:inline-block;width:10px;height:10px;background:#bbb"></span> other"#
        );
    }
    let _ = writeln!(o, "</p>");
}

/// The per-thread table, when the program ran more than one thread.
fn threads_section(o: &mut String, p: &ProfileReport) {
    if p.threads.len() < 2 {
        return;
    }
    let timed = p.cycles.is_some();
    let _ = writeln!(
        o,
        "<h2 id=\"threads\">Threads</h2><p>Exact: what each guest thread retired, in creation order; the rows sum to the run. The machine runs the threads on one hart in turns (docs/machine.md, \"Threads\"); the flame graph and the exports keep each thread's call chains apart.</p>"
    );
    let _ = writeln!(
        o,
        "<table><thead><tr><th>share</th><th></th><th>instructions</th>{}<th class=\"l\">thread</th></tr></thead><tbody>",
        if timed { "<th>cycles</th>" } else { "" }
    );
    for t in &p.threads {
        let share = pct(t.self_counts.instructions, p.instructions);
        let _ = writeln!(
            o,
            "<tr><td>{share:.2}%</td><td class=\"l\">{}</td><td>{}</td>{}<td class=\"l\">{}</td></tr>",
            bar(share / 100.0),
            t.self_counts.instructions,
            if timed {
                format!("<td>{}</td>", t.self_counts.cycles)
            } else {
                String::new()
            },
            escape(&t.label())
        );
    }
    let _ = writeln!(o, "</tbody></table>");
}

fn functions_section(o: &mut String, p: &ProfileReport, sampled: bool) {
    let timed = p.cycles.is_some();
    let _ = writeln!(
        o,
        "<h2 id=\"functions\">Functions</h2><p>{}; {} functions {}. Sorted by self {}.</p>",
        if sampled && p.call_chains {
            "Sampled, not exact: samples by function, with totals from their call chains (no calls: samples cannot count them)"
        } else if sampled {
            "Sampled, not exact: IP samples by function (no call stacks in the samples, so no totals or calls)"
        } else {
            "Exact: every retired instruction counted"
        },
        p.function_count,
        if sampled { "were sampled" } else { "ran" },
        if sampled {
            "samples"
        } else if timed {
            "cycles"
        } else {
            "instructions"
        }
    );
    let cols = p.columns();
    let _ = write!(o, "<table><thead><tr>");
    for (i, (h, _)) in cols.iter().enumerate() {
        let _ = write!(o, "<th>{}</th>", escape(h));
        if i == 0 {
            let _ = write!(o, "<th></th>");
        }
    }
    let _ = writeln!(o, "<th class=\"l\">function</th></tr></thead><tbody>");
    for f in p.functions.iter().take(PAGE_ROWS) {
        let cells = p.cells(f);
        let _ = write!(o, "<tr>");
        for (i, c) in cells.iter().enumerate() {
            let _ = write!(o, "<td>{}</td>", escape(c));
            if i == 0 {
                // the sort key's share, as a bar
                let share: f64 = c.trim_end_matches('%').parse().unwrap_or(0.0);
                let _ = write!(o, "<td class=\"l\">{}</td>", bar(share / 100.0));
            }
        }
        let _ = writeln!(
            o,
            "<td class=\"l\"><code>{}</code></td></tr>",
            escape(&f.name)
        );
    }
    let _ = writeln!(o, "</tbody></table>");
    if p.function_count > PAGE_ROWS {
        let _ = writeln!(
            o,
            "<p class=\"legend\">{} more functions in profile.json.</p>",
            p.function_count - PAGE_ROWS
        );
    }
    let _ = writeln!(o, "<dl class=\"legend\">");
    for (k, v) in cols {
        let _ = writeln!(o, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v));
    }
    let _ = writeln!(o, "</dl>");
    if let Some(lines) = &p.lines {
        let _ = writeln!(o, "<h2 id=\"lines\">Source lines</h2><table><thead><tr><th>self</th><th>instructions</th><th class=\"l\">line</th><th class=\"l\">function</th></tr></thead><tbody>");
        for l in lines.iter().take(PAGE_ROWS) {
            let _ = writeln!(
                o,
                "<tr><td>{:.2}%</td><td>{}</td><td class=\"l\"><code>{}:{}</code></td><td class=\"l\">{}</td></tr>",
                pct(l.self_counts.instructions, p.instructions),
                thousands(l.self_counts.instructions),
                escape(&l.file),
                l.line,
                escape(&l.function_label())
            );
        }
        let _ = writeln!(o, "</tbody></table>");
        if let Some(u) = &p.lines_unattributed {
            let _ = writeln!(
                o,
                "<p class=\"legend\">{:.2}% of instructions have no line information (code built without -g, such as the C library).</p>",
                pct(u.instructions, p.instructions)
            );
        }
    }
    if p.folded_calls > 0 {
        let _ = writeln!(
            o,
            "<p class=\"note\">{} calls beyond the call tree's limits were folded into their callers; self counts stay exact.</p>",
            p.folded_calls
        );
    }
}

fn timing_section(o: &mut String, t: &Totals) {
    let s = &t.cpi_stack;
    let _ = writeln!(o, "<h2 id=\"timing\">Where the cycles go (CPI stack)</h2>");
    let mut parts = vec![
        ("base", s.base, "#4a7bb7"),
        ("branch", s.branch, "#c85a1a"),
        ("icache", s.icache, "#8a6bbf"),
        ("dcache", s.dcache, "#3c9a5f"),
        ("other", s.other, "#999999"),
    ];
    if t.context_switches > 0 {
        parts.insert(4, ("switch", s.switch, "#c44d8a"));
    }
    if t.brr > 0 {
        parts.insert(2, ("brr", s.brr, "#d9a21b"));
    }
    if t.dispatch_holds > 0 {
        let at = parts.len() - 1;
        parts.insert(at, ("hold", s.hold, "#b03a48"));
    }
    let total: u64 = parts.iter().map(|p| p.1).sum::<u64>().max(1);
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="820" height="50" role="img" aria-label="CPI stack">"#
    );
    let mut x = 0.0;
    for (name, v, colour) in &parts {
        let w = 800.0 * *v as f64 / total as f64;
        let _ = writeln!(
            o,
            r#"<g><title>{name}: {} cycles ({:.1}%)</title><rect x="{x:.1}" y="4" width="{w:.1}" height="24" fill="{colour}"/></g>"#,
            thousands(*v),
            pct(*v, total)
        );
        if w > 60.0 {
            let _ = writeln!(
                o,
                r#"<text x="{:.1}" y="44" font-size="12">{name} {:.1}%</text>"#,
                x + 2.0,
                pct(*v, total)
            );
        }
        x += w;
    }
    let _ = writeln!(o, "</svg>");
    // the key: every cause, however small its bar
    let _ = write!(o, "<p class=\"legend\">");
    for (name, v, colour) in &parts {
        let _ = write!(
            o,
            r#"<span style="display:inline-block;width:10px;height:10px;background:{colour}"></span> {name} {:.1}% ({} cycles) &nbsp; "#,
            pct(*v, total),
            thousands(*v)
        );
    }
    let _ = writeln!(o, "</p>");
    let _ = writeln!(
        o,
        "<p class=\"legend\">Each cycle is charged to one cause: base (retiring at full width or a dependence), branch (refill after a misprediction), brr (refetch after a taken branch-on-random, shown when the program has any), icache (fetch misses), dcache (data misses at the head of the reorder buffer), other. The functions table above ties mispredictions and misses to code. L1I miss rate {:.2}%, L1D {:.2}%, L2 {:.2}%; {:.2}% of conditional branches mispredicted.</p>",
        100.0 * t.l1i_miss_rate(),
        100.0 * t.l1d_miss_rate(),
        100.0 * t.l2_miss_rate(),
        100.0 * t.cond_mispredict_rate()
    );
}

fn rap_section(o: &mut String, r: &RapSection<'_>) {
    let _ = writeln!(
        o,
        "<h2 id=\"rap\">Hot ranges (Range Adaptive Profiling)</h2><p>Each stream is summarized by a RAP tree (ε = {}, b = {}); a range is hot when its own events plus those of its non-hot sub-ranges reach {}% of the stream. Ranges are nested: the tree below shows each with its <em>exclusive</em> share (events in it but in no hotter sub-range), and these sum to 100% with the last row.</p>",
        r.eps,
        r.branching,
        100.0 * r.hot_fraction
    );
    for s in r.streams {
        let whose = match (&s.process, s.thread) {
            (Some(p), _) => format!(", {p}"),
            (None, Some(t)) => format!(", thread {t} only"),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            o,
            "<h3>{}{} <span class=\"legend\">({}; {} events, {} tree nodes)</span></h3>",
            escape(&s.stream),
            escape(&whose),
            escape(&s.description),
            s.n,
            s.nodes
        );
        let _ = writeln!(o, "<table><thead><tr><th class=\"l\">range</th><th>exclusive</th><th></th><th>inclusive</th><th class=\"l\">covers</th></tr></thead><tbody>");
        let mut sum = 0.0;
        for (h, level) in s.hot.iter().zip(crate::nesting(&s.hot)) {
            let r = &h.range;
            sum += r.exclusive_share;
            let indent = "&nbsp;&nbsp;&nbsp;".repeat(level);
            let _ = writeln!(
                o,
                "<tr><td class=\"l\"><code>{indent}{:#x}..{:#x}</code></td><td>{:.2}%</td><td class=\"l\">{}</td><td>{:.2}%</td><td class=\"l\">{}</td></tr>",
                r.lo,
                r.hi,
                100.0 * r.exclusive_share,
                bar(r.exclusive_share),
                100.0 * r.share,
                escape(h.code.as_deref().unwrap_or(""))
            );
        }
        let rest = (1.0 - sum).max(0.0);
        if s.n > 0 && rest > 1e-9 {
            let _ = writeln!(
                o,
                "<tr><td class=\"l\"><em>in no hot range</em></td><td>{:.2}%</td><td class=\"l\">{}</td><td></td><td class=\"l\">the rest of the stream</td></tr>",
                100.0 * rest,
                bar(rest)
            );
        }
        let _ = writeln!(o, "</tbody></table>");
    }
    let _ = writeln!(
        o,
        "<dl class=\"legend\"><dt>exclusive</dt><dd>events in the range and in none of its hot sub-ranges, % of the stream (the paper's Figure 5 annotation)</dd>\
<dt>inclusive</dt><dd>every event the tree counts inside the range, % of the stream (a lower bound; the error bound is ε)</dd>\
<dt>covers</dt><dd>code streams: the functions whose instructions ran in the range, most first, with their shares of its instructions in the exact profile, until 90% are named (+N: the other functions that ran there); without the exact profile, the first and last function the range spans, and a trailing +? when some of its bytes lie in no function (padding, or code without a symbol)</dd>\
<dt>paper</dt><dd>Mysore et al., Range Adaptive Profiling: hot ranges §4.1, tree size over time Figure 6, nodes Figure 7, accuracy Figure 8</dd></dl>"
    );
}

fn strata_section(o: &mut String, s: &outcrop_strata::FileStats) {
    let b = &s.build;
    let _ = writeln!(
        o,
        "<h2 id=\"strata\">Whole-program paths and strata</h2><p>{} blocks ({} distinct) form {} acyclic paths ({} distinct); each stratum layer compresses the repetitions of the layer below.</p>",
        b.blocks, b.unique_blocks, b.paths.executions, b.paths.unique
    );
    let _ = writeln!(o, "<table><thead><tr><th class=\"l\">layer</th><th>inputs</th><th>executions</th><th>distinct</th><th>consecutive repeats</th></tr></thead><tbody>");
    let mut layers = vec![("paths".to_string(), &b.paths)];
    for (i, l) in b.layers.iter().enumerate() {
        layers.push((format!("stratum {}", i + 1), l));
    }
    for (name, l) in layers {
        let _ = writeln!(
            o,
            "<tr><td class=\"l\">{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            l.inputs, l.executions, l.unique, l.consecutive
        );
    }
    let _ = writeln!(o, "</tbody></table><p class=\"legend\">Larus, Whole Program Paths, and the strata of the paper's Tables 3–4: executions are completed paths (strata), distinct are dictionary entries.</p>");
}

/// One row of the suite's index page.
#[derive(Clone, Debug, Serialize)]
pub struct IndexRow {
    /// Workload name (its directory).
    pub name: String,
    /// Exit status.
    pub exit_code: i32,
    /// How it ended.
    pub outcome: String,
    /// Instructions.
    pub instructions: u64,
    /// Cycles (timing).
    pub cycles: Option<u64>,
    /// The hottest function and its self share (%).
    pub hottest: Option<(String, f64)>,
}

/// The suite's index page: a row per workload, linking to `NAME/report.html`.
pub fn index_page(rows: &[IndexRow]) -> String {
    let mut o = String::new();
    head(&mut o, "Outcrop suite report");
    let _ = writeln!(
        o,
        "<h1>Outcrop suite report</h1><p>{} workloads, each profiled with every mechanism in one run. Open a workload for its functions, flame graph, CPI stack, hot ranges, paths and strata.</p>",
        rows.len()
    );
    let _ = writeln!(o, "<table><thead><tr><th class=\"l\">workload</th><th class=\"l\">outcome</th><th>instructions</th><th>cycles</th><th>IPC</th><th class=\"l\">hottest function (self)</th></tr></thead><tbody>");
    for r in rows {
        let n = escape(&r.name);
        let (cycles, ipc) = match r.cycles {
            Some(c) => (
                c.to_string(),
                format!("{:.3}", r.instructions as f64 / c.max(1) as f64),
            ),
            None => (String::new(), String::new()),
        };
        let hottest = r
            .hottest
            .as_ref()
            .map(|(f, s)| format!("<code>{}</code> {s:.1}%", escape(f)))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "<tr><td class=\"l\"><a href=\"{n}/report.html\">{n}</a></td><td class=\"l\">{} ({})</td><td>{}</td><td>{cycles}</td><td>{ipc}</td><td class=\"l\">{hottest}</td></tr>",
            escape(&r.outcome),
            r.exit_code,
            r.instructions
        );
    }
    let _ = writeln!(o, "</tbody></table></body></html>");
    o
}
