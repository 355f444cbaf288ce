//! The process tree of a run whose guest ran more than one process or program
//! (docs/machine.md, "Processes"): one row per (process, program) with its share of the run
//! and its hottest functions, children under their parent, for the console, `profile.json`
//! and the page.

use crate::profile::{escape, thousands};
use outcrop_profile::ProcessProfile;
use serde::Serialize;
use std::fmt::Write as _;

/// Rows the console prints (the JSON and the page have more).
pub const TEXT_ROWS: usize = 40;
/// Rows the page shows.
pub const PAGE_ROWS: usize = 400;
/// Functions named per row.
const HOT: usize = 3;

/// One program one process ran.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessRow {
    /// The process.
    pub pid: u32,
    /// Its parent.
    pub parent: u32,
    /// Which of its programs (0: the one it started with; one more per `execve`).
    pub image: u32,
    /// The program, as the guest named it.
    pub program: String,
    /// How deep in the tree (0: the first process).
    pub depth: u32,
    /// Instructions it retired in this program.
    pub instructions: u64,
    /// Cycles (timing model), or null.
    pub cycles: Option<u64>,
    /// Its share of the run's instructions (cycles when timed), in percent.
    pub share: f64,
    /// Its hottest functions by self instructions (cycles when timed), with their share of
    /// this row's.
    pub hottest: Vec<(String, f64)>,
    /// Every function that retired anything in it, hottest first: name, self and total
    /// instructions (cycles when timed).
    pub functions: Vec<(String, u64, u64)>,
}

/// The process tree.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessesReport {
    /// Processes that ran.
    pub processes: usize,
    /// (process, program) rows, in tree order: each process's programs in the order it ran
    /// them, then its children by pid.
    pub rows: Vec<ProcessRow>,
}

impl ProcessesReport {
    /// The tree of `procs` (`None` when the run had one process and one program).
    pub fn new(procs: &[ProcessProfile]) -> Option<ProcessesReport> {
        if procs.is_empty() {
            return None;
        }
        let timed = procs.iter().any(|p| p.profile.timed);
        let weight = |p: &ProcessProfile| {
            if timed {
                p.profile.self_sum().cycles
            } else {
                p.profile.instructions
            }
        };
        let total: u64 = procs.iter().map(weight).sum();
        let mut pids: Vec<u32> = procs.iter().map(|p| p.pid).collect();
        pids.dedup();
        let known = |pid: u32| procs.iter().any(|p| p.pid == pid);
        // roots: the first process, and any whose parent left no profile
        let mut order: Vec<(usize, u32)> = Vec::new();
        let mut stack: Vec<(u32, u32)> = Vec::new();
        let mut roots: Vec<u32> = Vec::new();
        for p in procs {
            if (p.pid == procs[0].pid || !known(p.parent)) && !roots.contains(&p.pid) {
                roots.push(p.pid);
            }
        }
        for r in roots.iter().rev() {
            stack.push((*r, 0));
        }
        let mut seen: Vec<u32> = Vec::new();
        while let Some((pid, depth)) = stack.pop() {
            if seen.contains(&pid) {
                continue;
            }
            seen.push(pid);
            let mut images: Vec<usize> =
                (0..procs.len()).filter(|&i| procs[i].pid == pid).collect();
            images.sort_by_key(|&i| procs[i].image);
            order.extend(images.iter().map(|&i| (i, depth)));
            let mut children: Vec<u32> = procs
                .iter()
                .filter(|c| c.parent == pid && c.pid != pid && c.image == 0)
                .map(|c| c.pid)
                .collect();
            children.sort_unstable();
            children.dedup();
            for c in children.into_iter().rev() {
                stack.push((c, depth + 1));
            }
        }
        let rows = order
            .into_iter()
            .map(|(i, depth)| {
                let p = &procs[i];
                let w = weight(p).max(1);
                let ranked = p.profile.hottest(timed);
                let functions = ranked
                    .iter()
                    .map(|f| {
                        let (own, all) = if timed {
                            (f.self_counts.cycles, f.total_counts.cycles)
                        } else {
                            (f.self_counts.instructions, f.total_counts.instructions)
                        };
                        (f.name.clone(), own, all)
                    })
                    .collect();
                let hottest = ranked
                    .into_iter()
                    .take(HOT)
                    .map(|f| {
                        let own = if timed {
                            f.self_counts.cycles
                        } else {
                            f.self_counts.instructions
                        };
                        (f.name.clone(), 100.0 * own as f64 / w as f64)
                    })
                    .filter(|(_, s)| *s > 0.0)
                    .collect();
                ProcessRow {
                    pid: p.pid,
                    parent: p.parent,
                    image: p.image,
                    program: p.program.clone(),
                    depth,
                    instructions: p.profile.instructions,
                    cycles: timed.then(|| weight(p)),
                    share: 100.0 * weight(p) as f64 / total.max(1) as f64,
                    hottest,
                    functions,
                }
            })
            .collect();
        Some(ProcessesReport {
            processes: seen.len(),
            rows,
        })
    }

    /// The console's table.
    pub fn write_text(&self, out: &mut String) {
        let timed = self.rows.iter().any(|r| r.cycles.is_some());
        let _ = writeln!(
            out,
            "Processes ({} processes, {} programs; exact: each has its own profile in profile.json and the Firefox export)\n  {:>7} {:>14}  process",
            self.processes,
            self.rows.len(),
            "share",
            if timed { "cycles" } else { "instructions" }
        );
        for r in self.rows.iter().take(TEXT_ROWS) {
            let _ = writeln!(
                out,
                "  {:>6.2}% {:>14}  {}{}  {}",
                r.share,
                r.cycles.unwrap_or(r.instructions),
                "  ".repeat(r.depth as usize),
                r.label(),
                r.hot_text()
            );
        }
        if self.rows.len() > TEXT_ROWS {
            let _ = writeln!(
                out,
                "  ... {} more (all of them: --report DIR, profile.json)",
                self.rows.len() - TEXT_ROWS
            );
        }
    }

    /// The page's section.
    pub fn write_html(&self, o: &mut String) {
        let _ = writeln!(
            o,
            "<h2 id=\"processes\">Processes</h2><p class=\"legend\">The guest ran {} processes and {} programs; each row is one program one process ran (a process that called <code>execve</code> has a row per program), children indented under their parent. Every row has its own exact profile: <code>profile.json</code> (<code>processes</code>) and the Firefox Profiler export (a track group per row) hold them all.</p>",
            self.processes,
            self.rows.len()
        );
        let timed = self.rows.iter().any(|r| r.cycles.is_some());
        let _ = writeln!(
            o,
            "<table><thead><tr><th>share</th><th>{}</th><th class=\"l\">process</th><th class=\"l\">hottest functions (share of the row)</th></tr></thead><tbody>",
            if timed { "cycles" } else { "instructions" }
        );
        for r in self.rows.iter().take(PAGE_ROWS) {
            let _ = writeln!(
                o,
                "<tr><td>{:.2}%</td><td>{}</td><td class=\"l\">{}{}</td><td class=\"l\">{}</td></tr>",
                r.share,
                thousands(r.cycles.unwrap_or(r.instructions)),
                "&nbsp;&nbsp;&nbsp;".repeat(r.depth as usize),
                escape(&r.label()),
                escape(&r.hot_text())
            );
        }
        let _ = writeln!(o, "</tbody></table>");
        if self.rows.len() > PAGE_ROWS {
            let _ = writeln!(
                o,
                "<p class=\"legend\">{} more rows in <code>profile.json</code>.</p>",
                self.rows.len() - PAGE_ROWS
            );
        }
    }
}

impl ProcessRow {
    /// `pid 12 sort` (`pid 12 sort (exec 1)` for a later program).
    pub fn label(&self) -> String {
        label(self.pid, self.image, &self.program)
    }

    fn hot_text(&self) -> String {
        self.hottest
            .iter()
            .map(|(n, s)| format!("{n} {s:.0}%"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// How a (process, program) is named: `pid 12 sort`, `pid 12 sort (exec 1)` for a program
/// it ran with `execve`.
pub fn label(pid: u32, image: u32, program: &str) -> String {
    let name = program.rsplit('/').next().unwrap_or(program);
    let name = if name.is_empty() { "?" } else { name };
    if image == 0 {
        format!("pid {pid} {name}")
    } else {
        format!("pid {pid} {name} (exec {image})")
    }
}
