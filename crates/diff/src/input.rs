//! What `outcrop diff` reads: the parts of a report directory's JSON files it compares
//! (docs/formats.md "The report directory"), parsed from bytes the caller read with a bound.
//! Unknown fields are ignored, so a newer file with more fields still reads.

use crate::Error;
use outcrop_profile::Counts;
use serde::Deserialize;

/// Which top-level keys a JSON object has, read without keeping their values (serde skips
/// them as it parses: no allocation in proportion to the file). An input that is not an
/// object has none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Keys {
    /// `profile`: absent (`None`), null (`Some(false)`) or a value (a report.json).
    pub profile: Option<bool>,
    /// `rap`: absent, null or a value (a report.json with RAP trees).
    pub rap: Option<bool>,
    /// A `tree` key (a profile.json).
    pub tree: bool,
    /// A `streams` key (a rap.json).
    pub streams: bool,
    /// The `format` string, when short (a saved RAP tree in JSON says `outcrop-rap-tree`).
    pub format: Option<String>,
}

/// A value skipped as it is parsed, remembering only whether it was null.
struct Skipped(bool);

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Skipped;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_unit<E>(self) -> Result<Skipped, E> {
                Ok(Skipped(false))
            }
            fn visit_none<E>(self) -> Result<Skipped, E> {
                Ok(Skipped(false))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Skipped, E> {
                Ok(Skipped(true))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Skipped, E> {
                Ok(Skipped(true))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Skipped, E> {
                Ok(Skipped(true))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Skipped, E> {
                Ok(Skipped(true))
            }
            fn visit_str<E>(self, _: &str) -> Result<Skipped, E> {
                Ok(Skipped(true))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Skipped, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Skipped(true))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Skipped, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Skipped(true))
            }
        }
        d.deserialize_any(V)
    }
}

/// A string kept only when short (a format name), else skipped.
struct ShortString(Option<String>);

impl<'de> Deserialize<'de> for ShortString {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ShortString;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ShortString, E> {
                Ok(ShortString((v.len() <= 64).then(|| v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

impl Keys {
    /// Whether `bytes` are JSON at all (skipped as parsed); the error names line and column.
    pub fn check_json(bytes: &[u8]) -> Result<(), Error> {
        serde_json::from_slice::<serde::de::IgnoredAny>(bytes)
            .map(drop)
            .map_err(Error::json)
    }

    /// The keys of the JSON object in `bytes`.
    pub fn of(bytes: &[u8]) -> Keys {
        /// Present, whatever its value (null included: `Option` alone would read null as
        /// absent).
        fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Skipped>, D::Error> {
            Skipped::deserialize(d).map(Some)
        }
        #[derive(Deserialize)]
        struct Seen {
            #[serde(default, deserialize_with = "present")]
            profile: Option<Skipped>,
            #[serde(default, deserialize_with = "present")]
            rap: Option<Skipped>,
            #[serde(default, deserialize_with = "present")]
            tree: Option<Skipped>,
            #[serde(default, deserialize_with = "present")]
            streams: Option<Skipped>,
            #[serde(default)]
            format: Option<ShortString>,
        }
        match serde_json::from_slice::<Seen>(bytes) {
            Ok(s) => Keys {
                profile: s.profile.map(|p| p.0),
                rap: s.rap.map(|p| p.0),
                tree: s.tree.is_some(),
                streams: s.streams.is_some(),
                format: s.format.and_then(|f| f.0),
            },
            Err(_) => Keys::default(),
        }
    }
}

/// `profile.json` (or the `profile` of `report.json`): the exact profile of one run.
#[derive(Clone, Debug, Deserialize)]
pub struct ProfileView {
    /// The program path as given.
    pub program: String,
    /// What identifies its code (absent in files written before it was recorded).
    #[serde(default)]
    pub program_id: Option<String>,
    /// Instructions retired.
    pub instructions: u64,
    /// Cycles (timing model), or null.
    #[serde(default)]
    pub cycles: Option<u64>,
    /// Every function that ran (older files: the hottest 500).
    pub functions: Vec<FunctionView>,
    /// Every source line that ran, when the program has line information.
    #[serde(default)]
    pub lines: Option<Vec<LineView>>,
    /// Instructions outside the line table.
    #[serde(default)]
    pub lines_unattributed: Option<Counts>,
    /// The call tree, `tree[0]` the root, parents before children.
    pub tree: Vec<NodeView>,
    /// Calls folded into their callers by the tree's limits.
    #[serde(default)]
    pub folded_calls: u64,
    /// Every guest thread that ran.
    #[serde(default)]
    pub threads: Vec<ThreadView>,
}

/// One guest thread of [`ProfileView`].
#[derive(Clone, Debug, Deserialize)]
pub struct ThreadView {
    /// Creation index (0: the main thread).
    pub index: u32,
    /// What it retired.
    #[serde(rename = "self")]
    pub self_counts: Counts,
}

/// One function of [`ProfileView`].
#[derive(Clone, Debug, Deserialize)]
pub struct FunctionView {
    /// Name.
    pub name: String,
    /// The name as the symbol table spells it, when demangling changed it.
    #[serde(default)]
    pub mangled: Option<String>,
    /// First byte.
    #[serde(default)]
    pub start: u64,
    /// Self counts.
    #[serde(rename = "self")]
    pub self_counts: Counts,
    /// Inclusive counts.
    pub total: Counts,
    /// Times entered.
    #[serde(default)]
    pub calls: u64,
}

/// One source line of [`ProfileView`].
#[derive(Clone, Debug, Deserialize)]
pub struct LineView {
    /// File.
    pub file: String,
    /// Line.
    pub line: u32,
    /// The function most of its instructions ran in.
    #[serde(default)]
    pub function: String,
    /// Self counts.
    #[serde(rename = "self")]
    pub self_counts: Counts,
}

/// One call-tree node of [`ProfileView`].
#[derive(Clone, Debug, Deserialize)]
pub struct NodeView {
    /// Parent node (an index smaller than the node's own; the root's is 0).
    pub parent: u32,
    /// Function name (null for the root and a thread's root).
    pub function: Option<String>,
    /// Self counts on this chain.
    #[serde(rename = "self")]
    pub self_counts: Counts,
    /// Counts on and below this chain.
    pub total: Counts,
    /// The thread whose calls reached it.
    #[serde(default)]
    pub thread: u32,
}

impl ProfileView {
    /// Parses `profile.json` bytes, or a `report.json` (its `profile`), and checks the tree:
    /// a root first, every parent before its child.
    pub fn from_json(bytes: &[u8]) -> Result<ProfileView, Error> {
        // typed all the way (no `serde_json::Value` tree, which holds 10 times its text): a
        // report.json is told apart by its keys, read without keeping their values
        #[derive(Deserialize)]
        struct Report {
            profile: Option<ProfileView>,
        }
        let p = match Keys::of(bytes).profile {
            Some(false) => return Err(Error::Input("the report has no profile (null)".into())),
            Some(true) => match serde_json::from_slice::<Report>(bytes).map_err(Error::json)? {
                Report { profile: Some(p) } => p,
                Report { profile: None } => {
                    return Err(Error::Input("the report has no profile (null)".into()))
                }
            },
            None => serde_json::from_slice::<ProfileView>(bytes).map_err(Error::json)?,
        };
        if p.tree.is_empty() {
            return Err(Error::Input(
                "the profile's call tree is empty (no root)".into(),
            ));
        }
        let mut depth = vec![0usize; p.tree.len()];
        for (i, n) in p.tree.iter().enumerate().skip(1) {
            if n.parent as usize >= i {
                return Err(Error::Input(format!(
                    "call-tree node {i} names parent {}, not an earlier node",
                    n.parent
                )));
            }
            depth[i] = depth[n.parent as usize] + 1;
            if depth[i] > crate::profile::MAX_TREE_DEPTH {
                return Err(Error::Input(format!(
                    "call-tree node {i} is {} calls deep, deeper than any profile Outcrop writes ({})",
                    depth[i],
                    crate::profile::MAX_TREE_DEPTH
                )));
            }
        }
        p.check_counts()?;
        Ok(p)
    }

    /// Every count fits a signed 64-bit difference, and so does every sum the comparison
    /// makes (each kind of count over the functions, the lines, the nodes): a count no run can
    /// have (2^64−1, or sums past 2^63−1) is a damaged or forged file, refused by name, so
    /// that B − A is always exact and A + (B − A) = B.
    fn check_counts(&self) -> Result<(), Error> {
        const MAX: u64 = i64::MAX as u64;
        let fields = |c: &Counts| {
            [
                ("instructions", c.instructions),
                ("cycles", c.cycles),
                ("mispredicts", c.mispredicts),
                ("l1i_misses", c.l1i_misses),
                ("l1d_misses", c.l1d_misses),
                ("l2_misses", c.l2_misses),
            ]
        };
        let too_big = |what: String, v: u64| {
            Error::Input(format!(
                "{what} is {v}, more than any run counts (2^63−1): the file is damaged"
            ))
        };
        if self.instructions > MAX {
            return Err(too_big("`instructions`".into(), self.instructions));
        }
        if let Some(c) = self.cycles.filter(|&c| c > MAX) {
            return Err(too_big("`cycles`".into(), c));
        }
        if let Some(c) = self.functions.iter().map(|f| f.calls).find(|&c| c > MAX) {
            return Err(too_big("a function's `calls`".into(), c));
        }
        let groups: [(&str, Vec<&Counts>); 4] = [
            (
                "functions' self",
                self.functions.iter().map(|f| &f.self_counts).collect(),
            ),
            (
                "lines' self",
                self.lines
                    .iter()
                    .flatten()
                    .map(|l| &l.self_counts)
                    .collect(),
            ),
            (
                "call-tree nodes' self",
                self.tree.iter().map(|n| &n.self_counts).collect(),
            ),
            (
                "threads' self",
                self.threads.iter().map(|t| &t.self_counts).collect(),
            ),
        ];
        for (group, counts) in groups {
            let mut sums = [0u64; 6];
            for c in counts {
                for (k, (name, v)) in fields(c).into_iter().enumerate() {
                    sums[k] = sums[k]
                        .checked_add(v)
                        .filter(|&s| s <= MAX)
                        .ok_or_else(|| {
                            Error::Input(format!(
                                "the {group} `{name}` add up to more than any run counts (2^63−1): the file is damaged"
                            ))
                        })?;
                }
            }
        }
        for (i, c) in self
            .functions
            .iter()
            .map(|f| &f.total)
            .chain(self.tree.iter().map(|n| &n.total))
            .enumerate()
        {
            if let Some((name, v)) = fields(c).into_iter().find(|&(_, v)| v > MAX) {
                return Err(too_big(format!("total `{name}` of entry {i}"), v));
            }
        }
        Ok(())
    }

    /// Whether a timing model counted cycles.
    pub fn timed(&self) -> bool {
        self.cycles.is_some()
    }

    /// The profile as [`outcrop_profile::Profile`] again (functions named by the call tree,
    /// no per-instruction counts), so its exports can be written from the JSON alone.
    pub fn to_profile(&self) -> outcrop_profile::Profile {
        use outcrop_profile::{Function, ThreadCounts, TreeNode};
        let mut index: rustc_hash::FxHashMap<&str, u32> = rustc_hash::FxHashMap::default();
        let mut functions: Vec<Function> = Vec::new();
        let mut nodes = Vec::with_capacity(self.tree.len());
        for n in &self.tree {
            let function = n.function.as_deref().map(|name| {
                *index.entry(name).or_insert_with(|| {
                    let f = self.functions.iter().find(|f| f.name == name);
                    functions.push(Function {
                        name: name.to_string(),
                        mangled: f.and_then(|f| f.mangled.clone()),
                        start: f.map_or(0, |f| f.start),
                        size: 0,
                        self_counts: f.map_or(Counts::default(), |f| f.self_counts),
                        total_counts: f.map_or(Counts::default(), |f| f.total),
                        calls: f.map_or(0, |f| f.calls),
                    });
                    (functions.len() - 1) as u32
                })
            });
            nodes.push(TreeNode {
                parent: n.parent,
                function,
                self_counts: n.self_counts,
                total_counts: n.total,
                calls: 0,
                thread: n.thread,
            });
        }
        let mut threads: Vec<ThreadCounts> = self
            .threads
            .iter()
            .map(|t| ThreadCounts {
                index: t.index,
                root: self
                    .tree
                    .iter()
                    .position(|n| t.index != 0 && n.function.is_none() && n.thread == t.index)
                    .unwrap_or(0) as u32,
                counts: t.self_counts,
            })
            .collect();
        if threads.is_empty() {
            threads.push(ThreadCounts {
                index: 0,
                root: 0,
                counts: self.totals(),
            });
        }
        outcrop_profile::Profile {
            instructions: self.instructions,
            timed: self.timed(),
            functions,
            nodes,
            folded_calls: self.folded_calls,
            threads,
            pcs: Vec::new(),
            timeline: outcrop_profile::Timeline::default(),
        }
    }

    /// The run's counts (the sum of every node's self counts).
    pub fn totals(&self) -> Counts {
        let mut c = Counts::default();
        for n in &self.tree {
            crate::profile::add(&mut c, &n.self_counts);
        }
        c
    }
}

/// `run.json`: the run's statistics.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct RunView {
    /// The program path as given.
    #[serde(default)]
    pub program: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Instructions retired.
    #[serde(default)]
    pub instructions: u64,
    /// How it ended.
    #[serde(default)]
    pub outcome: String,
    /// Whether the guest did not exit by itself.
    #[serde(default)]
    pub truncated: bool,
    /// The mechanisms that ran.
    #[serde(default)]
    pub mechanisms: Vec<String>,
    /// Where imported samples came from (null for a run of the machine).
    #[serde(default)]
    pub sampled: Option<String>,
    /// The timing model's totals, as written (`cycles`, `ipc`, the caches, `cpi_stack`…).
    #[serde(default)]
    pub timing: Option<serde_json::Map<String, serde_json::Value>>,
}

impl RunView {
    /// Parses `run.json` bytes.
    pub fn from_json(bytes: &[u8]) -> Result<RunView, Error> {
        serde_json::from_slice(bytes).map_err(Error::json)
    }
}

/// `rap.json` (or the `rap` of `report.json`): the hot ranges of each RAP stream.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct RapView {
    /// One per stream (and per thread with `--rap-per-thread`).
    pub streams: Vec<StreamView>,
}

/// One stream of [`RapView`].
#[derive(Clone, Debug, Deserialize)]
pub struct StreamView {
    /// Stream name (`block`, `l1d-miss-value`…).
    pub stream: String,
    /// The thread whose events alone the tree holds, if any.
    #[serde(default)]
    pub thread: Option<u32>,
    /// Events in the stream.
    pub n: u64,
    /// Hot ranges in pre-order.
    pub hot: Vec<crate::ranges::Range>,
}

impl RapView {
    /// Parses `rap.json` bytes, or a `report.json` (its `rap`).
    pub fn from_json(bytes: &[u8]) -> Result<RapView, Error> {
        #[derive(Deserialize)]
        struct Report {
            rap: Option<RapView>,
        }
        match Keys::of(bytes).rap {
            Some(false) => Err(Error::Input("the report has no RAP trees (null)".into())),
            Some(true) => match serde_json::from_slice::<Report>(bytes).map_err(Error::json)? {
                Report { rap: Some(r) } => Ok(r),
                Report { rap: None } => {
                    Err(Error::Input("the report has no RAP trees (null)".into()))
                }
            },
            None => serde_json::from_slice::<RapView>(bytes).map_err(Error::json),
        }
    }
}
