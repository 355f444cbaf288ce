//! The whole method on the bundled workloads: the branch-record unit and the exact counter
//! watch the same run; the estimate is scored against the exact profile.

use outcrop_paths::{
    accuracy, analyze, BranchRecorder, Cfg, ExactCounter, IndexCache, LbrConfig, LbrUnit, Options,
    Regions, Weighting, HOT,
};
use std::path::PathBuf;

fn workloads() -> PathBuf {
    outcrop_testkit::workloads().join("bin")
}

struct Scored {
    wall: f64,
    overhead: f64,
    discarded: u64,
    unmatched: u64,
    snapped: u64,
    recovered: u64,
}

fn run(name: &str, configs: &[LbrConfig]) -> Vec<Scored> {
    run_with(name, configs, Options::default(), Weighting::Equal)
}

fn run_with(
    name: &str,
    configs: &[LbrConfig],
    options: Options,
    weighting: Weighting,
) -> Vec<Scored> {
    let bin = workloads().join(name);
    let elf = std::fs::read(&bin).unwrap();
    let cfg = Cfg::from_elf(&elf).unwrap();
    let regions = Regions::new(&cfg, 256);
    let spec = outcrop_run::ProgramSpec::observed(&bin, &format!("bin/{name}"));
    let mut m = outcrop_run::load(&spec, Box::new(|_| {})).unwrap().machine;
    let units = configs
        .iter()
        .map(|c| LbrUnit::new(c.clone()).unwrap())
        .collect();
    let mut s = (
        BranchRecorder::new(units),
        ExactCounter::new(&cfg, &regions),
    );
    m.run(&mut s);
    let (recorder, counter) = s;
    let insns = recorder.instructions;
    let (exact, st) = counter.finish_run();
    assert!(
        st.unplaced * 100 <= st.paths,
        "{name}: too many unplaced paths {st:?}"
    );
    let mut out = Vec::new();
    let mut cache = IndexCache::default();
    for u in recorder.units {
        let samples = u.into_samples(name, insns, 0);
        let a = analyze(&cfg, &regions, &samples, options, weighting, &mut cache);
        let acc = accuracy(&exact, &a.estimate.paths, HOT);
        let st = &a.reconstruction.stats;
        out.push(Scored {
            wall: acc.wall,
            overhead: samples.overhead(),
            discarded: st.discarded,
            unmatched: a.estimate.unmatched,
            snapped: st.snapped,
            recovered: st.recovered_targets,
        });
    }
    out
}

#[test]
fn sampled_paths_match_the_exact_profile_on_workloads() {
    let precise = LbrConfig {
        entries: 4,
        period: 1_000_000,
        random: true,
        ..LbrConfig::default()
    };
    let imprecise = LbrConfig {
        skew: 0.2,
        drop_target: 0.1,
        seed: 9,
        ..precise.clone()
    };
    for name in ["qsort_ints", "bytecode_vm"] {
        let r = run(name, &[precise.clone(), imprecise.clone()]);
        let (p, i) = (&r[0], &r[1]);
        // precise records always place on the CFG and always match a region path
        assert_eq!(p.discarded, 0, "{name}");
        assert_eq!(p.unmatched, 0, "{name}");
        // the paper's method with 4 entries at a coarser period than the target's: the
        // docs' mean over the workloads near it is 93.3% (750 K cycles); measured here 95.8%
        // (qsort_ints) and 95.0% (bytecode_vm)
        assert!(p.wall >= 0.933, "{name}: Wall accuracy {}", p.wall);
        // untimed: samples × 7,500 cycles (perf-lbr) ÷ instructions, one sample per ~1M
        assert!(
            (p.overhead - 0.0075).abs() < 0.0015,
            "{name}: overhead {}",
            p.overhead
        );
        // imprecise ones are snapped or recovered, and still give a useful profile
        assert!(i.snapped > 0 && i.recovered > 0, "{name}");
        assert!(i.wall >= 0.8, "{name}: imprecise Wall accuracy {}", i.wall);
    }
}

/// The branch-record units fed per block (the machine's block engine) and from the ring
/// compiled code writes (the compiling tier, compiling each block at its first run, and at
/// its third, when superblocks form) take exactly the samples they take from the retire
/// stream (the single-step interpreter), on every workload, with fixed and randomized periods
/// shorter and longer than a basic block.
#[test]
fn the_block_feed_samples_exactly_as_the_retire_stream() {
    let configs: Vec<LbrConfig> = [(3u64, false), (7, true), (997, true), (100_003, false)]
        .into_iter()
        .map(|(period, random)| LbrConfig {
            entries: 8,
            period,
            random,
            seed: period,
            skew: 0.1,
            drop_target: 0.05,
            ..LbrConfig::default()
        })
        .collect();
    let mut names: Vec<String> = std::fs::read_dir(workloads())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "TOOLCHAIN" && !n.contains('.'))
        .collect();
    names.sort();
    for name in &names {
        let bin = workloads().join(name);
        let mut spec = outcrop_run::ProgramSpec::observed(&bin, &format!("bin/{name}"));
        if name.ends_with("_dyn") {
            spec.sysroot = Some("/usr/riscv64-linux-gnu".into());
        }
        let units = || -> Vec<LbrUnit> {
            configs
                .iter()
                .map(|c| LbrUnit::new(c.clone()).unwrap())
                .collect()
        };
        // the first 3M instructions of each
        let mut m = outcrop_run::load(&spec, Box::new(|_| {})).unwrap().machine;
        m.max_insns = 3_000_000;
        let mut retire = BranchRecorder::new(units());
        m.run(&mut retire);
        let samples = |s: Vec<LbrUnit>| -> Vec<_> {
            s.into_iter()
                .map(|u| (u.samples(), u.into_samples(name, 0, 0)))
                .map(|(n, s)| (n, s.meta.recorded, s.traces))
                .collect()
        };
        let reference = samples(retire.units);
        for (engine, hot) in [
            (outcrop_rv::Engine::Blocks, 1),
            (outcrop_rv::Engine::Jit, 1),
            (outcrop_rv::Engine::Jit, 3),
        ] {
            let mut m = outcrop_run::load(&spec, Box::new(|_| {})).unwrap().machine;
            m.max_insns = 3_000_000;
            m.engine = engine;
            m.jit_hot = hot;
            m.jit_background = false;
            let mut fed = BranchRecorder::new(units());
            assert!(!fed.needs_retire());
            let mut feed = outcrop_sampling::BranchFeed::new(&mut fed);
            m.run(&mut feed);
            outcrop_events::record::Observer::finish(&mut feed);
            let how = format!("{name} on {engine:?}, compiled at run {hot}");
            assert_eq!(retire.instructions, fed.instructions, "{how}");
            let got = samples(fed.units);
            for (a, b) in reference.iter().zip(&got) {
                assert_eq!((a.0, a.1), (b.0, b.1), "{how}: samples, branches recorded");
                assert!(a.2 == b.2, "{how}: traces differ");
            }
        }
    }
}

/// At the operating point docs/BENCHMARKS.md states its target at (16 entries, about 1%
/// modelled overhead under perf-lbr's cost, both extensions: stitching and edge weights),
/// one run reaches the target, 95% Wall accuracy, on these workloads (measured: 99.6% on
/// qsort_ints, 97.8% on bytecode_vm; the schedule and the unit's seed are fixed).
#[test]
fn one_run_at_one_percent_reaches_the_target_on_workloads() {
    let config = LbrConfig {
        entries: 16,
        period: 750_000,
        random: true,
        ..LbrConfig::default()
    };
    let options = Options {
        stitch: true,
        ..Options::default()
    };
    for name in ["qsort_ints", "bytecode_vm"] {
        let r = run_with(
            name,
            std::slice::from_ref(&config),
            options,
            Weighting::Edges,
        );
        assert!(
            r[0].overhead <= 0.0105,
            "{name}: overhead {}",
            r[0].overhead
        );
        assert!(r[0].wall >= 0.95, "{name}: Wall accuracy {}", r[0].wall);
    }
}
