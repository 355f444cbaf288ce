//! The vector unit (issue 53): every RVV 1.0, Zvbb and Zvfhmin instruction form against qemu,
//! on every engine and at the smallest and largest VLEN; the `--isa` and `--vlen` checks.

use std::path::{Path, PathBuf};
use std::process::Command;

fn guest(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/guest")
        .join(name)
}

/// `outcrop exec --deterministic ARGS -- GUEST GUEST_ARGS`.
fn exec(args: &[&str], name: &str, guest_args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["exec", "--deterministic"])
        .args(args)
        .arg("--")
        .arg(guest(name))
        .args(guest_args)
        .output()
        .unwrap()
}

fn run(args: &[&str]) -> std::process::Output {
    exec(args, "vops", &[])
}

/// `vops` (scripts/rvv-cases.py) runs 4,664 cases: each instruction form under eight vtypes,
/// masked and not, with rounding modes, misaligned and segment accesses, faults at a page's
/// end, and `vstart` 2; it hashes every register and CSR the case could change and the
/// memory it stored to. qemu 10's output is the reference, case by case.
#[test]
fn every_vector_instruction_form_leaves_the_state_qemu_leaves_on_every_engine() {
    let want = std::fs::read_to_string(guest("vops.expected")).unwrap();
    for engine in ["jit", "blocks", "step"] {
        let o = run(&["--engine", engine]);
        assert!(
            o.status.success(),
            "{engine}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let got = String::from_utf8_lossy(&o.stdout);
        let bad: Vec<_> = got
            .lines()
            .zip(want.lines())
            .filter(|(g, w)| g != w)
            .take(10)
            .collect();
        assert!(bad.is_empty(), "{engine}: {bad:#?}");
        assert_eq!(got.lines().count(), want.lines().count(), "{engine}");
    }
    // traps (illegal vtypes and groups, a first element past the page) are among the cases
    assert!(want.lines().filter(|l| l.ends_with("trap 4")).count() > 500);
    assert!(want.lines().filter(|l| l.ends_with("trap 11")).count() >= 8);
}

#[test]
fn at_vlen_1024_every_case_matches_qemu_too() {
    let want = std::fs::read_to_string(guest("vops-1024.expected")).unwrap();
    let o = run(&["--vlen", "1024"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout) == want);
}

#[test]
fn without_v_a_vector_instruction_faults_naming_it_and_bad_vlens_are_refused() {
    let o = run(&["--isa", "rv64gc"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("accesses a V CSR: V is switched off"), "{err}");
    for bad in ["96", "2048", "0", "384"] {
        let o = run(&["--vlen", bad]);
        assert!(!o.status.success(), "--vlen {bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("power of two from 128 to 1024"), "{err}");
    }
    // rva23u64 names the profile Ubuntu builds for: accepted, with V
    let o = run(&["--isa", "rva23u64"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn vsig(args: &[&str], guest_args: &[&str]) -> std::process::Output {
    exec(args, "vsig", guest_args)
}

/// `vsig`: a handler finds the interrupted code's vector state in its frame where Linux puts
/// it (`__riscv_v_ext_state` after the extension header, `datap` pointing at the registers,
/// an END header after them; no vector context before any vector code), clobbers the
/// registers and vtype, and edits the frame; rt_sigreturn restores the state from the frame.
/// qemu 10 saves no vector context (the handler reads garbage), so the expectation is
/// Linux's layout (arch/riscv/kernel/signal.c), at VLEN 128 and 1024 on every engine.
#[test]
fn the_vector_state_is_saved_in_signal_frames_as_linux_lays_it_out() {
    let want = std::fs::read_to_string(guest("vsig.expected")).unwrap();
    for engine in ["jit", "blocks", "step"] {
        for (vlen, vl) in [("128", "vl 4"), ("1024", "vl 5")] {
            let o = vsig(&["--engine", engine, "--vlen", vlen], &[]);
            assert!(o.status.success(), "{engine} {vlen}");
            let got = String::from_utf8_lossy(&o.stdout);
            assert_eq!(got, want.replace("vl 4", vl), "{engine} at VLEN {vlen}");
        }
    }
    // a frame whose vector header Linux would refuse: rt_sigreturn forces SIGSEGV, named
    let o = vsig(&[], &["corrupt"]);
    assert_eq!(o.status.code(), Some(139));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("rt_sigreturn: the signal frame at"), "{err}");
    // AT_HWCAP tells the program whether V is there
    for (isa, has) in [("rv64gcv", "yes"), ("rv64gc", "no"), ("rva23u64", "yes")] {
        let o = vsig(&["--isa", isa], &["hwcap"]);
        let got = String::from_utf8_lossy(&o.stdout);
        assert_eq!(got, format!("AT_HWCAP has V: {has}\n"), "{isa}");
    }
}
