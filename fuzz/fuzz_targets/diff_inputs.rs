//! Fuzz target: `outcrop diff`'s inputs. Arbitrary bytes as profile.json / report.json and
//! rap.json; whatever parses is diffed against itself and against a shifted copy, and every
//! row must hold A + diff = B. Nothing may panic, however deep or large the file says it is.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_diff::profile::{diff_profiles, Options};
use outcrop_diff::ranges::diff_ranges;
use outcrop_diff::{ProfileView, RapView};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = ProfileView::from_json(data) {
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
                    if r.delta.self_counts.instructions != i64::MAX
                        && r.delta.self_counts.instructions != i64::MIN
                    {
                        assert_eq!(got, i128::from(r.b.self_counts.instructions));
                    }
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
