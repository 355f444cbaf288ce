//! Distribution binaries from the command line: dynamically linked programs with `--sysroot`
//! (and the clear errors without one, or with a bad one), the profile naming library code,
//! `--isa`, and programs for other machines. Needs Debian's riscv64 cross libraries at
//! /usr/riscv64-linux-gnu (the dynamic workload's sysroot); skipped without them unless
//! `OUTCROP_REQUIRE_CROSS` is set.

use crate::util::outcrop;
use crate::util::workload;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SYSROOT: &str = "/usr/riscv64-linux-gnu";
const INTERP: &str = "lib/ld-linux-riscv64-lp64d.so.1";

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn have_sysroot() -> bool {
    let ok = Path::new(SYSROOT).join(INTERP).exists();
    assert!(
        ok || std::env::var_os("OUTCROP_REQUIRE_CROSS").is_none(),
        "{SYSROOT} missing but OUTCROP_REQUIRE_CROSS is set"
    );
    ok
}

#[test]
fn a_dynamic_program_without_a_sysroot_names_its_interpreter_and_the_flag() {
    let prog = workload("strsearch_dyn");
    let o = outcrop(&["exec", "--", prog.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let e = err(&o);
    assert!(
        e.contains("needs the interpreter /lib/ld-linux-riscv64-lp64d.so.1"),
        "{e}"
    );
    assert!(e.contains("--sysroot /usr/riscv64-linux-gnu"), "{e}");
}

#[test]
fn a_dynamic_program_runs_with_its_sysroot_and_its_profile_names_libc() {
    if !have_sysroot() {
        return;
    }
    let prog = workload("strsearch_dyn");
    let want = std::fs::read(workload("../expected/strsearch_dyn.stdout")).unwrap();
    let o = outcrop(&["exec", "--sysroot", SYSROOT, "--", prog.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(o.stdout, want);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    let o = outcrop(&[
        "run",
        "--no-progress",
        "--deterministic",
        "--json",
        "-o",
        json.to_str().unwrap(),
        "--sysroot",
        SYSROOT,
        "--",
        prog.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let names: Vec<&str> = v["profile"]["functions"]
        .as_array()
        .or(v["functions"].as_array())
        .expect("functions")
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    for want in ["main", "strlen@libc.so.6", "printf@libc.so.6"] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
    assert!(names
        .iter()
        .any(|n| n.ends_with("@ld-linux-riscv64-lp64d.so.1")));
}

/// A sysroot of our own under `dir`: the interpreter and libraries copied from the real one,
/// each passed through `edit` (to damage it).
fn fake_sysroot(dir: &Path, edit: &dyn Fn(&str, Vec<u8>) -> Vec<u8>) -> PathBuf {
    let root = dir.join("sysroot");
    std::fs::create_dir_all(root.join("lib")).unwrap();
    for f in ["ld-linux-riscv64-lp64d.so.1", "libc.so.6"] {
        let bytes = std::fs::read(Path::new(SYSROOT).join("lib").join(f)).unwrap();
        std::fs::write(root.join("lib").join(f), edit(f, bytes)).unwrap();
    }
    root
}

#[test]
fn bad_sysroots_are_clear_errors_never_panics() {
    if !have_sysroot() {
        return;
    }
    let prog = workload("strsearch_dyn");
    let p = prog.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // no interpreter under it
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = outcrop(&["exec", "--sysroot", empty.to_str().unwrap(), "--", p]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains(
            "its interpreter /lib/ld-linux-riscv64-lp64d.so.1 cannot be read under --sysroot"
        ),
        "{}",
        err(&o)
    );
    // a sysroot that is not a directory
    let o = outcrop(&["exec", "--sysroot", p, "--", p]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("--sysroot"), "{}", err(&o));
    // a truncated interpreter
    let d1 = tempfile::tempdir().unwrap();
    let root = fake_sysroot(d1.path(), &|f, b| {
        if f.starts_with("ld-") {
            b[..b.len() / 3].to_vec()
        } else {
            b
        }
    });
    let o = outcrop(&["exec", "--sysroot", root.to_str().unwrap(), "--", p]);
    assert_eq!(o.status.code(), Some(1));
    let e = err(&o);
    assert!(
        e.contains("the interpreter /lib/ld-linux-riscv64-lp64d.so.1") && e.contains("truncated"),
        "{e}"
    );
    // a truncated shared library: its pages past the end of the file are SIGBUS, as under
    // qemu and Linux (exit status 135), never a panic
    let d2 = tempfile::tempdir().unwrap();
    let root = fake_sysroot(d2.path(), &|f, b| {
        if f == "libc.so.6" {
            b[..4096].to_vec()
        } else {
            b
        }
    });
    let o = outcrop(&["exec", "--sysroot", root.to_str().unwrap(), "--", p]);
    assert_eq!(o.status.code(), Some(135), "{}", err(&o));
    assert!(
        err(&o).contains("past the end of its file (SIGBUS)"),
        "{}",
        err(&o)
    );
    // a library missing under the sysroot (outside it, the host's own, is not reachable)
    let d3 = tempfile::tempdir().unwrap();
    let root = fake_sysroot(d3.path(), &|_, b| b);
    std::fs::remove_file(root.join("lib/libc.so.6")).unwrap();
    let o = outcrop(&["exec", "--sysroot", root.to_str().unwrap(), "--", p]);
    assert_eq!(o.status.code(), Some(127), "{}", err(&o));
    assert!(
        err(&o).contains("libc.so.6: cannot open shared object file"),
        "{}",
        err(&o)
    );
}

#[test]
fn programs_for_other_machines_are_named() {
    // this test's own host binary: an x86-64 (or other host) ELF
    let host = std::env::current_exe().unwrap();
    let o = outcrop(&["exec", "--", host.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let e = err(&o);
    assert!(e.contains("is not RISC-V"), "{e}");
    if cfg!(target_arch = "x86_64") {
        assert!(e.contains("(x86-64)"), "{e}");
        // and what to do with it instead
        assert!(e.contains("outcrop import"), "{e}");
    }
}

#[test]
fn isa_switches_extensions_off_and_names_what_faulted() {
    let prog = workload("lz_zb");
    let o = outcrop(&["exec", "--isa", "rv64gc", "--", prog.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(132));
    let e = err(&o);
    assert!(
        e.contains("is a Zba instruction, switched off by --isa"),
        "{e}"
    );
    // the profiles with and without vectors, and a -march string with V, all run it
    for good in ["rva22u64", "rva23u64", "rv64gcv_zba_zbb_zbs"] {
        let o = outcrop(&["exec", "--isa", good, "--", prog.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{good}: {}", err(&o));
    }
    for (bad, says) in [("rv64gcq", "`q`"), ("rv64gc_zvfh", "zvfh"), ("x86", "rv64")] {
        let o = outcrop(&["exec", "--isa", bad, "--", prog.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(err(&o).contains(says), "{bad}: {}", err(&o));
    }
}

#[test]
fn wpp_and_samples_files_record_every_object_and_reports_check_them() {
    if !have_sysroot() {
        return;
    }
    let prog = workload("strsearch_dyn");
    let p = prog.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let wpp = dir.path().join("s.wpp");
    let samples = dir.path().join("s.samples");
    let o = outcrop(&[
        "run",
        "--no-progress",
        "--no-profile",
        "--deterministic",
        "--sysroot",
        SYSROOT,
        "--paths",
        "16:5000",
        "--samples",
        samples.to_str().unwrap(),
        "--wpp",
        wpp.to_str().unwrap(),
        "--",
        p,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = std::fs::read_to_string(&samples).unwrap();
    assert!(
        text.starts_with("outcrop-branch-samples 3\n"),
        "{text:.200}"
    );
    assert!(
        text.contains(" /lib/libc.so.6\n") && text.contains(" /lib/ld-linux-riscv64-lp64d.so.1\n")
    );
    // the reports find the libraries under the sysroot and name code in them
    let o = outcrop(&[
        "paths",
        "report",
        samples.to_str().unwrap(),
        "--binary",
        p,
        "--sysroot",
        SYSROOT,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let o = outcrop(&[
        "wpp",
        "report",
        wpp.to_str().unwrap(),
        "--binary",
        p,
        "--sysroot",
        SYSROOT,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("@libc.so.6"));
    // without the sysroot, or with a different libc in it, they say which object and why
    let o = outcrop(&["paths", "report", samples.to_str().unwrap(), "--binary", p]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("--sysroot"), "{}", err(&o));
    let other = tempfile::tempdir().unwrap();
    let root = fake_sysroot(other.path(), &|f, b| {
        if f == "libc.so.6" {
            std::fs::read(Path::new(SYSROOT).join("lib/libm.so.6")).unwrap()
        } else {
            b
        }
    });
    for cmd in [
        vec!["paths", "report", samples.to_str().unwrap()],
        vec!["wpp", "report", wpp.to_str().unwrap()],
    ] {
        let mut args = cmd.clone();
        args.extend(["--binary", p, "--sysroot", root.to_str().unwrap()]);
        let o = outcrop(&args);
        assert_eq!(o.status.code(), Some(1), "{cmd:?}");
        assert!(
            err(&o).contains("/lib/libc.so.6 was build-id"),
            "{cmd:?}: {}",
            err(&o)
        );
        args.push("--ignore-program-id");
        let o = outcrop(&args);
        assert!(
            err(&o).contains("--ignore-program-id: reading it anyway"),
            "{cmd:?}: {}",
            err(&o)
        );
    }
}

#[test]
fn rap_labels_hot_code_ranges_in_shared_libraries_by_object_and_function() {
    if !have_sysroot() {
        return;
    }
    let prog = workload("strsearch_dyn");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let o = outcrop(&[
        "run",
        "--no-progress",
        "--no-profile",
        "--deterministic",
        "--sysroot",
        SYSROOT,
        "--rap",
        "pc",
        "--hot",
        "0.02",
        "--json",
        "-o",
        json.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    fn codes(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    if k == "code" {
                        out.extend(x.as_str().map(str::to_owned));
                    }
                    codes(x, out);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| codes(x, out)),
            _ => {}
        }
    }
    let mut labels = Vec::new();
    codes(&v, &mut labels);
    assert!(
        labels.iter().any(|l| l.contains("memcmp@libc.so.6")),
        "{labels:?}"
    );
    assert!(labels.iter().any(|l| l.starts_with("main")), "{labels:?}");
}

#[test]
fn a_shared_library_with_debug_info_gets_its_functions_and_source_lines_named() {
    if !have_sysroot() {
        return;
    }
    let gcc_ok = Command::new("riscv64-linux-gnu-gcc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !gcc_ok {
        assert!(
            std::env::var_os("OUTCROP_REQUIRE_CROSS").is_none(),
            "riscv64-linux-gnu-gcc missing but OUTCROP_REQUIRE_CROSS is set"
        );
        eprintln!("skipped: no riscv64-linux-gnu-gcc");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("work.c"),
        "int work(int n) {\n  int s = 0;\n  for (int i = 0; i < n; i++)\n    s += i * i;\n  return s;\n}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("main.c"),
        "#include <stdio.h>\nint work(int);\nint main(void) { printf(\"%d\\n\", work(100000)); return 0; }\n",
    )
    .unwrap();
    let gcc = |args: &[&str]| {
        let o = Command::new("riscv64-linux-gnu-gcc")
            .current_dir(d)
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    gcc(&[
        "-O1",
        "-g",
        "-shared",
        "-fPIC",
        "-o",
        "libwork.so",
        "work.c",
    ]);
    gcc(&["-O1", "-o", "main", "main.c", "-L.", "-lwork"]);
    let rep = d.join("rep");
    let env = format!("LD_LIBRARY_PATH={}", d.display());
    let o = outcrop(&[
        "run",
        "--no-progress",
        "--deterministic",
        "--sysroot",
        SYSROOT,
        "--allow",
        d.to_str().unwrap(),
        "--env",
        &env,
        "--report",
        rep.to_str().unwrap(),
        "--",
        d.join("main").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(rep.join("profile.json")).unwrap()).unwrap();
    let lines = v["lines"].as_array().unwrap();
    assert!(
        lines.iter().any(
            |l| l["file"].as_str().is_some_and(|f| f.ends_with("work.c"))
                && l["function"] == "work@libwork.so"
        ),
        "{lines:?}"
    );
}

/// `tests/fixtures/debuglink`: a program whose library is stripped, with its debug file in
/// `debug/.build-id/…` (build.sh).
fn debuglink_fixture() -> PathBuf {
    crate::util::root().join("crates/outcrop/tests/fixtures/debuglink")
}

/// `outcrop run --report DIR EXTRA -- prog` in `dir`: the profile's JSON.
fn profile_in(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let report = tempfile::tempdir().unwrap();
    let mut args = vec![
        "run",
        "--deterministic",
        "--sysroot",
        SYSROOT,
        "--allow",
        ".",
        "--report",
        report.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.extend(["--", "./prog"]);
    let o = crate::util::outcrop_in(&args, dir);
    assert!(o.status.success(), "{}", err(&o));
    serde_json::from_slice(&std::fs::read(report.path().join("profile.json")).unwrap()).unwrap()
}

fn hottest(v: &serde_json::Value) -> String {
    v["functions"][0]["name"].as_str().unwrap().to_string()
}

#[test]
fn a_stripped_librarys_static_functions_are_named_from_its_debug_file() {
    if !have_sysroot() {
        return;
    }
    let dir = debuglink_fixture();
    // without its debug file: one bucket, as perf shows a stripped library
    assert_eq!(hottest(&profile_in(&dir, &[])), "[unknown]@libwork.so");
    // by build-id under --debug-dir: the static function and its source lines
    let v = profile_in(&dir, &["--debug-dir", "debug"]);
    assert_eq!(hottest(&v), "mix@libwork.so");
    let lines = v["lines"].as_array().unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l["file"] == "./work.c" && l["function"] == "mix@libwork.so"),
        "{v}"
    );
    // by .gnu_debuglink, in a `.debug` directory beside the library (gdb's second place)
    let copy = tempfile::tempdir().unwrap();
    for f in ["prog", "libwork.so"] {
        std::fs::copy(dir.join(f), copy.path().join(f)).unwrap();
    }
    let debug = std::fs::read_dir(dir.join("debug/.build-id"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .next()
        .unwrap();
    std::fs::create_dir(copy.path().join(".debug")).unwrap();
    let name = debug.file_name().unwrap();
    std::fs::copy(&debug, copy.path().join(".debug").join(name)).unwrap();
    assert_eq!(hottest(&profile_in(copy.path(), &[])), "mix@libwork.so");
    // a debug file that is not the library's (another build: its CRC differs) is not used
    let mut other = std::fs::read(&debug).unwrap();
    let n = other.len();
    other[n - 1] ^= 1;
    std::fs::write(copy.path().join(".debug").join(name), other).unwrap();
    assert_eq!(
        hottest(&profile_in(copy.path(), &[])),
        "[unknown]@libwork.so"
    );
}
