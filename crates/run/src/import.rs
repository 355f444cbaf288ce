//! Importing real hardware's samples: a perf.data file (or `perf script -F ip,brstack` text)
//! and the program it sampled, read with bounds, into Outcrop's samples
//! ([`outcrop_perf::Imported`]). The one place that opens the input; the readers and the
//! importer are the `perf` crate's.

use crate::error::{Error, Result};
use crate::execute::RunSummaries;
use crate::image::ProgramImage;
use crate::import_stacks::{ObjectFile, Stacks};
use object::{Object, ObjectSegment};
use outcrop_events::{Class, Observer, Retire};
use outcrop_perf::{Event, Imported, Importer, Reader, Segment, Target};
use outcrop_rap::observe::{RapProfiler, RapSpec};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// The input's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A perf.data file (`PERFILE2`), seekable or pipe mode.
    PerfData,
    /// `perf script -F ip,brstack` (or `-F pid,tid,ip,brstack`) text.
    PerfScript,
}

/// What an import reports as it goes.
pub struct ImportHooks<'a> {
    /// Called now and then with bytes read so far and the input's size.
    pub progress: &'a mut dyn FnMut(u64, u64),
}

/// The program's side of an import: its name, build-id and loadable segments.
pub fn target(binary: &Path, elf: &[u8], format: Format) -> Result<Target> {
    let bad = |detail: String| Error::Read {
        what: "program",
        path: binary.to_path_buf(),
        detail: format!("{}: {detail}", binary.display()),
    };
    let file = object::File::parse(elf).map_err(|e| bad(format!("not an ELF file: {e}")))?;
    let mut segments = Vec::new();
    for s in file.segments() {
        let (offset, size) = s.file_range();
        if size > 0 {
            segments.push(Segment {
                offset,
                vaddr: s.address(),
                size,
            });
        }
    }
    if segments.is_empty() {
        return Err(bad("no loadable segments".into()));
    }
    Ok(Target {
        name: binary
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        build_id: outcrop_rv::elf::build_id_in_prefix(elf),
        segments,
        identity: format == Format::PerfScript,
    })
}

/// The format of a file that starts with `head`.
pub fn sniff(head: &[u8]) -> Format {
    if head.starts_with(b"PERFILE2") || head.starts_with(b"2ELIFREP") {
        Format::PerfData
    } else {
        Format::PerfScript
    }
}

/// What an import builds beside the samples file.
#[derive(Clone, Debug, Default)]
pub struct ImportConfig {
    /// The sampled profile: a call tree from the samples' call chains (`perf record -g`;
    /// the IP alone without them), by function, line and address, through every object the
    /// program's processes mapped.
    pub profile: bool,
    /// Where shared objects' files are looked for, as `perf report --symfs` does: a recorded
    /// path `/usr/lib/x.so` is read as `SYMFS/usr/lib/x.so`, beneath it (default: the path
    /// itself on this host).
    pub symfs: Option<std::path::PathBuf>,
    /// perf's build-id cache (`$PERF_BUILDID_DIR`, else `~/.debug`): objects `perf record`
    /// kept there (the vdso, libraries since replaced) are found by build-id.
    pub build_id_cache: Option<std::path::PathBuf>,
    /// Where JIT maps (`perf-PID.map`) are read from (perf's /tmp; `None`: not read).
    pub jit_dir: Option<std::path::PathBuf>,
    /// RAP trees over the sampled IPs (`pc`) and data addresses (`load-addr`), in file order.
    pub rap: Option<RapSpec>,
}

/// An import's results.
pub struct ImportResult {
    /// The samples, histograms and statistics.
    pub imported: Imported,
    /// The input's format.
    pub format: Format,
    /// The same summaries a machine run returns, made from the samples, for the same
    /// reports: `instructions` counts IP samples in the program, the profile's
    /// "instructions" are samples, and `sampled` says so.
    pub summaries: RunSummaries,
    /// The shared objects whose files the profile looked for, and what it found.
    pub object_files: Vec<ObjectFile>,
    /// Stacks cut to their innermost frame ([`crate::import_stacks::MAX_STACKS`]).
    pub truncated_stacks: u64,
}

/// Imports the samples of `image` (the program the file sampled) from `input`, and builds
/// what `config` asks for from its IP samples.
pub fn import(
    input: &Path,
    image: &ProgramImage,
    config: &ImportConfig,
    hooks: ImportHooks<'_>,
) -> Result<ImportResult> {
    let started = std::time::Instant::now();
    let binary = image.path();
    let elf = image.bytes();
    let program_id = image.program_id()?.to_string();
    let mut stacks = config.profile.then(|| {
        Stacks::new(
            image.symbols().ok().cloned(),
            image.naming().clone(),
            config.symfs.clone(),
        )
        .with_build_id_cache(config.build_id_cache.clone())
        .with_jit_maps(config.jit_dir.clone())
    });
    let mut rap = config
        .rap
        .as_ref()
        .map(|s| RapProfiler::new(&s.streams, &s.config, s.exact));
    let mut observe = |ip: u64, addr: Option<u64>| {
        let r = Retire {
            pc: ip,
            len: 1,
            class: Some(if addr.is_some() {
                Class::Load
            } else {
                Class::Alu
            }),
            mem_addr: addr.unwrap_or(0),
            mem_size: if addr.is_some() { 8 } else { 0 },
            ..Retire::default()
        };
        if let Some(t) = rap.as_mut() {
            t.retire(&r, None);
        }
    };
    let (imported, format) = read(
        input,
        (binary, elf, &program_id),
        hooks,
        &mut observe,
        stacks.as_mut(),
    )?;
    let profile = stacks.as_ref().map(Stacks::profile);
    let object_files = stacks
        .as_ref()
        .map(|s| s.object_files(&imported.objects))
        .unwrap_or_default();
    let truncated_stacks = stacks.as_ref().map_or(0, |s| s.truncated);
    let profiled = profile.as_ref().map_or(0, |p| p.instructions);
    let rap = match (rap, &config.rap) {
        (Some(mut t), Some(spec)) => {
            t.finish_trees()?;
            Some((spec.clone(), t))
        }
        _ => None,
    };
    let st = &imported.stats;
    let summaries = RunSummaries {
        program: binary.display().to_string(),
        args: Vec::new(),
        deterministic: true,
        outcome: None,
        interrupted: false,
        instructions: profile
            .as_ref()
            .map_or(st.samples_in_program, |p| p.instructions),
        wall: started.elapsed(),
        classes: None,
        timing: None,
        machine: Default::default(),
        host_max_rss_bytes: None,
        profile,
        processes: Vec::new(),
        phases: None,
        rap,
        samples: vec![imported.samples.clone()],
        process_samples: Vec::new(),
        wpp: None,
        rpa: None,
        objects: Vec::new(),
        symbols: None,
        debug_objects: Vec::new(),
        window: None,
        sampled: Some(format!(
            "imported from {} ({}): counts are samples taken by perf ({} in the program of {} samples; {} in its processes with their libraries and the kernel{}), not exact instruction counts; paths come from {} hardware branch records",
            input.display(),
            match format {
                Format::PerfData => "perf.data",
                Format::PerfScript => "perf script text",
            },
            st.samples_in_program,
            st.samples,
            profiled,
            if imported.stats.callchains > 0 {
                ", with their call chains"
            } else {
                ", without call chains (perf record -g)"
            },
            st.branches_in_program
        )),
    };
    Ok(ImportResult {
        imported,
        format,
        summaries,
        object_files,
        truncated_stacks,
    })
}

/// Reads `input`, calling `observe` with the IP and data address of each sample in the
/// program, in file order.
fn read(
    input: &Path,
    (binary, elf, program_id): (&Path, &[u8], &str),
    hooks: ImportHooks<'_>,
    observe: &mut dyn FnMut(u64, Option<u64>),
    mut stacks: Option<&mut Stacks>,
) -> Result<(Imported, Format)> {
    let open_err = |e: std::io::Error| Error::Read {
        what: "perf data",
        path: input.to_path_buf(),
        detail: format!("{}: {e}", input.display()),
    };
    // no FIFO or device: the open cannot block, and the length is the file's
    let (file, meta) = crate::files::open_regular(input, "perf data")?;
    let len = meta.len();
    let mut src = BufReader::with_capacity(1 << 18, file);
    let head = src.fill_buf().map_err(open_err)?;
    let format = sniff(head);
    let target = target(binary, elf, format)?;
    let wrap = |detail| Error::Import {
        path: input.to_path_buf(),
        detail,
    };
    let program = binary.display().to_string();
    let progress = hooks.progress;
    match format {
        Format::PerfData => {
            let mut r = Reader::new(src, len).map_err(wrap)?;
            let period = r.attrs.first().filter(|a| !a.freq).map_or(0, |a| a.period);
            let mut imp = Importer::new(target, &r.build_ids);
            let mut n = 0u64;
            // in time order, as perf report reads them (a mapping can be written after
            // samples another CPU took in it)
            let mut order = outcrop_perf::Ordered::new();
            let mut more = true;
            while more {
                match r.next_event().map_err(wrap)? {
                    Some((at, e)) => {
                        order.push(at, r.last_time(), e);
                        n += 1;
                        if n % 65536 == 0 {
                            progress(at, len);
                        }
                    }
                    None => {
                        order.finish();
                        more = false;
                    }
                }
                while let Some((_, e)) = order.pop() {
                    if let Some((ip, addr)) = imp.event(&e) {
                        observe(ip, addr);
                    }
                    if let (Some(st), Event::Sample(s)) = (stacks.as_deref_mut(), &e) {
                        st.add(&imp, s);
                    }
                }
            }
            progress(len, len);
            Ok((imp.finish(&program, program_id, period), format))
        }
        Format::PerfScript => {
            let mut imp = Importer::new(target, &[]);
            let mut line = Vec::new();
            let (mut lineno, mut read) = (0u64, 0u64);
            loop {
                line.clear();
                let n = (&mut src)
                    .take(outcrop_perf::MAX_LINE as u64 + 1)
                    .read_until(b'\n', &mut line)
                    .map_err(open_err)?;
                if n == 0 {
                    break;
                }
                lineno += 1;
                read += n as u64;
                let text = std::str::from_utf8(&line).map_err(|_| {
                    wrap(outcrop_perf::Error::Text {
                        line: lineno,
                        what: "not UTF-8".into(),
                    })
                })?;
                if let Some(s) = outcrop_perf::parse_line(text, lineno).map_err(wrap)? {
                    if let Some((ip, addr)) = imp.sample(&s) {
                        observe(ip, addr);
                    }
                    if let Some(st) = stacks.as_deref_mut() {
                        st.add(&imp, &s);
                    }
                }
                if lineno % 65536 == 0 {
                    progress(read, len);
                }
            }
            progress(len, len);
            Ok((imp.finish(&program, program_id, 0), format))
        }
    }
}
