//! `perf script` text: one sample per line, `-F ip,brstack` or `-F pid,tid,ip,brstack`:
//!
//! ```text
//! 25532/25532      4013e0 0x4013d0/0x4013b0/P/-/-/3/  0x401390/0x4013c0/M/-/-/0/COND  …
//! ```
//!
//! An optional `PID/TID`, the sampled IP in hex, then branch entries newest first, each
//! `0xFROM/0xTO/FLAGS/TX/ABORT/CYCLES[/TYPE[/SPEC]]` (FLAGS `M` mispredicted, `P` predicted,
//! `-`). Blank lines and lines starting with `#` are skipped; anything else is an error naming
//! the line.

use crate::data::{Branch, CpuMode, Sample};
use crate::error::{Error, Result};

/// Longest line read (a 64-entry stack is about 3 KB).
pub const MAX_LINE: usize = 1 << 16;

fn hex(s: &str) -> Option<u64> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

fn branch(tok: &str) -> Option<Branch> {
    let mut parts = tok.split('/');
    let from = hex(parts.next()?)?;
    let to = hex(parts.next()?)?;
    let mut b = Branch {
        from,
        to,
        ..Branch::default()
    };
    if let Some(flag) = parts.next() {
        b.mispred = flag == "M";
        b.predicted = flag == "P";
    }
    parts.next(); // in_tx
    parts.next(); // abort
    if let Some(c) = parts.next().filter(|c| !c.is_empty() && *c != "-") {
        b.cycles = c.parse().ok()?;
    }
    Some(b)
}

/// Parses one line (`lineno` 1-based, for errors): `None` for a blank or comment line.
pub fn parse_line(line: &str, lineno: u64) -> Result<Option<Sample>> {
    let err = |what: String| Error::Text { line: lineno, what };
    if line.len() > MAX_LINE {
        return Err(err(format!("longer than {MAX_LINE} bytes")));
    }
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(None);
    }
    let mut s = Sample {
        mode: Some(CpuMode::User),
        ..Sample::default()
    };
    let mut toks = t.split_ascii_whitespace().peekable();
    if let Some(first) = toks.peek() {
        if !first.starts_with("0x") {
            if let Some((p, q)) = first.split_once('/') {
                s.pid = p
                    .parse()
                    .map_err(|_| err(format!("bad PID/TID {first:?}")))?;
                s.tid = q
                    .parse()
                    .map_err(|_| err(format!("bad PID/TID {first:?}")))?;
                toks.next();
            }
        }
    }
    let ip = toks.next().ok_or_else(|| err("no IP".into()))?;
    s.ip = Some(hex(ip).ok_or_else(|| err(format!("IP {ip:?} is not hex")))?);
    for (i, tok) in toks.enumerate() {
        if i as u64 >= crate::data::MAX_BRANCHES {
            return Err(err(format!(
                "more than {} branch entries",
                crate::data::MAX_BRANCHES
            )));
        }
        let b = branch(tok).ok_or_else(|| {
            err(format!(
                "branch entry {} ({tok:?}) is not 0xFROM/0xTO/FLAGS/…",
                i + 1
            ))
        })?;
        s.branches.push(b);
    }
    Ok(Some(s))
}
