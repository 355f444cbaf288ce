//! `outcrop instrument` end to end on every bundled workload: GCC's `-O2 -S` assembly
//! rewritten for each site kind and sampling framework, assembled with the runtime
//! (`workloads/runtime/outcrop_rt.c`), prints exactly what the uninstrumented program printed
//! (`workloads/expected/`), on Outcrop's machine and under `qemu-riscv64-static`; and the
//! counts it writes are right:
//!
//! * full entry counts equal the exact profile's entries of each function on the same run;
//! * the software counter takes exactly ⌊checks / interval⌋ samples, checks being the full
//!   variant's total (the program is deterministic, so both run the same sites);
//! * brr under `--brr counter` (the paper's hardware counter) likewise, and under the LFSR
//!   stays within 5 standard deviations of checks / interval;
//! * under qemu, where every brr traps to the runtime's SIGILL handler, the brr site profile
//!   is byte-identical to the machine's (same LFSR, same seed).
//!
//! Needs the RISC-V cross tools (and qemu for its half); skipped without them unless
//! `OUTCROP_REQUIRE_CROSS=1` (CI).

use crate::util::workloads;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const INTERVAL: u64 = 64;

fn names() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(workloads().join("src"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| Some(e.file_name().to_str()?.strip_suffix(".c")?.to_owned()))
        .collect();
    v.sort();
    v
}

/// Whether workload `name` runs several threads (manifest kind `threads`). qemu-user runs them
/// in parallel, and the runtime's counters are plain increments, so qemu's counts race (lose
/// updates); the machine runs threads in turns and its counts are exact.
fn threaded(name: &str) -> bool {
    outcrop_studies::Manifest::load(&workloads())
        .unwrap()
        .get(name)
        .is_ok_and(|w| w.kind == outcrop_studies::manifest::Kind::Threads)
}

fn have(tool: &str) -> bool {
    outcrop_testkit::have_or_skip(tool, "OUTCROP_REQUIRE_CROSS")
}

fn check(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A scratch layout as reference.sh runs programs in: `bin/NAME`, `src/fileio.c`.
struct Scratch {
    dir: tempfile::TempDir,
    asm: PathBuf,
    march: String,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        Scratch::with_march(name, "rv64gc")
    }

    /// The workload compiled for `-march=MARCH` (the same for its instrumented variants).
    fn with_march(name: &str, march: &str) -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        for d in ["bin", "src", "asm"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        std::fs::copy(
            workloads().join("src/fileio.c"),
            dir.path().join("src/fileio.c"),
        )
        .unwrap();
        let asm = dir.path().join("asm").join(format!("{name}.s"));
        let src = workloads().join("src").join(format!("{name}.c"));
        let out = Command::new("riscv64-linux-gnu-gcc")
            .args(["-O2", &format!("-march={march}"), "-mabi=lp64d", "-S", "-o"])
            .arg(&asm)
            .arg(&src)
            .output()
            .unwrap();
        check(&out, "gcc -S");
        Scratch {
            dir,
            asm,
            march: march.to_string(),
        }
    }

    /// Builds variant `flags` into `bin/NAME` (replacing the previous one).
    fn build(&self, name: &str, flags: &[&str]) -> PathBuf {
        let d = self.dir.path();
        let s = d.join("asm").join("variant.s");
        let out = Command::new(env!("CARGO_BIN_EXE_outcrop"))
            .arg("instrument")
            .arg(&self.asm)
            .arg("-o")
            .arg(&s)
            .args(["--interval", &INTERVAL.to_string(), "--unit", name])
            .args(flags)
            .output()
            .unwrap();
        check(&out, &format!("outcrop instrument {flags:?}"));
        let bin = d.join("bin").join(name);
        let out = Command::new("riscv64-linux-gnu-gcc")
            .args(["-O2", "-static", &format!("-march={}", self.march)])
            .args(["-mabi=lp64d", "-o"])
            .arg(&bin)
            .arg(&s)
            .arg(workloads().join("runtime/outcrop_rt.c"))
            .arg("-lm")
            .output()
            .unwrap();
        check(&out, &format!("link {flags:?}"));
        bin
    }

    /// Runs `bin/NAME` under `cmd` (outcrop or qemu) and checks its output against
    /// `expected/`; returns the site profile it wrote.
    fn run(&self, name: &str, mut cmd: Command, what: &str) -> String {
        let d = self.dir.path();
        let _ = std::fs::remove_file(d.join("sites.txt"));
        cmd.current_dir(d).stdin(Stdio::null());
        if name == "fileio" {
            cmd.arg("src/fileio.c");
        }
        let out = cmd.output().unwrap();
        let want = |ext: &str| {
            std::fs::read(workloads().join("expected").join(format!("{name}.{ext}"))).unwrap()
        };
        let status: i32 = String::from_utf8_lossy(&want("status"))
            .trim()
            .parse()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(status),
            "{name} {what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stdout == want("stdout"),
            "{name} {what}: stdout differs"
        );
        std::fs::read_to_string(d.join("sites.txt"))
            .unwrap_or_else(|e| panic!("{name} {what}: no site profile: {e}"))
    }

    fn machine(&self, name: &str, brr: &str, extra: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_outcrop"));
        c.args(extra).args([
            "--deterministic",
            "--allow-rw",
            ".",
            "--brr",
            brr,
            "--env",
            "OUTCROP_PROFILE=sites.txt",
            "--",
        ]);
        c.arg(format!("bin/{name}"));
        c
    }

    fn qemu(&self, name: &str) -> Command {
        let mut c = Command::new("qemu-riscv64-static");
        c.env_clear()
            .env("OUTCROP_PROFILE", "sites.txt")
            .arg("-0")
            .arg(format!("bin/{name}"))
            .arg(format!("bin/{name}"));
        c
    }
}

/// `COUNT NAME` lines as a map.
fn counts(profile: &str) -> BTreeMap<String, u64> {
    profile
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (c, n) = l.split_once(' ').unwrap();
            (n.to_string(), c.parse().unwrap())
        })
        .collect()
}

fn total(profile: &str) -> u64 {
    counts(profile).values().sum()
}

/// The sampled totals' checks: exact for counters, statistical for the LFSR. Not for a
/// program that runs several threads: the software counter is one global countdown its
/// threads share without synchronisation (as the paper's single-threaded framework has it),
/// so a switch between its load and store loses a decrement or a reset, and the count is off.
fn assert_sampled(name: &str, what: &str, checks: u64, sampled: u64, exact: bool) {
    if threaded(name) {
        return;
    }
    if exact {
        assert_eq!(sampled, checks / INTERVAL, "{name} {what}: {checks} checks");
    } else {
        let mean = checks as f64 / INTERVAL as f64;
        let sd = (mean * (1.0 - 1.0 / INTERVAL as f64)).sqrt().max(1.0);
        assert!(
            (sampled as f64 - mean).abs() <= 5.0 * sd + 1.0,
            "{name} {what}: {sampled} samples of {checks} checks at 1/{INTERVAL}"
        );
    }
}

fn entries(name: &str, qemu: bool) {
    let s = Scratch::new(name);
    // full: every count equals the exact profile's entries on the same run
    s.build(name, &["--sites", "entries", "--sampling", "full"]);
    let dir = s.dir.path();
    let mut cmd = s.machine(name, "lfsr", &["run", "--json", "-o", "profile.json"]);
    cmd.current_dir(dir);
    let full = s.run(name, cmd, "entries full");
    let profile: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("profile.json")).unwrap()).unwrap();
    let calls: BTreeMap<String, u64> = profile["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["calls"].as_u64().unwrap(),
            )
        })
        .collect();
    for (site, n) in counts(&full) {
        let sym = site.split('@').next().unwrap();
        assert_eq!(calls.get(sym).copied().unwrap_or(0), n, "{name}: {site}");
    }
    let checks = total(&full);
    if qemu {
        assert_eq!(s.run(name, s.qemu(name), "entries full, qemu"), full);
    }
    // the software counter: exactly one sample per INTERVAL checks
    s.build(name, &["--sites", "entries", "--sampling", "counter"]);
    let sampled = s.run(name, s.machine(name, "lfsr", &["exec"]), "entries counter");
    assert_sampled(name, "entries counter", checks, total(&sampled), true);
    if qemu {
        assert_eq!(s.run(name, s.qemu(name), "entries counter, qemu"), sampled);
    }
    // brr: the hardware counter exactly, the LFSR statistically, and the same LFSR under qemu
    s.build(name, &["--sites", "entries", "--sampling", "brr"]);
    let hw = s.run(
        name,
        s.machine(name, "counter", &["exec"]),
        "entries brr counter",
    );
    assert_sampled(name, "entries brr counter", checks, total(&hw), true);
    let lfsr = s.run(name, s.machine(name, "lfsr", &["exec"]), "entries brr lfsr");
    assert_sampled(name, "entries brr lfsr", checks, total(&lfsr), false);
    if qemu && checks < 500_000 {
        assert_eq!(s.run(name, s.qemu(name), "entries brr, qemu"), lfsr);
        // a leap-forward register, here and in the runtime's emulation
        let leap = s.run(
            name,
            s.machine(name, "lfsr", &["exec", "--brr-leap", "20"]),
            "entries brr leap 20",
        );
        assert_sampled(name, "entries brr leap 20", checks, total(&leap), false);
        let mut q = s.qemu(name);
        q.env("OUTCROP_BRR_LEAP", "20");
        assert_eq!(s.run(name, q, "entries brr leap 20, qemu"), leap);
    }
    // Full-Duplication runs the same program
    s.build(
        name,
        &[
            "--sites",
            "entries",
            "--sampling",
            "brr",
            "--full-duplication",
        ],
    );
    s.run(name, s.machine(name, "lfsr", &["exec"]), "entries brr-dup");
}

fn edges(name: &str, qemu: bool) {
    let s = Scratch::new(name);
    s.build(name, &["--sites", "edges", "--sampling", "full"]);
    let full = s.run(name, s.machine(name, "lfsr", &["exec"]), "edges full");
    let checks = total(&full);
    if qemu {
        assert_eq!(s.run(name, s.qemu(name), "edges full, qemu"), full);
    }
    s.build(name, &["--sites", "edges", "--sampling", "counter"]);
    let sampled = s.run(name, s.machine(name, "lfsr", &["exec"]), "edges counter");
    assert_sampled(name, "edges counter", checks, total(&sampled), true);
    s.build(name, &["--sites", "edges", "--sampling", "brr"]);
    let lfsr = s.run(name, s.machine(name, "lfsr", &["exec"]), "edges brr");
    assert_sampled(name, "edges brr", checks, total(&lfsr), false);
    for sampling in ["counter", "brr"] {
        s.build(
            name,
            &[
                "--sites",
                "edges",
                "--sampling",
                sampling,
                "--full-duplication",
            ],
        );
        let dup = s.run(name, s.machine(name, "lfsr", &["exec"]), "edges dup");
        assert!(counts(&dup).keys().all(|k| counts(&full).contains_key(k)));
        // (brr under qemu traps at every check: the study runs those, not CI)
        // (the counter's countdown is deterministic: qemu's counts equal the machine's)
        if qemu && sampling == "counter" {
            assert_eq!(s.run(name, s.qemu(name), "edges dup, qemu"), dup);
        }
    }
}

fn each(f: fn(&str, bool)) {
    if !have("riscv64-linux-gnu-gcc") {
        return;
    }
    let qemu = have("qemu-riscv64-static");
    for name in names() {
        f(&name, qemu && !threaded(&name));
    }
}

#[test]
fn programs_built_with_the_b_extension_are_instrumented_right() {
    // GCC's B code (sh3add, bset, zext.h… in the function bodies) passes through the rewriter
    // and its counts still equal the exact profile's (and qemu's, which knows Zba/Zbb/Zbs)
    if !have("riscv64-linux-gnu-gcc") {
        return;
    }
    for name in ["hashtable", "qsort_ints", "lz"] {
        let s = Scratch::with_march(name, "rv64gc_zba_zbb_zbs");
        let text = std::fs::read_to_string(&s.asm).unwrap();
        assert!(
            ["sh1add", "sh2add", "sh3add", "bset", "zext.", "andn", "add.uw"]
                .iter()
                .any(|m| text.contains(m)),
            "{name}: gcc emitted no B instructions"
        );
        s.build(name, &["--sites", "entries", "--sampling", "full"]);
        let dir = s.dir.path();
        let mut cmd = s.machine(name, "lfsr", &["run", "--json", "-o", "profile.json"]);
        cmd.current_dir(dir);
        let full = s.run(name, cmd, "B entries full");
        let profile: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("profile.json")).unwrap()).unwrap();
        for (site, n) in counts(&full) {
            let sym = site.split('@').next().unwrap();
            let calls = profile["functions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"] == sym)
                .map_or(0, |f| f["calls"].as_u64().unwrap());
            assert_eq!(calls, n, "{name}: {site}");
        }
        if have("qemu-riscv64-static") {
            assert_eq!(s.run(name, s.qemu(name), "B entries full, qemu"), full);
        }
        s.build(name, &["--sites", "edges", "--sampling", "full"]);
        let edges = s.run(name, s.machine(name, "lfsr", &["exec"]), "B edges full");
        if have("qemu-riscv64-static") {
            assert_eq!(s.run(name, s.qemu(name), "B edges full, qemu"), edges);
        }
    }
}

#[test]
fn every_workload_counts_its_function_entries_right_in_every_framework() {
    each(entries);
}

#[test]
fn every_workload_counts_its_branch_edges_right_in_every_framework() {
    each(edges);
}

/// Hand-written assembly with every label form: a named local label loop (`.L2`), numeric
/// labels backward (`1b`) and forward (`2f`). Prints 60.
const LABEL_FORMS: &str = "\t.text
\t.align\t1
\t.globl\tmain
\t.type\tmain, @function
main:
\taddi\tsp,sp,-16
\tsd\tra,8(sp)
\tli\ta0,0
\tli\ta1,10
.L2:
\tadd\ta0,a0,a1
\taddi\ta1,a1,-1
\tbnez\ta1,.L2
\tli\ta1,5
1:
\taddi\ta0,a0,1
\taddi\ta1,a1,-1
\tbnez\ta1,1b
\tbeqz\ta1,2f
\taddi\ta0,a0,100
2:
\tmv\ta1,a0
\tlla\ta0,.LC0
\tcall\tprintf
\tli\ta0,0
\tld\tra,8(sp)
\taddi\tsp,sp,16
\tjr\tra
\t.size\tmain, .-main
\t.section\t.rodata
.LC0:
\t.string\t\"%ld\\n\"
";

#[test]
fn every_label_form_is_instrumented_right_or_refused_with_its_line() {
    // position-dependent forms: each refused, naming the line
    for (line, bad) in [
        ("\tbeqz\ta1,.+8", "location counter"),
        ("\tj\t.-4", "location counter"),
        ("\tbnez\ta1,. + 6", "location counter"),
        ("\tlla\ta2,.+12", "location counter"),
        ("\tbnez\ta1,.L2+4", "offset from a label"),
    ] {
        let text = LABEL_FORMS.replace("\tli\ta1,5\n", &format!("\tli\ta1,5\n{line}\n"));
        let no = text.lines().position(|l| l == line).unwrap() + 1;
        let dir = tempfile::tempdir().unwrap();
        let s = dir.path().join("forms.s");
        std::fs::write(&s, &text).unwrap();
        for sampling in ["full", "counter", "brr"] {
            let out = Command::new(env!("CARGO_BIN_EXE_outcrop"))
                .arg("instrument")
                .arg(&s)
                .args([
                    "-o",
                    "/dev/null",
                    "--sites",
                    "edges",
                    "--sampling",
                    sampling,
                ])
                .output()
                .unwrap();
            let e = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{line}: {e}");
            assert!(
                e.contains(&format!("line {no}:")) && e.contains(bad),
                "{line}: {e}"
            );
        }
    }
    // the label forms: instrumented in every framework, built and run, same output
    if !have("riscv64-linux-gnu-gcc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("forms.s");
    std::fs::write(&s, LABEL_FORMS).unwrap();
    for sites in ["entries", "edges"] {
        for sampling in ["full", "counter", "brr"] {
            let v = dir.path().join(format!("{sites}-{sampling}.s"));
            let out = Command::new(env!("CARGO_BIN_EXE_outcrop"))
                .arg("instrument")
                .arg(&s)
                .arg("-o")
                .arg(&v)
                .args(["--sites", sites, "--sampling", sampling, "--interval", "2"])
                .output()
                .unwrap();
            check(&out, &format!("instrument {sites} {sampling}"));
            let bin = dir.path().join(format!("{sites}-{sampling}"));
            let out = Command::new("riscv64-linux-gnu-gcc")
                .args(["-O2", "-static", "-march=rv64gc", "-mabi=lp64d", "-o"])
                .arg(&bin)
                .arg(&v)
                .arg(workloads().join("runtime/outcrop_rt.c"))
                .output()
                .unwrap();
            check(&out, &format!("link {sites} {sampling}"));
            let out = Command::new(env!("CARGO_BIN_EXE_outcrop"))
                .args(["exec", "--deterministic", "--max-insns", "10000000", "--"])
                .arg(&bin)
                .output()
                .unwrap();
            check(&out, &format!("run {sites} {sampling}"));
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                "60\n",
                "{sites} {sampling}"
            );
        }
    }
}
