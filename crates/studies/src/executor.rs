//! Running a study's jobs: [`run_local`] on a pool of threads (every core by default),
//! [`run_task`] one job by index (what a Slurm array task does), each in a scratch directory
//! of its own, each ending as a record in the results directory. Jobs that already have a
//! record are skipped, so a stopped sweep resumes; a failed job is recorded with its error
//! and listed, and the others go on.

use crate::job::{Job, Record, Study};
use crate::manifest::Manifest;
use crate::results::ResultsDir;
use crate::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// One finished job, as reported to the progress callback.
#[derive(Clone, Debug)]
pub struct Progress<'a> {
    /// Jobs finished so far in this call (this one included).
    pub done: usize,
    /// Jobs this call runs.
    pub total: usize,
    /// The job's id.
    pub job: &'a str,
    /// Its wall time.
    pub seconds: f64,
    /// Its error, if it failed.
    pub error: Option<&'a str>,
}

/// What a call ran.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// Jobs run now.
    pub ran: usize,
    /// Jobs skipped because they already had a record.
    pub resumed: usize,
    /// Jobs that failed now: id and error.
    pub failed: Vec<(String, String)>,
}

impl Outcome {
    /// `Ok` when nothing failed, else [`Error::Failed`] listing the jobs.
    pub fn check(self) -> Result<Outcome> {
        if self.failed.is_empty() {
            Ok(self)
        } else {
            Err(Error::Failed(self.failed))
        }
    }
}

/// The cores of this machine (at least 1).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The host's name, for records (`local` when it cannot be read).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "local".to_string())
}

/// Runs `job` in a fresh scratch directory and writes its record; its error, if it failed.
pub fn run_job<S: Study>(
    study: &S,
    manifest: &Manifest,
    dir: &ResultsDir,
    job: &Job<S::Params>,
) -> Result<(f64, Option<String>)> {
    let scratch = tempfile::Builder::new()
        .prefix(&format!("outcrop-{}-", dir.study()))
        .tempdir()
        .map_err(|e| Error::io(&std::env::temp_dir(), e))?;
    let start = Instant::now();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        study.run(manifest, job, scratch.path())
    }));
    let seconds = start.elapsed().as_secs_f64();
    let (output, error) = match result {
        Ok(Ok(o)) => (Some(o), None),
        Ok(Err(e)) => (None, Some(e.to_string())),
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panicked".to_string());
            (None, Some(format!("panicked: {msg}")))
        }
    };
    let record = Record {
        study: dir.study().to_string(),
        job: job.id.clone(),
        workload: job.workload.clone(),
        params: job.params.clone(),
        output,
        error: error.clone(),
        host: host_name(),
        seconds,
    };
    dir.write(&record)?;
    Ok((seconds, error))
}

/// Runs every job of `study` that has no record, on `threads` threads (0: every core),
/// calling `on_progress` after each.
pub fn run_local<S: Study>(
    study: &S,
    manifest: &Manifest,
    dir: &ResultsDir,
    threads: usize,
    on_progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<Outcome> {
    let jobs = study.jobs(manifest);
    check_ids(&jobs)?;
    let todo: Vec<&Job<S::Params>> = jobs.iter().filter(|j| !dir.has(&j.id)).collect();
    let resumed = jobs.len() - todo.len();
    let threads = if threads == 0 { cores() } else { threads }.min(todo.len().max(1));
    let next = AtomicUsize::new(0);
    let state = Mutex::new((
        Outcome {
            resumed,
            ..Outcome::default()
        },
        on_progress,
    ));
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = todo.get(k) else { return };
                match run_job(study, manifest, dir, job) {
                    Ok((seconds, error)) => {
                        let Ok(mut st) = state.lock() else { return };
                        let (out, cb) = &mut *st;
                        out.ran += 1;
                        if let Some(e) = &error {
                            out.failed.push((job.id.clone(), e.clone()));
                        }
                        let done = out.ran;
                        cb(Progress {
                            done,
                            total: todo.len(),
                            job: &job.id,
                            seconds,
                            error: error.as_deref(),
                        });
                    }
                    // the record could not be written: stop taking jobs
                    Err(e) => {
                        if let Ok(mut f) = first_error.lock() {
                            f.get_or_insert(e);
                        }
                        next.store(todo.len(), Ordering::Relaxed);
                        return;
                    }
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().ok().flatten() {
        return Err(e);
    }
    let (mut out, _) = state
        .into_inner()
        .map_err(|_| Error::Job("a worker panicked".into()))?;
    out.failed.sort();
    Ok(out)
}

/// Runs job number `index` of `study` (a Slurm array task's `SLURM_ARRAY_TASK_ID`), unless it
/// already has a record.
pub fn run_task<S: Study>(
    study: &S,
    manifest: &Manifest,
    dir: &ResultsDir,
    index: usize,
) -> Result<Outcome> {
    let jobs = study.jobs(manifest);
    check_ids(&jobs)?;
    let job = jobs.get(index).ok_or_else(|| {
        Error::Job(format!(
            "task {index}: the study has {} jobs (0 to {})",
            jobs.len(),
            jobs.len().saturating_sub(1)
        ))
    })?;
    if dir.has(&job.id) {
        return Ok(Outcome {
            resumed: 1,
            ..Outcome::default()
        });
    }
    let (_, error) = run_job(study, manifest, dir, job)?;
    Ok(Outcome {
        ran: 1,
        resumed: 0,
        failed: error.map(|e| vec![(job.id.clone(), e)]).unwrap_or_default(),
    })
}

/// The indices (in `study.jobs()`) of the jobs without a successful record: what to run
/// again after a sweep with failures.
pub fn unfinished<S: Study>(study: &S, manifest: &Manifest, dir: &ResultsDir) -> Vec<usize> {
    study
        .jobs(manifest)
        .iter()
        .enumerate()
        .filter(|(_, j)| {
            dir.read::<serde_json::Value, serde_json::Value>(&j.id)
                .map_or(true, |r| r.error.is_some() || r.output.is_none())
        })
        .map(|(i, _)| i)
        .collect()
}

/// Drops the failed records of `study` so that the next run retries them: how many.
pub fn forget_failed<S: Study>(study: &S, manifest: &Manifest, dir: &ResultsDir) -> usize {
    let jobs = study.jobs(manifest);
    let mut n = 0;
    for i in unfinished(study, manifest, dir) {
        if let Some(j) = jobs.get(i) {
            if std::fs::remove_file(dir.record_path(&j.id)).is_ok() {
                n += 1;
            }
        }
    }
    n
}

fn check_ids<P>(jobs: &[Job<P>]) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for j in jobs {
        if !crate::job::valid_id(&j.id) {
            return Err(Error::Job(format!("`{}` is not a usable job id", j.id)));
        }
        if !seen.insert(j.id.as_str()) {
            return Err(Error::Job(format!("job id `{}` is used twice", j.id)));
        }
    }
    Ok(())
}

/// How a sweep runs.
#[derive(Clone, Debug)]
pub enum Mode {
    /// Every missing job here, on this many threads (0: every core).
    Local {
        /// Threads.
        threads: usize,
    },
    /// Job number N only (inside a Slurm array task).
    Task(usize),
    /// Every missing job as a Slurm array: write the script, submit it, and (with `wait`)
    /// block until it ends. `command` runs one task (`{task}` stands for its index).
    Slurm {
        /// Where and how.
        config: crate::slurm::SlurmConfig,
        /// The study's own command line with `--task {task}`.
        command: Vec<String>,
        /// Wait for the array to end (else return once it is queued).
        wait: bool,
        /// Only write the script (`sbatch`-ready), do not submit.
        script_only: bool,
    },
}

/// A sweep: where its records go and how it runs.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// The base results directory (the study's records go in `results/STUDY/`).
    pub results: std::path::PathBuf,
    /// Drop every record first.
    pub fresh: bool,
    /// Drop failed records first, so that their jobs run again.
    pub retry_failed: bool,
    /// How.
    pub mode: Mode,
}

/// What a sweep said it did, for the caller to print.
#[derive(Clone, Debug, PartialEq)]
pub enum Done {
    /// Every job has a successful record: make the tables.
    Complete(Outcome),
    /// A task ran (inside an array): nothing more to do here.
    Task(Outcome),
    /// The array was submitted without waiting, or only its script written: its path and
    /// the Slurm job id.
    Queued {
        /// The `sbatch` script.
        script: std::path::PathBuf,
        /// The job id (`None`: not submitted).
        job: Option<String>,
    },
}

/// Runs `study` as `sweep` says. After a local run or a waited array, every job must have a
/// successful record: otherwise [`Error::Failed`] lists those that do not (run again with
/// `retry_failed` to retry them; the others are kept).
pub fn sweep<S: Study>(
    study: &S,
    manifest: &Manifest,
    sweep: &Sweep,
    on_progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<Done> {
    let dir = ResultsDir::new(&sweep.results, study.name())?;
    if sweep.fresh && !matches!(sweep.mode, Mode::Task(_)) {
        let p = dir.path().to_path_buf();
        std::fs::remove_dir_all(&p).map_err(|e| Error::io(&p, e))?;
        std::fs::create_dir_all(&p).map_err(|e| Error::io(&p, e))?;
    }
    if sweep.retry_failed && !matches!(sweep.mode, Mode::Task(_)) {
        forget_failed(study, manifest, &dir);
    }
    let outcome = match &sweep.mode {
        Mode::Task(i) => return Ok(Done::Task(run_task(study, manifest, &dir, *i)?)),
        Mode::Local { threads } => run_local(study, manifest, &dir, *threads, on_progress)?,
        Mode::Slurm {
            config,
            command,
            wait,
            script_only,
        } => {
            let jobs = study.jobs(manifest);
            check_ids(&jobs)?;
            let missing: Vec<usize> = (0..jobs.len()).filter(|&i| !dir.has(&jobs[i].id)).collect();
            let resumed = jobs.len() - missing.len();
            if missing.is_empty() {
                Outcome {
                    resumed,
                    ..Outcome::default()
                }
            } else {
                let script = crate::slurm::write_script(&dir, &missing, command, config)?;
                if *script_only {
                    return Ok(Done::Queued { script, job: None });
                }
                let id = crate::slurm::submit(&script, *wait)?;
                if !*wait {
                    return Ok(Done::Queued {
                        script,
                        job: Some(id),
                    });
                }
                Outcome {
                    ran: missing.len(),
                    resumed,
                    failed: Vec::new(),
                }
            }
        }
    };
    // every job must now have a successful record
    let jobs = study.jobs(manifest);
    let mut failed: Vec<(String, String)> = unfinished(study, manifest, &dir)
        .into_iter()
        .filter_map(|i| jobs.get(i))
        .map(|j| {
            let why = match dir.read::<serde_json::Value, serde_json::Value>(&j.id) {
                Ok(r) => r.error.unwrap_or_else(|| "no output".into()),
                Err(_) => "no record (the task did not finish: see its Slurm log)".into(),
            };
            (j.id.clone(), why)
        })
        .collect();
    failed.sort();
    if failed.is_empty() {
        Ok(Done::Complete(outcome))
    } else {
        Err(Error::Failed(failed))
    }
}
