//! The same small study run by the local pool and as a Slurm job array must give equal
//! tables. Not a mock: it submits to the cluster `sbatch` reaches (CI starts a one-node one
//! with `scripts/slurm-one-node.sh`). Without `sbatch`, or with no controller answering
//! (Slurm installed, no cluster started), it says so and passes, unless
//! `OUTCROP_REQUIRE_SLURM` is set (CI sets it).
//!
//! `harness = false`: this binary is also the array task (`slurm --task N --results DIR`),
//! so the test needs nothing but itself on the node.

use outcrop_run::{execute, Hooks, ProgramImage, RunConfig};
use outcrop_studies::executor::{self, Done, Mode, Sweep};
use outcrop_studies::slurm::{self, SlurmConfig};
use outcrop_studies::{Job, Manifest, ResultsDir, Study};
use std::path::{Path, PathBuf};

/// Instructions and exit status of a few short workloads, in two configurations.
struct Small;

impl Study for Small {
    type Params = bool;
    type Output = (u64, i32);

    fn name(&self) -> &str {
        "small"
    }

    fn jobs(&self, _: &Manifest) -> Vec<Job<bool>> {
        ["hello", "exitcode", "fileio"]
            .iter()
            .flat_map(|w| [false, true].map(|step| Job::new(&format!("{w}-step={step}"), w, step)))
            .collect()
    }

    fn run(
        &self,
        m: &Manifest,
        job: &Job<bool>,
        scratch: &Path,
    ) -> outcrop_studies::Result<(u64, i32)> {
        let mut c = RunConfig::new(m.spec(&job.workload, scratch)?);
        if job.params {
            c.engine = outcrop_rv::Engine::Step;
        }
        let image = ProgramImage::read(&c.program.path())?;
        let s = execute(&c, &image, Hooks::default())?;
        Ok((s.instructions, s.status().0))
    }
}

fn manifest() -> Manifest {
    Manifest::load(&outcrop_testkit::workloads()).unwrap()
}

/// The study's table, as a study prints it.
fn table(dir: &Path) -> String {
    let d = ResultsDir::new(dir, "small").unwrap();
    let records = d
        .records_of::<bool, (u64, i32), bool>(&Small.jobs(&manifest()))
        .unwrap();
    let mut t = String::from("| workload | engine | instructions | exit |\n");
    for r in records {
        let (n, code) = r.output.unwrap();
        let engine = if r.params { "step" } else { "blocks" };
        t.push_str(&format!("| {} | {engine} | {n} | {code} |\n", r.workload));
    }
    t
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // an array task
    if let Some(i) = args.iter().position(|a| a == "--task") {
        let task: usize = args[i + 1].parse().unwrap();
        let results = PathBuf::from(&args[args.iter().position(|a| a == "--results").unwrap() + 1]);
        let dir = ResultsDir::new(&results, "small").unwrap();
        let out = executor::run_task(&Small, &manifest(), &dir, task).unwrap();
        assert!(out.failed.is_empty(), "{out:?}");
        return;
    }
    // libtest-style filters and --list from `cargo test`/nextest
    if args.iter().any(|a| a == "--list") {
        if !args.iter().any(|a| a == "--ignored") {
            println!("slurm_and_local_tables_are_equal: test");
        }
        return;
    }
    let missing = if !slurm::available() {
        Some("sbatch not found")
    } else if !slurm::controller_up() {
        Some("sbatch is installed but no controller answers (`scontrol ping`)")
    } else {
        None
    };
    if let Some(why) = missing {
        if std::env::var_os("OUTCROP_REQUIRE_SLURM").is_some() {
            panic!("OUTCROP_REQUIRE_SLURM is set but {why} (scripts/slurm-one-node.sh starts a one-node cluster)");
        }
        eprintln!("slurm: {why}; the Slurm test did not run (scripts/slurm-one-node.sh starts a one-node cluster)");
        return;
    }
    let base = tempfile::Builder::new()
        .prefix("outcrop-slurm-test-")
        .tempdir_in(Path::new(env!("CARGO_TARGET_TMPDIR")))
        .unwrap();
    let local = base.path().join("local");
    let cluster = base.path().join("slurm");
    let m = manifest();
    let done = executor::sweep(
        &Small,
        &m,
        &Sweep {
            results: local.clone(),
            fresh: false,
            retry_failed: false,
            mode: Mode::Local { threads: 0 },
        },
        &mut |_| {},
    )
    .unwrap();
    assert!(
        matches!(done, Done::Complete(ref o) if o.ran == 6),
        "{done:?}"
    );
    let exe = std::env::current_exe()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let command = vec![
        exe,
        "--results".into(),
        cluster.to_string_lossy().into_owned(),
        "--task".into(),
        "{task}".into(),
    ];
    let start = std::time::Instant::now();
    let done = executor::sweep(
        &Small,
        &m,
        &Sweep {
            results: cluster.clone(),
            fresh: false,
            retry_failed: false,
            mode: Mode::Slurm {
                config: SlurmConfig::default(),
                command,
                wait: true,
                script_only: false,
            },
        },
        &mut |_| {},
    )
    .unwrap();
    assert!(
        matches!(done, Done::Complete(ref o) if o.ran == 6),
        "{done:?}"
    );
    eprintln!(
        "slurm: 6 array tasks in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let (a, b) = (table(&local), table(&cluster));
    assert_eq!(a, b, "the Slurm tables differ from the local ones");
    // the records say where they ran
    let d = ResultsDir::new(&cluster, "small").unwrap();
    for r in d.records::<bool, (u64, i32)>().unwrap() {
        assert!(r.error.is_none() && !r.host.is_empty(), "{r:?}");
    }
    // a record the array lost is run again on the next sweep, and only it
    std::fs::remove_file(d.record_path("fileio-step=true")).unwrap();
    assert_eq!(executor::unfinished(&Small, &m, &d), vec![5]);
    let again = executor::run_local(&Small, &m, &d, 1, &mut |_| {}).unwrap();
    assert_eq!((again.ran, again.resumed), (1, 5));
    assert_eq!(table(&cluster), a);
    println!("slurm_and_local_tables_are_equal: ok");
}
