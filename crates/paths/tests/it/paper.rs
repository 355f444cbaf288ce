//! The paper's worked example: Figure 3's CFG, its regions, and Table 1's matching.

use outcrop_paths::{
    estimate, BlockId, Cfg, EdgeProfile, ExactCounter, Fragment, IndexCache, Regions, Weighting,
};
use rustc_hash::FxHashMap;

const NAMES: &str = "ABCDEFGHIJKLMNOP";

fn id(c: char) -> BlockId {
    NAMES.find(c).unwrap() as BlockId
}

fn blocks(s: &str) -> Vec<BlockId> {
    s.chars().map(id).collect()
}

fn name(bs: &[BlockId]) -> String {
    bs.iter()
        .map(|&b| NAMES.as_bytes()[b as usize] as char)
        .collect()
}

/// Figure 3: A enters the loop B-C/D-E (back edge E→B) or the diamond chain F…O; both reach P.
fn figure3() -> Cfg {
    let e = [
        "AB", "AF", "BC", "BD", "CE", "DE", "EB", "EP", "FG", "FH", "GI", "HI", "IJ", "IK", "JL",
        "KL", "LM", "LN", "MO", "NO", "OP",
    ];
    let edges: Vec<(u32, u32)> = e
        .iter()
        .map(|s| {
            let mut c = s.chars();
            (id(c.next().unwrap()), id(c.next().unwrap()))
        })
        .collect();
    Cfg::synthetic(16, &edges)
}

#[test]
fn figure3_regions() {
    let cfg = figure3();
    assert!(cfg.edge(id('E'), id('B')).unwrap().back);
    let regions = Regions::new(&cfg, 256);
    let of = |c| regions.region_of[id(c) as usize];
    // Region 2 of the figure: A and F…O
    for c in "FGHIJKLMNO".chars() {
        assert_eq!(of(c), of('A'), "{c} joins A's region");
    }
    // Region 1: the loop; P: a region of its own
    for c in "CDE".chars() {
        assert_eq!(of(c), of('B'));
    }
    assert_ne!(of('B'), of('A'));
    assert_ne!(of('P'), of('A'));
    assert_ne!(of('P'), of('B'));
    // full paths: A's region has "A" (exit to B) and 8 through the diamonds
    let ra = of('A');
    let mut paths: Vec<String> = regions.enumerate(ra).iter().map(|p| name(p)).collect();
    paths.sort();
    assert_eq!(paths.len(), 9);
    assert!(paths.contains(&"A".to_string()));
    assert!(paths.contains(&"AFGIJLMO".to_string()));
    let mut loop_paths: Vec<String> = regions.enumerate(of('B')).iter().map(|p| name(p)).collect();
    loop_paths.sort();
    assert_eq!(loop_paths, ["BCE", "BDE"]);
    // ids round-trip
    for id in 0..regions.regions[ra as usize].paths {
        let p = regions.decode(ra, id).unwrap();
        assert_eq!(regions.id_of(&p), Some((ra, id)));
    }
}

#[test]
fn limit_n_keeps_regions_small() {
    let cfg = figure3();
    // with fewer than 4 paths allowed, the diamonds cannot all join A's region
    let regions = Regions::new(&cfg, 4);
    for r in &regions.regions {
        assert!(r.paths < 4, "{r:?}");
    }
    // every block is in exactly one region
    assert!(regions
        .region_of
        .iter()
        .all(|&r| (r as usize) < regions.regions.len()));
}

#[test]
fn table1_matching_and_weights() {
    let cfg = figure3();
    let regions = Regions::new(&cfg, 256);
    let mut frags = FxHashMap::default();
    for (p, c) in [("IJLMO", 100u64), ("BCE", 50), ("AFGIJ", 300), ("LMO", 200)] {
        let b = blocks(p);
        frags.insert(
            Fragment {
                region: regions.region_of[b[0] as usize],
                blocks: b,
                ends: false,
            },
            c,
        );
    }
    let est = estimate(
        &regions,
        &frags,
        Weighting::Equal,
        &EdgeProfile::default(),
        &mut IndexCache::default(),
    );
    let mut got: Vec<(String, f64)> = est
        .paths
        .iter()
        .map(|((r, id), w)| (name(&regions.decode(*r, *id).unwrap()), *w))
        .collect();
    got.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap().then(a.0.cmp(&b.0)));
    let want = [
        ("AFGIJLMO", 250.0),
        ("AFGIJLNO", 150.0),
        ("AFHIJLMO", 100.0),
        ("AFGIKLMO", 50.0),
        ("AFHIKLMO", 50.0),
        ("BCE", 50.0),
    ];
    assert_eq!(got.len(), want.len(), "{got:?}");
    for ((g, gw), (w, ww)) in got.iter().zip(want) {
        assert_eq!(g, w);
        assert!((gw - ww).abs() < 1e-9, "{g}: {gw} vs {ww}");
    }
    // the matching ratio of A's region: (100·2 + 300·2 + 200·4) / 600
    let ra = regions.region_of[id('A') as usize];
    assert!((est.matching_ratio(ra).unwrap() - 1600.0 / 600.0).abs() < 1e-9);
}

#[test]
fn exact_counter_counts_region_paths() {
    let cfg = figure3();
    let regions = Regions::new(&cfg, 256);
    let mut ex = ExactCounter::new(&cfg, &regions);
    // A F G I J L M O P, then (entering again) A B C E B D E P
    let run = "AFGIJLMOPABCEBDEP";
    for c in run.chars() {
        ex.push_cfg_block(id(c));
    }
    let (counts, stats) = ex.finish_run();
    let mut got: Vec<(String, u64)> = counts
        .iter()
        .map(|((r, i), c)| (name(&regions.decode(*r, *i).unwrap()), *c))
        .collect();
    got.sort();
    // P→A is no CFG edge: the stream re-enters at A (a region entry); P ends as it
    // returns; the final P is still in progress when the run ends
    assert_eq!(
        got,
        [
            ("A".into(), 1),
            ("AFGIJLMO".into(), 1),
            ("BCE".into(), 1),
            ("BDE".into(), 1),
            ("P".into(), 1)
        ]
    );
    assert_eq!(stats.unplaced, 0);
}
