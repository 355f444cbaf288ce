//! The same sweep as a Slurm job array: one array task per job, each running the study's own
//! command with `--task $SLURM_ARRAY_TASK_ID` against a results directory every node can
//! reach; the tables are made from the records afterwards, as after a local run.
//!
//! [`script`] writes an `sbatch`-ready script (hand it to a real cluster as it is, or edit its
//! `#SBATCH` lines); [`submit`] runs `sbatch --parsable` (and `--wait` to block until the
//! array ends). `scripts/slurm-one-node.sh` starts a one-node cluster on 127.0.0.1 for the
//! test that holds the Slurm tables equal to the local ones.

use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where and how the array runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlurmConfig {
    /// `--partition` (default: the cluster's default).
    pub partition: Option<String>,
    /// `--time` per task (e.g. `01:00:00`).
    pub time: Option<String>,
    /// `--cpus-per-task` (default 1: a job is one machine thread, plus service threads).
    pub cpus_per_task: Option<u32>,
    /// `--mem` per task (e.g. `4G`).
    pub mem: Option<String>,
    /// At most this many tasks at once (`--array=...%N`).
    pub max_parallel: Option<usize>,
    /// Further `#SBATCH` options, verbatim (e.g. `--account=proj`).
    pub extra: Vec<String>,
}

/// The `--array` value for task indices `tasks` (ranges folded: `0-17`, `1,4-6`).
pub fn array_spec(tasks: &[usize], max_parallel: Option<usize>) -> String {
    let mut t = tasks.to_vec();
    t.sort_unstable();
    t.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let mut j = i;
        while j + 1 < t.len() && t[j + 1] == t[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            t[i].to_string()
        } else {
            format!("{}-{}", t[i], t[j])
        });
        i = j + 1;
    }
    let mut s = parts.join(",");
    if let Some(n) = max_parallel {
        s.push_str(&format!("%{n}"));
    }
    s
}

/// Quotes `s` for a POSIX shell.
fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// An `sbatch` script running `command` once per task of `tasks`, from `workdir`, with each
/// task's output in `logs/STUDY-%A_%a.out`. In `command`, the argument `{task}` becomes the
/// task's index.
pub fn script(
    study: &str,
    tasks: &[usize],
    command: &[String],
    workdir: &Path,
    logs: &Path,
    config: &SlurmConfig,
) -> String {
    let mut s = String::from("#!/bin/sh\n");
    s.push_str(&format!("#SBATCH --job-name=outcrop-{}\n", quote(study)));
    s.push_str(&format!(
        "#SBATCH --array={}\n",
        array_spec(tasks, config.max_parallel)
    ));
    s.push_str(&format!(
        "#SBATCH --output={}\n",
        quote(&logs.join(format!("{study}-%A_%a.out")).to_string_lossy())
    ));
    s.push_str(&format!(
        "#SBATCH --cpus-per-task={}\n",
        config.cpus_per_task.unwrap_or(1)
    ));
    if let Some(p) = &config.partition {
        s.push_str(&format!("#SBATCH --partition={}\n", quote(p)));
    }
    if let Some(t) = &config.time {
        s.push_str(&format!("#SBATCH --time={}\n", quote(t)));
    }
    if let Some(m) = &config.mem {
        s.push_str(&format!("#SBATCH --mem={}\n", quote(m)));
    }
    for e in &config.extra {
        s.push_str(&format!("#SBATCH {e}\n"));
    }
    s.push_str("set -eu\n");
    s.push_str(&format!("cd {}\n", quote(&workdir.to_string_lossy())));
    let cmd: Vec<String> = command
        .iter()
        .map(|a| {
            if a == "{task}" {
                "\"$SLURM_ARRAY_TASK_ID\"".to_string()
            } else {
                quote(a)
            }
        })
        .collect();
    s.push_str(&format!("exec {}\n", cmd.join(" ")));
    s
}

/// Whether `sbatch` is on the `PATH`.
pub fn available() -> bool {
    Command::new("sbatch")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether a Slurm controller answers (`scontrol ping` succeeds): `sbatch` may be installed
/// with no cluster running, and a submission then fails.
pub fn controller_up() -> bool {
    Command::new("scontrol")
        .arg("ping")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Submits the script at `path` (`sbatch --parsable`, with `--wait` when `wait`): the job id.
/// With `wait`, returns once every task has ended (a failed task is not an error here: its
/// job has an error record, or none, and [`crate::executor::unfinished`] lists it).
pub fn submit(path: &Path, wait: bool) -> Result<String> {
    let mut cmd = Command::new("sbatch");
    cmd.arg("--parsable");
    if wait {
        cmd.arg("--wait");
    }
    let out = cmd
        .arg(path)
        .output()
        .map_err(|e| Error::Slurm(format!("cannot run sbatch: {e} (is Slurm installed?)")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let id = stdout
        .lines()
        .next()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    // --wait exits non-zero when a task failed; the id was printed first
    if id.is_empty() || (!out.status.success() && !wait) {
        return Err(Error::Slurm(format!(
            "sbatch {}: {}{}",
            path.display(),
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(id)
}

/// Writes the script for `tasks` beside the results (`DIR/slurm/STUDY.sbatch`, logs in
/// `DIR/slurm/logs`): its path.
pub fn write_script(
    results: &crate::ResultsDir,
    tasks: &[usize],
    command: &[String],
    config: &SlurmConfig,
) -> Result<PathBuf> {
    let base = results
        .path()
        .parent()
        .unwrap_or(results.path())
        .join("slurm");
    let logs = base.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| Error::io(&logs, e))?;
    let workdir = std::env::current_dir().map_err(|e| Error::io(Path::new("."), e))?;
    let text = script(results.study(), tasks, command, &workdir, &logs, config);
    let path = base.join(format!("{}.sbatch", results.study()));
    std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_fold_ranges() {
        assert_eq!(array_spec(&[0, 1, 2, 3], None), "0-3");
        assert_eq!(array_spec(&[4, 1, 5, 6, 9], Some(2)), "1,4-6,9%2");
        assert_eq!(array_spec(&[7], None), "7");
    }

    #[test]
    fn scripts_quote_what_the_shell_would_split() {
        let s = script(
            "rap",
            &[0, 1],
            &[
                "/x/xtask".into(),
                "study rap".into(),
                "--task".into(),
                "{task}".into(),
            ],
            Path::new("/w d"),
            Path::new("/r/logs"),
            &SlurmConfig {
                partition: Some("p".into()),
                ..Default::default()
            },
        );
        assert!(s.contains("#SBATCH --array=0-1\n"), "{s}");
        assert!(s.contains("#SBATCH --partition=p\n"), "{s}");
        assert!(s.contains("cd '/w d'\n"), "{s}");
        assert!(
            s.contains("exec /x/xtask 'study rap' --task \"$SLURM_ARRAY_TASK_ID\"\n"),
            "{s}"
        );
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
