//! Opening value streams for commands: files or stdin in one of the supported formats (given or
//! detected), or a generated demo stream; progress bars for large inputs on a terminal.

use crate::{refuse, Doing, Result};
use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use outcrop_events::raw::U64LeReader;
use outcrop_events::synth::{self, StreamKind};
use outcrop_events::text::TextReader;
use outcrop_events::trace::TraceReader;
use outcrop_events::ValueReader;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// How the values of an input are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// One integer per line: decimal or 0x-hex; `#` starts a comment.
    Text,
    /// Raw little-endian u64 values, 8 bytes each.
    U64le,
    /// An Outcrop trace file (`.otr`, see docs/formats.md).
    Trace,
}

/// Synthetic demo streams (deterministic for a seed; see `outcrop_events::synth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Demo {
    /// Basic-block addresses with loop locality and a Zipf-skewed hot set.
    Code,
    /// Heavy-tailed load values: small integers, pointers, a long random tail.
    Values,
    /// Uniform random 64-bit values.
    Uniform,
}

impl From<Demo> for StreamKind {
    fn from(d: Demo) -> StreamKind {
        match d {
            Demo::Code => StreamKind::CodeLike,
            Demo::Values => StreamKind::ValueLike,
            Demo::Uniform => StreamKind::Uniform,
        }
    }
}

/// An opened stream of values.
pub struct Input {
    /// The reader.
    pub reader: Box<dyn ValueReader + Send>,
    /// What to call it in messages.
    pub name: String,
    /// Total size for the progress bar: bytes of a file, or 8 × values of a demo stream.
    pub size: Option<u64>,
}

/// Inputs at least this large get a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 32 << 20;

/// Opens `path` (`None` or `-` = stdin) as `format`, or detects the format: `.otr` files and
/// inputs starting with the trace magic are traces, `.u64`/`.bin` files are raw, the rest text.
pub fn open(path: Option<&Path>, format: Option<InputFormat>) -> Result<Input> {
    let stdin = path.is_none_or(|p| p.as_os_str() == "-");
    if path.is_none() && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        refuse!(
            "no input: give a FILE (text, raw or .otr), pipe values in (`seq 1 1000 | outcrop rap -`), or try --demo code"
        );
    }
    let (mut buf, name, size): (Box<dyn BufRead + Send>, String, Option<u64>) = if stdin {
        (
            Box::new(BufReader::with_capacity(1 << 16, std::io::stdin())),
            "<stdin>".into(),
            None,
        )
    } else {
        let p = path.unwrap_or(Path::new("-"));
        let (f, meta) = crate::files::open_regular(p, "input")?;
        let size = Some(meta.len());
        (
            Box::new(BufReader::with_capacity(1 << 16, f)),
            p.display().to_string(),
            size,
        )
    };
    let format = match format {
        Some(f) => f,
        None => detect(path, &mut buf).doing(|| format!("cannot read {name}"))?,
    };
    let reader: Box<dyn ValueReader + Send> = match format {
        InputFormat::Text => Box::new(TextReader::new(buf)),
        InputFormat::U64le => Box::new(U64LeReader::new(buf)),
        InputFormat::Trace => Box::new(
            TraceReader::new(buf).doing(|| format!("{name} is not a readable trace file"))?,
        ),
    };
    Ok(Input { reader, name, size })
}

fn detect(path: Option<&Path>, buf: &mut Box<dyn BufRead + Send>) -> std::io::Result<InputFormat> {
    if let Some(ext) = path.and_then(|p| p.extension()).and_then(|e| e.to_str()) {
        match ext {
            "otr" => return Ok(InputFormat::Trace),
            "u64" | "bin" => return Ok(InputFormat::U64le),
            _ => {}
        }
    }
    let head = buf.fill_buf()?;
    Ok(if head.starts_with(b"OUTCROPT") {
        InputFormat::Trace
    } else {
        InputFormat::Text
    })
}

/// A demo stream of `events` values.
pub fn demo(kind: Demo, events: u64, seed: u64) -> Input {
    Input {
        reader: Box::new(DemoReader {
            iter: synth::stream(kind.into(), seed),
            left: events,
            produced: 0,
        }),
        name: format!("demo:{kind:?}").to_lowercase(),
        size: Some(events.saturating_mul(8)),
    }
}

struct DemoReader {
    iter: Box<dyn Iterator<Item = u64> + Send>,
    left: u64,
    produced: u64,
}

impl ValueReader for DemoReader {
    fn read_values(
        &mut self,
        out: &mut Vec<u64>,
        max: usize,
    ) -> Result<usize, outcrop_events::Error> {
        let take = (max as u64).min(self.left) as usize;
        out.extend(self.iter.by_ref().take(take));
        self.left -= take as u64;
        self.produced += take as u64;
        Ok(take)
    }
    fn bytes_read(&self) -> u64 {
        self.produced * 8
    }
}

/// A progress bar on stderr for large inputs; hidden when stderr is not a terminal.
pub fn progress(input: &Input) -> ProgressBar {
    match input.size {
        Some(size) if size >= PROGRESS_MIN_BYTES => {
            let bar = ProgressBar::with_draw_target(Some(size), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} {msg} [{bar:30}] {bytes}/{total_bytes} ({eta})",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.set_message(input.name.clone());
            bar
        }
        _ => ProgressBar::hidden(),
    }
}

/// perf's build-id cache: `$PERF_BUILDID_DIR`, else `$HOME/.debug` (as perf finds it).
pub fn perf_build_id_cache() -> Option<std::path::PathBuf> {
    std::env::var_os("PERF_BUILDID_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".debug")))
}

/// A progress bar on stderr for reading the file at `path` when it is large (64 MiB or more)
/// and stderr is a terminal; hidden otherwise.
pub fn file_progress(path: &std::path::Path, verb: &str) -> ProgressBar {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size < 64 << 20 || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(size), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(format!("{verb} {}", path.display()));
    bar
}

/// Values a batch of [`for_each_batch`] holds.
const BATCH: usize = 1 << 16;

/// Reads every value of `input` in batches, calling `each` per batch with the index of the
/// batch's first value. Updates `bar`. A file or a demo stream is read on a second thread,
/// up to two batches ahead, so that reading overlaps `each`; stdin is read in turn (a reader
/// thread could wait on a pipe after `each` failed). The batches are the same either way.
pub fn for_each_batch<E: From<crate::Error>>(
    input: &mut Input,
    bar: &ProgressBar,
    each: impl FnMut(u64, &[u64]) -> Result<(), E>,
) -> Result<u64, E> {
    if input.size.is_some() {
        return read_ahead(input, bar, each);
    }
    let mut each = each;
    let mut buf = Vec::with_capacity(BATCH);
    let mut seen = 0u64;
    loop {
        buf.clear();
        let got = input
            .reader
            .read_values(&mut buf, BATCH)
            .doing(|| format!("reading {}", input.name))?;
        if got == 0 {
            break;
        }
        each(seen, &buf)?;
        seen += got as u64;
        bar.set_position(input.reader.bytes_read());
    }
    bar.finish_and_clear();
    Ok(seen)
}

/// [`for_each_batch`] with the reading on a scoped thread.
fn read_ahead<E: From<crate::Error>>(
    input: &mut Input,
    bar: &ProgressBar,
    mut each: impl FnMut(u64, &[u64]) -> Result<(), E>,
) -> Result<u64, E> {
    type Batch = std::result::Result<(Vec<u64>, u64), crate::Error>;
    let (reader, name) = (&mut input.reader, &input.name);
    std::thread::scope(|s| {
        let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Batch>(2);
        let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Vec<u64>>();
        s.spawn(move || loop {
            let mut buf = empty_rx
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(BATCH));
            buf.clear();
            let got = reader
                .read_values(&mut buf, BATCH)
                .doing(|| format!("reading {name}"));
            let sent = match got {
                Ok(0) => break,
                Ok(_) => full_tx.send(Ok((buf, reader.bytes_read()))),
                Err(e) => full_tx.send(Err(e)),
            };
            if sent.is_err() {
                break; // the consumer stopped
            }
        });
        let mut seen = 0u64;
        for batch in full_rx {
            let (buf, bytes) = batch?;
            each(seen, &buf)?;
            seen += buf.len() as u64;
            bar.set_position(bytes);
            let _ = empty_tx.send(buf);
        }
        bar.finish_and_clear();
        Ok(seen)
    })
}

/// `--timing` value: a preset name or a TOML file (read with a bound).
pub fn timing_config(spec: &str) -> Result<outcrop_timing::Config> {
    use outcrop_timing::config::PRESETS;
    if PRESETS.iter().any(|(name, _)| *name == spec) {
        return outcrop_timing::Config::preset(spec)
            .map_err(|e| crate::Error::Refused(format!("--timing={spec}: {e}")));
    }
    let path = Path::new(spec);
    if !path.exists() {
        let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
        refuse!(
            "--timing={spec}: neither a preset ({}) nor an existing file",
            names.join(", ")
        );
    }
    let text =
        crate::files::read_text_bounded(path, "timing config", crate::files::MAX_CONFIG_BYTES)?;
    outcrop_timing::Config::from_toml(&text)
        .map_err(|e| crate::Error::Refused(format!("timing config {}: {e}", path.display())))
}

/// `--env` value: `KEY=VALUE` with a non-empty key.
pub fn parse_env(s: &str) -> std::result::Result<std::ffi::OsString, String> {
    match s.split_once('=') {
        Some((k, _)) if !k.is_empty() => Ok(s.into()),
        _ => Err(format!(
            "`{s}`: expected KEY=VALUE (e.g. OUTCROP_PROFILE=sites.txt)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every batch of `input`, in order, read in turn (as stdin is).
    fn in_turn(mut input: Input) -> Vec<Vec<u64>> {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while input.reader.read_values(&mut buf, BATCH).unwrap() > 0 {
            out.push(std::mem::take(&mut buf));
        }
        out
    }

    #[test]
    fn reading_ahead_gives_the_batches_reading_in_turn_gives() {
        let events = 3 * BATCH as u64 + 17;
        let mut ahead = Vec::new();
        let n = for_each_batch(
            &mut demo(Demo::Values, events, 3),
            &ProgressBar::hidden(),
            |first, b| {
                assert_eq!(
                    first,
                    ahead.iter().map(|v: &Vec<u64>| v.len() as u64).sum::<u64>()
                );
                ahead.push(b.to_vec());
                Ok::<(), crate::Error>(())
            },
        )
        .unwrap();
        assert_eq!(n, events);
        assert_eq!(ahead, in_turn(demo(Demo::Values, events, 3)));
    }

    #[test]
    fn a_failing_batch_stops_the_reading_and_returns_its_error() {
        let mut calls = 0;
        let got = for_each_batch(
            &mut demo(Demo::Uniform, 50 * BATCH as u64, 1),
            &ProgressBar::hidden(),
            |_, _| {
                calls += 1;
                if calls == 2 {
                    return Err(crate::Error::Refused("stop".into()));
                }
                Ok(())
            },
        );
        assert!(matches!(got, Err(crate::Error::Refused(m)) if m == "stop"));
        assert_eq!(calls, 2);
    }
}
