//! Fuzz target: perf.data files and `perf script` text from strangers.
//!
//! The reader must return records or an error naming an offset inside the input, never
//! panic, and never allocate more than the input's records can hold; every sample goes
//! through the importer. The same bytes as text go through the line parser.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_perf::{parse_line, Error, Importer, Reader, Segment, Target};
use std::io::Cursor;

fuzz_target!(|data: &[u8]| {
    let len = data.len() as u64;
    let target = Target {
        name: "prog".into(),
        segments: vec![Segment { offset: 0, vaddr: 0x400000, size: 1 << 20 }],
        ..Target::default()
    };
    if let Ok(mut r) = Reader::new(Cursor::new(data), len) {
        let mut imp = Importer::new(target.clone(), &r.build_ids);
        for _ in 0..100_000 {
            match r.next_event() {
                Ok(Some((at, e))) => {
                    assert!(at < len);
                    imp.event(&e);
                }
                Ok(None) => break,
                Err(Error::Damaged { offset, .. } | Error::Unsupported { offset, .. }) => {
                    assert!(offset <= len, "offset {offset} beyond {len}");
                    break;
                }
                Err(e) => panic!("unexpected error kind: {e}"),
            }
        }
        let _ = imp.finish("prog", "", 0).samples.to_text();
    }
    let text = String::from_utf8_lossy(data);
    let mut imp = Importer::new(Target { identity: true, ..target }, &[]);
    for (i, l) in text.lines().enumerate() {
        if let Ok(Some(s)) = parse_line(l, i as u64 + 1) {
            imp.sample(&s);
        }
    }
    let _ = imp.finish("prog", "", 0);
});
