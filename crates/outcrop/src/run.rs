//! `outcrop run --rap STREAM,... -- PROG`: run a guest with RAP trees over its event streams
//! (the RAP paper's §4 studies on the built-in machine).

use crate::exec::{load_guest, outcome_status, print_timing, timing_config, Guest, GuestArgs};
use crate::rap::write_hot_table;
use anyhow::{Context, Result};
use clap::Args;
use outcrop::streams::{RapProfiler, Stream, StreamProfile};
use outcrop_rap::{AccuracyReport, Config, HotRange};
use outcrop_rv::symbols::Symbols;
use outcrop_timing::Timed;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

fn parse_stream(s: &str) -> Result<Stream, String> {
    Stream::parse(s).ok_or_else(|| {
        let names: Vec<&str> = Stream::ALL.iter().map(|s| s.name()).collect();
        format!("unknown stream `{s}` (streams: {})", names.join(", "))
    })
}

/// Options of `outcrop run` (help text on `Command::Run` in main.rs).
#[derive(Args, Debug)]
pub struct RunArgs {
    /// RAP streams to profile, comma-separated: pc, block, load-value, load-addr, store-addr,
    /// l1d-miss-value, l2-miss-value, l1d-miss-pc, narrow-pc, zero-load-addr.
    #[arg(long, value_name = "STREAM[,STREAM...]", value_delimiter = ',', required = true,
          value_parser = parse_stream)]
    rap: Vec<Stream>,

    /// Error bound ε of every tree (a fraction of the stream length).
    #[arg(long, value_name = "E", default_value_t = 0.01)]
    eps: f64,

    /// Branching factor b of the trees (2, 4, 8 or 16).
    #[arg(long, value_name = "B", default_value_t = 4)]
    branching: u8,

    /// Hot-range threshold as a fraction of each stream (RAP §4.1).
    #[arg(long, value_name = "F", default_value_t = 0.1)]
    hot: f64,

    /// Also count every stream exactly: percent error of each hot range (RAP Figure 8).
    #[arg(long)]
    exact: bool,

    /// Timing model for the cache streams: a preset or a TOML file (default: `default` when a
    /// cache stream is asked for; otherwise no timing unless given).
    #[arg(long, value_name = "CONFIG", num_args = 0..=1, require_equals = true,
          default_missing_value = "default")]
    timing: Option<String>,

    /// Write the report as JSON.
    #[arg(long)]
    json: bool,

    /// Write the report to FILE instead of stdout (where the guest's output also goes).
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,

    #[command(flatten)]
    guest: GuestArgs,
}

#[derive(Serialize)]
struct HotJson<'a> {
    #[serde(flatten)]
    range: &'a HotRange,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exact_inclusive: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exclusive_error_pct: Option<f64>,
}

#[derive(Serialize)]
struct StreamJson<'a> {
    stream: &'static str,
    description: &'static str,
    n: u64,
    nodes: u64,
    max_nodes: u64,
    mean_nodes: f64,
    merge_batches: u64,
    split_threshold: u64,
    hot: Vec<HotJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_error_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mean_error_pct: Option<f64>,
    /// `[n, nodes]`: periodic samples and both sides of every merge batch.
    sizes: &'a [(u64, u64)],
}

#[derive(Serialize)]
struct RunJson<'a> {
    program: String,
    instructions: u64,
    exit_code: i32,
    outcome: String,
    wall_seconds: f64,
    eps: f64,
    branching: u8,
    hot_fraction: f64,
    timing: Option<outcrop_timing::Totals>,
    streams: Vec<StreamJson<'a>>,
}

/// One stream's finished results.
struct Finished<'a> {
    profile: &'a StreamProfile,
    hot: Vec<HotRange>,
    accuracy: Option<AccuracyReport>,
    labels: Option<Vec<String>>,
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let config = Config::builder()
        .eps(args.eps)
        .branching(args.branching)
        .build()
        .context("RAP configuration")?;
    if !(args.hot > 0.0 && args.hot <= 1.0) {
        anyhow::bail!("--hot {}: must be in (0, 1]", args.hot);
    }
    let needs_timing = args.rap.iter().any(|s| s.needs_timing());
    let timing_spec = args
        .timing
        .clone()
        .or_else(|| needs_timing.then(|| "default".to_string()));
    let timing = timing_spec.as_deref().map(timing_config).transpose()?;
    let Guest {
        mut machine,
        path,
        elf,
    } = load_guest(&args.guest)?;
    let symbols = if args.rap.iter().any(|s| s.is_code()) {
        match Symbols::from_elf(&elf) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("outcrop: warning: no function names for code ranges: {e}");
                None
            }
        }
    } else {
        None
    };

    let mut prof = RapProfiler::new(&args.rap, &config, args.exact);
    let start = std::time::Instant::now();
    let (outcome, totals) = match &timing {
        Some(cfg) => {
            let mut timed = Timed::new(cfg, prof);
            let outcome = machine.run(&mut timed);
            timed.finish();
            let totals = timed.totals();
            prof = timed.inner;
            (outcome, Some(totals))
        }
        None => (machine.run(&mut prof), None),
    };
    let wall = start.elapsed().as_secs_f64();
    let _ = machine.kernel.flush();
    prof.finish().context("RAP update")?;

    let (code, outcome_text) = outcome_status(outcome, &machine);
    if let Some(t) = &totals {
        print_timing(t);
    }

    let mut finished = Vec::new();
    for p in &prof.profiles {
        let hot = p.tree.hot_ranges(args.hot)?;
        let accuracy = p
            .exact
            .as_ref()
            .map(|e| outcrop_rap::accuracy(&hot, &e.finish()));
        let labels = match (&symbols, p.stream.is_code()) {
            (Some(sym), true) => Some(hot.iter().map(|h| sym.describe_range(h.lo, h.hi)).collect()),
            _ => None,
        };
        finished.push(Finished {
            profile: p,
            hot,
            accuracy,
            labels,
        });
    }

    let mut buf = Vec::new();
    if args.json {
        let streams = finished.iter().map(stream_json).collect();
        let report = RunJson {
            program: path.display().to_string(),
            instructions: machine.instret,
            exit_code: code,
            outcome: outcome_text,
            wall_seconds: wall,
            eps: args.eps,
            branching: args.branching,
            hot_fraction: args.hot,
            timing: totals,
            streams,
        };
        serde_json::to_writer_pretty(&mut buf, &report)?;
        writeln!(buf)?;
    } else {
        writeln!(
            buf,
            "RAP on {}: {} instructions, ε = {}, b = {}, hot ≥ {}% ({outcome_text})",
            path.display(),
            machine.instret,
            args.eps,
            args.branching,
            100.0 * args.hot
        )?;
        for f in &finished {
            write_stream(&mut buf, f)?;
        }
    }
    match &args.output {
        Some(file) => crate::files::write_output(file, |w| Ok(w.write_all(&buf)?))
            .with_context(|| format!("writing {}", file.display()))?,
        None => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            out.write_all(&buf)?;
            out.flush()?;
        }
    }
    Ok(ExitCode::from((code & 0xff) as u8))
}

fn stream_json<'a>(f: &'a Finished<'a>) -> StreamJson<'a> {
    let p = f.profile;
    let hot = f
        .hot
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let acc = f.accuracy.as_ref().map(|a| &a.ranges[i]);
            HotJson {
                range: h,
                code: f.labels.as_ref().map(|l| l[i].clone()),
                exact_inclusive: acc.map(|a| a.exact_inclusive),
                error_pct: acc.map(|a| a.error_pct),
                exclusive_error_pct: acc.map(|a| a.exclusive_error_pct),
            }
        })
        .collect();
    StreamJson {
        stream: p.stream.name(),
        description: p.stream.description(),
        n: p.tree.n(),
        nodes: p.tree.node_count(),
        max_nodes: p.max_nodes(),
        mean_nodes: p.mean_nodes(),
        merge_batches: p.tree.stats().merge_batches,
        split_threshold: p.tree.split_threshold(),
        hot,
        max_error_pct: f.accuracy.as_ref().map(|a| a.max_error_pct),
        mean_error_pct: f.accuracy.as_ref().map(|a| a.mean_error_pct),
        sizes: &p.sizes,
    }
}

fn write_stream(out: &mut impl Write, f: &Finished<'_>) -> Result<()> {
    let p = f.profile;
    writeln!(
        out,
        "\n== {} ({}) ==",
        p.stream.name(),
        p.stream.description()
    )?;
    writeln!(
        out,
        "n = {} events; tree: {} nodes now, {} max, {:.1} mean (RAP Figure 7), {} merge batches",
        p.tree.n(),
        p.tree.node_count(),
        p.max_nodes(),
        p.mean_nodes(),
        p.tree.stats().merge_batches
    )?;
    if p.tree.n() == 0 {
        writeln!(out, "  (empty stream)")?;
        return Ok(());
    }
    write_hot_table(out, 64, &f.hot, f.accuracy.as_ref(), f.labels.as_deref())?;
    if f.hot.is_empty() {
        writeln!(out, "  (no hot ranges)")?;
    }
    if let Some(a) = &f.accuracy {
        writeln!(
            out,
            "percent error vs exact counts (RAP Figure 8): max {:.3}%, mean {:.3}%",
            a.max_error_pct, a.mean_error_pct
        )?;
        let merges: Vec<String> = p
            .tree
            .merge_log()
            .iter()
            .map(|m| format!("{}→{}@{}", m.nodes_before, m.nodes_after, m.n))
            .collect();
        writeln!(
            out,
            "tree size at merge batches, before→after@n (RAP Figure 6): {}",
            merges.join(" ")
        )?;
    }
    Ok(())
}
