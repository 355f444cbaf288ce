//! `outcrop diff` end to end: two builds of one C program (-O0 and -O2, built here with the
//! riscv64 cross compiler; skipped without it unless `OUTCROP_REQUIRE_CROSS` is set), the same
//! build on two inputs, the mechanisms' own files, and the errors.

use crate::util::outcrop_in as outcrop;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
static unsigned mix(unsigned x) { return x * 2654435761u ^ (x >> 13); }
__attribute__((noinline)) unsigned hash(const unsigned *v, int n) {
    unsigned h = 0;
    for (int i = 0; i < n; i++) h = mix(h + v[i]);
    return h;
}
__attribute__((noinline)) void fill(unsigned *v, int n, unsigned seed) {
    for (int i = 0; i < n; i++) v[i] = mix(seed + i);
}
int cmp(const void *a, const void *b) {
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    if (n < 1 || n > 100000) n = 2000;
    unsigned *v = malloc(n * sizeof *v);
    fill(v, n, 7);
    qsort(v, n, sizeof *v, cmp);
    printf("%u\n", hash(v, n));
    return 0;
}
"#;

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn fails(o: &Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Builds the program at -O0 and -O2 (with -g) into `d`; false when there is no compiler.
fn build(d: &Path) -> bool {
    let gcc = "riscv64-linux-gnu-gcc";
    if Command::new(gcc).arg("--version").output().is_err() {
        assert!(
            std::env::var_os("OUTCROP_REQUIRE_CROSS").is_none(),
            "{gcc} missing but OUTCROP_REQUIRE_CROSS is set"
        );
        eprintln!("skipped: no {gcc}");
        return false;
    }
    std::fs::write(d.join("p.c"), PROGRAM).unwrap();
    for o in ["0", "2"] {
        let s = Command::new(gcc)
            .args([
                "-g",
                "-static",
                &format!("-O{o}"),
                "-o",
                &format!("p{o}"),
                "p.c",
            ])
            .current_dir(d)
            .status()
            .unwrap();
        assert!(s.success());
    }
    true
}

fn json(p: PathBuf) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn counts_add(a: &serde_json::Value, d: &serde_json::Value, b: &serde_json::Value) {
    for k in [
        "instructions",
        "cycles",
        "mispredicts",
        "l1i_misses",
        "l1d_misses",
        "l2_misses",
    ] {
        assert_eq!(
            a[k].as_i64().unwrap() + d[k].as_i64().unwrap(),
            b[k].as_i64().unwrap(),
            "{k}: {a} + {d} != {b}"
        );
    }
}

#[test]
fn two_builds_are_compared_by_symbol_and_line_and_add_up() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    if !build(d) {
        return;
    }
    for o in ["0", "2"] {
        ok(&outcrop(
            &[
                "run",
                "--timing",
                "--rap",
                "pc",
                "--report",
                &format!("r{o}"),
                "-o",
                "/dev/null",
                "--",
                &format!("./p{o}"),
            ],
            d,
        ));
    }
    let text = ok(&outcrop(&["diff", "r0", "r2", "--report", "dd"], d));
    assert!(text.contains("matched by symbol and line"), "{text}");
    assert!(
        text.contains("Functions by change in self cycles"),
        "{text}"
    );
    assert!(text.contains("CPI stack"), "{text}");
    assert!(text.contains("Hot ranges (RAP)"), "{text}");
    // the JSON: A + diff = B on every row, and columns that sum to each run
    ok(&outcrop(&["diff", "r0", "r2", "--json", "-o", "d.json"], d));
    let j = json(d.join("d.json"));
    let p = &j["profile"];
    assert_eq!(p["matching"], "symbol");
    assert_eq!(p["weight"], "cycles");
    let (ra, rb) = (json(d.join("r0/run.json")), json(d.join("r2/run.json")));
    assert_eq!(p["totals"][0]["instructions"], ra["instructions"]);
    assert_eq!(p["totals"][1]["instructions"], rb["instructions"]);
    assert_eq!(p["totals"][0]["cycles"], ra["timing"]["cycles"]);
    for table in ["functions", "lines", "call_paths"] {
        let rows = p[table].as_array().unwrap();
        assert!(!rows.is_empty(), "{table}");
        let (mut sa, mut sb) = (0i64, 0i64);
        for r in rows {
            let (a, b, delta) = if table == "functions" {
                (&r["a"]["self"], &r["b"]["self"], &r["delta"]["self"])
            } else {
                (&r["a"], &r["b"], &r["delta"])
            };
            counts_add(a, delta, b);
            sa += a["instructions"].as_i64().unwrap();
            sb += b["instructions"].as_i64().unwrap();
        }
        assert_eq!(sa, ra["instructions"].as_i64().unwrap(), "{table}");
        assert_eq!(sb, rb["instructions"].as_i64().unwrap(), "{table}");
    }
    // -O2 inlined the static helper: a row only A has
    let mix = p["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["function"] == "mix")
        .expect("mix runs at -O0");
    assert_eq!(mix["presence"], "only_a");
    // lines of p.c on both sides
    assert!(p["lines"].as_array().unwrap().iter().any(|l| l["file"]
        .as_str()
        .unwrap()
        .ends_with("p.c")
        && l["presence"] == "both"));
    // the CPI stack's causes sum to the cycles on both sides
    let cpi = j["timing"]["cpi_stack"].as_array().unwrap();
    let sum = |k: &str| cpi.iter().map(|r| r[k].as_f64().unwrap()).sum::<f64>();
    assert_eq!(sum("a"), ra["timing"]["cycles"].as_f64().unwrap());
    assert_eq!(sum("b"), rb["timing"]["cycles"].as_f64().unwrap());
    // the page, the flame graph and the pair of exports
    let page = std::fs::read_to_string(d.join("dd/diff.html")).unwrap();
    assert!(page.contains("default-src 'none'") && !page.contains("<script"));
    assert!(page.contains("Differential flame graph") && page.contains("<svg"));
    let svg = std::fs::read_to_string(d.join("dd/diff.svg")).unwrap();
    assert!(
        svg.contains("rgb(255,") || svg.contains(",255)"),
        "red or blue frames"
    );
    assert_eq!(
        std::fs::read(d.join("dd/a.speedscope.json")).unwrap(),
        std::fs::read(d.join("r0/profile.speedscope.json")).unwrap()
    );
    assert!(d.join("dd/b.firefox.json").is_file());
    // deterministic
    ok(&outcrop(&["diff", "r0", "r2", "--report", "dd2"], d));
    for f in ["diff.html", "diff.json", "diff.svg"] {
        assert_eq!(
            std::fs::read(d.join("dd").join(f)).unwrap(),
            std::fs::read(d.join("dd2").join(f)).unwrap(),
            "{f}"
        );
    }
    // profile JSONs alone: the exports are made from them
    ok(&outcrop(
        &[
            "diff",
            "r0/profile.json",
            "r2/report.json",
            "--report",
            "dj",
        ],
        d,
    ));
    let s: serde_json::Value = json(d.join("dj/a.speedscope.json"));
    assert_eq!(
        s["$schema"],
        "https://www.speedscope.app/file-format-schema.json"
    );
}

#[test]
fn the_same_build_on_two_inputs_is_compared_by_address_with_every_mechanism() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    if !build(d) {
        return;
    }
    for (dir, n) in [("a", "2000"), ("b", "6000")] {
        ok(&outcrop(
            &[
                "run",
                "--rap",
                "pc",
                "--paths",
                "16:997",
                "--wpp",
                &format!("{dir}.wpp"),
                "--report",
                dir,
                "-o",
                "/dev/null",
                "--",
                "./p2",
                n,
            ],
            d,
        ));
    }
    ok(&outcrop(&["diff", "a", "b", "--json", "-o", "d.json"], d));
    let j = json(d.join("d.json"));
    assert_eq!(j["profile"]["matching"], "address");
    assert!(j["profile"]["functions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["presence"] == "both"));
    assert!(j["timing"].is_null());
    assert!(!j["ranges"]["streams"][0]["rows"]
        .as_array()
        .unwrap()
        .is_empty());
    let paths = &j["paths"];
    assert!(
        !paths["by_function"].as_array().unwrap().is_empty(),
        "{paths}"
    );
    // the .wpp files themselves, and the report directories' captures, agree
    let w = ok(&outcrop(&["diff", "a.wpp", "b.wpp", "--json"], d));
    let w: serde_json::Value = serde_json::from_str(&w).unwrap();
    assert!(w["profile"].is_null());
    let kept = w["wpp_paths"]["kept"].as_array().unwrap();
    assert!(!kept.is_empty(), "{w}");
    assert!(
        kept[0]["blocks"][0].as_str().unwrap().contains('+'),
        "named blocks"
    );
    // two samples files
    let s = ok(&outcrop(
        &["diff", "a/branch.samples", "b/branch.samples"],
        d,
    ));
    assert!(s.contains("Hot paths from branch records"), "{s}");
}

#[test]
fn errors_name_what_cannot_be_compared() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let hello = outcrop_testkit::workload("matmul");
    let rec = outcrop_testkit::workload("nbody");
    ok(&outcrop(
        &[
            "run",
            "--report",
            "h",
            "-o",
            "/dev/null",
            "--",
            hello.to_str().unwrap(),
        ],
        d,
    ));
    ok(&outcrop(
        &[
            "run",
            "--report",
            "r",
            "-o",
            "/dev/null",
            "--",
            rec.to_str().unwrap(),
        ],
        d,
    ));
    // both have a main and the same libc, but their time is spent in different places
    let e = fails(&outcrop(&["diff", "h", "r"], d));
    assert!(
        e.contains("look like different programs") && e.contains("--force"),
        "{e}"
    );
    ok(&outcrop(&["diff", "h", "r", "--force"], d));
    // not a report directory
    std::fs::create_dir(d.join("empty")).unwrap();
    let e = fails(&outcrop(&["diff", "empty", "h"], d));
    assert!(e.contains("empty is not a report directory"), "{e}");
    // nothing in common
    std::fs::write(d.join("x.json"), r#"{"streams": []}"#).unwrap();
    let e = fails(&outcrop(&["diff", "h", "x.json"], d));
    assert!(
        e.contains("share no mechanism: A has profile, B has rap"),
        "{e}"
    );
    // not an input diff reads; broken JSON named with its place
    std::fs::write(d.join("junk"), b"\x7fELF....").unwrap();
    let e = fails(&outcrop(&["diff", "junk", "h"], d));
    assert!(e.contains("not an input diff reads"), "{e}");
    std::fs::write(d.join("bad.json"), "{\"tree\": [1,\n").unwrap();
    let e = fails(&outcrop(&["diff", "bad.json", "h"], d));
    assert!(e.contains("line 2"), "{e}");
    let e = fails(&outcrop(&["diff", "missing", "h"], d));
    assert!(e.contains("missing"), "{e}");
    // a suite's directory
    std::fs::create_dir(d.join("suite")).unwrap();
    std::fs::write(d.join("suite/suite.json"), "[]").unwrap();
    let e = fails(&outcrop(&["diff", "suite", "h"], d));
    assert!(e.contains("suite's report"), "{e}");
}

#[test]
fn saved_rap_trees_binary_or_json() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let a: String = (1..=50_000).map(|i| format!("{i}\n")).collect();
    let b: String = (1..=30_000)
        .chain(100_000..140_000)
        .map(|i| format!("{i}\n"))
        .collect();
    std::fs::write(d.join("a.txt"), a).unwrap();
    std::fs::write(d.join("b.txt"), b).unwrap();
    ok(&outcrop(&["rap", "--save-tree", "a.rap", "a.txt"], d));
    ok(&outcrop(&["rap", "--save-tree", "b.json", "b.txt"], d));
    let j = ok(&outcrop(&["diff", "a.rap", "b.json", "--json"], d));
    let j: serde_json::Value = serde_json::from_str(&j).unwrap();
    let rows = j["ranges"]["streams"][0]["rows"].as_array().unwrap();
    let status = |s: &str| rows.iter().filter(|r| r["status"] == s).count();
    assert!(
        status("kept") > 0 && status("appeared") > 0 && status("vanished") > 0,
        "{j}"
    );
    // a range of B's new values appeared; none of A's values past 50,000 was hot
    assert!(rows
        .iter()
        .any(|r| r["status"] == "appeared" && r["b"]["lo"].as_u64().unwrap() >= 100_000 - 4096));
    // the same tree against itself: every range kept, no change
    let j = ok(&outcrop(&["diff", "a.rap", "a.rap", "--json"], d));
    let j: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert!(j["ranges"]["streams"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["status"] == "kept" && r["share_delta"] == 0.0));
}
