//! `outcrop annotate`: one function's instructions with what each retired, its source lines
//! between them, and the jumps within it, as `perf annotate --stdio` shows a hot function (and
//! kcachegrind's or the Firefox Profiler's source view): exact counts from `profile.json`'s
//! per-instruction table, the code disassembled from the program itself.

use outcrop_profile::Counts;
use serde::Serialize;
use std::fmt::Write as _;

/// One instruction of an [`Annotation`].
#[derive(Clone, Debug, Serialize)]
pub struct AnnotatedInstruction {
    /// Its address.
    pub pc: u64,
    /// Its offset in the function.
    pub offset: u64,
    /// Disassembly (a call or jump out of the function names its target: `<malloc>`).
    pub assembly: String,
    /// `file:line` (when the line tables cover it).
    pub line: Option<String>,
    /// What it retired.
    #[serde(rename = "self")]
    pub counts: Counts,
    /// The target of a branch or jump that stays within the function.
    pub jump_to: Option<u64>,
    /// Whether a branch or jump within the function lands here.
    pub jump_target: bool,
}

/// One source line of an [`Annotation`], with what its instructions retired.
#[derive(Clone, Debug, Serialize)]
pub struct AnnotatedLine {
    /// `file:line`.
    pub line: String,
    /// Its text, when the source file was found.
    pub text: Option<String>,
    /// What its instructions in this function retired.
    #[serde(rename = "self")]
    pub counts: Counts,
}

/// A function annotated with its per-instruction counts.
#[derive(Clone, Debug, Serialize)]
pub struct Annotation {
    /// The program.
    pub program: String,
    /// The function's name.
    pub function: String,
    /// Its first byte and size.
    pub start: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Whether the counts include a timing model's (cycles, misses).
    pub timed: bool,
    /// The run's totals (the percentages' base).
    pub run: Counts,
    /// What the function's own instructions retired.
    #[serde(rename = "self")]
    pub self_counts: Counts,
    /// Its source lines, hottest first.
    pub lines: Vec<AnnotatedLine>,
    /// Its instructions, in address order.
    pub instructions: Vec<AnnotatedInstruction>,
}

/// What an [`Annotation`] is made from: the function, the program's code and lines, and the
/// profile's per-instruction counts.
pub struct AnnotateInput<'a> {
    /// The program as the report names it.
    pub program: &'a str,
    /// The function's name, first byte and size.
    pub function: (&'a str, u64, u64),
    /// The decoded instruction at an address (`None`: not in the program's code).
    pub instruction: &'a dyn Fn(u64) -> Option<outcrop_rv::inst::Inst>,
    /// The function (`name+0xoffset`) at an address, from the symbols.
    pub function_at: &'a dyn Fn(u64) -> Option<String>,
    /// `(file, line)` of an address, from the line tables.
    pub locate: &'a mut dyn FnMut(u64) -> Option<(String, u32)>,
    /// The text of a source line, when its file can be read.
    pub source: &'a mut dyn FnMut(&str, u32) -> Option<String>,
    /// Per-instruction counts (any addresses: those in the function are used).
    pub pcs: &'a [(u64, Counts)],
    /// The run's totals.
    pub run: Counts,
    /// Whether the run was timed.
    pub timed: bool,
}

/// Most instructions listed (a function larger than this is cut, and says so).
pub const MAX_INSTRUCTIONS: usize = 1 << 16;

impl Annotation {
    /// Disassembles the function and joins each instruction with its counts and line.
    pub fn new(input: AnnotateInput<'_>) -> Annotation {
        let (name, start, size) = input.function;
        let end = start.saturating_add(size);
        let counts: rustc_hash::FxHashMap<u64, Counts> = input
            .pcs
            .iter()
            .filter(|(pc, _)| *pc >= start && *pc < end)
            .copied()
            .collect();
        let mut instructions = Vec::new();
        let mut pc = start;
        while pc < end && instructions.len() < MAX_INSTRUCTIONS {
            let Some(inst) = (input.instruction)(pc) else {
                break;
            };
            let direct = inst.op == outcrop_rv::inst::Op::Jal
                || inst.class() == outcrop_rv::inst::Class::Branch;
            let target = pc.wrapping_add(inst.imm as i64 as u64);
            let inside = target >= start && target < end;
            let assembly = match (direct && !inside).then(|| (input.function_at)(target)) {
                Some(Some(f)) => format!("{inst}  <{f}>"),
                _ => inst.to_string(),
            };
            instructions.push(AnnotatedInstruction {
                pc,
                offset: pc - start,
                assembly,
                line: (input.locate)(pc).map(|(f, l)| format!("{f}:{l}")),
                counts: counts.get(&pc).copied().unwrap_or_default(),
                jump_to: (direct && inside).then_some(target),
                jump_target: false,
            });
            pc += u64::from(inst.len.max(2));
        }
        let targets: std::collections::HashSet<u64> =
            instructions.iter().filter_map(|i| i.jump_to).collect();
        for i in &mut instructions {
            i.jump_target = targets.contains(&i.pc);
        }
        let mut self_counts = Counts::default();
        let mut by_line: Vec<(String, Counts)> = Vec::new();
        for i in &instructions {
            self_counts.add(&i.counts);
            if let Some(l) = &i.line {
                match by_line.iter_mut().find(|(k, _)| k == l) {
                    Some((_, c)) => c.add(&i.counts),
                    None => by_line.push((l.clone(), i.counts)),
                }
            }
        }
        let weight = |c: &Counts| {
            if input.timed {
                c.cycles
            } else {
                c.instructions
            }
        };
        by_line.sort_by(|a, b| weight(&b.1).cmp(&weight(&a.1)).then(a.0.cmp(&b.0)));
        let lines = by_line
            .into_iter()
            .map(|(line, counts)| {
                let text = line
                    .rsplit_once(':')
                    .and_then(|(f, n)| (input.source)(f, n.parse().ok()?));
                AnnotatedLine { line, text, counts }
            })
            .collect();
        Annotation {
            program: input.program.to_string(),
            function: name.to_string(),
            start,
            size,
            timed: input.timed,
            run: input.run,
            self_counts,
            lines,
            instructions,
        }
    }

    fn weight(&self, c: &Counts) -> u64 {
        if self.timed {
            c.cycles
        } else {
            c.instructions
        }
    }

    fn pct(&self, c: &Counts) -> f64 {
        100.0 * self.weight(c) as f64 / self.weight(&self.self_counts).max(1) as f64
    }

    /// The annotation as `perf annotate --stdio` lays it out: a header, the hottest source
    /// lines, then every instruction in address order under its source line, with its share
    /// of the function, its counts, and the jumps within the function (`→ +0x1c` at a jump,
    /// `>` at its target).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let w = if self.timed { "cycles" } else { "instructions" };
        let run_share =
            100.0 * self.weight(&self.self_counts) as f64 / self.weight(&self.run).max(1) as f64;
        let _ = writeln!(
            out,
            "Annotate of {} in {} ({:#x}, {} bytes): {} self {w}, {run_share:.2}% of the run (exact: every retired instruction counted)",
            self.function,
            self.program,
            self.start,
            self.size,
            crate::profile::thousands(self.weight(&self.self_counts)),
        );
        if !self.lines.is_empty() {
            let _ = writeln!(out, "Hottest source lines");
            for l in self.lines.iter().take(10) {
                let _ = writeln!(
                    out,
                    "  {:>6.2}%  {:>14}  {}{}",
                    self.pct(&l.counts),
                    crate::profile::thousands(self.weight(&l.counts)),
                    l.line,
                    l.text
                        .as_deref()
                        .map(|t| format!("  {}", t.trim()))
                        .unwrap_or_default()
                );
            }
        }
        let _ = writeln!(
            out,
            "Instructions in address order, under their source lines (percent: of the function's self {w})"
        );
        let header = if self.timed {
            "  percent      cycles  instructions   CPI  mispred    L1D    L2 |  address: instruction"
        } else {
            "  percent  instructions |  address: instruction"
        };
        let _ = writeln!(out, "{header}");
        let mut last_line: Option<&str> = None;
        for i in &self.instructions {
            if i.line.as_deref() != last_line {
                if let Some(l) = &i.line {
                    let text = self
                        .lines
                        .iter()
                        .find(|x| &x.line == l)
                        .and_then(|x| x.text.as_deref())
                        .map(|t| format!("  {}", t.trim()))
                        .unwrap_or_default();
                    let _ = writeln!(out, "  {l}{text}");
                }
                last_line = i.line.as_deref();
            }
            let pct = if i.counts.instructions == 0 && i.counts.cycles == 0 {
                String::new()
            } else {
                format!("{:.2}%", self.pct(&i.counts))
            };
            let c = &i.counts;
            let cols = if self.timed {
                format!(
                    "{pct:>9} {:>11} {:>13} {:>5} {:>8} {:>6} {:>5}",
                    crate::profile::thousands(c.cycles),
                    crate::profile::thousands(c.instructions),
                    if c.instructions > 0 {
                        format!("{:.2}", c.cycles as f64 / c.instructions as f64)
                    } else {
                        String::new()
                    },
                    crate::profile::thousands(c.mispredicts),
                    crate::profile::thousands(c.l1d_misses),
                    crate::profile::thousands(c.l2_misses),
                )
            } else {
                format!("{pct:>9} {:>13}", crate::profile::thousands(c.instructions))
            };
            let mark = if i.jump_target { '>' } else { ' ' };
            let jump = i
                .jump_to
                .map(|t| format!("  → +{:#x}", t - self.start))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{cols} |{mark}{:>9x}: {}{jump}",
                i.pc,
                outcrop_events::escape::terminal(&i.assembly)
            );
        }
        out
    }
}
