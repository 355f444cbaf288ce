//! Importing real hardware's samples: a perf.data file (or `perf script -F ip,brstack` text)
//! and the program it sampled, read with bounds, into Outcrop's samples
//! ([`outcrop_perf::Imported`]). The one place that opens the input; the readers and the
//! importer are the `perf` crate's.

use crate::error::{Error, Result};
use object::{Object, ObjectSegment};
use outcrop_perf::{Imported, Importer, Reader, Segment, Target};
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

/// Imports the samples of the program `binary` (its bytes `elf`) from `input`. `program`
/// and `program_id` are what the samples file records.
pub fn import(
    input: &Path,
    binary: &Path,
    elf: &[u8],
    program_id: &str,
    hooks: ImportHooks<'_>,
) -> Result<(Imported, Format)> {
    let open_err = |e: std::io::Error| Error::Read {
        what: "perf data",
        path: input.to_path_buf(),
        detail: format!("{}: {e}", input.display()),
    };
    let file = std::fs::File::open(input).map_err(open_err)?;
    let meta = file.metadata().map_err(open_err)?;
    if !meta.is_file() {
        return Err(open_err(std::io::Error::other("not a regular file")));
    }
    let len = meta.len();
    let mut src = BufReader::with_capacity(1 << 18, file);
    let head = src.fill_buf().map_err(open_err)?;
    let format = sniff(head);
    let target = target(binary, elf, format)?;
    let wrap = |source| Error::Import {
        path: input.to_path_buf(),
        source,
    };
    let program = binary.display().to_string();
    let progress = hooks.progress;
    match format {
        Format::PerfData => {
            let mut r = Reader::new(src, len).map_err(wrap)?;
            let period = r.attrs.first().filter(|a| !a.freq).map_or(0, |a| a.period);
            let mut imp = Importer::new(target, &r.build_ids);
            let mut n = 0u64;
            while let Some((at, e)) = r.next_event().map_err(wrap)? {
                imp.event(&e);
                n += 1;
                if n % 65536 == 0 {
                    progress(at, len);
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
                    imp.sample(&s);
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
