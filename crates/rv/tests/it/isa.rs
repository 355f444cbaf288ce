//! The extensions' encodings against LLVM's (every form, `tests/fixtures/ext/encodings.txt`,
//! assembled by clang-19 and disassembled by llvm-objdump-19; `build.sh` regenerates it), and
//! the `--isa` switch.

use outcrop_rv::elf::{load, Program};
use outcrop_rv::inst::{decode, decode32, Ext, Isa, Op};
use outcrop_rv::kernel::{KernelConfig, Sandbox};
use outcrop_rv::{Engine, Outcome};

/// LLVM's text with hexadecimal immediates in decimal and `dyn` dropped, as the machine's
/// disassembler prints (no pseudo-instructions).
fn normalize(text: &str) -> String {
    let text = text.trim().replace(", dyn", "");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("0x") {
        let neg = rest[..at].ends_with('-');
        out.push_str(&rest[..if neg { at - 1 } else { at }]);
        let digits: String = rest[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_hexdigit())
            .collect();
        let v = i64::from_str_radix(&digits, 16).unwrap();
        out.push_str(&(if neg { -v } else { v }).to_string());
        rest = &rest[at + 2 + digits.len()..];
    }
    out.push_str(rest);
    out.replace([' ', '\t'], "")
}

/// What the machine prints for a compressed instruction LLVM prints as `c.*`: the 32-bit
/// expansion (or `c.mop.N` itself).
fn expansion(llvm: &str) -> String {
    let mut it = llvm.splitn(2, ' ');
    let (m, ops) = (it.next().unwrap(), it.next().unwrap_or("").trim());
    let r: Vec<&str> = ops.split(", ").collect();
    let e = match m {
        "c.lbu" | "c.lhu" | "c.lh" | "c.sb" | "c.sh" => format!("{} {ops}", &m[2..]),
        "c.zext.b" => format!("andi {0}, {0}, 255", r[0]),
        "c.sext.b" | "c.sext.h" | "c.zext.h" => format!("{} {1}, {1}", &m[2..], r[0]),
        "c.zext.w" => format!("add.uw {0}, {0}, zero", r[0]),
        "c.not" => format!("xori {0}, {0}, -1", r[0]),
        "c.mul" => format!("mul {0}, {0}, {1}", r[0], r[1]),
        "c.add" => format!("add {0}, {0}, {1}", r[0], r[1]),
        other => other.to_string(),
    };
    normalize(&e)
}

#[test]
fn every_form_decodes_and_prints_as_llvm_does() {
    let text = include_str!("../fixtures/ext/encodings.txt");
    let mut checked = 0;
    for (n, line) in text.lines().enumerate() {
        let (hex, llvm) = line.split_once('\t').unwrap();
        let llvm = llvm.trim();
        let raw = u32::from_str_radix(hex, 16).unwrap();
        let inst = if hex.len() == 4 {
            decode(raw as u16, 0)
        } else {
            decode32(raw, 4, raw)
        };
        assert_ne!(inst.op, Op::Illegal, "line {}: {line}", n + 1);
        let ours = normalize(&inst.to_string());
        if llvm.starts_with("prefetch.") {
            // Zicbop prefetches are `ori zero, rs1, offset|type` hints
            assert_eq!((inst.op, inst.rd), (Op::Ori, 0), "line {}: {line}", n + 1);
        } else if hex.len() == 4 {
            assert_eq!(ours, expansion(llvm), "line {}: {line}", n + 1);
        } else {
            assert_eq!(ours, normalize(llvm), "line {}: {line}", n + 1);
        }
        checked += 1;
    }
    assert!(checked > 500, "{checked}");
}

#[test]
fn every_new_operation_is_in_the_fixture() {
    // the fixture covers every entry of the extensions' part of the table
    let text = include_str!("../fixtures/ext/encodings.txt");
    let mut seen = std::collections::HashSet::new();
    for line in text.lines() {
        let hex = line.split('\t').next().unwrap();
        let raw = u32::from_str_radix(hex, 16).unwrap();
        let inst = if hex.len() == 4 {
            decode(raw as u16, 0)
        } else {
            decode32(raw, 4, raw)
        };
        seen.insert(inst.op);
    }
    for &(op, name, ..) in outcrop_rv::inst::TABLE {
        if !matches!(
            op.ext(),
            Ext::I
                | Ext::M
                | Ext::A
                | Ext::F
                | Ext::D
                | Ext::C
                | Ext::Zicsr
                | Ext::Zifencei
                | Ext::Xbrr
                // every vector form is in `vector::tests`' LLVM table instead
                | Ext::V
        ) {
            assert!(seen.contains(&op), "{name} has no encoding in the fixture");
        }
    }
}

#[test]
fn isa_switches_extensions_off_by_encoding() {
    let gc = Isa::parse("rv64gc").unwrap();
    let zba = |w: u32| decode32(w, 4, w);
    // sh3add a0, a1, a2
    assert!(!zba(0x20c5e533).allowed(gc));
    assert!(zba(0x20c5e533).allowed(gc.with(Ext::Zba)));
    // c.sext.b s1 needs Zcb and Zbb
    let c = decode(0x9ce5, 0);
    assert!(!c.allowed(gc.with(Ext::Zbb)));
    assert!(!c.allowed(gc.with(Ext::Zcb)));
    assert!(c.allowed(gc.with(Ext::Zcb).with(Ext::Zbb)));
    // c.lbu needs only Zcb; plain compressed instructions C
    assert!(decode(0x8164, 0).allowed(gc.with(Ext::Zcb)));
    assert!(decode(0x0505, 0).allowed(gc));
    assert!(!decode(0x0505, 0).allowed(gc.without(Ext::C)));
    // c.mop.N needs Zcmop
    assert!(!decode(0x6081, 0).allowed(gc));
    assert!(decode(0x6081, 0).allowed(gc.with(Ext::Zcmop)));
    // hints are base encodings
    for w in [0x0100000f, 0x04056013, 0x00200033] {
        assert!(zba(w).allowed(gc), "{w:#x}");
    }
}

/// A writer the test reads back.
#[derive(Clone, Default)]
struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
impl std::io::Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn run_random(engine: Engine, isa: Isa) -> (Outcome, Vec<u8>) {
    let elf = zstd::decode_all(&include_bytes!("../fixtures/ext/random.zst")[..]).unwrap();
    let out = Shared::default();
    let kernel = KernelConfig {
        sandbox: Sandbox::new(),
        deterministic: true,
        exe_path: "/random".into(),
        stdin: Box::new(std::io::empty()),
        stdout: Box::new(out.clone()),
        stderr: Box::new(std::io::sink()),
        on_warning: Box::new(|m| panic!("unexpected warning: {m}")),
        stdio_mode: None,
    };
    let program = Program {
        elf: &elf,
        args: vec!["random".into()],
        env: vec![],
        memory_limit: 1 << 28,
        isa,
    };
    let mut m = load(program, kernel).unwrap();
    m.engine = engine;
    let outcome = m.run(&mut ());
    let bytes = out.0.lock().unwrap().clone();
    (outcome, bytes)
}

#[test]
fn random_sequences_over_edge_values_match_qemu_under_both_engines() {
    // 300 blocks × 24 random instructions of every extension (gen-random.py), each block's
    // registers and fflags written out; recorded under qemu-riscv64 10 (build.sh)
    let want = zstd::decode_all(&include_bytes!("../fixtures/ext/random.qemu.zst")[..]).unwrap();
    for engine in [Engine::Blocks, Engine::Step] {
        let (outcome, got) = run_random(engine, Isa::ALL);
        assert_eq!(outcome, Outcome::Exited(0), "{engine:?}");
        assert_eq!(got.len(), want.len(), "{engine:?}");
        if let Some(at) = got.iter().zip(&want).position(|(a, b)| a != b) {
            let (block, word) = (at / 528, (at % 528) / 8);
            panic!("{engine:?}: block {block}, word {word} differs from qemu's");
        }
    }
}

#[test]
fn a_switched_off_extension_faults_naming_it() {
    for engine in [Engine::Blocks, Engine::Step] {
        let (outcome, _) = run_random(engine, Isa::parse("rv64gc").unwrap());
        let Outcome::Fault(f) = outcome else {
            panic!("{outcome:?}")
        };
        let text = f.to_string();
        assert!(text.contains("switched off by --isa"), "{text}");
        assert!(
            ["Zba", "Zbb", "Zbs", "Zicond", "Zfa", "Zcb", "Zimop"]
                .iter()
                .any(|e| text.contains(&format!("is a {e} instruction"))),
            "{text}"
        );
    }
}
