//! Names a perf user reads: C++ and Rust functions demangled in every view (`--no-demangle`
//! for the symbol table's spelling), the mangled name kept in JSON beside the readable one.

use crate::util::{outcrop, root};
use std::path::PathBuf;

/// A static C++ program (libstdc++'s threads and futures; `crates/rv/tests/fixtures/threads`).
fn cpp_program() -> PathBuf {
    root().join("crates/rv/tests/fixtures/threads/cppthreads")
}

fn profile_json(extra: &[&str]) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let program = cpp_program();
    let mut args = vec![
        "run",
        "--deterministic",
        "--report",
        dir.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.extend(["--", program.to_str().unwrap()]);
    let o = outcrop(&args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    let v =
        serde_json::from_slice(&std::fs::read(dir.path().join("profile.json")).unwrap()).unwrap();
    (stderr, v)
}

#[test]
fn cpp_functions_are_demangled_with_the_mangled_name_beside() {
    let (text, v) = profile_json(&[]);
    let functions = v["functions"].as_array().unwrap();
    let demangled: Vec<&serde_json::Value> = functions
        .iter()
        .filter(|f| f.get("mangled").is_some())
        .collect();
    assert!(!demangled.is_empty(), "no C++ function ran: {v}");
    for f in &demangled {
        let (name, mangled) = (f["name"].as_str().unwrap(), f["mangled"].as_str().unwrap());
        assert!(mangled.starts_with("_Z"), "{mangled}");
        assert!(!name.starts_with("_Z") && name != mangled, "{name}");
    }
    // libstdc++'s thread start, as c++filt prints it
    assert!(
        demangled.iter().any(|f| f["name"]
            .as_str()
            .unwrap()
            .starts_with("std::thread::_M_start_thread(")),
        "{v}"
    );
    // the terminal's table shows the readable names only
    assert!(text.contains("std::"), "{text}");
    assert!(!text.contains("  _ZN"), "{text}");
}

#[test]
fn no_demangle_shows_the_symbol_table_spelling() {
    let (text, v) = profile_json(&["--no-demangle"]);
    let functions = v["functions"].as_array().unwrap();
    assert!(functions.iter().all(|f| f.get("mangled").is_none()), "{v}");
    assert!(
        functions.iter().any(|f| f["name"]
            .as_str()
            .unwrap()
            .starts_with("_ZNSt6thread15_M_start_thread")),
        "{v}"
    );
    assert!(text.contains("  _ZN"), "{text}");
}
