//! `outcrop instrument`: rewrites GCC RISC-V assembly (`gcc -O2 -S`) to count function entries
//! or branch edges, fully, with a software counter or with branch-on-random
//! (`outcrop_instrument`; docs/instrument.md).

use crate::files::{read_text_bounded, write_output, MAX_PROFILE_BYTES};
use crate::outcrop_instrument::{instrument, Config, Sampling, Sites};
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;

/// What `--sites` counts.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SitesArg {
    /// Every function entry (invocation counts).
    Entries,
    /// Both edges of every conditional branch.
    Edges,
}

/// How `--sampling` decides.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SamplingArg {
    /// Count every execution.
    Full,
    /// Arnold-Ryder software counter: every N-th check samples.
    Counter,
    /// One branch-on-random per check: samples with probability 1/N.
    Brr,
}

/// Options of `outcrop instrument`.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  riscv64-linux-gnu-gcc -O2 -S -o lz.s workloads/src/lz.c
  outcrop instrument lz.s -o lz.brr.s --sites entries --sampling brr --interval 1024
  riscv64-linux-gnu-gcc -static -o lz.brr lz.brr.s workloads/runtime/outcrop_rt.c
  outcrop exec --env OUTCROP_PROFILE=lz.sites --allow-rw . -- ./lz.brr
  outcrop brr overlap lz-full.sites lz.sites

The runtime (workloads/runtime/outcrop_rt.c) writes one `COUNT NAME` line per site to
$OUTCROP_PROFILE at exit, and emulates brr with a SIGILL handler on machines without it
(qemu-riscv64-static, real hardware, `--brr trap`). workloads/build.sh --instrumented DIR
builds every variant of the bundled workloads.")]
pub struct InstrumentArgs {
    /// GCC RISC-V assembly (`gcc -O2 -S`).
    input: PathBuf,
    /// Where to write the rewritten assembly (`-` for stdout).
    #[arg(short, long, value_name = "OUT.s")]
    output: PathBuf,
    /// What to count.
    #[arg(long, value_enum, default_value = "entries")]
    sites: SitesArg,
    /// How sites sample.
    #[arg(long, value_enum, default_value = "full")]
    sampling: SamplingArg,
    /// One sample per N checks (counter: exactly; brr: on average, a power of two 2..65536).
    #[arg(long, value_name = "N", default_value_t = 1024)]
    interval: u64,
    /// Arnold-Ryder Full-Duplication: a clean and an instrumented copy of each function,
    /// one check at the entry and at each loop head instead of one per site.
    #[arg(long)]
    full_duplication: bool,
    /// Insert the checks with an empty sample path (no counting): measures the sampling
    /// framework's own cost.
    #[arg(long)]
    framework_only: bool,
    /// Suffix for the names of file-local functions (`name@UNIT`; default: the input's
    /// file stem).
    #[arg(long, value_name = "UNIT")]
    unit: Option<String>,
    /// Print the summary (sites, functions, spills) as JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// Runs `outcrop instrument`.
pub fn run(a: InstrumentArgs) -> Result<()> {
    let cfg = Config {
        sites: match a.sites {
            SitesArg::Entries => Sites::Entries,
            SitesArg::Edges => Sites::Edges,
        },
        sampling: match a.sampling {
            SamplingArg::Full => Sampling::Full,
            SamplingArg::Counter => Sampling::Counter,
            SamplingArg::Brr => Sampling::Brr,
        },
        interval: a.interval,
        full_duplication: a.full_duplication,
        count: !a.framework_only,
        unit: a.unit.clone().unwrap_or_else(|| {
            a.input
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
    };
    cfg.check()?;
    let src = read_text_bounded(&a.input, "assembly file", MAX_PROFILE_BYTES)?;
    let out = instrument(&src, &cfg).with_context(|| a.input.display().to_string())?;
    if a.output.as_os_str() == "-" {
        let stdout = std::io::stdout();
        let mut o = stdout.lock();
        o.write_all(out.text.as_bytes())?;
        o.flush()?;
    } else {
        write_output(&a.output, |f| Ok(f.write_all(out.text.as_bytes())?))?;
    }
    if a.json {
        let j = serde_json::json!({
            "input": a.input.display().to_string(),
            "sites": out.sites.len(),
            "functions": out.functions,
            "spilled_functions": out.spilled,
            "loop_heads": out.loop_heads,
            "skipped_branches": out.skipped_branches,
        });
        println!("{j:#}");
    } else {
        eprintln!(
            "outcrop instrument: {}: {} functions, {} sites ({} {}{}){}{}{}",
            a.input.display(),
            out.functions,
            out.sites.len(),
            cfg.sites.name(),
            cfg.sampling.name(),
            match cfg.sampling {
                Sampling::Full => String::new(),
                _ => format!(" 1/{}", cfg.interval),
            },
            if cfg.full_duplication {
                format!(", full duplication: {} loop heads", out.loop_heads)
            } else {
                String::new()
            },
            if out.spilled.is_empty() {
                String::new()
            } else {
                let shown: Vec<&str> = out.spilled.iter().take(4).map(|s| s.as_str()).collect();
                format!(
                    "; {} spill two registers around each site (no two free scratch registers): {}{}",
                    out.spilled.len(),
                    shown.join(", "),
                    if out.spilled.len() > shown.len() { ", ... (--json lists all)" } else { "" }
                )
            },
            if out.skipped_branches > 0 {
                format!(
                    "; {} branches inside inline assembly left alone",
                    out.skipped_branches
                )
            } else {
                String::new()
            }
        );
    }
    Ok(())
}
