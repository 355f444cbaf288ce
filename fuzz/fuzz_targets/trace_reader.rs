//! Fuzz target: `TraceReader` and `read_info` over arbitrary bytes.
//!
//! Both must return (an error is fine) without panicking, and must agree: `read_info`
//! accepts a file exactly when streaming through it succeeds, with the same totals.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_events::trace::{read_info, TraceReader};
use outcrop_events::ValueReader;

fuzz_target!(|data: &[u8]| {
    let streamed = TraceReader::new(data).and_then(|mut reader| {
        let mut out = Vec::new();
        // Batches smaller than a chunk exercise the chunk boundaries.
        while reader.read_values(&mut out, 1000)? != 0 {
            if out.len() > 1 << 20 {
                out.clear();
            }
        }
        Ok((reader.total_values(), reader.chunks_read()))
    });
    let info = read_info(data);
    match (streamed, info) {
        (Ok((total, chunks)), Ok(info)) => {
            assert_eq!(total, Some(info.values));
            assert_eq!(chunks, info.chunks);
            assert_eq!(info.file_bytes, data.len() as u64);
        }
        (Err(a), Err(b)) => {
            assert!(a.offset().is_some(), "{a}");
            assert_eq!(a.to_string(), b.to_string());
        }
        (a, b) => panic!("streaming and read_info disagree: {a:?} vs {b:?}"),
    }
});
