//! Fuzz target: `TextReader` over arbitrary bytes.
//!
//! It must return (an error is fine) without panicking; a bad line is reported with a
//! plausible line number and a quote of at most 80 characters; values are read in batches of
//! varying size, which must not change the result.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_events::text::TextReader;
use outcrop_events::{read_all, Error, ValueReader};

fuzz_target!(|data: &[u8]| {
    let whole = read_all(&mut TextReader::new(data));
    if let Err(Error::BadLine { line, text, .. }) = &whole {
        let lines = data.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        assert!(*line >= 1 && *line <= lines, "line {line} of {lines}");
        assert!(text.chars().count() <= 80);
    }

    let mut reader = TextReader::new(data);
    let mut out = Vec::new();
    let mut batch = 1;
    let batched = loop {
        match reader.read_values(&mut out, batch) {
            Ok(0) => break Ok(out),
            Ok(_) => batch = batch % 7 + 1,
            Err(e) => break Err(e),
        }
    };
    match (whole, batched) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!("batch size changed the result: {a:?} vs {b:?}"),
    }
    assert!(reader.bytes_read() <= data.len() as u64);
});
