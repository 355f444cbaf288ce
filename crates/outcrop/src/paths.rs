//! `outcrop paths record|report`: path profiles from sampled branch records (Shye et al.),
//! with accuracy against the exact path profile.

use crate::exec::{console_hooks, report_ending, timing_config, GuestArgs};
use crate::files::{
    check_program, read_bounded, read_text_bounded, write_output, MAX_PROFILE_BYTES,
    MAX_PROGRAM_BYTES,
};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use outcrop_paths::{
    accuracy, analyze, fdata::fdata, Cfg, Filter, IndexCache, LbrConfig, LbrUnit, Options, PathKey,
    PeriodUnit, Regions, Samples, Weighting, HOT,
};
use outcrop_report::paths::{HotPathReport, PathsReport};
use outcrop_report::Report as _;
use std::io::Write;
use std::path::{Path, PathBuf};
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
    let image = crate::exec::read_image(&run.program)?;
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

/// Reads block start addresses from a .wpp file (with the instructions its run retired and
/// its program id) or a text trace.
fn exact_from_trace(
    path: &Path,
    cfg: &Cfg,
    regions: &Regions,
    max_blocks: u64,
) -> Result<(ExactProfile, Option<u64>, Option<String>)> {
    let bytes = read_bounded(path, "trace", MAX_PROFILE_BYTES)?;
    let mut ex = outcrop_paths::exact::ExactCounter::new(cfg, regions);
    if bytes.starts_with(b"OUTCROPW") {
        let f = outcrop_strata::WppFile::parse(&bytes)
            .with_context(|| format!("{}", path.display()))?;
        drop(bytes);
        crate::wpp::check_replay_len(path, &f, max_blocks)?;
        // streamed: the expansion is never held, whatever the grammar claims
        outcrop_strata::Replay::new(&f).for_each_path(|p| p.iter().for_each(|&a| ex.push_block(a)));
        return Ok((
            ex.finish_run(),
            Some(f.stats.build.instructions),
            Some(f.stats.run.program_id.clone()),
        ));
    }
    // a text trace: one address per line, as `outcrop rap` reads (outcrop_events::text),
    // counted a chunk at a time
    use outcrop_events::ValueReader;
    let mut reader = outcrop_events::text::TextReader::new(&bytes[..]);
    let mut chunk = Vec::with_capacity(1 << 16);
    let mut blocks = 0u64;
    loop {
        chunk.clear();
        let n = reader
            .read_values(&mut chunk, 1 << 16)
            .with_context(|| format!("{}: neither a .wpp file nor a text trace", path.display()))?;
        if n == 0 {
            break;
        }
        blocks = blocks.saturating_add(n as u64);
        if blocks > max_blocks {
            bail!(
                "{}: more than {max_blocks} blocks (--max-blocks)",
                path.display()
            );
        }
        chunk.iter().for_each(|&a| ex.push_block(a));
    }
    Ok((ex.finish_run(), None, None))
}

/// An exact path profile and its counters.
type ExactProfile = (
    rustc_hash::FxHashMap<outcrop_paths::PathKey, u64>,
    outcrop_paths::exact::ExactStats,
);

/// Reads every samples file and merges them into the first (§4.4, aggregating runs); files of
/// another program or buffer depth are an error naming the file.
fn read_samples(files: &[PathBuf], ignore_program_id: bool) -> Result<Samples> {
    let mut merged: Option<Samples> = None;
    for f in files {
        let text = read_text_bounded(f, "samples file", MAX_PROFILE_BYTES)?;
        let s = Samples::parse(&text).with_context(|| format!("{}", f.display()))?;
        match merged.as_mut() {
            None => merged = Some(s),
            Some(m) => {
                let (first, this) = (&m.meta, &s.meta);
                let f0 = files[0].display();
                let fi = f.display();
                if !ignore_program_id && this.program_id != first.program_id {
                    let id = |id: &str| {
                        if id.is_empty() {
                            "no program id (a version 1 file)".to_string()
                        } else {
                            id.to_string()
                        }
                    };
                    bail!(
                        "{fi} was recorded from another build than {f0}: {fi} has {}, {f0} has {}; pass --ignore-program-id to merge anyway",
                        id(&this.program_id),
                        id(&first.program_id)
                    );
                }
                // samples merge as counts of one kind of trace: the same buffer, the same
                // branches recorded, one sample per the same period
                let (a, b) = (&this.config, &first.config);
                let differ = |what: &str, x: String, y: String| -> Result<()> {
                    bail!("{fi} has {what} {x}, {f0} has {y}: merge samples recorded alike")
                };
                if a.entries != b.entries {
                    differ("buffer depth", a.entries.to_string(), b.entries.to_string())?;
                }
                if a.filter != b.filter {
                    differ(
                        "filter",
                        format!("{:?}", a.filter),
                        format!("{:?}", b.filter),
                    )?;
                }
                if (a.period, a.unit) != (b.period, b.unit) {
                    differ(
                        "sampling period",
                        format!("{} {:?}", a.period, a.unit),
                        format!("{} {:?}", b.period, b.unit),
                    )?;
                }
                m.merge(&s);
            }
        }
    }
    merged.context("no samples file given")
}

/// The CFG of the program, and of the shared objects the run mapped when the samples file
/// lists them (a dynamically linked program: each object's code where it was loaded).
fn program_cfg(
    elf: &[u8],
    binary: &std::path::Path,
    objects: &[outcrop_sampling::SampledObject],
    sysroot: Option<&std::path::Path>,
    ignore_ids: bool,
) -> Result<Cfg> {
    if objects.is_empty() {
        return Cfg::from_elf(elf).with_context(|| format!("{}", binary.display()));
    }
    let recorded: Vec<outcrop_run::objects::Recorded<'_>> = objects
        .iter()
        .map(outcrop_run::objects::Recorded::from)
        .collect();
    let found = outcrop_run::objects::find_recorded(&recorded, sysroot, ignore_ids, &mut |w| {
        eprintln!("outcrop: warning: {w}")
    })?;
    let program_bias = outcrop_rv::elf::load_bias(elf, objects[0].start, objects[0].offset)
        .with_context(|| format!("{}: not the program that was mapped", binary.display()))?;
    let mut parts: Vec<(&[u8], u64, &str)> = vec![(elf, program_bias, "")];
    parts.extend(
        found
            .iter()
            .map(|f| (f.bytes.as_slice(), f.bias, f.suffix.as_str())),
    );
    Cfg::from_objects(&parts).with_context(|| format!("{}", binary.display()))
}

fn report(args: ReportArgs) -> Result<()> {
    let samples = read_samples(&args.samples, args.ignore_program_id)?;
    let first = &args.samples[0];
    let binary = match &args.binary {
        Some(b) => b.clone(),
        None => match find_recorded_program(&samples.meta.program, first) {
            Some(p) => p,
            None => bail!(
                "the program {} recorded in {} does not exist here or beside the samples file; name it with --binary",
                samples.meta.program,
                first.display()
            ),
        },
    };
    if !(0.0..=1.0).contains(&args.hot) {
        bail!("--hot {} is not a fraction", args.hot);
    }
    let elf = read_bounded(&binary, "program", MAX_PROGRAM_BYTES)?;
    check_program(
        first,
        &samples.meta.program_id,
        &binary,
        &elf,
        args.ignore_program_id,
    )?;
    let cfg = program_cfg(
        &elf,
        &binary,
        &samples.meta.objects,
        args.sysroot.as_deref(),
        args.ignore_program_id,
    )?;
    let regions = Regions::new(&cfg, args.max_paths);
    let opts = Options {
        extend: !args.no_extend,
        stitch: args.stitch,
        ..Options::default()
    };
    let weights = match args.weights {
        WeightArg::Equal => Weighting::Equal,
        WeightArg::Edges => Weighting::Edges,
    };
    let mut cache = IndexCache::default();
    let a = analyze(&cfg, &regions, &samples, opts, weights, &mut cache);
    let exact = match &args.exact_from {
        Some(p) => {
            let (profile, insns, id) = exact_from_trace(p, &cfg, &regions, args.max_blocks)?;
            if let Some(id) = id {
                check_program(p, &id, &binary, &elf, args.ignore_program_id)?;
            }
            if let Some(n) = insns.filter(|&n| n != samples.meta.instructions) {
                eprintln!(
                    "outcrop: warning: {} retired {n} instructions, the sampled run {}: not the same execution (record both with --deterministic)",
                    p.display(),
                    samples.meta.instructions
                );
            }
            Some(profile)
        }
        None => None,
    };
    let acc = exact
        .as_ref()
        .map(|(e, _)| accuracy(e, &a.estimate.paths, args.hot));
    if let Some(path) = &args.fdata {
        let text = fdata(&cfg, &a.reconstruction.edges);
        write_output(path, |f| {
            f.write_all(text.as_bytes())?;
            Ok(())
        })
        .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.bolt_preagg.is_some() || args.profgen.is_some() {
        let counts = outcrop_paths::exports::lbr_counts(&samples);
        let base = elf_base(&elf);
        for (path, text) in [
            (
                &args.bolt_preagg,
                outcrop_paths::exports::bolt_preaggregated(&counts),
            ),
            (
                &args.profgen,
                outcrop_paths::exports::profgen_unsymbolized(&counts, base),
            ),
        ] {
            if let Some(path) = path {
                write_output(path, |f| {
                    f.write_all(text.as_bytes())?;
                    Ok(())
                })
                .with_context(|| format!("writing {}", path.display()))?;
            }
        }
    }
    let est_total: f64 = a.estimate.paths.values().sum();
    let exact_total: u64 = exact.as_ref().map_or(0, |(e, _)| e.values().sum());
    let ranked = outcrop_paths::accuracy::ranked(&a.estimate.paths);
    let hot: Vec<HotPathReport> = ranked
        .iter()
        .take(args.top)
        .enumerate()
        .map(|(i, ((r, id), w))| {
            let blocks = regions.decode(*r, *id).unwrap_or_default();
            let key: PathKey = (*r, *id);
            HotPathReport {
                rank: i + 1,
                region: *r,
                id: *id,
                function: blocks
                    .first()
                    .map(|&b| cfg.funcs[cfg.blocks[b as usize].func as usize].name.clone())
                    .unwrap_or_default(),
                estimated: *w,
                estimated_share: if est_total > 0.0 { w / est_total } else { 0.0 },
                exact_share: exact.as_ref().map(|(e, _)| {
                    e.get(&key).copied().unwrap_or(0) as f64 / exact_total.max(1) as f64
                }),
                blocks: blocks
                    .iter()
                    .map(|&b| cfg.describe(cfg.blocks[b as usize].start))
                    .collect(),
                instructions: blocks
                    .iter()
                    .map(|&b| u64::from(cfg.blocks[b as usize].insns))
                    .sum(),
                disassembly: blocks.iter().flat_map(|&b| cfg.disassemble(b)).collect(),
            }
        })
        .collect();
    let m = &samples.meta;
    let rep = PathsReport {
        program: binary.display().to_string(),
        entries: m.config.entries,
        period: m.config.period,
        unit: m.config.unit,
        samples: m.samples,
        distinct_traces: samples.traces.len(),
        instructions: m.instructions,
        cycles: m.cycles,
        handler_cycles: m.config.handler_cycles,
        overhead: samples.overhead(),
        options: opts,
        weights,
        regions: regions.regions.len(),
        max_paths: regions.limit,
        partial: a.reconstruction.stats.clone(),
        matched: a.estimate.matched,
        unmatched: a.estimate.unmatched,
        mean_matching_ratio: a.estimate.mean_matching_ratio(),
        hot_paths: hot,
        exact: exact.as_ref().map(|(_, s)| s.clone()),
        accuracy: acc,
    };
    let text = if args.json {
        rep.to_json()
    } else {
        rep.to_text()
    };
    std::io::stdout()
        .lock()
        .write_all(outcrop_events::escape::text(&text).as_bytes())?;
    Ok(())
}

/// The program a samples file recorded: as given; else, for the samples of a report
/// directory, the absolute path its `paths.json` names; else the recorded relative path under
/// the samples file's directory or one of its ancestors. Its program id is checked afterwards.
fn find_recorded_program(recorded: &str, samples: &Path) -> Option<PathBuf> {
    let p = PathBuf::from(recorded);
    if p.exists() {
        return Some(p);
    }
    let dir = std::fs::canonicalize(samples).ok()?;
    let dir = dir.parent()?;
    // a report directory's paths.json names the program's absolute path
    let from_report = read_text_bounded(&dir.join("paths.json"), "paths.json", 1 << 20)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|j| j["program"].as_str().map(PathBuf::from))
        .filter(|c| c.is_file());
    let found = match from_report {
        Some(c) => c,
        None if p.is_absolute() => return None,
        None => dir.ancestors().map(|a| a.join(&p)).find(|c| c.is_file())?,
    };
    eprintln!(
        "outcrop: the program recorded as {recorded} is {}",
        found.display()
    );
    Some(found)
}

/// The page of the program's lowest loadable segment: what llvm-profgen's offsets count from.
fn elf_base(elf: &[u8]) -> u64 {
    use object::{Object, ObjectSegment};
    object::File::parse(elf)
        .ok()
        .and_then(|f| f.segments().map(|s| s.address()).min())
        .map_or(0, |a| a & !0xfff)
}

/// `--handler-cycles`: a number of cycles or a cost preset's name.
fn parse_cost(s: &str) -> Result<u64, String> {
    if let Some(m) = outcrop_sampling::CostModel::preset(s) {
        return Ok(m.cycles_per_sample);
    }
    s.parse().map_err(|_| {
        format!("expected cycles per sample or a preset (perf-lbr, itanium2-perfmon), not {s:?}")
    })
}

/// Every path estimated from a samples file (default options, as `paths report` without
/// flags), with its share, for `outcrop diff`. The program is found as `paths report` finds
/// it and its id checked.
pub fn path_shares(samples_file: &Path) -> Result<Vec<outcrop_diff::paths::PathIn>> {
    let files = [samples_file.to_path_buf()];
    let samples = read_samples(&files, false)?;
    let Some(binary) = find_recorded_program(&samples.meta.program, samples_file) else {
        bail!(
            "the program {} recorded in {} is not here: paths cannot be compared without it",
            samples.meta.program,
            samples_file.display()
        );
    };
    let elf = read_bounded(&binary, "program", MAX_PROGRAM_BYTES)?;
    check_program(samples_file, &samples.meta.program_id, &binary, &elf, false)?;
    let cfg = program_cfg(&elf, &binary, &samples.meta.objects, None, false)?;
    let regions = Regions::new(&cfg, 256);
    let mut cache = IndexCache::default();
    let a = analyze(
        &cfg,
        &regions,
        &samples,
        Options::default(),
        Weighting::Equal,
        &mut cache,
    );
    let total: f64 = a.estimate.paths.values().sum();
    Ok(outcrop_paths::accuracy::ranked(&a.estimate.paths)
        .iter()
        .map(|((r, id), w)| {
            let blocks = regions.decode(*r, *id).unwrap_or_default();
            outcrop_diff::paths::PathIn {
                function: blocks
                    .first()
                    .map(|&b| cfg.funcs[cfg.blocks[b as usize].func as usize].name.clone())
                    .unwrap_or_default(),
                blocks: blocks
                    .iter()
                    .map(|&b| cfg.describe(cfg.blocks[b as usize].start))
                    .collect(),
                share: if total > 0.0 { w / total } else { 0.0 },
            }
        })
        .collect())
}
