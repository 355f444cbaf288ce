//! Validation on micro-workloads with known answers (workloads/src/micro_*.c), run on the
//! machine under the default preset. Per-instruction statistics come from the timed retire
//! stream, so each check looks at the kernel's own instructions, not at start-up code.

use outcrop_rv::inst::Class;
use outcrop_rv::{Control, Observer, Outcome, Retire};
use outcrop_timing::{Config, Events, Stamp, Timed, Totals};
use std::collections::HashMap;

/// Per-pc counts: executions, and how many had each event of interest.
#[derive(Default)]
struct PerPc {
    counts: HashMap<u64, (u64, u64, u64)>, // (executions, mispredicts, L1D misses)
    class: HashMap<u64, Class>,
    stamps_ok: bool,
    last_retire: u64,
    checked: u64,
}

impl Observer for PerPc {
    const RETIRE: bool = true;
    fn retire(&mut self, r: &Retire, t: Option<&Stamp>) -> Control {
        let Some(t) = t else {
            return Control::Continue;
        };
        let e = self.counts.entry(r.pc).or_default();
        e.0 += 1;
        e.1 += u64::from(t.events.contains(Events::MISPREDICT));
        e.2 += u64::from(t.events.contains(Events::L1D_MISS));
        if let Some(c) = r.class {
            self.class.insert(r.pc, c);
        }
        // pipeline order and in-order retirement hold for every instruction
        let ordered = t.fetch < t.dispatch
            && t.dispatch < t.issue
            && t.issue < t.complete
            && t.complete < t.retire
            && t.retire >= self.last_retire
            && (1..=4).contains(&t.retire_group);
        self.stamps_ok &= ordered;
        self.last_retire = t.retire;
        self.checked += 1;
        Control::Continue
    }
}

fn run(name: &str) -> (PerPc, Totals) {
    let bin = outcrop_testkit::workloads().join("bin").join(name);
    let spec = outcrop_run::ProgramSpec::observed(&bin, &format!("bin/{name}"));
    let mut m = outcrop_run::load(&spec, Box::new(|_| {})).unwrap().machine;
    let mut timed = Timed::new(
        &Config::default(),
        PerPc {
            stamps_ok: true,
            ..PerPc::default()
        },
    );
    assert_eq!(m.run(&mut timed), Outcome::Exited(0));
    timed.finish();
    let totals = timed.totals();
    assert_eq!(timed.inner.checked, m.instret, "every record delivered");
    assert!(
        timed.inner.stamps_ok,
        "{name}: a stamp out of pipeline order"
    );
    assert_eq!(totals.instructions, m.instret);
    let s = totals.cpi_stack;
    assert_eq!(
        s.base + s.branch + s.icache + s.dcache + s.hold + s.other,
        totals.cycles
    );
    (timed.inner, totals)
}

/// The instructions of `class` executed at least `min` times: (pc, executions, mispredicts,
/// L1D misses), most executed first.
fn hot(p: &PerPc, class: Class, min: u64) -> Vec<(u64, u64, u64, u64)> {
    let mut v: Vec<_> = p
        .counts
        .iter()
        .filter(|(pc, c)| p.class.get(pc) == Some(&class) && c.0 >= min)
        .map(|(&pc, &(n, mp, miss))| (pc, n, mp, miss))
        .collect();
    v.sort_by_key(|&(pc, n, ..)| (std::cmp::Reverse(n), pc));
    v
}

#[test]
fn always_taken_loop_branch_is_almost_never_mispredicted() {
    let (p, t) = run("micro_taken_loop");
    let b = hot(&p, Class::Branch, 1_000_000);
    assert_eq!(b.len(), 1, "one hot branch: {b:?}");
    let (_, n, mp, _) = b[0];
    assert!(mp <= 10, "{mp} mispredicts of {n}");
    // the loop is a mul→add recurrence (3 + 1 cycles) of 4 instructions: IPC ≈ 1
    assert!((0.9..1.1).contains(&t.ipc), "IPC {}", t.ipc);
}

#[test]
fn random_branch_is_mispredicted_half_the_time() {
    let (p, _) = run("micro_random_branch");
    let b = hot(&p, Class::Branch, 1_000_000);
    assert_eq!(b.len(), 2, "loop branch and the random one: {b:?}");
    let rates: Vec<f64> = b
        .iter()
        .map(|&(_, n, mp, _)| mp as f64 / n as f64)
        .collect();
    let lo = rates.iter().cloned().fold(f64::MAX, f64::min);
    let hi = rates.iter().cloned().fold(0.0, f64::max);
    assert!(lo < 0.001, "loop branch: {lo}");
    assert!((0.45..0.55).contains(&hi), "random branch: {hi}");
}

#[test]
fn large_stride_loads_always_miss_l1d() {
    let (p, t) = run("micro_stride_miss");
    let loads = hot(&p, Class::Load, 1_000_000);
    assert!(!loads.is_empty());
    // the kernel's strided load: every access misses
    let strided = loads.iter().max_by_key(|l| l.3).copied().unwrap();
    let rate = strided.3 as f64 / strided.1 as f64;
    assert!(rate > 0.99, "strided load L1D miss rate {rate}");
    assert!(t.l2_data_misses > 3_000_000, "footprint exceeds L2: {t:?}");
    assert!(
        t.cpi_stack.dcache > t.cycles / 2,
        "memory-bound: {:?}",
        t.cpi_stack
    );
}

#[test]
fn loop_that_fits_in_l1_does_not_miss() {
    let (p, t) = run("micro_l1_fit");
    let loads = hot(&p, Class::Load, 1_000_000);
    assert!(!loads.is_empty());
    for (pc, n, _, miss) in loads {
        assert!(miss * 1000 <= n, "load at {pc:#x}: {miss} misses of {n}");
    }
    assert!(t.l1d_miss_rate() < 0.001, "{}", t.l1d_miss_rate());
}
