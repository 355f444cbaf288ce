//! `cargo run --release -p xtask -- bench-observed [--runs R] --dir DIR --program 'PROG ARGS'...`:
//! what observing a run costs under the compiling tier, against qemu-user observing the same
//! program with a block-counting TCG plugin (docs/BENCHMARKS.md, "The compiling tier").
//!
//! For each program, alternately: `qemu-riscv64` (Debian's dynamic qemu-user, which loads
//! plugins), `qemu-riscv64 -plugin bbcount.so` (an exact block profile: every translation
//! block's executions counted by an inline add, `scripts/qemu-plugin/bbcount.c`, built here
//! with `cc`), `outcrop exec` (bare, the compiling tier), `outcrop run` (the exact profile by
//! function, line and call path), `outcrop wpp record` (whole-program capture) and
//! `outcrop paths record` (a 16-entry branch-record unit, untimed). Medians with min–max of R
//! runs of process wall time; ratios are medians of per-run ratios (runs alternate, so run i
//! of each is paired).
//!
//! A second table takes each observer alone and all of them composed, in wall and CPU
//! seconds (every thread of the process: the compiling thread, capture's builder): `exec`,
//! the class counter (`exec --stats-json`), the exact profile (`run`), the profile with RAP's
//! pc and block streams (`run --rap pc`, `--rap block`: `run` always keeps the profile),
//! `paths record`, `wpp record`, and `run` with all of them.

use crate::bench::{mm, ratio, time, time_cpu};
use crate::{Context, Result};
use outcrop_studies::{cells, table::Table};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Options of `bench-observed`.
#[derive(Debug, Clone)]
pub struct Config {
    /// Runs of each mode per program.
    pub runs: usize,
    /// The programs (each `PROG ARGS...` quoted as one argument), run in --dir with it
    /// granted read-write.
    pub programs: Vec<String>,
    /// The directory the programs run in.
    pub dir: PathBuf,
}

/// Builds the qemu plugin into `out` (a shared object).
fn build_plugin(root: &Path, out: &Path) -> Result<()> {
    let src = root.join("scripts/qemu-plugin/bbcount.c");
    let st = Command::new("cc")
        .args(["-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-o"])
        .arg(out)
        .arg(&src)
        .status()
        .context("running cc to build the qemu plugin")?;
    crate::ensure!(st.success(), "building {}: {st}", src.display());
    Ok(())
}

/// `xtask bench-observed`: measures and writes its Markdown table to `out` (the module's doc says what and against which peer).
pub fn run(args: Config, out: &mut dyn std::io::Write) -> Result<()> {
    let (root, outcrop) = crate::release_outcrop()?;
    let outcrop = std::path::absolute(outcrop)?;
    crate::ensure!(
        Command::new("qemu-riscv64")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "needs Debian's dynamic qemu-user (apt-get install qemu-user): qemu-riscv64-static cannot load plugins"
    );
    let tmp = std::env::temp_dir().join(format!("outcrop-observed-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let plugin = tmp.join("bbcount.so");
    build_plugin(&root, &plugin)?;
    let dir = std::path::absolute(&args.dir)?;
    let runs = args.runs.max(1);
    say!(
        out,
        "{runs} runs each, alternating; median (min–max) wall seconds; in {}\n",
        dir.display()
    );
    let mut table = Table::new()
        .left("command")
        .right("qemu s")
        .right("qemu + bbcount s")
        .right("exec s")
        .right("run s")
        .right("wpp record s")
        .right("paths record s")
        .right("plugin / qemu")
        .right("run / exec")
        .right("wpp / exec")
        .right("paths / exec")
        .right("run / (qemu + bbcount)");
    let mut geo = [0.0f64; 5];
    for p in &args.programs {
        let words: Vec<&str> = p.split_whitespace().collect();
        crate::ensure!(!words.is_empty(), "empty --program");
        let wpp = tmp.join("run.wpp");
        let samples = tmp.join("run.samples");
        let profile = tmp.join("profile.txt");
        let plugin_arg = format!("{},out={}", plugin.display(), tmp.join("bb.txt").display());
        let outcrop_mode = |mode: &[&str]| {
            let mut c = Command::new(&outcrop);
            c.current_dir(&dir)
                .args(mode)
                .args(["--allow-rw", ".", "--"])
                .args(&words);
            c
        };
        let mut t: [Vec<f64>; 6] = Default::default();
        for _ in 0..runs {
            t[0].push(time(
                Command::new("qemu-riscv64").current_dir(&dir).args(&words),
            )?);
            t[1].push(time(
                Command::new("qemu-riscv64")
                    .current_dir(&dir)
                    .args(["-plugin", &plugin_arg])
                    .args(&words),
            )?);
            t[2].push(time(&mut outcrop_mode(&["exec"]))?);
            let prof = profile.to_string_lossy().into_owned();
            t[3].push(time(&mut outcrop_mode(&[
                "run",
                "--no-progress",
                "-o",
                &prof,
            ]))?);
            let w = wpp.to_string_lossy().into_owned();
            t[4].push(time(&mut outcrop_mode(&["wpp", "record", "-o", &w]))?);
            let s = samples.to_string_lossy().into_owned();
            t[5].push(time(&mut outcrop_mode(&["paths", "record", "-o", &s]))?);
        }
        let cells = [
            ratio(&t[1], &t[0]),
            ratio(&t[3], &t[2]),
            ratio(&t[4], &t[2]),
            ratio(&t[5], &t[2]),
            ratio(&t[3], &t[1]),
        ];
        for (g, (m, _)) in geo.iter_mut().zip(&cells) {
            *g += m.ln();
        }
        table.row(cells![
            format!("`{p}`"),
            mm(&t[0], 3),
            mm(&t[1], 3),
            mm(&t[2], 3),
            mm(&t[3], 3),
            mm(&t[4], 3),
            mm(&t[5], 3),
            cells[0].1,
            cells[1].1,
            cells[2].1,
            cells[3].1,
            cells[4].1
        ]);
    }
    write!(out, "{table}")?;
    let per_observer = per_observer(&args, &outcrop, &dir, &tmp)?;
    let k = args.programs.len() as f64;
    let g = |i: usize| (geo[i] / k).exp();
    say!(out,
        "\ngeometric means over the {k} programs: plugin / qemu {:.2}×, run / exec {:.2}×, wpp / exec {:.2}×, paths / exec {:.2}×, run / (qemu + bbcount) {:.2}×",
        g(0),
        g(1),
        g(2),
        g(3),
        g(4)
    );
    say!(
        out,
        "\nEach observer alone and all composed: median (min–max) wall and CPU seconds (every thread, 0.01 s resolution), and the median of per-run ratios to `exec`\n"
    );
    write!(out, "{per_observer}")?;
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}

/// The modes of the per-observer table: a name and `outcrop`'s arguments before
/// `--allow-rw . -- PROG` (`{tmp}` stands for the scratch directory).
const OBSERVERS: [(&str, &[&str]); 8] = [
    ("bare (`exec`)", &["exec"]),
    (
        "class counter (`exec --stats-json`)",
        &["exec", "--stats-json", "{tmp}/stats.json"],
    ),
    (
        "exact profile (`run`)",
        &["run", "--no-progress", "-o", "{tmp}/p.txt"],
    ),
    (
        "profile + RAP pc (`run --rap pc`)",
        &["run", "--no-progress", "--rap", "pc", "-o", "{tmp}/p.txt"],
    ),
    (
        "profile + RAP block (`run --rap block`)",
        &[
            "run",
            "--no-progress",
            "--rap",
            "block",
            "-o",
            "{tmp}/p.txt",
        ],
    ),
    (
        "branch records (`paths record`)",
        &["paths", "record", "-o", "{tmp}/r.samples"],
    ),
    (
        "capture (`wpp record`)",
        &["wpp", "record", "-o", "{tmp}/r.wpp"],
    ),
    (
        "all composed (`run --rap pc,block --paths 16 --wpp`)",
        &[
            "run",
            "--no-progress",
            "--rap",
            "pc,block",
            "--paths",
            "16",
            "--samples",
            "{tmp}/a.samples",
            "--wpp",
            "{tmp}/a.wpp",
            "-o",
            "{tmp}/p.txt",
        ],
    ),
];

/// Every observer alone and all composed on each program: wall and CPU seconds.
fn per_observer(args: &Config, outcrop: &Path, dir: &Path, tmp: &Path) -> Result<Table> {
    let mut table = Table::new()
        .left("program")
        .left("observer")
        .right("wall s")
        .right("CPU s")
        .right("wall / exec")
        .right("CPU / exec CPU");
    let scratch = tmp.to_string_lossy().into_owned();
    for p in &args.programs {
        let words: Vec<&str> = p.split_whitespace().collect();
        let mut wall: Vec<Vec<f64>> = vec![Vec::new(); OBSERVERS.len()];
        let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); OBSERVERS.len()];
        for _ in 0..args.runs.max(1) {
            for (i, (_, mode)) in OBSERVERS.iter().enumerate() {
                let mode: Vec<String> = mode.iter().map(|a| a.replace("{tmp}", &scratch)).collect();
                let (w, c) = time_cpu(
                    Command::new(outcrop)
                        .current_dir(dir)
                        .args(&mode)
                        .args(["--allow-rw", ".", "--"])
                        .args(&words),
                )?;
                wall[i].push(w);
                cpu[i].push(c);
            }
        }
        for (i, (name, _)) in OBSERVERS.iter().enumerate() {
            table.row(cells![
                format!("`{p}`"),
                *name,
                mm(&wall[i], 3),
                mm(&cpu[i], 2),
                ratio(&wall[i], &wall[0]).1,
                ratio(&cpu[i], &cpu[0]).1
            ]);
        }
    }
    Ok(table)
}
