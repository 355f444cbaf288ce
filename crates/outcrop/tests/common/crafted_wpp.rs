//! A crafted whole-program profile for hostile-file tests and `xtask bench-hostile`.

/// A `.wpp` file of one two-block path whose stream repeats it `trips` times: a few hundred
/// bytes that claim `2 × trips` blocks.
pub fn claimed_wpp(trips: u64) -> Vec<u8> {
    use outcrop_strata::{Config, FileStats, WppBuilder, WppWriter};
    let mut b = WppBuilder::new(Config::default());
    b.push_block(0x10000, 3);
    b.push_block(0x1000c, 2);
    let (mut items, dicts, mut build) = b.finish();
    assert_eq!(items.len(), 1);
    items[0].trip = trips;
    build.blocks = 2 * trips;
    build.instructions = 5 * trips;
    let mut w = WppWriter::new(Vec::new(), Config::default().codec).unwrap();
    w.write_items(&items).unwrap();
    let stats = FileStats {
        build,
        ..FileStats::default()
    };
    w.finish(&dicts, stats).unwrap().0
}
