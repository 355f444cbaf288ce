//! `cargo run --release -p xtask -- study-rap [--workloads a,b] [--jobs N] [--fresh]`: the RAP paper's §4
//! studies on the bundled workloads. Runs `outcrop run --rap ... --exact --json` for every
//! compute workload at ε = 10% and ε = 1% (b = 4, 64-bit universe, hot ≥ 10%) and prints the
//! Markdown tables of docs/studies/rap.md:
//! * Figure 7: maximum and mean tree size (nodes) for code (`block`) and load values;
//! * Figure 8: maximum and mean percent error of the hot ranges against exact counts;
//! * Figure 5: the hot load-value ranges of one workload;
//! * Figure 9: coverage of loads, L1D misses and L2 misses by hot ranges of width ≤ 2^k;
//! * Figure 10: the zero-load memory ranges of one workload;
//! * Figure 6: the code tree's size over the run, every workload (SVG with `--svg FILE`);
//! * §4 narrow operands: hot ranges of the pcs of instructions whose sources fit in 16 bits.
//!
//! Reports are cached in `target/study-rap/`, keyed on a hash of the `outcrop` binary, the
//! workload binary and the command line, so a rebuilt tool or workload is re-run.

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

const STREAMS: &str = "block,load-value,l1d-miss-value,l2-miss-value,zero-load-addr,narrow-pc";
const EPS: [f64; 2] = [0.1, 0.01];

struct Run {
    name: String,
    /// One report per ε in `EPS`.
    reports: Vec<Value>,
}

pub fn run(args: &[String]) -> Result<()> {
    let (root, outcrop) = crate::release_outcrop()?;
    let wl = root.join("workloads");
    let mut names = crate::compute_workloads(&root)?;
    let mut jobs = 2usize;
    let mut fresh = false;
    let mut svg: Option<std::path::PathBuf> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--workloads" => {
                let list = it.next().context("--workloads needs a list")?;
                names = list.split(',').map(str::to_string).collect();
            }
            "--jobs" => jobs = it.next().context("--jobs needs N")?.parse()?,
            "--fresh" => fresh = true,
            "--svg" => svg = Some(it.next().context("--svg needs a file")?.into()),
            other => bail!("unknown option {other}"),
        }
    }
    // Reports are kept in target/study-rap/ and reused by later runs unless --fresh: a study
    // is long, and an interrupted one resumes where it stopped.
    let cache = root.join("target/study-rap");
    if fresh {
        let _ = std::fs::remove_dir_all(&cache);
    }
    std::fs::create_dir_all(&cache)?;
    // Each guest runs in a scratch directory of its own (fileio writes next to its input, so
    // two concurrent runs must not share one), with `bin` linked to the workloads and a copy
    // of `src/fileio.c`.
    let scratch = std::env::temp_dir().join(format!("outcrop-study-{}", std::process::id()));
    let bin = wl.join("bin").canonicalize()?;
    let scratch_for = |task: usize| -> Result<std::path::PathBuf> {
        let dir = scratch.join(task.to_string());
        std::fs::create_dir_all(dir.join("src"))?;
        std::fs::copy(wl.join("src/fileio.c"), dir.join("src/fileio.c"))?;
        let link = dir.join("bin");
        if !link.exists() {
            std::os::unix::fs::symlink(&bin, &link)?;
        }
        Ok(dir)
    };

    // (workload, ε index) tasks over `jobs` threads
    let tasks: Vec<(usize, usize)> = (0..names.len())
        .flat_map(|w| (0..EPS.len()).map(move |e| (w, e)))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(vec![Value::Null; tasks.len()]);
    std::thread::scope(|s| -> Result<()> {
        let mut handles = Vec::new();
        for _ in 0..jobs.max(1) {
            handles.push(s.spawn(|| -> Result<()> {
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&(w, e)) = tasks.get(k) else {
                        return Ok(());
                    };
                    let key = cache_key(&outcrop, &bin.join(&names[w]), EPS[e])?;
                    let out = cache.join(format!("{}-{}-{key:016x}.json", names[w], e));
                    if !out.exists() {
                        run_one(&outcrop, &scratch_for(k)?, &names[w], EPS[e], &out)?;
                    }
                    let v: Value = serde_json::from_slice(&std::fs::read(&out)?)?;
                    eprintln!("study-rap: {} at ε = {} done", names[w], EPS[e]);
                    results.lock().map_err(|_| anyhow::anyhow!("poisoned"))?[k] = v;
                }
            }));
        }
        for h in handles {
            h.join().map_err(|_| anyhow::anyhow!("worker panicked"))??;
        }
        Ok(())
    })?;
    let results = results
        .into_inner()
        .map_err(|_| anyhow::anyhow!("poisoned"))?;
    let runs: Vec<Run> = names
        .iter()
        .enumerate()
        .map(|(w, name)| Run {
            name: name.clone(),
            reports: (0..EPS.len())
                .map(|e| results[w * EPS.len() + e].clone())
                .collect(),
        })
        .collect();
    let _ = std::fs::remove_dir_all(&scratch);
    print_tables(&runs);
    if let Some(svg) = svg {
        plot_fig6(&svg, &runs)?;
    }
    Ok(())
}

/// Cache key of one report: the tool, the guest and everything on the command line.
fn cache_key(outcrop: &Path, guest: &Path, eps: f64) -> Result<u64> {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    for f in [outcrop, guest] {
        h.write(&std::fs::read(f).with_context(|| format!("reading {}", f.display()))?);
    }
    h.write(STREAMS.as_bytes());
    h.write_u64(eps.to_bits());
    Ok(h.finish())
}

/// Figure 6 on every workload: the code tree's size (nodes) against events, ε = 10%, one
/// panel per workload, events on a log scale (merge batches are exponentially spaced); every
/// point the run recorded (samples every 65,536 events and both sides of each merge batch,
/// so merges show as drops).
fn plot_fig6(path: &Path, runs: &[Run]) -> Result<()> {
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("plot: {e}");
    let cols = 3usize;
    let rows = runs.len().div_ceil(cols).max(1);
    let root = SVGBackend::new(path, (960, 220 * rows as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    for (r, area) in runs.iter().zip(root.split_evenly((rows, cols))) {
        let s = stream(&r.reports[0], "block");
        let pts: Vec<(f64, f64)> = s["sizes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| u(&p[0]) >= 100)
            .map(|p| (u(&p[0]) as f64, u(&p[1]) as f64))
            .collect();
        let xmax = pts.iter().map(|p| p.0).fold(1e3, f64::max);
        let ymax = pts.iter().map(|p| p.1).fold(10.0, f64::max) * 1.05;
        let mut chart = ChartBuilder::on(&area)
            .caption(format!("{} (block, ε = 10%)", r.name), ("sans-serif", 14))
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(48)
            .build_cartesian_2d((100f64..xmax * 1.2).log_scale(), 0f64..ymax)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("events (log scale)")
            .y_desc("nodes")
            .x_labels(4)
            .y_labels(4)
            .draw()
            .map_err(|e| err(&e))?;
        chart
            .draw_series(LineSeries::new(pts, BLUE.stroke_width(1)))
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

fn run_one(outcrop: &Path, dir: &Path, name: &str, eps: f64, out: &Path) -> Result<()> {
    let args: Vec<&str> = if name == "fileio" {
        vec!["src/fileio.c"]
    } else {
        vec![]
    };
    let partial = out.with_extension("partial");
    let st = Command::new(outcrop)
        .current_dir(dir)
        .args([
            "run",
            "--rap",
            STREAMS,
            "--exact",
            "--deterministic",
            "--json",
        ])
        .args(["--allow-rw", ".", "--eps", &eps.to_string(), "-o"])
        .arg(&partial)
        .arg("--")
        .arg(format!("bin/{name}"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    anyhow::ensure!(
        st.success(),
        "{name} at ε = {eps}: outcrop run failed ({st})"
    );
    // only a successful run's report is kept (and reused by later runs)
    std::fs::rename(&partial, out)
        .with_context(|| format!("{name}: keeping {}", partial.display()))?;
    Ok(())
}

fn stream<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["streams"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["stream"] == name))
        .unwrap_or(&Value::Null)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}
fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// Largest tree size once the split threshold is at least one event (n ≥ H/ε, H = 32 for
/// b = 4 over 64 bits): before that every event splits down to a leaf.
fn max_after_warmup(s: &Value, eps: f64) -> u64 {
    let warm = (32.0 / eps).ceil() as u64;
    s["sizes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|p| u(&p[0]) >= warm)
                .map(|p| u(&p[1]))
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

fn print_tables(runs: &[Run]) {
    println!("### Memory and error (Figures 7 and 8)\n");
    println!("Tree size in nodes (max: largest size during the run; max after warm-up: once τ ≥ 1; mean: over the whole stream, weighted by events through every sample and both sides of every merge batch; at merges: mean of the sizes before and after each merge batch) and percent error of the hot ranges (≥ 10%) against exact counts.\n");
    for (sname, title) in [
        ("block", "hot code regions (`block`)"),
        ("load-value", "load values (`load-value`)"),
    ] {
        println!("**{title}**\n");
        println!("| workload | events | ε | hot ranges | max nodes | max after warm-up | mean nodes | mean at merges | max error % | mean error % |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for r in runs {
            for (e, rep) in r.reports.iter().enumerate() {
                let s = stream(rep, sname);
                println!(
                    "| {} | {} | {}% | {} | {} | {} | {:.0} | {:.0} | {:.3} | {:.3} |",
                    r.name,
                    u(&s["n"]),
                    EPS[e] * 100.0,
                    s["hot"].as_array().map_or(0, Vec::len),
                    u(&s["max_nodes"]),
                    max_after_warmup(s, EPS[e]),
                    f(&s["mean_nodes"]),
                    f(&s["mean_nodes_at_merges"]),
                    f(&s["max_error_pct"]),
                    f(&s["mean_error_pct"])
                );
            }
        }
        // summary over workloads
        for (e, eps) in EPS.iter().enumerate() {
            let col = |k: &str| -> Vec<f64> {
                runs.iter()
                    .map(|r| f(&stream(&r.reports[e], sname)[k]))
                    .collect()
            };
            let maxes = col("max_error_pct");
            let means = col("mean_error_pct");
            let nodes: Vec<f64> = runs
                .iter()
                .map(|r| max_after_warmup(stream(&r.reports[e], sname), *eps) as f64)
                .collect();
            println!(
                "| **all** | | {}% | | | {:.0} (largest) | | | {:.3} (largest) | {:.3} (mean) |",
                eps * 100.0,
                nodes.iter().cloned().fold(0.0, f64::max),
                maxes.iter().cloned().fold(0.0, f64::max),
                means.iter().sum::<f64>() / means.len().max(1) as f64
            );
        }
        println!();
    }

    // Figure 5: the workload with the most hot load-value ranges at ε = 1%
    if let Some(r) = runs.iter().max_by_key(|r| {
        stream(&r.reports[1], "load-value")["hot"]
            .as_array()
            .map_or(0, Vec::len)
    }) {
        let s = stream(&r.reports[1], "load-value");
        println!(
            "### Hot load-value ranges (Figure 5 style): `{}`, ε = 1%\n",
            r.name
        );
        println!("{} loads. Inclusive share counts the range and everything in it; exclusive share leaves out its hot sub-ranges.\n", u(&s["n"]));
        println!("| lo | hi | depth | inclusive share | exclusive share | error % |");
        println!("|---|---|---:|---:|---:|---:|");
        for h in s["hot"].as_array().into_iter().flatten() {
            println!(
                "| {:#x} | {:#x} | {} | {:.1}% | {:.1}% | {:.3} |",
                u(&h["lo"]),
                u(&h["hi"]),
                u(&h["depth"]),
                100.0 * f(&h["share"]),
                100.0 * f(&h["exclusive_share"]),
                f(&h["error_pct"])
            );
        }
        println!();
    }

    // Figure 9: coverage by log2 range width, averaged over workloads (ε = 1%)
    println!("### Value locality of loads and cache misses (Figure 9)\n");
    println!("Share of each stream covered by its hot ranges (≥ 10%, exclusive shares) whose width is at most 2^k values, mean over the workloads, ε = 1%.\n");
    let ks: Vec<u32> = (0..=64).step_by(8).collect();
    print!("| stream |");
    for k in &ks {
        print!(" ≤ 2^{k} |");
    }
    println!();
    print!("|---|");
    for _ in &ks {
        print!("---:|");
    }
    println!();
    for (name, label) in [
        ("load-value", "loads"),
        ("l1d-miss-value", "L1D misses"),
        ("l2-miss-value", "L2 misses"),
    ] {
        print!("| {label} |");
        for &k in &ks {
            let mut total = 0.0f64;
            let mut count = 0.0f64;
            for r in runs {
                let s = stream(&r.reports[1], name);
                if u(&s["n"]) == 0 {
                    continue;
                }
                let cov: f64 = s["hot"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|h| 64u64.saturating_sub(2 * u(&h["depth"])) <= u64::from(k))
                    .map(|h| f(&h["exclusive_share"]))
                    .sum();
                total += cov;
                count += 1.0;
            }
            print!(" {:.1}% |", 100.0 * total / count.max(1.0));
        }
        println!();
    }
    println!();

    // Figure 10: zero-load ranges of the workload with the most zero loads (ε = 1%)
    if let Some(r) = runs
        .iter()
        .max_by_key(|r| u(&stream(&r.reports[1], "zero-load-addr")["n"]))
    {
        let s = stream(&r.reports[1], "zero-load-addr");
        println!(
            "### Zero-load memory ranges (Figure 10): `{}`, ε = 1%\n",
            r.name
        );
        println!(
            "{} loads returned zero. Hot ranges of their addresses:\n",
            u(&s["n"])
        );
        println!("| lo | hi | width | inclusive share | exclusive share |");
        println!("|---|---|---:|---:|---:|");
        for h in s["hot"].as_array().into_iter().flatten() {
            let w = 64u64.saturating_sub(2 * u(&h["depth"]));
            println!(
                "| {:#x} | {:#x} | 2^{} | {:.1}% | {:.1}% |",
                u(&h["lo"]),
                u(&h["hi"]),
                w,
                100.0 * f(&h["share"]),
                100.0 * f(&h["exclusive_share"])
            );
        }
        println!();
    }

    // §4 narrow operands: where the narrow-width operations are (ε = 1%)
    println!("### Narrow-width operands (§4)\n");
    println!("RAP over the pcs of instructions whose source operands all fit in 16 bits (`narrow-pc`), ε = 1%: the share of all instructions that are narrow, the widest hot range that lies inside one function, and the narrowest hot range, each with its share of the narrow operations. The paper found gcc's narrow operations concentrated in one file (38.7%), one procedure (31%) and one block (6.4%).\n");
    println!("| workload | narrow ops | % of instructions | hot ranges | widest hot range within one function | share | narrowest hot range | width | share |");
    println!("|---|---:|---:|---:|---|---:|---|---:|---:|");
    for r in runs {
        let rep = &r.reports[1];
        let s = stream(rep, "narrow-pc");
        let hot: Vec<&Value> = s["hot"].as_array().into_iter().flatten().collect();
        let width = |h: &Value| 64u64.saturating_sub(2 * u(&h["depth"]));
        // the widest hot range inside one function (its label names no span of functions)
        let named = hot
            .iter()
            .filter(|h| h["code"].as_str().is_some_and(|c| !c.contains(" .. ")))
            .max_by_key(|h| (width(h), (f(&h["share"]) * 1e9) as u64));
        let narrowest = hot
            .iter()
            .min_by_key(|h| (width(h), u64::MAX - (f(&h["share"]) * 1e9) as u64));
        let code = |h: Option<&&Value>| {
            h.and_then(|h| h["code"].as_str())
                .map(|c| c.chars().take(60).collect::<String>())
                .unwrap_or_else(|| "–".into())
        };
        println!(
            "| {} | {} | {:.1}% | {} | {} | {:.1}% | {} | 2^{} | {:.1}% |",
            r.name,
            u(&s["n"]),
            100.0 * u(&s["n"]) as f64 / u(&rep["instructions"]).max(1) as f64,
            hot.len(),
            code(named),
            named.map_or(0.0, |h| 100.0 * f(&h["share"])),
            code(narrowest),
            narrowest.map_or(0, |h| width(h)),
            narrowest.map_or(0.0, |h| 100.0 * f(&h["share"])),
        );
    }
    println!();

    // per-workload stream sizes, for context
    println!("### Stream lengths (ε = 1% run)\n");
    println!("| workload | instructions | loads | L1D-miss loads | L2-miss loads | zero loads | cycles | IPC |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in runs {
        let rep = &r.reports[1];
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.2} |",
            r.name,
            u(&rep["instructions"]),
            u(&stream(rep, "load-value")["n"]),
            u(&stream(rep, "l1d-miss-value")["n"]),
            u(&stream(rep, "l2-miss-value")["n"]),
            u(&stream(rep, "zero-load-addr")["n"]),
            u(&rep["timing"]["cycles"]),
            f(&rep["timing"]["ipc"])
        );
    }
}
