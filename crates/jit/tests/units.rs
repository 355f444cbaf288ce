//! Compiled units against a toy host: loops, memory, exits, the budget.
use outcrop_jit::ir::{Alu, Block, Cond, Counted, Op, Record, Src, Term, Unit, NO_COUNTER};
use outcrop_jit::{Exit, Host, Jit, Stored, PAGE};
use std::collections::HashMap;

/// Pages of bytes; page 0x10 is read-only, everything else absent faults.
#[derive(Default)]
struct Toy {
    pages: HashMap<u64, Box<[u8; PAGE]>>,
    epoch: u64,
    slow: u64,
}

impl Toy {
    fn with(pages: &[u64]) -> Toy {
        let mut t = Toy::default();
        for &p in pages {
            t.pages.insert(p, Box::new([0; PAGE]));
        }
        t
    }
}

impl Host for Toy {
    fn frames_epoch(&self) -> u64 {
        self.epoch
    }
    fn frame(&mut self, addr: u64, write: bool) -> Option<&mut [u8; PAGE]> {
        if write && addr >> 12 == 0x10 {
            return None;
        }
        self.pages.get_mut(&(addr >> 12)).map(|b| &mut **b)
    }
    fn load(&mut self, addr: u64, size: u8) -> Option<u64> {
        self.slow += 1;
        let mut v = 0u64;
        for k in 0..u64::from(size) {
            let a = addr.wrapping_add(k);
            let p = self.pages.get(&(a >> 12))?;
            v |= u64::from(p[(a & 0xfff) as usize]) << (8 * k);
        }
        Some(v)
    }
    fn store(&mut self, addr: u64, size: u8, value: u64) -> Stored {
        self.slow += 1;
        for k in 0..u64::from(size) {
            let a = addr.wrapping_add(k);
            if a >> 12 == 0x10 || !self.pages.contains_key(&(a >> 12)) {
                return Stored::Fault;
            }
        }
        for k in 0..u64::from(size) {
            let a = addr.wrapping_add(k);
            if let Some(p) = self.pages.get_mut(&(a >> 12)) {
                p[(a & 0xfff) as usize] = (value >> (8 * k)) as u8;
            }
        }
        Stored::Ok
    }
}

/// sum = 0; for i in (1..=n).rev() { sum += i; mem[0x1000 + 8*(i%4)] = sum }
/// Cranelift (false) and the baseline tier (true, where the host has one).
const TIERS: [bool; 2] = [false, true];

/// Compiles `unit` with Cranelift or the baseline tier (Cranelift where the host has no
/// baseline tier).
fn compile(jit: &mut Jit<Toy>, unit: &Unit, baseline: bool) {
    if baseline && jit.baseline_supports(unit) {
        jit.compile_baseline(unit).unwrap();
    } else {
        jit.compile(unit).unwrap();
    }
}

fn sum_loop() -> Unit {
    Unit {
        blocks: vec![Block {
            start: 0x100,
            insns: 6,
            ops: vec![
                Op::Alu {
                    op: Alu::Add,
                    rd: 10,
                    rs1: 10,
                    b: Src::Reg(11),
                },
                Op::Alu {
                    op: Alu::And,
                    rd: 12,
                    rs1: 11,
                    b: Src::Imm(3),
                },
                Op::Alu {
                    op: Alu::Sh3add,
                    rd: 12,
                    rs1: 12,
                    b: Src::Reg(13),
                },
                Op::Store {
                    rs1: 12,
                    rs2: 10,
                    off: 0,
                    size: 8,
                    pc: 0x10c,
                    len: 4,
                    n: 3,
                },
                Op::Alu {
                    op: Alu::Add,
                    rd: 11,
                    rs1: 11,
                    b: Src::Imm(u64::MAX),
                },
            ],
            record: None,
            counted: None,
            ring: None,
            trace: false,
            addresses: false,
            term: Term::Branch {
                cond: Cond::Ne,
                rs1: 11,
                rs2: 0,
                taken: 0x100,
                fall: 0x118,
            },
        }],
    }
}

#[test]
fn a_loop_runs_to_its_end_in_registers() {
    for baseline in TIERS {
        let mut jit: Jit<Toy> = Jit::new().unwrap();
        compile(&mut jit, &sum_loop(), baseline);
        let mut host = Toy::with(&[1]);
        let mut x = [0u64; 32];
        x[11] = 1000;
        x[13] = 0x1000;
        let (exit, retired) = jit.run(&mut host, (&mut x, &mut [0; 32]), 0x100, u64::MAX);
        assert_eq!(exit, Exit::Miss(0x118));
        assert_eq!(retired, 6 * 1000);
        assert_eq!(x[10], 500500);
        assert_eq!(x[11], 0);
        // one slow store fills the TLB; the rest are inline
        assert_eq!(host.slow, 1);
        let last = u64::from_le_bytes(host.pages[&1][8..16].try_into().unwrap());
        assert_eq!(last, 500500);
    }
}

#[test]
fn the_budget_stops_before_a_block() {
    for baseline in TIERS {
        let mut jit: Jit<Toy> = Jit::new().unwrap();
        compile(&mut jit, &sum_loop(), baseline);
        let mut host = Toy::with(&[1]);
        let mut x = [0u64; 32];
        x[11] = 1000;
        x[13] = 0x1000;
        let (exit, retired) = jit.run(&mut host, (&mut x, &mut [0; 32]), 0x100, 6 * 10 + 5);
        assert_eq!(exit, Exit::Budget(0x100));
        assert_eq!(retired, 60);
        assert_eq!(x[11], 990);
    }
}

#[test]
fn a_faulting_store_leaves_at_it_with_what_retired_before() {
    for baseline in TIERS {
        let mut jit: Jit<Toy> = Jit::new().unwrap();
        compile(&mut jit, &sum_loop(), baseline);
        let mut host = Toy::with(&[0x10]);
        let mut x = [0u64; 32];
        x[11] = 5;
        x[13] = 0x10000; // read-only page
        let (exit, retired) = jit.run(&mut host, (&mut x, &mut [0; 32]), 0x100, u64::MAX);
        assert_eq!(exit, Exit::Engine(0x10c));
        assert_eq!(retired, 3);
        assert_eq!(x[10], 5);
        assert_eq!(x[11], 5);
    }
}

#[test]
fn division_corner_cases_follow_riscv() {
    for baseline in TIERS {
        let mut jit: Jit<Toy> = Jit::new().unwrap();
        let ops = [
            (Alu::Div, 7u64, 0u64, u64::MAX),
            (Alu::Rem, 7, 0, 7),
            (Alu::Div, i64::MIN as u64, u64::MAX, i64::MIN as u64),
            (Alu::Rem, i64::MIN as u64, u64::MAX, 0),
            (Alu::Divu, 7, 0, u64::MAX),
            (Alu::Remu, 7, 0, 7),
            (Alu::Divw, 0x8000_0000, u64::MAX, 0xffff_ffff_8000_0000),
            (Alu::Remw, 0x8000_0000, u64::MAX, 0),
            (Alu::Divuw, 7, 0, u64::MAX),
            (Alu::Remuw, 0x1_0000_0007, 0, 7),
            (Alu::Mulhsu, u64::MAX, 2, u64::MAX),
            (Alu::Mulh, u64::MAX, u64::MAX, 0),
            (Alu::Sraw, 0x8000_0000, 33, 0xffff_ffff_c000_0000),
        ];
        let mut blocks = Vec::new();
        for (k, &(op, _, _, _)) in ops.iter().enumerate() {
            blocks.push(Op::Alu {
                op,
                rd: 20 + k as u8 % 10,
                rs1: 1 + 2 * k as u8 % 10,
                b: Src::Reg(2 + 2 * k as u8 % 10),
            });
        }
        for (k, &(op, a, b, want)) in ops.iter().enumerate() {
            let unit = Unit {
                blocks: vec![Block {
                    start: 0x200 + 0x10 * k as u64,
                    insns: 1,
                    ops: vec![Op::Alu {
                        op,
                        rd: 3,
                        rs1: 1,
                        b: Src::Reg(2),
                    }],
                    record: None,
                    counted: None,
                    ring: None,
                    trace: false,
                    addresses: false,
                    term: Term::Fall { next: 0x1000 },
                }],
            };
            compile(&mut jit, &unit, baseline);
            let mut x = [0u64; 32];
            x[1] = a;
            x[2] = b;
            let (exit, _) = jit.run(
                &mut Toy::default(),
                (&mut x, &mut [0; 32]),
                unit.entry(),
                u64::MAX,
            );
            assert_eq!(exit, Exit::Miss(0x1000));
            assert_eq!(x[3], want, "{op:?} {a:#x} {b:#x}");
        }
    }
}

#[test]
fn units_chain_through_the_jump_cache() {
    for baseline in TIERS {
        let mut jit: Jit<Toy> = Jit::new().unwrap();
        let a = Unit {
            blocks: vec![Block {
                start: 0x300,
                insns: 2,
                ops: vec![Op::Alu {
                    op: Alu::Add,
                    rd: 5,
                    rs1: 5,
                    b: Src::Imm(1),
                }],
                record: None,
                counted: None,
                ring: None,
                trace: false,
                addresses: false,
                term: Term::Jal {
                    rd: 1,
                    link: 0x308,
                    target: 0x400,
                },
            }],
        };
        let b = Unit {
            blocks: vec![Block {
                start: 0x400,
                insns: 2,
                ops: vec![Op::Alu {
                    op: Alu::Add,
                    rd: 6,
                    rs1: 5,
                    b: Src::Reg(5),
                }],
                record: None,
                counted: None,
                ring: None,
                trace: false,
                addresses: false,
                term: Term::Jalr {
                    rd: 0,
                    rs1: 1,
                    off: 0,
                    link: 0x408,
                },
            }],
        };
        compile(&mut jit, &a, baseline);
        compile(&mut jit, &b, baseline);
        let mut x = [0u64; 32];
        let (exit, retired) = jit.run(&mut Toy::default(), (&mut x, &mut [0; 32]), 0x300, u64::MAX);
        assert_eq!(exit, Exit::Miss(0x308));
        assert_eq!(retired, 4);
        assert_eq!((x[1], x[5], x[6]), (0x308, 1, 2));
        jit.flush();
        assert!(!jit.contains(0x300));
    }
}

#[test]
fn units_far_apart_chain_without_leaving_compiled_code() {
    for baseline in TIERS {
        // two hot blocks 0x6c000 apart (they shared a jump-cache slot in SQLite once) ping-pong
        // 1,000 times: one entry, one exit
        let mut jit: Jit<Toy> = Jit::new().unwrap();
        let a = Unit {
            blocks: vec![Block {
                start: 0x18426,
                insns: 2,
                ops: vec![Op::Alu {
                    op: Alu::Add,
                    rd: 6,
                    rs1: 6,
                    b: Src::Imm(1),
                }],
                record: None,
                counted: None,
                ring: None,
                trace: false,
                addresses: false,
                term: Term::Jal {
                    rd: 0,
                    link: 0x1842e,
                    target: 0x84426,
                },
            }],
        };
        let b = Unit {
            blocks: vec![Block {
                start: 0x84426,
                insns: 2,
                ops: vec![Op::Alu {
                    op: Alu::Add,
                    rd: 5,
                    rs1: 5,
                    b: Src::Imm(u64::MAX),
                }],
                record: None,
                counted: None,
                ring: None,
                trace: false,
                addresses: false,
                term: Term::Branch {
                    cond: Cond::Ne,
                    rs1: 5,
                    rs2: 0,
                    taken: 0x18426,
                    fall: 0x9000,
                },
            }],
        };
        compile(&mut jit, &a, baseline);
        compile(&mut jit, &b, baseline);
        let mut x = [0u64; 32];
        x[5] = 1000;
        let (exit, retired) = jit.run(
            &mut Toy::default(),
            (&mut x, &mut [0; 32]),
            0x18426,
            u64::MAX,
        );
        assert_eq!(exit, Exit::Miss(0x9000));
        assert_eq!(retired, 4000);
        assert_eq!((x[5], x[6]), (0, 1000));
        assert_eq!(jit.stats.entries, 1);
    }
}

#[test]
fn recorded_blocks_append_one_record_per_run_and_the_budget_bounds_them() {
    for baseline in TIERS {
        let mut unit = sum_loop();
        unit.blocks[0].record = Some(7);
        let mut jit: Jit<Toy> = Jit::new().unwrap();
        compile(&mut jit, &unit, baseline);
        let mut host = Toy::with(&[1]);
        let mut x = [0u64; 32];
        x[11] = 1000;
        x[13] = 0x1000;
        let (exit, retired) = jit.run_recording(&mut host, (&mut x, &mut [0; 32]), 0x100, u64::MAX);
        assert_eq!(exit, Exit::Miss(0x118));
        assert_eq!(retired, 6000);
        let records = jit.records();
        assert_eq!(records.len(), 1000);
        assert!(records.iter().all(|r| r.tag() == 7 && r.retired() == 6));
        // taken back to the start 999 times, then the fall-through
        assert!(records[..999]
            .iter()
            .all(|r| r.how() == Record::TAKEN && r.next == 0x100));
        assert_eq!(
            (records[999].how(), records[999].next),
            (Record::END, 0x118)
        );
        // a long loop: the call stops at the record buffer's capacity, at a block boundary
        x[11] = 1_000_000;
        let (exit, retired) = jit.run_recording(&mut host, (&mut x, &mut [0; 32]), 0x100, u64::MAX);
        assert_eq!(exit, Exit::Budget(0x100));
        assert!(retired <= outcrop_jit::RECORDS as u64);
        assert_eq!(jit.records().len() as u64, retired / 6);
        // a faulting store mid-block: a partial record with the instructions before it
        x[13] = 0x10_000; // page 0x10 is read-only
        x[11] = 5;
        let (exit, retired) = jit.run_recording(&mut host, (&mut x, &mut [0; 32]), 0x100, u64::MAX);
        assert_eq!(exit, Exit::Engine(0x10c));
        assert_eq!(retired, 3);
        let r = jit.records();
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].how(), r[0].retired(), r[0].next),
            (Record::PARTIAL, 3, 0x10c)
        );
    }
}

/// A counted superblock at 0x200 in the function [0x200, 0x300): x11 -= 1; leave for 0x9000
/// if x11 == 0 (out of the function); then the next basic block (tag and counter 21): x10 += 1;
/// store x10 at x13; loop while x11 != 0.
fn counted_superblock() -> Unit {
    counted_superblock_with(20, 21, None)
}

/// [`counted_superblock`] with these counter slots and [`Block::ring`].
fn counted_superblock_with(first: u32, second: u32, ring: Option<u64>) -> Unit {
    let counted = Counted {
        slot: first,
        lo: 0x200,
        hi: 0x300,
        always: false,
    };
    Unit {
        blocks: vec![Block {
            start: 0x200,
            insns: 5,
            ops: vec![
                Op::Alu {
                    op: Alu::Add,
                    rd: 11,
                    rs1: 11,
                    b: Src::Imm(u64::MAX),
                },
                Op::Exit {
                    cond: Cond::Eq,
                    rs1: 11,
                    rs2: 0,
                    target: 0x9000,
                    n: 2,
                    pc: 0x204,
                },
                Op::Next {
                    tag: 21,
                    slot: second,
                    n: 2,
                },
                Op::Alu {
                    op: Alu::Add,
                    rd: 10,
                    rs1: 10,
                    b: Src::Imm(1),
                },
                Op::Store {
                    rs1: 13,
                    rs2: 10,
                    off: 0,
                    size: 8,
                    pc: 0x20c,
                    len: 4,
                    n: 3,
                },
            ],
            record: Some(20),
            counted: Some(counted),
            ring,
            trace: false,
            addresses: false,
            term: Term::Branch {
                cond: Cond::Ne,
                rs1: 11,
                rs2: 0,
                taken: 0x200,
                fall: 0x214,
            },
        }],
    }
}

#[test]
fn a_counted_superblock_counts_each_basic_block_and_records_only_what_leaves() {
    for baseline in TIERS {
        let mut jit: Jit<Toy> = Jit::new().unwrap();
        compile(&mut jit, &counted_superblock(), baseline);
        let mut host = Toy::with(&[1]);
        let counts = |jit: &mut Jit<Toy>| {
            let mut c = Vec::new();
            jit.take_counts(|slot, n| c.push((slot, n)));
            c
        };
        let mut x = [0u64; 32];
        x[11] = 5;
        x[13] = 0x1000;
        let (exit, retired) = jit.run(&mut host, (&mut x, &mut [0; 32]), 0x200, 1000);
        // four full runs, then the first basic block's branch out of the function
        assert_eq!(exit, Exit::Miss(0x9000));
        assert_eq!(retired, 4 * 5 + 2);
        assert_eq!(x[10], 4);
        assert_eq!(counts(&mut jit), vec![(20, 5), (21, 4)]);
        let r = jit.records();
        assert_eq!(r.len(), 1, "only the transfer out of the function records");
        assert_eq!(
            (
                r[0].how(),
                r[0].tag(),
                r[0].retired(),
                r[0].next,
                r[0].budget
            ),
            (Record::EXIT, 20, 2, 0x9000, 1000 - 22)
        );
        // a fault in the second basic block: its count goes back, and its record says how much
        // of it (not of the superblock) retired
        x[11] = 5;
        x[13] = 0x10_000; // read-only
        let (exit, retired) = jit.run(&mut host, (&mut x, &mut [0; 32]), 0x200, 1000);
        assert_eq!(exit, Exit::Engine(0x20c));
        assert_eq!(retired, 3);
        assert_eq!(counts(&mut jit), vec![(20, 1)]);
        let r = jit.records();
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].how(), r[0].tag(), r[0].retired(), r[0].next),
            (Record::PARTIAL, 21, 1, 0x20c)
        );
        // a budget short of the whole superblock runs none of it
        let (exit, retired) = jit.run(&mut host, (&mut x, &mut [0; 32]), 0x200, 4);
        assert_eq!((exit, retired), (Exit::Budget(0x200), 0));
        assert!(counts(&mut jit).is_empty());
    }
}

#[test]
fn a_ring_block_writes_each_taken_branch_and_one_without_counters_counts_nothing() {
    for baseline in TIERS {
        let mut jit: Jit<Toy> = Jit::new().unwrap();
        let unit = counted_superblock_with(NO_COUNTER, NO_COUNTER, Some(0x210));
        assert_eq!(unit.counter_slots(), vec![None, None]);
        compile(&mut jit, &unit, baseline);
        let mut host = Toy::with(&[1]);
        let mut x = [0u64; 32];
        x[11] = 5;
        x[13] = 0x1000;
        let (exit, retired) = jit.run(&mut host, (&mut x, &mut [0; 32]), 0x200, 1000);
        assert_eq!((exit, retired), (Exit::Miss(0x9000), 22));
        let mut last = Vec::new();
        // four loop-backs by the final branch, then the early exit out of the function
        assert_eq!(jit.take_ring(&mut last), 5);
        let mut want = vec![[0x210, 0x200]; 4];
        want.push([0x204, 0x9000]);
        assert_eq!(last, want);
        let mut none = Vec::new();
        jit.take_counts(|slot, n| none.push((slot, n)));
        assert!(none.is_empty(), "no counters: {none:?}");
        // the record out of the function is still written
        assert_eq!(jit.records().len(), 1);
        // taken again, the ring holds only what ran since
        assert_eq!(jit.take_ring(&mut last), 0);
        assert!(last.is_empty());
        // more branches than the ring holds: the latest RING of them
        x[11] = 1000;
        let (exit, _) = jit.run(&mut host, (&mut x, &mut [0; 32]), 0x200, 1_000_000);
        assert_eq!(exit, Exit::Miss(0x9000));
        assert_eq!(jit.take_ring(&mut last), 1000);
        assert_eq!(last.len(), outcrop_jit::RING);
        assert_eq!(last[outcrop_jit::RING - 1], [0x204, 0x9000]);
        assert!(last[..outcrop_jit::RING - 1]
            .iter()
            .all(|&e| e == [0x210, 0x200]));
    }
}

#[test]
fn a_tracing_block_appends_each_basic_block_it_runs_to_its_end() {
    for baseline in TIERS {
        let mut jit: Jit<Toy> = Jit::new().unwrap();
        let mut unit = counted_superblock_with(NO_COUNTER, NO_COUNTER, None);
        unit.blocks[0].trace = true;
        compile(&mut jit, &unit, baseline);
        let mut host = Toy::with(&[1]);
        let mut x = [0u64; 32];
        x[11] = 5;
        x[13] = 0x1000;
        let (exit, retired) = jit.run_tracing(&mut host, (&mut x, &mut [0; 32]), 0x200, 1000);
        assert_eq!((exit, retired), (Exit::Miss(0x9000), 22));
        // four full runs of both basic blocks, then the first one, which leaves
        let mut want = [20, 21].repeat(4);
        want.push(20);
        assert_eq!(jit.trace(), &want[..]);
        // a fault in the second basic block: only the first ran to its end
        x[11] = 5;
        x[13] = 0x10_000; // read-only
        let (exit, retired) = jit.run_tracing(&mut host, (&mut x, &mut [0; 32]), 0x200, 1000);
        assert_eq!((exit, retired), (Exit::Engine(0x20c), 3));
        assert_eq!(jit.trace(), &[20]);
        // the budget is capped at the trace's length, so every tag fits
        x[11] = u64::MAX;
        x[13] = 0x1000;
        let (exit, retired) = jit.run_tracing(&mut host, (&mut x, &mut [0; 32]), 0x200, u64::MAX);
        assert_eq!(exit, Exit::Budget(0x200));
        assert!(retired <= outcrop_jit::TRACE as u64);
        assert_eq!(jit.trace().len() as u64, 2 * (retired / 5));
    }
}

#[test]
fn a_flush_drops_units_still_on_the_compiling_thread() {
    let mut jit: Jit<Toy> = Jit::new().unwrap();
    assert!(jit.submit(sum_loop()));
    jit.flush();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while jit.pending() > 0 {
        assert!(
            jit.poll().is_empty(),
            "a unit from before the flush was installed"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "the compiling thread never answered"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(!jit.contains(0x100));
    let mut host = Toy::with(&[1]);
    let (exit, retired) = jit.run(&mut host, (&mut [0; 32], &mut [0; 32]), 0x100, 100);
    assert_eq!((exit, retired), (Exit::Miss(0x100), 0));
    // and one submitted after the flush arrives
    assert!(jit.submit(sum_loop()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !jit.contains(0x100) {
        jit.poll();
        assert!(
            std::time::Instant::now() < deadline,
            "the unit never arrived"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Every integer operation, compiled inline or through the helper, computes what
/// [`Alu::eval`] (the one definition the interpreter and the block engine use) does, with the
/// second operand from a register and as an immediate.
#[test]
fn every_compiled_integer_operation_equals_the_one_semantics() {
    for baseline in TIERS {
        let mut jit: Jit<Toy> = Jit::new().unwrap();
        let values = [
            0u64,
            1,
            2,
            31,
            32,
            63,
            64,
            65,
            0x7f,
            0x80,
            0xffff,
            0x8000_0000,
            0xffff_ffff,
            0x1_0000_0007,
            i64::MIN as u64,
            i64::MAX as u64,
            u64::MAX,
            u64::MAX - 1,
            0x0123_4567_89ab_cdef,
            0xfedc_ba98_7654_3210,
        ];
        let mut at = 0x1000u64;
        for &op in Alu::ALL {
            let imms = [0u64, 1, 5, 31, 32, 63, 0x7ff, u64::MAX].map(Src::Imm);
            for b in std::iter::once(Src::Reg(2)).chain(imms) {
                at += 0x10;
                let unit = Unit {
                    blocks: vec![Block {
                        start: at,
                        insns: 1,
                        ops: vec![Op::Alu {
                            op,
                            rd: 3,
                            rs1: 1,
                            b,
                        }],
                        record: None,
                        counted: None,
                        ring: None,
                        trace: false,
                        addresses: false,
                        term: Term::Fall { next: 0x10_0000 },
                    }],
                };
                compile(&mut jit, &unit, baseline);
                for &a in &values {
                    for &bv in &values {
                        let bv = match b {
                            Src::Imm(v) => v,
                            Src::Reg(_) => bv,
                        };
                        let mut x = [0u64; 32];
                        x[1] = a;
                        x[2] = bv;
                        let (exit, _) =
                            jit.run(&mut Toy::default(), (&mut x, &mut [0; 32]), at, u64::MAX);
                        assert_eq!(exit, Exit::Miss(0x10_0000));
                        assert_eq!(x[3], op.eval(a, bv), "{op:?}({a:#x}, {bv:#x})");
                    }
                }
            }
        }
    }
}
