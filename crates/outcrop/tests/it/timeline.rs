//! The timeline and `--range` from the command line: the marks in profile.json, the page's
//! strip, the Firefox Profiler file's times, a window of the run in every file, and the
//! errors.

use crate::util::outcrop_in as outcrop;
use std::path::PathBuf;

fn bin(name: &str) -> PathBuf {
    outcrop_testkit::workloads().join("bin").join(name)
}

fn json(p: PathBuf) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

#[test]
fn the_timeline_is_in_profile_json_the_page_and_the_firefox_file() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let q = bin("qsort_ints");
    let o = outcrop(
        &[
            "run",
            "--timeline",
            "1000000",
            "--report",
            "r",
            "-o",
            "/dev/null",
            "--",
            q.to_str().unwrap(),
        ],
        d,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p = json(d.join("r/profile.json"));
    let tl = &p["timeline"];
    assert_eq!(tl["interval"], 1_000_000);
    assert_eq!(tl["unit"], "instructions");
    let marks = tl["instructions"].as_array().unwrap();
    let total = p["instructions"].as_u64().unwrap();
    assert_eq!(marks.len() as u64, total.div_ceil(1_000_000));
    assert_eq!(marks.last().unwrap().as_u64().unwrap(), total);
    // every mark names a node of the call tree
    let nodes = p["tree"].as_array().unwrap().len() as u64;
    assert!(tl["node"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n.as_u64().unwrap() < nodes));
    let page = std::fs::read_to_string(d.join("r/report.html")).unwrap();
    assert!(page.contains("id=\"timeline\"") && page.contains("quick_sort"));
    let fx = json(d.join("r/profile.firefox.json"));
    assert!(fx["meta"]["product"]
        .as_str()
        .unwrap()
        .contains("1 ns = 1 instruction"));
    // no timeline
    let o = outcrop(
        &[
            "run",
            "--timeline",
            "0",
            "--report",
            "n",
            "-o",
            "/dev/null",
            "--",
            q.to_str().unwrap(),
        ],
        d,
    );
    assert!(o.status.success());
    assert!(json(d.join("n/profile.json"))["timeline"].is_null());
    let page = std::fs::read_to_string(d.join("n/report.html")).unwrap();
    assert!(!page.contains("id=\"timeline\""));
}

#[test]
fn a_range_restricts_every_report_to_its_window() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let q = bin("qsort_ints");
    let o = outcrop(
        &[
            "run",
            "--range",
            "1M..2500k",
            "--rap",
            "pc",
            "--paths",
            "16:997",
            "--report",
            "r",
            "-o",
            "r.txt",
            "--",
            q.to_str().unwrap(),
        ],
        d,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // the guest's own output is all there: it ran to its end
    assert!(String::from_utf8_lossy(&o.stdout).contains("checksum qsort_ints"));
    let run = json(d.join("r/run.json"));
    assert_eq!(run["window"]["start"], 1_000_000);
    assert_eq!(run["window"]["end"], 2_500_000);
    assert_eq!(run["truncated"], false);
    assert_eq!(json(d.join("r/profile.json"))["instructions"], 1_500_000);
    assert_eq!(json(d.join("r/rap.json"))["streams"][0]["n"], 1_500_000);
    assert_eq!(json(d.join("r/paths.json"))["instructions"], 1_500_000);
    let page = std::fs::read_to_string(d.join("r/report.html")).unwrap();
    assert!(page.contains("window</th>") && page.contains("1,000,000–2,500,000"));
    let text = std::fs::read_to_string(d.join("r.txt")).unwrap();
    assert!(text.contains("quick_sort"));
    assert!(String::from_utf8_lossy(&o.stderr).contains("observed instructions 1000000..2500000"));
    // the errors
    for (range, says) in [
        ("5..3", "is empty"),
        ("abc", "is not a range"),
        ("1.5M..2M", "not an instruction count"),
    ] {
        let o = outcrop(&["run", "--range", range, "--", q.to_str().unwrap()], d);
        assert_eq!(o.status.code(), Some(2), "{range}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(says), "{range}");
    }
    let o = outcrop(&["run", "--range", "1..2", "--report", "s"], d);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--range needs a program"));
}

#[test]
fn a_timed_page_has_an_ipc_strip_and_a_key_for_every_cpi_cause() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let q = bin("qsort_ints");
    let o = outcrop(
        &[
            "run",
            "--timing",
            "--max-insns",
            "3000000",
            "--report",
            "r",
            "-o",
            "/dev/null",
            "--",
            q.to_str().unwrap(),
        ],
        d,
    );
    assert_eq!(
        o.status.code(),
        Some(124),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let page = std::fs::read_to_string(d.join("r/report.html")).unwrap();
    assert!(page.contains("height is the interval's IPC"));
    // the key names every cause, the small ones (icache here is well under 1%) included
    for cause in ["base", "branch", "icache", "dcache", "other"] {
        assert!(page.contains(&format!("</span> {cause} ")), "{cause}");
    }
    let p = json(d.join("r/profile.json"));
    assert_eq!(p["timeline"]["unit"], "cycles");
    // the marks end at the run's counts even when the limit stopped it
    let last = p["timeline"]["instructions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .as_u64();
    assert_eq!(last, Some(3_000_000));
}

#[test]
fn a_run_with_phases_has_a_table_per_phase_whose_counts_add_up() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let q = bin("recursion");
    let o = outcrop(
        &[
            "run",
            "--timing",
            "--phases=2000000",
            "--report",
            "r",
            "-o",
            "/dev/null",
            "--",
            q.to_str().unwrap(),
        ],
        d,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = json(d.join("r/report.json"));
    let ph = &r["phases"];
    assert_eq!(ph["interval"], 2_000_000);
    let rows = ph["phases"].as_array().unwrap();
    assert!(rows.len() >= 2, "recursion has several phases: {ph}");
    // shares sum to 1; every interval belongs to a listed phase
    let share: f64 = rows.iter().map(|p| p["weight"].as_f64().unwrap()).sum();
    assert!((share - 1.0).abs() < 1e-9, "{share}");
    let assignment = ph["assignment"].as_array().unwrap();
    assert!(assignment
        .iter()
        .all(|k| (k.as_u64().unwrap() as usize) < rows.len()));
    // the timeline's counts are split over the phases, none lost
    let instructions: u64 = rows
        .iter()
        .map(|p| p["counts"]["instructions"].as_u64().unwrap())
        .sum();
    let cycles: u64 = rows
        .iter()
        .map(|p| p["counts"]["cycles"].as_u64().unwrap())
        .sum();
    let p = json(d.join("r/profile.json"));
    assert_eq!(instructions, p["instructions"].as_u64().unwrap());
    let tl = p["timeline"]["cycles"].as_array().unwrap();
    assert_eq!(cycles, tl.last().unwrap().as_u64().unwrap());
    // the phases differ in CPI, as the run's strip does
    let cpis: Vec<f64> = rows
        .iter()
        .map(|p| {
            p["counts"]["cycles"].as_f64().unwrap() / p["counts"]["instructions"].as_f64().unwrap()
        })
        .collect();
    let (lo, hi) = cpis
        .iter()
        .fold((f64::MAX, 0.0f64), |(a, b), &c| (a.min(c), b.max(c)));
    assert!(hi > 1.5 * lo, "{cpis:?}");
    let html = std::fs::read_to_string(d.join("r/report.html")).unwrap();
    assert!(html.contains("id=\"phases\""));
    assert!(html.contains("<th>CPI</th>"));
    assert!(!html.contains("<script"));
    // without --phases, nothing of it
    let o = outcrop(
        &[
            "run",
            "--report",
            "s",
            "-o",
            "/dev/null",
            "--",
            q.to_str().unwrap(),
        ],
        d,
    );
    assert!(o.status.success());
    assert!(json(d.join("s/report.json")).get("phases").is_none());
}

#[test]
fn the_flame_graph_zooms_and_finds_without_script() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let q = bin("recursion");
    let o = outcrop(
        &[
            "run",
            "--report",
            "r",
            "-o",
            "/dev/null",
            "--",
            q.to_str().unwrap(),
        ],
        d,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(d.join("r/report.html")).unwrap();
    assert!(!html.contains("<script"));
    assert!(html.contains("script-src") || html.contains("default-src 'none'"));
    // every zoom link has its view, and every view is linked from a frame
    let links: std::collections::BTreeSet<&str> = html
        .match_indices("<a href=\"#z-")
        .map(|(i, _)| {
            let s = &html[i + 10..];
            &s[..s.find('"').unwrap()]
        })
        .collect();
    let views: std::collections::BTreeSet<&str> = html
        .match_indices("<div class=\"zoom\" id=\"")
        .map(|(i, _)| {
            let s = &html[i + 22..];
            &s[..s.find('"').unwrap()]
        })
        .collect();
    assert!(!views.is_empty());
    assert_eq!(links, views);
    // the finder lists functions of the graph, each with the rule that colours its frames
    for f in ["ackermann", "tree_fold", "_int_free"] {
        let at = html
            .find(&format!("\">{f}</a>"))
            .unwrap_or_else(|| panic!("{f} in the finder"));
        let id = &html[..at];
        let id = &id[id.rfind("id=\"find-").unwrap() + 9..];
        let id = &id[..id.find('"').unwrap()];
        assert!(html.contains(&format!("body:has(#find-{id}:target) .f-{id} rect")));
        assert!(html.contains(&format!("<g class=\"f-{id}\">")));
    }
}
