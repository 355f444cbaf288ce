//! Vector loads and stores (RVV 1.0 §7): unit-stride, strided, indexed (ordered and
//! unordered alike: one hart), segments, fault-only-first, whole registers and masks.

use super::{group_ok, regs_of, Ctx, Fields, VDone, VFault, VState, VILL};

/// How the elements' addresses are formed.
#[derive(Clone, Copy)]
enum Mode {
    /// `base + (i × nf + f) × eew` (unit stride, segments interleaved).
    Unit,
    /// `base + i × stride + f × eew`.
    Strided(u64),
    /// `base + index[i] + f × sew`, the index of `eew` bytes from the group at `vs2`.
    Indexed(u32),
}

/// One access plan: what to move between which registers and where.
struct Plan {
    /// Data element width (bytes).
    w: u32,
    /// Fields per segment.
    nf: u32,
    /// Registers per field's group.
    regs: u32,
    /// Elements.
    evl: u64,
    mode: Mode,
    base: u64,
    /// Mask by v0.
    masked: bool,
    /// Fault-only-first.
    ff: bool,
}

fn eew_of(width: u32) -> Option<u32> {
    match width {
        0 => Some(1),
        5 => Some(2),
        6 => Some(4),
        7 => Some(8),
        _ => None,
    }
}

/// Works out the plan of the load or store `raw` on the current state, checking the groups.
fn plan(v: &VState, c: &Ctx<'_>, raw: u32, fl: Fields, load: bool) -> Result<Plan, VFault> {
    let eew = eew_of(fl.funct3).ok_or(VFault::Illegal)?;
    if raw >> 28 & 1 != 0 {
        return Err(VFault::Illegal); // mew: reserved
    }
    let nf = (raw >> 29) + 1;
    let mop = (raw >> 26) & 3;
    let base = c.x[fl.rs1 as usize];
    let masked = !fl.vm;
    if mop == 0 && fl.vs2 == 8 {
        // whole registers: vtype and vl do not matter
        if !nf.is_power_of_two() || masked || fl.vd % nf != 0 || (!load && eew != 1) {
            return Err(VFault::Illegal);
        }
        return Ok(Plan {
            w: eew,
            nf: 1,
            regs: nf,
            evl: u64::from(nf * v.vlenb / eew),
            mode: Mode::Unit,
            base,
            masked: false,
            ff: false,
        });
    }
    if v.vtype & VILL != 0 || (masked && fl.vd == 0 && load) {
        return Err(VFault::Illegal);
    }
    let (sew, lmul8) = (v.sew(), v.lmul8());
    if mop == 0 && fl.vs2 == 0xb {
        // vlm.v / vsm.v: ceil(vl / 8) bytes into one register
        if eew != 1 || nf != 1 || masked {
            return Err(VFault::Illegal);
        }
        return Ok(Plan {
            w: 1,
            nf: 1,
            regs: 1,
            evl: v.vl.div_ceil(8),
            mode: Mode::Unit,
            base,
            masked: false,
            ff: false,
        });
    }
    let (w, emul8, mode) = match mop {
        0 if fl.vs2 == 0 || (fl.vs2 == 0x10 && load) => (eew, eew * lmul8 / sew, Mode::Unit),
        2 => (eew, eew * lmul8 / sew, Mode::Strided(c.x[fl.vs2 as usize])),
        1 | 3 => {
            let iemul8 = eew * lmul8 / sew;
            if iemul8 == 0 || !group_ok(fl.vs2, iemul8) {
                return Err(VFault::Illegal);
            }
            (sew, lmul8, Mode::Indexed(eew))
        }
        _ => return Err(VFault::Illegal),
    };
    let regs = regs_of(emul8);
    if emul8 == 0 || !group_ok(fl.vd, emul8) || nf * regs > 8 || fl.vd + nf * regs > 32 {
        return Err(VFault::Illegal);
    }
    Ok(Plan {
        w,
        nf,
        regs,
        evl: v.vl,
        mode,
        base,
        masked,
        ff: mop == 0 && fl.vs2 == 0x10,
    })
}

impl Plan {
    fn addr(&self, v: &VState, vs2: u32, i: u64, f: u32) -> u64 {
        let (w, f) = (u64::from(self.w), u64::from(f));
        match self.mode {
            Mode::Unit => self
                .base
                .wrapping_add((i * u64::from(self.nf) + f).wrapping_mul(w)),
            Mode::Strided(s) => self
                .base
                .wrapping_add(i.wrapping_mul(s))
                .wrapping_add(f * w),
            Mode::Indexed(e) => self.base.wrapping_add(v.get(vs2, i, e)).wrapping_add(f * w),
        }
    }
}

/// For an unmasked unit-stride access of one field: its first address and the register
/// bytes it moves, from `vstart` on.
fn contiguous(v: &VState, p: &Plan, fl: Fields) -> Option<(u64, std::ops::Range<usize>)> {
    if !matches!(p.mode, Mode::Unit) || p.nf != 1 || p.masked || v.vstart >= p.evl {
        return None;
    }
    let start = v.off(fl.vd, v.vstart, p.w);
    let len = usize::try_from((p.evl - v.vstart) * u64::from(p.w)).ok()?;
    let a = p.base.wrapping_add(v.vstart.wrapping_mul(u64::from(p.w)));
    (start + len <= v.regs.len()).then_some((a, start..start + len))
}

/// A vector load.
pub(super) fn load(v: &mut VState, c: &mut Ctx<'_>, raw: u32, fl: Fields) -> Result<VDone, VFault> {
    let p = plan(v, c, raw, fl, true)?;
    if let Some((a, range)) = contiguous(v, &p, fl) {
        // one copy; a fault anywhere leaves it to the element loop, which stops at the
        // faulting element (the bytes before it, copied already, are the same either way)
        if c.mem.read_bytes(a, &mut v.regs[range.clone()]).is_ok() {
            return Ok(VDone {
                mem_addr: a,
                mem_bytes: range.len() as u64,
                ..VDone::default()
            });
        }
    }
    let mut done = VDone::default();
    let mut first = true;
    let mut i = v.vstart;
    while i < p.evl {
        if p.masked && !v.mbit(0, i) {
            i += 1;
            continue;
        }
        for f in 0..p.nf {
            let a = p.addr(v, fl.vs2, i, f);
            if first {
                (done.mem_addr, first) = (a, false);
            }
            match c.mem.load_sized(a, p.w as u8) {
                Ok(x) => v.set(fl.vd + f * p.regs, i, p.w, x),
                Err(e) if p.ff && i > 0 => {
                    let _ = e;
                    v.vl = i;
                    return Ok(done);
                }
                Err(e) => {
                    v.vstart = i;
                    return Err(VFault::Load(e.addr()));
                }
            }
            done.mem_bytes += u64::from(p.w);
        }
        i += 1;
    }
    Ok(done)
}

/// A vector store.
pub(super) fn store(
    v: &mut VState,
    c: &mut Ctx<'_>,
    raw: u32,
    fl: Fields,
) -> Result<VDone, VFault> {
    let p = plan(v, c, raw, fl, false)?;
    if let Some((a, range)) = contiguous(v, &p, fl) {
        // (a store that would fault writes nothing here: the element loop then stores up to
        // the faulting element)
        if c.mem.write_bytes(a, &v.regs[range.clone()]).is_ok() {
            return Ok(VDone {
                mem_addr: a,
                mem_bytes: range.len() as u64,
                stored: true,
                ..VDone::default()
            });
        }
    }
    let mut done = VDone {
        stored: true,
        ..VDone::default()
    };
    let mut first = true;
    let mut i = v.vstart;
    while i < p.evl {
        if p.masked && !v.mbit(0, i) {
            i += 1;
            continue;
        }
        for f in 0..p.nf {
            let a = p.addr(v, fl.vs2, i, f);
            if first {
                (done.mem_addr, first) = (a, false);
            }
            let x = v.get(fl.vd + f * p.regs, i, p.w);
            if let Err(e) = c.mem.store_sized(a, p.w as u8, x) {
                v.vstart = i;
                return Err(VFault::Store(e.addr()));
            }
            done.mem_bytes += u64::from(p.w);
        }
        i += 1;
    }
    Ok(done)
}
