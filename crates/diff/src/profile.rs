//! The difference of two exact profiles: functions, source lines and call paths.
//!
//! Every row holds A's counts, B's counts and B − A. The rows of each table are the union
//! of both sides' rows, so each column of A (and of B) sums to that side's run: a row one
//! side lacks counts zero there and is marked [`Presence::OnlyA`] or [`Presence::OnlyB`].
//! Profiles written before `profile.json` listed every function get an `(other functions)`
//! row holding the rest, so the sums still hold.

use crate::input::{NodeView, ProfileView};
use crate::{Delta, Error, Matching, Presence, Weight};
use outcrop_profile::Counts;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// Below this overlap, two profiles of different code are taken for different programs
/// (`--force` compares them anyway). The overlap is the sum over functions of the smaller of
/// a function's two shares of its run's self weight (1: the same distribution; two builds of
/// Lua at -O1 and -O2 overlap 0.91, two bundled workloads whose hot code is their own
/// 0.08).
pub const MIN_OVERLAP: f64 = 0.3;

/// Name of the row that holds what an older `profile.json` left out of its function list.
pub const OTHER_FUNCTIONS: &str = "(other functions)";
/// Name of the line row holding instructions outside the line table.
pub const NO_LINE: &str = "(no line)";
/// Name of the line row holding lines a file left out.
pub const OTHER_LINES: &str = "(other lines)";

/// Options of [`diff_profiles`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Compare even when the two look like different programs.
    pub force: bool,
    /// Match by symbol and line even when the program ids are equal.
    pub by_symbol: bool,
}

/// What one side is.
#[derive(Clone, Debug, Serialize)]
pub struct SideInfo {
    /// The program path as the profile recorded it.
    pub program: String,
    /// Its program id, when recorded.
    pub program_id: Option<String>,
    /// The run's counts.
    pub totals: Counts,
    /// Whether a timing model ran.
    pub timed: bool,
    /// Functions that ran.
    pub functions: usize,
    /// Calls the call tree folded (0: exact).
    pub folded_calls: u64,
}

/// Self and total counts and calls of one function on one side.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct FunctionSide {
    /// Self counts.
    #[serde(rename = "self")]
    pub self_counts: Counts,
    /// Inclusive counts.
    pub total: Counts,
    /// Times entered.
    pub calls: u64,
    /// Its address on this side (null where it did not run).
    pub start: Option<u64>,
}

/// B − A of a function.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct FunctionDelta {
    /// Of self counts.
    #[serde(rename = "self")]
    pub self_counts: Delta,
    /// Of inclusive counts.
    pub total: Delta,
    /// Of calls.
    pub calls: i64,
}

/// One function of the diff.
#[derive(Clone, Debug, Serialize)]
pub struct FunctionRow {
    /// Its name (with ` (2)`… when a build has several functions of that name). Across
    /// builds, a compiler's clones count with their origin ([`base_name`]).
    pub function: String,
    /// The symbols counted in this row when they are not just `function` (clones such as
    /// `f.constprop.0`, on either side).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub symbols: Vec<String>,
    /// Which sides it ran on.
    pub presence: Presence,
    /// A's.
    pub a: FunctionSide,
    /// B's.
    pub b: FunctionSide,
    /// B − A.
    pub delta: FunctionDelta,
}

/// One source line of the diff.
#[derive(Clone, Debug, Serialize)]
pub struct LineRow {
    /// File.
    pub file: String,
    /// Line (0 for the `(no line)` and `(other lines)` rows).
    pub line: u32,
    /// The function most of its instructions ran in (B's, else A's).
    pub function: String,
    /// Which sides it ran on.
    pub presence: Presence,
    /// A's self counts.
    pub a: Counts,
    /// B's self counts.
    pub b: Counts,
    /// B − A.
    pub delta: Delta,
}

/// One call path (a chain of calls from the program's entry) of the diff. Across builds,
/// frames of functions only one build ran are left out on both sides.
#[derive(Clone, Debug, Serialize)]
pub struct CallPathRow {
    /// Its frames, outermost first (a thread other than the main one starts with
    /// `thread N`).
    pub path: Vec<String>,
    /// Which sides it ran on.
    pub presence: Presence,
    /// A's counts on the chain itself.
    pub a: Counts,
    /// B's.
    pub b: Counts,
    /// B − A.
    pub delta: Delta,
    /// A's counts on the chain and below it.
    pub a_total: Counts,
    /// B's.
    pub b_total: Counts,
}

/// A frame of the differential flame graph: a node of B's call tree with A's counts on the
/// same call path.
#[derive(Clone, Debug)]
pub struct FlameNode {
    /// Parent index (the root's is 0).
    pub parent: u32,
    /// Frame name (`all` for the root).
    pub name: String,
    /// B's inclusive weight (the frame's width).
    pub b_total: u64,
    /// A's inclusive weight on the same path (0 where A never took it).
    pub a_total: u64,
    /// B's self weight.
    pub b_self: u64,
    /// A's self weight on the same path.
    pub a_self: u64,
}

/// Rows of one side no row of the other matched.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Unmatched {
    /// Functions only A ran.
    pub only_a: usize,
    /// Their share of A's weight, in percent.
    pub only_a_pct: f64,
    /// Functions only B ran.
    pub only_b: usize,
    /// Their share of B's weight, in percent.
    pub only_b_pct: f64,
}

/// The difference of two profiles.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileDiff {
    /// The baseline.
    pub a: SideInfo,
    /// The profile compared with it.
    pub b: SideInfo,
    /// How rows were matched.
    pub matching: Matching,
    /// What rows are sorted by: cycles when both were timed.
    pub weight: Weight,
    /// The runs' counts: A, B, B − A.
    pub totals: (Counts, Counts, Delta),
    /// Every function either ran, by absolute change of self weight (then of self
    /// instructions, then name).
    pub functions: Vec<FunctionRow>,
    /// Every source line either ran, likewise sorted; null unless both have lines.
    pub lines: Option<Vec<LineRow>>,
    /// Every call path either ran, likewise sorted.
    pub call_paths: Vec<CallPathRow>,
    /// Functions only one side ran.
    pub unmatched: Unmatched,
    /// The profiles' overlap by function (0–1; see [`MIN_OVERLAP`]).
    pub overlap: f64,
    /// What a reader should know (one run timed and not the other, folded trees…).
    pub notes: Vec<String>,
    /// B's call tree with A's counts per call path (the differential flame graph).
    #[serde(skip)]
    pub flame: Vec<FlameNode>,
}

fn side_info(p: &ProfileView) -> SideInfo {
    SideInfo {
        program: p.program.clone(),
        program_id: p.program_id.clone(),
        totals: p.totals(),
        timed: p.timed(),
        functions: p.functions.len(),
        folded_calls: p.folded_calls,
    }
}

/// The function a compiler's clone was made from: `f.constprop.0`, `f.isra.0`, `f.part.1`,
/// `f.cold`, `f.lto_priv.0` and `f.localalias` (and their combinations) are `f`. Across
/// builds a clone is matched with its origin, since one build clones what the other does
/// not.
pub fn base_name(name: &str) -> &str {
    const CLONES: &[&str] = &[
        "constprop",
        "isra",
        "part",
        "cold",
        "lto_priv",
        "localalias",
    ];
    let mut s = name;
    loop {
        let Some((head, last)) = s.rsplit_once('.') else {
            return s;
        };
        // `.N` after a clone kind
        let (head, kind) = if !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()) {
            match head.rsplit_once('.') {
                Some((h, k)) => (h, k),
                None => return s,
            }
        } else {
            (head, last)
        };
        if head.is_empty() || !CLONES.contains(&kind) {
            return s;
        }
        s = head;
    }
}

/// Functions of one side by key, with an `(other functions)` row for what the list left out.
/// Across builds (`by_address` false) a compiler's clone counts with its origin
/// ([`base_name`]), and its symbols are in `names`.
fn functions(
    p: &ProfileView,
    by_address: bool,
    names: &mut BTreeMap<String, std::collections::BTreeSet<String>>,
) -> BTreeMap<String, FunctionSide> {
    let mut sorted: Vec<_> = p.functions.iter().collect();
    sorted.sort_by(|x, y| (x.start, &x.name).cmp(&(y.start, &y.name)));
    let mut seen: FxHashMap<&str, u32> = FxHashMap::default();
    let mut out = BTreeMap::new();
    let mut listed = Counts::default();
    for f in sorted {
        add(&mut listed, &f.self_counts);
        let n = seen.entry(f.name.as_str()).or_insert(0);
        *n += 1;
        let key = if by_address {
            format!("{}\u{0}{:016x}", f.name, f.start)
        } else if *n == 1 {
            base_name(&f.name).to_string()
        } else {
            format!("{} ({n})", base_name(&f.name))
        };
        if key != f.name {
            names.entry(key.clone()).or_default().insert(f.name.clone());
        }
        let side = out.entry(key).or_insert(FunctionSide {
            start: Some(f.start),
            ..FunctionSide::default()
        });
        add(&mut side.self_counts, &f.self_counts);
        add(&mut side.total, &f.total);
        side.calls = side.calls.saturating_add(f.calls);
    }
    let rest = minus(&p.totals(), &listed);
    if rest != Counts::default() {
        out.insert(
            OTHER_FUNCTIONS.to_string(),
            FunctionSide {
                self_counts: rest,
                ..FunctionSide::default()
            },
        );
    }
    out
}

fn minus(a: &Counts, b: &Counts) -> Counts {
    Counts {
        instructions: a.instructions.saturating_sub(b.instructions),
        cycles: a.cycles.saturating_sub(b.cycles),
        mispredicts: a.mispredicts.saturating_sub(b.mispredicts),
        l1i_misses: a.l1i_misses.saturating_sub(b.l1i_misses),
        l1d_misses: a.l1d_misses.saturating_sub(b.l1d_misses),
        l2_misses: a.l2_misses.saturating_sub(b.l2_misses),
    }
}

/// Lines of one side by (file, line), with `(no line)` and `(other lines)` rows.
fn lines(p: &ProfileView) -> Option<BTreeMap<(String, u32), (String, Counts)>> {
    let rows = p.lines.as_ref()?;
    let mut out: BTreeMap<(String, u32), (String, Counts)> = BTreeMap::new();
    let mut listed = Counts::default();
    for l in rows {
        add(&mut listed, &l.self_counts);
        let e = out
            .entry((l.file.clone(), l.line))
            .or_insert_with(|| (l.function.clone(), Counts::default()));
        add(&mut e.1, &l.self_counts);
    }
    let un = p.lines_unattributed.unwrap_or_default();
    add(&mut listed, &un);
    if un != Counts::default() {
        out.insert((NO_LINE.to_string(), 0), (String::new(), un));
    }
    let rest = minus(&p.totals(), &listed);
    if rest != Counts::default() {
        out.insert((OTHER_LINES.to_string(), 0), (String::new(), rest));
    }
    Some(out)
}

/// Call paths, interned: path 0 is the root (no frame); every other is a frame below a parent
/// path, so a tree of any shape takes memory in proportion to its nodes.
struct PathTable {
    frames: Vec<String>,
    frame_ids: FxHashMap<String, u32>,
    /// (parent path, frame) of each path.
    links: Vec<(u32, u32)>,
    ids: FxHashMap<(u32, u32), u32>,
}

impl PathTable {
    fn new() -> PathTable {
        PathTable {
            frames: Vec::new(),
            frame_ids: FxHashMap::default(),
            links: vec![(0, u32::MAX)],
            ids: FxHashMap::default(),
        }
    }

    fn frame(&mut self, name: &str) -> u32 {
        if let Some(&f) = self.frame_ids.get(name) {
            return f;
        }
        let f = self.frames.len() as u32;
        self.frames.push(name.to_string());
        self.frame_ids.insert(name.to_string(), f);
        f
    }

    fn child(&mut self, parent: u32, frame: u32) -> u32 {
        if let Some(&p) = self.ids.get(&(parent, frame)) {
            return p;
        }
        let p = self.links.len() as u32;
        self.links.push((parent, frame));
        self.ids.insert((parent, frame), p);
        p
    }

    /// The path's innermost frame.
    fn last(&self, path: u32) -> Option<&str> {
        let (_, f) = *self.links.get(path as usize)?;
        self.frames.get(f as usize).map(String::as_str)
    }

    /// The path's frames, outermost first; past [`MAX_PATH_FRAMES`] only the innermost,
    /// after a `(N outer frames)` frame.
    fn frames_of(&self, path: u32) -> Vec<String> {
        let mut out = Vec::new();
        let mut p = path;
        let mut cut = 0u64;
        while p != 0 {
            let Some(&(parent, f)) = self.links.get(p as usize) else {
                break;
            };
            if out.len() < MAX_PATH_FRAMES {
                out.push(self.frames.get(f as usize).cloned().unwrap_or_default());
            } else {
                cut += 1;
            }
            p = parent;
        }
        if cut > 0 {
            out.push(format!("({cut} outer frames)"));
        }
        out.reverse();
        out
    }
}

/// Frames a call path's row lists (the innermost; deeper paths begin with a count of the
/// frames left out).
pub const MAX_PATH_FRAMES: usize = 256;

/// Call-path rows listed; the rest are summed in one `(other call paths)` row, so the
/// columns still sum to the runs.
pub const MAX_CALL_PATH_ROWS: usize = 20_000;

/// Deepest call tree read: Outcrop's are at most `outcrop_profile::MAX_DEPTH` deep (plus a
/// thread's root).
pub const MAX_TREE_DEPTH: usize = 4096;

/// Every node's call path (`paths[i]` for node i; the root's is 0), leaving out frames of
/// functions `keep` rejects (a thread's root frame always stays).
fn node_paths(
    tree: &[NodeView],
    keep: &dyn Fn(&str) -> bool,
    by_address: bool,
    table: &mut PathTable,
) -> Vec<u32> {
    let mut paths: Vec<u32> = Vec::with_capacity(tree.len());
    for (i, n) in tree.iter().enumerate() {
        if i == 0 {
            paths.push(0);
            continue;
        }
        let parent = paths.get(n.parent as usize).copied().unwrap_or(0);
        let p = match &n.function {
            Some(f) if keep(f) => {
                let f = table.frame(if by_address { f } else { base_name(f) });
                table.child(parent, f)
            }
            Some(_) => parent,
            None => {
                let f = table.frame(&format!("thread {}", n.thread));
                table.child(parent, f)
            }
        };
        paths.push(p);
    }
    paths
}

/// Self and total counts per call path (nodes with the same path, which a folded tree or a
/// left-out frame can make, add up).
fn call_paths(tree: &[NodeView], paths: &[u32]) -> FxHashMap<u32, (Counts, Counts)> {
    let mut out: FxHashMap<u32, (Counts, Counts)> = FxHashMap::default();
    for (n, &p) in tree.iter().zip(paths).skip(1) {
        let e = out.entry(p).or_default();
        add(&mut e.0, &n.self_counts);
        add(&mut e.1, &n.total);
    }
    out
}

/// A call path's row before it is listed: its id, where it ran, and A's and B's (self,
/// total) counts.
type PathCounts = (u32, Presence, (Counts, Counts), (Counts, Counts));

/// `a += b`, saturating (a file's counts are a stranger's).
pub fn add(a: &mut Counts, b: &Counts) {
    a.instructions = a.instructions.saturating_add(b.instructions);
    a.cycles = a.cycles.saturating_add(b.cycles);
    a.mispredicts = a.mispredicts.saturating_add(b.mispredicts);
    a.l1i_misses = a.l1i_misses.saturating_add(b.l1i_misses);
    a.l1d_misses = a.l1d_misses.saturating_add(b.l1d_misses);
    a.l2_misses = a.l2_misses.saturating_add(b.l2_misses);
}

fn sort_key(d: &Delta, w: Weight) -> (std::cmp::Reverse<u64>, std::cmp::Reverse<u64>) {
    (
        std::cmp::Reverse(d.of(w).unsigned_abs()),
        std::cmp::Reverse(d.instructions.unsigned_abs()),
    )
}

/// What a reader must know before the rows: which side was timed, folded calls, matching
/// across builds.
fn first_notes(
    a: &ProfileView,
    b: &ProfileView,
    matching: Matching,
    same_code: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    match (a.timed(), b.timed()) {
        (true, false) => notes.push(
            "only A was timed: rows compare instructions (run B with --timing to compare cycles)"
                .to_string(),
        ),
        (false, true) => notes.push(
            "only B was timed: rows compare instructions (run A with --timing to compare cycles)"
                .to_string(),
        ),
        _ => {}
    }
    for (s, p) in [("A", a), ("B", b)] {
        if p.folded_calls > 0 {
            notes.push(format!(
                "{s}'s call tree folded {} calls into their callers (depth or size limit): its call paths are coarser, its functions and lines exact",
                p.folded_calls
            ));
        }
    }
    if matching == Matching::Symbol && !same_code {
        notes.push(match (&a.program_id, &b.program_id) {
            (Some(x), Some(y)) => format!(
                "different builds ({x} and {y}): functions matched by name, lines by file and line"
            ),
            _ => {
                "a profile without a program id: functions matched by name, lines by file and line"
                    .to_string()
            }
        });
    }

    notes
}

/// One row per function of either side, by change, and what only one side has.
fn function_rows(
    fa: &BTreeMap<String, FunctionSide>,
    fb: &BTreeMap<String, FunctionSide>,
    clones: &BTreeMap<String, std::collections::BTreeSet<String>>,
    weight: Weight,
    (wa, wb): (f64, f64),
) -> (Vec<FunctionRow>, Unmatched) {
    let mut rows = Vec::new();
    let mut unmatched = Unmatched::default();
    let keys: std::collections::BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
    for k in keys {
        let (sa, sb) = (fa.get(k), fb.get(k));
        let presence = Presence::of(sa.is_some(), sb.is_some());
        let (sa, sb) = (
            sa.copied().unwrap_or_default(),
            sb.copied().unwrap_or_default(),
        );
        match presence {
            Presence::OnlyA => {
                unmatched.only_a += 1;
                unmatched.only_a_pct += crate::pct(weight.of(&sa.self_counts) as f64, wa);
            }
            Presence::OnlyB => {
                unmatched.only_b += 1;
                unmatched.only_b_pct += crate::pct(weight.of(&sb.self_counts) as f64, wb);
            }
            Presence::Both => {}
        }
        let name = k.split('\u{0}').next().unwrap_or(k).to_string();
        rows.push(FunctionRow {
            symbols: clones
                .get(k)
                .map(|c| c.iter().cloned().collect())
                .unwrap_or_default(),
            function: name,
            presence,
            delta: FunctionDelta {
                self_counts: Delta::between(&sa.self_counts, &sb.self_counts),
                total: Delta::between(&sa.total, &sb.total),
                calls: crate::signed(sa.calls, sb.calls),
            },
            a: sa,
            b: sb,
        });
    }
    rows.sort_by(|x, y| {
        sort_key(&x.delta.self_counts, weight)
            .cmp(&sort_key(&y.delta.self_counts, weight))
            .then_with(|| x.function.cmp(&y.function))
    });
    (rows, unmatched)
}

/// One row per source line of either side, by change; `None` (with a note) unless both
/// sides have lines.
fn line_rows(
    a: &ProfileView,
    b: &ProfileView,
    weight: Weight,
    notes: &mut Vec<String>,
) -> Option<Vec<LineRow>> {
    match (lines(a), lines(b)) {
        (Some(la), Some(lb)) => {
            let keys: std::collections::BTreeSet<&(String, u32)> =
                la.keys().chain(lb.keys()).collect();
            let mut out: Vec<LineRow> = keys
                .into_iter()
                .map(|k| {
                    let (xa, xb) = (la.get(k), lb.get(k));
                    let ca = xa.map(|x| x.1).unwrap_or_default();
                    let cb = xb.map(|x| x.1).unwrap_or_default();
                    LineRow {
                        file: k.0.clone(),
                        line: k.1,
                        function: xb.or(xa).map(|x| x.0.clone()).unwrap_or_default(),
                        presence: Presence::of(xa.is_some(), xb.is_some()),
                        a: ca,
                        b: cb,
                        delta: Delta::between(&ca, &cb),
                    }
                })
                .collect();
            out.sort_by(|x, y| {
                sort_key(&x.delta, weight)
                    .cmp(&sort_key(&y.delta, weight))
                    .then_with(|| (&x.file, x.line).cmp(&(&y.file, y.line)))
            });
            Some(out)
        }
        (None, None) => None,
        (None, Some(_)) => {
            notes.push("only B has source lines (build A with -g to compare lines)".to_string());
            None
        }
        (Some(_), None) => {
            notes.push("only A has source lines (build B with -g to compare lines)".to_string());
            None
        }
    }
}

/// One row per call path of either side, by change, the ones past
/// [`MAX_CALL_PATH_ROWS`] summed into a last row.
fn call_path_rows(
    ca: &rustc_hash::FxHashMap<u32, (Counts, Counts)>,
    cb: &rustc_hash::FxHashMap<u32, (Counts, Counts)>,
    table: &PathTable,
    weight: Weight,
) -> Vec<CallPathRow> {
    let mut keys: Vec<u32> = ca.keys().chain(cb.keys()).copied().collect();
    keys.sort_unstable();
    keys.dedup();
    let mut rows_by_path: Vec<PathCounts> = keys
        .into_iter()
        .map(|k| {
            let (xa, xb) = (ca.get(&k), cb.get(&k));
            (
                k,
                Presence::of(xa.is_some(), xb.is_some()),
                xa.copied().unwrap_or_default(),
                xb.copied().unwrap_or_default(),
            )
        })
        .collect();
    // by change; of equal changes, by path (ids are given in the trees' order)
    rows_by_path.sort_by(|x, y| {
        sort_key(&Delta::between(&x.2 .0, &x.3 .0), weight)
            .cmp(&sort_key(&Delta::between(&y.2 .0, &y.3 .0), weight))
            .then(x.0.cmp(&y.0))
    });
    let mut call_rows: Vec<CallPathRow> = Vec::new();
    let mut rest = (
        (Counts::default(), Counts::default()),
        (Counts::default(), Counts::default()),
    );
    for (i, (k, presence, (sa, ta), (sb, tb))) in rows_by_path.iter().enumerate() {
        if i < MAX_CALL_PATH_ROWS {
            call_rows.push(CallPathRow {
                path: table.frames_of(*k),
                presence: *presence,
                a: *sa,
                b: *sb,
                delta: Delta::between(sa, sb),
                a_total: *ta,
                b_total: *tb,
            });
        } else {
            add(&mut rest.0 .0, sa);
            add(&mut rest.0 .1, ta);
            add(&mut rest.1 .0, sb);
            add(&mut rest.1 .1, tb);
        }
    }
    if rows_by_path.len() > MAX_CALL_PATH_ROWS {
        let ((sa, ta), (sb, tb)) = rest;
        call_rows.push(CallPathRow {
            path: vec![format!(
                "(other call paths: {})",
                rows_by_path.len() - MAX_CALL_PATH_ROWS
            )],
            presence: Presence::Both,
            a: sa,
            b: sb,
            delta: Delta::between(&sa, &sb),
            a_total: ta,
            b_total: tb,
        });
    }
    call_rows
}

/// The difference of B against A. Profiles of different code (program ids differ or are
/// unknown) are matched by symbol and line, and refused as different programs when their
/// overlap is under [`MIN_OVERLAP`], unless `options.force`.
pub fn diff_profiles(
    a: &ProfileView,
    b: &ProfileView,
    options: Options,
) -> Result<ProfileDiff, Error> {
    let same_code = matches!((&a.program_id, &b.program_id), (Some(x), Some(y)) if x == y);
    let matching = if same_code && !options.by_symbol {
        Matching::Address
    } else {
        Matching::Symbol
    };
    let weight = if a.timed() && b.timed() {
        Weight::Cycles
    } else {
        Weight::Instructions
    };
    let mut notes = first_notes(a, b, matching, same_code);

    let by_address = matching == Matching::Address;
    let mut clones = BTreeMap::new();
    let fa = functions(a, by_address, &mut clones);
    let fb = functions(b, by_address, &mut clones);
    let wa = weight.of(&a.totals()) as f64;
    let wb = weight.of(&b.totals()) as f64;
    let share = |s: &FunctionSide, w: f64| {
        if w > 0.0 {
            weight.of(&s.self_counts) as f64 / w
        } else {
            0.0
        }
    };
    let overlap: f64 = fa
        .iter()
        .filter_map(|(k, x)| fb.get(k).map(|y| share(x, wa).min(share(y, wb))))
        .sum();
    let empty = wa == 0.0 || wb == 0.0;
    if !same_code && !empty && overlap < MIN_OVERLAP && !options.force {
        return Err(Error::NotComparable(format!(
            "A ({}) and B ({}) look like different programs: their profiles overlap {:.1}% by function name (under {:.0}%: the same functions hold different shares of their {w}); --force compares them anyway",
            a.program,
            b.program,
            100.0 * overlap,
            100.0 * MIN_OVERLAP,
            w = weight.name()
        )));
    }

    let (rows, unmatched) = function_rows(&fa, &fb, &clones, weight, (wa, wb));

    let lines = line_rows(a, b, weight, &mut notes);

    // across builds, a frame of a function only one build has (inlined, or new) is left
    // out of call paths on both sides, so a call inlined in one build still matches
    let names = |p: &ProfileView| -> rustc_hash::FxHashSet<String> {
        p.functions
            .iter()
            .map(|f| base_name(&f.name).to_string())
            .collect()
    };
    let (na, nb) = (names(a), names(b));
    let keep = |f: &str| by_address || (na.contains(base_name(f)) && nb.contains(base_name(f)));
    let mut table = PathTable::new();
    let pa = node_paths(&a.tree, &keep, by_address, &mut table);
    let pb = node_paths(&b.tree, &keep, by_address, &mut table);
    if !by_address {
        let dropped = na.symmetric_difference(&nb).count();
        if dropped > 0 {
            notes.push(format!(
                "call paths leave out the frames of the {dropped} functions only one build ran (inlined or new), so a call inlined in one build still matches"
            ));
        }
    }
    let (ca, cb) = (call_paths(&a.tree, &pa), call_paths(&b.tree, &pb));
    let call_rows = call_path_rows(&ca, &cb, &table, weight);

    let flame = b
        .tree
        .iter()
        .zip(&pb)
        .enumerate()
        .map(|(i, (n, p))| {
            let (sa, ta) = if i == 0 {
                (a.tree[0].self_counts, a.tree[0].total)
            } else {
                ca.get(p).copied().unwrap_or_default()
            };
            FlameNode {
                parent: n.parent,
                name: if i == 0 {
                    "all".to_string()
                } else {
                    table.last(*p).unwrap_or("all").to_string()
                },
                b_total: weight.of(&n.total),
                a_total: weight.of(&ta),
                b_self: weight.of(&n.self_counts),
                a_self: weight.of(&sa),
            }
        })
        .collect();

    let (ta, tb) = (a.totals(), b.totals());
    Ok(ProfileDiff {
        a: side_info(a),
        b: side_info(b),
        matching,
        weight,
        totals: (ta, tb, Delta::between(&ta, &tb)),
        functions: rows,
        lines,
        call_paths: call_rows,
        unmatched,
        overlap,
        notes,
        flame,
    })
}
