//! `outcrop query`: the Relational Profiling Architecture's query language
//! (`outcrop_rpa`; docs/rpa.md). `check FILE` parses and assembles a query file and reports
//! the first problem as a compiler would; `asm FILE` prints the profile control table and the
//! encoded query instructions with their disassembly.

use crate::files::{read_text_bounded, MAX_CONFIG_BYTES};
use anyhow::Result;
use clap::{Args, Subcommand};
use outcrop_report::query::QueryCheck;
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
    let src = read_text_bounded(&a.file, "query file", MAX_CONFIG_BYTES);
    if !a.json {
        src.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let check = QueryCheck::new(
        &a.file.display().to_string(),
        src.map_err(|e| e.to_string()),
    );
    let mut out = std::io::stdout().lock();
    if a.json {
        writeln!(out, "{:#}", check.json())?;
    } else if let Some(text) = check.text(asm) {
        write!(out, "{text}")?;
    } else if let Some(d) = check.diagnostic() {
        eprint!("{}", crate::outcrop_events::escape::text(&d));
    }
    out.flush()?;
    Ok(if check.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
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
pub fn load_program(path: &std::path::Path) -> Result<crate::outcrop_rpa::Assembled> {
    let src = read_text_bounded(path, "query file", MAX_CONFIG_BYTES)?;
    let name = path.display().to_string();
    crate::outcrop_rpa::parse(&src)
        .and_then(|p| crate::outcrop_rpa::assemble(&p))
        .map_err(|d| anyhow::anyhow!("{}", crate::outcrop_rpa::render(&d, &name, &src).trim_end()))
}

fn parse_num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

impl RpaArgs {
    /// The one conversion of these options: the RPA's part of a run (`None` without
    /// `--query`). The query file is read and assembled here; names of functions and heap
    /// symbols are looked up in the program when the run starts.
    pub fn config(&self) -> Result<Option<outcrop_run::RpaConfig>> {
        use crate::outcrop_rpa::services::Kind;
        use outcrop_run::{GcHeap, TagPlace};
        let Some(path) = &self.query else {
            return Ok(None);
        };
        let mut c = outcrop_run::RpaConfig::new(load_program(path)?);
        c.seed = self.query_seed;
        c.capacity = self.queue_capacity;
        if let Some(h) = &self.rpa_hw {
            let mut hw = crate::outcrop_rpa::hw::HwConfig::parse(h)
                .map_err(|e| anyhow::anyhow!("--rpa-hw {h}: {e}"))?;
            hw.cheap = self.rpa_cheap;
            hw.service_cycles = self.rpa_service_cycles;
            hw.validate()
                .map_err(|e| anyhow::anyhow!("--rpa-service-cycles: {e}"))?;
            c.hardware = Some(hw);
        }
        if let Some(latency) = self.rpa_prefetch {
            let p = crate::outcrop_rpa::prefetch::PrefetchConfig {
                latency,
                degree: self.rpa_prefetch_degree,
                ..Default::default()
            };
            p.validate()
                .map_err(|e| anyhow::anyhow!("--rpa-prefetch: {e}"))?;
            c.prefetch = Some(p);
        }
        if let Some(pct) = self.rpa_adaptive {
            if !(0.0..=100.0).contains(&pct) {
                anyhow::bail!(
                    "--rpa-adaptive {pct}: a percentage of the window's cycles, from 0 to 100"
                );
            }
            let a = crate::outcrop_rpa::hw::AdaptiveConfig {
                budget: pct / 100.0,
                ..Default::default()
            };
            a.validate()
                .map_err(|e| anyhow::anyhow!("--rpa-adaptive {pct}: {e}"))?;
            c.adaptive = Some(a);
        }
        for s in &self.service {
            let (q, k) = match s.split_once('=') {
                Some((q, k)) => (Some(q), k),
                None => (None, s.as_str()),
            };
            let kind = Kind::parse(k).ok_or_else(|| {
                let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                anyhow::anyhow!(
                    "--service {s}: unknown service `{k}` (services: {})",
                    kinds.join(", ")
                )
            })?;
            let queue = q
                .map(|q| {
                    q.parse()
                        .ok()
                        .filter(|&q: &u8| usize::from(q) < crate::outcrop_rpa::observe::QUEUES)
                        .ok_or_else(|| {
                            anyhow::anyhow!("--service {s}: queue `{q}` must be 0 to 15")
                        })
                })
                .transpose()?;
            c.services.push((queue, kind));
        }
        for t in &self.tag {
            let (place, tag) = t
                .rsplit_once('=')
                .ok_or_else(|| anyhow::anyhow!("--tag {t}: expected WHERE=T, e.g. --tag main=1"))?;
            let tag = parse_num(tag)
                .filter(|&t| (1..=3).contains(&t))
                .ok_or_else(|| anyhow::anyhow!("--tag {t}: the tag must be 1, 2 or 3"))?;
            let place = if let Some((lo, hi)) = place.split_once('-') {
                match (parse_num(lo), parse_num(hi)) {
                    (Some(lo), Some(hi)) => TagPlace::Range(lo, hi),
                    _ => anyhow::bail!("--tag {t}: `{place}` is not a range LO-HI"),
                }
            } else if let Some(a) = parse_num(place) {
                TagPlace::Address(a)
            } else {
                TagPlace::Function(place.to_string())
            };
            c.tags.push((place, tag as u8));
        }
        if let Some(h) = &self.gc_heap {
            let parts: Vec<&str> = h.split(':').collect();
            if !(3..=4).contains(&parts.len()) {
                anyhow::bail!(
                    "--gc-heap {h}: expected ARENA:ROOTS:SIZE[:PERIOD], e.g. gc_arena:gc_roots:64"
                );
            }
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
            c.gc_heap = Some(GcHeap {
                arena: parts[0].to_string(),
                roots: parts[1].to_string(),
                object_size,
                period,
            });
        }
        Ok(Some(c))
    }
}
