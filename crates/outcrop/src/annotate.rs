//! `outcrop annotate`: the files are `outcrop_cli::annotate`'s, the listing the report's.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `outcrop annotate`.
#[derive(Args, Debug)]
pub struct AnnotateArgs {
    /// A report directory (`outcrop run --report DIR`) or its profile.json.
    #[arg(value_name = "REPORT")]
    report: PathBuf,
    /// The function: as the report names it, its mangled name, or its name without C++
    /// parameters or a clone suffix (`worker` for `worker(int, int)`, `f` for `f.part.0`).
    #[arg(value_name = "FUNCTION")]
    function: String,
    /// The program, when it is not at the path the report names (its id is checked).
    #[arg(long, value_name = "PROG")]
    binary: Option<PathBuf>,
    /// Look for the program's separate debug file (its lines) in DIR first.
    #[arg(long, value_name = "DIR")]
    debug_dir: Vec<PathBuf>,
    /// Write JSON (docs/formats.md "Annotations").
    #[arg(long)]
    json: bool,
    /// Write to FILE instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
}

pub fn run(args: AnnotateArgs) -> Result<()> {
    let naming = outcrop_run::objects::Naming {
        debug: outcrop_run::debuginfo::DebugDirs::new(&args.debug_dir, None),
        ..Default::default()
    };
    let a = outcrop_cli::annotate::annotate(&outcrop_cli::annotate::AnnotateRequest {
        report: &args.report,
        function: &args.function,
        binary: args.binary.as_deref(),
        naming,
    })?;
    let text = if args.json {
        outcrop_report::json(&a)
    } else {
        a.to_text()
    };
    Ok(crate::files::emit(args.output.as_deref(), &text)?)
}
