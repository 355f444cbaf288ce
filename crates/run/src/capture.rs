//! Whole-program-profile capture (WPP paper): the basic-block stream into an
//! [`outcrop_strata::WppBuilder`] and a `.wpp` file.
//!
//! Threaded (the default), three stages joined by bounded rings ([`crate::pipeline`]), as
//! the paper's separate processes over shared memory (§II, §III.A):
//!
//! ```text
//!  machine thread ──batches of (start, insns)──▶ builder thread ──item chunks──▶ writer thread
//!  (only appends)   ◀──── empty batches back ───  (paths, strata)               (zstd, file)
//! ```
//!
//! Inline mode runs every stage on the machine thread; the BENCHMARKS figure "threaded vs
//! inline" compares the two. Nothing is dropped: a full ring blocks the stage before it.

use crate::pipeline::{ring, RingSender};
use outcrop_events::processes::ProcessRows;
use outcrop_events::record::{Control, Mapping, Observer, ProcessSwitch};
use outcrop_rv::Outcome;
use outcrop_strata::format::stream_section_joined;
use outcrop_strata::{
    BuildStats, Config, Dictionaries, FileStats, Item, RunInfo, SectionBytes, WppBuilder, WppWriter,
};
use std::io::Write;
use std::sync::mpsc::sync_channel;
use std::thread::{Scope, ScopedJoinHandle};
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
    /// Seconds a bare run of the same program took (`wpp record --baseline`), recorded in
    /// the file beside the capture's own time (0: not measured; always 0 when
    /// deterministic).
    pub baseline_seconds: f64,
}

impl Default for CaptureOptions {
    fn default() -> CaptureOptions {
        CaptureOptions {
            config: Config::default(),
            threaded: true,
            batch_blocks: 1 << 16,
            ring_batches: 8,
            baseline_seconds: 0.0,
        }
    }
}

/// A finished capture.
#[derive(Debug)]
pub struct Captured<W> {
    /// Everything the file's `STAT` section holds (`run` as passed in, with the time set).
    pub stats: FileStats,
    /// Bytes per section kind.
    pub bytes: SectionBytes,
    /// The writer, flushed.
    pub writer: W,
}

/// Errors of a capture: the configuration is invalid or the file could not be written.
pub type CaptureError = outcrop_strata::Error;

type Built = (Vec<Item>, Dictionaries, BuildStats);

/// In the ring of blocks, a start address that no block has (pcs lie below 2^47): the entry
/// is a switch to the guest thread its length field names.
const THREAD_SWITCH: u64 = u64::MAX;
/// In the ring of blocks, a switch of (process, program): the length field is the row's
/// number times 2, plus 1 for an `execve`.
const PROCESS_SWITCH: u64 = u64::MAX - 1;

/// The observer half of a capture: what the machine thread does per block.
pub struct WppFront<W: Write> {
    stages: Stages<W>,
    /// The (process, program) rows the stream's process marks name.
    rows: ProcessRows<()>,
}

/// Where the blocks go.
enum Stages<W: Write> {
    /// Every stage here.
    Inline {
        /// The path and strata builder.
        builder: Box<WppBuilder>,
        /// The file.
        writer: WppWriter<W>,
        /// Items held before a write.
        hold: usize,
        /// The first write error (the run stops at it).
        error: Option<CaptureError>,
    },
    /// Blocks go to the builder thread.
    Threaded(RingSender<(u64, u32)>),
}

/// Compiled code feeds it from its basic-block trace ([`Observer::TRACE`]): a store per basic
/// block, no record or hook per block; it takes no counts.
impl<W: Write> Observer for WppFront<W> {
    const BLOCKS: bool = true;
    const MAPPINGS: bool = true;
    const COUNTS: bool = true;
    const UNCOUNTED: bool = true;
    const TRACE: bool = true;
    #[inline]
    fn block(&mut self, start: u64, insns: u32) -> Control {
        match &mut self.stages {
            Stages::Threaded(tx) => {
                if tx.push((start, insns)) {
                    Control::Continue
                } else {
                    // the builder stopped (its writer failed); the error comes back at finish
                    Control::Stop
                }
            }
            Stages::Inline {
                builder,
                writer,
                hold,
                error,
            } => {
                builder.push_block(start, insns);
                if builder.pending() >= *hold {
                    let items = builder.take_items();
                    if let Err(e) = writer.write_items(&items) {
                        *error = Some(e);
                        return Control::Stop;
                    }
                }
                Control::Continue
            }
        }
    }

    /// Blocks from compiled code's trace: copied into the batch at once.
    fn blocks(&mut self, blocks: &[(u64, u32)]) -> Control {
        match &mut self.stages {
            Stages::Threaded(tx) => {
                if tx.extend(blocks) {
                    Control::Continue
                } else {
                    Control::Stop
                }
            }
            Stages::Inline { .. } => {
                let mut c = Control::Continue;
                for &(start, insns) in blocks {
                    c = c.and(self.block(start, insns));
                }
                c
            }
        }
    }

    /// Each thread's blocks make paths of their own (`WppBuilder::switch_thread`).
    fn thread(&mut self, index: u32) -> Control {
        match &mut self.stages {
            Stages::Threaded(tx) => {
                if tx.push((THREAD_SWITCH, index)) {
                    Control::Continue
                } else {
                    Control::Stop
                }
            }
            Stages::Inline { builder, .. } => {
                builder.switch_thread(index);
                Control::Continue
            }
        }
    }

    /// Each (process, program)'s blocks follow its process mark
    /// (`WppBuilder::switch_process`).
    fn process(&mut self, p: &ProcessSwitch) -> Control {
        if !self.rows.switch(p, &mut (), || ()) {
            return Control::Continue;
        }
        let row = self.rows.running() as u32;
        let exec = p.pid == p.from_pid;
        match &mut self.stages {
            Stages::Threaded(tx) => {
                if tx.push((PROCESS_SWITCH, row * 2 + u32::from(exec))) {
                    Control::Continue
                } else {
                    Control::Stop
                }
            }
            Stages::Inline { builder, .. } => {
                builder.switch_process(row, exec);
                Control::Continue
            }
        }
    }

    fn mapped(&mut self, m: &Mapping<'_>) -> Control {
        self.rows.mapped(m);
        Control::Continue
    }
}

/// A capture in progress: the front for the machine thread and, threaded, the stages.
pub struct WppStage<'s, W: Write + Send> {
    /// The observer to attach to the run.
    pub front: WppFront<W>,
    builder: Option<ScopedJoinHandle<'s, Option<Built>>>,
    writer: Option<ScopedJoinHandle<'s, Result<WppWriter<W>, CaptureError>>>,
    opts: CaptureOptions,
    run: RunInfo,
    deterministic: bool,
    start: Instant,
}

/// Starts a capture into `w`, spawning its stages in `scope` when threaded. `run` describes the
/// run for the file (its `record_seconds` and `threaded` are filled in at the end, unless
/// `deterministic`, which writes 0 seconds so that files are byte-identical).
pub fn start<'s, W: Write + Send + 's>(
    scope: &'s Scope<'s, '_>,
    w: W,
    opts: CaptureOptions,
    run: RunInfo,
    deterministic: bool,
) -> Result<WppStage<'s, W>, CaptureError> {
    opts.config.validate()?;
    let start = Instant::now();
    let mut writer = WppWriter::new(w, opts.config.codec)?.with_join(on_two_threads);
    let config = opts.config;
    if !opts.threaded {
        return Ok(WppStage {
            front: WppFront {
                stages: Stages::Inline {
                    builder: Box::new(WppBuilder::new(config)),
                    writer,
                    hold: config.hold_items,
                    error: None,
                },
                rows: ProcessRows::new(),
            },
            builder: None,
            writer: None,
            opts,
            run,
            deterministic,
            start,
        });
    }
    let (tx, rx) = ring::<(u64, u32)>(opts.batch_blocks, opts.ring_batches);
    let (chunk_tx, chunk_rx) = sync_channel::<Vec<Item>>(2);
    let builder = scope.spawn(move || {
        let mut b = WppBuilder::new(config);
        let mut ok = true;
        rx.for_each_batch(|batch| {
            for &(start, insns) in batch {
                if start == THREAD_SWITCH {
                    b.switch_thread(insns);
                } else if start == PROCESS_SWITCH {
                    b.switch_process(insns / 2, insns & 1 == 1);
                } else {
                    b.push_block(start, insns);
                }
            }
            if b.pending() >= config.hold_items && chunk_tx.send(b.take_items()).is_err() {
                // the writer failed; closing the ring stops the machine
                ok = false;
            }
            ok
        });
        ok.then(|| b.finish())
    });
    let codec = config.codec;
    let writer_thread = scope.spawn(move || -> Result<WppWriter<W>, CaptureError> {
        for items in chunk_rx {
            let sec = stream_section_joined(&items, codec, on_two_threads)?;
            writer.write_stream_section(&sec, items.len() as u64)?;
        }
        Ok(writer)
    });
    Ok(WppStage {
        front: WppFront {
            stages: Stages::Threaded(tx),
            rows: ProcessRows::new(),
        },
        builder: Some(builder),
        writer: Some(writer_thread),
        opts,
        run,
        deterministic,
        start,
    })
}

impl<W: Write + Send> WppStage<'_, W> {
    /// Ends the capture after the run ended with `outcome`: joins the stages, writes the
    /// remaining items, the dictionaries and the statistics.
    pub fn finish(
        self,
        outcome: &Outcome,
        objects: Vec<outcrop_strata::ObjectInfo>,
    ) -> Result<Captured<W>, CaptureError> {
        let WppStage {
            front,
            builder,
            writer,
            opts,
            mut run,
            deterministic,
            start,
        } = self;
        let WppFront { stages, rows } = front;
        if rows.switched() {
            run.processes = rows
                .finish(())
                .into_iter()
                .map(|(k, ())| outcrop_strata::ProcessInfo {
                    pid: k.pid,
                    parent: k.parent,
                    image: k.image,
                    program: k.program,
                })
                .collect();
        }
        let (mut writer, (items, dicts, build)) = match (stages, builder, writer) {
            (
                Stages::Inline {
                    builder,
                    writer,
                    error,
                    ..
                },
                _,
                _,
            ) => {
                if let Some(e) = error {
                    return Err(e);
                }
                (writer, builder.finish())
            }
            (Stages::Threaded(tx), Some(builder), Some(writer)) => {
                drop(tx); // flushes the last batch and ends the builder's loop
                let built = builder.join();
                let writer = match writer.join() {
                    Ok(r) => r?,
                    Err(_) => return Err(stage_stopped("writer")),
                };
                match built {
                    Ok(Some(b)) => (writer, b),
                    _ => return Err(stage_stopped("builder")),
                }
            }
            _ => return Err(stage_stopped("builder")),
        };
        for chunk in items.chunks(opts.config.chunk_items.max(1)) {
            writer.write_items(chunk)?;
        }
        run.threaded = opts.threaded;
        run.outcome = outcome.describe();
        run.objects = objects;
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
            stats,
            bytes,
            writer: w,
        })
    }
}

/// The file's compression runs its two independent parts at once ([`outcrop_strata::format::Join`]):
/// the second on a scoped thread (the same bytes as one after the other; 4–12% off `wpp
/// record`'s wall time on Lua and zstd, docs/BENCHMARKS.md).
fn on_two_threads(a: &mut (dyn FnMut() + Send), b: &mut (dyn FnMut() + Send)) {
    std::thread::scope(|s| {
        let second = s.spawn(b);
        a();
        // (a panic of the second part goes on here, as if it had run on this thread)
        if let Err(e) = second.join() {
            std::panic::resume_unwind(e);
        }
    });
}

fn stage_stopped(stage: &str) -> CaptureError {
    CaptureError::Io {
        source: std::io::Error::other(format!("the capture's {stage} stage stopped")),
    }
}
