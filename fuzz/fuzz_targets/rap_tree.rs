//! Fuzz target: saved RAP trees, binary (`RapTree::from_bytes`) and JSON (`RapTree::from_json`).
//!
//! Both must return (an error is fine) without panicking. A tree they accept must keep its
//! invariants: it re-encodes to the same bytes, its counts sum to `n`, every node-aligned
//! estimate is within ε·n, and it keeps counting without panicking.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_rap::{RapTree, TreeJson};

fn exercise(tree: &mut RapTree) {
    let n = tree.n();
    let nodes = tree.nodes();
    assert_eq!(nodes.iter().map(|s| s.count).sum::<u64>(), n);
    for s in nodes.iter().take(256) {
        assert!((s.upper - s.subtree) as f64 <= tree.config().eps() * n as f64);
    }
    let _ = tree.hot_ranges(0.1);
    let mut v = n;
    for _ in 0..64 {
        v = v.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let _ = tree.add(v);
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(mut tree) = RapTree::from_bytes(data) {
        assert_eq!(tree.to_bytes(), data);
        exercise(&mut tree);
    }
    if let Ok(json) = serde_json::from_slice::<TreeJson>(data) {
        if let Ok(mut tree) = RapTree::from_json(&json) {
            exercise(&mut tree);
        }
    }
});
