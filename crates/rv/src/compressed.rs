//! The C extension: each 16-bit instruction is expanded to the 32-bit instruction it stands
//! for (RISC-V unprivileged ISA, chapter "C", RV64 column), so the opcode table and the
//! executor see only 32-bit forms. Reserved and illegal encodings expand to `None`. Zcb's
//! encodings (chapter "Zc*": `c.lbu`, `c.lhu`, `c.lh`, `c.sb`, `c.sh`, `c.zext.b/h/w`,
//! `c.sext.b/h`, `c.not`, `c.mul`) expand to their base, Zba and Zbb equivalents; Zcmop's
//! `c.mop.N` (the reserved `c.lui xN, 0` with N odd below 16) to a no-op. [`ext`] says which
//! of C, Zcb and Zcmop an encoding belongs to.

use crate::isa::Ext;

fn r(op: u32, rd: u32, f3: u32, rs1: u32, rs2: u32, f7: u32) -> u32 {
    (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op
}
fn i(op: u32, rd: u32, f3: u32, rs1: u32, imm: i32) -> u32 {
    (((imm as u32) & 0xfff) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op
}
fn s(op: u32, f3: u32, rs1: u32, rs2: u32, imm: i32) -> u32 {
    let imm = imm as u32;
    (((imm >> 5) & 0x7f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((imm & 0x1f) << 7) | op
}
fn b(f3: u32, rs1: u32, rs2: u32, imm: i32) -> u32 {
    let imm = imm as u32;
    (((imm >> 12) & 1) << 31)
        | (((imm >> 5) & 0x3f) << 25)
        | (rs2 << 20)
        | (rs1 << 15)
        | (f3 << 12)
        | (((imm >> 1) & 0xf) << 8)
        | (((imm >> 11) & 1) << 7)
        | 0x63
}
fn j(rd: u32, imm: i32) -> u32 {
    let imm = imm as u32;
    (((imm >> 20) & 1) << 31)
        | (((imm >> 1) & 0x3ff) << 21)
        | (((imm >> 11) & 1) << 20)
        | (((imm >> 12) & 0xff) << 12)
        | (rd << 7)
        | 0x6f
}

/// Bit `n` of `x`, moved to position `to`.
fn bit(x: u32, n: u32, to: u32) -> u32 {
    ((x >> n) & 1) << to
}
/// Bits `hi..=lo` of `x`, moved so that `lo` lands at `to`.
fn bits(x: u32, hi: u32, lo: u32, to: u32) -> u32 {
    ((x >> lo) & ((1 << (hi - lo + 1)) - 1)) << to
}
fn sext(v: u32, width: u32) -> i32 {
    ((v << (32 - width)) as i32) >> (32 - width)
}

const OP_LOAD: u32 = 0x03;
const OP_LOAD_FP: u32 = 0x07;
const OP_IMM: u32 = 0x13;
const OP_IMM32: u32 = 0x1b;
const OP_STORE: u32 = 0x23;
const OP_STORE_FP: u32 = 0x27;
const OP: u32 = 0x33;
const OP_LUI: u32 = 0x37;
const OP32: u32 = 0x3b;
const OP_JALR: u32 = 0x67;

/// The 32-bit instruction a 16-bit parcel stands for, or `None` if it is reserved/illegal.
pub fn expand(h: u16) -> Option<u32> {
    match h & 3 {
        0 => quadrant0(h),
        1 => quadrant1(h),
        2 => quadrant2(h),
        _ => None,
    }
}

/// Quadrant 0 (bits 1:0 = 00): loads and stores through `x8`–`x15`, `c.addi4spn`, Zcb's
/// byte and halfword accesses.
fn quadrant0(h: u16) -> Option<u32> {
    let c = u32::from(h);
    let f3 = c >> 13;
    let rdp = 8 + ((c >> 2) & 7); // rd' / rs2'
    let rs1p = 8 + ((c >> 7) & 7); // rs1' / rd'
    Some(match f3 {
        0 => {
            let nzuimm = bits(c, 12, 11, 4) | bits(c, 10, 7, 6) | bit(c, 6, 2) | bit(c, 5, 3);
            if nzuimm == 0 {
                return None; // includes the all-zero illegal instruction
            }
            i(OP_IMM, rdp, 0, 2, nzuimm as i32)
        }
        1 => i(
            OP_LOAD_FP,
            rdp,
            3,
            rs1p,
            (bits(c, 12, 10, 3) | bits(c, 6, 5, 6)) as i32,
        ),
        2 => i(
            OP_LOAD,
            rdp,
            2,
            rs1p,
            (bits(c, 12, 10, 3) | bit(c, 6, 2) | bit(c, 5, 6)) as i32,
        ),
        3 => i(
            OP_LOAD,
            rdp,
            3,
            rs1p,
            (bits(c, 12, 10, 3) | bits(c, 6, 5, 6)) as i32,
        ),
        4 => {
            // Zcb loads and stores: bits 12:10 select, bits 6:5 the offset
            let off1 = bit(c, 5, 1);
            match (bits(c, 12, 10, 0), bit(c, 6, 0)) {
                (0, b6) => i(OP_LOAD, rdp, 4, rs1p, (off1 | b6) as i32), // c.lbu
                (1, 0) => i(OP_LOAD, rdp, 5, rs1p, off1 as i32),         // c.lhu
                (1, _) => i(OP_LOAD, rdp, 1, rs1p, off1 as i32),         // c.lh
                (2, b6) => s(OP_STORE, 0, rs1p, rdp, (off1 | b6) as i32), // c.sb
                (3, 0) => s(OP_STORE, 1, rs1p, rdp, off1 as i32),        // c.sh
                _ => return None,
            }
        }
        5 => s(
            OP_STORE_FP,
            3,
            rs1p,
            rdp,
            (bits(c, 12, 10, 3) | bits(c, 6, 5, 6)) as i32,
        ),
        6 => s(
            OP_STORE,
            2,
            rs1p,
            rdp,
            (bits(c, 12, 10, 3) | bit(c, 6, 2) | bit(c, 5, 6)) as i32,
        ),
        7 => s(
            OP_STORE,
            3,
            rs1p,
            rdp,
            (bits(c, 12, 10, 3) | bits(c, 6, 5, 6)) as i32,
        ),
        _ => return None,
    })
}

/// Quadrant 1 (bits 1:0 = 01): immediates, arithmetic on `x8`–`x15`, jumps and branches.
fn quadrant1(h: u16) -> Option<u32> {
    let c = u32::from(h);
    let f3 = c >> 13;
    let rd = (c >> 7) & 31;
    let rdp = 8 + ((c >> 2) & 7); // rd' / rs2'
    let rs1p = 8 + ((c >> 7) & 7); // rs1' / rd'
    let imm6 = sext(bit(c, 12, 5) | bits(c, 6, 2, 0), 6);
    Some(match f3 {
        0 => i(OP_IMM, rd, 0, rd, imm6), // c.addi / c.nop (hints included)
        1 => {
            if rd == 0 {
                return None;
            }
            i(OP_IMM32, rd, 0, rd, imm6) // c.addiw
        }
        2 => i(OP_IMM, rd, 0, 0, imm6), // c.li
        3 => {
            if rd == 2 {
                let nz = sext(
                    bit(c, 12, 9) | bit(c, 6, 4) | bit(c, 5, 6) | bits(c, 4, 3, 7) | bit(c, 2, 5),
                    10,
                );
                if nz == 0 {
                    return None;
                }
                i(OP_IMM, 2, 0, 2, nz) // c.addi16sp
            } else {
                let nz = sext(bit(c, 12, 17) | bits(c, 6, 2, 12), 18);
                if nz == 0 {
                    // Zcmop's c.mop.N (N odd, below 16) writes nothing; other rd reserved
                    return (rd & 1 == 1 && rd < 16).then_some(i(OP_IMM, 0, 0, 0, 0));
                }
                (nz as u32 & 0xffff_f000) | (rd << 7) | OP_LUI // c.lui
            }
        }
        4 => {
            let shamt = (bit(c, 12, 5) | bits(c, 6, 2, 0)) as i32;
            match (c >> 10) & 3 {
                0 => i(OP_IMM, rs1p, 5, rs1p, shamt),         // c.srli
                1 => i(OP_IMM, rs1p, 5, rs1p, shamt | 0x400), // c.srai
                2 => i(OP_IMM, rs1p, 7, rs1p, imm6),          // c.andi
                _ => {
                    let rs2p = rdp;
                    match (bit(c, 12, 0), (c >> 5) & 3) {
                        (0, 0) => r(OP, rs1p, 0, rs1p, rs2p, 0x20),   // c.sub
                        (0, 1) => r(OP, rs1p, 4, rs1p, rs2p, 0),      // c.xor
                        (0, 2) => r(OP, rs1p, 6, rs1p, rs2p, 0),      // c.or
                        (0, 3) => r(OP, rs1p, 7, rs1p, rs2p, 0),      // c.and
                        (1, 0) => r(OP32, rs1p, 0, rs1p, rs2p, 0x20), // c.subw
                        (1, 1) => r(OP32, rs1p, 0, rs1p, rs2p, 0),    // c.addw
                        (1, 2) => r(OP, rs1p, 0, rs1p, rs2p, 1),      // c.mul (Zcb)
                        // Zcb unary operations on rd', selected by bits 4:2
                        _ => match bits(c, 4, 2, 0) {
                            0 => i(OP_IMM, rs1p, 7, rs1p, 0xff), // c.zext.b
                            1 => (0x604 << 20) | (rs1p << 15) | (1 << 12) | (rs1p << 7) | OP_IMM, // c.sext.b
                            2 => r(OP32, rs1p, 4, rs1p, 0, 4), // c.zext.h
                            3 => (0x605 << 20) | (rs1p << 15) | (1 << 12) | (rs1p << 7) | OP_IMM, // c.sext.h
                            4 => r(OP32, rs1p, 0, rs1p, 0, 4), // c.zext.w (add.uw rd, rd, zero)
                            5 => i(OP_IMM, rs1p, 4, rs1p, -1), // c.not
                            _ => return None,
                        },
                    }
                }
            }
        }
        5 => j(
            0,
            sext(
                bit(c, 12, 11)
                    | bit(c, 11, 4)
                    | bits(c, 10, 9, 8)
                    | bit(c, 8, 10)
                    | bit(c, 7, 6)
                    | bit(c, 6, 7)
                    | bits(c, 5, 3, 1)
                    | bit(c, 2, 5),
                12,
            ),
        ),
        6 | 7 => {
            let off = sext(
                bit(c, 12, 8)
                    | bits(c, 11, 10, 3)
                    | bits(c, 6, 5, 6)
                    | bits(c, 4, 3, 1)
                    | bit(c, 2, 5),
                9,
            );
            b(f3 & 1, rs1p, 0, off) // c.beqz (f3 6 → beq) / c.bnez (f3 7 → bne)
        }
        _ => return None,
    })
}

/// Quadrant 2 (bits 1:0 = 10): shifts, stack-relative loads and stores, moves, jumps through
/// registers, `c.ebreak`.
fn quadrant2(h: u16) -> Option<u32> {
    let c = u32::from(h);
    let f3 = c >> 13;
    let rd = (c >> 7) & 31;
    let rs2 = (c >> 2) & 31;
    Some(match f3 {
        0 => i(OP_IMM, rd, 1, rd, (bit(c, 12, 5) | bits(c, 6, 2, 0)) as i32), // c.slli
        1 => i(
            OP_LOAD_FP,
            rd,
            3,
            2,
            (bit(c, 12, 5) | bits(c, 6, 5, 3) | bits(c, 4, 2, 6)) as i32,
        ),
        2 => {
            if rd == 0 {
                return None;
            }
            i(
                OP_LOAD,
                rd,
                2,
                2,
                (bit(c, 12, 5) | bits(c, 6, 4, 2) | bits(c, 3, 2, 6)) as i32,
            )
        }
        3 => {
            if rd == 0 {
                return None;
            }
            i(
                OP_LOAD,
                rd,
                3,
                2,
                (bit(c, 12, 5) | bits(c, 6, 5, 3) | bits(c, 4, 2, 6)) as i32,
            )
        }
        4 => match (bit(c, 12, 0), rd, rs2) {
            (0, 0, 0) => return None,
            (0, rs1, 0) => i(OP_JALR, 0, 0, rs1, 0),  // c.jr
            (0, rd, rs2) => r(OP, rd, 0, 0, rs2, 0),  // c.mv
            (1, 0, 0) => 0x0010_0073,                 // c.ebreak
            (1, rs1, 0) => i(OP_JALR, 1, 0, rs1, 0),  // c.jalr
            (_, rd, rs2) => r(OP, rd, 0, rd, rs2, 0), // c.add
        },
        5 => s(
            OP_STORE_FP,
            3,
            2,
            rs2,
            (bits(c, 12, 10, 3) | bits(c, 9, 7, 6)) as i32,
        ),
        6 => s(
            OP_STORE,
            2,
            2,
            rs2,
            (bits(c, 12, 9, 2) | bits(c, 8, 7, 6)) as i32,
        ),
        7 => s(
            OP_STORE,
            3,
            2,
            rs2,
            (bits(c, 12, 10, 3) | bits(c, 9, 7, 6)) as i32,
        ),

        _ => return None,
    })
}

/// Which extension the 16-bit encoding `h` belongs to: Zcb, Zcmop or C. (An expanded
/// instruction also needs its operation's extension: `c.sext.b` is `sext.b`, Zbb.)
pub fn ext(h: u16) -> Ext {
    let c = u32::from(h);
    match (c & 3, c >> 13) {
        (0, 4) => Ext::Zcb,
        (1, 4) if bits(c, 12, 10, 0) == 7 && bits(c, 6, 5, 0) >= 2 => Ext::Zcb,
        _ if mop_number(h).is_some() => Ext::Zcmop,
        _ => Ext::C,
    }
}

/// `N` if `h` is Zcmop's `c.mop.N`.
pub fn mop_number(h: u16) -> Option<u32> {
    let c = u32::from(h);
    let rd = (c >> 7) & 31;
    (c & 0xf07f == 0x6001 && rd & 1 == 1 && rd < 16).then_some(rd)
}

#[cfg(test)]
mod tests {
    use crate::inst::decode;

    fn d(h: u16) -> String {
        decode(h, 0).to_string()
    }

    #[test]
    fn known_compressed_encodings() {
        // encodings checked against binutils (riscv64-linux-gnu-objdump -M no-aliases)
        assert_eq!(d(0x0505), "addi a0, a0, 1"); // c.addi a0,1
        assert_eq!(d(0x4501), "addi a0, zero, 0"); // c.li a0,0
        assert_eq!(d(0x852e), "add a0, zero, a1"); // c.mv a0,a1
        assert_eq!(d(0x952e), "add a0, a0, a1"); // c.add a0,a1
        assert_eq!(d(0x8082), "jalr zero, ra, 0"); // c.jr ra (ret)
        assert_eq!(d(0x60a2), "ld ra, 8(sp)"); // c.ldsp ra,8(sp)
        assert_eq!(d(0xe406), "sd ra, 8(sp)"); // c.sdsp ra,8(sp)
        assert_eq!(d(0x717d), "addi sp, sp, -16"); // c.addi16sp sp,-16
        assert_eq!(d(0x1141), "addi sp, sp, -16"); // c.addi sp,-16
        assert_eq!(d(0x0028), "addi a0, sp, 8"); // c.addi4spn a0,sp,8
        assert_eq!(d(0x6588), "ld a0, 8(a1)"); // c.ld a0,8(a1)
        assert_eq!(d(0xc188), "sw a0, 0(a1)"); // c.sw a0,0(a1)
        assert_eq!(d(0x9002), "ebreak");
        assert_eq!(d(0x8d09), "sub a0, a0, a0"); // c.sub a0,a0
        assert_eq!(d(0x9d2d), "addw a0, a0, a1"); // c.addw a0,a1
        assert_eq!(d(0x2505), "addiw a0, a0, 1"); // c.addiw a0,1
        assert_eq!(d(0x6505), "lui a0, 0x1"); // c.lui a0,0x1
        assert!(d(0x0000).starts_with(".insn"));
    }
}
