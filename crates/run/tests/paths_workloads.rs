//! The whole method on the bundled workloads: the branch-record unit and the exact counter
//! watch the same run; the estimate is scored against the exact profile.

use outcrop_paths::{
    accuracy, analyze, BranchRecorder, Cfg, ExactCounter, IndexCache, LbrConfig, LbrUnit, Options,
    Regions, Weighting, HOT,
};
use std::path::{Path, PathBuf};

fn workloads() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads/bin")
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
        let a = analyze(
            &cfg,
            &regions,
            &samples,
            Options::default(),
            Weighting::Equal,
            &mut cache,
        );
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
        assert!(p.wall >= 0.9, "{name}: Wall accuracy {}", p.wall);
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
