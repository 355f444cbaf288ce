//! The results directory of a study: `DIR/STUDY/JOB.json`, one [`Record`] per job, each
//! written to a temporary name and renamed, so a reader never sees half a record, a sweep
//! stopped midway resumes with the jobs that have no record, and the directories of several
//! machines merge by copying their files together.

use crate::job::{valid_id, Job, Record};
use crate::{Error, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The most bytes of one record read back.
const MAX_RECORD_BYTES: u64 = 256 << 20;

/// A study's results directory.
#[derive(Clone, Debug)]
pub struct ResultsDir {
    dir: PathBuf,
    study: String,
}

impl ResultsDir {
    /// `base/study`, created if missing.
    pub fn new(base: &Path, study: &str) -> Result<ResultsDir> {
        if !valid_id(study) {
            return Err(Error::Job(format!("`{study}` is not a usable study name")));
        }
        let dir = std::path::absolute(base.join(study)).map_err(|e| Error::io(base, e))?;
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        Ok(ResultsDir {
            dir,
            study: study.to_string(),
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The study's name.
    pub fn study(&self) -> &str {
        &self.study
    }

    /// Where job `id`'s record goes.
    pub fn record_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Whether job `id` has a record (succeeded or failed).
    pub fn has(&self, id: &str) -> bool {
        self.record_path(id).is_file()
    }

    /// Writes `record` atomically.
    pub fn write<P: Serialize, O: Serialize>(&self, record: &Record<P, O>) -> Result<()> {
        if !valid_id(&record.job) {
            return Err(Error::Job(format!(
                "`{}` is not a usable job id",
                record.job
            )));
        }
        let to = self.record_path(&record.job);
        let mut bytes = serde_json::to_vec(record).map_err(|e| Error::Job(e.to_string()))?;
        bytes.push(b'\n');
        let mut tmp =
            tempfile::NamedTempFile::new_in(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        tmp.write_all(&bytes).map_err(|e| Error::io(&to, e))?;
        tmp.as_file().sync_all().map_err(|e| Error::io(&to, e))?;
        tmp.persist(&to).map_err(|e| Error::io(&to, e.error))?;
        Ok(())
    }

    /// Reads job `id`'s record.
    pub fn read<P: DeserializeOwned, O: DeserializeOwned>(&self, id: &str) -> Result<Record<P, O>> {
        let path = self.record_path(id);
        let bytes = outcrop_run::files::read_bounded(&path, "result record", MAX_RECORD_BYTES)?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Record {
            path,
            detail: e.to_string(),
        })
    }

    /// Every record in the directory, sorted by job id.
    pub fn records<P: DeserializeOwned, O: DeserializeOwned>(&self) -> Result<Vec<Record<P, O>>> {
        let mut ids: Vec<String> = std::fs::read_dir(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".json")
                    .filter(|id| valid_id(id))
                    .map(str::to_string)
            })
            .collect();
        ids.sort();
        ids.iter().map(|id| self.read(id)).collect()
    }

    /// The records of `jobs`, in their order: an error names the first job without one.
    pub fn records_of<P: DeserializeOwned, O: DeserializeOwned, Q>(
        &self,
        jobs: &[Job<Q>],
    ) -> Result<Vec<Record<P, O>>> {
        jobs.iter()
            .map(|j| {
                if self.has(&j.id) {
                    self.read(&j.id)
                } else {
                    Err(Error::Job(format!(
                        "job {} has no record in {}",
                        j.id,
                        self.dir.display()
                    )))
                }
            })
            .collect()
    }

    /// Copies every record of `other` that this directory lacks (a merge of two machines'
    /// results): how many were copied. A job recorded in both keeps this directory's.
    pub fn merge_from(&self, other: &ResultsDir) -> Result<usize> {
        let mut n = 0;
        for e in std::fs::read_dir(&other.dir).map_err(|e| Error::io(&other.dir, e))? {
            let e = e.map_err(|e| Error::io(&other.dir, e))?;
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".json").filter(|id| valid_id(id)) else {
                continue;
            };
            if !self.has(id) {
                let r: Record<serde_json::Value, serde_json::Value> = other.read(id)?;
                self.write(&r)?;
                n += 1;
            }
        }
        Ok(n)
    }
}
