//! Damaged, truncated and hostile inputs: errors name the offset (or line), nothing panics.

use outcrop_perf::{parse_line, Error, Event, Reader};
use proptest::prelude::*;
use std::io::Cursor;

fn small() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/small.perfdata"
    ))
    .unwrap()
}

/// Reads everything; `Ok(samples)` or the error.
fn read_all(bytes: &[u8]) -> Result<usize, Error> {
    let mut r = Reader::new(Cursor::new(bytes), bytes.len() as u64)?;
    let mut n = 0;
    while let Some((_, e)) = r.next_event()? {
        n += usize::from(matches!(e, Event::Sample(_)));
    }
    Ok(n)
}

fn offset(e: &Error) -> u64 {
    match e {
        Error::Damaged { offset, .. }
        | Error::Unsupported { offset, .. }
        | Error::Io { offset, .. } => *offset,
        Error::Text { .. } => panic!("a text error from binary input"),
    }
}

#[test]
fn the_small_file_reads_whole() {
    assert_eq!(
        read_all(&small()).unwrap(),
        1,
        "perf script reads one sample from it"
    );
}

#[test]
fn every_truncation_is_an_error_inside_the_file() {
    let b = small();
    for n in 0..b.len() {
        let e = read_all(&b[..n]).expect_err("a truncated file must not read cleanly");
        assert!(offset(&e) <= n as u64, "cut at {n}: {e}");
        assert!(e.to_string().contains("byte offset 0x"), "{e}");
    }
}

#[test]
fn bad_magic_and_big_endian_are_named() {
    let mut b = small();
    b[0] ^= 0xff;
    let e = read_all(&b).unwrap_err();
    assert!(e.to_string().contains("not a perf.data file"), "{e}");
    let mut b = small();
    b[..8].reverse();
    let e = read_all(&b).unwrap_err();
    assert!(e.to_string().contains("big-endian"), "{e}");
}

#[test]
fn a_huge_branch_count_is_refused_at_its_offset() {
    let mut b = small();
    // the first sample record: find it and set its branch-stack size to 2^40
    let data = u64::from_le_bytes(b[40..48].try_into().unwrap()) as usize;
    let mut p = data;
    loop {
        let kind = u32::from_le_bytes(b[p..p + 4].try_into().unwrap());
        let size = u16::from_le_bytes([b[p + 6], b[p + 7]]) as usize;
        if kind == 9 {
            break;
        }
        p += size;
    }
    // IP|TID|TIME|BRANCH_STACK: nr is at body offset 24
    let nr_at = p + 8 + 24;
    b[nr_at..nr_at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let e = read_all(&b).unwrap_err();
    assert_eq!(offset(&e), nr_at as u64, "{e}");
    assert!(e.to_string().contains("branch stack size"), "{e}");
}

#[test]
fn text_errors_name_the_line() {
    assert!(parse_line("", 1).unwrap().is_none());
    assert!(parse_line("# comment", 2).unwrap().is_none());
    let e = parse_line("zz 0x1/0x2/P/-/-/0/", 7).unwrap_err();
    assert!(e.to_string().contains("line 7"), "{e}");
    let e = parse_line("401000 0x1-0x2", 9).unwrap_err();
    assert!(
        e.to_string().contains("line 9") && e.to_string().contains("branch entry 1"),
        "{e}"
    );
    let s = parse_line("12/34 401000 0x10/0x20/M/-/-/5/COND", 1)
        .unwrap()
        .unwrap();
    assert_eq!((s.pid, s.tid, s.ip), (12, 34, Some(0x401000)));
    assert!(s.branches[0].mispred && s.branches[0].cycles == 5);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn flipped_bytes_never_panic(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let mut b = small();
        for (i, v) in flips {
            let n = b.len();
            b[i % n] = v;
        }
        if let Err(e) = read_all(&b) {
            prop_assert!(offset(&e) <= b.len() as u64, "{}", e);
        }
    }

    #[test]
    fn random_text_never_panics(s in "\\PC{0,200}") {
        let _ = parse_line(&s, 1);
    }
}
