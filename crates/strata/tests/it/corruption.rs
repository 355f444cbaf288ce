//! Damaged files: every truncation and every single-bit flip of a small file is reported as an
//! error naming a byte offset, never a panic and never a wrong replay.

use outcrop_strata::{Config, Error, FileStats, WppBuilder, WppFile, WppWriter};

fn small_file(layers: usize) -> Vec<u8> {
    let mut b = WppBuilder::new(Config {
        layers,
        ..Config::default()
    });
    for i in 0..400u64 {
        for j in 0..(i % 5 + 1) {
            b.push_block(0x1000 + 8 * j, 2);
        }
        b.push_block(0x2000 + 4 * (i % 3), 3);
    }
    let (items, dicts, build) = b.finish();
    let mut w = WppWriter::new(Vec::new(), Config::default().codec).unwrap();
    w.write_items(&items).unwrap();
    let stats = FileStats {
        layers,
        build,
        ..FileStats::default()
    };
    w.finish(&dicts, stats).unwrap().0
}

/// Blocks with a data-dependent choice in the loop: the stream is stored by the context model.
fn branchy_blocks() -> Vec<(u64, u32)> {
    let mut x = 0x9e37_79b9_u32;
    let mut blocks = Vec::new();
    for _ in 0..3000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        blocks.push((0x1000, 4));
        blocks.push((if x & 1 == 0 { 0x1010 } else { 0x1040 }, 3));
        if x & 6 == 0 {
            blocks.push((0x1080, 2));
        }
    }
    blocks
}

fn branchy_file() -> Vec<u8> {
    let mut b = WppBuilder::new(Config::default());
    for &(a, n) in &branchy_blocks() {
        b.push_block(a, n);
    }
    let (items, dicts, build) = b.finish();
    let mut w = WppWriter::new(Vec::new(), Config::default().codec).unwrap();
    w.write_items(&items).unwrap();
    let stats = FileStats {
        layers: 1,
        build,
        ..FileStats::default()
    };
    w.finish(&dicts, stats).unwrap().0
}

#[test]
fn a_context_coded_stream_replays_exactly() {
    let f = branchy_file();
    assert!(
        f.windows(4).any(|w| w == b"STRC"),
        "the branchy stream should be stored by the context model"
    );
    let file = WppFile::parse(&f).unwrap();
    let replayed: Vec<u64> = outcrop_strata::Replay::new(&file).collect();
    let expected: Vec<u64> = branchy_blocks().iter().map(|&(a, _)| a).collect();
    assert_eq!(replayed, expected);
    for len in (0..f.len()).step_by(7) {
        let e = WppFile::parse(&f[..len]).expect_err("truncated file accepted");
        assert!(e.to_string().contains("byte offset"), "length {len}: {e}");
    }
}

#[test]
fn the_small_file_is_valid() {
    for layers in [0, 2] {
        WppFile::parse(&small_file(layers)).unwrap();
    }
}

#[test]
fn every_truncation_is_an_error() {
    let f = small_file(2);
    for len in 0..f.len() {
        let e = WppFile::parse(&f[..len]).expect_err("truncated file accepted");
        let msg = e.to_string();
        assert!(
            msg.contains("byte offset"),
            "length {len}: message without an offset: {msg}"
        );
    }
}

#[test]
fn every_bit_flip_is_an_error() {
    let f = small_file(2);
    for i in 0..f.len() {
        for bit in 0..8 {
            let mut g = f.clone();
            g[i] ^= 1 << bit;
            let version = u16::from_le_bytes([g[8], g[9]]);
            if (8..10).contains(&i)
                && (outcrop_strata::format::OLDEST_VERSION..=outcrop_strata::format::FORMAT_VERSION)
                    .contains(&version)
            {
                // another version this build reads (3 → 2: a file without thread marks is
                // both): it must read as the same file
                let (a, b) = (WppFile::parse(&f).unwrap(), WppFile::parse(&g).unwrap());
                assert_eq!(a.items, b.items);
                continue;
            }
            assert!(
                WppFile::parse(&g).is_err(),
                "flip of bit {bit} at byte {i} accepted"
            );
        }
    }
}

#[test]
fn named_errors() {
    let f = small_file(1);
    assert!(matches!(
        WppFile::parse(b"OUTCROPT0000000000"),
        Err(Error::BadMagic)
    ));
    assert!(matches!(
        WppFile::parse(b"OUTC"),
        Err(Error::Truncated { .. })
    ));
    let mut v = f.clone();
    v[8] = 9;
    assert!(matches!(
        WppFile::parse(&v),
        Err(Error::UnsupportedVersion { version: 9 })
    ));
    let mut extra = f.clone();
    extra.extend_from_slice(&f[16..40]);
    assert!(
        WppFile::parse(&extra).is_err(),
        "data after the end section"
    );
}

/// A file whose sections are zstd frames of zeros, each claiming `raw` bytes: tiny on disk,
/// large once decoded.
fn zero_bomb(sections: usize, raw: usize) -> Vec<u8> {
    let mut f = b"OUTCROPW".to_vec();
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&[0; 6]);
    let frame = zstd::bulk::compress(&vec![0u8; raw], 1).unwrap();
    for _ in 0..sections {
        f.extend_from_slice(b"STRM");
        f.extend_from_slice(&(raw as u64).to_le_bytes());
        f.extend_from_slice(&(frame.len() as u64).to_le_bytes());
        f.extend_from_slice(&crc32fast::hash(&frame).to_le_bytes());
        f.extend_from_slice(&frame);
    }
    f
}

#[test]
fn sections_that_decode_past_the_files_budget_are_refused_before_decoding() {
    // 64 MiB of zeros in each of 8 sections: a few kilobytes claiming half a gigabyte
    let f = zero_bomb(8, 64 << 20);
    assert!(f.len() < 64 << 10, "{} bytes", f.len());
    let budget = outcrop_strata::decode_budget(f.len() as u64);
    let e = WppFile::parse(&f).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "more than this reader holds for a file of {} bytes ({budget})",
            f.len()
        )),
        "{e}"
    );
    // the first section alone fits nowhere either: refused at the first header
    assert!(e.contains("STRM") && e.contains("offset 16"), "{e}");
    assert!(budget < 1 << 30);
}
