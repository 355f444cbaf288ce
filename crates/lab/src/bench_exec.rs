//! `bench-exec`: the machine against qemu on the bundled workloads (docs/BENCHMARKS.md).

use crate::bench::BenchOptions;
use crate::bench_rap;
use crate::Result;
use outcrop_studies::{cells, table::Table};
use std::time::Instant;

/// `outcrop exec` on every bundled workload (no observer, class counter) against
/// `qemu-riscv64-static` on the same binaries, in the same run. Needs a release build of
/// `outcrop` (`cargo build --release`) and qemu-user-static. The `micro_*` programs are left
/// out: they are validation inputs for the timing model (one branch or access pattern each),
/// not compute workloads, and would skew the geometric means.
/// Options of `bench-exec`.
#[derive(Debug, Clone)]
pub struct Config {
    /// Runs and workloads.
    pub bench: BenchOptions,
    /// Instead of the bundled workloads, these programs (each `PROG ARGS...` quoted as one
    /// argument, run in --dir with it granted read-write), against qemu with the same
    /// `--sysroot` (qemu's -L) when given: programs the project did not write.
    pub programs: Vec<String>,
    /// The directory the --program commands run in.
    pub dir: Option<std::path::PathBuf>,
    /// Where the --program commands' libraries are (dynamically linked programs).
    pub sysroot: Option<std::path::PathBuf>,
    /// Keep one host core busy with another job while measuring --program commands.
    pub busy: bool,
}

/// `xtask bench-exec`: measures and writes its Markdown table to `out` (the module's doc says what and against which peer).
pub fn run(args: Config, out: &mut dyn std::io::Write) -> Result<()> {
    let runs = args.bench.runs(5);
    let (_, outcrop) = crate::release_outcrop()?;
    if !args.programs.is_empty() {
        return programs(&args, &outcrop, runs, out);
    }
    let tmp = std::env::temp_dir().join(format!("outcrop-bench-{}", std::process::id()));
    std::fs::create_dir_all(tmp.join("src"))?;
    crate::bench::stage_inputs(&tmp)?;
    let manifest = crate::bench::manifest()?;
    let mut names: Vec<String> = if args.bench.workloads.is_empty() {
        manifest
            .workloads
            .iter()
            .filter(|w| w.kind != outcrop_studies::manifest::Kind::Micro)
            .map(|w| w.name.clone())
            .collect()
    } else {
        args.bench.names()?
    };
    names.sort();
    say!(out, "{runs} runs each, alternating outcrop (block engine), outcrop --engine jit, outcrop with the class counter (the default engine, jit) and qemu; median (min–max); MIPS = retired instructions / wall time\n");
    let mut table = Table::new()
        .left("workload")
        .right("instructions")
        .right("blocks s")
        .right("MIPS")
        .right("jit s")
        .right("MIPS")
        .right("class counter s")
        .right("MIPS")
        .right("counter / jit")
        .right("qemu s")
        .right("blocks / qemu")
        .right("jit / qemu");
    let mm = |v: &[f64]| {
        let (m, lo, hi) = bench_rap::spread(v);
        format!("{m:.3} ({lo:.3}–{hi:.3})")
    };
    let (mut g_mips, mut g_over, mut g_ratio, mut k) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let (mut g_jit_mips, mut g_jit_ratio) = (0.0f64, 0.0f64);
    let mut startup = Vec::new();
    for name in names {
        let Measured {
            insns,
            plain,
            jit,
            counted,
            qemu,
        } = measure(&outcrop, &tmp, &manifest, &name, runs)?;
        let ratio = |a: &[f64], b: &[f64]| {
            let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
            let (m, lo, hi) = bench_rap::spread(&r);
            format!("{m:.2}x ({lo:.2}–{hi:.2})")
        };
        let (p, c, q) = (
            bench_rap::spread(&plain).0,
            bench_rap::spread(&counted).0,
            bench_rap::spread(&qemu).0,
        );
        let mips = insns as f64 / p / 1e6;
        let j = bench_rap::spread(&jit).0;
        let jit_mips = insns as f64 / j / 1e6;
        table.row(cells![
            name,
            insns,
            mm(&plain),
            format!("{mips:.0}"),
            mm(&jit),
            format!("{jit_mips:.0}"),
            mm(&counted),
            format!("{:.0}", insns as f64 / c / 1e6),
            ratio(&counted, &jit),
            mm(&qemu),
            ratio(&plain, &qemu),
            ratio(&jit, &qemu)
        ]);
        if insns < 1_000_000 {
            // startup-only programs (hello, exitcode) measure process start, not the loop
            startup.push(format!("{name} {:.1} ms (qemu {:.1} ms)", p * 1e3, q * 1e3));
            continue;
        }
        g_mips += mips.ln();
        g_over += (c / bench_rap::spread(&jit).0).ln();
        g_ratio += (p / q).ln();
        g_jit_mips += jit_mips.ln();
        g_jit_ratio += (j / q).ln();
        k += 1.0;
    }
    write!(out, "{table}")?;
    if !startup.is_empty() {
        say!(
            out,
            "\nstartup (whole run of a program under 1M instructions): {}",
            startup.join(", ")
        );
    }
    if k > 0.0 {
        say!(out,
            "\ngeometric means over the {k} compute workloads: {:.0} MIPS, class-counter overhead {:.2}x, {:.1}x qemu's wall time",
            (g_mips / k).exp(),
            (g_over / k).exp(),
            (g_ratio / k).exp()
        );
        say!(
            out,
            "compiling tier (--engine jit): {:.0} MIPS, {:.2}x qemu's wall time",
            (g_jit_mips / k).exp(),
            (g_jit_ratio / k).exp()
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}

/// One workload's wall times, each run alternating the four.
struct Measured {
    insns: u64,
    plain: Vec<f64>,
    jit: Vec<f64>,
    counted: Vec<f64>,
    qemu: Vec<f64>,
}

/// `cmd` in `dir` with its output discarded: its wall seconds (an exit status other than 0
/// is the guest's; a signal is an error).
fn timed(dir: &std::path::Path, cmd: &mut std::process::Command) -> Result<f64> {
    use std::process::Stdio;
    let t = Instant::now();
    let st = cmd
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    let secs = t.elapsed().as_secs_f64();
    crate::ensure!(st.code().is_some(), "killed by a signal");
    Ok(secs)
}

/// Workload `name` under the block engine, the compiling tier, the class counter and qemu,
/// `runs` times each, in `tmp` (where its inputs are staged).
fn measure(
    outcrop: &std::path::Path,
    tmp: &std::path::Path,
    manifest: &outcrop_studies::Manifest,
    name: &str,
    runs: usize,
) -> Result<Measured> {
    use std::process::Command;
    let bin = crate::root().join("workloads/bin").join(name);
    let args = crate::bench::guest_args(name)?;
    let stats = tmp.join("stats.json");
    // a dynamically linked workload: its sysroot for both (qemu's -L)
    let sysroot = manifest.get(name)?.sysroot.clone();
    let (osys, qsys): (Vec<std::ffi::OsString>, Vec<std::ffi::OsString>) = match &sysroot {
        Some(d) => (
            vec!["--sysroot".into(), d.clone().into()],
            vec!["-L".into(), d.clone().into()],
        ),
        None => (vec![], vec![]),
    };
    let mut base = Command::new(outcrop);
    base.args(["exec", "--allow-rw", "."])
        .args(&osys)
        .arg("--stats-json")
        .arg(&stats)
        .arg("--")
        .arg(&bin)
        .args(&args);
    timed(tmp, &mut base)?;
    #[derive(serde::Deserialize)]
    struct Stats {
        instructions: u64,
    }
    let json: Stats = serde_json::from_slice(&std::fs::read(&stats)?)?;
    let insns = json.instructions;
    let mut plain = vec![];
    let mut jit = vec![];
    let mut counted = vec![];
    let mut qemu = vec![];
    for _ in 0..runs {
        plain.push(timed(
            tmp,
            Command::new(outcrop)
                .args(["exec", "--engine", "blocks", "--allow-rw", "."])
                .args(&osys)
                .arg("--")
                .arg(&bin)
                .args(&args),
        )?);
        jit.push(timed(
            tmp,
            Command::new(outcrop)
                .args(["exec", "--engine", "jit", "--allow-rw", "."])
                .args(&osys)
                .arg("--")
                .arg(&bin)
                .args(&args),
        )?);
        counted.push(timed(
            tmp,
            Command::new(outcrop)
                .args(["exec", "--allow-rw", "."])
                .args(&osys)
                .arg("--stats-json")
                .arg(&stats)
                .arg("--")
                .arg(&bin)
                .args(&args),
        )?);
        qemu.push(timed(
            tmp,
            Command::new("qemu-riscv64-static")
                .args(&qsys)
                .arg(&bin)
                .args(&args),
        )?);
    }
    Ok(Measured {
        insns,
        plain,
        jit,
        counted,
        qemu,
    })
}

/// Seconds of CPU (user and system) the children this process waited for used so far.
fn children_cpu() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0.0, |ru| {
        let t = |v: nix::sys::time::TimeVal| v.tv_sec() as f64 + v.tv_usec() as f64 / 1e6;
        t(ru.user_time()) + t(ru.system_time())
    })
}

/// A thread spinning on one core until dropped (`--busy`: another job on the machine).
struct Busy(
    Option<(
        std::sync::Arc<std::sync::atomic::AtomicBool>,
        std::thread::JoinHandle<()>,
    )>,
);

impl Busy {
    fn start(on: bool) -> Busy {
        if !on {
            return Busy(None);
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let h = std::thread::spawn(move || {
            let mut x = 0u64;
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        });
        Busy(Some((stop, h)))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some((stop, h)) = self.0.take() {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = h.join();
        }
    }
}

/// `--program`: each command under `outcrop exec` and under qemu, alternating, in `--dir`:
/// wall and CPU seconds (the children's user + system time), with the compiling tier's share.
fn programs(
    args: &Config,
    outcrop: &std::path::Path,
    runs: usize,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    use std::process::{Command, Stdio};
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
    // (wall, CPU) seconds of one run
    let timed = |cmd: &mut Command| -> Result<(f64, f64)> {
        let (t, cpu) = (Instant::now(), children_cpu());
        let st = cmd
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        let secs = t.elapsed().as_secs_f64();
        crate::ensure!(st.success(), "{cmd:?} failed: {st}");
        Ok((secs, children_cpu() - cpu))
    };
    let (osys, qsys): (Vec<std::ffi::OsString>, Vec<std::ffi::OsString>) = match &args.sysroot {
        Some(d) => (
            vec!["--sysroot".into(), d.clone().into()],
            vec!["-L".into(), d.clone().into()],
        ),
        None => (vec![], vec![]),
    };
    say!(
        out,
        "{runs} runs each, alternating outcrop exec and qemu; median (min–max) seconds; in {}{}\n",
        dir.display(),
        if args.busy {
            "; one core kept busy by another job"
        } else {
            ""
        }
    );
    let mut table = Table::new()
        .left("command")
        .right("instructions")
        .right("outcrop wall s")
        .right("MIPS")
        .right("qemu wall s")
        .right("wall ratio")
        .right("outcrop CPU s")
        .right("qemu CPU s")
        .right("CPU ratio")
        .right("compile share")
        .right("not compiled / M insns");
    let (mut g_wall, mut g_cpu, mut k, mut worst) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let _busy = Busy::start(args.busy);
    for p in &args.programs {
        let words: Vec<&str> = p.split_whitespace().collect();
        crate::ensure!(!words.is_empty(), "empty --program");
        let stats = dir.join("outcrop-bench-stats.json");
        let mut first = Command::new(outcrop);
        first
            .args(["exec", "--allow-rw", "."])
            .args(&osys)
            .arg("--stats-json")
            .arg(&stats)
            .arg("--")
            .args(&words);
        timed(&mut first)?;
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats)?)?;
        let _ = std::fs::remove_file(&stats);
        let insns = v["instructions"].as_u64().unwrap_or(0);
        let tier = &v["compiling_tier"];
        let share = tier["compile_share"].as_f64().unwrap_or(0.0);
        let missed = tier["exits"]["not_compiled"].as_u64().unwrap_or(0);
        let (mut o, mut q) = (vec![], vec![]);
        for _ in 0..runs {
            o.push(timed(
                Command::new(outcrop)
                    .args(["exec", "--allow-rw", "."])
                    .args(&osys)
                    .arg("--")
                    .args(&words),
            )?);
            q.push(timed(
                Command::new("qemu-riscv64-static").args(&qsys).args(&words),
            )?);
        }
        let col = |v: &[(f64, f64)], cpu: bool| -> Vec<f64> {
            v.iter().map(|p| if cpu { p.1 } else { p.0 }).collect()
        };
        let mm = |v: &[f64]| {
            let (m, lo, hi) = bench_rap::spread(v);
            (m, format!("{m:.3} ({lo:.3}–{hi:.3})"))
        };
        let ratio = |a: &[f64], b: &[f64]| {
            let r: Vec<f64> = a.iter().zip(b).map(|(a, b)| a / b.max(1e-9)).collect();
            let (m, lo, hi) = bench_rap::spread(&r);
            (m, format!("{m:.2}x ({lo:.2}–{hi:.2})"))
        };
        let (ow, qw, oc, qc) = (col(&o, false), col(&q, false), col(&o, true), col(&q, true));
        let (owm, ows) = mm(&ow);
        let (wr, wrs) = ratio(&ow, &qw);
        let (cr, crs) = ratio(&oc, &qc);
        g_wall += wr.ln();
        g_cpu += cr.ln();
        worst = worst.max(wr).max(cr);
        k += 1.0;
        table.row(cells![
            format!("`{p}`"),
            insns,
            ows,
            format!("{:.0}", insns as f64 / owm / 1e6),
            mm(&qw).1,
            wrs,
            mm(&oc).1,
            mm(&qc).1,
            crs,
            format!("{:.1}%", share * 100.0),
            format!("{:.1}", missed as f64 / (insns as f64 / 1e6).max(1e-9))
        ]);
    }
    write!(out, "{table}")?;
    if k > 0.0 {
        say!(
            out,
            "\ngeometric means over the {k} programs: wall {:.2}x, CPU {:.2}x qemu's; the highest ratio {:.2}x",
            (g_wall / k).exp(),
            (g_cpu / k).exp(),
            worst
        );
    }
    Ok(())
}
