//! Branch-on-random in the pipeline model (branch-on-random paper §3.3): never predicted, so
//! it leaves the predictor, BTB and counts of conditional branches alone; not taken it costs
//! its slots; taken it redirects fetch from decode after `core.brr_penalty`, and the CPI
//! stack charges the bubble to `brr`. Against the same stream with an ordinary conditional
//! branch, whose misprediction is resolved at execute and costs more.

use outcrop_events::record::{BranchKind, Class, RegUse, Retire, Unit};
use outcrop_timing::{Config, Model, Totals};

const LOOP: u64 = 0x10000;

/// A loop body of 8 independent ALU instructions and one sampling site (`site` gives its
/// unit and class), repeated `n` times; the site is taken on iterations where `taken(i)`,
/// jumping to a one-instruction stub that jumps back.
fn run(cfg: &Config, n: u64, site: Option<(Unit, Class)>, taken: impl Fn(u64) -> bool) -> Totals {
    let mut m = Model::new(cfg);
    let alu = |pc: u64, dst: u8| Retire {
        pc,
        len: 4,
        class: Some(Class::Alu),
        unit: Unit::Alu,
        regs: RegUse { dst, src: [0; 3] },
        next_pc: pc + 4,
        ..Retire::default()
    };
    for i in 0..n {
        let mut pc = LOOP;
        for k in 0..8u8 {
            m.step(&alu(pc, 5 + k));
            pc += 4;
        }
        if let Some((unit, class)) = site {
            let t = taken(i);
            m.step(&Retire {
                pc,
                len: 4,
                class: Some(class),
                unit,
                taken: t,
                target: 0x20000,
                transfer: t.then_some(BranchKind::Cond),
                next_pc: if t { 0x20000 } else { pc + 4 },
                ..Retire::default()
            });
            if t {
                // the stub: a jump back
                m.step(&Retire {
                    pc: 0x20000,
                    len: 4,
                    class: Some(Class::Jump),
                    unit: Unit::Jump,
                    taken: true,
                    transfer: Some(BranchKind::Jump),
                    target: pc + 4,
                    next_pc: pc + 4,
                    ..Retire::default()
                });
            }
            pc += 4;
        }
        // the loop's back edge
        m.step(&Retire {
            pc,
            len: 4,
            class: Some(Class::Branch),
            unit: Unit::Branch,
            taken: true,
            transfer: Some(BranchKind::Cond),
            target: LOOP,
            next_pc: LOOP,
            ..Retire::default()
        });
    }
    m.totals()
}

#[test]
fn branch_on_random_is_never_predicted_and_costs_a_front_end_redirect_when_taken() {
    let cfg = Config::preset("default").unwrap();
    let n = 20_000;
    let brr = Some((Unit::BranchOnRandom, Class::Branch));
    let base = run(&cfg, n, None, |_| false);
    let never = run(&cfg, n, brr, |_| false);
    // every 8th iteration taken, with a pattern a predictor would learn for an ordinary branch
    let every8 = |i: u64| i % 8 == 0;
    let taken = run(&cfg, n, brr, every8);

    // not entered in the predictor: the conditional-branch count is the back edges only
    assert_eq!(never.cond_branches, n);
    assert_eq!(taken.cond_branches, n);
    assert_eq!((never.brr, never.brr_taken), (n, 0));
    assert_eq!((taken.brr, taken.brr_taken), (n, n / 8));
    assert_eq!(taken.mispredicts, base.mispredicts);

    // not taken: at most its share of a 4-wide cycle per site
    let per_site = (never.cycles - base.cycles) as f64 / n as f64;
    eprintln!("not-taken brr: {per_site:.3} cycles per site");
    assert!(per_site <= 0.5, "not-taken brr: {per_site} cycles per site");
    assert_eq!(never.cpi_stack.brr, 0);

    // taken: the redirect bubble is charged to brr in the CPI stack, about brr_penalty + 1
    // cycles per taken site on top of the stub's instruction
    let extra = (taken.cycles - never.cycles) as f64 / (n / 8) as f64;
    let p = f64::from(cfg.core.brr_penalty);
    eprintln!("taken brr (1 in 8): {extra:.3} cycles per taken site");
    assert!(
        extra >= p && extra <= p + 4.0,
        "taken brr: {extra} cycles per taken site (penalty {p})"
    );
    assert!(taken.cpi_stack.brr >= (n / 8) * u64::from(cfg.core.brr_penalty));
    let s = taken.cpi_stack;
    assert_eq!(
        s.base + s.branch + s.brr + s.icache + s.dcache + s.hold + s.switch + s.other,
        taken.cycles
    );

    // the penalty is the configuration's
    let mut slow = cfg.clone();
    slow.core.brr_penalty = 20;
    let slower = run(&slow, n, brr, every8);
    assert!(slower.cycles > taken.cycles + (n / 8) * u64::from(18 - cfg.core.brr_penalty));
}

#[test]
fn an_ordinary_branch_taken_at_random_costs_back_end_mispredictions_instead() {
    let cfg = Config::preset("default").unwrap();
    let n = 20_000;
    // a pseudo-random 1-in-8 pattern no history predictor learns
    let random = |i: u64| {
        let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 61;
        x == 0
    };
    let brr = run(&cfg, n, Some((Unit::BranchOnRandom, Class::Branch)), random);
    let cond = run(&cfg, n, Some((Unit::Branch, Class::Branch)), random);
    // the ordinary branch is predicted (a conditional branch per site), brr is not
    assert_eq!(cond.cond_branches, 2 * n);
    assert_eq!((brr.cond_branches, brr.brr), (n, n));
    assert!(cond.cond_mispredicts > 0);
    assert_eq!(brr.mispredicts, run(&cfg, n, None, |_| false).mispredicts);
    eprintln!(
        "random 1-in-8 site: brr {:.3}, predicted branch {:.3} cycles per site over none",
        (brr.cycles - run(&cfg, n, None, |_| false).cycles) as f64 / n as f64,
        (cond.cycles - run(&cfg, n, None, |_| false).cycles) as f64 / n as f64
    );
    assert!(
        brr.cycles < cond.cycles,
        "brr {} cycles, predicted branch {}",
        brr.cycles,
        cond.cycles
    );
}
