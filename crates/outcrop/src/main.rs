//! The `outcrop` command line: clap structs that turn into plain option structs, handed to the
//! libraries. This crate owns files, terminals, progress bars and exit codes; the libraries do
//! none of that.
//!
//! Exit status: 0 success, 1 bad input or failed work (the message says what and where),
//! 2 bad command line (from clap). A closed stdout (e.g. `| head`) ends quietly with 0.

mod annotate;
mod brr;
mod diff;
mod exec;
mod files;
mod import;
mod instrument;
mod oom;
mod paths;
mod phases;
mod query;
mod rap;
mod run;
mod trace;
mod wpp;

/// Allocation failure is an error, not an abort ([`oom`]).
#[global_allocator]
static ALLOCATOR: oom::Allocator = oom::Allocator;

use clap::{Parser, Subcommand};
use outcrop_cli::input;
// the mechanisms' vocabulary, through `run` (the binary depends on run, report, studies and
// cli only: crates/outcrop/tests/it/layers.rs)
use outcrop_run::mechanisms::{
    diff as outcrop_diff, events as outcrop_events, instrument as outcrop_instrument,
    paths as outcrop_paths, phases as outcrop_phases, rap as outcrop_rap, rpa as outcrop_rpa,
    rv as outcrop_rv, sampling as outcrop_sampling, strata as outcrop_strata,
};
use std::process::ExitCode;

/// Outcrop: a workbench for low-overhead, hardware-assisted program profiling.
///
/// Each subcommand implements one profiling mechanism from the research literature
/// (docs/cli.md). Every command that reports takes `--json`.
#[derive(Parser, Debug)]
#[command(name = "outcrop", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Range Adaptive Profiling: summarize a stream of 64-bit values into hot ranges.
    ///
    /// Every event increments the smallest range that contains it; a range holding more than
    /// ε·n/H events (H = tree height) splits into b sub-ranges; merge batches at exponentially
    /// spaced n fold cold sub-ranges back. The estimate of any node-aligned range is off by at
    /// most ε·n events, and memory stays bounded (RAP paper §2-§4; docs/rap.md).
    ///
    /// Examples:
    ///   outcrop rap --demo code --exact            # demo stream, checked against exact counts
    ///   outcrop rap --bits 32 --hot 0.05 pcs.txt   # one value per line (decimal or 0x-hex)
    ///   outcrop rap --json run.otr > hot.json      # an Outcrop trace file
    ///   seq 1 1000000 | outcrop rap --dump -       # from stdin, print the whole tree
    #[command(verbatim_doc_comment)]
    Rap(rap::RapArgs),
    /// Run a RISC-V (RV64GC) Linux program, static or dynamically linked, on the built-in machine.
    ///
    /// The guest's stdin, stdout and stderr are passed through and its exit status is
    /// returned. It sees no host files except those granted with --allow (read-only) or
    /// --allow-rw; relative paths resolve against the current directory. A guest fault ends
    /// the run with a report naming pc, instruction and reason, and exit status 128+signal
    /// (132 illegal instruction, 139 access fault); --max-insns stops it with status 124.
    ///
    /// Examples:
    ///   outcrop exec -- workloads/bin/hello
    ///   outcrop exec --stats-json s.json --allow-rw . -- workloads/bin/fileio workloads/src/fileio.c
    #[command(verbatim_doc_comment)]
    Exec(exec::ExecArgs),
    /// Run a program once with any set of profiling mechanisms attached.
    ///
    /// Always: the exact profile, every retired instruction counted by function (self and
    /// total), call chain and, with DWARF, source line; under --timing also cycles, CPI,
    /// mispredictions and cache misses per function. The report (the hottest functions and
    /// lines, then RAP) goes to stderr, or to -o FILE (`-o -`: stdout): the guest's stdout is
    /// its own, so `outcrop run -- zstd -c in > in.zst` writes a valid file.
    /// --rap STREAMS: a RAP tree per event stream (RAP paper §4): pc, block (block starts
    /// weighted by length), load-value, load-addr, store-addr, l1d-miss-value, l2-miss-value,
    /// l1d-miss-pc, narrow-pc (operands fit in 16 bits), zero-load-addr (a zero was loaded);
    /// hot ranges, code ranges named by function; --exact adds exact counts and percent
    /// errors (Figure 8). The cache streams run the timing model.
    /// --wpp FILE: the whole-program profile, as `wpp record -o FILE`.
    /// --paths N[:P]: a branch-record unit of N entries sampled every P instructions (cycles
    /// with --timing), as `paths record`; samples to --samples FILE or DIR/branch.samples.
    /// --report DIR: report.html (one offline page: functions, flame graph, CPI stack, hot
    /// ranges, paths, strata) and its report.json; the profile as profile.json,
    /// profile.speedscope.json (speedscope), profile.firefox.json (Firefox Profiler),
    /// profile.folded and profile.pb.gz (pprof); every other result and the run's statistics as JSON files.
    ///
    /// Each result equals its own command's on the same deterministic run. Outputs are
    /// checked before the guest starts; Ctrl-C stops the guest and keeps every profile
    /// (marked truncated, exit 130). Guest stdio is passed through; the exit status is the
    /// guest's. With no program, every bundled workload (./workloads, or $OUTCROP_WORKLOADS)
    /// is profiled with every mechanism into --report DIR (default outcrop-report), with an
    /// index.html that has a row per workload; each workload's text report is in
    /// DIR/NAME/report.txt.
    ///
    /// Examples:
    ///   outcrop run -- workloads/bin/bytecode_vm          # the flat profile by function
    ///   outcrop run --json -o profile.json -- workloads/bin/lz
    ///   outcrop run --rap block --wpp q.wpp --paths 16 --timing --report q -- workloads/bin/qsort_ints
    ///   outcrop run --rap pc,block --exact -- workloads/bin/qsort_ints
    ///   outcrop run --rap zero-load-addr --json -o zero.json -- workloads/bin/lz
    ///   outcrop run --query edges.rpa --fdata q.fdata -- workloads/bin/qsort_ints
    ///   outcrop run --report suite-report            # the whole bundled suite
    #[command(verbatim_doc_comment)]
    Run(Box<run::RunArgs>),
    /// Create, convert and inspect event trace files (`.otr`).
    #[command(subcommand)]
    Trace(trace::TraceCommand),
    /// Whole-program paths and strata: record a program's complete basic-block stream
    /// losslessly, replay it exactly, report its paths and strata (Gorton's DWPP).
    #[command(subcommand)]
    Wpp(wpp::WppCommand),
    /// Path profiles from sampled branch records: attach a branch-record unit (the last N
    /// taken branches, sampled every P instructions or cycles), rebuild hot paths offline,
    /// and score them against the exact path profile (Shye et al.).
    #[command(subcommand)]
    Paths(paths::PathsCommand),
    /// Import real hardware's samples: a perf.data recorded with `perf record -b` (Intel
    /// LBR, AMD LbrExtV2, Arm BRBE) or `perf script -F ip,brstack` text, for one program
    /// (x86-64 or RISC-V), into a samples file that `outcrop paths report` reads.
    ///
    /// Addresses are mapped to the program's own through each process's mmap records (by
    /// build-id, else file name); records outside it are kept as "outside" so paths break
    /// there. Also prints a sampled flat profile by function (docs/import.md).
    ///
    /// Examples:
    ///   perf record -b -e cycles:u -o perf.data -- ./prog
    ///   outcrop import perf.data --binary prog -o prog.samples
    ///   outcrop paths report prog.samples --binary prog --fdata prog.fdata
    ///   perf script -F ip,brstack -i perf.data > lbr.txt && outcrop import lbr.txt --binary prog
    #[command(verbatim_doc_comment)]
    Import(import::ImportArgs),
    /// Compare two runs: what changed from A to B, per function, source line and call path
    /// (instructions; cycles, CPI stack and cache misses when both were timed), hot ranges
    /// that appeared, vanished or moved, hot paths gained and lost.
    ///
    /// A and B are report directories (`outcrop run --report DIR`) or the mechanisms' own
    /// files: profile.json/report.json, rap.json, .rap trees, samples files, .wpp files.
    /// The same code (equal program ids) is matched by address; different builds by function
    /// name and by file and line, and rows only one side has are marked. Every row holds A,
    /// B and B − A, so A + diff = B on every row and each column sums to the run's totals.
    /// Profiles whose shared functions hold under half of both runs are refused as different
    /// programs unless --force. --report DIR writes an offline page with a differential flame
    /// graph (red: more in B, blue: less) and both profiles for speedscope and Firefox.
    ///
    /// Examples:
    ///   outcrop run --report o1 -- ./prog-O1 && outcrop run --report o2 -- ./prog-O2
    ///   outcrop diff o1 o2                      # what changed, by function, line, call path
    ///   outcrop diff o1 o2 --report o1-vs-o2    # o1-vs-o2/diff.html, diff.svg, a/b exports
    ///   outcrop diff --json -o d.json o1/profile.json o2/profile.json
    ///   outcrop diff a.wpp b.wpp                # hot whole-program paths gained and lost
    #[command(verbatim_doc_comment)]
    Diff(diff::DiffArgs),
    /// One function's instructions and source lines with what each retired, as perf
    /// annotate shows them: the hottest lines first, then every instruction in address order
    /// under its line, with its share of the function and its counts (cycles, CPI and misses
    /// when timed), and the jumps within the function (`→ +0x1c` at a jump, `>` at its
    /// target). Reads a report's per-instruction counts and disassembles the program.
    ///
    /// Examples:
    ///   outcrop run --report r -- ./prog && outcrop annotate r main
    ///   outcrop annotate r 'worker(int, int)' --binary build/prog --json -o w.json
    #[command(verbatim_doc_comment)]
    Annotate(annotate::AnnotateArgs),
    /// A program's phases, as SimPoint finds them, and a sampled timing estimate.
    ///
    /// One run on the fast engine cuts the program into intervals of --interval retired
    /// instructions and counts each basic block's instructions per interval (its basic-block
    /// vector); the vectors are normalized, randomly projected to 15 dimensions and clustered
    /// by k-means for k = 1..=--max-k, k chosen by BIC (SimPoint 3.0). Each phase is reported
    /// with its share of the run, its representative interval (the one nearest its
    /// centroid) and its hottest functions. --bb FILE writes the vectors in SimPoint's .bb
    /// format, as QEMU's bbv plugin does. --timing estimates the run's CPI by simulating only
    /// samples of each phase: --per-phase units of --unit instructions spread over the
    /// phase (SMARTS within each phase), or with --per-phase 1 the phase's representative
    /// interval alone (SimPoint). The caches, TLBs and predictors are warmed functionally
    /// over the fast-forward (--warming), the pipeline by a detailed --warmup. The estimate, each
    /// phase's and each hot function's CPI have their --confidence interval (SMARTS), re-planned
    /// to --target. --compare adds the full model: the error, the coverage, the speed-up.
    ///
    /// Examples:
    ///   outcrop phases -- workloads/bin/bytecode_vm
    ///   outcrop phases --interval 500000 --bb vm.bb -- workloads/bin/bytecode_vm
    ///   outcrop phases --timing --compare -- workloads/bin/lz
    ///   outcrop phases --timing --sample-seed 7 --confidence 95 --target 1 -- workloads/bin/lz
    ///   outcrop phases --timing --per-phase 1 --warming 0 -- workloads/bin/lz
    #[command(verbatim_doc_comment)]
    Phases(phases::PhasesArgs),
    /// Branch-on-random tools: the overlap of a sampled site profile with the full one
    /// (accuracy, the paper's §4.1). The instruction itself is `--brr MODE` on every command
    /// that runs a program (docs/machine.md "Branch-on-random").
    #[command(subcommand)]
    Brr(brr::BrrCommand),
    /// Rewrite GCC RISC-V assembly (`gcc -O2 -S`) to count function entries or branch edges:
    /// fully, with a software counter, or with branch-on-random; No- or Full-Duplication
    /// (the branch-on-random paper's §4.1 and §5.3 method).
    Instrument(instrument::InstrumentArgs),
    /// Relational profiling queries (the RPA paper's assembly language): check a query file,
    /// or assemble it into the profile control table and 64-bit query instructions. Run one
    /// on a program with `outcrop run --query FILE -- PROG` (docs/rpa.md).
    #[command(subcommand)]
    Query(query::QueryCommand),
}

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => {
            let hint = usage_hint(&e, &argv);
            let _ = e.print();
            if let Some(h) = hint {
                eprintln!("\n  tip: {h}");
            }
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    files::remove_partials_on_signals();
    let result = match cli.command {
        Command::Exec(args) => exec::run(args),
        Command::Run(args) => run::run(*args),
        Command::Rap(args) => rap::run(args).map(|()| ExitCode::SUCCESS),
        Command::Trace(cmd) => trace::run(cmd).map(|()| ExitCode::SUCCESS),
        Command::Wpp(cmd) => wpp::run(cmd),
        Command::Paths(cmd) => paths::run(cmd),
        Command::Import(args) => import::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Annotate(args) => annotate::run(args).map(|()| ExitCode::SUCCESS),
        Command::Phases(args) => phases::run(args),
        Command::Brr(cmd) => brr::run(cmd).map(|()| ExitCode::SUCCESS),
        Command::Instrument(a) => instrument::run(a).map(|()| ExitCode::SUCCESS),
        Command::Query(cmd) => query::run(cmd),
    };
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // error texts quote files and names strangers wrote
            let text = format!("{e:#}");
            eprintln!(
                "outcrop: error: {}",
                crate::outcrop_events::escape::text(&text)
            );
            ExitCode::FAILURE
        }
    }
}

/// A hint for the two command-line slips clap cannot explain: a program given without `--`,
/// and an option with an optional value (`--timing`) given its value without `=`.
fn usage_hint(e: &clap::Error, argv: &[std::ffi::OsString]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    if bad.starts_with('-') {
        return None;
    }
    let at = argv.iter().position(|a| a.to_str() == Some(bad.as_str()))?;
    let before = argv.get(at.checked_sub(1)?)?.to_string_lossy();
    if before == "--timing" {
        return Some(format!(
            "--timing takes its value after `=`: --timing={bad} (alone, --timing means the default preset)"
        ));
    }
    let sub = argv
        .get(1)
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    Some(format!(
        "the program and its arguments go after `--`: outcrop {sub} [OPTIONS] -- {bad} ..."
    ))
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
