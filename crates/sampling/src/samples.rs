//! The samples file: the aggregated branch-record samples of one run (paper §3.1: "stored in
//! a hash table that collects and aggregates duplicate traces ... written to a file").
//!
//! A line-oriented text file (documented in docs/formats.md):
//!
//! ```text
//! outcrop-branch-samples 2
//! program workloads/bin/fft
//! program-id build-id:22a7223a46aeb3dfc1947a7b2ac90430db766c78
//! entries 4
//! period 1000000
//! unit instructions
//! random-period no
//! filter taken
//! seed 1
//! skew 0 8
//! drop-target 0
//! handler-cycles 7500
//! instructions 123456789
//! cycles 0
//! samples 123
//! recorded 4567890
//! traces 2
//! trace 100 0x10a4c>0x10a30 0x10a4c>0x10a30 0x10a4c>0x10a30 0x10a5e>0x10a72
//! trace 23 0x10a4c>0x10a30 0x10a4c>0x10a30 0x10a5e>0x10a72 0x10a80>0x10230
//! end
//! ```
//!
//! Each `trace` line is a count and the records, oldest first, `from>to` in hex (`to` 0 for a
//! lost target). Header keys appear once each, in this order; `end` marks a complete file.
//! Version 1 files (no `program-id` line) are still read. A run of a dynamically linked
//! program writes version 3: after `program-id`, `objects N` and N lines
//! `object START LEN OFFSET BUILD-ID PATH` (hex numbers; `-` for no build-id; the path as the
//! guest opened it, to the end of the line), one per object mapped executable, the program
//! first.

use crate::error::{Error, Result};
use crate::lbr::{Filter, LbrConfig, PeriodUnit, Record};
use rustc_hash::FxHashMap;
use std::fmt::Write as _;

/// The most entries a samples file's branch-record unit may say it has.
const MAX_FILE_ENTRIES: u64 = 1 << 20;
/// The first line of files that list the objects of a dynamically linked program (version 3:
/// an `objects N` line and N `object` lines after `program-id`).
pub const MAGIC_V3: &str = "outcrop-branch-samples 3";
/// The first line of files of static programs (version 2; no object lines).
pub const MAGIC: &str = "outcrop-branch-samples 2";
/// Most `object` lines a file may have.
pub const MAX_OBJECTS: u64 = 4096;
/// The first line of version 1 files (no `program-id`).
pub const MAGIC_V1: &str = "outcrop-branch-samples 1";

/// What a samples file says about its run.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// The program as given to `paths record`.
    pub program: String,
    /// What identifies the program's code (`build-id:…` or `sha256:…`, see
    /// `outcrop_rv::elf::program_id`); empty in version 1 files.
    pub program_id: String,
    /// The objects mapped executable (the program first) when the program was dynamically
    /// linked; empty otherwise.
    pub objects: Vec<SampledObject>,
    /// The unit's configuration.
    pub config: LbrConfig,
    /// Instructions the run retired.
    pub instructions: u64,
    /// Cycles of the timing model (0 when the run was untimed).
    pub cycles: u64,
    /// Samples taken.
    pub samples: u64,
    /// Branches the buffer recorded.
    pub recorded: u64,
}

/// An object mapped executable during the sampled run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SampledObject {
    /// The path the guest opened it by.
    pub path: String,
    /// Its GNU build-id in hex (empty if none).
    pub build_id: String,
    /// The lowest address mapped.
    pub start: u64,
    /// The mapping's length.
    pub len: u64,
    /// The file offset mapped at `start`.
    pub offset: u64,
}

/// Aggregated samples.
#[derive(Clone, Debug, PartialEq)]
pub struct Samples {
    /// The run.
    pub meta: Meta,
    /// Distinct traces (records oldest first) and how often each was sampled.
    pub traces: FxHashMap<Vec<Record>, u64>,
}

impl Samples {
    /// Modelled overhead: samples × handler cycles ÷ run cycles (retired instructions when
    /// the run was untimed, i.e. CPI 1 assumed).
    pub fn overhead(&self) -> f64 {
        let base = if self.meta.cycles > 0 {
            self.meta.cycles
        } else {
            self.meta.instructions
        };
        if base == 0 {
            return 0.0;
        }
        (self.meta.samples as f64 * self.meta.config.handler_cycles as f64) / base as f64
    }

    /// Traces in file order: most frequent first, ties by records.
    pub fn sorted(&self) -> Vec<(&Vec<Record>, u64)> {
        let mut v: Vec<(&Vec<Record>, u64)> = self.traces.iter().map(|(k, c)| (k, *c)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v
    }

    /// Adds another run's samples (paper §4.4, aggregating runs). Counts come from files, so
    /// they saturate rather than wrap.
    pub fn merge(&mut self, other: &Samples) {
        for (t, c) in &other.traces {
            let n = self.traces.entry(t.clone()).or_default();
            *n = n.saturating_add(*c);
        }
        let (m, o) = (&mut self.meta, &other.meta);
        m.samples = m.samples.saturating_add(o.samples);
        m.recorded = m.recorded.saturating_add(o.recorded);
        m.instructions = m.instructions.saturating_add(o.instructions);
        m.cycles = m.cycles.saturating_add(o.cycles);
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let m = &self.meta;
        let c = &m.config;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{}",
            if m.objects.is_empty() {
                MAGIC
            } else {
                MAGIC_V3
            }
        );
        let program: String = m
            .program
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let _ = writeln!(s, "program {program}");
        let id: String = m
            .program_id
            .chars()
            .filter(|c| c.is_ascii_graphic())
            .collect();
        let _ = writeln!(s, "program-id {id}");
        if !m.objects.is_empty() {
            let _ = writeln!(s, "objects {}", m.objects.len());
            for o in &m.objects {
                let id: String = o
                    .build_id
                    .chars()
                    .filter(|c| c.is_ascii_hexdigit())
                    .collect();
                let path: String = o
                    .path
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect();
                let _ = writeln!(
                    s,
                    "object {:#x} {:#x} {:#x} {} {path}",
                    o.start,
                    o.len,
                    o.offset,
                    if id.is_empty() { "-" } else { &id }
                );
            }
        }
        let _ = writeln!(s, "entries {}", c.entries);
        let _ = writeln!(s, "period {}", c.period);
        let _ = writeln!(
            s,
            "unit {}",
            match c.unit {
                PeriodUnit::Instructions => "instructions",
                PeriodUnit::Cycles => "cycles",
            }
        );
        let _ = writeln!(s, "random-period {}", if c.random { "yes" } else { "no" });
        let _ = writeln!(
            s,
            "filter {}",
            match c.filter {
                Filter::Taken => "taken",
                Filter::All => "all",
            }
        );
        let _ = writeln!(s, "seed {}", c.seed);
        let _ = writeln!(s, "skew {} {}", c.skew, c.skew_bytes);
        let _ = writeln!(s, "drop-target {}", c.drop_target);
        let _ = writeln!(s, "handler-cycles {}", c.handler_cycles);
        let _ = writeln!(s, "instructions {}", m.instructions);
        let _ = writeln!(s, "cycles {}", m.cycles);
        let _ = writeln!(s, "samples {}", m.samples);
        let _ = writeln!(s, "recorded {}", m.recorded);
        let _ = writeln!(s, "traces {}", self.traces.len());
        for (t, n) in self.sorted() {
            let _ = write!(s, "trace {n}");
            for r in t {
                let _ = write!(s, " {:#x}>{:#x}", r.from, r.to);
            }
            s.push('\n');
        }
        s.push_str("end\n");
        s
    }

    /// Parses a samples file: the magic line, the program and its objects, the unit's
    /// configuration and counts, then the traces up to `end`. Errors name the line.
    pub fn parse(text: &str) -> Result<Samples> {
        let mut c = Lines {
            lines: Box::new(text.lines().enumerate().map(|(i, l)| (i + 1, l))),
            eof: text.lines().count() + 1,
        };
        let version = match c.lines.next() {
            Some((_, l)) if l == MAGIC_V3 => 3,
            Some((_, l)) if l == MAGIC => 2,
            Some((_, l)) if l == MAGIC_V1 => 1,
            Some((n, l)) => {
                return Err(fail(
                    n,
                    format!("expected {MAGIC:?}, found {:?}", truncate(l)),
                ))
            }
            None => return Err(fail(1, "empty file".into())),
        };
        let (pn, program) = c.field("program")?;
        if program.chars().any(char::is_control) {
            return Err(fail(pn, "the program name has control characters".into()));
        }
        let program_id = if version >= 2 {
            let (n, id) = c.field("program-id")?;
            if !id.chars().all(|c| c.is_ascii_graphic()) {
                return Err(fail(n, "the program id must be printable ASCII".into()));
            }
            id
        } else {
            String::new()
        };
        let objects = if version >= 3 {
            c.objects()?
        } else {
            Vec::new()
        };
        let config = c.config()?;
        let instructions = c.num("instructions")?.1;
        let cycles = c.num("cycles")?.1;
        let (samples_line, samples) = c.num("samples")?;
        let recorded = c.num("recorded")?.1;
        let (tn, ntraces) = c.num("traces")?;
        config.validate().map_err(|e| fail(tn, e.to_string()))?;
        let (traces, total) = c.traces(config.entries)?;
        if traces.len() as u64 != ntraces {
            return Err(fail(
                tn,
                format!("says {ntraces} traces, the file has {}", traces.len()),
            ));
        }
        if total != samples {
            return Err(fail(
                samples_line,
                format!("header says {samples} samples, the traces count {total}"),
            ));
        }
        Ok(Samples {
            meta: Meta {
                program,
                program_id,
                objects,
                config,
                instructions,
                cycles,
                samples,
                recorded,
            },
            traces,
        })
    }
}

/// An error at `line`.
fn fail(line: usize, detail: String) -> Error {
    Error::Samples { line, detail }
}

/// The samples file's lines, numbered, read in order: the parser's shared cursor.
struct Lines<'a> {
    lines: Box<dyn Iterator<Item = (usize, &'a str)> + 'a>,
    /// Where a truncated file ends: the line after its last.
    eof: usize,
}

impl Lines<'_> {
    /// The next line, which must be `KEY VALUE`: its number and value.
    fn field(&mut self, key: &str) -> Result<(usize, String)> {
        match self.lines.next() {
            Some((n, l)) => match l.split_once(' ') {
                Some((k, v)) if k == key => Ok((n, v.to_string())),
                _ => Err(fail(
                    n,
                    format!("expected `{key} ...`, found {:?}", truncate(l)),
                )),
            },
            None => Err(fail(self.eof, format!("file ends before `{key}`"))),
        }
    }

    /// A `KEY NUMBER` line.
    fn num(&mut self, key: &str) -> Result<(usize, u64)> {
        let (n, v) = self.field(key)?;
        Ok((n, number(n, &v, key)?))
    }

    /// A `KEY WORD` line whose word is one of `choices`: its value.
    fn choice<T: Copy>(&mut self, key: &str, choices: &[(&str, T)]) -> Result<T> {
        let (n, v) = self.field(key)?;
        choices
            .iter()
            .find(|(w, _)| *w == v)
            .map(|&(_, t)| t)
            .ok_or_else(|| {
                let words: Vec<&str> = choices.iter().map(|(w, _)| *w).collect();
                fail(
                    n,
                    format!(
                        "{key} must be {}, not {:?}",
                        words.join(" or "),
                        truncate(&v)
                    ),
                )
            })
    }

    /// The `objects N` line and its N `object …` lines (version 3).
    fn objects(&mut self) -> Result<Vec<SampledObject>> {
        let (n, count) = self.field("objects")?;
        let count = count
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|&c| c <= MAX_OBJECTS)
            .ok_or_else(|| {
                fail(
                    n,
                    format!(
                        "objects: not a count of at most {MAX_OBJECTS}: {:?}",
                        truncate(&count)
                    ),
                )
            })?;
        let mut objects = Vec::new();
        for _ in 0..count {
            let (n, v) = self.field("object")?;
            objects.push(object(n, &v)?);
        }
        Ok(objects)
    }

    /// The branch-record unit's configuration, `entries` to `handler-cycles`.
    fn config(&mut self) -> Result<LbrConfig> {
        let (entries_line, entries) = self.num("entries")?;
        if entries == 0 || entries > MAX_FILE_ENTRIES {
            return Err(fail(
                entries_line,
                format!(
                    "entries {entries}: a branch-record unit has 1 to {MAX_FILE_ENTRIES} entries"
                ),
            ));
        }
        let period = self.num("period")?.1;
        let unit = self.choice(
            "unit",
            &[
                ("instructions", PeriodUnit::Instructions),
                ("cycles", PeriodUnit::Cycles),
            ],
        )?;
        let random = self.choice("random-period", &[("yes", true), ("no", false)])?;
        let filter = self.choice("filter", &[("taken", Filter::Taken), ("all", Filter::All)])?;
        let seed = self.num("seed")?.1;
        let (n, skew) = self.field("skew")?;
        let (skew, skew_bytes) = match skew.split_once(' ') {
            Some((p, b)) => (probability(n, p, "skew")?, number(n, b, "skew bytes")?),
            None => return Err(fail(n, "skew needs a probability and a byte count".into())),
        };
        let (n, d) = self.field("drop-target")?;
        let drop_target = probability(n, &d, "drop-target")?;
        let handler_cycles = self.num("handler-cycles")?.1;
        Ok(LbrConfig {
            entries: entries as usize,
            period,
            unit,
            random,
            seed,
            filter,
            skew,
            skew_bytes,
            drop_target,
            handler_cycles,
        })
    }

    /// The `trace COUNT from>to…` lines up to `end` (nothing after it): the traces and the
    /// sum of their counts.
    fn traces(&mut self, entries: usize) -> Result<(FxHashMap<Vec<Record>, u64>, u64)> {
        let mut traces: FxHashMap<Vec<Record>, u64> = FxHashMap::default();
        let mut total = 0u64;
        loop {
            let Some((n, l)) = self.lines.next() else {
                return Err(fail(
                    self.eof,
                    "file ends without `end` (truncated?)".into(),
                ));
            };
            if l == "end" {
                if let Some((n, _)) = self.lines.next() {
                    return Err(fail(n, "text after `end`".into()));
                }
                return Ok((traces, total));
            }
            let (count, recs) = trace(n, l, entries)?;
            if traces.insert(recs, count).is_some() {
                return Err(fail(n, "the same trace appears twice".into()));
            }
            total = total.saturating_add(count);
        }
    }
}

/// `v` as a number, or an error naming `what` at line `n`.
fn number(n: usize, v: &str, what: &str) -> Result<u64> {
    v.trim()
        .parse::<u64>()
        .map_err(|_| fail(n, format!("{what}: not a number: {:?}", truncate(v))))
}

/// `v` as a probability in [0, 1], or an error naming `what` at line `n`.
fn probability(n: usize, v: &str, what: &str) -> Result<f64> {
    match v.trim().parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(fail(
            n,
            format!("{what}: not a probability: {:?}", truncate(v)),
        )),
    }
}

/// An `object START LEN OFFSET BUILD-ID PATH` line's value.
fn object(n: usize, v: &str) -> Result<SampledObject> {
    let bad = || {
        fail(
            n,
            format!(
                "object: expected START LEN OFFSET BUILD-ID PATH, found {:?}",
                truncate(v)
            ),
        )
    };
    let parts: Vec<&str> = v.splitn(5, ' ').collect();
    let [start, len, offset, id, path] = parts[..] else {
        return Err(bad());
    };
    let (Some(start), Some(len), Some(offset)) = (hex(start), hex(len), hex(offset)) else {
        return Err(bad());
    };
    if id != "-" && !id.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(bad());
    }
    if path.chars().any(char::is_control) {
        return Err(fail(n, "the object path has control characters".into()));
    }
    Ok(SampledObject {
        path: path.to_string(),
        build_id: if id == "-" {
            String::new()
        } else {
            id.to_string()
        },
        start,
        len,
        offset,
    })
}

/// A `trace COUNT from>to…` line: its count (≥ 1) and 1 to `entries` records.
fn trace(n: usize, l: &str, entries: usize) -> Result<(u64, Vec<Record>)> {
    let mut parts = l.split(' ');
    if parts.next() != Some("trace") {
        return Err(fail(
            n,
            format!("expected `trace` or `end`, found {:?}", truncate(l)),
        ));
    }
    let count = parts
        .next()
        .and_then(|c| c.parse::<u64>().ok())
        .filter(|&c| c > 0)
        .ok_or_else(|| fail(n, "trace count must be a number ≥ 1".into()))?;
    let mut recs = Vec::new();
    for p in parts {
        let (f, t) = p
            .split_once('>')
            .ok_or_else(|| fail(n, format!("record {:?} is not from>to", truncate(p))))?;
        recs.push(Record {
            from: hex(f).ok_or_else(|| fail(n, format!("bad address {:?}", truncate(f))))?,
            to: hex(t).ok_or_else(|| fail(n, format!("bad address {:?}", truncate(t))))?,
        });
    }
    if recs.is_empty() || recs.len() > entries {
        return Err(fail(
            n,
            format!("a trace has 1..={entries} records, not {}", recs.len()),
        ));
    }
    Ok((count, recs))
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.strip_prefix("0x")?, 16).ok()
}

fn truncate(s: &str) -> String {
    s.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Samples {
        let mut traces = FxHashMap::default();
        traces.insert(
            vec![
                Record {
                    from: 0x10,
                    to: 0x20,
                },
                Record { from: 0x2c, to: 0 },
            ],
            3,
        );
        traces.insert(
            vec![Record {
                from: 0x30,
                to: 0x10,
            }],
            1,
        );
        Samples {
            meta: Meta {
                program: "prog".into(),
                program_id: "build-id:0011aabb".into(),
                objects: Vec::new(),
                config: LbrConfig::default(),
                instructions: 1000,
                cycles: 0,
                samples: 4,
                recorded: 10,
            },
            traces,
        }
    }

    #[test]
    fn merging_adds_counts_and_saturates() {
        let mut a = sample();
        let b = sample();
        a.merge(&b);
        assert_eq!(a.meta.samples, 2 * b.meta.samples);
        for (t, c) in &b.traces {
            assert_eq!(a.traces[t], 2 * c);
        }
        // counts near the top (a hostile file) saturate instead of wrapping
        let mut h = sample();
        h.meta.cycles = u64::MAX - 1;
        a.meta.cycles = 5;
        for c in h.traces.values_mut() {
            *c = u64::MAX;
        }
        a.merge(&h);
        assert_eq!(a.meta.cycles, u64::MAX);
        assert!(a.traces.values().all(|&c| c == u64::MAX));
    }

    #[test]
    fn roundtrip() {
        let s = sample();
        let t = s.to_text();
        assert_eq!(Samples::parse(&t).unwrap(), s);
        assert!((s.overhead() - 4.0 * 7_500.0 / 1000.0).abs() < 1e-9);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let t = sample().to_text();
        for cut in 0..t.len() - 1 {
            if t.is_char_boundary(cut) {
                assert!(Samples::parse(&t[..cut]).is_err(), "cut at {cut}");
            }
        }
    }

    #[test]
    fn errors_name_the_line() {
        let t = sample().to_text().replace("period 1000000", "period x");
        let e = Samples::parse(&t).unwrap_err().to_string();
        assert!(e.contains("line 5"), "{e}");
        let t = sample().to_text().replace("0x30>0x10", "0x30-0x10");
        let e = Samples::parse(&t).unwrap_err().to_string();
        assert!(e.contains("line 19") && e.contains("from>to"), "{e}");
        // a truncated file names the line where it ends, never "line 0"
        let t = sample().to_text();
        let cut = &t[..t.find("seed").unwrap()];
        let e = Samples::parse(cut).unwrap_err().to_string();
        assert!(e.contains("line 9") && e.contains("before `seed`"), "{e}");
        // version 1 files (no program id) are still read
        let v1 = t
            .replace(MAGIC, MAGIC_V1)
            .replace("program-id build-id:0011aabb\n", "");
        assert_eq!(Samples::parse(&v1).unwrap().meta.program_id, "");
        // an entry count out of range is named as such, not reported as a trace's length
        let entries = t
            .lines()
            .find(|l| l.starts_with("entries "))
            .unwrap()
            .to_string();
        for bad in [
            "entries 18446744073709551615",
            "entries 0",
            "entries 1048577",
        ] {
            let e = Samples::parse(&t.replace(&entries, bad))
                .unwrap_err()
                .to_string();
            assert!(e.contains("1 to 1048576 entries") && e.contains(bad), "{e}");
        }
    }

    #[test]
    fn objects_of_a_dynamic_program_round_trip_and_bad_lines_are_errors() {
        let mut s = sample();
        s.meta.objects = vec![
            SampledObject {
                path: "/work/prog".into(),
                build_id: "00aa".into(),
                start: 0x4000_0000,
                len: 0x2000,
                offset: 0,
            },
            SampledObject {
                path: "/lib/libc with space.so.6".into(),
                build_id: String::new(),
                start: 0x20_0000_0000,
                len: 0x10_0000,
                offset: 0,
            },
        ];
        let text = s.to_text();
        assert!(text.starts_with(MAGIC_V3));
        assert!(text.contains("object 0x2000000000 0x100000 0x0 - /lib/libc with space.so.6\n"));
        assert_eq!(Samples::parse(&text).unwrap(), s);
        for (from, to) in [
            ("objects 2\n", "objects 99999\n"),
            ("objects 2\n", "objects 3\n"),
            ("object 0x40000000 ", "object zz "),
            (" 00aa ", " 0g "),
        ] {
            let t = text.replacen(from, to, 1);
            assert_ne!(t, text);
            let e = Samples::parse(&t).unwrap_err().to_string();
            assert!(e.contains("line"), "{e}");
        }
        // a truncated object list
        let cut: String = text.lines().take(4).map(|l| format!("{l}\n")).collect();
        assert!(Samples::parse(&cut).is_err());
    }
}
