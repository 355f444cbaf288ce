//! The exact profile's exports on a real run: speedscope files validate against speedscope's
//! own schema, the Firefox Profiler file has the processed format's shape, folded stacks and
//! the flame graph add up, and every output is byte-identical across runs.

use outcrop_profile::Profile;
use outcrop_report::profile::{firefox, flame_svg, folded, speedscope, ProfileReport};
use outcrop_report::Report as _;
use outcrop_run::{load, ProgramSpec, Run};
use outcrop_rv::symbols::Symbols;
use std::path::Path;

fn profile(name: &str, timed: bool) -> Profile {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../workloads/bin")
        .join(name);
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
    assert_eq!(threads.len(), 1);
    let samples = &threads[0]["samples"];
    let weights = samples["weight"].as_array().unwrap();
    let sum: i64 = weights.iter().map(|w| w.as_i64().unwrap()).sum();
    assert_eq!(sum as u64, p.instructions);
    assert_eq!(samples["weightType"], "samples");
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
    let first = r.functions.first().unwrap();
    assert!(text.contains(&first.name), "{text}");
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(json["instructions"].as_u64(), Some(p.instructions));
    assert_eq!(
        json["tree"][0]["total"]["instructions"].as_u64(),
        Some(p.instructions)
    );
}
