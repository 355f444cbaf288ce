//! `outcrop run [--rap STREAMS] [--wpp FILE] [--paths N[:P]] [--timing] -- PROG`: one run of a
//! guest with any set of mechanisms attached (RAP trees over its event streams, the
//! whole-program capture, a branch-record unit), each result equal to its own command's.

use crate::exec::{print_timing, report_ending, timing_config, GuestArgs};
use crate::files::{check_output, write_output};
use crate::wpp::CaptureArgs;
use anyhow::{Context, Result};
use clap::Args;
use outcrop_rap::observe::{RapSpec, Stream};
use outcrop_rap::Config;
use outcrop_report::html::IndexRow;
use outcrop_report::run_dir::SuiteEntry;
use outcrop_report::{FileNames, RunReport};
use outcrop_run::{ProgramImage, RunConfig, RunSummaries};
use std::io::Write;
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

/// The run's input among the files it writes beside: the program.
fn program_input(config: &RunConfig) -> Vec<&Path> {
    config
        .program
        .command
        .first()
        .map(Path::new)
        .into_iter()
        .collect()
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
    json: bool,
    wpp: Option<PathBuf>,
    samples: Option<PathBuf>,
    report: Option<PathBuf>,
    fdata: Option<PathBuf>,
    progress: bool,
    /// (staging, final): the report directory is being written in `staging`, and every path
    /// under it is named in messages and pages by its place under `final`.
    shown: Option<(PathBuf, PathBuf)>,
}

impl Outputs {
    /// `p` as a person should see it: under the final report directory, not the staging one.
    fn show(&self, p: &Path) -> PathBuf {
        match &self.shown {
            Some((staging, last)) => match p.strip_prefix(staging) {
                Ok(rel) => last.join(rel),
                Err(_) => p.to_path_buf(),
            },
            None => p.to_path_buf(),
        }
    }

    /// Checks every output before the run starts (the report directory is staged already).
    fn check(&self, config: &RunConfig) -> Result<()> {
        let inputs = program_input(config);
        let report_dirs: Vec<&Path> = self.shown.iter().map(|(_, last)| last.as_path()).collect();
        let console = match &self.console {
            Console::File(f) => Some(f),
            _ => None,
        };
        let outputs: Vec<&Path> = [
            console,
            self.wpp.as_ref(),
            self.samples.as_ref(),
            self.fdata.as_ref(),
        ]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect();
        for p in &outputs {
            check_output(p)?;
        }
        crate::files::distinct_outputs(&inputs, &outputs, &report_dirs)
    }

    /// Writes the console report where it goes.
    fn console(&self, text: &str) -> Result<()> {
        let bytes = text.as_bytes();
        match &self.console {
            Console::Stderr => {
                let mut e = std::io::stderr().lock();
                e.write_all(bytes)?;
                e.flush()?;
            }
            Console::Stdout => {
                let mut o = std::io::stdout().lock();
                o.write_all(bytes)?;
                o.flush()?;
            }
            Console::File(f) => save(f, bytes)?,
        }
        Ok(())
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
    let config = args.config(args.guest.command.clone(), args.wpp.is_some())?;
    // the report directory is written aside and swapped in whole when the run is done
    let staged = match &args.report {
        Some(dir) => {
            crate::files::distinct_outputs(&program_input(&config), &[], &[dir.as_path()])?;
            Some(crate::files::ReportDir::begin(dir)?)
        }
        None => None,
    };
    let place = |p: Option<PathBuf>| match (&staged, p) {
        (Some(s), Some(p)) => Some(s.place(&p)),
        (_, p) => p,
    };
    // (an output named inside the report directory is written there, with the rest)
    let console = match console {
        Console::File(p) => Console::File(place(Some(p)).unwrap_or_default()),
        other => other,
    };
    let out = Outputs {
        console,
        json: args.json,
        wpp: place(args.wpp.take()),
        samples: place(samples),
        report: staged.as_ref().map(|s| s.path().to_path_buf()),
        fdata: place(args.rpa.fdata.clone()),
        progress: !args.no_progress,
        shown: staged
            .as_ref()
            .map(|s| (s.path().to_path_buf(), s.dir.clone())),
    };
    let (p, _) = profile(&config, &out)?;
    if let Some(s) = staged {
        let dir = s.dir.clone();
        s.commit()?;
        eprintln!("outcrop: report → {}", dir.display());
    }
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
    let manifest = outcrop_studies::Manifest::load(&workloads).with_context(|| {
        format!(
            "no program given, so outcrop run profiles the bundled workloads, but {} is missing or unreadable: run it from the repository root, set OUTCROP_WORKLOADS, or give a program after --",
            workloads.join("manifest.toml").display()
        )
    })?;
    let mut names: Vec<String> = manifest.workloads.iter().map(|w| w.name.clone()).collect();
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
    // the workloads read their inputs relative to their own directory: every path given on
    // the command line is made absolute before moving there
    let dir = std::path::absolute(&dir)?;
    let staged = crate::files::ReportDir::begin(&dir)?;
    let final_dir = dir.clone();
    let dir = staged.path().to_path_buf();
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
            json: args.json,
            wpp: Some(sub.join(format!("{name}.wpp"))),
            samples: Some(sub.join("branch.samples")),
            report: Some(sub.clone()),
            fdata: None,
            progress: !args.no_progress,
            shown: Some((dir.clone(), final_dir.clone())),
        };
        let w = manifest.get(name)?;
        // paths from the manifest, resolved beneath its directory (a checkout cannot name
        // a program or a sysroot outside itself)
        manifest.binary_path(w)?;
        let mut command = vec![w.binary().into_os_string()];
        command.extend(w.args.iter().map(std::ffi::OsString::from));
        eprintln!("outcrop: suite: {name}");
        let mut config = args.config(command, true)?;
        config.program.stdio = outcrop_run::Stdio::Quiet;
        if let Some(root) = manifest.sysroot(w)? {
            config.program.sysroot = Some(root);
        }
        let (mut p, mut row) = profile(&config, &out)?;
        p.report = Some(final_dir.join(name).display().to_string());
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
    staged.commit()?;
    eprintln!(
        "outcrop: suite: {} workloads profiled with every mechanism → {} (open {})",
        index.len(),
        final_dir.display(),
        final_dir.join("index.html").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// A spinner on stderr while the guest runs (only when stderr is a terminal).
fn progress_bar(wanted: bool) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    (wanted && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar
    })
}

/// Runs `config` once and writes what it made to `out`: the one way up (image → execute →
/// summaries → reports → files).
fn profile(config: &RunConfig, out: &Outputs) -> Result<(SuiteEntry, IndexRow)> {
    out.check(config)?;
    let image = crate::exec::read_image(&config.program)?;
    let summaries = execute(config, &image, out)?;
    // after the load: a file the loader refuses is reported once, by the loader
    if let Err(e) = image.symbols() {
        eprintln!(
            "outcrop: warning: no function names (the profile puts everything in [unknown]): {e}"
        );
    }
    report_ending(&summaries);
    if let Some(t) = &summaries.timing {
        print_timing(t);
    }
    let names = FileNames {
        samples: out.samples.as_deref().map(|p| out.show(p)),
        wpp: out.wpp.as_deref().map(|p| out.show(p)),
        report_dir: out.report.as_deref().map(|p| out.show(p)),
        program: std::fs::canonicalize(image.path()).ok(),
    };
    let report = RunReport::new(&summaries, &image, names)?;
    for w in &report.warnings {
        eprintln!("outcrop: warning: {w}");
    }
    out.console(&report.console(out.json))?;
    write_mechanism_files(&summaries, &report, out)?;
    if let Some(dir) = &out.report {
        for (name, bytes) in report.directory_files() {
            save_in_report(&dir.join(name), &bytes)?;
        }
    }
    Ok((report.suite_entry(), report.index_row()))
}

/// Runs the machine with the progress bar, the interrupt flag, the console's warnings and
/// the `.wpp` file (committed only when the capture finished).
fn execute(config: &RunConfig, image: &ProgramImage, out: &Outputs) -> Result<RunSummaries> {
    let bar = progress_bar(out.progress);
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
    let mut hooks = crate::exec::console_hooks(config.program.stdio);
    hooks.progress = Some(&mut on_progress);
    hooks.interrupt = Some(crate::files::interrupt_flag());
    let mut wpp_file = None;
    if let (Some(file), Some(_)) = (&out.wpp, &config.wpp) {
        let f = crate::files::create_output(file)?;
        hooks.wpp_sink = Some(Box::new(std::io::BufWriter::with_capacity(
            1 << 20,
            f.file()?,
        )));
        wpp_file = Some(f);
    }
    let result = outcrop_run::execute(config, image, hooks);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let mut summaries = result?;
    summaries.host_max_rss_bytes = crate::files::max_rss_bytes();
    if let (Some(f), Some(_)) = (wpp_file, &summaries.wpp) {
        f.commit()?;
    }
    Ok(summaries)
}

/// The mechanisms' own files beside the report: the samples file, BOLT's `.fdata`, and the
/// one-line summaries of each on stderr.
fn write_mechanism_files(s: &RunSummaries, report: &RunReport, out: &Outputs) -> Result<()> {
    if let Some(file) = &out.fdata {
        match &report.fdata {
            Some(text) => {
                save(file, text.as_bytes())?;
                eprintln!(
                    "outcrop: query: BOLT profile → {}",
                    out.show(file).display()
                );
            }
            None => anyhow::bail!(
                "--fdata {}: no queue is read by the edges service",
                file.display()
            ),
        }
    }
    if let Some(r) = &s.rpa {
        let lost: u64 = r.queries.iter().map(|q| q.lost).sum();
        if lost > 0 {
            eprintln!("outcrop: query: {lost} messages were lost because a service thread stopped");
        }
    }
    if let (Some(samples), Some(file)) = (s.samples.first(), &out.samples) {
        save(file, samples.to_text().as_bytes())?;
        eprintln!(
            "outcrop: paths: {} samples ({} distinct traces), modelled overhead {:.2}% → {}",
            samples.meta.samples,
            samples.traces.len(),
            100.0 * samples.overhead(),
            out.show(file).display()
        );
    }
    if let (Some(c), Some(file)) = (&s.wpp, &out.wpp) {
        let b = &c.stats.build;
        eprintln!(
            "outcrop: wpp: {} blocks, {} paths executed ({} unique), {} bytes → {}",
            b.blocks,
            b.paths.executions,
            b.paths.unique,
            c.bytes,
            out.show(file).display()
        );
    }
    Ok(())
}
