//! Round trips through the trace format: whatever is written is read back exactly, with the
//! chunk layout and totals the writer promised.

use outcrop_events::trace::{read_info, RecordKind, TraceReader, TraceWriter};
use outcrop_events::{read_all, ValueReader};
use proptest::prelude::*;

fn write(values: &[u64], chunk_values: usize) -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), RecordKind::U64)
        .unwrap()
        .with_chunk_values(chunk_values);
    w.write_values(values).unwrap();
    w.finish().unwrap()
}

/// Values with the structure real streams have: runs of nearby addresses, repeats, and
/// arbitrary 64-bit values including the extremes.
fn value_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        Just(0),
        Just(u64::MAX),
        Just(1 << 63),
        (0x10000u64..0x20000).prop_map(|a| a & !3),
        0u64..256,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn round_trip(
        values in proptest::collection::vec(value_strategy(), 0..3000),
        chunk_values in 1usize..5000,
        batch in 1usize..700,
    ) {
        let bytes = write(&values, chunk_values);

        let mut reader = TraceReader::new(&bytes[..]).unwrap();
        let mut out = Vec::new();
        loop {
            let before = out.len();
            let n = reader.read_values(&mut out, batch).unwrap();
            prop_assert_eq!(out.len() - before, n);
            prop_assert!(n <= batch);
            if n == 0 {
                break;
            }
        }
        prop_assert_eq!(&out, &values);
        prop_assert_eq!(reader.total_values(), Some(values.len() as u64));
        prop_assert_eq!(reader.bytes_read(), bytes.len() as u64);

        let info = read_info(&bytes[..]).unwrap();
        prop_assert_eq!(info.kind, RecordKind::U64);
        prop_assert_eq!(info.version, 1);
        prop_assert_eq!(info.values, values.len() as u64);
        prop_assert_eq!(info.chunks, values.len().div_ceil(chunk_values) as u64);
        prop_assert_eq!(info.file_bytes, bytes.len() as u64);
        prop_assert_eq!(
            info.file_bytes,
            20 + 24 * info.chunks + info.compressed_bytes + 24
        );
        prop_assert!(info.uncompressed_bytes >= info.values);
        prop_assert!(info.uncompressed_bytes <= 10 * info.values);

        // Deterministic: writing again gives the same bytes.
        prop_assert_eq!(write(&values, chunk_values), bytes);
    }

    #[test]
    fn piecewise_writes_give_the_same_file(
        values in proptest::collection::vec(any::<u64>(), 0..2000),
        chunk_values in 1usize..500,
        piece in 1usize..300,
    ) {
        let mut w = TraceWriter::new(Vec::new(), RecordKind::U64)
            .unwrap()
            .with_chunk_values(chunk_values);
        for p in values.chunks(piece) {
            w.write_values(p).unwrap();
        }
        prop_assert_eq!(w.finish().unwrap(), write(&values, chunk_values));
    }
}

#[test]
fn large_stream_with_default_chunks() {
    let values: Vec<u64> = outcrop_events::synth::CodeLike::new(1)
        .take(500_000)
        .collect();
    let bytes = write(&values, outcrop_events::trace::DEFAULT_CHUNK_VALUES);
    assert_eq!(
        read_all(&mut TraceReader::new(&bytes[..]).unwrap()).unwrap(),
        values
    );
    let info = read_info(&bytes[..]).unwrap();
    assert_eq!(info.chunks, 8);
    // Block addresses compress far below 8 bytes per value.
    assert!(info.file_bytes * 8 < 8 * 500_000, "{info:?}");
}

#[test]
fn worst_case_chunk_at_the_limits() {
    // Alternating extremes: every delta takes 10 varint bytes. The largest chunk the writer
    // allows would pass the 16 MiB payload limit, so it is split early.
    let values: Vec<u64> = (0..2_000_000u64)
        .map(|i| if i % 2 == 0 { 0 } else { 1 << 63 })
        .collect();
    let bytes = write(&values, usize::MAX);
    let info = read_info(&bytes[..]).unwrap();
    assert_eq!(info.values, values.len() as u64);
    assert_eq!(info.chunks, 2);
    assert!(info.uncompressed_bytes > 16 << 20);
    assert_eq!(
        read_all(&mut TraceReader::new(&bytes[..]).unwrap()).unwrap(),
        values
    );
}
