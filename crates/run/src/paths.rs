//! A path profile from samples files, as `outcrop paths report` and `outcrop diff` make it:
//! the samples files and the program read (bounded), merged (§4.4, aggregating runs), the
//! program's CFG built (with the shared objects the run mapped), the paths rebuilt and
//! weighted, and scored against an exact path profile from a `.wpp` file or a text trace of
//! block addresses. Rendering is `outcrop_report::paths::PathsReport::new`.

use crate::files::{read_bounded, read_text_bounded, MAX_PROFILE_BYTES, MAX_PROGRAM_BYTES};
use crate::{Error, Result};
use outcrop_paths::{
    accuracy, analyze, Accuracy, Analysis, Cfg, ExactStats, IndexCache, Options, PathKey, Regions,
    Samples, Weighting,
};
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};

/// What to read and how to analyze it.
#[derive(Clone, Debug)]
pub struct PathsInput {
    /// Samples files of one program, merged into the first.
    pub samples: Vec<PathBuf>,
    /// The program; `None`: the one the samples name, found beside them
    /// ([`find_recorded_program`]).
    pub binary: Option<PathBuf>,
    /// Where the shared objects the run mapped are (a dynamically linked program).
    pub sysroot: Option<PathBuf>,
    /// A `.wpp` file or a text trace of block addresses of the same execution: the exact path
    /// profile the estimate is scored against.
    pub exact_from: Option<PathBuf>,
    /// Most blocks the exact trace may expand to.
    pub max_blocks: u64,
    /// Most paths numbered per region.
    pub max_paths: u64,
    /// Reconstruction options.
    pub options: Options,
    /// How matched fragments are weighted.
    pub weights: Weighting,
    /// The hot threshold of the accuracy metrics.
    pub hot: f64,
    /// Read files recorded from another build of the program, with a warning.
    pub ignore_program_id: bool,
}

/// An exact path profile and its counters.
pub type ExactProfile = (FxHashMap<PathKey, u64>, ExactStats);

/// The samples analyzed, with everything a report of them needs.
pub struct PathsAnalysis {
    /// The program's path.
    pub binary: PathBuf,
    /// Its bytes.
    pub elf: Vec<u8>,
    /// The merged samples.
    pub samples: Samples,
    /// The program's CFG (with its shared objects').
    pub cfg: Cfg,
    /// Its path regions.
    pub regions: Regions,
    /// The rebuilt, matched and weighted paths.
    pub analysis: Analysis,
    /// The exact path profile, when asked for.
    pub exact: Option<ExactProfile>,
    /// The estimate scored against it.
    pub accuracy: Option<Accuracy>,
    /// The options used.
    pub options: Options,
    /// The weighting used.
    pub weights: Weighting,
}

impl PathsAnalysis {
    /// Reads and analyzes `input`; `warn` hears what a person should be told (an older file
    /// without a program id, another build let through, a trace of another execution).
    pub fn read(input: &PathsInput, warn: &mut dyn FnMut(&str)) -> Result<PathsAnalysis> {
        if !(0.0..=1.0).contains(&input.hot) {
            return Err(Error::Config(format!(
                "--hot {} is not a fraction",
                input.hot
            )));
        }
        let samples = read_samples(&input.samples, input.ignore_program_id)?;
        let first = &input.samples[0];
        let binary = match &input.binary {
            Some(b) => b.clone(),
            None => find_recorded_program(&samples.meta.program, first, warn).ok_or_else(|| {
                Error::Config(format!(
                    "the program {} recorded in {} does not exist here or beside the samples file; name it with --binary",
                    samples.meta.program,
                    first.display()
                ))
            })?,
        };
        let elf = read_bounded(&binary, "program", MAX_PROGRAM_BYTES)?;
        let ignore = input.ignore_program_id;
        check_program(first, &samples.meta.program_id, &binary, &elf, ignore, warn)?;
        let objects = &samples.meta.objects;
        let sysroot = input.sysroot.as_deref();
        let cfg = program_cfg(&elf, &binary, objects, sysroot, ignore, warn)?;
        let regions = Regions::new(&cfg, input.max_paths);
        let analysis = analyze(
            &cfg,
            &regions,
            &samples,
            input.options,
            input.weights,
            &mut IndexCache::default(),
        );
        let exact = match &input.exact_from {
            Some(p) => {
                let (profile, insns, id) = exact_from_trace(p, &cfg, &regions, input.max_blocks)?;
                if let Some(id) = id {
                    check_program(p, &id, &binary, &elf, ignore, warn)?;
                }
                if let Some(n) = insns.filter(|&n| n != samples.meta.instructions) {
                    warn(&format!(
                        "{} retired {n} instructions, the sampled run {}: not the same execution (record both with --deterministic)",
                        p.display(),
                        samples.meta.instructions
                    ));
                }
                Some(profile)
            }
            None => None,
        };
        let accuracy = exact
            .as_ref()
            .map(|(e, _)| accuracy(e, &analysis.estimate.paths, input.hot));
        Ok(PathsAnalysis {
            binary,
            elf,
            samples,
            cfg,
            regions,
            analysis,
            exact,
            accuracy,
            options: input.options,
            weights: input.weights,
        })
    }

    /// BOLT's `.fdata` of the sampled edge profile.
    pub fn fdata(&self) -> String {
        outcrop_paths::fdata::fdata(&self.cfg, &self.analysis.reconstruction.edges)
    }

    /// BOLT's pre-aggregated profile of the branch records.
    pub fn bolt_preaggregated(&self) -> String {
        let counts = outcrop_paths::exports::lbr_counts(&self.samples);
        outcrop_paths::exports::bolt_preaggregated(&counts)
    }

    /// llvm-profgen's unsymbolized profile of the branch records (offsets from the page of
    /// the program's lowest loadable segment).
    pub fn profgen(&self) -> String {
        let counts = outcrop_paths::exports::lbr_counts(&self.samples);
        outcrop_paths::exports::profgen_unsymbolized(&counts, elf_base(&self.elf))
    }
}

/// Checks that `elf` (read from `binary`) is the program `profile` was recorded from, by the
/// program id the profile keeps (`recorded`; empty in files from before ids were kept, which
/// are let through with a warning). A mismatch is an error naming both, unless `ignore`
/// (`--ignore-program-id`) makes it a warning.
pub fn check_program(
    profile: &Path,
    recorded: &str,
    binary: &Path,
    elf: &[u8],
    ignore: bool,
    warn: &mut dyn FnMut(&str),
) -> Result<()> {
    if recorded.is_empty() {
        warn(&format!(
            "{} does not say which build of its program it profiles (an older file); cannot check {}",
            profile.display(),
            binary.display()
        ));
        return Ok(());
    }
    let actual = outcrop_rv::elf::program_id(elf)
        .map_err(|e| Error::Config(format!("{}: {e}", binary.display())))?;
    if actual == recorded {
        return Ok(());
    }
    let msg = format!(
        "{} was recorded from a program with {recorded}, but {} has {actual}",
        profile.display(),
        binary.display()
    );
    if ignore {
        warn(&format!("{msg} (--ignore-program-id: reading it anyway)"));
        Ok(())
    } else {
        Err(Error::Config(format!(
            "{msg}; name the program it was recorded from with --binary, or pass --ignore-program-id"
        )))
    }
}

/// The exact path profile of a `.wpp` file (streamed: the expansion is never held) or of a
/// text trace of block addresses, with the instructions and program id a `.wpp` records.
fn exact_from_trace(
    path: &Path,
    cfg: &Cfg,
    regions: &Regions,
    max_blocks: u64,
) -> Result<(ExactProfile, Option<u64>, Option<String>)> {
    let bytes = read_bounded(path, "trace", MAX_PROFILE_BYTES)?;
    let mut ex = outcrop_paths::exact::ExactCounter::new(cfg, regions);
    let named = |e: &dyn std::fmt::Display| Error::Config(format!("{}: {e}", path.display()));
    if bytes.starts_with(b"OUTCROPW") {
        let f = outcrop_strata::WppFile::parse(&bytes).map_err(|e| named(&e))?;
        drop(bytes);
        if f.total_blocks > max_blocks {
            return Err(Error::Config(format!(
                "{}: the stream expands to {} blocks, more than --max-blocks {max_blocks}; raise it to replay this file",
                path.display(),
                f.total_blocks
            )));
        }
        outcrop_strata::Replay::new(&f).for_each_path(|p| p.iter().for_each(|&a| ex.push_block(a)));
        return Ok((
            ex.finish_run(),
            Some(f.stats.build.instructions),
            Some(f.stats.run.program_id.clone()),
        ));
    }
    // a text trace: one address per line, as `outcrop rap` reads (outcrop_events::text),
    // counted a chunk at a time
    use outcrop_events::ValueReader;
    let mut reader = outcrop_events::text::TextReader::new(&bytes[..]);
    let mut chunk = Vec::with_capacity(1 << 16);
    let mut blocks = 0u64;
    loop {
        chunk.clear();
        let n = reader.read_values(&mut chunk, 1 << 16).map_err(|e| {
            Error::Config(format!(
                "{}: neither a .wpp file nor a text trace: {e}",
                path.display()
            ))
        })?;
        if n == 0 {
            break;
        }
        blocks = blocks.saturating_add(n as u64);
        if blocks > max_blocks {
            return Err(Error::Config(format!(
                "{}: more than {max_blocks} blocks (--max-blocks)",
                path.display()
            )));
        }
        chunk.iter().for_each(|&a| ex.push_block(a));
    }
    Ok((ex.finish_run(), None, None))
}

/// Reads every samples file and merges them into the first (§4.4, aggregating runs); files of
/// another program or buffer depth are an error naming the file.
pub fn read_samples(files: &[PathBuf], ignore_program_id: bool) -> Result<Samples> {
    let mut merged: Option<Samples> = None;
    for f in files {
        let text = read_text_bounded(f, "samples file", MAX_PROFILE_BYTES)?;
        let s =
            Samples::parse(&text).map_err(|e| Error::Config(format!("{}: {e}", f.display())))?;
        match merged.as_mut() {
            None => merged = Some(s),
            Some(m) => {
                check_alike(&files[0], &m.meta, f, &s.meta, ignore_program_id)?;
                m.merge(&s);
            }
        }
    }
    merged.ok_or_else(|| Error::Config("no samples file given".to_string()))
}

/// Samples merge as counts of one kind of trace: the same program, the same buffer, the same
/// branches recorded, one sample per the same period.
fn check_alike(
    f0: &Path,
    first: &outcrop_sampling::Meta,
    fi: &Path,
    this: &outcrop_sampling::Meta,
    ignore_program_id: bool,
) -> Result<()> {
    let (f0, fi) = (f0.display(), fi.display());
    if !ignore_program_id && this.program_id != first.program_id {
        let id = |id: &str| {
            if id.is_empty() {
                "no program id (a version 1 file)".to_string()
            } else {
                id.to_string()
            }
        };
        return Err(Error::Config(format!(
            "{fi} was recorded from another build than {f0}: {fi} has {}, {f0} has {}; pass --ignore-program-id to merge anyway",
            id(&this.program_id),
            id(&first.program_id)
        )));
    }
    let (a, b) = (&this.config, &first.config);
    let differ = |what: &str, x: String, y: String| {
        Err(Error::Config(format!(
            "{fi} has {what} {x}, {f0} has {y}: merge samples recorded alike"
        )))
    };
    if a.entries != b.entries {
        return differ("buffer depth", a.entries.to_string(), b.entries.to_string());
    }
    if a.filter != b.filter {
        return differ(
            "filter",
            format!("{:?}", a.filter),
            format!("{:?}", b.filter),
        );
    }
    if (a.period, a.unit) != (b.period, b.unit) {
        return differ(
            "sampling period",
            format!("{} {:?}", a.period, a.unit),
            format!("{} {:?}", b.period, b.unit),
        );
    }
    Ok(())
}

/// The CFG of the program, and of the shared objects the run mapped when the samples file
/// lists them (a dynamically linked program: each object's code where it was loaded).
pub fn program_cfg(
    elf: &[u8],
    binary: &Path,
    objects: &[outcrop_sampling::SampledObject],
    sysroot: Option<&Path>,
    ignore_ids: bool,
    warn: &mut dyn FnMut(&str),
) -> Result<Cfg> {
    let named = |e: &dyn std::fmt::Display| Error::Config(format!("{}: {e}", binary.display()));
    if objects.is_empty() {
        return Cfg::from_elf(elf).map_err(|e| named(&e));
    }
    let recorded: Vec<crate::objects::Recorded<'_>> =
        objects.iter().map(crate::objects::Recorded::from).collect();
    let found = crate::objects::find_recorded(&recorded, sysroot, ignore_ids, &mut |w| warn(&w))?;
    let program_bias = outcrop_rv::elf::load_bias(elf, objects[0].start, objects[0].offset)
        .ok_or_else(|| named(&"not the program that was mapped"))?;
    let mut parts: Vec<(&[u8], u64, &str)> = vec![(elf, program_bias, "")];
    parts.extend(
        found
            .iter()
            .map(|f| (f.bytes.as_slice(), f.bias, f.suffix.as_str())),
    );
    Cfg::from_objects(&parts).map_err(|e| named(&e))
}

/// The program a samples file names: its recorded path if it exists, else the one a report
/// directory's `paths.json` beside it names, else the recorded relative path beneath the
/// samples file's directory or one of its parents. `warn` hears which was chosen.
pub fn find_recorded_program(
    recorded: &str,
    samples: &Path,
    warn: &mut dyn FnMut(&str),
) -> Option<PathBuf> {
    let p = PathBuf::from(recorded);
    if p.exists() {
        return Some(p);
    }
    let dir = std::fs::canonicalize(samples).ok()?;
    let dir = dir.parent()?;
    // a report directory's paths.json names the program's absolute path
    let from_report = read_text_bounded(&dir.join("paths.json"), "paths.json", 1 << 20)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|j| j["program"].as_str().map(PathBuf::from))
        .filter(|c| c.is_file());
    let found = match from_report {
        Some(c) => c,
        None if p.is_absolute() => return None,
        None => dir.ancestors().map(|a| a.join(&p)).find(|c| c.is_file())?,
    };
    warn(&format!(
        "the program recorded as {recorded} is {}",
        found.display()
    ));
    Some(found)
}

/// The page of the program's lowest loadable segment: what llvm-profgen's offsets count from.
fn elf_base(elf: &[u8]) -> u64 {
    use object::{Object, ObjectSegment};
    object::File::parse(elf)
        .ok()
        .and_then(|f| f.segments().map(|s| s.address()).min())
        .map_or(0, |a| a & !0xfff)
}

/// Every path estimated from a samples file (default options, as `paths report` without
/// flags), with its share, for `outcrop diff`. The program is found as `paths report` finds
/// it and its id checked.
pub fn path_shares(
    samples_file: &Path,
    warn: &mut dyn FnMut(&str),
) -> Result<Vec<outcrop_diff::paths::PathIn>> {
    let input = PathsInput {
        samples: vec![samples_file.to_path_buf()],
        binary: None,
        sysroot: None,
        exact_from: None,
        max_blocks: 0,
        max_paths: 256,
        options: outcrop_paths::Options::default(),
        weights: outcrop_paths::Weighting::Equal,
        hot: outcrop_paths::HOT,
        ignore_program_id: false,
    };
    let a = PathsAnalysis::read(&input, warn)?;
    let (cfg, regions) = (&a.cfg, &a.regions);
    let total: f64 = a.analysis.estimate.paths.values().sum();
    Ok(outcrop_paths::accuracy::ranked(&a.analysis.estimate.paths)
        .iter()
        .map(|((r, id), w)| {
            let blocks = regions.decode(*r, *id).unwrap_or_default();
            outcrop_diff::paths::PathIn {
                function: blocks
                    .first()
                    .map(|&b| cfg.funcs[cfg.blocks[b as usize].func as usize].name.clone())
                    .unwrap_or_default(),
                blocks: blocks
                    .iter()
                    .map(|&b| cfg.describe(cfg.blocks[b as usize].start))
                    .collect(),
                share: if total > 0.0 { w / total } else { 0.0 },
            }
        })
        .collect())
}
