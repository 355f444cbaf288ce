//! Vector floating point (RVV 1.0 §13–§14, §16.2): single and double elements through the
//! machine's soft-float unit, so results and flags are those of the scalar instructions; and
//! Zvfhmin's conversions between half and single.

use super::{group_ok, sext, trunc, Ctx, Fields, VDone, VFault, VState};
use crate::fpu::{self, Rm};

const NV: u8 = 0x10;
const OF: u8 = 0x04;
const UF: u8 = 0x02;
const NX: u8 = 0x01;

macro_rules! by_width {
    ($w:expr, $f32:ident, $f64:ident, ($($a:expr),*) $(, $rest:expr)*) => {
        if $w == 4 {
            u64::from(fpu::$f32($($a as u32),* $(, $rest)*))
        } else {
            fpu::$f64($($a),* $(, $rest)*)
        }
    };
}

fn add(w: u32, a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    by_width!(w, f32_add, f64_add, (a, b), rm, fl)
}
fn sub(w: u32, a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    by_width!(w, f32_sub, f64_sub, (a, b), rm, fl)
}
fn mul(w: u32, a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    by_width!(w, f32_mul, f64_mul, (a, b), rm, fl)
}
fn div(w: u32, a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    by_width!(w, f32_div, f64_div, (a, b), rm, fl)
}
fn min(w: u32, a: u64, b: u64, fl: &mut u8) -> u64 {
    by_width!(w, f32_min, f64_min, (a, b), fl)
}
fn max(w: u32, a: u64, b: u64, fl: &mut u8) -> u64 {
    by_width!(w, f32_max, f64_max, (a, b), fl)
}

/// `a × b ± c` in the four sign combinations (`k`: 0 madd, 1 msub, 2 nmsub, 3 nmadd).
fn fma(w: u32, k: u32, a: u64, b: u64, c: u64, rm: Rm, fl: &mut u8) -> u64 {
    match k {
        0 => by_width!(w, f32_madd, f64_madd, (a, b, c), rm, fl),
        1 => by_width!(w, f32_msub, f64_msub, (a, b, c), rm, fl),
        2 => by_width!(w, f32_nmsub, f64_nmsub, (a, b, c), rm, fl),
        _ => by_width!(w, f32_nmadd, f64_nmadd, (a, b, c), rm, fl),
    }
}

fn cmp(w: u32, k: u32, a: u64, b: u64, fl: &mut u8) -> bool {
    match (w, k) {
        (4, 0) => fpu::f32_eq(a as u32, b as u32, fl),
        (4, 1) => fpu::f32_lt(a as u32, b as u32, fl),
        (4, _) => fpu::f32_le(a as u32, b as u32, fl),
        (_, 0) => fpu::f64_eq(a, b, fl),
        (_, 1) => fpu::f64_lt(a, b, fl),
        _ => fpu::f64_le(a, b, fl),
    }
}

/// Single to double, exactly (a signalling NaN raises invalid).
fn widen_f(a: u64, fl: &mut u8) -> u64 {
    fpu::f32_to_f64(a as u32, fl)
}

/// Half to single, exactly (Zvfhmin).
pub(super) fn f16_to_f32(h: u16, fl: &mut u8) -> u32 {
    let s = u32::from(h >> 15) << 31;
    let (e, m) = (u32::from(h >> 10) & 0x1f, u32::from(h & 0x3ff));
    match e {
        0x1f if m == 0 => s | 0x7f80_0000,
        0x1f => {
            if m & 0x200 == 0 {
                *fl |= NV;
            }
            fpu::CANONICAL_NAN_32
        }
        0 => s | (m as f32 * f32::from_bits(0x3380_0000)).to_bits(),
        _ => s | (e + 112) << 23 | m << 13,
    }
}

/// Single to half, rounded by `rm` (Zvfhmin).
pub(super) fn f32_to_f16(a: u32, rm: Rm, fl: &mut u8) -> u16 {
    let neg = a >> 31 != 0;
    let sign = if neg { 0x8000u16 } else { 0 };
    let (e, m) = ((a >> 23) & 0xff, a & 0x7f_ffff);
    if e == 0xff {
        if m == 0 {
            return sign | 0x7c00;
        }
        if m & 0x40_0000 == 0 {
            *fl |= NV;
        }
        return 0x7e00;
    }
    if e == 0 && m == 0 {
        return sign;
    }
    let (sig, exp) = if e == 0 {
        (u64::from(m), -149i32)
    } else {
        (u64::from(m | 0x80_0000), e as i32 - 150)
    };
    let lead = 63 - sig.leading_zeros() as i32 + exp;
    let q = (lead - 10).max(-24);
    let shift = q - exp;
    let (n, inexact) = if shift <= 0 {
        (sig << (-shift) as u32, false)
    } else if shift >= 64 {
        (
            u64::from(matches!((rm, neg), (Rm::Rup, false) | (Rm::Rdn, true))),
            true,
        )
    } else {
        let n = sig >> shift;
        let rem = sig & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        let up = match rm {
            Rm::Rne => rem > half || (rem == half && n & 1 == 1),
            Rm::Rmm => rem >= half,
            Rm::Rtz => false,
            Rm::Rdn => neg && rem != 0,
            Rm::Rup => !neg && rem != 0,
        };
        (n + u64::from(up), rem != 0)
    };
    let bits = (((q + 24) as u64) << 10) + n;
    if bits >= 0x7c00 {
        *fl |= OF | NX;
        let inf = match rm {
            Rm::Rne | Rm::Rmm => true,
            Rm::Rtz => false,
            Rm::Rdn => neg,
            Rm::Rup => !neg,
        };
        return sign | if inf { 0x7c00 } else { 0x7bff };
    }
    if inexact {
        *fl |= NX;
        if bits < 0x400 {
            *fl |= UF;
        }
    }
    sign | bits as u16
}

/// A float to an integer of `w` bytes (signed or not), saturating as the scalar conversions
/// do; `fw` is the float's width.
fn to_int(fw: u32, w: u32, signed: bool, a: u64, rm: Rm, fl: &mut u8) -> u64 {
    let mut f2 = 0u8;
    let r = match (fw, w, signed) {
        (4, 8, true) => fpu::f32_to_i64(a as u32, rm, &mut f2) as u64,
        (4, 8, false) => fpu::f32_to_u64(a as u32, rm, &mut f2),
        (4, _, true) => fpu::f32_to_i32(a as u32, rm, &mut f2) as i64 as u64,
        (4, _, false) => u64::from(fpu::f32_to_u32(a as u32, rm, &mut f2)),
        (_, 8, true) => fpu::f64_to_i64(a, rm, &mut f2) as u64,
        (_, 8, false) => fpu::f64_to_u64(a, rm, &mut f2),
        (_, _, true) => fpu::f64_to_i32(a, rm, &mut f2) as i64 as u64,
        (_, _, false) => u64::from(fpu::f64_to_u32(a, rm, &mut f2)),
    };
    if w >= 4 {
        *fl |= f2;
        return trunc(r, w);
    }
    // narrower than the scalar conversions: saturate again, invalid only
    let (lo, hi) = if signed {
        (-(1i64 << (8 * w - 1)), (1i64 << (8 * w - 1)) - 1)
    } else {
        (0, (1i64 << (8 * w)) - 1)
    };
    let v = if signed {
        r as i32 as i64
    } else {
        r as u32 as i64
    };
    if v < lo || v > hi {
        *fl |= NV;
        trunc(v.clamp(lo, hi) as u64, w)
    } else {
        *fl |= f2;
        trunc(v as u64, w)
    }
}

/// An integer of `w` bytes to a float of `fw` bytes.
fn from_int(w: u32, fw: u32, signed: bool, a: u64, rm: Rm, fl: &mut u8) -> u64 {
    let v = if signed { sext(a, w) } else { a as i64 };
    match (fw, signed) {
        (4, true) => u64::from(fpu::f32_from_i64(v, rm, fl)),
        (4, false) => u64::from(fpu::f32_from_u64(trunc(a, w), rm, fl)),
        (_, true) => fpu::f64_from_i64(v, rm, fl),
        (_, false) => fpu::f64_from_u64(trunc(a, w), rm, fl),
    }
}

/// Whether an element-wise FP instruction's groups are legal: the destination of `dw` bytes
/// per element (a mask if `mask_dest`), `vs2` of `aw`, `vs1` (vector-vector forms but the
/// unary VFUNARY1, whose vs1 field is an operation), `v0` untouched unless a mask is written,
/// and a valid `vtype`.
fn fits(
    v: &VState,
    fl: Fields,
    (w, lmul8, s): (u32, u32, Option<u64>),
    (dw, aw, mask_dest): (u32, u32, bool),
) -> bool {
    let em = |x: u32| x * lmul8 / w;
    (mask_dest || group_ok(fl.vd, em(dw)))
        && group_ok(fl.vs2, em(aw))
        && (s.is_some() || fl.funct6 == 0b010011 || group_ok(fl.rs1, lmul8))
        && (fl.vm || fl.vd != 0 || mask_dest)
        && em(dw) <= 64
        && v.vtype & super::VILL == 0
}

/// The OPFVV and OPFVF instructions.
pub(super) fn opf(v: &mut VState, c: &mut Ctx<'_>, fl: Fields) -> Result<VDone, VFault> {
    let w = v.sew();
    let lmul8 = v.lmul8();
    let rm = Rm::from_bits(u32::from(c.frm)).ok_or(VFault::Illegal)?;
    let f6 = fl.funct6;
    let vf = fl.funct3 == 5;
    // the scalar operand, unboxed at single width
    let s = if !vf {
        None
    } else if w == 4 {
        Some(u64::from(fpu::nan_unbox(c.f[fl.rs1 as usize])))
    } else {
        Some(c.f[fl.rs1 as usize])
    };
    let conv = f6 == 0b010010;
    if !(w == 4 || w == 8 || (conv && w == 2 && (c.zvfhmin || !matches!(fl.rs1, 12 | 20)))) {
        return Err(VFault::Illegal);
    }
    let mut flags = 0u8;
    let r = opf_inner(v, c, fl, (w, lmul8, rm, s), &mut flags);
    *c.fflags |= flags;
    r
}

fn opf_inner(
    v: &mut VState,
    c: &mut Ctx<'_>,
    fl: Fields,
    (w, lmul8, rm, s): (u32, u32, Rm, Option<u64>),
    flags: &mut u8,
) -> Result<VDone, VFault> {
    let f6 = fl.funct6;
    let b_of = |v: &VState, i: u64| s.unwrap_or_else(|| v.get(fl.rs1, i, w));
    let plain = |v: &VState, dw: u32, aw: u32, m: bool| fits(v, fl, (w, lmul8, s), (dw, aw, m));
    let each = |v: &mut VState, dw: u32, f: &mut dyn FnMut(&VState, u64) -> u64| {
        super::int::each(v, fl, dw, f)
    };
    let sign = (8 * w - 1) as u64;
    match f6 {
        0b000000
        | 0b000010
        | 0b000100
        | 0b000110
        | 0b001000..=0b001010
        | 0b100000
        | 0b100001
        | 0b100100
        | 0b100111 => {
            if s.is_none() && matches!(f6, 0b100001 | 0b100111) || !plain(v, w, w, false) {
                return Err(VFault::Illegal);
            }
            each(v, w, &mut |v, i| {
                let (a, b) = (v.get(fl.vs2, i, w), b_of(v, i));
                let sb = 1u64 << sign;
                match f6 {
                    0b000000 => add(w, a, b, rm, flags),
                    0b000010 => sub(w, a, b, rm, flags),
                    0b100111 => sub(w, b, a, rm, flags),
                    0b000100 => min(w, a, b, flags),
                    0b000110 => max(w, a, b, flags),
                    0b001000 => (a & !sb) | (b & sb),
                    0b001001 => (a & !sb) | (!b & sb),
                    0b001010 => a ^ (b & sb),
                    0b100000 => div(w, a, b, rm, flags),
                    0b100001 => div(w, b, a, rm, flags),
                    _ => mul(w, a, b, rm, flags),
                }
            })
        }
        0b101000..=0b101111 => {
            if !plain(v, w, w, false) {
                return Err(VFault::Illegal);
            }
            // vfmadd family (vd multiplies) then vfmacc family (vs2 multiplies)
            let k = [0, 3, 1, 2][(f6 & 3) as usize];
            each(v, w, &mut |v, i| {
                let (a, b, d) = (v.get(fl.vs2, i, w), b_of(v, i), v.get(fl.vd, i, w));
                if f6 & 4 == 0 {
                    fma(w, k, b, d, a, rm, flags)
                } else {
                    fma(w, k, b, a, d, rm, flags)
                }
            })
        }
        0b011000 | 0b011001 | 0b011011 | 0b011100 | 0b011101 | 0b011111 | 0b010111 | 0b010000 => {
            compare_or_move(v, c, fl, (w, lmul8, s), flags)
        }
        0b001110 | 0b001111 if s.is_some() => {
            if !plain(v, w, w, false) {
                return Err(VFault::Illegal);
            }
            super::int::slide1(v, fl, s.unwrap_or(0), f6 == 0b001110)
        }
        0b010011 if s.is_none() => {
            if !plain(v, w, w, false) {
                return Err(VFault::Illegal);
            }
            match fl.rs1 {
                0 => each(v, w, &mut |v, i| {
                    let a = v.get(fl.vs2, i, w);
                    by_width!(w, f32_sqrt, f64_sqrt, (a), rm, flags)
                }),
                0x10 => each(v, w, &mut |v, i| {
                    let a = v.get(fl.vs2, i, w);
                    u64::from(if w == 4 {
                        fpu::f32_classify(a as u32)
                    } else {
                        fpu::f64_classify(a)
                    })
                }),
                4 => each(v, w, &mut |v, i| {
                    estimate(w, v.get(fl.vs2, i, w), None, flags)
                }),
                5 => each(v, w, &mut |v, i| {
                    estimate(w, v.get(fl.vs2, i, w), Some(rm), flags)
                }),
                _ => Err(VFault::Illegal),
            }
        }
        0b010010 if s.is_none() => convert(v, fl, (w, lmul8, rm), flags),
        0b000001 | 0b000011 | 0b000101 | 0b000111 | 0b110001 | 0b110011 if s.is_none() => {
            reduce(v, fl, (w, lmul8, rm), flags)
        }
        0b110000 | 0b110010 | 0b110100 | 0b110110 | 0b111000 | 0b111100..=0b111111 => {
            widen(v, fl, (w, lmul8, rm, s), flags)
        }
        _ => Err(VFault::Illegal),
    }
}

/// VFUNARY0: conversions between integers and floats, same width, widening and narrowing.
fn convert(
    v: &mut VState,
    fl: Fields,
    (w, lmul8, rm): (u32, u32, Rm),
    flags: &mut u8,
) -> Result<VDone, VFault> {
    let op = fl.rs1;
    let rtz = if op & 0b110 == 0b110 { Rm::Rtz } else { rm };
    // (destination width, source width)
    let (dw, sw) = match op >> 3 {
        0 => (w, w),
        1 => (2 * w, w),
        2 => (w, 2 * w),
        _ => return Err(VFault::Illegal),
    };
    let legal = match op {
        0..=3 | 6 | 7 => w == 4 || w == 8,
        8 | 9 | 14 | 15 | 18 | 19 | 21 => w == 4,
        10..=12 | 16 | 17 | 20 | 22 | 23 => w == 2 || w == 4,
        _ => false,
    };
    let em = |x: u32| x * lmul8 / w;
    if !legal
        || !group_ok(fl.vd, em(dw))
        || !group_ok(fl.vs2, em(sw))
        || em(dw) > 64
        || em(sw) > 64
        || (!fl.vm && fl.vd == 0)
    {
        return Err(VFault::Illegal);
    }
    // which side is the float
    let kind = op & 0b111;
    let (float_w, int_w) = match kind {
        0 | 1 | 6 | 7 => (sw, dw),
        _ => (dw, sw),
    };
    for i in v.vstart..v.vl {
        if !v.active(fl.vm, i) {
            continue;
        }
        let a = v.get(fl.vs2, i, sw);
        let r = match kind {
            0 | 6 => to_int(float_w, int_w, false, a, rtz, flags),
            1 | 7 => to_int(float_w, int_w, true, a, rtz, flags),
            2 => from_int(int_w, float_w, false, a, rm, flags),
            3 => from_int(int_w, float_w, true, a, rm, flags),
            4 => match (sw, dw) {
                (4, 8) => widen_f(a, flags),
                (2, 4) => u64::from(f16_to_f32(a as u16, flags)),
                (8, 4) => u64::from(fpu::f64_to_f32(a, rm, flags)),
                _ => u64::from(f32_to_f16(a as u32, rm, flags)),
            },
            _ => {
                // round to odd: truncate, then set the low bit if anything was lost
                let mut f2 = 0u8;
                let r = fpu::f64_to_f32(a, Rm::Rtz, &mut f2);
                *flags |= f2;
                let nan = (r & 0x7f80_0000) == 0x7f80_0000 && r & 0x7f_ffff != 0;
                u64::from(if f2 & NX != 0 && !nan { r | 1 } else { r })
            }
        };
        v.set(fl.vd, i, dw, r);
    }
    Ok(VDone::default())
}

/// `vfrsqrt7` (`rm` None) and `vfrec7`: the 7-bit estimates of RVV 1.0 §13.9–§13.10, by the
/// specification's tables.
fn estimate(w: u32, a: u64, rm: Option<Rm>, flags: &mut u8) -> u64 {
    const RSQRT: [u8; 128] = [
        52, 51, 50, 48, 47, 46, 44, 43, 42, 41, 40, 39, 38, 36, 35, 34, 33, 32, 31, 30, 30, 29, 28,
        27, 26, 25, 24, 23, 23, 22, 21, 20, 19, 19, 18, 17, 16, 16, 15, 14, 14, 13, 12, 12, 11, 10,
        10, 9, 9, 8, 7, 7, 6, 6, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 127, 125, 123, 121, 119, 118, 116,
        114, 113, 111, 109, 108, 106, 105, 103, 102, 100, 99, 97, 96, 95, 93, 92, 91, 90, 88, 87,
        86, 85, 84, 83, 82, 80, 79, 78, 77, 76, 75, 74, 73, 72, 71, 70, 70, 69, 68, 67, 66, 65, 64,
        63, 63, 62, 61, 60, 59, 59, 58, 57, 56, 56, 55, 54, 53,
    ];
    const REC: [u8; 128] = [
        127, 125, 123, 121, 119, 117, 116, 114, 112, 110, 109, 107, 105, 104, 102, 100, 99, 97, 96,
        94, 93, 91, 90, 88, 87, 85, 84, 83, 81, 80, 79, 77, 76, 75, 74, 72, 71, 70, 69, 68, 66, 65,
        64, 63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42,
        41, 40, 40, 39, 38, 37, 36, 35, 35, 34, 33, 32, 31, 31, 30, 29, 28, 28, 27, 26, 25, 25, 24,
        23, 23, 22, 21, 21, 20, 19, 19, 18, 17, 17, 16, 15, 15, 14, 14, 13, 12, 12, 11, 11, 10, 9,
        9, 8, 8, 7, 7, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0,
    ];
    let (es, fs) = if w == 4 { (8u32, 23u32) } else { (11, 52) };
    let sign = a >> (es + fs) & 1;
    let mut exp = ((a >> fs) & ((1 << es) - 1)) as i64;
    let mut frac = a & ((1u64 << fs) - 1);
    let emax = (1i64 << es) - 1;
    let nan = if w == 4 {
        u64::from(fpu::CANONICAL_NAN_32)
    } else {
        fpu::CANONICAL_NAN_64
    };
    let inf = (emax as u64) << fs;
    let is_nan = exp == emax && frac != 0;
    let snan = is_nan && frac >> (fs - 1) == 0;
    let zero = exp == 0 && frac == 0;
    let signed = |v: u64| v | sign << (es + fs);
    if rm.is_none() {
        if snan || (sign == 1 && !zero && !is_nan) {
            *flags |= NV;
            return nan;
        }
        if is_nan {
            return nan;
        }
        if zero {
            *flags |= 0x08; // divide by zero
            return signed(inf);
        }
        if exp == emax {
            return 0;
        }
    } else {
        if exp == emax && frac == 0 {
            return signed(0);
        }
        if zero {
            *flags |= 0x08;
            return signed(inf);
        }
        if is_nan {
            if snan {
                *flags |= NV;
            }
            return nan;
        }
    }
    if exp == 0 {
        while frac >> (fs - 1) & 1 == 0 {
            exp -= 1;
            frac <<= 1;
        }
        frac = (frac << 1) & ((1u64 << fs) - 1);
    }
    let bias = (1i64 << (es - 1)) - 1;
    let Some(rm) = rm else {
        let idx = ((exp & 1) << 6) as u64 | frac >> (fs - 6);
        let out_frac = u64::from(RSQRT[idx as usize]) << (fs - 7);
        let out_exp = ((3 * bias - 1 - exp) / 2) as u64 & ((1 << es) - 1);
        return signed(out_exp << fs | out_frac);
    };
    if exp != 0 && exp != -1 && exp < 0 {
        // a subnormal too small: the reciprocal overflows
        *flags |= OF | NX;
        let max = matches!((rm, sign), (Rm::Rtz, _) | (Rm::Rdn, 0) | (Rm::Rup, 1));
        return signed(if max { inf - 1 } else { inf });
    }
    let mut out_frac = u64::from(REC[(frac >> (fs - 7)) as usize]) << (fs - 7);
    let mut out_exp = 2 * bias - 1 - exp;
    if out_exp == 0 || out_exp == -1 {
        out_frac = (out_frac >> 1) | 1 << (fs - 1);
        if out_exp == -1 {
            out_frac >>= 1;
            out_exp = 0;
        }
    }
    signed((out_exp as u64) << fs | out_frac)
}

/// The FP reductions (`vfredusum`, `vfredosum`, `vfredmin`, `vfredmax`, and the widening
/// sums): element 0 of `vd` from `vs1[0]` and the active elements in order.
fn reduce(
    v: &mut VState,
    fl: Fields,
    (w, lmul8, rm): (u32, u32, Rm),
    flags: &mut u8,
) -> Result<VDone, VFault> {
    let f6 = fl.funct6;
    let wide = f6 & 0b110000 != 0;
    if (wide && w != 4) || !group_ok(fl.vs2, lmul8) || v.vstart != 0 {
        return Err(VFault::Illegal);
    }
    let dw = if wide { 8 } else { w };
    if v.vl == 0 {
        return Ok(VDone::default());
    }
    let mut acc = v.get(fl.rs1, 0, dw);
    for i in 0..v.vl {
        if v.active(fl.vm, i) {
            let e = v.get(fl.vs2, i, w);
            acc = match f6 {
                0b000101 => min(w, acc, e, flags),
                0b000111 => max(w, acc, e, flags),
                _ if wide => add(8, acc, widen_f(e, flags), rm, flags),
                _ => add(w, acc, e, rm, flags),
            };
        }
    }
    v.set(fl.vd, 0, dw, acc);
    Ok(VDone::default())
}

/// Widening FP arithmetic (`vfwadd`, `vfwsub`, their `.w` forms, `vfwmul`, `vfwmacc`…): single
/// operands made double exactly, then the double operation.
fn widen(
    v: &mut VState,
    fl: Fields,
    (w, lmul8, rm, s): (u32, u32, Rm, Option<u64>),
    flags: &mut u8,
) -> Result<VDone, VFault> {
    let f6 = fl.funct6;
    let b_of = |v: &VState, i: u64| s.unwrap_or_else(|| v.get(fl.rs1, i, w));
    let plain = |v: &VState, dw: u32, aw: u32, m: bool| fits(v, fl, (w, lmul8, s), (dw, aw, m));
    let each = |v: &mut VState, dw: u32, f: &mut dyn FnMut(&VState, u64) -> u64| {
        super::int::each(v, fl, dw, f)
    };
    let wide_a = matches!(f6, 0b110100 | 0b110110);
    if w != 4 || !plain(v, 8, if wide_a { 8 } else { 4 }, false) {
        return Err(VFault::Illegal);
    }
    each(v, 8, &mut |v, i| {
        let b = widen_f(b_of(v, i), flags);
        let a = if wide_a {
            v.get(fl.vs2, i, 8)
        } else {
            widen_f(v.get(fl.vs2, i, 4), flags)
        };
        let d = v.get(fl.vd, i, 8);
        match f6 {
            0b110000 | 0b110100 => add(8, a, b, rm, flags),
            0b110010 | 0b110110 => sub(8, a, b, rm, flags),
            0b111000 => mul(8, a, b, rm, flags),
            0b111100 => fma(8, 0, b, a, d, rm, flags),
            0b111101 => fma(8, 3, b, a, d, rm, flags),
            0b111110 => fma(8, 1, b, a, d, rm, flags),
            _ => fma(8, 2, b, a, d, rm, flags),
        }
    })
}

/// FP comparisons into a mask, `vfmerge`/`vfmv.v.f`, and the scalar moves `vfmv.f.s` and
/// `vfmv.s.f`.
fn compare_or_move(
    v: &mut VState,
    c: &mut Ctx<'_>,
    fl: Fields,
    (w, lmul8, s): (u32, u32, Option<u64>),
    flags: &mut u8,
) -> Result<VDone, VFault> {
    let f6 = fl.funct6;
    let b_of = |v: &VState, i: u64| s.unwrap_or_else(|| v.get(fl.rs1, i, w));
    let plain = |v: &VState, dw: u32, aw: u32, m: bool| fits(v, fl, (w, lmul8, s), (dw, aw, m));
    match f6 {
        0b011000 | 0b011001 | 0b011011 | 0b011100 | 0b011101 | 0b011111 => {
            if (s.is_none() && f6 & 0b11101 == 0b11101) || !plain(v, w, w, true) {
                return Err(VFault::Illegal);
            }
            for i in v.vstart..v.vl {
                if v.active(fl.vm, i) {
                    let (a, b) = (v.get(fl.vs2, i, w), b_of(v, i));
                    let r = match f6 {
                        0b011000 => cmp(w, 0, a, b, flags),
                        0b011001 => cmp(w, 2, a, b, flags),
                        0b011011 => cmp(w, 1, a, b, flags),
                        0b011100 => !cmp(w, 0, a, b, flags),
                        0b011101 => cmp(w, 1, b, a, flags),
                        _ => cmp(w, 2, b, a, flags),
                    };
                    v.set_mbit(fl.vd, i, r);
                }
            }
            Ok(VDone::default())
        }
        0b010111 if s.is_some() => {
            let x = s.unwrap_or(0);
            if (fl.vm && fl.vs2 != 0) || !group_ok(fl.vd, lmul8) || !group_ok(fl.vs2, lmul8) {
                return Err(VFault::Illegal);
            }
            for i in v.vstart..v.vl {
                let r = if fl.vm || v.mbit(0, i) {
                    x
                } else {
                    v.get(fl.vs2, i, w)
                };
                v.set(fl.vd, i, w, r);
            }
            Ok(VDone::default())
        }
        0b010000 => match s {
            Some(x) if fl.vs2 == 0 && fl.vm => {
                if v.vstart < v.vl {
                    v.set(fl.vd, 0, w, x);
                }
                Ok(VDone::default())
            }
            None if fl.rs1 == 0 && fl.vm => {
                let e = v.get(fl.vs2, 0, w);
                let r = if w == 4 { fpu::nan_box(e as u32) } else { e };
                c.f[fl.vd as usize] = r;
                Ok(VDone {
                    result: Some(r),
                    ..VDone::default()
                })
            }
            _ => Err(VFault::Illegal),
        },
        _ => Err(VFault::Illegal),
    }
}
