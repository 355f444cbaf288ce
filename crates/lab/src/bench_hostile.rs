//! `xtask bench-hostile [--baseline OUTCROP] [--runs N] [--timeout S]`: the hostile guests and
//! files of tests/it/hostile.rs, timed with their peak host memory, under this build's
//! `target/release/outcrop` and (with `--baseline`) another build side by side — the one before
//! the reliability fixes, say — plus both builds' speed on the bundled compute workloads, so the
//! price of the fixes is measured in the same run.
//!
//! Peak RSS is the child's `VmHWM` read from `/proc/PID/status` every 5 ms; a child past
//! `--timeout` seconds (default 60) or 8 GiB is killed and reported as such.

use crate::{Context, Result};
use outcrop_studies::{cells, table::Table};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../../outcrop/tests/common/crafted_elf.rs"]
mod crafted;
#[path = "../../outcrop/tests/common/crafted_wpp.rs"]
mod crafted_wpp;

const RSS_CAP: u64 = 8 << 30;

/// How one run ended.
#[derive(Clone, Copy)]
enum End {
    Exit(i32),
    Signal,
    TimedOut,
    RssCap,
}

struct Sample {
    secs: f64,
    rss: u64,
    end: End,
}

fn vm_hwm(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

fn measure(bin: &Path, args: &[String], cwd: &Path, timeout: Duration) -> Result<Sample> {
    let t = Instant::now();
    let mut child = Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let mut rss = 0;
    let end = loop {
        if let Some(st) = child.try_wait()? {
            break st.code().map_or(End::Signal, End::Exit);
        }
        rss = rss.max(vm_hwm(child.id()).unwrap_or(0));
        if t.elapsed() > timeout || rss > RSS_CAP {
            let _ = child.kill();
            let _ = child.wait();
            break if rss > RSS_CAP {
                End::RssCap
            } else {
                End::TimedOut
            };
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ok(Sample {
        secs: t.elapsed().as_secs_f64(),
        rss,
        end,
    })
}

/// Median and min–max of `runs` samples, as a table cell.
fn cell(samples: &[Sample]) -> String {
    let mut secs: Vec<f64> = samples.iter().map(|s| s.secs).collect();
    secs.sort_by(f64::total_cmp);
    let rss = samples.iter().map(|s| s.rss).max().unwrap_or(0);
    let end = match samples[0].end {
        End::Exit(c) => format!("exit {c}"),
        End::Signal => "killed by a signal".into(),
        End::TimedOut => return format!("**> {:.0} s** (killed), {} MiB", secs[0], rss >> 20),
        End::RssCap => {
            return format!(
                "**> {} GiB** (killed) after {:.1} s",
                RSS_CAP >> 30,
                secs[0]
            )
        }
    };
    let rss = if rss == 0 {
        "ended before the first RSS sample".to_string()
    } else {
        format!("{} MiB", rss >> 20)
    };
    format!(
        "{:.3} s ({:.3}–{:.3}), {rss}, {end}",
        secs[secs.len() / 2],
        secs[0],
        secs[secs.len() - 1],
    )
}

/// Options of `bench-hostile`.
#[derive(Debug, Clone)]
pub struct Config {
    /// Runs per case.
    pub runs: usize,
    /// A baseline build's release `outcrop` to run every case beside.
    pub baseline: Option<PathBuf>,
    /// Seconds before a run is killed.
    pub timeout: u64,
}

/// `xtask bench-hostile`: measures and writes its Markdown table to `out` (the module's doc says what and against which peer).
pub fn run(args: Config, out: &mut dyn std::io::Write) -> Result<()> {
    let Config {
        runs,
        baseline,
        timeout,
    } = args;
    let runs = runs.max(1);
    let (root, current) = crate::release_outcrop()?;
    let probe = root.join("crates/outcrop/tests/fixtures/guest/probe");
    let tmp = std::env::temp_dir().join(format!("outcrop-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    stage(&tmp, &current, &probe)?;
    let p = probe.display().to_string();
    let cases = cases(&p);
    let timeout = Duration::from_secs(timeout);
    say!(
        out,
        "median wall time (min–max) of {runs} runs, peak RSS, how it ended\n"
    );
    let mut table = Table::new().left("case");
    if let Some(b) = &baseline {
        table = table.left(format!("baseline ({})", b.display()));
    }
    table = table.left("this build");
    for (name, args) in &cases {
        let mut row = vec![name.to_string()];
        for bin in baseline.iter().chain([&current]) {
            let mut samples = Vec::new();
            for _ in 0..runs {
                let s = measure(bin, args, &tmp, timeout)?;
                let stop = matches!(s.end, End::TimedOut | End::RssCap);
                samples.push(s);
                if stop {
                    break; // one hang or blow-up is enough to report
                }
            }
            row.push(cell(&samples));
        }
        table.row(row);
    }
    write!(out, "{table}")?;
    qemu_smc(&probe, &current, &tmp, runs, timeout, out)?;
    if let Some(b) = &baseline {
        speed(b, &current, &root, &tmp, runs, timeout, out)?;
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}

/// The crafted inputs in `tmp`: ELF files with huge and overlapping segments, a timing
/// configuration with a 16 GiB cache, `.wpp` files claiming long streams, a samples file of
/// the probe and a FIFO.
fn stage(tmp: &Path, current: &Path, probe: &Path) -> Result<()> {
    let gib4 = 4u64 << 30;
    for (name, elf) in [
        ("bss4g", crafted::crafted_elf(&[(0x100000, gib4, 6)])),
        (
            "overlap200",
            crafted::crafted_elf(&vec![(0x100000, gib4 - 4096, 6); 200]),
        ),
        (
            "overlap65000",
            crafted::crafted_elf(&vec![(0x100000, gib4 - 4096, 6); 65000]),
        ),
    ] {
        std::fs::write(tmp.join(name), elf)?;
    }
    std::fs::write(
        tmp.join("huge.toml"),
        "[l2]\nsize = 17179869184\nline = 4\nways = 4\n",
    )?;
    // round three: a samples file of the probe, .wpp files claiming long streams, a FIFO
    std::fs::write(tmp.join("huge.wpp"), crafted_wpp::claimed_wpp(1 << 40))?;
    std::fs::write(tmp.join("big.wpp"), crafted_wpp::claimed_wpp(50_000_000))?;
    let st = Command::new(current)
        .args(["paths", "record", "-o", "s.samples", "--"])
        .arg(probe)
        .args(["stat", "/"])
        .current_dir(tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    crate::ensure!(st.success(), "paths record of the probe failed");
    let st = Command::new("mkfifo").arg(tmp.join("fifo")).status()?;
    crate::ensure!(st.success(), "mkfifo failed");
    Ok(())
}

/// Every case: its name and the `outcrop` arguments (`p` is the probe's path).
fn cases(p: &str) -> Vec<(&'static str, Vec<String>)> {
    let exec = |opts: &[&str], guest: &[&str]| -> Vec<String> {
        let mut v = vec!["exec".to_string()];
        v.extend(opts.iter().map(|s| s.to_string()));
        v.push("--".into());
        v.push(p.to_string());
        v.extend(guest.iter().map(|s| s.to_string()));
        v
    };
    vec![
        (
            "ELF, 180 bytes, 4 GiB bss",
            vec!["exec".into(), "--".into(), "bss4g".into()],
        ),
        (
            "ELF, 200 overlapping 4 GiB segments",
            vec!["exec".into(), "--".into(), "overlap200".into()],
        ),
        (
            "ELF, 65,000 overlapping 4 GiB segments",
            vec!["exec".into(), "--".into(), "overlap65000".into()],
        ),
        (
            "timing config: 16 GiB L2 of 4-byte lines",
            exec(&["--timing=huge.toml"], &["stat", "/"]),
        ),
        (
            "`exec /dev/zero`",
            vec!["exec".into(), "--".into(), "/dev/zero".into()],
        ),
        (
            "writev, overflowing iov_len",
            exec(&[], &["writev-overflow"]),
        ),
        ("munmap(p, 2^62)", exec(&[], &["munmap-huge"])),
        ("mremap, 32 GiB old length", exec(&[], &["mremap-huge"])),
        (
            "map+unmap 100,000 pages 32 MiB apart, 16 MiB limit",
            exec(&["--memory-limit", "16"], &["mapchurn", "100000"]),
        ),
        (
            "384 MiB of code, 512 MiB limit",
            exec(&["--memory-limit", "512"], &["code", "384"]),
        ),
        (
            "`.wpp` of < 4 KB claiming 2^41 blocks, `paths report --exact-from`",
            strings(&[
                "paths",
                "report",
                "s.samples",
                "--binary",
                p,
                "--exact-from",
                "huge.wpp",
                "--ignore-program-id",
            ]),
        ),
        (
            "the same file, `wpp replay -o /dev/null`",
            strings(&["wpp", "replay", "huge.wpp", "-o", "/dev/null"]),
        ),
        (
            "`.wpp` of 10^8 blocks, `paths report --exact-from`",
            strings(&[
                "paths",
                "report",
                "s.samples",
                "--binary",
                p,
                "--exact-from",
                "big.wpp",
                "--ignore-program-id",
            ]),
        ),
        (
            "a FIFO as `wpp report`'s input",
            strings(&["wpp", "report", "fifo"]),
        ),
        (
            "the guest opens a FIFO in a granted tree",
            exec(&["--allow-rw", "."], &["read", "fifo"]),
        ),
        (
            "a SIGILL handler that traps again, `--max-insns 100000`",
            exec(&["--max-insns", "100000"], &["trap-loop"]),
        ),
        (
            "200,000 stores to an executable page nothing ran from",
            exec(&[], &["smc-data", "200000"]),
        ),
        (
            "200,000 stores beside running code (same page)",
            exec(&[], &["smc-code", "200000"]),
        ),
    ]
}

/// Runs `a` and `b` (a program and its arguments) `runs` times each, alternating; returns the
/// table cells `A (min–max)`, `B (min–max)`, `B/A` of their median wall seconds, and B/A.
fn side_by_side(
    a: (&Path, &[String]),
    b: (&Path, &[String]),
    tmp: &Path,
    runs: usize,
    timeout: Duration,
) -> Result<(Vec<String>, f64)> {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        x.push(measure(a.0, a.1, tmp, timeout)?.secs);
        y.push(measure(b.0, b.1, tmp, timeout)?.secs);
    }
    x.sort_by(f64::total_cmp);
    y.sort_by(f64::total_cmp);
    let (mx, my) = (x[x.len() / 2], y[y.len() / 2]);
    let cells = cells![
        format!("{mx:.3} ({:.3}–{:.3})", x[0], x[x.len() - 1]),
        format!("{my:.3} ({:.3}–{:.3})", y[0], y[y.len() - 1]),
        format!("{:.3}", my / mx)
    ];
    Ok((cells, my / mx))
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The two store cases under qemu-riscv64-static and this build, alternating: what a store
/// into an executable page costs each (skipped without qemu).
fn qemu_smc(
    probe: &Path,
    current: &Path,
    tmp: &Path,
    runs: usize,
    timeout: Duration,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    let qemu = Path::new("/usr/bin/qemu-riscv64-static");
    if !qemu.exists() {
        say!(
            out,
            "
(no qemu-riscv64-static: the stores against qemu are skipped)"
        );
        return Ok(());
    }
    say!(out, "
stores into executable pages against qemu: median wall seconds (min–max) of {runs} runs, alternating\n");
    let mut table = Table::new()
        .left("case")
        .right("qemu-riscv64-static s")
        .right("this build s")
        .right("this / qemu");
    for case in ["smc-data", "smc-code"] {
        let guest = vec![
            probe.display().to_string(),
            case.to_string(),
            "200000".to_string(),
        ];
        let mut ours = vec!["exec".to_string(), "--".to_string()];
        ours.extend(guest.iter().cloned());
        let (row, _) = side_by_side((qemu, &guest), (current, &ours), tmp, runs, timeout)?;
        table.row([format!("{case} 200000")].into_iter().chain(row));
    }
    write!(out, "{table}")?;
    Ok(())
}

/// Both builds on every compute workload, alternating, no observer.
fn speed(
    baseline: &Path,
    current: &Path,
    root: &Path,
    tmp: &Path,
    runs: usize,
    timeout: Duration,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    let wl = root.join("workloads");
    std::fs::create_dir_all(tmp.join("src"))?;
    crate::bench::stage_inputs(tmp)?;
    say!(
        out,
        "\nspeed, no observer: median wall seconds (min–max) of {runs} runs, alternating\n"
    );
    let mut table = Table::new()
        .left("workload")
        .right("baseline s")
        .right("this build s")
        .right("this / baseline");
    let (mut g, mut k) = (0.0f64, 0.0f64);
    let names = crate::bench::BenchOptions {
        runs,
        workloads: Vec::new(),
    }
    .names()?;
    for name in names {
        let mut args = vec![
            "exec".to_string(),
            "--allow-rw".into(),
            ".".into(),
            "--".into(),
            wl.join("bin").join(&name).display().to_string(),
        ];
        args.extend(crate::bench::guest_args(&name)?);
        let (row, ratio) = side_by_side((baseline, &args), (current, &args), tmp, runs, timeout)?;
        table.row([name].into_iter().chain(row));
        g += ratio.ln();
        k += 1.0;
    }
    write!(out, "{table}")?;
    if k > 0.0 {
        say!(
            out,
            "\ngeometric mean, this build / baseline: {:.3}",
            (g / k).exp()
        );
    }
    Ok(())
}
