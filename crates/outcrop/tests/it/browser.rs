//! The HTML report in a real browser: `outcrop run --report DIR` writes a page that headless
//! Chromium opens without a console message or a network request, byte-identical across runs.
//! A screenshot is kept as an artifact (`$OUTCROP_ARTIFACTS`, default `target/tmp/browser`).
//!
//! Without Chromium the browser half is skipped with a note, unless
//! `OUTCROP_REQUIRE_BROWSER=1` (CI sets it, and installs Debian's `chromium`).

use crate::util::root;
use std::path::{Path, PathBuf};
use std::process::Command;

fn report(dir: &Path, args: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .args(["run", "--deterministic", "--report"])
        .arg(dir)
        .args(args)
        .current_dir(root().join("workloads"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn chromium() -> Option<PathBuf> {
    for c in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(o) = Command::new("sh")
            .args(["-c", &format!("command -v {c}")])
            .output()
        {
            if o.status.success() {
                return Some(PathBuf::from(
                    String::from_utf8_lossy(&o.stdout).trim().to_string(),
                ));
            }
        }
    }
    None
}

/// What the browser saw while loading `page`.
struct Visit {
    console: Vec<String>,
    requests: Vec<String>,
}

/// Opens `page` in headless Chromium, screenshots it to `shot`, and collects console
/// messages (from Chromium's log) and the page's own network requests (from its net log:
/// requests whose network isolation key is the page's `file://` site; the browser's own
/// background traffic has another key).
fn visit(browser: &Path, page: &Path, shot: &Path) -> Visit {
    let work = tempfile::tempdir().unwrap();
    let netlog = work.path().join("netlog.json");
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1300,2200",
        ])
        .arg(format!(
            "--user-data-dir={}",
            work.path().join("profile").display()
        ))
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "chromium failed: {stderr}");
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&netlog).unwrap_or_default())
            .unwrap_or_default();
    let mut requests = Vec::new();
    let mut page_sources = std::collections::BTreeSet::new();
    let events = log["events"].as_array().cloned().unwrap_or_default();
    for e in &events {
        let key = e["params"]["network_isolation_key"].as_str().unwrap_or("");
        if key.starts_with("file://") {
            page_sources.insert(e["source"]["id"].as_u64());
        }
    }
    for e in &events {
        if let Some(url) = e["params"]["url"].as_str() {
            if page_sources.contains(&e["source"]["id"].as_u64()) && !url.starts_with("file:") {
                requests.push(url.to_string());
            }
        }
    }
    requests.sort();
    requests.dedup();
    Visit { console, requests }
}

#[test]
fn the_report_page_is_deterministic_and_opens_cleanly_in_a_browser() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let args = [
        "--timing",
        "--rap",
        "block,pc",
        "--paths",
        "16",
        "--",
        "bin/qsort_ints",
    ];
    report(a.path(), &args);
    report(b.path(), &args);
    for f in [
        "report.html",
        "report.json",
        "profile.json",
        "profile.speedscope.json",
        "profile.firefox.json",
        "profile.folded",
    ] {
        let x = std::fs::read(a.path().join(f)).unwrap();
        let y = std::fs::read(b.path().join(f)).unwrap();
        assert!(x == y, "{f} differs between two runs");
    }
    let html = std::fs::read_to_string(a.path().join("report.html")).unwrap();
    for section in [
        "id=\"functions\"",
        "id=\"flame\"",
        "id=\"timing\"",
        "id=\"rap\"",
        "id=\"paths\"",
    ] {
        assert!(html.contains(section), "{section} missing");
    }
    assert!(!html.contains("<script"), "no script");
    assert!(!html.contains(" src="), "nothing embedded by reference");
    assert!(!html.contains("href=\"http"), "no remote links");

    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("OUTCROP_REQUIRE_BROWSER").is_none(),
            "OUTCROP_REQUIRE_BROWSER is set but no chromium was found"
        );
        eprintln!("note: no chromium: the browser check is skipped (apt-get install chromium)");
        return;
    };
    let artifacts = std::env::var_os("OUTCROP_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser"));
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("report.png");
    let v = visit(&browser, &a.path().join("report.html"), &shot);
    assert!(v.console.is_empty(), "console messages: {:?}", v.console);
    assert!(v.requests.is_empty(), "network requests: {:?}", v.requests);
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a real screenshot"
    );
    eprintln!("screenshot: {}", shot.display());

    // the checks can fail: a page that fetches and logs is caught by both
    let bad = a.path().join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><body><img src=\"http://example.invalid/x.png\"><script>console.error('boom')</script></body></html>",
    )
    .unwrap();
    let v = visit(&browser, &bad, &a.path().join("bad.png"));
    assert!(
        v.console.iter().any(|l| l.contains("boom")),
        "{:?}",
        v.console
    );
    assert_eq!(v.requests, vec!["http://example.invalid/x.png".to_string()]);
}
