//! `cargo run --release -p xtask -- bench-compose [--runs R]`: what one run with every mechanism
//! saves over one run per mechanism. For every compute workload, alternately: `outcrop run
//! --rap block --wpp F --paths 16 --timing` (one machine run), and the three commands that
//! produce the same results (`run --rap block --timing`, `wpp record`, `paths record --entries
//! 16 --timing`), timed together. Medians with min–max of R runs, wall time of the processes.

use crate::bench::{mm, outcrop_on, BenchOptions};
use crate::Result;
use outcrop_studies::{cells, table::Table};

/// Options of `bench-compose`.
#[derive(Debug, Clone)]
pub struct Config {
    /// Runs and workloads.
    pub bench: BenchOptions,
}

/// `xtask bench-compose`: measures and writes its Markdown table to `out` (the module's doc says what and against which peer).
pub fn run(args: Config, out: &mut dyn std::io::Write) -> Result<()> {
    let runs = args.bench.runs(1);
    let (root, outcrop) = crate::release_outcrop()?;
    let wl = root.join("workloads");
    let names = args.bench.names()?;
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
    say!(
        out,
        "median (min–max) of {runs} runs, alternating; process wall time in seconds\n"
    );
    let mut table = Table::new()
        .left("workload")
        .right("one run, every mechanism")
        .right("three runs, one each")
        .right("one / three");
    let mut log = 0.0;
    for name in &names {
        let (mut one, mut three) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            one.push(outcrop_on(
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
            let a = outcrop_on(
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
            let b = outcrop_on(&outcrop, &wl, &["wpp", "record", "-o", &wpp], name)?;
            let c = outcrop_on(
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
        let (o, t) = (crate::bench::median(&one), crate::bench::median(&three));
        table.row(cells![
            name,
            mm(&one, 2),
            mm(&three, 2),
            format!("{:.3}", o / t)
        ]);
        log += (o / t).ln();
    }
    write!(out, "{table}")?;
    say!(
        out,
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
