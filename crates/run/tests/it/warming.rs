//! Functional warming from compiled code against warming from retire records (issue 54): the
//! timing model warmed over the same instructions of a bundled workload on the compiling tier
//! (block runs with their addresses) and on the single-step interpreter (a retire record per
//! instruction) is the same model, caches, TLBs, predictors and all, at several points of a
//! run, on static, dynamically linked and threaded programs.

use outcrop_run::{load, ProgramSpec};
use outcrop_timing::{Config, Model, Warming};

/// `name`'s model after warming up to each of `stops` instructions on `engine`.
fn warmed(name: &str, engine: outcrop_rv::Engine, stops: &[u64]) -> Vec<Model> {
    let bin = outcrop_testkit::workloads().join("bin").join(name);
    let mut spec = ProgramSpec::observed(bin, &format!("bin/{name}"));
    if name.ends_with("_dyn") {
        spec.sysroot = Some("/usr/riscv64-linux-gnu".into());
    }
    let mut guest = load(&spec, Box::new(|_| {})).unwrap();
    let m = &mut guest.machine;
    m.engine = engine;
    // compiled on the machine's thread: which blocks run compiled is the same every run
    m.jit_background = false;
    let mut warming = Warming {
        model: Model::new(&Config::default()),
    };
    let mut models = Vec::new();
    for &stop in stops {
        m.max_insns = stop;
        m.run(&mut warming);
        models.push(warming.model.clone());
    }
    models
}

#[test]
fn warming_from_compiled_code_leaves_the_model_that_retire_records_leave() {
    let stops = [150_000, 400_000, 1_500_000];
    for name in ["lz", "graph_bfs", "threads", "strsearch_dyn", "fft"] {
        let want = warmed(name, outcrop_rv::Engine::Step, &stops);
        let got = warmed(name, outcrop_rv::Engine::Jit, &stops);
        for ((w, g), stop) in want.iter().zip(&got).zip(stops) {
            assert!(
                w == g,
                "{name}: the models differ after {stop} instructions"
            );
        }
        // (the comparison can fail: warming goes on changing the model)
        assert!(got[0] != got[2], "{name}: warming changed nothing");
        // warming counts nothing: the totals stay those of a cold model
        assert_eq!(got[2].totals().instructions, 0, "{name}");
    }
}
