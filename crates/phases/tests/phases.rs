//! Basic-block vectors and phase clustering on streams whose phases are known.

use outcrop_events::record::Observer;
use outcrop_phases::{cluster, Bbv, BbvCollector, ClusterOptions, MAX_INTERVALS};
use proptest::prelude::*;

/// Feeds `(block start, instructions)` pairs.
fn collect(interval: u64, blocks: impl IntoIterator<Item = (u64, u32)>) -> Bbv {
    let mut c = BbvCollector::new(interval);
    for (s, n) in blocks {
        c.block(s, n);
    }
    c.finish_bbv()
}

proptest! {
    /// Every interval's counts sum to its instructions, the intervals to the stream, each but
    /// the last holds at least the interval, and starts follow one another.
    #[test]
    fn intervals_partition_the_stream(
        blocks in prop::collection::vec((0u64..40, 1u32..30), 1..3000),
        interval in 1u64..500,
    ) {
        let total: u64 = blocks.iter().map(|b| u64::from(b.1)).sum();
        let bbv = collect(interval, blocks.iter().map(|&(s, n)| (0x1000 + 4 * s, n)));
        prop_assert_eq!(bbv.instructions(), total);
        let mut at = 0;
        for (k, i) in bbv.intervals.iter().enumerate() {
            prop_assert_eq!(i.start, at);
            prop_assert_eq!(i.counts.iter().map(|c| c.1).sum::<u64>(), i.instructions);
            prop_assert!(i.counts.windows(2).all(|w| w[0].0 < w[1].0));
            if k + 1 < bbv.intervals.len() {
                prop_assert!(i.instructions >= bbv.interval);
                prop_assert!(i.instructions < bbv.interval + 30);
            }
            at += i.instructions;
        }
        // ids in order of first execution
        let mut seen = Vec::new();
        for &(s, _) in &blocks {
            let a = 0x1000 + 4 * s;
            if !seen.contains(&a) {
                seen.push(a);
            }
        }
        prop_assert_eq!(bbv.blocks, seen);
    }
}

#[test]
fn the_bb_format_is_qemus() {
    let bbv = collect(
        10,
        [(0x100, 4), (0x200, 3), (0x100, 4), (0x300, 5), (0x200, 3)],
    );
    // 4+3+4 = 11 closes the first interval; 5+3 is the last, partial one
    assert_eq!(bbv.to_bb(), "T:0:8 :1:3 \nT:1:3 :2:5 \n");
}

#[test]
fn many_intervals_are_merged_pairwise_and_the_interval_doubles() {
    let n = 3 * MAX_INTERVALS as u64;
    let bbv = collect(1, (0..n).map(|i| (i % 7, 1)));
    assert!(bbv.intervals.len() < MAX_INTERVALS);
    assert_eq!(bbv.instructions(), n);
    assert!(bbv.interval >= 4);
    assert!(bbv
        .intervals
        .iter()
        .all(|i| i.counts.iter().map(|c| c.1).sum::<u64>() == i.instructions));
}

/// Three phases with their own blocks, in the pattern A B A C A B…, each phase some
/// intervals long.
fn three_phases() -> (Bbv, Vec<usize>) {
    let pattern = [0usize, 1, 0, 2, 0, 1, 2, 2, 0, 1];
    let mut blocks = Vec::new();
    let mut truth = Vec::new();
    for &p in &pattern {
        for _ in 0..6 {
            // one interval of 1,000 instructions from the phase's 5 blocks
            for b in 0..5u64 {
                blocks.push((0x1000 * (p as u64 + 1) + 8 * b, (20 + 10 * b) as u32));
            }
            truth.push(p);
        }
    }
    // 5 blocks of 20..60 = 200 instructions a round: 5 rounds an interval
    let blocks: Vec<(u64, u32)> = blocks
        .iter()
        .flat_map(|&b| std::iter::repeat_n(b, 5))
        .collect();
    (collect(1000, blocks), truth)
}

#[test]
fn three_known_phases_are_found_with_representatives_inside_them() {
    let (bbv, truth) = three_phases();
    assert_eq!(bbv.intervals.len(), truth.len());
    let p = cluster(&bbv, &ClusterOptions::default());
    assert_eq!(p.k, 3, "BIC {:?}", p.bic);
    // the same partition as the truth, phases numbered by first occurrence
    assert_eq!(p.assignment, truth);
    let w: f64 = p.phases.iter().map(|ph| ph.weight).sum();
    assert!((w - 1.0).abs() < 1e-12);
    for ph in &p.phases {
        assert_eq!(p.assignment[ph.representative], ph.id);
        assert!(ph.intervals.contains(&ph.representative));
    }
    // phase 0 (A) holds 4 of the 10 stretches
    assert!((p.phases[0].weight - 0.4).abs() < 1e-12);
    // deterministic
    assert_eq!(
        format!("{:?}", cluster(&bbv, &ClusterOptions::default()).assignment),
        format!("{:?}", p.assignment)
    );
}

#[test]
fn one_steady_behaviour_is_one_phase() {
    let blocks: Vec<(u64, u32)> = (0..20_000).map(|i| (0x100 + 8 * (i % 9), 5)).collect();
    let bbv = collect(1000, blocks);
    let p = cluster(&bbv, &ClusterOptions::default());
    assert_eq!(p.k, 1, "BIC {:?}", p.bic);
    assert_eq!(p.phases[0].intervals.len(), bbv.intervals.len());
    let empty = cluster(&Bbv::default(), &ClusterOptions::default());
    assert_eq!(empty.k, 0);
}
