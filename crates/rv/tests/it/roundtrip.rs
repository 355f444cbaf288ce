//! Decoder round trip against binutils: for random encodings of every instruction in the
//! opcode table, decode → display → assemble the text with `riscv64-linux-gnu-as` → the same
//! bits. This checks the table's masks, the immediate decoding and the disassembly at once.
//!
//! Needs the Debian cross binutils. Without them the test says so and passes, unless
//! `OUTCROP_REQUIRE_CROSS=1` (set by `.ci/run`), in which case their absence fails it.

use outcrop_rv::inst::{decode32, Ext, Format, Op, TABLE};
use std::io::Write;
use std::process::Command;

fn tool(name: &str) -> Option<String> {
    let ok = Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| name.to_string())
}

/// Branch and jump offsets print as plain numbers; gas reads a number as an absolute target,
/// so rewrite the last operand as `.+N` (relative to the instruction itself).
/// Branch-on-random (`brr 1/N, off`) has no mnemonic in binutils: it is written as the
/// `.insn` that `workloads/outcrop.h`'s macro expands to.
fn assembler_text(text: &str, format: Format) -> String {
    if !matches!(format, Format::B | Format::J | Format::Brr) {
        return text.to_string();
    }
    let (head, off) = text.rsplit_once(", ").unwrap_or(("", text));
    let head = match head.strip_prefix("brr 1/") {
        Some(n) => {
            let level = n.parse::<u64>().unwrap().trailing_zeros() - 1;
            format!(".insn j 0x0b, x{level}")
        }
        None => head.to_string(),
    };
    let off: i64 = off.parse().unwrap();
    if off < 0 {
        format!("{head}, .{off}")
    } else {
        format!("{head}, .+{off}")
    }
}

#[test]
fn decode_display_assemble_gives_the_same_bits() {
    let (Some(asm), Some(objcopy)) = (
        tool("riscv64-linux-gnu-as"),
        tool("riscv64-linux-gnu-objcopy"),
    ) else {
        assert!(
            std::env::var_os("OUTCROP_REQUIRE_CROSS").is_none(),
            "riscv64-linux-gnu-as/objcopy missing but OUTCROP_REQUIRE_CROSS is set"
        );
        eprintln!("skipped: riscv64-linux-gnu-as not installed (apt-get install binutils-riscv64-linux-gnu)");
        return;
    };
    // deterministic pseudo-random fill of the bits outside each entry's mask
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as u32
    };
    let mut words = Vec::new();
    for &(op, _, format, mask, matches, _) in TABLE {
        // binutils 2.40 (Debian 12's cross assembler) knows Zba, Zbb and Zbs but not Zicond,
        // Zfa, Zimop or Zawrs: those are checked against LLVM (tests/isa.rs)
        // (vectors and cache-block operations are checked against LLVM's disassembly in
        // `vector::tests` and tests/it/isa.rs)
        if matches!(
            op.ext(),
            Ext::Zicond | Ext::Zfa | Ext::Zimop | Ext::Zawrs | Ext::V | Ext::Zicbom | Ext::Zicboz
        ) {
            continue;
        }
        for _ in 0..40 {
            let mut w = (next() & !mask) | matches;
            if format == Format::Fence {
                // plain fences (fm = 0) with non-empty predecessor and successor sets; the
                // others are reserved encodings that assemblers do not produce
                let pred = 1 + next() % 15;
                let succ = 1 + next() % 15;
                w = (pred << 24) | (succ << 20) | matches;
            }
            if op == Op::FenceI {
                // imm, rs1 and rd are reserved: "implementations shall ignore these fields,
                // and standard software shall zero these fields" (unprivileged ISA, Zifencei)
                w = matches;
            }
            if matches!(op, Op::FcvtDS | Op::FcvtDW | Op::FcvtDWu) {
                w &= !0x7000; // exact conversions: the assembler always encodes rm = 0
            }
            let inst = decode32(w, 4, w);
            if inst.op != op {
                continue; // e.g. a reserved rounding mode: illegal, nothing to assemble
            }
            words.push((w, assembler_text(&inst.to_string(), format)));
        }
    }
    assert!(
        words.len() > 4000,
        "only {} encodings generated",
        words.len()
    );
    let dir = tempfile_dir();
    let src = dir.join("rt.s");
    let mut f = std::fs::File::create(&src).unwrap();
    writeln!(f, ".option norvc\n.text").unwrap();
    for (_, text) in &words {
        writeln!(f, "{text}").unwrap();
    }
    drop(f);
    let obj = dir.join("rt.o");
    let out = Command::new(&asm)
        .args(["-march=rv64gc_zba_zbb_zbc_zbs", "-o"])
        .arg(&obj)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "assembler rejected our disassembly:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = dir.join("rt.bin");
    let st = Command::new(&objcopy)
        .args(["-O", "binary", "-j", ".text"])
        .arg(&obj)
        .arg(&bin)
        .status()
        .unwrap();
    assert!(st.success());
    let bytes = std::fs::read(&bin).unwrap();
    assert_eq!(bytes.len(), words.len() * 4);
    let mut bad = Vec::new();
    for (i, (w, text)) in words.iter().enumerate() {
        let got = u32::from_le_bytes([
            bytes[4 * i],
            bytes[4 * i + 1],
            bytes[4 * i + 2],
            bytes[4 * i + 3],
        ]);
        if got != *w {
            bad.push(format!("{w:#010x} `{text}` assembled to {got:#010x}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} mismatch:\n{}",
        bad.len(),
        words.len(),
        bad[..bad.len().min(20)].join("\n")
    );
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("outcrop-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
