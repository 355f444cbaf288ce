//! A quick micro-benchmark of the binary64 hot operations in round-to-nearest-even: the
//! public API (fast path), the slow path alone, and the bare host operation. A benchmark, not
//! a test (it asserts nothing): run with
//! `cargo run --release -p outcrop-rv --example fpu_bench`.

use std::hint::black_box;
use std::time::Instant;

use outcrop_rv::fpu::{self, slow, Rm};

/// Ordinary operands: normal binary64 values in `[2^-20, 2^20)` with random significands,
/// from a fixed LCG.
fn operands(n: usize, seed: u64) -> Vec<u64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let exp = 1023 - 20 + (state >> 58) % 40;
            let frac = (state >> 8) & ((1 << 52) - 1);
            ((state >> 7 & 1) << 63) | (exp << 52) | frac
        })
        .collect()
}

/// Nanoseconds per call of `op` over the operand arrays, best of a few rounds.
fn time(name: &str, a: &[u64], b: &[u64], c: &[u64], op: impl Fn(u64, u64, u64) -> u64) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = Instant::now();
        let mut acc = 0u64;
        for i in 0..a.len() {
            acc ^= black_box(op(black_box(a[i]), black_box(b[i]), black_box(c[i])));
        }
        black_box(acc);
        let ns = start.elapsed().as_nanos() as f64 / a.len() as f64;
        best = best.min(ns);
    }
    eprintln!("{name:<22} {best:6.2} ns/op");
    best
}

fn main() {
    const N: usize = 2_000_000;
    let (a, b, c) = (operands(N, 1), operands(N, 2), operands(N, 3));
    let rm = Rm::Rne;
    let host = |x: u64| f64::from_bits(x);
    eprintln!("binary64, RNE, {N} ordinary operands per run:");
    time("host add", &a, &b, &c, |x, y, _| {
        (host(x) + host(y)).to_bits()
    });
    time("fpu::f64_add", &a, &b, &c, |x, y, _| {
        let mut f = 0;
        fpu::f64_add(x, y, rm, &mut f) ^ u64::from(f)
    });
    time("slow::f64_add", &a, &b, &c, |x, y, _| {
        let mut f = 0;
        slow::f64_add(x, y, rm, &mut f) ^ u64::from(f)
    });
    time("host mul", &a, &b, &c, |x, y, _| {
        (host(x) * host(y)).to_bits()
    });
    time("fpu::f64_mul", &a, &b, &c, |x, y, _| {
        let mut f = 0;
        fpu::f64_mul(x, y, rm, &mut f) ^ u64::from(f)
    });
    time("slow::f64_mul", &a, &b, &c, |x, y, _| {
        let mut f = 0;
        slow::f64_mul(x, y, rm, &mut f) ^ u64::from(f)
    });
    time("host div", &a, &b, &c, |x, y, _| {
        (host(x) / host(y)).to_bits()
    });
    time("fpu::f64_div", &a, &b, &c, |x, y, _| {
        let mut f = 0;
        fpu::f64_div(x, y, rm, &mut f) ^ u64::from(f)
    });
    time("slow::f64_div", &a, &b, &c, |x, y, _| {
        let mut f = 0;
        slow::f64_div(x, y, rm, &mut f) ^ u64::from(f)
    });
    time("host mul_add", &a, &b, &c, |x, y, z| {
        host(x).mul_add(host(y), host(z)).to_bits()
    });
    time("fpu::f64_madd", &a, &b, &c, |x, y, z| {
        let mut f = 0;
        fpu::f64_madd(x, y, z, rm, &mut f) ^ u64::from(f)
    });
    time("slow::f64_madd", &a, &b, &c, |x, y, z| {
        let mut f = 0;
        slow::f64_madd(x, y, z, rm, &mut f) ^ u64::from(f)
    });
    time("host sqrt", &a, &b, &c, |x, _, _| {
        host(x & !(1 << 63)).sqrt().to_bits()
    });
    time("fpu::f64_sqrt", &a, &b, &c, |x, _, _| {
        let mut f = 0;
        fpu::f64_sqrt(x & !(1 << 63), rm, &mut f) ^ u64::from(f)
    });
    time("fpu::f64_add (rtz)", &a, &b, &c, |x, y, _| {
        let mut f = 0;
        fpu::f64_add(x, y, Rm::Rtz, &mut f) ^ u64::from(f)
    });
}
