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
