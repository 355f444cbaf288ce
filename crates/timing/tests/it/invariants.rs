//! Invariants of the pipeline model on arbitrary instruction streams (property tests).

use outcrop_rv::inst::{Class, Op, TABLE};
use outcrop_rv::{Control, Observer, Retire};
use outcrop_timing::{Config, Stamp, Timed};
use proptest::prelude::*;

#[derive(Default)]
struct Collect(Vec<Stamp>);
impl Observer for Collect {
    const RETIRE: bool = true;
    fn retire(&mut self, _r: &Retire, t: Option<&Stamp>) -> Control {
        self.0.extend(t);
        Control::Continue
    }
}

fn record() -> impl Strategy<Value = Retire> {
    (
        0..TABLE.len(),
        0u64..64,
        any::<[u8; 4]>(),
        0u64..(1 << 24),
        any::<bool>(),
    )
        .prop_map(|(k, slot, regs, addr, taken)| {
            let (op, _, _, _, _, class) = TABLE[k];
            let pc = 0x10000 + slot * 4;
            let mem = matches!(class, Class::Load | Class::Store);
            let jump = class == Class::Jump;
            let taken = jump || (class == Class::Branch && taken);
            Retire {
                pc,
                len: 4,
                class: Some(class),
                unit: op.unit(),
                regs: op.reg_use(regs[0], regs[1], regs[2], regs[3]),
                mem_addr: if mem { addr & !7 } else { 0 },
                mem_size: if mem { 8 } else { 0 },
                taken,
                next_pc: if taken {
                    0x10000 + (addr % 64) * 4
                } else {
                    pc + 4
                },
                transfer: if op == Op::Jal {
                    Some(outcrop_rv::BranchKind::Jump)
                } else {
                    None
                },
                ..Retire::default()
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn stamps_respect_the_pipeline(stream in prop::collection::vec(record(), 1..2000),
                                   preset in prop::sample::select(vec!["default", "inorder"])) {
        let cfg = Config::preset(preset).unwrap();
        let core = cfg.core;
        let mut timed = Timed::new(&cfg, Collect::default());
        for r in &stream {
            timed.retire(r, None);
        }
        timed.finish();
        let t = timed.totals();
        let s = &timed.inner.0;
        prop_assert_eq!(s.len(), stream.len());
        let stack = t.cpi_stack;
        prop_assert_eq!(stack.base + stack.branch + stack.brr + stack.icache + stack.dcache + stack.hold + stack.switch + stack.other, t.cycles);
        prop_assert_eq!(t.cycles, s.last().unwrap().retire);
        let mut per_cycle = std::collections::HashMap::<u64, u32>::new();
        let mut dispatch_per_cycle = std::collections::HashMap::<u64, u32>::new();
        for (i, x) in s.iter().enumerate() {
            prop_assert!(x.fetch + u64::from(core.frontend_depth) <= x.dispatch);
            prop_assert!(x.dispatch < x.issue && x.issue < x.complete && x.complete < x.retire);
            if i > 0 {
                prop_assert!(s[i - 1].retire <= x.retire);
                prop_assert!(s[i - 1].dispatch <= x.dispatch);
                prop_assert!(s[i - 1].fetch <= x.fetch);
                if core.in_order {
                    prop_assert!(s[i - 1].issue <= x.issue);
                }
            }
            if i >= core.rob as usize {
                // a reorder-buffer entry is free only after its previous owner retired
                prop_assert!(x.dispatch > s[i - core.rob as usize].retire);
            }
            *per_cycle.entry(x.retire).or_default() += 1;
            *dispatch_per_cycle.entry(x.dispatch).or_default() += 1;
        }
        for x in s {
            prop_assert_eq!(u32::from(x.retire_group), per_cycle[&x.retire]);
        }
        prop_assert!(per_cycle.values().all(|&n| n <= core.width));
        prop_assert!(dispatch_per_cycle.values().all(|&n| n <= core.width));
        // stall cycles: the gaps between retire cycles
        let stalls: u64 = s.iter().map(|x| u64::from(x.retire_stall)).sum();
        prop_assert_eq!(stalls + per_cycle.len() as u64, t.cycles);
    }
}

#[derive(Default)]
struct Events(Vec<outcrop_timing::Events>);
impl Observer for Events {
    const RETIRE: bool = true;
    fn retire(&mut self, _r: &Retire, t: Option<&Stamp>) -> Control {
        self.0.extend(t.map(|t| t.events));
        Control::Continue
    }
}

/// Calls and returns as well as plain jumps, so that warming covers the return stack.
fn with_transfer() -> impl Strategy<Value = Retire> {
    (record(), 0u8..3).prop_map(|(mut r, k)| {
        if r.class == Some(Class::Jump) {
            r.transfer = Some(match k {
                0 => outcrop_rv::BranchKind::Call,
                1 => outcrop_rv::BranchKind::Return,
                _ => outcrop_rv::BranchKind::Jump,
            });
        }
        r
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Functional warming leaves the caches, TLBs and predictors exactly as timing the same
    /// instructions would: every instruction after the warmed prefix has the same events
    /// (misses, mispredictions, BTB misses) as when the prefix was timed.
    #[test]
    fn warming_leaves_the_same_state_as_timing(prefix in prop::collection::vec(with_transfer(), 0..1500),
                                               suffix in prop::collection::vec(with_transfer(), 1..1500),
                                               preset in prop::sample::select(vec!["default", "inorder"])) {
        let cfg = Config::preset(preset).unwrap();
        let mut timed = Timed::new(&cfg, Events::default());
        for r in prefix.iter().chain(&suffix) {
            timed.retire(r, None);
        }
        timed.finish();
        let all = &timed.inner.0;
        let mut warming = outcrop_timing::Warming { model: outcrop_timing::Model::new(&cfg) };
        for r in &prefix {
            warming.retire(r, None);
        }
        let mut warmed = Timed::from_model(warming.model, Events::default());
        for r in &suffix {
            warmed.retire(r, None);
        }
        warmed.finish();
        prop_assert_eq!(&warmed.inner.0[..], &all[prefix.len()..]);
        // warming counts nothing
        prop_assert_eq!(warmed.totals().instructions, suffix.len() as u64);
    }
}
