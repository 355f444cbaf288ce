//! The RPA's report: per query, every record accounted for; per queue, what its service
//! found, beside the exact reference of the same run.

use crate::Report;
use outcrop_rpa::hw::{AdaptiveReport, HwConfig, HwStats, Occupancy};
use outcrop_rpa::prefetch::PrefetchReport;
use outcrop_rpa::services::{CollectorCheck, CpiAccuracy, EdgeAccuracy, Kind};
use outcrop_rpa::stats::QueryStats;
use serde::Serialize;
use std::fmt::Write as _;

/// One query.
#[derive(Clone, Debug, Serialize)]
pub struct QueryReport {
    /// Its header, as the disassembler writes it.
    pub header: String,
    /// One record in `rate` is selected (1: `always`).
    pub rate: u64,
    /// Its accounting.
    pub stats: QueryStats,
}

/// The GC service's barrier and collector against the exact store log.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GcReport {
    /// Non-null reference stores the service saw.
    pub stores: u64,
    /// Null stores it saw (0 when the query filters them, as Figure 2c).
    pub nulls: u64,
    /// Its checksum of them.
    pub checksum: String,
    /// Non-null reference stores that retired (exact).
    pub exact_stores: Option<u64>,
    /// Their checksum.
    pub exact_checksum: Option<String>,
    /// The collector's collections, and the check of each against the exact heap.
    pub collector: Option<CollectorCheck>,
    /// Why the collector was not checked, if it was not.
    pub collector_note: Option<String>,
}

/// What one service found.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "lowercase", tag = "service")]
pub enum ServiceDetail {
    /// Edge profiling vs exact counts; `labels` names each hot branch.
    Edges {
        /// The accuracy (None without an exact reference).
        accuracy: Option<EdgeAccuracy>,
        /// Function+offset of each hot branch, in `accuracy.hot` order.
        labels: Vec<String>,
    },
    /// CPI vs exact attribution.
    Cpi {
        /// The accuracy (None without an exact reference).
        accuracy: Option<CpiAccuracy>,
        /// Names of the hot instructions, then of the hot groups (functions).
        labels: Vec<String>,
        /// Names of the groups.
        group_labels: Vec<String>,
    },
    /// The store barrier.
    Gc(GcReport),
    /// The log: the first records (hex words) and the exact count of records.
    Log {
        /// The first records.
        first: Vec<[String; 7]>,
        /// Records of the query's classes that occurred (exact).
        exact_records: Option<u64>,
        /// With pc and res2: the pcs with the most records, hottest first.
        addresses: Vec<PcStride>,
    },
}

/// A pc of an address log: what a prefetcher would learn from it.
#[derive(Clone, Debug, Serialize)]
pub struct PcStride {
    /// The pc (low 32 bits), named.
    pub pc: String,
    /// Its records.
    pub records: u64,
    /// Its most frequent stride in bytes, and that stride's share of its strides.
    pub stride: Option<(i32, f64)>,
}

/// One queue and its service.
#[derive(Clone, Debug, Serialize)]
pub struct QueueReport {
    /// Queue number.
    pub queue: u8,
    /// Its service.
    pub kind: Kind,
    /// The query feeding it (1-based).
    pub query: usize,
    /// Messages the service read.
    pub received: u64,
    /// What it found.
    pub detail: ServiceDetail,
}

/// The RPA report of a run.
#[derive(Clone, Debug, Serialize)]
pub struct RpaReport {
    /// The program.
    pub program: String,
    /// Instructions retired.
    pub instructions: u64,
    /// Whether sampled queries also waited (a lossless, deterministic run).
    pub lossless: bool,
    /// The queries.
    pub queries: Vec<QueryReport>,
    /// The queues.
    pub queues: Vec<QueueReport>,
    /// The `count` actions' counters: (query instruction, count).
    pub counters: Vec<(usize, u64)>,
    /// The hardware model's account (`--rpa-hw`; the one core's, every process's).
    pub hardware: Option<HwSection>,
    /// The process and program the queries, queues and counters above are, when the guest
    /// ran more than one (the first process's first program: `pid 1000 sort`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// Every other process and program, when the guest ran more than one (the fields above
    /// are the first process's first program's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<RpaProcessReport>,
}

/// One other process and program's part of the RPA report.
#[derive(Clone, Debug, Serialize)]
pub struct RpaProcessReport {
    /// Which (`pid 1002 sort (exec 1)`).
    pub process: String,
    /// Its queries' accounting.
    pub queries: Vec<QueryReport>,
    /// What each queue's service found in its records.
    pub queues: Vec<QueueReport>,
    /// Its `count` actions' counters.
    pub counters: Vec<(usize, u64)>,
}

/// What the RPA's hardware did (docs/rpa.md "The hardware in the timing model").
#[derive(Clone, Debug, Serialize)]
pub struct HwSection {
    /// Its sizes.
    pub config: HwConfig,
    /// Holds, queries, messages, drops.
    pub stats: HwStats,
    /// Cycles with at least x buffers / profiled instructions in flight.
    pub occupancy: Occupancy,
    /// The closed prefetch loop (`--rpa-prefetch`), and the demand misses that found their
    /// prefetched line still on the way (a late prefetch: the miss waits only for it).
    pub prefetch: Option<(PrefetchReport, u64)>,
    /// The adaptive rate (`--rpa-adaptive`).
    pub adaptive: Option<AdaptiveReport>,
}

impl HwSection {
    /// Share of the run's cycles (0–1) in which dispatch was held for a network or a buffer
    /// (holds are disjoint: dispatch is in order).
    pub fn stalled(&self) -> f64 {
        let c = self.stats.held_network_cycles + self.stats.held_buffer_cycles;
        c as f64 / self.occupancy.cycles.max(1) as f64
    }

    fn write_text(&self, out: &mut String) {
        let c = &self.config;
        let s = &self.stats;
        let _ = writeln!(
            out,
            "  hardware: {} profile networks, {} profile buffers, {}-slot {}-stage query engine, service threads {} cycles/message, {} profiles",
            c.networks,
            c.buffers,
            c.slots,
            c.stages,
            c.service_cycles,
            if c.cheap { "cheap (retire-time records take no network)" } else { "expensive" }
        );
        let _ = writeln!(
            out,
            "    dispatch stalled {:.3}% of {} cycles: {} holds for a network ({} cycles), {} for a buffer ({} cycles); {} instructions profiled, {} with a network",
            100.0 * self.stalled(),
            thousands(self.occupancy.cycles),
            thousands(s.held_network),
            thousands(s.held_network_cycles),
            thousands(s.held_buffer),
            thousands(s.held_buffer_cycles),
            thousands(s.profiled),
            thousands(s.with_network)
        );
        let _ = writeln!(
            out,
            "    engine: {} queries, {:.2} query instructions each, {} cycles waiting for a slot; {} messages, {} queue-full waits ({} cycles), {} dropped",
            thousands(s.queries),
            s.steps as f64 / s.queries.max(1) as f64,
            thousands(s.slot_wait_cycles),
            thousands(s.messages),
            thousands(s.queue_waits),
            thousands(s.queue_wait_cycles),
            thousands(s.dropped)
        );
        let row = |v: &[u64]| {
            (1..v.len())
                .filter(|&x| v[x] > 0 || x <= 8)
                .take(12)
                .map(|x| {
                    format!(
                        "≥{x}: {:.2}%",
                        100.0 * v[x] as f64 / self.occupancy.cycles.max(1) as f64
                    )
                })
                .collect::<Vec<_>>()
                .join("  ")
        };
        let _ = writeln!(
            out,
            "    cycles with buffers in use   {}",
            row(&self.occupancy.buffers)
        );
        let _ = writeln!(
            out,
            "    cycles with profiled in flight {}",
            row(&self.occupancy.networks)
        );
        if let Some((p, late)) = &self.prefetch {
            let _ = writeln!(
                out,
                "    prefetch (Figure 2b, closed loop): {} L2-miss records read, {} predicted by stride, {} by correlation; {} lines asked for, each arriving {} + {} cycles after the service read its record; {} demand misses found theirs still on the way",
                thousands(p.stats.misses),
                thousands(p.stats.stride_hits),
                thousands(p.stats.correlation_hits),
                thousands(p.stats.issued),
                p.config.latency,
                p.memory_latency,
                thousands(*late)
            );
        }
        if let Some(a) = &self.adaptive {
            let total: u64 = a.level_cycles.iter().sum();
            let levels = a
                .level_cycles
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(k, c)| {
                    format!(
                        "1/{}: {:.1}%",
                        1u64 << k,
                        100.0 * *c as f64 / total.max(1) as f64
                    )
                })
                .collect::<Vec<_>>()
                .join("  ");
            let _ = writeln!(
                out,
                "    adaptive rate (budget {:.2}% of cycles per {} cycles): {} of {} windows over budget, highest throttle 1/{}; sampled records kept: {}",
                100.0 * a.config.budget,
                thousands(a.config.window),
                thousands(a.over_budget),
                thousands(a.windows),
                1u64 << a.max_level_reached,
                levels
            );
        }
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Most other (process, program)s the text shows (those with the most records).
pub const TEXT_ROWS: usize = 16;

/// What each accounting column means.
pub const STATS_LEGEND: &str = "records: of the query's classes, retired; selected: by its sampling (every N); filtered: selected but sent nowhere by its clauses; sent: messages written; dropped: a sampled query's messages refused by a full queue; waited: sends that found the queue full and waited (always queries: back-pressure, nothing lost)";

impl Report for RpaReport {
    fn write_text(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "relational profiling: {} quer{}, {} queue{}{}",
            self.queries.len(),
            if self.queries.len() == 1 { "y" } else { "ies" },
            self.queues.len(),
            if self.queues.len() == 1 { "" } else { "s" },
            if self.lossless {
                " (lossless: sampled queries wait too)"
            } else {
                ""
            }
        );
        if let Some(p) = &self.process {
            let _ = writeln!(
                out,
                "  {p} (the first process's first program; each other's records follow its own)"
            );
        }
        write_body(out, &self.queries, &self.counters, &self.queues);
        // the rows with the most records, in the order they came; the rest in rpa.json
        let records = |p: &RpaProcessReport| p.queries.iter().map(|q| q.stats.records).sum();
        let mut ranked: Vec<(u64, usize)> = self
            .processes
            .iter()
            .enumerate()
            .map(|(i, p)| (records(p), i))
            .collect();
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut shown: Vec<usize> = ranked.iter().take(TEXT_ROWS).map(|r| r.1).collect();
        shown.sort_unstable();
        for p in shown.iter().map(|&i| &self.processes[i]) {
            let _ = writeln!(out, "  {}:", p.process);
            let mut part = String::new();
            write_body(&mut part, &p.queries, &p.counters, &p.queues);
            for line in part.lines() {
                let _ = writeln!(out, "  {line}");
            }
        }
        if self.processes.len() > shown.len() {
            let _ = writeln!(
                out,
                "  … {} more (process, program)s with fewer records (--report DIR writes every one to rpa.json)",
                self.processes.len() - shown.len()
            );
        }
        if let Some(h) = &self.hardware {
            h.write_text(out);
        }
        let _ = writeln!(out, "  {STATS_LEGEND}");
    }
}

/// Each query's accounting, the counters and each queue's findings.
fn write_body(
    out: &mut String,
    queries: &[QueryReport],
    counters: &[(usize, u64)],
    queues: &[QueueReport],
) {
    for (i, q) in queries.iter().enumerate() {
        let s = &q.stats;
        let _ = writeln!(out, "  query {}: {}", i + 1, q.header);
        let _ = writeln!(
            out,
            "    records {}  selected {}  filtered {}  sent {}  dropped {}  waited {}{}",
            thousands(s.records),
            thousands(s.selected),
            thousands(s.filtered),
            thousands(s.sent),
            thousands(s.dropped),
            thousands(s.waited),
            if s.lost > 0 {
                format!("  LOST {} (a service thread stopped)", thousands(s.lost))
            } else {
                String::new()
            }
        );
        if s.dropped > 0 {
            let _ = writeln!(
                    out,
                    "    note: {:.1}% of the selected records were dropped by a full queue; estimates are scaled by selected / sent, but drops come in bursts, so hot spots may be off: --deterministic makes sampled queries wait instead",
                    100.0 * s.dropped as f64 / s.selected.max(1) as f64
                );
        }
    }
    for (i, n) in counters {
        let _ = writeln!(
            out,
            "  count action at query instruction {i}: {}",
            thousands(*n)
        );
    }
    for q in queues {
        let _ = writeln!(
            out,
            "  queue {} → {} service (query {}): {} messages",
            q.queue,
            q.kind.name(),
            q.query,
            thousands(q.received)
        );
        write_detail(out, &q.detail);
    }
}

fn write_detail(out: &mut String, d: &ServiceDetail) {
    match d {
        ServiceDetail::Edges { accuracy, labels } => {
            let Some(a) = accuracy else {
                let _ = writeln!(out, "    (no exact reference)");
                return;
            };
            let _ = writeln!(
                out,
                "    edge profile vs exact counts: overlap {:.2}%; {} of {} branches sampled; {} samples for {} executions; hot branches (≥ 1% of executions) mean error {:.2}%",
                a.overlap_pct,
                a.sampled,
                a.branches,
                thousands(a.samples),
                thousands(a.executions),
                a.hot_mean_error_pct
            );
            if !a.hot.is_empty() {
                let _ = writeln!(
                    out,
                    "    {:<32} {:>13} {:>13} {:>13} {:>13} {:>7}",
                    "branch", "taken", "est. taken", "not taken", "est. not", "error"
                );
            }
            for (h, l) in a.hot.iter().zip(labels).take(20) {
                let _ = writeln!(
                    out,
                    "    {:<32} {:>13} {:>13} {:>13} {:>13} {:>6.2}%",
                    l,
                    thousands(h.exact[0]),
                    thousands(h.estimate[0]),
                    thousands(h.exact[1]),
                    thousands(h.estimate[1]),
                    h.error_pct
                );
            }
        }
        ServiceDetail::Cpi {
            accuracy,
            labels,
            group_labels,
        } => {
            let Some(a) = accuracy else {
                let _ = writeln!(out, "    (no exact reference)");
                return;
            };
            let err = if a.exact_cycles > 0.0 {
                100.0 * (a.estimated_cycles - a.exact_cycles).abs() / a.exact_cycles
            } else {
                0.0
            };
            let _ = writeln!(
                out,
                "    cycles: estimated {:.0}, exact {:.0} (Σ c + 1/n), error {:.2}%",
                a.estimated_cycles, a.exact_cycles, err
            );
            for (title, rows, names) in [
                ("function", &a.groups, group_labels),
                ("instruction", &a.hot, labels),
            ] {
                if rows.is_empty() {
                    continue;
                }
                let _ = writeln!(
                    out,
                    "    {:<32} {:>14} {:>14} {:>9} {:>9} {:>8}",
                    format!("{title} (≥ 1% of cycles)"),
                    "cycles",
                    "est. cycles",
                    "CPI",
                    "est. CPI",
                    "samples"
                );
                for (r, l) in rows.iter().zip(names).take(15) {
                    let _ = writeln!(
                        out,
                        "    {:<32} {:>14.0} {:>14.0} {:>9.3} {:>9.3} {:>8}",
                        l,
                        r.exact_cycles,
                        r.estimated_cycles,
                        r.exact_cpi,
                        r.estimated_cpi,
                        r.samples
                    );
                }
            }
        }
        ServiceDetail::Gc(g) => write_gc(out, g),
        ServiceDetail::Log {
            first,
            exact_records,
            addresses,
        } => {
            if let Some(n) = exact_records {
                let _ = writeln!(out, "    records of the query's classes: {}", thousands(*n));
            }
            if !addresses.is_empty() {
                let _ = writeln!(
                    out,
                    "    {:<32} {:>12} {:>12} {:>8}",
                    "pc (most records)", "records", "stride", "share"
                );
                for a in addresses.iter().take(10) {
                    let (stride, share) = match a.stride {
                        Some((s, f)) => (s.to_string(), format!("{:.1}%", 100.0 * f)),
                        None => ("-".into(), "-".into()),
                    };
                    let _ = writeln!(
                        out,
                        "    {:<32} {:>12} {:>12} {:>8}",
                        a.pc,
                        thousands(a.records),
                        stride,
                        share
                    );
                }
            } else {
                for r in first.iter().take(10) {
                    let _ = writeln!(out, "    {}", r.join(" "));
                }
            }
        }
    }
}

/// The GC store barrier's detail: stores seen against the exact count and checksum, and the
/// collector's work.
fn write_gc(out: &mut String, g: &GcReport) {
    let verdict = match (g.exact_stores, &g.exact_checksum) {
        (Some(n), Some(c)) if n == g.stores && *c == g.checksum => {
            "every one, exactly once (count and checksum match)".to_string()
        }
        (Some(n), Some(c)) => format!("MISMATCH: {} retired, checksum {c}", thousands(n)),
        _ => "no exact reference".to_string(),
    };
    let _ = writeln!(
        out,
        "    store barrier: {} non-null reference stores, checksum {}: {verdict}{}",
        thousands(g.stores),
        g.checksum,
        if g.nulls > 0 {
            format!(" (and {} null stores)", thousands(g.nulls))
        } else {
            String::new()
        }
    );
    if let Some(c) = &g.collector {
        let _ = writeln!(
            out,
            "    collector: {} collections freed {} objects; freed while reachable in the exact heap: {}",
            c.collections,
            thousands(c.freed),
            c.unsafe_frees
        );
    }
    if let Some(n) = &g.collector_note {
        let _ = writeln!(out, "    collector: {n}");
    }
}

/// One branch of an edge profile, for [`fdata`].
#[derive(Clone, Debug)]
pub struct FdataBranch {
    /// BOLT's place of the branch (`1 name offset`, or `0 [unknown] address`).
    pub from: String,
    /// Place of its taken target.
    pub taken_to: String,
    /// Place of its fall-through.
    pub fall_to: String,
    /// Estimated counts: taken, not taken.
    pub counts: [u64; 2],
    /// Estimated mispredictions: taken, not taken.
    pub mispredicted: [u64; 2],
}

/// The edge profile in LLVM BOLT's `.fdata` text format (as `outcrop paths fdata`: one line
/// per edge `<from> <to> <mispredictions> <count>`, places `1 name hex-offset`); edges with
/// no estimated executions are left out.
pub fn fdata(branches: &[FdataBranch]) -> String {
    let mut s = String::new();
    for b in branches {
        for (to, i) in [(&b.taken_to, 0), (&b.fall_to, 1)] {
            if b.counts[i] > 0 {
                let _ = writeln!(s, "{} {} {} {}", b.from, to, b.mispredicted[i], b.counts[i]);
            }
        }
    }
    s
}

/// The header of query `q` as the language writes it (`opBRANCH *` for all four tags).
fn header(p: &outcrop_rpa::Assembled, q: &outcrop_rpa::asm::AssembledQuery) -> String {
    use outcrop_rpa::names::{Class, ITEMS, OP_CLASSES};
    let mut classes = Vec::new();
    let mut i = 0;
    while i < q.classes.len() {
        let c = q.classes[i];
        if c < 32 && c % 4 == 0 && (0..4).all(|t| q.classes.get(i + t) == Some(&(c + t))) {
            classes.push(format!("{} *", OP_CLASSES[c / 4]));
            i += 4;
        } else {
            classes.push(Class::from_pct_index(c).map_or_else(|| "?".into(), |c| c.to_string()));
            i += 1;
        }
    }
    let rate = q.classes.first().map_or(0, |&c| p.pct[c].rate_log2);
    let items: Vec<&str> = q.items.iter().map(|&i| ITEMS[usize::from(i)]).collect();
    format!(
        "for {} {} collect {}",
        classes.join(" "),
        if rate == 0 {
            "always".to_string()
        } else {
            format!("every {}", 1u64 << rate)
        },
        items.join(" ")
    )
}

/// How a report names code: an instruction, and the function (group) it belongs to.
struct Namer<'a> {
    label: &'a dyn Fn(u64) -> String,
    group: &'a dyn Fn(u64) -> Option<u64>,
    group_name: &'a dyn Fn(u64) -> String,
}

/// One process and program's queries, queues and counters.
type Body = (Vec<QueryReport>, Vec<QueueReport>, Vec<(usize, u64)>);

/// The report of the RPA's results, and the BOLT `.fdata` text of an edges service when
/// `code` (the program's image, for branch targets) is given. Every other process and
/// program is named through its own exact profile in `processes` when there is one.
#[allow(clippy::too_many_arguments)]
pub fn report(
    r: &outcrop_rpa::observe::RpaResult,
    program: &str,
    instructions: u64,
    lossless: bool,
    symbols: Option<&outcrop_rv::symbols::Symbols>,
    code: Option<&outcrop_run::ProgramImage>,
    late_fills: u64,
    processes: &[outcrop_profile::ProcessProfile],
) -> (RpaReport, Option<String>) {
    let label = |pc: u64| match symbols.and_then(|s| s.lookup(pc)) {
        Some(f) => f.to_string(),
        None => format!("{pc:#x}"),
    };
    let group = |pc: u64| symbols.and_then(|s| s.lookup(pc)).map(|f| f.start);
    let group_name = |a: u64| {
        symbols
            .and_then(|s| s.lookup(a))
            .map_or_else(|| format!("{a:#x}"), |f| f.name.to_string())
    };
    let namer = Namer {
        label: &label,
        group: &group,
        group_name: &group_name,
    };
    let mut fdata_text = None;
    let fdata = code.map(|c| (c, symbols, &mut fdata_text));
    let (queries, queues, counters) = body(
        &r.program,
        (&r.queries, &r.exact, &r.counters),
        &r.queues,
        &namer,
        fdata,
    );
    let others = r
        .processes
        .iter()
        .map(|p| {
            let k = &p.key;
            let prof = processes
                .iter()
                .find(|row| (row.pid, row.image) == (k.pid, k.image))
                .map(|row| &row.profile);
            let func = |pc: u64| -> Option<u32> {
                let prof = prof?;
                let i = prof.pcs.partition_point(|c| c.pc < pc);
                prof.pcs.get(i).filter(|c| c.pc == pc).map(|c| c.function)
            };
            let fname = |f: u32| {
                prof.and_then(|p| p.functions.get(f as usize))
                    .map(|f| f.name.clone())
            };
            let label = |pc: u64| match func(pc).and_then(fname) {
                Some(n) => format!("{n} ({pc:#x})"),
                None => format!("{pc:#x}"),
            };
            let group = |pc: u64| func(pc).map(u64::from);
            let group_name = |f: u64| {
                u32::try_from(f)
                    .ok()
                    .and_then(fname)
                    .unwrap_or_else(|| format!("function {f}"))
            };
            let namer = Namer {
                label: &label,
                group: &group,
                group_name: &group_name,
            };
            let (queries, queues, counters) = body(
                &r.program,
                (&p.row.queries, &p.row.exact, &p.row.counters),
                &p.queues,
                &namer,
                None,
            );
            RpaProcessReport {
                process: crate::processes::label(k.pid, k.image, &k.program),
                queries,
                queues,
                counters,
            }
        })
        .collect();
    (
        RpaReport {
            program: program.to_string(),
            instructions,
            lossless,
            queries,
            queues,
            counters,
            hardware: r.hardware.as_ref().map(|h| HwSection {
                config: h.config,
                stats: h.stats.clone(),
                occupancy: h.occupancy.clone(),
                prefetch: h.prefetch.clone().map(|p| (p, late_fills)),
                adaptive: h.adaptive.clone(),
            }),
            process: r
                .first_process
                .as_ref()
                .map(|k| crate::processes::label(k.pid, k.image, &k.program)),
            processes: others,
        },
        fdata_text,
    )
}

/// What one process and program's records did: its queries, what each queue's service found
/// against the exact reference, and its counters; an edges service's `.fdata` into `fdata`
/// when given the program's code.
fn body(
    program: &outcrop_rpa::Assembled,
    (stats, exact, counters): (
        &[QueryStats],
        &[Option<outcrop_rpa::observe::Exact>],
        &[u64],
    ),
    queues_in: &[(
        outcrop_rpa::observe::QueuePlan,
        u64,
        outcrop_rpa::services::Service,
    )],
    n: &Namer<'_>,
    mut fdata: Option<(
        &outcrop_run::ProgramImage,
        Option<&outcrop_rv::symbols::Symbols>,
        &mut Option<String>,
    )>,
) -> Body {
    use outcrop_rpa::services::{self, Service};
    let rate_of = |qi: usize| {
        let q = &program.queries[qi];
        q.classes
            .first()
            .map_or(1, |&c| 1u64 << program.pct[c].rate_log2)
    };
    let queries = program
        .queries
        .iter()
        .zip(stats)
        .enumerate()
        .map(|(i, (q, s))| QueryReport {
            header: header(program, q),
            rate: rate_of(i),
            stats: s.clone(),
        })
        .collect();
    let mut queues = Vec::new();
    for (plan, received, service) in queues_in {
        let exact = exact.get(plan.query).and_then(|e| e.as_ref());
        // one message stands for `every N` records, for the ones a full queue dropped and
        // for the ones the adaptive rate threw away
        let default = QueryStats::default();
        let st = stats.get(plan.query).unwrap_or(&default);
        // (a weighted service counts each sample as the throttled ones it stands for)
        let throttled = if service.weighted() { 0 } else { st.throttled };
        let rate =
            rate_of(plan.query) as f64 * (st.selected + throttled) as f64 / st.sent.max(1) as f64;
        let detail = match service {
            Service::Edges(e) => {
                let accuracy = exact.map(|x| services::edge_accuracy(&e.branches, rate, &x.edges));
                let labels = accuracy
                    .as_ref()
                    .map(|a| a.hot.iter().map(|h| (n.label)(h.pc)).collect())
                    .unwrap_or_default();
                if let Some((code, symbols, out)) = fdata.as_mut() {
                    **out = Some(edges_fdata(&e.branches, exact, code, *symbols, rate));
                }
                ServiceDetail::Edges { accuracy, labels }
            }
            Service::Cpi(c) => {
                let accuracy = exact.map(|x| services::cpi_accuracy(&c.pcs, rate, &x.cpi, n.group));
                let (labels, group_labels) = accuracy
                    .as_ref()
                    .map(|a| {
                        (
                            a.hot.iter().map(|h| (n.label)(h.addr)).collect(),
                            a.groups.iter().map(|g| (n.group_name)(g.addr)).collect(),
                        )
                    })
                    .unwrap_or_default();
                ServiceDetail::Cpi {
                    accuracy,
                    labels,
                    group_labels,
                }
            }
            Service::Gc(g) => ServiceDetail::Gc(gc_report(g, exact)),
            Service::Log(l) => ServiceDetail::Log {
                first: l
                    .records
                    .iter()
                    .take(64)
                    .map(|m| m.map(|w| format!("{w:08x}")))
                    .collect(),
                exact_records: exact.map(|x| x.records),
                addresses: {
                    let mut v: Vec<(&u32, &services::PcAddresses)> = l.by_pc.iter().collect();
                    v.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
                    v.into_iter()
                        .take(64)
                        .map(|(pc, a)| PcStride {
                            pc: (n.label)(u64::from(*pc)),
                            records: a.count,
                            stride: a.dominant(),
                        })
                        .collect()
                },
            },
        };
        queues.push(QueueReport {
            queue: plan.queue,
            kind: plan.kind,
            query: plan.query + 1,
            received: *received,
            detail,
        });
    }
    let counters = program
        .insns
        .iter()
        .zip(counters)
        .enumerate()
        .filter(|(_, (i, _))| i.act == outcrop_rpa::isa::Act::Count)
        .map(|(k, (_, &n))| (k, n))
        .collect();
    (queries, queues, counters)
}

/// The edge service's branch counts, scaled by `rate`, as BOLT's `.fdata` (each branch's
/// targets from the program's code).
fn edges_fdata(
    branches: &std::collections::HashMap<u32, outcrop_rpa::services::BranchCounts>,
    exact: Option<&outcrop_rpa::observe::Exact>,
    code: &outcrop_run::ProgramImage,
    symbols: Option<&outcrop_rv::symbols::Symbols>,
    rate: f64,
) -> String {
    // full pcs: from the exact reference when there is one, else the
    // samples' low 32 bits (static programs live below 4 GiB)
    let full: std::collections::HashMap<u32, u64> = exact
        .map(|x| x.edges.keys().map(|&k| (k as u32, k)).collect())
        .unwrap_or_default();
    let mut pcs: Vec<(u64, outcrop_rpa::services::BranchCounts)> = branches
        .iter()
        .map(|(&pc, c)| (full.get(&pc).copied().unwrap_or(u64::from(pc)), *c))
        .collect();
    pcs.sort_by_key(|p| p.0);
    let place = |a: u64| {
        let func = symbols.and_then(|s| s.lookup(a));
        outcrop_paths::fdata::place(func.map(|f| (f.name, f.start)), a)
    };
    let branches: Vec<FdataBranch> = pcs
        .into_iter()
        .filter_map(|(pc, c)| {
            let (to, fall) = code.branch_targets(pc)?;
            Some(FdataBranch {
                from: place(pc),
                taken_to: place(to),
                fall_to: place(fall),
                counts: [c.taken, c.not_taken].map(|n| (n as f64 * rate).round() as u64),
                mispredicted: c.mispredicted.map(|n| (n as f64 * rate).round() as u64),
            })
        })
        .collect();
    fdata(&branches)
}

/// The GC service's counts and its collector's check against the exact store log.
fn gc_report(
    g: &outcrop_rpa::services::Gc,
    exact: Option<&outcrop_rpa::observe::Exact>,
) -> GcReport {
    use outcrop_rpa::observe::MAX_STORE_LOG;
    let mut rep = GcReport {
        stores: g.stores,
        nulls: g.nulls,
        checksum: format!("{:016x}", g.checksum),
        exact_stores: exact.map(|x| x.stores),
        exact_checksum: exact.map(|x| format!("{:016x}", x.checksum)),
        ..GcReport::default()
    };
    match (&g.collector, exact) {
        (Some(c), Some(x)) if !x.store_log_truncated => {
            rep.collector = Some(outcrop_rpa::services::check_collections(
                c.layout(),
                &x.store_log,
                &c.collections,
            ));
        }
        (Some(_), Some(_)) => {
            rep.collector_note = Some(format!(
                "not checked: more than {} reference stores in the exact log",
                MAX_STORE_LOG
            ));
        }
        (None, _) => {
            rep.collector_note = Some("none (give the heap with --gc-heap to run one)".into());
        }
        _ => {}
    }
    rep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_accounts_for_every_record_and_names_the_gc_verdict() {
        let r = RpaReport {
            program: "gc".into(),
            instructions: 10,
            lossless: false,
            queries: vec![QueryReport {
                header: "for opSTORE 1 always collect op1 op2 op3".into(),
                rate: 1,
                stats: QueryStats {
                    records: 1500,
                    selected: 1500,
                    filtered: 500,
                    sent: 1000,
                    waited: 3,
                    ..QueryStats::default()
                },
            }],
            queues: vec![QueueReport {
                queue: 3,
                kind: Kind::Gc,
                query: 1,
                received: 1000,
                detail: ServiceDetail::Gc(GcReport {
                    stores: 1000,
                    checksum: "00ff".into(),
                    exact_stores: Some(1000),
                    exact_checksum: Some("00ff".into()),
                    ..GcReport::default()
                }),
            }],
            counters: vec![(2, 1234)],
            hardware: None,
            process: None,
            processes: Vec::new(),
        };
        let t = r.to_text();
        assert!(
            t.contains(
                "records 1,500  selected 1,500  filtered 500  sent 1,000  dropped 0  waited 3"
            ),
            "{t}"
        );
        assert!(
            t.contains("queue 3 → gc service (query 1): 1,000 messages"),
            "{t}"
        );
        assert!(t.contains("every one, exactly once"), "{t}");
        assert!(
            t.contains("count action at query instruction 2: 1,234"),
            "{t}"
        );
        assert!(r.to_json().contains("\"service\": \"gc\""));
    }

    #[test]
    fn fdata_writes_both_edges_of_a_branch_and_skips_empty_ones() {
        let b = FdataBranch {
            from: "1 main 10".into(),
            taken_to: "1 main 4".into(),
            fall_to: "1 main 14".into(),
            counts: [512, 0],
            mispredicted: [256, 0],
        };
        assert_eq!(fdata(&[b]), "1 main 10 1 main 4 256 512\n");
    }
}
