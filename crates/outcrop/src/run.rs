//! `outcrop run [--rap STREAMS] [--wpp FILE] [--paths N[:P]] [--timing] -- PROG`: one run of a
//! guest with any set of mechanisms attached (RAP trees over its event streams, the
//! whole-program capture, a branch-record unit), each result equal to its own command's.

use crate::exec::{timing_config, GuestArgs};
use outcrop_cli::outputs::{run_once, suite, RunFiles};

use crate::outcrop_rap::observe::{RapSpec, Stream};
use crate::outcrop_rap::Config;
use crate::wpp::CaptureArgs;
use anyhow::{Context, Result};
use clap::Args;
use outcrop_run::RunConfig;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn parse_stream(s: &str) -> Result<Stream, String> {
    Stream::parse(s).ok_or_else(|| {
        let names: Vec<&str> = Stream::ALL.iter().map(|s| s.name()).collect();
        format!("unknown stream `{s}` (streams: {})", names.join(", "))
    })
}

/// `--paths ENTRIES[:PERIOD]`.
fn parse_paths(s: &str) -> Result<(usize, Option<u64>), String> {
    let (e, p) = match s.split_once(':') {
        Some((e, p)) => (e, Some(p)),
        None => (s, None),
    };
    let entries = e
        .parse::<usize>()
        .map_err(|_| format!("`{s}`: ENTRIES must be a number (e.g. 16 or 16:100000)"))?;
    let period = p
        .map(|p| {
            p.parse::<u64>()
                .map_err(|_| format!("`{s}`: PERIOD must be a number (e.g. 16:100000)"))
        })
        .transpose()?;
    Ok((entries, period))
}

/// Options of `outcrop run` (help text on `Command::Run` in main.rs).
#[derive(Args, Debug)]
pub struct RunArgs {
    /// RAP streams to profile, comma-separated: pc, block, load-value, load-addr, store-addr,
    /// l1d-miss-value, l2-miss-value, l1d-miss-pc, narrow-pc, zero-load-addr.
    #[arg(long, value_name = "STREAM[,STREAM...]", value_delimiter = ',',
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

    /// Also build a tree per guest thread for every --rap stream (each thread's events
    /// only), reported after the whole program's.
    #[arg(long, requires = "rap")]
    rap_per_thread: bool,

    /// Record the whole-program profile (paths and strata) into FILE, as `wpp record -o FILE`.
    #[arg(long, value_name = "FILE")]
    wpp: Option<PathBuf>,

    /// Sample branch records with a unit of ENTRIES entries every PERIOD instructions (cycles
    /// with --timing; default 1000000), as `paths record --entries ENTRIES --period PERIOD`.
    /// The samples file goes to --samples FILE or, with --report, DIR/branch.samples.
    #[arg(long, value_name = "ENTRIES[:PERIOD]", value_parser = parse_paths)]
    paths: Option<(usize, Option<u64>)>,

    /// Where --paths writes its samples file.
    #[arg(long, value_name = "FILE", requires = "paths")]
    samples: Option<PathBuf>,

    /// Timing model: a preset or a TOML file (default: `default` when a cache stream is asked
    /// for; otherwise no timing unless given).
    #[arg(long, value_name = "CONFIG", num_args = 0..=1, require_equals = true,
          default_missing_value = "default")]
    timing: Option<String>,

    /// Write the report as JSON: the RAP report with --rap, the exact profile otherwise.
    #[arg(long)]
    json: bool,

    /// Write the report (the profile, then RAP; or the JSON) to FILE, or to stdout with `-o -`.
    /// Default: stderr, so that the guest's own output on stdout is left untouched.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,

    /// Write every mechanism's results and the run's statistics as JSON files into DIR
    /// (created if missing): run.json, rap.json, wpp.json, paths.json, branch.samples.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,

    /// No progress bar (it is shown only when stderr is a terminal anyway).
    #[arg(long)]
    no_progress: bool,

    /// Skip the exact profile by function, call chain and line (made on every run otherwise;
    /// docs/BENCHMARKS.md gives its cost).
    #[arg(long)]
    no_profile: bool,

    /// The profile's timeline: a mark every N retired instructions (N cycles with --timing)
    /// with the counts so far and the call chain on top of the stack; shown on the page as a
    /// strip, and in profile.firefox.json as samples with times. 0: no timeline.
    #[arg(long, value_name = "N", default_value_t = outcrop_run::DEFAULT_TIMELINE)]
    timeline: u64,

    /// Find the run's phases: a basic-block vector every N retired instructions (default
    /// 1,000,000), clustered as `outcrop phases` does; the page shows them as a strip and a
    /// table per phase (share, hottest functions, and with --timing CPI and misses per
    /// phase), report.json lists them.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "1000000", require_equals = true)]
    phases: Option<u64>,

    /// Observe only retired instructions A to B (exclusive) of the same deterministic run:
    /// the guest runs to A with nothing attached, every mechanism (profile, RAP, paths, wpp,
    /// queries, the timing model, started cold) observes A..B, and the guest runs on to its
    /// end unobserved. `A..` and `..B` are open; counts take k, M or G (`10M..25M`). Find A
    /// and B on the page's timeline strip or in the Firefox Profiler file.
    #[arg(long, value_name = "A..B", value_parser = parse_range)]
    range: Option<(u64, u64)>,

    #[command(flatten, next_help_heading = "Whole-program capture (with --wpp)")]
    capture: CaptureArgs,

    #[command(
        flatten,
        next_help_heading = "Relational profiling (with --query; docs/rpa.md)"
    )]
    rpa: crate::query::RpaArgs,

    #[command(flatten)]
    guest: GuestArgs,
}

impl RunArgs {
    /// The one conversion of these options: the run they ask for, of `command`. A cache
    /// stream turns the timing model on (`default`) when no `--timing` is given.
    fn config(&self, command: Vec<std::ffi::OsString>, wpp: bool) -> Result<RunConfig> {
        let mut config = self.guest.run_config();
        config.program.command = command;
        let needs_timing = self.rap.iter().any(|s| s.needs_timing());
        let timing = self
            .timing
            .clone()
            .or_else(|| needs_timing.then(|| "default".to_string()));
        config.timing = timing.as_deref().map(timing_config).transpose()?;
        config.classes = true;
        config.profile = !self.no_profile;
        config.timeline = self.timeline;
        config.range = self.range;
        config.phases = self.phases.unwrap_or(0);
        if !self.rap.is_empty() {
            let tree = Config::builder()
                .eps(self.eps)
                .branching(self.branching)
                .build()
                .context("RAP configuration")?;
            let mut spec = RapSpec::new(&self.rap, tree, self.exact);
            spec.hot = self.hot;
            spec.per_thread = self.rap_per_thread;
            config.rap = Some(spec);
        }
        if let Some((entries, period)) = self.paths {
            config.paths = vec![config.lbr(entries, period)];
        }
        if wpp {
            config.wpp = Some(self.capture.options()?);
        }
        config.rpa = self.rpa.config()?;
        config.validate()?;
        Ok(config)
    }
}

/// `A..B`, `A..` or `..B`, each count a decimal integer with an optional k, M or G
/// (thousand, million, billion) and `_` or `,` between digits.
fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let Some((a, b)) = s.split_once("..") else {
        return Err(format!(
            "`{s}` is not a range: A..B (instructions; `10M..25M`, `A..`, `..B`)"
        ));
    };
    let count = |t: &str, default: u64| -> Result<u64, String> {
        let t = t.trim();
        if t.is_empty() {
            return Ok(default);
        }
        let (digits, scale) = match t.chars().last() {
            Some('k' | 'K') => (&t[..t.len() - 1], 1_000u64),
            Some('M') => (&t[..t.len() - 1], 1_000_000),
            Some('G') => (&t[..t.len() - 1], 1_000_000_000),
            _ => (t, 1),
        };
        let clean: String = digits.chars().filter(|c| *c != '_' && *c != ',').collect();
        clean
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(scale))
            .ok_or_else(|| {
                format!(
                    "`{t}` is not an instruction count (e.g. 1500000, 1.5M is not accepted: 1500k)"
                )
            })
    };
    let (a, b) = (count(a, 0)?, count(b, u64::MAX)?);
    if a >= b {
        return Err(format!(
            "the range {a}..{b} is empty: its start must be below its end"
        ));
    }
    Ok((a, b))
}

pub fn run(mut args: RunArgs) -> Result<ExitCode> {
    if args.guest.command.is_empty() {
        if args.range.is_some() {
            anyhow::bail!("--range needs a program: it is a window of one run");
        }
        return all_workloads(args);
    }
    let samples = args.samples.clone().or_else(|| {
        args.paths
            .and(args.report.as_ref())
            .map(|d| d.join("branch.samples"))
    });
    if args.paths.is_some() && samples.is_none() {
        anyhow::bail!(
            "--paths needs somewhere to write its samples file: --samples FILE or --report DIR"
        );
    }
    let config = args.config(args.guest.command.clone(), args.wpp.is_some())?;
    let code = run_once(
        &config,
        RunFiles {
            output: args.output.take(),
            json: args.json,
            wpp: args.wpp.take(),
            samples,
            report: args.report.clone(),
            fdata: args.rpa.fdata.clone(),
            progress: !args.no_progress,
        },
    )?;
    Ok(ExitCode::from((code & 0xff) as u8))
}

/// `outcrop run` with no program: every bundled workload with every mechanism (RAP over
/// blocks and pcs, the whole-program capture, a 16-entry branch-record unit, the timing model),
/// each into `DIR/NAME/` (`--report DIR`, default `outcrop-report`), and `DIR/suite.json`.
fn all_workloads(mut args: RunArgs) -> Result<ExitCode> {
    let dir = args
        .report
        .clone()
        .unwrap_or_else(|| PathBuf::from("outcrop-report"));
    let workloads = std::env::var_os("OUTCROP_WORKLOADS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("workloads"));
    let manifest = outcrop_studies::Manifest::load(&workloads).with_context(|| {
        format!(
            "no program given, so outcrop run profiles the bundled workloads, but {} is missing or unreadable: run it from the repository root, set OUTCROP_WORKLOADS, or give a program after --",
            workloads.join("manifest.toml").display()
        )
    })?;
    if args.rap.is_empty() {
        args.rap = vec![Stream::Block, Stream::Pc];
    }
    if args.paths.is_none() {
        args.paths = Some((16, None));
    }
    if args.timing.is_none() {
        args.timing = Some("default".into());
    }
    // the workloads read their inputs relative to their own directory: every path given on
    // the command line is made absolute before moving there
    let dir = std::path::absolute(&dir)?;
    if let Some(t) = args.timing.as_mut() {
        if Path::new(t.as_str()).exists() {
            *t = std::path::absolute(t.as_str())?
                .to_string_lossy()
                .into_owned();
        }
    }
    for p in args
        .guest
        .allow
        .iter_mut()
        .chain(args.guest.allow_rw.iter_mut())
    {
        *p = std::path::absolute(&*p)?;
    }
    let workloads = std::path::absolute(&workloads)?;
    std::env::set_current_dir(&workloads)
        .with_context(|| format!("cannot enter {}", workloads.display()))?;
    args.guest.allow_rw.push(workloads.clone());
    suite(&manifest, &dir, args.json, !args.no_progress, |command| {
        args.config(command, true)
    })?;
    Ok(ExitCode::SUCCESS)
}
