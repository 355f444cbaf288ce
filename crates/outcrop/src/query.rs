//! `outcrop query`: the Relational Profiling Architecture's query language
//! (`outcrop_rpa`; docs/rpa.md). `check FILE` parses and assembles a query file and reports
//! the first problem as a compiler would; `asm FILE` prints the profile control table and the
//! encoded query instructions with their disassembly.

use crate::files::{read_text_bounded, MAX_CONFIG_BYTES};
use anyhow::Result;
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// `outcrop query` subcommands.
#[derive(Subcommand, Debug)]
pub enum QueryCommand {
    /// Parse and assemble a query file; report the first problem with file:line:column, a
    /// caret and a hint. Exit status 1 when the file has a problem.
    ///
    /// Example:
    ///   outcrop query check edges.rpa
    #[command(verbatim_doc_comment)]
    Check(QueryArgs),
    /// Assemble a query file and print the profile control table (enabled entries with their
    /// two 32-bit PCRs) and every 64-bit query instruction with its disassembly.
    ///
    /// Example (the paper's Figure 2a):
    ///   printf 'for opBRANCH * every 256 collect pc misc;\nsend 1 stop;\n' > edges.rpa
    ///   outcrop query asm edges.rpa
    #[command(verbatim_doc_comment)]
    Asm(QueryArgs),
}

/// Options of `outcrop query check|asm`.
#[derive(Args, Debug)]
pub struct QueryArgs {
    /// The query file (RPA assembly, docs/rpa.md).
    file: PathBuf,
    /// Output (and errors) as JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// Runs an `outcrop query` subcommand.
pub fn run(cmd: QueryCommand) -> Result<ExitCode> {
    let (a, asm) = match cmd {
        QueryCommand::Check(a) => (a, false),
        QueryCommand::Asm(a) => (a, true),
    };
    let src = read_text_bounded(&a.file, "query file", MAX_CONFIG_BYTES)?;
    let name = a.file.display().to_string();
    let result = outcrop_rpa::parse(&src).and_then(|p| outcrop_rpa::assemble(&p).map(|x| (p, x)));
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match result {
        Err(d) => {
            if a.json {
                let (line, column) = outcrop_rpa::lang::line_col(&src, d.span.start);
                let j = serde_json::json!({
                    "ok": false,
                    "file": name,
                    "line": line,
                    "column": column,
                    "message": d.message,
                    "label": d.label,
                    "hint": d.hint,
                });
                writeln!(out, "{j:#}")?;
            } else {
                eprint!("{}", outcrop_rpa::render(&d, &name, &src));
            }
            Ok(ExitCode::from(1))
        }
        Ok((p, x)) => {
            if a.json {
                let j = serde_json::json!({
                    "ok": true,
                    "file": name,
                    "queries": p.queries.len(),
                    "instructions": x.insns.iter().map(|i| format!("{:#018x}", i.encode())).collect::<Vec<_>>(),
                    "pct": x.pct.iter().enumerate().filter(|(_, e)| e.enabled).map(|(i, e)| {
                        let [p0, p1] = e.encode();
                        serde_json::json!({"index": i, "class": outcrop_rpa::names::Class::from_pct_index(i).map(|c| c.to_string()), "pcr0": p0, "pcr1": p1})
                    }).collect::<Vec<_>>(),
                });
                writeln!(out, "{j:#}")?;
            } else if asm {
                write!(out, "{}", outcrop_rpa::listing(&x))?;
            } else {
                writeln!(
                    out,
                    "{name}: {} queries, {} query instructions, {} classes profiled",
                    p.queries.len(),
                    x.insns.len(),
                    x.pct.iter().filter(|e| e.enabled).count()
                )?;
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
