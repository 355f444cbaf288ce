//! `outcrop paths record|report`: path profiles from sampled branch records (Shye et al.),
//! with accuracy against the exact path profile.

use crate::exec::{timing_config, GuestArgs};
use crate::files::write_output;
use crate::outcrop_paths::{Filter, LbrConfig, LbrUnit, Options, PeriodUnit, Weighting, HOT};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use outcrop_cli::console::{console_hooks, read_image, report_ending};
use outcrop_report::paths::PathsReport;
use outcrop_report::Report as _;
use outcrop_run::paths::{PathsAnalysis, PathsInput};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// `outcrop paths` subcommands.
#[derive(Subcommand, Debug)]
pub enum PathsCommand {
    /// Run a program with a branch-record unit attached and write its samples.
    ///
    /// The unit keeps the last N taken branches in a circular buffer (N = 4 models Itanium
    /// 2's branch trace buffer, 16/32 a modern LBR). Every P retired instructions (or P
    /// cycles with --timing) the buffer is sampled; identical traces are aggregated with
    /// counts and written to SAMPLES (a text file, docs/formats.md). Each sample is charged
    /// --handler-cycles, so the report can state the modelled overhead. The guest's stdio
    /// is passed through and its exit status returned.
    ///
    /// Examples:
    ///   outcrop paths record -o qsort.samples -- workloads/bin/qsort_ints
    ///   outcrop paths record --entries 16 --period 200000 --random-period -o s -- workloads/bin/lz
    ///   outcrop paths record --timing --period 2000000 -o s -- workloads/bin/fft
    #[command(verbatim_doc_comment)]
    Record(RecordArgs),
    /// Rebuild hot paths from samples; score them against an exact profile.
    ///
    /// The program's CFG is built from its ELF (functions from symbols, blocks from the
    /// disassembly), divided into single-entry regions with fewer than --max-paths paths.
    /// Each sample becomes partial paths (fall-through edges interpolated between records,
    /// extended to a join point above and a branch point below, split at calls, returns and
    /// back edges); each partial path is matched to the region paths containing all its
    /// edges, and its count split over them. With --exact-from (a .wpp file from
    /// `outcrop wpp record` of the same program, or a text file of block start addresses),
    /// the exact path profile over the same regions is counted and accuracy reported: Wall's
    /// weight matching (hot = flow ≥ 0.125%) and overlap.
    ///
    /// Examples:
    ///   outcrop paths report qsort.samples --binary workloads/bin/qsort_ints
    ///   outcrop wpp record -o qsort.wpp -- workloads/bin/qsort_ints
    ///   outcrop paths report qsort.samples --binary workloads/bin/qsort_ints --exact-from qsort.wpp
    ///   outcrop paths report s --binary prog --stitch --weights edges --json
    ///   outcrop paths report s --binary prog --fdata prog.fdata
    #[command(verbatim_doc_comment)]
    Report(ReportArgs),
}

/// Branch filter on the command line.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum FilterArg {
    /// Taken branches and jumps only (the paper's setting).
    Taken,
    /// Also not-taken conditional branches.
    All,
}

/// Options of `outcrop paths record`.
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// The samples file to write.
    #[arg(short = 'o', long = "output", value_name = "SAMPLES")]
    output: PathBuf,
    /// Entries in the branch buffer (4: Itanium 2; 16 or 32: a modern LBR).
    #[arg(long, value_name = "N", default_value_t = 4)]
    entries: usize,
    /// Sampling period: retired instructions, or cycles with --timing.
    #[arg(long, value_name = "P", default_value_t = 1_000_000)]
    period: u64,
    /// Randomize each period (uniform in [P/2, 3P/2)).
    #[arg(long)]
    random_period: bool,
    /// Seed of the period randomization and the injected imprecision.
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
    /// Which branches the buffer records.
    #[arg(long, value_enum, default_value_t = FilterArg::Taken)]
    filter: FilterArg,
    /// Probability that a record's source address is skewed (the paper's inexact addresses).
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    skew: f64,
    /// Largest skew, in bytes.
    #[arg(long, value_name = "B", default_value_t = 8)]
    skew_bytes: u64,
    /// Probability that a record's target is lost.
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    drop_target: f64,
    /// Modelled cost of one sample (interrupt, reading the buffer), in cycles, or a preset:
    /// `perf-lbr` (7500, modern Linux perf on LBR; the default) or `itanium2-perfmon` (24600,
    /// the paper's machine, fitted to its Figure 4; its fixed 0.75% is not included here).
    /// Sources in docs/paths.md
    #[arg(long, value_name = "C|PRESET", default_value = "perf-lbr", value_parser = parse_cost)]
    handler_cycles: u64,
    /// Run the timing model and count the period in cycles: a preset or a TOML file.
    #[arg(long, value_name = "CONFIG", num_args = 0..=1, require_equals = true,
          default_missing_value = "default")]
    timing: Option<String>,
    #[command(flatten)]
    guest: GuestArgs,
}

/// Weighting on the command line.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum WeightArg {
    /// Split a partial path's count equally over its matches (the paper).
    Equal,
    /// Split it by path likelihood under the sampled edge profile (§4.6 fix).
    Edges,
}

/// Options of `outcrop paths report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The samples file; several files of runs of the same program are merged first (the
    /// paper's §4.4 aggregation: each run keeps its own overhead, the profile gets all their
    /// samples). They must share the program and the buffer depth.
    #[arg(value_name = "SAMPLES", required = true, num_args = 1..)]
    samples: Vec<PathBuf>,
    /// The program (default: the path recorded in the samples file, if it exists).
    #[arg(long, value_name = "PROG")]
    binary: Option<PathBuf>,
    /// Exact reference: a .wpp file or a text file of block start addresses (one hex
    /// address per line, as `outcrop wpp replay` writes) of the same program and input.
    #[arg(long, value_name = "TRACE")]
    exact_from: Option<PathBuf>,
    /// The most blocks --exact-from may replay: a .wpp is a grammar, and a small file can
    /// claim a stream that would take hours to expand. Streamed, so memory does not grow
    /// with it; this bounds the time.
    #[arg(long, value_name = "N", default_value_t = crate::wpp::MAX_REPLAY_BLOCKS)]
    max_blocks: u64,
    /// Regions have fewer than this many full paths (the paper's N).
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_paths: u64,
    /// Do not extend partial paths to join and branch points.
    #[arg(long)]
    no_extend: bool,
    /// Keep what boundaries say (known path ends at back edges and exits; callers resumed
    /// across calls returning in the same sample). Beyond the paper.
    #[arg(long)]
    stitch: bool,
    /// How a partial path's count is split over its matching paths.
    #[arg(long, value_enum, default_value_t = WeightArg::Equal)]
    weights: WeightArg,
    /// Hot threshold, as a fraction of all path executions (paper: 0.00125).
    #[arg(long, value_name = "F", default_value_t = HOT)]
    hot: f64,
    /// How many of the hottest paths to list, with their disassembly.
    #[arg(long, value_name = "N", default_value_t = 10)]
    top: usize,
    /// Also write the sampled edge profile in LLVM BOLT's .fdata format.
    #[arg(long, value_name = "FILE")]
    fdata: Option<PathBuf>,
    /// Also write the branch records as BOLT's pre-aggregated profile (`B`/`F` lines;
    /// `llvm-bolt PROG -pa -p FILE -o OUT`).
    #[arg(long, value_name = "FILE")]
    bolt_preagg: Option<PathBuf>,
    /// Also write the branch records as llvm-profgen's unsymbolized profile
    /// (`llvm-profgen --binary PROG --unsymbolized-profile FILE --output OUT`).
    #[arg(long, value_name = "FILE")]
    profgen: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Read the samples (and --exact-from .wpp) even if they were recorded from a different
    /// build of the program than --binary (by GNU build-id, or a hash of the loaded code).
    #[arg(long)]
    ignore_program_id: bool,
    /// Where the shared libraries of a dynamically linked program are found (as `run
    /// --sysroot`): the objects the samples file lists are read from DIR/PATH and checked by
    /// build-id. Default: their recorded paths on this host.
    #[arg(long, value_name = "DIR")]
    sysroot: Option<PathBuf>,
}

/// Runs a `paths` subcommand.
pub fn run(cmd: PathsCommand) -> Result<ExitCode> {
    match cmd {
        PathsCommand::Record(a) => record(a),
        PathsCommand::Report(a) => report(a).map(|()| ExitCode::SUCCESS),
    }
}

fn record(args: RecordArgs) -> Result<ExitCode> {
    let config = LbrConfig {
        entries: args.entries,
        period: args.period,
        unit: if args.timing.is_some() {
            PeriodUnit::Cycles
        } else {
            PeriodUnit::Instructions
        },
        random: args.random_period,
        seed: args.seed,
        filter: match args.filter {
            FilterArg::Taken => Filter::Taken,
            FilterArg::All => Filter::All,
        },
        skew: args.skew,
        skew_bytes: args.skew_bytes,
        drop_target: args.drop_target,
        handler_cycles: args.handler_cycles,
    };
    LbrUnit::new(config.clone()).context("paths record")?;
    crate::files::check_output(&args.output)?;
    let mut run = args.guest.run_config();
    run.timing = args.timing.as_deref().map(timing_config).transpose()?;
    run.paths = vec![config];
    let image = read_image(&run.program)?;
    let s = outcrop_run::execute(&run, &image, console_hooks(run.program.stdio))?;
    report_ending(&s);
    let (code, status) = s.status();
    let Some(samples) = s.samples.first() else {
        bail!("internal: the run had no branch-record unit");
    };
    let (instructions, cycles) = (samples.meta.instructions, samples.meta.cycles);
    write_output(&args.output, |f| {
        f.write_all(samples.to_text().as_bytes())?;
        Ok(())
    })
    .with_context(|| format!("writing {}", args.output.display()))?;
    eprintln!(
        "outcrop: {status}; {} samples ({} distinct traces) of {} instructions{}, modelled overhead {:.2}% → {}",
        samples.meta.samples,
        samples.traces.len(),
        instructions,
        if cycles > 0 { format!(" / {cycles} cycles") } else { String::new() },
        100.0 * samples.overhead(),
        args.output.display()
    );
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

/// What a library call should tell the user: a warning on stderr.
pub fn warn(w: &str) {
    eprintln!("outcrop: warning: {w}");
}

fn report(args: ReportArgs) -> Result<()> {
    let input = PathsInput {
        samples: args.samples.clone(),
        binary: args.binary.clone(),
        sysroot: args.sysroot.clone(),
        exact_from: args.exact_from.clone(),
        max_blocks: args.max_blocks,
        max_paths: args.max_paths,
        options: Options {
            extend: !args.no_extend,
            stitch: args.stitch,
            ..Options::default()
        },
        weights: match args.weights {
            WeightArg::Equal => Weighting::Equal,
            WeightArg::Edges => Weighting::Edges,
        },
        hot: args.hot,
        ignore_program_id: args.ignore_program_id,
    };
    let a = PathsAnalysis::read(&input, &mut warn)?;
    for (path, text) in [
        (
            &args.fdata,
            PathsAnalysis::fdata as fn(&PathsAnalysis) -> String,
        ),
        (&args.bolt_preagg, PathsAnalysis::bolt_preaggregated),
        (&args.profgen, PathsAnalysis::profgen),
    ] {
        if let Some(path) = path {
            let text = text(&a);
            write_output(path, |f| {
                f.write_all(text.as_bytes())?;
                Ok(())
            })
            .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    let rep = PathsReport::new(&a, args.top);
    let text = if args.json {
        rep.to_json()
    } else {
        rep.to_text()
    };
    std::io::stdout()
        .lock()
        .write_all(crate::outcrop_events::escape::text(&text).as_bytes())?;
    Ok(())
}

/// `--handler-cycles`: a number of cycles or a cost preset's name.
fn parse_cost(s: &str) -> Result<u64, String> {
    if let Some(m) = crate::outcrop_sampling::CostModel::preset(s) {
        return Ok(m.cycles_per_sample);
    }
    s.parse().map_err(|_| {
        format!("expected cycles per sample or a preset (perf-lbr, itanium2-perfmon), not {s:?}")
    })
}
