//! The round-to-nearest-even fast path: host floating point plus a cheap, *proved* exactness
//! test, for operands and results where that test is known to be exact.
//!
//! Each function returns `Some((bits, flags))` when it can decide both the correctly rounded
//! result and the exception flags, and `None` otherwise (NaN/infinite operands, overflow,
//! results that may be tiny, or FMA operands so small that an error term could underflow); the
//! caller then runs the integer slow path in [`super::soft`].
//!
//! Assumptions about the host, guaranteed by Rust on every target with SSE2 or a
//! non-x87 FPU: `f32`/`f64` arithmetic, `sqrt` and `mul_add` are correctly rounded IEEE 754
//! binary32/binary64 operations in round-to-nearest-even, with subnormals (no flush-to-zero),
//! and `as` casts between float types round to nearest even. The only flags these paths can
//! produce are NX (every other flag is routed to the slow path).
//!
//! Results of magnitude exactly `2^emin` (the smallest normal) also go to the slow path:
//! RISC-V detects tininess after rounding *to the format's precision with an unbounded
//! exponent*, so a value just below `2^emin` that rounds up to it in the format can still be
//! tiny (e.g. `2^-126 × (1 − 2^-24)` in binary32 raises UF). Any result strictly above
//! `2^emin` comes from an exact value above `2^emin`, and so is never tiny.
//!
//! Notation in the proofs: `RN` is rounding to nearest even, `ex` the exponent of the leading
//! bit of `x` (`2^ex <= |x| < 2^(ex+1)`), and the *quantum* of a float is the weight of its
//! last significand bit, at least `2^(ex-52)` for binary64 (subnormals included, whose
//! quantum is `2^-1074`).

use super::flags::NX;

fn nx(inexact: bool) -> u8 {
    if inexact {
        NX
    } else {
        0
    }
}

/// `a + b` (binary64, or binary32 through [`add32`]).
///
/// With `s = RN(a + b)`: if `|a| >= |b|`, `s - a` is computed exactly (the Fast2Sum lemma,
/// Dekker 1971; it holds with subnormals, and cannot overflow since it is about `b`). Hence:
/// if the sum is exact, `s - a == b` and `s - b == a` both hold (exact representable
/// differences); if it is inexact, the test with the larger operand subtracted first compares
/// the exact `s - a != b` and fails. So `exact ⇔ (s - a == b && s - b == a)` — the other
/// test may round or even overflow, but only the first one decides. A result that is zero is
/// always exact (a non-zero exact sum is a multiple of the smallest subnormal, so it does not
/// round to zero), and subnormal results go to the slow path for the UF decision.
#[inline]
pub(crate) fn add64(a: u64, b: u64) -> Option<(u64, u8)> {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    if !(x.is_finite() && y.is_finite()) {
        return None;
    }
    let s = x + y;
    if s == 0.0 {
        return Some((s.to_bits(), 0));
    }
    if !(s.abs() > f64::MIN_POSITIVE && s.abs() < f64::INFINITY) {
        return None;
    }
    let exact = s - x == y && s - y == x;
    Some((s.to_bits(), nx(!exact)))
}

/// binary32 `a + b`: the same argument as [`add64`], in binary32.
#[inline]
pub(crate) fn add32(a: u32, b: u32) -> Option<(u32, u8)> {
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    if !(x.is_finite() && y.is_finite()) {
        return None;
    }
    let s = x + y;
    if s == 0.0 {
        return Some((s.to_bits(), 0));
    }
    if !(s.abs() > f32::MIN_POSITIVE && s.abs() < f32::INFINITY) {
        return None;
    }
    let exact = s - x == y && s - y == x;
    Some((s.to_bits(), nx(!exact)))
}

/// The odd part of the integer significand of a non-zero finite binary64 (hidden bit
/// included for normals): `|x| = odd × 2^k` for some integer `k`.
#[inline]
fn odd_significand(bits: u64) -> u128 {
    let frac = bits & ((1 << 52) - 1);
    let sig = if bits & (0x7ff << 52) == 0 {
        frac
    } else {
        frac | (1 << 52)
    };
    u128::from(sig >> sig.trailing_zeros())
}

/// `a × b`.
///
/// Exactness by odd parts: with `p = RN(ab)` normal, `ab` is exact iff `odd(a)·odd(b) ==
/// odd(p)`. (⇒) `p = ab`. (⇐) the identity gives `p = ab·2^k` for an integer `k`, while
/// `|p − ab| <= 2^-53 |ab|` for a normal `p`, so `2^k ∈ [1 − 2^-53, 1 + 2^-53]` and `k = 0`.
/// The products are below `2^106`, exact in `u128`. A zero operand gives an exact (signed)
/// zero; products that may be tiny or that overflow take the slow path.
#[inline]
pub(crate) fn mul64(a: u64, b: u64) -> Option<(u64, u8)> {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    if !(x.is_finite() && y.is_finite()) {
        return None;
    }
    let p = x * y;
    if x == 0.0 || y == 0.0 {
        return Some((p.to_bits(), 0));
    }
    if !(p.abs() > f64::MIN_POSITIVE && p.abs() < f64::INFINITY) {
        return None;
    }
    let pb = p.to_bits();
    let exact = odd_significand(a) * odd_significand(b) == odd_significand(pb);
    Some((pb, nx(!exact)))
}

/// binary32 `a × b`: the product of two 24-bit significands has at most 48 bits, so
/// `p = a × b` in binary64 is exact (no binary32 value is anywhere near binary64's range
/// limits), and `p as f32` rounds it once. `exact ⇔ (r as f64) == p`.
#[inline]
pub(crate) fn mul32(a: u32, b: u32) -> Option<(u32, u8)> {
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    if !(x.is_finite() && y.is_finite()) {
        return None;
    }
    let p = f64::from(x) * f64::from(y);
    let r = p as f32;
    if p == 0.0 {
        return Some((r.to_bits(), 0));
    }
    if !(r.abs() > f32::MIN_POSITIVE && r.abs() < f32::INFINITY) {
        return None;
    }
    Some((r.to_bits(), nx(f64::from(r) != p)))
}

/// `a / b`.
///
/// Exactness by odd parts, as in [`mul64`]: with `q = RN(a/b)` normal, the division is exact
/// iff `odd(q)·odd(b) == odd(a)` (the identity means `qb = a·2^k`, and `q` is within a
/// relative `2^-53` of `a/b`, so `k = 0`). Zero dividends give exact zeros; zero divisors
/// (DZ/NV) and quotients that may be tiny or that overflow take the slow path.
#[inline]
pub(crate) fn div64(a: u64, b: u64) -> Option<(u64, u8)> {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    if !(x.is_finite() && y.is_finite()) || y == 0.0 {
        return None;
    }
    let q = x / y;
    if x == 0.0 {
        return Some((q.to_bits(), 0));
    }
    if !(q.abs() > f64::MIN_POSITIVE && q.abs() < f64::INFINITY) {
        return None;
    }
    let qb = q.to_bits();
    let exact = odd_significand(qb) * odd_significand(b) == odd_significand(a);
    Some((qb, nx(!exact)))
}

/// binary32 `a / b`: the host binary32 division is correctly rounded; it is exact iff
/// `q × b == a`, and `q × b` is computed exactly in binary64 (48-bit product).
#[inline]
pub(crate) fn div32(a: u32, b: u32) -> Option<(u32, u8)> {
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    if !(x.is_finite() && y.is_finite()) || y == 0.0 {
        return None;
    }
    let q = x / y;
    if x == 0.0 {
        return Some((q.to_bits(), 0));
    }
    if !(q.abs() > f32::MIN_POSITIVE && q.abs() < f32::INFINITY) {
        return None;
    }
    let exact = f64::from(q) * f64::from(y) == f64::from(x);
    Some((q.to_bits(), nx(!exact)))
}

/// `√a`.
///
/// Exactness by odd parts: with `s = RN(√a)` (always normal for a positive finite `a`, even
/// a subnormal one), the root is exact iff `odd(s)² == odd(a)` (the identity means `s² =
/// a·2^k`, and `s` is within a relative `2^-53` of `√a`, so `k = 0`). `√±0 = ±0` exactly;
/// negative, infinite and NaN operands take the slow path.
#[inline]
pub(crate) fn sqrt64(a: u64) -> Option<(u64, u8)> {
    let x = f64::from_bits(a);
    if x == 0.0 {
        return Some((a, 0));
    }
    if !(x > 0.0 && x < f64::INFINITY) {
        return None;
    }
    let s = x.sqrt();
    let sb = s.to_bits();
    let odd = odd_significand(sb);
    Some((sb, nx(odd * odd != odd_significand(a))))
}

/// binary32 `√a`: the host binary32 square root is correctly rounded and never tiny for a
/// positive finite operand; it is exact iff `s² == a`, and `s²` is exact in binary64.
#[inline]
pub(crate) fn sqrt32(a: u32) -> Option<(u32, u8)> {
    let x = f32::from_bits(a);
    if x == 0.0 {
        return Some((a, 0));
    }
    if !(x > 0.0 && x < f32::INFINITY) {
        return None;
    }
    let s = x.sqrt();
    let exact = f64::from(s) * f64::from(s) == f64::from(x);
    Some((s.to_bits(), nx(!exact)))
}

/// Knuth's TwoSum: `s = RN(a + b)` and `e` with `a + b = s + e` exactly (no overflow here).
#[inline]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let a1 = s - b;
    let b1 = s - a1;
    (s, (a - a1) + (b - b1))
}

/// Fused `a × b + c` in binary64 (the callers fold the RISC-V sign variants into the operand
/// signs, which is exact).
///
/// The value is the host's correctly rounded `mul_add`. Exactness uses ErrFma (Boldo &
/// Muller, "Exact and approximated error of the FMA", IEEE TC 60(2), 2011, Algorithm 5 /
/// Theorem 1): with `r1 = RN(ab + c)`, `(u1, u2)` = TwoProduct(a, b) by FMA, `(α1, α2)` =
/// TwoSum(c, u2), `(β1, β2)` = TwoSum(u1, α1) and `γ = RN(RN(β1 - r1) + β2)`, the rounding
/// error is exactly `ab + c - r1 = γ + α2` (the theorem's `r2 + r3` = Fast2Sum(γ, α2)), for
/// radix 2, `p >= 5`, round to nearest, without underflow or overflow. Then `exact ⇔ γ + α2
/// == 0`, and the float sum `γ + α2` is zero iff the exact one is.
///
/// A zero `c` with normal `a`, `b` is just the product ([`mul64`]). Otherwise the guards make
/// the theorem's hypotheses hold: all three operands normal with
/// `-900 <= ea+eb <= 1000` and `-900 <= ec <= 1000`. Every intermediate value is then an
/// exact multiple of `2^-1004` (the quantum of `ab` or of `c`) and below `2^1004`, so nothing
/// overflows, every error term is representable, and roundings in the subnormal range never
/// happen (a multiple of `2^-1004` that is below `2^-1022` is zero). For the same reason the
/// result is never tiny: `ab + c` is zero (and then `+0`, exact, as the host gives) or at
/// least `2^-1004` in magnitude.
#[inline]
pub(crate) fn fma64(a: u64, b: u64, c: u64) -> Option<(u64, u8)> {
    let (ea, eb, ec) = (
        ((a >> 52) & 0x7ff) as i32,
        ((b >> 52) & 0x7ff) as i32,
        ((c >> 52) & 0x7ff) as i32,
    );
    // Biased exponents: normal operands have fields in 1..=2046.
    let normal = |e: i32| (1..=2046).contains(&e);
    if c << 1 == 0 && normal(ea) && normal(eb) {
        // A zero addend: a×b ± 0 with a×b ≠ 0 is RN(a×b) whatever the zero's sign (only an
        // exact zero sum looks at it), which is the product's fast path.
        return mul64(a, b);
    }
    let eab = ea + eb - 2 * 1023;
    let ecu = ec - 1023;
    if !(normal(ea)
        && normal(eb)
        && normal(ec)
        && (-900..=1000).contains(&eab)
        && (-900..=1000).contains(&ecu))
    {
        return None;
    }
    let (x, y, z) = (f64::from_bits(a), f64::from_bits(b), f64::from_bits(c));
    let r1 = x.mul_add(y, z);
    let u1 = x * y;
    let u2 = x.mul_add(y, -u1);
    let (alpha1, alpha2) = two_sum(z, u2);
    let (beta1, beta2) = two_sum(u1, alpha1);
    let gamma = (beta1 - r1) + beta2;
    Some((r1.to_bits(), nx(gamma + alpha2 != 0.0)))
}

/// Fused `a × b + c` in binary32, computed in binary64 without any host FMA.
///
/// `p = a × b` is exact in binary64 (48 bits). `(s, e)` = TwoSum(p, c) gives `ab + c = s + e`
/// exactly (all values are multiples of `2^-298` and far below `2^1024`, so no under- or
/// overflow). Rounding `s` to binary64 is replaced by rounding to odd (`t` = the neighbour of
/// the exact sum, toward zero from `s` or `s` itself, with its last bit forced to 1 when `e !=
/// 0`), and `RN24(RO53(v)) = RN24(v)` because `53 >= 24 + 2` (Boldo & Melquiond, "Emulation of
/// FMA and correctly rounded sums: proved algorithms using rounding to odd", IEEE TC 2008).
/// The result is exact iff `e == 0` and `s` is a binary32 value.
#[inline]
pub(crate) fn fma32(a: u32, b: u32, c: u32) -> Option<(u32, u8)> {
    let (x, y, z) = (f32::from_bits(a), f32::from_bits(b), f32::from_bits(c));
    if !(x.is_finite() && y.is_finite() && z.is_finite()) {
        return None;
    }
    let p = f64::from(x) * f64::from(y);
    let (s, e) = two_sum(p, f64::from(z));
    if s == 0.0 {
        // Exact cancellation (or zero operands): IEEE signed-zero rules, as the host applies.
        return Some(((s as f32).to_bits(), 0));
    }
    let t = if e == 0.0 {
        s
    } else {
        // |v| < |s| exactly when e and s differ in sign: truncate to the predecessor in
        // magnitude (s is a normal binary64, so decrementing the bits does that), then make
        // the last bit odd.
        let mut bits = s.to_bits();
        if (e < 0.0) != (s < 0.0) {
            bits -= 1;
        }
        f64::from_bits(bits | 1)
    };
    let r = t as f32;
    if !(r.abs() > f32::MIN_POSITIVE && r.abs() < f32::INFINITY) {
        return None;
    }
    Some((r.to_bits(), nx(e != 0.0 || f64::from(r) != s)))
}

/// binary64 → binary32 conversion: the host cast rounds to nearest even; exact iff it
/// converts back to the same value. Tiny, overflowing and non-finite cases take the slow path.
#[inline]
pub(crate) fn f64_to_f32(a: u64) -> Option<(u32, u8)> {
    let x = f64::from_bits(a);
    let r = x as f32;
    if x == 0.0 {
        return Some((r.to_bits(), 0));
    }
    if !(r.abs() > f32::MIN_POSITIVE && r.abs() < f32::INFINITY) {
        return None;
    }
    Some((r.to_bits(), nx(f64::from(r) != x)))
}
