//! `outcrop trace`: make trace files from demo generators or other formats, convert them back,
//! and check/describe them.

use crate::input::{self, Demo, InputFormat};
use crate::outcrop_events::trace::{self, RecordKind, TraceWriter};
use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// Trace files hold u64 event streams in checksummed zstd chunks (docs/formats.md).
#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Write a demo stream to a trace file.
    ///
    /// Example: outcrop trace gen --demo code --events 1000000 -o code.otr
    Gen(GenArgs),
    /// Convert between text, raw u64le and trace files.
    ///
    /// Example: outcrop trace convert pcs.txt -o pcs.otr ; outcrop trace convert pcs.otr --to text -o -
    Convert(ConvertArgs),
    /// Check every chunk of a trace file and print what it holds.
    Info(InfoArgs),
}

#[derive(Args, Debug)]
pub struct GenArgs {
    /// Which demo stream.
    #[arg(long, value_enum)]
    demo: Demo,
    /// How many values.
    #[arg(long, default_value_t = 1_000_000)]
    events: u64,
    /// Generator seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output file.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
}

/// Output formats of `trace convert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// One decimal integer per line.
    Text,
    /// Raw little-endian u64.
    U64le,
    /// Outcrop trace file.
    Trace,
}

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// Input file, or `-` for stdin.
    #[arg(value_name = "FILE")]
    input: PathBuf,
    /// Input format (detected when omitted, as for `outcrop rap`).
    #[arg(long, value_enum)]
    from: Option<InputFormat>,
    /// Output format.
    #[arg(long, value_enum, default_value = "trace")]
    to: OutputFormat,
    /// Output file, or `-` for stdout (text and u64le only).
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
}

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// The trace file.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: TraceCommand) -> Result<()> {
    match cmd {
        TraceCommand::Gen(a) => {
            let mut input = input::demo(a.demo, a.events, a.seed);
            write_output(&mut input, OutputFormat::Trace, &a.output)
        }
        TraceCommand::Convert(a) => {
            let mut input = input::open(Some(&a.input), a.from)?;
            write_output(&mut input, a.to, &a.output)
        }
        TraceCommand::Info(a) => {
            let (f, _) = crate::files::open_regular(&a.file, "trace")?;
            let info = trace::read_info(std::io::BufReader::new(f))
                .with_context(|| format!("{} is not a valid trace", a.file.display()))?;
            let mut out = std::io::stdout().lock();
            if a.json {
                let v = serde_json::json!({
                    "file": a.file.display().to_string(),
                    "kind": info.kind.name(),
                    "version": info.version,
                    "chunks": info.chunks,
                    "values": info.values,
                    "compressed_bytes": info.compressed_bytes,
                    "uncompressed_bytes": info.uncompressed_bytes,
                });
                writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
            } else {
                writeln!(
                    out,
                    "{}: trace v{}, {} records, {} values in {} chunks, {} bytes compressed ({:.2} bytes/value), all checksums good",
                    a.file.display(),
                    info.version,
                    info.kind.name(),
                    info.values,
                    info.chunks,
                    info.compressed_bytes,
                    info.compressed_bytes as f64 / info.values.max(1) as f64
                )?;
            }
            Ok(())
        }
    }
}

fn write_output(
    input: &mut input::Input,
    to: OutputFormat,
    output: &std::path::Path,
) -> Result<()> {
    let bar = input::progress(input);
    if output.as_os_str() == "-" {
        anyhow::ensure!(
            to != OutputFormat::Trace,
            "trace files must go to a file, not stdout"
        );
        let mut w = BufWriter::new(std::io::stdout().lock());
        input::for_each_batch(input, &bar, |_, values| write_plain(&mut w, to, values))?;
        w.flush()?;
        return Ok(());
    }
    crate::files::write_output(output, |f| {
        let mut w = BufWriter::new(f);
        if to == OutputFormat::Trace {
            let mut tw = TraceWriter::new(&mut w, RecordKind::U64)?;
            input::for_each_batch(input, &bar, |_, values| {
                anyhow::Ok(tw.write_values(values)?)
            })?;
            tw.finish()?;
        } else {
            input::for_each_batch(input, &bar, |_, values| write_plain(&mut w, to, values))?;
        }
        w.flush()?;
        Ok(())
    })
    .with_context(|| format!("writing {}", output.display()))
}

fn write_plain(w: &mut impl Write, to: OutputFormat, values: &[u64]) -> Result<()> {
    for &v in values {
        match to {
            OutputFormat::Text => writeln!(w, "{v}")?,
            _ => w.write_all(&v.to_le_bytes())?,
        }
    }
    Ok(())
}
