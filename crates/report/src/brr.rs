//! Branch-on-random reports: the overlap of a sampled site profile with the full one.

use outcrop_sampling::Overlap;
use std::fmt::Write as _;

/// What each column of the overlap table means.
pub const OVERLAP_LEGEND: &str = "full, sampled: the site's share of all counts in each profile; accuracy = Σ min(full, sampled) over sites (branch-on-random paper §4.1, Arnold and Ryder's overlap percentage); rows: the sites that cost the most accuracy";

/// The overlap as text: the accuracy, then the `top` sites that lose the most, and a legend.
pub fn overlap_text(o: &Overlap, top: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "overlap (accuracy) {:.2}% over {} sites ({} counts in the full profile, {} sampled)",
        100.0 * o.accuracy,
        o.sites,
        o.full_total,
        o.sampled_total
    );
    let rows: Vec<_> = o
        .shares
        .iter()
        .filter(|s| s.full != s.sampled)
        .take(top)
        .collect();
    if !rows.is_empty() {
        let _ = writeln!(out, "      full   sampled  site");
        for s in rows {
            let _ = writeln!(
                out,
                "  {:>7.3}%  {:>7.3}%  {}",
                100.0 * s.full,
                100.0 * s.sampled,
                s.name
            );
        }
    }
    let _ = writeln!(out, "  {OVERLAP_LEGEND}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use outcrop_sampling::{overlap, SiteProfile};

    #[test]
    fn the_text_names_the_accuracy_and_the_costliest_site() {
        let full = SiteProfile::parse("50 method1\n50 method2\n").unwrap();
        let sampled = SiteProfile::parse("6 method1\n4 method2\n").unwrap();
        let t = overlap_text(&overlap(&full, &sampled), 10);
        assert!(
            t.starts_with("overlap (accuracy) 90.00% over 2 sites"),
            "{t}"
        );
        assert!(t.contains(" 50.000%   60.000%  method1"), "{t}");
        assert!(t.contains("§4.1"));
    }
}
