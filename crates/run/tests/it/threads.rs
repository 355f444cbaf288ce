//! Every mechanism with threads, against the exact per-thread reference of the same run: the
//! whole-program capture replays each thread's own block sequence (paths never span a
//! switch), threaded and inline, and the exact profile's per-thread counts equal the
//! machine's.

use outcrop_events::record::{Control, Observer};
use outcrop_run::capture::{self, CaptureOptions};
use outcrop_run::{load, ProgramSpec};
use outcrop_strata::{Replay, RunInfo, WppFile};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn threads_workload() -> PathBuf {
    outcrop_testkit::workload("threads")
}

/// Each thread's basic blocks, in its order (the exact reference).
#[derive(Default)]
struct PerThread {
    current: u32,
    blocks: BTreeMap<u32, Vec<u64>>,
}

impl Observer for PerThread {
    const BLOCKS: bool = true;
    fn block(&mut self, start: u64, _insns: u32) -> Control {
        self.blocks.entry(self.current).or_default().push(start);
        Control::Continue
    }
    fn thread(&mut self, index: u32) -> Control {
        self.current = index;
        Control::Continue
    }
}

#[test]
fn whole_program_paths_replay_every_thread_exactly() {
    for threaded in [false, true] {
        let mut spec = ProgramSpec::observed(threads_workload(), "bin/threads");
        spec.quantum = 3_001; // switches land inside loops and blocks
        let mut guest = load(&spec, Box::new(|_| {})).unwrap();
        let opts = CaptureOptions {
            threaded,
            ..CaptureOptions::default()
        };
        let mut reference = PerThread::default();
        let captured = std::thread::scope(|scope| {
            let mut stage =
                capture::start(scope, Vec::new(), opts, RunInfo::default(), true).unwrap();
            let outcome = guest.machine.run(&mut (&mut stage.front, &mut reference));
            stage.front.finish();
            stage.finish(&outcome, Vec::new()).unwrap()
        });
        assert!(guest.machine.context_switches() > 100);
        let f = WppFile::parse(&captured.writer).unwrap();
        assert!(f.stats.build.thread_marks > 100, "{:?}", f.stats.build);
        let mut replayed: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        let mut r = Replay::new(&f);
        while let Some(p) = r.next_path() {
            replayed.entry(r.thread()).or_default().extend_from_slice(p);
        }
        assert_eq!(replayed.len(), 5, "the main thread and four workers");
        for (t, want) in &reference.blocks {
            assert!(
                replayed.get(t) == Some(want),
                "thread {t} (threaded capture: {threaded}): replayed blocks differ"
            );
        }
    }
}

#[test]
fn rap_pc_and_block_trees_from_blocks_equal_those_from_retire_records() {
    // RapProfiler::by_blocks feeds the pc and block streams from basic blocks in retire order
    // (what `outcrop run --rap pc,block` does untimed): the same trees, per thread too, as
    // from retire records on the single-step interpreter, even stopped mid-block at a limit
    use outcrop_rap::observe::{RapProfiler, Stream, StreamProfile};
    let spec = ProgramSpec::observed(threads_workload(), "bin/threads");
    let config = outcrop_rap::Config::default();
    let dump = |ps: &[StreamProfile]| {
        ps.iter()
            .map(|p| {
                let t = &p.tree;
                (
                    t.n(),
                    t.ascii_dump(),
                    p.max_nodes(),
                    p.mean_nodes().to_bits(),
                )
            })
            .collect::<Vec<_>>()
    };
    let trees = |by_blocks: bool| {
        let mut guest = load(&spec, Box::new(|_| {})).unwrap();
        guest.machine.max_insns = 3_000_017;
        let mut rap = RapProfiler::new(&[Stream::Pc, Stream::Block], &config, true).per_thread();
        if by_blocks {
            let mut obs = rap.by_blocks();
            guest.machine.run(&mut obs);
            guest.machine.flush_blocks(&mut obs);
        } else {
            guest.machine.run(&mut rap);
            guest.machine.flush_blocks(&mut rap);
        }
        rap.finish_trees().unwrap();
        let threads: Vec<_> = rap.threads.iter().map(|(t, ps)| (*t, dump(ps))).collect();
        (dump(&rap.profiles), threads)
    };
    let (retired, blocks) = (trees(false), trees(true));
    assert!(retired.1.len() > 1, "several threads ran");
    assert!(retired == blocks, "the trees differ");
}

#[test]
fn rap_per_thread_trees_hold_each_threads_events_exactly() {
    use outcrop_rap::observe::{RapProfiler, Stream};
    let spec = ProgramSpec::observed(threads_workload(), "bin/threads");
    let mut guest = load(&spec, Box::new(|_| {})).unwrap();
    let config = outcrop_rap::Config::default();
    let mut rap = RapProfiler::new(&[Stream::Pc, Stream::Block], &config, true).per_thread();
    guest.machine.run(&mut rap);
    rap.finish_trees().unwrap();
    let stats = guest.machine.thread_stats();
    assert_eq!(rap.threads.len(), stats.len());
    for s in &stats {
        let profiles = &rap.threads[&s.index];
        for p in profiles {
            // the pc stream counts instructions, the block stream weighs blocks by theirs
            assert_eq!(
                p.tree.n(),
                s.instructions,
                "thread {} {}",
                s.index,
                p.stream
            );
            assert_eq!(p.exact.as_ref().unwrap().n(), s.instructions);
        }
    }
    let whole: u64 = rap.profiles[0].tree.n();
    assert_eq!(whole, guest.machine.instret);
}
