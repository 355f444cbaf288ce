//! `Run::range` (`outcrop run --range A..B`) against an exact reference of the same
//! deterministic run: a function's self instructions are additive over time, so the profile
//! of `[A, B)` is the profile of `[0, B)` minus that of `[0, A)`, function by function, on
//! every engine and with threads; every other mechanism sees exactly `B − A` instructions.

use outcrop_profile::Profile;
use outcrop_rap::observe::{RapSpec, Stream};
use outcrop_rap::Config;
use outcrop_run::{load, ProgramSpec, Run, Window};
use outcrop_rv::symbols::Symbols;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn bin(name: &str) -> PathBuf {
    outcrop_testkit::workloads().join("bin").join(name)
}

fn spec(name: &str) -> ProgramSpec {
    let mut s = ProgramSpec::observed(bin(name), &format!("bin/{name}"));
    s.quantum = 3_001; // thread switches inside blocks
    s
}

/// The profile of `name` over `[a, b)` (all of the run from `a` when `b` is `u64::MAX`).
fn window(
    name: &str,
    engine: outcrop_rv::Engine,
    a: u64,
    b: u64,
) -> (Profile, Option<Window>, u64) {
    let mut guest = load(&spec(name), Box::new(|_| {})).unwrap();
    guest.machine.engine = engine;
    let symbols = Symbols::from_elf(&guest.elf).unwrap();
    let r = Run::new(&mut guest.machine)
        .profile(symbols)
        .range(a, b)
        .execute()
        .unwrap();
    (r.profile.unwrap(), r.window, r.instructions)
}

fn by_function(p: &Profile) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for f in &p.functions {
        *m.entry(f.name.clone()).or_default() += f.self_counts.instructions;
    }
    m.retain(|_, v| *v > 0);
    m
}

#[test]
fn a_window_is_the_difference_of_two_prefixes_on_every_engine() {
    for name in ["qsort_ints", "bytecode_vm", "threads"] {
        for engine in [
            outcrop_rv::Engine::Step,
            outcrop_rv::Engine::Blocks,
            outcrop_rv::Engine::Jit,
        ] {
            let (a, b) = (1_234_567, 3_456_789);
            let (w, win, total) = window(name, engine, a, b);
            let win = win.unwrap();
            assert_eq!((win.start, win.end), (a, b), "{name} {engine:?}");
            assert_eq!(w.instructions, b - a, "{name} {engine:?}");
            assert_eq!(w.self_sum().instructions, b - a, "{name} {engine:?}");
            // the guest ran on to its end
            let (_, _, full) = window(name, engine, 0, u64::MAX);
            assert_eq!(
                total, full,
                "{name} {engine:?}: the run went on after the window"
            );
            let (pa, _, _) = window(name, engine, 0, a);
            let (pb, _, _) = window(name, engine, 0, b);
            let (fa, fb) = (by_function(&pa), by_function(&pb));
            let mut diff = fb.clone();
            for (f, n) in &fa {
                *diff.get_mut(f).unwrap() -= n;
            }
            diff.retain(|_, v| *v > 0);
            assert_eq!(by_function(&w), diff, "{name} {engine:?}");
        }
    }
}

#[test]
fn every_mechanism_sees_the_window_and_a_late_window_sees_nothing() {
    let mut guest = load(&spec("qsort_ints"), Box::new(|_| {})).unwrap();
    let r = Run::new(&mut guest.machine)
        .timing(Some(outcrop_timing::Config::preset("default").unwrap()))
        .rap(RapSpec::new(&[Stream::Pc], Config::default(), true))
        .range(2_000_000, 2_500_000)
        .execute()
        .unwrap();
    assert_eq!(r.rap.unwrap().profiles[0].tree.n(), 500_000);
    let t = r.timing.unwrap();
    assert_eq!(t.instructions, 500_000);
    assert!(r.instructions > 100_000_000, "the guest ran to its end");
    // a window past the program's end: nothing observed, the program's outcome kept
    let mut guest = load(&spec("hello"), Box::new(|_| {})).unwrap();
    let symbols = Symbols::from_elf(&guest.elf).unwrap();
    let r = Run::new(&mut guest.machine)
        .profile(symbols)
        .range(1 << 40, u64::MAX)
        .execute()
        .unwrap();
    let w = r.window.unwrap();
    assert_eq!(w.start, w.end);
    assert_eq!(r.profile.unwrap().instructions, 0);
    assert!(
        matches!(r.outcome, outcrop_rv::Outcome::Exited(0)),
        "{:?}",
        r.outcome
    );
}
