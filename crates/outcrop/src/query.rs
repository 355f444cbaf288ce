//! `outcrop query`: the Relational Profiling Architecture's query language
//! (`outcrop_rpa`; docs/rpa.md). `check FILE` parses and assembles a query file and reports
//! the first problem as a compiler would; `asm FILE` prints the profile control table and the
//! encoded query instructions with their disassembly.

use crate::files::{read_text_bounded, MAX_CONFIG_BYTES};
use anyhow::Result;
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// `outcrop query` subcommands.
#[derive(Subcommand, Debug)]
pub enum QueryCommand {
    /// Parse and assemble a query file; report the first problem with file:line:column, a
    /// caret and a hint. Exit status 1 when the file has a problem.
    ///
    /// Example:
    ///   outcrop query check edges.rpa
    #[command(verbatim_doc_comment)]
    Check(QueryArgs),
    /// Assemble a query file and print the profile control table (enabled entries with their
    /// two 32-bit PCRs) and every 64-bit query instruction with its disassembly.
    ///
    /// Example (the paper's Figure 2a):
    ///   printf 'for opBRANCH * every 256 collect pc misc;\nsend 1 stop;\n' > edges.rpa
    ///   outcrop query asm edges.rpa
    #[command(verbatim_doc_comment)]
    Asm(QueryArgs),
}

/// Options of `outcrop query check|asm`.
#[derive(Args, Debug)]
pub struct QueryArgs {
    /// The query file (RPA assembly, docs/rpa.md).
    file: PathBuf,
    /// Output (and errors) as JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// Runs an `outcrop query` subcommand.
pub fn run(cmd: QueryCommand) -> Result<ExitCode> {
    let (a, asm) = match cmd {
        QueryCommand::Check(a) => (a, false),
        QueryCommand::Asm(a) => (a, true),
    };
    let name = a.file.display().to_string();
    let src = match read_text_bounded(&a.file, "query file", MAX_CONFIG_BYTES) {
        Ok(src) => src,
        // --json: every answer is JSON, a file that cannot be read too
        Err(e) if a.json => {
            let j = serde_json::json!({
                "ok": false,
                "file": name,
                "message": e.to_string(),
            });
            println!("{j:#}");
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e.into()),
    };
    let result = outcrop_rpa::parse(&src).and_then(|p| outcrop_rpa::assemble(&p).map(|x| (p, x)));
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match result {
        Err(d) => {
            if a.json {
                let (line, column) = outcrop_rpa::lang::line_col(&src, d.span.start);
                let j = serde_json::json!({
                    "ok": false,
                    "file": name,
                    "line": line,
                    "column": column,
                    "message": d.message,
                    "label": d.label,
                    "hint": d.hint,
                });
                writeln!(out, "{j:#}")?;
            } else {
                let text = outcrop_rpa::render(&d, &name, &src);
                eprint!("{}", outcrop_events::escape::text(&text));
            }
            Ok(ExitCode::from(1))
        }
        Ok((p, x)) => {
            if a.json {
                let j = serde_json::json!({
                    "ok": true,
                    "file": name,
                    "queries": p.queries.len(),
                    "instructions": x.insns.iter().map(|i| format!("{:#018x}", i.encode())).collect::<Vec<_>>(),
                    "pct": x.pct.iter().enumerate().filter(|(_, e)| e.enabled).map(|(i, e)| {
                        let [p0, p1] = e.encode();
                        serde_json::json!({"index": i, "class": outcrop_rpa::names::Class::from_pct_index(i).map(|c| c.to_string()), "pcr0": p0, "pcr1": p1})
                    }).collect::<Vec<_>>(),
                });
                writeln!(out, "{j:#}")?;
            } else if asm {
                write!(out, "{}", outcrop_rpa::listing(&x))?;
            } else {
                writeln!(
                    out,
                    "{name}: {} queries, {} query instructions, {} classes profiled",
                    p.queries.len(),
                    x.insns.len(),
                    x.pct.iter().filter(|e| e.enabled).count()
                )?;
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `outcrop run` options of the Relational Profiling Architecture.
#[derive(Args, Debug, Clone)]
pub struct RpaArgs {
    /// Run the RPA queries in FILE during the run (docs/rpa.md): each selected record goes
    /// through the query engine into message queues read by service threads; the report
    /// accounts for every record and checks each service against an exact reference.
    #[arg(long, value_name = "FILE")]
    pub query: Option<PathBuf>,

    /// The service reading queue Q: edges (Figure 2a), cpi (2d), gc (2c) or log (2b, and
    /// anything else). Without Q, every queue. Default: what the query's items suggest
    /// (pc misc → edges, pc rrate → cpi, op1 op2 op3 → gc, else log). Repeatable.
    #[arg(long, value_name = "[Q=]KIND", requires = "query")]
    pub service: Vec<String>,

    /// Give profile tag T (1-3) to the instructions of function SYMBOL, of the address range
    /// LO-HI (hex, HI exclusive) or at ADDR. Repeatable. Tags the program recorded with
    /// outcrop.h's OUTCROP_TAG_* macros are read from it as well.
    #[arg(long, value_name = "WHERE=T", requires = "query")]
    pub tag: Vec<String>,

    /// The guest's heap, for a collector on the gc service: the arena's and the root array's
    /// symbols, the object size in bytes, and how many barrier stores between collections
    /// (default 20000), e.g. gc_arena:gc_roots:64 for workloads/study/gc.c.
    #[arg(
        long = "gc-heap",
        value_name = "ARENA:ROOTS:SIZE[:PERIOD]",
        requires = "query"
    )]
    pub gc_heap: Option<String>,

    /// Seed of the query engine's LFSR (every N, filter N).
    #[arg(long, value_name = "N", default_value_t = 0x5eed)]
    pub query_seed: u64,

    /// Messages per queue, 1 to 128 (§3.4.2).
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub queue_capacity: usize,

    /// Write the edges service's estimated profile to FILE in LLVM BOLT's .fdata format.
    #[arg(long, value_name = "FILE", requires = "query")]
    pub fdata: Option<PathBuf>,

    /// Model the RPA's hardware in the timing model (needs --timing): selected instructions
    /// take a profile network and a profile buffer at dispatch and stall dispatch when none
    /// is free; a 4-slot, 4-stage query engine; queues consumed by modelled service
    /// threads. SPEC: paper (4 networks, 8 buffers), unrestricted (32:32) or
    /// NETWORKS:BUFFERS. The report shows the stalls, the CPI stack their cost.
    #[arg(long = "rpa-hw", value_name = "SPEC", requires = "query")]
    pub rpa_hw: Option<String>,

    /// With --rpa-hw: records of only retire-time items take no network (§6.3's cheap
    /// profiles; the paper's Figures 7 and 8 assume every record is expensive).
    #[arg(long = "rpa-cheap", requires = "rpa_hw")]
    pub rpa_cheap: bool,

    /// With --rpa-hw: cycles a modelled service thread spends per message; a queue whose
    /// service falls 128 messages behind makes always-queries wait and sampled ones drop.
    #[arg(
        long = "rpa-service-cycles",
        value_name = "N",
        default_value_t = 50,
        requires = "rpa_hw"
    )]
    pub rpa_service_cycles: u32,

    /// With --rpa-hw: close Figure 2b's loop. A log queue fed L2-miss records (`for
    /// evL2DMISS always collect pc res2; send 1 stop;`) drives a prefetching service (stride
    /// per pc, else a correlation table of each pc's miss sequence, 4 lines per miss) whose
    /// lines enter the L2 LATENCY cycles after the modelled service thread reads the record,
    /// plus the memory latency. Use a preset with a real memory (default), not rpa2000's
    /// perfect L2.
    #[arg(
        long = "rpa-prefetch",
        value_name = "LATENCY",
        num_args = 0..=1,
        default_missing_value = "100",
        requires = "rpa_hw"
    )]
    pub rpa_prefetch: Option<u32>,

    /// With --rpa-prefetch: lines prefetched per miss (1 to 16).
    #[arg(
        long = "rpa-prefetch-degree",
        value_name = "N",
        default_value_t = 4,
        requires = "rpa_prefetch"
    )]
    pub rpa_prefetch_degree: u32,

    /// With --rpa-hw: the RPA watches itself. Every 10,000 cycles, when sampled queries'
    /// instructions held dispatch more than PERCENT of them (default 0.5), they keep half as
    /// many of the records they select (down to 1 in 256 of them); under a quarter of it,
    /// twice as many again. `always` queries are never throttled. Each record carries its
    /// level, so the edge and CPI estimates stay unbiased; the report shows the time spent
    /// at each level.
    #[arg(
        long = "rpa-adaptive",
        value_name = "PERCENT",
        num_args = 0..=1,
        default_missing_value = "0.5",
        requires = "rpa_hw"
    )]
    pub rpa_adaptive: Option<f64>,
}

/// Reads, parses and assembles a query file; a problem is an error rendered as a compiler
/// would (file:line:column, caret, hint).
pub fn load_program(path: &std::path::Path) -> Result<outcrop_rpa::Assembled> {
    let src = read_text_bounded(path, "query file", MAX_CONFIG_BYTES)?;
    let name = path.display().to_string();
    outcrop_rpa::parse(&src)
        .and_then(|p| outcrop_rpa::assemble(&p))
        .map_err(|d| anyhow::anyhow!("{}", outcrop_rpa::render(&d, &name, &src).trim_end()))
}

fn parse_num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The run-time configuration of `args` for the program `elf`.
pub fn spec(
    args: &RpaArgs,
    elf: &[u8],
    symbols: Option<&outcrop_rv::symbols::Symbols>,
    deterministic: bool,
) -> Result<Option<outcrop_rpa::observe::RpaSpec>> {
    use anyhow::Context as _;
    use outcrop_rpa::services::{HeapLayout, Kind};
    let Some(path) = &args.query else {
        return Ok(None);
    };
    let program = load_program(path)?;
    let mut spec = outcrop_rpa::observe::RpaSpec::new(program);
    spec.seed = args.query_seed;
    spec.capacity = args.queue_capacity;
    spec.lossless = deterministic;
    if let Some(h) = &args.rpa_hw {
        let mut c = outcrop_rpa::hw::HwConfig::parse(h)
            .map_err(|e| anyhow::anyhow!("--rpa-hw {h}: {e}"))?;
        c.cheap = args.rpa_cheap;
        c.service_cycles = args.rpa_service_cycles;
        c.validate()
            .map_err(|e| anyhow::anyhow!("--rpa-service-cycles: {e}"))?;
        spec.hardware = Some(c);
    }
    if let Some(latency) = args.rpa_prefetch {
        let p = outcrop_rpa::prefetch::PrefetchConfig {
            latency,
            degree: args.rpa_prefetch_degree,
            ..Default::default()
        };
        p.validate()
            .map_err(|e| anyhow::anyhow!("--rpa-prefetch: {e}"))?;
        spec.prefetch = Some(p);
    }
    if let Some(pct) = args.rpa_adaptive {
        if !(0.0..=100.0).contains(&pct) {
            anyhow::bail!(
                "--rpa-adaptive {pct}: a percentage of the window's cycles, from 0 to 100"
            );
        }
        let a = outcrop_rpa::hw::AdaptiveConfig {
            budget: pct / 100.0,
            ..Default::default()
        };
        a.validate()
            .map_err(|e| anyhow::anyhow!("--rpa-adaptive {pct}: {e}"))?;
        spec.adaptive = Some(a);
    }
    let kinds = || {
        Kind::ALL
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    for s in &args.service {
        let (q, k) = match s.split_once('=') {
            Some((q, k)) => (Some(q), k),
            None => (None, s.as_str()),
        };
        let kind = Kind::parse(k).ok_or_else(|| {
            anyhow::anyhow!(
                "--service {s}: unknown service `{k}` (services: {})",
                kinds()
            )
        })?;
        match q {
            Some(q) => {
                let q: u8 = q
                    .parse()
                    .ok()
                    .filter(|&q: &u8| usize::from(q) < outcrop_rpa::observe::QUEUES)
                    .ok_or_else(|| anyhow::anyhow!("--service {s}: queue `{q}` must be 0 to 15"))?;
                spec.services.insert(q, kind);
            }
            None => {
                for qs in &spec.program.insns {
                    if let outcrop_rpa::isa::Act::Send(q) = qs.act {
                        spec.services.insert(q, kind);
                    }
                }
            }
        }
    }
    // tags: the program's own, then the command line's
    let own =
        outcrop_rv::sections::profile_tags(elf).context("reading the program's profile tags")?;
    let mut ranges = Vec::new();
    for t in &args.tag {
        let (place, tag) = t
            .rsplit_once('=')
            .ok_or_else(|| anyhow::anyhow!("--tag {t}: expected WHERE=T, e.g. --tag main=1"))?;
        let tag = parse_num(tag)
            .filter(|&t| (1..=3).contains(&t))
            .ok_or_else(|| anyhow::anyhow!("--tag {t}: the tag must be 1, 2 or 3"))?;
        let range = if let Some((lo, hi)) = place.split_once('-') {
            match (parse_num(lo), parse_num(hi)) {
                (Some(lo), Some(hi)) => (lo, hi),
                _ => anyhow::bail!("--tag {t}: `{place}` is not a range LO-HI"),
            }
        } else if let Some(a) = parse_num(place) {
            (a, a + 2)
        } else {
            let f = symbols.and_then(|s| s.named(place)).ok_or_else(|| {
                anyhow::anyhow!("--tag {t}: the program has no function `{place}`")
            })?;
            (f.start, f.end())
        };
        ranges.push((range.0, range.1, tag));
    }
    spec.tags = outcrop_rpa::tags::Tags::new(own, ranges).context("--tag")?;
    if let Some(h) = &args.gc_heap {
        let parts: Vec<&str> = h.split(':').collect();
        if !(3..=4).contains(&parts.len()) {
            anyhow::bail!(
                "--gc-heap {h}: expected ARENA:ROOTS:SIZE[:PERIOD], e.g. gc_arena:gc_roots:64"
            );
        }
        let sym = |name: &str| -> Result<(u32, u32)> {
            let (a, n) = outcrop_rv::sections::symbol(elf, name)?.ok_or_else(|| {
                anyhow::anyhow!("--gc-heap {h}: the program has no symbol `{name}`")
            })?;
            let end = a
                .checked_add(n)
                .filter(|&e| e <= u64::from(u32::MAX) && n > 0);
            match end {
                Some(_) => Ok((a as u32, n as u32)),
                None => anyhow::bail!(
                    "--gc-heap {h}: `{name}` ({a:#x}, {n} bytes) must be non-empty and below 4 GiB: records carry 32-bit addresses"
                ),
            }
        };
        let (arena, arena_len) = sym(parts[0])?;
        let (roots, roots_len) = sym(parts[1])?;
        let object_size = parse_num(parts[2])
            .and_then(|s| u32::try_from(s).ok())
            .filter(|&s| s >= 16 && s % 8 == 0)
            .ok_or_else(|| {
                anyhow::anyhow!("--gc-heap {h}: SIZE must be a multiple of 8, at least 16")
            })?;
        let period = match parts.get(3) {
            Some(p) => parse_num(p).filter(|&p| p > 0).ok_or_else(|| {
                anyhow::anyhow!("--gc-heap {h}: PERIOD must be a positive number")
            })?,
            None => 20_000,
        };
        spec.heap = Some(HeapLayout {
            arena,
            arena_len,
            object_size,
            roots,
            roots_len,
            period,
        });
    }
    Ok(Some(spec))
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

/// The report of the RPA's results, and the BOLT `.fdata` text of an edges service.
pub fn report(
    r: &outcrop_rpa::observe::RpaResult,
    program: &str,
    instructions: u64,
    lossless: bool,
    symbols: Option<&outcrop_rv::symbols::Symbols>,
    code: Option<&mut outcrop_run::CodeImage>,
    late_fills: u64,
) -> (outcrop_report::rpa::RpaReport, Option<String>) {
    use outcrop_report::rpa::{
        FdataBranch, GcReport, QueryReport, QueueReport, RpaReport, ServiceDetail,
    };
    use outcrop_rpa::services::{self, Service};
    let label = |pc: u64| match symbols.and_then(|s| s.lookup(pc)) {
        Some(f) => f.to_string(),
        None => format!("{pc:#x}"),
    };
    let rate_of = |qi: usize| {
        let q = &r.program.queries[qi];
        q.classes
            .first()
            .map_or(1, |&c| 1u64 << r.program.pct[c].rate_log2)
    };
    let queries = r
        .program
        .queries
        .iter()
        .zip(&r.queries)
        .enumerate()
        .map(|(i, (q, s))| QueryReport {
            header: header(&r.program, q),
            rate: rate_of(i),
            stats: s.clone(),
        })
        .collect();
    let mut fdata = None;
    let mut code = code;
    let mut queues = Vec::new();
    for (plan, received, service) in &r.queues {
        let exact = r.exact.get(plan.query).and_then(|e| e.as_ref());
        // one message stands for `every N` records, for the ones a full queue dropped and
        // for the ones the adaptive rate threw away
        let st = &r.queries[plan.query];
        // (a weighted service counts each sample as the throttled ones it stands for)
        let throttled = if service.weighted() { 0 } else { st.throttled };
        let rate =
            rate_of(plan.query) as f64 * (st.selected + throttled) as f64 / st.sent.max(1) as f64;
        let detail = match service {
            Service::Edges(e) => {
                let accuracy = exact.map(|x| services::edge_accuracy(&e.branches, rate, &x.edges));
                let labels = accuracy
                    .as_ref()
                    .map(|a| a.hot.iter().map(|h| label(h.pc)).collect())
                    .unwrap_or_default();
                if let Some(code) = code.as_deref_mut() {
                    // full pcs: from the exact reference when there is one, else the
                    // samples' low 32 bits (static programs live below 4 GiB)
                    let full: std::collections::HashMap<u32, u64> = exact
                        .map(|x| x.edges.keys().map(|&k| (k as u32, k)).collect())
                        .unwrap_or_default();
                    let mut pcs: Vec<(u64, services::BranchCounts)> = e
                        .branches
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
                                counts: [c.taken, c.not_taken]
                                    .map(|n| (n as f64 * rate).round() as u64),
                                mispredicted: c
                                    .mispredicted
                                    .map(|n| (n as f64 * rate).round() as u64),
                            })
                        })
                        .collect();
                    fdata = Some(outcrop_report::rpa::fdata(&branches));
                }
                ServiceDetail::Edges { accuracy, labels }
            }
            Service::Cpi(c) => {
                let group = |pc: u64| symbols.and_then(|s| s.lookup(pc)).map(|f| f.start);
                let accuracy = exact.map(|x| services::cpi_accuracy(&c.pcs, rate, &x.cpi, group));
                let (labels, group_labels) = accuracy
                    .as_ref()
                    .map(|a| {
                        (
                            a.hot.iter().map(|h| label(h.addr)).collect(),
                            a.groups
                                .iter()
                                .map(|g| {
                                    symbols.and_then(|s| s.lookup(g.addr)).map_or_else(
                                        || format!("{:#x}", g.addr),
                                        |f| f.name.to_string(),
                                    )
                                })
                                .collect(),
                        )
                    })
                    .unwrap_or_default();
                ServiceDetail::Cpi {
                    accuracy,
                    labels,
                    group_labels,
                }
            }
            Service::Gc(g) => {
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
                        rep.collector = Some(services::check_collections(
                            c.layout(),
                            &x.store_log,
                            &c.collections,
                        ));
                    }
                    (Some(_), Some(_)) => {
                        rep.collector_note = Some(format!(
                            "not checked: more than {} reference stores in the exact log",
                            outcrop_rpa::observe::MAX_STORE_LOG
                        ));
                    }
                    (None, _) => {
                        rep.collector_note =
                            Some("none (give the heap with --gc-heap to run one)".into());
                    }
                    _ => {}
                }
                ServiceDetail::Gc(rep)
            }
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
                        .map(|(pc, a)| outcrop_report::rpa::PcStride {
                            pc: label(u64::from(*pc)),
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
    (
        RpaReport {
            program: program.to_string(),
            instructions,
            lossless,
            queries,
            queues,
            counters: r
                .program
                .insns
                .iter()
                .zip(&r.counters)
                .enumerate()
                .filter(|(_, (i, _))| i.act == outcrop_rpa::isa::Act::Count)
                .map(|(k, (_, &n))| (k, n))
                .collect(),
            hardware: r.hardware.as_ref().map(|h| outcrop_report::rpa::HwSection {
                config: h.config,
                stats: h.stats.clone(),
                occupancy: h.occupancy.clone(),
                prefetch: h.prefetch.clone().map(|p| (p, late_fills)),
                adaptive: h.adaptive.clone(),
            }),
        },
        fdata,
    )
}
