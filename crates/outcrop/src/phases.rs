//! `outcrop phases`: a program's phases (basic-block vectors, SimPoint-style clustering) and
//! a sampled timing estimate. The composition is `outcrop_run::phases`.

use crate::exec::{timing_config, GuestArgs};
use crate::files::{check_output, write_output};
use crate::outcrop_phases::ClusterOptions;
use anyhow::{bail, Context, Result};
use clap::Args;
use outcrop_report::phases::PhasesReport;
use outcrop_report::Report as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `outcrop phases`.
#[derive(Args, Debug)]
pub struct PhasesArgs {
    /// Instructions per interval.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    interval: u64,
    /// Most phases tried (k = 1..=K; SimPoint's -maxK).
    #[arg(long, value_name = "K", default_value_t = 10)]
    max_k: usize,
    /// Seed of the random projection and the k-means starts.
    #[arg(long, value_name = "S", default_value_t = ClusterOptions::default().seed)]
    seed: u64,
    /// Write the basic-block vectors in SimPoint's .bb format (as QEMU's bbv plugin).
    #[arg(long, value_name = "FILE")]
    bb: Option<PathBuf>,
    /// Estimate the run's CPI with this timing model (default preset without a value) from
    /// samples of each phase.
    #[arg(long, value_name = "CONFIG", num_args = 0..=1, default_missing_value = "default", require_equals = true)]
    timing: Option<String>,
    /// Instructions simulated in detail, not counted, before each sample to fill the pipeline
    /// (default: 4,000; one interval with --per-phase 1).
    #[arg(long, value_name = "N")]
    warmup: Option<u64>,
    /// Functional warming: the last N instructions of each fast-forward update the caches, TLBs
    /// and predictors without timing them ("all": every one, as SMARTS does; 0: none).
    #[arg(long, value_name = "N|all", value_parser = outcrop_run::phases::parse_warming, default_value = "all")]
    warming: u64,
    /// Samples per phase, of --unit instructions, spread evenly over it (SMARTS within each
    /// phase); 1 simulates the phase's representative interval alone (SimPoint).
    #[arg(long, value_name = "M", default_value_t = 300)]
    per_phase: usize,
    /// Instructions measured in detail per sample (0: a whole interval).
    #[arg(long, value_name = "N", default_value_t = 1_000)]
    unit: u64,
    /// Place each phase's samples from a random start drawn from this seed, as the interval
    /// assumes (default: at the middles).
    #[arg(long, value_name = "N")]
    sample_seed: Option<u64>,
    /// The confidence of the estimate's interval, in percent.
    #[arg(long, value_name = "PCT", default_value_t = 99.7)]
    confidence: f64,
    /// The interval's target half-width, in percent of the estimate: a wider one re-plans the
    /// samples from its variance and samples once more (SMARTS's tuning; 0: never).
    #[arg(long, value_name = "PCT", default_value_t = 3.0)]
    target: f64,
    /// Also run the full model: the estimate's error, whether the interval holds it, speed-up.
    #[arg(long, requires = "timing")]
    compare: bool,
    /// Write JSON (docs/phases.md).
    #[arg(long)]
    json: bool,
    /// Write the report to FILE, or to stdout with `-o -`. Default: stderr, as `outcrop run`
    /// does (the guest's own output is not shown: it runs more than once).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    guest: GuestArgs,
}

/// `outcrop phases`.
pub fn run(args: PhasesArgs) -> Result<ExitCode> {
    if args.guest.command.is_empty() {
        bail!("no program: outcrop phases [OPTIONS] -- PROG [ARGS...]");
    }
    for p in [&args.bb, &args.output].into_iter().flatten() {
        check_output(p)?;
    }
    let config = outcrop_run::phases::PhaseConfig {
        interval: args.interval,
        cluster: ClusterOptions {
            max_k: args.max_k,
            seed: args.seed,
            ..ClusterOptions::default()
        },
        timing: args.timing.as_deref().map(timing_config).transpose()?,
        warmup: args.warmup.unwrap_or(if args.per_phase <= 1 {
            args.interval
        } else {
            4_000
        }),
        warming: args.warming,
        per_phase: args.per_phase,
        unit: args.unit,
        compare: args.compare,
        sample_seed: args.sample_seed,
        confidence: args.confidence / 100.0,
        target: (args.target != 0.0).then_some(args.target / 100.0),
        engine: args.guest.run_config().engine,
    };
    config.check()?;
    let mut spec = args.guest.spec();
    spec.stdio = outcrop_run::Stdio::Quiet;
    let image = outcrop_run::ProgramImage::read(&spec.path())?.with_naming(spec.naming());
    let run = outcrop_run::phases::phases(&spec, image.symbols().ok(), &config)
        .with_context(|| format!("phases of {}", spec.path().display()))?;
    if let Some(bb) = &args.bb {
        let text = run.bbv.to_bb();
        write_output(bb, |f| {
            f.write_all(text.as_bytes())?;
            Ok(())
        })
        .with_context(|| format!("writing {}", bb.display()))?;
    }
    let report = PhasesReport::new(&run, image.symbols().ok());
    let text = [PhasesReport::to_text, PhasesReport::to_json][usize::from(args.json)](&report);
    match &args.output {
        Some(_) => crate::files::emit(args.output.as_deref(), &text)?,
        None => std::io::stderr()
            .lock()
            .write_all(crate::outcrop_events::escape::text(&text).as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}
