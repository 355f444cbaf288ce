//! Site profiles and their overlap: how close a sampled profile is to the full one, the
//! branch-on-random paper's accuracy measure (§4.1, from Arnold and Ryder):
//! `accuracy = Σ_i min(f_full(i), f_sampled(i))`, where `f(i)` is site *i*'s fraction of all
//! counts in its profile. 100% means the sampled profile has the full one's shape exactly.
//!
//! A site profile is text, one `COUNT NAME` line per site (what the instrumentation runtime
//! dumps to `$OUTCROP_PROFILE`); blank lines and `#` comments are ignored, a name may contain
//! spaces, and a name given twice is an error.

use crate::error::{Error, Result};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// Counts by site name, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteProfile {
    /// `(name, count)` per site.
    pub sites: Vec<(String, u64)>,
}

impl SiteProfile {
    /// Parses `COUNT NAME` lines; an error names the 1-based line. Counts that sum past
    /// 2^64 − 1 are an error (no run counts that much; a file that says so is damaged).
    pub fn parse(text: &str) -> Result<SiteProfile> {
        let mut sites = Vec::new();
        let mut total = 0u64;
        let mut seen = FxHashMap::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |detail: String| Error::SiteProfile {
                line: i + 1,
                detail,
            };
            let (count, name) = line
                .split_once(char::is_whitespace)
                .ok_or_else(|| bad(format!("expected `COUNT NAME`, got `{line}`")))?;
            let count: u64 = count
                .parse()
                .map_err(|_| bad(format!("`{count}` is not a count")))?;
            total = total.checked_add(count).ok_or_else(|| {
                bad(format!(
                    "the counts so far sum past {} (the most a profile holds)",
                    u64::MAX
                ))
            })?;
            let name = name.trim().to_string();
            if seen.insert(name.clone(), i + 1).is_some() {
                return Err(bad(format!("site `{name}` is listed twice")));
            }
            sites.push((name, count));
        }
        Ok(SiteProfile { sites })
    }

    /// The sum of all counts (saturating at 2^64 − 1; [`SiteProfile::parse`] refuses more).
    pub fn total(&self) -> u64 {
        self.sites.iter().fold(0u64, |t, s| t.saturating_add(s.1))
    }

    /// The exact sum of all counts.
    fn exact_total(&self) -> u128 {
        self.sites.iter().map(|s| u128::from(s.1)).sum()
    }
}

/// One site's share in both profiles.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SiteShare {
    /// Site name.
    pub name: String,
    /// Its fraction of the full profile's counts.
    pub full: f64,
    /// Its fraction of the sampled profile's counts.
    pub sampled: f64,
}

/// The overlap of a sampled profile with the full one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Overlap {
    /// `Σ min(f_full, f_sampled)`, 0 to 1.
    pub accuracy: f64,
    /// Sites in either profile.
    pub sites: usize,
    /// Total counts of the full profile.
    pub full_total: u64,
    /// Total counts of the sampled profile.
    pub sampled_total: u64,
    /// Sites by how much accuracy they cost (`|f_full − f_sampled|`), largest first.
    pub shares: Vec<SiteShare>,
}

/// The overlap of `sampled` with `full` (a site missing from one counts 0 there). Two empty
/// profiles overlap fully; an empty one against a non-empty one not at all.
pub fn overlap(full: &SiteProfile, sampled: &SiteProfile) -> Overlap {
    // exact totals and per-site sums (u128: no count from a file can wrap them), so every
    // fraction is in 0..=1 and the accuracy too
    let (ft, st) = (full.exact_total(), sampled.exact_total());
    let mut by_name: FxHashMap<&str, (u128, u128)> = FxHashMap::default();
    let mut order: Vec<&str> = Vec::new();
    for (name, c) in &full.sites {
        order.push(name);
        by_name.entry(name).or_default().0 += u128::from(*c);
    }
    for (name, c) in &sampled.sites {
        let e = by_name.entry(name).or_insert_with(|| {
            order.push(name);
            (0, 0)
        });
        e.1 += u128::from(*c);
    }
    let frac = |c: u128, t: u128| if t == 0 { 0.0 } else { c as f64 / t as f64 };
    let mut shares: Vec<SiteShare> = order
        .iter()
        .map(|n| {
            let (f, s) = by_name[n];
            SiteShare {
                name: n.to_string(),
                full: frac(f, ft),
                sampled: frac(s, st),
            }
        })
        .collect();
    let accuracy = if ft == 0 && st == 0 {
        1.0
    } else {
        shares
            .iter()
            .map(|s| s.full.min(s.sampled))
            .sum::<f64>()
            .min(1.0)
    };
    shares.sort_by(|a, b| {
        (b.full - b.sampled)
            .abs()
            .total_cmp(&(a.full - a.sampled).abs())
            .then_with(|| a.name.cmp(&b.name))
    });
    Overlap {
        accuracy,
        sites: shares.len(),
        full_total: u64::try_from(ft).unwrap_or(u64::MAX),
        sampled_total: u64::try_from(st).unwrap_or(u64::MAX),
        shares,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn counts_near_the_limit_neither_wrap_nor_pass_100_percent() {
        let big = u64::MAX / 2 + 1;
        // built by hand (parse refuses such a file): sums past 2^64 stay exact
        let full = SiteProfile {
            sites: vec![("a".into(), big), ("b".into(), big), ("c".into(), 2)],
        };
        let sampled = SiteProfile {
            sites: vec![("a".into(), 1), ("b".into(), 1)],
        };
        let o = overlap(&full, &sampled);
        assert!(
            o.accuracy <= 1.0 && (o.accuracy - 1.0).abs() < 1e-9,
            "{}",
            o.accuracy
        );
        assert_eq!(o.full_total, u64::MAX);
        let e = SiteProfile::parse(&format!("{} a\n{} b\n", u64::MAX, 1)).unwrap_err();
        assert!(
            e.to_string().contains("line 2") && e.to_string().contains("sum past"),
            "{e}"
        );
    }

    fn p(sites: &[(&str, u64)]) -> SiteProfile {
        SiteProfile {
            sites: sites.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
        }
    }

    #[test]
    fn the_papers_example() {
        // "if method1 accounts for 50% of the method calls in the full profile while sampling
        // reports it accounts for 60%, the method contributes 50% to the profile's accuracy"
        let o = overlap(
            &p(&[("method1", 50), ("method2", 50)]),
            &p(&[("method1", 6), ("method2", 4)]),
        );
        assert!((o.accuracy - 0.9).abs() < 1e-12);
        assert_eq!(o.shares[0].name, "method1");
        let contrib = o.shares.iter().find(|s| s.name == "method1").unwrap();
        assert!((contrib.full.min(contrib.sampled) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn edge_cases() {
        assert_eq!(overlap(&p(&[]), &p(&[])).accuracy, 1.0);
        assert_eq!(overlap(&p(&[("a", 5)]), &p(&[])).accuracy, 0.0);
        assert_eq!(overlap(&p(&[("a", 5)]), &p(&[("b", 5)])).accuracy, 0.0);
        assert_eq!(overlap(&p(&[("a", 5)]), &p(&[("a", 1)])).accuracy, 1.0);
    }

    #[test]
    fn parsing_and_its_errors() {
        let s = SiteProfile::parse("# sites\n12 main\n\n3 entry of f\n").unwrap();
        assert_eq!(s.sites, vec![("main".into(), 12), ("entry of f".into(), 3)]);
        let e = |t: &str| SiteProfile::parse(t).unwrap_err().to_string();
        assert!(e("1 a\nx b\n").contains("line 2"));
        assert!(e("1 a\n2\n").contains("line 2"));
        assert!(e("1 a\n2 a\n").contains("listed twice"));
        assert!(e("-1 a\n").contains("line 1"));
    }

    proptest! {
        #[test]
        fn any_text_parses_or_names_a_line(text in ".{0,200}") {
            if let Err(e) = SiteProfile::parse(&text) {
                prop_assert!(e.to_string().starts_with("site profile, line "));
            }
        }

        #[test]
        fn accuracy_is_a_fraction_symmetric_and_1_on_itself(
            a in prop::collection::vec(0u64..1000, 1..20),
            b in prop::collection::vec(0u64..1000, 1..20),
        ) {
            let pa = SiteProfile { sites: a.iter().enumerate().map(|(i, c)| (format!("s{i}"), *c)).collect() };
            let pb = SiteProfile { sites: b.iter().enumerate().map(|(i, c)| (format!("s{i}"), *c)).collect() };
            let o = overlap(&pa, &pb).accuracy;
            prop_assert!((-1e-12..=1.0 + 1e-12).contains(&o));
            prop_assert!((o - overlap(&pb, &pa).accuracy).abs() < 1e-9);
            if pa.total() > 0 {
                prop_assert!((overlap(&pa, &pa).accuracy - 1.0).abs() < 1e-9);
            }
        }
    }
}
