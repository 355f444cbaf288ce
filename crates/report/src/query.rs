//! The answer of `outcrop query check|asm` on one query file (docs/rpa.md): parsed and
//! assembled, or the first problem with its line and column, as text for a person or JSON
//! for a tool (`--json`: every answer is JSON, an unreadable file too).

use outcrop_rpa::{Assembled, Diagnostic, Program};

/// One query file checked.
pub struct QueryCheck {
    /// The file as named on the command line.
    pub file: String,
    outcome: Outcome,
}

enum Outcome {
    /// The file could not be read (why).
    Unreadable(String),
    /// Its first problem, with the source it is in.
    Invalid(String, Box<Diagnostic>),
    /// Parsed and assembled.
    Assembled(Box<(Program, Assembled)>),
}

impl QueryCheck {
    /// Checks `source`, the text of `file` (or why it could not be read).
    pub fn new(file: &str, source: Result<String, String>) -> QueryCheck {
        let outcome = match source {
            Err(why) => Outcome::Unreadable(why),
            Ok(src) => match outcrop_rpa::parse(&src)
                .and_then(|p| outcrop_rpa::assemble(&p).map(|x| (p, x)))
            {
                Err(d) => Outcome::Invalid(src, Box::new(d)),
                Ok(px) => Outcome::Assembled(Box::new(px)),
            },
        };
        QueryCheck {
            file: file.to_string(),
            outcome,
        }
    }

    /// Whether the file parsed and assembled.
    pub fn ok(&self) -> bool {
        matches!(self.outcome, Outcome::Assembled(_))
    }

    /// The problem as a compiler prints it (file:line:column, the line, a caret, a hint), for
    /// stderr; `None` when there is none or the file could not be read.
    pub fn diagnostic(&self) -> Option<String> {
        match &self.outcome {
            Outcome::Invalid(src, d) => Some(outcrop_rpa::render(d, &self.file, src)),
            _ => None,
        }
    }

    /// What `check` prints on success (a one-line summary) or `asm` (the profile control
    /// table and every query instruction with its disassembly); `None` on a problem.
    pub fn text(&self, asm: bool) -> Option<String> {
        let Outcome::Assembled(px) = &self.outcome else {
            return None;
        };
        let (p, x) = &**px;
        Some(if asm {
            outcrop_rpa::listing(x)
        } else {
            format!(
                "{}: {} queries, {} query instructions, {} classes profiled\n",
                self.file,
                p.queries.len(),
                x.insns.len(),
                x.pct.iter().filter(|e| e.enabled).count()
            )
        })
    }

    /// The answer as JSON (`ok`, `file`, and the problem's place and message, or the
    /// encoded instructions and profile control table).
    pub fn json(&self) -> serde_json::Value {
        match &self.outcome {
            Outcome::Unreadable(why) => serde_json::json!({
                "ok": false,
                "file": self.file,
                "message": why,
            }),
            Outcome::Invalid(src, d) => {
                let (line, column) = outcrop_rpa::lang::line_col(src, d.span.start);
                serde_json::json!({
                    "ok": false,
                    "file": self.file,
                    "line": line,
                    "column": column,
                    "message": d.message,
                    "label": d.label,
                    "hint": d.hint,
                })
            }
            Outcome::Assembled(px) => {
                let (p, x) = &**px;
                serde_json::json!({
                    "ok": true,
                    "file": self.file,
                    "queries": p.queries.len(),
                    "instructions": x.insns.iter().map(|i| format!("{:#018x}", i.encode())).collect::<Vec<_>>(),
                    "pct": x.pct.iter().enumerate().filter(|(_, e)| e.enabled).map(|(i, e)| {
                        let [p0, p1] = e.encode();
                        serde_json::json!({"index": i, "class": outcrop_rpa::names::Class::from_pct_index(i).map(|c| c.to_string()), "pcr0": p0, "pcr1": p1})
                    }).collect::<Vec<_>>(),
                })
            }
        }
    }
}
