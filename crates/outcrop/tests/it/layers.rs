//! The layering rules of docs/architecture.md, checked on the manifests and sources: each
//! crate depends only on crates below it, the summaries stay free of threads, files and the
//! machine, and the binary crate has no library half.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Layer of each crate (folder name): a crate may depend only on crates of a lower layer.
const LAYERS: &[(&str, u8)] = &[
    ("events", 0),
    ("sem", 0),
    ("testkit", 0),
    ("sampling", 1),
    ("instrument", 1),
    ("jit", 1),
    ("rv", 2),
    ("perf", 2),
    ("timing", 2),
    ("rap", 3),
    ("strata", 3),
    ("paths", 3),
    ("profile", 3),
    ("phases", 3),
    ("rpa", 3),
    ("diff", 4),
    ("run", 5),
    ("report", 6),
    ("studies", 7),
    ("cli", 8),
    ("lab", 8),
    ("outcrop", 9),
];

/// The `outcrop-*` crates a manifest's `[dependencies]` names (dev-dependencies may reach
/// anywhere: tests run programs).
fn outcrop_deps(manifest: &str) -> Vec<String> {
    let mut deps = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps {
            if let Some(name) = line.strip_prefix("outcrop-") {
                let name: String = name
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .collect();
                deps.push(name);
            }
        }
    }
    deps
}

#[test]
fn every_crate_depends_only_on_crates_below_it() {
    let layers: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(crates_dir()).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let Some(&mine) = layers.get(name.as_str()) else {
            panic!("crates/{name} has no layer: add it to LAYERS and docs/architecture.md");
        };
        for dep in outcrop_deps(&manifest) {
            let theirs = layers[dep.as_str()];
            assert!(
                theirs < mine,
                "crates/{name} (layer {mine}) depends on outcrop-{dep} (layer {theirs}): \
                 only crates below may be used"
            );
        }
        seen.push(name);
    }
    assert!(seen.len() >= 9, "found only {seen:?}");
    // the timing model reads the events vocabulary, not the interpreter
    let timing = std::fs::read_to_string(crates_dir().join("timing/Cargo.toml")).unwrap();
    assert!(!outcrop_deps(&timing).contains(&"rv".to_string()));
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn mechanisms_and_summaries_have_no_threads_files_or_machine() {
    for name in [
        "events",
        "sampling",
        "timing",
        "rap",
        "strata",
        "paths",
        "profile",
        "perf",
        "diff",
        "phases",
        "instrument",
    ] {
        let mut files = Vec::new();
        sources(&crates_dir().join(name).join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for banned in ["std::thread", "std::fs::", "File::open", "Machine"] {
                    assert!(
                        !code.contains(banned),
                        "{}:{}: `{banned}` in a library that must not own threads, files or the machine",
                        f.display(),
                        i + 1
                    );
                }
            }
        }
    }
}

#[test]
fn the_binary_uses_run_report_studies_and_cli_only() {
    // the mechanisms' types reach it through `outcrop_run::mechanisms`: analyses are assembled
    // in the libraries, never a second time in the binary
    let manifest = std::fs::read_to_string(crates_dir().join("outcrop/Cargo.toml")).unwrap();
    for dep in outcrop_deps(&manifest) {
        assert!(
            ["run", "report", "studies", "cli"].contains(&dep.as_str()),
            "the binary depends on outcrop-{dep}: use it through run, report or cli"
        );
    }
}

#[test]
fn the_binary_crate_has_no_library_half() {
    assert!(!Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/lib.rs")
        .exists());
}
