//! Fuzz target: `Symbols::from_elf` on arbitrary bytes, and the other readers of a
//! program's sections: the profile tags (`outcrop_tags`, into an RPA tag table) and data
//! symbols by name.
//!
//! Reading must return (an error is fine) without panicking. Symbols it accepts must keep
//! their invariants: starts strictly increase, every function has bytes and is found at its
//! first and last byte, and range labels and shares are computed without panicking, their
//! bytes never exceeding the range.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_rv::symbols::Symbols;

fuzz_target!(|data: &[u8]| {
    if let Ok(tags) = outcrop_rv::sections::profile_tags(data) {
        assert!(tags.len() <= outcrop_rv::sections::MAX_TAGS);
        if let Ok(t) = outcrop_rpa::tags::Tags::new(tags.iter().copied(), []) {
            for &(pc, tag) in tags.iter().take(64) {
                assert!(t.get(pc) < 4 && tag < 4);
            }
        }
    }
    let _ = outcrop_rv::sections::symbol(data, "gc_arena");
    let Ok(symbols) = Symbols::from_elf(data) else {
        return;
    };
    let mut previous = None;
    for f in symbols.functions().take(4096) {
        assert!(f.size > 0);
        assert!(previous.is_none_or(|p| p < f.start));
        previous = Some(f.start);
        let first = symbols.lookup(f.start).map(|s| s.start);
        let last = symbols.lookup(f.end() - 1).map(|s| s.start);
        assert!(first.is_some() && last.is_some());
        let hi = f.end().saturating_add(16);
        let _ = symbols.describe_range(f.start.saturating_sub(8), hi);
        let shares = symbols.functions_in(f.start, hi);
        assert!(shares.iter().all(|s| s.bytes <= hi - f.start + 1));
    }
    let _ = symbols.describe_range(0, u64::MAX);
});
