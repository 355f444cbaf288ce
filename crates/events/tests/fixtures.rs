//! Golden trace files: the committed fixtures must keep decoding to the same values (format
//! stability), and the writer must keep producing them byte for byte (determinism).
//!
//! To regenerate after an intended format change or a zstd upgrade:
//! `OUTCROP_BLESS=1 cargo test -p outcrop-events --test fixtures` (see `fixtures/README.md`).

use std::path::PathBuf;

use outcrop_events::read_all;
use outcrop_events::trace::{read_info, RecordKind, TraceReader, TraceWriter};

struct Fixture {
    file: &'static str,
    values: Vec<u64>,
    chunk_values: usize,
}

fn fixtures() -> Vec<Fixture> {
    vec![
        Fixture {
            file: "example.otr",
            values: vec![0x10000, 0x10004, 0x10000],
            chunk_values: outcrop_events::trace::DEFAULT_CHUNK_VALUES,
        },
        Fixture {
            file: "mixed_5000.otr",
            values: mixed_values(5000),
            chunk_values: 2048,
        },
    ]
}

/// Loop-like addresses with every tenth value an extreme, from integer arithmetic only (so the
/// fixture does not depend on the synthetic generators or floating point).
fn mixed_values(n: u64) -> Vec<u64> {
    (0..n)
        .map(|i| match i % 10 {
            9 => (i.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | (1 << 63),
            _ => 0x10000 + 4 * ((i * 7) % 61),
        })
        .collect()
}

fn write(values: &[u64], chunk_values: usize) -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), RecordKind::U64)
        .unwrap()
        .with_chunk_values(chunk_values);
    w.write_values(values).unwrap();
    w.finish().unwrap()
}

#[test]
fn fixtures_decode_and_are_reproduced() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let bless = std::env::var_os("OUTCROP_BLESS").is_some();
    for f in fixtures() {
        let path = dir.join(f.file);
        let written = write(&f.values, f.chunk_values);
        if bless {
            std::fs::write(&path, &written).unwrap();
        }
        let stored = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let decoded = read_all(&mut TraceReader::new(&stored[..]).unwrap()).unwrap();
        assert_eq!(decoded, f.values, "{}: decodes to different values", f.file);
        assert_eq!(
            read_info(&stored[..]).unwrap().values,
            f.values.len() as u64
        );
        assert!(
            written == stored,
            "{}: the writer no longer reproduces the fixture byte for byte (zstd upgrade or \
             format change?); if intended, rerun with OUTCROP_BLESS=1",
            f.file
        );
    }
}
