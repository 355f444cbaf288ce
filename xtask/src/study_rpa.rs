//! `cargo run --release -p xtask -- study-rpa [--workloads a,b] [--jobs J]`: the relational
//! profiling paper's resource and overhead study (§6, Figures 7 and 8, Table 6) on every
//! bundled workload and the GC guest, on the paper's machine (the `rpa2000` timing preset).
//!
//! Every workload runs the paper's pair of queries: the edge query (Figure 2a, 1/256 of the
//! conditional branches unless the rate is the variable) and the GC store barrier (Figure 2c,
//! `always`, on stores with profile tag 1: only the GC guest has them). Runs are lossless and
//! the timing model is deterministic, so every number is exact for its inputs: one run per
//! cell, no spread to report.
//!
//! * Figure 7: 32 networks and 32 buffers ("essentially unrestricted"); the share of cycles
//!   with at least x buffers in use and x profiled instructions in flight.
//! * Figure 8a/8b: 8 buffers and 1–4 networks: share of cycles dispatch stalled, slowdown
//!   against the unrestricted run; plus the same with §6.3's cheap profiles.
//! * Figure 8c: 4 networks and 8 buffers, edge sampling 1/32 … 1/256 (GC query included):
//!   slowdown against the unrestricted run at the same rate.
//! * Table 6: instructions and cycles per profiled instruction at each rate.
//!
//! Writes docs/studies/rpa-fig7.svg and docs/studies/rpa-fig8.svg and prints the tables of
//! docs/studies/rpa.md.
//!
//! `study-rpa prefetch`: Figure 2b's service with its loop open (logging) and closed
//! (prefetching into the L2), on the default machine, every workload, and a sweep of the
//! service's latency on the memory-bound ones. `study-rpa adaptive`: the adaptive rate on
//! and off at edges 1/32 and 1/256, 1 and 4 networks: slowdown and edge-profile accuracy.

use anyhow::{Context, Result};
use outcrop_rpa::hw::HwConfig;
use outcrop_rpa::observe::{HwReport, RpaSpec};
use outcrop_run::{load, ProgramSpec, Run, Stdio};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const RATES: [u32; 4] = [32, 64, 128, 256];

fn queries(rate: u32) -> String {
    format!(
        "for opBRANCH * every {rate} collect pc misc ;\nsend 1 stop;\n\
         for opSTORE 1 always collect op1 op2 op3;\nif op1 <> 0 then send 3 stop else stop;\n"
    )
}

/// One configuration of a workload's runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Cell {
    /// No RPA at all.
    Bare,
    /// networks, buffers, cheap profiles, edge rate.
    Hw(u32, u32, bool, u32),
}

#[derive(Clone, Debug)]
struct Outcome {
    cycles: u64,
    instructions: u64,
    hw: Option<HwReport>,
    lossless: bool,
}

struct Workload {
    name: String,
    command: Vec<String>,
    allow_rw: Option<PathBuf>,
    tags: outcrop_rpa::tags::Tags,
}

/// fileio's runs share a working directory and scratch file: one at a time.
static FILEIO: Mutex<()> = Mutex::new(());

/// The paper's query pair (edges 1/`rate` + the GC barrier) on `w`'s tags with hardware
/// `hw`, lossless; with `exact`, each service's exact reference too.
fn paper_queries(w: &Workload, rate: u32, hw: HwConfig, exact: bool) -> Result<RpaSpec> {
    let mut spec = RpaSpec::new(assembled(&queries(rate))?);
    spec.tags = w.tags.clone();
    spec.lossless = true;
    spec.exact = exact;
    spec.hardware = Some(hw);
    Ok(spec)
}

fn run_one(w: &Workload, cell: Cell) -> Result<Outcome> {
    let spec = match cell {
        Cell::Bare => None,
        Cell::Hw(networks, buffers, cheap, rate) => Some(paper_queries(
            w,
            rate,
            HwConfig {
                networks,
                buffers,
                cheap,
                ..HwConfig::paper()
            },
            false,
        )?),
    };
    let (t, rpa) = run_spec(w, "rpa2000", spec)?;
    let lossless = rpa
        .as_ref()
        .is_none_or(|x| x.queries.iter().all(|q| q.lost == 0) && x.queries[1].dropped == 0);
    Ok(Outcome {
        cycles: t.cycles,
        instructions: t.instructions,
        hw: rpa.and_then(|x| x.hardware),
        lossless,
    })
}

fn cells() -> Vec<Cell> {
    let mut v = vec![Cell::Bare];
    for rate in RATES {
        v.push(Cell::Hw(32, 32, false, rate));
        v.push(Cell::Hw(4, 8, false, rate));
    }
    for n in 1..=3 {
        v.push(Cell::Hw(n, 8, false, 256));
    }
    v.push(Cell::Hw(4, 8, true, 256));
    v
}

fn pct(a: f64) -> String {
    format!("{:.2}", 100.0 * a)
}

/// The workloads (every bundled one, and the GC guest, built with the cross compiler),
/// filtered by `--workloads a,b`; the temporary directory holding the GC guest.
fn suite(root: &Path, args: &[String]) -> Result<(Vec<Workload>, tempfile::TempDir)> {
    let wl = root.join("workloads");
    let names = crate::workload_names(&wl)?;
    let tmp = tempfile::tempdir()?;
    // fileio reads its input and writes a scratch file in the working directory: give it
    // a copy of its input in a directory of its own
    let fileio_dir = tmp.path().join("fileio");
    std::fs::create_dir_all(&fileio_dir)?;
    std::fs::copy(wl.join("src/fileio.c"), fileio_dir.join("fileio.c"))?;
    std::env::set_current_dir(&fileio_dir)?;
    let mut workloads: Vec<Workload> = names
        .iter()
        .map(|n| {
            let bin = wl.join("bin").join(n).to_string_lossy().into_owned();
            let mut command = vec![bin];
            if n == "fileio" {
                command.push("fileio.c".into());
            }
            Workload {
                name: n.clone(),
                command,
                allow_rw: (n == "fileio").then(|| fileio_dir.clone()),
                tags: outcrop_rpa::tags::Tags::default(),
            }
        })
        .collect();
    // the GC guest, whose reference stores carry profile tag 1
    let gc_bin = tmp.path().join("gc");
    let st = std::process::Command::new("riscv64-linux-gnu-gcc")
        .args(["-O2", "-static", "-o"])
        .arg(&gc_bin)
        .arg(wl.join("study/gc.c"))
        .status()
        .context("study-rpa needs riscv64-linux-gnu-gcc on PATH to build its GC guest (Debian: apt-get install gcc-riscv64-linux-gnu libc6-dev-riscv64-cross)")?;
    anyhow::ensure!(
        st.success(),
        "riscv64-linux-gnu-gcc failed on workloads/study/gc.c"
    );
    {
        let elf = std::fs::read(&gc_bin)?;
        let own = outcrop_rv::sections::profile_tags(&elf)?;
        let tags = outcrop_rpa::tags::Tags::new(own, []).map_err(|e| anyhow::anyhow!("{e}"))?;
        let bin = gc_bin.to_string_lossy().into_owned();
        workloads.push(Workload {
            name: "gc".into(),
            command: vec![bin.clone()],
            allow_rw: None,
            tags: tags.clone(),
        });
        // the same mutator with new objects zeroed by plain stores, as a JVM's allocator
        // does, instead of null reference stores through the barrier
        workloads.push(Workload {
            name: "gc-zero".into(),
            command: vec![bin, "400000".into(), "zero".into()],
            allow_rw: None,
            tags,
        });
    }
    if let Some(w) = args
        .iter()
        .position(|a| a == "--workloads")
        .and_then(|i| args.get(i + 1))
    {
        let want: Vec<&str> = w.split(',').collect();
        workloads.retain(|x| want.contains(&x.name.as_str()));
    }
    Ok((workloads, tmp))
}

fn jobs_arg(args: &[String]) -> Result<usize> {
    Ok(args
        .iter()
        .position(|a| a == "--jobs")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(2)
        .max(1))
}

/// Runs `f` on every (workload, cell) pair on `jobs` threads, with progress on stderr.
fn run_all<C, O>(
    workloads: &[Workload],
    cells: &[C],
    jobs: usize,
    f: impl Fn(&Workload, C) -> Result<O> + Sync,
) -> Result<BTreeMap<(usize, C), O>>
where
    C: Copy + Ord + Send + Sync + std::fmt::Debug,
    O: Send,
{
    let todo: Vec<(usize, C)> = (0..workloads.len())
        .flat_map(|i| cells.iter().map(move |&c| (i, c)))
        .collect();
    let next = AtomicUsize::new(0);
    let results: Mutex<BTreeMap<(usize, C), O>> = Mutex::new(BTreeMap::new());
    let failed: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let start = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(i, cell)) = todo.get(k) else {
                    break;
                };
                match f(&workloads[i], cell)
                    .with_context(|| format!("{} {cell:?}", workloads[i].name))
                {
                    Ok(o) => {
                        if let Ok(mut r) = results.lock() {
                            r.insert((i, cell), o);
                        }
                    }
                    Err(e) => {
                        if let Ok(mut f) = failed.lock() {
                            f.get_or_insert(e);
                        }
                        break;
                    }
                }
                eprint!(
                    "\rstudy-rpa: {}/{} runs, {:.0} s ",
                    k + 1,
                    todo.len(),
                    start.elapsed().as_secs_f64()
                );
            });
        }
    });
    eprintln!();
    if let Some(e) = failed.into_inner().ok().flatten() {
        return Err(e);
    }
    results
        .into_inner()
        .map_err(|_| anyhow::anyhow!("a run panicked"))
}

pub fn run(args: &[String]) -> Result<()> {
    let root = std::path::absolute(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))?;
    match args.first().map(String::as_str) {
        Some("prefetch") => return prefetch(&root, &args[1..]),
        Some("adaptive") => return adaptive(&root, &args[1..]),
        _ => {}
    }
    let jobs = jobs_arg(args)?;
    let (workloads, _tmp) = suite(&root, args)?;
    let results = run_all(&workloads, &cells(), jobs, run_one)?;
    let get = |i: usize, c: Cell| results.get(&(i, c)).context("missing run");
    let hw = |o: &Outcome| o.hw.clone().context("no hardware report");
    let stalled = |h: &HwReport| {
        (h.stats.held_network_cycles + h.stats.held_buffer_cycles) as f64
            / h.occupancy.cycles.max(1) as f64
    };
    let slow = |a: &Outcome, b: &Outcome| a.cycles as f64 / b.cycles as f64 - 1.0;

    println!("machine: rpa2000 (Table 5); queries: edges every N (Figure 2a) + GC barrier always on tag-1 stores (Figure 2c)\n");
    println!("### Figure 7: 32 networks, 32 buffers, edges 1/256 (% of cycles with ≥ x in use)\n");
    let xs = [1usize, 2, 3, 4, 6, 8, 12, 16];
    let head: Vec<String> = xs.iter().map(|x| format!("≥{x}")).collect();
    println!(
        "| workload | instructions | cycles | buffers {} | in flight {} |",
        head.join(" | "),
        head.join(" | ")
    );
    println!(
        "|---|---|---|{}|{}|",
        "---|".repeat(xs.len() - 1) + "---",
        "---|".repeat(xs.len() - 1) + "---"
    );
    let mut fig7 = Vec::new();
    for (i, w) in workloads.iter().enumerate() {
        let u = get(i, Cell::Hw(32, 32, false, 256))?;
        let h = hw(u)?;
        let b: Vec<String> = xs
            .iter()
            .map(|&x| pct(h.occupancy.buffers_at_least(x)))
            .collect();
        let n: Vec<String> = xs
            .iter()
            .map(|&x| pct(h.occupancy.networks_at_least(x)))
            .collect();
        println!(
            "| {} | {} | {} | {} | {} |",
            w.name,
            u.instructions,
            u.cycles,
            b.join(" | "),
            n.join(" | ")
        );
        fig7.push((w.name.clone(), h));
    }

    println!("\n### Figure 8a/8b: 8 buffers, 1–4 networks, edges 1/256 (% of cycles dispatch stalled; % slowdown against 32/32)\n");
    println!("| workload | stalled 1 | 2 | 3 | 4 | slowdown 1 | 2 | 3 | 4 | cheap 4:8 stalled | cheap slowdown | 4:8 vs no RPA | lossless |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut fig8 = Vec::new();
    for (i, w) in workloads.iter().enumerate() {
        let u = get(i, Cell::Hw(32, 32, false, 256))?;
        let bare = get(i, Cell::Bare)?;
        let mut st = Vec::new();
        let mut sl = Vec::new();
        let mut lossless = u.lossless && bare.lossless;
        for n in 1..=4 {
            let o = get(i, Cell::Hw(n, 8, false, 256))?;
            st.push(stalled(&hw(o)?));
            sl.push(slow(o, u));
            lossless &= o.lossless;
        }
        let cheap = get(i, Cell::Hw(4, 8, true, 256))?;
        let p48 = get(i, Cell::Hw(4, 8, false, 256))?;
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            w.name,
            pct(st[0]),
            pct(st[1]),
            pct(st[2]),
            pct(st[3]),
            pct(sl[0]),
            pct(sl[1]),
            pct(sl[2]),
            pct(sl[3]),
            pct(stalled(&hw(cheap)?)),
            pct(slow(cheap, u)),
            pct(slow(p48, bare)),
            if lossless && cheap.lossless {
                "yes"
            } else {
                "NO"
            }
        );
        let mut rate_slow = Vec::new();
        for rate in RATES {
            let a = get(i, Cell::Hw(4, 8, false, rate))?;
            let b = get(i, Cell::Hw(32, 32, false, rate))?;
            rate_slow.push(slow(a, b));
        }
        fig8.push((w.name.clone(), st, sl, rate_slow));
    }

    println!("\n### Figure 8c: 4 networks, 8 buffers, GC query included (% slowdown against 32/32 at the same rate)\n");
    println!("| workload | 1/32 | 1/64 | 1/128 | 1/256 |");
    println!("|---|---|---|---|---|");
    for (name, _, _, r) in &fig8 {
        let c: Vec<String> = r.iter().map(|x| pct(*x)).collect();
        println!("| {name} | {} |", c.join(" | "));
    }

    println!("\n### Table 6: instructions and cycles per profiled instruction (32/32 runs)\n");
    println!("| workload | instr/sample 1/32 | 1/64 | 1/128 | 1/256 | cycles/sample 1/32 | 1/64 | 1/128 | 1/256 |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for (i, w) in workloads.iter().enumerate() {
        let mut ins = Vec::new();
        let mut cyc = Vec::new();
        for rate in RATES {
            let o = get(i, Cell::Hw(32, 32, false, rate))?;
            let p = hw(o)?.stats.profiled.max(1) as f64;
            ins.push(format!("{:.0}", o.instructions as f64 / p));
            cyc.push(format!("{:.0}", o.cycles as f64 / p));
        }
        println!("| {} | {} | {} |", w.name, ins.join(" | "), cyc.join(" | "));
    }

    let out = root.join("docs/studies");
    plot_fig7(&out.join("rpa-fig7.svg"), &fig7)?;
    plot_fig8(&out.join("rpa-fig8.svg"), &fig8)?;
    println!("\nwrote docs/studies/rpa-fig7.svg, docs/studies/rpa-fig8.svg");
    Ok(())
}

/// The four workloads that load the RPA most (by cycles with ≥ 2 buffers in use).
fn heaviest(fig7: &[(String, HwReport)]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..fig7.len()).collect();
    idx.sort_by(|&a, &b| {
        fig7[b]
            .1
            .occupancy
            .buffers_at_least(2)
            .total_cmp(&fig7[a].1.occupancy.buffers_at_least(2))
    });
    idx.truncate(4);
    idx
}

fn plot_fig7(path: &Path, fig7: &[(String, HwReport)]) -> Result<()> {
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("plot: {e}");
    let root = SVGBackend::new(path, (1100, 450)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let panels = root.split_evenly((1, 2));
    let top = heaviest(fig7);
    let colors = [RED, BLUE, GREEN, MAGENTA];
    for (p, (title, nets)) in panels.iter().zip([
        ("cycles with ≥ x profile buffers in use (32/32)", false),
        (
            "cycles with ≥ x profiled instructions in flight (32/32)",
            true,
        ),
    ]) {
        let mut chart = ChartBuilder::on(p)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(35)
            .y_label_area_size(45)
            .build_cartesian_2d(1f64..16f64, 0f64..100f64)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("x")
            .y_desc("% of cycles")
            .draw()
            .map_err(|e| err(&e))?;
        for (k, &i) in top.iter().enumerate() {
            let (name, h) = &fig7[i];
            let pts: Vec<(f64, f64)> = (1..=16)
                .map(|x| {
                    let v = if nets {
                        h.occupancy.networks_at_least(x)
                    } else {
                        h.occupancy.buffers_at_least(x)
                    };
                    (x as f64, 100.0 * v)
                })
                .collect();
            line(&mut chart, pts, name, colors[k % colors.len()])?;
        }
        legend(&mut chart)?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

type Chart<'a, 'b> = plotters::chart::ChartContext<
    'a,
    plotters::backend::SVGBackend<'b>,
    plotters::coord::cartesian::Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::types::RangedCoordf64,
    >,
>;

/// One labelled line of a chart.
fn line(
    chart: &mut Chart,
    pts: Vec<(f64, f64)>,
    name: &str,
    c: plotters::style::RGBColor,
) -> Result<()> {
    use plotters::prelude::*;
    chart
        .draw_series(LineSeries::new(pts, c.stroke_width(2)))
        .map_err(|e| anyhow::anyhow!("plot: {e}"))?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], c));
    Ok(())
}

/// The chart's legend.
fn legend<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>) -> Result<()> {
    use plotters::prelude::*;
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()
        .map_err(|e| anyhow::anyhow!("plot: {e}"))
}

type Fig8Row = (String, Vec<f64>, Vec<f64>, Vec<f64>);

fn plot_fig8(path: &Path, fig8: &[Fig8Row]) -> Result<()> {
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("plot: {e}");
    let root = SVGBackend::new(path, (1300, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let panels = root.split_evenly((1, 3));
    // the four workloads with the most stalls at one network
    let mut idx: Vec<usize> = (0..fig8.len()).collect();
    idx.sort_by(|&a, &b| fig8[b].1[0].total_cmp(&fig8[a].1[0]));
    idx.truncate(4);
    let colors = [RED, BLUE, GREEN, MAGENTA];
    let series: [(&str, &str, usize, [&str; 4]); 3] = [
        (
            "a) % cycles dispatch stalled (8 buffers)",
            "networks",
            1,
            ["1", "2", "3", "4"],
        ),
        (
            "b) % slowdown vs 32/32 (8 buffers)",
            "networks",
            2,
            ["1", "2", "3", "4"],
        ),
        (
            "c) % slowdown vs 32/32 (4:8), edge rate",
            "rate",
            3,
            ["1/32", "1/64", "1/128", "1/256"],
        ),
    ];
    for (p, (title, xdesc, which, labels)) in panels.iter().zip(series) {
        let val = |r: &Fig8Row| match which {
            1 => r.1.clone(),
            2 => r.2.clone(),
            _ => r.3.clone(),
        };
        let ymax = idx
            .iter()
            .flat_map(|&i| val(&fig8[i]))
            .fold(0.001f64, f64::max)
            * 100.0
            * 1.15;
        let mut chart = ChartBuilder::on(p)
            .caption(title, ("sans-serif", 14))
            .margin(8)
            .x_label_area_size(35)
            .y_label_area_size(45)
            .build_cartesian_2d(-0.2f64..3.2f64, 0f64..ymax)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_labels(4)
            .x_label_formatter(&|x| {
                let i = x.round() as i64;
                if (x - i as f64).abs() < 0.01 && (0..4).contains(&i) {
                    labels[i as usize].to_string()
                } else {
                    String::new()
                }
            })
            .x_desc(xdesc)
            .draw()
            .map_err(|e| err(&e))?;
        for (k, &i) in idx.iter().enumerate() {
            let pts: Vec<(f64, f64)> = val(&fig8[i])
                .iter()
                .enumerate()
                .map(|(x, v)| (x as f64, 100.0 * v))
                .collect();
            line(&mut chart, pts, &fig8[i].0, colors[k % colors.len()])?;
        }
        legend(&mut chart)?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// One timed run of `w` on `preset`, with the RPA `spec` if any.
fn run_spec(
    w: &Workload,
    preset: &str,
    spec: Option<RpaSpec>,
) -> Result<(
    outcrop_timing::Totals,
    Option<outcrop_rpa::observe::RpaResult>,
)> {
    let _one_at_a_time = (w.name == "fileio").then(|| FILEIO.lock());
    let mut p = ProgramSpec::new(w.command.iter().map(Into::into).collect());
    p.stdio = Stdio::Quiet;
    p.deterministic = true;
    p.allow_rw.extend(w.allow_rw.clone());
    let mut guest = load(&p, Box::new(|_| {}))?;
    let cfg = outcrop_timing::Config::preset(preset)?;
    let mut run = Run::new(&mut guest.machine).timing(Some(cfg));
    if let Some(s) = spec {
        run = run.rpa(s);
    }
    let r = run.execute()?;
    let (code, how) = r.status();
    // exitcode ends with 3 on purpose
    let want = if w.name == "exitcode" { 3 } else { 0 };
    anyhow::ensure!(code == want, "the guest ended with status {code} ({how})");
    Ok((r.timing.context("no timing totals")?, r.rpa))
}

fn assembled(src: &str) -> Result<outcrop_rpa::Assembled> {
    outcrop_rpa::parse(src)
        .and_then(|p| outcrop_rpa::assemble(&p))
        .map_err(|d| anyhow::anyhow!("{}", d.message))
}

/// A prefetch study cell: no RPA, the open loop (the L2-miss query logged), or the closed
/// loop at a service latency, with Figure 2b's query verbatim or collecting `rtime` too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum PCell {
    Bare,
    Open,
    Closed(u32, bool),
}

const LATENCIES: [u32; 4] = [0, 100, 1000, 10000];
const MEMORY_BOUND: [&str; 4] = ["ptrchase", "graph_bfs", "hashtable", "micro_stride_miss"];

/// `study-rpa prefetch`: Figure 2b's service with and without its loop closed, on the
/// default machine (140-cycle memory), every workload; the latency sweep on the
/// memory-bound ones.
fn prefetch(root: &Path, args: &[String]) -> Result<()> {
    let jobs = jobs_arg(args)?;
    let (workloads, _tmp) = suite(root, args)?;
    let mut cells = vec![PCell::Bare, PCell::Open, PCell::Closed(100, false)];
    cells.extend(LATENCIES.map(|l| PCell::Closed(l, true)));
    let results = run_all(&workloads, &cells, jobs, |w, c| {
        let sweep = MEMORY_BOUND.contains(&w.name.as_str());
        if matches!(c, PCell::Closed(l, _) if l != 100 && !sweep) {
            return Ok(None);
        }
        let spec = match c {
            PCell::Bare => None,
            PCell::Open | PCell::Closed(..) => {
                let rtime = matches!(c, PCell::Closed(_, true));
                let mut s = RpaSpec::new(assembled(if rtime {
                    "for evL2DMISS * always collect pc res2 rtime ;\nsend 1 stop;\n"
                } else {
                    "for evL2DMISS * always collect pc res2 ;\nsend 1 stop;\n"
                })?);
                s.lossless = true;
                s.exact = false;
                // a prefetching service is short (a table lookup and a few prefetches);
                // at the default 50 cycles a message it falls behind ptrchase's misses
                s.hardware = Some(HwConfig {
                    service_cycles: 20,
                    ..HwConfig::paper()
                });
                if let PCell::Closed(latency, _) = c {
                    s.prefetch = Some(outcrop_rpa::prefetch::PrefetchConfig {
                        latency,
                        ..Default::default()
                    });
                }
                Some(s)
            }
        };
        let (t, r) = run_spec(w, "default", spec)?;
        let p = r
            .and_then(|r| r.hardware)
            .and_then(|h| h.prefetch)
            .map(|p| p.stats);
        Ok(Some((t, p)))
    })?;
    let get = |i: usize, c: PCell| {
        results
            .get(&(i, c))
            .and_then(|o| o.as_ref())
            .context("missing run")
    };
    println!("machine: default preset (4-wide, 1 MB L2, 140-cycle memory); query: for evL2DMISS * always collect pc res2 [rtime]; send 1 stop; hardware 4:8; service 20 cycles/message; prefetcher: degree 4, distance 2, 2^22-entry correlation table\n");
    println!("### Closed loop at a 100-cycle service latency, every workload\n");
    println!("| workload | L2 data misses, no RPA | open loop | closed, Figure 2b's query | closed, + rtime | cycles: open loop vs no RPA | closed vs open | closed + rtime vs open | closed + rtime vs no RPA | lines asked for (+ rtime) | stride / correlation predictions | late fills |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (i, w) in workloads.iter().enumerate() {
        let (bare, _) = get(i, PCell::Bare)?;
        let (open, _) = get(i, PCell::Open)?;
        let (closed, _) = get(i, PCell::Closed(100, false))?;
        let (timed, p) = get(i, PCell::Closed(100, true))?;
        let p = p.clone().unwrap_or_default();
        let removed = |t: &outcrop_timing::Totals| {
            pct(1.0 - t.l2_data_misses as f64 / open.l2_data_misses.max(1) as f64)
        };
        println!(
            "| {} | {} | {} | {} ({}%) | {} ({}%) | {} | {} | {} | {} | {} | {} / {} | {} |",
            w.name,
            bare.l2_data_misses,
            open.l2_data_misses,
            closed.l2_data_misses,
            removed(closed),
            timed.l2_data_misses,
            removed(timed),
            signed(open.cycles as f64 / bare.cycles as f64 - 1.0),
            signed(closed.cycles as f64 / open.cycles as f64 - 1.0),
            signed(timed.cycles as f64 / open.cycles as f64 - 1.0),
            signed(timed.cycles as f64 / bare.cycles as f64 - 1.0),
            p.issued,
            p.stride_hits,
            p.correlation_hits,
            timed.fills_late
        );
    }
    println!("\n### Service latency sweep (memory-bound workloads, query with rtime): L2 data misses and cycles against the open loop\n");
    println!("| workload | open loop: misses | cycles | latency 0 | 100 | 1,000 | 10,000 |");
    println!("|---|---|---|---|---|---|---|");
    for (i, w) in workloads.iter().enumerate() {
        if !MEMORY_BOUND.contains(&w.name.as_str()) {
            continue;
        }
        let (open, _) = get(i, PCell::Open)?;
        let mut row = Vec::new();
        for l in LATENCIES {
            let (t, _) = get(i, PCell::Closed(l, true))?;
            row.push(format!(
                "misses {}, cycles {}",
                signed(t.l2_data_misses as f64 / open.l2_data_misses.max(1) as f64 - 1.0),
                signed(t.cycles as f64 / open.cycles as f64 - 1.0)
            ));
        }
        println!(
            "| {} | {} | {} | {} |",
            w.name,
            open.l2_data_misses,
            open.cycles,
            row.join(" | ")
        );
    }
    Ok(())
}

fn signed(a: f64) -> String {
    format!("{:+.2}%", 100.0 * a)
}

/// An adaptive-rate study cell: no RPA, or edges at `rate` with `networks` networks (8
/// buffers), adaptive or not; the GC query rides along.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum ACell {
    Bare,
    Edge(u32, u32, bool),
}

/// `study-rpa adaptive`: the RPA watching itself (budget 0.5% of cycles): slowdown against
/// no RPA and edge-profile accuracy against the exact profile, with and without it.
fn adaptive(root: &Path, args: &[String]) -> Result<()> {
    use outcrop_rpa::services::{edge_accuracy, Service};
    let jobs = jobs_arg(args)?;
    let (workloads, _tmp) = suite(root, args)?;
    let mut cells = vec![ACell::Bare];
    for rate in [32, 256] {
        for networks in [1, 4] {
            for on in [false, true] {
                cells.push(ACell::Edge(rate, networks, on));
            }
        }
    }
    // (cycles, stalled share, overlap %, samples, highest level)
    let results = run_all(&workloads, &cells, jobs, |w, c| {
        let spec = match c {
            ACell::Bare => None,
            ACell::Edge(rate, networks, on) => {
                let hw = HwConfig {
                    networks,
                    buffers: 8,
                    ..HwConfig::paper()
                };
                let mut s = paper_queries(w, rate, hw, true)?;
                s.adaptive = on.then(outcrop_rpa::hw::AdaptiveConfig::default);
                Some(s)
            }
        };
        let rate = match c {
            ACell::Edge(r, ..) => r,
            ACell::Bare => 1,
        };
        let (t, r) = run_spec(w, "rpa2000", spec)?;
        let Some(r) = r else {
            return Ok((t.cycles, 0.0, 0.0, 0, 0));
        };
        let h = r.hardware.as_ref().context("no hardware report")?;
        let stalled = (h.stats.held_network_cycles + h.stats.held_buffer_cycles) as f64
            / t.cycles.max(1) as f64;
        let st = &r.queries[0];
        let overlap = match (&r.queues.first(), r.exact.first().and_then(|e| e.as_ref())) {
            (Some((_, _, Service::Edges(e))), Some(x)) => {
                // weighted samples already stand for the throttled ones
                let t = if r.queues[0].2.weighted() {
                    0
                } else {
                    st.throttled
                };
                let eff = f64::from(rate) * (st.selected + t) as f64 / st.sent.max(1) as f64;
                edge_accuracy(&e.branches, eff, &x.edges).overlap_pct
            }
            _ => f64::NAN,
        };
        let level = h.adaptive.as_ref().map_or(0, |a| a.max_level_reached);
        Ok((t.cycles, stalled, overlap, st.sent, level))
    })?;
    let get = |i: usize, c: ACell| results.get(&(i, c)).context("missing run");
    println!("machine: rpa2000; queries: edges every N + the GC barrier (always); 8 buffers; adaptive budget 0.5% of cycles per 10,000-cycle window\n");
    for rate in [32u32, 256] {
        println!("### Edges 1/{rate}: slowdown against no RPA, % cycles stalled, edge overlap with the exact profile, samples (fixed → adaptive)\n");
        println!("| workload | 1 network: slowdown | stalled | overlap | samples | highest throttle | 4 networks: slowdown | stalled | overlap | samples | highest throttle |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|");
        for (i, w) in workloads.iter().enumerate() {
            let bare = get(i, ACell::Bare)?.0 as f64;
            let mut cols = Vec::new();
            for networks in [1, 4] {
                let a = get(i, ACell::Edge(rate, networks, false))?;
                let b = get(i, ACell::Edge(rate, networks, true))?;
                cols.push(format!(
                    "{} → {} | {} → {} | {:.1} → {:.1} | {} → {} | 1/{}",
                    pct(a.0 as f64 / bare - 1.0),
                    pct(b.0 as f64 / bare - 1.0),
                    pct(a.1),
                    pct(b.1),
                    a.2,
                    b.2,
                    a.3,
                    b.3,
                    (1u64 << b.4) * u64::from(rate)
                ));
            }
            println!("| {} | {} |", w.name, cols.join(" | "));
        }
        println!();
    }
    Ok(())
}
