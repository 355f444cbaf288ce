//! The paper's Figure 1 worked example (RAP §2.1–2.2): a binary tree over [0, 255] just before
//! a merge batch whose cutoff is 13, then an access to 12 that splits [12, 13].
//!
//! The figure itself is a drawing we do not have in text; the caption fixes b = 2, the
//! universe [0, 255], the cutoff 13 and the nodes [0,255], [0,63], [12,13]. We fill in the
//! other counts so that the batch shows each merge outcome: a full fold ([12,13] takes back
//! both unit children), a partial fold ([12,15] keeps [12,13]), a zero-weight fold ([32,63])
//! and no fold ([0,127] keeps [64,127]). With ε = 1 and H = 8, n = 104 gives τ = ⌊104/8⌋ = 13.

use outcrop_rap::{Config, NodeJson, RapTree, Stats, TreeJson, FORMAT_NAME};

fn node(lo: u64, hi: u64, depth: u32, count: u64) -> NodeJson {
    NodeJson {
        lo,
        hi,
        depth,
        count,
    }
}

fn figure1_before_merge() -> RapTree {
    let nodes = vec![
        node(0, 255, 0, 10),
        node(0, 127, 1, 9),
        node(0, 63, 2, 13),
        node(0, 31, 3, 6),
        node(0, 15, 4, 5),
        node(0, 7, 5, 2),
        node(8, 15, 5, 4),
        node(8, 11, 6, 3),
        node(12, 15, 6, 1),
        node(12, 13, 7, 9),
        node(12, 12, 8, 3),
        node(13, 13, 8, 1),
        node(14, 15, 7, 12),
        node(16, 31, 4, 7),
        node(32, 63, 3, 0),
        node(64, 127, 2, 11),
        node(128, 255, 1, 8),
    ];
    let json = TreeJson {
        format: FORMAT_NAME.into(),
        version: 1,
        config: outcrop_rap::ConfigJson {
            bits: 8,
            branching: 2,
            eps: 1.0,
            first_merge: 1 << 40,
            merge_ratio: 2,
            split_policy: outcrop_rap::SplitPolicy::Full,
        },
        n: 104,
        next_merge: 1 << 40,
        merge_interval: 1 << 40,
        last_merge_n: 0,
        peak_nodes: 17,
        stats: Stats::default(),
        nodes,
    };
    RapTree::from_json(&json).unwrap()
}

fn shape(tree: &RapTree) -> Vec<(u64, u64, u64)> {
    tree.nodes().iter().map(|s| (s.lo, s.hi, s.count)).collect()
}

#[test]
fn figure1_merge_with_cutoff_13_then_split_of_12_13() {
    let mut tree = figure1_before_merge();
    let config = Config::builder()
        .bits(8)
        .branching(2)
        .eps(1.0)
        .build()
        .unwrap();
    assert_eq!(config.height(), 8);
    assert_eq!(tree.split_threshold(), 13, "the merge cutoff of Figure 1");
    assert_eq!(tree.node_count(), 17);

    tree.compact();
    assert_eq!(
        shape(&tree),
        vec![
            (0, 255, 10), // [128,255] = 8 does not fit: 10 + 8 > 13
            (0, 127, 9),  // [64,127] = 11 does not fit
            (0, 63, 13),  // folded [32,63] = 0
            (0, 31, 13),  // folded [16,31] = 7
            (0, 15, 7),   // folded [0,7] = 2
            (8, 15, 7),   // folded [8,11] = 3
            (12, 15, 13), // folded [14,15] = 12, lighter than [12,13]; a partial child set
            (12, 13, 13), // folded both unit children: 9 + 1 + 3
            (64, 127, 11),
            (128, 255, 8),
        ]
    );
    assert_eq!(tree.n(), 104);
    assert_eq!(tree.nodes().iter().map(|s| s.count).sum::<u64>(), 104);

    // "an access to item 12 ... will push the node that captures [12,13] over the split
    // threshold": we split before the count overshoots, so [12,13] keeps 13 and the access is
    // the first one recorded item by item.
    tree.add(12).unwrap();
    assert_eq!(tree.split_threshold(), 13);
    let after: Vec<_> = shape(&tree)
        .into_iter()
        .filter(|&(lo, _, _)| (12..16).contains(&lo))
        .collect();
    assert_eq!(
        after,
        vec![(12, 15, 13), (12, 13, 13), (12, 12, 1), (13, 13, 0)]
    );
    tree.add(13).unwrap();
    tree.add(12).unwrap();
    let e12 = tree.estimate(12, 12).unwrap();
    let e13 = tree.estimate(13, 13).unwrap();
    assert_eq!((e12.lower, e13.lower), (2, 1));

    // An access to 14 finds [12,15] whose child set is partial and which is full: it grows
    // the missing child [14,15] back, keeping [12,13] and its subtree.
    tree.add(14).unwrap();
    let region: Vec<_> = shape(&tree)
        .into_iter()
        .filter(|&(lo, _, _)| (12..16).contains(&lo))
        .collect();
    assert_eq!(
        region,
        vec![
            (12, 15, 13),
            (12, 13, 13),
            (12, 12, 2),
            (13, 13, 1),
            (14, 15, 1)
        ]
    );
}

#[test]
fn figure1_estimates_are_guaranteed_intervals() {
    let mut tree = figure1_before_merge();
    tree.compact();
    // [12,13]: its own count is certain; the ancestors' counters might hold more of it.
    let e = tree.estimate(12, 13).unwrap();
    assert_eq!(e.lower, 13);
    assert_eq!(e.upper, 13 + 10 + 9 + 13 + 13 + 7 + 7 + 13);
    // ε·n = 104 bounds upper − lower for node-aligned ranges.
    assert!(e.upper - e.lower <= 104);
    let all = tree.estimate(0, 255).unwrap();
    assert_eq!((all.lower, all.upper), (104, 104));
}

#[test]
fn figure1_dump_is_indented_hex() {
    let mut tree = figure1_before_merge();
    tree.compact();
    let dump = tree.ascii_dump();
    let lines: Vec<&str> = dump.lines().collect();
    assert_eq!(lines[0], "[0, ff] count=10 subtree=104 (100.00%)");
    assert_eq!(lines[1], "  [0, 7f] count=9 subtree=86 (82.69%)");
    assert!(lines[7].starts_with("              [c, d] count=13"));
}
