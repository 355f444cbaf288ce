//! Zfa's additional floating-point operations for binary32 and binary64 (RISC-V unprivileged
//! ISA, chapter "Zfa"): `fli` constants, `fminm`/`fmaxm` (IEEE 754-2019 minimum/maximum: a NaN
//! operand gives the canonical NaN), `fround`/`froundnx` (round to an integer in the same
//! format), `fcvtmod.w.d` (modular conversion, JavaScript's ToInt32) and the quiet comparisons
//! `fleq`/`fltq`.

use super::{flags, Rm, CANONICAL_NAN_32, CANONICAL_NAN_64};

/// The constants of `fli`, as binary64 values (index 1, the smallest normal, and 30/31, ∞ and
/// NaN, are format-specific and handled by the callers).
const FLI: [f64; 32] = [
    -1.0,
    0.0, // min normal
    1.52587890625e-05,
    3.0517578125e-05,
    0.00390625,
    0.0078125,
    0.0625,
    0.125,
    0.25,
    0.3125,
    0.375,
    0.4375,
    0.5,
    0.625,
    0.75,
    0.875,
    1.0,
    1.25,
    1.5,
    1.75,
    2.0,
    2.5,
    3.0,
    4.0,
    8.0,
    16.0,
    128.0,
    256.0,
    32768.0,
    65536.0,
    f64::INFINITY,
    0.0, // NaN
];

/// FLI.S: the binary32 constant with index `i` (0–31).
pub fn fli_s(i: u32) -> u32 {
    match i & 31 {
        1 => 0x0080_0000,
        31 => CANONICAL_NAN_32,
        i => (FLI[i as usize] as f32).to_bits(),
    }
}

/// FLI.D: the binary64 constant with index `i` (0–31).
pub fn fli_d(i: u32) -> u64 {
    match i & 31 {
        1 => 0x0010_0000_0000_0000,
        31 => CANONICAL_NAN_64,
        i => FLI[i as usize].to_bits(),
    }
}

fn is_snan_32(a: u32) -> bool {
    a & 0x7fc0_0000 == 0x7f80_0000 && a & 0x003f_ffff != 0
}
fn is_snan_64(a: u64) -> bool {
    a & 0x7ff8_0000_0000_0000 == 0x7ff0_0000_0000_0000 && a & 0x0007_ffff_ffff_ffff != 0
}

macro_rules! zfa_width {
    ($bits:ty, $float:ty, $snan:ident, $nan:expr, $sign:expr, $int_limit:expr,
     $minm:ident, $maxm:ident, $round:ident, $leq:ident, $ltq:ident, $to_i64:path) => {
        /// FMINM: the smaller operand (`−0 < +0`); the canonical NaN if either is a NaN, NV if
        /// either is signalling.
        pub fn $minm(a: $bits, b: $bits, fl: &mut u8) -> $bits {
            let (x, y) = (<$float>::from_bits(a), <$float>::from_bits(b));
            if x.is_nan() || y.is_nan() {
                if $snan(a) || $snan(b) {
                    *fl |= flags::NV;
                }
                return $nan;
            }
            if x < y {
                a
            } else if y < x {
                b
            } else {
                a | b
            }
        }

        /// FMAXM: the larger operand (`−0 < +0`); NaN rules as FMINM.
        pub fn $maxm(a: $bits, b: $bits, fl: &mut u8) -> $bits {
            let (x, y) = (<$float>::from_bits(a), <$float>::from_bits(b));
            if x.is_nan() || y.is_nan() {
                if $snan(a) || $snan(b) {
                    *fl |= flags::NV;
                }
                return $nan;
            }
            if x > y {
                a
            } else if y > x {
                b
            } else {
                a & b
            }
        }

        /// FROUND (`inexact` false) / FROUNDNX (true): `a` rounded to an integer in its own
        /// format with `rm`; NaN gives the canonical NaN (NV if signalling); FROUNDNX raises NX
        /// when the result differs from `a`.
        pub fn $round(a: $bits, rm: Rm, inexact: bool, fl: &mut u8) -> $bits {
            let x = <$float>::from_bits(a);
            if x.is_nan() {
                if $snan(a) {
                    *fl |= flags::NV;
                }
                return $nan;
            }
            // infinities, zeros and values at or above 2^(mantissa bits) are integers already
            if x.is_infinite() || x == 0.0 || x.abs() >= $int_limit {
                return a;
            }
            let mut ignore = 0u8;
            let v = $to_i64(a, rm, &mut ignore);
            let r = if v == 0 {
                (0.0 as $float).to_bits() | (a & $sign)
            } else {
                (v as $float).to_bits()
            };
            if inexact && r != a {
                *fl |= flags::NX;
            }
            r
        }

        /// FLEQ: quiet `a <= b`; false for a NaN, NV only if one is signalling.
        pub fn $leq(a: $bits, b: $bits, fl: &mut u8) -> bool {
            let (x, y) = (<$float>::from_bits(a), <$float>::from_bits(b));
            if (x.is_nan() || y.is_nan()) && ($snan(a) || $snan(b)) {
                *fl |= flags::NV;
            }
            x <= y
        }

        /// FLTQ: quiet `a < b`; false for a NaN, NV only if one is signalling.
        pub fn $ltq(a: $bits, b: $bits, fl: &mut u8) -> bool {
            let (x, y) = (<$float>::from_bits(a), <$float>::from_bits(b));
            if (x.is_nan() || y.is_nan()) && ($snan(a) || $snan(b)) {
                *fl |= flags::NV;
            }
            x < y
        }
    };
}

zfa_width!(
    u32,
    f32,
    is_snan_32,
    CANONICAL_NAN_32,
    0x8000_0000,
    8_388_608.0,
    f32_minm,
    f32_maxm,
    f32_round,
    f32_leq,
    f32_ltq,
    super::f32_to_i64
);
zfa_width!(
    u64,
    f64,
    is_snan_64,
    CANONICAL_NAN_64,
    1 << 63,
    4_503_599_627_370_496.0,
    f64_minm,
    f64_maxm,
    f64_round,
    f64_leq,
    f64_ltq,
    super::f64_to_i64
);

/// FCVTMOD.W.D: `a` truncated to an integer, reduced modulo 2^32 and sign-extended (as
/// JavaScript's ToInt32). NaN and infinities give 0; NV when the truncated value is outside
/// the `i32` range (or not finite), else NX when truncation discarded a fraction.
pub fn f64_cvtmod_w(a: u64, fl: &mut u8) -> i32 {
    let exp = ((a >> 52) & 0x7ff) as i64;
    if exp == 0x7ff {
        *fl |= flags::NV;
        return 0;
    }
    if exp == 0 && a << 1 == 0 {
        return 0; // ±0
    }
    let neg = a >> 63 != 0;
    let mant = (a & 0x000f_ffff_ffff_ffff) | if exp == 0 { 0 } else { 1 << 52 };
    // value = mant × 2^(e − 1075), with e the biased exponent (1 for subnormals)
    let shift = exp.max(1) - 1075;
    let (int, frac) = if shift >= 0 {
        // only the low 32 bits matter after the reduction; a shift of 64 or more clears them
        let low = if shift >= 64 { 0 } else { mant << shift };
        (low, false)
    } else if shift <= -64 {
        (0, true)
    } else {
        let s = (-shift) as u32;
        (mant >> s, mant & ((1u64 << s) - 1) != 0)
    };
    // the truncated magnitude fits i32 only when below 2^31 (or exactly 2^31 when negative)
    let in_range = shift < 0 && (int < (1 << 31) || (neg && int == 1 << 31));
    let r = if neg { int.wrapping_neg() } else { int } as u32 as i32;
    if !in_range {
        *fl |= flags::NV;
    } else if frac {
        *fl |= flags::NX;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fli_constants_are_the_specifications() {
        assert_eq!(f64::from_bits(fli_d(0)), -1.0);
        assert_eq!(fli_d(1), f64::MIN_POSITIVE.to_bits());
        assert_eq!(fli_s(1), f32::MIN_POSITIVE.to_bits());
        assert_eq!(f32::from_bits(fli_s(2)), 2f32.powi(-16));
        assert_eq!(f64::from_bits(fli_d(28)), 32768.0);
        assert_eq!(fli_s(30), f32::INFINITY.to_bits());
        assert_eq!(fli_d(31), CANONICAL_NAN_64);
    }

    #[test]
    fn rounding_to_integers() {
        let d = |x: f64| x.to_bits();
        let mut fl = 0;
        assert_eq!(f64_round(d(2.5), Rm::Rne, false, &mut fl), d(2.0));
        assert_eq!(f64_round(d(2.5), Rm::Rmm, false, &mut fl), d(3.0));
        assert_eq!(f64_round(d(-0.3), Rm::Rne, false, &mut fl), d(-0.0));
        assert_eq!(fl, 0);
        assert_eq!(f64_round(d(-0.3), Rm::Rdn, true, &mut fl), d(-1.0));
        assert_eq!(fl, flags::NX);
        let mut fl = 0;
        assert_eq!(
            f32_round(1.5f32.to_bits(), Rm::Rup, true, &mut fl),
            2f32.to_bits()
        );
        assert_eq!(f64_round(d(1e300), Rm::Rne, true, &mut fl), d(1e300));
        assert_eq!(
            f64_round(0x7ff0_0000_0000_0001, Rm::Rne, false, &mut fl),
            CANONICAL_NAN_64
        );
        assert_eq!(fl, flags::NX | flags::NV);
    }

    #[test]
    fn modular_conversion_is_to_int32() {
        let c = |x: f64| {
            let mut fl = 0;
            (f64_cvtmod_w(x.to_bits(), &mut fl), fl)
        };
        assert_eq!(c(1.9), (1, flags::NX));
        assert_eq!(c(-1.9), (-1, flags::NX));
        assert_eq!(c(2147483648.0), (i32::MIN, flags::NV));
        assert_eq!(c(-2147483648.0), (i32::MIN, 0));
        assert_eq!(c(4294967297.5), (1, flags::NV));
        assert_eq!(c(f64::NAN), (0, flags::NV));
        assert_eq!(c(f64::INFINITY), (0, flags::NV));
        assert_eq!(c(1e300), (0, flags::NV));
        assert_eq!(c(-0.0), (0, 0));
        assert_eq!(c(5e-324), (0, flags::NX));
    }

    #[test]
    fn minimum_maximum_and_quiet_comparisons() {
        let mut fl = 0;
        let q = CANONICAL_NAN_64;
        let one = 1f64.to_bits();
        assert_eq!(f64_minm(q, one, &mut fl), q);
        assert_eq!(fl, 0);
        assert_eq!(f64_maxm((-0f64).to_bits(), 0f64.to_bits(), &mut fl), 0);
        assert!(!f64_leq(q, one, &mut fl) && !f64_ltq(one, q, &mut fl));
        assert_eq!(fl, 0);
        assert!(!f32_ltq(0x7f80_0001, 0, &mut fl));
        assert_eq!(fl, flags::NV);
    }
}
