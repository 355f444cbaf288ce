//! Damaged trace files: every single-byte corruption and every truncation of a small valid
//! file must be reported as an error (with an offset), never a panic or different values.

use outcrop_events::trace::{read_info, RecordKind, TraceReader, TraceWriter, FOOTER_BYTES};
use outcrop_events::{read_all, Error, ValueReader};

/// A small file with three chunks (two full, one partial) and varied deltas.
fn small_trace() -> (Vec<u64>, Vec<u8>) {
    let values: Vec<u64> = (0..50u64)
        .map(|i| match i % 5 {
            0 => 0x10000 + 4 * i,
            1 => u64::MAX - i,
            2 => i,
            3 => 1 << 63,
            _ => 0x4000_0000 + 8 * (i * i),
        })
        .collect();
    let mut w = TraceWriter::new(Vec::new(), RecordKind::U64)
        .unwrap()
        .with_chunk_values(20);
    w.write_values(&values).unwrap();
    (values, w.finish().unwrap())
}

/// Reads a whole file with small batches, as a streaming consumer would.
fn read_streaming(bytes: &[u8]) -> Result<Vec<u64>, Error> {
    let mut reader = TraceReader::new(bytes)?;
    let mut out = Vec::new();
    while reader.read_values(&mut out, 7)? != 0 {}
    Ok(out)
}

/// Byte ranges of the chunk payloads (zstd frames) in a well-formed file.
fn payload_ranges(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let mut at = 20;
    while &bytes[at..at + 4] == b"CHNK" {
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        ranges.push(at + 24..at + 24 + len);
        at += 24 + len;
    }
    ranges
}

/// Reads a corrupted file; an error must name an offset inside it, and success must give
/// back exactly the original values. Returns whether the file was rejected.
fn check_rejected_or_identical(bad: &[u8], values: &[u64], what: &str) -> bool {
    match read_streaming(bad) {
        Ok(got) => {
            assert_eq!(got, values, "{what} silently changed the values");
            assert_eq!(
                read_info(bad).expect(what).values,
                values.len() as u64,
                "{what}"
            );
            false
        }
        Err(e) => {
            let offset = e.offset().expect("trace errors name an offset");
            assert!(offset < bad.len() as u64, "{what}: {e}");
            assert!(read_info(bad).is_err(), "{what}: read_info accepted it");
            true
        }
    }
}

#[test]
fn flipping_any_byte_is_an_error() {
    let (values, good) = small_trace();
    assert_eq!(read_streaming(&good).unwrap(), values);
    for at in 0..good.len() {
        let mut bad = good.clone();
        bad[at] ^= 0xff;
        assert!(
            check_rejected_or_identical(&bad, &values, &format!("byte {at} ^ 0xff")),
            "flipping byte {at} went unnoticed"
        );
    }
}

#[test]
fn flipping_any_bit_of_a_header_or_footer_is_an_error() {
    let (values, good) = small_trace();
    let payloads = payload_ranges(&good);
    for at in (0..good.len()).filter(|at| !payloads.iter().any(|r| r.contains(at))) {
        for bit in 0..8 {
            let mut bad = good.clone();
            bad[at] ^= 1 << bit;
            let what = format!("byte {at} bit {bit}");
            assert!(
                check_rejected_or_identical(&bad, &values, &what),
                "{what} went unnoticed"
            );
        }
    }
}

/// Inside a zstd frame a few bits do not affect the decoded bytes (the frame header's unused
/// bit, some entropy-table bits). The reader checks the decoded bytes, so such a flip is
/// harmless; every other flip must be an error.
#[test]
fn flipping_any_bit_of_a_payload_never_changes_the_values() {
    let (values, good) = small_trace();
    let mut harmless = 0;
    let mut total = 0;
    for at in payload_ranges(&good).into_iter().flatten() {
        for bit in 0..8 {
            let mut bad = good.clone();
            bad[at] ^= 1 << bit;
            total += 1;
            if !check_rejected_or_identical(&bad, &values, &format!("byte {at} bit {bit}")) {
                harmless += 1;
            }
        }
    }
    assert!(
        harmless * 50 < total,
        "{harmless} of {total} payload bit flips went unnoticed"
    );
}

proptest::proptest! {
    #[test]
    fn random_corruption_never_changes_the_values(
        edits in proptest::collection::vec((0usize..346, 1u8..=255), 1..6)
    ) {
        let (values, good) = small_trace();
        let mut bad = good.clone();
        for (at, mask) in edits {
            let at = at % bad.len();
            bad[at] ^= mask;
        }
        check_rejected_or_identical(&bad, &values, "random corruption");
    }
}

#[test]
fn every_truncation_is_an_error_naming_an_offset_within_the_input() {
    let (_, good) = small_trace();
    for len in 0..good.len() {
        let cut = &good[..len];
        for result in [read_streaming(cut).map(|_| ()), read_info(cut).map(|_| ())] {
            let err = result.expect_err("truncated file accepted");
            assert!(
                matches!(err, Error::Truncated { .. }),
                "length {len}: {err}"
            );
            let offset = err.offset().expect("truncation names an offset");
            assert!(offset <= len as u64, "length {len}: {err}");
            assert!(
                err.to_string().contains(&format!("byte offset {offset}")),
                "{err}"
            );
        }
    }
    // Without the footer, the error points at where the footer was expected.
    let len = good.len() - FOOTER_BYTES;
    let err = read_streaming(&good[..len]).unwrap_err();
    assert_eq!(err.offset(), Some(len as u64), "{err}");
}

#[test]
fn bad_magic() {
    let (_, mut bad) = small_trace();
    bad[0] = b'X';
    let err = read_streaming(&bad).unwrap_err();
    assert!(matches!(err, Error::BadMagic { offset: 0 }), "{err:?}");
    assert!(
        err.to_string().contains("not an Outcrop trace file"),
        "{err}"
    );
    let err = read_streaming(b"0x10\n0x20\n").unwrap_err();
    assert!(matches!(err, Error::BadMagic { .. }), "{err:?}");
}

#[test]
fn bad_version() {
    let (_, mut bad) = small_trace();
    bad[8..10].copy_from_slice(&7u16.to_le_bytes());
    let err = read_info(&bad[..]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnsupportedVersion {
                version: 7,
                offset: 8
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("version 7"), "{err}");
}

#[test]
fn trailing_bytes_after_the_footer() {
    let (values, good) = small_trace();
    for extra in [&b"\0"[..], b"OUTCROPT", &good[..]] {
        let mut bad = good.clone();
        bad.extend_from_slice(extra);
        let err = read_streaming(&bad).unwrap_err();
        assert!(
            matches!(err, Error::TrailingBytes { offset, len }
                if offset == good.len() as u64 && len == extra.len() as u64),
            "{err:?}"
        );
        assert!(read_info(&bad[..]).is_err());
    }
    assert_eq!(
        read_all(&mut TraceReader::new(&good[..]).unwrap()).unwrap(),
        values
    );
}

#[test]
fn checksum_mismatch_names_chunk_and_offset() {
    // Rebuild chunk 1 of a file with a wrong payload CRC but a valid header CRC.
    let (_, mut bad) = small_trace();
    let mut at = 20usize;
    let mut chunk_starts = Vec::new();
    while &bad[at..at + 4] == b"CHNK" {
        chunk_starts.push(at);
        let len = u32::from_le_bytes(bad[at + 4..at + 8].try_into().unwrap()) as usize;
        at += 24 + len;
    }
    assert_eq!(chunk_starts.len(), 3);
    let start = chunk_starts[1];
    bad[start + 16] ^= 1;
    let crc = crc32fast::hash(&bad[start..start + 20]);
    bad[start + 20..start + 24].copy_from_slice(&crc.to_le_bytes());
    let err = read_streaming(&bad).unwrap_err();
    assert!(
        matches!(err, Error::ChecksumMismatch { chunk: 1, offset } if offset == start as u64),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("trace chunk 1 at byte offset {start}: checksum mismatch")
    );
}

#[test]
fn header_checksum_mismatch_names_the_chunk() {
    let (_, mut bad) = small_trace();
    let starts: Vec<usize> = payload_ranges(&bad).iter().map(|r| r.start - 24).collect();
    let start = starts[2];
    bad[start + 12] ^= 0x01; // value_count, CRC left as it was
    let err = read_streaming(&bad).unwrap_err();
    assert_eq!(err.chunk(), Some(2), "{err:?}");
    assert_eq!(err.offset(), Some(start as u64), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("trace chunk header (chunk 2) at byte offset {start}: header checksum mismatch")
    );
}
