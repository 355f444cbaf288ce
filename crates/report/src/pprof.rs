//! The exact profile as pprof's `profile.proto` (gzip-compressed protocol buffers), the format
//! `go tool pprof`, Pyroscope, Parca and Google-Wide Profiling store (docs/formats.md, "pprof").
//!
//! One sample per call chain that retired anything (a node of the call tree with self
//! instructions), its locations leaf first, its values the chain's self instructions (and
//! cycles, when timed): exact counts, so the sample values sum to the run's instructions. One
//! location and one function per function of the profile (a call tree carries no addresses
//! below the function). A guest with several threads gets a `thread` label per sample.
//! Deterministic: the gzip header carries no time and names no file.

use outcrop_profile::Profile;
use prost::Message;
use std::collections::HashMap;

// profile.proto (github.com/google/pprof/proto/profile.proto), the fields written here.

#[derive(Clone, PartialEq, Message)]
struct PProfile {
    #[prost(message, repeated, tag = "1")]
    sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    string_table: Vec<String>,
    #[prost(message, optional, tag = "11")]
    period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    period: i64,
    #[prost(int64, repeated, tag = "13")]
    comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    default_sample_type: i64,
}

#[derive(Clone, PartialEq, Message)]
struct ValueType {
    #[prost(int64, tag = "1")]
    r#type: i64,
    #[prost(int64, tag = "2")]
    unit: i64,
}

#[derive(Clone, PartialEq, Message)]
struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    label: Vec<Label>,
}

#[derive(Clone, PartialEq, Message)]
struct Label {
    #[prost(int64, tag = "1")]
    key: i64,
    #[prost(int64, tag = "3")]
    num: i64,
}

#[derive(Clone, PartialEq, Message)]
struct Mapping {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(uint64, tag = "2")]
    memory_start: u64,
    #[prost(uint64, tag = "3")]
    memory_limit: u64,
    #[prost(int64, tag = "5")]
    filename: i64,
    #[prost(bool, tag = "7")]
    has_functions: bool,
}

#[derive(Clone, PartialEq, Message)]
struct Location {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(uint64, tag = "2")]
    mapping_id: u64,
    #[prost(uint64, tag = "3")]
    address: u64,
    #[prost(message, repeated, tag = "4")]
    line: Vec<Line>,
}

#[derive(Clone, PartialEq, Message)]
struct Line {
    #[prost(uint64, tag = "1")]
    function_id: u64,
}

#[derive(Clone, PartialEq, Message)]
struct Function {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(int64, tag = "2")]
    name: i64,
    #[prost(int64, tag = "3")]
    system_name: i64,
}

/// Strings by index (index 0 is the empty string, as the format requires).
#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.get("");
        s
    }
    fn get(&mut self, v: &str) -> i64 {
        if let Some(&i) = self.index.get(v) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(v.to_string());
        self.index.insert(v.to_string(), i);
        i
    }
}

/// `profile` as a gzip-compressed `profile.proto`; `name` is the program (the mapping's file).
pub fn pprof(profile: &Profile, name: &str) -> Vec<u8> {
    let mut s = Strings::new();
    let count = s.get("count");
    let mut sample_type = vec![ValueType {
        r#type: s.get("instructions"),
        unit: count,
    }];
    if profile.timed {
        sample_type.push(ValueType {
            r#type: s.get("cycles"),
            unit: count,
        });
    }
    // the program's mapping spans every function with an address
    let placed = profile.functions.iter().filter(|f| f.size > 0);
    let lo = placed.clone().map(|f| f.start).min().unwrap_or(0);
    let hi = placed
        .map(|f| f.start.saturating_add(f.size))
        .max()
        .unwrap_or(0);
    let mapping = vec![Mapping {
        id: 1,
        memory_start: lo,
        memory_limit: hi,
        filename: s.get(name),
        has_functions: true,
    }];
    let mut function = Vec::with_capacity(profile.functions.len());
    let mut location = Vec::with_capacity(profile.functions.len());
    for (i, f) in profile.functions.iter().enumerate() {
        let id = i as u64 + 1;
        let n = s.get(&f.name);
        let system_name = f.mangled.as_deref().map_or(n, |m| s.get(m));
        function.push(Function {
            id,
            name: n,
            system_name,
        });
        location.push(Location {
            id,
            mapping_id: 1,
            address: f.start,
            line: vec![Line { function_id: id }],
        });
    }
    let threaded = profile.threads.len() > 1;
    let thread_key = s.get("thread");
    let mut sample = Vec::new();
    for (i, n) in profile.nodes.iter().enumerate().skip(1) {
        let c = &n.self_counts;
        if c.instructions == 0 && c.cycles == 0 {
            continue;
        }
        let mut stack = profile.stack(i as u32);
        stack.reverse(); // leaf first
        let mut value = vec![c.instructions as i64];
        if profile.timed {
            value.push(c.cycles as i64);
        }
        sample.push(Sample {
            location_id: stack.iter().map(|&f| u64::from(f) + 1).collect(),
            value,
            label: if threaded {
                vec![Label {
                    key: thread_key,
                    num: i64::from(n.thread),
                }]
            } else {
                Vec::new()
            },
        });
    }
    let comment =
        vec![s.get("outcrop exact profile: every retired instruction counted, not sampled")];
    let p = PProfile {
        period_type: sample_type.first().cloned(),
        sample_type,
        sample,
        mapping,
        location,
        function,
        period: 1,
        comment,
        default_sample_type: 0,
        string_table: s.table,
    };
    let bytes = p.encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // writing to a Vec cannot fail
    let _ = std::io::Write::write_all(&mut gz, &bytes);
    gz.finish().unwrap_or_default()
}
