//! The exact profile ([`outcrop_profile::Profile`]) as people and their tools read it: the flat
//! table by function and by line, the call tree, a flame graph (SVG), and exports for
//! speedscope, the Firefox Profiler and flame-graph scripts (folded stacks).
//! docs/formats.md "The exact profile" documents every output.

use crate::Report;
use outcrop_events::escape::folded_frame;
use outcrop_profile::{Counts, LineProfile, Profile};
use serde::Serialize;
use std::fmt::Write as _;

/// Rows in the text table of functions (the JSON and HTML carry more).
pub const TEXT_ROWS: usize = 25;

/// What one column of the flat profile means (the legend printed under the table and on the
/// HTML page).
/// The functions table's columns, untimed: header and what it means. The text report, the
/// page and their legends all come from this one list, so headers and legend agree.
pub const COLUMNS: &[(&str, &str)] = &[
    ("self %", "instructions retired in the function itself, % of the run (rows are sorted by it)"),
    ("self instructions", "the same, counted"),
    ("total %", "instructions retired while the function was on the call stack (itself and everything it called; recursion counted once), % of the run"),
    ("calls", "times the function was entered: by a call, a tail call or falling into it"),
];

/// The functions table's columns for imported samples (`outcrop import`): samples, not
/// instructions, and no total or calls (the samples carry no call stacks).
pub const SAMPLED_COLUMNS: &[(&str, &str)] = &[
    ("self %", "IP samples in the function itself, % of the program's samples (rows are sorted by it)"),
    ("self samples", "the same, counted: each sample is one instruction address perf recorded, not an exact count"),
];

/// The functions table's columns for samples with call chains (`perf record -g`).
pub const SAMPLED_CHAIN_COLUMNS: &[(&str, &str)] = &[
    ("self %", "samples taken in the function itself, % of the samples (rows are sorted by it)"),
    ("self samples", "the same, counted: each sample is one instruction address perf recorded, not an exact count"),
    ("total %", "samples whose call chain passed through the function (itself and its callees; recursion counted once), % of the samples: perf report --children"),
];

/// The functions table's columns under a timing model (rows sorted by self cycles).
pub const TIMED_COLUMNS: &[(&str, &str)] = &[
    ("self cycles %", "timing model: cycles charged to the function's own instructions (from the previous retirement to theirs), % of the run's cycles (rows are sorted by it)"),
    ("self cycles", "the same, counted"),
    ("total cycles %", "cycles while the function was on the call stack (itself and everything it called), % of the run's cycles"),
    ("self instr. %", "instructions retired in the function itself, % of the run"),
    ("CPI", "self cycles per self instruction"),
    ("mispred", "mispredicted branches and jumps in the function"),
    ("L1I", "instruction-fetch misses"),
    ("L1D", "misses in the L1 data cache"),
    ("L2", "misses of either in the L2"),
    ("calls", "times the function was entered: by a call, a tail call or falling into it"),
];

/// `n` with a comma between each group of three digits (`12,345,678`).
pub fn thousands(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One function row of [`ProfileReport`].
#[derive(Clone, Debug, Serialize)]
pub struct FunctionRow {
    /// Name (demangled unless `--no-demangle`).
    pub name: String,
    /// The name as the symbol table spells it, when demangling changed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mangled: Option<String>,
    /// First byte.
    pub start: u64,
    /// Size in bytes.
    pub size: u64,
    /// Self counts.
    #[serde(rename = "self")]
    pub self_counts: Counts,
    /// Total (inclusive) counts.
    pub total: Counts,
    /// Times entered.
    pub calls: u64,
}

/// One call-tree node of [`ProfileReport`].
#[derive(Clone, Debug, Serialize)]
pub struct NodeRow {
    /// Parent node (the root's is 0).
    pub parent: u32,
    /// Function name (`null` for the root).
    pub function: Option<String>,
    /// Self counts on this chain.
    #[serde(rename = "self")]
    pub self_counts: Counts,
    /// Total counts below and on this chain.
    pub total: Counts,
    /// Times the chain was entered.
    pub calls: u64,
    /// The thread whose calls reached it (a thread's root has no function).
    pub thread: u32,
}

/// One guest thread of [`ProfileReport`].
#[derive(Clone, Debug, Serialize)]
pub struct ThreadRow {
    /// Creation order (0 is the main thread).
    pub index: u32,
    /// Its thread id, when the machine reported it.
    pub tid: Option<u32>,
    /// Its name (`pthread_setname_np`), empty if none was set.
    pub name: String,
    /// What it retired (exact; the rows sum to the run).
    #[serde(rename = "self")]
    pub self_counts: Counts,
}

impl ThreadRow {
    /// `thread 2 (tid 1002, ring-2)`.
    pub fn label(&self) -> String {
        let mut s = format!("thread {}", self.index);
        match (self.tid, self.name.is_empty()) {
            (Some(t), true) => s += &format!(" (tid {t})"),
            (Some(t), false) => s += &format!(" (tid {t}, {})", self.name),
            (None, false) => s += &format!(" ({})", self.name),
            (None, true) => {}
        }
        s
    }
}

/// The exact profile of one run (`DIR/profile.json`, and the table `outcrop run` prints).
#[derive(Clone, Debug, Serialize)]
pub struct ProfileReport {
    /// The program.
    pub program: String,
    /// What identifies its code (docs/formats.md "Program ids"), when known: `outcrop diff`
    /// compares two profiles of the same code by address.
    pub program_id: Option<String>,
    /// Instructions retired.
    pub instructions: u64,
    /// Cycles (timing model), or `null`.
    pub cycles: Option<u64>,
    /// Functions that retired anything.
    pub function_count: usize,
    /// Every function that retired anything, hottest first by self instructions (self cycles
    /// with timing): `outcrop diff` needs them all for its totals to add up.
    pub functions: Vec<FunctionRow>,
    /// Every source line that retired anything when the program has DWARF line information,
    /// hottest first.
    pub lines: Option<Vec<LineRowReport>>,
    /// Instructions outside the line table (with `lines`).
    pub lines_unattributed: Option<Counts>,
    /// The call tree, `tree[0]` the root, parents before children.
    pub tree: Vec<NodeRow>,
    /// Calls folded into their caller by the depth or size limit (0: the tree is exact).
    pub folded_calls: u64,
    /// Every guest thread that ran, in creation order (one row for a single-threaded run).
    pub threads: Vec<ThreadRow>,
    /// The run over time, or null when no timeline was recorded.
    pub timeline: Option<TimelineReport>,
    /// Every instruction address that retired anything, with its counts (what
    /// `outcrop annotate` lists).
    pub pcs: PcTable,
    /// Whether the counts are imported IP samples rather than exact counts (`outcrop
    /// import`): the functions table then shows samples and no totals or calls.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sampled: bool,
    /// Whether sampled counts came with call chains: totals are then shown.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub call_chains: bool,
    /// What showing inlined calls as frames did (null: no counted code lies in one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inline: Option<outcrop_profile::inline::InlineStats>,
    /// With more than one process or program: the process tree, each (process, program)
    /// with its own functions (this report's functions are the first one's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<crate::processes::ProcessesReport>,
}

/// Per-instruction counts, one row per address, as numbers in `columns`' order (compact:
/// a program retires at tens of thousands of addresses).
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct PcTable {
    /// `pc`, `instructions`, and with timing `cycles`, `mispredicts`, `l1i_misses`,
    /// `l1d_misses`, `l2_misses`.
    pub columns: Vec<String>,
    /// By increasing address.
    pub rows: Vec<Vec<u64>>,
}

impl PcTable {
    /// The table of `profile`'s per-instruction counts.
    pub fn new(profile: &Profile) -> PcTable {
        let mut columns = vec!["pc", "instructions"];
        if profile.timed {
            columns.extend([
                "cycles",
                "mispredicts",
                "l1i_misses",
                "l1d_misses",
                "l2_misses",
            ]);
        }
        let rows = profile
            .pcs
            .iter()
            .map(|p| {
                let c = &p.counts;
                let mut row = vec![p.pc, c.instructions];
                if profile.timed {
                    row.extend([
                        c.cycles,
                        c.mispredicts,
                        c.l1i_misses,
                        c.l1d_misses,
                        c.l2_misses,
                    ]);
                }
                row
            })
            .collect();
        PcTable {
            columns: columns.into_iter().map(str::to_string).collect(),
            rows,
        }
    }

    /// The rows as addresses and counts (columns it lacks are 0).
    pub fn counts(&self) -> Vec<(u64, Counts)> {
        let col = |name: &str| self.columns.iter().position(|c| c == name);
        let cols = [
            col("instructions"),
            col("cycles"),
            col("mispredicts"),
            col("l1i_misses"),
            col("l1d_misses"),
            col("l2_misses"),
        ];
        let pc = col("pc");
        self.rows
            .iter()
            .filter_map(|r| {
                let get = |c: Option<usize>| c.and_then(|i| r.get(i).copied()).unwrap_or(0);
                Some((
                    r.get(pc?).copied()?,
                    Counts {
                        instructions: get(cols[0]),
                        cycles: get(cols[1]),
                        mispredicts: get(cols[2]),
                        l1i_misses: get(cols[3]),
                        l1d_misses: get(cols[4]),
                        l2_misses: get(cols[5]),
                    },
                ))
            })
            .collect()
    }
}

/// The timeline of [`ProfileReport`], column by column: mark `i` is `instructions[i]`,
/// `cycles[i]`, `node[i]`, `thread[i]`; an interval's counts are the difference of two marks',
/// the first interval's the first mark's.
#[derive(Clone, Debug, Serialize)]
pub struct TimelineReport {
    /// Instructions or cycles between marks.
    pub interval: u64,
    /// `instructions` or `cycles`: what the interval counts.
    pub unit: &'static str,
    /// Instructions retired up to each mark.
    pub instructions: Vec<u64>,
    /// Cycles up to each mark (all 0 untimed).
    pub cycles: Vec<u64>,
    /// The call-tree node (an index into `tree`) on top of the running thread's stack.
    pub node: Vec<u32>,
    /// The running thread (creation index).
    pub thread: Vec<u32>,
}

impl TimelineReport {
    /// The timeline of `profile`, if it has one.
    pub fn new(profile: &Profile) -> Option<TimelineReport> {
        let t = &profile.timeline;
        if t.interval == 0 || t.marks.is_empty() {
            return None;
        }
        Some(TimelineReport {
            interval: t.interval,
            unit: if t.cycles { "cycles" } else { "instructions" },
            instructions: t.marks.iter().map(|m| m.at.instructions).collect(),
            cycles: t.marks.iter().map(|m| m.at.cycles).collect(),
            node: t.marks.iter().map(|m| m.node).collect(),
            thread: t.marks.iter().map(|m| m.thread).collect(),
        })
    }
}

/// One source line of [`ProfileReport`].
#[derive(Clone, Debug, Serialize)]
pub struct LineRowReport {
    /// File.
    pub file: String,
    /// Line.
    pub line: u32,
    /// The function in which most of its instructions ran.
    pub function: String,
    /// How many functions its instructions ran in (more than 1 when it was inlined into
    /// several).
    pub functions: u32,
    /// Self counts.
    #[serde(rename = "self")]
    pub self_counts: Counts,
}

impl LineRowReport {
    /// Its function, and how many others the line also ran in (`f +2 more`).
    pub fn function_label(&self) -> String {
        match self.functions {
            0 | 1 => self.function.clone(),
            n => format!("{} +{} more", self.function, n - 1),
        }
    }
}

impl ProfileReport {
    /// The report of `profile` for `program`, with `lines` when the program has line info
    /// and the machine's `threads` (their ids and names).
    pub fn new(
        program: &str,
        profile: &Profile,
        lines: Option<&LineProfile>,
        threads: &[outcrop_rv::kernel::ThreadStat],
    ) -> ProfileReport {
        let name = |f: u32| {
            profile
                .functions
                .get(f as usize)
                .map_or_else(String::new, |f| f.name.clone())
        };
        let functions = profile
            .hottest(profile.timed)
            .into_iter()
            .map(|f| FunctionRow {
                name: f.name.clone(),
                mangled: f.mangled.clone(),
                start: f.start,
                size: f.size,
                self_counts: f.self_counts,
                total: f.total_counts,
                calls: f.calls,
            })
            .collect();
        let tree = profile
            .nodes
            .iter()
            .map(|n| NodeRow {
                parent: n.parent,
                function: n.function.map(name),
                self_counts: n.self_counts,
                total: n.total_counts,
                calls: n.calls,
                thread: n.thread,
            })
            .collect();
        let threads = profile
            .threads
            .iter()
            .map(|t| {
                let stat = threads.iter().find(|s| s.index == t.index);
                ThreadRow {
                    index: t.index,
                    tid: stat.map(|s| s.tid),
                    name: stat.map(|s| s.name.clone()).unwrap_or_default(),
                    self_counts: t.counts,
                }
            })
            .collect();
        ProfileReport {
            program: program.to_string(),
            program_id: None,
            instructions: profile.instructions,
            cycles: profile.timed.then(|| profile.self_sum().cycles),
            function_count: profile.functions.len(),
            functions,
            lines: lines.map(|l| {
                l.rows
                    .iter()
                    .map(|r| LineRowReport {
                        file: r.file.clone(),
                        line: r.line,
                        function: name(r.function),
                        functions: r.functions,
                        self_counts: r.counts,
                    })
                    .collect()
            }),
            lines_unattributed: lines.map(|l| l.unattributed),
            tree,
            folded_calls: profile.folded_calls,
            threads,
            timeline: TimelineReport::new(profile),
            pcs: PcTable::new(profile),
            sampled: false,
            call_chains: false,
            inline: None,
            processes: None,
        }
    }

    /// The functions table's columns (header, meaning) for this profile.
    pub fn columns(&self) -> &'static [(&'static str, &'static str)] {
        if self.sampled && self.call_chains {
            SAMPLED_CHAIN_COLUMNS
        } else if self.sampled {
            SAMPLED_COLUMNS
        } else if self.cycles.is_some() {
            TIMED_COLUMNS
        } else {
            COLUMNS
        }
    }

    /// One function's cells, in [`ProfileReport::columns`] order.
    pub fn cells(&self, f: &FunctionRow) -> Vec<String> {
        let c = &f.self_counts;
        if self.sampled {
            let mut v = vec![
                format!("{:.2}%", self.pct(c.instructions, false)),
                thousands(c.instructions),
            ];
            if self.call_chains {
                v.push(format!("{:.2}%", self.pct(f.total.instructions, false)));
            }
            v
        } else if self.cycles.is_some() {
            vec![
                format!("{:.2}%", self.pct(c.cycles, true)),
                thousands(c.cycles),
                format!("{:.2}%", self.pct(f.total.cycles, true)),
                format!("{:.2}%", self.pct(c.instructions, false)),
                format!("{:.2}", c.cycles as f64 / c.instructions.max(1) as f64),
                thousands(c.mispredicts),
                thousands(c.l1i_misses),
                thousands(c.l1d_misses),
                thousands(c.l2_misses),
                thousands(f.calls),
            ]
        } else {
            vec![
                format!("{:.2}%", self.pct(c.instructions, false)),
                thousands(c.instructions),
                format!("{:.2}%", self.pct(f.total.instructions, false)),
                thousands(f.calls),
            ]
        }
    }

    fn pct(&self, v: u64, of_cycles: bool) -> f64 {
        let d = if of_cycles {
            self.cycles.unwrap_or(0)
        } else {
            self.instructions
        };
        100.0 * v as f64 / d.max(1) as f64
    }
}

impl Report for ProfileReport {
    fn write_text(&self, out: &mut String) {
        let timed = self.cycles.is_some();
        let _ = writeln!(
            out,
            "Functions of {} by self {} ({}; {} functions {})",
            self.program,
            if self.sampled {
                "samples"
            } else if timed {
                "cycles"
            } else {
                "instructions"
            },
            if self.sampled {
                "sampled by perf, not exact"
            } else {
                "exact: every retired instruction counted"
            },
            self.function_count,
            if self.sampled { "were sampled" } else { "ran" }
        );
        let cols = self.columns();
        let rows: Vec<Vec<String>> = self
            .functions
            .iter()
            .take(TEXT_ROWS)
            .map(|f| self.cells(f))
            .collect();
        let widths: Vec<usize> = cols
            .iter()
            .enumerate()
            .map(|(i, (h, _))| {
                rows.iter()
                    .map(|r| r[i].len())
                    .chain([h.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for ((h, _), w) in cols.iter().zip(&widths) {
            let _ = write!(out, "  {h:>w$}");
        }
        let _ = writeln!(out, "  function");
        for (f, r) in self.functions.iter().zip(&rows) {
            for (c, w) in r.iter().zip(&widths) {
                let _ = write!(out, "  {c:>w$}");
            }
            let _ = writeln!(out, "  {}", f.name);
        }
        if self.functions.len() > TEXT_ROWS {
            let _ = writeln!(
                out,
                "  ... {} more (all of them: --report DIR, profile.json)",
                self.function_count - TEXT_ROWS
            );
        }
        if self.threads.len() > 1 {
            let _ = writeln!(
                out,
                "Threads by creation (exact; they sum to the run)\n  {:>7} {:>14}{}  thread",
                "share",
                "instructions",
                if timed {
                    format!(" {:>14}", "cycles")
                } else {
                    String::new()
                }
            );
            for t in &self.threads {
                let c = &t.self_counts;
                let _ = write!(
                    out,
                    "  {:>6.2}% {:>14}",
                    self.pct(c.instructions, false),
                    c.instructions
                );
                if timed {
                    let _ = write!(out, " {:>14}", c.cycles);
                }
                let _ = writeln!(out, "  {}", t.label());
            }
        }
        if let Some(lines) = &self.lines {
            let _ = writeln!(out, "Source lines by self instructions");
            for l in lines.iter().take(10) {
                let _ = writeln!(
                    out,
                    "  {:>6.2}%  {}:{}  ({})",
                    self.pct(l.self_counts.instructions, false),
                    l.file,
                    l.line,
                    l.function_label()
                );
            }
        }
        if self.folded_calls > 0 {
            let _ = writeln!(
                out,
                "  note: {} calls deeper than {} frames (or past {} tree nodes) were folded into their callers; self counts stay exact",
                self.folded_calls,
                outcrop_profile::MAX_DEPTH,
                outcrop_profile::MAX_NODES
            );
        }
        for (k, v) in cols {
            let _ = writeln!(out, "  {k}: {v}");
        }
        if let Some(p) = &self.processes {
            p.write_text(out);
        }
    }
}

/// The weight of a node for flame graphs and exports: cycles when timed, else instructions.
fn weight(profile: &Profile, c: &Counts) -> u64 {
    if profile.timed {
        c.cycles
    } else {
        c.instructions
    }
}

/// Folded stacks (`main;foo;bar 1234` per line, the input of flamegraph.pl and inferno),
/// weighted by instructions (cycles when timed); stacks sorted. Frame names are escaped
/// ([`outcrop_events::escape::folded_frame`]): a name cannot add a frame or a line.
pub fn folded(profile: &Profile) -> String {
    let mut lines = Vec::new();
    for (i, n) in profile.nodes.iter().enumerate().skip(1) {
        let w = weight(profile, &n.self_counts);
        if w == 0 {
            continue;
        }
        let names: Vec<_> = profile
            .stack(i as u32)
            .iter()
            .map(|&f| folded_frame(&profile.functions[f as usize].name))
            .collect();
        lines.push(format!("{} {w}", names.join(";")));
    }
    lines.sort();
    let mut s = lines.join("\n");
    s.push('\n');
    s
}

/// The profile in speedscope's file format (<https://www.speedscope.app/file-format-schema.json>):
/// one "sampled" profile per weight (instructions; cycles too when timed) — per thread too when
/// the program ran several (`thread 1 instructions`…) — one sample per call chain that retired
/// anything, weighted exactly.
pub fn speedscope(profile: &Profile, name: &str) -> String {
    #[derive(Serialize)]
    struct Frame<'a> {
        name: &'a str,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Sampled<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
        unit: &'static str,
        start_value: u64,
        end_value: u64,
        samples: Vec<Vec<u32>>,
        weights: Vec<u64>,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct File<'a> {
        #[serde(rename = "$schema")]
        schema: &'static str,
        shared: Shared<'a>,
        profiles: Vec<Sampled<'a>>,
        name: &'a str,
        active_profile_index: u32,
        exporter: &'static str,
    }
    #[derive(Serialize)]
    struct Shared<'a> {
        frames: Vec<Frame<'a>>,
    }
    let frames = profile
        .functions
        .iter()
        .map(|f| Frame { name: &f.name })
        .collect();
    let mut profiles = Vec::new();
    let mut kinds = vec![("instructions", false)];
    if profile.timed {
        kinds.push(("cycles", true));
    }
    // one profile per weight, and per thread when there are several
    let threaded = profile.threads.len() > 1;
    let names: Vec<(String, Option<u32>)> = if threaded {
        profile
            .threads
            .iter()
            .map(|t| (format!("thread {}", t.index), Some(t.index)))
            .collect()
    } else {
        vec![(String::new(), None)]
    };
    let mut labels = Vec::new();
    for (label, _) in &kinds {
        for (thread, _) in &names {
            labels.push(if thread.is_empty() {
                (*label).to_string()
            } else {
                format!("{thread} {label}")
            });
        }
    }
    let mut next_label = labels.iter();
    for (_, cycles) in kinds {
        for (_, thread) in &names {
            let mut samples = Vec::new();
            let mut weights = Vec::new();
            for (i, n) in profile.nodes.iter().enumerate().skip(1) {
                if thread.is_some_and(|t| t != n.thread) {
                    continue;
                }
                let w = if cycles {
                    n.self_counts.cycles
                } else {
                    n.self_counts.instructions
                };
                if w > 0 {
                    samples.push(profile.stack(i as u32));
                    weights.push(w);
                }
            }
            let total = weights.iter().sum();
            profiles.push(Sampled {
                kind: "sampled",
                name: next_label.next().map_or("", String::as_str),
                unit: "none",
                start_value: 0,
                end_value: total,
                samples,
                weights,
            });
        }
    }
    let file = File {
        schema: "https://www.speedscope.app/file-format-schema.json",
        shared: Shared { frames },
        profiles,
        name,
        active_profile_index: if profile.timed { names.len() as u32 } else { 0 },
        exporter: concat!("outcrop ", env!("CARGO_PKG_VERSION")),
    };
    let mut s = serde_json::to_string(&file).unwrap_or_default();
    s.push('\n');
    s
}

/// The profile in the Firefox Profiler's processed format (via `fxprof-processed-profile`).
///
/// With a timeline ([`outcrop_profile::Timeline`]), each guest thread's track (`main`,
/// `thread 1`…) holds one sample per mark, at the mark's time — retired instructions, or
/// cycles when timed, as nanoseconds (1 ns = 1 instruction or cycle; the profile's product
/// name says which) — with the call chain on top of the stack there, weighted by the
/// interval's instructions (cycles): the timeline, its track graph and range selection work.
/// Under timing, counters give instructions (IPC against the cycle axis), mispredictions and
/// L1D misses per interval. A second track per thread (`main (exact)`) holds the exact call
/// tree: one sample per call chain that retired anything, laid side by side (its times are a
/// layout, not a time). Without a timeline only those exact tracks are written, named
/// `main`, `thread 1`…. Deterministic.
pub fn firefox(profile: &Profile, name: &str) -> String {
    firefox_processes(
        &[FirefoxProcess {
            pid: 1,
            name: name.to_string(),
            profile,
        }],
        name,
    )
}

/// One process of a [`firefox_processes`] export.
pub struct FirefoxProcess<'a> {
    /// Its process id.
    pub pid: u32,
    /// What the Firefox Profiler calls it.
    pub name: String,
    /// Its exact profile.
    pub profile: &'a Profile,
}

/// The exact profiles of a run's processes in the Firefox Profiler's format, each process a
/// track group with its threads' tracks ([`firefox`] for one); the time axis and unit are the
/// first one's.
pub fn firefox_processes(procs: &[FirefoxProcess<'_>], name: &str) -> String {
    use fxprof_processed_profile as fx;
    let Some(first) = procs.first() else {
        return String::new();
    };
    let profile = first.profile;
    let tl = &profile.timeline;
    let timeline = tl.interval > 0 && !tl.marks.is_empty();
    let unit = if profile.timed {
        "cycle"
    } else {
        "instruction"
    };
    let mut p = fx::Profile::new(
        name,
        fx::ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        fx::SamplingInterval::from_nanos(if timeline { tl.interval } else { 1 }),
    );
    p.set_product(&if timeline {
        format!(
            "Outcrop: time is retired {unit}s (1 ns = 1 {unit}), a sample every {} {unit}s",
            tl.interval
        )
    } else {
        "Outcrop: exact call chains laid side by side (times are a layout)".to_string()
    });
    let category = p.add_category("Guest code", fx::CategoryColor::Blue);
    let mut tid = 1;
    for proc in procs {
        firefox_process(&mut p, proc, category.into(), &mut tid);
    }
    let mut s = serde_json::to_string(&p).unwrap_or_default();
    s.push('\n');
    s
}

/// Adds one process's tracks to `p`: a timeline track per thread (when the profile has a
/// timeline), then each thread's exact call tree, its call chains side by side.
fn firefox_process(
    p: &mut fxprof_processed_profile::Profile,
    proc: &FirefoxProcess<'_>,
    pair: fxprof_processed_profile::CategoryPairHandle,
    tid: &mut u32,
) {
    use fxprof_processed_profile as fx;
    let profile = proc.profile;
    let tl = &profile.timeline;
    let timeline = tl.interval > 0 && !tl.marks.is_empty();
    let process = p.add_process(
        &proc.name,
        proc.pid,
        fx::Timestamp::from_nanos_since_reference(0),
    );
    // a process's first thread is its main one
    let main = profile.threads.first().map_or(0, |t| t.index);
    let label = |t: u32| {
        if t == main {
            "main".to_string()
        } else {
            format!("thread {t}")
        }
    };
    let intern = |p: &mut fx::Profile, track, node, memo: &mut Memo| {
        intern_stack(p, profile, pair, track, node, memo)
    };
    // the timeline: one track per guest thread, a sample per mark
    if timeline {
        let time = |c: &Counts| {
            if profile.timed {
                c.cycles
            } else {
                c.instructions
            }
        };
        let mut tracks: Vec<(u32, fx::ThreadHandle, Memo)> = Vec::new();
        for t in &profile.threads {
            let track = p.add_thread(
                process,
                *tid,
                fx::Timestamp::from_nanos_since_reference(0),
                t.index == main,
            );
            *tid += 1;
            p.set_thread_name(track, &label(t.index));
            tracks.push((t.index, track, rustc_hash::FxHashMap::default()));
        }
        let counters = profile.timed.then(|| {
            [
                (
                    "instructions",
                    "instructions retired per interval (against the cycle axis: IPC)",
                ),
                (
                    "mispredictions",
                    "mispredicted branches and jumps per interval",
                ),
                ("L1D misses", "L1 data-cache misses per interval"),
            ]
            .map(|(n, d)| p.add_counter(process, n, "Timing model", d))
        });
        let mut prev = Counts::default();
        for m in &tl.marks {
            let Some(k) = tracks.iter().position(|(i, _, _)| *i == m.thread) else {
                continue;
            };
            let (_, track, memo) = &mut tracks[k];
            let track = *track;
            let stack = intern(p, track, m.node, memo);
            let w = weight(profile, &m.at).saturating_sub(weight(profile, &prev));
            add_samples(p, track, time(&m.at), stack, w);
            if let Some(c) = &counters {
                let at = fx::Timestamp::from_nanos_since_reference(time(&m.at));
                let d = [
                    m.at.instructions.saturating_sub(prev.instructions),
                    m.at.mispredicts.saturating_sub(prev.mispredicts),
                    m.at.l1d_misses.saturating_sub(prev.l1d_misses),
                ];
                for (h, v) in c.iter().zip(d) {
                    p.add_counter_sample(*h, at, v as f64, 1);
                }
            }
            prev = m.at;
        }
        let end = tl.marks.last().map_or(0, |m| time(&m.at));
        for (_, track, _) in tracks {
            p.set_thread_end_time(track, fx::Timestamp::from_nanos_since_reference(end));
        }
    }
    // the exact call tree: one track per guest thread, its call chains side by side
    let mut tracks = Vec::new();
    for t in &profile.threads {
        let track = p.add_thread(
            process,
            *tid,
            fx::Timestamp::from_nanos_since_reference(0),
            t.index == main && !timeline,
        );
        *tid += 1;
        p.set_thread_name(
            track,
            &if timeline {
                format!("{} (exact)", label(t.index))
            } else {
                label(t.index)
            },
        );
        tracks.push((t.index, track, 0u64, rustc_hash::FxHashMap::default()));
    }
    for (i, n) in profile.nodes.iter().enumerate().skip(1) {
        if n.function.is_none() {
            continue;
        }
        let Some(k) = tracks
            .iter()
            .position(|(index, _, _, _)| *index == n.thread)
        else {
            continue;
        };
        let (_, track, t, memo) = &mut tracks[k];
        let (track, at) = (*track, *t);
        let stack = intern(p, track, i as u32, memo);
        let w = weight(profile, &n.self_counts);
        add_samples(p, track, at, stack, w);
        *t += w;
    }
    for (_, thread, t, _) in tracks {
        p.set_thread_end_time(thread, fx::Timestamp::from_nanos_since_reference(t));
    }
}

/// Stacks interned per node of the call tree, per Firefox Profiler track.
type Memo = rustc_hash::FxHashMap<u32, fxprof_processed_profile::StackHandle>;

/// The call chain of `node` as a stack of `track`, interned outermost first (memoized).
fn intern_stack(
    p: &mut fxprof_processed_profile::Profile,
    profile: &Profile,
    pair: fxprof_processed_profile::CategoryPairHandle,
    track: fxprof_processed_profile::ThreadHandle,
    node: u32,
    memo: &mut Memo,
) -> Option<fxprof_processed_profile::StackHandle> {
    use fxprof_processed_profile as fx;
    let mut chain = Vec::new();
    let mut n = node;
    loop {
        if let Some(&s) = memo.get(&n) {
            chain.push((n, Some(s)));
            break;
        }
        let Some(tn) = profile.nodes.get(n as usize) else {
            break;
        };
        chain.push((n, None));
        if n == 0 {
            break;
        }
        n = tn.parent;
    }
    let mut stack = None;
    for (n, known) in chain.into_iter().rev() {
        if let Some(s) = known {
            stack = Some(s);
            continue;
        }
        if let Some(f) = profile.nodes[n as usize].function {
            let l = p.intern_string(&profile.functions[f as usize].name);
            let frame = p.intern_frame(
                track,
                fx::FrameInfo {
                    frame: fx::Frame::Label(l),
                    category_pair: pair,
                    flags: fx::FrameFlags::empty(),
                },
            );
            let s = p.intern_stack(track, stack, frame);
            memo.insert(n, s);
            stack = Some(s);
        }
    }
    stack
}

/// Samples of weight `w` from time `t` on `track` (weights past `i32::MAX` split).
fn add_samples(
    p: &mut fxprof_processed_profile::Profile,
    track: fxprof_processed_profile::ThreadHandle,
    t: u64,
    stack: Option<fxprof_processed_profile::StackHandle>,
    mut w: u64,
) {
    use fxprof_processed_profile as fx;
    let mut t = t;
    while w > 0 {
        let part = w.min(i32::MAX as u64);
        p.add_sample(
            track,
            fx::Timestamp::from_nanos_since_reference(t),
            stack,
            fx::CpuDelta::ZERO,
            part as i32,
        );
        t += part;
        w -= part;
    }
}

/// Escapes `s` for HTML text and attribute values.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// Height of one flame-graph frame, pixels.
pub(crate) const FLAME_ROW: u32 = 17;

/// Lays out a call tree (`parents[i]` < i, node 0 the root) as flame-graph frames `width`
/// pixels wide: `(node, x, depth, width)` depth-first, children heaviest first (then by
/// id), frames narrower than 0.5 px left out; and the deepest depth placed.
pub(crate) fn flame_layout(
    parents: &[u32],
    weights: &[u64],
    width: f64,
) -> (Vec<(u32, f64, u32, f64)>, u32) {
    flame_layout_from(parents, weights, width, 0)
}

/// [`flame_layout`] zoomed on node `root`: its ancestors full width below it (root of the
/// tree at depth 0), and its subtree scaled so that `root` is `width` pixels wide.
pub(crate) fn flame_layout_from(
    parents: &[u32],
    weights: &[u64],
    width: f64,
    root: u32,
) -> (Vec<(u32, f64, u32, f64)>, u32) {
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); parents.len()];
    for (i, &p) in parents.iter().enumerate().skip(1) {
        if (p as usize) < i {
            children[p as usize].push(i as u32);
        }
    }
    let mut frames = Vec::new();
    // the ancestors, outermost first
    let mut chain = Vec::new();
    let mut a = root;
    while a != 0 && (a as usize) < parents.len() && parents[a as usize] < a {
        a = parents[a as usize];
        chain.push(a);
    }
    chain.reverse();
    let d0 = chain.len() as u32;
    for (d, &n) in chain.iter().enumerate() {
        frames.push((n, 0.0, d as u32, width));
    }
    let total = weights.get(root as usize).copied().unwrap_or(0).max(1) as f64;
    let mut work = vec![(root, 0.0f64, d0)];
    let mut max_depth = d0;
    while let Some((n, x, d)) = work.pop() {
        let nw = weights[n as usize] as f64 / total * width;
        if nw < 0.5 {
            continue;
        }
        frames.push((n, x, d, nw));
        max_depth = max_depth.max(d);
        let mut kids = children[n as usize].clone();
        kids.sort_by_key(|&c| (std::cmp::Reverse(weights[c as usize]), c));
        let mut cx = x;
        let mut placed = Vec::new();
        for c in kids {
            placed.push((c, cx, d + 1));
            cx += weights[c as usize] as f64 / total * width;
        }
        work.extend(placed.into_iter().rev());
    }
    (frames, max_depth)
}

/// The call tree as an SVG flame graph (`width` pixels wide, callers below callees), weighted
/// by instructions (cycles when timed). Frames narrower than 0.5 px are left out; each frame's
/// tooltip gives its function, weight and share. Deterministic.
pub fn flame_svg(profile: &Profile, width: u32) -> String {
    let (parents, weights) = tree_weights(profile);
    flame_svg_at(profile, (&parents, &weights), width, 0, &|_| None)
}

/// Each call-tree node's parent and weight (instructions, cycles when timed).
fn tree_weights(profile: &Profile) -> (Vec<u32>, Vec<u64>) {
    let parents = profile.nodes.iter().map(|n| n.parent).collect();
    let weights = profile
        .nodes
        .iter()
        .map(|n| weight(profile, &n.total_counts))
        .collect();
    (parents, weights)
}

/// Zoom views on a page: at most this many frames get one ([`flame_html`]).
pub const FLAME_ZOOMS: usize = 48;
/// A frame gets a zoom view when it holds at least this share of the run.
pub const FLAME_ZOOM_SHARE: f64 = 0.01;
/// Functions listed in the flame graph's finder.
pub const FLAME_FIND: usize = 400;

/// The flame graph for a page without script: [`flame_svg`] plus a zoom view of each of the
/// [`FLAME_ZOOMS`] widest frames holding at least [`FLAME_ZOOM_SHARE`] of the run (each a
/// flame graph of that frame's subtree over the full width, its callers below it), shown by
/// CSS `:target` when a frame is clicked; and a finder listing the functions in the graph,
/// each a link that colours that function's frames in every view (`:has(:target)`).
/// Deterministic; needs no script, so the page's policy (no script, no fetch) stands.
pub fn flame_html(profile: &Profile, width: u32) -> String {
    let (parents, weights) = tree_weights(profile);
    let total = weights.first().copied().unwrap_or(0).max(1);
    let (frames, _) = flame_layout(&parents, &weights, f64::from(width));
    // zoom views: the widest frames that are not the whole of their caller
    let mut candidates: Vec<u32> = frames
        .iter()
        .map(|f| f.0)
        .filter(|&n| {
            let w = weights[n as usize];
            n != 0
                && w as f64 >= FLAME_ZOOM_SHARE * total as f64
                && (w as f64) < 0.95 * weights[parents[n as usize] as usize] as f64
        })
        .collect();
    candidates.sort_by_key(|&n| (std::cmp::Reverse(weights[n as usize]), n));
    candidates.truncate(FLAME_ZOOMS);
    let zoomable: std::collections::BTreeSet<u32> = candidates.iter().copied().collect();
    let link = |n: u32| -> Option<String> {
        if n == 0 {
            Some("#flame".to_string())
        } else {
            zoomable.contains(&n).then(|| format!("#z-{n}"))
        }
    };
    let mut o = String::new();
    o.push_str(
        "<style>.zoom{display:none}.zoom:target{display:block}body:has(.zoom:target) #flame-all{display:none}.flame a{cursor:zoom-in}.finder a{margin-right:.8em;white-space:nowrap}</style>\n",
    );
    // the finder: every function with a frame, widest first
    let mut shown: std::collections::BTreeMap<u32, u64> = std::collections::BTreeMap::new();
    for &(n, ..) in &frames {
        if let Some(f) = profile.nodes[n as usize].function {
            *shown.entry(f).or_default() += weights[n as usize];
        }
    }
    let mut listed: Vec<(u32, u64)> = shown.into_iter().collect();
    listed.sort_by_key(|&(f, w)| (std::cmp::Reverse(w), f));
    listed.truncate(FLAME_FIND);
    o.push_str("<style>");
    for &(f, _) in &listed {
        let _ = write!(
            o,
            "body:has(#find-{f}:target) .f-{f} rect{{fill:#d43df0}}body:has(#find-{f}:target) #find-{f}{{font-weight:bold}}"
        );
    }
    o.push_str("</style>\n");
    let _ = writeln!(
        o,
        "<details class=\"finder\"><summary>Find a function ({} in the graph, widest first; your browser's find searches this list)</summary><p><a href=\"#flame\">clear</a>",
        listed.len()
    );
    for &(f, w) in &listed {
        let _ = write!(
            o,
            "<a id=\"find-{f}\" href=\"#find-{f}\" title=\"{:.2}% in its frames\">{}</a> ",
            100.0 * w as f64 / total as f64,
            escape(&profile.functions[f as usize].name)
        );
    }
    o.push_str("</p></details>\n");
    let _ = writeln!(o, "<div id=\"flame-all\">");
    o.push_str(&flame_svg_at(
        profile,
        (&parents, &weights),
        width,
        0,
        &link,
    ));
    o.push_str("</div>\n");
    for &n in &candidates {
        let node = &profile.nodes[n as usize];
        let name = node
            .function
            .map_or("?", |f| profile.functions[f as usize].name.as_str());
        let _ = writeln!(
            o,
            "<div class=\"zoom\" id=\"z-{n}\"><p class=\"legend\">Zoomed on <b>{}</b> ({:.2}% of the run): its callees over the full width, its callers below. <a href=\"#flame\">Reset zoom</a></p>",
            escape(name),
            100.0 * weights[n as usize] as f64 / total as f64
        );
        o.push_str(&flame_svg_at(
            profile,
            (&parents, &weights),
            width,
            n,
            &link,
        ));
        o.push_str("</div>\n");
    }
    o
}

/// The flame graph zoomed on node `root` (0: the whole run), frames linked where `link` says
/// and classed `f-F` by function for the finder.
fn flame_svg_at(
    profile: &Profile,
    (parents, weights): (&[u32], &[u64]),
    width: u32,
    root: u32,
    link: &dyn Fn(u32) -> Option<String>,
) -> String {
    const ROW: u32 = FLAME_ROW;
    let total = weight(profile, &profile.nodes[0].total_counts).max(1);
    let unit = if profile.timed {
        "cycles"
    } else {
        "instructions"
    };
    let (frames, max_depth) = flame_layout_from(parents, weights, f64::from(width), root);
    let height = (max_depth + 1) * ROW + 4;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="flame" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="monospace" font-size="11" role="img" aria-label="flame graph">"#
    );
    for (n, x, d, nw) in frames {
        let node = &profile.nodes[n as usize];
        let thread_name;
        let name = match node.function {
            Some(f) => profile.functions[f as usize].name.as_str(),
            None if n == 0 => "all",
            None => {
                thread_name = format!("thread {}", node.thread);
                thread_name.as_str()
            }
        };
        let y = height - 2 - (d + 1) * ROW;
        let v = weight(profile, &node.total_counts);
        // a stable colour per function name, warm hues
        let h = name.bytes().fold(2166136261u32, |a, b| {
            (a ^ u32::from(b)).wrapping_mul(16777619)
        });
        let (r, g, b) = (205 + (h % 50), 80 + ((h >> 8) % 120), 40 + ((h >> 16) % 40));
        let href = link(n);
        if let Some(h) = &href {
            let _ = write!(s, r#"<a href="{h}">"#);
        }
        match node.function {
            Some(f) => {
                let _ = write!(s, r#"<g class="f-{f}">"#);
            }
            None => s.push_str("<g>"),
        }
        let _ = write!(
            s,
            r#"<title>{} — {} {unit} ({:.2}%), self {}</title><rect x="{x:.1}" y="{y}" width="{:.1}" height="{}" fill="rgb({r},{g},{b})" rx="2"/>"#,
            escape(name),
            v,
            100.0 * v as f64 / total as f64,
            weight(profile, &node.self_counts),
            (nw - 0.5).max(0.5),
            ROW - 1
        );
        let chars = ((nw - 6.0) / 7.0).floor();
        if chars >= 3.0 {
            let chars = chars as usize;
            let label: String = if name.chars().count() > chars {
                name.chars()
                    .take(chars.saturating_sub(2))
                    .collect::<String>()
                    + ".."
            } else {
                name.to_string()
            };
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{}">{}</text>"#,
                x + 3.0,
                y + ROW - 5,
                escape(&label)
            );
        }
        s.push_str("</g>");
        if href.is_some() {
            s.push_str("</a>");
        }
        s.push('\n');
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod column_tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(61_055_030), "61,055,030");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn every_column_has_a_distinct_header_and_a_legend() {
        for cols in [COLUMNS, TIMED_COLUMNS] {
            let mut h: Vec<_> = cols.iter().map(|c| c.0).collect();
            h.sort_unstable();
            h.dedup();
            assert_eq!(h.len(), cols.len());
            assert!(cols.iter().all(|c| !c.1.is_empty()));
        }
    }
}
