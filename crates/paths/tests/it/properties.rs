//! Invariants on random CFGs and random walks, and on the bundled programs' CFGs:
//! regions obey the paper's rules, path ids round-trip, weights are conserved, and matching
//! complete paths reproduces the exact profile.

use outcrop_paths::{
    estimate, Cfg, EdgeProfile, ExactCounter, Fragment, IndexCache, Regions, Weighting,
};
use proptest::prelude::*;
use rustc_hash::FxHashMap;

/// A random single-function CFG: a forward skeleton (every block reaches the next) plus
/// random forward and backward edges.
fn random_cfg(n: u32, extra: &[(u32, u32)]) -> Cfg {
    let mut edges: Vec<(u32, u32)> = (0..n - 1).map(|i| (i, i + 1)).collect();
    for &(a, b) in extra {
        let (a, b) = (a % n, b % n);
        if a != b && !edges.contains(&(a, b)) && a != n - 1 {
            edges.push((a, b));
        }
    }
    Cfg::synthetic(n, &edges)
}

fn check_rules(cfg: &Cfg, regions: &Regions) {
    for (i, r) in regions.regions.iter().enumerate() {
        let rid = i as u32;
        assert!(r.paths < regions.limit, "rule 3: {r:?}");
        assert!(r.paths >= 1);
        let lp = cfg.loop_of[r.entry as usize];
        for &b in &r.blocks {
            assert_eq!(regions.region_of[b as usize], rid);
            // rule 2: one loop level
            assert_eq!(cfg.loop_of[b as usize], lp, "rule 2 in region {rid}");
            // rule 1: single entry
            if b != r.entry {
                for &p in &cfg.preds[b as usize] {
                    assert_eq!(
                        regions.region_of[p as usize], rid,
                        "rule 1: block {b} of region {rid} has pred {p}"
                    );
                }
            }
        }
        for id in 0..r.paths.min(300) {
            let p = regions.decode(rid, id).unwrap();
            assert_eq!(regions.id_of(&p), Some((rid, id)));
        }
    }
    assert!(regions
        .region_of
        .iter()
        .all(|&r| (r as usize) < regions.regions.len()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn regions_follow_the_rules(
        n in 2u32..40,
        extra in prop::collection::vec((0u32..40, 0u32..40), 0..40),
        limit in 2u64..64,
    ) {
        let cfg = random_cfg(n, &extra);
        let regions = Regions::new(&cfg, limit);
        check_rules(&cfg, &regions);
    }

    /// Walk the CFG at random; feed the exact counter; then build fragments that are exactly
    /// the counted full paths (known to end): matching must give back the exact profile, and
    /// any weighting conserves the total.
    #[test]
    fn complete_fragments_reproduce_the_exact_profile(
        n in 2u32..30,
        extra in prop::collection::vec((0u32..30, 0u32..30), 0..30),
        choices in prop::collection::vec(0usize..8, 1..400),
        limit in 2u64..64,
    ) {
        let cfg = random_cfg(n, &extra);
        let regions = Regions::new(&cfg, limit);
        let mut ex = ExactCounter::new(&cfg, &regions);
        let mut b = 0u32;
        ex.push_cfg_block(b);
        for c in &choices {
            let s = &cfg.succs[b as usize];
            if s.is_empty() {
                b = 0; // restart the function: a new entry
            } else {
                b = s[c % s.len()].to;
            }
            ex.push_cfg_block(b);
        }
        let (exact, stats) = ex.finish_run();
        prop_assert_eq!(stats.unplaced, 0);
        let mut frags = FxHashMap::default();
        for (&(r, id), &c) in &exact {
            let blocks = regions.decode(r, id).unwrap();
            frags.insert(Fragment { region: r, blocks, ends: true }, c);
        }
        for w in [Weighting::Equal, Weighting::Edges] {
            let est = estimate(&regions, &frags, w, &EdgeProfile::default(), &mut IndexCache::default());
            prop_assert_eq!(est.unmatched, 0);
            for (k, &c) in &exact {
                let e = est.paths.get(k).copied().unwrap_or(0.0);
                prop_assert!((e - c as f64).abs() < 1e-6, "{:?}: {} vs {}", k, e, c);
            }
        }
        // without the end constraint, weight is still conserved
        let open: FxHashMap<Fragment, u64> = frags
            .into_iter()
            .map(|(mut f, c)| { f.ends = false; (f, c) })
            .collect();
        let est = estimate(&regions, &open, Weighting::Equal, &EdgeProfile::default(), &mut IndexCache::default());
        let total: f64 = est.paths.values().sum();
        prop_assert!((total - exact.values().sum::<u64>() as f64).abs() < 1e-6);
    }
}

#[test]
fn regions_of_real_programs_follow_the_rules() {
    let dir = outcrop_testkit::workloads().join("bin");
    for name in ["qsort_ints", "bytecode_vm"] {
        let elf = std::fs::read(dir.join(name)).unwrap();
        let cfg = Cfg::from_elf(&elf).unwrap();
        assert!(cfg.funcs.len() > 100 && cfg.blocks.len() > 1000, "{name}");
        for limit in [16, 256] {
            check_rules(&cfg, &Regions::new(&cfg, limit));
        }
    }
}
