//! Whole-program profiles of the bundled workloads: for every workload, the replay of the
//! captured file equals the live basic-block stream of the same run (length and a hash of
//! every address); threaded and inline capture write the same bytes; the command line
//! records, replays and reports, and rejects damaged files with the offset.

use crate::util::workloads;
use outcrop_run::{CaptureOptions, Run, WppSpec};
use outcrop_rv::{Control, Machine, Observer};
use outcrop_strata::{Codec, Config, Replay, RunInfo, WppFile};
use std::path::Path;
use std::process::Command;

fn names() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(workloads().join("bin"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.contains('.') && n != "TOOLCHAIN")
        .collect();
    v.sort();
    v
}

/// The workload on a deterministic machine with no host files (fileio runs without its
/// input file and reports the error: a shorter, still real, block stream).
fn machine(name: &str) -> Machine {
    let bin = workloads().join("bin").join(name);
    let mut spec = outcrop_run::ProgramSpec::observed(&bin, &format!("bin/{name}"));
    if name.ends_with("_dyn") {
        spec.sysroot = Some("/usr/riscv64-linux-gnu".into());
    }
    outcrop_run::load(&spec, Box::new(|_| {})).unwrap().machine
}

/// Length and FNV-1a hash of the block start addresses.
#[derive(Default, PartialEq, Debug)]
struct StreamHash {
    n: u64,
    h: u64,
}

impl StreamHash {
    fn add(&mut self, a: u64) {
        if self.n == 0 {
            self.h = 0xcbf2_9ce4_8422_2325;
        }
        self.n += 1;
        self.h = (self.h ^ a).wrapping_mul(0x0000_0100_0000_01b3);
    }
}

impl Observer for StreamHash {
    const BLOCKS: bool = true;
    fn block(&mut self, start: u64, _insns: u32) -> Control {
        self.add(start);
        Control::Continue
    }
}

/// One [`StreamHash`] per guest thread: a multi-threaded program's file keeps each thread's
/// sequence in its order (the interleaving only roughly), so the threads are compared apart.
#[derive(Debug, Default, PartialEq)]
struct ThreadHashes {
    current: u32,
    threads: std::collections::BTreeMap<u32, StreamHash>,
}

impl Observer for ThreadHashes {
    const BLOCKS: bool = true;
    fn block(&mut self, start: u64, _insns: u32) -> Control {
        self.threads.entry(self.current).or_default().add(start);
        Control::Continue
    }
    fn thread(&mut self, index: u32) -> Control {
        self.current = index;
        Control::Continue
    }
}

fn record(name: &str, opts: &CaptureOptions) -> (Vec<u8>, u64) {
    let mut m = machine(name);
    let mut bytes = Vec::new();
    let spec = WppSpec {
        sink: Box::new(&mut bytes),
        options: *opts,
        info: RunInfo::default(),
        deterministic: true,
    };
    Run::new(&mut m).wpp(spec).execute().unwrap();
    (bytes, m.instret)
}

#[test]
fn every_workload_replays_its_live_block_stream() {
    for name in names() {
        let mut live = ThreadHashes::default();
        let mut m = machine(&name);
        m.run(&mut live);
        live.current = 0;
        let (bytes, instret) = record(&name, &CaptureOptions::default());
        let f = WppFile::parse(&bytes).unwrap();
        let mut replayed = ThreadHashes::default();
        let mut r = Replay::new(&f);
        while let Some(p) = r.next_path() {
            let h = replayed.threads.entry(r.thread()).or_default();
            p.iter().for_each(|&a| h.add(a));
        }
        assert_eq!(
            replayed, live,
            "{name}: replay differs from the live stream"
        );
        assert_eq!(f.stats.build.instructions, instret, "{name}: instructions");
        assert_eq!(instret, m.instret, "{name}: the two runs differ");
    }
}

/// The capture from compiled code's basic-block trace (compiling each block at its first run,
/// and at its third, when superblocks form) is byte-identical to the capture from the
/// single-step interpreter and the block engine, on every workload (the first 5M
/// instructions of each).
#[test]
fn the_capture_is_the_same_file_on_every_engine() {
    let record_on = |name: &str, engine: outcrop_rv::Engine, hot: u32| {
        let mut m = machine(name);
        m.engine = engine;
        m.jit_hot = hot;
        m.jit_background = false;
        m.max_insns = 5_000_000;
        let mut bytes = Vec::new();
        let spec = WppSpec {
            sink: Box::new(&mut bytes),
            options: CaptureOptions::default(),
            info: RunInfo::default(),
            deterministic: true,
        };
        Run::new(&mut m).wpp(spec).execute().unwrap();
        bytes
    };
    for name in names() {
        let want = record_on(&name, outcrop_rv::Engine::Step, 1);
        for (engine, hot) in [
            (outcrop_rv::Engine::Blocks, 1),
            (outcrop_rv::Engine::Jit, 1),
            (outcrop_rv::Engine::Jit, 3),
        ] {
            let got = record_on(&name, engine, hot);
            assert!(
                got == want,
                "{name} on {engine:?}, compiled at run {hot}: the file differs"
            );
        }
    }
}

#[test]
fn threaded_and_inline_capture_write_the_same_profile() {
    for name in ["bytecode_vm", "recursion", "hello"] {
        for layers in [0, 1, 3] {
            let config = Config {
                layers,
                ..Config::default()
            };
            let threaded = CaptureOptions {
                config,
                batch_blocks: 1000,
                ..CaptureOptions::default()
            };
            let inline = CaptureOptions {
                config,
                threaded: false,
                ..CaptureOptions::default()
            };
            // the files differ only in the statistics' `threaded` flag
            let a = WppFile::parse(&record(name, &threaded).0).unwrap();
            let b = WppFile::parse(&record(name, &inline).0).unwrap();
            assert!(a.stats.run.threaded && !b.stats.run.threaded);
            let same = a.items == b.items
                && a.block_addrs == b.block_addrs
                && a.path_data == b.path_data
                && a.layers == b.layers
                && a.stats.build == b.stats.build
                && a.bytes.stream == b.bytes.stream
                && a.bytes.layers == b.bytes.layers;
            assert!(same, "{name}, {layers} layers");
        }
    }
}

#[test]
fn the_context_model_and_zstd_columns_store_the_same_stream() {
    // lz's match loop has data-dependent branches: the context model wins there
    let with = record("lz", &CaptureOptions::default()).0;
    let config = Config {
        codec: Codec::Zstd {
            level: 12,
            window_log: 27,
            context_model: false,
        },
        ..Config::default()
    };
    let without = record(
        "lz",
        &CaptureOptions {
            config,
            ..CaptureOptions::default()
        },
    )
    .0;
    let a = WppFile::parse(&with).unwrap();
    let b = WppFile::parse(&without).unwrap();
    assert!(a.chunks.iter().all(|c| c.context_coded));
    assert!(b.chunks.iter().all(|c| !c.context_coded));
    assert_eq!(a.items, b.items);
    assert!(
        a.bytes.stream < b.bytes.stream,
        "{} vs {}",
        a.bytes.stream,
        b.bytes.stream
    );
}

fn outcrop(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_outcrop"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// `outcrop wpp record --deterministic -o OUT -- workloads/bin/NAME` in `dir`.
fn record_cli(dir: &Path, out: &str, name: &str) -> std::process::Output {
    let prog = workloads().join("bin").join(name);
    let prog = prog.to_str().unwrap();
    outcrop(
        dir,
        &["wpp", "record", "--deterministic", "-o", out, "--", prog],
    )
}

#[test]
fn cli_record_replay_report() {
    let dir = tempfile::tempdir().unwrap();
    let prog = workloads().join("bin/recursion");
    let prog = prog.to_str().unwrap();
    let out = record_cli(dir.path(), "r.wpp", "recursion");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("checksum recursion"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bytes written"));
    // byte-identical on a second recording
    let again = record_cli(dir.path(), "r2.wpp", "recursion");
    assert!(again.status.success());
    let a = std::fs::read(dir.path().join("r.wpp")).unwrap();
    assert!(a == std::fs::read(dir.path().join("r2.wpp")).unwrap());

    // replay: text and u64le agree with each other and with the recorded block count
    let text = outcrop(dir.path(), &["wpp", "replay", "r.wpp"]);
    assert!(text.status.success());
    let raw = outcrop(dir.path(), &["wpp", "replay", "--format", "u64le", "r.wpp"]);
    assert!(raw.status.success());
    let lines: Vec<u64> = String::from_utf8(text.stdout)
        .unwrap()
        .lines()
        .map(|l| u64::from_str_radix(l.trim_start_matches("0x"), 16).unwrap())
        .collect();
    let words: Vec<u64> = raw
        .stdout
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(lines, words);
    let f = WppFile::parse(&a).unwrap();
    assert_eq!(words.len() as u64, f.stats.build.blocks);

    // report: text with disassembly, JSON, plots
    let rep = outcrop(
        dir.path(),
        &["wpp", "report", "r.wpp", "--binary", prog, "--svg", "plots"],
    );
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let s = String::from_utf8_lossy(&rep.stdout);
    assert!(s.contains("paths (paper Table 3)"), "{s}");
    assert!(s.contains("hottest"), "{s}");
    assert!(
        s.contains(": addi ") || s.contains(": add "),
        "no disassembly: {s}"
    );
    // direct branches name their target: `bne a5, zero, 4  <alloc_perturb+0xc>`
    assert!(
        s.lines()
            .any(|l| l.contains(": b") && l.contains("  <") && l.ends_with('>')),
        "no branch target named: {s}"
    );
    for svg in ["fig2-path-length-vs-trips.svg", "fig3-stratum-lengths.svg"] {
        let t = std::fs::read_to_string(dir.path().join("plots").join(svg)).unwrap();
        assert!(t.starts_with("<svg"), "{svg}");
    }
    let js = outcrop(dir.path(), &["wpp", "report", "--json", "r.wpp"]);
    let v: serde_json::Value = serde_json::from_slice(&js.stdout).unwrap();
    assert_eq!(
        v["paths"]["executed"].as_u64(),
        Some(f.stats.build.paths.executions)
    );
    assert!(v["compression"]["paper"].as_f64().unwrap() > 1.0);
}

#[test]
fn cli_rejects_damaged_files_with_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let prog = workloads().join("bin/hello");
    let out = record_cli(dir.path(), "h.wpp", "hello");
    assert!(out.status.success());
    let good = std::fs::read(dir.path().join("h.wpp")).unwrap();
    std::fs::write(dir.path().join("cut.wpp"), &good[..good.len() - 5]).unwrap();
    let mut flipped = good.clone();
    flipped[40] ^= 0x10;
    std::fs::write(dir.path().join("flip.wpp"), &flipped).unwrap();
    for (file, want) in [("cut.wpp", "truncated"), ("flip.wpp", "byte offset")] {
        for cmd in ["replay", "report"] {
            let o = outcrop(dir.path(), &["wpp", cmd, file]);
            assert_eq!(o.status.code(), Some(1), "{cmd} {file}");
            let e = String::from_utf8_lossy(&o.stderr);
            assert!(e.contains(want) && e.contains(file), "{cmd} {file}: {e}");
        }
    }
    // a failed recording leaves no file behind
    let o = outcrop(
        dir.path(),
        &[
            "wpp",
            "record",
            "-o",
            "x.wpp",
            "--layers",
            "999",
            "--",
            prog.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(!dir.path().join("x.wpp").exists());
}
