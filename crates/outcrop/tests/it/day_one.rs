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
