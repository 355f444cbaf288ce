//! `outcrop run --rap ...` and `outcrop exec --timing` end to end, on bundled workloads and the
//! `probe` guest.

use crate::util::root;
use std::path::{Path, PathBuf};
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

#[test]
fn rap_streams_with_exact_counts_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let o = outcrop(&[
        "run",
        "--rap",
        "pc,block,load-value,l1d-miss-pc,zero-load-addr",
        "--exact",
        "--deterministic",
        "--json",
        "-o",
        report.to_str().unwrap(),
        "--",
        "bin/recursion",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    // the guest's own output still reaches stdout
    assert!(String::from_utf8_lossy(&o.stdout).contains("checksum"));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let insns = v["instructions"].as_u64().unwrap();
    assert!(insns > 1_000_000);
    assert!(
        v["timing"]["cycles"].as_u64().unwrap() > 0,
        "cache stream ran timing"
    );
    let streams = v["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 5);
    for s in streams {
        let name = s["stream"].as_str().unwrap();
        let n = s["n"].as_u64().unwrap();
        if name == "pc" || name == "block" {
            assert_eq!(n, insns, "{name}: one event per instruction");
        }
        assert!(n > 0, "{name}");
        let hot = s["hot"].as_array().unwrap();
        assert!(!hot.is_empty(), "{name}");
        // the guarantee: every hot range's estimate is within ε·n of the exact count
        for h in hot {
            let est = h["count"].as_u64().unwrap();
            let exact = h["exact_inclusive"].as_u64().unwrap();
            assert!(est <= exact && exact - est <= n / 100 + 1, "{name}: {h}");
        }
        if name == "pc" {
            assert!(hot.iter().all(|h| h["code"].is_string()), "code labels");
            let labels: Vec<&str> = hot.iter().map(|h| h["code"].as_str().unwrap()).collect();
            // recursion.c's own functions name the hot code
            assert!(
                labels.iter().any(|l| l.contains("queens_bits")),
                "{labels:?}"
            );
            // named by where the instructions ran: shares, most first, adding up to ≤ 100%
            for l in &labels {
                let shares: Vec<f64> = l
                    .split(", ")
                    .filter_map(|p| p.split_whitespace().nth(1))
                    .filter_map(|p| p.strip_suffix('%'))
                    .filter_map(|p| p.parse().ok())
                    .collect();
                assert!(!shares.is_empty(), "{l}");
                assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{l}");
                assert!(shares.iter().sum::<f64>() <= 100.5, "{l}");
            }
        }
        assert!(s["max_error_pct"].as_f64().unwrap() < 5.0);
        assert!(!s["sizes"].as_array().unwrap().is_empty());
    }
}

#[test]
fn text_reports_are_deterministic() {
    let run = || {
        outcrop(&[
            "run",
            "--rap",
            "block,narrow-pc",
            "--eps",
            "0.1",
            "--deterministic",
            "-o",
            "-",
            "--",
            "bin/hello",
        ])
    };
    let (a, b) = (run(), run());
    assert!(a.status.success(), "{}", err(&a));
    assert_eq!(a.stdout, b.stdout);
    let text = String::from_utf8_lossy(&a.stdout);
    assert!(text.contains("== block"), "{text}");
    assert!(text.contains("== narrow-pc"), "{text}");
}

#[test]
fn bad_arguments_are_clear_errors() {
    let o = outcrop(&["run", "--rap", "pcs", "--", "bin/hello"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("unknown stream `pcs`"), "{}", err(&o));
    assert!(
        err(&o).contains("zero-load-addr"),
        "lists the streams: {}",
        err(&o)
    );
    let o = outcrop(&["run", "--rap", "pc", "--eps", "2", "--", "bin/hello"]);
    assert_eq!(o.status.code(), Some(1));
    let o = outcrop(&["run", "--rap", "pc", "--timing=nope", "--", "bin/hello"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("neither a preset"), "{}", err(&o));
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("t.toml");
    std::fs::write(&cfg, "[l1d]\nways = 3\n").unwrap();
    let o = outcrop(&[
        "exec",
        &format!("--timing={}", cfg.display()),
        "--",
        "bin/hello",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("l1d.size"), "{}", err(&o));
    // branch-on-random modes are listed; a program without brr runs the same in each
    let o = outcrop(&["exec", "--brr", "sometimes", "--", "bin/hello"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("lfsr, counter, always, never, trap"),
        "{}",
        err(&o)
    );
    for mode in ["lfsr", "counter", "always", "never", "trap"] {
        let o = outcrop(&["exec", "--brr", mode, "--brr-seed", "7", "--", "bin/hello"]);
        assert!(o.status.success(), "{mode}: {}", err(&o));
    }
    let o = outcrop(&["exec", "--brr-seed", "0", "--", "bin/hello"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("non-zero"), "{}", err(&o));
}

#[test]
fn a_faulting_guest_still_gets_its_report() {
    let probe = root().join("crates/outcrop/tests/fixtures/guest/probe");
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.txt");
    let o = outcrop(&[
        "run",
        "--rap",
        "pc",
        "-o",
        report.to_str().unwrap(),
        "--",
        probe.to_str().unwrap(),
        "segv",
    ]);
    assert_eq!(o.status.code(), Some(139));
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("fault"), "{text}");
    assert!(text.contains("== pc"), "{text}");
}

#[test]
fn exec_timing_adds_totals_to_stats() {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("s.json");
    for preset in ["default", "inorder"] {
        let o = outcrop(&[
            "exec",
            &format!("--timing={preset}"),
            "--stats-json",
            stats.to_str().unwrap(),
            "--",
            "bin/micro_taken_loop",
        ]);
        assert!(o.status.success(), "{}", err(&o));
        assert!(err(&o).contains("CPI stack"), "{}", err(&o));
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        let t = &v["timing"];
        assert_eq!(t["config"], preset);
        assert_eq!(t["instructions"], v["instructions"]);
        let cycles = t["cycles"].as_u64().unwrap();
        let s = &t["cpi_stack"];
        let sum: u64 = ["base", "branch", "icache", "dcache", "other"]
            .iter()
            .map(|k| s[k].as_u64().unwrap())
            .sum();
        assert_eq!(sum, cycles);
        for k in [
            "l1d_accesses",
            "l1d_misses",
            "l2_data_accesses",
            "l2_data_misses",
        ] {
            assert!(t[k].is_u64(), "{k}");
        }
    }
}

/// The RAP JSON without its wall-clock fields.
fn rap_json(path: &Path) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("wall_seconds");
    v
}

#[test]
fn one_run_with_every_mechanism_equals_the_separate_commands() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    for timing in [true, false] {
        let t: &[&str] = if timing { &["--timing"] } else { &[] };
        let with = |args: &[&str]| -> Vec<String> {
            let mut v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            let at = v.iter().position(|a| a == "--").unwrap();
            for (i, x) in t.iter().enumerate() {
                v.insert(at + i, x.to_string());
            }
            v
        };
        let run = |args: Vec<String>| {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = outcrop(&refs);
            assert!(o.status.success(), "{args:?}: {}", err(&o));
            o
        };
        let prog = "bin/qsort_ints";
        let report = p("report");
        run(with(&[
            "run",
            "--rap",
            "block",
            "--json",
            "-o",
            &p("all.json"),
            "--wpp",
            &p("all.wpp"),
            "--paths",
            "16",
            "--report",
            &report,
            "--deterministic",
            "--",
            prog,
        ]));
        run(with(&[
            "run",
            "--rap",
            "block",
            "--json",
            "-o",
            &p("rap.json"),
            "--deterministic",
            "--",
            prog,
        ]));
        run(with(&[
            "wpp",
            "record",
            "-o",
            &p("one.wpp"),
            "--deterministic",
            "--",
            prog,
        ])
        .into_iter()
        .filter(|a| a != "--timing")
        .collect());
        run(with(&[
            "paths",
            "record",
            "--entries",
            "16",
            "-o",
            &p("one.samples"),
            "--deterministic",
            "--",
            prog,
        ]));
        let read = |n: &str| std::fs::read(dir.path().join(n)).unwrap();
        assert!(
            read("all.wpp") == read("one.wpp"),
            "timing {timing}: .wpp bytes differ"
        );
        assert!(
            read("report/branch.samples") == read("one.samples"),
            "timing {timing}: samples files differ"
        );
        assert_eq!(
            rap_json(&dir.path().join("all.json")),
            rap_json(&dir.path().join("rap.json")),
            "timing {timing}: RAP trees differ"
        );
        let stats: serde_json::Value = serde_json::from_slice(&read("report/run.json")).unwrap();
        assert_eq!(
            stats["mechanisms"],
            serde_json::json!(["rap", "wpp", "paths", "profile"])
        );
        assert_eq!(stats["truncated"], false);
        assert!(dir.path().join("report/rap.json").exists());
        assert!(dir.path().join("report/wpp.json").exists());
        assert!(dir.path().join("report/paths.json").exists());
    }
}

#[test]
fn bad_outputs_fail_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/x.wpp");
    let started = std::time::Instant::now();
    let o = outcrop(&[
        "run",
        "--wpp",
        missing.to_str().unwrap(),
        "--",
        "bin/qsort_ints",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("no/such/dir"), "{}", err(&o));
    // the guest never ran: nothing on stdout
    assert!(o.stdout.is_empty());
    assert!(started.elapsed().as_secs() < 5);
}

#[test]
fn run_with_no_mechanism_prints_the_exact_flat_profile() {
    let o = outcrop(&["run", "--", "bin/qsort_ints"]);
    assert!(o.status.success(), "{}", err(&o));
    // the report goes to stderr: stdout is the guest's alone
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("Functions of"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let out = err(&o);
    assert!(
        out.contains("Functions of bin/qsort_ints by self instructions"),
        "{out}"
    );
    assert!(out.contains("  main\n"), "{out}");
    assert!(
        out.contains("self %: instructions retired in the function itself"),
        "{out}"
    );
    // --json without --rap: the profile as JSON, whose self counts add up to the run
    let dir = tempfile::tempdir().unwrap();
    let o = outcrop(&[
        "run",
        "--json",
        "-o",
        dir.path().join("p.json").to_str().unwrap(),
        "--report",
        dir.path().to_str().unwrap(),
        "--",
        "bin/hello",
        "first",
        "second",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("p.json")).unwrap()).unwrap();
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("run.json")).unwrap()).unwrap();
    assert_eq!(v["instructions"], run["instructions"]);
    // the guest's arguments, every one of them, after its program name
    assert_eq!(run["args"], serde_json::json!(["first", "second"]));
    let profile: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("profile.json")).unwrap()).unwrap();
    let sum: u64 = profile["tree"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["self"]["instructions"].as_u64().unwrap())
        .sum();
    assert_eq!(
        Some(sum),
        run["instructions"].as_u64(),
        "self counts sum to the run"
    );
}

#[test]
fn rap_pc_and_block_streams_are_the_same_on_every_engine() {
    // untimed, RAP's pc and block streams ride on basic blocks in retire order
    // (`RapProfiler::by_blocks`), which every engine delivers: the compiling tier's trees
    // equal the single-step interpreter's byte for byte, per thread too, and when the run
    // stops mid-block at its limit (crates/run/tests/it/threads.rs checks them against
    // trees fed from retire records)
    let dir = tempfile::tempdir().unwrap();
    for (prog, extra) in [
        ("bin/qsort_ints", None),
        ("bin/threads", Some("--rap-per-thread")),
    ] {
        let rap = |engine: &str| {
            let out = dir.path().join(format!("{engine}.json"));
            let mut args = vec![
                "run",
                "--engine",
                engine,
                "--max-insns",
                "3000017",
                "--rap",
                "pc,block",
                "--exact",
                "--deterministic",
                "--json",
                "-o",
                out.to_str().unwrap(),
            ];
            args.extend(extra);
            args.extend(["--", prog]);
            let o = outcrop(&args);
            assert!(err(&o).contains("instruction limit reached"), "{}", err(&o));
            let v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
            v["streams"].clone()
        };
        let (step, jit) = (rap("step"), rap("jit"));
        assert!(step.as_array().is_some_and(|a| a.len() >= 2), "{step}");
        assert!(step == jit, "{prog}: the trees differ");
    }
}

#[test]
fn run_json_says_what_the_compiling_tier_did() {
    // the exact profile alone runs on the compiling tier (compiled blocks count their runs):
    // run.json reports the tier as `exec --stats-json` does
    let dir = tempfile::tempdir().unwrap();
    let o = outcrop(&[
        "run",
        "--max-insns",
        "20000000",
        "--report",
        dir.path().to_str().unwrap(),
        "--",
        "bin/qsort_ints",
    ]);
    // (stopped by the limit: the reports are written all the same)
    assert!(err(&o).contains("instruction limit reached"), "{}", err(&o));
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("run.json")).unwrap()).unwrap();
    let t = &run["compiling_tier"];
    assert!(t["units"].as_u64().unwrap() > 0, "{run}");
    assert!(t["entries"].as_u64().unwrap() > 0, "{run}");
    assert!(t["code_bytes"].as_u64().unwrap() > 0, "{run}");
}

#[test]
fn sandbox_refusals_name_the_option_that_grants_them() {
    let o = outcrop(&["exec", "--", "bin/fileio", "src/fileio.c"]);
    let e = err(&o);
    // fileio first creates its scratch file beside the current directory
    assert!(
        e.contains("sandbox: the guest was refused")
            && e.contains("outcrop-fileio.tmp (write); --allow-rw "),
        "{e}"
    );
    assert_eq!(e.matches("sandbox:").count(), 1, "reported once: {e}");
    // granted, nothing is reported
    let o = outcrop(&[
        "exec",
        "--allow",
        "src/fileio.c",
        "--allow-rw",
        ".",
        "--",
        "bin/fileio",
        "src/fileio.c",
    ]);
    assert!(!err(&o).contains("sandbox:"), "{}", err(&o));
}

#[test]
fn an_interrupt_stops_the_guest_and_keeps_every_profile() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report");
    let wpp = dir.path().join("loop.wpp");
    let probe = root().join("crates/outcrop/tests/fixtures/guest/probe");
    let child = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["run", "--rap", "pc", "--json", "-o"])
        .arg(dir.path().join("rap.json"))
        .arg("--wpp")
        .arg(&wpp)
        .args(["--paths", "4:10000", "--report"])
        .arg(&report)
        .args(["--deterministic", "--"])
        .arg(&probe)
        .arg("loop")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // let it run a few slices, then Ctrl-C
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    let e = err(&o);
    assert_eq!(o.status.code(), Some(130), "{e}");
    assert!(e.contains("interrupted after"), "{e}");
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.join("run.json")).unwrap()).unwrap();
    assert_eq!(stats["truncated"], true);
    assert!(stats["instructions"].as_u64().unwrap() > 0);
    // every profile was finished and is readable
    let r = outcrop(&["wpp", "report", wpp.to_str().unwrap()]);
    assert!(r.status.success(), "{}", err(&r));
    let s = outcrop(&[
        "paths",
        "report",
        report.join("branch.samples").to_str().unwrap(),
        "--binary",
        probe.to_str().unwrap(),
    ]);
    assert!(s.status.success(), "{}", err(&s));
    let rap: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("rap.json")).unwrap()).unwrap();
    assert!(rap["streams"][0]["n"].as_u64().unwrap() > 0);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".partial"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn no_program_profiles_every_bundled_workload_with_every_mechanism() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["run", "--max-insns", "200000", "--report"])
        .arg(dir.path())
        .env("OUTCROP_WORKLOADS", root().join("workloads"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("suite.json")).unwrap()).unwrap();
    let programs = index.as_array().unwrap();
    let bins = std::fs::read_dir(root().join("workloads/bin"))
        .unwrap()
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name();
            let n = n.to_string_lossy();
            !n.contains('.') && n != "TOOLCHAIN"
        })
        .count();
    assert_eq!(programs.len(), bins, "every workload, none left out");
    for p in programs {
        let sub = PathBuf::from(p["report"].as_str().unwrap());
        let name = sub.file_name().unwrap().to_string_lossy().into_owned();
        for f in [
            "run.json",
            "rap.json",
            "wpp.json",
            "paths.json",
            "branch.samples",
            "report.html",
            "report.json",
            "profile.json",
            "profile.speedscope.json",
            "profile.firefox.json",
            "profile.folded",
        ] {
            assert!(sub.join(f).exists(), "{name}: {f} missing");
        }
        assert!(
            sub.join(format!("{name}.wpp")).exists(),
            "{name}: .wpp missing"
        );
        // the text report, the profile then RAP
        let text = std::fs::read_to_string(sub.join("report.txt")).unwrap();
        assert!(text.contains("by self"), "{name}: {text}");
        assert!(text.contains("== block"), "{name}: {text}");
        let run: serde_json::Value =
            serde_json::from_slice(&std::fs::read(sub.join("run.json")).unwrap()).unwrap();
        assert_eq!(
            run["mechanisms"],
            serde_json::json!(["rap", "wpp", "paths", "profile"]),
            "{name}"
        );
    }
    let index = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert_eq!(
        index.matches("/report.html\">").count(),
        bins,
        "a row per workload"
    );
}
