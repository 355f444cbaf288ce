//! `outcrop brr`: branch-on-random tools. `overlap FULL SAMPLED`: how close a sampled site
//! profile is to the full one (the paper's accuracy measure, §4.1).

use crate::files::{read_text_bounded, MAX_PROFILE_BYTES};
use crate::outcrop_sampling::{overlap, SiteProfile};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `outcrop brr` subcommands.
#[derive(Subcommand, Debug)]
pub enum BrrCommand {
    /// The overlap percentage of a sampled site profile with the full one: Σ over sites of
    /// min(share in full, share in sampled), 100% when the shapes agree exactly (the
    /// branch-on-random paper §4.1, after Arnold and Ryder).
    ///
    /// A site profile is text, one `COUNT NAME` line per site (blank lines and `#` comments
    /// ignored), as the instrumentation runtime writes to $OUTCROP_PROFILE.
    ///
    /// Examples:
    ///   outcrop brr overlap full.txt sampled.txt
    ///   outcrop brr overlap --json full.txt sampled.txt
    #[command(verbatim_doc_comment)]
    Overlap(OverlapArgs),
}

/// Options of `outcrop brr overlap`.
#[derive(Args, Debug)]
pub struct OverlapArgs {
    /// The full (unsampled) profile.
    full: PathBuf,
    /// The sampled profile.
    sampled: PathBuf,
    /// The report as JSON (accuracy, totals, every site's two shares).
    #[arg(long)]
    json: bool,
    /// How many of the sites that cost the most accuracy to list.
    #[arg(long, value_name = "N", default_value_t = 10)]
    top: usize,
}

fn read(path: &Path) -> Result<SiteProfile> {
    let text = read_text_bounded(path, "site profile", MAX_PROFILE_BYTES)?;
    SiteProfile::parse(&text).with_context(|| path.display().to_string())
}

/// Runs an `outcrop brr` subcommand.
pub fn run(cmd: BrrCommand) -> Result<()> {
    match cmd {
        BrrCommand::Overlap(a) => {
            let o = overlap(&read(&a.full)?, &read(&a.sampled)?);
            let text = if a.json {
                outcrop_report::json(&o)
            } else {
                outcrop_report::brr::overlap_text(&o, a.top)
            };
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            out.write_all(crate::outcrop_events::escape::text(&text).as_bytes())?;
            out.flush()?;
            Ok(())
        }
    }
}
