//! A study as data: its jobs (a workload and the study's parameters) and how one job runs;
//! a [`Record`] is one job's outcome, the unit the results directory stores.

use crate::manifest::Manifest;
use crate::Result;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One job of a study.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job<P> {
    /// Unique within the study and stable across runs (the record's file name): e.g.
    /// `hashtable-eps0.01`. Letters, digits, `-`, `_`, `.` and `=`.
    pub id: String,
    /// The workload it runs.
    pub workload: String,
    /// The study's parameters for it.
    pub params: P,
}

impl<P> Job<P> {
    /// A job.
    pub fn new(id: &str, workload: &str, params: P) -> Job<P> {
        Job {
            id: id.to_string(),
            workload: workload.to_string(),
            params,
        }
    }
}

/// A sweep: which jobs, and what one job does. `jobs` must be a pure function of the study
/// and the manifest (a Slurm array task recomputes the list to find its job by index).
pub trait Study: Sync {
    /// One job's parameters (recorded with its result).
    type Params: Serialize + DeserializeOwned + Clone + Send + Sync;
    /// What one job produces (the record's typed payload).
    type Output: Serialize + DeserializeOwned + Send;

    /// The study's name (its results directory).
    fn name(&self) -> &str;

    /// Every job, in a fixed order.
    fn jobs(&self, manifest: &Manifest) -> Vec<Job<Self::Params>>;

    /// Runs one job with `scratch` (empty, its own) as the guest's working directory.
    fn run(
        &self,
        manifest: &Manifest,
        job: &Job<Self::Params>,
        scratch: &Path,
    ) -> Result<Self::Output>;
}

/// One job's outcome, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record<P, O> {
    /// The study.
    pub study: String,
    /// The job's id.
    pub job: String,
    /// The workload.
    pub workload: String,
    /// The job's parameters.
    pub params: P,
    /// What it produced (`None` when it failed).
    pub output: Option<O>,
    /// Why it failed.
    pub error: Option<String>,
    /// The host it ran on (`hostname`, or `local`).
    pub host: String,
    /// Seconds the job took, wall clock, on that host.
    pub seconds: f64,
}

/// Whether `id` is a usable job id (it names a file).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '='))
}
