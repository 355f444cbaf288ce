//! The exact profile on the bundled workloads, against references computed on the same run:
//! the instruction count, the timing model's totals, and a naive profiler that looks every
//! address up and walks an explicit stack of function names.

use crate::common;

use outcrop_events::record::{BranchKind, Control, Observer, Retire, Stamp};
use outcrop_profile::{Counts, Profile, Profiler};
use outcrop_run::{load, ProgramSpec, Run};
use outcrop_rv::symbols::Symbols;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn bin(name: &str) -> PathBuf {
    outcrop_testkit::workloads().join("bin").join(name)
}

fn command(name: &str) -> ProgramSpec {
    ProgramSpec::observed(bin(name), &format!("bin/{name}"))
}

/// The same rules as the profiler, written the slow, obvious way: a lookup per instruction
/// and a stack of names.
struct Naive {
    symbols: Symbols,
    self_insns: Vec<u64>,
    total_insns: Vec<u64>,
    mark: Vec<u64>,
    n: u64,
    stack: Vec<(u32, u64)>,
    pending: Option<BranchKind>,
    ret_addr: u64,
}

impl Naive {
    fn new(symbols: Symbols) -> Naive {
        let slots = symbols.len() + 1;
        Naive {
            symbols,
            self_insns: vec![0; slots],
            total_insns: vec![0; slots],
            mark: vec![u64::MAX; slots],
            n: 0,
            stack: Vec::new(),
            pending: None,
            ret_addr: 0,
        }
    }

    fn id(&self, pc: u64) -> u32 {
        self.symbols
            .lookup(pc)
            .map_or(self.symbols.len() as u32, |f| f.id.0)
    }

    fn name(&self, id: u32) -> String {
        self.symbols
            .function(outcrop_rv::symbols::FunctionId(id))
            .map_or("[unknown]".to_string(), |f| f.name.to_string())
    }

    fn by_name(&self, m: &[u64]) -> BTreeMap<String, u64> {
        m.iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(|(id, &n)| (self.name(id as u32), n))
            .collect()
    }
}

impl Observer for Naive {
    const RETIRE: bool = true;
    fn retire(&mut self, r: &Retire, _t: Option<&Stamp>) -> Control {
        let f = self.id(r.pc);
        match self.pending.take() {
            Some(BranchKind::Call) if self.stack.len() < outcrop_profile::MAX_DEPTH => {
                self.stack.push((f, self.ret_addr));
            }
            Some(BranchKind::Return) => {
                // frames are (function, where the caller resumes); the caller's frame is
                // the one below the frame whose return address matches
                let len = self.stack.len();
                let found = (0..len.min(outcrop_profile::RETURN_SEARCH))
                    .find(|&i| self.stack[len - 1 - i].1 == r.pc);
                let keep = len - found.map_or(1, |i| i + 1).min(len);
                self.stack.truncate(keep.max(1));
            }
            _ => {}
        }
        match self.stack.last_mut() {
            Some(top) if top.0 != f => top.0 = f,
            None => self.stack.push((f, 0)),
            _ => {}
        }
        self.self_insns[f as usize] += 1;
        for &(id, _) in &self.stack {
            if self.mark[id as usize] != self.n {
                self.mark[id as usize] = self.n;
                self.total_insns[id as usize] += 1;
            }
        }
        self.n += 1;
        if r.taken && matches!(r.transfer, Some(BranchKind::Call | BranchKind::Return)) {
            self.pending = r.transfer;
            self.ret_addr = r.pc + u64::from(r.len);
        }
        Control::Continue
    }
}

fn profile(name: &str, timing: bool) -> (Profile, u64, Option<outcrop_timing::Totals>) {
    let spec = command(name);
    let mut guest = load(&spec, Box::new(|_| {})).unwrap();
    let symbols = Symbols::from_elf(&guest.elf).unwrap();
    let config = timing.then(|| outcrop_timing::Config::preset("default").unwrap());
    let r = Run::new(&mut guest.machine)
        .timing(config)
        .profile(symbols)
        .execute()
        .unwrap();
    (r.profile.unwrap(), r.instructions, r.timing)
}

fn check_tree(p: &Profile) {
    let children = p.children();
    for (i, n) in p.nodes.iter().enumerate() {
        let mut sum = n.self_counts;
        for &c in &children[i] {
            sum.add(&p.nodes[c as usize].total_counts);
        }
        assert_eq!(sum, n.total_counts, "node {i}: total = self + children");
        if i > 0 {
            assert!((n.parent as usize) < i, "parents come first");
        }
    }
    assert_eq!(
        p.nodes[0].total_counts,
        p.self_sum(),
        "the root holds everything"
    );
    for f in &p.functions {
        assert!(
            f.total_counts.instructions >= f.self_counts.instructions,
            "{}",
            f.name
        );
        assert!(f.total_counts.instructions <= p.instructions, "{}", f.name);
    }
}

#[test]
fn self_counts_sum_to_the_instruction_count_and_match_a_naive_profiler() {
    for name in ["qsort_ints", "recursion", "strsearch", "hello"] {
        let spec = command(name);
        let mut guest = load(&spec, Box::new(|_| {})).unwrap();
        let symbols = Symbols::from_elf(&guest.elf).unwrap();
        let mut both = (Profiler::new(symbols.clone()), Naive::new(symbols));
        guest.machine.run(&mut both);
        let insns = guest.machine.instret;
        let (profiler, naive) = both;
        let p = profiler.finish_profile();
        assert_eq!(p.instructions, insns, "{name}");
        assert_eq!(
            p.self_sum().instructions,
            insns,
            "{name}: self counts sum exactly"
        );
        assert_eq!(p.folded_calls, 0, "{name}: nothing folded");
        let mine: BTreeMap<String, u64> = p
            .functions
            .iter()
            .map(|f| (f.name.clone(), f.self_counts.instructions))
            .collect();
        assert_eq!(
            mine,
            naive.by_name(&naive.self_insns),
            "{name}: self by function"
        );
        let totals: BTreeMap<String, u64> = p
            .functions
            .iter()
            .map(|f| (f.name.clone(), f.total_counts.instructions))
            .collect();
        assert_eq!(
            totals,
            naive.by_name(&naive.total_insns),
            "{name}: total by function"
        );
        let pc_sum: u64 = p.pcs.iter().map(|c| c.counts.instructions).sum();
        assert_eq!(pc_sum, insns, "{name}: per-address counts");
        check_tree(&p);
        // main is called once, through __libc_start_main, and holds most of the run
        let main = p.functions.iter().find(|f| f.name == "main").unwrap();
        assert_eq!(main.calls, 1, "{name}");
        if name != "hello" {
            assert!(main.total_counts.instructions * 2 > insns, "{name}");
        }
    }
}

#[test]
fn under_timing_cycles_and_events_sum_to_the_models_totals() {
    for name in ["ptrchase", "micro_random_branch", "matmul"] {
        let (p, insns, totals) = profile(name, true);
        let t = totals.unwrap();
        assert!(p.timed);
        let s = p.self_sum();
        assert_eq!(s.instructions, insns, "{name}");
        assert_eq!(s.cycles, t.cycles, "{name}: cycles");
        assert_eq!(s.mispredicts, t.mispredicts, "{name}: mispredictions");
        assert_eq!(s.l1i_misses, t.l1i_misses, "{name}: L1I misses");
        assert_eq!(s.l1d_misses, t.l1d_misses, "{name}: L1D misses");
        assert_eq!(
            s.l2_misses,
            t.l2_inst_misses + t.l2_data_misses,
            "{name}: L2 misses"
        );
        check_tree(&p);
        // the timeline: marks by cycles, the last at the run's counts, time always rising
        let tl = &p.timeline;
        assert!(
            tl.cycles && tl.interval == outcrop_run::DEFAULT_TIMELINE,
            "{name}"
        );
        assert_eq!(tl.marks.last().unwrap().at, s, "{name}");
        for (i, w) in tl.marks.windows(2).enumerate() {
            assert!(w[1].at.cycles > w[0].at.cycles, "{name}");
            assert!(w[1].at.instructions > w[0].at.instructions, "{name}");
            // a mark falls on the first instruction retiring at or after its due cycle (the
            // last mark is the end of the run, wherever it falls)
            if i + 2 < tl.marks.len() {
                assert!(
                    w[0].at.cycles / tl.interval < w[1].at.cycles / tl.interval,
                    "{name}"
                );
            }
        }
        assert!(
            tl.marks.len() as u64 >= t.cycles / tl.interval,
            "{name}: about one mark per interval"
        );
    }
}

#[test]
fn the_recursive_workload_builds_a_deep_tree_and_counts_recursion_once() {
    let (p, insns, _) = profile("recursion", false);
    assert!(!p.timed);
    let depth = (0..p.nodes.len() as u32)
        .map(|n| p.stack(n).len())
        .max()
        .unwrap();
    assert!(depth > 10, "depth {depth}");
    for f in &p.functions {
        assert!(f.total_counts.instructions <= insns);
    }
    let _ = Counts::default();
}

/// Debian's riscv64 cross libraries: the dynamically linked workload's sysroot.
const SYSROOT: &str = "/usr/riscv64-linux-gnu";

/// `name` to run, with the sysroot a dynamically linked workload needs (`None`: it is
/// dynamically linked and the sysroot is missing).
fn spec_with_sysroot(name: &str) -> Option<ProgramSpec> {
    let mut spec = command(name);
    if name.ends_with("_dyn") {
        if !Path::new(SYSROOT)
            .join("lib/ld-linux-riscv64-lp64d.so.1")
            .exists()
        {
            return None;
        }
        spec.sysroot = Some(SYSROOT.into());
    }
    Some(spec)
}

/// An odd timeline interval, so that marks fall inside blocks.
const TIMELINE: u64 = 97_003;

/// The timeline's marks rise by about the interval, name nodes of the tree, and end at the
/// run's counts (so the intervals sum to the run).
fn timeline_adds_up(name: &str, p: &outcrop_profile::Profile) {
    let t = &p.timeline;
    assert!(t.interval >= TIMELINE, "{name}");
    let last = t.marks.last().unwrap_or_else(|| panic!("{name}: no marks"));
    assert_eq!(last.at, p.self_sum(), "{name}");
    assert_eq!(last.at.instructions, p.instructions, "{name}");
    for (i, m) in t.marks.iter().enumerate() {
        assert!((m.node as usize) < p.nodes.len(), "{name}");
        if i + 1 < t.marks.len() {
            // untimed: every mark but the last exactly on a multiple of the interval
            assert_eq!(m.at.instructions % t.interval, 0, "{name} mark {i}");
        }
        if i > 0 {
            assert!(m.at.instructions > t.marks[i - 1].at.instructions, "{name}");
        }
    }
    assert_eq!(
        t.marks.len() as u64,
        p.instructions.div_ceil(t.interval),
        "{name}: one mark per interval and one at the end"
    );
}

/// The profile of `name` fed from basic blocks ([`Profiler::by_blocks`]) under `engine`.
fn profile_by_blocks(name: &str, engine: outcrop_rv::Engine) -> String {
    let spec = spec_with_sysroot(name).unwrap();
    let p = common::profile_on(&spec, Some(engine), |s| {
        Profiler::new(s).with_timeline(TIMELINE)
    });
    serde_json::to_string(&p).unwrap()
}

#[test]
fn the_profile_from_blocks_equals_the_profile_from_retire_records_on_every_workload() {
    let dir = outcrop_testkit::workloads().join("bin");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            (e.file_type().ok()?.is_file() && !name.contains('.') && name != "TOOLCHAIN")
                .then_some(name)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 18, "{names:?}");
    for name in &names {
        let Some(spec) = spec_with_sysroot(name) else {
            continue;
        };
        let mut guest = load(&spec, Box::new(|_| {})).unwrap();
        let symbols = Symbols::from_elf(&guest.elf).unwrap();
        let mut p = Profiler::new(symbols).with_timeline(TIMELINE);
        guest.machine.run(&mut p);
        let profile = p.finish_profile();
        timeline_adds_up(name, &profile);
        let reference = serde_json::to_string(&profile).unwrap();
        for engine in [outcrop_rv::Engine::Blocks, outcrop_rv::Engine::Jit] {
            let got = profile_by_blocks(name, engine);
            if let Some(d) = common::first_difference(&got, &reference, 80) {
                panic!("{name} under {engine:?}: {d}");
            }
        }
    }
}

/// Thread switches fall inside blocks at every quantum: the block engines hold a thread's
/// block in progress while others run, so the profile (its timeline above all) must count the
/// instructions retired before the switch when they retire, as retire records do. Several
/// quanta, timeline intervals and schedule seeds, so that switches land near marks (the
/// default schedule alone passed on one machine and failed on another).
#[test]
fn the_profile_from_blocks_equals_the_reference_under_any_schedule() {
    let mut bad = Vec::new();
    for (quantum, interval, seed) in [
        (50_000u64, 97_003u64, None),
        (13_331, 97_003, None),
        (7_919, 10_007, None),
        (50_000, 97_003, Some(3u64)),
        (20_011, 30_011, Some(7)),
    ] {
        let mut spec = command("threads");
        spec.quantum = quantum;
        spec.schedule_seed = seed;
        let run = |engine| {
            let p = common::profile_on(&spec, engine, |s| Profiler::new(s).with_timeline(interval));
            serde_json::to_string(&p).unwrap()
        };
        let reference = run(None);
        for e in [outcrop_rv::Engine::Blocks, outcrop_rv::Engine::Jit] {
            if let Some(d) = common::first_difference(&run(Some(e)), &reference, 60) {
                bad.push(format!(
                    "quantum {quantum}, interval {interval}, seed {seed:?}, {e:?}: {d}"
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}
