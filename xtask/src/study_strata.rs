//! `cargo run --release -p xtask -- study-strata [--runs R] [--workloads a,b] [--svg-dir DIR]`:
//! the strata paper's (`002_*.txt`) §IV results on every bundled compute workload
//! (docs/studies/strata.md):
//!
//! * Table 3 (paths: executions, mean length in blocks, unique paths) and Table 4 (strata:
//!   unique, total, consecutive executions), from `outcrop wpp report --json`;
//! * Figure 2 (path length vs trip count) and Figure 3 (stratum lengths), one SVG each with
//!   every workload (`--svg-dir`);
//! * compression (§IV.B): instructions × 4.2 bytes ÷ file bytes (the paper's measure), raw
//!   8-byte block trace ÷ file bytes, and `zstd -3 --long=27` of the raw trace ÷ file bytes;
//!   each summarised as geometric mean, median and geometric mean without the best and the
//!   worst workload;
//! * slowdown (§IV.A): capture (`wpp record`) against the same program compiled natively for
//!   the host (`gcc -O2 -static -fno-tree-vectorize`: static like the guests, and no vector
//!   code, which RV64GC does not have; same source and inputs) and against Outcrop's bare machine
//!   (`outcrop exec`), labelled separately; medians with min–max of R runs (default 5).
//!
//! Needs `gcc` (native builds) and `zstd` on PATH, and fails naming the missing one.

use anyhow::{ensure, Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

struct Row {
    name: String,
    instructions: u64,
    blocks: u64,
    file_bytes: u64,
    zstd_bytes: u64,
    native: Vec<f64>,
    bare: Vec<f64>,
    record: Vec<f64>,
    report: Value,
}

/// Fails with the tool's name when it cannot be run.
fn require(tool: &str, probe: &str) -> Result<()> {
    let ok = Command::new(tool)
        .arg(probe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    ensure!(
        ok,
        "study-strata needs `{tool}` on PATH (Debian: apt-get install {tool})"
    );
    Ok(())
}

fn timed(cmd: &mut Command, dir: &Path) -> Result<f64> {
    let t = Instant::now();
    let st = cmd
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| format!("running {cmd:?}"))?;
    let secs = t.elapsed().as_secs_f64();
    ensure!(st.success(), "{cmd:?}: {st}");
    Ok(secs)
}

fn geo(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    (v.iter().map(|x| x.max(1e-12).ln()).sum::<f64>() / v.len() as f64).exp()
}

/// Geometric mean, median, and geometric mean without the largest and smallest value.
fn summary(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let trimmed = if s.len() > 2 {
        geo(&s[1..s.len() - 1])
    } else {
        geo(&s)
    };
    (geo(&s), crate::bench_rap::spread(&s).0, trimmed)
}

fn mm(v: &[f64]) -> String {
    let (m, lo, hi) = crate::bench_rap::spread(v);
    format!("{m:.3} ({lo:.3}–{hi:.3})")
}

/// Per-run ratios a[i] / b[i] (runs alternate, so run i of each is paired), median and range.
fn ratio(a: &[f64], b: &[f64]) -> (f64, String) {
    let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    let (m, lo, hi) = crate::bench_rap::spread(&r);
    (m, format!("{m:.2}× ({lo:.2}–{hi:.2})"))
}

pub fn run(args: &[String]) -> Result<()> {
    let runs = crate::runs_flag(args)?.max(5);
    let (root, outcrop) = crate::release_outcrop()?;
    let root = root.canonicalize()?;
    let wl = root.join("workloads");
    let mut names = crate::compute_workloads(&root)?;
    let mut svg_dir: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--workloads" => {
                let list = it.next().context("--workloads needs a list")?;
                names = list.split(',').map(str::to_string).collect();
            }
            "--svg-dir" => svg_dir = Some(it.next().context("--svg-dir needs a directory")?.into()),
            "--runs" => {
                it.next();
            }
            other => anyhow::bail!("unknown option {other}"),
        }
    }
    require("gcc", "--version")?;
    require("zstd", "--version")?;
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::copy(wl.join("src/fileio.c"), dir.join("src/fileio.c"))?;
    let mut rows = Vec::new();
    for name in &names {
        eprintln!("study-strata: {name}");
        let native = dir.join(format!("{name}.native"));
        let st = Command::new("gcc")
            .args(["-O2", "-static", "-fno-tree-vectorize", "-o"])
            .arg(&native)
            .arg(wl.join("src").join(format!("{name}.c")))
            .arg("-lm")
            .status()
            .context("running gcc")?;
        ensure!(st.success(), "gcc failed on {name}.c");
        let guest_args: Vec<&str> = if name == "fileio" {
            vec!["src/fileio.c"]
        } else {
            vec![]
        };
        let bin = wl.join("bin").join(name);
        let wpp = dir.join(format!("{name}.wpp"));
        let (mut n, mut b, mut r) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            n.push(timed(Command::new(&native).args(&guest_args), dir)?);
            b.push(timed(
                Command::new(&outcrop)
                    .args(["exec", "--deterministic", "--allow-rw", ".", "--"])
                    .arg(&bin)
                    .args(&guest_args),
                dir,
            )?);
            r.push(timed(
                Command::new(&outcrop)
                    .args(["wpp", "record", "--deterministic", "--allow-rw", ".", "-o"])
                    .arg(&wpp)
                    .arg("--")
                    .arg(&bin)
                    .args(&guest_args),
                dir,
            )?);
        }
        let out = Command::new(&outcrop)
            .args(["wpp", "report", "--json"])
            .arg(&wpp)
            .output()?;
        ensure!(out.status.success(), "wpp report {name}");
        let report: Value = serde_json::from_slice(&out.stdout).context("wpp report --json")?;
        let raw = dir.join(format!("{name}.u64"));
        let blocks = crate::bench_wpp::replay_raw(&outcrop, &wpp, &raw)?;
        let z = Command::new("zstd")
            .args(["-3", "--long=27", "-T1", "-q", "-c"])
            .arg(&raw)
            .output()?;
        ensure!(z.status.success(), "zstd on {name}'s trace");
        std::fs::remove_file(&raw)?;
        rows.push(Row {
            name: name.clone(),
            instructions: report["stats"]["build"]["instructions"]
                .as_u64()
                .unwrap_or(0),
            blocks,
            file_bytes: std::fs::metadata(&wpp)?.len(),
            zstd_bytes: z.stdout.len() as u64,
            native: n,
            bare: b,
            record: r,
            report,
        });
    }
    print_tables(&rows, runs);
    if let Some(d) = svg_dir {
        std::fs::create_dir_all(&d)?;
        plot_fig2(&d.join("strata-fig2.svg"), &rows)?;
        plot_fig3(&d.join("strata-fig3.svg"), &rows)?;
    }
    Ok(())
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn print_tables(rows: &[Row], runs: usize) {
    println!("### Paths (Table 3)\n");
    println!("| workload | instructions | blocks | paths executed | mean path length (blocks) | unique paths |");
    println!("|---|---:|---:|---:|---:|---:|");
    for r in rows {
        let p = &r.report["paths"];
        println!(
            "| {} | {} | {} | {} | {:.1} | {} |",
            r.name,
            r.instructions,
            r.blocks,
            u(&p["executed"]),
            p["mean_length_blocks"].as_f64().unwrap_or(0.0),
            u(&p["unique"])
        );
    }
    println!("\n### Strata (Table 4), layer 0\n");
    println!("| workload | unique strata | total strata | consecutive executions | paths covered by strata | mean stratum length (paths) |");
    println!("|---|---:|---:|---:|---:|---:|");
    for r in rows {
        let l = &r.report["layers"][0];
        let lengths = l["lengths"].as_array().cloned().unwrap_or_default();
        let (sum, cnt) = lengths.iter().fold((0u64, 0u64), |(s, c), x| {
            (
                s + u(&x["length"]) * u(&x["executions"]),
                c + u(&x["executions"]),
            )
        });
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            r.name,
            u(&l["unique"]),
            u(&l["total"]),
            u(&l["consecutive"]),
            u(&l["repeated"]),
            if cnt > 0 {
                format!("{:.1}", sum as f64 / cnt as f64)
            } else {
                "–".into()
            }
        );
    }
    println!("\n### Compression (§IV.B)\n");
    println!("| workload | file bytes | paper's ratio (instructions × 4.2 ÷ bytes) | raw block trace ÷ bytes | zstd -3 --long bytes | zstd ÷ ours |");
    println!("|---|---:|---:|---:|---:|---:|");
    let (mut paper, mut raw, mut zs) = (Vec::new(), Vec::new(), Vec::new());
    for r in rows {
        let f = r.file_bytes as f64;
        let p = r.instructions as f64 * 4.2 / f;
        let w = r.blocks as f64 * 8.0 / f;
        let z = r.zstd_bytes as f64 / f;
        paper.push(p);
        raw.push(w);
        zs.push(z);
        println!(
            "| {} | {} | {:.0} | {:.0} | {} | {:.2}× |",
            r.name, r.file_bytes, p, w, r.zstd_bytes, z
        );
    }
    for (label, v) in [
        ("paper's ratio", &paper),
        ("raw trace ÷ ours", &raw),
        ("zstd -3 --long ÷ ours", &zs),
    ] {
        let (g, m, t) = summary(v);
        println!("| **{label}** | geometric mean {g:.2} | median {m:.2} | geometric mean without best and worst {t:.2} | | |");
    }
    println!("\n### Capture slowdown (§IV.A), {runs} runs each, alternating; seconds are medians (min–max), ratios are medians of per-run ratios\n");
    println!("| workload | native x86-64 s | bare machine s | capture s | capture ÷ native | capture ÷ bare machine | bare machine ÷ native |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let (mut vn, mut vb, mut vm) = (Vec::new(), Vec::new(), Vec::new());
    for r in rows {
        let (a, sa) = ratio(&r.record, &r.native);
        let (b, sb) = ratio(&r.record, &r.bare);
        let (c, sc) = ratio(&r.bare, &r.native);
        vn.push(a);
        vb.push(b);
        vm.push(c);
        println!(
            "| {} | {} | {} | {} | {sa} | {sb} | {sc} |",
            r.name,
            mm(&r.native),
            mm(&r.bare),
            mm(&r.record)
        );
    }
    for (label, v) in [
        ("capture ÷ native", &vn),
        ("capture ÷ bare machine", &vb),
        ("bare machine ÷ native", &vm),
    ] {
        let (g, m, t) = summary(v);
        println!("| **{label}** | geometric mean {g:.2} | median {m:.2} | without best and worst {t:.2} | | | |");
    }
}

type Chart<'a, 'b> = plotters::chart::ChartContext<
    'a,
    plotters::backend::SVGBackend<'b>,
    plotters::coord::cartesian::Cartesian2d<
        plotters::prelude::LogCoord<f64>,
        plotters::prelude::LogCoord<f64>,
    >,
>;

/// A grid of log–log panels, one per workload, each drawn by `draw`.
fn panels(
    path: &Path,
    rows: &[Row],
    x_desc: &str,
    y_desc: &str,
    pts: impl Fn(&Row) -> Vec<(f64, f64)>,
    draw: impl Fn(Vec<(f64, f64)>, &mut Chart) -> Result<()>,
) -> Result<()> {
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("plot: {e}");
    let cols = 3usize;
    let nrows = rows.len().div_ceil(cols).max(1);
    let root = SVGBackend::new(path, (960, 240 * nrows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    for (r, area) in rows.iter().zip(root.split_evenly((nrows, cols))) {
        let p = pts(r);
        let xm = p.iter().map(|x| x.0).fold(2.0, f64::max);
        let ym = p.iter().map(|x| x.1).fold(2.0, f64::max);
        let mut chart = ChartBuilder::on(&area)
            .caption(&r.name, ("sans-serif", 14))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(
                (1f64..xm.max(2.0) * 1.5).log_scale(),
                (1f64..ym.max(2.0) * 1.5).log_scale(),
            )
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(4)
            .y_labels(4)
            .draw()
            .map_err(|e| err(&e))?;
        draw(p, &mut chart)?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// Figure 2: every unique path as a point (length in blocks, executions).
fn plot_fig2(path: &Path, rows: &[Row]) -> Result<()> {
    use plotters::prelude::*;
    let pts = |r: &Row| -> Vec<(f64, f64)> {
        r.report["path_length_vs_trips"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| (u(&p[0]).max(1) as f64, u(&p[1]).max(1) as f64))
            .collect()
    };
    panels(
        path,
        rows,
        "path length (blocks)",
        "trip count",
        pts,
        |p, chart| {
            chart
                .draw_series(p.into_iter().map(|p| Circle::new(p, 2, BLUE.filled())))
                .map_err(|e| anyhow::anyhow!("plot: {e}"))?;
            Ok(())
        },
    )
}

/// Figure 3: layer-0 strata by length (paths), executions of each length.
fn plot_fig3(path: &Path, rows: &[Row]) -> Result<()> {
    use plotters::prelude::*;
    let pts = |r: &Row| -> Vec<(f64, f64)> {
        r.report["layers"][0]["lengths"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| {
                (
                    u(&l["length"]).max(1) as f64,
                    u(&l["executions"]).max(1) as f64,
                )
            })
            .collect()
    };
    panels(
        path,
        rows,
        "stratum length (paths)",
        "executions",
        pts,
        |p, chart| {
            chart
                .draw_series(LineSeries::new(p, RED.stroke_width(1)))
                .map_err(|e| anyhow::anyhow!("plot: {e}"))?;
            Ok(())
        },
    )
}
