//! Criterion benches: RAP (with and without stage-0 combining) against an exact
//! `HashMap<u64, u64>` counter on the same pre-generated streams (code-like, value-like,
//! uniform). Run with `cargo bench -p outcrop-rap`; docs/BENCHMARKS.md records the
//! `cargo run --release -p xtask -- bench-rap` table, which also reports memory and accuracy.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use outcrop_events::synth::{self, StreamKind};
use outcrop_rap::{Config, RapTree};
use std::collections::HashMap;
use std::hint::black_box;

const EVENTS: usize = 1 << 20;

fn bench(c: &mut Criterion) {
    for kind in [
        StreamKind::CodeLike,
        StreamKind::ValueLike,
        StreamKind::Uniform,
    ] {
        let values: Vec<u64> = synth::stream(kind, 1).take(EVENTS).collect();
        let mut g = c.benchmark_group(format!("stream/{}", kind.name()));
        g.throughput(Throughput::Elements(EVENTS as u64));
        g.sample_size(20);
        g.bench_function(BenchmarkId::new("rap", "combined"), |b| {
            b.iter_batched(
                || RapTree::new(Config::default()),
                |mut t| {
                    for chunk in values.chunks(1 << 16) {
                        let _ = t.add_batch(chunk);
                    }
                    black_box(t.node_count())
                },
                BatchSize::LargeInput,
            )
        });
        g.bench_function(BenchmarkId::new("rap", "unit"), |b| {
            b.iter_batched(
                || RapTree::new(Config::default()),
                |mut t| {
                    for &v in &values {
                        let _ = t.add(v);
                    }
                    black_box(t.node_count())
                },
                BatchSize::LargeInput,
            )
        });
        g.bench_function(BenchmarkId::new("hashmap", "exact"), |b| {
            b.iter(|| {
                let mut m: HashMap<u64, u64> = HashMap::new();
                for &v in &values {
                    *m.entry(v).or_insert(0) += 1;
                }
                black_box(m.len())
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
