//! The vector unit: RVV 1.0 (the V extension as RVA23U64 requires it) and Zvbb (docs/machine.md,
//! "Vectors").
//!
//! One function, [`execute`], runs every vector instruction on a [`VState`] (the 32 vector
//! registers, `vl`, `vtype`, `vstart`, `vxrm`, `vxsat`) and a [`Ctx`] (the scalar registers, the
//! FP status and guest memory); every engine calls it: the single-step interpreter and the block
//! engine directly, compiled code through a host helper. Elements are processed one by one in
//! index order, so a fault leaves `vstart` at the faulting element as the specification says
//! and a restarted instruction goes on from there.
//!
//! Policies follow qemu's defaults (what a user comparing against qemu sees): tail and
//! masked-off elements are left undisturbed whether the instruction asks for agnostic or
//! undisturbed; `vsetvl` grants `vl = min(AVL, VLMAX)`. Register groups must be aligned to
//! their size (an unaligned group is an illegal instruction), so no access can leave the
//! register file.

mod fp;
mod int;
mod mem;
mod text;

pub use text::disassemble;

use crate::memory::Memory;

/// VLEN (bits per vector register) when the user does not choose: qemu's default.
pub const DEFAULT_VLEN: u32 = 128;
/// The largest VLEN the machine accepts (qemu's limit).
pub const MAX_VLEN: u32 = 1024;
/// The smallest VLEN the machine accepts (V requires at least 128).
pub const MIN_VLEN: u32 = 128;
/// `vtype`'s illegal bit.
pub const VILL: u64 = 1 << 63;

/// The vector unit's architectural state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VState {
    vlenb: u32,
    /// The 32 registers, `vlenb` bytes each, little-endian elements; empty until the first
    /// vector instruction (a program without vectors pays nothing at a thread switch).
    regs: Vec<u8>,
    /// Vector length.
    pub vl: u64,
    /// Vector type (`VILL` when the last `vsetvl` asked for an unsupported one).
    pub vtype: u64,
    /// The element the next vector instruction starts at.
    pub vstart: u64,
    /// Fixed-point rounding mode (2 bits).
    pub vxrm: u8,
    /// Fixed-point saturation flag.
    pub vxsat: u8,
}

impl Default for VState {
    fn default() -> Self {
        VState::new(DEFAULT_VLEN)
    }
}

/// What a vector instruction reads and writes besides its own state.
pub struct Ctx<'a> {
    /// Integer registers.
    pub x: &'a mut [u64; 32],
    /// FP registers (singles NaN-boxed).
    pub f: &'a mut [u64; 32],
    /// Accrued FP flags.
    pub fflags: &'a mut u8,
    /// Dynamic rounding mode.
    pub frm: u8,
    /// Guest memory.
    pub mem: &'a mut Memory,
    /// Zvbb is enabled.
    pub zvbb: bool,
    /// Zvfhmin is enabled.
    pub zvfhmin: bool,
}

/// Why a vector instruction did not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VFault {
    /// Reserved encoding, unsupported `vtype`, misaligned register group, or an FP rounding
    /// mode that is invalid.
    Illegal,
    /// A load element faulted at this address (`vstart` holds its index).
    Load(u64),
    /// A store element faulted at this address (`vstart` holds its index).
    Store(u64),
}

/// What a completed vector instruction did, for the retire record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VDone {
    /// The value written to `x[rd]` or `f[rd]`, if it wrote one.
    pub result: Option<u64>,
    /// First address and bytes touched by a memory instruction (0 bytes: none).
    pub mem_addr: u64,
    /// Bytes touched.
    pub mem_bytes: u64,
    /// It stored.
    pub stored: bool,
}

impl VState {
    /// A unit with `vlen` bits per register (a power of two in
    /// `MIN_VLEN..=MAX_VLEN`, else the default).
    pub fn new(vlen: u32) -> VState {
        let vlen = if vlen.is_power_of_two() && (MIN_VLEN..=MAX_VLEN).contains(&vlen) {
            vlen
        } else {
            DEFAULT_VLEN
        };
        VState {
            vlenb: vlen / 8,
            regs: Vec::new(),
            vl: 0,
            vtype: VILL,
            vstart: 0,
            vxrm: 0,
            vxsat: 0,
        }
    }

    /// Bytes per register.
    pub fn vlenb(&self) -> u32 {
        self.vlenb
    }

    /// Whether any vector instruction has run (the registers exist).
    pub fn used(&self) -> bool {
        !self.regs.is_empty()
    }

    /// The register file, `vlenb` bytes per register (empty if never used).
    pub fn registers(&self) -> &[u8] {
        &self.regs
    }

    /// Replaces the register file from `bytes` (32 × `vlenb`; ignored if the length differs).
    pub fn set_registers(&mut self, bytes: &[u8]) {
        if bytes.len() == 32 * self.vlenb as usize {
            self.regs.clear();
            self.regs.extend_from_slice(bytes);
        }
    }

    /// Restores the state a signal frame saved (`[vstart, vl, vtype, vcsr]` and the
    /// registers), as Linux does: `vtype` and `vl` through `vsetvl` (an unsupported `vtype`
    /// leaves `vill`), `vstart` and `vcsr` through their CSRs.
    pub fn restore(&mut self, [vstart, vl, vtype, vcsr]: [u64; 4], regs: &[u8]) {
        self.set_vtype(Some(vl), vtype);
        self.csr(0x008, Some(vstart));
        self.csr(0x00f, Some(vcsr));
        self.set_registers(regs);
    }

    fn ensure(&mut self) {
        if self.regs.is_empty() {
            self.regs = vec![0; 32 * self.vlenb as usize];
        }
    }

    /// `vcsr`: `vxrm` in bits 2:1, `vxsat` in bit 0.
    pub fn vcsr(&self) -> u64 {
        u64::from(self.vxrm & 3) << 1 | u64::from(self.vxsat & 1)
    }

    /// A CSR access to a vector CSR: the old value, or `None` if `num` is not one (or is
    /// read-only and `write` is asked).
    pub fn csr(&mut self, num: u32, write: Option<u64>) -> Option<u64> {
        let old = match num {
            0x008 => self.vstart,
            0x009 => u64::from(self.vxsat),
            0x00a => u64::from(self.vxrm),
            0x00f => self.vcsr(),
            0xc20 => self.vl,
            0xc21 => self.vtype,
            0xc22 => u64::from(self.vlenb),
            _ => return None,
        };
        if let Some(v) = write {
            match num {
                0x008 => self.vstart = v & (u64::from(self.vlenb) * 8 - 1),
                0x009 => self.vxsat = (v & 1) as u8,
                0x00a => self.vxrm = (v & 3) as u8,
                0x00f => {
                    self.vxsat = (v & 1) as u8;
                    self.vxrm = ((v >> 1) & 3) as u8;
                }
                _ => return None,
            }
        }
        Some(old)
    }

    /// SEW in bytes.
    fn sew(&self) -> u32 {
        1 << ((self.vtype >> 3) & 7)
    }

    /// LMUL × 8 (1 for mf8 … 64 for m8).
    fn lmul8(&self) -> u32 {
        lmul8_of(self.vtype)
    }

    /// VLMAX for element width `sew` bytes and `lmul8`.
    fn vlmax_of(&self, sew: u32, lmul8: u32) -> u64 {
        u64::from(self.vlenb) * u64::from(lmul8) / (8 * u64::from(sew))
    }

    fn vlmax(&self) -> u64 {
        self.vlmax_of(self.sew(), self.lmul8())
    }

    #[inline(always)]
    fn off(&self, r: u32, i: u64, w: u32) -> usize {
        r as usize * self.vlenb as usize + i as usize * w as usize
    }

    /// Element `i` of width `w` bytes of the group at `r`.
    #[inline(always)]
    fn get(&self, r: u32, i: u64, w: u32) -> u64 {
        let o = self.off(r, i, w);
        let b = &self.regs[o..o + w as usize];
        match w {
            1 => u64::from(b[0]),
            2 => u64::from(u16::from_le_bytes([b[0], b[1]])),
            4 => u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            _ => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        }
    }

    #[inline(always)]
    fn set(&mut self, r: u32, i: u64, w: u32, v: u64) {
        let o = self.off(r, i, w);
        let b = &mut self.regs[o..o + w as usize];
        match w {
            1 => b[0] = v as u8,
            2 => b.copy_from_slice(&(v as u16).to_le_bytes()),
            4 => b.copy_from_slice(&(v as u32).to_le_bytes()),
            _ => b.copy_from_slice(&v.to_le_bytes()),
        }
    }

    /// Mask bit `i` of register `r`.
    #[inline(always)]
    fn mbit(&self, r: u32, i: u64) -> bool {
        let o = r as usize * self.vlenb as usize + (i / 8) as usize;
        self.regs[o] >> (i % 8) & 1 != 0
    }

    #[inline(always)]
    fn set_mbit(&mut self, r: u32, i: u64, b: bool) {
        let o = r as usize * self.vlenb as usize + (i / 8) as usize;
        let bit = 1u8 << (i % 8);
        if b {
            self.regs[o] |= bit;
        } else {
            self.regs[o] &= !bit;
        }
    }

    /// Whether element `i` is active (`vm` set: unmasked).
    #[inline(always)]
    fn active(&self, vm: bool, i: u64) -> bool {
        vm || self.mbit(0, i)
    }

    /// `vsetvl` with AVL `avl` (`None`: keep `vl` as far as VLMAX allows; `Some(u64::MAX)`:
    /// VLMAX) and the requested `vtype`; the new `vl`.
    fn set_vtype(&mut self, avl: Option<u64>, vtype: u64) -> u64 {
        self.vstart = 0;
        if !vtype_ok(vtype) {
            self.vtype = VILL;
            self.vl = 0;
            return 0;
        }
        self.vtype = vtype;
        let vlmax = self.vlmax();
        self.vl = match avl {
            Some(a) => a.min(vlmax),
            None => self.vl.min(vlmax),
        };
        self.vl
    }
}

/// LMUL × 8 from a `vtype`'s `vlmul` field (0 for the reserved encoding).
fn lmul8_of(vtype: u64) -> u32 {
    match vtype & 7 {
        0 => 8,
        1 => 16,
        2 => 32,
        3 => 64,
        5 => 1,
        6 => 2,
        7 => 4,
        _ => 0,
    }
}

/// Whether the machine supports `vtype` (SEW ≤ 64, a defined LMUL, SEW ≤ LMUL × ELEN for a
/// fractional one, no reserved bits).
fn vtype_ok(vtype: u64) -> bool {
    let sew_bits = 8u32 << ((vtype >> 3) & 7);
    let lmul8 = lmul8_of(vtype);
    vtype >> 8 == 0 && (vtype >> 3) & 7 <= 3 && lmul8 != 0 && sew_bits * 8 <= 64 * lmul8
}

/// Whether a group of `emul8`/8 registers may start at `r` (aligned, and a legal EMUL).
fn group_ok(r: u32, emul8: u32) -> bool {
    (1..=64).contains(&emul8) && (emul8 <= 8 || r % (emul8 / 8) == 0)
}

/// The register count of a group of EMUL × 8 = `emul8` (at least one).
fn regs_of(emul8: u32) -> u32 {
    (emul8 / 8).max(1)
}

/// The fields every vector instruction shares.
#[derive(Clone, Copy, Debug)]
struct Fields {
    vd: u32,
    rs1: u32,
    vs2: u32,
    vm: bool,
    funct3: u32,
    funct6: u32,
}

impl Fields {
    fn of(raw: u32) -> Fields {
        Fields {
            vd: (raw >> 7) & 31,
            rs1: (raw >> 15) & 31,
            vs2: (raw >> 20) & 31,
            vm: raw >> 25 & 1 != 0,
            funct3: (raw >> 12) & 7,
            funct6: raw >> 26,
        }
    }
}

/// Runs the vector instruction `raw` (major opcode LOAD-FP, STORE-FP with a vector width, or
/// OP-V). On success `vstart` is zero; on a memory fault it is the faulting element's index
/// and the elements before it are done.
pub fn execute(v: &mut VState, c: &mut Ctx<'_>, raw: u32) -> Result<VDone, VFault> {
    v.ensure();
    let fl = Fields::of(raw);
    let r = match raw & 0x7f {
        0x07 => mem::load(v, c, raw, fl),
        0x27 => mem::store(v, c, raw, fl),
        0x57 if fl.funct3 == 7 => Ok(vsetvl(v, c, raw, fl)),
        0x57 => {
            if v.vtype & VILL != 0 {
                return Err(VFault::Illegal);
            }
            match fl.funct3 {
                0 | 3 | 4 => int::opi(v, c, fl, raw),
                2 | 6 => int::opm(v, c, fl),
                _ => fp::opf(v, c, fl),
            }
        }
        _ => Err(VFault::Illegal),
    };
    if r.is_ok() {
        v.vstart = 0;
    }
    r
}

fn vsetvl(v: &mut VState, c: &mut Ctx<'_>, raw: u32, fl: Fields) -> VDone {
    let (rd, rs1) = (fl.vd, fl.rs1);
    let (avl, vtype) = if raw >> 31 == 0 {
        // vsetvli
        (None, u64::from((raw >> 20) & 0x7ff))
    } else if raw >> 30 == 3 {
        // vsetivli: AVL is the 5-bit immediate in rs1's field
        (Some(u64::from(rs1)), u64::from((raw >> 20) & 0x3ff))
    } else {
        (None, c.x[fl.vs2 as usize])
    };
    let avl = match avl {
        Some(a) => Some(a),
        None if rs1 != 0 => Some(c.x[rs1 as usize]),
        None if rd != 0 => Some(u64::MAX),
        None => None,
    };
    let vl = v.set_vtype(avl, vtype);
    if rd != 0 {
        c.x[rd as usize] = vl;
    }
    VDone {
        result: Some(vl),
        ..VDone::default()
    }
}

/// `v` (of `w` bytes) sign-extended to 64 bits.
#[inline]
fn sext(v: u64, w: u32) -> i64 {
    let s = 64 - 8 * w;
    ((v << s) as i64) >> s
}

/// The low `w` bytes of `v`.
#[inline]
fn trunc(v: u64, w: u32) -> u64 {
    if w >= 8 {
        v
    } else {
        v & ((1u64 << (8 * w)) - 1)
    }
}

/// Fixed-point rounding increment for shifting `v` right by `d` under `vxrm`
/// (RVV 1.0 §3.8).
#[inline]
fn round_inc(v: u128, d: u32, vxrm: u8) -> u128 {
    if d == 0 {
        return 0;
    }
    let bit = |i: u32| (v >> i) & 1;
    let below = |i: u32| if i == 0 { 0 } else { v & ((1u128 << i) - 1) };
    match vxrm & 3 {
        0 => bit(d - 1),
        1 => bit(d - 1) & u128::from(below(d - 1) != 0 || bit(d) != 0),
        2 => 0,
        _ => u128::from(bit(d) == 0 && below(d) != 0),
    }
}

#[cfg(test)]
mod tests;
