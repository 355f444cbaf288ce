//! `cargo run --release -p xtask -- study-strata [--runs R] [--workloads a,b] [--svg-dir DIR]`:
//! the strata paper's (`002_*.txt`) §IV results on every bundled compute workload
//! (docs/studies/strata.md), one job per workload:
//!
//! * Table 3 (paths: executions, mean length in blocks, unique paths) and Table 4 (strata:
//!   unique, total, consecutive executions), from `outcrop wpp report --json` (read into the
//!   typed view below: the fields docs/formats.md documents);
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
//! The timings are of whole processes (the release `outcrop`, a native build), so jobs run one
//! at a time unless `--jobs` says otherwise. Needs `gcc` (native builds) and `zstd` on PATH,
//! and fails naming the missing one.

use crate::sweep::SweepOptions;
use crate::{Context, Result};
use outcrop_studies::chart::{grid, Panel, Series, Style};
use outcrop_studies::stats::{geomean, Spread};
use outcrop_studies::{cells, table::Table};
use outcrop_studies::{Job, Manifest, Study};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The fields of `outcrop wpp report --json` the tables read.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WppView {
    paths: PathsView,
    layers: Vec<LayerView>,
    path_length_vs_trips: Vec<(u64, u64)>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct PathsView {
    executed: u64,
    mean_length_blocks: f64,
    unique: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct LayerView {
    unique: u64,
    total: u64,
    repeated: u64,
    consecutive: u64,
    lengths: Vec<LengthView>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct LengthView {
    length: u64,
    executions: u64,
}

/// One workload's job output.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    name: String,
    instructions: u64,
    blocks: u64,
    file_bytes: u64,
    zstd_bytes: u64,
    native: Vec<f64>,
    bare: Vec<f64>,
    record: Vec<f64>,
    report: WppView,
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
    crate::bench::time(cmd.current_dir(dir))
}

/// Geometric mean, median, and geometric mean without the largest and smallest value.
fn summary(v: &[f64]) -> (f64, f64, f64) {
    let mut s: Vec<f64> = v.iter().map(|x| x.max(1e-12)).collect();
    s.sort_by(f64::total_cmp);
    let g = |v: &[f64]| geomean(v).unwrap_or(0.0);
    let trimmed = if s.len() > 2 {
        g(&s[1..s.len() - 1])
    } else {
        g(&s)
    };
    (g(&s), Spread::of(&s).map_or(0.0, |x| x.median), trimmed)
}

use crate::bench::ratio;

/// `median (min–max)` of seconds.
fn mm(v: &[f64]) -> String {
    crate::bench::mm(v, 3)
}

/// Options of `study-strata`.
#[derive(Debug, Clone)]
pub struct Config {
    /// The sweep: workloads, jobs, results, Slurm.
    pub study: SweepOptions,
    /// Timed runs of each program (at least 5).
    pub runs: usize,
    /// Write strata-fig2.svg and strata-fig3.svg into DIR.
    pub svg_dir: Option<PathBuf>,
}

/// The study: one job per workload (native build, R timed runs of each, one capture).
pub struct StrataStudy {
    workloads: Vec<String>,
    runs: usize,
    outcrop: PathBuf,
}

impl Study for StrataStudy {
    type Params = usize;
    type Output = Row;

    fn name(&self) -> &str {
        "strata"
    }

    fn jobs(&self, m: &Manifest) -> Vec<Job<usize>> {
        m.select(&self.workloads)
            .map(|ws| {
                ws.iter()
                    .map(|w| Job::new(&format!("{}-runs{}", w.name, self.runs), &w.name, self.runs))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn run(&self, m: &Manifest, job: &Job<usize>, dir: &Path) -> outcrop_studies::Result<Row> {
        measure(&self.outcrop, m, &job.workload, job.params, dir)
            .map_err(|e| outcrop_studies::Error::Job(format!("{e:#}")))
    }
}

/// One workload: its native build, `runs` alternating timed runs of the three, a capture
/// and its report, and zstd on the raw trace, all in `dir`.
fn measure(outcrop: &Path, m: &Manifest, name: &str, runs: usize, dir: &Path) -> Result<Row> {
    let w = m.get(name)?;
    // the guest's working directory holds its inputs; the native build runs there too
    m.spec(name, dir)?;
    let native = dir.join(format!("{name}.native"));
    let st = Command::new("gcc")
        .args(["-O2", "-static", "-fno-tree-vectorize", "-o"])
        .arg(&native)
        .arg(m.root.join("src").join(format!("{name}.c")))
        .arg("-lm")
        .status()
        .context("running gcc")?;
    ensure!(st.success(), "gcc failed on {name}.c");
    // the guest sees `bin/NAME` (relative, as in every study): its counts do not depend on
    // where the checkout lies
    let bin = w.binary();
    let link = dir.join(bin.parent().unwrap_or(Path::new("bin")));
    if !link.exists() {
        std::os::unix::fs::symlink(m.root.join(bin.parent().unwrap_or(Path::new("bin"))), &link)?;
    }
    let wpp = dir.join(format!("{name}.wpp"));
    let (mut n, mut b, mut r) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        n.push(timed(Command::new(&native).args(&w.args), dir)?);
        b.push(timed(
            Command::new(outcrop)
                .args(["exec", "--deterministic", "--allow-rw", ".", "--"])
                .arg(&bin)
                .args(&w.args),
            dir,
        )?);
        r.push(timed(
            Command::new(outcrop)
                .args(["wpp", "record", "--deterministic", "--allow-rw", ".", "-o"])
                .arg(&wpp)
                .arg("--")
                .arg(&bin)
                .args(&w.args),
            dir,
        )?);
    }
    let out = Command::new(outcrop)
        .args(["wpp", "report", "--json"])
        .arg(&wpp)
        .output()?;
    ensure!(out.status.success(), "wpp report {name}");
    let report: WppView = serde_json::from_slice(&out.stdout).context("wpp report --json")?;
    #[derive(Deserialize)]
    struct Instructions {
        stats: StatsView,
    }
    #[derive(Deserialize)]
    struct StatsView {
        build: BuildView,
    }
    #[derive(Deserialize)]
    struct BuildView {
        instructions: u64,
    }
    let i: Instructions = serde_json::from_slice(&out.stdout).context("wpp report --json")?;
    let raw = dir.join(format!("{name}.u64"));
    let blocks = crate::bench_wpp::replay_raw(outcrop, &wpp, &raw)?;
    let z = Command::new("zstd")
        .args(["-3", "--long=27", "-T1", "-q", "-c"])
        .arg(&raw)
        .output()?;
    ensure!(z.status.success(), "zstd on {name}'s trace");
    std::fs::remove_file(&raw)?;
    Ok(Row {
        name: name.to_string(),
        instructions: i.stats.build.instructions,
        blocks,
        file_bytes: std::fs::metadata(&wpp)?.len(),
        zstd_bytes: z.stdout.len() as u64,
        native: n,
        bare: b,
        record: r,
        report,
    })
}

/// `study-strata`: runs the sweep and writes the tables of docs/studies/strata.md to `out`.
pub fn run(
    mut args: Config,
    out: &mut dyn std::io::Write,
    log: &mut (dyn std::io::Write + Send),
) -> Result<()> {
    let (_, outcrop) = crate::release_outcrop()?;
    require("gcc", "--version")?;
    require("zstd", "--version")?;
    // process timings: one job at a time unless asked
    if args.study.jobs == 0 {
        args.study.jobs = 1;
    }
    let study = StrataStudy {
        workloads: args.study.workloads.clone(),
        runs: args.runs.max(5),
        outcrop,
    };
    let Some(rows) = crate::sweep::outputs(&study, &study.workloads, &args.study, log)? else {
        return Ok(());
    };
    print_tables(&rows, study.runs, out)?;
    if let Some(d) = args.svg_dir {
        std::fs::create_dir_all(&d)?;
        for (file, svg) in [
            ("strata-fig2.svg", plot_fig2(&rows)?),
            ("strata-fig3.svg", plot_fig3(&rows)?),
        ] {
            std::fs::write(d.join(file), svg).with_context(|| format!("writing {file}"))?;
        }
    }
    Ok(())
}

fn print_tables(rows: &[Row], runs: usize, out: &mut dyn std::io::Write) -> Result<()> {
    say!(out, "### Paths (Table 3)\n");
    let mut t = Table::new()
        .left("workload")
        .right("instructions")
        .right("blocks")
        .right("paths executed")
        .right("mean path length (blocks)")
        .right("unique paths");
    for r in rows {
        let p = &r.report.paths;
        t.row(cells![
            r.name,
            r.instructions,
            r.blocks,
            p.executed,
            format!("{:.1}", p.mean_length_blocks),
            p.unique
        ]);
    }
    write!(out, "{t}")?;
    say!(out, "\n### Strata (Table 4), layer 0\n");
    let mut t = Table::new()
        .left("workload")
        .right("unique strata")
        .right("total strata")
        .right("consecutive executions")
        .right("paths covered by strata")
        .right("mean stratum length (paths)");
    for r in rows {
        let l = r.report.layers.first().cloned().unwrap_or_default();
        let (sum, cnt) = l.lengths.iter().fold((0u64, 0u64), |(s, c), x| {
            (s + x.length * x.executions, c + x.executions)
        });
        t.row(cells![
            r.name,
            l.unique,
            l.total,
            l.consecutive,
            l.repeated,
            if cnt > 0 {
                format!("{:.1}", sum as f64 / cnt as f64)
            } else {
                "–".into()
            }
        ]);
    }
    write!(out, "{t}")?;
    say!(out, "\n### Compression (§IV.B)\n");
    let mut t = Table::new()
        .left("workload")
        .right("file bytes")
        .right("paper's ratio (instructions × 4.2 ÷ bytes)")
        .right("raw block trace ÷ bytes")
        .right("zstd -3 --long bytes")
        .right("zstd ÷ ours");
    let (mut paper, mut raw, mut zs) = (Vec::new(), Vec::new(), Vec::new());
    for r in rows {
        let f = r.file_bytes as f64;
        let p = r.instructions as f64 * 4.2 / f;
        let w = r.blocks as f64 * 8.0 / f;
        let z = r.zstd_bytes as f64 / f;
        paper.push(p);
        raw.push(w);
        zs.push(z);
        t.row(cells![
            r.name,
            r.file_bytes,
            format!("{:.0}", p),
            format!("{:.0}", w),
            r.zstd_bytes,
            format!("{:.2}×", z)
        ]);
    }
    for (label, v) in [
        ("paper's ratio", &paper),
        ("raw trace ÷ ours", &raw),
        ("zstd -3 --long ÷ ours", &zs),
    ] {
        let (g, m, trimmed) = summary(v);
        t.row(cells![
            format!("**{label}**"),
            format!("geometric mean {g:.2}"),
            format!("median {m:.2}"),
            format!("geometric mean without best and worst {trimmed:.2}"),
            "",
            ""
        ]);
    }
    write!(out, "{t}")?;
    say!(out, "\n### Capture slowdown (§IV.A), {runs} runs each, alternating; seconds are medians (min–max), ratios are medians of per-run ratios\n");
    let mut t = Table::new()
        .left("workload")
        .right("native x86-64 s")
        .right("bare machine s")
        .right("capture s")
        .right("capture ÷ native")
        .right("capture ÷ bare machine")
        .right("bare machine ÷ native");
    let (mut vn, mut vb, mut vm) = (Vec::new(), Vec::new(), Vec::new());
    for r in rows {
        let (a, sa) = ratio(&r.record, &r.native);
        let (b, sb) = ratio(&r.record, &r.bare);
        let (c, sc) = ratio(&r.bare, &r.native);
        vn.push(a);
        vb.push(b);
        vm.push(c);
        t.row(cells![
            r.name,
            mm(&r.native),
            mm(&r.bare),
            mm(&r.record),
            sa,
            sb,
            sc
        ]);
    }
    for (label, v) in [
        ("capture ÷ native", &vn),
        ("capture ÷ bare machine", &vb),
        ("bare machine ÷ native", &vm),
    ] {
        let (g, m, trimmed) = summary(v);
        t.row(cells![
            format!("**{label}**"),
            format!("geometric mean {g:.2}"),
            format!("median {m:.2}"),
            format!("without best and worst {trimmed:.2}"),
            "",
            "",
            ""
        ]);
    }
    write!(out, "{t}")?;
    Ok(())
}

/// One log–log panel per workload.
fn panels(
    rows: &[Row],
    x: &str,
    y: &str,
    style: Style,
    pts: impl Fn(&Row) -> Vec<(f64, f64)>,
) -> Result<String> {
    let panels: Vec<Panel> = rows
        .iter()
        .map(|r| Panel {
            title: r.name.clone(),
            x: x.into(),
            y: y.into(),
            log_x: true,
            log_y: true,
            series: vec![Series {
                name: r.name.clone(),
                points: pts(r),
                style,
            }],
            ..Panel::default()
        })
        .collect();
    Ok(grid(&panels, 3, (320, 240))?)
}

/// Figure 2: every unique path as a point (length in blocks, executions).
fn plot_fig2(rows: &[Row]) -> Result<String> {
    panels(
        rows,
        "path length (blocks)",
        "trip count",
        Style::Scatter,
        |r| {
            r.report
                .path_length_vs_trips
                .iter()
                .map(|p| (p.0.max(1) as f64, p.1.max(1) as f64))
                .collect()
        },
    )
}

/// Figure 3: layer-0 strata by length (paths), executions of each length.
fn plot_fig3(rows: &[Row]) -> Result<String> {
    panels(
        rows,
        "stratum length (paths)",
        "executions",
        Style::Line,
        |r| {
            r.report
                .layers
                .first()
                .map(|l| {
                    l.lengths
                        .iter()
                        .map(|x| (x.length.max(1) as f64, x.executions.max(1) as f64))
                        .collect()
                })
                .unwrap_or_default()
        },
    )
}
