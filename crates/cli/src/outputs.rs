//! Where one run's results go, and the run that makes them: the console report (stderr,
//! stdout or a file), the whole-program capture, the samples file, BOLT's `.fdata`, the report
//! directory; the machine run with a spinner, the interrupt flag and the console's hooks; then
//! the one way up (summaries → `RunReport` → files).

use crate::console::{console_hooks, print_timing, read_image, report_ending};
use crate::files::{check_output, write_output, write_report_file};
use crate::{refuse, Doing, Result};
use outcrop_report::html::IndexRow;
use outcrop_report::run_dir::SuiteEntry;
use outcrop_report::{FileNames, RunReport};
use outcrop_run::{ProgramImage, RunConfig, RunSummaries};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path`, a file of a report directory Outcrop owns: atomically, and a
/// symlink at the name is replaced, not followed (a directory may be an untrusted checkout).
pub fn save_in_report(path: &Path, bytes: &[u8]) -> Result<()> {
    write_report_file(path, |f| {
        f.write_all(bytes)
            .doing(|| format!("writing {}", path.display()))
    })
}

/// Writes `bytes` to `path` (atomically; see [`crate::files`]).
pub fn save(path: &Path, bytes: &[u8]) -> Result<()> {
    write_output(path, |f| {
        f.write_all(bytes)
            .doing(|| format!("writing {}", path.display()))
    })
}

/// The run's input among the files it writes beside: the program.
pub fn program_input(config: &RunConfig) -> Vec<&Path> {
    config
        .program
        .command
        .first()
        .map(Path::new)
        .into_iter()
        .collect()
}

/// Where the console report (the profile, then RAP; or JSON) goes.
pub enum Console {
    /// The default: stdout belongs to the guest.
    Stderr,
    /// `-o -`.
    Stdout,
    /// `-o FILE`.
    File(PathBuf),
}

/// Where one program's results go.
pub struct Outputs {
    /// Where the console report goes.
    pub console: Console,
    /// The console report as JSON.
    pub json: bool,
    /// The whole-program capture's `.wpp` file (written while the guest runs).
    pub wpp: Option<PathBuf>,
    /// The branch-record unit's samples file.
    pub samples: Option<PathBuf>,
    /// The report directory's staging directory (its files go there).
    pub report: Option<PathBuf>,
    /// BOLT's `.fdata` from an RPA edges query.
    pub fdata: Option<PathBuf>,
    /// A spinner on a terminal while the guest runs.
    pub progress: bool,
    /// (staging, final): the report directory is being written in `staging`, and every path
    /// under it is named in messages and pages by its place under `final`.
    pub shown: Option<(PathBuf, PathBuf)>,
}

impl Outputs {
    /// `p` as a person should see it: under the final report directory, not the staging one.
    pub fn show(&self, p: &Path) -> PathBuf {
        match &self.shown {
            Some((staging, last)) => match p.strip_prefix(staging) {
                Ok(rel) => last.join(rel),
                Err(_) => p.to_path_buf(),
            },
            None => p.to_path_buf(),
        }
    }

    /// Checks every output before the run starts (the report directory is staged already).
    pub fn check(&self, config: &RunConfig) -> Result<()> {
        let inputs = program_input(config);
        let report_dirs: Vec<&Path> = self.shown.iter().map(|(_, last)| last.as_path()).collect();
        let console = match &self.console {
            Console::File(f) => Some(f),
            _ => None,
        };
        let outputs: Vec<&Path> = [
            console,
            self.wpp.as_ref(),
            self.samples.as_ref(),
            self.fdata.as_ref(),
        ]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect();
        for p in &outputs {
            check_output(p)?;
        }
        crate::files::distinct_outputs(&inputs, &outputs, &report_dirs)
    }

    /// Writes the console report where it goes.
    pub fn console(&self, text: &str) -> Result<()> {
        let bytes = text.as_bytes();
        match &self.console {
            Console::Stderr => {
                let mut e = std::io::stderr().lock();
                e.write_all(bytes).doing(|| "cannot write stderr".into())?;
                e.flush().doing(|| "cannot write stderr".into())?;
            }
            Console::Stdout => {
                let mut o = std::io::stdout().lock();
                o.write_all(bytes).doing(|| "cannot write stdout".into())?;
                o.flush().doing(|| "cannot write stdout".into())?;
            }
            Console::File(f) => save(f, bytes)?,
        }
        Ok(())
    }
}

/// A spinner on stderr while the guest runs (only when stderr is a terminal).
pub fn progress_bar(wanted: bool) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    (wanted && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar
    })
}

/// Runs `config` once and writes what it made to `out`: the one way up (image → execute →
/// summaries → reports → files).
pub fn profile(config: &RunConfig, out: &Outputs) -> Result<(SuiteEntry, IndexRow)> {
    out.check(config)?;
    let image = read_image(&config.program)?;
    let summaries = execute(config, &image, out)?;
    // after the load: a file the loader refuses is reported once, by the loader
    if let Err(e) = image.symbols() {
        eprintln!(
            "outcrop: warning: no function names (the profile puts everything in [unknown]): {e}"
        );
    }
    report_ending(&summaries);
    if let Some(t) = &summaries.timing {
        print_timing(t);
    }
    let names = FileNames {
        samples: out.samples.as_deref().map(|p| out.show(p)),
        wpp: out.wpp.as_deref().map(|p| out.show(p)),
        report_dir: out.report.as_deref().map(|p| out.show(p)),
        program: std::fs::canonicalize(image.path()).ok(),
    };
    let report = RunReport::new(&summaries, &image, names)?;
    for w in &report.warnings {
        eprintln!("outcrop: warning: {w}");
    }
    out.console(&report.console(out.json))?;
    write_mechanism_files(&summaries, &report, out)?;
    if let Some(dir) = &out.report {
        for (name, bytes) in report.directory_files() {
            save_in_report(&dir.join(name), &bytes)?;
        }
    }
    Ok((report.suite_entry(), report.index_row()))
}

/// Runs the machine with the progress bar, the interrupt flag, the console's warnings and
/// the `.wpp` file (committed only when the capture finished).
pub fn execute(config: &RunConfig, image: &ProgramImage, out: &Outputs) -> Result<RunSummaries> {
    let bar = progress_bar(out.progress);
    let mut on_progress = |p: outcrop_run::Progress| {
        if let Some(bar) = &bar {
            let secs = p.elapsed.as_secs_f64().max(1e-9);
            bar.set_message(format!(
                "{} instructions, {:.1} MIPS (Ctrl-C stops the guest and keeps the profiles)",
                p.instructions,
                p.instructions as f64 / secs / 1e6
            ));
            bar.tick();
        }
    };
    let mut hooks = console_hooks(config.program.stdio);
    hooks.progress = Some(&mut on_progress);
    hooks.interrupt = Some(crate::files::interrupt_flag());
    let mut wpp_file = None;
    if let (Some(file), Some(_)) = (&out.wpp, &config.wpp) {
        let f = crate::files::create_output(file)?;
        hooks.wpp_sink = Some(Box::new(std::io::BufWriter::with_capacity(
            1 << 20,
            f.file()?,
        )));
        wpp_file = Some(f);
    }
    let result = outcrop_run::execute(config, image, hooks);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let mut summaries = result?;
    summaries.host_max_rss_bytes = crate::files::max_rss_bytes();
    if let (Some(f), Some(_)) = (wpp_file, &summaries.wpp) {
        f.commit()?;
    }
    Ok(summaries)
}

/// The mechanisms' own files beside the report: the samples file, BOLT's `.fdata`, and the
/// one-line summaries of each on stderr.
pub fn write_mechanism_files(s: &RunSummaries, report: &RunReport, out: &Outputs) -> Result<()> {
    if let Some(file) = &out.fdata {
        match &report.fdata {
            Some(text) => {
                save(file, text.as_bytes())?;
                eprintln!(
                    "outcrop: query: BOLT profile → {}",
                    out.show(file).display()
                );
            }
            None => refuse!(
                "--fdata {}: no queue is read by the edges service",
                file.display()
            ),
        }
    }
    if let Some(r) = &s.rpa {
        let lost: u64 = r.queries.iter().map(|q| q.lost).sum();
        if lost > 0 {
            eprintln!("outcrop: query: {lost} messages were lost because a service thread stopped");
        }
    }
    if let (Some(samples), Some(file)) = (s.samples.first(), &out.samples) {
        save(file, samples.to_text().as_bytes())?;
        eprintln!(
            "outcrop: paths: {} samples ({} distinct traces), modelled overhead {:.2}% → {}",
            samples.meta.samples,
            samples.traces.len(),
            100.0 * samples.overhead(),
            out.show(file).display()
        );
    }
    write_process_samples(s, out)?;
    if let (Some(c), Some(file)) = (&s.wpp, &out.wpp) {
        let b = &c.stats.build;
        eprintln!(
            "outcrop: wpp: {} blocks, {} paths executed ({} unique), {} bytes → {}",
            b.blocks,
            b.paths.executions,
            b.paths.unique,
            c.bytes,
            out.show(file).display()
        );
    }
    Ok(())
}

/// The samples of every (process, program) but the first, when the guest ran more than one:
/// in the report directory as `samples/pid<PID>.<IMAGE>.samples` (a file of the first unit,
/// as `--samples` is), each for its own program (`outcrop paths` reads it with that
/// program). Only a directory Outcrop writes whole holds them: no file beside `--samples`
/// is made that the user did not name.
fn write_process_samples(s: &RunSummaries, out: &Outputs) -> Result<()> {
    let rows: Vec<_> = s
        .process_samples
        .iter()
        .filter_map(|p| p.samples.first().map(|x| (&p.key, x)))
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    let taken: u64 = rows.iter().map(|(_, x)| x.meta.samples).sum();
    let Some(dir) = &out.report else {
        if out.samples.is_some() {
            eprintln!(
                "outcrop: paths: {} more (process, program)s took {taken} samples; --report DIR keeps each one's samples file",
                rows.len()
            );
        }
        return Ok(());
    };
    let sub = dir.join("samples");
    std::fs::create_dir_all(&sub).doing(|| format!("cannot create {}", sub.display()))?;
    for (key, samples) in &rows {
        let name = format!("pid{}.{}.samples", key.pid, key.image);
        save_in_report(&sub.join(name), samples.to_text().as_bytes())?;
    }
    eprintln!(
        "outcrop: paths: {} more (process, program)s took {taken} samples → {}",
        rows.len(),
        out.show(&sub).display()
    );
    Ok(())
}

/// Where `outcrop run`'s files go, as given on the command line.
pub struct RunFiles {
    /// `-o`: `None` for stderr, `-` for stdout, or a file.
    pub output: Option<PathBuf>,
    /// `--json`.
    pub json: bool,
    /// `--wpp FILE`.
    pub wpp: Option<PathBuf>,
    /// `--samples FILE`.
    pub samples: Option<PathBuf>,
    /// `--report DIR`.
    pub report: Option<PathBuf>,
    /// `--fdata FILE`.
    pub fdata: Option<PathBuf>,
    /// A spinner on a terminal.
    pub progress: bool,
}

/// Runs `config` once with its files where `files` says: the report directory staged and
/// swapped in whole when the run is done, an output named inside it written there with the
/// rest. The guest's exit code.
pub fn run_once(config: &RunConfig, files: RunFiles) -> Result<i32> {
    let staged = match &files.report {
        Some(dir) => {
            crate::files::distinct_outputs(&program_input(config), &[], &[dir.as_path()])?;
            Some(crate::files::ReportDir::begin(dir)?)
        }
        None => None,
    };
    let place = |p: Option<PathBuf>| match (&staged, p) {
        (Some(s), Some(p)) => Some(s.place(&p)),
        (_, p) => p,
    };
    let console = match files.output {
        None => Console::Stderr,
        Some(p) if p.as_os_str() == "-" => Console::Stdout,
        Some(p) => Console::File(place(Some(p)).unwrap_or_default()),
    };
    let out = Outputs {
        console,
        json: files.json,
        wpp: place(files.wpp),
        samples: place(files.samples),
        report: staged.as_ref().map(|s| s.path().to_path_buf()),
        fdata: place(files.fdata),
        progress: files.progress,
        shown: staged
            .as_ref()
            .map(|s| (s.path().to_path_buf(), s.dir.clone())),
    };
    let (p, _) = profile(config, &out)?;
    if let Some(s) = staged {
        let dir = s.dir.clone();
        s.commit()?;
        eprintln!("outcrop: report → {}", dir.display());
    }
    Ok(p.exit_code)
}

/// Runs every workload of `manifest` (by name) with the configuration `config_of` makes
/// from its command line, each into `DIR/NAME/` of the report directory `dir` (staged and
/// swapped in whole), then `DIR/suite.json` and `DIR/index.html`. The working directory
/// must be the manifest's (the workloads name their inputs relative to it).
pub fn suite<E: From<crate::Error>>(
    manifest: &outcrop_studies::Manifest,
    dir: &Path,
    json: bool,
    progress: bool,
    mut config_of: impl FnMut(Vec<std::ffi::OsString>) -> Result<RunConfig, E>,
) -> Result<usize, E> {
    let mut names: Vec<&str> = manifest.workloads.iter().map(|w| w.name.as_str()).collect();
    names.sort();
    let staged = crate::files::ReportDir::begin(dir)?;
    let final_dir = dir.to_path_buf();
    let dir = staged.path().to_path_buf();
    let mut index = Vec::new();
    let mut rows = Vec::new();
    for name in names {
        let sub = dir.join(name);
        std::fs::create_dir_all(&sub).doing(|| format!("cannot create {}", sub.display()))?;
        let out = Outputs {
            console: Console::File(sub.join("report.txt")),
            json,
            wpp: Some(sub.join(format!("{name}.wpp"))),
            samples: Some(sub.join("branch.samples")),
            report: Some(sub.clone()),
            fdata: None,
            progress,
            shown: Some((dir.clone(), final_dir.clone())),
        };
        let w = manifest.get(name).map_err(crate::Error::from)?;
        // paths from the manifest, resolved beneath its directory (a checkout cannot name
        // a program or a sysroot outside itself)
        manifest.binary_path(w).map_err(crate::Error::from)?;
        let mut command = vec![w.binary().into_os_string()];
        command.extend(w.args.iter().map(std::ffi::OsString::from));
        eprintln!("outcrop: suite: {name}");
        let mut config = config_of(command)?;
        config.program.stdio = outcrop_run::Stdio::Quiet;
        if let Some(root) = manifest.sysroot(w).map_err(crate::Error::from)? {
            config.program.sysroot = Some(root);
        }
        let (mut p, mut row) = profile(&config, &out)?;
        p.report = Some(final_dir.join(name).display().to_string());
        row.name = name.to_string();
        index.push(p);
        rows.push(row);
    }
    let mut j = serde_json::to_vec_pretty(&index).doing(|| "suite.json".into())?;
    j.push(b'\n');
    save_in_report(&dir.join("suite.json"), &j)?;
    save_in_report(
        &dir.join("index.html"),
        outcrop_report::html::index_page(&rows).as_bytes(),
    )?;
    staged.commit()?;
    eprintln!(
        "outcrop: suite: {} workloads profiled with every mechanism → {} (open {})",
        index.len(),
        final_dir.display(),
        final_dir.join("index.html").display()
    );
    Ok(index.len())
}

/// Writes `outcrop diff --report DIR`'s directory at `shown`: the page, the JSON, the
/// differential flame graph, and each side's exports (read with a bound) to open side by side.
pub fn write_diff_dir(
    shown: &Path,
    diff: &outcrop_run::mechanisms::diff::Diff,
    a: &outcrop_run::diff::Side,
    b: &outcrop_run::diff::Side,
) -> Result<()> {
    fn side(s: &outcrop_run::diff::Side) -> Result<outcrop_report::diff::SideFiles<'_>> {
        let read = |p: &Option<PathBuf>, what| {
            p.as_ref()
                .map(|p| crate::files::read_bounded(p, what, crate::files::MAX_PROFILE_BYTES))
                .transpose()
        };
        Ok(outcrop_report::diff::SideFiles {
            profile: s.inputs.profile.as_ref(),
            speedscope: read(&s.exports.speedscope, "speedscope profile")?,
            firefox: read(&s.exports.firefox, "Firefox profile")?,
        })
    }
    let files = outcrop_report::diff::directory_files(diff, side(a)?, side(b)?);
    crate::files::write_report_dir(shown, &files)
}
