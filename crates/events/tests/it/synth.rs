//! Synthetic streams: deterministic per seed, and shaped as documented.

use std::collections::HashSet;

use outcrop_events::synth::{stream, CodeLike, StreamKind, Uniform, ValueLike};

fn first(kind: StreamKind, seed: u64, n: usize) -> Vec<u64> {
    stream(kind, seed).take(n).collect()
}

#[test]
fn same_seed_same_stream_different_seed_different_stream() {
    for kind in StreamKind::ALL {
        let a = first(kind, 42, 10_000);
        assert_eq!(a, first(kind, 42, 10_000), "{kind}");
        assert_ne!(a, first(kind, 43, 10_000), "{kind}");
    }
    // The boxed stream is the same as the concrete generator.
    assert_eq!(
        first(StreamKind::CodeLike, 7, 1000),
        CodeLike::new(7).take(1000).collect::<Vec<_>>()
    );
    assert_eq!(
        first(StreamKind::ValueLike, 7, 1000),
        ValueLike::new(7).take(1000).collect::<Vec<_>>()
    );
    assert_eq!(
        first(StreamKind::Uniform, 7, 1000),
        Uniform::new(7).take(1000).collect::<Vec<_>>()
    );
}

#[test]
fn code_like_repeats_heavily() {
    let values = first(StreamKind::CodeLike, 1, 1_000_000);
    let distinct: HashSet<u64> = values.iter().copied().collect();
    assert!(distinct.len() < 20_000, "{} distinct", distinct.len());
    assert!(values.iter().all(|v| v % 4 == 0 && *v >= 0x10000));
    // A hot set: the 100 most frequent addresses cover a large share of the stream.
    let mut counts: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for v in &values {
        *counts.entry(*v).or_default() += 1;
    }
    let mut counts: Vec<u64> = counts.into_values().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let top: u64 = counts.iter().take(100).sum();
    assert!(top * 4 > values.len() as u64, "top 100 cover only {top}");
}

#[test]
fn uniform_does_not_repeat() {
    let values = first(StreamKind::Uniform, 1, 1_000_000);
    let distinct: HashSet<u64> = values.iter().copied().collect();
    assert_eq!(distinct.len(), values.len());
}

#[test]
fn value_like_is_between_the_two() {
    let values = first(StreamKind::ValueLike, 1, 1_000_000);
    let distinct: HashSet<u64> = values.iter().copied().collect();
    // The long tail (25 %) is almost all distinct; the rest repeats.
    assert!(
        distinct.len() > 200_000 && distinct.len() < 400_000,
        "{}",
        distinct.len()
    );
}

#[test]
fn streams_are_send() {
    let handle = std::thread::spawn(|| stream(StreamKind::CodeLike, 3).take(10).count());
    assert_eq!(handle.join().unwrap(), 10);
}
