//! `study-brr`: the branch-on-random paper's studies on our workloads (docs/studies/brr.md).
//!
//! Every program (the bundled workloads, `workloads/study/resonance.c` and the paper's
//! microbenchmark `workloads/study/charstat.c`) is compiled once with `gcc -O2 -S`; every
//! variant is that assembly rewritten by `outcrop_instrument` and linked with
//! `workloads/runtime/outcrop_rt.c`, so variants differ only in their sampling framework (the
//! paper's §5.3 method). Programs run on Outcrop's machine, deterministically; the site
//! profile comes from the runtime (`$OUTCROP_PROFILE`), cycles from the timing model (default
//! preset).
//!
//! * Accuracy (Figures 9, 10): overlap of each sampled profile with the full one, for entry
//!   and edge sites at 1/1024 and 1/8192: brr (LFSR, 5 seeds: median, min–max), the software
//!   counter, and brr under the machine's hardware-counter mode.
//! * Sensitivity: the same brr binaries under the paper's four 32-bit tap sets and under
//!   contiguous bits (3 seeds each); the LFSR's correlation of consecutive outcomes.
//! * Overhead (Figure 12): cycles of the framework alone (`count: false`) at 1/1024, counter
//!   and brr, No- and Full-Duplication, over the uninstrumented build.
//! * Microbenchmark (Figures 13, 14): `charstat` with edge sites over intervals 2…65,536:
//!   overhead and cycles per site, framework alone and with counting, and full
//!   instrumentation's cost per site.

use crate::sweep::SweepOptions;
use crate::{Context, Result};
use outcrop_instrument::{instrument, Config as ICfg, Sampling, Sites};
use outcrop_sampling::sampler::{
    BurstSampler, CounterSampler, GeometricSampler, LfsrSampler, Sampler,
};
use outcrop_sampling::{overlap, BrrConfig, BrrMode, BrrUnit, SiteProfile};
use outcrop_studies::chart::{grid, Panel, Series, Style};
use outcrop_studies::stats::pct;
use outcrop_studies::{cells, table::Table};
use outcrop_studies::{Job, Manifest, Study};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const INTERVALS: [u64; 2] = [1024, 8192];
const SEEDS: [u64; 5] = [0x5_a5a5, 0x1_2345, 0xb_eef1, 0x3_c3c3, 0x7_0f0f];
const SENS_SEEDS: usize = 3;
const PAPER_TAPS: [&[u8]; 4] = [
    &[32, 31, 30, 10],
    &[32, 19, 18, 13],
    &[32, 31, 30, 29, 28, 22],
    &[32, 22, 16, 15, 12, 11],
];

/// One program of the study.
#[derive(Clone)]
struct Prog {
    name: String,
    src: PathBuf,
    args: Vec<String>,
}

/// One build variant: `None` sampling is the uninstrumented build.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Variant {
    sites: Sites,
    sampling: Option<Sampling>,
    interval: u64,
    dup: bool,
    count: bool,
}

impl Variant {
    fn base() -> Variant {
        Variant {
            sites: Sites::Entries,
            sampling: None,
            interval: 1,
            dup: false,
            count: true,
        }
    }

    fn of(sites: Sites, sampling: Sampling, interval: u64, dup: bool, count: bool) -> Variant {
        Variant {
            sites,
            sampling: Some(sampling),
            interval,
            dup,
            count,
        }
    }

    fn file(&self) -> String {
        match self.sampling {
            None => "base".into(),
            Some(s) => format!(
                "{}.{}{}{}.{}",
                self.sites.name(),
                s.name(),
                if self.dup { "-dup" } else { "" },
                if self.count { "" } else { "-fw" },
                self.interval
            ),
        }
    }
}

#[derive(Clone)]
struct Env {
    root: PathBuf,
    /// Where assembly and builds are cached (keyed on what makes them).
    work: PathBuf,
    cc: String,
    /// The job's scratch directory (the guest's working directory).
    scratch: Option<PathBuf>,
    /// A taken `brr`'s cost in the timing model, when not the preset's (the decode stage).
    brr_penalty: Option<u32>,
}

impl Env {
    fn gcc(&self, args: &[&std::ffi::OsStr]) -> Result<()> {
        let out = Command::new(&self.cc)
            .args(args)
            .output()
            .with_context(|| format!("{} (apt-get install gcc-riscv64-linux-gnu)", self.cc))?;
        if !out.status.success() {
            bail!(
                "{} failed: {}",
                self.cc,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    /// The program's `-O2 -S` assembly (cached).
    fn asm(&self, p: &Prog) -> Result<String> {
        let s = self.work.join(format!("{}.s", p.name));
        if !s.exists() {
            self.gcc(&[
                "-O2".as_ref(),
                "-march=rv64gc".as_ref(),
                "-mabi=lp64d".as_ref(),
                "-S".as_ref(),
                "-o".as_ref(),
                s.as_os_str(),
                p.src.as_os_str(),
            ])?;
        }
        Ok(std::fs::read_to_string(&s)?)
    }

    /// The variant's binary (cached: built once per study directory).
    fn build(&self, p: &Prog, v: Variant) -> Result<PathBuf> {
        let bin = self.work.join(format!("{}.{}", p.name, v.file()));
        if bin.exists() {
            return Ok(bin);
        }
        let asm = self.asm(p)?;
        let text = match v.sampling {
            None => asm,
            Some(sampling) => {
                let cfg = ICfg {
                    sites: v.sites,
                    sampling,
                    interval: v.interval,
                    full_duplication: v.dup,
                    count: v.count,
                    unit: p.name.clone(),
                };
                instrument(&asm, &cfg)
                    .with_context(|| format!("{} {v:?}", p.name))?
                    .text
            }
        };
        let s = self.work.join(format!("{}.{}.s", p.name, v.file()));
        std::fs::write(&s, text)?;
        let rt = self.root.join("workloads/runtime/outcrop_rt.c");
        self.gcc(&[
            "-O2".as_ref(),
            "-static".as_ref(),
            "-march=rv64gc".as_ref(),
            "-mabi=lp64d".as_ref(),
            "-o".as_ref(),
            bin.as_os_str(),
            s.as_os_str(),
            rt.as_os_str(),
            "-lm".as_ref(),
        ])?;
        std::fs::remove_file(&s)?;
        Ok(bin)
    }
}

/// What one run gave.
struct RunResult {
    sites: SiteProfile,
    cycles: u64,
    instructions: u64,
    mispredicts: u64,
    status: i32,
}

/// How the study runs `bin` (a build of `p`) in its job's scratch directory: the guest's
/// working directory, holding a copy of its inputs, and where the runtime writes its site
/// profile. Every path the guest sees is relative, so its runs (and their cycle counts,
/// which depend on the stack's layout) do not depend on where the host keeps anything.
fn spec_of(env: &Env, p: &Prog, bin: &Path, scratch: &Path) -> Result<outcrop_run::ProgramSpec> {
    let mut command = vec![bin.as_os_str().to_owned()];
    command.extend(p.args.iter().map(Into::into));
    for a in &p.args {
        let to = scratch.join(a);
        if !to.exists() {
            if let Some(d) = to.parent() {
                std::fs::create_dir_all(d)?;
            }
            std::fs::copy(env.root.join("workloads").join(a), &to)
                .with_context(|| format!("copying {a} for {}", p.name))?;
        }
    }
    Ok(outcrop_run::ProgramSpec {
        command,
        allow_rw: vec![scratch.to_path_buf()],
        cwd: Some(scratch.to_path_buf()),
        argv0: Some(format!("bin/{}", p.name).into()),
        ..outcrop_run::ProgramSpec::observed(bin, "")
    })
}

fn exec(env: &Env, p: &Prog, bin: &Path, brr: BrrConfig, timed: bool) -> Result<RunResult> {
    let scratch = env.scratch.as_deref().context("no scratch directory")?;
    let name = format!(
        "{}.sites",
        bin.file_name().unwrap_or_default().to_string_lossy()
    );
    let prof = scratch.join(&name);
    let _ = std::fs::remove_file(&prof);
    let spec = outcrop_run::ProgramSpec {
        env: vec![format!("OUTCROP_PROFILE={name}").into()],
        brr,
        brr_seeded: true,
        ..spec_of(env, p, bin, scratch)?
    };
    let mut m = outcrop_run::load(&spec, Box::new(|_| {}))?.machine;
    let (outcome, cycles, mispredicts) = if timed {
        let mut cfg = outcrop_timing::Config::default();
        if let Some(p) = env.brr_penalty {
            cfg.core.brr_penalty = p;
        }
        let mut t = outcrop_timing::Timed::new(&cfg, ());
        let o = m.run(&mut t);
        t.finish();
        let tot = t.totals();
        (o, tot.cycles, tot.mispredicts)
    } else {
        (m.run(&mut ()), 0, 0)
    };
    let status = match outcome {
        outcrop_rv::Outcome::Exited(s) => s,
        o => bail!("{}: {o:?}", bin.display()),
    };
    let instructions = m.instret;
    let sites = match std::fs::read_to_string(&prof) {
        Ok(t) => SiteProfile::parse(&t)?,
        Err(_) => SiteProfile::default(),
    };
    let _ = std::fs::remove_file(&prof);
    Ok(RunResult {
        sites,
        cycles,
        instructions,
        mispredicts,
        status,
    })
}

fn lfsr(seed: u64) -> BrrConfig {
    BrrConfig {
        seed,
        ..BrrConfig::default()
    }
}

/// Accuracy of one framework: median, min, max over seeds (one value for deterministic ones).
#[derive(Clone, Copy, Default, Serialize, Deserialize)]
struct Acc {
    med: f64,
    min: f64,
    max: f64,
}

fn acc_of(mut v: Vec<f64>) -> Acc {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return Acc::default();
    }
    Acc {
        med: v[v.len() / 2],
        min: v[0],
        max: v[v.len() - 1],
    }
}

#[derive(Default, Serialize, Deserialize)]
struct ProgResult {
    name: String,
    /// per sites kind: number of sites, checks (full total)
    #[serde(with = "pairs")]
    sites: BTreeMap<&'static str, (usize, u64)>,
    /// (sites, interval, framework) -> accuracy
    #[serde(with = "pairs")]
    acc: BTreeMap<(&'static str, u64, &'static str), Acc>,
    /// sensitivity: config name -> accuracy (edges, 1024)
    sens: BTreeMap<String, Acc>,
    /// overhead: (sites, framework) -> (cycles ratio - 1)
    #[serde(with = "pairs")]
    overhead: BTreeMap<(&'static str, &'static str), f64>,
    base_cycles: u64,
    base_instructions: u64,
}

const FRAMEWORKS: [(&str, Sampling, bool); 4] = [
    ("counter", Sampling::Counter, false),
    ("brr", Sampling::Brr, false),
    ("counter-dup", Sampling::Counter, true),
    ("brr-dup", Sampling::Brr, true),
];

fn study(env: &Env, p: &Prog, overhead: bool) -> Result<ProgResult> {
    let mut r = ProgResult {
        name: p.name.clone(),
        ..ProgResult::default()
    };
    let base = exec(
        env,
        p,
        &env.build(p, Variant::base())?,
        lfsr(SEEDS[0]),
        overhead,
    )?;
    r.base_cycles = base.cycles;
    r.base_instructions = base.instructions;
    for sites in [Sites::Entries, Sites::Edges] {
        let sn = sites.name();
        let full_bin = env.build(p, Variant::of(sites, Sampling::Full, 1, false, true))?;
        let full = exec(env, p, &full_bin, lfsr(SEEDS[0]), false)?;
        if full.status != base.status {
            bail!(
                "{}: {sn} full exits {} not {}",
                p.name,
                full.status,
                base.status
            );
        }
        r.sites
            .insert(sn, (full.sites.sites.len(), full.sites.total()));
        for interval in INTERVALS {
            let ctr = env.build(
                p,
                Variant::of(sites, Sampling::Counter, interval, false, true),
            )?;
            let c = exec(env, p, &ctr, lfsr(SEEDS[0]), false)?;
            r.acc.insert(
                (sn, interval, "counter"),
                acc_of(vec![overlap(&full.sites, &c.sites).accuracy]),
            );
            let brr = env.build(p, Variant::of(sites, Sampling::Brr, interval, false, true))?;
            let hw = BrrConfig {
                mode: BrrMode::Counter,
                ..lfsr(SEEDS[0])
            };
            let h = exec(env, p, &brr, hw, false)?;
            r.acc.insert(
                (sn, interval, "hw-counter"),
                acc_of(vec![overlap(&full.sites, &h.sites).accuracy]),
            );
            let mut v = Vec::new();
            for seed in SEEDS {
                let b = exec(env, p, &brr, lfsr(seed), false)?;
                v.push(overlap(&full.sites, &b.sites).accuracy);
            }
            r.acc.insert((sn, interval, "brr"), acc_of(v));
            if sites == Sites::Edges && interval == 1024 {
                let mut configs: Vec<(String, BrrConfig)> = Vec::new();
                for taps in PAPER_TAPS {
                    configs.push((
                        format!("32-bit taps {taps:?}"),
                        BrrConfig {
                            width: 32,
                            taps: taps.to_vec(),
                            ..BrrConfig::default()
                        },
                    ));
                }
                configs.push((
                    "20-bit, leap 20".into(),
                    BrrConfig {
                        leap: 20,
                        ..BrrConfig::default()
                    },
                ));
                configs.push((
                    "20-bit, contiguous bits".into(),
                    BrrConfig {
                        bits: outcrop_sampling::brr::CONTIGUOUS_BITS.to_vec(),
                        ..BrrConfig::default()
                    },
                ));
                for (name, cfg) in configs {
                    let mut v = Vec::new();
                    for seed in SEEDS.iter().take(SENS_SEEDS) {
                        let b = exec(
                            env,
                            p,
                            &brr,
                            BrrConfig {
                                seed: *seed,
                                ..cfg.clone()
                            },
                            false,
                        )?;
                        v.push(overlap(&full.sites, &b.sites).accuracy);
                    }
                    r.sens.insert(name, acc_of(v));
                }
            }
        }
        if overhead {
            for (fname, sampling, dup) in FRAMEWORKS {
                let b = env.build(p, Variant::of(sites, sampling, 1024, dup, false))?;
                let t = exec(env, p, &b, lfsr(SEEDS[0]), true)?;
                r.overhead.insert(
                    (sn, fname),
                    t.cycles as f64 / base.cycles.max(1) as f64 - 1.0,
                );
            }
        }
    }
    Ok(r)
}

/// Every sampler on the same site executions of one run of the uninstrumented program: call
/// targets (function entries reached by calls) and both edges of conditional branches, each
/// sampler deciding at every execution, scored against the exact counts.
struct SameRun {
    kinds: [Vec<Box<dyn Sampler + Send>>; 2],
    counts: [Vec<rustc_hash::FxHashMap<u64, u64>>; 2],
    exact: [rustc_hash::FxHashMap<u64, u64>; 2],
}

/// Hash of this executable, every C source the study compiles and the cross compiler's version.
fn cache_key(root: &Path) -> Result<u64> {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(&std::fs::read(std::env::current_exe()?)?);
    for dir in ["workloads/src", "workloads/study", "workloads/runtime"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .with_context(|| format!("reading {dir}"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for f in files {
            h.write(f.to_string_lossy().as_bytes());
            h.write(&std::fs::read(&f)?);
        }
    }
    let cc = std::env::var("CROSS").unwrap_or_else(|_| "riscv64-linux-gnu-".into()) + "gcc";
    let v = Command::new(&cc)
        .arg("--version")
        .output()
        .with_context(|| format!("{cc} (apt-get install gcc-riscv64-linux-gnu)"))?;
    h.write(&v.stdout);
    Ok(h.finish())
}

/// The samplers compared, by name; seeds vary the random ones.
fn same_run_samplers(seed: u64) -> Vec<(&'static str, Box<dyn Sampler + Send>)> {
    let b = |c: BrrConfig| -> Box<dyn Sampler + Send> {
        Box::new(LfsrSampler::new(1024, &c).unwrap_or_else(|_| unreachable!()))
    };
    vec![
        (
            "counter",
            Box::new(CounterSampler::new(1024).unwrap_or_else(|_| unreachable!())),
        ),
        (
            "geometric",
            Box::new(GeometricSampler::new(1024, seed).unwrap_or_else(|_| unreachable!())),
        ),
        ("lfsr", b(lfsr(SEEDS[(seed as usize) % SEEDS.len()]))),
        (
            "lfsr-leap20",
            b(BrrConfig {
                leap: 20,
                ..lfsr(SEEDS[(seed as usize) % SEEDS.len()])
            }),
        ),
        (
            "burst",
            Box::new(BurstSampler::new(16 * 1024, 16).unwrap_or_else(|_| unreachable!())),
        ),
    ]
}

impl outcrop_events::record::Observer for SameRun {
    const RETIRE: bool = true;

    #[inline]
    fn retire(
        &mut self,
        r: &outcrop_events::record::Retire,
        _: Option<&outcrop_events::record::Stamp>,
    ) -> outcrop_events::record::Control {
        use outcrop_events::record::{BranchKind, Class};
        let site = if r.transfer == Some(BranchKind::Call) {
            Some((0, r.target))
        } else if r.class == Some(Class::Branch) {
            Some((1, r.pc << 1 | u64::from(r.taken)))
        } else {
            None
        };
        if let Some((k, key)) = site {
            *self.exact[k].entry(key).or_default() += 1;
            for (s, c) in self.kinds[k].iter_mut().zip(self.counts[k].iter_mut()) {
                if s.sample() {
                    *c.entry(key).or_default() += 1;
                }
            }
        }
        outcrop_events::record::Control::Continue
    }
}

fn profile_of(m: &rustc_hash::FxHashMap<u64, u64>) -> SiteProfile {
    let mut sites: Vec<(String, u64)> = m.iter().map(|(k, v)| (format!("{k:x}"), *v)).collect();
    sites.sort();
    SiteProfile { sites }
}

/// (kind, sampler) -> accuracy over seeds, and the site executions per kind.
#[derive(Serialize, Deserialize)]
struct SameRunResult(
    #[serde(with = "pairs")] BTreeMap<(usize, &'static str), Acc>,
    [u64; 2],
);

fn same_run(env: &Env, p: &Prog) -> Result<SameRunResult> {
    let scratch = env.scratch.as_deref().context("no scratch directory")?;
    let bin = env.build(p, Variant::base())?;
    let mut per: BTreeMap<(usize, &'static str), Vec<f64>> = BTreeMap::new();
    let mut execs = [0u64; 2];
    for seed in 0..SEEDS.len() as u64 {
        let mk = || {
            same_run_samplers(seed)
                .into_iter()
                .map(|(_, s)| s)
                .collect::<Vec<_>>()
        };
        let names: Vec<&'static str> = same_run_samplers(seed)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let mut obs = SameRun {
            kinds: [mk(), mk()],
            counts: [
                vec![Default::default(); names.len()],
                vec![Default::default(); names.len()],
            ],
            exact: Default::default(),
        };
        let spec = spec_of(env, p, &bin, scratch)?;
        let mut m = outcrop_run::load(&spec, Box::new(|_| {}))?.machine;
        m.run(&mut obs);
        for (k, e) in execs.iter_mut().enumerate() {
            let exact = profile_of(&obs.exact[k]);
            *e = exact.total();
            for (i, n) in names.iter().enumerate() {
                let a = overlap(&exact, &profile_of(&obs.counts[k][i])).accuracy;
                per.entry((k, n)).or_default().push(a);
            }
        }
    }
    Ok(SameRunResult(
        per.into_iter().map(|(k, v)| (k, acc_of(v))).collect(),
        execs,
    ))
}

fn same_run_table(rs: &[(String, SameRunResult)]) -> String {
    let mut o = String::new();
    let names: Vec<&str> = same_run_samplers(0).into_iter().map(|(n, _)| n).collect();
    for (k, kind) in ["call targets", "branch edges"].iter().enumerate() {
        let _ = writeln!(
            o,
            "\n#### Every sampler on the same run, {kind}, 1/1024 (accuracy %, median and min–max of 5 seeds)\n"
        );
        let mut t = Table::new()
            .left("program")
            .right("executions")
            .rights(names.iter().copied());
        for (name, SameRunResult(acc, execs)) in rs {
            let mut row = cells![name, execs[k]];
            row.extend(names.iter().map(|n| acc_cell(acc.get(&(k, *n)))));
            t.row(row);
        }
        let _ = write!(o, "{t}");
    }
    o
}

/// The microbenchmark sweep: per (framework, counting) and interval, cycles over the base.
#[derive(Serialize, Deserialize)]
struct Micro {
    checks: u64,
    base: u64,
    full: u64,
    /// (framework, counting, interval) -> (cycles, mispredicts)
    #[serde(with = "pairs")]
    runs: BTreeMap<(&'static str, bool, u64), (u64, u64)>,
    base_mispredicts: u64,
    /// A taken `brr`'s cost in these runs (the default preset's decode stage).
    penalty: u32,
    /// The sensitivity sweep: brr's frameworks alone with a taken `brr` costing
    /// [`OLD_PENALTY`] cycles instead of the decode stage: (framework, interval) -> cycles.
    #[serde(with = "pairs")]
    old_penalty: BTreeMap<(&'static str, u64), (u64, u64)>,
}

/// The taken-`brr` cost the presets had before it followed the decode stage (the BTB-miss
/// redirect's), kept as the study's sensitivity point.
const OLD_PENALTY: u32 = 3;

fn micro(env: &Env, p: &Prog, runs: usize) -> Result<Micro> {
    let median = |mut v: Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let timed = |bin: &Path| -> Result<(u64, u64)> {
        // the machine and the model are deterministic: one run is the measurement; runs > 1
        // only re-checks that
        let mut c = Vec::new();
        let mut m = 0;
        for _ in 0..runs {
            let r = exec(env, p, bin, lfsr(SEEDS[0]), true)?;
            c.push(r.cycles);
            m = r.mispredicts;
        }
        Ok((median(c), m))
    };
    let (base, base_mispredicts) = timed(&env.build(p, Variant::base())?)?;
    let full_bin = env.build(p, Variant::of(Sites::Edges, Sampling::Full, 1, false, true))?;
    let checks = exec(env, p, &full_bin, lfsr(SEEDS[0]), false)?
        .sites
        .total();
    let (full, _) = timed(&full_bin)?;
    let mut out = BTreeMap::new();
    for (fname, sampling, dup) in FRAMEWORKS {
        for count in [false, true] {
            for k in 1..=16 {
                let interval = 1u64 << k;
                let b = env.build(p, Variant::of(Sites::Edges, sampling, interval, dup, count))?;
                out.insert((fname, count, interval), timed(&b)?);
            }
        }
    }
    // the penalty only changes what a taken brr costs: the counters' runs and the base are
    // the same at either penalty
    let old = Env {
        brr_penalty: Some(OLD_PENALTY),
        ..env.clone()
    };
    let mut old_penalty = BTreeMap::new();
    for (fname, sampling, dup) in FRAMEWORKS {
        if sampling != Sampling::Brr {
            continue;
        }
        for k in 1..=16 {
            let interval = 1u64 << k;
            let b = env.build(p, Variant::of(Sites::Edges, sampling, interval, dup, false))?;
            let r = exec(&old, p, &b, lfsr(SEEDS[0]), true)?;
            old_penalty.insert((fname, interval), (r.cycles, r.mispredicts));
        }
    }
    Ok(Micro {
        checks,
        base,
        full,
        runs: out,
        base_mispredicts,
        penalty: outcrop_timing::Config::default().core.brr_penalty,
        old_penalty,
    })
}

fn acc_cell(a: Option<&Acc>) -> String {
    match a {
        None => "–".into(),
        Some(a) if (a.max - a.min) < 0.0005 => pct(a.med, 1),
        Some(a) => format!("{} ({}–{})", pct(a.med, 1), pct(a.min, 1), pct(a.max, 1)),
    }
}

fn tables(rs: &[ProgResult], m: Option<&Micro>) -> String {
    let mut o = String::new();
    for sites in ["entries", "edges"] {
        for interval in INTERVALS {
            let _ = writeln!(
                o,
                "\n#### Accuracy, {sites} sites, 1/{interval} (overlap with the full profile, %)\n"
            );
            let mut t = Table::new()
                .left("program")
                .right("sites")
                .right("checks")
                .right("brr (LFSR, 5 seeds)")
                .right("software counter")
                .right("hardware counter");
            for r in rs {
                let (n, checks) = r.sites.get(sites).copied().unwrap_or_default();
                t.row(cells![
                    r.name,
                    n,
                    checks,
                    acc_cell(r.acc.get(&(sites, interval, "brr"))),
                    acc_cell(r.acc.get(&(sites, interval, "counter"))),
                    acc_cell(r.acc.get(&(sites, interval, "hw-counter")))
                ]);
            }
            let _ = write!(o, "{t}");
        }
    }
    sensitivity(rs, &mut o);
    overhead(rs, &mut o);
    if let Some(m) = m {
        micro_tables(m, &mut o);
    }
    o
}

/// The sensitivity table: accuracy under other LFSR designs.
fn sensitivity(rs: &[ProgResult], o: &mut String) {
    let names: Vec<String> = rs
        .first()
        .map(|r| r.sens.keys().cloned().collect())
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "\n#### Sensitivity, edge sites, 1/1024 (median of 3 seeds, %)\n"
    );
    let mut t = Table::new()
        .left("program")
        .right("default (20-bit, taps 20 17, spaced bits)")
        .rights(names.iter().cloned());
    for r in rs {
        let mut row = cells![r.name, acc_cell(r.acc.get(&("edges", 1024, "brr")))];
        row.extend(names.iter().map(|n| acc_cell(r.sens.get(n))));
        t.row(row);
    }
    let _ = write!(o, "{t}");
}

/// The framework's overhead per program and site set.
fn overhead(rs: &[ProgResult], o: &mut String) {
    if rs.iter().any(|r| !r.overhead.is_empty()) {
        for sites in ["entries", "edges"] {
            let _ = writeln!(
                o,
                "\n#### Framework overhead at 1/1024, {sites} sites (cycles over the uninstrumented build, %)\n"
            );
            let mut t = Table::new()
                .left("program")
                .right("checks")
                .right("checks per 1,000 base cycles")
                .right("base cycles")
                .right("counter")
                .right("brr")
                .right("counter, Full-Dup")
                .right("brr, Full-Dup")
                .right("counter / brr")
                .right("counter / brr, Full-Dup");
            let mut ratios = (Vec::new(), Vec::new());
            for r in rs {
                let g = |f: &str| r.overhead.get(&(sites, f)).copied().unwrap_or(f64::NAN);
                let checks = r.sites.get(sites).map_or(0, |s| s.1);
                // a ratio only where both frameworks cost something measurable (≥ 0.1%)
                let ratio = |c: f64, b: f64, into: &mut Vec<f64>| {
                    if b >= 0.001 && c >= 0.001 {
                        into.push(c / b);
                        format!("{:.1}×", c / b)
                    } else {
                        "–".into()
                    }
                };
                let nodup = ratio(g("counter"), g("brr"), &mut ratios.0);
                let dup = ratio(g("counter-dup"), g("brr-dup"), &mut ratios.1);
                t.row(cells![
                    r.name,
                    checks,
                    format!(
                        "{:.2}",
                        1000.0 * checks as f64 / r.base_cycles.max(1) as f64
                    ),
                    r.base_cycles,
                    format!("{:.2}", 100.0 * g("counter")),
                    format!("{:.2}", 100.0 * g("brr")),
                    format!("{:.2}", 100.0 * g("counter-dup")),
                    format!("{:.2}", 100.0 * g("brr-dup")),
                    nodup,
                    dup
                ]);
            }
            let _ = write!(o, "{t}");
            let med = |mut v: Vec<f64>| {
                v.sort_by(f64::total_cmp);
                if v.is_empty() {
                    "–".to_string()
                } else {
                    format!(
                        "{:.1}× (of {}, {:.1}–{:.1}×)",
                        v[v.len() / 2],
                        v.len(),
                        v[0],
                        v[v.len() - 1]
                    )
                }
            };
            let _ = writeln!(
                o,
                "\nMedian counter / brr, {sites} sites: {} with No-Duplication, {} with Full-Duplication.",
                med(ratios.0),
                med(ratios.1)
            );
        }
    }
}

/// The microbenchmark's tables (Figures 13, 14) and the taken-brr cost sensitivity.
fn micro_tables(m: &Micro, o: &mut String) {
    let _ = writeln!(
        o,
        "\n#### Microbenchmark (charstat, edge sites): {} checks, {} base cycles ({} mispredictions); full instrumentation {:.2} cycles per site\n",
        m.checks,
        m.base,
        m.base_mispredicts,
        (m.full as f64 - m.base as f64) / m.checks as f64
    );
    let _ = writeln!(
        o,
        "Overhead % / cycles per site (framework alone | with counting):\n"
    );
    let mut t = Table::new()
        .right("interval")
        .right("counter")
        .right("brr")
        .right("counter, Full-Dup")
        .right("brr, Full-Dup")
        .right("counter/brr per site (Full-Dup, framework)");
    for k in 1..=16 {
        let i = 1u64 << k;
        let cell = |f: &'static str, count: bool| {
            let (c, _) = m.runs[&(f, count, i)];
            let d = c as f64 - m.base as f64;
            (100.0 * d / m.base as f64, d / m.checks as f64)
        };
        let mut row = vec![i.to_string()];
        for (f, _, _) in FRAMEWORKS {
            let (a, b) = (cell(f, false), cell(f, true));
            // the two halves of a cell are split by an escaped `|`
            row.push(format!(
                "{:.1}% / {:.2} \\| {:.1}% / {:.2}",
                a.0, a.1, b.0, b.1
            ));
        }
        let (c, b) = (cell("counter-dup", false).1, cell("brr-dup", false).1);
        row.push(if b > 0.0 {
            format!("{:.1}×", c / b)
        } else {
            "–".into()
        });
        t.row(row);
    }
    let _ = write!(o, "{t}");
    let _ = writeln!(
        o,
        "\n#### Sensitivity to a taken brr's cost (charstat, edge sites, framework alone): cycles per site at {} cycles (the preset's decode stage, above) and at {OLD_PENALTY} (a BTB-miss redirect)\n",
        m.penalty
    );
    let p = m.penalty;
    let mut t = Table::new().right("interval").rights([
        format!("brr, {p}"),
        format!("brr, {OLD_PENALTY}"),
        format!("brr Full-Dup, {p}"),
        format!("brr Full-Dup, {OLD_PENALTY}"),
        format!("counter/brr Full-Dup, {p}"),
        format!("counter/brr Full-Dup, {OLD_PENALTY}"),
    ]);
    for k in 1..=16 {
        let i = 1u64 << k;
        let per = |c: u64| (c as f64 - m.base as f64) / m.checks as f64;
        let now = |f: &'static str| per(m.runs[&(f, false, i)].0);
        let old = |f: &'static str| m.old_penalty.get(&(f, i)).map_or(f64::NAN, |r| per(r.0));
        let c = now("counter-dup");
        t.row(cells![
            i,
            format!("{:.2}", now("brr")),
            format!("{:.2}", old("brr")),
            format!("{:.2}", now("brr-dup")),
            format!("{:.2}", old("brr-dup")),
            format!("{:.1}×", c / now("brr-dup")),
            format!("{:.1}×", c / old("brr-dup"))
        ]);
    }
    let _ = write!(o, "{t}");
}

/// Correlation of a level's outcomes: P(taken at t+d | taken at t) as a multiple of the
/// independent probability, at d = 1 and its range over d = 1..=24, per LFSR design.
fn correlation() -> String {
    const LAGS: usize = 24;
    let spaced32: Vec<u8> = vec![0, 3, 7, 12, 18, 25, 31, 5, 10, 16, 23, 29, 1, 8, 14, 21];
    let designs: Vec<(&str, BrrConfig)> = vec![
        ("20-bit, spaced bits (default)", BrrConfig::default()),
        (
            "20-bit, contiguous bits",
            BrrConfig {
                bits: outcrop_sampling::brr::CONTIGUOUS_BITS.to_vec(),
                ..BrrConfig::default()
            },
        ),
        (
            "20-bit, spaced, leap 20",
            BrrConfig {
                leap: 20,
                ..BrrConfig::default()
            },
        ),
        (
            "32-bit (taps 32 31 30 10), spaced",
            BrrConfig {
                width: 32,
                taps: vec![32, 31, 30, 10],
                bits: spaced32.clone(),
                ..BrrConfig::default()
            },
        ),
        (
            "64-bit (taps 64 63 61 60), spaced, leap 32",
            BrrConfig {
                width: 64,
                taps: vec![64, 63, 61, 60],
                bits: spaced32,
                leap: 32,
                ..BrrConfig::default()
            },
        ),
    ];
    let mut o = String::from(
        "\n#### LFSR correlation: P(taken at t+d | taken at t) / P(taken) at d = 1, and its range over d = 1…24 (4·10^6 consecutive decisions of one level, a whole number of periods of the 20-bit registers, so their ratios are exact; the wider registers' are estimates, – where too few pairs; 1.00× is independence, 0× means a take excludes a take d later)\n\n",
    );
    let mut table = Table::new()
        .right("level (probability)")
        .rights(designs.iter().map(|(n, _)| *n));
    for level in 0..16u8 {
        let p = 0.5f64.powi(i32::from(level) + 1);
        let mut row = vec![format!("{level} (1/{})", 2u64 << level)];
        for (_, cfg) in &designs {
            let Ok(mut u) = BrrUnit::new(cfg) else {
                row.push("bad config".into());
                continue;
            };
            let n = 4_000_000usize;
            let t: Vec<bool> = (0..n).map(|_| u.decide(level) == Some(true)).collect();
            let taken = t.iter().filter(|&&x| x).count().max(1) as f64;
            let ratio = |d: usize| {
                let both = (0..n - d).filter(|&i| t[i] && t[i + d]).count() as f64;
                both / taken / p
            };
            let (mut lo, mut hi) = (f64::MAX, 0.0f64);
            for d in 1..=LAGS {
                let r = ratio(d);
                lo = lo.min(r);
                hi = hi.max(r);
            }
            // a 20-bit register repeats every 2^20 - 1 decisions: 4·10^6 cover its whole
            // period, so its ratios are exact; a wider one's are estimates, shown only where
            // independence would give at least 30 pairs per lag
            if cfg.width > 22 && taken * p < 30.0 {
                row.push("–".into());
            } else {
                row.push(format!("{:.2}× ({:.2}–{:.1}×)", ratio(1), lo, hi));
            }
        }
        table.row(row);
    }
    let _ = write!(o, "{table}");
    o
}

/// Figures 9 and 10: each framework's accuracy per program, one panel per interval.
fn plot_accuracy(rs: &[ProgResult], sites: &'static str) -> Result<String> {
    let ticks: Vec<String> = rs
        .iter()
        .map(|r| r.name.chars().take(10).collect())
        .collect();
    let panels: Vec<Panel> = INTERVALS
        .iter()
        .map(|&interval| Panel {
            title: format!("{sites} sites, 1/{interval}: overlap with the full profile"),
            x: String::new(),
            y: "accuracy (%)".into(),
            x_ticks: ticks.clone(),
            series: [
                ("brr", "brr (LFSR, median of 5 seeds)"),
                ("counter", "software counter"),
                ("hw-counter", "hardware counter"),
            ]
            .iter()
            .map(|&(fw, label)| Series {
                name: label.into(),
                points: rs
                    .iter()
                    .enumerate()
                    .filter_map(|(i, r)| {
                        r.acc
                            .get(&(sites, interval, fw))
                            .map(|a| (i as f64, 100.0 * a.med))
                    })
                    .collect(),
                style: Style::Bars,
            })
            .collect(),
            ..Panel::default()
        })
        .collect();
    Ok(grid(&panels, 1, (1300, 300))?)
}

/// Figures 13 and 14: `charstat`'s overhead (or cycles per site) against the sampling
/// interval; solid: the framework alone, dashed: with counting.
fn plot_micro(m: &Micro, per_site: bool) -> Result<String> {
    let value = |c: u64| {
        let d = c as f64 - m.base as f64;
        if per_site {
            d / m.checks as f64
        } else {
            100.0 * d / m.base as f64
        }
    };
    let frameworks: Vec<_> = if per_site {
        FRAMEWORKS.iter().filter(|f| f.2).collect()
    } else {
        FRAMEWORKS.iter().collect()
    };
    let mut series = Vec::new();
    for (f, _, _) in frameworks {
        for count in [false, true] {
            let points = (1..=16)
                .filter_map(|k| {
                    let (c, _) = m.runs.get(&(*f, count, 1u64 << k))?;
                    Some((k as f64, value(*c)))
                })
                .collect();
            series.push(Series {
                name: if count {
                    format!("{f}, counting")
                } else {
                    (*f).to_string()
                },
                points,
                style: if count { Style::Dashed } else { Style::Line },
            });
        }
    }
    if per_site {
        let y = value(m.full);
        series.push(Series {
            name: "full instrumentation".into(),
            points: vec![(1.0, y), (16.0, y)],
            ..Series::default()
        });
    }
    let panel = Panel {
        title: if per_site {
            "charstat: cycles per sampling site (solid: framework alone; dashed: with counting)"
        } else {
            "charstat: overhead over the uninstrumented build (solid: framework; dashed: with counting)"
        }
        .into(),
        x: "sampling interval (log2)".into(),
        y: if per_site { "cycles per site" } else { "overhead (%)" }.into(),
        series,
        ..Panel::default()
    };
    Ok(grid(&[panel], 1, (820, 500))?)
}

/// Figure 12: each framework's overhead at 1/1024 on edge sites, per program.
fn plot_overhead(rs: &[ProgResult]) -> Result<String> {
    let panel = Panel {
        title: "Framework overhead at 1/1024, edge sites (cycles over the uninstrumented build)"
            .into(),
        x: String::new(),
        y: "overhead (%)".into(),
        x_ticks: rs
            .iter()
            .map(|r| r.name.chars().take(10).collect())
            .collect(),
        series: FRAMEWORKS
            .iter()
            .map(|(f, _, _)| Series {
                name: (*f).to_string(),
                points: rs
                    .iter()
                    .enumerate()
                    .filter_map(|(i, r)| {
                        let v = r.overhead.get(&("edges", *f))?;
                        Some((i as f64, (100.0 * v).max(0.0)))
                    })
                    .collect(),
                style: Style::Bars,
            })
            .collect(),
        ..Panel::default()
    };
    Ok(grid(&[panel], 1, (1300, 440))?)
}

/// `(K, V)` pairs for a map whose keys JSON cannot name (tuples); names come back as the
/// study's own `&'static str`s ([`Key`]).
mod pairs {
    use super::Key;
    use serde::de::DeserializeOwned;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<K: Serialize, V: Serialize, S: Serializer>(
        m: &BTreeMap<K, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.iter())
    }

    pub fn deserialize<'de, K, V, D>(d: D) -> Result<BTreeMap<K, V>, D::Error>
    where
        K: Key + Ord,
        V: DeserializeOwned,
        D: Deserializer<'de>,
    {
        Ok(Vec::<(K::Owned, V)>::deserialize(d)?
            .into_iter()
            .map(|(k, v)| (K::from_owned(k), v))
            .collect())
    }
}

/// A map key with names in it, read back from a record.
trait Key: Sized {
    /// The same with owned strings.
    type Owned: serde::de::DeserializeOwned;
    fn from_owned(o: Self::Owned) -> Self;
}

/// The study's name for `s` (sites kinds, frameworks, samplers), or `s` kept for good.
fn intern(s: String) -> &'static str {
    const KNOWN: [&str; 12] = [
        "entries",
        "edges",
        "counter",
        "brr",
        "hw-counter",
        "counter-dup",
        "brr-dup",
        "geometric",
        "lfsr",
        "lfsr-leap20",
        "burst",
        "full",
    ];
    KNOWN
        .iter()
        .find(|k| **k == s)
        .copied()
        .unwrap_or_else(|| Box::leak(s.into_boxed_str()))
}

impl Key for &'static str {
    type Owned = String;
    fn from_owned(o: String) -> Self {
        intern(o)
    }
}

impl Key for (&'static str, u64, &'static str) {
    type Owned = (String, u64, String);
    fn from_owned(o: Self::Owned) -> Self {
        (intern(o.0), o.1, intern(o.2))
    }
}

impl Key for (&'static str, &'static str) {
    type Owned = (String, String);
    fn from_owned(o: Self::Owned) -> Self {
        (intern(o.0), intern(o.1))
    }
}

impl Key for (usize, &'static str) {
    type Owned = (usize, String);
    fn from_owned(o: Self::Owned) -> Self {
        (o.0, intern(o.1))
    }
}

impl Key for (&'static str, u64) {
    type Owned = (String, u64);
    fn from_owned(o: Self::Owned) -> Self {
        (intern(o.0), o.1)
    }
}

impl Key for (&'static str, bool, u64) {
    type Owned = (String, bool, u64);
    fn from_owned(o: Self::Owned) -> Self {
        (intern(o.0), o.1, o.2)
    }
}

/// Options of `study-brr`.
#[derive(Debug, Clone)]
pub struct Config {
    /// The sweep: workloads, jobs, results, Slurm.
    pub study: SweepOptions,
    /// Leave out the overhead runs (Figure 12).
    pub no_overhead: bool,
    /// Leave out the microbenchmark (Figures 13, 14).
    pub no_micro: bool,
    /// Write the plots into DIR (default docs/studies, only when every program ran).
    pub svg_dir: Option<PathBuf>,
    /// Where assembly and builds are cached (default: target/study-brr/KEY, KEY a hash of
    /// this program, the C sources and the cross compiler).
    pub work: Option<PathBuf>,
    /// Only the every-sampler-on-the-same-run tables.
    pub same_run_only: bool,
    /// Only the LFSR's correlation table.
    pub correlation_only: bool,
}

/// A sweep of the study's programs: one job per program, each a call of `run`.
struct ProgStudy<O> {
    name: &'static str,
    progs: Vec<Prog>,
    env: Env,
    /// Part of every job id (the options that change a job's output).
    tag: &'static str,
    run: fn(&Env, &Prog) -> Result<O>,
}

impl<O: Serialize + DeserializeOwned + Send> Study for ProgStudy<O> {
    type Params = ();
    type Output = O;

    fn name(&self) -> &str {
        self.name
    }

    fn jobs(&self, _: &Manifest) -> Vec<Job<()>> {
        self.progs
            .iter()
            .map(|p| Job::new(&format!("{}{}", p.name, self.tag), &p.name, ()))
            .collect()
    }

    fn run(&self, _: &Manifest, job: &Job<()>, scratch: &Path) -> outcrop_studies::Result<O> {
        let p = self
            .progs
            .iter()
            .find(|p| p.name == job.workload)
            .ok_or_else(|| outcrop_studies::Error::UnknownWorkload(job.workload.clone()))?;
        let env = Env {
            scratch: Some(scratch.to_path_buf()),
            ..self.env.clone()
        };
        (self.run)(&env, p).map_err(|e| outcrop_studies::Error::Job(format!("{e:#}")))
    }
}

/// Runs `run` on every program of `progs` through the studies library: the outputs in
/// program order, or `None` when there is nothing more to do here.
fn sweep<O: Serialize + DeserializeOwned + Send>(
    args: &SweepOptions,
    log: &mut (dyn std::io::Write + Send),
    name: &'static str,
    tag: &'static str,
    progs: &[Prog],
    env: &Env,
    run: fn(&Env, &Prog) -> Result<O>,
) -> Result<Option<Vec<(String, O)>>> {
    let study = ProgStudy {
        name,
        progs: progs.to_vec(),
        env: env.clone(),
        tag,
        run,
    };
    let manifest = crate::sweep::manifest()?;
    let Some(records) = crate::sweep::run(&study, &manifest, args, log)? else {
        return Ok(None);
    };
    records
        .into_iter()
        .map(|r| {
            Ok((
                r.workload,
                r.output.with_context(|| format!("{}: no output", r.job))?,
            ))
        })
        .collect::<Result<_>>()
        .map(Some)
}

/// `study-brr`: prints the tables (markdown) and writes the plots.
pub fn run(
    args: Config,
    out: &mut dyn std::io::Write,
    log: &mut (dyn std::io::Write + Send),
) -> Result<()> {
    let root = crate::root();
    let root = root.canonicalize()?;
    if args.correlation_only {
        write!(out, "{}", correlation())?;
        return Ok(());
    }
    let overhead = !args.no_overhead;
    // Assembly and binaries are cached in a directory keyed on what makes them: this program
    // (the instrumentation pass is linked into it), the C sources and the compiler. A rebuilt
    // xtask, an edited workload or another compiler gets a fresh directory.
    let work = match &args.work {
        Some(w) => w.clone(),
        None => root
            .join("target/study-brr")
            .join(format!("{:016x}", cache_key(&root)?)),
    };
    std::fs::create_dir_all(&work)?;
    let work = work.canonicalize()?;
    let env = Env {
        root: root.clone(),
        work,
        cc: std::env::var("CROSS").unwrap_or_else(|_| "riscv64-linux-gnu-".into()) + "gcc",
        scratch: None,
        brr_penalty: None,
    };
    let manifest = crate::sweep::manifest()?;
    let mut progs = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(root.join("workloads/src"))?
        .filter_map(|e| e.ok())
        .filter_map(|e| Some(e.file_name().to_str()?.strip_suffix(".c")?.to_owned()))
        .collect();
    names.sort();
    for n in names {
        // its arguments, as the manifest gives them (files relative to workloads/)
        let args = manifest.get(&n).map(|w| w.args.clone()).unwrap_or_default();
        progs.push(Prog {
            src: root.join("workloads/src").join(format!("{n}.c")),
            name: n,
            args,
        });
    }
    progs.push(Prog {
        name: "resonance".into(),
        src: root.join("workloads/study/resonance.c"),
        args: Vec::new(),
    });
    let every = args.study.workloads.is_empty();
    if !every {
        for w in &args.study.workloads {
            crate::ensure!(progs.iter().any(|p| &p.name == w), "no program `{w}`");
        }
        progs.retain(|p| args.study.workloads.contains(&p.name));
    }
    if args.same_run_only {
        let Some(rs) = sweep(&args.study, log, "brr-same-run", "", &progs, &env, same_run)? else {
            return Ok(());
        };
        write!(out, "{}", same_run_table(&rs))?;
        return Ok(());
    }
    let (name, tag): (&'static str, &'static str) = if overhead {
        ("brr", "")
    } else {
        ("brr", "-no-overhead")
    };
    let run_prog: fn(&Env, &Prog) -> Result<ProgResult> = if overhead {
        |env, p| study(env, p, true)
    } else {
        |env, p| study(env, p, false)
    };
    let Some(rs) = sweep(&args.study, log, name, tag, &progs, &env, run_prog)? else {
        return Ok(());
    };
    let rs: Vec<ProgResult> = rs.into_iter().map(|(_, r)| r).collect();
    let m = if args.no_micro {
        None
    } else {
        let p = Prog {
            name: "charstat".into(),
            src: root.join("workloads/study/charstat.c"),
            args: Vec::new(),
        };
        let Some(mut m) = sweep(&args.study, log, "brr-micro", "", &[p], &env, |env, p| {
            micro(env, p, 1)
        })?
        else {
            return Ok(());
        };
        m.pop().map(|(_, m)| m)
    };
    write!(out, "{}", tables(&rs, m.as_ref()))?;
    write!(out, "{}", correlation())?;
    let svg = match args.svg_dir {
        Some(d) => Some(d),
        None if every => Some(root.join("docs/studies")),
        None => None,
    };
    if let Some(svg) = svg {
        std::fs::create_dir_all(&svg)?;
        let mut figures = vec![
            ("brr-accuracy-entries.svg", plot_accuracy(&rs, "entries")?),
            ("brr-accuracy-edges.svg", plot_accuracy(&rs, "edges")?),
        ];
        if overhead {
            figures.push(("brr-overhead.svg", plot_overhead(&rs)?));
        }
        if let Some(m) = &m {
            figures.push(("brr-micro-overhead.svg", plot_micro(m, false)?));
            figures.push(("brr-micro-cycles-per-site.svg", plot_micro(m, true)?));
        }
        for (file, text) in figures {
            std::fs::write(svg.join(file), text).with_context(|| format!("writing {file}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_studys_penalty_is_the_presets_decode_stage() {
        let c = outcrop_timing::Config::default();
        assert_eq!(c.core.brr_penalty, c.core.frontend_depth);
        assert_ne!(
            super::OLD_PENALTY,
            c.core.brr_penalty,
            "the sweep shows another point"
        );
    }
}
