//! IEEE 754-2008 binary32/binary64 arithmetic with the semantics of the RISC-V F and D
//! extensions, as pure functions on bit patterns for the interpreter to call.
//!
//! Every operation takes its operands as raw bits (`u32` for binary32, `u64` for binary64),
//! a static rounding mode [`Rm`] (the caller resolves `DYN` from `frm`), and a `&mut u8` of
//! accumulated exception flags ([`flags`], laid out as `fflags`) that it ORs into. RISC-V
//! specifics, as in the unprivileged ISA chapters "F" and "D":
//!
//! - NaN results are always the canonical NaN ([`CANONICAL_NAN_32`], [`CANONICAL_NAN_64`]);
//!   payloads never propagate. Signalling NaN operands raise NV.
//! - Tininess is detected after rounding; UF is raised only for tiny *and* inexact results.
//! - `∞ × 0` in a fused multiply-add raises NV even when the addend is a quiet NaN.
//! - FMIN/FMAX are IEEE 754-2019 minimumNumber/maximumNumber (ISA 2.2+): `-0 < +0`, one NaN
//!   operand yields the other operand, two yield the canonical NaN.
//! - FCVT to integers saturates: NaN and too-large values give the largest integer, too-small
//!   values the smallest, raising NV (not NX).
//!
//! NaN boxing of binary32 values in the 64-bit `f` registers is the register file's business;
//! [`nan_box`] and [`nan_unbox`] implement the rule.
//!
//! # Design
//!
//! Two paths compute every rounded operation:
//!
//! - a *fast path* (round-to-nearest-even only, ordinary operands) that uses the host's
//!   correctly rounded `f32`/`f64` operations and decides inexactness with error-free
//!   transformations; each trick carries its proof in `fast.rs`;
//! - an exact *slow path*, an integer soft-float (`soft.rs`), used for the other rounding
//!   modes and whenever the fast path cannot decide (special operands, overflow, possibly
//!   tiny results, operands so small that an error term could underflow).
//!
//! The slow path is also public as [`slow`] (hidden from docs) so tests can check the two
//! paths against each other bit for bit and flag for flag.
//!
//! Design constraints: no `unsafe`, no allocation, no global state. The host FPU environment
//! is never changed; the fast path relies on Rust's guarantee of round-to-nearest-even with
//! subnormals, and is compiled out on x87-only targets.
//!
//! # Example
//!
//! ```
//! use outcrop_rv::fpu::{self, flags, Rm};
//! let mut fl = 0u8;
//! // 1/3 in binary64, rounded up.
//! let third = fpu::f64_div(1f64.to_bits(), 3f64.to_bits(), Rm::Rup, &mut fl);
//! assert_eq!(third, (1f64 / 3.0).to_bits() + 1);
//! assert_eq!(fl, flags::NX);
//! // ∞ − ∞ is the canonical NaN and raises NV.
//! let inf = f64::INFINITY.to_bits();
//! assert_eq!(fpu::f64_sub(inf, inf, Rm::Rne, &mut fl), fpu::CANONICAL_NAN_64);
//! assert_eq!(fl, flags::NV | flags::NX);
//! ```

mod fast;
mod zfa;
pub use zfa::{
    f32_leq, f32_ltq, f32_maxm, f32_minm, f32_round, f64_cvtmod_w, f64_leq, f64_ltq, f64_maxm,
    f64_minm, f64_round, fli_d, fli_s,
};
#[doc(hidden)]
pub mod slow;
mod soft;
#[cfg(test)]
mod tests;

/// The accrued exception flags, with the bit positions of `fflags` (and of `fcsr[4:0]`).
pub mod flags {
    /// Invalid operation.
    pub const NV: u8 = 0x10;
    /// Divide by zero.
    pub const DZ: u8 = 0x08;
    /// Overflow.
    pub const OF: u8 = 0x04;
    /// Underflow (tiny after rounding and inexact).
    pub const UF: u8 = 0x02;
    /// Inexact.
    pub const NX: u8 = 0x01;
}

/// A static rounding mode, as encoded in an instruction's `rm` field or in `frm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rm {
    /// Round to nearest, ties to even (`0b000`).
    Rne,
    /// Round towards zero (`0b001`).
    Rtz,
    /// Round down, towards −∞ (`0b010`).
    Rdn,
    /// Round up, towards +∞ (`0b011`).
    Rup,
    /// Round to nearest, ties to max magnitude (`0b100`).
    Rmm,
}

impl Rm {
    /// Decodes a 3-bit rounding-mode field. `5` and `6` are reserved and `7` (`DYN`) must be
    /// resolved by the caller from `frm`, so all three give `None` (as do values above 7).
    pub fn from_bits(b: u32) -> Option<Rm> {
        match b {
            0 => Some(Rm::Rne),
            1 => Some(Rm::Rtz),
            2 => Some(Rm::Rdn),
            3 => Some(Rm::Rup),
            4 => Some(Rm::Rmm),
            _ => None,
        }
    }

    /// The 3-bit encoding of this mode.
    pub fn bits(self) -> u32 {
        match self {
            Rm::Rne => 0,
            Rm::Rtz => 1,
            Rm::Rdn => 2,
            Rm::Rup => 3,
            Rm::Rmm => 4,
        }
    }

    /// All five modes, in encoding order.
    pub const ALL: [Rm; 5] = [Rm::Rne, Rm::Rtz, Rm::Rdn, Rm::Rup, Rm::Rmm];
}

/// The binary32 canonical NaN.
pub const CANONICAL_NAN_32: u32 = 0x7fc0_0000;
/// The binary64 canonical NaN.
pub const CANONICAL_NAN_64: u64 = 0x7ff8_0000_0000_0000;

/// NaN-boxes a binary32 value for a 64-bit `f` register: the upper 32 bits all ones.
#[inline]
pub fn nan_box(a: u32) -> u64 {
    0xffff_ffff_0000_0000 | u64::from(a)
}

/// Reads a binary32 operand from a 64-bit `f` register: a properly NaN-boxed value yields its
/// low 32 bits, anything else the canonical NaN (ISA "NaN Boxing of Narrower Values").
#[inline]
pub fn nan_unbox(r: u64) -> u32 {
    if r >> 32 == 0xffff_ffff {
        r as u32
    } else {
        CANONICAL_NAN_32
    }
}

/// Whether the host's `f32`/`f64` operations are IEEE binary32/binary64 in round-to-nearest-
/// even, as the fast path assumes: true on every Rust target except 32-bit x86 without SSE2,
/// whose x87 unit computes with excess precision (double rounding).
const HOST_FLOATS_ARE_IEEE: bool = !cfg!(all(target_arch = "x86", not(target_feature = "sse2")));

/// Runs `fast` in round-to-nearest-even, falling back to `slow` when it cannot decide.
macro_rules! dispatch {
    ($rm:expr, $flags:expr, $fast:expr, $slow:expr) => {{
        if HOST_FLOATS_ARE_IEEE && $rm == Rm::Rne {
            if let Some((r, f)) = $fast {
                *$flags |= f;
                return r;
            }
        }
        $slow
    }};
}

/// Sign bit of binary32.
const SIGN_32: u32 = 1 << 31;
/// Sign bit of binary64.
const SIGN_64: u64 = 1 << 63;

// ---------------------------------------------------------------------------------------------
// binary32
// ---------------------------------------------------------------------------------------------

/// FADD.S: `a + b`.
#[inline]
pub fn f32_add(a: u32, b: u32, rm: Rm, flags: &mut u8) -> u32 {
    dispatch!(rm, flags, fast::add32(a, b), slow::f32_add(a, b, rm, flags))
}

/// FSUB.S: `a − b`.
#[inline]
pub fn f32_sub(a: u32, b: u32, rm: Rm, flags: &mut u8) -> u32 {
    dispatch!(
        rm,
        flags,
        fast::add32(a, b ^ SIGN_32),
        slow::f32_sub(a, b, rm, flags)
    )
}

/// FMUL.S: `a × b`.
#[inline]
pub fn f32_mul(a: u32, b: u32, rm: Rm, flags: &mut u8) -> u32 {
    dispatch!(rm, flags, fast::mul32(a, b), slow::f32_mul(a, b, rm, flags))
}

/// FDIV.S: `a / b` (DZ for a finite non-zero dividend over zero).
#[inline]
pub fn f32_div(a: u32, b: u32, rm: Rm, flags: &mut u8) -> u32 {
    dispatch!(rm, flags, fast::div32(a, b), slow::f32_div(a, b, rm, flags))
}

/// FSQRT.S: `√a` (`√−0 = −0`; NV for negative operands).
#[inline]
pub fn f32_sqrt(a: u32, rm: Rm, flags: &mut u8) -> u32 {
    dispatch!(rm, flags, fast::sqrt32(a), slow::f32_sqrt(a, rm, flags))
}

/// FMADD.S: `a×b + c` with a single rounding.
#[inline]
pub fn f32_madd(a: u32, b: u32, c: u32, rm: Rm, flags: &mut u8) -> u32 {
    dispatch!(
        rm,
        flags,
        fast::fma32(a, b, c),
        slow::f32_madd(a, b, c, rm, flags)
    )
}

/// FMSUB.S: `a×b − c` with a single rounding.
#[inline]
pub fn f32_msub(a: u32, b: u32, c: u32, rm: Rm, flags: &mut u8) -> u32 {
    dispatch!(
        rm,
        flags,
        fast::fma32(a, b, c ^ SIGN_32),
        slow::f32_msub(a, b, c, rm, flags)
    )
}

/// FNMSUB.S: `−(a×b) + c` with a single rounding.
#[inline]
pub fn f32_nmsub(a: u32, b: u32, c: u32, rm: Rm, flags: &mut u8) -> u32 {
    dispatch!(
        rm,
        flags,
        fast::fma32(a ^ SIGN_32, b, c),
        slow::f32_nmsub(a, b, c, rm, flags)
    )
}

/// FNMADD.S: `−(a×b) − c` with a single rounding.
#[inline]
pub fn f32_nmadd(a: u32, b: u32, c: u32, rm: Rm, flags: &mut u8) -> u32 {
    dispatch!(
        rm,
        flags,
        fast::fma32(a ^ SIGN_32, b, c ^ SIGN_32),
        slow::f32_nmadd(a, b, c, rm, flags)
    )
}

/// FMIN.S: the smaller operand, `−0 < +0`; a single NaN operand yields the other operand,
/// two NaNs the canonical NaN; NV if either is a signalling NaN.
#[inline]
pub fn f32_min(a: u32, b: u32, flags: &mut u8) -> u32 {
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    if x.is_nan() || y.is_nan() {
        return slow::f32_min(a, b, flags);
    }
    // Equal values differ at most in the sign of zero, and OR picks −0.
    if x < y {
        a
    } else if y < x {
        b
    } else {
        a | b
    }
}

/// FMAX.S: the larger operand, `−0 < +0`; NaN rules as [`f32_min`].
#[inline]
pub fn f32_max(a: u32, b: u32, flags: &mut u8) -> u32 {
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    if x.is_nan() || y.is_nan() {
        return slow::f32_max(a, b, flags);
    }
    // Equal values differ at most in the sign of zero, and AND picks +0.
    if x > y {
        a
    } else if y > x {
        b
    } else {
        a & b
    }
}

/// FEQ.S: quiet equality (`−0 == +0`); false with NV only for signalling NaNs.
#[inline]
pub fn f32_eq(a: u32, b: u32, flags: &mut u8) -> bool {
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    if x.is_nan() || y.is_nan() {
        return slow::f32_eq(a, b, flags);
    }
    x == y
}

/// FLT.S: signalling `a < b`; false with NV for any NaN.
#[inline]
pub fn f32_lt(a: u32, b: u32, flags: &mut u8) -> bool {
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    if x.is_nan() || y.is_nan() {
        return slow::f32_lt(a, b, flags);
    }
    x < y
}

/// FLE.S: signalling `a <= b`; false with NV for any NaN.
#[inline]
pub fn f32_le(a: u32, b: u32, flags: &mut u8) -> bool {
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    if x.is_nan() || y.is_nan() {
        return slow::f32_le(a, b, flags);
    }
    x <= y
}

/// FCLASS.S: one bit set of `−∞, −normal, −subnormal, −0, +0, +subnormal, +normal, +∞, sNaN,
/// qNaN` (bits 0 to 9).
#[inline]
pub fn f32_classify(a: u32) -> u32 {
    slow::f32_classify(a)
}

/// FCVT.W.S: to `i32`, saturating (NaN → `i32::MAX`), NV when out of range, else NX if inexact.
#[inline]
pub fn f32_to_i32(a: u32, rm: Rm, flags: &mut u8) -> i32 {
    match to_int_fast(f64::from(f32::from_bits(a)), rm, I32_RANGE) {
        Some((v, inexact)) => finish_int(v as i32, inexact, flags),
        None => slow::f32_to_i32(a, rm, flags),
    }
}

/// FCVT.WU.S: to `u32`, saturating (NaN → `u32::MAX`, negative → 0 with NV unless it rounds to
/// zero). The interpreter sign-extends the 32-bit result into `rd`.
#[inline]
pub fn f32_to_u32(a: u32, rm: Rm, flags: &mut u8) -> u32 {
    match to_int_fast(f64::from(f32::from_bits(a)), rm, U32_RANGE) {
        Some((v, inexact)) => finish_int(v as u32, inexact, flags),
        None => slow::f32_to_u32(a, rm, flags),
    }
}

/// FCVT.L.S: to `i64`, saturating as [`f32_to_i32`].
#[inline]
pub fn f32_to_i64(a: u32, rm: Rm, flags: &mut u8) -> i64 {
    match to_int_fast(f64::from(f32::from_bits(a)), rm, I64_RANGE) {
        Some((v, inexact)) => finish_int(v, inexact, flags),
        None => slow::f32_to_i64(a, rm, flags),
    }
}

/// FCVT.LU.S: to `u64`, saturating as [`f32_to_u32`].
#[inline]
pub fn f32_to_u64(a: u32, rm: Rm, flags: &mut u8) -> u64 {
    match to_int_fast(f64::from(f32::from_bits(a)), rm, U64_RANGE) {
        Some((v, inexact)) => finish_int(v as u64, inexact, flags),
        None => slow::f32_to_u64(a, rm, flags),
    }
}

/// FCVT.S.W: from `i32` (NX if rounded).
#[inline]
pub fn f32_from_i32(x: i32, rm: Rm, flags: &mut u8) -> u32 {
    // |x| <= 2^24 is exact in binary32.
    if x.unsigned_abs() <= 1 << 24 {
        return (x as f32).to_bits();
    }
    if HOST_FLOATS_ARE_IEEE && rm == Rm::Rne {
        // The host cast rounds to nearest even; its result (at most 2^31) converts back exactly.
        let r = x as f32;
        return finish_int(r.to_bits(), i64::from(x) != r as i64, flags);
    }
    slow::f32_from_i32(x, rm, flags)
}

/// FCVT.S.WU: from `u32`.
#[inline]
pub fn f32_from_u32(x: u32, rm: Rm, flags: &mut u8) -> u32 {
    if x <= 1 << 24 {
        return (x as f32).to_bits();
    }
    if HOST_FLOATS_ARE_IEEE && rm == Rm::Rne {
        let r = x as f32;
        return finish_int(r.to_bits(), i64::from(x) != r as i64, flags);
    }
    slow::f32_from_u32(x, rm, flags)
}

/// FCVT.S.L: from `i64`.
#[inline]
pub fn f32_from_i64(x: i64, rm: Rm, flags: &mut u8) -> u32 {
    if x.unsigned_abs() <= 1 << 24 {
        return (x as f32).to_bits();
    }
    if HOST_FLOATS_ARE_IEEE && rm == Rm::Rne {
        // Rust's integer-to-float casts round once to nearest even; at most 2^63 converts back
        // exactly into i128.
        let r = x as f32;
        return finish_int(r.to_bits(), i128::from(x) != r as i128, flags);
    }
    slow::f32_from_i64(x, rm, flags)
}

/// FCVT.S.LU: from `u64`.
#[inline]
pub fn f32_from_u64(x: u64, rm: Rm, flags: &mut u8) -> u32 {
    if x <= 1 << 24 {
        return (x as f32).to_bits();
    }
    if HOST_FLOATS_ARE_IEEE && rm == Rm::Rne {
        let r = x as f32;
        return finish_int(r.to_bits(), i128::from(x) != r as i128, flags);
    }
    slow::f32_from_u64(x, rm, flags)
}

/// FCVT.D.S: exact widening; a NaN gives the canonical NaN (NV if signalling).
#[inline]
pub fn f32_to_f64(a: u32, flags: &mut u8) -> u64 {
    let x = f32::from_bits(a);
    if x.is_nan() {
        return slow::f32_to_f64(a, flags);
    }
    f64::from(x).to_bits()
}

// ---------------------------------------------------------------------------------------------
// binary64
// ---------------------------------------------------------------------------------------------

/// FADD.D: `a + b`.
#[inline]
pub fn f64_add(a: u64, b: u64, rm: Rm, flags: &mut u8) -> u64 {
    dispatch!(rm, flags, fast::add64(a, b), slow::f64_add(a, b, rm, flags))
}

/// FSUB.D: `a − b`.
#[inline]
pub fn f64_sub(a: u64, b: u64, rm: Rm, flags: &mut u8) -> u64 {
    dispatch!(
        rm,
        flags,
        fast::add64(a, b ^ SIGN_64),
        slow::f64_sub(a, b, rm, flags)
    )
}

/// FMUL.D: `a × b`.
#[inline]
pub fn f64_mul(a: u64, b: u64, rm: Rm, flags: &mut u8) -> u64 {
    dispatch!(rm, flags, fast::mul64(a, b), slow::f64_mul(a, b, rm, flags))
}

/// FDIV.D: `a / b` (DZ for a finite non-zero dividend over zero).
#[inline]
pub fn f64_div(a: u64, b: u64, rm: Rm, flags: &mut u8) -> u64 {
    dispatch!(rm, flags, fast::div64(a, b), slow::f64_div(a, b, rm, flags))
}

/// FSQRT.D: `√a` (`√−0 = −0`; NV for negative operands).
#[inline]
pub fn f64_sqrt(a: u64, rm: Rm, flags: &mut u8) -> u64 {
    dispatch!(rm, flags, fast::sqrt64(a), slow::f64_sqrt(a, rm, flags))
}

/// FMADD.D: `a×b + c` with a single rounding.
#[inline]
pub fn f64_madd(a: u64, b: u64, c: u64, rm: Rm, flags: &mut u8) -> u64 {
    dispatch!(
        rm,
        flags,
        fast::fma64(a, b, c),
        slow::f64_madd(a, b, c, rm, flags)
    )
}

/// FMSUB.D: `a×b − c` with a single rounding.
#[inline]
pub fn f64_msub(a: u64, b: u64, c: u64, rm: Rm, flags: &mut u8) -> u64 {
    dispatch!(
        rm,
        flags,
        fast::fma64(a, b, c ^ SIGN_64),
        slow::f64_msub(a, b, c, rm, flags)
    )
}

/// FNMSUB.D: `−(a×b) + c` with a single rounding.
#[inline]
pub fn f64_nmsub(a: u64, b: u64, c: u64, rm: Rm, flags: &mut u8) -> u64 {
    dispatch!(
        rm,
        flags,
        fast::fma64(a ^ SIGN_64, b, c),
        slow::f64_nmsub(a, b, c, rm, flags)
    )
}

/// FNMADD.D: `−(a×b) − c` with a single rounding.
#[inline]
pub fn f64_nmadd(a: u64, b: u64, c: u64, rm: Rm, flags: &mut u8) -> u64 {
    dispatch!(
        rm,
        flags,
        fast::fma64(a ^ SIGN_64, b, c ^ SIGN_64),
        slow::f64_nmadd(a, b, c, rm, flags)
    )
}

/// FMIN.D: the smaller operand, `−0 < +0`; a single NaN operand yields the other operand,
/// two NaNs the canonical NaN; NV if either is a signalling NaN.
#[inline]
pub fn f64_min(a: u64, b: u64, flags: &mut u8) -> u64 {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    if x.is_nan() || y.is_nan() {
        return slow::f64_min(a, b, flags);
    }
    if x < y {
        a
    } else if y < x {
        b
    } else {
        a | b
    }
}

/// FMAX.D: the larger operand, `−0 < +0`; NaN rules as [`f64_min`].
#[inline]
pub fn f64_max(a: u64, b: u64, flags: &mut u8) -> u64 {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    if x.is_nan() || y.is_nan() {
        return slow::f64_max(a, b, flags);
    }
    if x > y {
        a
    } else if y > x {
        b
    } else {
        a & b
    }
}

/// FEQ.D: quiet equality (`−0 == +0`); false with NV only for signalling NaNs.
#[inline]
pub fn f64_eq(a: u64, b: u64, flags: &mut u8) -> bool {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    if x.is_nan() || y.is_nan() {
        return slow::f64_eq(a, b, flags);
    }
    x == y
}

/// FLT.D: signalling `a < b`; false with NV for any NaN.
#[inline]
pub fn f64_lt(a: u64, b: u64, flags: &mut u8) -> bool {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    if x.is_nan() || y.is_nan() {
        return slow::f64_lt(a, b, flags);
    }
    x < y
}

/// FLE.D: signalling `a <= b`; false with NV for any NaN.
#[inline]
pub fn f64_le(a: u64, b: u64, flags: &mut u8) -> bool {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    if x.is_nan() || y.is_nan() {
        return slow::f64_le(a, b, flags);
    }
    x <= y
}

/// FCLASS.D: one bit set of `−∞, −normal, −subnormal, −0, +0, +subnormal, +normal, +∞, sNaN,
/// qNaN` (bits 0 to 9).
#[inline]
pub fn f64_classify(a: u64) -> u32 {
    slow::f64_classify(a)
}

/// FCVT.W.D: to `i32`, saturating (NaN → `i32::MAX`), NV when out of range, else NX if inexact.
#[inline]
pub fn f64_to_i32(a: u64, rm: Rm, flags: &mut u8) -> i32 {
    match to_int_fast(f64::from_bits(a), rm, I32_RANGE) {
        Some((v, inexact)) => finish_int(v as i32, inexact, flags),
        None => slow::f64_to_i32(a, rm, flags),
    }
}

/// FCVT.WU.D: to `u32`, saturating (NaN → `u32::MAX`, negative → 0 with NV unless it rounds to
/// zero). The interpreter sign-extends the 32-bit result into `rd`.
#[inline]
pub fn f64_to_u32(a: u64, rm: Rm, flags: &mut u8) -> u32 {
    match to_int_fast(f64::from_bits(a), rm, U32_RANGE) {
        Some((v, inexact)) => finish_int(v as u32, inexact, flags),
        None => slow::f64_to_u32(a, rm, flags),
    }
}

/// FCVT.L.D: to `i64`, saturating as [`f64_to_i32`].
#[inline]
pub fn f64_to_i64(a: u64, rm: Rm, flags: &mut u8) -> i64 {
    match to_int_fast(f64::from_bits(a), rm, I64_RANGE) {
        Some((v, inexact)) => finish_int(v, inexact, flags),
        None => slow::f64_to_i64(a, rm, flags),
    }
}

/// FCVT.LU.D: to `u64`, saturating as [`f64_to_u32`].
#[inline]
pub fn f64_to_u64(a: u64, rm: Rm, flags: &mut u8) -> u64 {
    match to_int_fast(f64::from_bits(a), rm, U64_RANGE) {
        Some((v, inexact)) => finish_int(v as u64, inexact, flags),
        None => slow::f64_to_u64(a, rm, flags),
    }
}

/// FCVT.D.W: from `i32` (always exact).
#[inline]
pub fn f64_from_i32(x: i32, _rm: Rm, _flags: &mut u8) -> u64 {
    f64::from(x).to_bits()
}

/// FCVT.D.WU: from `u32` (always exact).
#[inline]
pub fn f64_from_u32(x: u32, _rm: Rm, _flags: &mut u8) -> u64 {
    f64::from(x).to_bits()
}

/// FCVT.D.L: from `i64` (NX if rounded).
#[inline]
pub fn f64_from_i64(x: i64, rm: Rm, flags: &mut u8) -> u64 {
    // |x| <= 2^53 is exact in binary64.
    if x.unsigned_abs() <= 1 << 53 {
        return (x as f64).to_bits();
    }
    if HOST_FLOATS_ARE_IEEE && rm == Rm::Rne {
        // Rust's integer-to-float casts round once to nearest even; at most 2^63 converts back
        // exactly into i128.
        let r = x as f64;
        return finish_int(r.to_bits(), i128::from(x) != r as i128, flags);
    }
    slow::f64_from_i64(x, rm, flags)
}

/// FCVT.D.LU: from `u64` (NX if rounded).
#[inline]
pub fn f64_from_u64(x: u64, rm: Rm, flags: &mut u8) -> u64 {
    if x <= 1 << 53 {
        return (x as f64).to_bits();
    }
    if HOST_FLOATS_ARE_IEEE && rm == Rm::Rne {
        let r = x as f64;
        return finish_int(r.to_bits(), i128::from(x) != r as i128, flags);
    }
    slow::f64_from_u64(x, rm, flags)
}

/// FCVT.S.D: rounds to binary32; a NaN gives the canonical NaN (NV if signalling).
#[inline]
pub fn f64_to_f32(a: u64, rm: Rm, flags: &mut u8) -> u32 {
    dispatch!(
        rm,
        flags,
        fast::f64_to_f32(a),
        slow::f64_to_f32(a, rm, flags)
    )
}

// ---------------------------------------------------------------------------------------------
// float → integer fast path (all rounding modes)
// ---------------------------------------------------------------------------------------------

/// Open interval of operands for which rounding to an integer, in any mode, stays inside the
/// target format (so no saturation or NV can arise).
#[derive(Clone, Copy)]
struct IntRange {
    low: f64,
    high: f64,
}

/// i32: `(−(2^31 − 1), 2^31 − 1)`: rounding moves at most to the next integer away from zero.
const I32_RANGE: IntRange = IntRange {
    low: -2_147_483_647.0,
    high: 2_147_483_647.0,
};
/// u32: `[±0, 2^32 − 1)`; negative operands (which may round to −1 and saturate, or to 0)
/// take the slow path.
const U32_RANGE: IntRange = IntRange {
    low: 0.0,
    high: 4_294_967_295.0,
};
/// i64: `(−2^62, 2^62)`, comfortably inside.
const I64_RANGE: IntRange = IntRange {
    low: -4_611_686_018_427_387_904.0,
    high: 4_611_686_018_427_387_904.0,
};
/// u64: `[0, 2^62)`.
const U64_RANGE: IntRange = IntRange {
    low: 0.0,
    high: 4_611_686_018_427_387_904.0,
};

/// Rounds `x` to an integer in mode `rm` when `x` lies in `range` (non-negative ranges include
/// `±0`), returning the value and whether it was inexact; `None` (NaN, out of range) defers
/// to the slow path.
///
/// `t = x as i64` truncates exactly (|x| < 2^63), and `f = x − t` is exact: for |x| < 1 it is
/// `x`; otherwise it is a multiple of x's quantum below 1 in magnitude, at most 52 bits.
#[inline]
fn to_int_fast(x: f64, rm: Rm, range: IntRange) -> Option<(i64, bool)> {
    let inside = if range.low == 0.0 {
        x >= 0.0 && x < range.high
    } else {
        x > range.low && x < range.high
    };
    if !inside {
        return None;
    }
    let t = x as i64;
    let f = x - t as f64;
    if f == 0.0 {
        return Some((t, false));
    }
    let away = if f > 0.0 { 1 } else { -1 };
    let half = f.abs().total_cmp(&0.5);
    let v = match rm {
        Rm::Rtz => t,
        Rm::Rdn => {
            if f < 0.0 {
                t - 1
            } else {
                t
            }
        }
        Rm::Rup => {
            if f > 0.0 {
                t + 1
            } else {
                t
            }
        }
        Rm::Rne => match half {
            std::cmp::Ordering::Greater => t + away,
            std::cmp::Ordering::Equal => t + (t & 1) * away,
            std::cmp::Ordering::Less => t,
        },
        Rm::Rmm => {
            if half.is_ge() {
                t + away
            } else {
                t
            }
        }
    };
    Some((v, true))
}

/// ORs NX into `flags` when `inexact`, and passes `v` through.
#[inline]
fn finish_int<T>(v: T, inexact: bool, flags: &mut u8) -> T {
    if inexact {
        *flags |= flags::NX;
    }
    v
}
