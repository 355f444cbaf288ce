//! `cargo run -p xtask -- cachegrind`: the external check of the timing model's caches.
//!
//! For memory-bound workloads, the same C source is compiled natively and run under
//! `valgrind --tool=cachegrind` with our cache geometry (L1I/L1D 32 KiB 4-way, LL = our
//! shared L2, 1 MiB 8-way, 64-byte lines; cachegrind is LRU and write-allocate like our
//! model), and the RISC-V build is run on our machine with `--timing`. The table compares
//! data-side misses: cachegrind's D1mr + D1mw with our `l1d_misses`, and DLmr + DLmw with
//! our `l2_data_misses`. The target is agreement within 10% where the kernel dominates the
//! count; data accesses (Dr + Dw against `l1d_accesses`) are shown for context only, since
//! x86-64 and RV64GC code differ in how many loads, stores and spills they make.
//!
//! The native build is `gcc -O2 -static -fno-tree-vectorize`: static like the guest binaries
//! (a dynamic loader would add thousands of misses that the guest never sees) and scalar like
//! RV64GC code (no vector unit), so both runs make the same accesses in the kernels. Both
//! sides count the whole program, C start-up and `printf` included, so workloads with only a
//! few hundred misses (`micro_l1_fit`) compare start-up code of two C libraries more than the
//! model; they check that the miss rate is near zero, not the ratio.
//!
//! The last column says whether the native build printed `expected/<name>.stdout`, i.e. did
//! the same computation. `matmul` does not: GCC fuses `a * b + c` into `fmadd` on RV64GC but
//! not on baseline x86-64, so its floating-point checksums differ; the loops and the memory
//! they touch are the same.
//!
//! Needs `gcc` with a static C library, `valgrind`, and a release build of `outcrop`
//! (`cargo build --release`; this task does not build it, so the numbers are of the binary
//! you built). Invocations follow `workloads/reference.sh`: working directory `workloads/`,
//! empty environment, stdin `/dev/null`, `fileio` gets `src/fileio.c`.

use crate::{Context, Result};
use outcrop_studies::{cells, table::Table};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Workloads checked by default: the two cache micro-benchmarks and the bundled programs
/// whose data misses are a large share of their run.
pub const DEFAULT_WORKLOADS: &[&str] = &[
    "micro_stride_miss",
    "micro_l1_fit",
    "ptrchase",
    "matmul",
    "graph_bfs",
    "hashtable",
];

/// A cache level's geometry as given to cachegrind (`--D1=size,assoc,line`).
struct CacheGeometry {
    /// Name in cachegrind's `desc:` lines ("I1", "D1", "LL").
    name: &'static str,
    size_bytes: u64,
    ways: u64,
    line_bytes: u64,
}

/// The timing model's caches: L1I and L1D 32 KiB 4-way, shared L2 1 MiB 8-way, 64 B lines.
const GEOMETRY: [CacheGeometry; 3] = [
    CacheGeometry {
        name: "I1",
        size_bytes: 32 * 1024,
        ways: 4,
        line_bytes: 64,
    },
    CacheGeometry {
        name: "D1",
        size_bytes: 32 * 1024,
        ways: 4,
        line_bytes: 64,
    },
    CacheGeometry {
        name: "LL",
        size_bytes: 1024 * 1024,
        ways: 8,
        line_bytes: 64,
    },
];

/// Options of the `cachegrind` task.
#[derive(Debug, Clone)]
pub struct CachegrindConfig {
    /// Workloads to compare (default: the data-bound ones the table uses).
    pub workloads: Vec<String>,
    /// Print the table as JSON.
    pub json: bool,
}

/// Whole-program data-side totals from a cachegrind out file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CachegrindTotals {
    /// Data reads.
    dr: u64,
    /// Data writes.
    dw: u64,
    /// D1 read misses.
    d1mr: u64,
    /// D1 write misses.
    d1mw: u64,
    /// LL read misses caused by data reads.
    dlmr: u64,
    /// LL write misses caused by data writes.
    dlmw: u64,
}

impl CachegrindTotals {
    fn accesses(&self) -> u64 {
        self.dr + self.dw
    }
    fn d1_misses(&self) -> u64 {
        self.d1mr + self.d1mw
    }
    fn ll_misses(&self) -> u64 {
        self.dlmr + self.dlmw
    }
}

/// Parses a cachegrind out file: the `events:` line names the columns of the `summary:` line
/// (read by name, since the set and order of events depend on the options). Also checks that
/// the `desc:` lines show the geometry we asked for.
fn parse_cachegrind_out(text: &str) -> Result<CachegrindTotals> {
    let mut events: Option<Vec<&str>> = None;
    let mut summary: Option<Vec<&str>> = None;
    let mut desc = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("events:") {
            events = Some(rest.split_whitespace().collect());
        } else if let Some(rest) = line.strip_prefix("summary:") {
            summary = Some(rest.split_whitespace().collect());
        } else if let Some(rest) = line.strip_prefix("desc:") {
            desc.push(rest.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    let events = events.context("cachegrind out file has no `events:` line")?;
    let summary = summary.context("cachegrind out file has no `summary:` line")?;
    if events.len() != summary.len() {
        bail!(
            "cachegrind `summary:` has {} values for {} events ({})",
            summary.len(),
            events.len(),
            events.join(" ")
        );
    }
    let mut by_name = HashMap::new();
    for (name, value) in events.iter().zip(&summary) {
        let v: u64 = value
            .parse()
            .with_context(|| format!("cachegrind `summary:` value {value:?} of event {name}"))?;
        by_name.insert(*name, v);
    }
    let get = |name: &str| -> Result<u64> {
        by_name.get(name).copied().with_context(|| {
            format!(
                "cachegrind out file has no event {name} (events: {}); was --cache-sim=yes given?",
                events.join(" ")
            )
        })
    };
    for g in &GEOMETRY {
        let want = format!(
            "{} cache: {} B, {} B, {}-way associative",
            g.name, g.size_bytes, g.line_bytes, g.ways
        );
        if !desc.contains(&want) {
            bail!(
                "cachegrind did not simulate the requested geometry: no `desc: {want}` (desc lines: {desc:?})"
            );
        }
    }
    Ok(CachegrindTotals {
        dr: get("Dr")?,
        dw: get("Dw")?,
        d1mr: get("D1mr")?,
        d1mw: get("D1mw")?,
        dlmr: get("DLmr")?,
        dlmw: get("DLmw")?,
    })
}

/// Our machine's data-side cache totals: the `timing` object of `outcrop exec --timing
/// --stats-json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TimingTotals {
    l1d_accesses: u64,
    l1d_misses: u64,
    l2_data_accesses: u64,
    l2_data_misses: u64,
}

/// Reads the `timing` object of an `outcrop exec --stats-json` file.
fn parse_stats_json(text: &str) -> Result<TimingTotals> {
    let json: serde_json::Value = serde_json::from_str(text).context("stats JSON is not JSON")?;
    let timing = json
        .get("timing")
        .context("stats JSON has no `timing` object (was the run made with --timing?)")?;
    let get = |name: &str| -> Result<u64> {
        timing
            .get(name)
            .with_context(|| format!("stats JSON: `timing` has no field `{name}`"))?
            .as_u64()
            .with_context(|| format!("stats JSON: `timing.{name}` is not an unsigned integer"))
    };
    Ok(TimingTotals {
        l1d_accesses: get("l1d_accesses")?,
        l1d_misses: get("l1d_misses")?,
        l2_data_accesses: get("l2_data_accesses")?,
        l2_data_misses: get("l2_data_misses")?,
    })
}

/// True when `outcrop exec` stopped at argument parsing because it does not know `--timing`
/// (clap: "error: unexpected argument '--timing' found").
fn is_missing_timing_flag(stderr: &str) -> bool {
    stderr.contains("'--timing'")
        && (stderr.contains("unexpected argument") || stderr.contains("unrecognized"))
}

/// One workload's comparison.
struct Row {
    name: String,
    /// The native build printed exactly `expected/<name>.stdout` (the same computation).
    native_stdout_matches: bool,
    cachegrind: CachegrindTotals,
    /// `None` when our machine could not produce timing statistics (see the error printed).
    ours: Option<TimingTotals>,
}

/// `ours / theirs`, or `None` when cachegrind counted nothing.
fn ratio(ours: u64, theirs: u64) -> Option<f64> {
    (theirs > 0).then(|| ours as f64 / theirs as f64)
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "—".to_string(), |r| format!("{r:.3}"))
}

fn fmt_opt(v: Option<u64>) -> String {
    v.map_or_else(|| "—".to_string(), |v| v.to_string())
}

fn markdown_table(rows: &[Row]) -> String {
    let mut t = Table::new()
        .left("workload")
        .rights([
            "cachegrind D1 misses",
            "ours L1D misses",
            "ratio",
            "cachegrind LL data misses",
            "ours L2 data misses",
            "ratio",
            "cachegrind data accesses",
            "ours L1D accesses",
            "ratio",
        ])
        .left("native stdout = expected");
    for r in rows {
        let cg = &r.cachegrind;
        let o = r.ours.as_ref();
        t.row(cells![
            r.name,
            cg.d1_misses(),
            fmt_opt(o.map(|o| o.l1d_misses)),
            fmt_ratio(o.and_then(|o| ratio(o.l1d_misses, cg.d1_misses()))),
            cg.ll_misses(),
            fmt_opt(o.map(|o| o.l2_data_misses)),
            fmt_ratio(o.and_then(|o| ratio(o.l2_data_misses, cg.ll_misses()))),
            cg.accesses(),
            fmt_opt(o.map(|o| o.l1d_accesses)),
            fmt_ratio(o.and_then(|o| ratio(o.l1d_accesses, cg.accesses()))),
            if r.native_stdout_matches { "yes" } else { "no" }
        ]);
    }
    t.to_string()
}

fn json_rows(rows: &[Row]) -> serde_json::Value {
    use serde_json::json;
    let rows: Vec<_> = rows
        .iter()
        .map(|r| {
            let cg = &r.cachegrind;
            json!({
                "workload": r.name,
                "native_stdout_matches": r.native_stdout_matches,
                "cachegrind": {
                    "Dr": cg.dr, "Dw": cg.dw, "D1mr": cg.d1mr, "D1mw": cg.d1mw,
                    "DLmr": cg.dlmr, "DLmw": cg.dlmw,
                },
                "ours": r.ours.map(|o| json!({
                    "l1d_accesses": o.l1d_accesses,
                    "l1d_misses": o.l1d_misses,
                    "l2_data_accesses": o.l2_data_accesses,
                    "l2_data_misses": o.l2_data_misses,
                })),
                "l1d_miss_ratio": r.ours.and_then(|o| ratio(o.l1d_misses, cg.d1_misses())),
                "l2_data_miss_ratio": r.ours.and_then(|o| ratio(o.l2_data_misses, cg.ll_misses())),
                "data_access_ratio": r.ours.and_then(|o| ratio(o.l1d_accesses, cg.accesses())),
            })
        })
        .collect();
    json!({
        "geometry": GEOMETRY.iter().map(|g| json!({
            "cache": g.name, "size_bytes": g.size_bytes, "ways": g.ways, "line_bytes": g.line_bytes,
        })).collect::<Vec<_>>(),
        "rows": rows,
    })
}

/// Arguments each workload gets (workloads/manifest.toml).
fn args_for(name: &str) -> Vec<String> {
    crate::bench::guest_args(name).unwrap_or_default()
}

/// Fails with the Debian package to install when `tool --version` cannot run.
fn require_tool(tool: &str, debian_packages: &str) -> Result<()> {
    let ok = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        bail!("{tool} not found (Debian: apt-get install {debian_packages})");
    }
    Ok(())
}

/// Compiles `workloads/src/<name>.c` natively into `out`.
fn compile_native(workloads: &Path, name: &str, out: &Path) -> Result<()> {
    let src = workloads.join("src").join(format!("{name}.c"));
    let output = Command::new("gcc")
        .args(["-O2", "-static", "-fno-tree-vectorize", "-o"])
        .arg(out)
        .arg(&src)
        .arg("-lm")
        .stdin(Stdio::null())
        .output()
        .context("running gcc")?;
    if !output.status.success() {
        bail!(
            "gcc -O2 -static {} failed (a static build needs Debian's libc6-dev):\n{}",
            src.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

/// Runs the native binary under cachegrind; returns its totals and whether its stdout is
/// `expected/<name>.stdout`.
fn run_cachegrind(
    workloads: &Path,
    name: &str,
    native: &Path,
    out_file: &Path,
) -> Result<(CachegrindTotals, bool)> {
    let geometry_arg =
        |g: &CacheGeometry| format!("--{}={},{},{}", g.name, g.size_bytes, g.ways, g.line_bytes);
    let output = Command::new("valgrind")
        .args(["--tool=cachegrind", "--cache-sim=yes"])
        .args(GEOMETRY.iter().map(geometry_arg))
        .arg(format!("--cachegrind-out-file={}", out_file.display()))
        .arg(native)
        .args(args_for(name))
        .current_dir(workloads)
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .context("running valgrind")?;
    let text = std::fs::read_to_string(out_file).with_context(|| {
        format!(
            "valgrind --tool=cachegrind on {name} wrote no {} (status {}):\n{}",
            out_file.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
    })?;
    let totals =
        parse_cachegrind_out(&text).with_context(|| format!("reading {}", out_file.display()))?;
    let expected = std::fs::read(workloads.join("expected").join(format!("{name}.stdout")))
        .with_context(|| format!("reading workloads/expected/{name}.stdout"))?;
    Ok((totals, output.stdout == expected))
}

/// Why our machine gave no timing statistics.
enum OursError {
    /// The `outcrop` binary predates `--timing`.
    NoTimingFlag,
    Other(crate::Error),
}

/// Runs `outcrop exec --deterministic --timing --stats-json` on `bin/<name>` in `workloads/`.
fn run_ours(
    outcrop: &Path,
    workloads: &Path,
    name: &str,
    stats: &Path,
) -> std::result::Result<TimingTotals, OursError> {
    let mut cmd = Command::new(outcrop);
    cmd.args(["exec", "--deterministic", "--timing", "--stats-json"])
        .arg(stats);
    if crate::bench::writes(name).unwrap_or(false) {
        // it writes and deletes a scratch file in the working directory
        cmd.args(["--allow-rw", "."]);
    }
    let output = cmd
        .arg("--")
        .arg(format!("bin/{name}"))
        .args(args_for(name))
        .current_dir(workloads)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", outcrop.display()))
        .map_err(OursError::Other)?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        if is_missing_timing_flag(&stderr) {
            return Err(OursError::NoTimingFlag);
        }
        return Err(OursError::Other(crate::err!(
            "outcrop exec --timing on {name} exited with {}:\n{stderr}",
            output.status
        )));
    }
    std::fs::read_to_string(stats)
        .with_context(|| format!("reading {}", stats.display()))
        .and_then(|text| parse_stats_json(&text))
        .with_context(|| format!("statistics of {name}"))
        .map_err(OursError::Other)
}

/// `xtask cachegrind`: the table of misses against valgrind's cachegrind.
pub fn run(
    config: CachegrindConfig,
    out: &mut dyn std::io::Write,
    log: &mut (dyn std::io::Write + Send),
) -> Result<()> {
    let root = crate::root();
    let workloads = root.join("workloads");
    let outcrop = root.join("target/release/outcrop");
    require_tool("gcc", "gcc libc6-dev")?;
    require_tool("valgrind", "valgrind")?;
    if !outcrop.exists() {
        bail!(
            "{} not found: build it first with `cargo build --release`",
            outcrop.display()
        );
    }
    for name in &config.workloads {
        for file in [format!("src/{name}.c"), format!("bin/{name}")] {
            if !workloads.join(&file).exists() {
                bail!("unknown workload {name}: no workloads/{file}");
            }
        }
    }
    let tmp = ScratchDir::new()?;
    let mut rows = Vec::new();
    let mut ours_errors = Vec::new();
    let mut missing_timing = false;
    for name in &config.workloads {
        note!(log, "cachegrind: {name}");
        let native = tmp.path().join(name);
        compile_native(&workloads, name, &native)?;
        let (cachegrind, native_stdout_matches) = run_cachegrind(
            &workloads,
            name,
            &native,
            &tmp.path().join(format!("{name}.cachegrind")),
        )?;
        let ours = if missing_timing {
            None
        } else {
            match run_ours(
                &outcrop,
                &workloads,
                name,
                &tmp.path().join(format!("{name}.json")),
            ) {
                Ok(t) => Some(t),
                Err(OursError::NoTimingFlag) => {
                    missing_timing = true;
                    None
                }
                Err(OursError::Other(e)) => {
                    ours_errors.push(format!("{name}: {e:#}"));
                    None
                }
            }
        };
        rows.push(Row {
            name: name.clone(),
            native_stdout_matches,
            cachegrind,
            ours,
        });
    }
    if config.json {
        say!(out, "{}", serde_json::to_string_pretty(&json_rows(&rows))?);
    } else {
        write!(out, "{}", markdown_table(&rows))?;
    }
    if missing_timing {
        bail!(
            "{} has no --timing option (clap rejected it): the timing model is not in this \
             build. Rebuild with `cargo build --release` once it is; the cachegrind columns \
             above are complete.",
            outcrop.display()
        );
    }
    if !ours_errors.is_empty() {
        bail!("our machine failed on:\n{}", ours_errors.join("\n"));
    }
    Ok(())
}

/// A temporary directory, removed on drop.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> Result<Self> {
        let dir = std::env::temp_dir().join(format!("outcrop-cachegrind-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(ScratchDir(dir))
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head and tail of a cachegrind 3.19 out file for the native `micro_l1_fit`
    /// (`valgrind --tool=cachegrind --cache-sim=yes --I1=32768,4,64 --D1=32768,4,64
    /// --LL=1048576,8,64`), per-function lines trimmed.
    const CACHEGRIND_OUT: &str = "\
desc: I1 cache:         32768 B, 64 B, 4-way associative
desc: D1 cache:         32768 B, 64 B, 4-way associative
desc: LL cache:         1048576 B, 64 B, 8-way associative
cmd: /tmp/outcrop-cachegrind-1/micro_l1_fit
events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
fl=???
fn=(below main)
0 781 49 49 197 20 20 182 14 14
summary: 32876709 545 540 8199087 174 172 10850 264 264
";

    #[test]
    fn cachegrind_summary_is_read_by_event_name() {
        let t = parse_cachegrind_out(CACHEGRIND_OUT).unwrap();
        assert_eq!(
            t,
            CachegrindTotals {
                dr: 8199087,
                dw: 10850,
                d1mr: 174,
                d1mw: 264,
                dlmr: 172,
                dlmw: 264,
            }
        );
        assert_eq!(
            (t.accesses(), t.d1_misses(), t.ll_misses()),
            (8209937, 438, 436)
        );
    }

    #[test]
    fn cachegrind_columns_in_another_order() {
        let text = CACHEGRIND_OUT
            .replace(
                "events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw",
                "events: DLmw Dw Dr Ir D1mw D1mr DLmr",
            )
            .replace(
                "summary: 32876709 545 540 8199087 174 172 10850 264 264",
                "summary: 6 5 4 99 3 2 1",
            );
        let t = parse_cachegrind_out(&text).unwrap();
        assert_eq!(
            t,
            CachegrindTotals {
                dr: 4,
                dw: 5,
                d1mr: 2,
                d1mw: 3,
                dlmr: 1,
                dlmw: 6,
            }
        );
    }

    #[test]
    fn cachegrind_without_cache_simulation_is_an_error() {
        let text = CACHEGRIND_OUT
            .replace(
                "events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw",
                "events: Ir",
            )
            .replace(
                "summary: 32876709 545 540 8199087 174 172 10850 264 264",
                "summary: 32876709",
            );
        let e = format!("{:#}", parse_cachegrind_out(&text).unwrap_err());
        assert!(e.contains("no event Dr"), "{e}");
    }

    #[test]
    fn cachegrind_summary_length_mismatch_is_an_error() {
        let text = CACHEGRIND_OUT.replace(" 264 264\n", " 264\n");
        assert!(parse_cachegrind_out(&text).is_err());
    }

    #[test]
    fn cachegrind_with_other_geometry_is_an_error() {
        let text = CACHEGRIND_OUT.replace("1048576 B, 64 B, 8-way", "268435456 B, 64 B, 1-way");
        let e = format!("{:#}", parse_cachegrind_out(&text).unwrap_err());
        assert!(e.contains("LL cache: 1048576 B"), "{e}");
    }

    /// Hand-written: the shape `outcrop exec --timing --stats-json` is specified to write.
    const STATS_JSON: &str = r#"{
  "program": "bin/micro_stride_miss",
  "instructions": 36203773,
  "exit_code": 0,
  "outcome": "exited",
  "wall_seconds": 0.5,
  "mips": 72.4,
  "classes": {"load": 4100000},
  "timing": {
    "cycles": 123456789,
    "l1d_accesses": 5123456,
    "l1d_misses": 5049000,
    "l2_data_accesses": 5049000,
    "l2_data_misses": 5048900,
    "l1i_misses": 612
  }
}"#;

    #[test]
    fn stats_json_timing_fields() {
        assert_eq!(
            parse_stats_json(STATS_JSON).unwrap(),
            TimingTotals {
                l1d_accesses: 5123456,
                l1d_misses: 5049000,
                l2_data_accesses: 5049000,
                l2_data_misses: 5048900,
            }
        );
    }

    #[test]
    fn stats_json_without_timing_or_field_is_an_error() {
        let e = format!(
            "{:#}",
            parse_stats_json(r#"{"instructions": 5}"#).unwrap_err()
        );
        assert!(e.contains("no `timing` object"), "{e}");
        let e = format!(
            "{:#}",
            parse_stats_json(&STATS_JSON.replace("l2_data_misses", "l2_misses")).unwrap_err()
        );
        assert!(e.contains("`l2_data_misses`"), "{e}");
        let e = format!(
            "{:#}",
            parse_stats_json(&STATS_JSON.replace("5048900", "-1")).unwrap_err()
        );
        assert!(e.contains("not an unsigned integer"), "{e}");
    }

    #[test]
    fn clap_rejection_of_timing_is_recognised() {
        // what clap 4 prints for an option it does not know
        let clap = "error: unexpected argument '--timing' found\n\n  tip: to pass '--timing' as a value, use '-- --timing'\n\nUsage: outcrop exec [OPTIONS] -- <PROG [ARGS]>...\n";
        assert!(is_missing_timing_flag(clap));
        assert!(!is_missing_timing_flag(
            "outcrop: access fault at pc 0x10000\n"
        ));
    }

    #[test]
    fn table_marks_missing_measurements() {
        let rows = [Row {
            name: "micro_l1_fit".into(),
            native_stdout_matches: true,
            cachegrind: parse_cachegrind_out(CACHEGRIND_OUT).unwrap(),
            ours: None,
        }];
        let table = markdown_table(&rows);
        assert!(
            table.contains("| micro_l1_fit | 438 | — | — | 436 | — | — | 8209937 | — | — | yes |"),
            "{table}"
        );
        let rows = [Row {
            ours: Some(TimingTotals {
                l1d_accesses: 8_500_000,
                l1d_misses: 482,
                l2_data_accesses: 482,
                l2_data_misses: 436,
            }),
            ..rows.into_iter().next().unwrap()
        }];
        let table = markdown_table(&rows);
        assert!(
            table.contains("| 438 | 482 | 1.100 | 436 | 436 | 1.000 |"),
            "{table}"
        );
        let json = json_rows(&rows);
        assert_eq!(json["rows"][0]["ours"]["l1d_misses"], 482);
        assert_eq!(json["rows"][0]["cachegrind"]["D1mw"], 264);
    }
}
