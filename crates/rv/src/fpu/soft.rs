//! The exact slow path: an integer-only IEEE 754-2008 soft-float, generic over the binary32 and
//! binary64 formats, with RISC-V F/D conventions (canonical NaNs, tininess after rounding,
//! saturating float-to-integer conversions).
//!
//! Every operation first computes its exact result as `(sign, exponent, significand)` with the
//! value `sig × 2^exp` in a `u128`, possibly with a *sticky* ("jammed") least significant bit, and
//! then rounds it exactly once in [`round_pack`]. Nothing here touches the host FPU, so the
//! results do not depend on the host's rounding mode or flush-to-zero settings.
//!
//! Both formats are handled with the bits in a `u64` (binary32 patterns zero-extended); the
//! public `f32_*`/`f64_*` wrappers live in [`super::slow`].

use super::{flags, Rm};

/// The parameters of one IEEE binary interchange format.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Format {
    /// Trailing significand field width (23 or 52).
    frac_bits: u32,
    /// Exponent field width (8 or 11).
    exp_bits: u32,
}

/// binary32.
pub(crate) const F32: Format = Format {
    frac_bits: 23,
    exp_bits: 8,
};
/// binary64.
pub(crate) const F64: Format = Format {
    frac_bits: 52,
    exp_bits: 11,
};

/// Position of the most significant bit of a normalised [`Finite`] significand.
const SIG_MSB: u32 = 62;
/// Position of the most significant bit of the addends in [`add_core`].
const ADD_MSB: u32 = 125;

impl Format {
    /// Precision in bits, hidden bit included (24 or 53).
    const fn precision(self) -> u32 {
        self.frac_bits + 1
    }
    /// Exponent bias (127 or 1023); also the largest unbiased exponent `emax`.
    const fn bias(self) -> i32 {
        (1 << (self.exp_bits - 1)) - 1
    }
    /// Smallest normal unbiased exponent `emin = 1 - emax`.
    const fn emin(self) -> i32 {
        1 - self.bias()
    }
    /// The all-ones exponent field value.
    const fn exp_field_max(self) -> u64 {
        (1 << self.exp_bits) - 1
    }
    const fn sign_bit(self) -> u64 {
        1 << (self.exp_bits + self.frac_bits)
    }
    const fn frac_mask(self) -> u64 {
        (1 << self.frac_bits) - 1
    }
    const fn quiet_bit(self) -> u64 {
        1 << (self.frac_bits - 1)
    }
    /// The RISC-V canonical NaN: positive, quiet, payload zero.
    pub(crate) const fn canonical_nan(self) -> u64 {
        (self.exp_field_max() << self.frac_bits) | self.quiet_bit()
    }
    const fn sign(self, negative: bool) -> u64 {
        if negative {
            self.sign_bit()
        } else {
            0
        }
    }
    const fn zero(self, negative: bool) -> u64 {
        self.sign(negative)
    }
    const fn inf(self, negative: bool) -> u64 {
        self.sign(negative) | (self.exp_field_max() << self.frac_bits)
    }
    /// Largest finite magnitude with the given sign.
    const fn max_finite(self, negative: bool) -> u64 {
        self.inf(negative) - 1
    }
    fn exp_field(self, bits: u64) -> u64 {
        (bits >> self.frac_bits) & self.exp_field_max()
    }
    fn is_negative(self, bits: u64) -> bool {
        bits & self.sign_bit() != 0
    }
    pub(crate) fn is_nan(self, bits: u64) -> bool {
        self.exp_field(bits) == self.exp_field_max() && bits & self.frac_mask() != 0
    }
    pub(crate) fn is_snan(self, bits: u64) -> bool {
        self.is_nan(bits) && bits & self.quiet_bit() == 0
    }

    /// Splits a bit pattern into its class, and for finite non-zero values a normalised
    /// significand with its most significant bit at [`SIG_MSB`].
    #[inline]
    fn decode(self, bits: u64) -> Decoded {
        let negative = self.is_negative(bits);
        let field = self.exp_field(bits);
        let frac = bits & self.frac_mask();
        if field == self.exp_field_max() {
            if frac == 0 {
                Decoded::Inf(negative)
            } else {
                Decoded::Nan
            }
        } else if field == 0 && frac == 0 {
            Decoded::Zero(negative)
        } else {
            // value = sig × 2^exp with sig an integer (hidden bit included for normals).
            let (sig, exp) = if field == 0 {
                (frac, self.emin() - self.frac_bits as i32)
            } else {
                (
                    frac | (1 << self.frac_bits),
                    field as i32 - self.bias() - self.frac_bits as i32,
                )
            };
            let shift = sig.leading_zeros() - (63 - SIG_MSB);
            Decoded::Finite(Finite {
                negative,
                exp: exp - shift as i32,
                sig: sig << shift,
            })
        }
    }
}

/// A finite non-zero value `(-1)^negative × sig × 2^exp` with `2^62 <= sig < 2^63`.
#[derive(Clone, Copy, Debug)]
struct Finite {
    negative: bool,
    exp: i32,
    sig: u64,
}

/// The class of an operand, as far as the arithmetic cares.
#[derive(Clone, Copy, Debug)]
enum Decoded {
    /// Any NaN (whether it signals is checked separately on the raw bits).
    Nan,
    Inf(bool),
    Zero(bool),
    Finite(Finite),
}

/// Shifts right by `d`, OR-ing every bit shifted out into the result's least significant bit.
fn shift_right_jam(x: u128, d: u32) -> u128 {
    if d == 0 {
        x
    } else if d >= 128 {
        u128::from(x != 0)
    } else {
        (x >> d) | u128::from(x & ((1u128 << d) - 1) != 0)
    }
}

/// Rounds `sig × 2^-shift` to an integer in mode `rm` (for a value of sign `negative`),
/// returning it and whether any non-zero bit was discarded. A `shift` of 128 or more makes
/// all of `sig` fraction. The result may carry into bit `128 - shift` (a new power of two).
#[inline]
fn round_shift(sig: u128, shift: u32, negative: bool, rm: Rm) -> (u128, bool) {
    let (q, above_half, tie, inexact) = if shift == 0 {
        (sig, false, false, false)
    } else if shift > 128 {
        // Everything is strictly below half of the rounding quantum.
        (0, false, false, sig != 0)
    } else {
        let q = if shift == 128 { 0 } else { sig >> shift };
        let rem = if shift == 128 {
            sig
        } else {
            sig & ((1u128 << shift) - 1)
        };
        let half = 1u128 << (shift - 1);
        (q, rem > half, rem == half, rem != 0)
    };
    let increment = match rm {
        Rm::Rne => above_half || (tie && q & 1 == 1),
        Rm::Rtz => false,
        Rm::Rdn => inexact && negative,
        Rm::Rup => inexact && !negative,
        Rm::Rmm => above_half || tie,
    };
    (q + u128::from(increment), inexact)
}

/// Rounds the exact value `(-1)^negative × sig × 2^exp` (`sig != 0`) to the format in mode `rm`,
/// raising OF/UF/NX as IEEE 754-2008 with tininess detected after rounding (as RISC-V requires),
/// and returns the bit pattern.
///
/// Contract: if `sig`'s least significant bit is a jammed sticky bit (standing for "some
/// non-zero bits below"), `sig` has at least `precision + 2` significant bits, so that the
/// sticky bit lies strictly below the half-quantum bit of every rounding done here. With
/// that, `rem > half`, `rem == half` and `rem != 0` are decided exactly as on the unbounded
/// value: the jammed bit is odd while `half` is even (see `add_core` for why jamming the
/// smaller addend keeps this true).
#[inline]
fn round_pack(fmt: Format, negative: bool, exp: i32, sig: u128, rm: Rm, fl: &mut u8) -> u64 {
    debug_assert!(sig != 0);
    let p = fmt.precision();
    let msb = 127 - sig.leading_zeros();
    // Unbounded exponent of the leading bit.
    let lead = exp + msb as i32;
    // 1. Round to p bits with an unbounded exponent range.
    let (mut q, mut q_exp, inexact_unbounded) = if msb >= p - 1 {
        let shift = msb - (p - 1);
        let (q, inexact) = round_shift(sig, shift, negative, rm);
        (q, exp + shift as i32, inexact)
    } else {
        (sig << (p - 1 - msb), exp - (p - 1 - msb) as i32, false)
    };
    if q >> p != 0 {
        // Rounded up to the next power of two.
        q >>= 1;
        q_exp += 1;
    }
    let rounded_lead = q_exp + (p - 1) as i32;
    if rounded_lead > fmt.bias() {
        *fl |= flags::OF | flags::NX;
        let to_inf = match rm {
            Rm::Rne | Rm::Rmm => true,
            Rm::Rtz => false,
            Rm::Rdn => negative,
            Rm::Rup => !negative,
        };
        return if to_inf {
            fmt.inf(negative)
        } else {
            fmt.max_finite(negative)
        };
    }
    if lead >= fmt.emin() {
        // Normal result: biased exponent >= 1.
        if inexact_unbounded {
            *fl |= flags::NX;
        }
        let field = (rounded_lead + fmt.bias()) as u64;
        return fmt.sign(negative) | (field << fmt.frac_bits) | (q as u64 & fmt.frac_mask());
    }
    // 2. The exact value is below 2^emin: round again, at the subnormal quantum
    // 2^(emin - p + 1). The result is tiny iff the p-bit rounding above stayed below 2^emin
    // (tininess after rounding); UF needs tiny AND inexact.
    let tiny = rounded_lead < fmt.emin();
    let quantum_exp = fmt.emin() - (p - 1) as i32;
    let (q, inexact) = if exp >= quantum_exp {
        // Few significant bits (e.g. after massive cancellation): already a multiple of the
        // quantum, so exact; q < 2^(p-1) as the value is below 2^emin.
        (sig << (exp - quantum_exp) as u32, false)
    } else {
        round_shift(sig, (quantum_exp - exp) as u32, negative, rm)
    };
    if inexact {
        *fl |= flags::NX;
        if tiny {
            *fl |= flags::UF;
        }
    }
    // q <= 2^(p-1); q == 2^(p-1) encodes the smallest normal, as it should.
    fmt.sign(negative) | q as u64
}

/// Sign of an exact zero sum of operands with opposite signs (IEEE 754-2008 §6.3).
fn exact_zero_sign(rm: Rm) -> bool {
    rm == Rm::Rdn
}

/// Adds two non-zero values `(-1)^sa × a × 2^ea` and `(-1)^sb × b × 2^eb`, each with its most
/// significant bit at [`ADD_MSB`] and with a zero least significant bit, and rounds once.
///
/// The addend with the smaller exponent is shifted right with jamming. The jam is exact for
/// rounding: when bits are lost, the shifted addend `b'` is odd while `a` is even, so
/// `a ± b'` is odd and the true sum lies strictly between its even neighbours — the sticky
/// convention of [`round_pack`]. Bits are lost only when `d > 125 - 106 + 1`, and then the
/// sum is at least `2^125 - 2^106 > 2^124`, far more than `precision + 2` bits.
#[allow(clippy::too_many_arguments)]
#[inline]
fn add_core(
    fmt: Format,
    sa: bool,
    ea: i32,
    a: u128,
    sb: bool,
    eb: i32,
    b: u128,
    rm: Rm,
    fl: &mut u8,
) -> u64 {
    let ((s_big, e_big, big), (s_small, e_small, small)) = if ea >= eb {
        ((sa, ea, a), (sb, eb, b))
    } else {
        ((sb, eb, b), (sa, ea, a))
    };
    let d = (e_big - e_small) as u32;
    let small = shift_right_jam(small, d);
    if s_big == s_small {
        // < 2^127: no overflow.
        return round_pack(fmt, s_big, e_big, big + small, rm, fl);
    }
    let (negative, diff) = if big >= small {
        (s_big, big - small)
    } else {
        // Only possible with d == 0 (equal exponents, exact).
        (s_small, small - big)
    };
    if diff == 0 {
        return fmt.zero(exact_zero_sign(rm));
    }
    round_pack(fmt, negative, e_big, diff, rm, fl)
}

/// Raises NV if any operand is a signalling NaN, and returns the canonical NaN.
fn nan_result(fmt: Format, operands: &[u64], fl: &mut u8) -> u64 {
    if operands.iter().any(|&x| fmt.is_snan(x)) {
        *fl |= flags::NV;
    }
    fmt.canonical_nan()
}

/// `a + b`.
#[inline]
pub(crate) fn add(fmt: Format, a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    match (fmt.decode(a), fmt.decode(b)) {
        (Decoded::Nan, _) | (_, Decoded::Nan) => nan_result(fmt, &[a, b], fl),
        (Decoded::Inf(x), Decoded::Inf(y)) => {
            if x == y {
                fmt.inf(x)
            } else {
                *fl |= flags::NV;
                fmt.canonical_nan()
            }
        }
        (Decoded::Inf(x), _) | (_, Decoded::Inf(x)) => fmt.inf(x),
        (Decoded::Zero(x), Decoded::Zero(y)) => {
            fmt.zero(if x == y { x } else { exact_zero_sign(rm) })
        }
        // x + 0 = x exactly, and x is representable.
        (Decoded::Zero(_), Decoded::Finite(_)) => b,
        (Decoded::Finite(_), Decoded::Zero(_)) => a,
        (Decoded::Finite(x), Decoded::Finite(y)) => {
            let up = ADD_MSB - SIG_MSB;
            add_core(
                fmt,
                x.negative,
                x.exp - up as i32,
                u128::from(x.sig) << up,
                y.negative,
                y.exp - up as i32,
                u128::from(y.sig) << up,
                rm,
                fl,
            )
        }
    }
}

/// `a - b`, as `a + (-b)` (negating a NaN is harmless: NaN results are canonical anyway).
#[inline]
pub(crate) fn sub(fmt: Format, a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    add(fmt, a, b ^ fmt.sign_bit(), rm, fl)
}

/// `a × b`.
#[inline]
pub(crate) fn mul(fmt: Format, a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    let negative = fmt.is_negative(a) != fmt.is_negative(b);
    match (fmt.decode(a), fmt.decode(b)) {
        (Decoded::Nan, _) | (_, Decoded::Nan) => nan_result(fmt, &[a, b], fl),
        (Decoded::Inf(_), Decoded::Zero(_)) | (Decoded::Zero(_), Decoded::Inf(_)) => {
            *fl |= flags::NV;
            fmt.canonical_nan()
        }
        (Decoded::Inf(_), _) | (_, Decoded::Inf(_)) => fmt.inf(negative),
        (Decoded::Zero(_), _) | (_, Decoded::Zero(_)) => fmt.zero(negative),
        (Decoded::Finite(x), Decoded::Finite(y)) => {
            // Exact: both < 2^63, product < 2^126.
            let sig = u128::from(x.sig) * u128::from(y.sig);
            round_pack(fmt, negative, x.exp + y.exp, sig, rm, fl)
        }
    }
}

/// `a / b`.
#[inline]
pub(crate) fn div(fmt: Format, a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    let negative = fmt.is_negative(a) != fmt.is_negative(b);
    match (fmt.decode(a), fmt.decode(b)) {
        (Decoded::Nan, _) | (_, Decoded::Nan) => nan_result(fmt, &[a, b], fl),
        (Decoded::Inf(_), Decoded::Inf(_)) | (Decoded::Zero(_), Decoded::Zero(_)) => {
            *fl |= flags::NV;
            fmt.canonical_nan()
        }
        (Decoded::Inf(_), _) => fmt.inf(negative),
        (_, Decoded::Inf(_)) | (Decoded::Zero(_), _) => fmt.zero(negative),
        (Decoded::Finite(_), Decoded::Zero(_)) => {
            *fl |= flags::DZ;
            fmt.inf(negative)
        }
        (Decoded::Finite(x), Decoded::Finite(y)) => {
            // num < 2^127; the quotient is in (2^63, 2^65): at least 64 bits, so jamming the
            // remainder into its LSB meets round_pack's contract.
            let num = u128::from(x.sig) << 64;
            let den = u128::from(y.sig);
            let q = num / den;
            let sticky = u128::from(num % den != 0);
            round_pack(fmt, negative, x.exp - y.exp - 64, q | sticky, rm, fl)
        }
    }
}

/// `√a`.
#[inline]
pub(crate) fn sqrt(fmt: Format, a: u64, rm: Rm, fl: &mut u8) -> u64 {
    match fmt.decode(a) {
        Decoded::Nan => nan_result(fmt, &[a], fl),
        // √(±0) = ±0.
        Decoded::Zero(_) => a,
        Decoded::Inf(false) => a,
        Decoded::Inf(true) | Decoded::Finite(Finite { negative: true, .. }) => {
            *fl |= flags::NV;
            fmt.canonical_nan()
        }
        Decoded::Finite(x) => {
            // Make the exponent even, keeping the radicand below 2^127 and above 2^124, so
            // its integer square root has at least 63 bits (>= precision + 2 with the jam).
            let (m, e) = if x.exp % 2 == 0 {
                (u128::from(x.sig) << 64, x.exp - 64)
            } else {
                (u128::from(x.sig) << 63, x.exp - 63)
            };
            let r = m.isqrt();
            let sticky = u128::from(r * r != m);
            round_pack(fmt, false, e / 2, r | sticky, rm, fl)
        }
    }
}

/// Which of the four RISC-V fused multiply-add forms to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FmaKind {
    /// `a×b + c` (FMADD)
    MulAdd,
    /// `a×b − c` (FMSUB)
    MulSub,
    /// `−(a×b) + c` (FNMSUB)
    NegMulAdd,
    /// `−(a×b) − c` (FNMADD)
    NegMulSub,
}

/// Fused `±(a × b) ± c` with a single rounding (see [`FmaKind`]).
#[inline]
pub(crate) fn fma(fmt: Format, kind: FmaKind, a: u64, b: u64, c: u64, rm: Rm, fl: &mut u8) -> u64 {
    let negate_product = matches!(kind, FmaKind::NegMulAdd | FmaKind::NegMulSub);
    let negate_addend = matches!(kind, FmaKind::MulSub | FmaKind::NegMulSub);
    let c = if negate_addend { c ^ fmt.sign_bit() } else { c };
    let ps = (fmt.is_negative(a) != fmt.is_negative(b)) != negate_product;
    let (da, db, dc) = (fmt.decode(a), fmt.decode(b), fmt.decode(c));
    let inf_times_zero = matches!(
        (da, db),
        (Decoded::Inf(_), Decoded::Zero(_)) | (Decoded::Zero(_), Decoded::Inf(_))
    );
    // RISC-V: ∞ × 0 raises NV even when the addend is a quiet NaN.
    if inf_times_zero {
        *fl |= flags::NV;
    }
    if matches!(da, Decoded::Nan) || matches!(db, Decoded::Nan) || matches!(dc, Decoded::Nan) {
        return nan_result(fmt, &[a, b, c], fl);
    }
    if inf_times_zero {
        return fmt.canonical_nan();
    }
    let product_inf = matches!(da, Decoded::Inf(_)) || matches!(db, Decoded::Inf(_));
    match (product_inf, dc) {
        (true, Decoded::Inf(cs)) if cs != ps => {
            *fl |= flags::NV;
            return fmt.canonical_nan();
        }
        (true, _) => return fmt.inf(ps),
        (false, Decoded::Inf(cs)) => return fmt.inf(cs),
        _ => {}
    }
    let product = match (da, db) {
        (Decoded::Finite(x), Decoded::Finite(y)) => Some((x, y)),
        _ => None,
    };
    match (product, dc) {
        (None, Decoded::Zero(cs)) => fmt.zero(if ps == cs { ps } else { exact_zero_sign(rm) }),
        // 0 + c = c exactly.
        (None, _) => c,
        (Some((x, y)), Decoded::Zero(_)) => {
            // A non-zero product plus zero is the product, rounded once.
            let sig = u128::from(x.sig) * u128::from(y.sig);
            round_pack(fmt, ps, x.exp + y.exp, sig, rm, fl)
        }
        (Some((x, y)), Decoded::Finite(z)) => {
            // The product is in [2^124, 2^126); move its MSB to ADD_MSB. At most
            // 2 × 53 = 106 bits are significant, so its LSB stays zero.
            let mut sig = u128::from(x.sig) * u128::from(y.sig);
            let mut exp = x.exp + y.exp;
            let lz = sig.leading_zeros() - (127 - ADD_MSB);
            sig <<= lz;
            exp -= lz as i32;
            let up = ADD_MSB - SIG_MSB;
            add_core(
                fmt,
                ps,
                exp,
                sig,
                z.negative,
                z.exp - up as i32,
                u128::from(z.sig) << up,
                rm,
                fl,
            )
        }
        // NaN and infinite addends were handled above.
        (Some(_), Decoded::Nan | Decoded::Inf(_)) => fmt.canonical_nan(),
    }
}

/// `-0 < +0` total order key for non-NaN values: larger key = larger value.
fn order_key(fmt: Format, x: u64) -> u64 {
    if fmt.is_negative(x) {
        !x & (fmt.sign_bit() | (fmt.sign_bit() - 1))
    } else {
        x | fmt.sign_bit()
    }
}

/// RISC-V FMIN (`is_max == false`) / FMAX (`true`), version 2.2 and later semantics: IEEE
/// 754-2019 minimumNumber/maximumNumber, with `-0 < +0`.
pub(crate) fn min_max(fmt: Format, a: u64, b: u64, is_max: bool, fl: &mut u8) -> u64 {
    if fmt.is_snan(a) || fmt.is_snan(b) {
        *fl |= flags::NV;
    }
    match (fmt.is_nan(a), fmt.is_nan(b)) {
        (true, true) => fmt.canonical_nan(),
        (true, false) => b,
        (false, true) => a,
        (false, false) => {
            let a_larger = order_key(fmt, a) > order_key(fmt, b);
            if a_larger == is_max {
                a
            } else {
                b
            }
        }
    }
}

/// Whether `x` is ±0.
fn is_zero(fmt: Format, x: u64) -> bool {
    x & !fmt.sign_bit() == 0
}

/// FEQ: quiet comparison (NV only for signalling NaNs).
pub(crate) fn eq(fmt: Format, a: u64, b: u64, fl: &mut u8) -> bool {
    if fmt.is_nan(a) || fmt.is_nan(b) {
        if fmt.is_snan(a) || fmt.is_snan(b) {
            *fl |= flags::NV;
        }
        return false;
    }
    a == b || (is_zero(fmt, a) && is_zero(fmt, b))
}

/// FLT (`or_equal == false`) / FLE (`true`): signalling comparisons (NV for any NaN).
pub(crate) fn lt_le(fmt: Format, a: u64, b: u64, or_equal: bool, fl: &mut u8) -> bool {
    if fmt.is_nan(a) || fmt.is_nan(b) {
        *fl |= flags::NV;
        return false;
    }
    if is_zero(fmt, a) && is_zero(fmt, b) {
        return or_equal;
    }
    let (ka, kb) = (order_key(fmt, a), order_key(fmt, b));
    if or_equal {
        ka <= kb
    } else {
        ka < kb
    }
}

/// FCLASS: a one-hot 10-bit mask.
pub(crate) fn classify(fmt: Format, a: u64) -> u32 {
    let negative = fmt.is_negative(a);
    let field = fmt.exp_field(a);
    let frac = a & fmt.frac_mask();
    let bit = if field == fmt.exp_field_max() {
        if frac == 0 {
            if negative {
                0
            } else {
                7
            }
        } else if a & fmt.quiet_bit() == 0 {
            8
        } else {
            9
        }
    } else if field == 0 {
        match (frac == 0, negative) {
            (true, true) => 3,
            (true, false) => 4,
            (false, true) => 2,
            (false, false) => 5,
        }
    } else if negative {
        1
    } else {
        6
    };
    1 << bit
}

/// The integer formats of the FCVT instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IntFormat {
    /// `W`: i32
    I32,
    /// `WU`: u32
    U32,
    /// `L`: i64
    I64,
    /// `LU`: u64
    U64,
}

impl IntFormat {
    const fn min(self) -> i128 {
        match self {
            IntFormat::I32 => i32::MIN as i128,
            IntFormat::I64 => i64::MIN as i128,
            IntFormat::U32 | IntFormat::U64 => 0,
        }
    }
    const fn max(self) -> i128 {
        match self {
            IntFormat::I32 => i32::MAX as i128,
            IntFormat::U32 => u32::MAX as i128,
            IntFormat::I64 => i64::MAX as i128,
            IntFormat::U64 => u64::MAX as i128,
        }
    }
}

/// FCVT.{W,WU,L,LU}.{S,D}: rounds to an integer, saturating as the RISC-V table says: NaN and
/// too-large values give the maximum, too-small values the minimum, both raising NV (and not
/// NX); otherwise NX if the rounding was inexact. Returns the mathematical value.
#[inline]
pub(crate) fn to_int(fmt: Format, a: u64, to: IntFormat, rm: Rm, fl: &mut u8) -> i128 {
    let (negative, magnitude, inexact) = match fmt.decode(a) {
        Decoded::Nan => {
            *fl |= flags::NV;
            return to.max();
        }
        Decoded::Inf(negative) => {
            *fl |= flags::NV;
            return if negative { to.min() } else { to.max() };
        }
        Decoded::Zero(_) => return 0,
        Decoded::Finite(x) => {
            if x.exp >= 0 {
                // sig >= 2^62, so the value is >= 2^(62 + exp); beyond 2^66 is out of range
                // for every format (and the shift would overflow).
                if x.exp > 4 {
                    *fl |= flags::NV;
                    return if x.negative { to.min() } else { to.max() };
                }
                (x.negative, u128::from(x.sig) << x.exp, false)
            } else {
                let shift = x.exp.unsigned_abs();
                let (q, inexact) = round_shift(u128::from(x.sig), shift, x.negative, rm);
                (x.negative, q, inexact)
            }
        }
    };
    // magnitude < 2^67 here.
    let value = if negative {
        -(magnitude as i128)
    } else {
        magnitude as i128
    };
    if value < to.min() || value > to.max() {
        *fl |= flags::NV;
        return if negative { to.min() } else { to.max() };
    }
    if inexact {
        *fl |= flags::NX;
    }
    value
}

/// FCVT.{S,D}.{W,WU,L,LU}: rounds the integer `x` (any value of the source format) to `fmt`.
#[inline]
pub(crate) fn from_int(fmt: Format, x: i128, rm: Rm, fl: &mut u8) -> u64 {
    if x == 0 {
        return fmt.zero(false);
    }
    round_pack(fmt, x < 0, 0, x.unsigned_abs(), rm, fl)
}

/// FCVT between the formats: `from` → `to`. Exact when widening; NaN results are canonical
/// and a signalling NaN input raises NV.
#[inline]
pub(crate) fn convert(from: Format, to: Format, a: u64, rm: Rm, fl: &mut u8) -> u64 {
    match from.decode(a) {
        Decoded::Nan => {
            if from.is_snan(a) {
                *fl |= flags::NV;
            }
            to.canonical_nan()
        }
        Decoded::Inf(negative) => to.inf(negative),
        Decoded::Zero(negative) => to.zero(negative),
        Decoded::Finite(x) => round_pack(to, x.negative, x.exp, u128::from(x.sig), rm, fl),
    }
}
