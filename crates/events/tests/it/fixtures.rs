//! Golden trace files: the committed fixtures must keep decoding to the same values (format
//! stability), and the writer must keep producing them byte for byte (determinism).
//!
//! To regenerate after an intended format change or a zstd upgrade:
//! `OUTCROP_BLESS=1 cargo test -p outcrop-events --test it fixtures::` (see `fixtures/README.md`).

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

/// CRC-32 (IEEE, reflected, as zlib computes it), bit by bit: independent of the writer's
/// `crc32fast`.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// The golden files read by a decoder written here from docs/formats.md alone ("Trace
/// files"), not by `TraceReader`: the header, every chunk's header and payload CRC-32 (checked
/// with the bitwise CRC above), the zstd frame (decoded by the zstd library), canonical
/// varints and zigzag deltas, the footer. The values it finds are the inputs the fixtures were
/// made from, so the golden files hold what the spec says, whoever wrote them. The worked
/// example's bytes are the docs' hex dump.
#[test]
fn fixtures_decode_by_the_documented_layout_alone() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let u32le = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64le = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    for f in fixtures() {
        let b = std::fs::read(dir.join(f.file)).unwrap();
        assert_eq!(&b[..8], b"OUTCROPT", "{}", f.file);
        assert_eq!(u32le(&b, 16), crc32(&b[..16]), "{}: header CRC", f.file);
        let mut at = 20;
        let mut values = Vec::new();
        let mut chunks = 0u64;
        while &b[at..at + 4] == b"CHNK" {
            let compressed = u32le(&b, at + 4) as usize;
            let uncompressed = u32le(&b, at + 8) as usize;
            let count = u32le(&b, at + 12) as usize;
            let payload = &b[at + 24..at + 24 + compressed];
            assert_eq!(
                u32le(&b, at + 20),
                crc32(&b[at..at + 20]),
                "{}: chunk CRC",
                f.file
            );
            let raw = zstd::bulk::decompress(payload, uncompressed).unwrap();
            assert_eq!(raw.len(), uncompressed);
            // the payload CRC covers the decompressed varints
            assert_eq!(u32le(&b, at + 16), crc32(&raw), "{}: payload CRC", f.file);
            // varints: 7 bits a byte, low first; the first value as is, then zigzag deltas
            let mut i = 0;
            let mut prev = 0u64;
            for k in 0..count {
                let (mut v, mut shift) = (0u64, 0);
                loop {
                    let byte = raw[i];
                    i += 1;
                    v |= u64::from(byte & 0x7f) << shift;
                    shift += 7;
                    if byte & 0x80 == 0 {
                        break;
                    }
                }
                let value = if k == 0 {
                    v
                } else {
                    let delta = (v >> 1) as i64 ^ -((v & 1) as i64);
                    prev.wrapping_add(delta as u64)
                };
                values.push(value);
                prev = value;
            }
            assert_eq!(
                i,
                raw.len(),
                "{}: the chunk holds exactly its values",
                f.file
            );
            at += 24 + compressed;
            chunks += 1;
        }
        assert_eq!(&b[at..at + 4], b"END!", "{}", f.file);
        assert_eq!(u64le(&b, at + 4), chunks);
        assert_eq!(u64le(&b, at + 12), values.len() as u64);
        assert_eq!(
            u32le(&b, at + 20),
            crc32(&b[at..at + 20]),
            "{}: footer CRC",
            f.file
        );
        assert_eq!(at + 24, b.len());
        assert_eq!(values, f.values, "{}: values", f.file);
    }
    // the worked example is the docs' hex dump, byte for byte
    let docs = std::fs::read_to_string(outcrop_testkit::root().join("docs/formats.md")).unwrap();
    let start = docs.find("82-byte file:").unwrap();
    let block = &docs[start..];
    let block = &block[block.find("```").unwrap() + 3..];
    let block = &block[..block.find("```").unwrap()];
    let mut dump = Vec::new();
    for line in block.lines() {
        let Some((_, rest)) = line.split_once(": ") else {
            continue;
        };
        for tok in rest.split_whitespace() {
            match u8::from_str_radix(tok, 16) {
                Ok(v) if tok.len() == 2 => dump.push(v),
                _ => break,
            }
        }
    }
    assert_eq!(dump, std::fs::read(dir.join("example.otr")).unwrap());
}
