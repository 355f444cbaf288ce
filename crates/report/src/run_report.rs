//! [`RunReport`]: one run's summaries in, every report of it out — the console text or JSON,
//! the report directory's files (docs/formats.md "The report directory"), the suite index's
//! row. The way up mirrors the way down: `run::execute` gives [`RunSummaries`], this makes
//! the report models from them and the program's image, and the binary writes the files.

use crate::html::{run_page, IndexRow, RapSection, RunPage};
use crate::profile::{firefox, folded, speedscope, FirefoxProcess, ProfileReport};
use crate::rpa::RpaReport;
use crate::run_dir::{ExecStats, PathsSummary, RunSummary, SuiteEntry, WppSummary};
use crate::{RapRunReport, Report, StreamReport};
use outcrop_run::{ProgramImage, RunSummaries};
use outcrop_rv::inst::Class;
use std::path::{Path, PathBuf};

/// Where the run's own files went, as its reports name them.
#[derive(Clone, Debug, Default)]
pub struct FileNames {
    /// The samples file of the (first) branch-record unit.
    pub samples: Option<PathBuf>,
    /// The whole-program capture's `.wpp`.
    pub wpp: Option<PathBuf>,
    /// The report directory: files inside it are named relative to it on the page, so that
    /// the page does not depend on where the directory is.
    pub report_dir: Option<PathBuf>,
    /// The program's absolute path, for `paths.json`: `paths report` run from inside the
    /// report directory finds the program by it.
    pub program: Option<PathBuf>,
}

/// Every report of one run.
pub struct RunReport<'a> {
    summaries: &'a RunSummaries,
    /// The exit status (130 interrupted, 124 at the instruction limit).
    pub exit_code: i32,
    /// How the run ended (`exited`, `fault: …`, `instruction limit`, `interrupted`).
    pub outcome: String,
    /// The exact profile's report (functions, lines, call tree).
    pub profile: Option<ProfileReport>,
    /// RAP's trees and hot ranges.
    pub rap: Option<RapRunReport>,
    /// The RPA's accounting and services.
    pub rpa: Option<RpaReport>,
    /// The edges service's profile as BOLT `.fdata` (when a queue has an edges service).
    pub fdata: Option<String>,
    /// The branch-record unit's summary (`paths.json`).
    pub paths: Option<PathsSummary<'a>>,
    /// The whole-program capture's summary (`wpp.json`).
    pub wpp: Option<WppSummary<'a>>,
    /// The run's phases (`--phases`).
    pub phases: Option<crate::phases::RunPhases>,
    /// The hottest functions of the program annotated by instruction and line (the page's
    /// "Annotated hot functions").
    pub annotations: Vec<crate::annotate::Annotation>,
    /// Things a person should know that did not stop the report (no source lines).
    pub warnings: Vec<String>,
    /// The profile with inlined calls as frames ([`outcrop_profile::Profile::with_inlined`]),
    /// shown and exported in place of the run's when the program has inlined code.
    pub inlined: Option<outcrop_profile::Profile>,
    names: FileNames,
}

/// What a person should know about a run observed in a window (`--range`).
pub fn window_note(w: &outcrop_run::Window, instructions: u64) -> String {
    if w.end == w.start && w.requested.0 > 0 && instructions <= w.requested.0 {
        return format!(
            "--range {}..{}: the program ended after {} instructions, before the window began: no mechanism observed anything",
            w.requested.0, w.requested.1, instructions
        );
    }
    format!(
        "--range: every mechanism observed instructions {}..{} of the run's {} (the timing model and caches started cold at {}; the profile's call tree starts in the function running there)",
        w.start, w.end, instructions, w.start
    )
}

/// RAP's report of a run: each stream's hot ranges (per thread too), labelled by function
/// where the stream is code, with their accuracy against the exact counts when kept.
fn rap_report(
    s: &RunSummaries,
    spec: &outcrop_rap::observe::RapSpec,
    prof: &outcrop_rap::observe::RapProfiler,
    symbols: Option<&outcrop_rv::symbols::Symbols>,
    status: (i32, &str),
) -> Result<RapRunReport, outcrop_rap::Error> {
    let mut streams = Vec::new();
    let whole = prof.profiles.iter().map(|p| (None, None, p));
    let threads = prof
        .threads
        .iter()
        .flat_map(|(&t, ps)| ps.iter().map(move |p| (Some(t), None, p)));
    // each other process and program, named by its own exact profile when there is one
    let processes = prof.processes.iter().flat_map(|(k, ps)| {
        let row = s
            .processes
            .iter()
            .find(|r| (r.pid, r.image) == (k.pid, k.image));
        // (a row that retired nothing the stream counts says nothing)
        ps.iter()
            .filter(|p| p.tree.n() > 0)
            .map(move |p| (None, Some((k, row)), p))
    });
    for (thread, process, p) in whole.chain(threads).chain(processes) {
        let hot = p.tree.hot_ranges(spec.hot)?;
        let accuracy = p
            .exact
            .as_ref()
            .map(|e| outcrop_rap::accuracy(&hot, &e.finish()));
        let labels: Option<Vec<String>> = match (process, symbols, p.stream.is_code()) {
            (Some((_, Some(row))), _, true) => Some(
                hot.iter()
                    .map(|h| range_label(&row.profile, h.lo, h.hi).unwrap_or_default())
                    .collect(),
            ),
            (Some(_), _, _) => None,
            (None, Some(sym), true) => Some(
                hot.iter()
                    .map(|h| match &s.profile {
                        // named by where the range's instructions ran
                        Some(prof) => range_label(prof, h.lo, h.hi)
                            .unwrap_or_else(|| sym.describe_range(h.lo, h.hi)),
                        None => sym.describe_range(h.lo, h.hi),
                    })
                    .collect(),
            ),
            _ => None,
        };
        let process = process.map(|(k, _)| {
            format!(
                "pid {}, program {} ({})",
                k.pid,
                k.image,
                if k.program.is_empty() {
                    "?"
                } else {
                    &k.program
                }
            )
        });
        streams.push(StreamReport {
            stream: p.stream.name().to_string(),
            thread,
            process,
            description: p.stream.description().to_string(),
            n: p.tree.n(),
            nodes: p.tree.node_count(),
            max_nodes: p.max_nodes(),
            mean_nodes: p.mean_nodes(),
            mean_nodes_at_merges: p.mean_nodes_at_merges(),
            merge_batches: p.tree.stats().merge_batches,
            split_threshold: p.tree.split_threshold(),
            hot: StreamReport::entries(&hot, accuracy.as_ref(), labels.as_deref()),
            max_error_pct: accuracy.as_ref().map(|a| a.max_error_pct),
            mean_error_pct: accuracy.as_ref().map(|a| a.mean_error_pct),
            sizes: p.sizes.clone(),
            merges: p.tree.merge_log().to_vec(),
        });
    }
    Ok(RapRunReport {
        program: s.program.clone(),
        instructions: s.instructions,
        exit_code: status.0,
        outcome: status.1.to_string(),
        wall_seconds: s.wall.as_secs_f64(),
        eps: spec.config.eps(),
        branching: spec.config.branching(),
        hot_fraction: spec.hot,
        timing: s.timing.clone(),
        streams,
    })
}

impl<'a> RunReport<'a> {
    /// The reports of `s`, a run of `image`; `names` says where its own files went.
    pub fn new(
        s: &'a RunSummaries,
        image: &ProgramImage,
        names: FileNames,
    ) -> Result<RunReport<'a>, outcrop_rap::Error> {
        let (exit_code, outcome) = s.status();
        // a dynamically linked program's code is named across its objects
        let symbols = s.symbols.as_ref().or(image.symbols().ok());
        let mut warnings: Vec<String> = s.sampled.iter().cloned().collect();
        if let Some(w) = &s.window {
            warnings.push(window_note(w, s.instructions));
        }
        let profile = s.profile.as_ref().map(|p| {
            // the program's lines, and those of each shared object that has them
            let mut extra = s.debug_objects.iter().filter_map(|o| {
                outcrop_profile::lines::LineTable::from_elf_at(&o.bytes, o.bias)
                    .ok()
                    .flatten()
                    .map(|t| (t, o.lo, o.hi))
            });
            let table = match image.line_table() {
                Ok(Some(t)) => Ok(Some(t)),
                // a program without lines: the first library's table is the base
                Ok(None) => Ok(extra.next().map(|(t, _, _)| t)),
                Err(e) => Err(e),
            };
            let table = table.map(|t| {
                t.map(|mut t| {
                    for (o, lo, hi) in extra {
                        t.add_object(o, lo, hi);
                    }
                    t
                })
            });
            let mut table = match table {
                Ok(t) => t,
                Err(e) => {
                    warnings.push(format!("no source lines: {e}"));
                    None
                }
            };
            // a node below another function's: the samples had call chains
            let chains = p
                .nodes
                .iter()
                .any(|n| n.function.is_some() && p.nodes[n.parent as usize].function.is_some());
            // inlined calls as frames, from the same DWARF
            let mangled = image.names() == outcrop_rv::symbols::Names::Mangled;
            let inlined = table.as_mut().and_then(|t| p.with_inlined(t, mangled));
            // annotate ranks and lists symbols, inlined code included (as perf annotate does)
            let symbols_profile = p;
            let p = inlined.as_ref().map_or(p, |(q, _)| q);
            let lines = table.as_mut().map(|t| p.by_line(t));
            let mut r = ProfileReport::new(&s.program, p, lines.as_ref(), &s.machine.threads);
            r.inline = inlined.as_ref().map(|(_, st)| *st);
            r.program_id = image.program_id().ok().map(str::to_string);
            r.sampled = s.sampled.is_some();
            r.call_chains = r.sampled && chains;
            r.processes = crate::processes::ProcessesReport::new(&s.processes);
            let a = annotations(symbols_profile, &s.program, image, table.as_mut());
            (r, a, inlined.map(|(q, _)| q))
        });
        let (profile, annotations, inlined) = match profile {
            Some((r, a, q)) => (Some(r), a, q),
            None => (None, Vec::new(), None),
        };
        let rap = match &s.rap {
            Some((spec, prof)) => Some(rap_report(s, spec, prof, symbols, (exit_code, &outcome))?),
            None => None,
        };
        let (rpa, fdata) = match &s.rpa {
            Some(r) => {
                let (report, fdata) = crate::rpa::report(
                    r,
                    &s.program,
                    s.instructions,
                    s.deterministic,
                    symbols,
                    Some(image),
                    s.timing.as_ref().map_or(0, |t| t.fills_late),
                    &s.processes,
                );
                (Some(report), fdata)
            }
            None => (None, None),
        };
        let shown = |p: &Option<PathBuf>| p.as_ref().map(|f| f.display().to_string());
        let paths = s.samples.first().map(|samples| PathsSummary {
            file: shown(&names.samples).unwrap_or_default(),
            samples: samples.meta.samples,
            distinct_traces: samples.traces.len(),
            recorded_branches: samples.meta.recorded,
            instructions: samples.meta.instructions,
            cycles: samples.meta.cycles,
            modelled_overhead: samples.overhead(),
            config: &samples.meta.config,
            program: shown(&names.program),
            processes: s
                .process_samples
                .iter()
                .filter_map(|p| {
                    let x = p.samples.first()?;
                    Some(crate::run_dir::ProcessSamplesRow {
                        pid: p.key.pid,
                        image: p.key.image,
                        program: x.meta.program.clone(),
                        samples: x.meta.samples,
                        instructions: x.meta.instructions,
                        file: format!("samples/pid{}.{}.samples", p.key.pid, p.key.image),
                    })
                })
                .collect(),
        });
        let wpp = s.wpp.as_ref().map(|w| WppSummary {
            file: shown(&names.wpp).unwrap_or_default(),
            bytes: w.bytes,
            stats: &w.stats,
        });
        let phases = s.phases.as_ref().map(|(bbv, found)| {
            crate::phases::RunPhases::new(bbv, found, symbols, s.profile.as_ref())
        });
        Ok(RunReport {
            summaries: s,
            exit_code,
            outcome,
            profile,
            annotations,
            rap,
            rpa,
            fdata,
            paths,
            wpp,
            phases,
            warnings,
            inlined,
            names,
        })
    }

    /// The console report: the profile's text, then RAP's, then the RPA's; with `json`, one
    /// JSON document (RAP's when there is one, else the RPA's, else the profile's). Names from
    /// the program's files are escaped: no control character reaches a terminal.
    pub fn console(&self, json: bool) -> String {
        let mut c = String::new();
        if let Some(r) = &self.profile {
            if json {
                if self.rap.is_none() && self.rpa.is_none() {
                    c.push_str(&r.to_json());
                }
            } else {
                c.push_str(&r.to_text());
                if self.rap.is_some() {
                    c.push('\n');
                }
            }
        }
        if let Some(r) = &self.rap {
            c.push_str(&if json { r.to_json() } else { r.to_text() });
        }
        if let Some(r) = &self.rpa {
            if !json {
                c.push('\n');
                c.push_str(&r.to_text());
            } else if self.rap.is_none() {
                c.push_str(&r.to_json());
            }
        }
        outcrop_events::escape::text(&c).into_owned()
    }

    /// The Firefox Profiler export: the run's profile `shown` (one process), or one track
    /// group per (process, program), the first shown as `shown`.
    fn firefox(&self, shown: &outcrop_profile::Profile) -> String {
        let s = self.summaries;
        if s.processes.is_empty() {
            return firefox(shown, &s.program);
        }
        let procs: Vec<FirefoxProcess<'_>> = s
            .processes
            .iter()
            .enumerate()
            .map(|(i, p)| FirefoxProcess {
                pid: p.pid,
                name: crate::processes::label(p.pid, p.image, &p.program),
                profile: if i == 0 { shown } else { &p.profile },
            })
            .collect();
        crate::profile::firefox_processes(&procs, &s.program)
    }

    /// Retired instructions per class, by class name.
    fn classes(&self) -> Option<Vec<(&'static str, u64)>> {
        self.summaries.classes.map(|c| {
            Class::ALL
                .iter()
                .map(|k| (k.name(), c[*k as usize]))
                .collect()
        })
    }

    /// The report directory's files, in the order they are written (`run.json` last, so
    /// that its presence says the directory is complete).
    pub fn directory_files(&self) -> Vec<(&'static str, Vec<u8>)> {
        let s = self.summaries;
        let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
        let mut mechanisms = Vec::new();
        let mut listed = vec![
            ("run.json", "the run's statistics, host time included"),
            ("report.json", "the data this page is made from"),
        ];
        if self.profile.is_some() {
            listed.extend([
                (
                    "profile.json",
                    "the exact profile: functions, lines, call tree",
                ),
                (
                    "profile.speedscope.json",
                    "open in https://www.speedscope.app",
                ),
                (
                    "profile.firefox.json",
                    "open in https://profiler.firefox.com",
                ),
                (
                    "profile.folded",
                    "folded stacks for flamegraph.pl or inferno",
                ),
                ("profile.pb.gz", "pprof (go tool pprof, Pyroscope, Parca)"),
            ]);
        }
        if let Some(r) = &self.rap {
            mechanisms.push("rap");
            out.push(("rap.json", r.to_json().into_bytes()));
            listed.push(("rap.json", "RAP trees and hot ranges"));
        }
        if let Some(w) = &self.wpp {
            mechanisms.push("wpp");
            out.push(("wpp.json", pretty(w)));
        }
        if let Some(p) = &self.paths {
            mechanisms.push("paths");
            out.push(("paths.json", pretty(p)));
            listed.push(("paths.json", "branch-record sampling summary"));
        }
        if self.wpp.is_some() {
            listed.push(("wpp.json", "whole-program capture summary"));
        }
        if let Some(r) = &self.rpa {
            mechanisms.push("rpa");
            out.push(("rpa.json", r.to_json().into_bytes()));
            listed.push((
                "rpa.json",
                "relational profiling: queries, services, exact checks",
            ));
        }
        // the profile with its inlined calls as frames, when the program has them
        let shown = self.inlined.as_ref().or(s.profile.as_ref());
        if let (Some(p), Some(r)) = (shown, &self.profile) {
            mechanisms.push("profile");
            out.push(("profile.json", r.to_json().into_bytes()));
            out.push((
                "profile.speedscope.json",
                speedscope(p, &s.program).into_bytes(),
            ));
            out.push(("profile.firefox.json", self.firefox(p).into_bytes()));
            out.push(("profile.folded", folded(p).into_bytes()));
            out.push(("profile.pb.gz", crate::pprof::pprof(p, &s.program)));
        }
        let classes = self.classes();
        let page = RunPage {
            program: &s.program,
            args: &s.args,
            exit_code: self.exit_code,
            outcome: &self.outcome,
            truncated: s.truncated(),
            sampled: s.sampled.as_deref(),
            window: s.window.as_ref(),
            instructions: s.instructions,
            classes: classes.clone(),
            timing: s.timing.as_ref(),
            profile: self.profile.as_ref(),
            annotations: &self.annotations,
            phases: self.phases.as_ref(),
            rap: self.rap.as_ref().map(|r| RapSection {
                eps: r.eps,
                branching: r.branching,
                hot_fraction: r.hot_fraction,
                streams: &r.streams,
            }),
            paths: self.paths.as_ref().map(|p| {
                let mut v = serde_json::to_value(p).unwrap_or_default();
                if let Some(rel) = self.relative(self.names.samples.as_deref()) {
                    v["file"] = rel.into();
                }
                v
            }),
            strata: s.wpp.as_ref().map(|w| &w.stats),
            rpa: self.rpa.as_ref(),
            files: listed,
        };
        out.push(("report.json", crate::json(&page).into_bytes()));
        out.push(("report.html", run_page(&page, shown).into_bytes()));
        let stats = RunSummary {
            program: &s.program,
            args: s.args.clone(),
            instructions: s.instructions,
            exit_code: self.exit_code,
            outcome: &self.outcome,
            truncated: s.truncated(),
            sampled: s.sampled.as_deref(),
            window: s.window.as_ref(),
            wall_seconds: s.wall.as_secs_f64(),
            mips: s.mips(),
            mechanisms,
            classes,
            timing: s.timing.as_ref(),
            host_max_rss_bytes: s.host_max_rss_bytes,
            compiling_tier: compiling_tier(s),
            backtrace: crate::run_dir::FrameRow::of(&s.machine.backtrace),
        };
        let mut j = pretty(&stats);
        j.push(b'\n');
        out.push(("run.json", j));
        out
    }

    /// `file` relative to the report directory, when inside it.
    fn relative(&self, file: Option<&Path>) -> Option<String> {
        let dir = self.names.report_dir.as_deref()?;
        Some(file?.strip_prefix(dir).ok()?.display().to_string())
    }

    /// The run's row in the suite's index page.
    pub fn index_row(&self) -> IndexRow {
        let s = self.summaries;
        IndexRow {
            name: s.program.clone(),
            exit_code: self.exit_code,
            outcome: self.outcome.clone(),
            instructions: s.instructions,
            cycles: s.timing.as_ref().map(|t| t.cycles),
            hottest: self.profile.as_ref().and_then(|r| {
                r.functions.first().map(|f| {
                    let share = match r.cycles {
                        Some(c) => 100.0 * f.self_counts.cycles as f64 / c.max(1) as f64,
                        None => {
                            100.0 * f.self_counts.instructions as f64 / r.instructions.max(1) as f64
                        }
                    };
                    (f.name.clone(), share)
                })
            }),
        }
    }

    /// The run's entry in `suite.json`.
    pub fn suite_entry(&self) -> SuiteEntry {
        let s = self.summaries;
        SuiteEntry {
            program: s.program.clone(),
            exit_code: self.exit_code,
            outcome: self.outcome.clone(),
            instructions: s.instructions,
            wall_seconds: s.wall.as_secs_f64(),
            truncated: s.truncated(),
            report: None,
        }
    }
}

/// `outcrop exec --stats-json`: the run's statistics with the machine's own counts.
pub fn exec_stats(s: &RunSummaries) -> ExecStats {
    let (exit_code, outcome) = s.status();
    let counts = s.classes.unwrap_or_default();
    ExecStats {
        program: s.program.clone(),
        instructions: s.instructions,
        exit_code,
        outcome,
        wall_seconds: s.wall.as_secs_f64(),
        mips: s.mips(),
        classes: Class::ALL
            .iter()
            .map(|c| (c.name(), counts[*c as usize]))
            .collect(),
        syscalls: s.machine.syscalls.clone(),
        syscalls_by_name: s.machine.syscalls.iter().fold(
            std::collections::BTreeMap::new(),
            |mut m, (&nr, &n)| {
                *m.entry(outcrop_rv::kernel::syscall_name(nr)).or_default() += n;
                m
            },
        ),
        host_max_rss_bytes: s.host_max_rss_bytes,
        signals_delivered: s.machine.signals_delivered,
        code_flushes: s.machine.code_flushes,
        threads: s
            .machine
            .threads
            .iter()
            .map(|t| crate::run_dir::ThreadRow {
                index: t.index,
                tid: t.tid,
                pid: t.pid,
                name: t.name.clone(),
                instructions: t.instructions,
                switches: t.switches,
            })
            .collect(),
        processes: process_rows(&s.machine.processes),
        context_switches: s.machine.context_switches,
        schedule_seed: s.machine.schedule_seed,
        timing: s.timing.clone(),
        compiling_tier: compiling_tier(s),
        backtrace: crate::run_dir::FrameRow::of(&s.machine.backtrace),
    }
}

/// The processes of a run that had more than one (none otherwise).
fn process_rows(p: &[outcrop_rv::kernel::ProcessStat]) -> Vec<crate::run_dir::ProcessRow> {
    use outcrop_rv::kernel::ExitStatus;
    if p.len() < 2 {
        return Vec::new();
    }
    p.iter()
        .map(|p| crate::run_dir::ProcessRow {
            pid: p.pid,
            ppid: p.ppid,
            program: p.program.clone(),
            execs: p.execs,
            exit: p.status.map(|s| match s {
                ExitStatus::Exited(c) => format!("exited {c}"),
                ExitStatus::Signaled { signal, .. } => format!(
                    "killed by {}",
                    outcrop_rv::kernel::signals::signal_name(u64::from(signal))
                ),
            }),
        })
        .collect()
}

/// What the compiling tier did in the run (`None` when it compiled nothing).
fn compiling_tier(s: &RunSummaries) -> Option<crate::run_dir::CompilingTier> {
    s.machine.jit.as_ref().map(|j| {
        let secs = j.compile_nanos as f64 / 1e9;
        crate::run_dir::CompilingTier {
            units: j.units,
            guest_blocks: j.blocks,
            code_bytes: j.code_bytes,
            compile_seconds: secs,
            compile_us_per_unit: if j.units > 0 {
                secs * 1e6 / j.units as f64
            } else {
                0.0
            },
            compile_share: secs / s.wall.as_secs_f64().max(1e-9),
            flushes: j.flushes,
            compile_us_per_guest_instruction: per_insn(secs, j.tiers.iter().map(|t| t.insns).sum()),
            tiers: crate::run_dir::Tiers {
                baseline: tier_row(&j.tiers[0]),
                cranelift: tier_row(&j.tiers[1]),
            },
            chains_patched: j.patched,
            entries: j.entries,
            exits: crate::run_dir::CompiledExits {
                not_compiled: j.exits[0],
                budget: j.exits[1],
                engine: j.exits[2],
                code_changed: j.exits[3],
                jump_cache: j.exits[4],
            },
        }
    })
}

/// Microseconds per guest instruction of `secs` spent compiling `insns`.
fn per_insn(secs: f64, insns: u64) -> f64 {
    if insns > 0 {
        secs * 1e6 / insns as f64
    } else {
        0.0
    }
}

/// One compiler's row of the compiling tier.
fn tier_row(t: &outcrop_run::TierCounts) -> crate::run_dir::TierRow {
    let secs = t.compile_nanos as f64 / 1e9;
    crate::run_dir::TierRow {
        units: t.units,
        guest_instructions: t.insns,
        code_bytes: t.code_bytes,
        compile_seconds: secs,
        compile_us_per_guest_instruction: per_insn(secs, t.insns),
    }
}

/// Pretty JSON bytes (no trailing newline), as the report directory's summaries are written.
fn pretty<T: serde::Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec_pretty(v).unwrap_or_default()
}

/// A code range named by the functions whose instructions ran in it, most first, with their
/// shares of the range's instructions in the exact profile: `luaV_execute 71%, luaH_get 12%
/// (+6 functions)`. `None` when nothing in the profile ran there.
pub fn range_label(p: &outcrop_profile::Profile, lo: u64, hi: u64) -> Option<String> {
    let first = p.pcs.partition_point(|c| c.pc < lo);
    let mut by_fn: std::collections::BTreeMap<u32, u64> = std::collections::BTreeMap::new();
    let mut total = 0u64;
    for c in p.pcs[first..].iter().take_while(|c| c.pc <= hi) {
        *by_fn.entry(c.function).or_default() += c.counts.instructions;
        total += c.counts.instructions;
    }
    if total == 0 {
        return None;
    }
    let mut ranked: Vec<(u32, u64)> = by_fn.into_iter().filter(|&(_, n)| n > 0).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let name = |f: u32| {
        p.functions
            .get(f as usize)
            .map_or("[unknown]", |f| f.name.as_str())
    };
    let mut parts: Vec<String> = Vec::new();
    let mut shown = 0u64;
    for &(f, n) in ranked.iter().take(3) {
        // the functions that hold most of the range's instructions: stop at 90%
        if shown * 10 >= total * 9 {
            break;
        }
        parts.push(format!(
            "{} {:.0}%",
            name(f),
            100.0 * n as f64 / total as f64
        ));
        shown += n;
    }
    let rest = ranked.len() - parts.len();
    Some(if rest > 0 {
        format!("{} (+{rest} functions)", parts.join(", "))
    } else {
        parts.join(", ")
    })
}

/// How many of the hottest functions the page annotates.
pub const ANNOTATED: usize = 5;

/// Largest function (in bytes) the page annotates.
pub const MAX_ANNOTATED_BYTES: u64 = 16 << 10;

/// The [`ANNOTATED`] hottest functions of the program itself (not a library's, not
/// `[unknown]`), each annotated by instruction and line; source text is not read here.
fn annotations(
    p: &outcrop_profile::Profile,
    program: &str,
    image: &outcrop_run::ProgramImage,
    mut table: Option<&mut outcrop_profile::lines::LineTable>,
) -> Vec<crate::annotate::Annotation> {
    let pcs: Vec<(u64, outcrop_profile::Counts)> = p.pcs.iter().map(|c| (c.pc, c.counts)).collect();
    let run = p.self_sum();
    let instruction = |pc: u64| image.instruction(pc);
    let function_at = |pc: u64| image.function(pc);
    p.hottest(p.timed)
        .into_iter()
        .filter(|f| f.size > 0 && f.size <= MAX_ANNOTATED_BYTES && !f.name.contains('@'))
        .take(ANNOTATED)
        .map(|f| {
            let mut locate = |pc: u64| {
                let t = table.as_deref_mut()?;
                let loc = t.locate(pc)?;
                Some((t.file_name(loc.file).to_string(), loc.line))
            };
            crate::annotate::Annotation::new(crate::annotate::AnnotateInput {
                program,
                function: (&f.name, f.start, f.size),
                instruction: &instruction,
                function_at: &function_at,
                locate: &mut locate,
                source: &mut |_, _| None,
                pcs: &pcs,
                run,
                timed: p.timed,
            })
        })
        .collect()
}
