//! Fuzz target: `outcrop_instrument::instrument` on arbitrary text, in every combination of
//! sites, sampling and duplication.
//!
//! Rewriting must return (an error naming a line is fine) without panicking, and an accepted
//! file is rewritten deterministically: the same input gives the same text and sites.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_instrument::{instrument, Config, Sampling, Sites};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(src) = std::str::from_utf8(rest) else {
        return;
    };
    let cfg = Config {
        sites: if mode & 1 == 0 { Sites::Entries } else { Sites::Edges },
        sampling: match (mode >> 1) % 3 {
            0 => Sampling::Full,
            1 => Sampling::Counter,
            _ => Sampling::Brr,
        },
        interval: 1 << (1 + (mode >> 4) % 15),
        full_duplication: mode & 0x80 != 0 && (mode >> 1) % 3 != 0,
        count: true,
        unit: "fuzz".into(),
    };
    if let Ok(a) = instrument(src, &cfg) {
        let b = instrument(src, &cfg).expect("the same input is accepted again");
        assert_eq!(a, b);
        assert_eq!(a.functions >= a.spilled.len(), true);
    }
});
