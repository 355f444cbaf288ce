//! End-to-end tests of the `outcrop` binary: real files, real exit codes, real error messages.

use crate::util::outcrop;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn outcrop_stdin(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn outcrop");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{:?}", text(o));
    serde_json::from_slice(&o.stdout).expect("valid JSON on stdout")
}

#[test]
fn demo_json_has_the_documented_fields_and_is_deterministic() {
    let args = [
        "rap", "--demo", "code", "--events", "200000", "--exact", "--json",
    ];
    let a = outcrop(&args);
    let b = outcrop(&args);
    assert_eq!(
        a.stdout, b.stdout,
        "same input and seed must give identical output"
    );
    let v = json(&a);
    assert_eq!(v["n"], 200_000);
    for key in [
        "eps",
        "nodes",
        "peak_nodes",
        "bytes",
        "hot",
        "accuracy",
        "hardware",
        "merge_log",
    ] {
        assert!(!v[key].is_null(), "missing {key}");
    }
    let hot = v["hot"].as_array().unwrap();
    assert!(!hot.is_empty());
    for h in hot {
        for key in ["lo", "hi", "count", "share", "exclusive_share", "depth"] {
            assert!(!h[key].is_null(), "hot range missing {key}");
        }
        assert!(h["exclusive_share"].as_f64().unwrap() >= 0.1);
        let share = h["count"].as_f64().unwrap() / 200_000.0;
        assert!((share - h["share"].as_f64().unwrap()).abs() < 1e-12);
        assert!(h["exclusive"].as_u64().unwrap() <= h["count"].as_u64().unwrap());
    }
    let mean = v["accuracy"]["mean_error_pct"].as_f64().unwrap();
    assert!(mean <= 2.0, "mean error {mean}%");
}

#[test]
fn text_input_from_stdin_with_hex_comments_and_blank_lines() {
    let mut input = String::from("# a comment\n\n");
    for i in 0..5000u64 {
        input.push_str(if i % 2 == 0 {
            "0x1000\n"
        } else {
            "  42  # trailing comment\n"
        });
    }
    let o = outcrop_stdin(
        &["rap", "--bits", "16", "--hot", "0.4", "--json", "-"],
        input.as_bytes(),
    );
    let v = json(&o);
    assert_eq!(v["n"], 5000);
    let hot = v["hot"].as_array().unwrap();
    let covers = |x: u64| {
        hot.iter()
            .any(|h| h["lo"].as_u64().unwrap() <= x && x <= h["hi"].as_u64().unwrap())
    };
    assert!(covers(0x1000) && covers(42));
}

#[test]
fn a_bad_line_is_reported_with_its_number_and_text() {
    let o = outcrop_stdin(&["rap", "-"], b"1\n2\n0x10\nbanana\n5\n");
    assert!(!o.status.success());
    assert_eq!(o.status.code(), Some(1));
    let (_, err) = text(&o);
    assert!(err.contains("line 4") && err.contains("banana"), "{err}");
}

#[test]
fn a_value_outside_the_universe_is_named() {
    let o = outcrop_stdin(&["rap", "--bits", "8", "-"], b"1\n2\n300\n");
    assert_eq!(o.status.code(), Some(1));
    let (_, err) = text(&o);
    assert!(
        err.contains("#3") && err.contains("0x12c") && err.contains("8-bit"),
        "{err}"
    );
}

#[test]
fn bad_arguments_are_usage_errors() {
    for args in [
        vec!["rap", "--eps", "2", "--demo", "code"],
        vec!["rap", "--branching", "3", "--demo", "code"],
        vec!["rap", "--bits", "0", "--demo", "code"],
        vec!["rap", "--hot", "0", "--demo", "code"],
    ] {
        let o = outcrop(&args);
        assert!(!o.status.success(), "{args:?} accepted");
        let (_, err) = text(&o);
        assert!(!err.is_empty() && !err.contains("panicked"), "{err}");
    }
    let o = outcrop(&["rap", "--nonsense"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn missing_file_is_a_clear_error() {
    let o = outcrop(&["rap", "/nonexistent/file.txt"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("/nonexistent/file.txt"));
}

/// `outcrop trace convert FROM --to text -o TO`.
fn to_text(from: &Path, to: &Path) -> Output {
    outcrop(&[
        "trace",
        "convert",
        from.to_str().unwrap(),
        "--to",
        "text",
        "-o",
        to.to_str().unwrap(),
    ])
}

fn convert(dir: &Path) -> std::path::PathBuf {
    let txt = dir.join("in.txt");
    let mut s = String::new();
    for i in 0..20_000u64 {
        s.push_str(&format!(
            "{}\n",
            (i * 7919) % 1000 + if i % 3 == 0 { 0x4000 } else { 0 }
        ));
    }
    std::fs::write(&txt, s).unwrap();
    let otr = dir.join("in.otr");
    let o = outcrop(&[
        "trace",
        "convert",
        txt.to_str().unwrap(),
        "-o",
        otr.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    otr
}

#[test]
fn trace_files_round_trip_and_give_the_same_profile_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let otr = convert(dir.path());
    let txt = dir.path().join("in.txt");
    let from_text = outcrop(&["rap", "--json", txt.to_str().unwrap()]);
    let from_trace = outcrop(&["rap", "--json", otr.to_str().unwrap()]);
    let (mut a, mut b) = (json(&from_text), json(&from_trace));
    a["input"] = serde_json::Value::Null;
    b["input"] = serde_json::Value::Null;
    assert_eq!(a, b);
    let info = json(&outcrop(&[
        "trace",
        "info",
        "--json",
        otr.to_str().unwrap(),
    ]));
    assert_eq!(info["values"], 20_000);
    let back = dir.path().join("back.txt");
    let o = to_text(&otr, &back);
    assert!(o.status.success());
    assert_eq!(
        std::fs::read_to_string(back).unwrap(),
        std::fs::read_to_string(txt).unwrap()
    );
}

#[test]
fn a_corrupt_trace_is_reported_with_an_offset_and_no_output_file_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let otr = convert(dir.path());
    let mut bytes = std::fs::read(&otr).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&otr, &bytes).unwrap();
    let o = outcrop(&["rap", otr.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let (_, err) = text(&o);
    assert!(err.contains("offset"), "{err}");
    let out = dir.path().join("out.txt");
    let o = to_text(&otr, &out);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        !out.exists(),
        "a failed conversion must not leave a partial file"
    );
    assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains("partial")));
    // a truncated trace
    std::fs::write(&otr, &bytes[..bytes.len() - 10]).unwrap();
    let o = outcrop(&["trace", "info", otr.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn saved_trees_load_back_identically() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["t.rap", "t.json"] {
        let path = dir.path().join(name);
        let o = outcrop(&[
            "rap",
            "--demo",
            "values",
            "--events",
            "50000",
            "--save-tree",
            path.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{:?}", text(&o));
        let bytes = std::fs::read(&path).unwrap();
        let tree = if name.ends_with(".json") {
            outcrop_rap::RapTree::from_json(&serde_json::from_slice(&bytes).unwrap()).unwrap()
        } else {
            outcrop_rap::RapTree::from_bytes(&bytes).unwrap()
        };
        assert_eq!(tree.n(), 50_000);
    }
}

#[test]
fn dump_prints_the_indented_hex_tree() {
    let o = outcrop_stdin(&["rap", "--bits", "8", "--dump", "-"], b"1\n1\n1\n200\n");
    let (out, _) = text(&o);
    assert!(o.status.success());
    assert!(out.contains("\ntree:\n[0, ff] count="), "{out}");
}

#[test]
fn hardware_report_is_printed() {
    let o = outcrop(&["rap", "--demo", "code", "--events", "100000", "--hardware"]);
    let (out, _) = text(&o);
    assert!(o.status.success());
    assert!(
        out.contains("TCAM:") && out.contains("cycles/event pipelined"),
        "{out}"
    );
}

#[test]
fn help_teaches() {
    let o = outcrop(&["rap", "--help"]);
    let (out, _) = text(&o);
    for needle in ["--eps", "--exact", "--demo", "Examples:", "ε·n"] {
        assert!(out.contains(needle), "help lacks {needle}");
    }
}

#[test]
fn common_command_line_slips_get_a_tip() {
    let o = outcrop(&["exec", "workloads/bin/hello"]);
    assert_eq!(o.status.code(), Some(2));
    let (_, err) = text(&o);
    assert!(
        err.contains("tip: the program and its arguments go after `--`"),
        "{err}"
    );
    let o = outcrop(&["exec", "--timing", "inorder", "--", "workloads/bin/hello"]);
    assert_eq!(o.status.code(), Some(2));
    let (_, err) = text(&o);
    assert!(
        err.contains("tip: --timing takes its value after `=`: --timing=inorder"),
        "{err}"
    );
    // an unknown option gets clap's own message, not ours
    let o = outcrop(&["exec", "--nonsense"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!text(&o).1.contains("go after `--`: outcrop"));
}

#[test]
fn rap_with_no_input_on_a_terminal_says_what_to_give_it() {
    // a terminal on stdin, from util-linux's `script` (present on Debian; skipped elsewhere)
    let cmd = format!("{} rap", env!("CARGO_BIN_EXE_outcrop"));
    let Ok(o) = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
    else {
        eprintln!("no `script` command: skipped");
        return;
    };
    let all = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(all.contains("no input: give a FILE"), "{all}");
}

#[test]
fn brr_overlap_scores_a_sampled_profile_and_names_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.txt");
    let sampled = dir.path().join("sampled.txt");
    let bad = dir.path().join("bad.txt");
    std::fs::write(&full, "# method invocations\n50 method1\n50 method2\n").unwrap();
    std::fs::write(&sampled, "6 method1\n4 method2\n").unwrap();
    std::fs::write(&bad, "5 a\n\nbad line\n").unwrap();
    let (f, s, b) = (
        full.to_str().unwrap(),
        sampled.to_str().unwrap(),
        bad.to_str().unwrap(),
    );
    let o = outcrop(&["brr", "overlap", f, s]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with("overlap (accuracy) 90.00% over 2 sites"),
        "{text}"
    );
    let o = outcrop(&["brr", "overlap", "--json", f, s]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!((v["accuracy"].as_f64().unwrap() - 0.9).abs() < 1e-12);
    assert_eq!(v["shares"].as_array().unwrap().len(), 2);
    let o = outcrop(&["brr", "overlap", f, b]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.txt: site profile, line 3"), "{err}");
}

#[test]
fn instrument_rewrites_and_its_errors_name_the_line_or_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("f.s");
    std::fs::write(
        &good,
        "\t.text\n\t.globl\tf\n\t.type\tf, @function\nf:\n\tbeq\ta0,zero,.L2\n\tli\ta0,1\n.L2:\n\tret\n\t.size\tf, .-f\n",
    )
    .unwrap();
    let out = dir.path().join("out.s");
    let (g, o) = (good.to_str().unwrap(), out.to_str().unwrap());
    let r = outcrop(&[
        "instrument",
        g,
        "-o",
        o,
        "--sites",
        "edges",
        "--sampling",
        "brr",
        "--json",
    ]);
    assert!(r.status.success(), "{:?}", text(&r));
    let j = json(&r);
    assert_eq!(j["sites"], 2);
    assert_eq!(j["functions"], 1);
    let s = std::fs::read_to_string(&out).unwrap();
    assert!(s.contains(".insn j 0x0b, x9, "));
    // the same input and options, the same bytes
    let again = dir.path().join("again.s");
    outcrop(&[
        "instrument",
        g,
        "-o",
        again.to_str().unwrap(),
        "--sites",
        "edges",
        "--sampling",
        "brr",
    ]);
    assert_eq!(std::fs::read(&again).unwrap(), s.as_bytes());
    // a function without .size: the line of its label
    let bad = dir.path().join("bad.s");
    std::fs::write(&bad, "\t.text\n\t.type\tf, @function\nf:\n\tret\n").unwrap();
    let r = outcrop(&["instrument", bad.to_str().unwrap(), "-o", o]);
    assert!(!r.status.success());
    let (_, err) = text(&r);
    assert!(err.contains("line 3") && err.contains("bad.s"), "{err}");
    // an interval brr cannot encode names the option; so does a bad combination
    let r = outcrop(&[
        "instrument",
        g,
        "-o",
        o,
        "--sampling",
        "brr",
        "--interval",
        "1000",
    ]);
    assert!(!r.status.success());
    assert!(text(&r).1.contains("--interval 1000"), "{}", text(&r).1);
    let r = outcrop(&["instrument", g, "-o", o, "--full-duplication"]);
    assert!(!r.status.success());
    assert!(text(&r).1.contains("--full-duplication"), "{}", text(&r).1);
    // a missing input is an error naming it
    let r = outcrop(&["instrument", "/nonexistent/x.s", "-o", o]);
    assert!(!r.status.success());
    assert!(text(&r).1.contains("/nonexistent/x.s"), "{}", text(&r).1);
}

#[test]
fn query_check_and_asm_report_as_a_compiler_would() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("fig2a.rpa");
    std::fs::write(
        &good,
        "for opBRANCH * every 256 collect pc misc ;\nsend 1 stop;\n",
    )
    .unwrap();
    let g = good.to_str().unwrap();
    let r = outcrop(&["query", "asm", g]);
    assert!(r.status.success(), "{:?}", text(&r));
    let (out, _) = text(&r);
    assert!(out.contains("every 256, collect pc misc"), "{out}");
    assert!(out.contains("q0  0x0004044800000000  send 1 stop"), "{out}");
    let j = json(&outcrop(&["query", "check", "--json", g]));
    assert_eq!(j["ok"], true);
    assert_eq!(j["instructions"][0], "0x0004044800000000");
    // a problem: file:line:column, the caret's label and the hint, exit status 1
    let bad = dir.path().join("bad.rpa");
    std::fs::write(
        &bad,
        "for opBRANCH * every 256\n  collect pc mics;\nsend 1 stop;\n",
    )
    .unwrap();
    let r = outcrop(&["query", "check", bad.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(1));
    let (_, err) = text(&r);
    assert!(
        err.contains("bad.rpa:2:14: unknown record item `mics`"),
        "{err}"
    );
    assert!(err.contains("did you mean `misc`?"), "{err}");
    let r = outcrop(&["query", "check", "--json", bad.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(1));
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(
        (j["line"].as_u64(), j["column"].as_u64()),
        (Some(2), Some(14))
    );
    assert_eq!(j["ok"], false);
}
