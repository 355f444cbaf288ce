//! The one way up, as a library user takes it: a `RunConfig` with every mechanism, one
//! `ProgramImage`, `run::execute`, `RunReport::new`, the report directory's files. The program
//! is read once and each view of it is made once.

use outcrop_rap::observe::{RapSpec, Stream};
use outcrop_report::{FileNames, RunReport};
use outcrop_run::{execute, Hooks, ProgramImage, ProgramSpec, RpaConfig, RunConfig, TagPlace};
use std::path::{Path, PathBuf};

fn workload(name: &str) -> PathBuf {
    outcrop_testkit::workloads().join("bin").join(name)
}

fn every_mechanism(path: &Path) -> RunConfig {
    let mut c = RunConfig::new(ProgramSpec::observed(path, "hashtable"));
    c.timing = Some(outcrop_timing::Config::preset("default").unwrap());
    c.classes = true;
    c.profile = true;
    c.rap = Some(RapSpec::new(
        &[Stream::Block, Stream::Pc],
        outcrop_rap::Config::default(),
        true,
    ));
    c.paths = vec![c.lbr(16, Some(100_000))];
    c.wpp = Some(outcrop_run::CaptureOptions::default());
    let query = "for opBRANCH * every 16 collect pc misc;\nsend 1 stop;\n";
    let program = outcrop_rpa::parse(query)
        .and_then(|p| outcrop_rpa::assemble(&p))
        .unwrap();
    let mut rpa = RpaConfig::new(program);
    rpa.tags.push((TagPlace::Function("main".into()), 1));
    c.rpa = Some(rpa);
    c
}

#[test]
fn a_composed_run_reads_the_program_once_and_makes_each_view_once() {
    let path = workload("hashtable");
    let config = every_mechanism(&path);
    let image = ProgramImage::read(&path).unwrap();
    let mut wpp = Vec::new();
    let hooks = Hooks {
        wpp_sink: Some(Box::new(&mut wpp)),
        ..Hooks::default()
    };
    let s = execute(&config, &image, hooks).unwrap();
    let report = RunReport::new(&s, &image, FileNames::default()).unwrap();
    let files = report.directory_files();
    let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
    for n in [
        "rap.json",
        "wpp.json",
        "paths.json",
        "rpa.json",
        "profile.json",
        "report.html",
        "run.json",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    assert!(!wpp.is_empty(), "the capture wrote nothing");
    assert!(
        report.fdata.is_some(),
        "the edges service gives BOLT's profile"
    );
    let p = image.parses();
    assert_eq!(
        (
            p.reads,
            p.symbols,
            p.program_id,
            p.tags,
            p.lines,
            p.loads,
            p.data_symbols
        ),
        (1, 1, 1, 1, 1, 1, 0),
        "{p:?}"
    );
}

#[test]
fn the_summaries_are_the_mechanisms_own_results() {
    let path = workload("qsort_ints");
    let mut config = RunConfig::new(ProgramSpec::observed(&path, "qsort_ints"));
    config.classes = true;
    config.paths = vec![config.lbr(16, Some(50_000))];
    let image = ProgramImage::read(&path).unwrap();
    let s = execute(&config, &image, Hooks::default()).unwrap();
    assert_eq!(s.status(), (0, "exited".to_string()));
    assert_eq!(s.classes.unwrap().iter().sum::<u64>(), s.instructions);
    let samples = &s.samples[0];
    assert_eq!(samples.meta.program_id, image.program_id().unwrap());
    assert_eq!(samples.meta.instructions, s.instructions);
    // the same run through the Run builder gives the same samples
    let mut guest = outcrop_run::load(&config.program, Box::new(|_| {})).unwrap();
    let r = outcrop_run::Run::new(&mut guest.machine)
        .paths(config.paths.clone())
        .execute()
        .unwrap();
    let mut unit = r.paths.unwrap();
    let direct = unit
        .units
        .remove(0)
        .into_samples(&s.program, unit.instructions, unit.cycles);
    assert_eq!(direct.traces, samples.traces);
    assert!(s.ending().is_none());
}

#[test]
fn a_bare_run_makes_no_view_of_the_program() {
    // `outcrop exec` of a large program must not pay for its symbols or a hash of its code
    let path = workload("qsort_ints");
    let image = ProgramImage::read(&path).unwrap();
    let config = RunConfig::new(ProgramSpec::observed(&path, "qsort_ints"));
    let s = execute(&config, &image, Hooks::default()).unwrap();
    assert_eq!(s.status(), (0, "exited".to_string()));
    let p = image.parses();
    assert_eq!(
        (p.reads, p.symbols, p.program_id, p.tags, p.lines, p.loads),
        (1, 0, 0, 0, 0, 1),
        "{p:?}"
    );
}

#[test]
fn a_config_that_cannot_run_is_refused_before_the_program_starts() {
    let path = workload("hello");
    let image = ProgramImage::read(&path).unwrap();
    let mut c = RunConfig::new(ProgramSpec::observed(&path, "hello"));
    let mut spec = RapSpec::new(&[Stream::Pc], outcrop_rap::Config::default(), false);
    spec.hot = 0.0;
    c.rap = Some(spec);
    let e = execute(&c, &image, Hooks::default()).err().unwrap();
    assert!(e.to_string().contains("--hot"), "{e}");
    // a capture with nowhere to write
    let mut c = RunConfig::new(ProgramSpec::observed(&path, "hello"));
    c.wpp = Some(outcrop_run::CaptureOptions::default());
    let e = execute(&c, &image, Hooks::default()).err().unwrap();
    assert!(e.to_string().contains("whole-program capture"), "{e}");
    // a tag on a function the program lacks names it
    let mut c = RunConfig::new(ProgramSpec::observed(&path, "hello"));
    let program = outcrop_rpa::parse("for opBRANCH * always collect pc misc;\nsend 1 stop;\n")
        .and_then(|p| outcrop_rpa::assemble(&p))
        .unwrap();
    let mut rpa = RpaConfig::new(program);
    rpa.tags.push((TagPlace::Function("no_such_fn".into()), 2));
    c.rpa = Some(rpa);
    let e = execute(&c, &image, Hooks::default()).err().unwrap();
    assert!(e.to_string().contains("no_such_fn"), "{e}");
    assert_eq!(image.parses().loads, 0, "nothing was loaded");
}

#[test]
fn code_is_read_from_the_image_without_a_machine() {
    let path = workload("qsort_ints");
    let image = ProgramImage::read(&path).unwrap();
    let main = image.symbols().unwrap().named("main").unwrap();
    let dis = image.disassemble(main.start, 8);
    assert_eq!(dis.len(), 8, "{dis:?}");
    assert!(dis[0].starts_with(&format!("{:#x}: ", main.start)));
    // an address outside the file's code
    assert_eq!(image.disassemble(0x10, 4), vec!["0x10: <not mapped>"]);
    assert_eq!(image.branch_targets(0x10), None);
    assert_eq!(image.parses().loads, 0);
}
