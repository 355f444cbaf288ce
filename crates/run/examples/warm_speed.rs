//! Functional warming's speed (docs/BENCHMARKS.md, issue 54): runs a program to its end under
//! `outcrop_timing::Warming` on one engine and prints the instructions warmed, the seconds and
//! MIPS, and how many came from compiled code's block runs.
//!
//! `cargo run --release -p outcrop-run --example warm_speed -- ENGINE [--allow DIR]
//! [--allow-rw DIR] [--sysroot DIR] -- PROGRAM [ARGS...]`
//! (ENGINE: `step`, the retire records' warming, or `jit`, warming from compiled code).

use outcrop_events::record::{Control, Observer, Retire, Stamp, WarmRun};
use outcrop_run::{load, ProgramSpec};
use outcrop_timing::{Config, Model, Warming};
use std::time::Instant;

/// [`Warming`], counting where its instructions came from.
struct Counted {
    warming: Warming,
    from_runs: u64,
}

impl Observer for Counted {
    const RETIRE: bool = true;
    const WARM: bool = true;
    #[inline]
    fn retire(&mut self, r: &Retire, t: Option<&Stamp>) -> Control {
        self.warming.retire(r, t)
    }
    #[inline]
    fn warm(&mut self, run: &WarmRun<'_>) -> Control {
        self.from_runs += run.lens.len() as u64;
        self.warming.warm(run)
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = || -> ! {
        eprintln!("usage: warm_speed step|jit [--allow DIR] [--allow-rw DIR] [--sysroot DIR] -- PROGRAM [ARGS...]");
        std::process::exit(2)
    };
    let engine = args.next().unwrap_or_else(|| usage());
    let mut spec = ProgramSpec::new(Vec::new());
    spec.stdio = outcrop_run::Stdio::Quiet;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--" => break,
            "--allow" => spec
                .allow
                .push(args.next().unwrap_or_else(|| usage()).into()),
            "--allow-rw" => spec
                .allow_rw
                .push(args.next().unwrap_or_else(|| usage()).into()),
            "--sysroot" => spec.sysroot = Some(args.next().unwrap_or_else(|| usage()).into()),
            _ => usage(),
        }
    }
    spec.command = args.map(Into::into).collect();
    if spec.command.is_empty() {
        usage();
    }
    let mut guest = load(&spec, Box::new(|_: &str| {})).unwrap_or_else(|e| {
        eprintln!("warm_speed: {e}");
        std::process::exit(1)
    });
    guest.machine.engine = match engine.as_str() {
        "step" => outcrop_rv::Engine::Step,
        _ => outcrop_rv::Engine::Jit,
    };
    let mut obs = Counted {
        warming: Warming {
            model: Model::new(&Config::default()),
        },
        from_runs: 0,
    };
    let t = Instant::now();
    let outcome = guest.machine.run(&mut obs);
    let s = t.elapsed().as_secs_f64();
    let n = guest.machine.instret;
    println!(
        "{engine}: {n} instructions in {s:.3} s: {:.0} MIPS, {:.1}% from compiled block runs ({})",
        n as f64 / s / 1e6,
        100.0 * obs.from_runs as f64 / n.max(1) as f64,
        outcome.describe()
    );
}
