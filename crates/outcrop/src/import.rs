//! `outcrop import`: real hardware's samples (perf.data with branch stacks, or `perf script`
//! text) into Outcrop's samples file, with a sampled flat profile of the program.

use crate::files::write_output;
use crate::outcrop_rap::observe::{RapSpec, Stream};
use crate::outcrop_rv::symbols::Names;
use anyhow::{bail, Context, Result};
use clap::Args;
use outcrop_report::import::ImportReport;
use outcrop_report::run_report::{FileNames, RunReport};
use outcrop_report::Report as _;
use outcrop_run::import::{import, ImportConfig, ImportHooks};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// A perf.data file (`perf record -b`; pipe mode too), or the text of
    /// `perf script -F ip,brstack` (or `-F pid,tid,ip,brstack`) from it or another tool.
    #[arg(value_name = "INPUT")]
    input: PathBuf,
    /// The program whose samples to keep (an ELF with symbols: x86-64 or RISC-V). Its
    /// mappings are found in the file by build-id, else by file name.
    #[arg(long, value_name = "PROG")]
    binary: PathBuf,
    /// Where to write the samples file (`outcrop paths report` reads it).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "SAMPLES",
        default_value = "perf.samples"
    )]
    output: PathBuf,
    /// Functions shown in the sampled flat profile.
    #[arg(long, value_name = "N", default_value_t = 10)]
    top: usize,
    /// Print the import's statistics and the flat profile as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Also write the report directory a run writes (`outcrop run --report`): the page,
    /// the profile by function and line, flame graph, speedscope, pprof and RAP's hot ranges
    /// of the sampled IPs (and data addresses, when samples carry them), and paths.json —
    /// all from samples, which the page says.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// RAP's error bound ε for the hot ranges of the report (a fraction of the samples).
    #[arg(long, value_name = "E", default_value_t = 0.01)]
    eps: f64,
    /// Read the recorded shared objects beneath DIR (`/usr/lib/x.so` as `DIR/usr/lib/x.so`),
    /// as `perf report --symfs` does (default: their paths here; build-ids must match).
    #[arg(long, value_name = "DIR")]
    symfs: Option<PathBuf>,
    /// Look for separate debug files (stripped libraries' symbols) in DIR first, then
    /// /usr/lib/debug, by build-id and .gnu_debuglink. Repeatable.
    #[arg(long, value_name = "DIR")]
    debug_dir: Vec<PathBuf>,
    /// Show C++ and Rust names as the symbol tables spell them.
    #[arg(long)]
    no_demangle: bool,
    /// Read JIT maps (perf-PID.map: `START SIZE NAME` per line, hex) from DIR, as perf does.
    #[arg(long, value_name = "DIR", default_value = "/tmp")]
    jit_dir: PathBuf,
}

pub fn run(args: ImportArgs) -> Result<ExitCode> {
    let report_dirs: Vec<&Path> = args.report.iter().map(PathBuf::as_path).collect();
    crate::files::distinct_outputs(&[&args.input, &args.binary], &[&args.output], &report_dirs)?;
    if let Some(dir) = &args.report {
        crate::files::check_report_dir(dir)?;
    }
    crate::files::check_output(&args.output)?;
    let image =
        outcrop_run::ProgramImage::read(&args.binary)?.with_naming(outcrop_run::objects::Naming {
            names: if args.no_demangle {
                Names::Mangled
            } else {
                Names::Demangled
            },
            debug: outcrop_run::debuginfo::DebugDirs::new(&args.debug_dir, None),
        });
    let bar = outcrop_cli::input::file_progress(&args.input, "importing");
    let config = ImportConfig {
        profile: true,
        symfs: args.symfs.clone(),
        build_id_cache: outcrop_cli::input::perf_build_id_cache(),
        jit_dir: Some(args.jit_dir.clone()),
        rap: match &args.report {
            Some(_) => {
                let tree = crate::outcrop_rap::Config::builder()
                    .eps(args.eps)
                    .build()
                    .context("RAP configuration")?;
                Some(RapSpec::new(&[Stream::Pc, Stream::LoadAddr], tree, true))
            }
            None => None,
        },
    };
    let result = import(
        &args.input,
        &image,
        &config,
        ImportHooks {
            progress: &mut |at, _| bar.set_position(at),
        },
    )?;
    let imported = &result.imported;
    bar.finish_and_clear();
    let st = &imported.stats;
    if st.samples == 0 {
        bail!("{} holds no samples", args.input.display());
    }
    write_output(&args.output, |f| {
        f.write_all(imported.samples.to_text().as_bytes())?;
        Ok(())
    })
    .with_context(|| format!("writing {}", args.output.display()))?;
    let rep = ImportReport::new(&result, &image, &args.input, &args.output, args.top)?;
    let out = if args.json {
        rep.to_json()
    } else {
        rep.to_text()
    };
    std::io::stdout()
        .lock()
        .write_all(crate::outcrop_events::escape::text(&out).as_bytes())?;
    if let Some(dir) = &args.report {
        let names = FileNames {
            samples: Some(args.output.clone()),
            wpp: None,
            report_dir: Some(dir.clone()),
            program: std::fs::canonicalize(&args.binary).ok(),
        };
        let report = RunReport::new(&result.summaries, &image, names)?;
        let files: Vec<(String, Vec<u8>)> = report
            .directory_files()
            .into_iter()
            .map(|(n, b)| (n.to_string(), b))
            .collect();
        outcrop_cli::files::write_report_dir(dir, &files)?;
        eprintln!("outcrop: report → {}", dir.display());
    }
    if let Some(w) = rep.warning() {
        eprintln!("outcrop: warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}
