//! The paper's ASCII tree dump (RAP §3.2 `rap_finalize`): one line per node, ranges in hex,
//! indented two spaces per depth, with the node's own count and its subtree's share of `n`.

use crate::RapTree;
use std::fmt::Write;

impl RapTree {
    /// The whole tree as text, e.g.
    ///
    /// ```text
    /// [0, ff] count=10 subtree=104 (100.00%)
    ///   [0, 7f] count=8 subtree=60 (57.69%)
    /// ```
    pub fn ascii_dump(&self) -> String {
        let mut out = String::new();
        let n = self.n().max(1) as f64;
        for s in self.nodes() {
            // Writing to a String cannot fail.
            let _ = writeln!(
                out,
                "{:indent$}[{:x}, {:x}] count={} subtree={} ({:.2}%)",
                "",
                s.lo,
                s.hi,
                s.count,
                s.subtree,
                100.0 * s.subtree as f64 / n,
                indent = 2 * s.depth as usize
            );
        }
        out
    }
}
