//! `outcrop-studies`: sweeps of workloads × configurations as data, run on every core or as a
//! Slurm job array, with their results kept as typed records.
//!
//! * [`manifest`]: the bundled workloads, written once (`workloads/manifest.toml`): name,
//!   binary, arguments, the files each reads and whether it writes next to them.
//! * [`job`]: a [`Study`] declares its jobs (a workload and the study's parameters, usually
//!   a `RunConfig` made from them) and how one job runs; a [`Record`] is one job's result.
//! * [`results`]: the results directory: one JSON record per job, written atomically, so a
//!   sweep resumes where it stopped and directories from several machines merge by copying.
//! * [`executor`]: runs a study's missing jobs on a local pool of threads (every core by
//!   default), or one job as a Slurm array task, or submits the array ([`slurm`]).
//! * [`stats`]: medians with min–max, geometric means — one implementation for every table.
//! * [`chart`]: line and bar charts as SVG strings.
//! * [`table`]: tables as data (titled, aligned columns; rows of cells), rendered as Markdown.
//!
//! # Example
//!
//! ```no_run
//! use outcrop_studies::{executor, job::{Job, Study}, manifest::Manifest, results::ResultsDir};
//!
//! struct Instructions;
//! impl Study for Instructions {
//!     type Params = ();
//!     type Output = u64;
//!     fn name(&self) -> &str { "instructions" }
//!     fn jobs(&self, m: &Manifest) -> Vec<Job<()>> {
//!         m.compute().map(|w| Job::new(&w.name, &w.name, ())).collect()
//!     }
//!     fn run(&self, m: &Manifest, job: &Job<()>, scratch: &std::path::Path)
//!         -> outcrop_studies::Result<u64> {
//!         let spec = m.spec(&job.workload, scratch)?;
//!         let config = outcrop_run::RunConfig::new(spec);
//!         let image = outcrop_run::ProgramImage::read(&config.program.path())?;
//!         Ok(outcrop_run::execute(&config, &image, Default::default())?.instructions)
//!     }
//! }
//!
//! # fn main() -> outcrop_studies::Result<()> {
//! let manifest = Manifest::load("workloads".as_ref())?;
//! let dir = ResultsDir::new("target/studies".as_ref(), "instructions")?;
//! let done = executor::run_local(&Instructions, &manifest, &dir, 0, &mut |_| {})?;
//! for r in dir.records::<(), u64>()? { println!("{}: {:?}", r.workload, r.output); }
//! # let _ = done; Ok(()) }
//! ```
//!
//! # Design constraints
//! The orchestration layer above `run` and `report`: it owns the results directory, the
//! scratch directories jobs run in and the Slurm submission (it starts `sbatch`); it does not
//! touch the terminal (progress goes to a callback). Every job runs in its own scratch
//! directory as the guest's working directory, so jobs that write beside their inputs run
//! side by side in one process.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod chart;
mod error;
pub mod executor;
pub mod job;
pub mod manifest;
pub mod results;
pub mod slurm;
pub mod stats;
pub mod table;

pub use error::{Error, Result};
pub use job::{Job, Record, Study};
pub use manifest::{Manifest, Workload};
pub use results::ResultsDir;
