//! `outcrop diff A B`: what changed between two runs. This module finds and reads the files;
//! `outcrop_diff` compares, `outcrop_report::diff` renders.

use crate::outcrop_diff::{compare, CompareOptions};
use anyhow::{bail, Context, Result};
use clap::Args;
use outcrop_report::Report as _;
use outcrop_run::diff::{input_bytes, load};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `outcrop diff`.
#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The baseline: a report directory (`outcrop run --report DIR`), a profile.json or
    /// report.json, a rap.json, a saved RAP tree (.rap), a samples file or a .wpp file.
    #[arg(value_name = "A")]
    a: PathBuf,
    /// What to compare with A (B − A is reported): the same kind of input.
    #[arg(value_name = "B")]
    b: PathBuf,
    /// Write JSON instead of text (docs/diff.md).
    #[arg(long)]
    json: bool,
    /// Write the report to FILE instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also write a directory: diff.html (the page), diff.json, diff.svg (the differential
    /// flame graph), and a.speedscope.json/b.speedscope.json and a.firefox.json/b.firefox.json
    /// to open side by side.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// Compare even when A and B look like different programs.
    #[arg(long)]
    force: bool,
    /// Match functions by name and lines by file and line even for the same code.
    #[arg(long)]
    by_symbol: bool,
    /// Share of a path profile at which a path is hot (paths gained and lost).
    #[arg(long, value_name = "F", default_value_t = 0.01)]
    hot: f64,
    /// Share of a saved RAP tree's events at which a range is hot (.rap inputs).
    #[arg(long, value_name = "F", default_value_t = 0.01)]
    rap_hot: f64,
}

/// `outcrop diff`.
pub fn run(args: DiffArgs) -> Result<ExitCode> {
    if !(0.0..=1.0).contains(&args.hot) || !(0.0..=1.0).contains(&args.rap_hot) {
        bail!("--hot and --rap-hot are fractions between 0 and 1");
    }
    let outputs: Vec<&Path> = args.output.iter().map(PathBuf::as_path).collect();
    let report_dirs: Vec<&Path> = args.report.iter().map(PathBuf::as_path).collect();
    crate::files::distinct_outputs(&[&args.a, &args.b], &outputs, &report_dirs)?;
    if let Some(dir) = &args.report {
        crate::files::check_report_dir(dir)?;
    }
    if let Some(o) = &args.output {
        crate::files::check_output(o)?;
    }
    // the parsed inputs and their comparison take up to 6 times the input in address space
    // (measured under prlimit: 8.6 MB profiles need 150 MB with the binary's 45 MB), and the
    // allocator reserves arenas besides
    crate::files::check_memory_for(
        &format!("{} and {}", args.a.display(), args.b.display()),
        input_bytes(&args.a).saturating_add(input_bytes(&args.b)),
        6,
        64 << 20,
    )?;
    let mut warn = crate::paths::warn;
    let a = load(&args.a, args.rap_hot, &mut warn)
        .with_context(|| format!("reading A ({})", args.a.display()))?;
    let b = load(&args.b, args.rap_hot, &mut warn)
        .with_context(|| format!("reading B ({})", args.b.display()))?;
    let diff = compare(
        &a.inputs,
        &b.inputs,
        CompareOptions {
            profile: crate::outcrop_diff::profile::Options {
                force: args.force,
                by_symbol: args.by_symbol,
            },
            hot: args.hot,
        },
    )?;
    let view = outcrop_report::diff::DiffText(&diff);
    let text = if args.json {
        view.to_json()
    } else {
        view.to_text()
    };
    if let Some(dir) = &args.report {
        outcrop_cli::outputs::write_diff_dir(dir, &diff, &a, &b)?;
    }
    crate::files::emit(args.output.as_deref(), &text)?;
    Ok(ExitCode::SUCCESS)
}
