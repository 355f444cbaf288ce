//! Whole-program-profile capture on the machine (`outcrop wpp record`): the machine's
//! basic-block stream into an [`outcrop_strata::WppBuilder`] and a `.wpp` file.
//!
//! Threaded (the default), three stages joined by bounded single-producer/single-consumer
//! channels, as the paper's separate processes over shared memory (§II, §III.A):
//!
//! ```text
//!  machine thread ──batches of (start, insns)──▶ builder thread ──item chunks──▶ writer thread
//!  (only appends)   ◀──── empty batches back ───  (paths, strata)               (zstd, file)
//! ```
//!
//! The machine thread does nothing per block but append to a batch. Batches are recycled, so
//! steady state allocates nothing. Inline mode runs every stage on the machine thread; the
//! BENCHMARKS figure "threaded vs inline" compares the two. Nothing is dropped: a full
//! channel blocks the stage before it.

use outcrop_rv::{Control, Machine, Observer, Outcome};
use outcrop_strata::format::stream_section;
use outcrop_strata::{
    BuildStats, Config, Dictionaries, FileStats, Item, RunInfo, SectionBytes, WppBuilder, WppWriter,
};
use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::Instant;

/// Capture settings.
#[derive(Clone, Copy, Debug)]
pub struct CaptureOptions {
    /// Builder and file settings.
    pub config: Config,
    /// Run the builder and the compressor on threads of their own.
    pub threaded: bool,
    /// Blocks per batch handed from the machine thread to the builder thread.
    pub batch_blocks: usize,
    /// Batches in flight between the machine and the builder.
    pub ring_batches: usize,
}

impl Default for CaptureOptions {
    fn default() -> CaptureOptions {
        CaptureOptions {
            config: Config::default(),
            threaded: true,
            batch_blocks: 1 << 16,
            ring_batches: 8,
        }
    }
}

/// A finished capture.
#[derive(Debug)]
pub struct Captured<W> {
    /// How the guest ended.
    pub outcome: Outcome,
    /// Everything the file's `STAT` section holds (`run` as passed in, with the time set).
    pub stats: FileStats,
    /// Bytes per section kind.
    pub bytes: SectionBytes,
    /// The writer, flushed.
    pub writer: W,
}

/// Errors of a capture: the file could not be written.
pub type CaptureError = outcrop_strata::Error;

/// Runs `machine` to its end, writing its whole-program profile to `w`. `run` describes the
/// run for the file (its `record_seconds` and `threaded` are filled in here, unless
/// `deterministic`, which writes 0 seconds so that files are byte-identical).
pub fn capture<W: Write + Send>(
    machine: &mut Machine,
    w: W,
    opts: &CaptureOptions,
    mut run: RunInfo,
    deterministic: bool,
) -> Result<Captured<W>, CaptureError> {
    opts.config.validate()?;
    let start = Instant::now();
    let writer = WppWriter::new(w, opts.config.codec)?;
    let (outcome, writer, items, dicts, build) = if opts.threaded {
        threaded(machine, writer, opts)?
    } else {
        inline(machine, writer, opts)?
    };
    let mut writer = writer;
    for chunk in items.chunks(opts.config.chunk_items.max(1)) {
        writer.write_items(chunk)?;
    }
    run.threaded = opts.threaded;
    run.outcome = match &outcome {
        Outcome::Exited(c) => format!("exited {c}"),
        Outcome::Fault(f) => format!("fault: {f}"),
        Outcome::InstructionLimit => "instruction limit".to_string(),
        Outcome::Stopped => "stopped".to_string(),
    };
    let c = &opts.config;
    let mut stats = FileStats {
        layers: c.layers,
        max_path_len: c.max_path_len,
        max_cycle_len: c.max_cycle_len,
        layer_cap: c.layer_cap,
        build,
        run,
    };
    // the time up to the file's last section (the statistics section itself is not counted)
    stats.run.record_seconds = if deterministic {
        0.0
    } else {
        start.elapsed().as_secs_f64()
    };
    stats.build.stream_items = writer.items_written();
    let (w, bytes) = writer.finish(&dicts, stats.clone())?;
    Ok(Captured {
        outcome,
        stats,
        bytes,
        writer: w,
    })
}

type Stages<W> = (Outcome, WppWriter<W>, Vec<Item>, Dictionaries, BuildStats);

/// Every stage on the calling thread.
struct Inline<'a, W: Write> {
    builder: WppBuilder,
    writer: &'a mut WppWriter<W>,
    hold: usize,
    error: Option<CaptureError>,
}

impl<W: Write> Observer for Inline<'_, W> {
    const BLOCKS: bool = true;
    #[inline]
    fn block(&mut self, start: u64, insns: u32) -> Control {
        self.builder.push_block(start, insns);
        if self.builder.pending() >= self.hold {
            let items = self.builder.take_items();
            if let Err(e) = self.writer.write_items(&items) {
                self.error = Some(e);
                return Control::Stop;
            }
        }
        Control::Continue
    }
}

fn inline<W: Write>(
    machine: &mut Machine,
    mut writer: WppWriter<W>,
    opts: &CaptureOptions,
) -> Result<Stages<W>, CaptureError> {
    let mut obs = Inline {
        builder: WppBuilder::new(opts.config),
        writer: &mut writer,
        hold: opts.config.hold_items,
        error: None,
    };
    let outcome = machine.run(&mut obs);
    if let Some(e) = obs.error {
        return Err(e);
    }
    let (items, dicts, build) = obs.builder.finish();
    Ok((outcome, writer, items, dicts, build))
}

type Batch = Vec<(u64, u32)>;

/// The machine thread's end of the ring: appends blocks, hands over full batches.
struct BatchSender {
    batch: Batch,
    cap: usize,
    tx: SyncSender<Batch>,
    empty: Receiver<Batch>,
    closed: bool,
}

impl BatchSender {
    fn send(&mut self) -> bool {
        let next = self
            .empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(self.cap));
        let full = std::mem::replace(&mut self.batch, next);
        if self.tx.send(full).is_err() {
            // the builder stopped (its writer failed): stop the guest, the error comes back
            // through the join
            self.closed = true;
        }
        !self.closed
    }
}

impl Observer for BatchSender {
    const BLOCKS: bool = true;
    #[inline]
    fn block(&mut self, start: u64, insns: u32) -> Control {
        self.batch.push((start, insns));
        if self.batch.len() >= self.cap && !self.send() {
            return Control::Stop;
        }
        Control::Continue
    }
}

fn threaded<W: Write + Send>(
    machine: &mut Machine,
    mut writer: WppWriter<W>,
    opts: &CaptureOptions,
) -> Result<Stages<W>, CaptureError> {
    let cap = opts.batch_blocks.max(1);
    let (tx, rx) = sync_channel::<Batch>(opts.ring_batches.max(1));
    let (empty_tx, empty_rx) = sync_channel::<Batch>(opts.ring_batches.max(1) + 2);
    let (chunk_tx, chunk_rx) = sync_channel::<Vec<Item>>(2);
    let config = opts.config;
    std::thread::scope(|s| {
        let builder = s.spawn(move || {
            let mut b = WppBuilder::new(config);
            for mut batch in rx {
                for &(start, insns) in &batch {
                    b.push_block(start, insns);
                }
                if b.pending() >= config.hold_items && chunk_tx.send(b.take_items()).is_err() {
                    // the writer failed; dropping `rx` stops the machine
                    return None;
                }
                batch.clear();
                let _ = empty_tx.try_send(batch);
            }
            Some(b.finish())
        });
        let codec = config.codec;
        let writer_thread = s.spawn(move || -> Result<WppWriter<W>, CaptureError> {
            for items in chunk_rx {
                let sec = stream_section(&items, codec)?;
                writer.write_stream_section(&sec, items.len() as u64)?;
            }
            Ok(writer)
        });
        let mut sender = BatchSender {
            batch: Vec::with_capacity(cap),
            cap,
            tx,
            empty: empty_rx,
            closed: false,
        };
        let outcome = machine.run(&mut sender);
        if !sender.closed && !sender.batch.is_empty() {
            sender.send();
        }
        drop(sender);
        let built = builder.join();
        let writer = match writer_thread.join() {
            Ok(r) => r?,
            Err(_) => return Err(stage_panicked("writer")),
        };
        match built {
            Ok(Some((items, dicts, build))) => Ok((outcome, writer, items, dicts, build)),
            Ok(None) => Err(stage_panicked("builder")),
            Err(_) => Err(stage_panicked("builder")),
        }
    })
}

fn stage_panicked(stage: &str) -> CaptureError {
    CaptureError::Io {
        source: std::io::Error::other(format!("the capture's {stage} stage stopped")),
    }
}
