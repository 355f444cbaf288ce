//! `outcrop diff A B`: what changed between two runs. This module finds and reads the files;
//! `outcrop_diff` compares, `outcrop_report::diff` renders.

use crate::files::{read_bounded, write_output, write_report_file, MAX_PROFILE_BYTES};
use anyhow::{bail, Context, Result};
use clap::Args;
use outcrop_diff::{compare, CompareOptions, Inputs, ProfileView, RapView, RunView};
use outcrop_report::Report as _;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `outcrop diff`.
#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The baseline: a report directory (`outcrop run --report DIR`), a profile.json or
    /// report.json, a rap.json, a saved RAP tree (.rap), a samples file or a .wpp file.
    #[arg(value_name = "A")]
    a: PathBuf,
    /// What to compare with A (B − A is reported): the same kind of input.
    #[arg(value_name = "B")]
    b: PathBuf,
    /// Write JSON instead of text (docs/diff.md).
    #[arg(long)]
    json: bool,
    /// Write the report to FILE instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also write a directory: diff.html (the page), diff.json, diff.svg (the differential
    /// flame graph), and a.speedscope.json/b.speedscope.json and a.firefox.json/b.firefox.json
    /// to open side by side.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// Compare even when A and B look like different programs.
    #[arg(long)]
    force: bool,
    /// Match functions by name and lines by file and line even for the same code.
    #[arg(long)]
    by_symbol: bool,
    /// Share of a path profile at which a path is hot (paths gained and lost).
    #[arg(long, value_name = "F", default_value_t = 0.01)]
    hot: f64,
    /// Share of a saved RAP tree's events at which a range is hot (.rap inputs).
    #[arg(long, value_name = "F", default_value_t = 0.01)]
    rap_hot: f64,
}

/// Where a side's exports are, to copy next to the diff.
#[derive(Default)]
struct Exports {
    speedscope: Option<PathBuf>,
    firefox: Option<PathBuf>,
}

/// One side: what was read, and where its exports are.
struct Side {
    inputs: Inputs,
    exports: Exports,
}

fn optional(path: &Path, what: &'static str) -> Result<Option<Vec<u8>>> {
    if path.exists() {
        Ok(Some(read_to_parse(path, what)?))
    } else {
        Ok(None)
    }
}

/// The bytes of an input diff parses, read with a bound.
fn read_to_parse(path: &Path, what: &'static str) -> Result<Vec<u8>> {
    Ok(read_bounded(path, what, MAX_PROFILE_BYTES)?)
}

/// The bytes diff may read from `path`: a file's size, or the sum of a report directory's
/// files (each capped as it is read).
fn input_bytes(path: &Path) -> u64 {
    let size = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| {
                if m.is_file() {
                    m.len().min(MAX_PROFILE_BYTES)
                } else {
                    0
                }
            })
            .unwrap_or(0)
    };
    if path.is_dir() {
        std::fs::read_dir(path)
            .map(|d| d.flatten().map(|e| size(&e.path())).sum())
            .unwrap_or(0)
    } else {
        size(path)
    }
}

fn context(path: &Path) -> impl Fn(outcrop_diff::Error) -> anyhow::Error + '_ {
    move |e| anyhow::anyhow!("{}: {e}", path.display())
}

/// A file a report directory's summary names (`key`), found beneath the directory only: the
/// name as a path relative to it, else its last component in it. A path inside a file is as
/// untrusted as the file: one that leads out of the directory (absolute, `..`, a symlink) is
/// never opened (`resolve_beneath`, race-free).
fn named_in(dir: &Path, v: &serde_json::Value, key: &str) -> Option<PathBuf> {
    let f = PathBuf::from(v.get(key)?.as_str()?);
    let mut candidates = Vec::new();
    if f.is_relative() {
        candidates.push(f.clone());
    }
    candidates.push(PathBuf::from(f.file_name()?));
    candidates.into_iter().find_map(|rel| {
        outcrop_run::files::resolve_beneath(dir, &rel, "file")
            .ok()
            .filter(|p| p.is_file())
    })
}

fn load_dir(dir: &Path) -> Result<Side> {
    if dir.join("suite.json").is_file() {
        bail!(
            "{} is a suite's report: compare two workloads' directories ({}/NAME)",
            dir.display(),
            dir.display()
        );
    }
    let mut inputs = Inputs {
        label: dir.display().to_string(),
        ..Inputs::default()
    };
    let p = dir.join("profile.json");
    if let Some(b) = optional(&p, "profile")? {
        inputs.profile = Some(ProfileView::from_json(&b).map_err(context(&p))?);
    }
    let p = dir.join("run.json");
    if let Some(b) = optional(&p, "run statistics")? {
        inputs.run = Some(RunView::from_json(&b).map_err(context(&p))?);
    }
    let p = dir.join("rap.json");
    if let Some(b) = optional(&p, "RAP report")? {
        inputs.rap = Some(RapView::from_json(&b).map_err(context(&p))?);
    }
    let p = dir.join("paths.json");
    if let Some(b) = optional(&p, "paths summary")? {
        let v: serde_json::Value =
            serde_json::from_slice(&b).with_context(|| format!("reading {}", p.display()))?;
        if let Some(f) = named_in(dir, &v, "file") {
            inputs.paths = Some(crate::paths::path_shares(&f)?);
        }
    }
    let p = dir.join("wpp.json");
    if let Some(b) = optional(&p, "whole-program paths summary")? {
        let v: serde_json::Value =
            serde_json::from_slice(&b).with_context(|| format!("reading {}", p.display()))?;
        if let Some(f) = named_in(dir, &v, "file") {
            inputs.wpp_paths = Some(crate::wpp::path_shares(&f)?);
        }
    }
    if inputs.profile.is_none()
        && inputs.rap.is_none()
        && inputs.paths.is_none()
        && inputs.wpp_paths.is_none()
    {
        bail!(
            "{} is not a report directory: it has no profile.json, rap.json, paths.json or wpp.json (write one with outcrop run --report DIR)",
            dir.display()
        );
    }
    let exists = |f: &str| Some(dir.join(f)).filter(|p| p.is_file());
    Ok(Side {
        inputs,
        exports: Exports {
            speedscope: exists("profile.speedscope.json"),
            firefox: exists("profile.firefox.json"),
        },
    })
}

fn load_file(path: &Path, rap_hot: f64) -> Result<Side> {
    let mut head = [0u8; 32];
    let n = {
        let (mut f, _) = outcrop_run::files::open_regular(path, "input")?;
        let mut n = 0;
        while n < head.len() {
            match f.read(&mut head[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
            }
        }
        n
    };
    let head = &head[..n];
    let mut inputs = Inputs {
        label: path.display().to_string(),
        ..Inputs::default()
    };
    if head.starts_with(b"ORAPTREE") {
        let bytes = read_to_parse(path, "RAP tree")?;
        let tree = outcrop_rap::RapTree::from_bytes(&bytes)
            .with_context(|| format!("reading RAP tree {}", path.display()))?;
        inputs.rap = Some(tree_view(&tree, rap_hot, path)?);
    } else if head.starts_with(outcrop_strata::format::MAGIC) {
        inputs.wpp_paths = Some(crate::wpp::path_shares(path)?);
    } else if head.starts_with(b"outcrop-branch-samples") {
        inputs.paths = Some(crate::paths::path_shares(path)?);
    } else if head.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'{') {
        load_json(path, rap_hot, &mut inputs)?;
    } else {
        bail!(
            "{}: not an input diff reads (a report directory, profile.json, report.json, rap.json, a .rap tree, a samples file or a .wpp file)",
            path.display()
        );
    }
    Ok(Side {
        inputs,
        exports: Exports::default(),
    })
}

/// A JSON input of diff: a saved RAP tree, a profile.json, report.json or rap.json, told
/// apart by its keys.
fn load_json(path: &Path, rap_hot: f64, inputs: &mut Inputs) -> Result<()> {
    let bytes = read_to_parse(path, "JSON report")?;
    // which file it is, from its keys alone: no `serde_json::Value` of the whole file
    // (it holds 10 times the text; a 112 MB tree once took 1.7 GB before it was refused)
    let keys = outcrop_diff::Keys::of(&bytes);
    if keys.format.as_deref() == Some(outcrop_rap::FORMAT_NAME) {
        let json: outcrop_rap::TreeJson = serde_json::from_slice(&bytes).map_err(|e| {
            anyhow::anyhow!(
                "reading RAP tree {}: at line {} column {}: {e}",
                path.display(),
                e.line(),
                e.column()
            )
        })?;
        let tree = outcrop_rap::RapTree::from_json(&json)
            .with_context(|| format!("reading RAP tree {}", path.display()))?;
        inputs.rap = Some(tree_view(&tree, rap_hot, path)?);
        return Ok(());
    }
    if keys == outcrop_diff::Keys::default() {
        // not an object, or not JSON: say where
        outcrop_diff::Keys::check_json(&bytes).map_err(context(path))?;
    }
    let is_profile = keys.tree || keys.profile == Some(true);
    let is_rap = keys.streams || keys.rap == Some(true);
    if is_profile {
        inputs.profile = Some(ProfileView::from_json(&bytes).map_err(context(path))?);
    }
    if is_rap {
        inputs.rap = Some(RapView::from_json(&bytes).map_err(context(path))?);
    }
    if !is_profile && !is_rap {
        bail!(
            "{}: a JSON file diff does not read (it reads profile.json, report.json and rap.json)",
            path.display()
        );
    }
    Ok(())
}

/// A saved RAP tree's hot ranges as one stream, `tree`.
fn tree_view(tree: &outcrop_rap::RapTree, rap_hot: f64, path: &Path) -> Result<RapView> {
    let hot = tree
        .hot_ranges(rap_hot)
        .with_context(|| format!("hot ranges of {}", path.display()))?;
    Ok(RapView {
        streams: vec![outcrop_diff::input::StreamView {
            stream: "tree".to_string(),
            thread: None,
            n: tree.n(),
            hot: hot
                .iter()
                .map(|h| outcrop_diff::ranges::Range {
                    lo: h.lo,
                    hi: h.hi,
                    depth: h.depth,
                    share: h.share,
                    exclusive_share: h.exclusive_share,
                    code: None,
                })
                .collect(),
        }],
    })
}

fn load(path: &Path, rap_hot: f64) -> Result<Side> {
    if path.is_dir() {
        load_dir(path)
    } else {
        load_file(path, rap_hot)
    }
}

/// `outcrop diff`.
pub fn run(args: DiffArgs) -> Result<ExitCode> {
    if !(0.0..=1.0).contains(&args.hot) || !(0.0..=1.0).contains(&args.rap_hot) {
        bail!("--hot and --rap-hot are fractions between 0 and 1");
    }
    let outputs: Vec<&Path> = args.output.iter().map(PathBuf::as_path).collect();
    let report_dirs: Vec<&Path> = args.report.iter().map(PathBuf::as_path).collect();
    crate::files::distinct_outputs(&[&args.a, &args.b], &outputs, &report_dirs)?;
    if let Some(dir) = &args.report {
        crate::files::check_report_dir(dir)?;
    }
    if let Some(o) = &args.output {
        crate::files::check_output(o)?;
    }
    // the parsed inputs and their comparison take up to 6 times the input in address space
    // (measured under prlimit: 8.6 MB profiles need 150 MB with the binary's 45 MB), and the
    // allocator reserves arenas besides
    crate::files::check_memory_for(
        &format!("{} and {}", args.a.display(), args.b.display()),
        input_bytes(&args.a).saturating_add(input_bytes(&args.b)),
        6,
        64 << 20,
    )?;
    let a =
        load(&args.a, args.rap_hot).with_context(|| format!("reading A ({})", args.a.display()))?;
    let b =
        load(&args.b, args.rap_hot).with_context(|| format!("reading B ({})", args.b.display()))?;
    let diff = compare(
        &a.inputs,
        &b.inputs,
        CompareOptions {
            profile: outcrop_diff::profile::Options {
                force: args.force,
                by_symbol: args.by_symbol,
            },
            hot: args.hot,
        },
    )?;
    let view = outcrop_report::diff::DiffText(&diff);
    let text = if args.json {
        view.to_json()
    } else {
        view.to_text()
    };
    if let Some(dir) = &args.report {
        write_dir(dir, &diff, &a, &b)?;
    }
    match &args.output {
        Some(path) => write_output(path, |f| {
            f.write_all(text.as_bytes())?;
            Ok(())
        })
        .with_context(|| format!("writing {}", path.display()))?,
        None => std::io::stdout()
            .lock()
            .write_all(outcrop_events::escape::text(&text).as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

fn write_dir(shown: &Path, diff: &outcrop_diff::Diff, a: &Side, b: &Side) -> Result<()> {
    let staged = crate::files::ReportDir::begin(shown)?;
    let dir = staged.path().to_path_buf();
    let mut files: Vec<(String, &'static str)> = Vec::new();
    let mut put = |name: &str, what: &'static str, bytes: &[u8]| -> Result<()> {
        let p = dir.join(name);
        write_report_file(&p, |f| {
            f.write_all(bytes)?;
            Ok(())
        })
        .with_context(|| format!("writing {}", shown.join(name).display()))?;
        files.push((name.to_string(), what));
        Ok(())
    };
    put(
        "diff.json",
        "the diff as JSON (docs/diff.md)",
        outcrop_report::json(diff).as_bytes(),
    )?;
    if let Some(p) = &diff.profile {
        put(
            "diff.svg",
            "the differential flame graph",
            outcrop_report::diff::diff_flame_svg(p, 1240).as_bytes(),
        )?;
    }
    for (side, s) in [("a", a), ("b", b)] {
        let Some(view) = &s.inputs.profile else {
            continue;
        };
        let name = format!("{} ({})", view.program, side.to_uppercase());
        let profile = view.to_profile();
        let speedscope = match &s.exports.speedscope {
            Some(p) => read_bounded(p, "speedscope profile", MAX_PROFILE_BYTES)?,
            None => outcrop_report::profile::speedscope(&profile, &name).into_bytes(),
        };
        put(
            &format!("{side}.speedscope.json"),
            if side == "a" {
                "A's profile for speedscope (open B's beside it)"
            } else {
                "B's profile for speedscope"
            },
            &speedscope,
        )?;
        let firefox = match &s.exports.firefox {
            Some(p) => read_bounded(p, "Firefox profile", MAX_PROFILE_BYTES)?,
            None => outcrop_report::profile::firefox(&profile, &name).into_bytes(),
        };
        put(
            &format!("{side}.firefox.json"),
            if side == "a" {
                "A's profile for the Firefox Profiler (open B's beside it)"
            } else {
                "B's profile for the Firefox Profiler"
            },
            &firefox,
        )?;
    }
    let listed: Vec<(&str, &str)> = files.iter().map(|(f, w)| (f.as_str(), *w)).collect();
    let page = outcrop_report::diff::diff_page(diff, &listed);
    let p = dir.join("diff.html");
    write_report_file(&p, |f| {
        f.write_all(page.as_bytes())?;
        Ok(())
    })
    .with_context(|| format!("writing {}", shown.join("diff.html").display()))?;
    staged.commit()
}
