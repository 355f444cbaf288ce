//! `cargo run --release -p xtask -- bench-wpp [--runs R] [--workloads a,b] [--no-peers]`:
//! whole-program profiles on every compute workload, side by side in one run:
//!
//! * file size with 0–3 stratum layers (what each layer buys), without the context model
//!   (zstd columns only: what the model buys) and with zlib (the paper's compressor), against the raw 8-byte-per-block trace (written by `wpp replay --format
//!   u64le`) compressed by `zstd -3 --long=27`, `zstd -19 --long=27` and `xz -9`;
//! * capture time (threaded and inline) against a bare `outcrop exec` of the same program,
//!   R runs each (at least 5), alternating, each a whole process from start to exit; medians
//!   with min–max;
//! * replay speed: blocks per second of `wpp replay --format u64le` to /dev/null.

use crate::bench::{guest_args, median, BenchOptions};
use crate::{Context, Result};
use outcrop_studies::{cells, table::Table};
use std::path::Path;
use std::process::Command;

struct Row {
    name: String,
    blocks: u64,
    sizes: Vec<u64>,
    zlib: u64,
    zstd_only: u64,
    peers: Option<[u64; 3]>,
    peer_secs: [f64; 3],
    bare: Vec<f64>,
    threaded: Vec<f64>,
    inline: Vec<f64>,
    replay: Vec<f64>,
}

fn timed(cmd: &mut Command, dir: &Path) -> Result<f64> {
    crate::bench::time(cmd.current_dir(dir))
}

/// Writes the raw trace of `wpp` (8-byte block start addresses, `wpp replay --format u64le`)
/// to `raw`; returns its block count.
pub fn replay_raw(outcrop: &Path, wpp: &Path, raw: &Path) -> Result<u64> {
    let st = Command::new(outcrop)
        .args(["wpp", "replay", "--format", "u64le", "-o"])
        .arg(raw)
        .arg(wpp)
        .status()
        .context("running outcrop wpp replay")?;
    ensure!(st.success(), "outcrop wpp replay {}: {st}", wpp.display());
    Ok(std::fs::metadata(raw)?.len() / 8)
}

/// `median (min–max)` of seconds.
fn mm(v: &[f64]) -> String {
    crate::bench::mm(v, 3)
}

/// Median and range of the per-run ratios a[i] / b[i].
fn ratio(a: &[f64], b: &[f64]) -> String {
    crate::bench::ratio(a, b).1.replace('×', "x")
}

/// Options of `bench-wpp`.
#[derive(Debug, Clone)]
pub struct Config {
    /// Runs and workloads.
    pub bench: BenchOptions,
    /// Leave out the peers (zstd, xz).
    pub no_peers: bool,
    /// The programs nobody here wrote instead of the workloads (`xtask real-programs`, built
    /// first): Lua 5.5.1 running fib.lua, SQLite 3.54.1, zstd 1.5.7 at level 3.
    pub real: bool,
}

/// `--real`: (row name, binary in the real-programs directory, arguments, files it reads).
const REAL: [(&str, &str, &[&str]); 3] = [
    ("lua-fib", "lua", &["fib.lua"]),
    ("sqlite", "sqlite", &[]),
    ("zstd-3", "zstd", &["3", "input.txt"]),
];

/// The fields of `outcrop wpp report --json` read here.
#[derive(serde::Deserialize)]
struct ReportView {
    stats: StatsView,
}

#[derive(serde::Deserialize)]
struct StatsView {
    build: BuildView,
}

#[derive(serde::Deserialize)]
struct BuildView {
    blocks: u64,
}

/// `xtask bench-wpp`: measures and writes its Markdown table to `out` (the module's doc says what and against which peer).
pub fn run(
    args: Config,
    out: &mut dyn std::io::Write,
    log: &mut (dyn std::io::Write + Send),
) -> Result<()> {
    let runs = args.bench.runs(5);
    let peers = !args.no_peers;
    let (root, outcrop) = crate::release_outcrop()?;
    let wl = root.join("workloads");
    let tmp = std::env::temp_dir().join(format!("outcrop-bench-wpp-{}", std::process::id()));
    std::fs::create_dir_all(tmp.join("src"))?;
    std::fs::create_dir_all(tmp.join("bin"))?;
    // (name, program to copy, its arguments)
    let mut programs: Vec<(String, std::path::PathBuf, Vec<String>)> = Vec::new();
    if args.real {
        let dir = crate::real_programs::build(None, log)?.dir;
        for (name, bin, a) in REAL {
            for f in a.iter().filter(|f| f.contains('.')) {
                std::fs::copy(dir.join(f), tmp.join(f))?;
            }
            programs.push((
                name.into(),
                dir.join(bin),
                a.iter().map(|s| s.to_string()).collect(),
            ));
        }
    } else {
        crate::bench::stage_inputs(&tmp)?;
        for name in args.bench.names()? {
            let a = guest_args(&name)?;
            programs.push((name.clone(), wl.join("bin").join(&name), a));
        }
    }
    let mut rows = Vec::new();
    for (name, bin, guest_args) in &programs {
        std::fs::copy(bin, tmp.join("bin").join(name))?;
        let mut guest = vec![format!("bin/{name}")];
        guest.extend(guest_args.iter().cloned());
        let wpp = tmp.join(format!("{name}.wpp"));
        let record = |extra: &[&str], out: &Path| -> Command {
            let mut c = Command::new(&outcrop);
            c.args(["wpp", "record", "--deterministic", "--allow-rw", ".", "-o"])
                .arg(out)
                .args(extra)
                .arg("--")
                .args(&guest);
            c
        };
        note!(log, "{name}: bare and capture runs");
        // the three captures alternate, run i of each paired with run i of the others
        let (mut bare, mut threaded, mut inline) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            bare.push(timed(
                Command::new(&outcrop)
                    .args(["exec", "--deterministic", "--allow-rw", ".", "--"])
                    .args(&guest),
                &tmp,
            )?);
            threaded.push(timed(&mut record(&[], &wpp), &tmp)?);
            inline.push(timed(&mut record(&["--inline"], &wpp), &tmp)?);
        }
        let mut sizes = Vec::new();
        for layers in 0..=3 {
            let f = tmp.join(format!("{name}.l{layers}.wpp"));
            timed(&mut record(&["--layers", &layers.to_string()], &f), &tmp)?;
            sizes.push(std::fs::metadata(&f)?.len());
        }
        let fz = tmp.join(format!("{name}.zlib.wpp"));
        timed(&mut record(&["--codec", "zlib"], &fz), &tmp)?;
        let zlib = std::fs::metadata(&fz)?.len();
        let fo = tmp.join(format!("{name}.zstd.wpp"));
        timed(&mut record(&["--no-context-model"], &fo), &tmp)?;
        let zstd_only = std::fs::metadata(&fo)?.len();
        let report: ReportView = serde_json::from_slice(
            &Command::new(&outcrop)
                .args(["wpp", "report", "--json"])
                .arg(&wpp)
                .output()?
                .stdout,
        )
        .context("wpp report --json")?;
        let blocks = report.stats.build.blocks;
        let mut replay = Vec::new();
        for _ in 0..runs {
            replay.push(timed(
                Command::new(&outcrop)
                    .args(["wpp", "replay", "--format", "u64le"])
                    .arg(&wpp),
                &tmp,
            )?);
        }
        let (peer_sizes, peer_secs) = if peers {
            note!(log, "{name}: raw trace and peer compressors");
            let raw = tmp.join(format!("{name}.u64"));
            ensure!(
                replay_raw(&outcrop, &wpp, &raw)? == blocks,
                "{name}: replay length"
            );
            let mut sizes = [0u64; 3];
            let mut secs = [0f64; 3];
            let jobs: [(&str, Vec<&str>); 3] = [
                ("zstd", vec!["-3", "--long=27", "-T1", "-q", "-c"]),
                ("zstd", vec!["-19", "--long=27", "-T1", "-q", "-c"]),
                ("xz", vec!["-9", "-T1", "-c"]),
            ];
            for (i, (tool, flags)) in jobs.iter().enumerate() {
                let out = tmp.join("peer.out");
                let t = std::time::Instant::now();
                let st = Command::new(tool)
                    .args(flags)
                    .arg(&raw)
                    .stdout(std::fs::File::create(&out)?)
                    .status()
                    .with_context(|| format!("running {tool} (install zstd and xz-utils)"))?;
                secs[i] = t.elapsed().as_secs_f64();
                ensure!(st.success(), "{tool} {flags:?}");
                sizes[i] = std::fs::metadata(&out)?.len();
            }
            std::fs::remove_file(&raw)?;
            (Some(sizes), secs)
        } else {
            (None, [0.0; 3])
        };
        rows.push(Row {
            name: name.clone(),
            blocks,
            sizes,
            zlib,
            zstd_only,
            peers: peer_sizes,
            peer_secs,
            bare,
            threaded,
            inline,
            replay,
        });
    }
    print_tables(&rows, runs, out)?;
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}

fn geo(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0.0), |(s, n), x: f64| {
        (s + x.max(1e-12).ln(), n + 1.0)
    });
    (s / f64::max(n, 1.0)).exp()
}

fn print_tables(rows: &[Row], runs: usize, out: &mut dyn std::io::Write) -> Result<()> {
    let default_layers = 1;
    say!(
        out,
        "### File size (bytes; the default is {default_layers} stratum layer)\n"
    );
    let mut table = Table::new()
        .left("workload")
        .right("blocks")
        .right("raw trace")
        .right("0 layers")
        .right("1 layer")
        .right("2 layers")
        .right("3 layers")
        .right("zstd only")
        .right("zlib")
        .right("zstd -3 --long")
        .right("zstd -19 --long")
        .right("xz -9")
        .right("zstd-3 / ours")
        .right("zstd-19 / ours")
        .right("xz / ours");
    for r in rows {
        let ours = r.sizes[default_layers] as f64;
        let peers: Vec<String> = match r.peers {
            Some(p) => cells![
                p[0],
                p[1],
                p[2],
                format!("{:.1}x", p[0] as f64 / ours),
                format!("{:.2}x", p[1] as f64 / ours),
                format!("{:.2}x", p[2] as f64 / ours)
            ],
            None => vec!["-".into(); 6],
        };
        table.row(
            cells![
                r.name,
                r.blocks,
                r.blocks * 8,
                r.sizes[0],
                r.sizes[1],
                r.sizes[2],
                r.sizes[3],
                r.zstd_only,
                r.zlib
            ]
            .into_iter()
            .chain(peers),
        );
    }
    write!(out, "{table}")?;
    let with_peers: Vec<&Row> = rows.iter().filter(|r| r.peers.is_some()).collect();
    if !with_peers.is_empty() {
        for (i, peer) in ["zstd -3 --long=27", "zstd -19 --long=27", "xz -9"]
            .iter()
            .enumerate()
        {
            let g = geo(with_peers
                .iter()
                .map(|r| r.peers.map_or(1.0, |p| p[i] as f64) / r.sizes[default_layers] as f64));
            let worst = with_peers
                .iter()
                .map(|r| r.peers.map_or(1.0, |p| p[i] as f64) / r.sizes[default_layers] as f64)
                .fold(f64::INFINITY, f64::min);
            say!(out, "\n{peer}: ours is {g:.2}x smaller (geometric mean), {worst:.2}x on the worst workload");
        }
        for l in 0..4 {
            let g = geo(with_peers
                .iter()
                .map(|r| r.peers.map_or(1.0, |p| p[0] as f64) / r.sizes[l] as f64));
            say!(
                out,
                "{l} stratum layers: {g:.2}x smaller than zstd -3 --long (geometric mean)"
            );
        }
        let g = geo(with_peers
            .iter()
            .map(|r| r.peers.map_or(1.0, |p| p[0] as f64) / r.zstd_only as f64));
        say!(out, "1 stratum layer without the context model: {g:.2}x smaller than zstd -3 --long (geometric mean)");
        let t: Vec<String> = ["zstd -3", "zstd -19", "xz -9"]
            .iter()
            .enumerate()
            .map(|(i, n)| {
                format!(
                    "{n} {:.1} s",
                    with_peers.iter().map(|r| r.peer_secs[i]).sum::<f64>()
                )
            })
            .collect();
        say!(
            out,
            "peer compression time over all workloads (one run): {}",
            t.join(", ")
        );
    }
    say!(out, "\n### Capture and replay speed ({runs} runs each, alternating; whole processes; median (min–max), ratios are medians of per-run ratios)\n");
    let mut table = Table::new()
        .left("workload")
        .right("bare exec s")
        .right("record s (threaded)")
        .right("slowdown")
        .right("record s (inline)")
        .right("slowdown")
        .right("threads speedup")
        .right("replay s")
        .right("replay M blocks/s");
    for r in rows {
        table.row(cells![
            r.name,
            mm(&r.bare),
            mm(&r.threaded),
            ratio(&r.threaded, &r.bare),
            mm(&r.inline),
            ratio(&r.inline, &r.bare),
            ratio(&r.inline, &r.threaded),
            mm(&r.replay),
            format!("{:.0}", r.blocks as f64 / median(&r.replay) / 1e6)
        ]);
    }
    write!(out, "{table}")?;
    say!(out,
        "\ngeometric means: threaded capture {:.2}x bare exec, inline {:.2}x; replay {:.0} M blocks/s (slowest {:.0})",
        geo(rows.iter().map(|r| median(&r.threaded) / median(&r.bare))),
        geo(rows.iter().map(|r| median(&r.inline) / median(&r.bare))),
        geo(rows.iter().map(|r| r.blocks as f64 / median(&r.replay) / 1e6)),
        rows.iter()
            .map(|r| r.blocks as f64 / median(&r.replay) / 1e6)
            .fold(f64::INFINITY, f64::min)
    );
    Ok(())
}
