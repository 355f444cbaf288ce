//! Feedback into the timing model: a mechanism that holds instructions at dispatch (a pool of
//! resources allocated at dispatch and freed at retire, as the RPA's profile networks) and one
//! that asks for cache fills (a prefetcher). Without either, the model is unchanged.

use outcrop_events::record::{Class, RegUse, Retire, Stamp, Unit};
use outcrop_timing::{Config, Feedback, Fills, Model, Totals};

/// A loop of `n` iterations: 6 ALU instructions, then a load from a new line each time
/// (`stride` bytes apart: every load misses the caches) whose address depends on the previous
/// load (a pointer chase: the loads cannot overlap).
fn stream(n: u64, stride: u64) -> Vec<Retire> {
    let mut v = Vec::new();
    for k in 0..n {
        let mut pc = 0x10000;
        for j in 0..6u8 {
            v.push(Retire {
                pc,
                len: 4,
                class: Some(Class::Alu),
                unit: Unit::Alu,
                regs: RegUse {
                    dst: 12 + j,
                    src: [if j == 0 { 10 } else { 0 }, 0, 0],
                },
                next_pc: pc + 4,
                ..Retire::default()
            });
            pc += 4;
        }
        v.push(Retire {
            pc,
            len: 4,
            class: Some(Class::Load),
            unit: Unit::Load,
            regs: RegUse {
                dst: 10,
                src: [10, 0, 0],
            },
            mem_addr: 0x100_0000 + k * stride,
            mem_size: 8,
            next_pc: pc + 4,
            ..Retire::default()
        });
    }
    v
}

fn run<F: Feedback>(records: &[Retire], fb: &mut F) -> (Totals, Vec<Stamp>) {
    let mut m = Model::new(&Config::default());
    let stamps = records.iter().map(|r| m.step_with(r, fb)).collect();
    (m.totals(), stamps)
}

fn stack_sum(t: &Totals) -> u64 {
    let s = &t.cpi_stack;
    s.base + s.branch + s.brr + s.icache + s.dcache + s.hold + s.switch + s.other
}

/// Consulted on every instruction, but never holds and never fills.
struct Idle;
impl Feedback for Idle {
    fn dispatch(&mut self, _r: &Retire, d: u64) -> u64 {
        d
    }
    fn stamped(&mut self, _r: &Retire, _s: &Stamp, _f: &mut Fills) {}
}

#[test]
fn an_idle_feedback_changes_nothing() {
    let recs = stream(2000, 4096 + 64);
    let mut m = Model::new(&Config::default());
    let plain: Vec<Stamp> = recs.iter().map(|r| m.step(r)).collect();
    let (t, stamps) = run(&recs, &mut Idle);
    assert_eq!(stamps, plain);
    assert_eq!(t, m.totals());
}

/// `n` resources, one taken at dispatch by every load and freed when it retires.
struct Pool {
    n: usize,
    /// Retire cycles of the holders (freed at those cycles).
    held: Vec<u64>,
    /// (dispatch, retire) of every holder, for the check.
    spans: Vec<(u64, u64)>,
}

impl Feedback for Pool {
    fn dispatch(&mut self, r: &Retire, d: u64) -> u64 {
        if r.class != Some(Class::Load) {
            return d;
        }
        self.held.retain(|&free| free > d);
        if self.held.len() < self.n {
            return d;
        }
        // wait for the earliest to free
        self.held.sort_unstable();
        let at = self.held[self.held.len() - self.n];
        self.held.retain(|&free| free > at);
        at
    }
    fn stamped(&mut self, r: &Retire, s: &Stamp, _f: &mut Fills) {
        if r.class == Some(Class::Load) {
            self.held.push(s.retire);
            self.spans.push((s.dispatch, s.retire));
        }
    }
}

#[test]
fn a_resource_pool_never_over_allocates_and_its_stalls_are_in_the_cpi_stack() {
    let recs = stream(3000, 4096 + 64);
    let (free, _) = run(&recs, &mut Idle);
    for n in [1usize, 2, 4] {
        let mut pool = Pool {
            n,
            held: Vec::new(),
            spans: Vec::new(),
        };
        let (t, stamps) = run(&recs, &mut pool);
        // at no cycle do more than n holders overlap (held from dispatch until retire)
        let mut events: Vec<(u64, i32)> = pool
            .spans
            .iter()
            .flat_map(|&(d, r)| [(d, 1), (r, -1)])
            .collect();
        events.sort_unstable_by_key(|&(c, delta)| (c, delta)); // frees first at a tie
        let mut live = 0;
        for (_, delta) in events {
            live += delta;
            assert!(live as usize <= n, "{live} > {n} resources in use");
        }
        // dispatch stays in order; the stalls cost cycles and the stack says where
        assert!(stamps.windows(2).all(|w| w[0].dispatch <= w[1].dispatch));
        assert_eq!(stack_sum(&t), t.cycles);
        if n == 1 {
            assert!(t.cycles > free.cycles, "{} vs {}", t.cycles, free.cycles);
            assert!(
                t.dispatch_holds > 0 && t.cpi_stack.hold > 0,
                "{:?}",
                t.cpi_stack
            );
        }
    }
}

/// Prefetches the next load's line when a load retires, arriving `latency` cycles later.
struct NextLine {
    stride: u64,
    latency: u64,
}

impl Feedback for NextLine {
    fn dispatch(&mut self, _r: &Retire, d: u64) -> u64 {
        d
    }
    fn stamped(&mut self, r: &Retire, s: &Stamp, f: &mut Fills) {
        if r.class == Some(Class::Load) {
            for k in 1..=4 {
                f.push(r.mem_addr + k * self.stride, s.retire + self.latency, false);
            }
        }
    }
}

#[test]
fn timely_fills_remove_l2_misses_and_late_ones_hide_part_of_the_latency() {
    let stride = 4096 + 64;
    let recs = stream(3000, stride);
    let (base, _) = run(&recs, &mut Idle);
    assert!(base.l2_data_misses >= 2900, "{}", base.l2_data_misses);
    let (timely, _) = run(
        &recs,
        &mut NextLine {
            stride,
            latency: 10,
        },
    );
    assert!(
        timely.l2_data_misses < base.l2_data_misses / 10,
        "{}",
        timely.l2_data_misses
    );
    assert!(
        timely.cycles < base.cycles / 2,
        "{} vs {}",
        timely.cycles,
        base.cycles
    );
    assert!(timely.fills_filled > 0 && timely.fills_requested >= timely.fills_filled);
    assert_eq!(stack_sum(&timely), timely.cycles);
    // fills that arrive long after they are needed: the demand misses wait for them only
    let (late, _) = run(
        &recs,
        &mut NextLine {
            stride,
            latency: 5_000,
        },
    );
    assert!(late.fills_late > 0);
    assert!(late.cycles <= base.cycles);
}
