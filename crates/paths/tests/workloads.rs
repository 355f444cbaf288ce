//! The whole method on the bundled workloads: the branch-record unit and the exact counter
//! watch the same run; the estimate is scored against the exact profile.

use outcrop_paths::{
    accuracy, analyze, Cfg, ExactCounter, IndexCache, LbrConfig, LbrUnit, Options, Regions,
    Sampler, Weighting, HOT,
};
use outcrop_rv::elf::{load, Program};
use outcrop_rv::kernel::KernelConfig;
use std::path::{Path, PathBuf};

fn workloads() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads/bin")
}

fn run(name: &str, configs: &[LbrConfig]) -> Vec<(String, f64, f64, u64, f64)> {
    let bin = workloads().join(name);
    let elf = std::fs::read(&bin).unwrap();
    let cfg = Cfg::from_elf(&elf).unwrap();
    let regions = Regions::new(&cfg, 256);
    let kernel = KernelConfig::silent(bin.clone());
    let program = Program {
        elf: &elf,
        args: vec![format!("bin/{name}").into()],
        env: vec![],
        memory_limit: 1 << 30,
    };
    let mut m = load(program, kernel).unwrap();
    let units = configs
        .iter()
        .map(|c| LbrUnit::new(c.clone()).unwrap())
        .collect();
    let mut s = Sampler::new(units, Some(ExactCounter::new(&cfg, &regions)));
    m.run(&mut s);
    let insns = s.instructions;
    let (exact, st) = s.exact.take().unwrap().finish_run();
    eprintln!("{name}: {st:?}, {} regions", regions.regions.len());
    assert!(
        st.unplaced * 100 <= st.paths,
        "{name}: too many unplaced paths {st:?}"
    );
    let mut out = Vec::new();
    let mut cache = IndexCache::default();
    for u in s.units {
        let c = u.config().clone();
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
        eprintln!(
            "  entries {} period {}: samples {} wall {:.3} overlap {:.3} hot {} flow {:.3} overhead {:.4} matched {} unmatched {} ratio {:.2} {:?}",
            c.entries, c.period, samples.meta.samples, acc.wall, acc.overlap, acc.hot_paths, acc.hot_flow,
            samples.overhead(), a.estimate.matched, a.estimate.unmatched, a.estimate.mean_matching_ratio(), a.reconstruction.stats
        );
        out.push((
            format!("{}x{}", c.entries, c.period),
            acc.wall,
            acc.overlap,
            samples.meta.samples,
            samples.overhead(),
        ));
    }
    out
}

#[test]
#[ignore]
fn explore() {
    let mut cs = Vec::new();
    for e in [4, 16] {
        for p in [10_000u64, 1_000_000] {
            cs.push(LbrConfig {
                entries: e,
                period: p,
                random: true,
                ..LbrConfig::default()
            });
        }
    }
    for name in ["matmul", "qsort_ints", "bytecode_vm"] {
        run(name, &cs);
    }
}
