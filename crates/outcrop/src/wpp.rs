//! `outcrop wpp record|replay|report`: whole-program paths and strata (Gorton, "Dynamic
//! Whole Program Profiling"): lossless capture on the machine, exact replay, the paper's
//! tables and figures.

use crate::exec::GuestArgs;
use crate::files::write_output;
use crate::outcrop_strata::{Codec, Config, Replay, WppFile};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use outcrop_cli::console::{console_hooks, read_image, report_ending};
use outcrop_report::wpp::{self as wpp_report, WppReport};
use outcrop_report::Report as _;
use outcrop_run::wpp::{WppAnalysis, WppInput};
use outcrop_run::CaptureOptions;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `outcrop wpp` subcommands.
#[derive(Subcommand, Debug)]
pub enum WppCommand {
    /// Run a program on the machine and write its whole-program profile.
    ///
    /// Every basic block the program executes is kept, in order: blocks form cyclic paths
    /// (a path ends when its next block already occurs in it; paper §III.A), runs of the same
    /// path become (path, trip count) pairs, and stratum layers apply the same rule to those
    /// pairs, layer over layer (§III.B). The top layer's stream and the dictionaries are
    /// compressed (zstd) into one file, written to FILE.partial and renamed when complete.
    /// The machine thread only appends block records; the builder and the compressor run on
    /// threads of their own (--inline: all on one). The guest's stdio is passed through and
    /// its exit status returned.
    ///
    /// Examples:
    ///   outcrop wpp record -o qsort.wpp -- workloads/bin/qsort_ints
    ///   outcrop wpp record -o lz.wpp --layers 1 --codec zlib -- workloads/bin/lz
    ///   outcrop wpp record -o f.wpp --baseline --allow-rw . -- ./prog input.txt
    #[command(verbatim_doc_comment)]
    Record(Box<RecordArgs>),
    /// Write the exact basic-block sequence of a profile: start addresses, in order.
    ///
    /// Text: one `0x`-prefixed hex address per line (readable by `outcrop rap` and
    /// `outcrop trace convert`); u64le: raw little-endian 8-byte addresses.
    ///
    /// Examples:
    ///   outcrop wpp replay qsort.wpp | head
    ///   outcrop wpp replay --format u64le -o blocks.u64 qsort.wpp
    ///   outcrop wpp replay qsort.wpp | outcrop rap --hot 0.05 -
    #[command(verbatim_doc_comment)]
    Replay(ReplayArgs),
    /// Report on a profile: the paper's Tables 3 and 4 for the run, the hottest paths
    /// (executions × instructions) with their disassembly, compression ratios, collection
    /// slowdown, and SVG plots of path length vs trip count (Figure 2) and stratum lengths
    /// (Figure 3).
    ///
    /// Examples:
    ///   outcrop wpp report qsort.wpp
    ///   outcrop wpp report qsort.wpp --top 5 --svg plots/
    ///   outcrop wpp report qsort.wpp --json | jq .paths
    #[command(verbatim_doc_comment)]
    Report(ReportArgs),
}

/// The compressor of the file's sections.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CodecName {
    /// zstd (default), with long-distance matching.
    Zstd,
    /// zlib, the paper's compressor (for comparison).
    Zlib,
}

/// Options of `outcrop wpp record`.
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// The profile to write.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,

    #[command(flatten)]
    capture: CaptureArgs,

    /// First run the program bare (output discarded) and store its time, so reports show
    /// the collection slowdown.
    #[arg(long)]
    baseline: bool,

    #[command(flatten)]
    guest: GuestArgs,
}

/// How a whole-program profile is built and compressed (shared by `wpp record` and `run --wpp`).
#[derive(Args, Debug, Clone)]
pub struct CaptureArgs {
    /// Stratum layers above the paths (the paper built 1).
    #[arg(long, value_name = "N", default_value_t = Config::default().layers)]
    layers: usize,

    /// Path-length limit in blocks (paper: 2048); a longer path is cut, nothing is lost.
    #[arg(long, value_name = "BLOCKS", default_value_t = 2048)]
    path_limit: usize,

    /// Most elements each stratum layer's dictionary may hold; new elements beyond it are
    /// passed up element by element (bounded memory, still lossless).
    #[arg(long, value_name = "N", default_value_t = Config::default().layer_cap)]
    layer_cap: usize,

    /// Compressor of the sections.
    #[arg(long, value_enum, default_value_t = CodecName::Zstd)]
    codec: CodecName,

    /// Store every stream chunk as zstd-compressed columns, without also trying the context
    /// model (by default each chunk keeps whichever of the two is smaller; docs/strata.md).
    #[arg(long)]
    no_context_model: bool,

    /// Compression level of the stream (zstd 1–22, default 12; zlib 0–9, default 9). zstd
    /// dictionaries are always compressed at 19.
    #[arg(long, value_name = "L")]
    level: Option<i32>,

    /// Run every stage on the machine's thread (to measure what the threads buy).
    #[arg(long)]
    inline: bool,
}

impl CaptureArgs {
    /// The capture options these flags describe.
    pub fn options(&self) -> Result<CaptureOptions> {
        let codec = match self.codec {
            CodecName::Zstd => Codec::Zstd {
                level: self.level.unwrap_or(12),
                window_log: 27,
                context_model: !self.no_context_model,
            },
            CodecName::Zlib => Codec::Zlib {
                level: match self.level {
                    None => 9,
                    Some(l) if (0..=9).contains(&l) => l as u32,
                    Some(l) => bail!("--level {l}: zlib levels are 0–9"),
                },
            },
        };
        let config = Config {
            max_path_len: self.path_limit,
            layers: self.layers,
            layer_cap: self.layer_cap,
            codec,
            ..Config::default()
        };
        config.validate().context("whole-program capture")?;
        Ok(CaptureOptions {
            config,
            threaded: !self.inline,
            ..CaptureOptions::default()
        })
    }
}

/// Replay output formats.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ReplayFormat {
    /// One `0x…` hex address per line.
    Text,
    /// Raw little-endian u64 addresses.
    U64le,
}

/// Options of `outcrop wpp replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The profile.
    #[arg(value_name = "FILE")]
    file: PathBuf,

    /// Output format.
    #[arg(long, value_enum, default_value_t = ReplayFormat::Text)]
    format: ReplayFormat,

    /// Write to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<PathBuf>,

    /// The most blocks to replay: a .wpp is a grammar, and a small file can claim a stream
    /// of many terabytes once written out. A file claiming more is refused before anything
    /// is written.
    #[arg(long, value_name = "N", default_value_t = MAX_REPLAY_BLOCKS)]
    max_blocks: u64,
}

/// The default bound on the blocks one command replays from a `.wpp` (`--max-blocks`):
/// 2^34, about 17 billion (minutes of replay; a recording that long is hours of guest time).
pub const MAX_REPLAY_BLOCKS: u64 = 1 << 34;

/// Refuses to replay `file` (read from `path`) if its stream expands to more than
/// `max_blocks` blocks.
pub fn check_replay_len(path: &Path, file: &WppFile, max_blocks: u64) -> Result<()> {
    if file.total_blocks > max_blocks {
        bail!(
            "{}: the stream expands to {} blocks, more than --max-blocks {max_blocks}; raise it to replay this file",
            path.display(),
            file.total_blocks
        );
    }
    Ok(())
}

/// Options of `outcrop wpp report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The profile.
    #[arg(value_name = "FILE")]
    file: PathBuf,

    /// How many of the hottest paths to list.
    #[arg(long, value_name = "N", default_value_t = 10)]
    top: usize,

    /// The program, for disassembly and function names (default: the recorded path, when
    /// it still exists).
    #[arg(long, value_name = "PROG")]
    binary: Option<PathBuf>,

    /// Write the plots (fig2-path-length-vs-trips.svg, fig3-stratum-lengths.svg) to DIR.
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,

    /// Write the report as JSON.
    #[arg(long)]
    json: bool,

    /// Report against --binary even if the profile was recorded from a different build of the
    /// program (by GNU build-id, or a hash of the loaded code).
    #[arg(long)]
    ignore_program_id: bool,

    /// Where the shared libraries of a dynamically linked program are (as `run --sysroot`):
    /// the objects the file lists are read from DIR/PATH, checked by build-id, and name the
    /// hot paths' blocks in them. Default: their recorded paths on this host.
    #[arg(long, value_name = "DIR")]
    sysroot: Option<PathBuf>,
}

/// Runs a `wpp` subcommand.
pub fn run(cmd: WppCommand) -> Result<ExitCode> {
    match cmd {
        WppCommand::Record(a) => record(*a),
        WppCommand::Replay(a) => replay(a).map(|()| ExitCode::SUCCESS),
        WppCommand::Report(a) => report_cmd(a).map(|()| ExitCode::SUCCESS),
    }
}

fn record(args: RecordArgs) -> Result<ExitCode> {
    let opts = args.capture.options()?;
    crate::files::check_output(&args.output)?;
    let image = read_image(&args.guest.spec())?;
    let baseline = if args.baseline {
        // the same program, quiet, with nothing attached
        let mut bare = args.guest.run_config();
        bare.program.stdio = outcrop_run::Stdio::Quiet;
        outcrop_run::execute(&bare, &image, console_hooks(bare.program.stdio))?
            .wall
            .as_secs_f64()
    } else {
        0.0
    };

    let mut config = args.guest.run_config();
    config.wpp = Some(CaptureOptions {
        baseline_seconds: baseline,
        ..opts
    });
    let deterministic = args.guest.deterministic;
    let out = crate::files::create_output(&args.output)?;
    let mut hooks = console_hooks(config.program.stdio);
    hooks.wpp_sink = Some(Box::new(BufWriter::with_capacity(1 << 20, out.file()?)));
    // only the capture's own errors are about the file being written
    let s = outcrop_run::execute(&config, &image, hooks).map_err(|e| match e {
        outcrop_run::Error::Wpp(_) => {
            anyhow::Error::new(e).context(format!("writing {}", args.output.display()))
        }
        e => e.into(),
    })?;
    out.commit()?;
    report_ending(&s);
    let Some(w) = &s.wpp else {
        bail!("capture produced nothing");
    };
    let code = s.status().0;
    let seconds = (!deterministic).then_some(baseline);
    eprint!(
        "{}",
        wpp_report::capture_summary(&w.stats, w.bytes, &args.output, seconds)
    );
    Ok(ExitCode::from((code & 0xff) as u8))
}

fn read_profile(path: &Path) -> Result<WppFile> {
    Ok(outcrop_run::wpp::read_profile(path)?)
}

fn replay(args: ReplayArgs) -> Result<()> {
    let file = read_profile(&args.file)?;
    check_replay_len(&args.file, &file, args.max_blocks)?;
    let write = |w: &mut dyn Write| -> Result<()> {
        let mut w = BufWriter::with_capacity(1 << 20, w);
        let mut err = None;
        let mut buf = Vec::with_capacity(4096);
        Replay::new(&file).for_each_path(|p| {
            if err.is_some() {
                return;
            }
            buf.clear();
            match args.format {
                ReplayFormat::Text => {
                    for &a in p {
                        let _ = writeln!(buf, "{a:#x}");
                    }
                }
                ReplayFormat::U64le => {
                    for &a in p {
                        buf.extend_from_slice(&a.to_le_bytes());
                    }
                }
            }
            if let Err(e) = w.write_all(&buf) {
                err = Some(e);
            }
        });
        if let Some(e) = err {
            return Err(e.into());
        }
        w.flush()?;
        Ok(())
    };
    match &args.output {
        Some(out) => {
            write_output(out, |f| write(f)).with_context(|| format!("writing {}", out.display()))
        }
        None => write(&mut std::io::stdout().lock()),
    }
}

fn report_cmd(args: ReportArgs) -> Result<()> {
    let input = WppInput {
        file: args.file.clone(),
        binary: args.binary.clone(),
        sysroot: args.sysroot.clone(),
        ignore_program_id: args.ignore_program_id,
    };
    let a = WppAnalysis::read(&input, &mut |w| eprintln!("outcrop: warning: {w}"))?;
    let report = WppReport::new(&a, args.top);
    if let Some(dir) = &args.svg {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let name = Path::new(&a.file.stats.run.program)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        save_svg(
            &dir.join("fig2-path-length-vs-trips.svg"),
            &wpp_report::fig2_svg(&name, &report.path_length_vs_trips)?,
        )?;
        let l0 = report
            .layers
            .first()
            .map(|l| l.lengths.as_slice())
            .unwrap_or(&[]);
        save_svg(
            &dir.join("fig3-stratum-lengths.svg"),
            &wpp_report::fig3_svg(&name, l0)?,
        )?;
    }
    let text = if args.json {
        report.to_json()
    } else {
        report.to_text()
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    out.write_all(crate::outcrop_events::escape::text(&text).as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Writes an SVG figure.
fn save_svg(path: &Path, svg: &str) -> Result<()> {
    write_output(path, |f| Ok(f.write_all(svg.as_bytes())?))
        .with_context(|| format!("writing {}", path.display()))
}
