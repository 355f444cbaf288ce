//! `outcrop run [--rap STREAMS] [--wpp FILE] [--paths N[:P]] [--timing] -- PROG`: one run of a
//! guest with any set of mechanisms attached (RAP trees over its event streams, the
//! whole-program capture, a branch-record unit), each result equal to its own command's.

use crate::exec::{outcome_status, print_timing, timing_config, Guest, GuestArgs};
use crate::files::{check_output, write_output};
use crate::wpp::CaptureArgs;
use anyhow::{Context, Result};
use clap::Args;
use outcrop_rap::observe::{RapSpec, Stream};
use outcrop_rap::Config;
use outcrop_report::html::{run_page, IndexRow, RapSection, RunPage};
use outcrop_report::profile::{firefox, folded, speedscope, ProfileReport};
use outcrop_report::run_dir::{PathsSummary, RunSummary, SuiteEntry, WppSummary};
use outcrop_report::Report as _;
use outcrop_report::{RapRunReport, StreamReport};
use outcrop_run::{Run, WppSpec};
use outcrop_rv::inst::Class;
use outcrop_rv::symbols::Symbols;
use outcrop_sampling::{LbrConfig, PeriodUnit};
use std::io::{IsTerminal, Write};
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

/// Writes `bytes` to `path`, a file of a report directory Outcrop owns: atomically, and a
/// symlink at the name is replaced, not followed (a directory may be an untrusted checkout).
fn save_in_report(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::files::write_report_file(path, |f| Ok(f.write_all(bytes)?))
        .with_context(|| format!("writing {}", path.display()))
}

/// Writes `bytes` to `path` (atomically; see files.rs).
fn save(path: &Path, bytes: &[u8]) -> Result<()> {
    write_output(path, |f| Ok(f.write_all(bytes)?))
        .with_context(|| format!("writing {}", path.display()))
}

/// Where the console report (the profile, then RAP; or JSON) goes.
enum Console {
    /// The default: stdout belongs to the guest.
    Stderr,
    /// `-o -`.
    Stdout,
    /// `-o FILE`.
    File(PathBuf),
}

/// Where one program's results go.
struct Outputs {
    console: Console,
    wpp: Option<PathBuf>,
    samples: Option<PathBuf>,
    report: Option<PathBuf>,
}

pub fn run(mut args: RunArgs) -> Result<ExitCode> {
    if args.guest.command.is_empty() {
        return suite(args);
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
    let console = match args.output.take() {
        None => Console::Stderr,
        Some(p) if p.as_os_str() == "-" => Console::Stdout,
        Some(p) => Console::File(p),
    };
    let out = Outputs {
        console,
        wpp: args.wpp.take(),
        samples,
        report: args.report.take(),
    };
    let command = args.guest.command.clone();
    let (p, _) = profile(&args, command, &out, false)?;
    Ok(ExitCode::from((p.exit_code & 0xff) as u8))
}

/// `outcrop run` with no program: every bundled workload with every mechanism (RAP over
/// blocks and pcs, the whole-program capture, a 16-entry branch-record unit, the timing model),
/// each into `DIR/NAME/` (`--report DIR`, default `outcrop-report`), and `DIR/suite.json`.
fn suite(mut args: RunArgs) -> Result<ExitCode> {
    let dir = args
        .report
        .clone()
        .unwrap_or_else(|| PathBuf::from("outcrop-report"));
    let workloads = std::env::var_os("OUTCROP_WORKLOADS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("workloads"));
    let bin = workloads.join("bin");
    let mut names: Vec<String> = std::fs::read_dir(&bin)
        .with_context(|| {
            format!(
                "no program given, so outcrop run profiles the bundled workloads, but {} is missing: run it from the repository root, set OUTCROP_WORKLOADS, or give a program after --",
                bin.display()
            )
        })?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.contains('.') && n != "TOOLCHAIN")
        .collect();
    names.sort();
    if args.rap.is_empty() {
        args.rap = vec![Stream::Block, Stream::Pc];
    }
    if args.paths.is_none() {
        args.paths = Some((16, None));
    }
    if args.timing.is_none() {
        args.timing = Some("default".into());
    }
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("--report {}: cannot create the directory", dir.display()))?;
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
    let mut index = Vec::new();
    let mut rows = Vec::new();
    for name in &names {
        let sub = dir.join(name);
        std::fs::create_dir_all(&sub)?;
        let out = Outputs {
            console: Console::File(sub.join("report.txt")),
            wpp: Some(sub.join(format!("{name}.wpp"))),
            samples: Some(sub.join("branch.samples")),
            report: Some(sub.clone()),
        };
        let mut command = vec![format!("bin/{name}").into()];
        if name == "fileio" {
            command.push("src/fileio.c".into());
        }
        eprintln!("outcrop: suite: {name}");
        let (mut p, mut row) = profile(&args, command, &out, true)?;
        p.report = Some(sub.display().to_string());
        row.name = name.clone();
        index.push(p);
        rows.push(row);
    }
    let mut j = serde_json::to_vec_pretty(&index)?;
    j.push(b'\n');
    save_in_report(&dir.join("suite.json"), &j)?;
    save_in_report(
        &dir.join("index.html"),
        outcrop_report::html::index_page(&rows).as_bytes(),
    )?;
    eprintln!(
        "outcrop: suite: {} workloads profiled with every mechanism → {} (open {})",
        index.len(),
        dir.display(),
        dir.join("index.html").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Profiles one program with every mechanism `args` asks for, writing to `out`. With `quiet`,
/// the guest's output is discarded and its stdin is empty.
fn profile(
    args: &RunArgs,
    command: Vec<std::ffi::OsString>,
    out: &Outputs,
    quiet: bool,
) -> Result<(SuiteEntry, IndexRow)> {
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
    let wpp_options = out
        .wpp
        .as_ref()
        .map(|_| args.capture.options())
        .transpose()?;
    let lbr = args.paths.map(|(entries, period)| LbrConfig {
        entries,
        period: period.unwrap_or(LbrConfig::default().period),
        unit: if timing.is_some() {
            PeriodUnit::Cycles
        } else {
            PeriodUnit::Instructions
        },
        ..LbrConfig::default()
    });
    if let Some(c) = &lbr {
        c.validate().context("--paths")?;
    }
    let samples_path = out.samples.clone();
    // every output is checked before the run starts
    if let Some(dir) = &out.report {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--report {}: cannot create the directory", dir.display()))?;
        check_output(&dir.join("run.json"))?;
        check_output(&dir.join("report.html"))?;
    }
    let console_file = match &out.console {
        Console::File(f) => Some(f.clone()),
        _ => None,
    };
    for p in [&console_file, &out.wpp, &samples_path, &args.rpa.fdata]
        .into_iter()
        .flatten()
    {
        check_output(p)?;
    }
    if let Some(dir) = &out.report {
        if args.rpa.query.is_some() {
            check_output(&dir.join("rpa.json"))?;
        }
    }

    let command_args: Vec<std::ffi::OsString> = command.iter().skip(1).cloned().collect();
    let mut spec = args.guest.spec();
    spec.command = command;
    if quiet {
        spec.stdio = outcrop_run::Stdio::Quiet;
    }
    let Guest {
        mut machine,
        path,
        elf,
    } = crate::exec::load_spec(spec)?;
    let program = path.display().to_string();
    let symbols = match Symbols::from_elf(&elf) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("outcrop: warning: no function names (the profile puts everything in [unknown]): {e}");
            None
        }
    };

    let rpa_spec = crate::query::spec(&args.rpa, &elf, symbols.as_ref(), args.guest.deterministic)?;
    let interrupt = crate::files::interrupt_flag();
    let bar = (!args.no_progress && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar
    });
    let mut on_progress = |p: outcrop_run::Progress| {
        if let Some(bar) = &bar {
            let secs = p.elapsed.as_secs_f64().max(1e-9);
            bar.set_message(format!(
                "{} instructions, {:.1} MIPS (Ctrl-C stops the guest and keeps the profiles)",
                p.instructions,
                p.instructions as f64 / secs / 1e6
            ));
            bar.tick();
        }
    };

    let mut wpp_file = None;
    let mut run = Run::new(&mut machine)
        .timing(timing)
        .classes()
        .progress(&mut on_progress)
        .interrupt(interrupt);
    if !args.no_profile {
        run = run.profile(symbols.clone().unwrap_or_default());
    }
    if !args.rap.is_empty() {
        run = run.rap(RapSpec::new(&args.rap, config, args.exact));
    }
    if let Some(c) = lbr {
        run = run.paths(vec![c]);
    }
    if let Some(spec) = rpa_spec {
        run = run.rpa(spec);
    }
    if let (Some(file), Some(options)) = (&out.wpp, wpp_options) {
        let f = crate::files::create_output(file)?;
        let info =
            crate::wpp::run_info(&command_args, args.guest.deterministic, &program, &elf, 0.0)?;
        run = run.wpp(WppSpec {
            sink: Box::new(std::io::BufWriter::with_capacity(1 << 20, f.file()?)),
            options,
            info,
            deterministic: args.guest.deterministic,
        });
        wpp_file = Some(f);
    }
    let result = run.execute();
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let mut result = result?;
    if let Some(c) = result.wpp.as_mut() {
        c.writer.flush()?;
    }
    let wpp = result.wpp.take();
    if let (Some(f), Some(_)) = (wpp_file.take(), &wpp) {
        f.commit()?;
    }
    let (code, outcome_text) = if result.interrupted {
        eprintln!(
            "outcrop: interrupted after {} instructions; the profiles cover the run so far (truncated)",
            result.instructions
        );
        result.status()
    } else {
        outcome_status(result.outcome, &machine)
    };
    if let Some(t) = &result.timing {
        print_timing(t);
    }
    let wall = result.wall.as_secs_f64();

    // ---- the exact profile
    let exact = result.profile.take();
    let lines = match (&exact, outcrop_profile::lines::LineTable::from_elf(&elf)) {
        (Some(p), Ok(Some(mut table))) => Some(p.by_line(&mut table)),
        (_, Err(e)) => {
            eprintln!("outcrop: warning: no source lines: {e}");
            None
        }
        _ => None,
    };
    let profile_report = exact
        .as_ref()
        .map(|p| ProfileReport::new(&program, p, lines.as_ref()));
    // the console report: the profile, then RAP (text), or one JSON document
    let mut console = Vec::new();
    if let Some(r) = &profile_report {
        if args.json {
            if result.rap.is_none() && result.rpa.is_none() {
                console.extend_from_slice(r.to_json().as_bytes());
            }
        } else {
            console.extend_from_slice(r.to_text().as_bytes());
            if result.rap.is_some() {
                console.push(b'\n');
            }
        }
    }

    // ---- RAP
    let mut rap_bytes = Vec::new();
    let mut rap_report = None;
    if let Some(prof) = &result.rap {
        let mut streams = Vec::new();
        for p in &prof.profiles {
            let hot = p.tree.hot_ranges(args.hot)?;
            let accuracy = p
                .exact
                .as_ref()
                .map(|e| outcrop_rap::accuracy(&hot, &e.finish()));
            let labels: Option<Vec<String>> = match (&symbols, p.stream.is_code()) {
                (Some(sym), true) => {
                    Some(hot.iter().map(|h| sym.describe_range(h.lo, h.hi)).collect())
                }
                _ => None,
            };
            streams.push(StreamReport {
                stream: p.stream.name().to_string(),
                description: p.stream.description().to_string(),
                n: p.tree.n(),
                nodes: p.tree.node_count(),
                max_nodes: p.max_nodes(),
                mean_nodes: p.mean_nodes(),
                mean_nodes_at_merges: p.mean_nodes_at_merges(),
                merge_batches: p.tree.stats().merge_batches,
                split_threshold: p.tree.split_threshold(),
                hot: StreamReport::entries(&hot, accuracy.as_ref(), labels.as_deref()),
                max_error_pct: accuracy.as_ref().map(|a| a.max_error_pct),
                mean_error_pct: accuracy.as_ref().map(|a| a.mean_error_pct),
                sizes: p.sizes.clone(),
                merges: p.tree.merge_log().to_vec(),
            });
        }
        let report = RapRunReport {
            program: program.clone(),
            instructions: result.instructions,
            exit_code: code,
            outcome: outcome_text.clone(),
            wall_seconds: wall,
            eps: args.eps,
            branching: args.branching,
            hot_fraction: args.hot,
            timing: result.timing.clone(),
            streams,
        };
        let json = report.to_json().into_bytes();
        if args.json {
            console.extend_from_slice(&json);
        } else {
            console.extend_from_slice(report.to_text().as_bytes());
        }
        rap_bytes = json;
        rap_report = Some(report);
    }
    // ---- relational profiling
    let mut rpa_json = None;
    let mut rpa_report = None;
    if let Some(r) = result.rpa.take() {
        let mut code = match &args.rpa.fdata {
            Some(_) => Some(outcrop_run::CodeImage::load(&path, &elf)?),
            None => None,
        };
        let (report, fdata) = crate::query::report(
            &r,
            &program,
            result.instructions,
            args.guest.deterministic,
            symbols.as_ref(),
            code.as_mut(),
            result.timing.as_ref().map_or(0, |t| t.fills_late),
        );
        let json = report.to_json();
        if args.json {
            if result.rap.is_none() {
                console.extend_from_slice(json.as_bytes());
            }
        } else {
            console.push(b'\n');
            console.extend_from_slice(report.to_text().as_bytes());
        }
        if let Some(file) = &args.rpa.fdata {
            match fdata {
                Some(text) => {
                    save(file, text.as_bytes())?;
                    eprintln!("outcrop: query: BOLT profile → {}", file.display());
                }
                None => anyhow::bail!(
                    "--fdata {}: no queue is read by the edges service",
                    file.display()
                ),
            }
        }
        let lost: u64 = r.queries.iter().map(|q| q.lost).sum();
        if lost > 0 {
            eprintln!("outcrop: query: {lost} messages were lost because a service thread stopped");
        }
        rpa_json = Some(json);
        rpa_report = Some(report);
    }

    // names in the text come from the program's files: no control character reaches a
    // terminal (JSON has none left unescaped)
    let console = String::from_utf8_lossy(&console);
    let console = outcrop_events::escape::text(&console);
    let console = console.as_bytes();
    match &out.console {
        Console::Stderr => {
            let stderr = std::io::stderr();
            let mut e = stderr.lock();
            e.write_all(console)?;
            e.flush()?;
        }
        Console::Stdout => {
            let stdout = std::io::stdout();
            let mut o = stdout.lock();
            o.write_all(console)?;
            o.flush()?;
        }
        Console::File(f) => save(f, console)?,
    }

    // ---- branch records
    let mut paths_json = None;
    if let Some(recorder) = result.paths.take() {
        let samples = crate::paths::samples_of(Some(recorder), &program, &elf)?;
        let Some(file) = &samples_path else {
            anyhow::bail!("internal: no samples path");
        };
        save(file, samples.to_text().as_bytes())?;
        eprintln!(
            "outcrop: paths: {} samples ({} distinct traces), modelled overhead {:.2}% → {}",
            samples.meta.samples,
            samples.traces.len(),
            100.0 * samples.overhead(),
            file.display()
        );
        let j = PathsSummary {
            file: file.display().to_string(),
            samples: samples.meta.samples,
            distinct_traces: samples.traces.len(),
            recorded_branches: samples.meta.recorded,
            instructions: samples.meta.instructions,
            cycles: samples.meta.cycles,
            modelled_overhead: samples.overhead(),
            config: &samples.meta.config,
        };
        paths_json = Some(serde_json::to_vec_pretty(&j)?);
    }

    // ---- whole-program capture
    let mut wpp_json = None;
    if let (Some(c), Some(file)) = (&wpp, &out.wpp) {
        let b = &c.stats.build;
        eprintln!(
            "outcrop: wpp: {} blocks, {} paths executed ({} unique), {} bytes → {}",
            b.blocks,
            b.paths.executions,
            b.paths.unique,
            c.bytes.total(),
            file.display()
        );
        wpp_json = Some(serde_json::to_vec_pretty(&WppSummary {
            file: file.display().to_string(),
            bytes: c.bytes.total(),
            stats: &c.stats,
        })?);
    }

    if let Some(dir) = &out.report {
        let mut mechanisms = Vec::new();
        if result.rap.is_some() {
            mechanisms.push("rap");
            save_in_report(&dir.join("rap.json"), &rap_bytes)?;
        }
        if let Some(j) = &wpp_json {
            mechanisms.push("wpp");
            save_in_report(&dir.join("wpp.json"), j)?;
        }
        if let Some(j) = &paths_json {
            mechanisms.push("paths");
            save_in_report(&dir.join("paths.json"), j)?;
        }
        if let Some(j) = &rpa_json {
            mechanisms.push("rpa");
            save_in_report(&dir.join("rpa.json"), j.as_bytes())?;
        }
        if let (Some(p), Some(r)) = (&exact, &profile_report) {
            mechanisms.push("profile");
            save_in_report(&dir.join("profile.json"), r.to_json().as_bytes())?;
            save_in_report(
                &dir.join("profile.speedscope.json"),
                speedscope(p, &program).as_bytes(),
            )?;
            save_in_report(
                &dir.join("profile.firefox.json"),
                firefox(p, &program).as_bytes(),
            )?;
            save_in_report(&dir.join("profile.folded"), folded(p).as_bytes())?;
        }
        // the guest's arguments after its program name
        let args_list: Vec<String> = command_args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let classes = result.classes.map(|c| {
            Class::ALL
                .iter()
                .map(|k| (k.name(), c[*k as usize]))
                .collect::<Vec<_>>()
        });
        let rap_streams = rap_report.as_ref().map(|r| r.streams.as_slice());
        let mut files = vec![
            ("run.json", "the run's statistics, host time included"),
            ("report.json", "the data this page is made from"),
        ];
        if exact.is_some() {
            files.extend([
                (
                    "profile.json",
                    "the exact profile: functions, lines, call tree",
                ),
                (
                    "profile.speedscope.json",
                    "open in https://www.speedscope.app",
                ),
                (
                    "profile.firefox.json",
                    "open in https://profiler.firefox.com",
                ),
                (
                    "profile.folded",
                    "folded stacks for flamegraph.pl or inferno",
                ),
            ]);
        }
        if result.rap.is_some() {
            files.push(("rap.json", "RAP trees and hot ranges"));
        }
        if paths_json.is_some() {
            files.push(("paths.json", "branch-record sampling summary"));
        }
        if wpp_json.is_some() {
            files.push(("wpp.json", "whole-program capture summary"));
        }
        if rpa_json.is_some() {
            files.push((
                "rpa.json",
                "relational profiling: queries, services, exact checks",
            ));
        }
        let page = RunPage {
            program: &program,
            args: &args_list,
            exit_code: code,
            outcome: &outcome_text,
            truncated: result.truncated(),
            instructions: result.instructions,
            classes: classes.clone(),
            timing: result.timing.as_ref(),
            profile: profile_report.as_ref(),
            rap: rap_streams.map(|streams| RapSection {
                eps: args.eps,
                branching: args.branching,
                hot_fraction: args.hot,
                streams,
            }),
            // files inside the report directory are named relative to it, so that the
            // page does not depend on where the directory is
            paths: paths_json
                .as_ref()
                .and_then(|j| serde_json::from_slice::<serde_json::Value>(j).ok())
                .map(|mut v| {
                    if let Some(rel) = samples_path.as_ref().and_then(|f| f.strip_prefix(dir).ok())
                    {
                        v["file"] = rel.display().to_string().into();
                    }
                    v
                }),
            strata: wpp.as_ref().map(|c| &c.stats),
            rpa: rpa_report.as_ref(),
            files,
        };
        save_in_report(
            &dir.join("report.json"),
            outcrop_report::json(&page).as_bytes(),
        )?;
        save_in_report(
            &dir.join("report.html"),
            run_page(&page, exact.as_ref()).as_bytes(),
        )?;
        let stats = RunSummary {
            program: &program,
            args: args_list,
            instructions: result.instructions,
            exit_code: code,
            outcome: &outcome_text,
            truncated: result.truncated(),
            wall_seconds: wall,
            mips: result.instructions as f64 / wall.max(1e-9) / 1e6,
            mechanisms,
            classes,
            timing: result.timing.as_ref(),
            host_max_rss_bytes: crate::files::max_rss_bytes(),
        };
        let mut j = serde_json::to_vec_pretty(&stats)?;
        j.push(b'\n');
        save_in_report(&dir.join("run.json"), &j)?;
        eprintln!("outcrop: report → {}", dir.display());
    }
    let row = IndexRow {
        name: program.clone(),
        exit_code: code,
        outcome: outcome_text.clone(),
        instructions: result.instructions,
        cycles: result.timing.as_ref().map(|t| t.cycles),
        hottest: profile_report.as_ref().and_then(|r| {
            r.functions.first().map(|f| {
                let share = match r.cycles {
                    Some(c) => 100.0 * f.self_counts.cycles as f64 / c.max(1) as f64,
                    None => {
                        100.0 * f.self_counts.instructions as f64 / r.instructions.max(1) as f64
                    }
                };
                (f.name.clone(), share)
            })
        }),
    };
    Ok((
        SuiteEntry {
            program,
            exit_code: code,
            outcome: outcome_text,
            instructions: result.instructions,
            wall_seconds: wall,
            truncated: result.truncated(),
            report: None,
        },
        row,
    ))
}
