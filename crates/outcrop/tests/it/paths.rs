//! `outcrop paths record|report` end to end: samples, the exact reference from a `.wpp` file
//! of the same deterministic run, accuracy, BOLT export, determinism, and bad input.

use crate::util::outcrop;
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin(name: &str) -> String {
    outcrop_testkit::workloads()
        .join("bin")
        .join(name)
        .display()
        .to_string()
}

fn record(dir: &Path, file: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(file);
    let mut args = vec![
        "paths",
        "record",
        "-o",
        out.to_str().unwrap(),
        "--deterministic",
    ];
    args.extend_from_slice(extra);
    let prog = bin("matmul");
    args.extend(["--", prog.as_str()]);
    let o = outcrop(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn record_report_with_exact_reference() {
    let dir = tempfile::tempdir().unwrap();
    let s = record(
        dir.path(),
        "a.samples",
        &["--entries", "8", "--period", "200000", "--random-period"],
    );
    // the same run, deterministic, gives the same file
    let s2 = record(
        dir.path(),
        "b.samples",
        &["--entries", "8", "--period", "200000", "--random-period"],
    );
    assert_eq!(std::fs::read(&s).unwrap(), std::fs::read(&s2).unwrap());
    let wpp = dir.path().join("m.wpp");
    let o = outcrop(&[
        "wpp",
        "record",
        "-o",
        wpp.to_str().unwrap(),
        "--deterministic",
        "--",
        &bin("matmul"),
    ]);
    assert!(o.status.success());
    let fdata = dir.path().join("m.fdata");
    let o = outcrop(&[
        "paths",
        "report",
        s.to_str().unwrap(),
        "--binary",
        &bin("matmul"),
        "--exact-from",
        wpp.to_str().unwrap(),
        "--json",
        "--fdata",
        fdata.to_str().unwrap(),
        "--stitch",
        "--weights",
        "edges",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let wall = v["accuracy"]["wall"].as_f64().unwrap();
    assert!(wall > 0.95, "Wall accuracy {wall}");
    assert_eq!(v["exact"]["unplaced"].as_u64(), Some(0));
    assert_eq!(v["entries"].as_u64(), Some(8));
    let hot = v["hot_paths"].as_array().unwrap();
    assert!(
        !hot.is_empty()
            && hot[0]["disassembly"]
                .as_array()
                .is_some_and(|d| !d.is_empty())
    );
    // the branch ending a hot path names its target function
    let named = hot
        .iter()
        .flat_map(|h| h["disassembly"].as_array().unwrap())
        .any(|l| {
            let l = l.as_str().unwrap();
            l.contains("  <") && l.ends_with('>')
        });
    assert!(named, "no branch target named in {hot:?}");
    // BOLT .fdata: 8 fields per line, symbol+offset form
    let text = std::fs::read_to_string(&fdata).unwrap();
    assert!(text.lines().count() > 10);
    for l in text.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 8, "{l}");
        assert!(f[7].parse::<u64>().unwrap() > 0);
    }
    assert!(text.lines().any(|l| l.starts_with("1 main ")));
    // the text report names the figures
    let o = outcrop(&[
        "paths",
        "report",
        s.to_str().unwrap(),
        "--binary",
        &bin("matmul"),
        "--exact-from",
        wpp.to_str().unwrap(),
        "--top",
        "2",
    ]);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("accuracy: Wall") && t.contains("Table 2") && t.contains("#2"),
        "{t}"
    );
}

/// Runs `outcrop ARGS`, which must fail without panicking, with `needle` in its error.
fn fails_with(args: &[&str], needle: &str) {
    let o = outcrop(args);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{args:?} succeeded");
    assert!(
        e.contains(needle) && !e.contains("panicked"),
        "{args:?}: {e}"
    );
}

#[test]
fn bad_input_is_an_error_with_a_place() {
    let dir = tempfile::tempdir().unwrap();
    let s = record(dir.path(), "a.samples", &["--period", "5000000"]);
    let text = std::fs::read_to_string(&s).unwrap();
    let (s, matmul, hello) = (s.to_str().unwrap(), bin("matmul"), bin("hello"));
    let bad_path = dir.path().join("bad.samples");
    let bad = bad_path.to_str().unwrap();
    // a damaged trace line: the error names the line
    let lines: Vec<&str> = text.lines().collect();
    let n = lines.iter().position(|l| l.starts_with("trace ")).unwrap();
    let mut damaged = lines.clone();
    damaged[n] = "trace 3 0x10>zz";
    std::fs::write(bad, damaged.join("\n") + "\n").unwrap();
    let report = ["paths", "report", bad, "--binary", &matmul];
    fails_with(&report, &format!("line {}", n + 1));
    // truncated: no `end`
    std::fs::write(bad, &text[..text.len() - 4]).unwrap();
    fails_with(&report, "truncated");
    // a binary that is not ELF
    fails_with(&["paths", "report", s, "--binary", s], "ELF");
    // a trace that is neither .wpp nor text addresses
    std::fs::write(bad, "0x1000\nnot-an-address\n").unwrap();
    fails_with(
        &[
            "paths",
            "report",
            s,
            "--binary",
            &matmul,
            "--exact-from",
            bad,
        ],
        "line 2",
    );
    // bad unit parameters
    fails_with(
        &["paths", "record", "-o", bad, "--entries", "0", "--", &hello],
        "entries",
    );
    fails_with(
        &["paths", "record", "-o", bad, "--skew", "2", "--", &hello],
        "probability",
    );
    fails_with(
        &[
            "paths",
            "record",
            "-o",
            bad,
            "--handler-cycles",
            "pentium",
            "--",
            &hello,
        ],
        "preset (perf-lbr, itanium2-perfmon)",
    );
}

#[test]
fn cost_presets_set_the_modelled_cost() {
    let dir = tempfile::tempdir().unwrap();
    for (arg, cycles) in [
        (None, 7_500u64),
        (Some("perf-lbr"), 7_500),
        (Some("itanium2-perfmon"), 24_600),
        (Some("1234"), 1_234),
    ] {
        let mut extra = vec!["--period", "500000"];
        if let Some(a) = arg {
            extra.extend(["--handler-cycles", a]);
        }
        let s = record(dir.path(), "c.samples", &extra);
        let text = std::fs::read_to_string(&s).unwrap();
        assert!(
            text.lines()
                .any(|l| l == format!("handler-cycles {cycles}")),
            "{arg:?}: {text:.300}"
        );
    }
}

#[test]
fn several_runs_merge_into_one_profile() {
    let dir = tempfile::tempdir().unwrap();
    let a = record(
        dir.path(),
        "a.samples",
        &["--period", "300000", "--random-period", "--seed", "1"],
    );
    let b = record(
        dir.path(),
        "b.samples",
        &["--period", "300000", "--random-period", "--seed", "2"],
    );
    let json = |files: &[&Path]| -> serde_json::Value {
        let mut args = vec!["paths", "report", "--binary"];
        let m = bin("matmul");
        args.push(&m);
        args.push("--json");
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        args.extend(names.iter().map(String::as_str));
        let o = outcrop(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let (ja, jb, jab) = (json(&[&a]), json(&[&b]), json(&[&a, &b]));
    let n = |v: &serde_json::Value| v["samples"].as_u64().unwrap();
    assert_eq!(n(&jab), n(&ja) + n(&jb));
    assert!(n(&ja) > 0 && n(&jb) > 0);
    // the merged overhead is the runs' (same period): samples and cycles both add up
    let o = |v: &serde_json::Value| v["overhead"].as_f64().unwrap();
    assert!((o(&jab) - (o(&ja) + o(&jb)) / 2.0).abs() < 0.002);
    // another buffer depth is an error naming the file
    let c = record(
        dir.path(),
        "c.samples",
        &["--period", "300000", "--entries", "16"],
    );
    fails_with(
        &[
            "paths",
            "report",
            a.to_str().unwrap(),
            c.to_str().unwrap(),
            "--binary",
            &bin("matmul"),
        ],
        "c.samples has buffer depth 16, ",
    );
}

#[test]
fn paths_report_run_inside_a_report_directory_finds_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let rep = dir.path().join("rep");
    let workloads = outcrop_testkit::workloads();
    // recorded with a relative program path, from the workloads directory
    let o = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["run", "--paths", "16:20000", "--report"])
        .arg(&rep)
        .args(["--", "bin/qsort_ints"])
        .current_dir(&workloads)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // read from inside the report directory, where bin/qsort_ints does not resolve
    let o = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["paths", "report", "branch.samples", "--top", "1"])
        .current_dir(&rep)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("the program recorded as bin/qsort_ints is"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("hottest paths"));
}
