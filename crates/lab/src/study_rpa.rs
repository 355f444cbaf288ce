//! `cargo run --release -p xtask -- study-rpa [prefetch|adaptive] [--workloads a,b] [--jobs J]`: the relational
//! profiling paper's resource and overhead study (§6, Figures 7 and 8, Table 6) on every
//! bundled workload and the GC guest, on the paper's machine (the `rpa2000` timing preset).
//!
//! Every workload runs the paper's pair of queries: the edge query (Figure 2a, 1/256 of the
//! conditional branches unless the rate is the variable) and the GC store barrier (Figure 2c,
//! `always`, on stores with profile tag 1: only the GC guest has them). Runs are lossless and
//! the timing model is deterministic, so every number is exact for its inputs: one run per
//! cell, no spread to report.
//!
//! * Figure 7: 32 networks and 32 buffers ("essentially unrestricted"); the share of cycles
//!   with at least x buffers in use and x profiled instructions in flight.
//! * Figure 8a/8b: 8 buffers and 1–4 networks: share of cycles dispatch stalled, slowdown
//!   against the unrestricted run; plus the same with §6.3's cheap profiles.
//! * Figure 8c: 4 networks and 8 buffers, edge sampling 1/32 … 1/256 (GC query included):
//!   slowdown against the unrestricted run at the same rate.
//! * Table 6: instructions and cycles per profiled instruction at each rate.
//!
//! Writes docs/studies/rpa-fig7.svg and docs/studies/rpa-fig8.svg and prints the tables of
//! docs/studies/rpa.md. Every (workload, configuration) pair is one job of the studies library
//! (records in `target/studies/rpa*/`, resumable, `--slurm` for a job array); the GC guest is
//! built once into the results directory, where every node finds it.
//!
//! `study-rpa prefetch`: Figure 2b's service with its loop open (logging) and closed
//! (prefetching into the L2), on the default machine, every workload, and a sweep of the
//! service's latency on the memory-bound ones. `study-rpa adaptive`: the adaptive rate on
//! and off at edges 1/32 and 1/256, 1 and 4 networks: slowdown and edge-profile accuracy.

use crate::sweep::SweepOptions;
use crate::{Context, Result};
use outcrop_rpa::hw::HwConfig;
use outcrop_rpa::observe::{HwReport, RpaResult};
use outcrop_run::{execute, Hooks, ProgramImage, ProgramSpec, RpaConfig, RunConfig};
use outcrop_studies::chart::{grid, Panel, Series};
use outcrop_studies::{cells, table::Table};
use outcrop_studies::{Job, Manifest, Study};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

const RATES: [u32; 4] = [32, 64, 128, 256];

fn queries(rate: u32) -> String {
    format!(
        "for opBRANCH * every {rate} collect pc misc ;\nsend 1 stop;\n\
         for opSTORE 1 always collect op1 op2 op3;\nif op1 <> 0 then send 3 stop else stop;\n"
    )
}

/// One configuration of a workload's runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum Cell {
    /// No RPA at all.
    Bare,
    /// networks, buffers, cheap profiles, edge rate.
    Hw(u32, u32, bool, u32),
    /// The paper's 4:8 at edges 1/256 with the service threads taking this many cycles a
    /// message (the study's default is 50): run on the workloads with barrier stores only.
    Service(u32),
}

/// The service costs the loaded workloads are also run at (cycles per message).
const SERVICES: [u32; 2] = [20, 10];

/// One run's figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Outcome {
    cycles: u64,
    instructions: u64,
    hw: Option<HwReport>,
    lossless: bool,
    /// Tag-1 stores (the GC query's records) and the barrier messages sent (non-null).
    #[serde(default)]
    barrier: (u64, u64),
}

/// A workload of the study: its name (the manifest's, or the GC guest's).
struct Workload {
    name: String,
}

/// The study's programs beyond the bundled ones: the GC guest (whose reference stores carry
/// profile tag 1), built from workloads/study/gc.c, and the same mutator zeroing new objects
/// with plain stores (`gc-zero`), as a JVM's allocator does.
fn guests(results: &Path) -> Result<Manifest> {
    let root = crate::sweep::manifest()?.root;
    let dir = std::path::absolute(results.join("guests"))?;
    std::fs::create_dir_all(&dir)?;
    let gc = dir.join("gc");
    if !gc.exists() {
        // built beside and renamed: array tasks starting together never see half a file
        let tmp = dir.join(format!(".gc.{}", std::process::id()));
        let st = std::process::Command::new("riscv64-linux-gnu-gcc")
            .args(["-O2", "-static", "-o"])
            .arg(&tmp)
            .arg(root.join("study/gc.c"))
            .status()
            .context("study-rpa needs riscv64-linux-gnu-gcc on PATH to build its GC guest (Debian: apt-get install gcc-riscv64-linux-gnu libc6-dev-riscv64-cross)")?;
        crate::ensure!(
            st.success(),
            "riscv64-linux-gnu-gcc failed on workloads/study/gc.c"
        );
        std::fs::rename(&tmp, &gc)?;
    }
    let text = "[[workload]]\nname = \"gc\"\nkind = \"compute\"\nbinary = \"gc\"\n\n\
                [[workload]]\nname = \"gc-zero\"\nkind = \"compute\"\nbinary = \"gc\"\nargs = [\"400000\", \"zero\"]\n";
    Manifest::parse(text, &dir).map_err(|e| crate::err!("{e}"))
}

/// Real programs under the GC barrier query: every store in the functions that write
/// pointers into the heap carries profile tag 1 (`--tag FUNCTION=1`), as a compiler that
/// emits a write barrier for every reference store would mark them. Lua 5.5.1: the table
/// writers (`luaH_*set*`, `luaH_newkey`, `luaH_resize`, `luaV_finishset`, the API's
/// `lua_set*`/`lua_rawset*`), the upvalue and closure writers (`luaF_*`) and the collector's
/// own barriers. SQLite 3.54.1: the B-tree page writers (cell insertion and removal, page
/// rebuilding, balancing, defragmenting, zeroing). Built by `xtask real-programs`.
const REAL: [(&str, &str, &[&str], &[&str]); 3] = [
    ("lua-gc", "lua", &["gc.lua"], LUA_WRITERS),
    ("lua-fib", "lua", &["fib.lua"], LUA_WRITERS),
    ("sqlite", "sqlite", &[], SQLITE_WRITERS),
];

const LUA_WRITERS: &[&str] = &[
    "luaH_pset",
    "luaH_psetint",
    "luaH_psetshortstr",
    "luaH_psetstr",
    "luaH_finishset",
    "luaH_newkey.part.0",
    "luaH_resize",
    "luaH_resizearray",
    "luaH_set",
    "luaH_setint",
    "luaV_finishset",
    "lua_seti",
    "lua_setfield",
    "lua_settable",
    "lua_rawset",
    "lua_rawseti",
    "lua_setglobal",
    "luaF_closeupval",
    "luaF_newLclosure",
    "luaF_initupvals",
    "luaF_findupval",
    "luaC_barrier_",
    "luaC_barrierback_",
];

const SQLITE_WRITERS: &[&str] = &[
    "insertCell",
    "dropCell.part.0",
    "rebuildPage",
    "pageInsertArray",
    "balance",
    "balance_nonroot",
    "defragmentPage",
    "zeroPage",
    "copyNodeContent.part.0",
    "sqlite3BtreeInsert",
];

/// The tags a workload runs with (none for the bundled ones: the GC guest tags itself).
fn barrier_tags(name: &str) -> Vec<(outcrop_run::TagPlace, u8)> {
    REAL.iter()
        .find(|r| r.0 == name)
        .map(|r| {
            r.3.iter()
                .map(|f| (outcrop_run::TagPlace::Function((*f).into()), 1))
                .collect()
        })
        .unwrap_or_default()
}

/// The real programs' manifest (building them first).
fn real_guests(log: &mut (dyn std::io::Write + Send)) -> Result<Manifest> {
    let programs: Vec<(&str, &str, &[&str])> = REAL.iter().map(|r| (r.0, r.1, r.2)).collect();
    crate::real_programs::manifest(&programs, log)
}

/// A sweep of `cells` over workloads: one job per (workload, cell), each a call of `run`.
struct CellStudy<C, O> {
    name: &'static str,
    workloads: Vec<String>,
    cells: Vec<C>,
    guests: Vec<Manifest>,
    /// Whether a (workload, cell) pair is left out.
    skip: fn(&str, C) -> bool,
    run: fn(ProgramSpec, &str, C) -> Result<O>,
    _output: std::marker::PhantomData<fn() -> O>,
}

/// A cell as part of a job id (letters, digits and `_`).
fn cell_id<C: std::fmt::Debug>(c: C) -> String {
    format!("{c:?}")
        .chars()
        .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
        .collect()
}

impl<C, O> Study for CellStudy<C, O>
where
    C: Serialize + DeserializeOwned + Copy + Send + Sync + std::fmt::Debug,
    O: Serialize + DeserializeOwned + Send,
{
    type Params = C;
    type Output = O;

    fn name(&self) -> &str {
        self.name
    }

    fn jobs(&self, _: &Manifest) -> Vec<Job<C>> {
        self.workloads
            .iter()
            .flat_map(|w| {
                self.cells
                    .iter()
                    .filter(|&&c| !(self.skip)(w, c))
                    .map(move |&c| Job::new(&format!("{w}-{}", cell_id(c)), w, c))
            })
            .collect()
    }

    fn run(&self, m: &Manifest, job: &Job<C>, scratch: &Path) -> outcrop_studies::Result<O> {
        let m = self
            .guests
            .iter()
            .find(|g| g.get(&job.workload).is_ok())
            .unwrap_or(m);
        let spec = m.spec(&job.workload, scratch)?;
        (self.run)(spec, &job.workload, job.params)
            .map_err(|e| outcrop_studies::Error::Job(format!("{e:#}")))
    }
}

/// Options of `study-rpa`.
#[derive(Debug, Clone)]
pub struct Config {
    /// `prefetch` (Figure 2b's loop closed) or `adaptive` (the adaptive rate); default: the
    /// resource and overhead study (Figures 7, 8, Table 6).
    pub which: Option<String>,
    /// The sweep: workloads, jobs, results, Slurm.
    pub study: SweepOptions,
    /// Write rpa-fig7.svg and rpa-fig8.svg into DIR (default docs/studies, only when every
    /// workload ran).
    pub svg_dir: Option<std::path::PathBuf>,
}

/// Runs `cells` over the study's workloads (every bundled one, gc and gc-zero; or
/// `--workloads`): the workloads in order and every job's output by (workload, cell).
#[allow(clippy::type_complexity)]
fn sweep<C, O>(
    args: &SweepOptions,
    log: &mut (dyn std::io::Write + Send),
    real: bool,
    name: &'static str,
    cells: Vec<C>,
    skip: fn(&str, C) -> bool,
    run: fn(ProgramSpec, &str, C) -> Result<O>,
) -> Result<Option<(Vec<Workload>, BTreeMap<(usize, C), O>)>>
where
    C: Serialize + DeserializeOwned + Copy + Send + Sync + std::fmt::Debug + Ord,
    O: Serialize + DeserializeOwned + Send,
{
    let manifest = crate::sweep::manifest()?;
    let mut guests = vec![guests(&args.results)?];
    if real {
        guests.push(real_guests(log)?);
    }
    let mut names: Vec<String> = manifest.workloads.iter().map(|w| w.name.clone()).collect();
    names.sort();
    for g in &guests {
        names.extend(g.workloads.iter().map(|w| w.name.clone()));
    }
    if !args.workloads.is_empty() {
        for w in &args.workloads {
            crate::ensure!(
                names.contains(w),
                "no workload `{w}` (workloads: {})",
                names.join(", ")
            );
        }
        names.retain(|n| args.workloads.contains(n));
    }
    let study = CellStudy {
        name,
        workloads: names.clone(),
        cells,
        guests,
        skip,
        run,
        _output: std::marker::PhantomData,
    };
    let Some(records) = crate::sweep::run(&study, &manifest, args, log)? else {
        return Ok(None);
    };
    let mut results = BTreeMap::new();
    for r in records {
        let i = names
            .iter()
            .position(|n| *n == r.workload)
            .context("unknown workload")?;
        let o = r.output.with_context(|| format!("{}: no output", r.job))?;
        results.insert((i, r.params), o);
    }
    Ok(Some((
        names.into_iter().map(|name| Workload { name }).collect(),
        results,
    )))
}

/// The paper's query pair (edges 1/`rate` + the GC barrier) with hardware `hw`; with
/// `exact`, each service's exact reference too. Tags come from the program (the GC guest's).
fn paper_queries(rate: u32, hw: HwConfig, exact: bool) -> Result<RpaConfig> {
    let mut c = RpaConfig::new(assembled(&queries(rate))?);
    c.exact = exact;
    c.hardware = Some(hw);
    Ok(c)
}

fn run_one(spec: ProgramSpec, name: &str, cell: Cell) -> Result<Outcome> {
    let rpa = match cell {
        Cell::Bare => None,
        Cell::Hw(networks, buffers, cheap, rate) => Some(paper_queries(
            rate,
            HwConfig {
                networks,
                buffers,
                cheap,
                ..HwConfig::paper()
            },
            false,
        )?),
        Cell::Service(service_cycles) => Some(paper_queries(
            256,
            HwConfig {
                service_cycles,
                ..HwConfig::paper()
            },
            false,
        )?),
    };
    let (t, rpa) = run_spec(spec, name, "rpa2000", rpa)?;
    let lossless = rpa
        .as_ref()
        .is_none_or(|x| x.queries.iter().all(|q| q.lost == 0) && x.queries[1].dropped == 0);
    let barrier = rpa
        .as_ref()
        .and_then(|x| x.queries.get(1))
        .map_or((0, 0), |q| (q.records, q.sent));
    Ok(Outcome {
        cycles: t.cycles,
        instructions: t.instructions,
        hw: rpa.and_then(|x| x.hardware),
        lossless,
        barrier,
    })
}

fn cells() -> Vec<Cell> {
    let mut v = vec![Cell::Bare];
    for rate in RATES {
        v.push(Cell::Hw(32, 32, false, rate));
        v.push(Cell::Hw(4, 8, false, rate));
    }
    for n in 1..=3 {
        v.push(Cell::Hw(n, 8, false, 256));
    }
    v.push(Cell::Hw(4, 8, true, 256));
    v.extend(SERVICES.map(Cell::Service));
    v
}

/// Whether `w` has barrier stores: the GC guest and the real programs, tagged.
fn has_barrier(w: &str) -> bool {
    w == "gc" || w == "gc-zero" || REAL.iter().any(|r| r.0 == w)
}

fn pct(a: f64) -> String {
    outcrop_studies::stats::pct(a, 2)
}

/// `study-rpa`: runs the sweep and writes the tables of docs/studies/rpa.md to `out` (or the prefetch / adaptive study).
pub fn run(
    args: Config,
    out: &mut dyn std::io::Write,
    log: &mut (dyn std::io::Write + Send),
) -> Result<()> {
    let root = std::path::absolute(crate::root())?;
    match args.which.as_deref() {
        Some("prefetch") => return prefetch(&args.study, out, log),
        Some("adaptive") => return adaptive(&args.study, out, log),
        _ => {}
    }
    let Some((workloads, results)) = sweep(
        &args.study,
        log,
        true,
        "rpa",
        cells(),
        |w, c| matches!(c, Cell::Service(_)) && !has_barrier(w),
        run_one,
    )?
    else {
        return Ok(());
    };
    let runs = Runs { workloads, results };
    say!(out, "machine: rpa2000 (Table 5); queries: edges every N (Figure 2a) + GC barrier always on tag-1 stores (Figure 2c)\n");
    say!(
        out,
        "### Figure 7: 32 networks, 32 buffers, edges 1/256 (% of cycles with ≥ x in use)\n"
    );
    let fig7 = fig7_occupancy(&runs, out)?;
    let fig8 = fig8_networks(&runs, out)?;
    fig8c_rates(&fig8, out)?;
    table6_per_sample(&runs, out)?;
    under_load(&runs, &fig8, out)?;
    let svg_dir = match args.svg_dir {
        Some(d) => d,
        None if args.study.workloads.is_empty() => root.join("docs/studies"),
        None => return Ok(()),
    };
    std::fs::create_dir_all(&svg_dir)?;
    std::fs::write(svg_dir.join("rpa-fig7.svg"), plot_fig7(&fig7)?)?;
    std::fs::write(svg_dir.join("rpa-fig8.svg"), plot_fig8(&fig8)?)?;
    say!(
        out,
        "\nwrote {}/rpa-fig7.svg and rpa-fig8.svg",
        svg_dir.display()
    );
    Ok(())
}

/// The main study's runs: its workloads, and every run's figures by (workload, cell).
struct Runs {
    workloads: Vec<Workload>,
    results: BTreeMap<(usize, Cell), Outcome>,
}

impl Runs {
    /// Workload `i`'s run in `cell`.
    fn get(&self, i: usize, c: Cell) -> Result<&Outcome> {
        self.results.get(&(i, c)).context("missing run")
    }
}

/// A run's hardware report.
fn hw_of(o: &Outcome) -> Result<HwReport> {
    o.hw.clone().context("no hardware report")
}

/// The share of cycles dispatch was held for a network or a buffer.
fn stalled(h: &HwReport) -> f64 {
    (h.stats.held_network_cycles + h.stats.held_buffer_cycles) as f64
        / h.occupancy.cycles.max(1) as f64
}

/// Run `a`'s slowdown against run `b`.
fn slow(a: &Outcome, b: &Outcome) -> f64 {
    a.cycles as f64 / b.cycles as f64 - 1.0
}

/// Figure 7: buffers and networks in use, 32/32 at 1/256.
fn fig7_occupancy(runs: &Runs, out: &mut dyn std::io::Write) -> Result<Vec<(String, HwReport)>> {
    let xs = [1usize, 2, 3, 4, 6, 8, 12, 16];
    let head: Vec<String> = xs.iter().map(|x| format!("≥{x}")).collect();
    let mut t = Table::new()
        .left("workload")
        .left("instructions")
        .left("cycles");
    for what in ["buffers", "in flight"] {
        for (i, h) in head.iter().enumerate() {
            t = t.left(if i == 0 {
                format!("{what} {h}")
            } else {
                h.clone()
            });
        }
    }
    let mut fig7 = Vec::new();
    for (i, w) in runs.workloads.iter().enumerate() {
        let u = runs.get(i, Cell::Hw(32, 32, false, 256))?;
        let h = hw_of(u)?;
        let b: Vec<String> = xs
            .iter()
            .map(|&x| pct(h.occupancy.buffers_at_least(x)))
            .collect();
        let n: Vec<String> = xs
            .iter()
            .map(|&x| pct(h.occupancy.networks_at_least(x)))
            .collect();
        t.row(
            cells![w.name, u.instructions, u.cycles]
                .into_iter()
                .chain(b)
                .chain(n),
        );
        fig7.push((w.name.clone(), h));
    }
    write!(out, "{t}")?;

    Ok(fig7)
}

/// Figures 8a and 8b: stalls and slowdowns with 1–4 networks and 8 buffers.
fn fig8_networks(runs: &Runs, out: &mut dyn std::io::Write) -> Result<Vec<Fig8Row>> {
    say!(out, "\n### Figure 8a/8b: 8 buffers, 1–4 networks, edges 1/256 (% of cycles dispatch stalled; % slowdown against 32/32)\n");
    let mut t = Table::new()
        .left("workload")
        .left("stalled 1")
        .left("2")
        .left("3")
        .left("4")
        .left("slowdown 1")
        .left("2")
        .left("3")
        .left("4")
        .left("cheap 4:8 stalled")
        .left("cheap slowdown")
        .left("4:8 vs no RPA")
        .left("lossless");
    let mut fig8 = Vec::new();
    for (i, w) in runs.workloads.iter().enumerate() {
        let u = runs.get(i, Cell::Hw(32, 32, false, 256))?;
        let bare = runs.get(i, Cell::Bare)?;
        let mut st = Vec::new();
        let mut sl = Vec::new();
        let mut lossless = u.lossless && bare.lossless;
        for n in 1..=4 {
            let o = runs.get(i, Cell::Hw(n, 8, false, 256))?;
            st.push(stalled(&hw_of(o)?));
            sl.push(slow(o, u));
            lossless &= o.lossless;
        }
        let cheap = runs.get(i, Cell::Hw(4, 8, true, 256))?;
        let p48 = runs.get(i, Cell::Hw(4, 8, false, 256))?;
        t.row(cells![
            w.name,
            pct(st[0]),
            pct(st[1]),
            pct(st[2]),
            pct(st[3]),
            pct(sl[0]),
            pct(sl[1]),
            pct(sl[2]),
            pct(sl[3]),
            pct(stalled(&hw_of(cheap)?)),
            pct(slow(cheap, u)),
            pct(slow(p48, bare)),
            if lossless && cheap.lossless {
                "yes"
            } else {
                "NO"
            }
        ]);
        let mut rate_slow = Vec::new();
        for rate in RATES {
            let a = runs.get(i, Cell::Hw(4, 8, false, rate))?;
            let b = runs.get(i, Cell::Hw(32, 32, false, rate))?;
            rate_slow.push(slow(a, b));
        }
        fig8.push((w.name.clone(), st, sl, rate_slow));
    }
    write!(out, "{t}")?;
    Ok(fig8)
}

/// Figure 8c: 4:8 against 32/32 at each edge rate.
fn fig8c_rates(fig8: &[Fig8Row], out: &mut dyn std::io::Write) -> Result<()> {
    say!(out, "\n### Figure 8c: 4 networks, 8 buffers, GC query included (% slowdown against 32/32 at the same rate)\n");
    let mut t = Table::new()
        .left("workload")
        .left("1/32")
        .left("1/64")
        .left("1/128")
        .left("1/256");
    for (name, _, _, r) in fig8 {
        let c: Vec<String> = r.iter().map(|x| pct(*x)).collect();
        t.row(cells![name].into_iter().chain(c));
    }
    write!(out, "{t}")?;
    Ok(())
}

/// Table 6: instructions and cycles per profiled instruction.
fn table6_per_sample(runs: &Runs, out: &mut dyn std::io::Write) -> Result<()> {
    say!(
        out,
        "\n### Table 6: instructions and cycles per profiled instruction (32/32 runs)\n"
    );
    let mut t = Table::new()
        .left("workload")
        .left("instr/sample 1/32")
        .left("1/64")
        .left("1/128")
        .left("1/256")
        .left("cycles/sample 1/32")
        .left("1/64")
        .left("1/128")
        .left("1/256");
    for (i, w) in runs.workloads.iter().enumerate() {
        let mut ins = Vec::new();
        let mut cyc = Vec::new();
        for rate in RATES {
            let o = runs.get(i, Cell::Hw(32, 32, false, rate))?;
            let p = hw_of(o)?.stats.profiled.max(1) as f64;
            ins.push(format!("{:.0}", o.instructions as f64 / p));
            cyc.push(format!("{:.0}", o.cycles as f64 / p));
        }
        t.row(cells![w.name].into_iter().chain(ins).chain(cyc));
    }
    write!(out, "{t}")?;
    Ok(())
}

/// The workloads with barrier stores, against the paper's Table 6 at 1/256.
fn under_load(runs: &Runs, fig8: &[Fig8Row], out: &mut dyn std::io::Write) -> Result<()> {
    say!(out, "\n### Under load: the workloads with barrier stores (tag-1 stores), against the paper's (Table 6 at 1/256)\n");
    let mut t = Table::new()
        .left("workload")
        .left("tagged stores per 1,000 instructions")
        .left("barrier messages (non-null) per 1,000")
        .left("profiled per 1,000 (1/256, Table 6's inverse)")
        .left("buffers ≥ 8 (32/32)")
        .left("in flight ≥ 4 (32/32)")
        .left("buffer hold, cycles per profiled instruction")
        .left("sends that waited for the service (4:8)")
        .left("stalled, 4 networks")
        .left("slowdown, 3 networks")
        .left("slowdown, 4 networks")
        .left("4:8 vs no RPA, service 50")
        .left("20")
        .left("10 cycles a message");
    let mut loaded = Vec::new();
    for (i, w) in runs.workloads.iter().enumerate() {
        let u = runs.get(i, Cell::Hw(32, 32, false, 256))?;
        if u.barrier.0 == 0 {
            continue;
        }
        let h = hw_of(u)?;
        let k = |x: u64| 1000.0 * x as f64 / u.instructions.max(1) as f64;
        let (_, st, sl, _) = &fig8[i];
        let bare = runs.get(i, Cell::Bare)?;
        let p48 = runs.get(i, Cell::Hw(4, 8, false, 256))?;
        let h48 = hw_of(p48)?;
        let services: Vec<String> = SERVICES
            .iter()
            .map(|&c| {
                runs.results
                    .get(&(i, Cell::Service(c)))
                    .map_or("–".into(), |o| pct(slow(o, bare)))
            })
            .collect();
        t.row(
            cells![
                w.name,
                format!("{:.2}", k(u.barrier.0)),
                format!("{:.2}", k(u.barrier.1)),
                format!("{:.2}", k(h.stats.profiled)),
                pct(h.occupancy.buffers_at_least(8)),
                pct(h.occupancy.networks_at_least(4)),
                format!(
                    "{:.1}",
                    h.stats.buffer_cycles as f64 / h.stats.profiled.max(1) as f64
                ),
                pct(h48.stats.queue_waits as f64 / h48.stats.messages.max(1) as f64),
                pct(st[3]),
                pct(sl[2]),
                pct(sl[3]),
                pct(slow(p48, bare))
            ]
            .into_iter()
            .chain(services),
        );
        loaded.push((w.name.clone(), sl[2], sl[3]));
    }
    for (name, per_sample) in [
        ("jack", 42.0),
        ("strata", 205.0),
        ("db", 290.0),
        ("javac", 420.0),
    ] {
        t.row(cells![
            format!("paper: {name}"),
            "–",
            "–",
            format!("{:.2}", 1000.0 / per_sample),
            "–",
            "–",
            "–",
            "–",
            "–",
            "< 0.5",
            "≈ 0",
            "–",
            "–",
            "–"
        ]);
    }
    write!(out, "{t}")?;
    if let Some(worst) = loaded.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
        let w4 = loaded.iter().map(|l| l.2).fold(f64::MIN, f64::max);
        say!(out,
            "\nOver the {} loaded workloads: slowdown with 3 networks at most {}% ({}), with 4 at most {}%; the paper: < 0.5% with three, effectively zero with four.",
            loaded.len(),
            pct(worst.1),
            worst.0,
            pct(w4)
        );
    }

    Ok(())
}

/// The four workloads that load the RPA most (by cycles with ≥ 2 buffers in use).
fn heaviest(fig7: &[(String, HwReport)]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..fig7.len()).collect();
    idx.sort_by(|&a, &b| {
        fig7[b]
            .1
            .occupancy
            .buffers_at_least(2)
            .total_cmp(&fig7[a].1.occupancy.buffers_at_least(2))
    });
    idx.truncate(4);
    idx
}

/// Figure 7: the share of cycles with at least x buffers in use / x profiled instructions in
/// flight, for the four heaviest workloads.
fn plot_fig7(fig7: &[(String, HwReport)]) -> Result<String> {
    let top = heaviest(fig7);
    let panel = |title: &str, nets: bool| Panel {
        title: title.into(),
        x: "x".into(),
        y: "% of cycles".into(),
        series: top
            .iter()
            .map(|&i| {
                let (name, h) = &fig7[i];
                Series {
                    name: name.clone(),
                    points: (1..=16)
                        .map(|x| {
                            let v = if nets {
                                h.occupancy.networks_at_least(x)
                            } else {
                                h.occupancy.buffers_at_least(x)
                            };
                            (x as f64, 100.0 * v)
                        })
                        .collect(),
                    ..Series::default()
                }
            })
            .collect(),
        ..Panel::default()
    };
    Ok(grid(
        &[
            panel("cycles with ≥ x profile buffers in use (32/32)", false),
            panel(
                "cycles with ≥ x profiled instructions in flight (32/32)",
                true,
            ),
        ],
        2,
        (550, 450),
    )?)
}

type Fig8Row = (String, Vec<f64>, Vec<f64>, Vec<f64>);

/// Figure 8: stalls and slowdowns against networks and edge rate, for the four workloads
/// with the most stalls at one network.
fn plot_fig8(fig8: &[Fig8Row]) -> Result<String> {
    let mut idx: Vec<usize> = (0..fig8.len()).collect();
    idx.sort_by(|&a, &b| fig8[b].1[0].total_cmp(&fig8[a].1[0]));
    idx.truncate(4);
    let panels: Vec<Panel> = [
        (
            "a) % cycles dispatch stalled (8 buffers)",
            "networks",
            1,
            ["1", "2", "3", "4"],
        ),
        (
            "b) % slowdown vs 32/32 (8 buffers)",
            "networks",
            2,
            ["1", "2", "3", "4"],
        ),
        (
            "c) % slowdown vs 32/32 (4:8), edge rate",
            "rate",
            3,
            ["1/32", "1/64", "1/128", "1/256"],
        ),
    ]
    .iter()
    .map(|&(title, x, which, ticks)| Panel {
        title: title.into(),
        x: x.into(),
        y: String::new(),
        x_ticks: ticks.iter().map(|t| t.to_string()).collect(),
        series: idx
            .iter()
            .map(|&i| {
                let r = &fig8[i];
                let v = match which {
                    1 => &r.1,
                    2 => &r.2,
                    _ => &r.3,
                };
                Series {
                    name: r.0.clone(),
                    points: v
                        .iter()
                        .enumerate()
                        .map(|(x, v)| (x as f64, 100.0 * v))
                        .collect(),
                    ..Series::default()
                }
            })
            .collect(),
        ..Panel::default()
    })
    .collect();
    Ok(grid(&panels, 3, (433, 420))?)
}

/// One timed run of a program on `preset`, with the RPA if any (lossless: the spec is
/// deterministic).
fn run_spec(
    spec: ProgramSpec,
    name: &str,
    preset: &str,
    rpa: Option<RpaConfig>,
) -> Result<(outcrop_timing::Totals, Option<RpaResult>)> {
    let mut c = RunConfig::new(spec);
    c.timing = Some(outcrop_timing::Config::preset(preset)?);
    c.rpa = rpa.map(|mut r| {
        r.tags = barrier_tags(name);
        r
    });
    let image = ProgramImage::read(&c.program.path())?;
    let s = execute(&c, &image, Hooks::default())?;
    let (code, how) = s.status();
    // exitcode ends with 3 on purpose
    let want = if name == "exitcode" { 3 } else { 0 };
    crate::ensure!(code == want, "the guest ended with status {code} ({how})");
    Ok((s.timing.context("no timing totals")?, s.rpa))
}

fn assembled(src: &str) -> Result<outcrop_rpa::Assembled> {
    outcrop_rpa::parse(src)
        .and_then(|p| outcrop_rpa::assemble(&p))
        .map_err(|d| crate::err!("{}", d.message))
}

/// A prefetch study cell: no RPA, the open loop (the L2-miss query logged), or the closed
/// loop at a service latency, with Figure 2b's query verbatim or collecting `rtime` too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum PCell {
    Bare,
    Open,
    Closed(u32, bool),
}

const LATENCIES: [u32; 4] = [0, 100, 1000, 10000];
const MEMORY_BOUND: [&str; 4] = ["ptrchase", "graph_bfs", "hashtable", "micro_stride_miss"];

type PrefetchOut = (
    outcrop_timing::Totals,
    Option<outcrop_rpa::prefetch::PrefetchStats>,
);

fn prefetch_one(spec: ProgramSpec, name: &str, c: PCell) -> Result<PrefetchOut> {
    let rpa = match c {
        PCell::Bare => None,
        PCell::Open | PCell::Closed(..) => {
            let rtime = matches!(c, PCell::Closed(_, true));
            let mut s = RpaConfig::new(assembled(if rtime {
                "for evL2DMISS * always collect pc res2 rtime ;\nsend 1 stop;\n"
            } else {
                "for evL2DMISS * always collect pc res2 ;\nsend 1 stop;\n"
            })?);
            s.exact = false;
            // a prefetching service is short (a table lookup and a few prefetches);
            // at the default 50 cycles a message it falls behind ptrchase's misses
            s.hardware = Some(HwConfig {
                service_cycles: 20,
                ..HwConfig::paper()
            });
            if let PCell::Closed(latency, _) = c {
                s.prefetch = Some(outcrop_rpa::prefetch::PrefetchConfig {
                    latency,
                    ..Default::default()
                });
            }
            Some(s)
        }
    };
    let (t, r) = run_spec(spec, name, "default", rpa)?;
    let p = r
        .and_then(|r| r.hardware)
        .and_then(|h| h.prefetch)
        .map(|p| p.stats);
    Ok((t, p))
}

/// `study-rpa prefetch`: Figure 2b's service with and without its loop closed, on the
/// default machine (140-cycle memory), every workload; the latency sweep on the
/// memory-bound ones.
fn prefetch(
    args: &SweepOptions,
    out: &mut dyn std::io::Write,
    log: &mut (dyn std::io::Write + Send),
) -> Result<()> {
    let mut cells = vec![PCell::Bare, PCell::Open, PCell::Closed(100, false)];
    cells.extend(LATENCIES.map(|l| PCell::Closed(l, true)));
    let skip = |w: &str, c: PCell| matches!(c, PCell::Closed(l, _) if l != 100 && !MEMORY_BOUND.contains(&w));
    let Some((workloads, results)) =
        sweep(args, log, false, "rpa-prefetch", cells, skip, prefetch_one)?
    else {
        return Ok(());
    };
    let get = |i: usize, c: PCell| results.get(&(i, c)).context("missing run");
    say!(out, "machine: default preset (4-wide, 1 MB L2, 140-cycle memory); query: for evL2DMISS * always collect pc res2 [rtime]; send 1 stop; hardware 4:8; service 20 cycles/message; prefetcher: degree 4, distance 2, 2^22-entry correlation table\n");
    say!(
        out,
        "### Closed loop at a 100-cycle service latency, every workload\n"
    );
    let mut t = Table::new()
        .left("workload")
        .left("L2 data misses, no RPA")
        .left("open loop")
        .left("closed, Figure 2b's query")
        .left("closed, + rtime")
        .left("cycles: open loop vs no RPA")
        .left("closed vs open")
        .left("closed + rtime vs open")
        .left("closed + rtime vs no RPA")
        .left("lines asked for (+ rtime)")
        .left("stride / correlation predictions")
        .left("late fills");
    for (i, w) in workloads.iter().enumerate() {
        let (bare, _) = get(i, PCell::Bare)?;
        let (open, _) = get(i, PCell::Open)?;
        let (closed, _) = get(i, PCell::Closed(100, false))?;
        let (timed, p) = get(i, PCell::Closed(100, true))?;
        let p = p.clone().unwrap_or_default();
        let removed = |t: &outcrop_timing::Totals| {
            pct(1.0 - t.l2_data_misses as f64 / open.l2_data_misses.max(1) as f64)
        };
        t.row(cells![
            w.name,
            bare.l2_data_misses,
            open.l2_data_misses,
            format!("{} ({}%)", closed.l2_data_misses, removed(closed)),
            format!("{} ({}%)", timed.l2_data_misses, removed(timed)),
            signed(open.cycles as f64 / bare.cycles as f64 - 1.0),
            signed(closed.cycles as f64 / open.cycles as f64 - 1.0),
            signed(timed.cycles as f64 / open.cycles as f64 - 1.0),
            signed(timed.cycles as f64 / bare.cycles as f64 - 1.0),
            p.issued,
            format!("{} / {}", p.stride_hits, p.correlation_hits),
            timed.fills_late
        ]);
    }
    write!(out, "{t}")?;
    say!(out, "\n### Service latency sweep (memory-bound workloads, query with rtime): L2 data misses and cycles against the open loop\n");
    let mut t = Table::new()
        .left("workload")
        .left("open loop: misses")
        .left("cycles")
        .left("latency 0")
        .left("100")
        .left("1,000")
        .left("10,000");
    for (i, w) in workloads.iter().enumerate() {
        if !MEMORY_BOUND.contains(&w.name.as_str()) {
            continue;
        }
        let (open, _) = get(i, PCell::Open)?;
        let mut row = Vec::new();
        for l in LATENCIES {
            let (t, _) = get(i, PCell::Closed(l, true))?;
            row.push(format!(
                "misses {}, cycles {}",
                signed(t.l2_data_misses as f64 / open.l2_data_misses.max(1) as f64 - 1.0),
                signed(t.cycles as f64 / open.cycles as f64 - 1.0)
            ));
        }
        t.row(
            cells![w.name, open.l2_data_misses, open.cycles]
                .into_iter()
                .chain(row),
        );
    }
    write!(out, "{t}")?;
    Ok(())
}

fn signed(a: f64) -> String {
    format!("{:+.2}%", 100.0 * a)
}

/// An adaptive-rate study cell: no RPA, or edges at `rate` with `networks` networks (8
/// buffers), adaptive or not; the GC query rides along.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum ACell {
    Bare,
    Edge(u32, u32, bool),
}

type AdaptiveOut = (u64, f64, f64, u64, u32);

/// (cycles, stalled share, overlap %, samples, highest level) of one adaptive-study run.
fn adaptive_one(spec: ProgramSpec, name: &str, c: ACell) -> Result<AdaptiveOut> {
    use outcrop_rpa::services::{edge_accuracy, Service};
    let rpa = match c {
        ACell::Bare => None,
        ACell::Edge(rate, networks, on) => {
            let hw = HwConfig {
                networks,
                buffers: 8,
                ..HwConfig::paper()
            };
            let mut s = paper_queries(rate, hw, true)?;
            s.adaptive = on.then(outcrop_rpa::hw::AdaptiveConfig::default);
            Some(s)
        }
    };
    let rate = match c {
        ACell::Edge(r, ..) => r,
        ACell::Bare => 1,
    };
    let (t, r) = run_spec(spec, name, "rpa2000", rpa)?;
    let Some(r) = r else {
        return Ok((t.cycles, 0.0, 0.0, 0, 0));
    };
    let h = r.hardware.as_ref().context("no hardware report")?;
    let stalled =
        (h.stats.held_network_cycles + h.stats.held_buffer_cycles) as f64 / t.cycles.max(1) as f64;
    let st = &r.queries[0];
    let overlap = match (&r.queues.first(), r.exact.first().and_then(|e| e.as_ref())) {
        (Some((_, _, Service::Edges(e))), Some(x)) => {
            // weighted samples already stand for the throttled ones
            let t = if r.queues[0].2.weighted() {
                0
            } else {
                st.throttled
            };
            let eff = f64::from(rate) * (st.selected + t) as f64 / st.sent.max(1) as f64;
            edge_accuracy(&e.branches, eff, &x.edges).overlap_pct
        }
        _ => f64::NAN,
    };
    let level = h.adaptive.as_ref().map_or(0, |a| a.max_level_reached);
    Ok((t.cycles, stalled, overlap, st.sent, level))
}

/// `study-rpa adaptive`: the RPA watching itself (budget 0.5% of cycles): slowdown against
/// no RPA and edge-profile accuracy against the exact profile, with and without it.
fn adaptive(
    args: &SweepOptions,
    out: &mut dyn std::io::Write,
    log: &mut (dyn std::io::Write + Send),
) -> Result<()> {
    let mut cells = vec![ACell::Bare];
    for rate in [32, 256] {
        for networks in [1, 4] {
            for on in [false, true] {
                cells.push(ACell::Edge(rate, networks, on));
            }
        }
    }
    let Some((workloads, results)) = sweep(
        args,
        log,
        false,
        "rpa-adaptive",
        cells,
        |_, _| false,
        adaptive_one,
    )?
    else {
        return Ok(());
    };
    let get = |i: usize, c: ACell| results.get(&(i, c)).context("missing run");
    say!(out, "machine: rpa2000; queries: edges every N + the GC barrier (always); 8 buffers; adaptive budget 0.5% of cycles per 10,000-cycle window\n");
    for rate in [32u32, 256] {
        say!(out, "### Edges 1/{rate}: slowdown against no RPA, % cycles stalled, edge overlap with the exact profile, samples (fixed → adaptive)\n");
        let mut t = Table::new()
            .left("workload")
            .left("1 network: slowdown")
            .left("stalled")
            .left("overlap")
            .left("samples")
            .left("highest throttle")
            .left("4 networks: slowdown")
            .left("stalled")
            .left("overlap")
            .left("samples")
            .left("highest throttle");
        for (i, w) in workloads.iter().enumerate() {
            let bare = get(i, ACell::Bare)?.0 as f64;
            let mut cols = vec![w.name.clone()];
            for networks in [1, 4] {
                let a = get(i, ACell::Edge(rate, networks, false))?;
                let b = get(i, ACell::Edge(rate, networks, true))?;
                cols.extend(cells![
                    format!(
                        "{} → {}",
                        pct(a.0 as f64 / bare - 1.0),
                        pct(b.0 as f64 / bare - 1.0)
                    ),
                    format!("{} → {}", pct(a.1), pct(b.1)),
                    format!("{:.1} → {:.1}", a.2, b.2),
                    format!("{} → {}", a.3, b.3),
                    format!("1/{}", (1u64 << b.4) * u64::from(rate))
                ]);
            }
            t.row(cols);
        }
        say!(out, "{t}");
    }
    Ok(())
}
