//! `outcrop phases` end to end: the phases of a bundled workload, its `.bb` file, and the
//! sampled timing estimate against the full timing model of the same run.

use crate::util::outcrop_in as outcrop;
use std::path::PathBuf;

fn bin(name: &str) -> PathBuf {
    outcrop_testkit::workloads().join("bin").join(name)
}

#[test]
fn phases_bb_and_the_sampled_estimate() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let vm = bin("bytecode_vm");
    let o = outcrop(
        &[
            "phases",
            "--interval",
            "400000",
            "--max-insns",
            "40000000",
            "--bb",
            "vm.bb",
            "--timing",
            "--compare",
            "--json",
            "-o",
            "p.json",
            "--",
            vm.to_str().unwrap(),
        ],
        d,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("p.json")).unwrap()).unwrap();
    let n = j["intervals"].as_u64().unwrap();
    assert_eq!(j["instructions"], 40_000_000);
    assert!(n >= 99, "{n}");
    let k = j["k"].as_u64().unwrap();
    assert!(k >= 2, "bytecode_vm changes behaviour: {}", j["bic"]);
    let phases = j["phases"].as_array().unwrap();
    let w: f64 = phases.iter().map(|p| p["weight"].as_f64().unwrap()).sum();
    assert!((w - 1.0).abs() < 1e-9);
    let assignment: Vec<u64> = j["assignment"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_u64().unwrap())
        .collect();
    assert_eq!(assignment.len() as u64, n);
    for p in phases {
        let rep = p["representative"][0].as_u64().unwrap() as usize;
        assert_eq!(assignment[rep], p["id"].as_u64().unwrap());
        assert!(!p["functions"].as_array().unwrap().is_empty());
    }
    // the .bb file: one line per interval, its counts summing to the interval's instructions
    let bb = std::fs::read_to_string(d.join("vm.bb")).unwrap();
    let lines: Vec<&str> = bb.lines().collect();
    assert_eq!(lines.len() as u64, n);
    let mut total = 0u64;
    for l in &lines {
        assert!(l.starts_with("T:"), "{l}");
        let sum: u64 = l[1..]
            .split_whitespace()
            .map(|p| p.rsplit(':').next().unwrap().parse::<u64>().unwrap())
            .sum();
        total += sum;
    }
    assert_eq!(total, 40_000_000);
    // the estimate simulated a fraction of the run and is close to the full model
    let e = &j["estimate"];
    assert!(e["simulated"].as_u64().unwrap() < 40_000_000);
    let err = e["error_pct"].as_f64().unwrap();
    // within the worst error docs/BENCHMARKS.md reports for sampled timing on the bundled
    // workloads (3.24%; this run measured 0.05%)
    assert!(err.abs() < 3.24, "estimate error {err}%");
    assert!(e["full_cpi"].as_f64().unwrap() > 0.2);
    // the interval: its half-width is z · the standard error of the phases' samples, each
    // phase's CPI has its own, and the phases' CPIs weigh up to the estimate
    let h = e["half_width"].as_f64().unwrap();
    let cpi = e["cpi"].as_f64().unwrap();
    assert!(h > 0.0 && h < cpi, "{h}");
    assert_eq!(e["confidence_pct"], 99.7);
    assert_eq!(
        e["covered"].as_bool().unwrap(),
        (cpi - e["full_cpi"].as_f64().unwrap()).abs() <= h
    );
    let per: Vec<&serde_json::Value> = e["phases"].as_array().unwrap().iter().collect();
    assert_eq!(per.len() as u64, k);
    let weighed: f64 = per
        .iter()
        .map(|p| p["weight"].as_f64().unwrap() * p["cpi"].as_f64().unwrap())
        .sum();
    assert!((weighed - cpi).abs() < 1e-9 * cpi, "{weighed} vs {cpi}");
    let samples: u64 = per.iter().map(|p| p["samples"].as_u64().unwrap()).sum();
    assert_eq!(samples, e["samples"].as_u64().unwrap());
    // a seed moves the samples (another estimate) and is reproducible; without a target the
    // first run's samples stand
    let seeded = |seed: &str| {
        let o = outcrop(
            &[
                "phases",
                "--interval",
                "400000",
                "--max-insns",
                "8000000",
                "--timing",
                "--target",
                "0",
                "--sample-seed",
                seed,
                "--json",
                "-o",
                "-",
                "--",
                vm.to_str().unwrap(),
            ],
            d,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        j["estimate"].clone()
    };
    let (a, b, c) = (seeded("1"), seeded("1"), seeded("2"));
    assert_eq!(a["cpi"], b["cpi"]);
    assert_ne!(a["cpi"], c["cpi"]);
    assert_eq!(a["passes"], 1);
    // the text report
    let o = outcrop(
        &[
            "phases",
            "--max-insns",
            "5000000",
            "--",
            vm.to_str().unwrap(),
        ],
        d,
    );
    // on stderr, as `outcrop run` prints its report; stdout stays empty
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(
        text.contains("Phases of") && text.contains("over time:"),
        "{text}"
    );
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // `-o -`: to stdout
    let o = outcrop(
        &[
            "phases",
            "--max-insns",
            "2000000",
            "-o",
            "-",
            "--",
            vm.to_str().unwrap(),
        ],
        d,
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("Phases of"));
    // bad arguments
    let o = outcrop(
        &["phases", "--interval", "0", "--", vm.to_str().unwrap()],
        d,
    );
    assert_eq!(o.status.code(), Some(1));
    let o = outcrop(&["phases", "--compare", "--", vm.to_str().unwrap()], d);
    assert_eq!(o.status.code(), Some(2));
    for bad in [
        ["--confidence", "100"],
        ["--confidence", "0"],
        ["--target", "nan"],
    ] {
        let mut args = vec!["phases", "--timing"];
        args.extend(bad);
        args.extend(["--", vm.to_str().unwrap()]);
        let o = outcrop(&args, d);
        assert_eq!(o.status.code(), Some(1), "{bad:?}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(bad[0]));
    }
    let o = outcrop(&["phases"], d);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no program"));
}

/// Each function's CPI from the samples against the exact profile of the same instructions
/// under the full model (`outcrop run --timing`: each instruction charged the cycles since
/// the retirement before it, the rule the samples use).
#[test]
fn sampled_function_cpis_hold_the_exact_profiles() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let lz = bin("lz");
    let limit = "20000000";
    let o = outcrop(
        &[
            "run",
            "--timing",
            "--max-insns",
            limit,
            "--report",
            "r",
            "--",
            lz.to_str().unwrap(),
        ],
        d,
    );
    assert!(
        o.status.code().is_some(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let profile: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("r/profile.json")).unwrap()).unwrap();
    // each function's exact instructions and cycles over its symbol's addresses (the
    // profile's `pcs`), as the samples attribute them (the profile's own rows split inlined
    // functions out by their DWARF lines)
    let pcs = &profile["pcs"];
    let col = |name: &str| {
        pcs["columns"]
            .as_array()
            .unwrap()
            .iter()
            .position(|c| c == name)
            .unwrap()
    };
    let (pc, ni, nc) = (col("pc"), col("instructions"), col("cycles"));
    let exact = |name: &str| {
        let f = profile["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name && f["size"].as_u64().unwrap() > 0)
            .unwrap_or_else(|| panic!("{name} not in the profile"));
        let lo = f["start"].as_u64().unwrap();
        let hi = lo + f["size"].as_u64().unwrap();
        let (mut n, mut c) = (0.0, 0.0);
        for r in pcs["rows"].as_array().unwrap() {
            if (lo..hi).contains(&r[pc].as_u64().unwrap()) {
                n += r[ni].as_f64().unwrap();
                c += r[nc].as_f64().unwrap();
            }
        }
        (c / n, c / profile["cycles"].as_f64().unwrap())
    };
    let o = outcrop(
        &[
            "phases",
            "--interval",
            "400000",
            "--max-insns",
            limit,
            "--timing",
            "--sample-seed",
            "5",
            "--json",
            "-o",
            "-",
            "--",
            lz.to_str().unwrap(),
        ],
        d,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let functions = j["estimate"]["functions"].as_array().unwrap();
    let shares: f64 = functions
        .iter()
        .map(|f| f["cycle_share"].as_f64().unwrap())
        .sum();
    assert!(shares <= 1.0 + 1e-9 && shares > 0.99, "{shares}");
    // the hottest functions: the exact CPI inside each interval, the shares close
    for f in functions.iter().take(3) {
        let name = f["name"].as_str().unwrap();
        let (cpi, share) = exact(name);
        let est = f["cpi"].as_f64().unwrap();
        let h = f["half_width"].as_f64().unwrap();
        assert!((est - cpi).abs() <= h, "{name}: {est} ± {h} vs {cpi}");
        let s = f["cycle_share"].as_f64().unwrap();
        assert!((s - share).abs() < 0.03, "{name}: {s} vs {share}");
    }
}

/// `--engine` reaches every pass: the single-step interpreter (warming from retire records
/// alone) and the compiling tier (warming from compiled blocks) give the same vectors, phases
/// and estimate, to the last digit; only the wall times differ.
#[test]
fn every_engine_gives_the_same_phases_and_estimate() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let vm = bin("bytecode_vm");
    let run = |engine: &str| {
        let out = format!("{engine}.json");
        let o = outcrop(
            &[
                "phases",
                "--interval",
                "400000",
                "--max-insns",
                "8000000",
                "--timing",
                "--per-phase",
                "20",
                "--engine",
                engine,
                "--json",
                "-o",
                &out,
                "--",
                vm.to_str().unwrap(),
            ],
            d,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut j: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.join(&out)).unwrap()).unwrap();
        let walls = |v: &mut serde_json::Value| {
            let m = v.as_object_mut().unwrap();
            let n = m.len();
            m.retain(|k, _| !k.contains("wall"));
            n - m.len()
        };
        let dropped = walls(&mut j) + walls(&mut j["estimate"]);
        assert!(dropped >= 2, "the wall times moved: {j}");
        j
    };
    let step = run("step");
    assert!(step["estimate"]["cpi"].as_f64().unwrap() > 0.2);
    assert_eq!(step, run("jit"));
}
