//! The options every study takes (`--workloads`, `--jobs`, `--results`, `--fresh`,
//! `--retry-failed`, `--slurm`…) and the one call that runs a study through
//! `outcrop_studies::executor::sweep`: locally on every core, as one Slurm array task, or as a
//! Slurm job array.

use crate::Result;
use outcrop_studies::executor::{self, Done, Mode, Sweep};
use outcrop_studies::slurm::SlurmConfig;
use outcrop_studies::{Manifest, Record, ResultsDir, Study};
use std::io::Write;
use std::path::PathBuf;

/// Options of every study.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Workloads to run (default: the compute workloads of workloads/manifest.toml).
    pub workloads: Vec<String>,
    /// Jobs at once on this machine (default: every core).
    pub jobs: usize,
    /// Where the records go (one JSON file per job, in DIR/STUDY/); a later run resumes
    /// with the jobs that have none, and directories from several machines merge by copying.
    pub results: PathBuf,
    /// Drop the study's records first and run every job.
    pub fresh: bool,
    /// Drop the failed records first, so that their jobs run again.
    pub retry_failed: bool,
    /// Run the missing jobs as a Slurm job array (one task per job, records to --results,
    /// which every node must reach), wait for it, then make the tables.
    pub slurm: bool,
    /// With --slurm: only write the sbatch script (DIR/slurm/STUDY.sbatch) for a real
    /// cluster; run the study again afterwards to make the tables from the records.
    pub slurm_script: bool,
    /// With --slurm: return once the array is queued.
    pub no_wait: bool,
    /// With --slurm: the partition.
    pub partition: Option<String>,
    /// With --slurm: the time limit per task (e.g. 01:00:00).
    pub time: Option<String>,
    /// With --slurm: memory per task (e.g. 4G).
    pub mem: Option<String>,
    /// Run only job N (what each Slurm array task does).
    pub task: Option<usize>,
    /// The command line that runs this study (the program first): with `slurm`, each array
    /// task reruns it with the Slurm options replaced by `--results DIR --task N`.
    pub command: Vec<String>,
}

impl SweepOptions {
    /// The one conversion: these options as a sweep. The Slurm command line is
    /// [`SweepOptions::command`] with the Slurm options replaced by `--task {task}`.
    fn sweep(&self) -> Result<Sweep> {
        let results = std::path::absolute(&self.results)?;
        let mode = if let Some(t) = self.task {
            Mode::Task(t)
        } else if self.slurm {
            let mut args = self.command.iter().cloned();
            let mut command: Vec<String> = args.next().into_iter().collect();
            while let Some(a) = args.next() {
                match a.as_str() {
                    "--slurm" | "--slurm-script" | "--no-wait" | "--fresh" | "--retry-failed" => {}
                    "--partition" | "--time" | "--mem" | "--results" => {
                        args.next();
                    }
                    _ if a.starts_with("--results=")
                        || a.starts_with("--partition=")
                        || a.starts_with("--time=")
                        || a.starts_with("--mem=") => {}
                    _ => command.push(a),
                }
            }
            command.extend([
                "--results".into(),
                results.to_string_lossy().into_owned(),
                "--task".into(),
                "{task}".into(),
            ]);
            Mode::Slurm {
                config: SlurmConfig {
                    partition: self.partition.clone(),
                    time: self.time.clone(),
                    mem: self.mem.clone(),
                    ..SlurmConfig::default()
                },
                command,
                wait: !self.no_wait,
                script_only: self.slurm_script,
            }
        } else {
            Mode::Local { threads: self.jobs }
        };
        Ok(Sweep {
            results,
            fresh: self.fresh,
            retry_failed: self.retry_failed,
            mode,
        })
    }
}

/// A study's records, in job order.
pub type Records<S> = Vec<Record<<S as Study>::Params, <S as Study>::Output>>;

/// The repository's workload manifest.
pub fn manifest() -> Result<Manifest> {
    let root = crate::root().join("workloads");
    Ok(Manifest::load(&root)?)
}

/// Runs `study` as `args` say; its records in job order when every job has one (the caller
/// makes its tables from them), `None` when there is nothing more to do here (a task ran, or
/// an array was queued).
pub fn run<S: Study>(
    study: &S,
    manifest: &Manifest,
    args: &SweepOptions,
    log: &mut (dyn Write + Send),
) -> Result<Option<Records<S>>> {
    let sweep = args.sweep()?;
    let name = study.name().to_string();
    let done = executor::sweep(study, manifest, &sweep, &mut |p| match p.error {
        None => note!(
            log,
            "{name}: [{}/{}] {} ({:.1} s)",
            p.done,
            p.total,
            p.job,
            p.seconds
        ),
        Some(e) => note!(
            log,
            "{name}: [{}/{}] {} FAILED: {e}",
            p.done,
            p.total,
            p.job
        ),
    })?;
    match done {
        Done::Task(o) => {
            if let Some((job, e)) = o.failed.first() {
                crate::bail!("{job}: {e}");
            }
            Ok(None)
        }
        Done::Queued { script, job } => {
            match job {
                Some(id) => note!(log, "{name}: Slurm job {id} queued ({})", script.display()),
                None => note!(log,
                    "{name}: sbatch script written to {} (submit it with `sbatch {}`, then run this command again without --slurm to make the tables)",
                    script.display(),
                    script.display()
                ),
            }
            Ok(None)
        }
        Done::Complete(o) => {
            note!(
                log,
                "{name}: {} jobs run, {} resumed from {}",
                o.ran,
                o.resumed,
                sweep.results.join(&name).display()
            );
            let dir = ResultsDir::new(&sweep.results, &name)?;
            Ok(Some(dir.records_of(&study.jobs(manifest))?))
        }
    }
}

/// Runs `study` (its workloads checked against the manifest first) and hands back each job's
/// output in job order, or `None` when there is nothing more to do here; a job without an
/// output is an error naming it.
pub fn outputs<S: Study>(
    study: &S,
    workloads: &[String],
    args: &SweepOptions,
    log: &mut (dyn Write + Send),
) -> Result<Option<Vec<S::Output>>> {
    let manifest = manifest()?;
    manifest.select(workloads)?;
    let Some(records) = run(study, &manifest, args, log)? else {
        return Ok(None);
    };
    records
        .into_iter()
        .map(|r| r.output.ok_or_else(|| crate::err!("{}: no output", r.job)))
        .collect::<Result<_>>()
        .map(Some)
}
