//! The inputs of a comparison (`outcrop diff A B`), found and read: a report directory, a
//! profile.json, report.json or rap.json, a saved RAP tree (`.rap`, binary or JSON), a
//! samples file or a `.wpp` file. Every file is read with a bound, and a file a report
//! directory's summary names is opened only beneath that directory. `outcrop_diff` compares
//! what this reads; `outcrop_report::diff` renders the comparison.

use crate::files::{read_bounded, MAX_PROFILE_BYTES};
use crate::{Error, Result};
use outcrop_diff::{Inputs, ProfileView, RapView, RunView};
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// Where a side's exports are, to copy next to the comparison.
#[derive(Clone, Debug, Default)]
pub struct Exports {
    /// Its profile for speedscope.
    pub speedscope: Option<PathBuf>,
    /// Its profile for the Firefox Profiler.
    pub firefox: Option<PathBuf>,
}

/// One side of a comparison: what was read, and where its exports are.
#[derive(Debug)]
pub struct Side {
    /// What the comparison reads.
    pub inputs: Inputs,
    /// Its exports (a report directory's).
    pub exports: Exports,
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
    read_bounded(path, what, MAX_PROFILE_BYTES)
}

/// The bytes diff may read from `path`: a file's size, or the sum of a report directory's
/// files (each capped as it is read).
pub fn input_bytes(path: &Path) -> u64 {
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

fn context(path: &Path) -> impl Fn(outcrop_diff::Error) -> Error + '_ {
    move |e| Error::Input {
        path: path.to_path_buf(),
        detail: e.to_string(),
    }
}

/// "reading PATH: the error", as the reports say.
fn reading(path: &Path) -> impl Fn(serde_json::Error) -> Error + '_ {
    move |e| Error::Config(format!("reading {}: {e}", path.display()))
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
        crate::files::resolve_beneath(dir, &rel, "file")
            .ok()
            .filter(|p| p.is_file())
    })
}

fn load_dir(dir: &Path, warn: &mut dyn FnMut(&str)) -> Result<Side> {
    if dir.join("suite.json").is_file() {
        return Err(Error::Config(format!(
            "{} is a suite's report: compare two workloads' directories ({}/NAME)",
            dir.display(),
            dir.display()
        )));
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
        let v: serde_json::Value = serde_json::from_slice(&b).map_err(reading(&p))?;
        if let Some(f) = named_in(dir, &v, "file") {
            inputs.paths = Some(crate::paths::path_shares(&f, warn)?);
        }
    }
    let p = dir.join("wpp.json");
    if let Some(b) = optional(&p, "whole-program paths summary")? {
        let v: serde_json::Value = serde_json::from_slice(&b).map_err(reading(&p))?;
        if let Some(f) = named_in(dir, &v, "file") {
            inputs.wpp_paths = Some(crate::wpp::path_shares(&f)?);
        }
    }
    if inputs.profile.is_none()
        && inputs.rap.is_none()
        && inputs.paths.is_none()
        && inputs.wpp_paths.is_none()
    {
        return Err(Error::Config(format!(
            "{} is not a report directory: it has no profile.json, rap.json, paths.json or wpp.json (write one with outcrop run --report DIR)",
            dir.display()
        )));
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

fn load_file(path: &Path, rap_hot: f64, warn: &mut dyn FnMut(&str)) -> Result<Side> {
    let mut head = [0u8; 32];
    let n = {
        let (mut f, _) = crate::files::open_regular(path, "input")?;
        let mut n = 0;
        while n < head.len() {
            match f.read(&mut head[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) => return Err(Error::Config(format!("reading {}: {e}", path.display()))),
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
            .map_err(|e| Error::Config(format!("reading RAP tree {}: {e}", path.display())))?;
        inputs.rap = Some(tree_view(&tree, rap_hot, path)?);
    } else if head.starts_with(outcrop_strata::format::MAGIC) {
        inputs.wpp_paths = Some(crate::wpp::path_shares(path)?);
    } else if head.starts_with(b"outcrop-branch-samples") {
        inputs.paths = Some(crate::paths::path_shares(path, warn)?);
    } else if head.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'{') {
        load_json(path, rap_hot, &mut inputs)?;
    } else {
        return Err(Error::Config(format!(
            "{}: not an input diff reads (a report directory, profile.json, report.json, rap.json, a .rap tree, a samples file or a .wpp file)",
            path.display()
        )));
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
            Error::Config(format!(
                "reading RAP tree {}: at line {} column {}: {e}",
                path.display(),
                e.line(),
                e.column()
            ))
        })?;
        let tree = outcrop_rap::RapTree::from_json(&json)
            .map_err(|e| Error::Config(format!("reading RAP tree {}: {e}", path.display())))?;
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
        return Err(Error::Config(format!(
            "{}: a JSON file diff does not read (it reads profile.json, report.json and rap.json)",
            path.display()
        )));
    }
    Ok(())
}

/// A saved RAP tree's hot ranges as one stream, `tree`.
fn tree_view(tree: &outcrop_rap::RapTree, rap_hot: f64, path: &Path) -> Result<RapView> {
    let hot = tree
        .hot_ranges(rap_hot)
        .map_err(|e| Error::Config(format!("hot ranges of {}: {e}", path.display())))?;
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

/// One side of a comparison read from `path` (a report directory or a file; `rap_hot`: the
/// share of a saved RAP tree's events at which a range is hot). Warnings (a samples file's
/// program not found, say) go to `warn`.
pub fn load(path: &Path, rap_hot: f64, warn: &mut dyn FnMut(&str)) -> Result<Side> {
    if path.is_dir() {
        load_dir(path, warn)
    } else {
        load_file(path, rap_hot, warn)
    }
}
