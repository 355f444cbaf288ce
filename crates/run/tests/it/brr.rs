//! Branch-on-random end to end: `brr` as GNU as encodes it through `workloads/outcrop.h`
//! decodes to the same level and offset, and a C program using `OUTCROP_BRR` runs on the
//! machine in every `--brr` mode, the unit's counts matching the retire stream exactly.
//! Under `--brr trap` a SIGILL handler emulating brr in software (the paper's §3.4 method)
//! runs the same program to the same result, here and under qemu.
//! Needs the RISC-V cross tools; without them the tests are skipped unless
//! `OUTCROP_REQUIRE_CROSS=1` (CI).

use outcrop_events::record::{BranchKind, Control, Observer, Retire, Stamp};
use outcrop_run::{load, ProgramSpec};
use outcrop_rv::inst::{decode32, Op};
use outcrop_rv::{FaultKind, Outcome};
use outcrop_sampling::{BrrConfig, BrrMode};
use std::path::{Path, PathBuf};
use std::process::Command;

fn header_dir() -> PathBuf {
    outcrop_testkit::workloads()
}

/// Runs `tool args`, `None` if the cross tools are missing (allowed unless CI requires them).
fn tool(name: &str, args: &[&str]) -> Option<()> {
    match Command::new(name).args(args).output() {
        Ok(o) if o.status.success() => Some(()),
        Ok(o) => panic!(
            "{name} {args:?} failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(_) => {
            assert!(
                std::env::var_os("OUTCROP_REQUIRE_CROSS").is_none(),
                "{name} missing but OUTCROP_REQUIRE_CROSS is set"
            );
            eprintln!("note: no {name}: the brr test is skipped");
            None
        }
    }
}

#[test]
fn gnu_as_encodings_decode_to_the_same_level_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("brr.S");
    // every level, forward and backward, and the two ends of the ±1 MiB range
    let mut asm = String::from("#include \"outcrop.h\"\n.text\n.option norvc\nstart:\n");
    let mut expect = Vec::new();
    for level in 0..16u8 {
        asm.push_str(&format!("brr {level}, start\n"));
        expect.push((level, -(expect.len() as i32) * 4));
    }
    // the largest 4-aligned forward offset (the field reaches 2^20 - 2)
    asm.push_str("brr 3, far\n");
    expect.push((3, (1 << 20) - 4));
    asm.push_str(&format!(".skip {}\nfar:\n", (1 << 20) - 8));
    std::fs::write(&src, asm).unwrap();
    let obj = dir.path().join("brr.o");
    let bin = dir.path().join("brr.bin");
    let inc = format!("-I{}", header_dir().display());
    let (s, o, b) = (
        src.to_str().unwrap(),
        obj.to_str().unwrap(),
        bin.to_str().unwrap(),
    );
    if tool("riscv64-linux-gnu-gcc", &[&inc, "-c", s, "-o", o]).is_none() {
        return;
    }
    tool(
        "riscv64-linux-gnu-objcopy",
        &["-O", "binary", "-j", ".text", o, b],
    )
    .expect("objcopy comes with gcc");
    let text = std::fs::read(&bin).unwrap();
    for (i, &(level, offset)) in expect.iter().enumerate() {
        let w = u32::from_le_bytes(text[i * 4..i * 4 + 4].try_into().unwrap());
        let inst = decode32(w, 4, w);
        assert_eq!(inst.op, Op::Brr, "word {i}: {w:#010x}");
        assert_eq!((inst.rd, inst.imm), (level, offset), "word {i}: {w:#010x}");
        assert_eq!(
            inst.to_string(),
            format!("brr 1/{}, {offset}", 2u64 << level)
        );
    }
}

const PROGRAM: &str = r#"#include "outcrop.h"
volatile unsigned long sink;
int main(void) {
    for (unsigned long i = 0; i < 100000; i++) if (OUTCROP_BRR(9)) sink++;
    for (unsigned long i = 0; i < 10000; i++) if (OUTCROP_BRR(0)) sink++;
    return 0;
}
"#;

/// Counts taken `brr`s in the retire stream, and where in the sequence of `brr`s each was.
#[derive(Default)]
struct Brrs {
    executed: u64,
    taken: Vec<u64>,
}

impl Observer for Brrs {
    const RETIRE: bool = true;
    fn retire(&mut self, r: &Retire, _: Option<&Stamp>) -> Control {
        if decode32(r.raw, 4, r.raw).op == Op::Brr && r.len == 4 {
            if r.taken {
                assert_eq!(r.transfer, Some(BranchKind::Cond));
                assert_eq!(r.next_pc, r.target);
                self.taken.push(self.executed);
            }
            self.executed += 1;
        }
        Control::Continue
    }
}

fn build_program(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("brr.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let out = dir.join("brr");
    let inc = format!("-I{}", header_dir().display());
    tool(
        "riscv64-linux-gnu-gcc",
        &[
            "-O2",
            "-static",
            &inc,
            "-o",
            out.to_str().unwrap(),
            src.to_str().unwrap(),
        ],
    )?;
    Some(out)
}

/// The outcome, the unit's (executed, taken) and the retire stream's view of one run.
fn run(path: &Path, mode: BrrMode, seed: u64) -> (Outcome, (u64, u64), Brrs) {
    let spec = ProgramSpec {
        brr: BrrConfig {
            mode,
            seed,
            ..BrrConfig::default()
        },
        brr_seeded: true,
        ..ProgramSpec::observed(path, "brr")
    };
    let mut m = load(&spec, Box::new(|_| {})).unwrap().machine;
    let mut brrs = Brrs::default();
    let outcome = m.run(&mut brrs);
    (outcome, (m.brr.executed(), m.brr.taken()), brrs)
}

#[test]
fn every_mode_runs_and_the_unit_agrees_with_the_retire_stream() {
    let dir = tempfile::tempdir().unwrap();
    let Some(path) = build_program(dir.path()) else {
        return;
    };
    let n = 110_000u64;
    let exited = |o: &Outcome| matches!(o, Outcome::Exited(0));
    for (mode, expected) in [
        (BrrMode::Always, Some(n)),
        (BrrMode::Never, Some(0)),
        // one counter of brr executions: every 1024th of the first 100,000, then every
        // 2nd of the next 10,000
        (BrrMode::Counter, Some(100_000 / 1024 + 5_000)),
        (BrrMode::Lfsr, None),
    ] {
        let (outcome, (executed, taken), brrs) = run(&path, mode, 0x5_a5a5);
        assert!(exited(&outcome), "{mode:?}: {outcome:?}");
        assert_eq!(executed, n, "{mode:?}");
        assert_eq!(brrs.executed, n, "{mode:?}");
        assert_eq!(brrs.taken.len() as u64, taken, "{mode:?}");
        if let Some(e) = expected {
            assert_eq!(taken, e, "{mode:?}");
        } else {
            // mean 97.7 + 5,000, standard deviation about 51: within 6 of them
            assert!((4_790..5_410).contains(&taken), "lfsr: {taken}");
        }
    }
    // the same seed gives the same outcomes; another seed, others
    let a = run(&path, BrrMode::Lfsr, 1).2.taken;
    assert_eq!(a, run(&path, BrrMode::Lfsr, 1).2.taken);
    assert_ne!(a, run(&path, BrrMode::Lfsr, 2).2.taken);
    // trap: the first brr is an illegal instruction
    let (outcome, (executed, _), _) = run(&path, BrrMode::Trap, 1);
    match outcome {
        Outcome::Fault(f) => {
            assert_eq!(f.kind, FaultKind::IllegalInstruction);
            assert_eq!(f.inst.op, Op::Brr);
        }
        o => panic!("trap: {o:?}"),
    }
    assert_eq!(executed, 0);
}

/// A program that installs a SIGILL handler emulating brr with the same 20-bit LFSR, taps and
/// bit selection as the machine's default unit. Exit status: the low 7 bits of the taken
/// count, plus 128 when the handler ran (a machine without brr, or `--brr trap`).
const EMULATED: &str = r#"#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <ucontext.h>
#include "outcrop.h"
static unsigned lfsr = 0x5a5a5;
static const unsigned char bits[16] = {0, 2, 5, 9, 14, 1, 7, 12, 18, 4, 11, 17, 3, 10, 16, 6};
static unsigned long emulated;
static void on_sigill(int sig, siginfo_t *si, void *ctx) {
    (void)sig; (void)si;
    ucontext_t *uc = ctx;
    unsigned long pc = uc->uc_mcontext.__gregs[0];
    unsigned w = *(unsigned *)pc;
    if ((w & 0x87f) != 0x0b) { signal(SIGILL, SIG_DFL); return; }
    unsigned level = (w >> 7) & 15;
    long off = ((long)(int)(w & 0x80000000) >> 11) | (w & 0xff000) | ((w >> 9) & 0x800)
               | ((w >> 20) & 0x7fe);
    unsigned m = 0;
    for (unsigned i = 0; i <= level; i++) m |= 1u << bits[i];
    int taken = (lfsr & m) == m;
    lfsr = (lfsr >> 1) | (((lfsr ^ (lfsr >> 3)) & 1) << 19);
    emulated++;
    uc->uc_mcontext.__gregs[0] = taken ? pc + off : pc + 4;
}
int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigill;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGILL, &sa, 0);
    unsigned long taken = 0;
    volatile double x = 1.5;
    for (unsigned long i = 0; i < 20000; i++) { x = x * 1.0000001; if (OUTCROP_BRR(3)) taken++; }
    if (emulated != 0 && emulated != 20000) return 255;
    return (int)((taken & 0x7f) | (emulated ? 0x80 : 0));
}
"#;

#[test]
fn a_sigill_handler_emulates_brr_here_and_under_qemu_with_the_same_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("emu.c");
    std::fs::write(&src, EMULATED).unwrap();
    let out = dir.path().join("emu");
    let inc = format!("-I{}", header_dir().display());
    let (o, s) = (out.to_str().unwrap(), src.to_str().unwrap());
    if tool(
        "riscv64-linux-gnu-gcc",
        &["-O2", "-static", &inc, "-o", o, s],
    )
    .is_none()
    {
        return;
    }
    // the machine's LFSR and the handler's are the same register from the same seed
    let (hw, (_, hw_taken), _) = run(&out, BrrMode::Lfsr, 0x5_a5a5);
    let (trap, (trapped, _), _) = run(&out, BrrMode::Trap, 0x5_a5a5);
    let Outcome::Exited(hw) = hw else {
        panic!("lfsr: {hw:?}")
    };
    let Outcome::Exited(trap) = trap else {
        panic!("trap: {trap:?}")
    };
    assert_eq!(
        hw,
        (hw_taken & 0x7f) as i32,
        "hardware brr, no handler call"
    );
    assert_eq!(trap, hw | 0x80, "emulated: the same outcomes");
    assert_eq!(trapped, 0, "trap mode decides nothing itself");
    // qemu has no brr: its SIGILL goes to the same handler
    match Command::new("qemu-riscv64-static").arg(&out).status() {
        Ok(st) => assert_eq!(st.code(), Some(trap), "qemu"),
        Err(_) => assert!(
            std::env::var_os("OUTCROP_REQUIRE_CROSS").is_none(),
            "qemu-riscv64-static missing but OUTCROP_REQUIRE_CROSS is set"
        ),
    }
}

/// A handler that itself executes an illegal instruction while SIGILL is blocked: the run
/// ends with the fault instead of recursing.
const RECURSIVE: &str = r#"#include <signal.h>
#include <string.h>
static void on_sigill(int sig) { (void)sig; __asm__ volatile(".word 0"); }
int main(void) {
    signal(SIGILL, on_sigill);
    __asm__ volatile(".word 0");
    return 0;
}
"#;

#[test]
fn an_illegal_instruction_inside_the_handler_ends_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("rec.c");
    std::fs::write(&src, RECURSIVE).unwrap();
    let out = dir.path().join("rec");
    let (o, s) = (out.to_str().unwrap(), src.to_str().unwrap());
    if tool("riscv64-linux-gnu-gcc", &["-O2", "-static", "-o", o, s]).is_none() {
        return;
    }
    let (outcome, _, _) = run(&out, BrrMode::Lfsr, 1);
    match outcome {
        Outcome::Fault(f) => assert_eq!(f.kind, FaultKind::IllegalInstruction),
        o => panic!("{o:?}"),
    }
}
