//! What a perf user meets on day one, each a papercut once: a file that is not a program named
//! for what it is, `diff` leading with real changes rather than start-up noise.

use crate::util::{outcrop, workload};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_file_that_is_not_a_program_is_named_for_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8], &str); 4] = [
        (
            "script.sh",
            b"#!/bin/sh\necho hi\n",
            "a script (`#!/bin/sh`), not an ELF program",
        ),
        (
            "notes.txt",
            b"hello\n",
            "not an ELF file: it starts with 68 65 6c 6c (text)",
        ),
        ("empty", b"", "an empty file, not an ELF program"),
        (
            "cut",
            b"\x7fELF\x02\x01\x01",
            "a truncated ELF file: 7 bytes",
        ),
    ];
    for (name, bytes, says) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        for command in ["exec", "run"] {
            let o = outcrop(&[command, "--", p.to_str().unwrap()]);
            assert!(!o.status.success());
            let e = stderr(&o);
            assert!(e.contains(says), "{command} {name}: {e}");
            assert!(!e.contains("Invalid ELF header"), "{e}");
        }
    }
}

#[test]
fn diff_leaves_start_up_noise_out_of_its_tables() {
    let dir = tempfile::tempdir().unwrap();
    let program = workload("qsort_ints");
    let report = |name: &str, extra: &[&str]| {
        let d = dir.path().join(name);
        let mut args = vec!["run", "--report", d.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend(["--", program.to_str().unwrap()]);
        let o = outcrop(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        d
    };
    // one more environment variable: a few hundred instructions more at start-up, nothing else
    let (a, b) = (report("a", &[]), report("b", &["--env", "X=1"]));
    let o = outcrop(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(o.status.success(), "{text}");
    assert!(text.contains("the same within noise"), "{text}");
    assert!(text.contains("(start-up noise), left out"), "{text}");
    // no table row: every row's change is under 0.01% of the run
    assert!(!text.contains("Δ self"), "{text}");
    // the JSON keeps every row
    let o = outcrop(&["diff", "--json", a.to_str().unwrap(), b.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["profile"]["functions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["delta"]["self"]["instructions"].as_i64() != Some(0)),
        "{v}"
    );
}

#[test]
fn a_guest_fault_names_its_function_line_and_call_stack() {
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.json");
    let program = crate::util::root().join("crates/outcrop/tests/fixtures/guest/crash");
    let o = outcrop(&[
        "exec",
        "--stats-json",
        stats.to_str().unwrap(),
        "--",
        program.to_str().unwrap(),
    ]);
    // SIGSEGV, as qemu-riscv64-static exits
    assert_eq!(o.status.code(), Some(139));
    let e = stderr(&o);
    assert!(e.contains("store to 0xfa0"), "{e}");
    assert!(e.contains("\n  in fill+0xe at ./crash.c:7"), "{e}");
    // the whole stack, from the faulting function out to _start, through the line of each
    // call (`.debug_frame` for the program's functions, `.eh_frame` for glibc's)
    let frames: Vec<&str> = e
        .lines()
        .filter(|l| l.trim_start().starts_with('#'))
        .collect();
    let expect = [
        "fill+0xe at ./crash.c:7",
        "build+0x10 at ./crash.c:12",
        "run+0xa at ./crash.c:17",
        "main+0x2a at ./crash.c:26",
        "__libc_start_call_main+",
        "__libc_start_main+",
        "_start+",
    ];
    assert_eq!(frames.len(), expect.len(), "{e}");
    for (line, want) in frames.iter().zip(expect) {
        assert!(line.contains(want), "{line} lacks {want}:\n{e}");
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    let bt = v["backtrace"].as_array().unwrap();
    assert_eq!(bt.len(), expect.len(), "{v}");
    assert_eq!(bt[3]["function"], "main+0x2a");
    assert_eq!(bt[3]["line"], "./crash.c:26");
    // every engine stops at the same place with the same stack
    for engine in ["step", "blocks"] {
        let o = outcrop(&["exec", "--engine", engine, "--", program.to_str().unwrap()]);
        assert_eq!(stderr(&o), e, "{engine}");
    }
}

/// `outcrop exec --deterministic --env LANG=C.UTF-8 --env TZ=… EXTRA -- locale`: (stdout,
/// stderr).
fn locale_run(tz: &str, extra: &[&str]) -> (String, String) {
    let program = crate::util::root().join("crates/outcrop/tests/fixtures/guest/locale");
    let tz = format!("TZ={tz}");
    let mut args = vec![
        "exec",
        "--deterministic",
        "--env",
        "LANG=C.UTF-8",
        "--env",
        &tz,
    ];
    args.extend_from_slice(extra);
    args.extend(["--", program.to_str().unwrap()]);
    let o = outcrop(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    (String::from_utf8_lossy(&o.stdout).into_owned(), stderr(&o))
}

#[test]
fn the_sandbox_names_the_locale_and_time_zone_grants_a_guest_needs() {
    // Debian's libc-bin ships the C.UTF-8 locale; a host without it has nothing to grant
    if !std::path::Path::new("/usr/lib/locale/C.utf8").is_dir() {
        eprintln!("no /usr/lib/locale/C.utf8 on this host; skipping");
        return;
    }
    // a TZ rule is looked up as a file first: no hint proposes granting it
    let (out, err) = locale_run("EST5EDT,M3.2.0,M11.1.0", &[]);
    assert!(out.contains("locale: (null)"), "{out}");
    assert!(out.contains("time: 2023-11-14 17:13 EST"), "{out}");
    assert!(!err.contains("zoneinfo"), "{err}");
    // one hint for all the locale files, naming the directories that give them
    assert_eq!(err.matches("looked for locale data").count(), 1, "{err}");
    assert!(
        err.contains("so it runs in the C locale; --allow /usr/lib/locale"),
        "{err}"
    );
    // granted as the hint says, the guest gets the locale (as under qemu)
    let (out, err) = locale_run(
        "EST5EDT,M3.2.0,M11.1.0",
        &["--allow", "/usr/lib/locale", "--allow", "/usr/share/locale"],
    );
    assert!(out.contains("locale: C.UTF-8"), "{out}\n{err}");
    assert!(!err.contains("locale data"), "{err}");
    // a named zone the host has: the exact file to grant
    let zone = "/usr/share/zoneinfo/America/New_York";
    if std::path::Path::new(zone).exists() {
        let (out, err) = locale_run("America/New_York", &[]);
        assert!(out.contains("UTC") || out.contains("America"), "{out}");
        assert!(err.contains(&format!("--allow {zone}")), "{err}");
        let (out, _) = locale_run("America/New_York", &["--allow", zone]);
        assert!(out.contains("time: 2023-11-14 17:13 EST"), "{out}");
    }
}

#[test]
fn annotate_lists_a_functions_instructions_with_exact_counts() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r");
    let program = workload("qsort_ints");
    let o = outcrop(&[
        "run",
        "--report",
        report.to_str().unwrap(),
        "--",
        program.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let profile: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.join("profile.json")).unwrap()).unwrap();
    let main = profile["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "main")
        .unwrap()
        .clone();
    // JSON: every instruction of main, in order, summing to main's self count
    let o = outcrop(&["annotate", report.to_str().unwrap(), "main", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let a: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let insns = a["instructions"].as_array().unwrap();
    let sum: u64 = insns
        .iter()
        .map(|i| i["self"]["instructions"].as_u64().unwrap())
        .sum();
    // every address of main's symbol: its own self count plus what its inlined calls took
    // (annotate lists a symbol's instructions, inlined code included, as perf annotate does)
    let (lo, hi) = (
        main["start"].as_u64().unwrap(),
        main["start"].as_u64().unwrap() + main["size"].as_u64().unwrap(),
    );
    let in_symbol: u64 = profile["pcs"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| (lo..hi).contains(&r[0].as_u64().unwrap()))
        .map(|r| r[1].as_u64().unwrap())
        .sum();
    assert_eq!(sum, in_symbol);
    assert!(sum >= main["self"]["instructions"].as_u64().unwrap());
    let pcs: Vec<u64> = insns.iter().map(|i| i["pc"].as_u64().unwrap()).collect();
    assert!(pcs.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(pcs[0], main["start"].as_u64().unwrap());
    // jumps within the function, and their targets marked; calls name their callee
    let targets: Vec<u64> = insns.iter().filter_map(|i| i["jump_to"].as_u64()).collect();
    assert!(!targets.is_empty());
    for t in &targets {
        let i = insns.iter().find(|i| i["pc"] == *t).unwrap();
        assert_eq!(i["jump_target"], true);
    }
    assert!(insns
        .iter()
        .any(|i| i["assembly"].as_str().unwrap().ends_with("<malloc>")));
    // lines from the workload's DWARF, hottest first
    let lines = a["lines"].as_array().unwrap();
    assert!(lines[0]["line"].as_str().unwrap().contains("qsort_ints.c:"));
    // source text only from files beneath the working directory (`./src/qsort_ints.c` from
    // workloads/, not from elsewhere: a path inside the program is untrusted)
    let text_of = |dir: &std::path::Path| {
        let args = ["annotate", report.to_str().unwrap(), "main", "--json"];
        let o = crate::util::outcrop_in(&args, dir);
        let a: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        a["lines"][0]["text"].clone()
    };
    assert!(text_of(&crate::util::workloads())
        .as_str()
        .unwrap()
        .contains("tmp[k++]"));
    assert!(text_of(dir.path()).is_null());
    // text: as perf annotate lays it out
    let o = outcrop(&["annotate", report.to_str().unwrap(), "main"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.starts_with("Annotate of main in "), "{text}");
    assert!(text.contains("Hottest source lines"), "{text}");
    assert!(text.contains("  → +0x"), "{text}");
    // a compiler's clone by its origin's name
    let o = outcrop(&["annotate", report.to_str().unwrap(), "msort_with_tmp"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("Annotate of msort_with_tmp.part.0 "),
        "{}",
        stderr(&o)
    );
    // the page annotates the hottest functions, main among them
    let page = std::fs::read_to_string(report.join("report.html")).unwrap();
    assert!(page.contains("<h2 id=\"annotate\">Annotated hot functions</h2>"));
    assert!(page.contains("<details><summary><code>main</code></summary><pre>Annotate of main"));
    // errors say what is wrong
    let o = outcrop(&["annotate", report.to_str().unwrap(), "no_such_function"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no function `no_such_function` ran"),
        "{}",
        stderr(&o)
    );
    let other = workload("hello");
    let o = outcrop(&[
        "annotate",
        report.to_str().unwrap(),
        "main",
        "--binary",
        other.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("is not the program the profile was made of"),
        "{}",
        stderr(&o)
    );
}

/// Inlined calls are frames: `mix` inlined into `step` and `other`, `step` into `work`. The
/// flat profile is checked address by address against binutils' `addr2line -i` (another
/// DWARF reader than ours), and the tree's inlined nodes against the loop counts.
#[test]
fn inlined_calls_are_frames_charged_as_addr2line_reads_them() {
    let program = crate::util::root().join("crates/outcrop/tests/fixtures/guest/inline");
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("rep");
    let o = outcrop(&[
        "run",
        "--report",
        report.to_str().unwrap(),
        "--",
        program.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.join("profile.json")).unwrap()).unwrap();
    // work is reached by one call chain (split exactly), other by two (split in proportion)
    assert_eq!(p["inline"]["exact"], 1, "{}", p["inline"]);
    assert_eq!(p["inline"]["apportioned"], 2, "{}", p["inline"]);
    let self_of = |name: &str| {
        p["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .map_or(0, |f| f["self"]["instructions"].as_u64().unwrap())
    };
    // the loops: 4 × 100,000 of step and mix in work, 4 × 50,000 of mix in other (gcc may
    // fold repeated calls of these pure functions, so only the proportions are fixed)
    let (mix, step) = (self_of("mix (inlined)"), self_of("step (inlined)"));
    assert!(mix > 0 && step > 0, "{}", p["functions"]);
    let folded = std::fs::read_to_string(report.join("profile.folded")).unwrap();
    for chain in [
        ";main;work;step (inlined);mix (inlined) ",
        ";main;work;step (inlined) ",
        ";main;other;mix (inlined) ",
        ";main;twice;other;mix (inlined) ",
    ] {
        assert!(folded.contains(chain), "{chain} not in {folded}");
    }
    // the proportional split loses at most one instruction per node to rounding
    let in_tree: u64 = folded
        .lines()
        .filter(|l| l.contains("mix (inlined) "))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(mix - in_tree <= 2, "{mix} vs {in_tree}");
    if !outcrop_testkit::have_or_skip("riscv64-linux-gnu-addr2line", "OUTCROP_REQUIRE_QEMU") {
        return;
    }
    // every counted address of work and other, through addr2line -i: its innermost function
    let rows = p["pcs"]["rows"].as_array().unwrap();
    let (lo, hi) = ["work", "other"]
        .iter()
        .map(|n| {
            let f = p["functions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"] == *n)
                .unwrap();
            let s = f["start"].as_u64().unwrap();
            (s, s + f["size"].as_u64().unwrap())
        })
        .fold((u64::MAX, 0), |(l, h), (s, e)| (l.min(s), h.max(e)));
    let pcs: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()))
        .filter(|&(pc, _)| pc >= lo && pc < hi)
        .collect();
    let out = std::process::Command::new("riscv64-linux-gnu-addr2line")
        .args(["-i", "-f", "-a", "-e"])
        .arg(&program)
        .args(pcs.iter().map(|(pc, _)| format!("{pc:#x}")))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    // -a prints each address, then (function, file:line) pairs innermost first
    let mut innermost: std::collections::BTreeMap<String, u64> = Default::default();
    let mut counts = pcs.iter();
    let mut lines = text.lines().peekable();
    while let Some(addr) = lines.next() {
        assert!(addr.starts_with("0x"), "{addr}");
        let f = lines.next().unwrap().to_string();
        lines.next();
        while lines.peek().is_some_and(|l| !l.starts_with("0x")) {
            lines.next();
        }
        *innermost.entry(f).or_default() += counts.next().unwrap().1;
    }
    assert_eq!(innermost.get("mix").copied().unwrap_or(0), mix);
    assert_eq!(innermost.get("step").copied().unwrap_or(0), step);
    assert_eq!(innermost.get("work").copied().unwrap_or(0), self_of("work"));
    assert_eq!(
        innermost.get("other").copied().unwrap_or(0),
        self_of("other")
    );
}
