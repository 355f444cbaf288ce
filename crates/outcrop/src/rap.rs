//! `outcrop rap`: Range Adaptive Profiling of a value stream from a file, stdin or a demo
//! generator; hot ranges as text or JSON, optional exact check, tree dump and hardware sizing.

use crate::input::{self, Demo, InputFormat};
use crate::outcrop_rap::{bound, Config, ExactCounts, HardwareModel, RapTree, SplitPolicy};
use anyhow::{Context, Result};
use clap::Args;
use outcrop_report::rap_tree::TreeReport;
use std::io::Write;
use std::path::PathBuf;

/// Options of `outcrop rap` (the help text is on `Command::Rap` in main.rs).
#[derive(Args, Debug)]
pub struct RapArgs {
    /// Input file, or `-` for stdin. Omit with --demo.
    #[arg(value_name = "FILE", conflicts_with = "demo")]
    file: Option<PathBuf>,

    /// Error bound ε in (0, 1]: every node-aligned range estimate is within ε·n of the truth.
    #[arg(long, default_value_t = 0.01, value_name = "E")]
    eps: f64,

    /// Branching factor b: sub-ranges created by a split (2, 4, 8 or 16).
    #[arg(long, default_value_t = 4, value_name = "B")]
    branching: u8,

    /// Universe size in bits: values must be below 2^N.
    #[arg(long, default_value_t = 64, value_name = "N")]
    bits: u8,

    /// Report ranges holding at least this fraction of all events (RAP §4.1 hot ranges).
    #[arg(long, default_value_t = 0.10, value_name = "F")]
    hot: f64,

    /// Run the first merge batch after this many events.
    #[arg(long, default_value_t = 1024, value_name = "E")]
    first_merge: u64,

    /// Ratio q between consecutive merge intervals (≥ 2).
    #[arg(long, default_value_t = 2, value_name = "Q")]
    merge_ratio: u32,

    /// What a split creates: `full` = all b sub-ranges (the paper), `lazy` = only the one the
    /// event falls in (beyond the paper; same guarantees, fewer nodes on spread-out streams).
    #[arg(long, value_enum, default_value = "full", value_name = "POLICY")]
    split: Split,

    /// Input format; by default `.otr` files and inputs starting with the trace magic are
    /// traces, `.u64`/`.bin` files raw little-endian, anything else text.
    #[arg(long, value_enum, value_name = "FORMAT")]
    input_format: Option<InputFormat>,

    /// Profile a generated demo stream instead of a file.
    #[arg(long, value_enum, value_name = "KIND")]
    demo: Option<Demo>,

    /// Length of the demo stream.
    #[arg(
        long,
        default_value_t = 10_000_000,
        value_name = "N",
        requires = "demo"
    )]
    events: u64,

    /// Seed of the demo stream.
    #[arg(long, default_value_t = 1, value_name = "S", requires = "demo")]
    seed: u64,

    /// Add events one at a time instead of through the stage-0 combining buffer (RAP §3.3).
    #[arg(long)]
    no_combine: bool,

    /// Also count exactly, and print each hot range's percent error (RAP Figure 8 metric).
    #[arg(long)]
    exact: bool,

    /// Print the whole tree: hex ranges indented by depth, with counts.
    #[arg(long)]
    dump: bool,

    /// Print the hardware sizing of the pipelined RAP engine (RAP §3.3–3.4).
    #[arg(long)]
    hardware: bool,

    /// Write the final tree to FILE: JSON if it ends in `.json`, else the compact binary form.
    #[arg(long, value_name = "FILE")]
    save_tree: Option<PathBuf>,

    /// Print machine-readable JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// `--split` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Split {
    Full,
    Lazy,
}

pub fn run(args: RapArgs) -> Result<()> {
    let config = Config::builder()
        .eps(args.eps)
        .branching(args.branching)
        .bits(args.bits)
        .first_merge(args.first_merge)
        .merge_ratio(args.merge_ratio)
        .split_policy(match args.split {
            Split::Full => SplitPolicy::Full,
            Split::Lazy => SplitPolicy::Lazy,
        })
        .build()?;
    if !(args.hot.is_finite() && args.hot > 0.0 && args.hot <= 1.0) {
        anyhow::bail!("--hot must be in (0, 1], got {}", args.hot);
    }
    let mut input = match args.demo {
        Some(kind) => input::demo(kind, args.events, args.seed),
        None => input::open(args.file.as_deref(), args.input_format)?,
    };
    let bar = input::progress(&input);
    let mut counter = crate::outcrop_rap::RapCounter::new(config);
    let mut exact = args.exact.then(ExactCounts::new);
    let name = input.name.clone();
    let mut rap_time = std::time::Duration::ZERO;
    input::for_each_batch(&mut input, &bar, |first, values| {
        let start = std::time::Instant::now();
        let added = if args.no_combine {
            values.iter().try_for_each(|&v| counter.add(v))
        } else {
            counter.add_batch(values)
        };
        rap_time += start.elapsed();
        added.map_err(|e| locate_error(e, first, values, config.bits(), &name))?;
        if let Some(exact) = exact.as_mut() {
            values.iter().for_each(|&v| exact.add(v));
        }
        anyhow::Ok(())
    })?;
    let (start, tree) = (std::time::Instant::now(), counter.into_tree()?);
    let seconds = (rap_time + start.elapsed()).as_secs_f64();
    let hot = tree.hot_ranges(args.hot)?;
    let accuracy = exact.map(|e| crate::outcrop_rap::accuracy(&hot, &e.finish()));
    let hardware = HardwareModel::default().report(&tree);
    if let Some(path) = &args.save_tree {
        save_tree(&tree, path)?;
    }
    let report = TreeReport {
        input: &name,
        n: tree.n(),
        eps: config.eps(),
        branching: config.branching(),
        bits: config.bits(),
        split: config.split_policy(),
        hot_fraction: args.hot,
        combined: !args.no_combine,
        split_threshold: tree.split_threshold(),
        nodes: tree.node_count(),
        peak_nodes: tree.peak_nodes(),
        bytes: tree.bytes(),
        peak_bytes: tree.peak_nodes() * RapTree::node_size(),
        node_bound_now: tree.node_bound(),
        node_bound_steady: bound::steady_state_bounds(&config),
        merge_batches: tree.stats().merge_batches,
        hot: &hot,
        accuracy: accuracy.as_ref(),
        hardware,
        merge_log: tree.merge_log(),
    };
    // Timing goes to stderr so that stdout is byte-identical for the same input.
    if !args.json {
        eprintln!(
            "time in RAP updates: {seconds:.3} s, {:.1} M events/s (excludes reading input and --exact)",
            tree.n() as f64 / seconds.max(1e-9) / 1e6
        );
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        out.write_all(report.to_json().as_bytes())?;
    } else {
        let text = report.to_text(args.hardware);
        out.write_all(crate::outcrop_events::escape::text(&text).as_bytes())?;
        if args.dump {
            writeln!(out, "\ntree:")?;
            out.write_all(tree.ascii_dump().as_bytes())?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Names the offending value of a failed batch.
fn locate_error(
    e: crate::outcrop_rap::Error,
    first: u64,
    values: &[u64],
    bits: u8,
    name: &str,
) -> anyhow::Error {
    if let crate::outcrop_rap::Error::ValueOutOfRange { value, .. } = e {
        if let Some(i) = values.iter().position(|&v| v == value) {
            return anyhow::anyhow!(
                "{name}: value #{} ({value:#x}) is outside the {bits}-bit universe (raise --bits)",
                first + i as u64 + 1
            );
        }
    }
    anyhow::Error::new(e).context(format!("{name}: after {first} values"))
}

fn save_tree(tree: &RapTree, path: &std::path::Path) -> Result<()> {
    let json = path.extension().is_some_and(|e| e == "json");
    crate::files::write_output(path, |f| {
        if json {
            serde_json::to_writer(&mut *f, &tree.to_json())?;
        } else {
            f.write_all(&tree.to_bytes())?;
        }
        Ok(())
    })
    .with_context(|| format!("saving the tree to {}", path.display()))
}
