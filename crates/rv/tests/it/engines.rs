//! The block engine against its oracle, the single-step interpreter: same final state, same
//! basic blocks, taken branches and class counts, on every bundled workload and on random
//! instruction sequences (self-modifying code, faults, system calls and observer stops
//! included). `outcrop_rv::differential` does the comparing.

use crate::common;

use outcrop_rv::differential::{
    bare_machine, compare_counted, compare_engines, run_observed, CODE_BASE, DATA_BASE, DATA_BYTES,
};
use outcrop_rv::{Machine, Outcome};
use proptest::prelude::*;

#[test]
fn every_workload_runs_the_same_under_both_engines() {
    let dir = outcrop_testkit::workloads().join("bin");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "TOOLCHAIN")
        .collect();
    names.sort();
    assert!(names.len() >= 12, "workloads missing in {}", dir.display());
    for name in &names {
        // to the end (the largest stop at 400M instructions)
        let state = compare_engines(&|| common::workload(name, 400_000_000), None, &[])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            matches!(
                state.outcome,
                Outcome::Exited(_) | Outcome::InstructionLimit
            ),
            "{name}: {:?}",
            state.outcome
        );
        assert_eq!(
            state.streams.classes.iter().sum::<u64>(),
            state.instret,
            "{name}"
        );
    }
}

/// The Cranelift path, which the baseline tier replaced on x86-64 hosts, still runs what it
/// compiles exactly (FP arithmetic and the FP CSRs through `Host::float` included): the
/// workloads with FP, interpreters and compressors, with the baseline tier off.
#[test]
fn cranelift_without_the_baseline_tier_runs_workloads_the_same() {
    for name in ["fft", "nbody", "matmul", "lz", "bytecode_vm", "qsort_ints"] {
        let make = || {
            let mut m = common::workload(name, 60_000_000);
            m.jit_baseline = false;
            m
        };
        compare_engines(&make, None, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn an_observer_stops_both_engines_at_the_same_instruction() {
    for stop in [1, 2, 7, 1000, 123_457] {
        let state = compare_engines(&|| common::workload("lz", 50_000_000), Some(stop), &[])
            .unwrap_or_else(|e| panic!("stop at block {stop}: {e}"));
        assert_eq!(state.outcome, Outcome::Stopped);
        assert_eq!(state.streams.blocks, stop);
    }
}

#[test]
fn the_instruction_limit_falls_inside_blocks_exactly() {
    for limit in [1, 2, 3, 10, 99, 1001, 65_537, 1_000_003] {
        let state = compare_engines(&|| common::workload("qsort_ints", limit), None, &[])
            .unwrap_or_else(|e| panic!("limit {limit}: {e}"));
        assert_eq!(state.outcome, Outcome::InstructionLimit);
        assert_eq!(state.instret, limit);
    }
}

/// Every R-type integer ALU form (I, Zba, Zbb, Zbc, Zbs, Zicond) and the M forms the random
/// programs use: (funct7, funct3,
/// opcode).
const R_FORMS: &[(u32, u32, u32)] = &[
    (0, 0, 0x33),
    (0x20, 0, 0x33),
    (0, 1, 0x33),
    (0, 2, 0x33),
    (0, 3, 0x33),
    (0, 4, 0x33),
    (0, 5, 0x33),
    (0x20, 5, 0x33),
    (0, 6, 0x33),
    (0, 7, 0x33),
    (0, 0, 0x3b),
    (0x20, 0, 0x3b),
    (0, 1, 0x3b),
    (0, 5, 0x3b),
    (0x20, 5, 0x3b),
    (1, 0, 0x33),
    (1, 4, 0x33),
    (1, 0, 0x3b),
    (1, 6, 0x3b),
    // Zba: add.uw, sh1add/sh2add/sh3add and their .uw forms
    (4, 0, 0x3b),
    (0x10, 2, 0x33),
    (0x10, 4, 0x33),
    (0x10, 6, 0x33),
    (0x10, 2, 0x3b),
    (0x10, 4, 0x3b),
    (0x10, 6, 0x3b),
    // Zbb: andn, orn, xnor, max/maxu/min/minu, rol/ror, rolw/rorw
    (0x20, 7, 0x33),
    (0x20, 6, 0x33),
    (0x20, 4, 0x33),
    (5, 6, 0x33),
    (5, 7, 0x33),
    (5, 4, 0x33),
    (5, 5, 0x33),
    (0x30, 1, 0x33),
    (0x30, 5, 0x33),
    (0x30, 1, 0x3b),
    (0x30, 5, 0x3b),
    // Zbs: bclr, bext, binv, bset; Zicond: czero.eqz, czero.nez
    (0x24, 1, 0x33),
    (0x24, 5, 0x33),
    (0x34, 1, 0x33),
    (0x14, 1, 0x33),
    (7, 5, 0x33),
    (7, 7, 0x33),
    // Zbc: clmul, clmulr, clmulh
    (5, 1, 0x33),
    (5, 2, 0x33),
    (5, 3, 0x33),
];

/// The unary and immediate forms of Zba/Zbb/Zbs (rd = a0, rs1 = a1; the shift amount or
/// the operation in bits 31:20): clz, ctz, cpop (and w), sext.b, sext.h, zext.h, orc.b,
/// rev8, and slli.uw, rori, roriw, bclri, bexti, binvi, bseti by `shamt`.
fn bit_forms(shamt: u32) -> Vec<u32> {
    let a = (11 << 15) | (10 << 7);
    let mut v: Vec<u32> = [
        (0x600, 1, 0x13),
        (0x601, 1, 0x13),
        (0x602, 1, 0x13),
        (0x600, 1, 0x1b),
        (0x601, 1, 0x1b),
        (0x602, 1, 0x1b),
        (0x604, 1, 0x13),
        (0x605, 1, 0x13),
        (0x080, 4, 0x3b),
        (0x287, 5, 0x13),
        (0x6b8, 5, 0x13),
    ]
    .iter()
    .map(|&(f12, f3, op)| (f12 << 20) | (f3 << 12) | a | op)
    .collect();
    let sh = (shamt & 63) << 20;
    for (hi, f3, op) in [
        (0x08, 1, 0x1b),
        (0x60, 5, 0x13),
        (0x48, 1, 0x13),
        (0x48, 5, 0x13),
        (0x68, 1, 0x13),
        (0x28, 1, 0x13),
    ] {
        v.push((hi << 24) | sh | (f3 << 12) | a | op);
    }
    v.push((0x30 << 25) | ((shamt & 31) << 20) | (5 << 12) | a | 0x1b); // roriw
    v
}

/// One instruction (or a few) from a template number and random bits. Registers 2, 8 and 9
/// (sp, s0, s1) stay pointers into the data (no template but compressed parcels writes them),
/// so most memory accesses succeed and programs run on to their limit.
fn instruction(t: u8, a: u32, b: u32, out: &mut Vec<u32>) {
    let keep = |r: u32| if matches!(r, 2 | 8 | 9) { r ^ 16 } else { r };
    let rd = keep((a >> 7) & 31);
    let rs1 = (a >> 15) & 31;
    let rs2 = (a >> 20) & 31;
    let base = [2, 8, 9][(a >> 25) as usize % 3];
    let small = (b % 128) as i32 - 64;
    let link = [0, 1, 5][(b >> 8) as usize % 3];
    let i_imm = |imm: i32| ((imm as u32) & 0xfff) << 20;
    let s_imm = |imm: i32| {
        let v = imm as u32 & 0xfff;
        ((v >> 5) << 25) | ((v & 31) << 7)
    };
    let b_imm = |off: i32| {
        let v = off as u32;
        (((v >> 12) & 1) << 31)
            | (((v >> 5) & 0x3f) << 25)
            | (((v >> 1) & 0xf) << 8)
            | (((v >> 11) & 1) << 7)
    };
    let j_imm = |off: i32| {
        let v = off as u32;
        (((v >> 20) & 1) << 31)
            | (((v >> 1) & 0x3ff) << 21)
            | (((v >> 11) & 1) << 20)
            | (((v >> 12) & 0xff) << 12)
    };
    let branch_off = ((b % 24) as i32 - 8) * 4;
    match t {
        // R-type integer ALU and M: a funct7/funct3 pair from a list
        0..=3 => {
            const R: &[(u32, u32, u32)] = R_FORMS;
            let (f7, f3, op) = R[b as usize % R.len()];
            out.push((f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op);
        }
        // I-type ALU (shifts get a legal or illegal shamt by chance)
        4..=7 => {
            let op = if b & 8 != 0 { 0x1b } else { 0x13 };
            let f3 = if op == 0x1b {
                [0, 1, 5][(b & 7) as usize % 3]
            } else {
                b & 7
            };
            let imm = if f3 == 1 || f3 == 5 {
                (b >> 4) & 0x3f | ((b >> 10) & 1) << 10
            } else {
                (small as u32) & 0xfff
            };
            out.push((imm << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op);
        }
        // x0 sources and zero immediates: li, mv, writes to x0
        8 => out.push(i_imm(small) | (rd << 7) | 0x13),
        9 => out.push((rs1 << 15) | (rd << 7) | 0x13),
        10 => out.push((rs2 << 20) | (rs1 << 15) | 0x33),
        // loads and stores near the pointer registers
        11..=13 => out.push(i_imm(small) | (base << 15) | ((b >> 8) % 7) << 12 | (rd << 7) | 0x03),
        14 | 15 => {
            out.push(s_imm(small) | (rs2 << 20) | (base << 15) | ((b >> 8) & 3) << 12 | 0x23)
        }
        // conditional branches and jumps with short offsets (loops included)
        16..=18 => {
            let f3 = [0, 1, 4, 5, 6, 7][(b >> 8) as usize % 6];
            out.push(b_imm(branch_off) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | 0x63)
        }
        19 => out.push(j_imm(branch_off) | (link << 7) | 0x6f),
        // fused pairs: lui+addi[w], auipc+addi, auipc+jalr
        20 => {
            // the upper immediate at the 32-bit overflow edge half the time
            let hi = if b & 2 != 0 {
                0x8000_0000
            } else {
                b & 0xfffff000
            };
            out.push(hi | (rd << 7) | 0x37);
            let op = if b & 1 != 0 { 0x1b } else { 0x13 };
            out.push(i_imm(-small.abs() * 31) | (rd << 15) | (rd << 7) | op);
        }
        21 => {
            out.push((rd << 7) | 0x17);
            if b & 1 != 0 {
                out.push(i_imm(small) | (rd << 15) | (rd << 7) | 0x13);
            } else {
                out.push(i_imm(branch_off) | (rd << 15) | (link << 7) | 0x67);
            }
        }
        // the same jump, not fused (an instruction between), and a return through ra
        22 => {
            out.push((rd << 7) | 0x17);
            out.push(0x13);
            out.push(i_imm(branch_off + 4) | (rd << 15) | (link << 7) | 0x67);
        }
        23 => out.push((1 << 15) | 0x67),
        // FP: loads, stores, arithmetic with any rounding mode, moves and compares
        24 => {
            let f3 = if b & 1 != 0 { 3 } else { 2 };
            if b & 2 != 0 {
                out.push(i_imm(small) | (base << 15) | (f3 << 12) | (rd << 7) | 0x07)
            } else {
                out.push(s_imm(small) | (rs2 << 20) | (base << 15) | (f3 << 12) | 0x27)
            }
        }
        25 => {
            // fused multiply-adds, single or double (fmt in bits 26:25)
            let op = [0x43, 0x47, 0x4b, 0x4f][(b % 4) as usize];
            let fmt = (b >> 2) & 1;
            let rm = (b >> 8) & 7;
            let rs3 = (b >> 16) & 31;
            out.push(
                (rs3 << 27) | (fmt << 25) | (rs2 << 20) | (rs1 << 15) | (rm << 12) | (rd << 7) | op,
            );
        }
        26 => {
            const F: [u32; 16] = [
                0, 1, 4, 5, 8, 9, 12, 13, 0x10, 0x11, 0x50, 0x51, 0x78, 0x79, 0x70, 0x71,
            ];
            let f7 = F[(b % 16) as usize];
            let rm = (b >> 8) & 7;
            let (rs2, rm) = match f7 {
                0x10 | 0x11 | 0x50 | 0x51 => (rs2, rm % 3),
                0x70..=0x79 => (0, 0),
                _ => (rs2, rm),
            };
            out.push((f7 << 25) | (rs2 << 20) | (rs1 << 15) | (rm << 12) | (rd << 7) | 0x53);
        }
        // system calls with a chosen number: write, brk, getpid, exit (rarely)
        27 => {
            let nr = [64, 214, 172, 64, 214, 172, 93][(b % 7) as usize];
            out.push(i_imm(nr) | (17 << 7) | 0x13);
            out.push(0x73);
        }
        // fence.i, fence, csr reads/writes of fflags/frm/fcsr
        28 => out.push(if b & 1 != 0 { 0x100f } else { 0x0ff0000f }),
        29 => {
            let csr = 1 + b % 3;
            let f3 = 1 + (b >> 4) % 3;
            out.push((csr << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | 0x73)
        }
        // a store into the code itself (self-modifying code), at a word of the program
        30 => {
            out.push((rd << 7) | 0x17);
            let off = ((b % 32) as i32 - 8) * 4;
            out.push(s_imm(off) | (rs2 << 20) | (rd << 15) | (2 << 12) | 0x23);
        }
        // compressed parcels (two per word), and rarely anything at all
        31 => {
            let parcel = |v: u32| if v & 3 == 3 { v & !1 } else { v } & 0xffff;
            out.push(parcel(a) | (parcel(b) << 16));
        }
        // Zba/Zbb/Zbs unary and immediate forms with random registers
        32 => {
            let forms = bit_forms(b >> 8);
            let f = forms[b as usize % forms.len()] & !((31 << 15) | (31 << 7));
            out.push(f | (rs1 << 15) | (rd << 7));
        }
        // Zcb parcels (c.lbu/lhu/lh/sb/sh off s0 or s1, unary ops, c.mul) and Zfa
        33 => {
            let rdp = (a >> 2) & 7;
            let base = 8 | (b >> 20) & 1; // s0 or s1: rs1' 0 or 1
            let zcb = [
                0x8000 | (base & 7) << 7 | ((b >> 4) & 3) << 5 | rdp << 2, // c.lbu
                0x8400 | (base & 7) << 7 | ((b >> 4) & 3) << 5 | rdp << 2, // c.lhu/c.lh
                0x8800 | (base & 7) << 7 | ((b >> 4) & 3) << 5 | rdp << 2, // c.sb
                0x8c00 | (base & 7) << 7 | ((b >> 5) & 1) << 5 | rdp << 2, // c.sh
                0x9c61 | rdp << 7 | ((b >> 4) % 6) << 2,                   // unary
                0x9c41 | rdp << 7 | ((b >> 4) & 7) << 2,                   // c.mul
            ];
            let lo = zcb[(b % 6) as usize];
            // rd' of the unary ops and c.mul must not be s0/s1 (the pointers)
            let lo = if b % 6 >= 4 && rdp < 2 {
                lo | 2 << 7
            } else {
                lo
            };
            let lo = if b % 6 < 4 && (lo >> 2) & 7 < 2 && b % 6 != 2 && b % 6 != 3 {
                lo | 2 << 2
            } else {
                lo
            };
            if b & (1 << 24) != 0 {
                // a Zfa instruction instead: fminm/fmaxm, fround(nx), fleq/fltq, fli,
                // fcvtmod.w.d
                let fmt = (b >> 25) & 1;
                let rm = [0, 1, 2, 3, 4, 7][((b >> 26) % 6) as usize];
                let w = match (b >> 12) % 6 {
                    0 => (0x14 << 25) | (rs2 << 20) | (rs1 << 15) | (2 | (b >> 27) & 1) << 12,
                    1 => (0x20 << 25) | ((4 | (b >> 27) & 1) << 20) | (rs1 << 15) | rm << 12,
                    2 => (0x50 << 25) | (rs2 << 20) | (rs1 << 15) | (4 | (b >> 27) & 1) << 12,
                    3 => (0x78 << 25) | (1 << 20) | (rs1 << 15),
                    4 => (0x61 << 25) | (8 << 20) | (rs1 << 15) | 1 << 12,
                    _ => (0x14 << 25) | (rs2 << 20) | (rs1 << 15) | 3 << 12,
                };
                let fmt = if (b >> 12) % 6 == 4 { 0 } else { fmt };
                out.push(w | fmt << 25 | (rd << 7) | 0x53);
            } else {
                out.push(lo | 0x0001_0000 | 0x0001 << 16); // then c.nop
            }
        }
        _ => out.push(a ^ b),
    }
}

/// The instructions, then a jump back to the first: programs loop until their limit unless
/// they exit or fault.
fn program(ops: &[(u8, u32, u32)]) -> Vec<u8> {
    let mut words = Vec::new();
    for &(t, a, b) in ops {
        instruction(t, a, b, &mut words);
    }
    let back = -4 * words.len() as i32;
    let v = back as u32;
    words.push(
        (((v >> 20) & 1) << 31)
            | (((v >> 1) & 0x3ff) << 21)
            | (((v >> 11) & 1) << 20)
            | (((v >> 12) & 0xff) << 12)
            | 0x6f,
    );
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A [`bare_machine`] for `code` whose registers other than the pointers (sp, s0, s1) start
/// with `values` (edge values), and its FP registers with `fvalues` when given.
fn seeded(code: &[u8], limit: u64, values: &[u64], fvalues: Option<&[u64]>) -> Machine {
    let mut m = bare_machine(code, limit);
    for (r, &v) in values.iter().enumerate().skip(1) {
        if !matches!(r, 2 | 8 | 9) {
            m.x[r] = v;
        }
    }
    if let Some(f) = fvalues {
        m.f.copy_from_slice(f);
    }
    m
}

proptest! {
    // each case takes tens of microseconds
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn random_instruction_sequences_run_the_same(
        ops in proptest::collection::vec((0u8..35, any::<u32>(), any::<u32>()), 1..80),
        values in proptest::collection::vec(
            prop_oneof![Just(0u64), Just(1), Just(u64::MAX), Just(1 << 63), 0u64..80, any::<u64>()],
            32,
        ),
        fvalues in proptest::collection::vec(
            prop_oneof![
                Just(1.5f64.to_bits()),
                Just((-2.0f64).to_bits()),
                Just(0.1f64.to_bits()),
                Just(f64::INFINITY.to_bits()),
                Just(f64::NAN.to_bits()),
                Just(f64::MIN_POSITIVE.to_bits() >> 3),
                Just(0xffff_ffff_3fc0_0000), // the single 1.5, NaN-boxed
                any::<u64>(),
            ],
            32,
        ),
        limit in 1u64..3000,
        stop in proptest::option::of(1u64..40),
    ) {
        let code = program(&ops);
        let snapshot = [(CODE_BASE, code.len() as u64), (DATA_BASE, DATA_BYTES)];
        let make = || seeded(&code, limit, &values, Some(&fvalues));
        if let Err(e) = compare_engines(&make, stop, &snapshot) {
            prop_assert!(false, "{e}\nops: {ops:?}");
        }
    }

    #[test]
    fn random_programs_give_counting_observers_the_same_counts_and_runs(
        (ops, values, limit) in counted_case(),
    ) {
        // compiled blocks count their runs and record only calls, returns and transfers
        // out of a 64-byte range: the observer must see what the block path shows it
        let code = program(&ops);
        let snapshot = [(CODE_BASE, code.len() as u64), (DATA_BASE, DATA_BYTES)];
        let make = || seeded(&code, limit, &values, None);
        if let Err(e) = compare_counted(&make, &snapshot) {
            prop_assert!(false, "{e}\nops: {ops:?}");
        }
    }

    #[test]
    fn random_programs_give_the_ring_fed_branch_units_the_same_samples(
        (ops, values, limit) in counted_case(),
        period in 1u64..40,
    ) {
        // compiled code writes taken branches into a ring and stops where a sample is due:
        // branch-record units fed so must take the samples they take from retire records
        let code = program(&ops);
        let snapshot = [(CODE_BASE, code.len() as u64), (DATA_BASE, DATA_BYTES)];
        let make = || seeded(&code, limit, &values, None);
        if let Err(e) = compare_ring_fed(&make, &snapshot, period) {
            prop_assert!(false, "{e}\nops: {ops:?}");
        }
    }

    #[test]
    fn random_programs_warm_the_same_from_compiled_code(
        (ops, values, limit) in counted_case(),
    ) {
        // compiled blocks hand functional warming their fetches, addresses and final
        // transfers: the steps must be those of the single-step interpreter's retire records
        let code = program(&ops);
        let snapshot = [(CODE_BASE, code.len() as u64), (DATA_BASE, DATA_BYTES)];
        let make = || seeded(&code, limit, &values, None);
        if let Err(e) = compare_warm(&make, &snapshot) {
            prop_assert!(false, "{e}\nops: {ops:?}");
        }
    }

    #[test]
    fn random_programs_give_a_traced_observer_the_same_basic_blocks(
        (ops, values, limit) in counted_case(),
    ) {
        // compiled code appends each basic block it completes to a trace: the observer must
        // hear the very basic blocks, whole, that the single-step interpreter shows it
        let code = program(&ops);
        let snapshot = [(CODE_BASE, code.len() as u64), (DATA_BASE, DATA_BYTES)];
        let make = || seeded(&code, limit, &values, None);
        if let Err(e) = compare_traced(&make, &snapshot) {
            prop_assert!(false, "{e}\nops: {ops:?}");
        }
    }
}

/// What functional warming reads of one instruction, in the order the timing model's
/// `warm` reads it: the fetch, the access, the transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum WarmStep {
    Fetch(u64),
    Data(u64, u8),
    Branch(u64, bool, u64),
    Jump(u64, u8, Option<outcrop_rv::BranchKind>, bool, u64),
}

/// An observer of [`outcrop_events::record::Observer::WARM`] that writes down the steps of
/// the retire records (the engines') and of the block runs (compiled code's) alike: kept
/// whole (`KEEP`) or hashed.
#[derive(Default)]
struct WarmSteps<const KEEP: bool> {
    steps: Vec<WarmStep>,
    hash: std::collections::hash_map::DefaultHasher,
    count: u64,
    runs: u64,
}

impl<const KEEP: bool> WarmSteps<KEEP> {
    fn push(&mut self, s: WarmStep) {
        use std::hash::Hash;
        self.count += 1;
        if KEEP {
            self.steps.push(s);
        } else {
            s.hash(&mut self.hash);
        }
    }

    fn digest(&self) -> (u64, u64) {
        use std::hash::Hasher;
        (self.count, self.hash.finish())
    }
}

impl<const KEEP: bool> outcrop_events::record::Observer for WarmSteps<KEEP> {
    const RETIRE: bool = true;
    const WARM: bool = true;
    fn retire(
        &mut self,
        r: &outcrop_rv::Retire,
        _t: Option<&outcrop_events::record::Stamp>,
    ) -> outcrop_events::record::Control {
        use outcrop_events::record::{Class, Unit};
        self.push(WarmStep::Fetch(r.pc));
        if r.mem_size > 0 {
            self.push(WarmStep::Data(r.mem_addr, r.mem_size));
        }
        match r.class {
            _ if r.unit == Unit::BranchOnRandom => {}
            Some(Class::Branch) => self.push(WarmStep::Branch(r.pc, r.taken, r.next_pc)),
            Some(Class::Jump) => self.push(WarmStep::Jump(
                r.pc,
                r.len,
                r.transfer,
                r.unit != Unit::Jump,
                r.next_pc,
            )),
            _ => {}
        }
        outcrop_events::record::Control::Continue
    }
    fn warm(
        &mut self,
        run: &outcrop_events::record::WarmRun<'_>,
    ) -> outcrop_events::record::Control {
        use outcrop_events::record::WarmEnd;
        self.runs += 1;
        let mut pc = run.start;
        let mut addrs = run.addrs.iter();
        let mut last = (pc, 0);
        assert_eq!(run.lens.len(), run.sizes.len(), "a run's lengths and sizes");
        for (&len, &size) in run.lens.iter().zip(run.sizes) {
            self.push(WarmStep::Fetch(pc));
            if size > 0 {
                let a = *addrs.next().expect("an address for every access");
                self.push(WarmStep::Data(a, size));
            }
            last = (pc, len);
            pc += u64::from(len);
        }
        assert!(addrs.next().is_none(), "an address left over");
        match run.end {
            Some(WarmEnd::Branch) => self.push(WarmStep::Branch(last.0, run.next != pc, run.next)),
            Some(WarmEnd::Jump { kind, indirect }) => self.push(WarmStep::Jump(
                last.0,
                last.1,
                Some(kind),
                indirect,
                run.next,
            )),
            None => {}
        }
        outcrop_events::record::Control::Continue
    }
}

/// `Err` naming the first place `got` and `want` (sequences of `what`'s `items`) differ.
fn same_sequence<T: PartialEq + std::fmt::Debug>(
    what: &str,
    items: &str,
    got: &[T],
    want: &[T],
) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    let at = got.iter().zip(want).position(|(a, b)| a != b);
    Err(format!(
        "{what}: {} {items}, not {}; first difference at {at:?}: {:?} vs {:?}",
        got.len(),
        want.len(),
        at.map(|i| &got[i]),
        at.map(|i| &want[i]),
    ))
}

/// Functional warming's stream on the single-step interpreter (retire records only), against
/// the compiling tier's (block runs from compiled code, retire records from the rest) and the
/// block engine's: the same steps in the same order, and the same final state.
fn compare_warm(make: &dyn Fn() -> Machine, snapshot: &[(u64, u64)]) -> Result<(), String> {
    let run = |engine, hot| {
        let mut obs = WarmSteps::<true>::default();
        let state = run_observed(make, engine, &mut obs, snapshot, hot);
        (state, obs.steps, obs.runs)
    };
    let want = run(outcrop_rv::Engine::Step, 1);
    for (engine, hot) in [
        (outcrop_rv::Engine::Blocks, 1),
        (outcrop_rv::Engine::Jit, 1),
        (outcrop_rv::Engine::Jit, 3),
    ] {
        let got = run(engine, hot);
        let what = format!("{engine:?}, compiled at run {hot}");
        if got.0 != want.0 {
            return Err(format!("{what}: final state differs"));
        }
        same_sequence(&what, "steps", &got.1, &want.1)?;
    }
    Ok(())
}

/// Functional warming from compiled code on the bundled workloads: the steps it warms the
/// model with are those of the interpreter's retire records, in order (hashed), and most of
/// them come from compiled blocks.
#[test]
fn functional_warming_from_compiled_code_warms_what_retire_records_do() {
    for name in ["lz", "qsort_ints", "bytecode_vm", "fft", "graph_bfs"] {
        let limit = 3_000_000;
        let run = |engine| {
            let mut obs = WarmSteps::<false>::default();
            let mut m = common::workload(name, limit);
            m.engine = engine;
            m.jit_background = false;
            m.run(&mut obs);
            (m.instret, obs.digest(), obs.runs)
        };
        let want = run(outcrop_rv::Engine::Step);
        let got = run(outcrop_rv::Engine::Jit);
        assert_eq!((got.0, got.1), (want.0, want.1), "{name}");
        assert!(
            got.2 > want.0 / 50,
            "{name}: only {} block runs from compiled code in {} instructions",
            got.2,
            want.0
        );
    }
}

/// A random program for the counted paths' tests: its operations, the registers' values and
/// an instruction limit.
fn counted_case() -> impl Strategy<Value = (Vec<(u8, u32, u32)>, Vec<u64>, u64)> {
    (
        proptest::collection::vec((0u8..35, any::<u32>(), any::<u32>()), 1..80),
        proptest::collection::vec(
            prop_oneof![Just(0u64), Just(1), Just(u64::MAX), 0u64..80, any::<u64>()],
            32,
        ),
        1u64..3000,
    )
}

/// An observer of whole basic blocks fed from compiled code's trace ([`Observer::TRACE`]),
/// alone (`Traced<false>`) or beside a class counter that takes counts (`Traced<true>`).
#[derive(Default)]
struct Traced<const COUNTER: bool> {
    blocks: Vec<(u64, u32)>,
    classes: [u64; 8],
}

impl<const COUNTER: bool> outcrop_events::record::Observer for Traced<COUNTER> {
    const BLOCKS: bool = true;
    const COUNTS: bool = true;
    const TRACE: bool = true;
    const UNCOUNTED: bool = !COUNTER;
    const CLASSES: bool = COUNTER;
    fn block(&mut self, start: u64, insns: u32) -> outcrop_events::record::Control {
        self.blocks.push((start, insns));
        outcrop_events::record::Control::Continue
    }
    fn classes(&mut self, counts: &[u32; 8]) -> outcrop_events::record::Control {
        for (t, &n) in self.classes.iter_mut().zip(counts) {
            *t += u64::from(n);
        }
        outcrop_events::record::Control::Continue
    }
    fn counted(
        &mut self,
        _start: u64,
        _lens: &[u8],
        classes: &[u32; 8],
        count: u64,
    ) -> outcrop_events::record::Control {
        for (t, &n) in self.classes.iter_mut().zip(classes) {
            *t += u64::from(n) * count;
        }
        outcrop_events::record::Control::Continue
    }
}

/// [`Traced`] observers on the single-step interpreter, the block engine and the compiling
/// tier (compiling at a block's first run, and at its third, when superblocks form): the same
/// final state, basic blocks and (beside a counter) class counts.
fn compare_traced(make: &dyn Fn() -> Machine, snapshot: &[(u64, u64)]) -> Result<(), String> {
    fn run<const C: bool>(
        make: &dyn Fn() -> Machine,
        snapshot: &[(u64, u64)],
        engine: outcrop_rv::Engine,
        hot: u32,
    ) -> (
        outcrop_rv::differential::RunState,
        Vec<(u64, u32)>,
        [u64; 8],
    ) {
        let mut obs = Traced::<C>::default();
        let state = run_observed(make, engine, &mut obs, snapshot, hot);
        (state, obs.blocks, obs.classes)
    }
    for counter in [false, true] {
        let go = |engine, hot| {
            if counter {
                run::<true>(make, snapshot, engine, hot)
            } else {
                run::<false>(make, snapshot, engine, hot)
            }
        };
        let want = go(outcrop_rv::Engine::Step, 1);
        for (engine, hot) in [
            (outcrop_rv::Engine::Blocks, 1),
            (outcrop_rv::Engine::Jit, 1),
            (outcrop_rv::Engine::Jit, 3),
        ] {
            let got = go(engine, hot);
            let what = format!("{engine:?}, compiled at run {hot}, counter {counter}");
            if got.0 != want.0 {
                return Err(format!("{what}: final state differs"));
            }
            same_sequence(&what, "blocks", &got.1, &want.1)?;
            if got.2 != want.2 {
                return Err(format!("{what}: classes {:?} vs {:?}", got.2, want.2));
            }
        }
    }
    Ok(())
}

/// Branch-record units (2 and 5 entries, a fixed period and a random one around `period`) on
/// the retire stream of the single-step interpreter, against the same units fed from blocks
/// and the ring ([`outcrop_sampling::BranchFeed`]) on the block engine and the compiling tier
/// (compiling at a block's first run, and at its third, when superblocks form).
fn compare_ring_fed(
    make: &dyn Fn() -> Machine,
    snapshot: &[(u64, u64)],
    period: u64,
) -> Result<(), String> {
    use outcrop_sampling::{BranchFeed, BranchRecorder, LbrConfig, LbrUnit};
    let recorder = || {
        let unit = |entries, random| {
            let cfg = LbrConfig {
                entries,
                period,
                random,
                seed: period,
                ..LbrConfig::default()
            };
            LbrUnit::new(cfg).unwrap()
        };
        BranchRecorder::new(vec![unit(2, false), unit(5, true)])
    };
    let seen = |r: BranchRecorder| -> Vec<_> {
        let n = r.instructions;
        r.units
            .into_iter()
            .map(|u| {
                let s = u.into_samples("p", 0, 0);
                let mut traces: Vec<_> = s.traces.into_iter().collect();
                traces.sort();
                (n, s.meta.samples, s.meta.recorded, traces)
            })
            .collect()
    };
    let mut reference = recorder();
    let oracle = run_observed(make, outcrop_rv::Engine::Step, &mut reference, snapshot, 1);
    let want = seen(reference);
    for (engine, hot) in [
        (outcrop_rv::Engine::Blocks, 1),
        (outcrop_rv::Engine::Jit, 1),
        (outcrop_rv::Engine::Jit, 3),
    ] {
        let mut fed = recorder();
        let mut feed = BranchFeed::new(&mut fed);
        let state = run_observed(make, engine, &mut feed, snapshot, hot);
        outcrop_events::record::Observer::finish(&mut feed);
        let what = format!("{engine:?}, compiled at run {hot}");
        if state != oracle {
            return Err(format!("{what}: final state differs"));
        }
        let got = seen(fed);
        if got != want {
            return Err(format!("{what}: units saw {got:?}, not {want:?}"));
        }
    }
    Ok(())
}

#[test]
fn code_rewritten_inside_a_running_block_takes_effect_at_the_next_instruction() {
    let code: [u32; 8] = [
        0x0000_0297, // auipc t0, 0
        0x0075_0337, // lui t1, 0x750
        0x5133_0313, // addi t1, t1, 0x513   (t1 = the encoding of `addi a0, a0, 7`)
        0x0062_a823, // sw t1, 16(t0)        (rewrites the next instruction)
        0x0015_0513, // addi a0, a0, 1       (runs as addi a0, a0, 7)
        0x0015_0513, // addi a0, a0, 1
        0x0015_0513, // addi a0, a0, 1
        0x0010_0073, // ebreak
    ];
    let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
    let make = || {
        let mut m = bare_machine(&bytes, 100);
        m.x[10] = 0;
        m
    };
    let state = compare_engines(&make, None, &[]).unwrap();
    assert_eq!(state.x[10], 7 + 1 + 1);
    assert!(matches!(state.outcome, Outcome::Fault(_)));
}

/// Register and immediate values where integer operations have their corner cases.
const EDGES: [u64; 14] = [
    0,
    1,
    2,
    31,
    32,
    63,
    64,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    i64::MAX as u64,
    i64::MIN as u64,
    u64::MAX,
    u64::MAX - 1,
];

#[test]
fn every_integer_form_agrees_on_edge_values() {
    // every R-type ALU/M form, then every I-type form with immediates at their edges
    let mut forms: Vec<u32> = Vec::new();
    for (f7, f3, op) in R_FORMS
        .iter()
        .copied()
        .chain((0..8).map(|f3| (1, f3, 0x33)))
        .chain([0, 4, 5, 6, 7].into_iter().map(|f3| (1, f3, 0x3b)))
    {
        // rd = a0, rs1 = a1, rs2 = a2; rd = x0 too
        forms.push((f7 << 25) | (12 << 20) | (11 << 15) | (f3 << 12) | (10 << 7) | op);
        forms.push((f7 << 25) | (12 << 20) | (11 << 15) | (f3 << 12) | op);
    }
    for imm in [0i32, 1, -1, 2, 31, 32, 63, -2048, 2047, 0x7ff, -64] {
        let i = ((imm as u32) & 0xfff) << 20;
        for (f3, op) in [
            (0, 0x13),
            (2, 0x13),
            (3, 0x13),
            (4, 0x13),
            (6, 0x13),
            (7, 0x13),
            (0, 0x1b),
        ] {
            forms.push(i | (11 << 15) | (f3 << 12) | (10 << 7) | op);
            forms.push(i | (f3 << 12) | (10 << 7) | op); // rs1 = x0
        }
        let sh = ((imm as u32) & 63) << 20;
        for (hi, f3, op) in [(0, 1, 0x13), (0, 5, 0x13), (0x400, 5, 0x13)] {
            forms.push((hi << 20) | sh | (11 << 15) | (f3 << 12) | (10 << 7) | op);
        }
        forms.extend(bit_forms(imm as u32));
        let shw = ((imm as u32) & 31) << 20;
        for (hi, f3) in [(0, 1), (0, 5), (0x400, 5)] {
            forms.push((hi << 20) | shw | (11 << 15) | (f3 << 12) | (10 << 7) | 0x1b);
        }
        // conditional branches over the same values: taken or not shows in a3
        for f3 in [0, 1, 4, 5, 6, 7] {
            // bxx a1, a2, +8
            forms.push((8 << 7) | (12 << 20) | (11 << 15) | (f3 << 12) | 0x63);
        }
    }
    forms.sort_unstable();
    forms.dedup();
    for &form in &forms {
        // the form, a marker (addi a3, x0, 1) that a taken branch jumps over, then ebreak
        let code: Vec<u8> = [form, 0x0010_0693, 0x0010_0073]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        for &a in &EDGES {
            for &b in &EDGES {
                let make = || {
                    let mut m = bare_machine(&code, 10);
                    m.x[10] = 0x5a5a;
                    m.x[11] = a;
                    m.x[12] = b;
                    m
                };
                if let Err(e) = compare_engines(&make, None, &[]) {
                    panic!("{form:#010x} with a1 = {a:#x}, a2 = {b:#x}: {e}");
                }
            }
        }
    }
}

#[test]
fn the_compiling_tier_compiles_hot_code_and_runs_it() {
    // not vacuous: the differential runs above compare the tier only if it really runs
    let mut m = common::workload("lz", 400_000_000);
    m.engine = outcrop_rv::Engine::Jit;
    m.jit_background = false;
    let outcome = m.run(&mut ());
    assert!(matches!(outcome, Outcome::Exited(0)), "{outcome:?}");
    let s = m.jit_stats();
    assert!(s.units > 10 && s.entries > 0, "{s:?}");
    assert!(s.code_bytes > 0);
    let instret = m.instret;
    // compiling on the second thread (the default): when units arrive depends on timing,
    // what the guest computes does not
    let mut m = common::workload("lz", 400_000_000);
    m.engine = outcrop_rv::Engine::Jit;
    let outcome = m.run(&mut ());
    assert!(matches!(outcome, Outcome::Exited(0)), "{outcome:?}");
    assert_eq!(m.instret, instret);
    // an observer of block-level streams: compiled blocks record, and the observer sees the
    // same streams as under the block engine (and the oracle: the differential runs above)
    let observed = |engine| {
        let mut m = common::workload("lz", 400_000_000);
        m.engine = engine;
        m.jit_background = false;
        let mut streams = outcrop_rv::differential::Streams::default();
        let outcome = m.run(&mut streams);
        assert!(matches!(outcome, Outcome::Exited(0)), "{outcome:?}");
        (streams, m.instret, m.jit_stats())
    };
    let (jit, n, stats) = observed(outcrop_rv::Engine::Jit);
    let (blocks, n2, _) = observed(outcrop_rv::Engine::Blocks);
    assert!(stats.units > 10 && stats.entries > 0, "{stats:?}");
    assert_eq!((jit, n), (blocks, n2));
    assert_eq!(n, instret);
}
