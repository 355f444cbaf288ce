//! `cargo run --release -p xtask -- bench-compose [--runs R]`: what one run with every mechanism
//! saves over one run per mechanism. For every compute workload, alternately: `outcrop run
//! --rap block --wpp F --paths 16 --timing` (one machine run), and the three commands that
//! produce the same results (`run --rap block --timing`, `wpp record`, `paths record --entries
//! 16 --timing`), timed together. Medians with min–max of R runs, wall time of the processes.

use anyhow::Result;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

pub(crate) fn timed(bin: &Path, wl: &Path, args: &[&str], name: &str) -> Result<f64> {
    let extra: &[&str] = if name == "fileio" {
        &["src/fileio.c"]
    } else {
        &[]
    };
    let t = Instant::now();
    let st = Command::new(bin)
        .current_dir(wl)
        .args(args)
        .args(["--deterministic", "--allow-rw", ".", "--"])
        .arg(format!("bin/{name}"))
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    anyhow::ensure!(st.success(), "{name}: {args:?}: {st}");
    Ok(t.elapsed().as_secs_f64())
}

pub(crate) fn summary(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

pub fn run(args: &[String]) -> Result<()> {
    let runs = crate::runs_flag(args)?;
    let (root, outcrop) = crate::release_outcrop()?;
    let wl = root.join("workloads");
    let names = crate::compute_workloads(&root)?;
    let tmp = tempfile_dir()?;
    let f = |n: &str| tmp.join(n).to_string_lossy().into_owned();
    let (wpp, samples, rap, all_wpp, all_rap, all_samples) = (
        f("one.wpp"),
        f("one.samples"),
        f("rap.json"),
        f("all.wpp"),
        f("all.json"),
        f("all.samples"),
    );
    println!("median (min–max) of {runs} runs, alternating; process wall time in seconds\n");
    println!("| workload | one run, every mechanism | three runs, one each | one / three |");
    println!("|---|---:|---:|---:|");
    let mut log = 0.0;
    for name in &names {
        let (mut one, mut three) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            one.push(timed(
                &outcrop,
                &wl,
                &[
                    "run",
                    "--rap",
                    "block",
                    "--json",
                    "-o",
                    &all_rap,
                    "--wpp",
                    &all_wpp,
                    "--paths",
                    "16",
                    "--samples",
                    &all_samples,
                    "--timing",
                    "--no-progress",
                ],
                name,
            )?);
            let a = timed(
                &outcrop,
                &wl,
                &[
                    "run",
                    "--rap",
                    "block",
                    "--json",
                    "-o",
                    &rap,
                    "--timing",
                    "--no-progress",
                ],
                name,
            )?;
            let b = timed(&outcrop, &wl, &["wpp", "record", "-o", &wpp], name)?;
            let c = timed(
                &outcrop,
                &wl,
                &[
                    "paths",
                    "record",
                    "--entries",
                    "16",
                    "--timing",
                    "-o",
                    &samples,
                ],
                name,
            )?;
            three.push(a + b + c);
        }
        let (o, olo, ohi) = summary(one);
        let (t, tlo, thi) = summary(three);
        println!(
            "| {name} | {o:.2} ({olo:.2}–{ohi:.2}) | {t:.2} ({tlo:.2}–{thi:.2}) | {:.3} |",
            o / t
        );
        log += (o / t).ln();
    }
    println!(
        "\ngeometric mean of one / three over {} workloads: {:.3}",
        names.len(),
        (log / names.len().max(1) as f64).exp()
    );
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}

fn tempfile_dir() -> Result<std::path::PathBuf> {
    let d = std::env::temp_dir().join(format!("outcrop-bc-{}", std::process::id()));
    std::fs::create_dir_all(&d)?;
    Ok(d)
}
