//! What every benchmark shares: its options (`--runs`, `--workloads`), the workloads' command
//! lines (from workloads/manifest.toml), one way to time a process, and the `median
//! (min–max)` cells every table prints (`outcrop_studies::stats`).

use crate::{Context, Result};
use outcrop_studies::stats::Spread;
use outcrop_studies::Manifest;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Options of every benchmark.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Timed runs of each configuration (alternating, so that drift hits each alike).
    pub runs: usize,
    /// Workloads (default: the compute workloads of workloads/manifest.toml).
    pub workloads: Vec<String>,
}

impl BenchOptions {
    /// The workloads' names, checked against the manifest.
    pub fn names(&self) -> Result<Vec<String>> {
        let m = crate::sweep::manifest()?;
        let mut names: Vec<String> = m
            .select(&self.workloads)?
            .iter()
            .map(|w| w.name.clone())
            .collect();
        if self.workloads.is_empty() {
            names.sort();
        }
        Ok(names)
    }

    /// `--runs`, at least `min`.
    pub fn runs(&self, min: usize) -> usize {
        self.runs.max(min).max(1)
    }
}

/// The manifest's arguments of workload `name` (e.g. fileio's `src/fileio.c`), relative to
/// the workloads directory.
pub fn guest_args(name: &str) -> Result<Vec<String>> {
    Ok(manifest()?.get(name)?.args.clone())
}

/// Copies every file the workloads read (their `reads` in the manifest) into `dir`, under the
/// same relative paths, for runs made in `dir` instead of the workloads directory.
pub fn stage_inputs(dir: &Path) -> Result<()> {
    let m = manifest()?;
    for w in &m.workloads {
        for r in &w.reads {
            let to = dir.join(r);
            if let Some(d) = to.parent() {
                std::fs::create_dir_all(d)?;
            }
            std::fs::copy(m.root.join(r), &to)
                .with_context(|| format!("copying {} for {}", r.display(), w.name))?;
        }
    }
    Ok(())
}

/// Whether workload `name` writes in its working directory (it needs `--allow-rw .`).
pub fn writes(name: &str) -> Result<bool> {
    Ok(manifest()?.get(name)?.writes)
}

/// The repository's manifest.
pub fn manifest() -> Result<Manifest> {
    crate::sweep::manifest()
}

/// Runs `cmd` with its output discarded: its wall seconds; an error names the command and
/// how it ended.
pub fn time(cmd: &mut Command) -> Result<f64> {
    let t = Instant::now();
    let st = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| format!("running {cmd:?}"))?;
    let secs = t.elapsed().as_secs_f64();
    ensure!(st.success(), "{cmd:?}: {st}");
    Ok(secs)
}

/// The CPU seconds (user and system) of this process's waited-for children so far, from
/// `/proc/self/stat` (`cutime`, `cstime`: every thread of each child, counted when it is
/// reaped), in Linux's user clock ticks of 1/100 s; `None` where there is no such file.
fn children_cpu() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // the command name is in parentheses and may hold spaces: the fields follow its `)`
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
    // fields 16 and 17 of the line; field 3 (the state) is the first after `)`
    Some((ticks(13)? + ticks(14)?) / 100.0)
}

/// [`time`], with the command's CPU seconds (all its threads, user and system; 0.01 s
/// resolution, see `children_cpu`).
pub fn time_cpu(cmd: &mut Command) -> Result<(f64, f64)> {
    let before = children_cpu();
    let wall = time(cmd)?;
    let cpu = match (before, children_cpu()) {
        (Some(a), Some(b)) => b - a,
        _ => f64::NAN,
    };
    Ok((wall, cpu))
}

/// `outcrop ARGS --deterministic --allow-rw . -- bin/NAME [its arguments]` in the workloads
/// directory: its wall seconds.
pub fn outcrop_on(outcrop: &Path, workloads: &Path, args: &[&str], name: &str) -> Result<f64> {
    time(
        Command::new(outcrop)
            .current_dir(workloads)
            .args(args)
            .args(["--deterministic", "--allow-rw", ".", "--"])
            .arg(format!("bin/{name}"))
            .args(guest_args(name)?),
    )
    .with_context(|| format!("{name}: {args:?}"))
}

/// `median (min–max)` with `digits` decimals (`–` for no values).
pub fn mm(v: &[f64], digits: usize) -> String {
    Spread::of(v).map_or_else(|| "–".into(), |s| s.show(digits))
}

/// The median of the per-run ratios `a[i] / b[i]` (runs alternate, so run i of each is
/// paired) and the cell `m× (lo–hi)`.
pub fn ratio(a: &[f64], b: &[f64]) -> (f64, String) {
    let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    match Spread::of(&r) {
        Some(s) => (
            s.median,
            format!("{:.2}× ({:.2}–{:.2})", s.median, s.min, s.max),
        ),
        None => (0.0, "–".into()),
    }
}

/// The median of `v` (0 when empty).
pub fn median(v: &[f64]) -> f64 {
    outcrop_studies::stats::median(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_child_is_charged_its_cpu_time_and_an_idle_one_none() {
        // a shell loop that keeps one core busy for a few tenths of a second
        let busy = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done";
        let (wall, cpu) = time_cpu(Command::new("sh").args(["-c", busy])).unwrap();
        assert!(cpu >= 0.05, "wall {wall}, cpu {cpu}");
        assert!(cpu <= wall + 0.02, "one thread: wall {wall}, cpu {cpu}");
        let (wall, cpu) = time_cpu(Command::new("sleep").arg("0.2")).unwrap();
        assert!(wall >= 0.2 && cpu <= 0.02, "wall {wall}, cpu {cpu}");
    }
}
