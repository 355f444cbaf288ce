//! Source lines from DWARF: a program built with `-g` gets its instructions attributed to the
//! lines that hold them, checked against a line we mark in the source. Needs the RISC-V cross
//! compiler; without it the test is skipped unless `OUTCROP_REQUIRE_CROSS=1` (CI).
//! Damaged files are refused or read without panicking.

use outcrop_profile::lines::LineTable;
use outcrop_profile::Profiler;
use outcrop_run::{load, ProgramSpec, Run};
use outcrop_rv::symbols::Symbols;
use proptest::prelude::*;
use std::process::Command;

const SOURCE: &str = r#"#include <stdio.h>
static volatile unsigned sink;
__attribute__((noinline)) static unsigned mix(unsigned n) {
    unsigned h = 2166136261u;
    for (unsigned i = 0; i < n; i++) {
        h = (h ^ i) * 16777619u; /* HOT */
    }
    return h;
}
int main(void) {
    sink = mix(2000000);
    printf("%u\n", sink);
    return 0;
}
"#;

/// A line inlined into two functions, run 3 times as often in one of them.
const INLINED: &str = r#"#include <stdio.h>
static volatile unsigned sink;
static inline __attribute__((always_inline)) unsigned step(unsigned h, unsigned i) {
    return (h ^ i) * 16777619u; /* STEP */
}
__attribute__((noinline)) static unsigned often(unsigned n) {
    unsigned h = 1;
    for (unsigned i = 0; i < n; i++) h = step(h, i);
    return h;
}
__attribute__((noinline)) static unsigned rarely(unsigned n) {
    unsigned h = 7;
    for (unsigned i = 0; i < n; i++) h = step(h, i);
    return h;
}
int main(void) {
    sink = often(300000) + rarely(100000);
    printf("%u\n", sink);
    return 0;
}
"#;

fn build() -> Option<Vec<u8>> {
    build_source(SOURCE)
}

fn build_source(source: &str) -> Option<Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("mix.c");
    std::fs::write(&src, source).unwrap();
    let out = dir.path().join("mix");
    let o = Command::new("riscv64-linux-gnu-gcc")
        .args(["-g", "-O1", "-static", "-o"])
        .arg(&out)
        .arg(&src)
        .output();
    match o {
        Ok(o) if o.status.success() => Some(std::fs::read(&out).unwrap()),
        _ => {
            assert!(
                std::env::var_os("OUTCROP_REQUIRE_CROSS").is_none(),
                "riscv64-linux-gnu-gcc missing but OUTCROP_REQUIRE_CROSS is set"
            );
            eprintln!("note: no riscv64-linux-gnu-gcc: the source-line test is skipped");
            None
        }
    }
}

/// The exact profile and its lines, of `elf` run to the end.
fn profile_lines(elf: &[u8]) -> (outcrop_profile::Profile, outcrop_profile::LineProfile) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mix");
    std::fs::write(&path, elf).unwrap();
    let spec = ProgramSpec::observed(&path, "mix");
    let mut guest = load(&spec, Box::new(|_| {})).unwrap();
    let symbols = Symbols::from_elf(elf).unwrap();
    let r = Run::new(&mut guest.machine)
        .profile(symbols)
        .execute()
        .unwrap();
    let p = r.profile.unwrap();
    let mut table = LineTable::from_elf(elf).unwrap().expect("built with -g");
    let lines = p.by_line(&mut table);
    (p, lines)
}

#[test]
fn a_line_inlined_into_two_functions_names_the_one_it_ran_most_in() {
    let Some(elf) = build_source(INLINED) else {
        return;
    };
    let (p, lines) = profile_lines(&elf);
    let step = INLINED.lines().position(|l| l.contains("STEP")).unwrap() as u32 + 1;
    let row = lines
        .rows
        .iter()
        .find(|r| r.line == step)
        .unwrap_or_else(|| panic!("no row for line {step}: {:?}", &lines.rows[..4]));
    assert_eq!(row.functions, 2, "{row:?}");
    assert_eq!(p.functions[row.function as usize].name, "often");
    // every other line of the loop bodies ran in one function
    for r in lines
        .rows
        .iter()
        .filter(|r| r.file.ends_with("mix.c") && r.line != step)
    {
        assert_eq!(r.functions, 1, "{r:?}");
    }
}

#[test]
fn a_program_built_with_debug_info_gets_its_hot_line() {
    let Some(elf) = build() else { return };
    let (p, lines) = profile_lines(&elf);
    let hot_line = SOURCE.lines().position(|l| l.contains("HOT")).unwrap() as u32 + 1;
    // the loop's two lines (its test, one line above, and the marked body) hold it: two
    // instructions each per iteration, 2 M iterations
    let mut top: Vec<u32> = lines.rows[..2].iter().map(|r| r.line).collect();
    top.sort();
    assert_eq!(top, vec![hot_line - 1, hot_line], "{:?}", &lines.rows[..4]);
    for r in &lines.rows[..2] {
        assert!(r.file.ends_with("mix.c"), "{r:?}");
        assert_eq!(p.functions[r.function as usize].name, "mix");
        assert!(r.counts.instructions >= 4_000_000, "{r:?}");
    }
    let attributed: u64 = lines.rows.iter().map(|r| r.counts.instructions).sum();
    assert_eq!(
        attributed + lines.unattributed.instructions,
        p.instructions,
        "nothing lost"
    );
    // the loop runs 2 M times: nearly the whole run has a line
    assert!(attributed * 10 > p.instructions * 9);
}

/// Found by the `line_table` fuzz target: a lookup of the last address (here after a PIE's
/// base is subtracted from an address below it) overflowed inside `addr2line`. Every address
/// the target tries on that file, and the edges, now answer without panicking.
#[test]
fn lookups_at_the_edges_of_the_address_space_do_not_panic() {
    // a heap copy: `object` wants the ELF header aligned, which `include_bytes!` is not
    let data = include_bytes!("../data/fuzz-locate-last-address.elf").to_vec();
    let mut table = LineTable::from_elf(&data)
        .unwrap()
        .expect("has .debug_line");
    for chunk in data.chunks_exact(8).take(64) {
        let base = u64::from_le_bytes(chunk.try_into().unwrap());
        for d in [0u64, 2, 4, 64] {
            let _ = table.locate(base.wrapping_add(d));
        }
    }
    for pc in [0, 1, u64::MAX, u64::MAX - 1, outcrop_rv::elf::PIE_BASE - 1] {
        let _ = table.locate(pc);
    }
}

#[test]
fn a_program_without_debug_info_has_no_line_table_and_the_workloads_have_one() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // a test guest linked without -g
    let elf = std::fs::read(root.join("crates/outcrop/tests/fixtures/guest/probe")).unwrap();
    assert!(LineTable::from_elf(&elf).unwrap().is_none());
    // the bundled workloads are built with -g (workloads/build.sh): main is in hello.c
    let elf = std::fs::read(root.join("workloads/bin/hello")).unwrap();
    let mut t = LineTable::from_elf(&elf)
        .unwrap()
        .expect("hello has DWARF lines");
    let syms = outcrop_rv::symbols::Symbols::from_elf(&elf).unwrap();
    let main = syms.named("main").expect("main").start;
    let at = t.locate(main).expect("main has a line");
    assert!(t.file_name(at.file).ends_with("hello.c"), "{at:?}");
    assert!(at.line > 0);
    assert!(LineTable::from_elf(b"not an elf").is_err());
    let _ = Profiler::new(Symbols::default());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]
    /// Damaged copies of a real debug build: refused or read, never a panic.
    #[test]
    fn damaged_debug_info_never_panics(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..64)) {
        static ELF: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
        let Some(elf) = ELF.get_or_init(build) else { return Ok(()) };
        let mut bad = elf.clone();
        for (at, v) in flips {
            let i = at % bad.len();
            bad[i] ^= v;
        }
        if let Ok(Some(mut t)) = LineTable::from_elf(&bad) {
            for pc in (0x10000u64..0x12000).step_by(64) {
                let _ = t.locate(pc);
            }
        }
    }
}
