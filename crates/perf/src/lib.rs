//! Real hardware's samples as a source of Outcrop: `perf.data` files recorded by
//! `perf record` (IP samples, LBR/BRBE branch stacks with their hardware index, cycle counts,
//! misprediction flags and kernel 6.8+'s branch counters; mmap and comm records) and
//! `perf script -F ip,brstack` text from other tools, turned into Outcrop's branch-record
//! samples for one program (docs/import.md).
//!
//! The readers take bytes or a `Read + Seek` source and do no file I/O of their own. Every
//! size and offset in the input is checked before it is used; a damaged or truncated file is
//! an [`Error`] naming the byte offset (or the text line).
//!
//! ```
//! use outcrop_perf::{parse_line, Importer, Segment, Target};
//! let target = Target {
//!     name: "prog".into(),
//!     segments: vec![Segment { offset: 0x1000, vaddr: 0x401000, size: 0x1000 }],
//!     identity: true,
//!     ..Target::default()
//! };
//! let mut imp = Importer::new(target, &[]);
//! let s = parse_line("401010 0x401020/0x401000/P/-/-/3/ 0x401008/0x401010/M/-/-/0/", 1)
//!     .unwrap()
//!     .unwrap();
//! imp.sample(&s);
//! let out = imp.finish("prog", "", 0);
//! assert_eq!(out.samples.traces.len(), 1);
//! assert_eq!(out.stats.mispredicted, 1);
//! ```

mod data;
mod error;
mod import;
mod order;
mod script;

pub use data::{
    Attr, Branch, BuildId, CpuMode, Event, Mmap, Reader, Sample, CONTEXT_KERNEL, CONTEXT_MAX,
    CONTEXT_USER, MAX_BRANCHES, MAX_CALLCHAIN,
};
pub use error::{Error, Result};
pub use import::{
    Frame, Imported, Importer, MappedObject, Segment, Stats, Target, MAX_OBJECTS, MAX_TRACE,
    OUTSIDE,
};
pub use order::{Ordered, FINISHED_ROUND, MAX_HELD};
pub use script::{parse_line, MAX_LINE};
