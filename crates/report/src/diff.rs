//! `outcrop diff A B` as people read it: the text report, the differential flame graph (SVG)
//! and the diff page (`--report DIR`). The model and its JSON are `outcrop_diff::Diff`
//! (docs/diff.md).

use crate::html::head;
use crate::profile::{escape, flame_layout, thousands, FLAME_ROW};
use crate::Report;
use outcrop_diff::paths::{PathRow, PathsDiff};
use outcrop_diff::profile::ProfileDiff;
use outcrop_diff::ranges::{Range, RangeRow, RangesDiff, Status};
use outcrop_diff::timing::TimingDiff;
use outcrop_diff::{Delta, Diff, Presence, Weight};
use outcrop_profile::Counts;
use std::fmt::Write as _;

/// Rows per table in the text report (the JSON and the page carry more).
pub const TEXT_ROWS: usize = 20;
/// Rows per table on the page.
pub const PAGE_ROWS: usize = 60;

/// `+1,234` / `-1,234` / `0`.
pub fn signed_thousands(n: i64) -> String {
    match n.signum() {
        1 => format!("+{}", thousands(n.unsigned_abs())),
        -1 => format!("-{}", thousands(n.unsigned_abs())),
        _ => "0".to_string(),
    }
}

/// The change of `a` → `b` relative to `a`: `+12.3%`, `new` (a = 0), `gone` (b = 0).
pub fn change_pct(a: u64, b: u64) -> String {
    match (a, b) {
        (0, 0) => "0".to_string(),
        (0, _) => "new".to_string(),
        (_, 0) => "gone".to_string(),
        _ => format!("{:+.1}%", 100.0 * (b as f64 - a as f64) / a as f64),
    }
}

/// A function row's name, its clones, and the side it is only on.
fn function_label(f: &outcrop_diff::profile::FunctionRow) -> String {
    let mut s = f.function.clone();
    if !f.symbols.is_empty() {
        s += &format!(" (as {})", f.symbols.join(", "));
    }
    s + tag(f.presence)
}

fn tag(p: Presence) -> &'static str {
    match p {
        Presence::Both => "",
        Presence::OnlyA => " [only A]",
        Presence::OnlyB => " [only B]",
    }
}

/// The columns of a counts diff row: header names, and cells of (A, B, B − A).
fn count_columns(w: Weight, timed: bool) -> Vec<&'static str> {
    let mut h = vec!["Δ self", "Δ%", "A self", "B self"];
    if w == Weight::Cycles {
        h.push("Δ instr.");
    }
    if timed {
        h.extend(["Δ mispred", "Δ L1D", "Δ L2"]);
    }
    h
}

fn count_cells(w: Weight, timed: bool, a: &Counts, b: &Counts, d: &Delta) -> Vec<String> {
    let mut c = vec![
        signed_thousands(d.of(w)),
        change_pct(w.of(a), w.of(b)),
        thousands(w.of(a)),
        thousands(w.of(b)),
    ];
    if w == Weight::Cycles {
        c.push(signed_thousands(d.instructions));
    }
    if timed {
        c.push(signed_thousands(d.mispredicts));
        c.push(signed_thousands(d.l1d_misses));
        c.push(signed_thousands(d.l2_misses));
    }
    c
}

fn table(out: &mut String, headers: &[&str], rows: &Rows) {
    let widths: Vec<usize> = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            rows.iter()
                .map(|r| r.0[i].chars().count())
                .chain([h.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (h, w) in headers.iter().zip(&widths) {
        let _ = write!(out, "  {h:>w$}");
    }
    let _ = writeln!(out, "  what");
    for (cells, what) in rows {
        for (c, w) in cells.iter().zip(&widths) {
            let _ = write!(out, "  {c:>w$}");
        }
        let _ = writeln!(out, "  {}", terminal(what));
    }
}

/// A name from the inputs as one line of text: control characters escaped (a newline in a
/// name cannot forge a row, an escape sequence cannot reach a terminal, in `-o FILE` too).
fn terminal(s: &str) -> std::borrow::Cow<'_, str> {
    outcrop_events::escape::terminal(s)
}

fn totals_lines(out: &mut String, p: &ProfileDiff) {
    let (a, b, d) = &p.totals;
    let mut rows = vec![(
        "instructions",
        a.instructions,
        b.instructions,
        d.instructions,
    )];
    if p.weight == Weight::Cycles {
        rows.extend([
            ("cycles", a.cycles, b.cycles, d.cycles),
            (
                "mispredictions",
                a.mispredicts,
                b.mispredicts,
                d.mispredicts,
            ),
            ("L1I misses", a.l1i_misses, b.l1i_misses, d.l1i_misses),
            ("L1D misses", a.l1d_misses, b.l1d_misses, d.l1d_misses),
            ("L2 misses", a.l2_misses, b.l2_misses, d.l2_misses),
        ]);
    }
    for (k, x, y, z) in rows {
        let _ = writeln!(
            out,
            "  {k:<15} {:>16} → {:>16}  {:>15} ({})",
            thousands(x),
            thousands(y),
            signed_thousands(z),
            change_pct(x, y)
        );
    }
}

/// A call path for people: its innermost frames (the JSON has all of them).
fn path_label(p: &[String]) -> String {
    const SHOWN: usize = 5;
    if p.len() > SHOWN {
        format!("… > {}", p[p.len() - SHOWN..].join(" > "))
    } else {
        p.join(" > ")
    }
}

fn range_text(r: &Range) -> String {
    let mut s = format!("{:#x}-{:#x}", r.lo, r.hi);
    if let Some(c) = &r.code {
        s += &format!(" ({})", terminal(c));
    }
    s
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Appeared => "appeared",
        Status::Vanished => "vanished",
        Status::Moved => "moved",
        Status::Kept => "kept",
    }
}

fn range_row_text(r: &RangeRow) -> String {
    match (&r.a, &r.b) {
        (Some(a), Some(b)) if (a.lo, a.hi) != (b.lo, b.hi) => {
            format!("{} → {}", range_text(a), range_text(b))
        }
        (_, Some(b)) => range_text(b),
        (Some(a), None) => range_text(a),
        (None, None) => String::new(),
    }
}

fn share(r: Option<&Range>) -> String {
    r.map_or("-".to_string(), |r| format!("{:.2}%", 100.0 * r.share))
}

fn ranges_text(out: &mut String, r: &RangesDiff) {
    let _ = writeln!(out, "Hot ranges (RAP), by change of share");
    for s in &r.streams {
        let count = |st| s.rows.iter().filter(|x| x.status == st).count();
        let _ = writeln!(
            out,
            "  stream {}{}: {} kept, {} moved, {} appeared, {} vanished ({} → {} events)",
            terminal(&s.stream),
            s.thread
                .map(|t| format!(" (thread {t})"))
                .unwrap_or_default(),
            count(Status::Kept),
            count(Status::Moved),
            count(Status::Appeared),
            count(Status::Vanished),
            thousands(s.a_events),
            thousands(s.b_events)
        );
        for row in s.rows.iter().take(TEXT_ROWS / 2) {
            let _ = writeln!(
                out,
                "    {:<8} {:>8} → {:<8} {:>+8.2}  {}",
                status_name(row.status),
                share(row.a.as_ref()),
                share(row.b.as_ref()),
                100.0 * row.share_delta,
                range_row_text(row)
            );
        }
    }
    for (side, v) in [("A", &r.only_a), ("B", &r.only_b)] {
        if !v.is_empty() {
            let _ = writeln!(out, "  streams only {side} has: {}", v.join(", "));
        }
    }
}

fn path_row_text(p: &PathRow) -> String {
    format!(
        "{:>7.2}% → {:>7.2}%  {} ({} blocks: {})",
        100.0 * p.a_share,
        100.0 * p.b_share,
        terminal(&p.function),
        p.blocks.len(),
        terminal(p.blocks.first().map_or("", String::as_str))
    )
}

fn paths_text(out: &mut String, label: &str, p: &PathsDiff) {
    let _ = writeln!(
        out,
        "{label}: paths at {:.1}% or more of their profile are hot",
        100.0 * p.hot
    );
    for (what, rows) in [("gained", &p.gained), ("lost", &p.lost), ("kept", &p.kept)] {
        let _ = writeln!(out, "  {what}: {}", rows.len());
        for r in rows.iter().take(TEXT_ROWS / 2) {
            let _ = writeln!(out, "    {}", path_row_text(r));
        }
    }
    let _ = writeln!(out, "  path share by function (comparable across builds):");
    for f in p.by_function.iter().take(TEXT_ROWS / 2) {
        let _ = writeln!(
            out,
            "    {:>7.2}% → {:>7.2}%  {:>+7.2}  {}",
            100.0 * f.a_share,
            100.0 * f.b_share,
            100.0 * (f.b_share - f.a_share),
            terminal(&f.function)
        );
    }
}

fn timing_text(out: &mut String, t: &TimingDiff) {
    let _ = writeln!(
        out,
        "CPI stack (cycles by cause; the causes sum to the cycles)"
    );
    for r in t.cpi_stack.iter().filter(|r| r.a != 0.0 || r.b != 0.0) {
        let _ = writeln!(
            out,
            "  {:<8} {:>16} → {:>16}  {:>15} ({})",
            r.name,
            thousands(r.a as u64),
            thousands(r.b as u64),
            signed_thousands(r.delta as i64),
            change_pct(r.a as u64, r.b as u64)
        );
    }
}

/// A table's rows: the cells of each and its label.
type Rows = Vec<(Vec<String>, String)>;

/// The first `n` function rows.
fn function_rows(p: &ProfileDiff, n: usize) -> Rows {
    let timed = p.weight == Weight::Cycles;
    let floor = noise_floor(p);
    p.functions
        .iter()
        .take_while(|f| f.delta.self_counts.of(p.weight).unsigned_abs() >= floor)
        .take(n)
        .map(|f| {
            (
                count_cells(
                    p.weight,
                    timed,
                    &f.a.self_counts,
                    &f.b.self_counts,
                    &f.delta.self_counts,
                ),
                function_label(f),
            )
        })
        .collect()
}

/// Parts of the larger run under which a row's change is left out of the text tables as
/// noise (1/10,000: 0.01%; a run's start-up differs by a few hundred cycles between builds).
pub const NOISE: u64 = 10_000;

/// The smallest |B − A| a text row shows: [`NOISE`] of the larger side's total, at least 1.
fn noise_floor(p: &ProfileDiff) -> u64 {
    let (a, b, _) = &p.totals;
    (p.weight.of(a).max(p.weight.of(b)) / NOISE).max(1)
}

/// How many of `deltas` (sorted by |Δ|, largest first) are under the noise floor.
fn under_floor(p: &ProfileDiff, deltas: impl Iterator<Item = i64>) -> usize {
    let floor = noise_floor(p);
    deltas
        .filter(|&d| d != 0 && d.unsigned_abs() < floor)
        .count()
}

/// A table of the rows above the noise floor, then how many changed by less (left out), or
/// a line saying none changed by as much.
fn noisy_table(
    out: &mut String,
    p: &ProfileDiff,
    headers: &[&str],
    rows: &Rows,
    quiet: usize,
    what: &str,
) {
    let w = p.weight.name();
    let floor = thousands(noise_floor(p));
    if rows.is_empty() {
        let _ = writeln!(
            out,
            "  none changed by {floor} {w} or more (0.01% of the run): the same within noise"
        );
    } else {
        table(out, headers, rows);
    }
    if quiet > 0 {
        let _ = writeln!(
            out,
            "  {quiet} {what} changed by less than {floor} {w} each (start-up noise), left out (--json has them)"
        );
    }
}

/// The first `n` source-line rows.
fn line_rows(p: &ProfileDiff, lines: &[outcrop_diff::profile::LineRow], n: usize) -> Rows {
    let timed = p.weight == Weight::Cycles;
    let floor = noise_floor(p);
    lines
        .iter()
        .take_while(|l| l.delta.of(p.weight).unsigned_abs() >= floor)
        .take(n)
        .map(|l| {
            (
                count_cells(p.weight, timed, &l.a, &l.b, &l.delta),
                if l.line == 0 {
                    l.file.clone()
                } else {
                    format!("{}:{} ({}){}", l.file, l.line, l.function, tag(l.presence))
                },
            )
        })
        .collect()
}

/// The first `n` call-path rows.
fn call_rows(p: &ProfileDiff, n: usize) -> Rows {
    let timed = p.weight == Weight::Cycles;
    let floor = noise_floor(p);
    p.call_paths
        .iter()
        .take_while(|c| c.delta.of(p.weight).unsigned_abs() >= floor)
        .take(n)
        .map(|c| {
            (
                count_cells(p.weight, timed, &c.a, &c.b, &c.delta),
                format!("{}{}", path_label(&c.path), tag(c.presence)),
            )
        })
        .collect()
}

/// The text report of a diff.
pub struct DiffText<'a>(pub &'a Diff);

impl serde::Serialize for DiffText<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl Report for DiffText<'_> {
    fn write_text(&self, out: &mut String) {
        let d = self.0;
        let _ = writeln!(
            out,
            "outcrop diff: B = {} against A = {}",
            terminal(&d.b),
            terminal(&d.a)
        );
        if let Some(p) = &d.profile {
            let _ = writeln!(
                out,
                "  programs: A {}, B {}; matched by {}",
                terminal(&p.a.program),
                terminal(&p.b.program),
                match p.matching {
                    outcrop_diff::Matching::Address => "address (the same code)",
                    outcrop_diff::Matching::Symbol => "symbol and line",
                }
            );
            totals_lines(out, p);
            let timed = p.weight == Weight::Cycles;
            let w = p.weight.name();
            let _ = writeln!(
                out,
                "Functions by change in self {w} (B - A; every column sums to the totals above)"
            );
            let rows = function_rows(p, TEXT_ROWS);
            let deltas = p.functions.iter().map(|f| f.delta.self_counts.of(p.weight));
            let quiet = under_floor(p, deltas.clone());
            let shown = deltas
                .filter(|&d| d.unsigned_abs() >= noise_floor(p))
                .count();
            noisy_table(
                out,
                p,
                &count_columns(p.weight, timed),
                &rows,
                quiet,
                "functions",
            );
            if shown > rows.len() {
                let _ = writeln!(
                    out,
                    "  ... {} more (all of them: --json)",
                    shown - rows.len()
                );
            }
            let u = &p.unmatched;
            if u.only_a + u.only_b > 0 {
                let _ = writeln!(
                    out,
                    "  not matched: {} functions only in A ({:.2}% of A's {w}: removed, renamed or inlined), {} only in B ({:.2}% of B's)",
                    u.only_a, u.only_a_pct, u.only_b, u.only_b_pct
                );
            }
            if let Some(lines) = &p.lines {
                let _ = writeln!(out, "Source lines by change in self {w}");
                let rows = line_rows(p, lines, TEXT_ROWS);
                let quiet = under_floor(p, lines.iter().map(|l| l.delta.of(p.weight)));
                noisy_table(
                    out,
                    p,
                    &count_columns(p.weight, timed),
                    &rows,
                    quiet,
                    "lines",
                );
            }
            let _ = writeln!(out, "Call paths by change in self {w} (the innermost frames; the JSON has each whole path)");
            let rows = call_rows(p, TEXT_ROWS / 2);
            let quiet = under_floor(p, p.call_paths.iter().map(|c| c.delta.of(p.weight)));
            noisy_table(
                out,
                p,
                &count_columns(p.weight, timed),
                &rows,
                quiet,
                "call paths",
            );
        }
        if let Some(t) = &d.timing {
            timing_text(out, t);
        }
        if let Some(r) = &d.ranges {
            ranges_text(out, r);
        }
        if let Some(p) = &d.paths {
            paths_text(out, "Hot paths from branch records", p);
        }
        if let Some(p) = &d.wpp_paths {
            paths_text(out, "Hot paths of the whole-program paths", p);
        }
        let notes = d
            .notes
            .iter()
            .chain(d.profile.iter().flat_map(|p| &p.notes));
        for n in notes {
            let _ = writeln!(out, "  note: {}", terminal(n));
        }
        let _ = writeln!(
            out,
            "  Δ: B minus A; Δ%: relative to A (new: not in A; gone: not in B); [only A]/[only B]: no row of the other side matched"
        );
    }
}

/// The differential flame graph: B's call tree, frame widths of B's weight, coloured red
/// where B spends more than A on the same call path and blue where it spends less (white:
/// unchanged); the tooltip gives A, B and the change. Deterministic.
pub fn diff_flame_svg(p: &ProfileDiff, width: u32) -> String {
    let parents: Vec<u32> = p.flame.iter().map(|n| n.parent).collect();
    let weights: Vec<u64> = p.flame.iter().map(|n| n.b_total).collect();
    let (frames, max_depth) = flame_layout(&parents, &weights, f64::from(width));
    let row = FLAME_ROW;
    let height = (max_depth + 1) * row + 4;
    let total = weights.first().copied().unwrap_or(0).max(1) as f64;
    let unit = p.weight.name();
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="flame" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="monospace" font-size="11" role="img" aria-label="differential flame graph">"#
    );
    for (n, x, d, nw) in frames {
        let node = &p.flame[n as usize];
        let y = height - 2 - (d + 1) * row;
        // colour by the change of the frame's own (self) weight relative to B's total,
        // saturating at 10% of the graph
        let delta = node.b_self as f64 - node.a_self as f64;
        let strength = (delta.abs() / total / 0.1).min(1.0);
        let fade = (255.0 - 175.0 * strength) as u32;
        let (r, g, b) = if delta > 0.0 {
            (255, fade, fade)
        } else if delta < 0.0 {
            (fade, fade, 255)
        } else {
            (245, 245, 245)
        };
        let _ = write!(
            s,
            r#"<g><title>{} — B {} {unit} ({:.2}%), A {}, change {} ({}); self B {}, A {}</title><rect x="{x:.1}" y="{y}" width="{:.1}" height="{}" fill="rgb({r},{g},{b})" stroke="grey" stroke-width="0.3" rx="2"/>"#,
            escape(&node.name),
            thousands(node.b_total),
            100.0 * node.b_total as f64 / total,
            thousands(node.a_total),
            signed_thousands(outcrop_diff::signed(node.a_total, node.b_total)),
            change_pct(node.a_total, node.b_total),
            thousands(node.b_self),
            thousands(node.a_self),
            (nw - 0.5).max(0.5),
            row - 1
        );
        let chars = ((nw - 6.0) / 7.0).floor();
        if chars >= 3.0 {
            let chars = chars as usize;
            let label: String = if node.name.chars().count() > chars {
                node.name
                    .chars()
                    .take(chars.saturating_sub(2))
                    .collect::<String>()
                    + ".."
            } else {
                node.name.clone()
            };
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{}">{}</text>"#,
                x + 3.0,
                y + row - 5,
                escape(&label)
            );
        }
        s.push_str("</g>\n");
    }
    s.push_str("</svg>\n");
    s
}

fn html_table(o: &mut String, headers: &[&str], rows: &[(Vec<String>, String)], what: &str) {
    let _ = write!(o, "<table><thead><tr>");
    for h in headers {
        let _ = write!(o, "<th>{}</th>", escape(h));
    }
    let _ = writeln!(
        o,
        "<th class=\"l\">{}</th></tr></thead><tbody>",
        escape(what)
    );
    for (cells, label) in rows {
        let _ = write!(o, "<tr>");
        for c in cells {
            let class = if c.starts_with('+') || c == "new" {
                " style=\"color:#b00\""
            } else if c.starts_with('-') || c == "gone" {
                " style=\"color:#05a\""
            } else {
                ""
            };
            let _ = write!(o, "<td{class}>{}</td>", escape(c));
        }
        let _ = writeln!(o, "<td class=\"l\">{}</td></tr>", escape(label));
    }
    let _ = writeln!(o, "</tbody></table>");
}

/// The diff page (`outcrop diff --report DIR` writes it as `DIR/diff.html`): offline, no
/// script, the same bytes for the same inputs. `files`: the other files of DIR, for links.
pub fn diff_page(d: &Diff, files: &[(&str, &str)]) -> String {
    let mut o = String::new();
    head(&mut o, &format!("Outcrop diff: {} vs {}", d.b, d.a));
    let _ = writeln!(
        o,
        "<h1>Outcrop diff: <code>{}</code> against <code>{}</code></h1>",
        escape(&d.b),
        escape(&d.a)
    );
    let notes: Vec<&String> = d
        .notes
        .iter()
        .chain(d.profile.iter().flat_map(|p| &p.notes))
        .collect();
    if let Some(p) = &d.profile {
        let timed = p.weight == Weight::Cycles;
        let w = p.weight.name();
        let _ = writeln!(o, "<table><tbody>");
        let _ = writeln!(
            o,
            "<tr><th class=\"l\">A</th><td class=\"l\">{} <code>{}</code></td></tr><tr><th class=\"l\">B</th><td class=\"l\">{} <code>{}</code></td></tr><tr><th class=\"l\">matched by</th><td class=\"l\">{}</td></tr>",
            escape(&p.a.program),
            escape(p.a.program_id.as_deref().unwrap_or("no program id")),
            escape(&p.b.program),
            escape(p.b.program_id.as_deref().unwrap_or("no program id")),
            match p.matching {
                outcrop_diff::Matching::Address => "address (the same code)",
                outcrop_diff::Matching::Symbol => "symbol and line (different builds)",
            }
        );
        let _ = writeln!(o, "</tbody></table>");
        let mut t = String::new();
        totals_lines(&mut t, p);
        let _ = writeln!(o, "<h2>Totals</h2><pre>{}</pre>", escape(&t));
        for n in &notes {
            let _ = writeln!(o, "<p class=\"note\">{}</p>", escape(n));
        }
        let _ = writeln!(
            o,
            "<h2 id=\"functions\">Functions</h2><p class=\"legend\">By absolute change in self {w} (B − A); Δ%: relative to A (new: only in B; gone: only in A). Every column sums to the totals. {} functions only in A ({:.2}% of A's {w}), {} only in B ({:.2}%).</p>",
            p.unmatched.only_a,
            p.unmatched.only_a_pct,
            p.unmatched.only_b,
            p.unmatched.only_b_pct
        );
        let rows = function_rows(p, PAGE_ROWS);
        html_table(&mut o, &count_columns(p.weight, timed), &rows, "function");
        let _ = writeln!(
            o,
            "<h2 id=\"flame\">Differential flame graph</h2><p class=\"legend\">B's call tree, width = B's {w}; red: the frame itself spends more in B than in A on the same call path, blue: less (full colour at 10% of the graph); hover a frame for A, B and the change. Call paths only A took are in the call-path table.</p>"
        );
        o.push_str(&diff_flame_svg(p, 1240));
        if let Some(lines) = &p.lines {
            let _ = writeln!(o, "<h2 id=\"lines\">Source lines</h2>");
            let rows = line_rows(p, lines, PAGE_ROWS);
            html_table(&mut o, &count_columns(p.weight, timed), &rows, "line");
        }
        let _ = writeln!(o, "<h2 id=\"calls\">Call paths</h2>");
        let rows = call_rows(p, PAGE_ROWS);
        html_table(&mut o, &count_columns(p.weight, timed), &rows, "call path");
    } else {
        for n in &notes {
            let _ = writeln!(o, "<p class=\"note\">{}</p>", escape(n));
        }
    }
    let mut rest = String::new();
    if let Some(t) = &d.timing {
        timing_text(&mut rest, t);
    }
    if let Some(r) = &d.ranges {
        ranges_text(&mut rest, r);
    }
    if let Some(p) = &d.paths {
        paths_text(&mut rest, "Hot paths from branch records", p);
    }
    if let Some(p) = &d.wpp_paths {
        paths_text(&mut rest, "Hot paths of the whole-program paths", p);
    }
    if !rest.is_empty() {
        let _ = writeln!(
            o,
            "<h2 id=\"mechanisms\">CPI stack, hot ranges and hot paths</h2><pre>{}</pre>",
            escape(&rest)
        );
    }
    if !files.is_empty() {
        let _ = writeln!(o, "<h2 id=\"files\">Files</h2><ul>");
        for (f, what) in files {
            let _ = writeln!(
                o,
                "<li><a href=\"{}\">{}</a>: {}</li>",
                escape(f),
                escape(f),
                escape(what)
            );
        }
        let _ = writeln!(o, "</ul>");
    }
    o.push_str("</body></html>\n");
    o
}

/// One side of a diff as its report directory shows it: the profile read (if any) and the
/// exports its run directory already had (bytes), used as they are.
pub struct SideFiles<'a> {
    /// The side's profile.
    pub profile: Option<&'a outcrop_diff::ProfileView>,
    /// Its `profile.speedscope.json`, when its directory had one.
    pub speedscope: Option<Vec<u8>>,
    /// Its `profile.firefox.json`, when its directory had one.
    pub firefox: Option<Vec<u8>>,
}

/// Every file of `outcrop diff --report DIR`, in order, the page (`diff.html`, listing the
/// others) last: the diff as JSON, the differential flame graph, and each side's profile for
/// speedscope and the Firefox Profiler.
pub fn directory_files(diff: &Diff, a: SideFiles, b: SideFiles) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, &'static str, Vec<u8>)> = vec![(
        "diff.json".into(),
        "the diff as JSON (docs/diff.md)",
        crate::json(diff).into_bytes(),
    )];
    if let Some(p) = &diff.profile {
        files.push((
            "diff.svg".into(),
            "the differential flame graph",
            diff_flame_svg(p, 1240).into_bytes(),
        ));
    }
    for (side, s) in [("a", a), ("b", b)] {
        let Some(view) = s.profile else {
            continue;
        };
        let name = format!("{} ({})", view.program, side.to_uppercase());
        let profile = view.to_profile();
        let (speedscope, firefox) = if side == "a" {
            (
                "A's profile for speedscope (open B's beside it)",
                "A's profile for the Firefox Profiler (open B's beside it)",
            )
        } else {
            (
                "B's profile for speedscope",
                "B's profile for the Firefox Profiler",
            )
        };
        files.push((
            format!("{side}.speedscope.json"),
            speedscope,
            s.speedscope
                .unwrap_or_else(|| crate::profile::speedscope(&profile, &name).into_bytes()),
        ));
        files.push((
            format!("{side}.firefox.json"),
            firefox,
            s.firefox
                .unwrap_or_else(|| crate::profile::firefox(&profile, &name).into_bytes()),
        ));
    }
    let listed: Vec<(&str, &str)> = files.iter().map(|(f, w, _)| (f.as_str(), *w)).collect();
    let page = diff_page(diff, &listed);
    let mut out: Vec<(String, Vec<u8>)> = files.into_iter().map(|(f, _, b)| (f, b)).collect();
    out.push(("diff.html".into(), page.into_bytes()));
    out
}
