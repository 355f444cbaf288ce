//! The x86-64 CFG on a real program (google/autofdo's `test.binary`, a gzip built with GCC),
//! checked against the branch records its LBR took (`test.lbr`): every taken branch the
//! hardware recorded inside the program ends a block of the CFG.

use outcrop_paths::{Cfg, Isa, Term};
use outcrop_perf::{Event, Reader};
use std::io::Cursor;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/../perf/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn every_recorded_branch_ends_a_block() {
    let elf = fixture("test.binary");
    let cfg = Cfg::from_elf(&elf).unwrap();
    assert_eq!(cfg.isa, Isa::X86_64);
    assert!(cfg.funcs.iter().any(|f| f.name == "main"));
    assert!(cfg.blocks.len() > 1000, "{} blocks", cfg.blocks.len());
    let data = fixture("test.lbr");
    let len = data.len() as u64;
    let mut r = Reader::new(Cursor::new(data), len).unwrap();
    let (mut inside, mut ends, mut leaders, mut direct) = (0, 0, 0, 0);
    // test.binary is not position-independent: its addresses are its link-time addresses
    let in_text = |a: u64| cfg.block_containing(a).is_some();
    while let Some((_, e)) = r.next_event().unwrap() {
        let Event::Sample(s) = e else { continue };
        for b in &s.branches {
            if !in_text(b.from) || !in_text(b.to) {
                continue;
            }
            inside += 1;
            let blk = &cfg.blocks[cfg.block_containing(b.from).unwrap() as usize];
            ends += u64::from(blk.last == b.from);
            leaders += u64::from(cfg.block_at(b.to).is_some());
            if let Term::Cond { target } | Term::Jump { target } = blk.term {
                direct += 1;
                assert_eq!(
                    target, b.to,
                    "{:#x} is a direct branch to {target:#x}, the LBR says {:#x}",
                    b.from, b.to
                );
            }
        }
    }
    eprintln!("{inside} records inside, {ends} end blocks, {leaders} targets are leaders, {direct} direct");
    assert!(inside > 50_000, "{inside} records inside the program");
    assert_eq!(ends, inside, "a recorded branch in the middle of a block");
    assert!(direct > inside / 2);
    // targets of direct branches, calls and returns are leaders; only indirect jumps' targets
    // (switch tables) may fall inside a block
    assert_eq!(leaders, inside, "a recorded target inside a block");
}
