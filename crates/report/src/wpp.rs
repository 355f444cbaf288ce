//! The report of a whole-program profile (`outcrop wpp report`, WPP paper §III.D, Tables 3
//! and 4, Figures 2 and 3): the model, its JSON, its text and its SVG figures.

use outcrop_strata::format::ChunkInfo;
use outcrop_strata::report::{HotPath, LengthBin, Ratios};
use outcrop_strata::{FileStats, SectionBytes};
use serde::Serialize;
use std::fmt::Write as _;

/// Why a figure could not be drawn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The plotting library failed.
    #[error("plot: {0}")]
    Plot(String),
}

/// One stratum layer (paper Table 4 for layer 0).
#[derive(Clone, Debug, Serialize)]
pub struct LayerJson {
    /// layer.
    pub layer: usize,
    /// unique.
    pub unique: u64,
    /// total.
    pub total: u64,
    /// repeated.
    pub repeated: u64,
    /// consecutive.
    pub consecutive: u64,
    /// inputs.
    pub inputs: u64,
    /// unique inputs.
    pub unique_inputs: u64,
    /// bypassed.
    pub bypassed: u64,
    /// dictionary bytes.
    pub dictionary_bytes: u64,
    /// lengths.
    pub lengths: Vec<LengthBin>,
}

/// A hot path with its blocks disassembled (when the program is at hand).
#[derive(Clone, Debug, Serialize)]
pub struct HotJson {
    /// path.
    #[serde(flatten)]
    pub path: HotPath,
    /// blocks text.
    pub blocks_text: Vec<BlockText>,
}

/// A basic block as text.
#[derive(Clone, Debug, Serialize)]
pub struct BlockText {
    /// addr.
    pub addr: u64,
    /// insns.
    pub insns: u32,
    /// function.
    pub function: Option<String>,
    /// disassembly.
    pub disassembly: Vec<String>,
}

/// The report of one `.wpp` file (`outcrop wpp report`).
#[derive(Clone, Debug, Serialize)]
pub struct WppReport {
    /// file.
    pub file: String,
    /// file bytes.
    pub file_bytes: u64,
    /// sections.
    pub sections: SectionBytes,
    /// Stream chunks: where, how many items, bytes, and which coder stored them.
    pub chunks: Vec<ChunkInfo>,
    /// stats.
    pub stats: FileStats,
    /// Paper Table 3.
    pub paths: PathsJson,
    /// Paper Table 4 (layer 0) and the layers above.
    pub layers: Vec<LayerJson>,
    /// compression.
    pub compression: Ratios,
    /// slowdown.
    pub slowdown: Option<f64>,
    /// hot paths.
    pub hot_paths: Vec<HotJson>,
    /// Paper Figure 2: [length in blocks, executions] per executed path.
    pub path_length_vs_trips: Vec<(u64, u64)>,
}

/// Paper Table 3.
#[derive(Clone, Debug, Serialize)]
pub struct PathsJson {
    /// executed.
    pub executed: u64,
    /// mean length blocks.
    pub mean_length_blocks: f64,
    /// unique.
    pub unique: u64,
    /// repeated.
    pub repeated: u64,
    /// limit cuts.
    pub limit_cuts: u64,
}

impl WppReport {
    /// The report of a whole-program profile (`outcrop_run::wpp::WppAnalysis`): its sections,
    /// paths (Table 3) and stratum layers (Table 4), compression, the `top` hottest paths with
    /// their blocks named and disassembled when the program is at hand, and Figure 2's data.
    pub fn new(a: &outcrop_run::wpp::WppAnalysis, top: usize) -> WppReport {
        use outcrop_strata::report;
        let (file, counts) = (&a.file, &a.counts);
        let st = &file.stats;
        let b = &st.build;
        let hot_paths = report::hot_paths(file, counts, top)
            .into_iter()
            .map(|h| {
                let blocks_text = match &a.code {
                    Some(c) => h
                        .blocks
                        .iter()
                        .map(|&(addr, insns)| BlockText {
                            addr,
                            insns,
                            function: a.function(addr),
                            disassembly: c.disassemble(addr, insns),
                        })
                        .collect(),
                    None => Vec::new(),
                };
                HotJson {
                    path: h,
                    blocks_text,
                }
            })
            .collect();
        let layers = b
            .layers
            .iter()
            .enumerate()
            .map(|(k, l)| LayerJson {
                layer: k,
                unique: l.unique,
                total: l.executions,
                repeated: l.repeated,
                consecutive: l.consecutive,
                inputs: l.inputs,
                unique_inputs: l.unique_inputs,
                bypassed: l.bypassed,
                dictionary_bytes: file.bytes.layers.get(k).copied().unwrap_or(0),
                lengths: report::stratum_lengths(file, counts, k),
            })
            .collect();
        let run = &st.run;
        WppReport {
            file: a.path.display().to_string(),
            file_bytes: file.bytes.total(),
            sections: file.bytes.clone(),
            chunks: file.chunks.clone(),
            stats: st.clone(),
            paths: PathsJson {
                executed: b.paths.executions,
                mean_length_blocks: b.blocks as f64 / b.paths.executions.max(1) as f64,
                unique: b.paths.unique,
                repeated: b.paths.repeated,
                limit_cuts: b.paths.limit_cuts,
            },
            layers,
            compression: report::ratios(file),
            slowdown: (run.baseline_seconds > 0.0)
                .then(|| run.record_seconds / run.baseline_seconds),
            hot_paths,
            path_length_vs_trips: report::path_length_vs_trips(file, counts),
        }
    }
}

impl crate::Report for WppReport {
    fn write_text(&self, out: &mut String) {
        let _ = write_text(out, self);
    }
}

fn write_text(out: &mut String, r: &WppReport) -> std::fmt::Result {
    let st = &r.stats;
    let b = &st.build;
    writeln!(
        out,
        "whole-program profile {} of {} {} ({})",
        r.file,
        st.run.program,
        st.run.args.join(" "),
        st.run.outcome
    )?;
    writeln!(
        out,
        "run: {} instructions in {} basic blocks ({} distinct), {:.2} instructions per block",
        b.instructions,
        b.blocks,
        b.unique_blocks,
        b.instructions as f64 / b.blocks.max(1) as f64
    )?;
    if b.thread_marks > 0 {
        writeln!(
            out,
            "threads: recorded apart ({} thread marks in the stream; each thread's paths are its own)",
            b.thread_marks
        )?;
    }
    if b.process_marks > 0 {
        writeln!(
            out,
            "processes: {} (process, program)s recorded apart ({} process marks in the stream; an execve ends its thread's paths; docs/formats.md)",
            st.run.processes.len(),
            b.process_marks
        )?;
    }
    writeln!(
        out,
        "\npaths (paper Table 3): {} executed, mean length {:.2} blocks, {} unique; {} repeated paths, {} cut at the {}-block limit",
        r.paths.executed, r.paths.mean_length_blocks, r.paths.unique, r.paths.repeated, r.paths.limit_cuts, st.max_path_len
    )?;
    writeln!(
        out,
        "\nstrata (paper Table 4 is layer 0):\n| layer | unique | total | consecutive executions | repeated elements | distinct inputs | bypassed (cap) | dictionary bytes |\n|---:|---:|---:|---:|---:|---:|---:|---:|"
    )?;
    for l in &r.layers {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            l.layer,
            l.unique,
            l.total,
            l.consecutive,
            l.repeated,
            l.unique_inputs,
            l.bypassed,
            l.dictionary_bytes
        )?;
    }
    writeln!(
        out,
        "\nfile: {} bytes: stream {} ({} items in {} chunks, {} stored by the context model), blocks {}, paths {}, layers {:?}, statistics {}",
        r.file_bytes,
        r.sections.stream,
        b.stream_items,
        r.chunks.len(),
        r.chunks.iter().filter(|c| c.context_coded).count(),
        r.sections.blocks,
        r.sections.paths,
        r.sections.layers,
        r.sections.stats
    )?;
    writeln!(
        out,
        "compression: {:.0}x the paper's way (instructions × 4.2 B ÷ file), {:.0}x against an 8-byte-per-block trace",
        r.compression.paper, r.compression.raw_trace
    )?;
    match r.slowdown {
        Some(s) => writeln!(
            out,
            "collection: {:.3} s, bare run {:.3} s: {s:.2}x slowdown ({})",
            st.run.record_seconds,
            st.run.baseline_seconds,
            if st.run.threaded {
                "threaded"
            } else {
                "inline"
            }
        )?,
        None if st.run.record_seconds > 0.0 => writeln!(
            out,
            "collection: {:.3} s (record with --baseline for the slowdown)",
            st.run.record_seconds
        )?,
        None => writeln!(out, "collection: not timed (deterministic recording)")?,
    }
    writeln!(
        out,
        "\nhottest {} paths by executions × instructions (paper §III.D):",
        r.hot_paths.len()
    )?;
    for (i, h) in r.hot_paths.iter().enumerate() {
        let p = &h.path;
        writeln!(
            out,
            "#{} path {}: {} executions × {} instructions = {} ({:.2}% of the run), {} blocks",
            i + 1,
            p.id,
            p.executions,
            p.insns,
            p.weight,
            100.0 * p.share,
            p.blocks.len()
        )?;
        if h.blocks_text.is_empty() {
            for (a, n) in &p.blocks {
                writeln!(out, "    block {a:#x} ({n} instructions)")?;
            }
        }
        for bt in &h.blocks_text {
            writeln!(
                out,
                "    block {:#x} ({} instructions){}",
                bt.addr,
                bt.insns,
                bt.function
                    .as_ref()
                    .map(|f| format!(" in {f}"))
                    .unwrap_or_default()
            )?;
            for d in &bt.disassembly {
                writeln!(out, "        {d}")?;
            }
        }
    }
    Ok(())
}

fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::Plot(e.to_string())
}

/// A log-log chart of `(x, y)` shapes drawn by `shape`, written as SVG to `path`.
fn log_log_svg<S>(
    caption: &str,
    (x_desc, y_desc): (&str, &str),
    (max_x, max_y): (u64, u64),
    shapes: impl IntoIterator<Item = S>,
) -> Result<String, Error>
where
    S: for<'a> plotters::element::Drawable<plotters::prelude::SVGBackend<'a>>,
    for<'b> &'b S: plotters::element::PointCollection<'b, (u64, u64)>,
{
    use plotters::prelude::*;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(
                (1u64..max_x.max(2).saturating_mul(2)).log_scale(),
                (1u64..max_y.max(2).saturating_mul(2)).log_scale(),
            )
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()
            .map_err(plot_err)?;
        chart.draw_series(shapes).map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// Paper Figure 2 as SVG: path length against trip count, one point per executed path.
pub fn fig2_svg(name: &str, pts: &[(u64, u64)]) -> Result<String, Error> {
    use plotters::prelude::*;
    let max_x = pts.iter().map(|p| p.0).max().unwrap_or(1);
    let max_y = pts.iter().map(|p| p.1).max().unwrap_or(1);
    log_log_svg(
        &format!("{name}: path length vs trip count"),
        ("path length (basic blocks)", "executions"),
        (max_x, max_y),
        pts.iter()
            .map(|&(x, y)| Circle::new((x, y), 2, BLUE.mix(0.5).filled())),
    )
}

/// Paper Figure 3 as SVG: the stratum-length distribution of layer 0.
pub fn fig3_svg(name: &str, bins: &[LengthBin]) -> Result<String, Error> {
    use plotters::prelude::*;
    let max_x = bins.iter().map(|b| b.length).max().unwrap_or(1);
    let max_y = bins.iter().map(|b| b.unique).max().unwrap_or(1);
    log_log_svg(
        &format!("{name}: stratum layer 0 length distribution"),
        ("stratum length (repeated paths)", "unique strata"),
        (max_x, max_y),
        bins.iter().map(|b| {
            Rectangle::new(
                [(b.length, 1), (b.length + 1, b.unique.max(1) + 1)],
                RED.mix(0.6).filled(),
            )
        }),
    )
}

/// What `wpp record` says on stderr about a capture: its counts, the file's size against the
/// paper's way and an 8-byte-per-block trace, and (with `baseline`: `Some(bare run seconds)`,
/// `Some(0.0)` when there was no bare run; `None` for a deterministic run, whose wall time is
/// not reported) how long the capture took.
pub fn capture_summary(
    stats: &FileStats,
    bytes: u64,
    file: &std::path::Path,
    baseline: Option<f64>,
) -> String {
    let b = &stats.build;
    let ratios = Ratios {
        paper: b.instructions as f64 * outcrop_strata::report::PAPER_BYTES_PER_INSN
            / bytes.max(1) as f64,
        raw_trace: b.blocks as f64 * 8.0 / bytes.max(1) as f64,
    };
    let mut o = format!(
        "outcrop: wpp: {} instructions, {} blocks, {} paths executed ({} unique), {} stratum layers, {} stream items\n",
        b.instructions,
        b.blocks,
        b.paths.executions,
        b.paths.unique,
        stats.layers,
        b.stream_items
    );
    let _ = writeln!(
        o,
        "outcrop: wpp: {} bytes written to {}: {:.0}x the paper's way (instructions × 4.2 B), {:.0}x an 8-byte-per-block trace",
        bytes,
        file.display(),
        ratios.paper,
        ratios.raw_trace
    );
    if let Some(baseline) = baseline {
        let slow = if baseline > 0.0 {
            format!(
                " (bare run {baseline:.3} s: {:.2}x slowdown)",
                stats.run.record_seconds / baseline
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "outcrop: wpp: capture took {:.3} s{slow}",
            stats.run.record_seconds
        );
    }
    o
}
