//! `cargo run --release -p xtask -- bench-rap [--events N] [--runs R]`: RAP against exact
//! counters on the same pre-generated streams, in the same process, and `outcrop rap` end to
//! end on files of the same streams (docs/BENCHMARKS.md, "RAP").
//!
//! Two exact peers: `std::collections::HashMap` as a user reaches for it first (SipHash, grown
//! on demand), and a fair one: `rustc_hash::FxHashMap` presized from the stream's distinct
//! count (which a real exact profiler cannot know in advance, so this flatters the peer).
//! Memory of all three is counted the same way: bytes the structure holds at the end of the
//! stream, by the counting global allocator (`stats_alloc`) — neither RAP's arena nor a hash
//! table shrinks during a run, so this is each one's high-water mark of live allocation.
//! Times are medians with min–max over `--runs` runs (default 5).

use crate::COUNTING;
use crate::{Context, Result};
use outcrop_events::synth::{self, StreamKind};
use outcrop_rap::{Config, ExactCounts, ExactRanges, RapCounter, RapTree, SplitPolicy};
use outcrop_studies::{cells, table::Table};
use std::collections::HashMap;
use std::hint::black_box;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Median, minimum and maximum of `v` (zeros when empty).
pub fn spread(v: &[f64]) -> (f64, f64, f64) {
    outcrop_studies::stats::Spread::of(v).map_or((0.0, 0.0, 0.0), |s| (s.median, s.min, s.max))
}

/// Rates (events / second) of `runs` runs of `f`, and the last run's result with the bytes the
/// allocator says it holds.
fn rates<T>(events: usize, runs: usize, mut f: impl FnMut() -> T) -> (Vec<f64>, T, i64) {
    let mut v = Vec::with_capacity(runs);
    let mut last = None;
    let mut held = 0;
    for _ in 0..runs {
        drop(last.take());
        let region = stats_alloc::Region::new(COUNTING);
        let t = Instant::now();
        let out = black_box(f());
        v.push(events as f64 / t.elapsed().as_secs_f64());
        let c = region.change();
        // stats_alloc already counts a realloc's growth in bytes_allocated (and its shrinking
        // in bytes_deallocated); bytes_reallocated is the same change again, not to be added
        held = c.bytes_allocated as i64 - c.bytes_deallocated as i64;
        last = Some(out);
    }
    (v, last.expect("runs ≥ 1"), held)
}

/// One row of the end-to-end table: `outcrop rap` on `raw` (u64le) and on the trace file it
/// converts `raw` into, beside the tree's in-memory rates `mem`, and what reading alone costs.
///
/// A 10M-event code stream takes 25 ms end to end, where a process start and a cold page
/// cache are a large share: so each file is read once untimed first (warm cache), the two
/// files' runs alternate, each is run at least [`E2E_RUNS`] times, and the table gives the
/// start-up (`outcrop rap` on a one-event file) and the read (the file into memory, in this
/// process) beside the rates.
fn end_to_end(
    outcrop: &std::path::Path,
    label: &str,
    raw: &std::path::Path,
    events: usize,
    runs: usize,
    mem: &[f64],
) -> Result<Vec<String>> {
    let otr = raw.with_extension("otr");
    succeed(
        Command::new(outcrop)
            .args(["trace", "convert", "--from", "u64le", "-o"])
            .arg(&otr)
            .arg(raw),
    )?;
    let runs = runs.max(E2E_RUNS);
    command_rates(outcrop, raw, events, 1)?;
    command_rates(outcrop, &otr, events, 1)?;
    let (mut r_raw, mut r_otr) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        r_raw.extend(command_rates(outcrop, raw, events, 1)?);
        r_otr.extend(command_rates(outcrop, &otr, events, 1)?);
    }
    let mut read = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let bytes = std::fs::read(raw)?;
        black_box(&bytes);
        read.push(events as f64 / t.elapsed().as_secs_f64());
    }
    Ok(cells![
        label,
        mevs(mem),
        mevs(&r_raw),
        mevs(&r_otr),
        format!("{:.2}x", spread(&r_raw).0 / spread(mem).0),
        format!("{:.2}x", spread(&r_otr).0 / spread(mem).0),
        mevs(&read),
        std::fs::metadata(&otr)?.len()
    ])
}

/// Runs of each end-to-end measurement, at least.
const E2E_RUNS: usize = 11;

/// Wall time of `outcrop rap` on a file of one event: the process's start-up and exit (ms,
/// median and min–max of [`E2E_RUNS`] runs after one untimed).
fn startup_ms(outcrop: &std::path::Path, dir: &std::path::Path) -> Result<String> {
    let one = dir.join("one.u64");
    std::fs::write(&one, 1u64.to_le_bytes())?;
    command_rates(outcrop, &one, 1, 1)?;
    let ms: Vec<f64> = command_rates(outcrop, &one, 1, E2E_RUNS)?
        .into_iter()
        .map(|r| 1e3 / r)
        .collect();
    let (m, lo, hi) = spread(&ms);
    Ok(format!("{m:.1} ms ({lo:.1}–{hi:.1})"))
}

/// Runs `cmd` and fails, naming it, unless it exits successfully.
fn succeed(cmd: &mut Command) -> Result<()> {
    let st = cmd.status().with_context(|| format!("running {cmd:?}"))?;
    crate::ensure!(st.success(), "{cmd:?} failed: {st}");
    Ok(())
}

/// Events per second of `runs` runs of `outcrop rap FILE` (wall time, output discarded).
fn command_rates(
    outcrop: &std::path::Path,
    file: &std::path::Path,
    events: usize,
    runs: usize,
) -> Result<Vec<f64>> {
    let mut v = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let st = Command::new(outcrop)
            .arg("rap")
            .arg(file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        v.push(events as f64 / t.elapsed().as_secs_f64());
        crate::ensure!(st.success(), "outcrop rap {} failed", file.display());
    }
    Ok(v)
}

fn mevs(v: &[f64]) -> String {
    let (m, lo, hi) = spread(v);
    format!("{:.1} ({:.1}–{:.1})", m / 1e6, lo / 1e6, hi / 1e6)
}

/// Options of `bench-rap`.
#[derive(Debug, Clone)]
pub struct RapBenchConfig {
    /// Events per synthetic stream.
    pub events: usize,
    /// Timed runs of each measurement.
    pub runs: usize,
    /// Only the memory held by stream length.
    pub memory_only: bool,
}

/// `xtask bench-rap`: measures and writes its Markdown table to `out` (the module's doc says what and against which peer).
pub fn run(args: RapBenchConfig, out: &mut dyn std::io::Write) -> Result<()> {
    let (events, runs) = (args.events, args.runs.max(1));
    if args.memory_only {
        return memory_by_length(out);
    }
    let (_, outcrop) = crate::release_outcrop()?;
    let tmp = tempfile::tempdir()?;
    say!(out,
        "events per stream: {events}; {runs} runs, median (min–max); ε = 1%, b = 4, 64-bit universe\n"
    );
    let mut speed = Vec::new();
    let mut memory = Vec::new();
    let mut e2e = Vec::new();
    let mut accuracy = Vec::new();
    for kind in [
        StreamKind::CodeLike,
        StreamKind::ValueLike,
        StreamKind::Uniform,
    ] {
        let rows = synthetic(kind, events, runs, &outcrop, tmp.path())?;
        speed.push(rows.speed);
        memory.push(rows.memory);
        e2e.push(rows.e2e);
        accuracy.extend(rows.accuracy);
    }
    e2e.push(lz_blocks(&outcrop, tmp.path(), runs)?);
    say!(out, "Throughput, M events/s:\n");
    let mut table = Table::new()
        .left("stream")
        .right("distinct")
        .right("RAP combined")
        .right("RAP unit")
        .right("RAP lazy split")
        .right("RAP exact first")
        .right("std HashMap")
        .right("FxHashMap presized")
        .right("combined / std")
        .right("combined / Fx");
    for r in speed {
        table.row(r);
    }
    write!(out, "{table}")?;
    say!(
        out,
        "\nMemory held at the end of the stream, bytes, by the counting allocator:\n"
    );
    let mut table = Table::new()
        .left("stream")
        .right("RAP peak nodes")
        .right("RAP")
        .right("RAP lazy split")
        .right("std HashMap")
        .right("FxHashMap presized")
        .right("RAP / std")
        .right("RAP / Fx")
        .right("lazy / Fx");
    for r in memory {
        table.row(r);
    }
    write!(out, "{table}")?;
    say!(
        out,
        "\nEnd to end (`outcrop rap FILE`, wall time, M events/s) beside the tree in memory:\n"
    );
    let mut table = Table::new()
        .left("stream")
        .right("tree in memory")
        .right("`outcrop rap` u64le")
        .right("`outcrop rap` .otr")
        .right("u64le / memory")
        .right(".otr / memory")
        .right("reading the u64le file alone")
        .right(".otr bytes");
    for r in e2e {
        table.row(r);
    }
    write!(out, "{table}")?;
    say!(out,
        "\nStart-up and exit of `outcrop rap` (a one-event file), included in every end-to-end rate: {}",
        startup_ms(&outcrop, tmp.path())?
    );
    memory_by_length(out)?;
    let phased = phased_stream(events);
    let mut exact = ExactCounts::new();
    phased.iter().for_each(|&v| exact.add(v));
    let exact = exact.finish();
    for eps in [0.10, 0.01] {
        accuracy.push(accuracy_row("phased", eps, &phased, &exact)?);
    }
    say!(
        out,
        "\nAccuracy of hot ranges (≥ 10% of n) against exact counts (RAP Figure 7/8 metrics):\n"
    );
    let mut table = Table::new()
        .left("stream")
        .right("ε")
        .right("peak nodes")
        .right("mean nodes over merge batches")
        .right("hot ranges")
        .right("max % error")
        .right("mean % error")
        .right("max excl. % error")
        .right("mean excl. % error");
    for r in accuracy {
        table.row(r);
    }
    write!(out, "{table}")?;
    Ok(())
}

/// One synthetic stream's rows of each table.
#[derive(Default)]
struct StreamRows {
    speed: Vec<String>,
    memory: Vec<String>,
    e2e: Vec<String>,
    accuracy: Vec<Vec<String>>,
}

/// The rows of a synthetic stream of `kind`: the tree, its variants and the hash maps in
/// memory, `outcrop rap` on it end to end, and its accuracy at two ε.
fn synthetic(
    kind: StreamKind,
    events: usize,
    runs: usize,
    outcrop: &Path,
    tmp: &Path,
) -> Result<StreamRows> {
    let config = Config::default();
    let lazy = Config::builder().split_policy(SplitPolicy::Lazy).build()?;
    let mut rows = StreamRows::default();
    let values: Vec<u64> = synth::stream(kind, 1).take(events).collect();
    let combined = |c: Config| {
        let values = &values;
        move || {
            let mut t = RapTree::new(c);
            for c in values.chunks(1 << 16) {
                let _ = t.add_batch(c);
            }
            t
        }
    };
    let (r_comb, tree, b_tree) = rates(events, runs, combined(config));
    let (r_unit, _, _) = rates(events, runs, || {
        let mut t = RapTree::new(config);
        for &v in &values {
            let _ = t.add(v);
        }
        t
    });
    let (r_lazy, _, b_lazy) = rates(events, runs, combined(lazy));
    let (r_first, _, _) = rates(events, runs, || {
        let mut t = RapCounter::new(config);
        for c in values.chunks(1 << 16) {
            let _ = t.add_batch(c);
        }
        t.into_tree()
    });
    let (r_std, map, b_std) = rates(events, runs, || {
        let mut m: HashMap<u64, u64> = HashMap::new();
        for &v in &values {
            *m.entry(v).or_insert(0) += 1;
        }
        m
    });
    let distinct = map.len();
    drop(map);
    let (r_fx, _, b_fx) = rates(events, runs, || {
        let mut m: rustc_hash::FxHashMap<u64, u64> =
            HashMap::with_capacity_and_hasher(distinct, Default::default());
        for &v in &values {
            *m.entry(v).or_insert(0) += 1;
        }
        m
    });
    let med = |v: &[f64]| spread(v).0;
    rows.speed = cells![
        kind.name(),
        distinct,
        mevs(&r_comb),
        mevs(&r_unit),
        mevs(&r_lazy),
        mevs(&r_first),
        mevs(&r_std),
        mevs(&r_fx),
        format!("{:.2}x", med(&r_comb) / med(&r_std)),
        format!("{:.2}x", med(&r_comb) / med(&r_fx))
    ];
    rows.memory = cells![
        kind.name(),
        tree.peak_nodes(),
        b_tree,
        b_lazy,
        b_std,
        b_fx,
        format!("{:.2}%", 100.0 * b_tree as f64 / b_std as f64),
        format!("{:.2}%", 100.0 * b_tree as f64 / b_fx as f64),
        format!("{:.2}%", 100.0 * b_lazy as f64 / b_fx as f64)
    ];
    // End to end: the same stream as a raw u64le file and as a trace file, through the
    // command a user runs (reading, batching, the tree, the report), wall time.
    let raw = tmp.join(format!("{}.u64", kind.name()));
    std::fs::write(
        &raw,
        values
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>(),
    )?;
    rows.e2e = end_to_end(outcrop, kind.name(), &raw, events, runs, &r_comb)?;
    let mut exact = ExactCounts::new();
    values.iter().for_each(|&v| exact.add(v));
    let exact = exact.finish();
    for eps in [0.10, 0.01] {
        rows.accuracy
            .push(accuracy_row(kind.name(), eps, &values, &exact)?);
    }
    Ok(rows)
}

/// A real code stream: the block start addresses of the `lz` workload (written by
/// `outcrop wpp replay --format u64le`), end to end only (it is not in memory beforehand).
fn lz_blocks(outcrop: &Path, tmp: &Path, runs: usize) -> Result<Vec<String>> {
    let config = Config::default();
    let (root, _) = crate::release_outcrop()?;
    let wpp = tmp.join("lz.wpp");
    let raw = tmp.join("lz.u64");
    succeed(
        Command::new(outcrop)
            .args(["wpp", "record", "-o"])
            .arg(&wpp)
            .arg("--")
            .arg(root.join("workloads/bin/lz"))
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )?;
    crate::bench_wpp::replay_raw(outcrop, &wpp, &raw)?;
    let n = std::fs::metadata(&raw)?.len() as usize / 8;
    let values: Vec<u64> = std::fs::read(&raw)?
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    let (r_mem, _, _) = rates(n, runs, || {
        let mut t = RapTree::new(config);
        for c in values.chunks(1 << 16) {
            let _ = t.add_batch(c);
        }
        t
    });
    end_to_end(
        outcrop,
        &format!("lz blocks ({n} events)"),
        &raw,
        n,
        runs,
        &r_mem,
    )
}

/// The bytes held by the tree, by the counter that counts exactly first ([`RapCounter`]) and
/// by a presized map, by stream length (one run each).
fn memory_by_length(out: &mut dyn std::io::Write) -> Result<()> {
    let config = Config::default();
    say!(
        out,
        "\nMemory held by stream length (one run each; the counting allocator):\n"
    );
    let mut table = Table::new()
        .left("stream")
        .right("events")
        .right("distinct")
        .right("RAP tree")
        .right("RAP exact first")
        .right("(still exact)")
        .right("FxHashMap presized")
        .right("tree / Fx")
        .right("exact first / Fx");
    for kind in [
        StreamKind::CodeLike,
        StreamKind::ValueLike,
        StreamKind::Uniform,
    ] {
        for n in [10_000, 100_000, 1_000_000, 10_000_000] {
            let values: Vec<u64> = synth::stream(kind, 1).take(n).collect();
            let (_, _, b_tree) = rates(n, 1, || {
                let mut t = RapTree::new(config);
                values.chunks(1 << 16).for_each(|c| drop(t.add_batch(c)));
                t
            });
            let (_, counter, b_first) = rates(n, 1, || {
                let mut t = RapCounter::new(config);
                values.chunks(1 << 16).for_each(|c| drop(t.add_batch(c)));
                t
            });
            let exact = counter.is_exact();
            drop(counter);
            let distinct = values
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len();
            let (_, _, b_fx) = rates(n, 1, || {
                let mut m: rustc_hash::FxHashMap<u64, u64> =
                    HashMap::with_capacity_and_hasher(distinct, Default::default());
                for &v in &values {
                    *m.entry(v).or_insert(0) += 1;
                }
                m
            });
            table.row(cells![
                kind.name(),
                n,
                distinct,
                b_tree,
                b_first,
                if exact { "yes" } else { "no" },
                b_fx,
                format!("{:.1}%", 100.0 * b_tree as f64 / b_fx as f64),
                format!("{:.1}%", 100.0 * b_first as f64 / b_fx as f64)
            ]);
        }
    }
    write!(out, "{table}")?;
    Ok(())
}

/// Worst-case node bounds by branching factor and merge ratio (our Figures 2 and 3).
pub fn bounds(out: &mut dyn std::io::Write) -> Result<()> {
    let mut table = Table::new()
        .right("universe")
        .right("b")
        .right("H")
        .right("ε")
        .right("q")
        .right("frontier after merge")
        .right("nodes after merge")
        .right("frontier peak")
        .right("nodes at peak")
        .right("peak bytes (16 B/node)");
    for bits in [32u8, 64] {
        for eps in [0.10, 0.01] {
            for b in [2u8, 4, 8, 16] {
                for q in [2u32, 3, 4] {
                    if q != 2 && b != 4 {
                        continue;
                    }
                    let c = Config::builder()
                        .bits(bits)
                        .branching(b)
                        .eps(eps)
                        .merge_ratio(q)
                        .build()?;
                    let s = outcrop_rap::bound::steady_state_bounds(&c);
                    table.row(cells![
                        bits,
                        b,
                        c.height(),
                        format!("{}%", eps * 100.0),
                        q,
                        s.frontier_after_merge,
                        s.after_merge,
                        s.frontier_peak,
                        s.peak,
                        s.peak * 16
                    ]);
                }
            }
        }
    }
    write!(out, "{table}")?;
    Ok(())
}

/// One row of the accuracy table: RAP with `eps` on `values`, hot ranges ≥ 10%, vs `exact`.
fn accuracy_row(name: &str, eps: f64, values: &[u64], exact: &ExactRanges) -> Result<Vec<String>> {
    let mut t = RapTree::new(Config::builder().eps(eps).build()?);
    for v in values.chunks(1 << 16) {
        t.add_batch(v)?;
    }
    let log = t.merge_log();
    let nodes_avg = if log.is_empty() {
        t.node_count() as f64
    } else {
        log.iter()
            .map(|m| (m.nodes_before + m.nodes_after) as f64 / 2.0)
            .sum::<f64>()
            / log.len() as f64
    };
    let acc = t.accuracy(0.10, exact)?;
    Ok(cells![
        name,
        format!("{}%", eps * 100.0),
        t.peak_nodes(),
        format!("{:.0}", nodes_avg),
        acc.ranges.len(),
        format!("{:.3}%", acc.max_error_pct),
        format!("{:.3}%", acc.mean_error_pct),
        format!("{:.3}%", acc.max_exclusive_error_pct),
        format!("{:.3}%", acc.mean_exclusive_error_pct)
    ])
}

/// Six phases of equal length; in each, 70% of events hit one 64-instruction loop and 30% are
/// uniform over 4 Mi addresses. Deterministic (SplitMix64, seed 3).
fn phased_stream(events: usize) -> Vec<u64> {
    let mut state = 3u64;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let bases = [0x10000u64, 0x80000, 0x10000, 0x200000, 0x3000, 0x90000];
    let per = events.div_ceil(bases.len());
    (0..events)
        .map(|i| {
            let base = bases[(i / per).min(bases.len() - 1)];
            let r = next();
            if r % 10 < 7 {
                base + 4 * ((r >> 8) % 64)
            } else {
                (r >> 16) % (1 << 22)
            }
        })
        .collect()
}
