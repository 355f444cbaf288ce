//! `outcrop-diff`: what changed between two profiles of Outcrop (`outcrop diff A B`).
//!
//! * [`profile`]: per function, source line and call path, the change in instructions and,
//!   when both runs were timed, cycles, mispredictions and cache misses. Every row carries
//!   A's counts, B's and the difference, so A + diff = B on every row, and the rows of a
//!   table sum to the run's totals on both sides. The same code (equal program ids) is
//!   matched by address; different builds by symbol name and by file and line, and the rows
//!   one side lacks are marked.
//! * [`timing`]: the timing model's totals and CPI stack, cause by cause.
//! * [`ranges`]: RAP hot ranges that appeared, vanished, moved or kept their place.
//! * [`paths`]: hot paths gained and lost, and path shares by function.
//!
//! Inputs are the report directory's own JSON files ([`input`]), parsed from bytes; this
//! crate reads no file. docs/diff.md describes the matching rules.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod input;
pub mod paths;
pub mod profile;
pub mod ranges;
pub mod timing;

pub use input::{Keys, ProfileView, RapView, RunView};
pub use profile::{diff_profiles, ProfileDiff};

use outcrop_profile::Counts;
use serde::Serialize;

/// Why two inputs cannot be compared, or one cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file's content is not what the diff reads.
    #[error("{0}")]
    Input(String),
    /// The two sides are not two profiles of the same program (`--force` compares them
    /// anyway).
    #[error("{0}")]
    NotComparable(String),
}

impl Error {
    fn json(e: serde_json::Error) -> Error {
        if e.line() == 0 {
            return Error::Input(format!("not the JSON expected: {e}"));
        }
        Error::Input(format!(
            "not the JSON expected, at line {} column {}: {e}",
            e.line(),
            e.column()
        ))
    }
}

/// Counts of B minus counts of A, field by field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Delta {
    /// Retired instructions.
    pub instructions: i64,
    /// Cycles.
    pub cycles: i64,
    /// Mispredicted branches and jumps.
    pub mispredicts: i64,
    /// L1 instruction-cache misses.
    pub l1i_misses: i64,
    /// L1 data-cache misses.
    pub l1d_misses: i64,
    /// L2 misses.
    pub l2_misses: i64,
}

/// `b - a`, saturated to `i64`.
pub fn signed(a: u64, b: u64) -> i64 {
    let d = i128::from(b) - i128::from(a);
    i64::try_from(d).unwrap_or(if d > 0 { i64::MAX } else { i64::MIN })
}

impl Delta {
    /// `b - a`.
    pub fn between(a: &Counts, b: &Counts) -> Delta {
        Delta {
            instructions: signed(a.instructions, b.instructions),
            cycles: signed(a.cycles, b.cycles),
            mispredicts: signed(a.mispredicts, b.mispredicts),
            l1i_misses: signed(a.l1i_misses, b.l1i_misses),
            l1d_misses: signed(a.l1d_misses, b.l1d_misses),
            l2_misses: signed(a.l2_misses, b.l2_misses),
        }
    }

    /// The field a diff is sorted by.
    pub fn of(&self, w: Weight) -> i64 {
        match w {
            Weight::Instructions => self.instructions,
            Weight::Cycles => self.cycles,
        }
    }
}

/// What rows are sorted by and flame graphs are sized by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Weight {
    /// Retired instructions (when either run was not timed).
    Instructions,
    /// Cycles (both runs timed).
    Cycles,
}

impl Weight {
    /// `counts`' field of this weight.
    pub fn of(self, c: &Counts) -> u64 {
        match self {
            Weight::Instructions => c.instructions,
            Weight::Cycles => c.cycles,
        }
    }

    /// `instructions` or `cycles`.
    pub fn name(self) -> &'static str {
        match self {
            Weight::Instructions => "instructions",
            Weight::Cycles => "cycles",
        }
    }
}

/// Which side a row was found on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    /// In both: matched.
    Both,
    /// Only in A (gone from B: removed, renamed or inlined).
    OnlyA,
    /// Only in B (new).
    OnlyB,
}

impl Presence {
    fn of(a: bool, b: bool) -> Presence {
        match (a, b) {
            (true, false) => Presence::OnlyA,
            (false, true) => Presence::OnlyB,
            _ => Presence::Both,
        }
    }

    /// `both`, `only A`, `only B`.
    pub fn label(self) -> &'static str {
        match self {
            Presence::Both => "both",
            Presence::OnlyA => "only A",
            Presence::OnlyB => "only B",
        }
    }
}

/// How rows of A and B were matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Matching {
    /// The same code (equal program ids): functions by name and address.
    Address,
    /// Different builds: functions by name, lines by file and line.
    Symbol,
}

/// `part / whole` in percent (0 for an empty whole).
pub fn pct(part: f64, whole: f64) -> f64 {
    if whole == 0.0 {
        0.0
    } else {
        100.0 * part / whole
    }
}

/// What one side of a diff holds: whichever of a report directory's results were found.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// What the user named (a directory or a file).
    pub label: String,
    /// The exact profile.
    pub profile: Option<ProfileView>,
    /// The run's statistics.
    pub run: Option<RunView>,
    /// RAP hot ranges.
    pub rap: Option<RapView>,
    /// Paths estimated from branch-record samples, every one with its share.
    pub paths: Option<Vec<paths::PathIn>>,
    /// Whole-program paths, every one with its share.
    pub wpp_paths: Option<Vec<paths::PathIn>>,
}

impl Inputs {
    fn has(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.profile.is_some() {
            v.push("profile");
        }
        if self.run.as_ref().is_some_and(|r| r.timing.is_some()) {
            v.push("timing");
        }
        if self.rap.is_some() {
            v.push("rap");
        }
        if self.paths.is_some() {
            v.push("paths");
        }
        if self.wpp_paths.is_some() {
            v.push("wpp");
        }
        v
    }
}

/// Options of [`compare`].
#[derive(Clone, Copy, Debug)]
pub struct CompareOptions {
    /// The profile's options.
    pub profile: profile::Options,
    /// The share at which a path is hot.
    pub hot: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            profile: profile::Options::default(),
            hot: 0.01,
        }
    }
}

/// `outcrop diff`'s result (its `--json`): B against A, mechanism by mechanism, for the
/// mechanisms both sides have.
#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    /// A as named.
    pub a: String,
    /// B as named.
    pub b: String,
    /// The exact profiles' difference.
    pub profile: Option<ProfileDiff>,
    /// The timing totals' and CPI stacks' difference.
    pub timing: Option<timing::TimingDiff>,
    /// The RAP hot ranges' difference.
    pub ranges: Option<ranges::RangesDiff>,
    /// The hot paths' difference, from branch-record samples.
    pub paths: Option<paths::PathsDiff>,
    /// The hot paths' difference, from whole-program paths.
    pub wpp_paths: Option<paths::PathsDiff>,
    /// What one side has and the other lacks, and other things a reader should know.
    pub notes: Vec<String>,
}

const HOW: &[(&str, &str)] = &[
    ("profile", "every `outcrop run` records it"),
    ("timing", "run it with --timing"),
    ("rap", "run it with --rap STREAMS"),
    ("paths", "run it with --paths N"),
    ("wpp", "run it with --wpp FILE (or --report DIR)"),
];

/// Compares B against A for every mechanism both have; notes what only one has. Errors
/// when they have nothing in common, or (unless forced) when their profiles look like
/// different programs.
pub fn compare(a: &Inputs, b: &Inputs, o: CompareOptions) -> Result<Diff, Error> {
    let (ha, hb) = (a.has(), b.has());
    if !ha.iter().any(|m| hb.contains(m)) {
        return Err(Error::NotComparable(format!(
            "A ({}) and B ({}) share no mechanism: A has {}, B has {}",
            a.label,
            b.label,
            if ha.is_empty() {
                "nothing Outcrop reads".to_string()
            } else {
                ha.join(", ")
            },
            if hb.is_empty() {
                "nothing Outcrop reads".to_string()
            } else {
                hb.join(", ")
            },
        )));
    }
    let mut notes = Vec::new();
    for (m, how) in HOW {
        match (ha.contains(m), hb.contains(m)) {
            (true, false) => {
                notes.push(format!("{m}: only A has it; B not compared there ({how})"))
            }
            (false, true) => {
                notes.push(format!("{m}: only B has it; A not compared there ({how})"))
            }
            _ => {}
        }
    }
    for (s, i) in [("A", a), ("B", b)] {
        if let Some(r) = &i.run {
            if r.truncated {
                notes.push(format!(
                    "{s} did not finish ({}): its counts cover part of the run",
                    r.outcome
                ));
            }
            if let Some(how) = &r.sampled {
                notes.push(format!("{s}'s counts are sampled ({how}), not exact"));
            }
        }
    }
    let profile = match (&a.profile, &b.profile) {
        (Some(x), Some(y)) => Some(diff_profiles(x, y, o.profile)?),
        _ => None,
    };
    let by_address = match &profile {
        Some(p) => p.matching == Matching::Address,
        None => true,
    };
    let timing = match (&a.run, &b.run) {
        (Some(x), Some(y)) => timing::diff_timing(x, y),
        _ => None,
    };
    let ranges = match (&a.rap, &b.rap) {
        (Some(x), Some(y)) => Some(ranges::diff_ranges(x, y, by_address)),
        _ => None,
    };
    let paths = match (&a.paths, &b.paths) {
        (Some(x), Some(y)) => Some(paths::diff_paths(x, y, o.hot)),
        _ => None,
    };
    let wpp_paths = match (&a.wpp_paths, &b.wpp_paths) {
        (Some(x), Some(y)) => Some(paths::diff_paths(x, y, o.hot)),
        _ => None,
    };
    if !by_address && (paths.is_some() || wpp_paths.is_some()) {
        notes.push("paths are identified by their blocks' addresses, which differ between builds: read the path shares by function".to_string());
    }
    Ok(Diff {
        a: a.label.clone(),
        b: b.label.clone(),
        profile,
        timing,
        ranges,
        paths,
        wpp_paths,
        notes,
    })
}
