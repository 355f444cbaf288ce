//! The site-profile parser (`outcrop brr overlap`) and the overlap of whatever it accepts:
//! never a panic, an accuracy always within 0..=1, however large the counts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_sampling::overlap::{overlap, SiteProfile};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // the first half against the second, as a full and a sampled profile
    let mid = text.len() / 2;
    let mid = (mid..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
    let (a, b) = text.split_at(mid);
    let (Ok(full), Ok(sampled)) = (SiteProfile::parse(a), SiteProfile::parse(b)) else {
        return;
    };
    for (x, y) in [(&full, &sampled), (&sampled, &full), (&full, &full)] {
        let o = overlap(x, y);
        assert!((0.0..=1.0).contains(&o.accuracy), "accuracy {}", o.accuracy);
        assert!(o.shares.iter().all(|s| (0.0..=1.0).contains(&s.full) && (0.0..=1.0).contains(&s.sampled)));
    }
    // a profile overlaps itself fully unless it is empty of counts
    let o = overlap(&full, &full);
    assert!(full.total() == 0 || (o.accuracy - 1.0).abs() < 1e-6, "{}", o.accuracy);
});
