//! The exact profile's exports on a real run: speedscope files validate against speedscope's
//! own schema, the Firefox Profiler file has the processed format's shape, folded stacks and
//! the flame graph add up, pprof files read back (by a protocol-buffer reader written here, not
//! by `prost`, which writes them, and by `go tool pprof`), and every output is byte-identical
//! across runs.

use outcrop_profile::Profile;
use outcrop_report::profile::{firefox, flame_svg, folded, speedscope, ProfileReport};
use outcrop_report::Report as _;
use outcrop_run::{load, ProgramSpec, Run};
use outcrop_rv::symbols::Symbols;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

fn profile(name: &str, timed: bool) -> Profile {
    let bin = outcrop_testkit::workloads().join("bin").join(name);
    let spec = ProgramSpec::observed(&bin, &format!("bin/{name}"));
    let mut guest = load(&spec, Box::new(|_| {})).unwrap();
    let symbols = Symbols::from_elf(&guest.elf).unwrap();
    let timing = timed.then(outcrop_timing_preset);
    Run::new(&mut guest.machine)
        .timing(timing)
        .profile(symbols)
        .execute()
        .unwrap()
        .profile
        .unwrap()
}

fn outcrop_timing_preset() -> outcrop_timing::Config {
    outcrop_timing::Config::preset("default").unwrap()
}

fn schema() -> serde_json::Value {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/speedscope-file-format-schema.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn speedscope_files_validate_against_speedscopes_schema() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    for timed in [false, true] {
        let p = profile("qsort_ints", timed);
        let text = speedscope(&p, "qsort_ints");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        // the weights are exact: instructions sum to the run, cycles to the cycle count
        let profiles = v["profiles"].as_array().unwrap();
        assert_eq!(profiles.len(), if timed { 2 } else { 1 });
        let sum: u64 = profiles[0]["weights"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_u64().unwrap())
            .sum();
        assert_eq!(sum, p.instructions);
        if timed {
            let cycles: u64 = profiles[1]["weights"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w.as_u64().unwrap())
                .sum();
            assert_eq!(cycles, p.self_sum().cycles);
        }
        // a mutation the schema must catch, so that the check can fail
        let mut bad = v.clone();
        bad["profiles"][0]["type"] = "sampled-ish".into();
        assert!(!validator.is_valid(&bad));
    }
}

#[test]
fn firefox_profile_has_the_processed_format_and_exact_weights() {
    let p = profile("recursion", false);
    let a = firefox(&p, "recursion");
    assert_eq!(a, firefox(&p, "recursion"), "deterministic");
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert!(v["meta"]["version"].as_u64().is_some(), "meta.version");
    let threads = v["threads"].as_array().unwrap();
    // the timeline's track, then the exact call tree's
    assert_eq!(threads.len(), 2);
    assert_eq!(
        threads[0]["isMainThread"], true,
        "the timeline's track is the main one"
    );
    assert_eq!(threads[1]["name"], "main (exact)");
    for t in threads {
        let samples = &t["samples"];
        let weights = samples["weight"].as_array().unwrap();
        let sum: i64 = weights.iter().map(|w| w.as_i64().unwrap()).sum();
        assert_eq!(sum as u64, p.instructions, "{}", t["name"]);
        assert_eq!(samples["weightType"], "samples");
    }
    // the timeline's samples sit at the marks: time is retired instructions
    let times = timeline_times(&threads[0]["samples"]);
    let marks: Vec<f64> = p
        .timeline
        .marks
        .iter()
        .map(|m| m.at.instructions as f64 / 1e6)
        .collect();
    assert_eq!(times.len(), marks.len());
    for (t, m) in times.iter().zip(&marks) {
        assert!((t - m).abs() < 1e-6, "{t} vs {m}");
    }
    assert!(v["meta"]["product"]
        .as_str()
        .unwrap()
        .contains("retired instructions"));
    // timed: time is cycles, and the counters give instructions per interval
    let p = profile("recursion", true);
    let v: serde_json::Value = serde_json::from_str(&firefox(&p, "recursion")).unwrap();
    assert!(v["meta"]["product"]
        .as_str()
        .unwrap()
        .contains("retired cycles"));
    let counters = v["counters"].as_array().unwrap();
    assert_eq!(counters[0]["name"], "instructions");
    let c = &counters[0]["samples"];
    let sum: f64 = c["count"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .sum();
    assert_eq!(sum as u64, p.instructions);
    let times = timeline_times(&v["threads"][0]["samples"]);
    assert!(
        (times.last().unwrap() - p.self_sum().cycles as f64 / 1e6).abs() < 1e-6,
        "the last sample at the run's last cycle"
    );
}

/// A samples table's times in milliseconds (`time`, or `timeDeltas` summed).
fn timeline_times(samples: &serde_json::Value) -> Vec<f64> {
    if let Some(t) = samples["time"].as_array() {
        return t.iter().map(|x| x.as_f64().unwrap()).collect();
    }
    let mut at = 0.0;
    samples["timeDeltas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            at += d.as_f64().unwrap();
            at
        })
        .collect()
}

#[test]
fn folded_stacks_flame_graph_and_table_agree_with_the_profile() {
    let p = profile("recursion", true);
    let f = folded(&p);
    let sum: u64 = f
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        sum,
        p.self_sum().cycles,
        "timed: folded stacks weigh cycles"
    );
    assert!(
        f.lines().any(|l| l.contains("main;ackermann;ackermann")),
        "recursion shows"
    );
    let svg = flame_svg(&p, 1200);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("<title>main —"), "main is a frame");
    assert_eq!(svg, flame_svg(&p, 1200), "deterministic");
    let r = ProfileReport::new("recursion", &p, None, &[]);
    let text = r.to_text();
    assert!(text.contains("CPI") && text.contains("mispred"), "{text}");
    // timed: the first column is the sort key (self cycles), and every header has a legend
    let header = text.lines().nth(1).unwrap();
    assert!(header.trim_start().starts_with("self cycles %"), "{header}");
    let keys: Vec<f64> = text
        .lines()
        .skip(2)
        .take_while(|l| {
            l.trim_start()
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
        })
        .map(|l| {
            l.split_whitespace()
                .next()
                .unwrap()
                .trim_end_matches('%')
                .parse()
                .unwrap()
        })
        .collect();
    assert!(
        keys.len() >= 2 && keys.windows(2).all(|w| w[0] >= w[1]),
        "{keys:?}"
    );
    for (h, _) in r.columns() {
        assert!(text.contains(&format!("  {h}: ")), "{h} has no legend line");
    }
    // inclusive cycles: main's total cycles cover its callees
    let main = r.functions.iter().find(|f| f.name == "main").unwrap();
    assert!(main.total.cycles > main.self_counts.cycles);
    let first = r.functions.first().unwrap();
    assert!(text.contains(&first.name), "{text}");
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(json["instructions"].as_u64(), Some(p.instructions));
    assert_eq!(
        json["tree"][0]["total"]["instructions"].as_u64(),
        Some(p.instructions)
    );
}

// pprof: the protocol-buffer wire format walked by hand

/// One field of a message: its number and its value (a varint, or bytes).
#[derive(Debug)]
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(b: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = b[*at];
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return v;
        }
    }
    panic!("varint too long at {at}");
}

/// The fields of one message, in order (wire types 0 and 2 only: all profile.proto uses).
fn fields(b: &[u8]) -> Vec<(u64, Field<'_>)> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < b.len() {
        let key = varint(b, &mut at);
        let (number, wire) = (key >> 3, key & 7);
        match wire {
            0 => out.push((number, Field::Varint(varint(b, &mut at)))),
            2 => {
                let len = varint(b, &mut at) as usize;
                out.push((number, Field::Bytes(&b[at..at + len])));
                at += len;
            }
            w => panic!("wire type {w} at byte {at}"),
        }
    }
    out
}

/// Repeated varints: packed (bytes) or one per field.
fn varints(f: &Field<'_>) -> Vec<u64> {
    match f {
        Field::Varint(v) => vec![*v],
        Field::Bytes(b) => {
            let mut at = 0;
            let mut v = Vec::new();
            while at < b.len() {
                v.push(varint(b, &mut at));
            }
            v
        }
    }
}

fn first_varint(msg: &[u8], number: u64) -> u64 {
    fields(msg)
        .iter()
        .find(|(n, _)| *n == number)
        .map_or(0, |(_, f)| varints(f)[0])
}

/// What a reader of the file sees: per sample (leaf-first function names, values, thread).
struct Read_ {
    strings: Vec<String>,
    sample_types: Vec<String>,
    samples: Vec<(Vec<String>, Vec<i64>, Option<i64>)>,
}

fn read(gz: &[u8]) -> Read_ {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut raw)
        .unwrap();
    let top = fields(&raw);
    let strings: Vec<String> = top
        .iter()
        .filter(|(n, _)| *n == 6)
        .map(|(_, f)| match f {
            Field::Bytes(b) => String::from_utf8(b.to_vec()).unwrap(),
            Field::Varint(_) => panic!("a string as a varint"),
        })
        .collect();
    let bytes = |n: u64| -> Vec<&[u8]> {
        top.iter()
            .filter(|(k, _)| *k == n)
            .map(|(_, f)| match f {
                Field::Bytes(b) => *b,
                Field::Varint(_) => panic!("field {n} is not a message"),
            })
            .collect()
    };
    let functions: HashMap<u64, String> = bytes(5)
        .into_iter()
        .map(|m| {
            (
                first_varint(m, 1),
                strings[first_varint(m, 2) as usize].clone(),
            )
        })
        .collect();
    let locations: HashMap<u64, u64> = bytes(4)
        .into_iter()
        .map(|m| {
            let line = fields(m)
                .into_iter()
                .find(|(n, _)| *n == 4)
                .map(|(_, f)| match f {
                    Field::Bytes(b) => first_varint(b, 1),
                    Field::Varint(_) => panic!("a line as a varint"),
                })
                .unwrap();
            (first_varint(m, 1), line)
        })
        .collect();
    let sample_types = bytes(1)
        .into_iter()
        .map(|m| strings[first_varint(m, 1) as usize].clone())
        .collect();
    let thread_key = strings.iter().position(|s| s == "thread");
    let samples = bytes(2)
        .into_iter()
        .map(|m| {
            let (mut names, mut values, mut thread) = (Vec::new(), Vec::new(), None);
            for (n, f) in fields(m) {
                match n {
                    1 => names.extend(
                        varints(&f)
                            .into_iter()
                            .map(|id| functions[&locations[&id]].clone()),
                    ),
                    2 => values.extend(varints(&f).into_iter().map(|v| v as i64)),
                    3 => {
                        let Field::Bytes(b) = f else { panic!() };
                        if Some(first_varint(b, 1) as usize) == thread_key {
                            thread = Some(first_varint(b, 3) as i64);
                        }
                    }
                    _ => {}
                }
            }
            (names, values, thread)
        })
        .collect();
    Read_ {
        strings,
        sample_types,
        samples,
    }
}

#[test]
fn pprof_files_read_back_to_the_exact_profile() {
    for (name, timed) in [
        ("qsort_ints", false),
        ("recursion", true),
        ("threads", false),
    ] {
        let p = profile(name, timed);
        let gz = outcrop_report::pprof::pprof(&p, name);
        assert_eq!(gz, outcrop_report::pprof::pprof(&p, name), "deterministic");
        let r = read(&gz);
        assert_eq!(r.strings[0], "", "{name}: the string table starts empty");
        let want: Vec<&str> = if timed {
            vec!["instructions", "cycles"]
        } else {
            vec!["instructions"]
        };
        assert_eq!(r.sample_types, want, "{name}");
        // the values sum to the run's counts
        let total: i64 = r.samples.iter().map(|s| s.1[0]).sum();
        assert_eq!(total as u64, p.instructions, "{name}: instructions");
        if timed {
            let cycles: i64 = r.samples.iter().map(|s| s.1[1]).sum();
            assert_eq!(cycles as u64, p.self_sum().cycles, "{name}: cycles");
        }
        // self instructions per leaf function, as the profile has them
        let mut by_leaf: HashMap<String, u64> = HashMap::new();
        for (names, values, _) in &r.samples {
            *by_leaf.entry(names[0].clone()).or_default() += values[0] as u64;
        }
        for f in &p.functions {
            assert_eq!(
                by_leaf.get(&f.name).copied().unwrap_or(0),
                f.self_counts.instructions,
                "{name}: {}",
                f.name
            );
        }
        // main is called from the start code: it is never a root
        let main_chain = r
            .samples
            .iter()
            .find(|s| s.0[0] == "main")
            .expect("main retired something");
        assert!(main_chain.0.len() > 1, "{name}: {:?}", main_chain.0);
        // a threaded guest's samples say whose they are, and every thread is there
        let threads: std::collections::BTreeSet<i64> =
            r.samples.iter().filter_map(|s| s.2).collect();
        if p.threads.len() > 1 {
            assert_eq!(threads.len(), p.threads.len(), "{name}");
        } else {
            assert!(threads.is_empty(), "{name}");
        }
    }
}

/// `go tool pprof` itself reads the file and finds the run's instruction total (skipped
/// where Go is not installed: `apt-get install golang-go`, unless `OUTCROP_REQUIRE_GO` is
/// set, as `.ci/run` sets it).
#[test]
fn go_tool_pprof_reads_the_file() {
    let has_go = std::process::Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_go {
        assert!(
            std::env::var_os("OUTCROP_REQUIRE_GO").is_none(),
            "go missing but OUTCROP_REQUIRE_GO is set"
        );
        eprintln!("skipped: no `go` on PATH");
        return;
    }
    let p = profile("qsort_ints", false);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("profile.pb.gz");
    std::fs::write(&file, outcrop_report::pprof::pprof(&p, "qsort_ints")).unwrap();
    let o = std::process::Command::new("go")
        .args(["tool", "pprof", "-top"])
        .arg(&file)
        .env("HOME", dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let want = format!("of {} total", p.instructions);
    assert!(text.contains(&want), "{text}");
    assert!(text.contains("Type: instructions"), "{text}");
    assert!(text.contains(" main\n"), "{text}");
}
