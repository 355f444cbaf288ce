//! Lockstep against qemu: the machine must execute exactly the instruction sequence (every pc,
//! so every branch and jump decision) that `qemu-riscv64-static -singlestep` recorded for the
//! bundled `hello` and `exitcode` programs: glibc start-up, stdio, printf, exit.
//! Reference traces: tests/fixtures/lockstep (README there says how they were made).

use crate::common;

use outcrop_rv::{Control, Observer, Outcome, Retire, Stamp};
use std::path::Path;

/// Every pc; stops the run after each `ecall` so the test can look at it.
struct Pcs(Vec<u64>);
impl Observer for Pcs {
    const RETIRE: bool = true;
    fn retire(&mut self, r: &Retire, _t: Option<&Stamp>) -> Control {
        self.0.push(r.pc);
        if r.raw == 0x0000_0073 {
            Control::Stop
        } else {
            Control::Continue
        }
    }
}

/// `set_robust_list`, which qemu-user answers with ENOSYS where Linux (and this machine)
/// accept it; glibc then takes another path. The test gives glibc qemu's answer.
const SET_ROBUST_LIST: u64 = 99;
const ENOSYS: u64 = 38;

fn run(name: &str) -> (Vec<u64>, Outcome) {
    let mut m = common::workload(name, u64::MAX);
    let mut pcs = Pcs(Vec::new());
    loop {
        match m.run(&mut pcs) {
            Outcome::Stopped => {
                if m.x[17] == SET_ROBUST_LIST {
                    m.x[10] = ENOSYS.wrapping_neg();
                }
            }
            outcome => return (pcs.0, outcome),
        }
    }
}

fn reference(name: &str) -> Vec<u64> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/lockstep/{name}.pcs.zst"));
    let text = zstd::decode_all(std::fs::File::open(path).unwrap()).unwrap();
    String::from_utf8(text)
        .unwrap()
        .lines()
        .map(|l| u64::from_str_radix(l, 16).unwrap())
        .collect()
}

fn check(name: &str, status: i32) {
    let (ours, outcome) = run(name);
    assert_eq!(outcome, Outcome::Exited(status));
    let want = reference(name);
    if let Some(i) = ours.iter().zip(&want).position(|(a, b)| a != b) {
        let show = |v: &[u64]| {
            v.iter()
                .map(|p| format!("{p:#x}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        panic!(
            "{name}: diverges from qemu at instruction {i}\n  ours: {}\n  qemu: {}",
            show(&ours[i.saturating_sub(3)..(i + 4).min(ours.len())]),
            show(&want[i.saturating_sub(3)..(i + 4).min(want.len())])
        );
    }
    assert_eq!(
        ours.len(),
        want.len(),
        "{name}: same path, but one run is longer"
    );
}

#[test]
fn hello_follows_qemus_exact_path() {
    check("hello", 0);
}

#[test]
fn exitcode_follows_qemus_exact_path() {
    check("exitcode", 3);
}
