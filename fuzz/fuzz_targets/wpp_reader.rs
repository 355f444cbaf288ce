//! Fuzz target: `WppFile::parse` (whole-program profiles) on arbitrary bytes.
//!
//! Reading must return (an error is fine) without panicking. A file it accepts must replay
//! exactly the number of blocks it claims, through both replay interfaces, and its reports
//! (executions, hot paths, length distributions) must compute without panicking.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_strata::{decode_budget, report, Replay, WppFile};

fuzz_target!(|data: &[u8]| {
    let Ok(f) = WppFile::parse(data) else {
        return;
    };
    // the stream's decoded size (the context-coded at 16 bytes an item) is within the budget
    let stream: u64 = f
        .chunks
        .iter()
        .map(|c| if c.context_coded { c.raw * 16 } else { c.raw * 17 })
        .sum();
    assert!(stream <= decode_budget(data.len() as u64));
    // accepted files can claim up to 2^64 blocks; replay only small ones in full
    if f.total_blocks <= 1 << 20 {
        assert_eq!(Replay::new(&f).count() as u64, f.total_blocks);
        let mut n = 0u64;
        Replay::new(&f).for_each_path(|p| n += p.len() as u64);
        assert_eq!(n, f.total_blocks);
    }
    let counts = f.executions();
    let _ = report::hot_paths(&f, &counts, 5);
    let _ = report::path_length_vs_trips(&f, &counts);
    for k in 0..f.layers.len() {
        let _ = report::stratum_lengths(&f, &counts, k);
    }
    let _ = report::ratios(&f);
});
