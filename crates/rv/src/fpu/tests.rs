//! Unit tests for the spec's corner cases (RISC-V unprivileged ISA, chapters "F" and "D"):
//! the FCVT saturation table, FMIN/FMAX of signed zeros and NaNs, canonical NaNs, FCLASS,
//! tininess after rounding, overflow per rounding mode, signed exact zeros. The bulk checks
//! are the golden-data and property tests in `crates/rv/tests/fpu_*.rs`.

use super::flags::{DZ, NV, NX, OF, UF};
use super::*;

const S_SNAN: u32 = 0x7f80_0001;
const S_QNAN_PAYLOAD: u32 = 0x7fc0_0123;
const D_SNAN: u64 = 0x7ff0_0000_0000_0001;
const D_QNAN_PAYLOAD: u64 = 0xfff8_0000_0000_0042;
const S_INF: u32 = 0x7f80_0000;
const D_INF: u64 = 0x7ff0_0000_0000_0000;
const D_MAX: u64 = 0x7fef_ffff_ffff_ffff;

fn d(x: f64) -> u64 {
    x.to_bits()
}
fn s(x: f32) -> u32 {
    x.to_bits()
}

/// Runs `f` with fresh flags and returns (result, flags).
fn run<T>(f: impl FnOnce(&mut u8) -> T) -> (T, u8) {
    let mut fl = 0;
    let r = f(&mut fl);
    (r, fl)
}

#[test]
fn rounding_mode_field() {
    for (b, rm) in [
        (0, Rm::Rne),
        (1, Rm::Rtz),
        (2, Rm::Rdn),
        (3, Rm::Rup),
        (4, Rm::Rmm),
    ] {
        assert_eq!(Rm::from_bits(b), Some(rm));
        assert_eq!(rm.bits(), b);
    }
    for b in [5, 6, 7, 8, u32::MAX] {
        assert_eq!(Rm::from_bits(b), None);
    }
}

/// The FCVT.int.fmt table: NaN → max; +∞ and too large → max; −∞ and too small → min; all with
/// NV and without NX.
#[test]
fn fcvt_saturation_table() {
    let cases_d: [(u64, i32, u32, i64, u64); 6] = [
        (CANONICAL_NAN_64, i32::MAX, u32::MAX, i64::MAX, u64::MAX),
        (
            D_QNAN_PAYLOAD | (1 << 63),
            i32::MAX,
            u32::MAX,
            i64::MAX,
            u64::MAX,
        ),
        (D_INF, i32::MAX, u32::MAX, i64::MAX, u64::MAX),
        (D_INF | (1 << 63), i32::MIN, 0, i64::MIN, 0),
        (d(1e30), i32::MAX, u32::MAX, i64::MAX, u64::MAX),
        (d(-1e30), i32::MIN, 0, i64::MIN, 0),
    ];
    for rm in Rm::ALL {
        for (x, w, wu, l, lu) in cases_d {
            assert_eq!(run(|f| f64_to_i32(x, rm, f)), (w, NV), "{x:x}");
            assert_eq!(run(|f| f64_to_u32(x, rm, f)), (wu, NV), "{x:x}");
            assert_eq!(run(|f| f64_to_i64(x, rm, f)), (l, NV), "{x:x}");
            assert_eq!(run(|f| f64_to_u64(x, rm, f)), (lu, NV), "{x:x}");
        }
        // The same for binary32 (its sNaN too).
        for (x, w, wu, l, lu) in [
            (S_SNAN, i32::MAX, u32::MAX, i64::MAX, u64::MAX),
            (S_INF | (1 << 31), i32::MIN, 0, i64::MIN, 0),
            (s(3e38), i32::MAX, u32::MAX, i64::MAX, u64::MAX),
        ] {
            assert_eq!(run(|f| f32_to_i32(x, rm, f)), (w, NV));
            assert_eq!(run(|f| f32_to_u32(x, rm, f)), (wu, NV));
            assert_eq!(run(|f| f32_to_i64(x, rm, f)), (l, NV));
            assert_eq!(run(|f| f32_to_u64(x, rm, f)), (lu, NV));
        }
    }
}

#[test]
fn fcvt_limits_and_rounding() {
    // 2^31 − 0.5 rounds to 2^31 (out of range) in RNE, but truncates to 2^31 − 1 in RTZ.
    let x = d(2_147_483_647.5);
    assert_eq!(run(|f| f64_to_i32(x, Rm::Rne, f)), (i32::MAX, NV));
    assert_eq!(run(|f| f64_to_i32(x, Rm::Rtz, f)), (i32::MAX, NX));
    // −2^31 − 0.5: RTZ gives i32::MIN (inexact), RDN overflows.
    let x = d(-2_147_483_648.5);
    assert_eq!(run(|f| f64_to_i32(x, Rm::Rtz, f)), (i32::MIN, NX));
    assert_eq!(run(|f| f64_to_i32(x, Rm::Rdn, f)), (i32::MIN, NV));
    // Exactly −2^63 fits i64; 2^63 does not; 2^64 − 2048 (largest double below 2^64) fits u64.
    assert_eq!(
        run(|f| f64_to_i64(d(-(2f64.powi(63))), Rm::Rne, f)),
        (i64::MIN, 0)
    );
    assert_eq!(
        run(|f| f64_to_i64(d(2f64.powi(63)), Rm::Rne, f)),
        (i64::MAX, NV)
    );
    let below_2_64 = d(18_446_744_073_709_551_616.0) - 1;
    assert_eq!(
        run(|f| f64_to_u64(below_2_64, Rm::Rne, f)),
        (u64::MAX - 2047, 0)
    );
    // Unsigned: negatives that round to zero are inexact, not invalid; −1 is invalid.
    assert_eq!(run(|f| f64_to_u32(d(-0.4), Rm::Rne, f)), (0, NX));
    assert_eq!(run(|f| f64_to_u32(d(-0.9), Rm::Rtz, f)), (0, NX));
    assert_eq!(run(|f| f64_to_u32(d(-0.4), Rm::Rdn, f)), (0, NV));
    assert_eq!(run(|f| f64_to_u64(d(-1.0), Rm::Rtz, f)), (0, NV));
    assert_eq!(run(|f| f64_to_u64(d(-0.0), Rm::Rdn, f)), (0, 0));
    // Ties in each mode.
    for (x, rne, rtz, rdn, rup, rmm) in [
        (2.5, 2, 2, 2, 3, 3),
        (-2.5, -2, -2, -3, -2, -3),
        (3.5, 4, 3, 3, 4, 4),
        (-0.5, 0, 0, -1, 0, -1),
    ] {
        for (rm, want) in [
            (Rm::Rne, rne),
            (Rm::Rtz, rtz),
            (Rm::Rdn, rdn),
            (Rm::Rup, rup),
            (Rm::Rmm, rmm),
        ] {
            assert_eq!(run(|f| f64_to_i32(d(x), rm, f)), (want, NX), "{x} {rm:?}");
            assert_eq!(run(|f| f32_to_i64(s(x as f32), rm, f)), (want.into(), NX));
        }
    }
}

#[test]
fn fcvt_from_integers() {
    // 2^24 + 1 is a tie in binary32: RNE goes to even (2^24), RUP up.
    let x = (1 << 24) + 1;
    assert_eq!(run(|f| f32_from_i32(x, Rm::Rne, f)), (s(16_777_216.0), NX));
    assert_eq!(run(|f| f32_from_i32(x, Rm::Rup, f)), (s(16_777_218.0), NX));
    assert_eq!(
        run(|f| f32_from_i32(-x, Rm::Rup, f)),
        (s(-16_777_216.0), NX)
    );
    assert_eq!(
        run(|f| f32_from_i32(-x, Rm::Rmm, f)),
        (s(-16_777_218.0), NX)
    );
    // u64::MAX rounds to 2^64 (or down to 2^64 − 2048 in RTZ).
    assert_eq!(
        run(|f| f64_from_u64(u64::MAX, Rm::Rne, f)),
        (d(1.8446744073709552e19), NX)
    );
    assert_eq!(
        run(|f| f64_from_u64(u64::MAX, Rm::Rtz, f)),
        (d(18_446_744_073_709_549_568.0), NX)
    );
    assert_eq!(
        run(|f| f64_from_i64(i64::MIN, Rm::Rdn, f)),
        (d(-(2f64.powi(63))), 0)
    );
    assert_eq!(
        run(|f| f64_from_i32(i32::MIN, Rm::Rup, f)),
        (d(-2147483648.0), 0)
    );
    assert_eq!(run(|f| f32_from_u64(0, Rm::Rdn, f)), (0, 0));
}

/// FMIN/FMAX (ISA 2.2+): −0 < +0; one NaN → the other operand; two → canonical; sNaN → NV.
#[test]
fn fmin_fmax_zeros_and_nans() {
    let (pz, nz) = (d(0.0), d(-0.0));
    for (a, b) in [(pz, nz), (nz, pz)] {
        assert_eq!(run(|f| f64_min(a, b, f)), (nz, 0));
        assert_eq!(run(|f| f64_max(a, b, f)), (pz, 0));
        assert_eq!(run(|f| slow::f64_min(a, b, f)), (nz, 0));
        assert_eq!(run(|f| slow::f64_max(a, b, f)), (pz, 0));
    }
    let (pz, nz) = (s(0.0), s(-0.0));
    for (a, b) in [(pz, nz), (nz, pz)] {
        assert_eq!(run(|f| f32_min(a, b, f)), (nz, 0));
        assert_eq!(run(|f| f32_max(a, b, f)), (pz, 0));
    }
    let one = d(1.0);
    assert_eq!(run(|f| f64_min(D_QNAN_PAYLOAD, one, f)), (one, 0));
    assert_eq!(run(|f| f64_max(one, D_QNAN_PAYLOAD, f)), (one, 0));
    assert_eq!(run(|f| f64_min(D_SNAN, one, f)), (one, NV));
    assert_eq!(run(|f| f64_max(one, D_SNAN, f)), (one, NV));
    assert_eq!(
        run(|f| f64_min(D_QNAN_PAYLOAD, D_QNAN_PAYLOAD, f)),
        (CANONICAL_NAN_64, 0)
    );
    assert_eq!(
        run(|f| f64_max(D_SNAN, D_QNAN_PAYLOAD, f)),
        (CANONICAL_NAN_64, NV)
    );
    assert_eq!(
        run(|f| f32_min(S_SNAN, S_QNAN_PAYLOAD, f)),
        (CANONICAL_NAN_32, NV)
    );
    assert_eq!(run(|f| f32_max(S_QNAN_PAYLOAD, s(-2.0), f)), (s(-2.0), 0));
    assert_eq!(
        run(|f| f32_min(s(-2.0), s(f32::NEG_INFINITY), f)),
        (s(f32::NEG_INFINITY), 0)
    );
}

#[test]
fn comparisons_quiet_and_signalling() {
    let one = d(1.0);
    // FEQ is quiet: NV only for sNaN.
    assert_eq!(run(|f| f64_eq(D_QNAN_PAYLOAD, one, f)), (false, 0));
    assert_eq!(run(|f| f64_eq(one, D_SNAN, f)), (false, NV));
    assert_eq!(run(|f| f64_eq(d(0.0), d(-0.0), f)), (true, 0));
    // FLT/FLE signal on any NaN.
    assert_eq!(run(|f| f64_lt(D_QNAN_PAYLOAD, one, f)), (false, NV));
    assert_eq!(run(|f| f64_le(one, D_QNAN_PAYLOAD, f)), (false, NV));
    assert_eq!(run(|f| f64_lt(d(-0.0), d(0.0), f)), (false, 0));
    assert_eq!(run(|f| f64_le(d(0.0), d(-0.0), f)), (true, 0));
    assert_eq!(run(|f| f32_lt(s(-1.0), s(-0.5), f)), (true, 0));
    assert_eq!(run(|f| f32_le(S_SNAN, S_SNAN, f)), (false, NV));
    assert_eq!(
        run(|f| f32_eq(S_QNAN_PAYLOAD, S_QNAN_PAYLOAD, f)),
        (false, 0)
    );
}

#[test]
fn fclass_each_class() {
    let d_cases: [(u64, u32); 11] = [
        (0xfff0_0000_0000_0000, 1 << 0),
        (d(-1.5), 1 << 1),
        (0x800f_ffff_ffff_ffff, 1 << 2),
        (d(-0.0), 1 << 3),
        (d(0.0), 1 << 4),
        (0x0000_0000_0000_0001, 1 << 5),
        (d(f64::MAX), 1 << 6),
        (D_INF, 1 << 7),
        (D_SNAN, 1 << 8),
        (CANONICAL_NAN_64, 1 << 9),
        (0xfff4_0000_0000_0000, 1 << 8),
    ];
    for (x, want) in d_cases {
        assert_eq!(f64_classify(x), want, "{x:x}");
    }
    let s_cases: [(u32, u32); 11] = [
        (0xff80_0000, 1 << 0),
        (s(-1.5), 1 << 1),
        (0x807f_ffff, 1 << 2),
        (s(-0.0), 1 << 3),
        (s(0.0), 1 << 4),
        (0x0000_0001, 1 << 5),
        (s(f32::MIN_POSITIVE), 1 << 6),
        (S_INF, 1 << 7),
        (S_SNAN, 1 << 8),
        (CANONICAL_NAN_32, 1 << 9),
        (0xffc0_0001, 1 << 9),
    ];
    for (x, want) in s_cases {
        assert_eq!(f32_classify(x), want, "{x:x}");
    }
}

/// NaN results never carry payloads or signs; sNaN operands raise NV, quiet ones nothing.
#[test]
fn canonical_nans() {
    let one = d(1.0);
    assert_eq!(
        run(|f| f64_add(D_QNAN_PAYLOAD, one, Rm::Rne, f)),
        (CANONICAL_NAN_64, 0)
    );
    assert_eq!(
        run(|f| f64_mul(one, D_SNAN, Rm::Rtz, f)),
        (CANONICAL_NAN_64, NV)
    );
    assert_eq!(
        run(|f| f64_sqrt(d(-1.0), Rm::Rne, f)),
        (CANONICAL_NAN_64, NV)
    );
    assert_eq!(run(|f| f64_sqrt(d(-0.0), Rm::Rne, f)), (d(-0.0), 0));
    assert_eq!(
        run(|f| f64_div(d(0.0), d(-0.0), Rm::Rne, f)),
        (CANONICAL_NAN_64, NV)
    );
    assert_eq!(
        run(|f| f64_sub(D_INF, D_INF, Rm::Rne, f)),
        (CANONICAL_NAN_64, NV)
    );
    assert_eq!(
        run(|f| f32_to_f64(S_QNAN_PAYLOAD | (1 << 31), f)),
        (CANONICAL_NAN_64, 0)
    );
    assert_eq!(run(|f| f32_to_f64(S_SNAN, f)), (CANONICAL_NAN_64, NV));
    assert_eq!(
        run(|f| f64_to_f32(D_QNAN_PAYLOAD, Rm::Rne, f)),
        (CANONICAL_NAN_32, 0)
    );
    assert_eq!(
        run(|f| f32_madd(S_QNAN_PAYLOAD, 0, 0, Rm::Rne, f)),
        (CANONICAL_NAN_32, 0)
    );
}

/// RISC-V: ∞ × 0 in a fused multiply-add is invalid even with a quiet NaN addend.
#[test]
fn fma_inf_times_zero_with_quiet_nan_addend() {
    for rm in Rm::ALL {
        assert_eq!(
            run(|f| f64_madd(D_INF, d(0.0), CANONICAL_NAN_64, rm, f)),
            (CANONICAL_NAN_64, NV)
        );
        assert_eq!(
            run(|f| f32_nmsub(0, S_INF, S_QNAN_PAYLOAD, rm, f)),
            (CANONICAL_NAN_32, NV)
        );
        // ∞ + (−∞) through the product.
        assert_eq!(
            run(|f| f64_msub(D_INF, d(2.0), D_INF, rm, f)),
            (CANONICAL_NAN_64, NV)
        );
    }
}

#[test]
fn division_by_zero() {
    assert_eq!(
        run(|f| f64_div(d(1.0), d(-0.0), Rm::Rne, f)),
        (d(f64::NEG_INFINITY), DZ)
    );
    assert_eq!(run(|f| f64_div(D_INF, d(0.0), Rm::Rne, f)), (D_INF, 0));
    assert_eq!(
        run(|f| f32_div(s(-3.0), 0, Rm::Rdn, f)),
        (s(f32::NEG_INFINITY), DZ)
    );
}

#[test]
fn overflow_per_rounding_mode() {
    let neg_max = D_MAX | (1 << 63);
    let neg_inf = D_INF | (1 << 63);
    for (rm, pos, neg) in [
        (Rm::Rne, D_INF, neg_inf),
        (Rm::Rtz, D_MAX, neg_max),
        (Rm::Rdn, D_MAX, neg_inf),
        (Rm::Rup, D_INF, neg_max),
        (Rm::Rmm, D_INF, neg_inf),
    ] {
        assert_eq!(
            run(|f| f64_add(D_MAX, D_MAX, rm, f)),
            (pos, OF | NX),
            "{rm:?}"
        );
        assert_eq!(
            run(|f| f64_mul(neg_max, d(2.0), rm, f)),
            (neg, OF | NX),
            "{rm:?}"
        );
    }
}

/// Tininess is detected after rounding (to the format's precision, unbounded exponent), and
/// UF needs tininess and inexactness.
#[test]
fn underflow_after_rounding() {
    // 2^-126 × (1 − 2^-24): exactly representable with 24 bits and an unbounded exponent, so
    // still tiny after rounding; it rounds to 2^-126 with UF.
    let min_normal = s(f32::MIN_POSITIVE);
    let one_minus = 0x3f7f_ffff;
    assert_eq!(
        run(|f| f32_mul(min_normal, one_minus, Rm::Rne, f)),
        (min_normal, UF | NX)
    );
    // 2^-126 × (1 − 2^-25) rounds to 2^-126 at 24 bits already: not tiny, only NX.
    let x = (f64::from(f32::MIN_POSITIVE) * (1.0 - 2f64.powi(-25))).to_bits();
    assert_eq!(run(|f| f64_to_f32(x, Rm::Rne, f)), (min_normal, NX));
    // … but from below the largest 24-bit value under 2^-126, rounding up to 2^-126 is tiny.
    let x = (f64::from(f32::MIN_POSITIVE) * (1.0 - 2f64.powi(-24) - 2f64.powi(-30))).to_bits();
    assert_eq!(run(|f| f64_to_f32(x, Rm::Rup, f)), (min_normal, UF | NX));
    // The largest subnormal itself is exact.
    let x = (f64::from(f32::MIN_POSITIVE) * (1.0 - 2f64.powi(-23))).to_bits();
    assert_eq!(run(|f| f64_to_f32(x, Rm::Rup, f)), (0x007f_ffff, 0));
    // An exact subnormal result raises nothing.
    assert_eq!(run(|f| f64_mul(1, d(1.0), Rm::Rne, f)), (1, 0));
    assert_eq!(
        run(|f| f64_sub(0x0010_0000_0000_0001, 0x0010_0000_0000_0000, Rm::Rne, f)),
        (1, 0)
    );
    // Underflow to zero.
    assert_eq!(run(|f| f64_mul(1, d(0.25), Rm::Rne, f)), (0, UF | NX));
    assert_eq!(
        run(|f| f64_mul(1, d(-0.25), Rm::Rdn, f)),
        (1 | (1 << 63), UF | NX)
    );
}

#[test]
fn exact_zero_signs() {
    let x = d(1.5);
    assert_eq!(run(|f| f64_sub(x, x, Rm::Rne, f)), (d(0.0), 0));
    assert_eq!(run(|f| f64_sub(x, x, Rm::Rdn, f)), (d(-0.0), 0));
    assert_eq!(run(|f| f64_add(d(-0.0), d(-0.0), Rm::Rne, f)), (d(-0.0), 0));
    assert_eq!(run(|f| f64_add(d(-0.0), d(0.0), Rm::Rup, f)), (d(0.0), 0));
    // FNMADD is −(a×b) − c rounded once, not −(a×b + c): its exact zero is +0 in RNE.
    assert_eq!(run(|f| f64_nmadd(x, x, d(-2.25), Rm::Rne, f)), (d(0.0), 0));
    assert_eq!(run(|f| f64_madd(x, x, d(-2.25), Rm::Rdn, f)), (d(-0.0), 0));
    assert_eq!(
        run(|f| f32_msub(0, s(-1.0), s(0.0), Rm::Rne, f)),
        (s(-0.0), 0)
    );
}

#[test]
fn fused_rounds_once() {
    // (1 + 2^-52)² − 1 − 2^-51 = 2^-104: a separate multiply would lose it entirely.
    let a = 0x3ff0_0000_0000_0001;
    let c = d(-(1.0 + 2f64.powi(-51)));
    assert_eq!(
        run(|f| f64_madd(a, a, c, Rm::Rne, f)),
        (d(2f64.powi(-104)), 0)
    );
    assert_eq!(
        run(|f| slow::f64_madd(a, a, c, Rm::Rne, f)),
        (d(2f64.powi(-104)), 0)
    );
}

#[test]
fn flags_accumulate() {
    let mut fl = UF;
    let _ = f64_div(d(1.0), d(3.0), Rm::Rne, &mut fl);
    let _ = f64_div(d(1.0), d(0.0), Rm::Rne, &mut fl);
    assert_eq!(fl, UF | NX | DZ);
}

#[test]
fn nan_boxing() {
    assert_eq!(nan_box(0x3f80_0000), 0xffff_ffff_3f80_0000);
    assert_eq!(nan_unbox(0xffff_ffff_3f80_0000), 0x3f80_0000);
    assert_eq!(nan_unbox(0x0000_0000_3f80_0000), CANONICAL_NAN_32);
    assert_eq!(nan_unbox(0xffff_fffe_3f80_0000), CANONICAL_NAN_32);
    assert_eq!(nan_unbox(0x3ff0_0000_0000_0000), CANONICAL_NAN_32);
}

/// Regression (found by the golden data): a fused multiply-add whose massive cancellation
/// leaves a few-bit significand in the subnormal range must shift it *left* to the subnormal
/// quantum, not round it. −(a×b) − c = −2^-1048 exactly.
#[test]
fn fnmadd_cancellation_into_subnormal_range() {
    let (a, b, c) = (
        0x44bf_ffff_ffff_fffc,
        0x000f_ffff_ffff_ffff,
        0x84df_ffff_ffff_fffa,
    );
    for rm in Rm::ALL {
        assert_eq!(
            run(|f| f64_nmadd(a, b, c, rm, f)),
            (0x8000_0000_0400_0000, 0),
            "{rm:?}"
        );
    }
}
