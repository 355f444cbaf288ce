#![allow(missing_docs)]
//! Cost per sampling site, natively: a loop whose body does a little work and passes one
//! site, sampled 1 in 1024 by each scheme, against the same loop without a site and with a
//! hand-written inline counter (the baseline a runtime builder would write).
//!
//!     cargo bench -p outcrop-sampling --bench samplers
//!
//! Results and their reading: docs/BENCHMARKS.md, "Samplers for native code".

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use outcrop_sampling::brr::BrrConfig;
use outcrop_sampling::sample;
use outcrop_sampling::sampler::{
    BurstSampler, CounterSampler, GeometricSampler, LfsrSampler, Sampler,
};

const N: u64 = 1 << 16;
const INTERVAL: u64 = 1024;

/// The loop body: an xorshift step (a few cycles of real work per site).
#[inline(always)]
fn work(x: &mut u64) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
}

fn run<S: Sampler>(s: &mut S) -> u64 {
    let (mut x, mut hits) = (black_box(0x9e37_79b9_7f4a_7c15u64), 0u64);
    for _ in 0..N {
        work(&mut x);
        sample!(*s, {
            hits = hits.wrapping_add(x);
        });
    }
    x ^ hits
}

fn samplers(c: &mut Criterion) {
    let mut g = c.benchmark_group("site");
    g.throughput(Throughput::Elements(N));
    g.bench_function("no site", |b| {
        b.iter(|| {
            let mut x = black_box(0x9e37_79b9_7f4a_7c15u64);
            for _ in 0..N {
                work(&mut x);
            }
            x
        })
    });
    g.bench_function("inline counter (hand-written)", |b| {
        b.iter(|| {
            let (mut x, mut hits, mut count) = (black_box(0x9e37_79b9_7f4a_7c15u64), 0u64, 0u64);
            for _ in 0..N {
                work(&mut x);
                count += 1;
                if count == INTERVAL {
                    count = 0;
                    hits = hits.wrapping_add(x);
                }
            }
            x ^ hits
        })
    });
    let mut counter = CounterSampler::new(INTERVAL).unwrap();
    g.bench_function("CounterSampler", |b| b.iter(|| run(&mut counter)));
    let mut geo = GeometricSampler::new(INTERVAL, 1).unwrap();
    g.bench_function("GeometricSampler", |b| b.iter(|| run(&mut geo)));
    let mut lfsr = LfsrSampler::new(INTERVAL, &BrrConfig::default()).unwrap();
    g.bench_function("LfsrSampler", |b| b.iter(|| run(&mut lfsr)));
    let mut burst = BurstSampler::new(INTERVAL * 16, 16).unwrap();
    g.bench_function("BurstSampler (16 in 16384)", |b| b.iter(|| run(&mut burst)));
    g.finish();
}

/// The site alone in the loop (only the loop counter besides): its throughput cost.
fn bare<S: Sampler>(s: &mut S) -> u64 {
    let mut hits = 0u64;
    for i in 0..N {
        sample!(*s, {
            hits = hits.wrapping_add(i);
        });
    }
    black_box(hits)
}

fn sites_alone(c: &mut Criterion) {
    let mut g = c.benchmark_group("site alone");
    g.throughput(Throughput::Elements(N));
    g.bench_function("inline counter (hand-written)", |b| {
        b.iter(|| {
            let (mut hits, mut count) = (0u64, black_box(0u64));
            for i in 0..N {
                count += 1;
                if count == INTERVAL {
                    count = 0;
                    hits = hits.wrapping_add(i);
                }
            }
            black_box(hits)
        })
    });
    let mut counter = CounterSampler::new(INTERVAL).unwrap();
    g.bench_function("CounterSampler", |b| b.iter(|| bare(&mut counter)));
    let mut geo = GeometricSampler::new(INTERVAL, 1).unwrap();
    g.bench_function("GeometricSampler", |b| b.iter(|| bare(&mut geo)));
    let mut lfsr = LfsrSampler::new(INTERVAL, &BrrConfig::default()).unwrap();
    g.bench_function("LfsrSampler", |b| b.iter(|| bare(&mut lfsr)));
    let mut burst = BurstSampler::new(INTERVAL * 16, 16).unwrap();
    g.bench_function("BurstSampler (16 in 16384)", |b| {
        b.iter(|| bare(&mut burst))
    });
    g.finish();
}

criterion_group!(benches, samplers, sites_alone);
criterion_main!(benches);
