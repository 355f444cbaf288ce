//! `outcrop run --query` end to end: the report, its JSON, BOLT's `.fdata`, byte-identical
//! deterministic runs, profile tags from the command line, and clear errors.

use crate::util::root;
use std::path::Path;
use std::process::{Command, Output};

fn outcrop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(args)
        .current_dir(root().join("workloads"))
        .output()
        .unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn query(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn the_edge_query_reports_accuracy_writes_fdata_and_repeats_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let q = query(
        dir.path(),
        "edges.rpa",
        "for opBRANCH * every 256 collect pc misc ;\nsend 1 stop;\n",
    );
    let fdata = dir.path().join("p.fdata");
    let json = dir.path().join("r.json");
    let run = |out: &Path| {
        outcrop(&[
            "run",
            "--no-profile",
            "--deterministic",
            "--query",
            &q,
            "--fdata",
            fdata.to_str().unwrap(),
            "--json",
            "-o",
            out.to_str().unwrap(),
            "--",
            "bin/strsearch",
        ])
    };
    let o = run(&json);
    assert!(o.status.success(), "{}", err(&o));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["lossless"], true);
    let s = &j["queries"][0]["stats"];
    assert_eq!(s["dropped"], 0);
    assert_eq!(s["sent"], j["queues"][0]["received"]);
    let acc = &j["queues"][0]["detail"]["accuracy"];
    assert!(acc["overlap_pct"].as_f64().unwrap() > 90.0, "{acc}");
    // BOLT's format: `1 func off 1 func off mispreds count`, every count positive
    let text = std::fs::read_to_string(&fdata).unwrap();
    assert!(text.lines().count() > 10, "{text}");
    for l in text.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 8, "{l}");
        assert!(f[0] == "1" || f[0] == "0", "{l}");
        assert!(f[7].parse::<u64>().unwrap() > 0, "{l}");
    }
    // --deterministic: the same report, byte for byte
    let again = dir.path().join("r2.json");
    assert!(run(&again).status.success());
    assert_eq!(
        std::fs::read(&json).unwrap(),
        std::fs::read(&again).unwrap()
    );
}

#[test]
fn the_text_report_and_the_report_directory() {
    let dir = tempfile::tempdir().unwrap();
    let q = query(dir.path(), "cpi.rpa", "for opJMP * opBRANCH * opLOAD * opSTORE * opALU * opMULT * opFLOAT * opSYS *\nevery 1024 collect pc rrate;\nsend 4 stop;\n");
    let rep = dir.path().join("rep");
    let o = outcrop(&[
        "run",
        "--timing",
        "--no-profile",
        "--query",
        &q,
        "--report",
        rep.to_str().unwrap(),
        "--",
        "bin/recursion",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let e = err(&o);
    assert!(e.contains("queue 4 → cpi service (query 1)"), "{e}");
    assert!(e.contains("cycles: estimated"), "{e}");
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(rep.join("rpa.json")).unwrap()).unwrap();
    assert_eq!(j["queues"][0]["detail"]["service"], "cpi");
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(rep.join("run.json")).unwrap()).unwrap();
    assert!(run.to_string().contains("\"rpa\""), "{run}");
    let html = std::fs::read_to_string(rep.join("report.html")).unwrap();
    assert!(
        html.contains("<h2 id=\"rpa\">") && html.contains("cpi service"),
        "no RPA section"
    );
}

#[test]
fn tags_by_function_select_only_its_instructions() {
    let dir = tempfile::tempdir().unwrap();
    let q = query(
        dir.path(),
        "t.rpa",
        "for opBRANCH 2 always collect pc misc ;\ncount;\nsend 1 stop;\n",
    );
    let json = dir.path().join("r.json");
    let o = outcrop(&[
        "run",
        "--no-profile",
        "--deterministic",
        "--query",
        &q,
        "--tag",
        "quick_sort=2",
        "--json",
        "-o",
        json.to_str().unwrap(),
        "--",
        "bin/qsort_ints",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    // the count action saw every record the query sent
    assert_eq!(j["counters"][0][1], j["queries"][0]["stats"]["sent"]);
    let labels = j["queues"][0]["detail"]["labels"].as_array().unwrap();
    assert!(!labels.is_empty());
    assert!(
        labels
            .iter()
            .all(|l| l.as_str().unwrap().starts_with("quick_sort")),
        "{labels:?}"
    );
}

#[test]
fn mistakes_are_named_and_exit_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let edges = query(
        dir.path(),
        "edges.rpa",
        "for opBRANCH * every 256 collect pc misc ;\nsend 1 stop;\n",
    );
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--query".into(),
                query(
                    dir.path(),
                    "bad.rpa",
                    "for opBRANCH * every 256 collect pc mics ;\nsend 1 stop;\n",
                ),
            ],
            "bad.rpa:1:37",
        ),
        (
            vec![
                "--query".into(),
                query(
                    dir.path(),
                    "ev.rpa",
                    "for evL2DMISS * always collect pc res2 ;\nsend 2 stop;\n",
                ),
            ],
            "--timing",
        ),
        (
            vec![
                "--query".into(),
                edges.clone(),
                "--service".into(),
                "1=cpi".into(),
            ],
            "needs `rrate`",
        ),
        (
            vec![
                "--query".into(),
                edges.clone(),
                "--service".into(),
                "bogus".into(),
            ],
            "unknown service `bogus`",
        ),
        (
            vec![
                "--query".into(),
                edges.clone(),
                "--tag".into(),
                "no_such_function=1".into(),
            ],
            "no function `no_such_function`",
        ),
        (
            vec![
                "--query".into(),
                edges.clone(),
                "--tag".into(),
                "main=4".into(),
            ],
            "1, 2 or 3",
        ),
        (
            vec![
                "--query".into(),
                edges.clone(),
                "--gc-heap".into(),
                "nope:gc_roots:64".into(),
            ],
            "no symbol `nope`",
        ),
        (
            vec![
                "--query".into(),
                edges.clone(),
                "--queue-capacity".into(),
                "129".into(),
            ],
            "1 to 128",
        ),
    ];
    for (flags, want) in cases {
        let mut args = vec!["run", "--no-profile"];
        args.extend(flags.iter().map(String::as_str));
        args.extend(["--", "bin/hello"]);
        let o = outcrop(&args);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err(&o).contains(want), "{args:?}: {}", err(&o));
    }
}

#[test]
fn queries_compose_with_the_other_mechanisms_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let q = query(
        dir.path(),
        "edges.rpa",
        "for opBRANCH * every 256 collect pc misc ;\nsend 1 stop;\n",
    );
    let rep = dir.path().join("rep");
    let o = outcrop(&[
        "run",
        "--deterministic",
        "--query",
        &q,
        "--rap",
        "block",
        "--paths",
        "16:100000",
        "--report",
        rep.to_str().unwrap(),
        "--",
        "bin/recursion",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    for f in [
        "rpa.json",
        "rap.json",
        "paths.json",
        "profile.json",
        "run.json",
    ] {
        assert!(rep.join(f).exists(), "{f} missing");
    }
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(rep.join("rpa.json")).unwrap()).unwrap();
    let s = &j["queries"][0]["stats"];
    assert_eq!(s["sent"], j["queues"][0]["received"]);
    assert!(
        j["queues"][0]["detail"]["accuracy"]["overlap_pct"]
            .as_f64()
            .unwrap()
            > 90.0
    );
}

#[test]
fn the_hardware_model_reports_its_stalls_and_needs_timing() {
    let dir = tempfile::tempdir().unwrap();
    let q = query(
        dir.path(),
        "edges.rpa",
        "for opBRANCH * every 16 collect pc misc ;\nsend 1 stop;\n",
    );
    let json = dir.path().join("r.json");
    let go = |extra: &[&str], out: &Path| {
        let mut a = vec!["run", "--no-profile", "--query", &q, "--rpa-hw", "1:1"];
        a.extend_from_slice(extra);
        a.extend(["--json", "-o", out.to_str().unwrap(), "--", "bin/strsearch"]);
        outcrop(&a)
    };
    let o = go(&["--timing=rpa2000"], &json);
    assert!(o.status.success(), "{}", err(&o));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let h = &j["hardware"];
    assert_eq!(h["config"]["networks"], 1);
    assert_eq!(h["config"]["buffers"], 1);
    let held = |k: &str| h["stats"][k].as_u64().unwrap();
    assert!(held("held_network") + held("held_buffer") > 0, "{h}");
    assert_eq!(h["stats"]["profiled"], j["queries"][0]["stats"]["selected"]);
    assert!(h["occupancy"]["cycles"].as_u64().unwrap() > 0);
    let text = outcrop(&[
        "run",
        "--no-profile",
        "--timing=rpa2000",
        "--query",
        &q,
        "--rpa-hw",
        "1:1",
        "--",
        "bin/strsearch",
    ]);
    assert!(text.status.success(), "{}", err(&text));
    let t = String::from_utf8_lossy(&text.stdout).into_owned() + &err(&text);
    assert!(
        t.contains("hardware: 1 profile networks, 1 profile buffers"),
        "{t}"
    );
    assert!(t.contains("dispatch stalled"), "{t}");
    // without a timing model there is no dispatch to hold
    let o = go(&[], &json);
    assert!(!o.status.success());
    assert!(err(&o).contains("--timing"), "{}", err(&o));
    // a bad size names the flag and the expected form
    let o = outcrop(&[
        "run",
        "--timing",
        "--query",
        &q,
        "--rpa-hw",
        "four",
        "--",
        "bin/hello",
    ]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("--rpa-hw four") && err(&o).contains("NETWORKS:BUFFERS"),
        "{}",
        err(&o)
    );
}

#[test]
fn prefetch_and_the_adaptive_rate_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let l2 = query(
        dir.path(),
        "l2.rpa",
        "for evL2DMISS * always collect pc res2 ;\nsend 1 stop;\n",
    );
    let json = dir.path().join("p.json");
    let o = outcrop(&[
        "run",
        "--no-profile",
        "--timing",
        "--query",
        &l2,
        "--rpa-hw",
        "paper",
        "--rpa-service-cycles",
        "20",
        "--rpa-prefetch",
        "--json",
        "-o",
        json.to_str().unwrap(),
        "--",
        "bin/micro_stride_miss",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let p = &j["hardware"]["prefetch"];
    assert_eq!(p[0]["config"]["latency"], 100);
    assert_eq!(p[0]["stats"]["misses"], j["queries"][0]["stats"]["sent"]);
    // a strided miss stream: the stride table predicts it
    assert!(p[0]["stats"]["stride_hits"].as_u64().unwrap() > 0, "{p}");
    assert!(j["hardware"]["adaptive"].is_null());

    let edges = query(
        dir.path(),
        "edges.rpa",
        "for opBRANCH * every 2 collect pc misc ;\nsend 1 stop;\n",
    );
    let o = outcrop(&[
        "run",
        "--no-profile",
        "--timing=rpa2000",
        "--query",
        &edges,
        "--rpa-hw",
        "1:2",
        "--rpa-adaptive",
        "--",
        "bin/strsearch",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let t = String::from_utf8_lossy(&o.stdout).into_owned() + &err(&o);
    assert!(t.contains("adaptive rate (budget 0.50%"), "{t}");
    // option errors name the option
    for (args, want) in [
        (
            vec!["--rpa-hw", "paper", "--rpa-adaptive", "150"],
            "--rpa-adaptive 150",
        ),
        (
            vec![
                "--rpa-hw",
                "paper",
                "--rpa-prefetch",
                "5",
                "--rpa-prefetch-degree",
                "0",
            ],
            "degree",
        ),
        (vec!["--rpa-prefetch"], "--rpa-hw"),
    ] {
        let mut a = vec!["run", "--timing", "--query", &edges];
        a.extend(args);
        a.extend(["--", "bin/hello"]);
        let o = outcrop(&a);
        assert!(!o.status.success());
        assert!(err(&o).contains(want), "{want}: {}", err(&o));
    }
    // prefetching needs miss records in a log queue
    let o = outcrop(&[
        "run",
        "--timing",
        "--query",
        &edges,
        "--rpa-hw",
        "paper",
        "--rpa-prefetch",
        "--",
        "bin/hello",
    ]);
    assert!(!o.status.success());
    assert!(err(&o).contains("collect pc res2"), "{}", err(&o));
}
