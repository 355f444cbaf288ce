//! `cargo run --release -p xtask -- study-rap [--workloads a,b] [--jobs N] [--slurm] [--svg FILE]`:
//! the RAP paper's §4 studies on the bundled workloads. One job per compute workload and ε
//! (10% and 1%; b = 4, 64-bit universe, hot ≥ 10%): a run with RAP over the streams below,
//! exact counts beside, the timing model on; its record is the run's RAP report
//! (`outcrop_report::RapRunReport`, typed). Prints the Markdown tables of docs/studies/rap.md:
//! * Figure 7: maximum and mean tree size (nodes) for code (`block`) and load values;
//! * Figure 8: maximum and mean percent error of the hot ranges against exact counts;
//! * Figure 5: the hot load-value ranges of one workload;
//! * Figure 9: coverage of loads, L1D misses and L2 misses by hot ranges of width ≤ 2^k;
//! * Figure 10: the zero-load memory ranges of one workload;
//! * Figure 6: the code tree's size over the run, every workload (SVG with `--svg FILE`);
//! * §4 narrow operands: hot ranges of the pcs of instructions whose sources fit in 16 bits.
//!
//! Records are kept in `target/studies/rap/` (`--results DIR`): an interrupted study resumes,
//! `--fresh` starts over, `--slurm` runs the jobs as a Slurm job array (crates/studies).

use crate::sweep::SweepOptions;
use crate::{Context, Result};
use outcrop_rap::observe::{RapSpec, Stream};
use outcrop_report::{FileNames, HotEntry, RapRunReport, RunReport, StreamReport};
use outcrop_run::{execute, Hooks, ProgramImage, RunConfig};
use outcrop_studies::chart::{grid, Panel, Series};
use outcrop_studies::{cells, table::Table};
use outcrop_studies::{Job, Manifest, Study};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

const STREAMS: [Stream; 6] = [
    Stream::Block,
    Stream::LoadValue,
    Stream::L1dMissValue,
    Stream::L2MissValue,
    Stream::ZeroLoadAddr,
    Stream::NarrowPc,
];
const EPS: [f64; 2] = [0.1, 0.01];

/// Options of `study-rap`.
#[derive(Debug, Clone)]
pub struct Config {
    /// The sweep: workloads, jobs, results, Slurm.
    pub study: SweepOptions,
    /// Write Figure 6 (the code tree's size over each run) to FILE.
    pub svg: Option<PathBuf>,
}

/// The study: every selected workload at each ε.
pub struct RapStudy {
    /// Workload names (empty: the compute set).
    pub workloads: Vec<String>,
}

/// One job's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// The trees' error bound.
    pub eps: f64,
}

impl Study for RapStudy {
    type Params = Params;
    type Output = RapRunReport;

    fn name(&self) -> &str {
        "rap"
    }

    fn jobs(&self, m: &Manifest) -> Vec<Job<Params>> {
        let Ok(ws) = m.select(&self.workloads) else {
            return Vec::new();
        };
        ws.iter()
            .flat_map(|w| {
                EPS.iter().map(move |&eps| {
                    Job::new(&format!("{}-eps{eps}", w.name), &w.name, Params { eps })
                })
            })
            .collect()
    }

    fn run(
        &self,
        m: &Manifest,
        job: &Job<Params>,
        scratch: &Path,
    ) -> outcrop_studies::Result<RapRunReport> {
        let mut c = RunConfig::new(m.spec(&job.workload, scratch)?);
        c.timing =
            Some(outcrop_timing::Config::preset("default").map_err(outcrop_run::Error::from)?);
        c.classes = true;
        let tree = outcrop_rap::Config::builder()
            .eps(job.params.eps)
            .branching(4)
            .build()
            .map_err(outcrop_run::Error::from)?;
        c.rap = Some(RapSpec::new(&STREAMS, tree, true));
        let image = ProgramImage::read(&c.program.path())?;
        let s = execute(&c, &image, Hooks::default())?;
        let report =
            RunReport::new(&s, &image, FileNames::default()).map_err(outcrop_run::Error::from)?;
        report
            .rap
            .ok_or_else(|| outcrop_studies::Error::Job("the run made no RAP report".into()))
    }
}

struct Run {
    name: String,
    /// One report per ε in `EPS`.
    reports: Vec<RapRunReport>,
}

/// `study-rap`: runs the sweep (or resumes it) and writes the tables of docs/studies/rap.md to `out`.
pub fn run(
    args: Config,
    out: &mut dyn std::io::Write,
    log: &mut (dyn std::io::Write + Send),
) -> Result<()> {
    let study = RapStudy {
        workloads: args.study.workloads.clone(),
    };
    let manifest = crate::sweep::manifest()?;
    manifest.select(&study.workloads)?;
    let Some(records) = crate::sweep::run(&study, &manifest, &args.study, log)? else {
        return Ok(());
    };
    let mut runs: Vec<Run> = Vec::new();
    for r in records {
        let report = r.output.with_context(|| format!("{}: no output", r.job))?;
        for s in STREAMS {
            crate::ensure!(
                report.streams.iter().any(|x| x.stream == s.name()),
                "{}: the record has no {} stream (made by another version? run with --fresh)",
                r.job,
                s.name()
            );
        }
        match runs.last_mut() {
            Some(last) if last.name == r.workload => last.reports.push(report),
            _ => runs.push(Run {
                name: r.workload,
                reports: vec![report],
            }),
        }
    }
    print_tables(&runs, out)?;
    if let Some(svg) = args.svg {
        std::fs::write(&svg, plot_fig6(&runs)?)
            .with_context(|| format!("writing {}", svg.display()))?;
    }
    Ok(())
}

/// Figure 6 on every workload: the code tree's size (nodes) against events, ε = 10%, one
/// panel per workload, events on a log scale (merge batches are exponentially spaced); every
/// point the run recorded (samples every 65,536 events and both sides of each merge batch,
/// so merges show as drops).
fn plot_fig6(runs: &[Run]) -> Result<String> {
    let panels: Vec<Panel> = runs
        .iter()
        .map(|r| Panel {
            title: format!("{} (block, ε = 10%)", r.name),
            x: "events (log scale)".into(),
            y: "nodes".into(),
            log_x: true,
            series: vec![Series {
                name: "nodes".into(),
                points: stream(&r.reports[0], "block")
                    .sizes
                    .iter()
                    .filter(|p| p.0 >= 100)
                    .map(|p| (p.0 as f64, p.1 as f64))
                    .collect(),
                ..Series::default()
            }],
            ..Panel::default()
        })
        .collect();
    Ok(grid(&panels, 3, (320, 220))?)
}

/// The stream `name` of a report (every record was checked to have each of `STREAMS`).
fn stream<'a>(report: &'a RapRunReport, name: &str) -> &'a StreamReport {
    report
        .streams
        .iter()
        .find(|s| s.stream == name)
        .unwrap_or(&report.streams[0])
}

/// The width of a hot range, in bits (b = 4: two bits per level).
fn width(h: &HotEntry) -> u64 {
    64u64.saturating_sub(2 * u64::from(h.range.depth))
}

/// Largest tree size once the split threshold is at least one event (n ≥ H/ε, H = 32 for
/// b = 4 over 64 bits): before that every event splits down to a leaf.
fn max_after_warmup(s: &StreamReport, eps: f64) -> u64 {
    let warm = (32.0 / eps).ceil() as u64;
    s.sizes
        .iter()
        .filter(|p| p.0 >= warm)
        .map(|p| p.1)
        .max()
        .unwrap_or(0)
}

fn print_tables(runs: &[Run], out: &mut dyn std::io::Write) -> Result<()> {
    say!(out, "### Memory and error (Figures 7 and 8)\n");
    say!(out, "Tree size in nodes (max: largest size during the run; max after warm-up: once τ ≥ 1; mean: over the whole stream, weighted by events through every sample and both sides of every merge batch; at merges: mean of the sizes before and after each merge batch) and percent error of the hot ranges (≥ 10%) against exact counts.\n");
    for (sname, title) in [
        ("block", "hot code regions (`block`)"),
        ("load-value", "load values (`load-value`)"),
    ] {
        say!(out, "**{title}**\n");
        let mut t = Table::new()
            .left("workload")
            .right("events")
            .right("ε")
            .right("hot ranges")
            .right("max nodes")
            .right("max after warm-up")
            .right("mean nodes")
            .right("mean at merges")
            .right("max error %")
            .right("mean error %");
        for r in runs {
            for (e, rep) in r.reports.iter().enumerate() {
                let s = stream(rep, sname);
                t.row(cells![
                    r.name,
                    s.n,
                    format!("{}%", EPS[e] * 100.0),
                    s.hot.len(),
                    s.max_nodes,
                    max_after_warmup(s, EPS[e]),
                    format!("{:.0}", s.mean_nodes),
                    format!("{:.0}", s.mean_nodes_at_merges),
                    format!("{:.3}", s.max_error_pct.unwrap_or(0.0)),
                    format!("{:.3}", s.mean_error_pct.unwrap_or(0.0))
                ]);
            }
        }
        // summary over workloads
        for (e, eps) in EPS.iter().enumerate() {
            let col = |k: fn(&StreamReport) -> Option<f64>| -> Vec<f64> {
                runs.iter()
                    .map(|r| k(stream(&r.reports[e], sname)).unwrap_or(0.0))
                    .collect()
            };
            let maxes = col(|s| s.max_error_pct);
            let means = col(|s| s.mean_error_pct);
            let nodes: Vec<f64> = runs
                .iter()
                .map(|r| max_after_warmup(stream(&r.reports[e], sname), *eps) as f64)
                .collect();
            t.row(cells![
                "**all**",
                "",
                format!("{}%", eps * 100.0),
                "",
                "",
                format!("{:.0} (largest)", nodes.iter().cloned().fold(0.0, f64::max)),
                "",
                "",
                format!("{:.3} (largest)", maxes.iter().cloned().fold(0.0, f64::max)),
                format!(
                    "{:.3} (mean)",
                    means.iter().sum::<f64>() / means.len().max(1) as f64
                )
            ]);
        }
        say!(out, "{t}");
    }
    fig5_hot_values(runs, out)?;
    fig9_locality(runs, out)?;
    fig10_zero_loads(runs, out)?;
    narrow_operands(runs, out)?;
    stream_lengths(runs, out)?;
    Ok(())
}

fn fig5_hot_values(runs: &[Run], out: &mut dyn std::io::Write) -> Result<()> {
    // Figure 5: the workload with the most hot load-value ranges at ε = 1%
    if let Some(r) = runs
        .iter()
        .max_by_key(|r| stream(&r.reports[1], "load-value").hot.len())
    {
        let s = stream(&r.reports[1], "load-value");
        say!(
            out,
            "### Hot load-value ranges (Figure 5 style): `{}`, ε = 1%\n",
            r.name
        );
        say!(out, "{} loads. Inclusive share counts the range and everything in it; exclusive share leaves out its hot sub-ranges.\n", s.n);
        let mut t = Table::new()
            .left("lo")
            .left("hi")
            .right("depth")
            .right("inclusive share")
            .right("exclusive share")
            .right("error %");
        for h in &s.hot {
            t.row(cells![
                format!("{:#x}", h.range.lo),
                format!("{:#x}", h.range.hi),
                h.range.depth,
                format!("{:.1}%", 100.0 * h.range.share),
                format!("{:.1}%", 100.0 * h.range.exclusive_share),
                format!("{:.3}", h.error_pct.unwrap_or(0.0))
            ]);
        }
        say!(out, "{t}");
    }
    Ok(())
}

fn fig9_locality(runs: &[Run], out: &mut dyn std::io::Write) -> Result<()> {
    // Figure 9: coverage by log2 range width, averaged over workloads (ε = 1%)
    say!(
        out,
        "### Value locality of loads and cache misses (Figure 9)\n"
    );
    say!(out, "Share of each stream covered by its hot ranges (≥ 10%, exclusive shares) whose width is at most 2^k values, mean over the workloads, ε = 1%.\n");
    let ks: Vec<u32> = (0..=64).step_by(8).collect();
    let mut t = Table::new()
        .left("stream")
        .rights(ks.iter().map(|k| format!("≤ 2^{k}")));
    for (name, label) in [
        ("load-value", "loads"),
        ("l1d-miss-value", "L1D misses"),
        ("l2-miss-value", "L2 misses"),
    ] {
        let mut row = vec![label.to_string()];
        for &k in &ks {
            let mut total = 0.0f64;
            let mut count = 0.0f64;
            for r in runs {
                let s = stream(&r.reports[1], name);
                if s.n == 0 {
                    continue;
                }
                let cov: f64 = s
                    .hot
                    .iter()
                    .filter(|h| width(h) <= u64::from(k))
                    .map(|h| h.range.exclusive_share)
                    .sum();
                total += cov;
                count += 1.0;
            }
            row.push(format!("{:.1}%", 100.0 * total / count.max(1.0)));
        }
        t.row(row);
    }
    say!(out, "{t}");
    Ok(())
}

fn fig10_zero_loads(runs: &[Run], out: &mut dyn std::io::Write) -> Result<()> {
    // Figure 10: zero-load ranges of the workload with the most zero loads (ε = 1%)
    if let Some(r) = runs
        .iter()
        .max_by_key(|r| stream(&r.reports[1], "zero-load-addr").n)
    {
        let s = stream(&r.reports[1], "zero-load-addr");
        say!(
            out,
            "### Zero-load memory ranges (Figure 10): `{}`, ε = 1%\n",
            r.name
        );
        say!(
            out,
            "{} loads returned zero. Hot ranges of their addresses:\n",
            s.n
        );
        let mut t = Table::new()
            .left("lo")
            .left("hi")
            .right("width")
            .right("inclusive share")
            .right("exclusive share");
        for h in &s.hot {
            t.row(cells![
                format!("{:#x}", h.range.lo),
                format!("{:#x}", h.range.hi),
                format!("2^{}", width(h)),
                format!("{:.1}%", 100.0 * h.range.share),
                format!("{:.1}%", 100.0 * h.range.exclusive_share)
            ]);
        }
        say!(out, "{t}");
    }
    Ok(())
}

fn narrow_operands(runs: &[Run], out: &mut dyn std::io::Write) -> Result<()> {
    // §4 narrow operands: where the narrow-width operations are (ε = 1%)
    say!(out, "### Narrow-width operands (§4)\n");
    say!(out, "RAP over the pcs of instructions whose source operands all fit in 16 bits (`narrow-pc`), ε = 1%: the share of all instructions that are narrow, the widest hot range that lies inside one function, and the narrowest hot range, each with its share of the narrow operations. The paper found gcc's narrow operations concentrated in one file (38.7%), one procedure (31%) and one block (6.4%).\n");
    let mut t = Table::new()
        .left("workload")
        .right("narrow ops")
        .right("% of instructions")
        .right("hot ranges")
        .left("widest hot range within one function")
        .right("share")
        .left("narrowest hot range")
        .right("width")
        .right("share");
    for r in runs {
        let rep = &r.reports[1];
        let s = stream(rep, "narrow-pc");
        let hot = &s.hot;
        // the widest hot range inside one function (its label names no span of functions)
        let named = hot
            .iter()
            .filter(|h| h.code.as_deref().is_some_and(|c| !c.contains(" .. ")))
            .max_by_key(|h| (width(h), (h.range.share * 1e9) as u64));
        let narrowest = hot
            .iter()
            .min_by_key(|h| (width(h), u64::MAX - (h.range.share * 1e9) as u64));
        let code = |h: Option<&HotEntry>| {
            h.and_then(|h| h.code.as_deref())
                .map(|c| c.chars().take(60).collect::<String>())
                .unwrap_or_else(|| "–".into())
        };
        t.row(cells![
            r.name,
            s.n,
            format!(
                "{:.1}%",
                100.0 * s.n as f64 / rep.instructions.max(1) as f64
            ),
            hot.len(),
            code(named),
            format!("{:.1}%", named.map_or(0.0, |h| 100.0 * h.range.share)),
            code(narrowest),
            format!("2^{}", narrowest.map_or(0, width)),
            format!("{:.1}%", narrowest.map_or(0.0, |h| 100.0 * h.range.share))
        ]);
    }
    say!(out, "{t}");
    Ok(())
}

fn stream_lengths(runs: &[Run], out: &mut dyn std::io::Write) -> Result<()> {
    // per-workload stream sizes, for context
    say!(out, "### Stream lengths (ε = 1% run)\n");
    let mut t = Table::new()
        .left("workload")
        .right("instructions")
        .right("loads")
        .right("L1D-miss loads")
        .right("L2-miss loads")
        .right("zero loads")
        .right("cycles")
        .right("IPC");
    for r in runs {
        let rep = &r.reports[1];
        t.row(cells![
            r.name,
            rep.instructions,
            stream(rep, "load-value").n,
            stream(rep, "l1d-miss-value").n,
            stream(rep, "l2-miss-value").n,
            stream(rep, "zero-load-addr").n,
            rep.timing.as_ref().map_or(0, |t| t.cycles),
            format!("{:.2}", rep.timing.as_ref().map_or(0.0, |t| t.ipc))
        ]);
    }
    write!(out, "{t}")?;
    Ok(())
}
