//! RAP hot ranges of two runs (or two saved trees), stream by stream: which appeared, which
//! vanished, which moved and which kept their place, with the change of their share.
//!
//! Matching, per stream: first ranges with the same bounds (`kept`); then, where addresses
//! are comparable, ranges whose overlap is at least [`MIN_JACCARD`] of their union, the most
//! alike first (`moved`). Code ranges of two
//! different builds are matched by what their labels say ran there instead
//! ([`Range::similarity`] at least [`MIN_SIMILARITY`], shares within [`MIN_SHARE_RATIO`] of
//! each other), the most alike first, less half a point per point of share apart, since the
//! same address holds different code (`kept`).
//! What is left appeared (only B) or vanished (only A).

use crate::input::RapView;
use serde::{Deserialize, Serialize};

/// Two code ranges of different builds are the same code when the functions both labels
/// name hold at least this much (percent) of both.
pub const MIN_SIMILARITY: f64 = 50.0;

/// Two ranges of comparable addresses are one range that moved when their overlap is at
/// least this share of their union ([`Range::jaccard`]); a range that split into much finer
/// ones, or merged into a much wider one, appears and vanishes instead.
pub const MIN_JACCARD: f64 = 0.25;

/// Two code ranges of different builds pair only when the smaller share is at least this
/// fraction of the larger: a range holding the whole run is not the same as one holding a
/// third of it, whatever their labels share.
pub const MIN_SHARE_RATIO: f64 = 0.5;

/// A hot range as `rap.json` writes it (the fields the diff uses).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Range {
    /// First value.
    pub lo: u64,
    /// Last value (inclusive).
    pub hi: u64,
    /// Depth in the tree.
    #[serde(default)]
    pub depth: u32,
    /// Share of the stream's events in the range (inclusive).
    pub share: f64,
    /// Share outside hot sub-ranges.
    #[serde(default)]
    pub exclusive_share: f64,
    /// Function label (code streams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

impl Range {
    /// The function that holds most of a code range's events: the label's first name.
    pub fn head(&self) -> Option<&str> {
        let c = self.code.as_deref()?;
        c.split([' ', ',']).next().filter(|s| !s.is_empty())
    }

    /// The functions a code range's label names with their shares (`quick_sort 54%,
    /// cmp_int 37% (+9 functions)` → quick_sort 54, cmp_int 37); a label without shares
    /// names its first function at 100.
    pub fn functions(&self) -> Vec<(&str, f64)> {
        let Some(c) = self.code.as_deref() else {
            return Vec::new();
        };
        let named: Vec<(&str, f64)> = c
            .split(", ")
            .filter_map(|part| {
                let (name, rest) = part.split_once(' ')?;
                let pct = rest.split('%').next()?.parse::<f64>().ok()?;
                Some((name, pct))
            })
            .collect();
        if named.is_empty() {
            self.head().map(|h| vec![(h, 100.0)]).unwrap_or_default()
        } else {
            named
        }
    }

    /// How much two code ranges' labels agree (0–100): the shares of the functions both
    /// name, the smaller of each, summed, over the smaller of what each label names (labels
    /// name only their largest functions).
    pub fn similarity(&self, o: &Range) -> f64 {
        let (mine, theirs) = (self.functions(), o.functions());
        let common: f64 = mine
            .iter()
            .filter_map(|(f, x)| theirs.iter().find(|(g, _)| g == f).map(|(_, y)| x.min(*y)))
            .sum();
        let named = |v: &[(&str, f64)]| v.iter().map(|x| x.1).sum::<f64>();
        let base = named(&mine).min(named(&theirs));
        if base > 0.0 {
            (100.0 * common / base).min(100.0)
        } else {
            0.0
        }
    }

    /// The overlap of two ranges over their union (1: the same range, 0: disjoint).
    pub fn jaccard(&self, o: &Range) -> f64 {
        let inter = self.overlap(o);
        if inter == 0 {
            return 0.0;
        }
        let union = u128::from(self.hi - self.lo) + u128::from(o.hi - o.lo) + 2 - inter;
        inter as f64 / union as f64
    }

    fn overlap(&self, o: &Range) -> u128 {
        let lo = self.lo.max(o.lo);
        let hi = self.hi.min(o.hi);
        if lo > hi {
            0
        } else {
            u128::from(hi - lo) + 1
        }
    }
}

/// What happened to a hot range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Hot in B only.
    Appeared,
    /// Hot in A only.
    Vanished,
    /// Hot in both with different bounds.
    Moved,
    /// Hot in both with the same bounds (or, across builds, the same leading function).
    Kept,
}

/// One range of the diff.
#[derive(Clone, Debug, Serialize)]
pub struct RangeRow {
    /// What happened to it.
    pub status: Status,
    /// A's range.
    pub a: Option<Range>,
    /// B's range.
    pub b: Option<Range>,
    /// B's share minus A's (a side without the range counts 0).
    pub share_delta: f64,
}

/// One stream of the diff.
#[derive(Clone, Debug, Serialize)]
pub struct StreamDiff {
    /// Stream name.
    pub stream: String,
    /// Its thread, for per-thread trees.
    pub thread: Option<u32>,
    /// Events in A's stream.
    pub a_events: u64,
    /// Events in B's.
    pub b_events: u64,
    /// Ranges, by absolute share change.
    pub rows: Vec<RangeRow>,
}

/// The hot ranges' difference.
#[derive(Clone, Debug, Serialize)]
pub struct RangesDiff {
    /// Streams both have.
    pub streams: Vec<StreamDiff>,
    /// Streams only A has.
    pub only_a: Vec<String>,
    /// Streams only B has.
    pub only_b: Vec<String>,
}

fn stream_label(s: &str, t: Option<u32>) -> String {
    match t {
        Some(t) => format!("{s} (thread {t})"),
        None => s.to_string(),
    }
}

/// Pairs `a`'s and `b`'s hot ranges of one stream. `by_address`: addresses of code ranges
/// are comparable (the same code).
pub fn diff_stream(a: &[Range], b: &[Range], code: bool, by_address: bool) -> Vec<RangeRow> {
    let mut used_a = vec![false; a.len()];
    let mut pair_b: Vec<Option<(usize, Status)>> = vec![None; b.len()];
    let addresses = by_address || !code;
    if addresses {
        for (j, rb) in b.iter().enumerate() {
            if let Some(i) =
                (0..a.len()).find(|&i| !used_a[i] && a[i].lo == rb.lo && a[i].hi == rb.hi)
            {
                used_a[i] = true;
                pair_b[j] = Some((i, Status::Kept));
            }
        }
        // the remaining pairs that mostly overlap, the most alike first
        let mut cands: Vec<(f64, usize, usize)> = Vec::new();
        for (j, rb) in b.iter().enumerate() {
            if pair_b[j].is_some() {
                continue;
            }
            for (i, ra) in a.iter().enumerate() {
                if !used_a[i] {
                    let o = ra.jaccard(rb);
                    if o >= MIN_JACCARD {
                        cands.push((o, i, j));
                    }
                }
            }
        }
        cands.sort_by(|x, y| y.0.total_cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
        for (_, i, j) in cands {
            if !used_a[i] && pair_b[j].is_none() {
                used_a[i] = true;
                pair_b[j] = Some((i, Status::Moved));
            }
        }
    } else {
        // different builds: pair code ranges whose labels name the same functions, the most
        // alike first (then the closest share)
        let mut cands: Vec<(f64, f64, usize, usize)> = Vec::new();
        for (j, rb) in b.iter().enumerate() {
            for (i, ra) in a.iter().enumerate() {
                let sim = ra.similarity(rb);
                let ratio = ra.share.min(rb.share) / ra.share.max(rb.share).max(f64::MIN_POSITIVE);
                if sim >= MIN_SIMILARITY && ratio >= MIN_SHARE_RATIO {
                    // alike labels first; of two about as alike, the closer share
                    let d = (ra.share - rb.share).abs();
                    cands.push((sim - 50.0 * d, d, i, j));
                }
            }
        }
        cands.sort_by(|x, y| {
            y.0.total_cmp(&x.0)
                .then(x.1.total_cmp(&y.1))
                .then((x.2, x.3).cmp(&(y.2, y.3)))
        });
        for (_, _, i, j) in cands {
            if !used_a[i] && pair_b[j].is_none() {
                used_a[i] = true;
                pair_b[j] = Some((i, Status::Kept));
            }
        }
    }
    let mut rows: Vec<RangeRow> = b
        .iter()
        .zip(&pair_b)
        .map(|(rb, p)| match p {
            Some((i, st)) => RangeRow {
                status: *st,
                a: Some(a[*i].clone()),
                b: Some(rb.clone()),
                share_delta: rb.share - a[*i].share,
            },
            None => RangeRow {
                status: Status::Appeared,
                a: None,
                b: Some(rb.clone()),
                share_delta: rb.share,
            },
        })
        .collect();
    rows.extend(
        a.iter()
            .zip(&used_a)
            .filter(|(_, u)| !**u)
            .map(|(ra, _)| RangeRow {
                status: Status::Vanished,
                a: Some(ra.clone()),
                b: None,
                share_delta: -ra.share,
            }),
    );
    rows.sort_by(|x, y| {
        y.share_delta
            .abs()
            .total_cmp(&x.share_delta.abs())
            .then_with(|| {
                let k = |r: &RangeRow| r.b.as_ref().or(r.a.as_ref()).map(|r| (r.lo, r.hi));
                k(x).cmp(&k(y))
            })
    });
    rows
}

/// The hot ranges' difference of two sets of trees, stream by stream.
pub fn diff_ranges(a: &RapView, b: &RapView, by_address: bool) -> RangesDiff {
    let mut streams = Vec::new();
    let mut only_b = Vec::new();
    for sb in &b.streams {
        match a
            .streams
            .iter()
            .find(|sa| sa.stream == sb.stream && sa.thread == sb.thread)
        {
            Some(sa) => {
                let code = sb.hot.iter().chain(&sa.hot).any(|r| r.code.is_some());
                streams.push(StreamDiff {
                    stream: sb.stream.clone(),
                    thread: sb.thread,
                    a_events: sa.n,
                    b_events: sb.n,
                    rows: diff_stream(&sa.hot, &sb.hot, code, by_address),
                });
            }
            None => only_b.push(stream_label(&sb.stream, sb.thread)),
        }
    }
    let only_a = a
        .streams
        .iter()
        .filter(|sa| {
            !b.streams
                .iter()
                .any(|sb| sb.stream == sa.stream && sb.thread == sa.thread)
        })
        .map(|s| stream_label(&s.stream, s.thread))
        .collect();
    RangesDiff {
        streams,
        only_a,
        only_b,
    }
}
