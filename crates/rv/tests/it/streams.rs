//! The derived streams agree with the retire stream on a real program (`workloads/bin/lz`,
//! first 3M instructions): basic blocks tile the instruction stream, taken branches are exactly
//! the retired control transfers that changed the pc, and an observer can stop the run.

use crate::common;

use outcrop_rv::{BranchKind, Control, Machine, Observer, Outcome, Retire, Stamp};

fn machine(name: &str, max: u64) -> Machine {
    common::workload(name, max)
}

#[derive(Default)]
struct All {
    retired: Vec<Retire>,
    blocks: Vec<(u64, u32)>,
    branches: Vec<(u64, u64, BranchKind)>,
}

impl Observer for All {
    const RETIRE: bool = true;
    const BLOCKS: bool = true;
    const BRANCHES: bool = true;
    fn retire(&mut self, r: &Retire, _t: Option<&Stamp>) -> Control {
        self.retired.push(*r);
        Control::Continue
    }
    fn block(&mut self, start: u64, insns: u32) -> Control {
        self.blocks.push((start, insns));
        Control::Continue
    }
    fn taken_branch(&mut self, from: u64, to: u64, kind: BranchKind) -> Control {
        self.branches.push((from, to, kind));
        Control::Continue
    }
}

#[test]
fn blocks_and_branches_match_the_retire_stream() {
    let mut m = machine("lz", 3_000_000);
    let mut all = All::default();
    assert_eq!(m.run(&mut all), Outcome::InstructionLimit);
    let n = all.retired.len();
    assert_eq!(n as u64, m.instret);
    // blocks tile the stream: each starts where the previous one's last instruction went
    let mut i = 0usize;
    for &(start, len) in &all.blocks {
        assert_eq!(all.retired[i].pc, start, "block at instruction {i}");
        i += len as usize;
        let last = &all.retired[i - 1];
        assert!(
            last.class.is_some_and(|c| matches!(
                c,
                outcrop_rv::inst::Class::Branch | outcrop_rv::inst::Class::Jump
            )) || last.raw == 0x0000_0073 // ecall
        );
        if i < n {
            assert_eq!(all.retired[i].pc, last.next_pc);
        }
    }
    assert!(
        i <= n && n - i < 10_000,
        "the open block at the limit is short"
    );
    // taken branches are exactly the retired transfers
    let taken: Vec<(u64, u64)> = all
        .retired
        .iter()
        .filter(|r| r.taken)
        .map(|r| (r.pc, r.next_pc))
        .collect();
    let from_stream: Vec<(u64, u64)> = all.branches.iter().map(|&(f, t, _)| (f, t)).collect();
    assert_eq!(taken, from_stream);
    let calls = all
        .branches
        .iter()
        .filter(|b| b.2 == BranchKind::Call)
        .count();
    let returns = all
        .branches
        .iter()
        .filter(|b| b.2 == BranchKind::Return)
        .count();
    assert!(
        calls > 100 && returns > 100 && calls.abs_diff(returns) < 64,
        "calls {calls} returns {returns}"
    );
    assert!(all.branches.iter().any(|b| b.2 == BranchKind::Cond));
    // loads and stores carry their access
    assert!(all
        .retired
        .iter()
        .any(|r| r.mem_size == 8 && r.class == Some(outcrop_rv::inst::Class::Store)));
}

struct StopAfter(u64);
impl Observer for StopAfter {
    const RETIRE: bool = true;
    fn retire(&mut self, _: &Retire, _t: Option<&Stamp>) -> Control {
        self.0 -= 1;
        if self.0 == 0 {
            Control::Stop
        } else {
            Control::Continue
        }
    }
}

#[test]
fn an_observer_can_stop_the_run() {
    let mut m = machine("hello", u64::MAX);
    assert_eq!(m.run(&mut StopAfter(1234)), Outcome::Stopped);
    assert_eq!(m.instret, 1234);
    // and the machine resumes where it stopped
    assert_eq!(m.run(&mut ()), Outcome::Exited(0));
}
