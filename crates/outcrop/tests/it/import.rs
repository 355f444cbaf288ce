//! `outcrop import` end to end on real hardware's data (google/autofdo's `test.lbr`, Intel
//! LBR of an x86-64 gzip, and its `test.binary`): the samples file, `paths report` on it, and
//! its BOLT and llvm-profgen outputs checked by the real tools (`llvm-bolt-19`,
//! `llvm-profgen-19`, `perf`, and `qemu-x86_64` with a plugin counting taken transfers; skipped
//! without them unless `OUTCROP_REQUIRE_BOLT` / `OUTCROP_REQUIRE_PERF` is set).

use crate::util::outcrop_in as outcrop;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../perf/tests/fixtures")
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn have(tool: &str) -> bool {
    outcrop_testkit::have_or_skip(tool, "OUTCROP_REQUIRE_BOLT")
}

/// Imports `test.lbr` into `t.samples` and writes one of `paths report`'s exports.
fn export(d: &Path, flag: &str, file: &str) {
    ok(&outcrop(
        &[
            "import",
            "test.lbr",
            "--binary",
            "test.binary",
            "-o",
            "t.samples",
        ],
        d,
    ));
    ok(&outcrop(
        &[
            "paths",
            "report",
            "t.samples",
            "--binary",
            "test.binary",
            flag,
            file,
        ],
        d,
    ));
}

/// A work directory with the fixtures copied in (BOLT writes next to its input).
fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in ["test.lbr", "test.binary"] {
        std::fs::copy(fixtures().join(f), dir.path().join(f)).unwrap();
    }
    dir
}

#[test]
fn import_then_paths_report_on_intel_lbr() {
    let dir = setup();
    let d = dir.path();
    let out = ok(&outcrop(
        &[
            "import",
            "test.lbr",
            "--binary",
            "test.binary",
            "-o",
            "t.samples",
            "--json",
        ],
        d,
    ));
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["format"], "perf.data");
    assert_eq!(j["stats"]["samples"], 9232);
    assert_eq!(j["stats"]["branches"], 147_712);
    assert_eq!(j["stats"]["max_entries"], 16);
    assert_eq!(j["flat_profile_sampled"][0]["function"], "longest_match");
    let rep = ok(&outcrop(
        &[
            "paths",
            "report",
            "t.samples",
            "--binary",
            "test.binary",
            "--json",
            "--bolt-preagg",
            "t.preagg",
            "--profgen",
            "t.unsym",
        ],
        d,
    ));
    let r: serde_json::Value = serde_json::from_str(&rep).unwrap();
    assert!(r["hot_paths"].as_array().unwrap().len() >= 5);
    assert!(r["unmatched"].as_u64().unwrap() == 0);
    let text = ok(&outcrop(
        &["paths", "report", "t.samples", "--binary", "test.binary"],
        d,
    ));
    assert!(text.contains("updcrc"), "{text}");
    assert!(text.contains("%rdi"), "x86 disassembly: {text}");
    let unsym = std::fs::read_to_string(d.join("t.unsym")).unwrap();
    // AutoFDO's reader finds 357 ranges in this file (sample_reader_test.cc)
    assert!(unsym.starts_with("357\n"), "{}", &unsym[..40]);
}

#[test]
fn text_input_gives_the_same_samples_as_the_perf_data() {
    let dir = setup();
    let d = dir.path();
    let Ok(o) = Command::new("perf")
        .args(["script", "-F", "pid,tid,ip,brstack", "-i", "test.lbr"])
        .current_dir(d)
        .output()
    else {
        assert!(
            std::env::var_os("OUTCROP_REQUIRE_BOLT").is_none(),
            "perf missing"
        );
        return;
    };
    std::fs::write(d.join("lbr.txt"), &o.stdout).unwrap();
    ok(&outcrop(
        &[
            "import",
            "test.lbr",
            "--binary",
            "test.binary",
            "-o",
            "a.samples",
        ],
        d,
    ));
    ok(&outcrop(
        &[
            "import",
            "lbr.txt",
            "--binary",
            "test.binary",
            "-o",
            "b.samples",
        ],
        d,
    ));
    let a = std::fs::read_to_string(d.join("a.samples")).unwrap();
    let b = std::fs::read_to_string(d.join("b.samples")).unwrap();
    // the header's period is the perf.data's alone; the traces are the same
    let traces = |s: &str| {
        s.lines()
            .filter(|l| l.starts_with("trace"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(traces(&a), traces(&b));
}

#[test]
fn llvm_profgen_reads_our_profile_as_it_reads_its_own() {
    let dir = setup();
    let d = dir.path();
    if !(have("llvm-profgen-19") && have_perf()) {
        return;
    }
    export(d, "--profgen", "t.unsym");
    let o = Command::new("perf")
        .args(["script", "-F", "ip,brstack", "-i", "test.lbr"])
        .current_dir(d)
        .output()
        .unwrap();
    std::fs::write(d.join("lbr.txt"), &o.stdout).unwrap();
    let profgen = |args: &[&str]| {
        let o = Command::new("llvm-profgen-19")
            .args(["--binary=test.binary"])
            .args(args)
            .current_dir(d)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    profgen(&["--unsymbolized-profile=t.unsym", "--output=ours.prof"]);
    profgen(&["--perfscript=lbr.txt", "--output=theirs.prof"]);
    let ours = std::fs::read(d.join("ours.prof")).unwrap();
    let theirs = std::fs::read(d.join("theirs.prof")).unwrap();
    assert!(ours.len() > 1000);
    assert_eq!(
        ours, theirs,
        "llvm-profgen's profile from ours differs from its own from perf script"
    );
}

#[test]
fn llvm_bolt_optimizes_the_x86_program_from_our_preaggregated_profile() {
    let dir = setup();
    let d = dir.path();
    if !have("llvm-bolt-19") {
        return;
    }
    export(d, "--bolt-preagg", "t.preagg");
    let o = Command::new("llvm-bolt-19")
        .args([
            "test.binary",
            "-o",
            "test.bolt",
            "-pa",
            "-p",
            "t.preagg",
            "-reorder-blocks=ext-tsp",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{log}");
    assert!(
        log.contains("basic block reordering modified layout"),
        "{log}"
    );
    // the program compresses and checks its input; the optimized one must do the same
    let input = d.join("in.dat");
    let data: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 27) as u8)
        .collect();
    std::fs::write(&input, data).unwrap();
    let run = |p: &str| {
        use std::os::unix::fs::PermissionsExt;
        let path = d.join(p);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Command::new(&path)
            .arg(&input)
            .current_dir(d)
            .output()
            .unwrap()
    };
    let (a, b) = (run("test.binary"), run("test.bolt"));
    assert_eq!(a.status.code(), b.status.code());
    assert_eq!(a.stdout, b.stdout);
    assert!(
        String::from_utf8_lossy(&a.stdout).contains("OK"),
        "{}",
        String::from_utf8_lossy(&a.stdout)
    );
    // fewer taken control transfers: no PMU here, so counted under qemu-x86_64 with the
    // plugin scripts/qemu-plugin/taken.c (a block entered anywhere but where the last ended)
    if !(have("qemu-x86_64") && have("cc")) {
        return;
    }
    let plugin = d.join("taken.so");
    let src = outcrop_testkit::root().join("scripts/qemu-plugin/taken.c");
    let st = Command::new("cc")
        .args(["-O2", "-shared", "-fPIC", "-o"])
        .arg(&plugin)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    let taken = |p: &str| -> u64 {
        let o = Command::new("qemu-x86_64")
            .args(["-d", "plugin", "-plugin"])
            .arg(&plugin)
            .arg(d.join(p))
            .arg(&input)
            .current_dir(d)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        let line = err
            .lines()
            .find(|l| l.starts_with("taken "))
            .unwrap_or_else(|| panic!("{err}"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let (before, after) = (taken("test.binary"), taken("test.bolt"));
    eprintln!("taken control transfers: {before} before BOLT, {after} after");
    assert!(
        after < before,
        "taken control transfers: {before} before BOLT, {after} after"
    );
}

#[test]
fn a_damaged_file_is_an_error_naming_the_offset() {
    let dir = setup();
    let d = dir.path();
    let mut b = std::fs::read(d.join("test.lbr")).unwrap();
    b.truncate(200_000);
    std::fs::write(d.join("cut.data"), &b).unwrap();
    let o = outcrop(
        &[
            "import",
            "cut.data",
            "--binary",
            "test.binary",
            "-o",
            "x.samples",
        ],
        d,
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cut.data") && err.contains("byte offset 0x"),
        "{err}"
    );
    assert!(!d.join("x.samples").exists());
    let o = outcrop(&["import", "test.binary", "--binary", "test.binary"], d);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 1"), "{err}");
}

fn have_perf() -> bool {
    let ok = Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok || std::env::var_os("OUTCROP_REQUIRE_PERF").is_none(),
        "perf missing but OUTCROP_REQUIRE_PERF is set"
    );
    ok
}

#[test]
fn the_report_directory_of_an_import_says_it_is_sampled() {
    let dir = setup();
    let d = dir.path();
    ok(&outcrop(
        &[
            "import",
            "test.lbr",
            "--binary",
            "test.binary",
            "-o",
            "t.samples",
            "--report",
            "rep",
        ],
        d,
    ));
    let page = std::fs::read_to_string(d.join("rep/report.html")).unwrap();
    assert!(
        page.contains("Sampled, not exact"),
        "the page must say the profile is sampled"
    );
    assert!(!page.contains("Exact: every retired instruction counted"));
    // honest columns: samples, and no totals or calls the samples cannot give
    assert!(page.contains("<th>self samples</th>"), "{page}");
    assert!(!page.contains("<th>calls</th>") && !page.contains("<th>total %</th>"));
    let p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("rep/profile.json")).unwrap())
            .unwrap();
    assert_eq!(p["sampled"], true);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("rep/report.json")).unwrap()).unwrap();
    assert!(r["sampled"]
        .as_str()
        .unwrap()
        .contains("samples taken by perf"));
    // no program ran: the summaries say so rather than that it exited
    assert_eq!(
        r["outcome"], "imported samples (not a run of the machine)",
        "{r}"
    );
    // the IP samples in the program, as perf itself counts them (`perf script`, by the
    // sample's dso); 8,989 when perf is not installed (what it printed for this fixture)
    let in_program = if have_perf() {
        let o = Command::new("perf")
            .args(["script", "-F", "ip,dso", "-i"])
            .arg(d.join("test.lbr"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.trim_end().ends_with("test.binary)"))
            .count() as u64
    } else {
        8989
    };
    assert_eq!(in_program, 8989);
    // the profile covers the program's process: its 8,989 samples in the program, 232 in
    // libc (whose file this host lacks) and 11 in the kernel
    assert_eq!(r["instructions"], 9232, "samples in the program's process");
    let rows = r["profile"]["functions"].as_array().unwrap();
    let in_prog: u64 = rows
        .iter()
        .filter(|f| {
            let n = f["name"].as_str().unwrap();
            n == "[unknown]" || !n.contains(['@', '['])
        })
        .map(|f| f["self"]["instructions"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(in_prog, in_program, "{}", r["profile"]["functions"][0]);
    // DWARF lines of the x86-64 program: updcrc's loop line is the hottest, with the count
    // `perf script -F ip` piped through `addr2line` gives (1,352 samples at 0x4078cb; x86's
    // odd addresses are kept apart, not merged into 2-byte slots as before)
    let top = &r["profile"]["lines"][0];
    assert!(top["file"].as_str().unwrap().ends_with("util.c"), "{top}");
    assert_eq!(
        (top["line"].as_u64(), top["function"].as_str()),
        (Some(74), Some("updcrc"))
    );
    assert_eq!(top["self"]["instructions"], 1352);
    // inlined calls as frames for imported samples too: the same counts `addr2line -i`
    // gives for perf script's IPs (deflate_fast inlined into deflate, gen_bitlen into
    // build_tree)
    let p: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("rep/profile.json")).unwrap()).unwrap();
    let self_of = |n: &str| {
        p["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == n)
            .map(|f| f["self"]["instructions"].as_u64().unwrap())
    };
    assert_eq!(self_of("deflate_fast (inlined)"), Some(381));
    assert_eq!(self_of("deflate"), Some(918));
    assert_eq!(self_of("gen_bitlen (inlined)"), Some(57));
    assert_eq!(self_of("build_tree"), Some(21));
    // RAP over the sampled IPs, against exact counts of the same stream
    let rap: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("rep/rap.json")).unwrap()).unwrap();
    let pc = &rap["streams"][0];
    assert_eq!(pc["stream"], "pc");
    assert_eq!(pc["n"], in_program);
    assert!(
        pc["max_error_pct"].as_f64().unwrap() <= 1.0 + 1e-9,
        "{}",
        pc["max_error_pct"]
    );
    for f in [
        "profile.pb.gz",
        "profile.speedscope.json",
        "paths.json",
        "run.json",
    ] {
        assert!(d.join("rep").join(f).exists(), "{f}");
    }
}

#[test]
fn a_position_independent_program_is_found_by_build_id_and_named_at_its_own_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // recorded as `propeller_sample_1.bin.gen`, here under another name: the build-id finds it
    for f in ["propeller_sample_1.perfdata1", "propeller_sample_1.bin"] {
        std::fs::copy(fixtures().join(f), d.join(f)).unwrap();
    }
    let out = ok(&outcrop(
        &[
            "import",
            "propeller_sample_1.perfdata1",
            "--binary",
            "propeller_sample_1.bin",
            "-o",
            "p.samples",
            "--json",
            "--report",
            "rep",
        ],
        d,
    ));
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["stats"]["program_mappings"], 1);
    // of 119,424 entries, 119,419 lie in the program: the count perf2bolt reports too
    assert_eq!(j["stats"]["branches"], 119_424);
    assert_eq!(j["stats"]["branches_in_program"], 119_419);
    let names: Vec<&str> = j["flat_profile_sampled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["function"].as_str().unwrap())
        .collect();
    // then the dynamic linker (its file is not on this host) and the kernel
    assert_eq!(
        names,
        ["main", "compute_flag", "[unknown]@ld-2.19.so", "[kernel]"]
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("rep/report.json")).unwrap()).unwrap();
    assert_eq!(r["profile"]["functions"][0]["name"], "main");
    let rep = ok(&outcrop(
        &[
            "paths",
            "report",
            "p.samples",
            "--binary",
            "propeller_sample_1.bin",
            "--top",
            "1",
        ],
        d,
    ));
    assert!(rep.contains("main+0x"), "{rep}");
}

/// The call-chain fixture (`fixtures/perf_g/build.sh`): x86-64 `perf record -g` of a program
/// whose time is in a stripped shared library, its symbols in a Debian-style debug file.
fn perf_g() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perf_g")
}

/// `perf report`'s lines for the fixture: (percent, dso or "", symbol).
fn perf_report(file: &str) -> Vec<(f64, String)> {
    let text = std::fs::read_to_string(perf_g().join(file)).unwrap();
    text.lines()
        .map(|l| {
            let pct: Vec<&str> = l.split_whitespace().collect();
            let sym = l.split("] ").nth(1).unwrap().trim().to_string();
            (pct[0].trim_end_matches('%').parse().unwrap(), sym)
        })
        .collect()
}

fn import_perf_g(extra: &[&str]) -> serde_json::Value {
    let d = tempfile::tempdir().unwrap();
    let f = perf_g();
    let mut args = vec![
        "import",
        "perf.data",
        "--binary",
        "prog",
        "-o",
        "",
        "--json",
        "--top",
        "1000",
    ];
    let out = d.path().join("g.samples");
    args[5] = out.to_str().unwrap();
    args.extend_from_slice(extra);
    serde_json::from_str(&ok(&outcrop(&args, &f))).unwrap()
}

#[test]
fn call_chains_and_libraries_are_imported_as_perf_report_shows_them() {
    let j = import_perf_g(&["--symfs", "symfs", "--debug-dir", "debug"]);
    let total = j["profiled_samples"].as_u64().unwrap();
    assert_eq!(
        total,
        j["stats"]["samples"].as_u64().unwrap(),
        "one process"
    );
    assert_eq!(j["with_callchains"].as_u64().unwrap(), total);
    let row = |name: &str| {
        j["flat_profile_sampled"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["function"] == name)
            .unwrap_or_else(|| panic!("no {name} in {j}"))
            .clone()
    };
    let pct = |n: u64| (10000.0 * n as f64 / total as f64).round() / 100.0;
    // self: the program's and the library's functions as perf names them; the static
    // sort_range only from the debug file
    for (p, sym) in perf_report("perf-report.txt") {
        let name = match sym.as_str() {
            "cmp" | "main" => sym.clone(),
            "sort_range" | "sort_u32" => format!("{sym}@libsort.so"),
            _ => continue,
        };
        assert_eq!(
            pct(row(&name)["samples"].as_u64().unwrap()),
            p,
            "self of {name}"
        );
    }
    // total (perf report --children): through the call chains
    for (p, sym) in perf_report("perf-report-children.txt") {
        let name = match sym.as_str() {
            "cmp" | "main" => sym.clone(),
            "sort_range" | "sort_u32" => format!("{sym}@libsort.so"),
            _ => continue,
        };
        let t = row(&name)["total_samples"].as_u64().unwrap();
        assert_eq!(pct(t), p, "total of {name}");
    }
    // each object's share; the kernel's samples are one [kernel] function
    let objects = j["objects"].as_array().unwrap();
    let lib = objects
        .iter()
        .find(|o| o["object"] == "/tmp/outcrop-perf-g/libsort.so")
        .unwrap();
    assert!(lib["file"]
        .as_str()
        .unwrap()
        .ends_with("symfs/tmp/outcrop-perf-g/libsort.so"));
    let kernel: u64 = perf_report("perf-report.txt")
        .iter()
        .zip(
            std::fs::read_to_string(perf_g().join("perf-report.txt"))
                .unwrap()
                .lines(),
        )
        .filter(|(_, l)| l.contains("[k]"))
        .map(|((p, _), _)| (p * total as f64 / 100.0).round() as u64)
        .sum();
    assert_eq!(row("[kernel]")["samples"].as_u64().unwrap(), kernel);
    assert!(objects
        .iter()
        .any(|o| o["program"] == true && o["samples"].as_u64() > Some(0)));
}

#[test]
fn a_stripped_library_without_its_debug_file_keeps_its_exported_names_only() {
    let j = import_perf_g(&["--symfs", "symfs"]);
    let names: Vec<&str> = j["flat_profile_sampled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["function"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"sort_u32@libsort.so"), "{names:?}");
    assert!(names.contains(&"[unknown]@libsort.so"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("sort_range")),
        "{names:?}"
    );
}

#[test]
fn an_imported_call_tree_reaches_every_export() {
    let d = tempfile::tempdir().unwrap();
    let report = d.path().join("r");
    ok(&outcrop(
        &[
            "import",
            "perf.data",
            "--binary",
            "prog",
            "-o",
            d.path().join("s").to_str().unwrap(),
            "--symfs",
            "symfs",
            "--debug-dir",
            "debug",
            "--report",
            report.to_str().unwrap(),
        ],
        &perf_g(),
    ));
    let folded = std::fs::read_to_string(report.join("profile.folded")).unwrap();
    assert!(
        folded.lines().any(
            |l| l.contains("main;sort_u32@libsort.so;sort_range@libsort.so;")
                && l.contains(";cmp ")
        ),
        "{folded}"
    );
    assert!(
        !folded.contains("[kernel];[kernel]"),
        "kernel frames are one frame"
    );
    let p: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.join("profile.json")).unwrap()).unwrap();
    assert_eq!(p["sampled"], true);
    assert_eq!(p["call_chains"], true);
    // with call chains the page shows totals (perf report --children), still no calls
    let page = std::fs::read_to_string(report.join("report.html")).unwrap();
    assert!(page.contains("<th>total %</th>") && !page.contains("<th>calls</th>"));
}

/// perf's build-id cache (`PERF_BUILDID_DIR`, else `~/.debug`): a library no longer at its
/// recorded path (or the vdso, which has none) is found there by build-id, as perf report
/// finds it; a cached file of another build is not used.
#[test]
fn objects_are_found_in_perfs_build_id_cache() {
    let cache = tempfile::tempdir().unwrap();
    let id = "9f6c3a2eed0d9c3d6fa892d4e346d3931568c957";
    let dir = cache.path().join(".build-id").join(&id[..2]).join(&id[2..]);
    std::fs::create_dir_all(&dir).unwrap();
    let lib = perf_g().join("symfs/tmp/outcrop-perf-g/libsort.so");
    std::fs::copy(&lib, dir.join("elf")).unwrap();
    let run = |cache: &Path| {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("s");
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_outcrop"))
            .args([
                "import",
                "perf.data",
                "--binary",
                "prog",
                "--json",
                "--top",
                "100",
            ])
            .args(["--debug-dir", "debug", "-o", out.to_str().unwrap()])
            .env("PERF_BUILDID_DIR", cache)
            .current_dir(perf_g())
            .output()
            .unwrap();
        let j: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
        j
    };
    let j = run(cache.path());
    let lib_row = j["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["object"] == "/tmp/outcrop-perf-g/libsort.so")
        .unwrap()
        .clone();
    if !Path::new("/tmp/outcrop-perf-g/libsort.so").exists() {
        assert!(
            lib_row["file"].as_str().unwrap().ends_with("/elf"),
            "{lib_row}"
        );
    }
    assert!(j["flat_profile_sampled"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["function"] == "sort_range@libsort.so"));
    // another build under the same id is not it: the debug file by build-id names the
    // library's functions then (its segments have no file bytes: offsets taken as addresses)
    if !Path::new("/tmp/outcrop-perf-g/libsort.so").exists() {
        std::fs::copy(perf_g().join("prog"), dir.join("elf")).unwrap();
        let j = run(cache.path());
        let lib_row = j["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["object"] == "/tmp/outcrop-perf-g/libsort.so")
            .unwrap()
            .clone();
        assert!(
            lib_row["file"].as_str().unwrap().ends_with(".debug"),
            "{lib_row}"
        );
        let names = j["flat_profile_sampled"].to_string();
        assert!(names.contains("sort_range@libsort.so"), "{names}");
    }
}

/// JIT code (`fixtures/perf_jit`): a function copied into an anonymous executable mapping and
/// named in perf-PID.map, as JITs name their code for perf; its samples are named from the map
/// (`--jit-dir`), as perf report names them.
#[test]
fn jit_code_is_named_from_its_perf_map() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perf_jit");
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("j.samples");
    let args = |jit: &str| {
        let o = outcrop(
            &[
                "import",
                "perf.data",
                "--binary",
                "jit",
                "--json",
                "--jit-dir",
                jit,
                "-o",
                out.to_str().unwrap(),
            ],
            &f,
        );
        let j: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
        j["flat_profile_sampled"].clone()
    };
    let rows = args(".");
    // perf report: 266 samples in jitted_sum ("[JIT] tid 2174"), the rest in ld.so
    let perf = std::fs::read_to_string(f.join("perf-report.txt")).unwrap();
    assert!(perf
        .lines()
        .next()
        .unwrap()
        .contains(" 266  [JIT] tid 2174 "));
    assert_eq!(rows[0]["function"], "jitted_sum@perf-2174.map", "{rows}");
    assert_eq!(rows[0]["samples"], 266);
    // without the map the code is unnamed
    let rows = args(d.path().to_str().unwrap());
    assert!(!rows.to_string().contains("jitted_sum"), "{rows}");
}
