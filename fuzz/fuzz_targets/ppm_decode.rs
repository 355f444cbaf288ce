//! Fuzz target: the context-model stream decoder (`STRC` sections) on arbitrary bytes.
//!
//! The section's CRC guards files, so the whole-file target rarely reaches this decoder with
//! damaged data; here it gets arbitrary bytes directly. Decoding must return (an error is
//! fine) without panicking, with exactly the item count asked for, and re-encoding what it
//! accepted must decode to the same items.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_strata::ppm;

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = u64::from(n) * 16;
    let Ok(items) = ppm::decode(rest, n) else {
        return;
    };
    assert_eq!(items.len() as u64, n);
    let again = ppm::encode(&items);
    assert_eq!(ppm::decode(&again, n).ok(), Some(items));
});
