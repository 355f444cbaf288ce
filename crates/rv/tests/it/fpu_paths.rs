//! Property tests for `outcrop_rv::fpu`: the public API (host fast path in round-to-nearest-
//! even, with error-free exactness tests) agrees bit for bit and flag for flag with the
//! integer slow path, on operands chosen to hit the fast path's edges (cancellation, exact
//! results, ties, products and quotients near the underflow/overflow guards); plus a few
//! IEEE invariants of the slow path itself in every rounding mode.

use outcrop_rv::fpu::{self, flags, slow, Rm};
use proptest::prelude::*;

/// Cases per property; `OUTCROP_FPU_CASES` overrides it for long soak runs.
fn cases(default: u32) -> u32 {
    std::env::var("OUTCROP_FPU_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(20_000),
        ..ProptestConfig::default()
    }
}

/// binary64 patterns from several families.
fn f64_bits() -> impl Strategy<Value = u64> {
    prop_oneof![
        // Anything at all.
        2 => any::<u64>(),
        // Moderate magnitudes.
        3 => (any::<bool>(), 1023u64 - 40..=1023 + 40, any::<u64>())
            .prop_map(|(s, e, f)| (u64::from(s) << 63) | (e << 52) | (f & ((1 << 52) - 1))),
        // Any finite exponent, including subnormals and the top binade.
        2 => (any::<bool>(), 0u64..=2046, any::<u64>())
            .prop_map(|(s, e, f)| (u64::from(s) << 63) | (e << 52) | (f & ((1 << 52) - 1))),
        // Few significant bits (exact results, ties).
        3 => (any::<bool>(), 1023u64 - 60..=1023 + 60, any::<u64>(), 0u32..=52)
            .prop_map(|(s, e, f, keep)| {
                let frac = (f & ((1 << 52) - 1)) & !((1u64 << (52 - keep)) - 1);
                (u64::from(s) << 63) | (e << 52) | frac
            }),
        // Small integers and halves.
        2 => (-4096i32..=4096, 0u32..=3)
            .prop_map(|(k, sh)| (f64::from(k) / f64::from(1u32 << sh)).to_bits()),
        // Near the fast path's guards: 2^-960 and 2^-1022 products, huge values.
        2 => (any::<bool>(), prop_oneof![0u64..=80, 40u64..=140, 520u64..=560, 1960u64..=2046], any::<u64>())
            .prop_map(|(s, e, f)| (u64::from(s) << 63) | (e << 52) | (f & ((1 << 52) - 1))),
    ]
}

/// binary32 patterns from the same families.
fn f32_bits() -> impl Strategy<Value = u32> {
    prop_oneof![
        2 => any::<u32>(),
        3 => (any::<bool>(), 127u32 - 20..=127 + 20, any::<u32>())
            .prop_map(|(s, e, f)| (u32::from(s) << 31) | (e << 23) | (f & ((1 << 23) - 1))),
        2 => (any::<bool>(), 0u32..=254, any::<u32>())
            .prop_map(|(s, e, f)| (u32::from(s) << 31) | (e << 23) | (f & ((1 << 23) - 1))),
        3 => (any::<bool>(), 127u32 - 30..=127 + 30, any::<u32>(), 0u32..=23)
            .prop_map(|(s, e, f, keep)| {
                let frac = (f & ((1 << 23) - 1)) & !((1u32 << (23 - keep)) - 1);
                (u32::from(s) << 31) | (e << 23) | frac
            }),
        2 => (-4096i32..=4096, 0u32..=3)
            .prop_map(|(k, sh)| (k as f32 / (1u32 << sh) as f32).to_bits()),
        2 => (any::<bool>(), prop_oneof![0u32..=30, 50u32..=80, 230u32..=254], any::<u32>())
            .prop_map(|(s, e, f)| (u32::from(s) << 31) | (e << 23) | (f & ((1 << 23) - 1))),
    ]
}

/// A pair whose second member is often close to (the negation of) the first.
fn f64_pair() -> impl Strategy<Value = (u64, u64)> {
    (f64_bits(), f64_bits(), 0u8..6, -3i64..=3, -60i64..=60).prop_map(|(a, b, how, ulps, sh)| {
        match how {
            0 => (a, (a ^ (1 << 63)).wrapping_add(ulps as u64)),
            1 => (a, a.wrapping_add(ulps as u64)),
            2 => {
                let e = (((a >> 52) & 0x7ff) as i64 + sh).clamp(1, 2046) as u64;
                (a, (a & 0x800f_ffff_ffff_ffff) | (e << 52))
            }
            _ => (a, b),
        }
    })
}

fn f32_pair() -> impl Strategy<Value = (u32, u32)> {
    (f32_bits(), f32_bits(), 0u8..6, -3i32..=3, -30i32..=30).prop_map(|(a, b, how, ulps, sh)| {
        match how {
            0 => (a, (a ^ (1 << 31)).wrapping_add(ulps as u32)),
            1 => (a, a.wrapping_add(ulps as u32)),
            2 => {
                let e = (((a >> 23) & 0xff) as i32 + sh).clamp(1, 254) as u32;
                (a, (a & 0x807f_ffff) | (e << 23))
            }
            _ => (a, b),
        }
    })
}

/// A triple for fused multiply-add, often with `c ≈ −a×b` (massive cancellation), `c` far
/// below `a×b` (sticky bits only) or `c = ±0`.
fn f64_triple() -> impl Strategy<Value = (u64, u64, u64)> {
    (f64_pair(), f64_bits(), 0u8..4, -4i64..=4, 1u64..=120).prop_map(
        |((a, b), c, how, ulps, drop)| {
            let p = (f64::from_bits(a) * f64::from_bits(b)).to_bits();
            match how {
                0 => (a, b, (p ^ (1 << 63)).wrapping_add(ulps as u64)),
                1 => {
                    let e = ((p >> 52) & 0x7ff).saturating_sub(drop).max(1);
                    (a, b, (p & 0x800f_ffff_ffff_ffff) | (e << 52))
                }
                // A signed zero addend.
                2 if drop % 4 == 0 => (a, b, u64::from(ulps < 0) << 63),
                _ => (a, b, c),
            }
        },
    )
}

fn f32_triple() -> impl Strategy<Value = (u32, u32, u32)> {
    (f32_pair(), f32_bits(), 0u8..4, -4i32..=4, 1u32..=60).prop_map(
        |((a, b), c, how, ulps, drop)| {
            let p = (f32::from_bits(a) * f32::from_bits(b)).to_bits();
            match how {
                0 => (a, b, (p ^ (1 << 31)).wrapping_add(ulps as u32)),
                1 => {
                    let e = ((p >> 23) & 0xff).saturating_sub(drop).max(1);
                    (a, b, (p & 0x807f_ffff) | (e << 23))
                }
                2 if drop % 4 == 0 => (a, b, u32::from(ulps < 0) << 31),
                _ => (a, b, c),
            }
        },
    )
}

/// Integers with every bit length, often with trailing zeros (ties when rounded).
fn int_bits() -> impl Strategy<Value = u64> {
    (any::<u64>(), 0u32..64, 0u32..16, any::<bool>()).prop_map(|(x, sh, tz, neg)| {
        let v = ((x >> sh) | 1) << tz;
        if neg {
            v.wrapping_neg()
        } else {
            v
        }
    })
}

/// Runs `api` and `slow` with fresh flags and compares (result, flags).
fn same<T: PartialEq + std::fmt::Debug>(
    what: &str,
    api: impl FnOnce(&mut u8) -> T,
    slow: impl FnOnce(&mut u8) -> T,
) -> Result<(), TestCaseError> {
    let (mut fa, mut fs) = (0u8, 0u8);
    let ra = api(&mut fa);
    let rs = slow(&mut fs);
    prop_assert_eq!((&ra, fa), (&rs, fs), "{}: api vs slow", what);
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn f64_binary_fast_matches_slow((a, b) in f64_pair()) {
        let rm = Rm::Rne;
        same("add", |f| fpu::f64_add(a, b, rm, f), |f| slow::f64_add(a, b, rm, f))?;
        same("sub", |f| fpu::f64_sub(a, b, rm, f), |f| slow::f64_sub(a, b, rm, f))?;
        same("mul", |f| fpu::f64_mul(a, b, rm, f), |f| slow::f64_mul(a, b, rm, f))?;
        same("div", |f| fpu::f64_div(a, b, rm, f), |f| slow::f64_div(a, b, rm, f))?;
        same("min", |f| fpu::f64_min(a, b, f), |f| slow::f64_min(a, b, f))?;
        same("max", |f| fpu::f64_max(a, b, f), |f| slow::f64_max(a, b, f))?;
        same("eq", |f| fpu::f64_eq(a, b, f), |f| slow::f64_eq(a, b, f))?;
        same("lt", |f| fpu::f64_lt(a, b, f), |f| slow::f64_lt(a, b, f))?;
        same("le", |f| fpu::f64_le(a, b, f), |f| slow::f64_le(a, b, f))?;
    }

    #[test]
    fn f32_binary_fast_matches_slow((a, b) in f32_pair()) {
        let rm = Rm::Rne;
        same("add", |f| fpu::f32_add(a, b, rm, f), |f| slow::f32_add(a, b, rm, f))?;
        same("sub", |f| fpu::f32_sub(a, b, rm, f), |f| slow::f32_sub(a, b, rm, f))?;
        same("mul", |f| fpu::f32_mul(a, b, rm, f), |f| slow::f32_mul(a, b, rm, f))?;
        same("div", |f| fpu::f32_div(a, b, rm, f), |f| slow::f32_div(a, b, rm, f))?;
        same("min", |f| fpu::f32_min(a, b, f), |f| slow::f32_min(a, b, f))?;
        same("max", |f| fpu::f32_max(a, b, f), |f| slow::f32_max(a, b, f))?;
        same("eq", |f| fpu::f32_eq(a, b, f), |f| slow::f32_eq(a, b, f))?;
        same("lt", |f| fpu::f32_lt(a, b, f), |f| slow::f32_lt(a, b, f))?;
        same("le", |f| fpu::f32_le(a, b, f), |f| slow::f32_le(a, b, f))?;
    }

    #[test]
    fn f64_fma_fast_matches_slow((a, b, c) in f64_triple()) {
        let rm = Rm::Rne;
        same("madd", |f| fpu::f64_madd(a, b, c, rm, f), |f| slow::f64_madd(a, b, c, rm, f))?;
        same("msub", |f| fpu::f64_msub(a, b, c, rm, f), |f| slow::f64_msub(a, b, c, rm, f))?;
        same("nmsub", |f| fpu::f64_nmsub(a, b, c, rm, f), |f| slow::f64_nmsub(a, b, c, rm, f))?;
        same("nmadd", |f| fpu::f64_nmadd(a, b, c, rm, f), |f| slow::f64_nmadd(a, b, c, rm, f))?;
    }

    #[test]
    fn f32_fma_fast_matches_slow((a, b, c) in f32_triple()) {
        let rm = Rm::Rne;
        same("madd", |f| fpu::f32_madd(a, b, c, rm, f), |f| slow::f32_madd(a, b, c, rm, f))?;
        same("msub", |f| fpu::f32_msub(a, b, c, rm, f), |f| slow::f32_msub(a, b, c, rm, f))?;
        same("nmsub", |f| fpu::f32_nmsub(a, b, c, rm, f), |f| slow::f32_nmsub(a, b, c, rm, f))?;
        same("nmadd", |f| fpu::f32_nmadd(a, b, c, rm, f), |f| slow::f32_nmadd(a, b, c, rm, f))?;
    }

    #[test]
    fn unary_fast_matches_slow(a in f64_bits(), s in f32_bits()) {
        let rm = Rm::Rne;
        // Squares make exact square roots likely.
        let sq = (f64::from_bits(a & !(1 << 63)) * f64::from_bits(a & !(1 << 63))).to_bits();
        for x in [a, sq] {
            same("sqrt.d", |f| fpu::f64_sqrt(x, rm, f), |f| slow::f64_sqrt(x, rm, f))?;
        }
        let sq32 = (f32::from_bits(s & !(1 << 31)) * f32::from_bits(s & !(1 << 31))).to_bits();
        for x in [s, sq32] {
            same("sqrt.s", |f| fpu::f32_sqrt(x, rm, f), |f| slow::f32_sqrt(x, rm, f))?;
        }
        same("cvt.s.d", |f| fpu::f64_to_f32(a, rm, f), |f| slow::f64_to_f32(a, rm, f))?;
        // Also binary64 values that are near binary32's range and precision.
        let near = f64::from(f32::from_bits(s)).to_bits() ^ (a & 0xff);
        same("cvt.s.d near", |f| fpu::f64_to_f32(near, rm, f), |f| slow::f64_to_f32(near, rm, f))?;
        same("cvt.d.s", |f| fpu::f32_to_f64(s, f), |f| slow::f32_to_f64(s, f))?;
    }

    /// Conversions have fast paths in every rounding mode.
    #[test]
    fn conversions_fast_match_slow(a in f64_bits(), s in f32_bits(), i in int_bits(), k in -70_000i64..70_000, q in 0u32..4) {
        // Also values near integers and halves.
        let near_int = (k as f64 + f64::from(q) * 0.25).to_bits();
        for rm in Rm::ALL {
            for x in [a, near_int] {
                same("cvt.w.d", |f| fpu::f64_to_i32(x, rm, f), |f| slow::f64_to_i32(x, rm, f))?;
                same("cvt.wu.d", |f| fpu::f64_to_u32(x, rm, f), |f| slow::f64_to_u32(x, rm, f))?;
                same("cvt.l.d", |f| fpu::f64_to_i64(x, rm, f), |f| slow::f64_to_i64(x, rm, f))?;
                same("cvt.lu.d", |f| fpu::f64_to_u64(x, rm, f), |f| slow::f64_to_u64(x, rm, f))?;
            }
            let near32 = (k as f32 + q as f32 * 0.25).to_bits();
            for x in [s, near32] {
                same("cvt.w.s", |f| fpu::f32_to_i32(x, rm, f), |f| slow::f32_to_i32(x, rm, f))?;
                same("cvt.wu.s", |f| fpu::f32_to_u32(x, rm, f), |f| slow::f32_to_u32(x, rm, f))?;
                same("cvt.l.s", |f| fpu::f32_to_i64(x, rm, f), |f| slow::f32_to_i64(x, rm, f))?;
                same("cvt.lu.s", |f| fpu::f32_to_u64(x, rm, f), |f| slow::f32_to_u64(x, rm, f))?;
            }
            let (w, l) = (i as u32, i);
            same("cvt.s.w", |f| fpu::f32_from_i32(w as i32, rm, f), |f| slow::f32_from_i32(w as i32, rm, f))?;
            same("cvt.s.wu", |f| fpu::f32_from_u32(w, rm, f), |f| slow::f32_from_u32(w, rm, f))?;
            same("cvt.s.l", |f| fpu::f32_from_i64(l as i64, rm, f), |f| slow::f32_from_i64(l as i64, rm, f))?;
            same("cvt.s.lu", |f| fpu::f32_from_u64(l, rm, f), |f| slow::f32_from_u64(l, rm, f))?;
            same("cvt.d.w", |f| fpu::f64_from_i32(w as i32, rm, f), |f| slow::f64_from_i32(w as i32, rm, f))?;
            same("cvt.d.wu", |f| fpu::f64_from_u32(w, rm, f), |f| slow::f64_from_u32(w, rm, f))?;
            same("cvt.d.l", |f| fpu::f64_from_i64(l as i64, rm, f), |f| slow::f64_from_i64(l as i64, rm, f))?;
            same("cvt.d.lu", |f| fpu::f64_from_u64(l, rm, f), |f| slow::f64_from_u64(l, rm, f))?;
        }
    }
}

/// Orders non-NaN binary64 patterns as real numbers (−0 and +0 equal).
fn value64(bits: u64) -> f64 {
    f64::from_bits(bits)
}

/// The next binary64 value above a finite `x` (`f64::next_up` needs a newer Rust than the
/// workspace's MSRV).
fn next_up(x: f64) -> f64 {
    let bits = x.to_bits();
    if x == 0.0 {
        f64::from_bits(1)
    } else if x > 0.0 {
        f64::from_bits(bits + 1)
    } else {
        f64::from_bits(bits - 1)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(4_000), ..ProptestConfig::default() })]

    /// Directed roundings bracket the others; without NX all modes agree; results are
    /// commutative; NaN results are canonical.
    #[test]
    fn rounding_modes_are_consistent((a, b) in f64_pair(), c in f64_bits()) {
        type Op = fn(u64, u64, u64, Rm, &mut u8) -> u64;
        let ops: [(&str, Op); 4] = [
            ("add", |a, b, _, rm, f| slow::f64_add(a, b, rm, f)),
            ("mul", |a, b, _, rm, f| slow::f64_mul(a, b, rm, f)),
            ("div", |a, b, _, rm, f| slow::f64_div(a, b, rm, f)),
            ("madd", |a, b, c, rm, f| slow::f64_madd(a, b, c, rm, f)),
        ];
        for (name, op) in ops {
            let results: Vec<(u64, u8)> = Rm::ALL
                .iter()
                .map(|&rm| {
                    let mut f = 0;
                    (op(a, b, c, rm, &mut f), f)
                })
                .collect();
            let (rne, rtz, rdn, rup, rmm) = (results[0], results[1], results[2], results[3], results[4]);
            if value64(rne.0).is_nan() {
                for r in &results {
                    prop_assert_eq!(r.0, fpu::CANONICAL_NAN_64, "{}", name);
                }
                continue;
            }
            prop_assert!(value64(rdn.0) <= value64(rup.0), "{}: rdn {:x} > rup {:x}", name, rdn.0, rup.0);
            for r in [rne, rtz, rmm] {
                prop_assert!(value64(rdn.0) <= value64(r.0) && value64(r.0) <= value64(rup.0), "{}", name);
            }
            prop_assert!(value64(rtz.0).abs() <= value64(rne.0).abs(), "{}", name);
            if rne.1 & flags::NX == 0 {
                for r in &results {
                    prop_assert_eq!(value64(r.0), value64(rne.0), "{}: exact in RNE but not in all modes", name);
                }
            } else {
                // Inexact: RDN and RUP are adjacent (or an overflow clamps one of them).
                let (lo, hi) = (value64(rdn.0), value64(rup.0));
                prop_assert!(lo < hi, "{}: inexact but rdn == rup", name);
                if lo.is_finite() && hi.is_finite() {
                    prop_assert_eq!(next_up(lo), hi, "{}", name);
                }
            }
        }
        for rm in Rm::ALL {
            let (mut f1, mut f2) = (0, 0);
            prop_assert_eq!(slow::f64_add(a, b, rm, &mut f1), slow::f64_add(b, a, rm, &mut f2));
            prop_assert_eq!(f1, f2);
            prop_assert_eq!(slow::f64_mul(a, b, rm, &mut f1), slow::f64_mul(b, a, rm, &mut f2));
            prop_assert_eq!(f1, f2);
        }
    }
}
