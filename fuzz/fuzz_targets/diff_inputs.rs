//! Fuzz target: `outcrop diff`'s inputs. Arbitrary bytes as profile.json / report.json and
//! rap.json; whatever parses is diffed against itself and against a shifted copy, and every
//! row must hold A + diff = B exactly (the reader refuses counts past 2^63−1, so no
//! difference saturates). Nothing may panic, however deep or large the file says it is; the
//! key sniffer (`Keys::of`, which reads without keeping values) agrees with the readers.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_diff::profile::{diff_profiles, Options};
use outcrop_diff::ranges::diff_ranges;
use outcrop_diff::{Keys, ProfileView, RapView};

fuzz_target!(|data: &[u8]| {
    let keys = Keys::of(data);
    if keys.profile == Some(false) {
        assert!(ProfileView::from_json(data).is_err());
    }
    if keys.rap == Some(false) {
        assert!(RapView::from_json(data).is_err());
    }
    if let Ok(p) = ProfileView::from_json(data) {
        assert!(keys.tree || keys.profile == Some(true));
        let mut q = p.clone();
        q.program_id = Some("other".into());
        for n in q.tree.iter_mut() {
            n.self_counts.instructions = n.self_counts.instructions.wrapping_add(1);
        }
        for (x, y) in [(&p, &p), (&p, &q)] {
            if let Ok(d) = diff_profiles(x, y, Options { force: true, by_symbol: false }) {
                for r in &d.functions {
                    let got = i128::from(r.a.self_counts.instructions)
                        + i128::from(r.delta.self_counts.instructions);
                    assert_eq!(got, i128::from(r.b.self_counts.instructions));
                }
                let _ = d.call_paths.len();
            }
        }
        let _ = p.to_profile();
    }
    if let Ok(r) = RapView::from_json(data) {
        let _ = diff_ranges(&r, &r, true);
        let _ = diff_ranges(&r, &r, false);
    }
});
