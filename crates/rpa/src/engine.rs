//! The query engine (§3.4.2): executes encoded query instructions on a record. The tests
//! check the hardware's semantics, not the syntax tree: programs are assembled, encoded,
//! decoded, then run.

use crate::isa::{Act, CmpOp, Next, PctEntry, QueryInsn, Slot, ARRAY};
use crate::lang::Part;
use outcrop_sampling::sampler::{GeometricSampler, Sampler};
use outcrop_sampling::{BrrConfig, BrrUnit};

/// What running one record through a query did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Queues the record was sent to, in order.
    pub sends: Vec<u8>,
    /// Interrupts raised (`true`: synchronous).
    pub interrupts: Vec<bool>,
    /// Query instructions executed.
    pub steps: u32,
}

/// The engine: the instruction array, the per-instruction counters of `count` actions, the
/// random source of `filter N` (branch-on-random's LFSR, leaping a whole register per
/// decision), and the PCT's `every N` sampling (per class, a countdown reloaded with
/// geometric skip counts).
///
/// Why two sources, and why not one-step LFSR decisions for both: with one shared 20-bit
/// register clocked once per decision, the bit `filter 2` reads right after an `every 64`
/// take is one of the six bits that take just found set, so the filter always passed
/// (measured: 0 of 443,532 records filtered on strsearch; docs/rpa.md "Randomness").
pub struct Engine {
    insns: Vec<QueryInsn>,
    counters: Vec<u64>,
    random: BrrUnit,
    samplers: Vec<Option<GeometricSampler>>,
    seed: u64,
}

impl Engine {
    /// An engine over `insns` (at most [`ARRAY`]); `filter N` decides with `random` (an
    /// LFSR; give it a leap of at least its width for independent decisions), `every N`
    /// with samplers seeded from `random.seed`.
    pub fn new(insns: &[QueryInsn], random: &BrrConfig) -> Result<Engine, outcrop_sampling::Error> {
        Ok(Engine {
            insns: insns.iter().take(ARRAY).copied().collect(),
            counters: vec![0; insns.len().min(ARRAY)],
            random: BrrUnit::new(random)?,
            samplers: Vec::new(),
            seed: random.seed,
        })
    }

    /// The engine's randomness as the run uses it: the paper's 20-bit register with a leap
    /// of 20 per `filter` decision, seeded with `seed`.
    pub fn random_config(seed: u64) -> BrrConfig {
        BrrConfig {
            seed: seed & 0xf_ffff | 1,
            leap: 20,
            ..BrrConfig::default()
        }
    }

    /// The `count` counters, per instruction.
    pub fn counters(&self) -> &[u64] {
        &self.counters
    }

    /// Whether a record of PCT entry `index` (`e`) is taken by its `every N` sampling: each
    /// record independently with probability 1/N.
    #[inline]
    pub fn select(&mut self, index: usize, e: &PctEntry) -> bool {
        if !e.enabled {
            return false;
        }
        if e.rate_log2 == 0 {
            return true;
        }
        if self.samplers.len() <= index {
            self.samplers.resize_with(index + 1, || None);
        }
        if self.samplers[index].is_none() {
            let salt = (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            // 2^1 … 2^16 is always a valid interval; were it not, every record is taken
            self.samplers[index] =
                GeometricSampler::new(1u64 << e.rate_log2.min(16), self.seed ^ salt).ok();
        }
        self.samplers[index].as_mut().is_none_or(|s| s.sample())
    }

    fn value(record: &[u32], s: &Slot) -> u32 {
        let w = record.get(usize::from(s.word)).copied().unwrap_or(0);
        match s.part {
            Part::Word => w,
            Part::Half(h) => (w >> (16 * u32::from(h & 1))) & 0xffff,
            Part::Byte(b) => (w >> (8 * u32::from(b & 3))) & 0xff,
        }
    }

    fn cmp(&mut self, s: &Slot, imm: u16, record: &[u32]) -> bool {
        let v = Self::value(record, s);
        let imm = u32::from(imm);
        match s.op {
            CmpOp::True => true,
            CmpOp::False => false,
            CmpOp::Eq => v == imm,
            CmpOp::Ne => v != imm,
            CmpOp::Lt => v < imm,
            CmpOp::Le => v <= imm,
            CmpOp::Gt => v > imm,
            CmpOp::Ge => v >= imm,
            CmpOp::BitsSet => v & imm == imm,
            CmpOp::BitsClear => v & imm == 0,
            CmpOp::Filter(n) => {
                let level = (n.trailing_zeros() as u8).saturating_sub(1);
                self.random.decide(level) == Some(true)
            }
        }
    }

    /// Runs `record` through the query starting at instruction `qpc`, collecting what it
    /// did. At most [`ARRAY`] instructions execute (a backward branch in a hand-made
    /// encoding cannot hang it).
    pub fn run(&mut self, qpc: u8, record: &[u32]) -> Outcome {
        let mut sends = Vec::new();
        let (steps, interrupts) = self.run_with(qpc, record, |q| sends.push(q));
        Outcome {
            sends,
            interrupts,
            steps,
        }
    }

    /// Runs `record` through the query starting at `qpc`, calling `send` for each send
    /// action as it happens (no allocation: the run-time path). Returns the instructions
    /// executed and the interrupts raised (`true`: synchronous).
    #[inline]
    pub fn run_with(
        &mut self,
        qpc: u8,
        record: &[u32],
        mut send: impl FnMut(u8),
    ) -> (u32, Vec<bool>) {
        let mut interrupts = Vec::new();
        let mut steps = 0u32;
        let mut pc = usize::from(qpc);
        while pc < self.insns.len() && (steps as usize) < ARRAY {
            let i = self.insns[pc];
            steps += 1;
            let a = self.cmp(&i.a, i.imm, record);
            let b = self.cmp(&i.b, i.imm, record);
            let hit = if i.or { a || b } else { a && b };
            let next = if hit {
                match i.act {
                    Act::None => {}
                    Act::Send(q) => send(q),
                    Act::Count => self.counters[pc] += 1,
                    Act::Interrupt { sync } => interrupts.push(sync),
                }
                i.on_match
            } else {
                i.on_miss
            };
            pc = match next {
                Next::Fall => pc + 1,
                Next::Stop => break,
                Next::Goto(t) => usize::from(t),
            };
        }
        (steps, interrupts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm::assemble;
    use crate::lang::parse;

    /// Assembles, then round-trips every instruction through its encoding: the engine runs
    /// what the hardware would load.
    fn engine(src: &str) -> (Engine, crate::asm::Assembled) {
        let a = assemble(&parse(src).unwrap()).unwrap();
        let words: Vec<u64> = a.insns.iter().map(|i| i.encode()).collect();
        let decoded: Vec<QueryInsn> = words
            .iter()
            .map(|&w| QueryInsn::decode(w).unwrap())
            .collect();
        (Engine::new(&decoded, &BrrConfig::default()).unwrap(), a)
    }

    #[test]
    fn the_gc_query_sends_every_non_null_store_and_nothing_else() {
        let (mut e, a) = engine(
            "for opSTORE 1 always collect op1 op2 op3;\nif op1 <> 0 then send 3 stop else stop;",
        );
        let q = a.queries[0].first;
        for v in [0u32, 1, 0xdead_beef, 0, 7] {
            let out = e.run(q, &[v, 0x1000, 8]);
            assert_eq!(out.sends, if v != 0 { vec![3] } else { vec![] }, "{v}");
            assert_eq!(out.steps, 1);
        }
        // `always` selects every record
        let entry = a.pct[crate::names::Class::Op { class: 3, tag: 1 }.pct_index()];
        assert!((0..1000).all(|_| e.select(13, &entry)));
    }

    #[test]
    fn every_n_and_filter_sample_at_their_rates() {
        let (mut e, a) = engine(
            "for opBRANCH * every 256 collect pc misc;\nif filter 4 then count;\nsend 1 stop;",
        );
        let entry = a.pct[crate::names::Class::Op { class: 1, tag: 0 }.pct_index()];
        let n = 1 << 20;
        let selected = (0..n).filter(|_| e.select(4, &entry)).count();
        assert!(
            (selected as f64 - n as f64 / 256.0).abs() < 0.1 * n as f64 / 256.0,
            "{selected}"
        );
        let mut sent = 0;
        for _ in 0..40_000 {
            let out = e.run(0, &[0x400, 1]);
            sent += out.sends.len();
            assert_eq!(out.steps, 2);
        }
        assert_eq!(sent, 40_000);
        let counted = e.counters()[0];
        assert!((9_000..11_000).contains(&counted), "{counted}");
    }

    #[test]
    fn a_filter_after_a_selection_is_independent_of_it() {
        let a = assemble(
            &parse("for opBRANCH * every 64 collect pc misc;\nif filter 2 then send 1 stop;")
                .unwrap(),
        )
        .unwrap();
        let mut e = Engine::new(&a.insns, &Engine::random_config(7)).unwrap();
        let entry = a.pct[4];
        let (mut selected, mut sent) = (0u32, 0u32);
        for _ in 0..1 << 20 {
            if e.select(4, &entry) {
                selected += 1;
                sent += e.run(entry.qpc, &[0, 0]).sends.len() as u32;
            }
        }
        let half = f64::from(selected) / 2.0;
        assert!(
            (f64::from(sent) - half).abs() < 0.05 * half,
            "{sent} of {selected}"
        );
    }

    #[test]
    fn parts_masks_joins_and_gotos() {
        let src = "for opLOAD * always collect pc misc;\n\
                   if misc.b1 bset 0x3 or pc.h1 = 0x3 then goto hit else stop;\n\
                   count;\n\
                   hit: if pc.h0 <= 0x3 and misc bclr 0x3 then send 5 stop else send 6 stop;";
        let (mut e, _) = engine(src);
        // misc byte 1 has bits 0 and 1 set: jump to `hit`, skipping the count
        let out = e.run(0, &[0x2, 0x0300]);
        assert_eq!(out.sends, vec![5]);
        assert_eq!(e.counters()[1], 0);
        // pc's upper half matches instead; the low half is too big: the else send
        let out = e.run(0, &[0x0003_0100, 0x3]);
        assert_eq!(out.sends, vec![6]);
        // neither: stop at once
        let out = e.run(0, &[0x10, 0]);
        assert!(out.sends.is_empty() && out.steps == 1);
    }

    #[test]
    fn a_hand_made_loop_cannot_hang_the_engine() {
        let looping = QueryInsn {
            a: Slot::always(0),
            b: Slot::always(1),
            or: false,
            imm: 0,
            act: Act::Count,
            on_match: Next::Goto(0),
            on_miss: Next::Stop,
        };
        let mut e = Engine::new(&[looping], &BrrConfig::default()).unwrap();
        let out = e.run(0, &[]);
        assert_eq!(out.steps as usize, ARRAY);
        assert_eq!(e.counters()[0], ARRAY as u64);
        assert_eq!(e.run(9, &[]).steps, 0); // a QPC outside the array does nothing
    }
}
