//! The slow path as public functions with the same signatures as the fast API in
//! [`crate::fpu`], so tests (unit, property and golden) can check the two against each other.
//! Every function here is the integer soft-float of `soft.rs` and nothing else; the
//! interpreter should call the functions in [`crate::fpu`] instead.

use super::soft::{self, FmaKind, IntFormat, F32, F64};
use super::Rm;

macro_rules! slow_format {
    (
        $bits:ty, $fmt:expr,
        add: $add:ident, sub: $sub:ident, mul: $mul:ident, div: $div:ident, sqrt: $sqrt:ident,
        madd: $madd:ident, msub: $msub:ident, nmsub: $nmsub:ident, nmadd: $nmadd:ident,
        min: $min:ident, max: $max:ident, eq: $eq:ident, lt: $lt:ident, le: $le:ident,
        classify: $classify:ident,
        to_i32: $to_i32:ident, to_u32: $to_u32:ident, to_i64: $to_i64:ident, to_u64: $to_u64:ident,
        from_i32: $from_i32:ident, from_u32: $from_u32:ident,
        from_i64: $from_i64:ident, from_u64: $from_u64:ident,
    ) => {
        /// Slow-path `a + b`.
        pub fn $add(a: $bits, b: $bits, rm: Rm, flags: &mut u8) -> $bits {
            soft::add($fmt, a.into(), b.into(), rm, flags) as $bits
        }
        /// Slow-path `a - b`.
        pub fn $sub(a: $bits, b: $bits, rm: Rm, flags: &mut u8) -> $bits {
            soft::sub($fmt, a.into(), b.into(), rm, flags) as $bits
        }
        /// Slow-path `a × b`.
        pub fn $mul(a: $bits, b: $bits, rm: Rm, flags: &mut u8) -> $bits {
            soft::mul($fmt, a.into(), b.into(), rm, flags) as $bits
        }
        /// Slow-path `a / b`.
        pub fn $div(a: $bits, b: $bits, rm: Rm, flags: &mut u8) -> $bits {
            soft::div($fmt, a.into(), b.into(), rm, flags) as $bits
        }
        /// Slow-path `√a`.
        pub fn $sqrt(a: $bits, rm: Rm, flags: &mut u8) -> $bits {
            soft::sqrt($fmt, a.into(), rm, flags) as $bits
        }
        /// Slow-path fused `a×b + c`.
        pub fn $madd(a: $bits, b: $bits, c: $bits, rm: Rm, flags: &mut u8) -> $bits {
            soft::fma(
                $fmt,
                FmaKind::MulAdd,
                a.into(),
                b.into(),
                c.into(),
                rm,
                flags,
            ) as $bits
        }
        /// Slow-path fused `a×b − c`.
        pub fn $msub(a: $bits, b: $bits, c: $bits, rm: Rm, flags: &mut u8) -> $bits {
            soft::fma(
                $fmt,
                FmaKind::MulSub,
                a.into(),
                b.into(),
                c.into(),
                rm,
                flags,
            ) as $bits
        }
        /// Slow-path fused `−(a×b) + c`.
        pub fn $nmsub(a: $bits, b: $bits, c: $bits, rm: Rm, flags: &mut u8) -> $bits {
            soft::fma(
                $fmt,
                FmaKind::NegMulAdd,
                a.into(),
                b.into(),
                c.into(),
                rm,
                flags,
            ) as $bits
        }
        /// Slow-path fused `−(a×b) − c`.
        pub fn $nmadd(a: $bits, b: $bits, c: $bits, rm: Rm, flags: &mut u8) -> $bits {
            soft::fma(
                $fmt,
                FmaKind::NegMulSub,
                a.into(),
                b.into(),
                c.into(),
                rm,
                flags,
            ) as $bits
        }
        /// Slow-path FMIN.
        pub fn $min(a: $bits, b: $bits, flags: &mut u8) -> $bits {
            soft::min_max($fmt, a.into(), b.into(), false, flags) as $bits
        }
        /// Slow-path FMAX.
        pub fn $max(a: $bits, b: $bits, flags: &mut u8) -> $bits {
            soft::min_max($fmt, a.into(), b.into(), true, flags) as $bits
        }
        /// Slow-path FEQ.
        pub fn $eq(a: $bits, b: $bits, flags: &mut u8) -> bool {
            soft::eq($fmt, a.into(), b.into(), flags)
        }
        /// Slow-path FLT.
        pub fn $lt(a: $bits, b: $bits, flags: &mut u8) -> bool {
            soft::lt_le($fmt, a.into(), b.into(), false, flags)
        }
        /// Slow-path FLE.
        pub fn $le(a: $bits, b: $bits, flags: &mut u8) -> bool {
            soft::lt_le($fmt, a.into(), b.into(), true, flags)
        }
        /// FCLASS.
        pub fn $classify(a: $bits) -> u32 {
            soft::classify($fmt, a.into())
        }
        /// Slow-path FCVT.W.
        pub fn $to_i32(a: $bits, rm: Rm, flags: &mut u8) -> i32 {
            soft::to_int($fmt, a.into(), IntFormat::I32, rm, flags) as i32
        }
        /// Slow-path FCVT.WU.
        pub fn $to_u32(a: $bits, rm: Rm, flags: &mut u8) -> u32 {
            soft::to_int($fmt, a.into(), IntFormat::U32, rm, flags) as u32
        }
        /// Slow-path FCVT.L.
        pub fn $to_i64(a: $bits, rm: Rm, flags: &mut u8) -> i64 {
            soft::to_int($fmt, a.into(), IntFormat::I64, rm, flags) as i64
        }
        /// Slow-path FCVT.LU.
        pub fn $to_u64(a: $bits, rm: Rm, flags: &mut u8) -> u64 {
            soft::to_int($fmt, a.into(), IntFormat::U64, rm, flags) as u64
        }
        /// Slow-path FCVT from W.
        pub fn $from_i32(x: i32, rm: Rm, flags: &mut u8) -> $bits {
            soft::from_int($fmt, x.into(), rm, flags) as $bits
        }
        /// Slow-path FCVT from WU.
        pub fn $from_u32(x: u32, rm: Rm, flags: &mut u8) -> $bits {
            soft::from_int($fmt, x.into(), rm, flags) as $bits
        }
        /// Slow-path FCVT from L.
        pub fn $from_i64(x: i64, rm: Rm, flags: &mut u8) -> $bits {
            soft::from_int($fmt, x.into(), rm, flags) as $bits
        }
        /// Slow-path FCVT from LU.
        pub fn $from_u64(x: u64, rm: Rm, flags: &mut u8) -> $bits {
            soft::from_int($fmt, x.into(), rm, flags) as $bits
        }
    };
}

slow_format! {
    u32, F32,
    add: f32_add, sub: f32_sub, mul: f32_mul, div: f32_div, sqrt: f32_sqrt,
    madd: f32_madd, msub: f32_msub, nmsub: f32_nmsub, nmadd: f32_nmadd,
    min: f32_min, max: f32_max, eq: f32_eq, lt: f32_lt, le: f32_le,
    classify: f32_classify,
    to_i32: f32_to_i32, to_u32: f32_to_u32, to_i64: f32_to_i64, to_u64: f32_to_u64,
    from_i32: f32_from_i32, from_u32: f32_from_u32, from_i64: f32_from_i64, from_u64: f32_from_u64,
}

slow_format! {
    u64, F64,
    add: f64_add, sub: f64_sub, mul: f64_mul, div: f64_div, sqrt: f64_sqrt,
    madd: f64_madd, msub: f64_msub, nmsub: f64_nmsub, nmadd: f64_nmadd,
    min: f64_min, max: f64_max, eq: f64_eq, lt: f64_lt, le: f64_le,
    classify: f64_classify,
    to_i32: f64_to_i32, to_u32: f64_to_u32, to_i64: f64_to_i64, to_u64: f64_to_u64,
    from_i32: f64_from_i32, from_u32: f64_from_u32, from_i64: f64_from_i64, from_u64: f64_from_u64,
}

/// Slow-path FCVT.D.S (exact; NaN → canonical, sNaN raises NV).
pub fn f32_to_f64(a: u32, flags: &mut u8) -> u64 {
    soft::convert(F32, F64, a.into(), Rm::Rne, flags)
}

/// Slow-path FCVT.S.D.
pub fn f64_to_f32(a: u64, rm: Rm, flags: &mut u8) -> u32 {
    soft::convert(F64, F32, a, rm, flags) as u32
}
