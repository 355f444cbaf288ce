//! The one opcode table of the machine (RV64IMAFD + Zicsr + Zifencei, Zba, Zbb, Zbc, Zbs,
//! Zicond, Zfa, Zimop, Zawrs, Outcrop's `brr`; C, Zcb and Zcmop by expansion): it drives
//! decoding, disassembly (by [`Format`]), the `--isa` check (by [`Ext`]), the timing class (by
//! [`Class`]) and what each instruction computes in every engine (by [`Sem`], its operation
//! family, whose one function lives in `outcrop-sem`: docs/architecture.md, "One semantics"),
//! so they cannot drift apart. Hints (Zihintpause's `pause`, Zicbop's prefetches, Zihintntl's
//! `ntl.*`) are base encodings with no architectural effect and decode as such.
//!
//! Each entry is a `(mask, match)` pair over the 32-bit encoding (as in riscv-opcodes): a word
//! `w` is the entry's instruction when `w & mask == match`. Compressed (16-bit) instructions are
//! expanded to their 32-bit equivalents by [`crate::compressed::expand`] first and keep their own
//! length and raw bits.

use std::fmt;

/// Operand layout of an instruction, for decoding immediates and printing operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `rd, rs1, rs2`
    R,
    /// `rd, rs1, imm`
    I,
    /// `rd, imm(rs1)` loads
    Load,
    /// `rs2, imm(rs1)` stores
    Store,
    /// `rs1, rs2, target` conditional branches
    B,
    /// `rd, imm` (upper immediate)
    U,
    /// `rd, target`
    J,
    /// `rd, rs1, shamt`
    Shift,
    /// `rd, csr, rs1`
    Csr,
    /// `rd, csr, uimm`
    CsrI,
    /// no operands
    None,
    /// `rd, rs2, (rs1)` atomics
    Amo,
    /// `rd, (rs1)` load-reserved
    Lr,
    /// FP `rd, rs1, rs2[, rm]` with f registers
    FR,
    /// FP `rd, rs1[, rm]` with f registers
    FR1,
    /// FP `rd, rs1, rs2, rs3[, rm]`
    FR4,
    /// FP compare: x `rd`, f `rs1`, f `rs2`
    FCmp,
    /// f `rd` ← x `rs1` (moves/conversions from integer), optional rm
    FFromX,
    /// x `rd` ← f `rs1` (moves/conversions to integer), optional rm
    FToX,
    /// `frd, imm(rs1)` FP loads
    FLoad,
    /// `frs2, imm(rs1)` FP stores
    FStore,
    /// `pred, succ` fence
    Fence,
    /// `1/N, target`: branch-on-random (custom-0 major opcode, J-type offset, the 4-bit
    /// frequency in the `rd` field)
    Brr,
    /// `rd, rs1` (unary bit manipulation: `clz`, `sext.b`, `rev8`…)
    R1,
    /// f `rd`, constant: Zfa's `fli` (the constant's index in the `rs1` field, kept in `imm`)
    Fli,
    /// `rd, rs1[, rs2]`: Zimop's may-be-operations (the operation number `N` in `imm`)
    Mop,
    /// `(rs1)`: a cache-block operation
    Cbo,
    /// `rd, rs1, vtype`: `vsetvli` and its kin (printed by the vector unit)
    VSet,
    /// A vector instruction: the vector unit decodes and prints it from the raw bits
    V,
}

macro_rules! ops {
    // `$d` is `$`, for the macro this one defines
    ($d:tt $( [$ext:ident] $( $op:ident $name:literal $fmt:ident $mask:literal $match:literal $class:ident $sem:ident $(($($sem_args:tt)*))? ;)* )*) => {
        /// Every instruction the machine executes.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        #[allow(missing_docs)]
        pub enum Op { $($($op,)*)* /** An encoding no entry matches. */ Illegal }

        /// `(op, mnemonic, format, mask, match, class)` for every instruction.
        pub const TABLE: &[(Op, &str, Format, u32, u32, Class)] = &[
            $($((Op::$op, $name, Format::$fmt, $mask, $match, Class::$class),)*)*
        ];

        /// The extension of every entry of [`TABLE`], in its order.
        const EXTS: &[Ext] = &[ $($((Op::$op, Ext::$ext).1,)*)* ];

        impl Op {
            /// What the instruction does (its table row's semantics column).
            #[inline(always)]
            pub fn sem(self) -> Sem {
                #[allow(unused_imports)]
                use outcrop_sem::{Alu as A, AmoOp as M, Cond as C, FMove as F, Sem::*};
                match self {
                    $($(Op::$op => $sem $(($($sem_args)*))?,)*)*
                    Op::Illegal => Sem::Illegal,
                }
            }
        }

        /// Calls `$cb!` with every row's operation and semantics column, `Op Family(args);`
        /// each (`Add Alu(A::Add); Lb Load(1, true); …`), for an engine that writes each
        /// family's code once and has a match arm generated per operation from it (the
        /// single-step interpreter: one dispatch per instruction, as if written per operation).
        macro_rules! for_each_op {
            ($d cb:ident) => {
                $d cb! { $($( $op $sem $(($($sem_args)*))? ; )*)* }
            };
        }
        pub(crate) use for_each_op;
    };
}

pub use crate::isa::{Ext, Isa};
pub use outcrop_events::record::{Class, Unit};
pub use outcrop_sem::Sem;

ops! { $
    [I] // RV32I / RV64I
    Lui     "lui"     U     0x0000007f 0x00000037 Alu Lui;
    Auipc   "auipc"   U     0x0000007f 0x00000017 Alu Auipc;
    Jal     "jal"     J     0x0000007f 0x0000006f Jump Jal;
    Jalr    "jalr"    I     0x0000707f 0x00000067 Jump Jalr;
    Beq     "beq"     B     0x0000707f 0x00000063 Branch Branch(C::Eq);
    Bne     "bne"     B     0x0000707f 0x00001063 Branch Branch(C::Ne);
    Blt     "blt"     B     0x0000707f 0x00004063 Branch Branch(C::Lt);
    Bge     "bge"     B     0x0000707f 0x00005063 Branch Branch(C::Ge);
    Bltu    "bltu"    B     0x0000707f 0x00006063 Branch Branch(C::Ltu);
    Bgeu    "bgeu"    B     0x0000707f 0x00007063 Branch Branch(C::Geu);
    Lb      "lb"      Load  0x0000707f 0x00000003 Load Load(1, true);
    Lh      "lh"      Load  0x0000707f 0x00001003 Load Load(2, true);
    Lw      "lw"      Load  0x0000707f 0x00002003 Load Load(4, true);
    Ld      "ld"      Load  0x0000707f 0x00003003 Load Load(8, false);
    Lbu     "lbu"     Load  0x0000707f 0x00004003 Load Load(1, false);
    Lhu     "lhu"     Load  0x0000707f 0x00005003 Load Load(2, false);
    Lwu     "lwu"     Load  0x0000707f 0x00006003 Load Load(4, false);
    Sb      "sb"      Store 0x0000707f 0x00000023 Store Store(1);
    Sh      "sh"      Store 0x0000707f 0x00001023 Store Store(2);
    Sw      "sw"      Store 0x0000707f 0x00002023 Store Store(4);
    Sd      "sd"      Store 0x0000707f 0x00003023 Store Store(8);
    Addi    "addi"    I     0x0000707f 0x00000013 Alu AluImm(A::Add);
    Slti    "slti"    I     0x0000707f 0x00002013 Alu AluImm(A::Slt);
    Sltiu   "sltiu"   I     0x0000707f 0x00003013 Alu AluImm(A::Sltu);
    Xori    "xori"    I     0x0000707f 0x00004013 Alu AluImm(A::Xor);
    Ori     "ori"     I     0x0000707f 0x00006013 Alu AluImm(A::Or);
    Andi    "andi"    I     0x0000707f 0x00007013 Alu AluImm(A::And);
    Slli    "slli"    Shift 0xfc00707f 0x00001013 Alu AluImm(A::Sll);
    Srli    "srli"    Shift 0xfc00707f 0x00005013 Alu AluImm(A::Srl);
    Srai    "srai"    Shift 0xfc00707f 0x40005013 Alu AluImm(A::Sra);
    Add     "add"     R     0xfe00707f 0x00000033 Alu Alu(A::Add);
    Sub     "sub"     R     0xfe00707f 0x40000033 Alu Alu(A::Sub);
    Sll     "sll"     R     0xfe00707f 0x00001033 Alu Alu(A::Sll);
    Slt     "slt"     R     0xfe00707f 0x00002033 Alu Alu(A::Slt);
    Sltu    "sltu"    R     0xfe00707f 0x00003033 Alu Alu(A::Sltu);
    Xor     "xor"     R     0xfe00707f 0x00004033 Alu Alu(A::Xor);
    Srl     "srl"     R     0xfe00707f 0x00005033 Alu Alu(A::Srl);
    Sra     "sra"     R     0xfe00707f 0x40005033 Alu Alu(A::Sra);
    Or      "or"      R     0xfe00707f 0x00006033 Alu Alu(A::Or);
    And     "and"     R     0xfe00707f 0x00007033 Alu Alu(A::And);
    Addiw   "addiw"   I     0x0000707f 0x0000001b Alu AluImm(A::Addw);
    Slliw   "slliw"   Shift 0xfe00707f 0x0000101b Alu AluImm(A::Sllw);
    Srliw   "srliw"   Shift 0xfe00707f 0x0000501b Alu AluImm(A::Srlw);
    Sraiw   "sraiw"   Shift 0xfe00707f 0x4000501b Alu AluImm(A::Sraw);
    Addw    "addw"    R     0xfe00707f 0x0000003b Alu Alu(A::Addw);
    Subw    "subw"    R     0xfe00707f 0x4000003b Alu Alu(A::Subw);
    Sllw    "sllw"    R     0xfe00707f 0x0000103b Alu Alu(A::Sllw);
    Srlw    "srlw"    R     0xfe00707f 0x0000503b Alu Alu(A::Srlw);
    Sraw    "sraw"    R     0xfe00707f 0x4000503b Alu Alu(A::Sraw);
    Fence   "fence"   Fence 0x0000707f 0x0000000f Sys Fence;
    Ecall   "ecall"   None  0xffffffff 0x00000073 Sys Ecall;
    Ebreak  "ebreak"  None  0xffffffff 0x00100073 Sys Ebreak;
    [Zifencei]
    FenceI  "fence.i" None  0x0000707f 0x0000100f Sys FenceI;
    [Zicsr]
    Csrrw   "csrrw"   Csr   0x0000707f 0x00001073 Sys Csr;
    Csrrs   "csrrs"   Csr   0x0000707f 0x00002073 Sys Csr;
    Csrrc   "csrrc"   Csr   0x0000707f 0x00003073 Sys Csr;
    Csrrwi  "csrrwi"  CsrI  0x0000707f 0x00005073 Sys Csr;
    Csrrsi  "csrrsi"  CsrI  0x0000707f 0x00006073 Sys Csr;
    Csrrci  "csrrci"  CsrI  0x0000707f 0x00007073 Sys Csr;
    [M]
    Mul     "mul"     R     0xfe00707f 0x02000033 Mult Alu(A::Mul);
    Mulh    "mulh"    R     0xfe00707f 0x02001033 Mult Alu(A::Mulh);
    Mulhsu  "mulhsu"  R     0xfe00707f 0x02002033 Mult Alu(A::Mulhsu);
    Mulhu   "mulhu"   R     0xfe00707f 0x02003033 Mult Alu(A::Mulhu);
    Div     "div"     R     0xfe00707f 0x02004033 Mult Alu(A::Div);
    Divu    "divu"    R     0xfe00707f 0x02005033 Mult Alu(A::Divu);
    Rem     "rem"     R     0xfe00707f 0x02006033 Mult Alu(A::Rem);
    Remu    "remu"    R     0xfe00707f 0x02007033 Mult Alu(A::Remu);
    Mulw    "mulw"    R     0xfe00707f 0x0200003b Mult Alu(A::Mulw);
    Divw    "divw"    R     0xfe00707f 0x0200403b Mult Alu(A::Divw);
    Divuw   "divuw"   R     0xfe00707f 0x0200503b Mult Alu(A::Divuw);
    Remw    "remw"    R     0xfe00707f 0x0200603b Mult Alu(A::Remw);
    Remuw   "remuw"   R     0xfe00707f 0x0200703b Mult Alu(A::Remuw);
    [A] // (aq/rl bits 26:25 are ignored: one hart, sequentially consistent)
    LrW     "lr.w"      Lr  0xf9f0707f 0x1000202f Load Lr(4);
    ScW     "sc.w"      Amo 0xf800707f 0x1800202f Store Sc(4);
    AmoswapW "amoswap.w" Amo 0xf800707f 0x0800202f Load Amo(M::Swap, 4);
    AmoaddW "amoadd.w"  Amo 0xf800707f 0x0000202f Load Amo(M::Add, 4);
    AmoxorW "amoxor.w"  Amo 0xf800707f 0x2000202f Load Amo(M::Xor, 4);
    AmoandW "amoand.w"  Amo 0xf800707f 0x6000202f Load Amo(M::And, 4);
    AmoorW  "amoor.w"   Amo 0xf800707f 0x4000202f Load Amo(M::Or, 4);
    AmominW "amomin.w"  Amo 0xf800707f 0x8000202f Load Amo(M::Min, 4);
    AmomaxW "amomax.w"  Amo 0xf800707f 0xa000202f Load Amo(M::Max, 4);
    AmominuW "amominu.w" Amo 0xf800707f 0xc000202f Load Amo(M::Minu, 4);
    AmomaxuW "amomaxu.w" Amo 0xf800707f 0xe000202f Load Amo(M::Maxu, 4);
    LrD     "lr.d"      Lr  0xf9f0707f 0x1000302f Load Lr(8);
    ScD     "sc.d"      Amo 0xf800707f 0x1800302f Store Sc(8);
    AmoswapD "amoswap.d" Amo 0xf800707f 0x0800302f Load Amo(M::Swap, 8);
    AmoaddD "amoadd.d"  Amo 0xf800707f 0x0000302f Load Amo(M::Add, 8);
    AmoxorD "amoxor.d"  Amo 0xf800707f 0x2000302f Load Amo(M::Xor, 8);
    AmoandD "amoand.d"  Amo 0xf800707f 0x6000302f Load Amo(M::And, 8);
    AmoorD  "amoor.d"   Amo 0xf800707f 0x4000302f Load Amo(M::Or, 8);
    AmominD "amomin.d"  Amo 0xf800707f 0x8000302f Load Amo(M::Min, 8);
    AmomaxD "amomax.d"  Amo 0xf800707f 0xa000302f Load Amo(M::Max, 8);
    AmominuD "amominu.d" Amo 0xf800707f 0xc000302f Load Amo(M::Minu, 8);
    AmomaxuD "amomaxu.d" Amo 0xf800707f 0xe000302f Load Amo(M::Maxu, 8);
    [F]
    Flw     "flw"       FLoad  0x0000707f 0x00002007 Load FLoad(4);
    Fsw     "fsw"       FStore 0x0000707f 0x00002027 Store FStore(4);
    FmaddS  "fmadd.s"   FR4 0x0600007f 0x00000043 Float Float;
    FmsubS  "fmsub.s"   FR4 0x0600007f 0x00000047 Float Float;
    FnmsubS "fnmsub.s"  FR4 0x0600007f 0x0000004b Float Float;
    FnmaddS "fnmadd.s"  FR4 0x0600007f 0x0000004f Float Float;
    FaddS   "fadd.s"    FR  0xfe00007f 0x00000053 Float Float;
    FsubS   "fsub.s"    FR  0xfe00007f 0x08000053 Float Float;
    FmulS   "fmul.s"    FR  0xfe00007f 0x10000053 Float Float;
    FdivS   "fdiv.s"    FR  0xfe00007f 0x18000053 Float Float;
    FsqrtS  "fsqrt.s"   FR1 0xfff0007f 0x58000053 Float Float;
    FsgnjS  "fsgnj.s"   FR  0xfe00707f 0x20000053 Float Float;
    FsgnjnS "fsgnjn.s"  FR  0xfe00707f 0x20001053 Float Float;
    FsgnjxS "fsgnjx.s"  FR  0xfe00707f 0x20002053 Float Float;
    FminS   "fmin.s"    FR  0xfe00707f 0x28000053 Float Float;
    FmaxS   "fmax.s"    FR  0xfe00707f 0x28001053 Float Float;
    FcvtWS  "fcvt.w.s"  FToX 0xfff0007f 0xc0000053 Float Float;
    FcvtWuS "fcvt.wu.s" FToX 0xfff0007f 0xc0100053 Float Float;
    FcvtLS  "fcvt.l.s"  FToX 0xfff0007f 0xc0200053 Float Float;
    FcvtLuS "fcvt.lu.s" FToX 0xfff0007f 0xc0300053 Float Float;
    FmvXW   "fmv.x.w"   FToX 0xfff0707f 0xe0000053 Float Float;
    FclassS "fclass.s"  FToX 0xfff0707f 0xe0001053 Float Float;
    FeqS    "feq.s"     FCmp 0xfe00707f 0xa0002053 Float Float;
    FltS    "flt.s"     FCmp 0xfe00707f 0xa0001053 Float Float;
    FleS    "fle.s"     FCmp 0xfe00707f 0xa0000053 Float Float;
    FcvtSW  "fcvt.s.w"  FFromX 0xfff0007f 0xd0000053 Float Float;
    FcvtSWu "fcvt.s.wu" FFromX 0xfff0007f 0xd0100053 Float Float;
    FcvtSL  "fcvt.s.l"  FFromX 0xfff0007f 0xd0200053 Float Float;
    FcvtSLu "fcvt.s.lu" FFromX 0xfff0007f 0xd0300053 Float Float;
    FmvWX   "fmv.w.x"   FFromX 0xfff0707f 0xf0000053 Float Float;
    [D]
    Fld     "fld"       FLoad  0x0000707f 0x00003007 Load FLoad(8);
    Fsd     "fsd"       FStore 0x0000707f 0x00003027 Store FStore(8);
    FmaddD  "fmadd.d"   FR4 0x0600007f 0x02000043 Float Float;
    FmsubD  "fmsub.d"   FR4 0x0600007f 0x02000047 Float Float;
    FnmsubD "fnmsub.d"  FR4 0x0600007f 0x0200004b Float Float;
    FnmaddD "fnmadd.d"  FR4 0x0600007f 0x0200004f Float Float;
    FaddD   "fadd.d"    FR  0xfe00007f 0x02000053 Float Float;
    FsubD   "fsub.d"    FR  0xfe00007f 0x0a000053 Float Float;
    FmulD   "fmul.d"    FR  0xfe00007f 0x12000053 Float Float;
    FdivD   "fdiv.d"    FR  0xfe00007f 0x1a000053 Float Float;
    FsqrtD  "fsqrt.d"   FR1 0xfff0007f 0x5a000053 Float Float;
    FsgnjD  "fsgnj.d"   FR  0xfe00707f 0x22000053 Float FMove(F::SgnjD);
    FsgnjnD "fsgnjn.d"  FR  0xfe00707f 0x22001053 Float FMove(F::SgnjnD);
    FsgnjxD "fsgnjx.d"  FR  0xfe00707f 0x22002053 Float FMove(F::SgnjxD);
    FminD   "fmin.d"    FR  0xfe00707f 0x2a000053 Float Float;
    FmaxD   "fmax.d"    FR  0xfe00707f 0x2a001053 Float Float;
    FcvtSD  "fcvt.s.d"  FR1 0xfff0007f 0x40100053 Float Float;
    FcvtDS  "fcvt.d.s"  FR1 0xfff0007f 0x42000053 Float Float;
    FeqD    "feq.d"     FCmp 0xfe00707f 0xa2002053 Float Float;
    FltD    "flt.d"     FCmp 0xfe00707f 0xa2001053 Float Float;
    FleD    "fle.d"     FCmp 0xfe00707f 0xa2000053 Float Float;
    FclassD "fclass.d"  FToX 0xfff0707f 0xe2001053 Float Float;
    FcvtWD  "fcvt.w.d"  FToX 0xfff0007f 0xc2000053 Float Float;
    FcvtWuD "fcvt.wu.d" FToX 0xfff0007f 0xc2100053 Float Float;
    FcvtLD  "fcvt.l.d"  FToX 0xfff0007f 0xc2200053 Float Float;
    FcvtLuD "fcvt.lu.d" FToX 0xfff0007f 0xc2300053 Float Float;
    FmvXD   "fmv.x.d"   FToX 0xfff0707f 0xe2000053 Float FMove(F::XFromD);
    FcvtDW  "fcvt.d.w"  FFromX 0xfff0007f 0xd2000053 Float Float;
    FcvtDWu "fcvt.d.wu" FFromX 0xfff0007f 0xd2100053 Float Float;
    FcvtDL  "fcvt.d.l"  FFromX 0xfff0007f 0xd2200053 Float Float;
    FcvtDLu "fcvt.d.lu" FFromX 0xfff0007f 0xd2300053 Float Float;
    FmvDX   "fmv.d.x"   FFromX 0xfff0707f 0xf2000053 Float FMove(F::DFromX);
    [Xbrr] // Outcrop's branch-on-random (docs/machine.md "Branch-on-random"): custom-0 (0x0b),
    // bits 10:7 the frequency level, bit 11 zero, bits 31:12 the offset as in jal (±1 MiB)
    Brr     "brr"       Brr    0x0000087f 0x0000000b Branch Brr;
    [Zba] // address generation
    AddUw   "add.uw"    R      0xfe00707f 0x0800003b Alu Alu(A::AddUw);
    Sh1add  "sh1add"    R      0xfe00707f 0x20002033 Alu Alu(A::Sh1add);
    Sh2add  "sh2add"    R      0xfe00707f 0x20004033 Alu Alu(A::Sh2add);
    Sh3add  "sh3add"    R      0xfe00707f 0x20006033 Alu Alu(A::Sh3add);
    Sh1addUw "sh1add.uw" R     0xfe00707f 0x2000203b Alu Alu(A::Sh1addUw);
    Sh2addUw "sh2add.uw" R     0xfe00707f 0x2000403b Alu Alu(A::Sh2addUw);
    Sh3addUw "sh3add.uw" R     0xfe00707f 0x2000603b Alu Alu(A::Sh3addUw);
    SlliUw  "slli.uw"   Shift  0xfc00707f 0x0800101b Alu AluImm(A::SlliUw);
    [Zbb] // basic bit manipulation
    Andn    "andn"      R      0xfe00707f 0x40007033 Alu Alu(A::Andn);
    Orn     "orn"       R      0xfe00707f 0x40006033 Alu Alu(A::Orn);
    Xnor    "xnor"      R      0xfe00707f 0x40004033 Alu Alu(A::Xnor);
    Clz     "clz"       R1     0xfff0707f 0x60001013 Alu Alu(A::Clz);
    Ctz     "ctz"       R1     0xfff0707f 0x60101013 Alu Alu(A::Ctz);
    Cpop    "cpop"      R1     0xfff0707f 0x60201013 Alu Alu(A::Cpop);
    Clzw    "clzw"      R1     0xfff0707f 0x6000101b Alu Alu(A::Clzw);
    Ctzw    "ctzw"      R1     0xfff0707f 0x6010101b Alu Alu(A::Ctzw);
    Cpopw   "cpopw"     R1     0xfff0707f 0x6020101b Alu Alu(A::Cpopw);
    Max     "max"       R      0xfe00707f 0x0a006033 Alu Alu(A::Max);
    Maxu    "maxu"      R      0xfe00707f 0x0a007033 Alu Alu(A::Maxu);
    Min     "min"       R      0xfe00707f 0x0a004033 Alu Alu(A::Min);
    Minu    "minu"      R      0xfe00707f 0x0a005033 Alu Alu(A::Minu);
    SextB   "sext.b"    R1     0xfff0707f 0x60401013 Alu Alu(A::SextB);
    SextH   "sext.h"    R1     0xfff0707f 0x60501013 Alu Alu(A::SextH);
    ZextH   "zext.h"    R1     0xfff0707f 0x0800403b Alu Alu(A::ZextH);
    Rol     "rol"       R      0xfe00707f 0x60001033 Alu Alu(A::Rol);
    Ror     "ror"       R      0xfe00707f 0x60005033 Alu Alu(A::Ror);
    Rolw    "rolw"      R      0xfe00707f 0x6000103b Alu Alu(A::Rolw);
    Rorw    "rorw"      R      0xfe00707f 0x6000503b Alu Alu(A::Rorw);
    Rori    "rori"      Shift  0xfc00707f 0x60005013 Alu AluImm(A::Ror);
    Roriw   "roriw"     Shift  0xfe00707f 0x6000501b Alu AluImm(A::Rorw);
    OrcB    "orc.b"     R1     0xfff0707f 0x28705013 Alu Alu(A::OrcB);
    Rev8    "rev8"      R1     0xfff0707f 0x6b805013 Alu Alu(A::Rev8);
    [Zbc] // carry-less multiplication
    Clmul   "clmul"     R      0xfe00707f 0x0a001033 Mult Alu(A::Clmul);
    Clmulr  "clmulr"    R      0xfe00707f 0x0a002033 Mult Alu(A::Clmulr);
    Clmulh  "clmulh"    R      0xfe00707f 0x0a003033 Mult Alu(A::Clmulh);
    [Zbs] // single-bit instructions
    Bclr    "bclr"      R      0xfe00707f 0x48001033 Alu Alu(A::Bclr);
    Bclri   "bclri"     Shift  0xfc00707f 0x48001013 Alu AluImm(A::Bclr);
    Bext    "bext"      R      0xfe00707f 0x48005033 Alu Alu(A::Bext);
    Bexti   "bexti"     Shift  0xfc00707f 0x48005013 Alu AluImm(A::Bext);
    Binv    "binv"      R      0xfe00707f 0x68001033 Alu Alu(A::Binv);
    Binvi   "binvi"     Shift  0xfc00707f 0x68001013 Alu AluImm(A::Binv);
    Bset    "bset"      R      0xfe00707f 0x28001033 Alu Alu(A::Bset);
    Bseti   "bseti"     Shift  0xfc00707f 0x28001013 Alu AluImm(A::Bset);
    [Zicond] // integer conditional operations
    CzeroEqz "czero.eqz" R     0xfe00707f 0x0e005033 Alu Alu(A::CzeroEqz);
    CzeroNez "czero.nez" R     0xfe00707f 0x0e007033 Alu Alu(A::CzeroNez);
    [Zfa] // additional floating-point instructions (single and double)
    FliS    "fli.s"     Fli    0xfff0707f 0xf0100053 Float Float;
    FminmS  "fminm.s"   FR     0xfe00707f 0x28002053 Float Float;
    FmaxmS  "fmaxm.s"   FR     0xfe00707f 0x28003053 Float Float;
    FroundS "fround.s"  FR1    0xfff0007f 0x40400053 Float Float;
    FroundnxS "froundnx.s" FR1 0xfff0007f 0x40500053 Float Float;
    FleqS   "fleq.s"    FCmp   0xfe00707f 0xa0004053 Float Float;
    FltqS   "fltq.s"    FCmp   0xfe00707f 0xa0005053 Float Float;
    FliD    "fli.d"     Fli    0xfff0707f 0xf2100053 Float Float;
    FminmD  "fminm.d"   FR     0xfe00707f 0x2a002053 Float Float;
    FmaxmD  "fmaxm.d"   FR     0xfe00707f 0x2a003053 Float Float;
    FroundD "fround.d"  FR1    0xfff0007f 0x42400053 Float Float;
    FroundnxD "froundnx.d" FR1 0xfff0007f 0x42500053 Float Float;
    FcvtmodWD "fcvtmod.w.d" FToX 0xfff0707f 0xc2801053 Float Float;
    FleqD   "fleq.d"    FCmp   0xfe00707f 0xa2004053 Float Float;
    FltqD   "fltq.d"    FCmp   0xfe00707f 0xa2005053 Float Float;
    [Zimop] // may-be-operations: write zero to rd until an extension redefines them
    MopR    "mop.r"     Mop    0xb3c0707f 0x81c04073 Alu Zero;
    MopRr   "mop.rr"    Mop    0xb200707f 0x82004073 Alu Zero;
    [Zawrs] // wait on reservation set: no-ops on one hart
    WrsNto  "wrs.nto"   None   0xffffffff 0x00d00073 Sys Nop;
    WrsSto  "wrs.sto"   None   0xffffffff 0x01d00073 Sys Nop;
    [Zicbom] // cache-block management: no effect on a machine without caches to manage
    CboInval "cbo.inval" Cbo   0xfff07fff 0x0000200f Sys Nop;
    CboClean "cbo.clean" Cbo   0xfff07fff 0x0010200f Sys Nop;
    CboFlush "cbo.flush" Cbo   0xfff07fff 0x0020200f Sys Nop;
    [Zicboz]
    CboZero "cbo.zero"  Cbo    0xfff07fff 0x0040200f Store CboZero;
    [V] // the vector unit decodes the rest (crate::vector): one row per major opcode and funct3
    Vsetvli "vsetvli"   VSet   0x8000707f 0x00007057 Alu Vector;
    Vsetivli "vsetivli" VSet   0xc000707f 0xc0007057 Alu Vector;
    Vsetvl  "vsetvl"    VSet   0xfe00707f 0x80007057 Alu Vector;
    Vl8     "vl.e8"     V      0x0000707f 0x00000007 Load Vector;
    Vl16    "vl.e16"    V      0x0000707f 0x00005007 Load Vector;
    Vl32    "vl.e32"    V      0x0000707f 0x00006007 Load Vector;
    Vl64    "vl.e64"    V      0x0000707f 0x00007007 Load Vector;
    Vs8     "vs.e8"     V      0x0000707f 0x00000027 Store Vector;
    Vs16    "vs.e16"    V      0x0000707f 0x00005027 Store Vector;
    Vs32    "vs.e32"    V      0x0000707f 0x00006027 Store Vector;
    Vs64    "vs.e64"    V      0x0000707f 0x00007027 Store Vector;
    Opivv   "opivv"     V      0x0000707f 0x00000057 Float Vector;
    Opfvv   "opfvv"     V      0x0000707f 0x00001057 Float Vector;
    Opmvv   "opmvv"     V      0x0000707f 0x00002057 Float Vector;
    Opivi   "opivi"     V      0x0000707f 0x00003057 Float Vector;
    Opivx   "opivx"     V      0x0000707f 0x00004057 Float Vector;
    Opfvf   "opfvf"     V      0x0000707f 0x00005057 Float Vector;
    Opmvx   "opmvx"     V      0x0000707f 0x00006057 Float Vector;
}

/// Entries of [`TABLE`] grouped by major opcode (bits 6:0), built once.
fn by_major() -> &'static [Vec<u16>; 128] {
    static INDEX: std::sync::OnceLock<[Vec<u16>; 128]> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let mut idx: [Vec<u16>; 128] = std::array::from_fn(|_| Vec::new());
        for (i, e) in TABLE.iter().enumerate() {
            idx[(e.4 & 0x7f) as usize].push(i as u16);
        }
        idx
    })
}

/// A decoded instruction. `imm` is sign-extended; for CSR instructions it holds the CSR number
/// and `rs1` the register or 5-bit immediate; for fences the pred/succ bits.
///
/// Laid out as exactly 16 bytes with no padding holes (two 8-byte halves), so copying one out
/// of the instruction cache is two plain moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Inst {
    /// Immediate, sign-extended.
    pub imm: i32,
    /// The raw bits as fetched (16 or 32 bits).
    pub raw: u32,
    /// The operation.
    pub op: Op,
    /// Destination register (x or f by format).
    pub rd: u8,
    /// First source register.
    pub rs1: u8,
    /// Second source register.
    pub rs2: u8,
    /// Third source register (fused multiply-add).
    pub rs3: u8,
    /// Rounding mode field (FP).
    pub rm: u8,
    /// Length in bytes: 2 (compressed) or 4; 0 marks an empty cache slot.
    pub len: u8,
    /// The instruction's class, from the table (kept here so the hot loop needs no lookup).
    pub class: Class,
}

impl Inst {
    /// The illegal instruction with these raw bits.
    pub const fn illegal(raw: u32, len: u8) -> Inst {
        Inst {
            op: Op::Illegal,
            rd: 0,
            rs1: 0,
            rs2: 0,
            rs3: 0,
            rm: 0,
            len,
            imm: 0,
            raw,
            class: Class::Sys,
        }
    }

    /// The table entry of this instruction (`None` for illegal).
    pub fn entry(&self) -> Option<&'static (Op, &'static str, Format, u32, u32, Class)> {
        TABLE.get(self.op as usize)
    }

    /// The instruction's class.
    #[inline]
    pub fn class(&self) -> Class {
        self.class
    }

    /// Whether every extension this instruction needs is in `isa` (its operation's, and for
    /// a compressed one C, Zcb or Zcmop as its encoding says). Illegal instructions are.
    #[inline]
    pub fn allowed(&self, isa: Isa) -> bool {
        let op = self.op == Op::Illegal || isa.has(self.op.ext());
        if self.len == 2 {
            op && isa.has(crate::compressed::ext(self.raw as u16))
        } else {
            op
        }
    }
}

fn sext(v: u32, bits: u32) -> i32 {
    let shift = 32 - bits;
    ((v << shift) as i32) >> shift
}

/// Decodes a 32-bit encoding (`len` and `raw` are what was fetched: 4 and the word itself, or
/// 2 and the 16 bits a compressed instruction was expanded from).
pub fn decode32(w: u32, len: u8, raw: u32) -> Inst {
    let Some(&(op, _, fmt, _, _, class)) = by_major()[(w & 0x7f) as usize]
        .iter()
        .map(|&i| &TABLE[i as usize])
        .find(|e| w & e.3 == e.4)
    else {
        return Inst::illegal(raw, len);
    };
    let rd = ((w >> 7) & 31) as u8;
    let rs1 = ((w >> 15) & 31) as u8;
    let rs2 = ((w >> 20) & 31) as u8;
    let rs3 = ((w >> 27) & 31) as u8;
    let rm = ((w >> 12) & 7) as u8;
    let imm = match fmt {
        Format::I | Format::Load | Format::FLoad => sext(w >> 20, 12),
        Format::Store | Format::FStore => sext(((w >> 25) << 5) | ((w >> 7) & 31), 12),
        Format::B => sext(
            ((w >> 31) << 12)
                | (((w >> 7) & 1) << 11)
                | (((w >> 25) & 0x3f) << 5)
                | (((w >> 8) & 0xf) << 1),
            13,
        ),
        Format::U => (w & 0xffff_f000) as i32,
        Format::J | Format::Brr => sext(
            ((w >> 31) << 20)
                | (((w >> 12) & 0xff) << 12)
                | (((w >> 20) & 1) << 11)
                | (((w >> 21) & 0x3ff) << 1),
            21,
        ),
        Format::Shift => ((w >> 20) & 0x3f) as i32,
        Format::Csr | Format::CsrI => (w >> 20) as i32,
        Format::Fence => ((w >> 20) & 0xff) as i32,
        Format::Fli => ((w >> 15) & 31) as i32,
        Format::Mop if w & (1 << 25) != 0 => (((w >> 30) & 1) << 2 | ((w >> 26) & 3)) as i32,
        Format::Mop => (((w >> 30) & 1) << 4 | ((w >> 26) & 3) << 2 | ((w >> 20) & 3)) as i32,
        _ => 0,
    };
    // Reserved rounding modes 5 and 6 are illegal for instructions that take one.
    if matches!(
        fmt,
        Format::FR | Format::FR1 | Format::FR4 | Format::FToX | Format::FFromX
    ) && TABLE[op as usize].3 & 0x7000 == 0
        && (rm == 5 || rm == 6)
    {
        return Inst::illegal(raw, len);
    }
    Inst {
        op,
        rd,
        rs1,
        rs2,
        rs3,
        rm,
        len,
        imm,
        raw,
        class,
    }
}

/// Decodes the instruction starting with the 16-bit parcel `lo` (and `hi`, the next parcel,
/// used only for 32-bit instructions).
pub fn decode(lo: u16, hi: u16) -> Inst {
    if lo & 3 == 3 {
        let w = u32::from(lo) | (u32::from(hi) << 16);
        decode32(w, 4, w)
    } else {
        match crate::compressed::expand(lo) {
            Some(w) => decode32(w, 2, u32::from(lo)),
            None => Inst::illegal(u32::from(lo), 2),
        }
    }
}

const XNAMES: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];
const FNAMES: [&str; 32] = [
    "ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1", "fa0", "fa1", "fa2",
    "fa3", "fa4", "fa5", "fa6", "fa7", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9",
    "fs10", "fs11", "ft8", "ft9", "ft10", "ft11",
];
/// The constants of Zfa's `fli`, as binutils and LLVM print them.
const FLI_NAMES: [&str; 32] = [
    "-1.0",
    "min",
    "1.52587890625e-05",
    "3.0517578125e-05",
    "0.00390625",
    "0.0078125",
    "0.0625",
    "0.125",
    "0.25",
    "0.3125",
    "0.375",
    "0.4375",
    "0.5",
    "0.625",
    "0.75",
    "0.875",
    "1.0",
    "1.25",
    "1.5",
    "1.75",
    "2.0",
    "2.5",
    "3.0",
    "4.0",
    "8.0",
    "16.0",
    "128.0",
    "256.0",
    "32768.0",
    "65536.0",
    "inf",
    "nan",
];
const RM_NAMES: [&str; 8] = ["rne", "rtz", "rdn", "rup", "rmm", "", "", "dyn"];

/// The `.aq`/`.rl`/`.aqrl` suffix of an atomic instruction (bits 26 and 25).
fn ordering(raw: u32) -> &'static str {
    match (raw >> 25) & 3 {
        1 => ".rl",
        2 => ".aq",
        3 => ".aqrl",
        _ => "",
    }
}

pub use outcrop_events::record::RegUse;

/// Offset of FP registers in [`RegUse`] numbering.
pub const FREG: u8 = 32;

impl Op {
    /// The extension this operation belongs to (I for [`Op::Illegal`]).
    #[inline]
    pub fn ext(self) -> Ext {
        EXTS.get(self as usize).copied().unwrap_or(Ext::I)
    }

    /// The execution unit (latency class) the timing model charges.
    #[inline]
    pub fn unit(self) -> Unit {
        UNITS[self as usize]
    }

    const fn unit_uncached(self, class: Class) -> Unit {
        match self {
            Op::Jal => Unit::Jump,
            Op::Jalr => Unit::JumpIndirect,
            Op::Brr => Unit::BranchOnRandom,
            Op::Div
            | Op::Divu
            | Op::Rem
            | Op::Remu
            | Op::Divw
            | Op::Divuw
            | Op::Remw
            | Op::Remuw => Unit::Div,
            Op::FdivS | Op::FdivD | Op::FsqrtS | Op::FsqrtD => Unit::FloatDiv,
            Op::Opivv | Op::Opfvv | Op::Opmvv | Op::Opivi | Op::Opivx | Op::Opfvf | Op::Opmvx => {
                Unit::Vector
            }
            Op::Illegal => Unit::Sys,
            _ => match class {
                Class::Jump => Unit::JumpIndirect,
                Class::Branch => Unit::Branch,
                Class::Load => Unit::Load,
                Class::Store => Unit::Store,
                Class::Alu => Unit::Alu,
                Class::Mult => Unit::Mult,
                Class::Float => Unit::Float,
                Class::Sys => Unit::Sys,
            },
        }
    }

    /// The operand layout from the opcode table.
    #[inline]
    pub fn format(self) -> Format {
        TABLE.get(self as usize).map_or(Format::None, |e| e.2)
    }

    /// Which registers an instance of this operation reads and writes, given its register
    /// fields (see [`RegUse`] for the numbering).
    #[inline]
    pub fn reg_use(self, rd: u8, rs1: u8, rs2: u8, rs3: u8) -> RegUse {
        let x = |r: u8| r & 31;
        let f = |r: u8| FREG + (r & 31);
        let (dst, src) = match self.format() {
            Format::R | Format::Amo => (x(rd), [x(rs1), x(rs2), 0]),
            Format::I | Format::Load | Format::Shift | Format::Csr | Format::Lr => {
                (x(rd), [x(rs1), 0, 0])
            }
            Format::Store | Format::B => (0, [x(rs1), x(rs2), 0]),
            Format::R1 => (x(rd), [x(rs1), 0, 0]),
            Format::Fli => (f(rd), [0; 3]),
            // may-be-operations write zero and read nothing
            Format::Mop => (x(rd), [0; 3]),
            Format::Cbo => (0, [x(rs1), 0, 0]),
            // vector registers are not in the numbering: the scalar sources only
            Format::VSet => (x(rd), [x(rs1), 0, 0]),
            Format::V => (0, [x(rs1), 0, 0]),
            Format::Brr => (0, [0; 3]),
            Format::U | Format::J | Format::CsrI => (x(rd), [0; 3]),
            Format::None | Format::Fence => (0, [0; 3]),
            Format::FR => (f(rd), [f(rs1), f(rs2), 0]),
            Format::FR1 => (f(rd), [f(rs1), 0, 0]),
            Format::FR4 => (f(rd), [f(rs1), f(rs2), f(rs3)]),
            Format::FCmp => (x(rd), [f(rs1), f(rs2), 0]),
            Format::FFromX => (f(rd), [x(rs1), 0, 0]),
            Format::FToX => (x(rd), [f(rs1), 0, 0]),
            Format::FLoad => (f(rd), [x(rs1), 0, 0]),
            Format::FStore => (0, [x(rs1), f(rs2), 0]),
        };
        RegUse { dst, src }
    }
}

/// [`Op::unit`] of every operation, `Op::Illegal` last.
const UNITS: [Unit; TABLE.len() + 1] = {
    let mut units = [Unit::Sys; TABLE.len() + 1];
    let mut i = 0;
    while i < TABLE.len() {
        units[i] = TABLE[i].0.unit_uncached(TABLE[i].5);
        i += 1;
    }
    units
};

/// ABI name of integer register `r`.
pub fn xname(r: u8) -> &'static str {
    XNAMES[(r & 31) as usize]
}

/// ABI name of FP register `r`.
pub fn fname(r: u8) -> &'static str {
    FNAMES[(r & 31) as usize]
}

fn fence_bits(b: i32) -> String {
    let s: String = [(8, 'i'), (4, 'o'), (2, 'r'), (1, 'w')]
        .iter()
        .filter(|(m, _)| b & m != 0)
        .map(|&(_, c)| c)
        .collect();
    if s.is_empty() {
        "0".into()
    } else {
        s
    }
}

impl fmt::Display for Inst {
    /// Standard RISC-V assembly (no pseudo-instructions), e.g. `addi a0, a0, 1`,
    /// `ld ra, 8(sp)`, `fadd.d fa0, fa1, fa2, rtz`. Branch and jump targets are printed as
    /// pc-relative offsets (`beq a0, a1, 16`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len == 2 {
            if let Some(n) = crate::compressed::mop_number(self.raw as u16) {
                return write!(f, "c.mop.{n}");
            }
        }
        let Some(&(_, name, format, mask, _, _)) = self.entry() else {
            return if self.len == 2 {
                write!(f, ".insn 2, {:#06x}", self.raw)
            } else {
                write!(f, ".insn 4, {:#010x}", self.raw)
            };
        };
        let (rd, rs1, rs2, rs3) = (self.rd, self.rs1, self.rs2, self.rs3);
        let x = xname;
        let fr = fname;
        // rounding mode suffix only for instructions with a free rm field, and not for dyn
        // exact conversions take no rounding mode in assembly (binutils encodes rm = 0)
        let exact = matches!(self.op, Op::FcvtDS | Op::FcvtDW | Op::FcvtDWu);
        let rm = if self.op == Op::FcvtmodWD {
            ", rtz".to_string() // its rounding mode is fixed, and printed
        } else if mask & 0x7000 == 0 && self.rm != 7 && !exact {
            format!(", {}", RM_NAMES[self.rm as usize & 7])
        } else {
            String::new()
        };
        match format {
            Format::R => write!(f, "{name} {}, {}, {}", x(rd), x(rs1), x(rs2)),
            Format::I => write!(f, "{name} {}, {}, {}", x(rd), x(rs1), self.imm),
            Format::Load => write!(f, "{name} {}, {}({})", x(rd), self.imm, x(rs1)),
            Format::Store => write!(f, "{name} {}, {}({})", x(rs2), self.imm, x(rs1)),
            Format::B => write!(f, "{name} {}, {}, {}", x(rs1), x(rs2), self.imm),
            Format::U => write!(f, "{name} {}, {:#x}", x(rd), (self.imm as u32) >> 12),
            Format::J => write!(f, "{name} {}, {}", x(rd), self.imm),
            Format::Brr => write!(f, "{name} 1/{}, {}", 2u64 << (rd & 15), self.imm),
            Format::Shift => write!(f, "{name} {}, {}, {}", x(rd), x(rs1), self.imm),
            Format::Csr => write!(f, "{name} {}, {:#x}, {}", x(rd), self.imm, x(rs1)),
            Format::CsrI => write!(f, "{name} {}, {:#x}, {}", x(rd), self.imm, rs1),
            Format::None => write!(f, "{name}"),
            Format::Fence => write!(
                f,
                "{name} {}, {}",
                fence_bits(self.imm >> 4),
                fence_bits(self.imm & 15)
            ),
            Format::Amo => write!(
                f,
                "{name}{} {}, {}, ({})",
                ordering(self.raw),
                x(rd),
                x(rs2),
                x(rs1)
            ),
            Format::Lr => write!(f, "{name}{} {}, ({})", ordering(self.raw), x(rd), x(rs1)),
            Format::FR => write!(f, "{name} {}, {}, {}{rm}", fr(rd), fr(rs1), fr(rs2)),
            Format::FR1 => write!(f, "{name} {}, {}{rm}", fr(rd), fr(rs1)),
            Format::FR4 => write!(
                f,
                "{name} {}, {}, {}, {}{rm}",
                fr(rd),
                fr(rs1),
                fr(rs2),
                fr(rs3)
            ),
            Format::FCmp => write!(f, "{name} {}, {}, {}", x(rd), fr(rs1), fr(rs2)),
            Format::FFromX => write!(f, "{name} {}, {}{rm}", fr(rd), x(rs1)),
            Format::FToX => write!(f, "{name} {}, {}{rm}", x(rd), fr(rs1)),
            Format::FLoad => write!(f, "{name} {}, {}({})", fr(rd), self.imm, x(rs1)),
            Format::FStore => write!(f, "{name} {}, {}({})", fr(rs2), self.imm, x(rs1)),
            Format::R1 => write!(f, "{name} {}, {}", x(rd), x(rs1)),
            Format::Fli => write!(
                f,
                "{name} {}, {}",
                fr(rd),
                FLI_NAMES[self.imm as usize & 31]
            ),
            Format::Mop if self.raw & (1 << 25) != 0 => {
                write!(f, "{name}.{} {}, {}, {}", self.imm, x(rd), x(rs1), x(rs2))
            }
            Format::Mop => write!(f, "{name}.{} {}, {}", self.imm, x(rd), x(rs1)),
            Format::Cbo => write!(f, "{name} ({})", x(rs1)),
            Format::VSet | Format::V => match crate::vector::disassemble(self.raw) {
                Some(text) => f.write_str(&text),
                None => write!(f, ".insn 4, {:#010x}", self.raw),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_use_follows_each_format() {
        // x registers are 0..31, f registers 32..63; absent slots are 0
        for (op, dst, src) in [
            (Op::Add, 5, [6, 7, 0]),
            (Op::Addi, 5, [6, 0, 0]),
            (Op::Sd, 0, [6, 7, 0]),
            (Op::Beq, 0, [6, 7, 0]),
            (Op::Lui, 5, [0; 3]),
            (Op::Jal, 5, [0; 3]),
            (Op::AmoaddD, 5, [6, 7, 0]),
            (Op::FaddD, 37, [38, 39, 0]),
            (Op::FsqrtD, 37, [38, 0, 0]),
            (Op::FmaddD, 37, [38, 39, 40]),
            (Op::FeqD, 5, [38, 39, 0]),
            (Op::FcvtDL, 37, [6, 0, 0]),
            (Op::FmvXD, 5, [38, 0, 0]),
            (Op::Fld, 37, [6, 0, 0]),
            (Op::Fsd, 0, [6, 39, 0]),
            (Op::Fence, 0, [0; 3]),
            (Op::Illegal, 0, [0; 3]),
        ] {
            assert_eq!(op.reg_use(5, 6, 7, 8), RegUse { dst, src }, "{op:?}");
        }
        // fields are masked to five bits
        let masked = Op::Add.reg_use(0xff, 0xe1, 0x22, 0);
        assert_eq!(
            masked,
            RegUse {
                dst: 31,
                src: [1, 2, 0]
            }
        );
    }

    #[test]
    fn table_order_matches_op_discriminants() {
        for (i, e) in TABLE.iter().enumerate() {
            assert_eq!(e.0 as usize, i, "{}", e.1);
            assert_eq!(e.4 & !e.3, 0, "{}: match has bits outside the mask", e.1);
        }
    }

    #[test]
    fn no_two_entries_overlap() {
        // two entries overlap if some word matches both
        for (i, a) in TABLE.iter().enumerate() {
            for b in &TABLE[i + 1..] {
                let common = a.3 & b.3;
                assert!(a.4 & common != b.4 & common, "{} and {} overlap", a.1, b.1);
            }
        }
    }

    #[test]
    fn known_encodings() {
        let d = |w: u32| decode32(w, 4, w).to_string();
        assert_eq!(d(0x00150513), "addi a0, a0, 1");
        assert_eq!(d(0x00813083), "ld ra, 8(sp)");
        assert_eq!(d(0xfe112c23), "sw ra, -8(sp)");
        assert_eq!(d(0x00b50463), "beq a0, a1, 8");
        assert_eq!(d(0x000280e7), "jalr ra, t0, 0");
        assert_eq!(d(0x02b50533), "mul a0, a0, a1");
        assert_eq!(d(0x00000073), "ecall");
        assert_eq!(d(0x0ff0000f), "fence iorw, iorw");
        assert_eq!(d(0x02c5f553), "fadd.d fa0, fa1, fa2"); // rm = dyn is not printed
        assert_eq!(d(0x02c59553), "fadd.d fa0, fa1, fa2, rtz");
        assert_eq!(d(0x0005a503 | (3 << 12)), "ld a0, 0(a1)");
        assert!(d(0xffffffff).starts_with(".insn"));
        // branch-on-random: level 9 (1/1024) in bits 10:7, offset 8 as in jal
        assert_eq!(d(0x0080_048b), "brr 1/1024, 8");
        assert_eq!(d(0x0000_000b), "brr 1/2, 0");
        assert_eq!(d(0xfffff78b), "brr 1/65536, -2");
        // bit 11 (a level above 15) is reserved
        assert!(d(0x0080_080b).starts_with(".insn"));
    }
}
