//! Integer, fixed-point, mask, reduction and permutation instructions (RVV 1.0 §11–§16) and
//! Zvbb's bit manipulation.

use super::{group_ok, round_inc, sext, trunc, Ctx, Fields, VDone, VFault, VState};

/// The scalar or immediate operand of an OPIVX / OPIVI / OPMVX form (`None` for vector-vector).
fn scalar(c: &Ctx<'_>, fl: Fields) -> Option<u64> {
    match fl.funct3 {
        3 => Some(((i64::from(fl.rs1) << 59) >> 59) as u64),
        4 | 6 => Some(c.x[fl.rs1 as usize]),
        _ => None,
    }
}

/// Checks an element-wise instruction's groups: the destination (width `dw` bytes, so
/// EMUL × 8 = `dw × lmul8 / sew`), `vs2` (width `aw`) and, for vector-vector, `vs1` (`sew`).
fn check(v: &VState, fl: Fields, dw: u32, aw: u32, mask_dest: bool) -> Result<(), VFault> {
    let (sew, lmul8) = (v.sew(), v.lmul8());
    let em = |w: u32| w * lmul8 / sew;
    let dest_ok = if mask_dest {
        true
    } else {
        group_ok(fl.vd, em(dw))
    };
    // (the unary groups keep an operation number in the vs1 field)
    // (vrgatherei16's indices and vcompress's mask are checked by their instructions)
    let vv = matches!(fl.funct3, 0..=2)
        && !matches!(fl.funct6, 0b010000 | 0b010010 | 0b010011 | 0b010100)
        && !matches!((fl.funct3, fl.funct6), (0, 0b001110) | (2, 0b010111));
    if !dest_ok
        || !group_ok(fl.vs2, em(aw))
        || (vv && !group_ok(fl.rs1, lmul8))
        || (!fl.vm && fl.vd == 0 && !mask_dest)
        || em(dw) > 64
        || em(aw) > 64
    {
        return Err(VFault::Illegal);
    }
    Ok(())
}

/// `vslide1up` (`up`) / `vslide1down` and their FP forms: `x` enters at one end.
pub(super) fn slide1(v: &mut VState, fl: Fields, x: u64, up: bool) -> Result<VDone, VFault> {
    let w = v.sew();
    let src = v.clone();
    let vl = v.vl;
    each(v, fl, w, |_, i| match (up, i) {
        (true, 0) => x,
        (true, _) => src.get(fl.vs2, i - 1, w),
        (false, _) if i + 1 == vl => x,
        (false, _) => src.get(fl.vs2, i + 1, w),
    })
}

/// Writes `f(state, i)` (of `dw` bytes) to every active body element of `vd`.
pub(super) fn each(
    v: &mut VState,
    fl: Fields,
    dw: u32,
    mut f: impl FnMut(&VState, u64) -> u64,
) -> Result<VDone, VFault> {
    for i in v.vstart..v.vl {
        if v.active(fl.vm, i) {
            let r = f(v, i);
            v.set(fl.vd, i, dw, r);
        }
    }
    Ok(VDone::default())
}

/// Writes mask bit `f(state, i)` of every active body element of `vd`.
fn each_bit(
    v: &mut VState,
    fl: Fields,
    all: bool,
    mut f: impl FnMut(&VState, u64) -> bool,
) -> Result<VDone, VFault> {
    for i in v.vstart..v.vl {
        if all || v.active(fl.vm, i) {
            let b = f(v, i);
            v.set_mbit(fl.vd, i, b);
        }
    }
    Ok(VDone::default())
}

/// Saturates signed `r` to `w` bytes, noting saturation.
fn sat_s(r: i128, w: u32, sat: &mut bool) -> u64 {
    let (lo, hi) = (-(1i128 << (8 * w - 1)), (1i128 << (8 * w - 1)) - 1);
    let c = r.clamp(lo, hi);
    *sat |= c != r;
    trunc(c as u64, w)
}

/// Saturates unsigned `r` to `w` bytes, noting saturation.
fn sat_u(r: i128, w: u32, sat: &mut bool) -> u64 {
    let hi = (1i128 << (8 * w)) - 1;
    let c = r.clamp(0, hi);
    *sat |= c != r;
    c as u64
}

/// A single-width element operation of OPI (`a` from vs2, `b` the other operand, both
/// truncated to `w` bytes).
fn opi_elem(f6: u32, a: u64, b: u64, w: u32, vxrm: u8, sat: &mut bool) -> Option<u64> {
    let bits = 8 * w;
    let (sa, sb) = (i128::from(sext(a, w)), i128::from(sext(b, w)));
    let (ua, ub) = (i128::from(a), i128::from(b));
    let sh = (b & u64::from(bits - 1)) as u32;
    let r = match f6 {
        0b000000 => a.wrapping_add(b),
        0b000010 => a.wrapping_sub(b),
        0b000011 => b.wrapping_sub(a),
        0b000100 => a.min(b),
        0b000101 => sa.min(sb) as u64,
        0b000110 => a.max(b),
        0b000111 => sa.max(sb) as u64,
        0b001001 => a & b,
        0b001010 => a | b,
        0b001011 => a ^ b,
        0b000001 => a & !b,
        0b010100 => (a >> sh) | if sh == 0 { 0 } else { a << (bits - sh) },
        0b010101 => (a << sh) | if sh == 0 { 0 } else { a >> (bits - sh) },
        0b100000 => sat_u(ua + ub, w, sat),
        0b100001 => sat_s(sa + sb, w, sat),
        0b100010 => sat_u(ua - ub, w, sat),
        0b100011 => sat_s(sa - sb, w, sat),
        0b100101 => a << sh,
        0b100111 => {
            let p = sa * sb;
            let d = bits - 1;
            let r = (p >> d) + round_inc(p as u128, d, vxrm) as i128;
            sat_s(r, w, sat)
        }
        0b101000 => a >> sh,
        0b101001 => (sa >> sh) as u64,
        0b101010 => ((ua >> sh) + round_inc(a as u128, sh, vxrm) as i128) as u64,
        0b101011 => ((sa >> sh) + round_inc(sa as u128, sh, vxrm) as i128) as u64,
        _ => return None,
    };
    Some(trunc(r, w))
}

/// A single-width element operation of OPM (`d` the destination's old element).
fn opm_elem(f6: u32, a: u64, b: u64, d: u64, w: u32, vxrm: u8) -> Option<u64> {
    let bits = 8 * w;
    let (sa, sb) = (i128::from(sext(a, w)), i128::from(sext(b, w)));
    let (ua, ub) = (i128::from(a), i128::from(b));
    let min = 1u64 << (bits - 1);
    let avg = |s: i128| ((s >> 1) + round_inc(s as u128, 1, vxrm) as i128) as u64;
    let r = match f6 {
        0b001000 => avg(ua + ub),
        0b001001 => avg(sa + sb),
        0b001010 => avg(ua - ub),
        0b001011 => avg(sa - sb),
        0b100000 => a.checked_div(b).unwrap_or(u64::MAX),
        0b100001 if b == 0 => u64::MAX,
        0b100001 if a == min && sext(b, w) == -1 => a,
        0b100001 => (sa / sb) as u64,
        0b100010 => a.checked_rem(b).unwrap_or(a),
        0b100011 if b == 0 => a,
        0b100011 if a == min && sext(b, w) == -1 => 0,
        0b100011 => (sa % sb) as u64,
        0b100100 => ((u128::from(a) * u128::from(b)) >> bits) as u64,
        0b100101 => a.wrapping_mul(b),
        0b100110 => ((sa * ub) >> bits) as u64,
        0b100111 => ((sa * sb) >> bits) as u64,
        0b101001 => b.wrapping_mul(d).wrapping_add(a),
        0b101011 => a.wrapping_sub(b.wrapping_mul(d)),
        0b101101 => b.wrapping_mul(a).wrapping_add(d),
        0b101111 => d.wrapping_sub(b.wrapping_mul(a)),
        _ => return None,
    };
    Some(trunc(r, w))
}

/// The OPIVV, OPIVX and OPIVI instructions.
pub(super) fn opi(v: &mut VState, c: &mut Ctx<'_>, fl: Fields, raw: u32) -> Result<VDone, VFault> {
    let _ = raw;
    let w = v.sew();
    let s = scalar(c, fl);
    let f6 = fl.funct6;
    let imm = fl.funct3 == 3;
    let uimm = u64::from(fl.rs1);
    let b_of = |v: &VState, i: u64| match s {
        Some(x) => trunc(x, w),
        None => v.get(fl.rs1, i, w),
    };
    let vxrm = v.vxrm;
    if !c.zvbb && matches!(f6, 0b000001 | 0b010100 | 0b010101 | 0b110101) {
        return Err(VFault::Illegal);
    }
    match f6 {
        // vror.vi: bit 26 is the immediate's bit 5
        0b010100 | 0b010101 if imm => {
            check(v, fl, w, w, false)?;
            let sh = uimm | u64::from(f6 & 1) << 5;
            let mut sat = false;
            each(v, fl, w, |v, i| {
                opi_elem(0b010100, v.get(fl.vs2, i, w), sh, w, vxrm, &mut sat).unwrap_or(0)
            })
        }
        0b100111 if imm => whole_move(v, fl),
        0b000000
        | 0b000010..=0b000111
        | 0b001001..=0b001011
        | 0b000001
        | 0b010100
        | 0b010101
        | 0b100000..=0b100011
        | 0b100101
        | 0b100111
        | 0b101000..=0b101011 => {
            let shift = matches!(f6, 0b100101 | 0b101000..=0b101011 | 0b010100 | 0b010101);
            if (imm && matches!(f6, 0b000010 | 0b000100..=0b000111 | 0b100010 | 0b100011))
                || (s.is_none() && f6 == 0b000011)
            {
                return Err(VFault::Illegal);
            }
            check(v, fl, w, w, false)?;
            let mut sat = false;
            let r = each(v, fl, w, |v, i| {
                let b = if imm && shift { uimm } else { b_of(v, i) };
                opi_elem(f6, v.get(fl.vs2, i, w), b, w, vxrm, &mut sat).unwrap_or(0)
            });
            if sat {
                v.vxsat = 1;
            }
            r
        }
        0b001100 => gather(v, fl, s.map(|x| if imm { uimm } else { x }), false),
        0b001110 if s.is_none() => gather(v, fl, None, true),
        0b001110 | 0b001111 => slide(
            v,
            fl,
            if imm { uimm } else { s.unwrap_or(0) },
            f6 == 0b001110,
        ),
        0b010000..=0b010011 => carry(v, fl, f6, s),
        0b010111 => {
            if fl.vm && fl.vs2 != 0 {
                return Err(VFault::Illegal);
            }
            check(v, fl, w, w, false)?;
            for i in v.vstart..v.vl {
                let r = if fl.vm || v.mbit(0, i) {
                    b_of(v, i)
                } else {
                    v.get(fl.vs2, i, w)
                };
                v.set(fl.vd, i, w, r);
            }
            Ok(VDone::default())
        }
        0b011000..=0b011111 => {
            if (s.is_none() && f6 >= 0b011110) || (imm && matches!(f6, 0b011010 | 0b011011)) {
                return Err(VFault::Illegal);
            }
            check(v, fl, w, w, true)?;
            each_bit(v, fl, false, |v, i| {
                let (a, b) = (v.get(fl.vs2, i, w), b_of(v, i));
                let (sa, sb) = (sext(a, w), sext(b, w));
                match f6 {
                    0b011000 => a == b,
                    0b011001 => a != b,
                    0b011010 => a < b,
                    0b011011 => sa < sb,
                    0b011100 => a <= b,
                    0b011101 => sa <= sb,
                    0b011110 => a > b,
                    _ => sa > sb,
                }
            })
        }
        0b101100..=0b101111 => {
            if w > 4 {
                return Err(VFault::Illegal);
            }
            check(v, fl, w, 2 * w, false)?;
            let mut sat = false;
            let r = each(v, fl, w, |v, i| {
                let a = v.get(fl.vs2, i, 2 * w);
                let sh = ((if imm { uimm } else { b_of(v, i) }) & u64::from(16 * w - 1)) as u32;
                let sa = i128::from(sext(a, 2 * w));
                match f6 {
                    0b101100 => trunc(a >> sh, w),
                    0b101101 => trunc((sa >> sh) as u64, w),
                    0b101110 => {
                        let r = (i128::from(a) >> sh) + round_inc(a as u128, sh, vxrm) as i128;
                        sat_u(r, w, &mut sat)
                    }
                    _ => {
                        let r = (sa >> sh) + round_inc(sa as u128, sh, vxrm) as i128;
                        sat_s(r, w, &mut sat)
                    }
                }
            });
            if sat {
                v.vxsat = 1;
            }
            r
        }
        0b110000 | 0b110001 if s.is_none() => {
            if w > 4 {
                return Err(VFault::Illegal);
            }
            let signed = f6 & 1 != 0;
            reduce(v, fl, 2 * w, |v, acc, i| {
                let e = v.get(fl.vs2, i, w);
                let e = if signed { sext(e, w) as u64 } else { e };
                acc.wrapping_add(e)
            })
        }
        0b110101 => {
            if w > 4 {
                return Err(VFault::Illegal);
            }
            check(v, fl, 2 * w, w, false)?;
            each(v, fl, 2 * w, |v, i| {
                let b = if imm { uimm } else { b_of(v, i) };
                trunc(v.get(fl.vs2, i, w) << (b & u64::from(16 * w - 1)), 2 * w)
            })
        }
        _ => Err(VFault::Illegal),
    }
}

/// `vmv<nr>r.v`: whole registers.
fn whole_move(v: &mut VState, fl: Fields) -> Result<VDone, VFault> {
    let nr = fl.rs1 + 1;
    if !fl.vm || !nr.is_power_of_two() || nr > 8 || fl.vd % nr != 0 || fl.vs2 % nr != 0 {
        return Err(VFault::Illegal);
    }
    let n = (nr * v.vlenb) as usize;
    let (d, s) = (v.off(fl.vd, 0, 1), v.off(fl.vs2, 0, 1));
    let from = (v.vstart as usize * v.sew() as usize).min(n);
    v.regs.copy_within(s + from..s + n, d + from);
    Ok(VDone::default())
}

/// `vadc`, `vmadc`, `vsbc`, `vmsbc`.
fn carry(v: &mut VState, fl: Fields, f6: u32, s: Option<u64>) -> Result<VDone, VFault> {
    let w = v.sew();
    let mask_out = f6 & 1 != 0;
    let sub = f6 & 2 != 0;
    if (!mask_out && fl.vm) || (sub && fl.funct3 == 3) {
        return Err(VFault::Illegal);
    }
    let b_of = |v: &VState, i: u64| match s {
        Some(x) => trunc(x, w),
        None => v.get(fl.rs1, i, w),
    };
    let cin = |v: &VState, i: u64| u128::from(!fl.vm && v.mbit(0, i));
    let full = 1u128 << (8 * w);
    if mask_out {
        check(v, fl, w, w, true)?;
        let src = v.clone();
        for i in v.vstart..v.vl {
            let (a, b) = (u128::from(src.get(fl.vs2, i, w)), u128::from(b_of(&src, i)));
            let out = if sub {
                a < b + cin(&src, i)
            } else {
                a + b + cin(&src, i) >= full
            };
            v.set_mbit(fl.vd, i, out);
        }
        return Ok(VDone::default());
    }
    if fl.vd == 0 {
        return Err(VFault::Illegal);
    }
    check(v, fl, w, w, true)?;
    for i in v.vstart..v.vl {
        let (a, b) = (v.get(fl.vs2, i, w), b_of(v, i));
        let c = cin(v, i) as u64;
        let r = if sub {
            a.wrapping_sub(b).wrapping_sub(c)
        } else {
            a.wrapping_add(b).wrapping_add(c)
        };
        v.set(fl.vd, i, w, trunc(r, w));
    }
    Ok(VDone::default())
}

/// `vrgather` (`idx`: the scalar index; `ei16`: `vrgatherei16.vv`).
fn gather(v: &mut VState, fl: Fields, idx: Option<u64>, ei16: bool) -> Result<VDone, VFault> {
    let (w, lmul8) = (v.sew(), v.lmul8());
    check(v, fl, w, w, false)?;
    if ei16 && !group_ok(fl.rs1, 2 * lmul8 / w) {
        return Err(VFault::Illegal);
    }
    let vlmax = v.vlmax();
    let src = v.clone();
    each(v, fl, w, |_, i| {
        let k = match idx {
            Some(k) => k,
            None if ei16 => src.get(fl.rs1, i, 2),
            None => src.get(fl.rs1, i, w),
        };
        if k >= vlmax {
            0
        } else {
            src.get(fl.vs2, k, w)
        }
    })
}

/// `vslideup` / `vslidedown` by `off`.
fn slide(v: &mut VState, fl: Fields, off: u64, up: bool) -> Result<VDone, VFault> {
    let w = v.sew();
    check(v, fl, w, w, false)?;
    let vlmax = v.vlmax();
    let src = v.clone();
    let start = if up { v.vstart.max(off) } else { v.vstart };
    for i in start..v.vl {
        if !v.active(fl.vm, i) {
            continue;
        }
        let r = if up {
            src.get(fl.vs2, i - off, w)
        } else {
            match i.checked_add(off) {
                Some(k) if k < vlmax => src.get(fl.vs2, k, w),
                _ => 0,
            }
        };
        v.set(fl.vd, i, w, r);
    }
    Ok(VDone::default())
}

/// A reduction into element 0 of `vd` (`dw` bytes) from `vs1[0]` over the active elements.
fn reduce(
    v: &mut VState,
    fl: Fields,
    dw: u32,
    mut f: impl FnMut(&VState, u64, u64) -> u64,
) -> Result<VDone, VFault> {
    if !group_ok(fl.vs2, v.lmul8()) || v.vstart != 0 {
        return Err(VFault::Illegal);
    }
    if v.vl == 0 {
        return Ok(VDone::default());
    }
    let mut acc = v.get(fl.rs1, 0, dw);
    for i in 0..v.vl {
        if v.active(fl.vm, i) {
            acc = f(v, acc, i);
        }
    }
    v.set(fl.vd, 0, dw, trunc(acc, dw));
    Ok(VDone::default())
}

/// The OPMVV and OPMVX instructions.
pub(super) fn opm(v: &mut VState, c: &mut Ctx<'_>, fl: Fields) -> Result<VDone, VFault> {
    let w = v.sew();
    let s = scalar(c, fl);
    let f6 = fl.funct6;
    let b_of = |v: &VState, i: u64| match s {
        Some(x) => trunc(x, w),
        None => v.get(fl.rs1, i, w),
    };
    let vxrm = v.vxrm;
    match f6 {
        0b000000..=0b000111 if s.is_none() => reduce(v, fl, w, |v, acc, i| {
            let (a, e) = (acc, v.get(fl.vs2, i, w));
            match f6 {
                0 => a.wrapping_add(e),
                1 => a & e,
                2 => a | e,
                3 => a ^ e,
                4 => trunc(a, w).min(e),
                5 => (sext(a, w).min(sext(e, w))) as u64,
                6 => trunc(a, w).max(e),
                _ => (sext(a, w).max(sext(e, w))) as u64,
            }
        }),
        0b001000..=0b001011 | 0b100000..=0b100111 | 0b101001 | 0b101011 | 0b101101 | 0b101111 => {
            check(v, fl, w, w, false)?;
            each(v, fl, w, |v, i| {
                let (a, d) = (v.get(fl.vs2, i, w), v.get(fl.vd, i, w));
                opm_elem(f6, a, b_of(v, i), d, w, vxrm).unwrap_or(0)
            })
        }
        0b001110 | 0b001111 if s.is_some() => {
            check(v, fl, w, w, false)?;
            slide1(v, fl, trunc(s.unwrap_or(0), w), f6 == 0b001110)
        }
        0b010000 => unary0(v, c, fl, s),
        0b010010 if s.is_none() => {
            if !c.zvbb && fl.rs1 >= 8 {
                return Err(VFault::Illegal);
            }
            extend_or_bits(v, fl)
        }
        0b010100 if s.is_none() => set_first(v, fl),
        0b010111 if s.is_none() => {
            if !fl.vm || v.vstart != 0 {
                return Err(VFault::Illegal);
            }
            check(v, fl, w, w, true)?;
            if !group_ok(fl.vd, v.lmul8()) {
                return Err(VFault::Illegal);
            }
            let src = v.clone();
            let mut k = 0;
            for i in 0..v.vl {
                if src.mbit(fl.rs1, i) {
                    v.set(fl.vd, k, w, src.get(fl.vs2, i, w));
                    k += 1;
                }
            }
            Ok(VDone::default())
        }
        0b011000..=0b011111 if s.is_none() => {
            let src = v.clone();
            each_bit(v, fl, true, |_, i| {
                let (a, b) = (src.mbit(fl.vs2, i), src.mbit(fl.rs1, i));
                match f6 {
                    0b011000 => a && !b,
                    0b011001 => a && b,
                    0b011010 => a || b,
                    0b011011 => a != b,
                    0b011100 => a || !b,
                    0b011101 => !(a && b),
                    0b011110 => !(a || b),
                    _ => a == b,
                }
            })
        }
        0b110000..=0b111111 => widen(v, fl, s),
        _ => Err(VFault::Illegal),
    }
}

/// Widening integer arithmetic (`vwadd`… `vwmacc`…).
fn widen(v: &mut VState, fl: Fields, s: Option<u64>) -> Result<VDone, VFault> {
    let w = v.sew();
    let f6 = fl.funct6;
    if w > 4 || f6 == 0b111001 || (f6 == 0b111110 && s.is_none()) {
        return Err(VFault::Illegal);
    }
    let wide_a = matches!(f6, 0b110100..=0b110111);
    check(v, fl, 2 * w, if wide_a { 2 * w } else { w }, false)?;
    let b_of = |v: &VState, i: u64| match s {
        Some(x) => trunc(x, w),
        None => v.get(fl.rs1, i, w),
    };
    let d2 = 2 * w;
    each(v, fl, d2, |v, i| {
        let b = b_of(v, i);
        let (zb, sb) = (b, sext(b, w) as u64);
        let r = if wide_a {
            let a = v.get(fl.vs2, i, d2);
            match f6 {
                0b110100 => a.wrapping_add(zb),
                0b110101 => a.wrapping_add(sb),
                0b110110 => a.wrapping_sub(zb),
                _ => a.wrapping_sub(sb),
            }
        } else {
            let a = v.get(fl.vs2, i, w);
            let (za, sa) = (a, sext(a, w) as u64);
            let d = v.get(fl.vd, i, d2);
            match f6 {
                0b110000 => za.wrapping_add(zb),
                0b110001 => sa.wrapping_add(sb),
                0b110010 => za.wrapping_sub(zb),
                0b110011 => sa.wrapping_sub(sb),
                0b111000 => za.wrapping_mul(zb),
                0b111010 => sa.wrapping_mul(zb),
                0b111011 => sa.wrapping_mul(sb),
                0b111100 => d.wrapping_add(za.wrapping_mul(zb)),
                0b111101 => d.wrapping_add(sa.wrapping_mul(sb)),
                0b111110 => d.wrapping_add(sa.wrapping_mul(zb)),
                _ => d.wrapping_add(za.wrapping_mul(sb)),
            }
        };
        trunc(r, d2)
    })
}

/// `vmv.x.s`, `vcpop.m`, `vfirst.m` (OPMVV) and `vmv.s.x` (OPMVX).
fn unary0(v: &mut VState, c: &mut Ctx<'_>, fl: Fields, s: Option<u64>) -> Result<VDone, VFault> {
    let w = v.sew();
    if let Some(x) = s {
        if fl.vs2 != 0 || !fl.vm {
            return Err(VFault::Illegal);
        }
        if v.vstart < v.vl {
            v.set(fl.vd, 0, w, trunc(x, w));
        }
        return Ok(VDone::default());
    }
    let r = match fl.rs1 {
        0 if fl.vm => sext(v.get(fl.vs2, 0, w), w) as u64,
        0x10 | 0x11 if v.vstart == 0 => {
            let mut n = 0u64;
            let mut first = u64::MAX;
            for i in 0..v.vl {
                if v.active(fl.vm, i) && v.mbit(fl.vs2, i) {
                    n += 1;
                    if first == u64::MAX {
                        first = i;
                    }
                }
            }
            if fl.rs1 == 0x10 {
                n
            } else {
                first
            }
        }
        _ => return Err(VFault::Illegal),
    };
    if fl.vd != 0 {
        c.x[fl.vd as usize] = r;
    }
    Ok(VDone {
        result: Some(r),
        ..VDone::default()
    })
}

/// `vzext`/`vsext` and Zvbb's unary operations (VXUNARY0).
fn extend_or_bits(v: &mut VState, fl: Fields) -> Result<VDone, VFault> {
    let w = v.sew();
    let lmul8 = v.lmul8();
    let op = fl.rs1;
    if (2..=7).contains(&op) {
        let k = 1 << (4 - op / 2); // vf8, vf4, vf2
        let sw = w / k;
        let signed = op & 1 != 0;
        if sw == 0
            || lmul8 / k == 0
            || !group_ok(fl.vd, lmul8)
            || !group_ok(fl.vs2, lmul8 / k)
            || (!fl.vm && fl.vd == 0)
        {
            return Err(VFault::Illegal);
        }
        return each(v, fl, w, |v, i| {
            let e = v.get(fl.vs2, i, sw);
            if signed {
                trunc(sext(e, sw) as u64, w)
            } else {
                e
            }
        });
    }
    if !matches!(op, 8 | 9 | 10 | 12 | 13 | 14) {
        return Err(VFault::Illegal);
    }
    check(v, fl, w, w, false)?;
    let bits = 8 * w;
    each(v, fl, w, |v, i| {
        let e = v.get(fl.vs2, i, w);
        match op {
            8 => {
                let mut b = e.to_le_bytes();
                b.iter_mut().for_each(|x| *x = x.reverse_bits());
                u64::from_le_bytes(b)
            }
            9 => e.swap_bytes() >> (64 - bits),
            10 => e.reverse_bits() >> (64 - bits),
            12 => u64::from((e << (64 - bits)).leading_zeros().min(bits)),
            13 => u64::from(e.trailing_zeros().min(bits)),
            _ => u64::from(e.count_ones()),
        }
    })
}

/// `vmsbf`, `vmsof`, `vmsif`, `viota`, `vid` (VMUNARY0).
fn set_first(v: &mut VState, fl: Fields) -> Result<VDone, VFault> {
    let w = v.sew();
    match fl.rs1 {
        1..=3 => {
            if v.vstart != 0 || fl.vd == fl.vs2 || (!fl.vm && fl.vd == 0) {
                return Err(VFault::Illegal);
            }
            let mut found = false;
            let src = v.clone();
            each_bit(v, fl, false, |_, i| {
                let bit = src.mbit(fl.vs2, i);
                let r = match fl.rs1 {
                    1 => !found && !bit,
                    2 => !found && bit,
                    _ => !found,
                };
                found |= bit;
                r
            })
        }
        0x10 => {
            if v.vstart != 0 || !group_ok(fl.vd, v.lmul8()) || (!fl.vm && fl.vd == 0) {
                return Err(VFault::Illegal);
            }
            let src = v.clone();
            let mut n = 0u64;
            each(v, fl, w, |_, i| {
                let r = n;
                n += u64::from(src.mbit(fl.vs2, i));
                trunc(r, w)
            })
        }
        0x11 if fl.vs2 == 0 => {
            if !group_ok(fl.vd, v.lmul8()) || (!fl.vm && fl.vd == 0) {
                return Err(VFault::Illegal);
            }
            each(v, fl, w, |_, i| trunc(i, w))
        }
        _ => Err(VFault::Illegal),
    }
}
