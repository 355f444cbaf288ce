//! The import report: what `outcrop import` read from a perf.data file or `perf script`
//! text, and the sampled flat profile by function.

use crate::pct;
use crate::Report;
use serde::Serialize;
use std::fmt::Write as _;

/// One function of the sampled flat profile.
#[derive(Serialize)]
pub struct FlatRow {
    /// Function name (or address when no symbol covers it).
    pub function: String,
    /// Samples taken in it ("self").
    pub samples: u64,
    /// Its share of the samples profiled.
    pub share: f64,
    /// Samples whose call chain passed through it ("total", recursion counted once), when
    /// the samples have call chains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_samples: Option<u64>,
}

/// One object the sampled processes mapped for code, with its share of the samples.
#[derive(Serialize)]
pub struct ObjectRow {
    /// Its path as recorded (`[kernel]` for the kernel).
    pub object: String,
    /// Whether it is the program.
    pub program: bool,
    /// Samples taken in it.
    pub samples: u64,
    /// Its share of all samples.
    pub share: f64,
    /// The file its symbols were read from (`null`: not found; its frames are
    /// `[unknown]@object`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// The report of one import.
#[derive(Serialize)]
pub struct ImportReport<'a> {
    /// The input file.
    pub input: String,
    /// `perf.data` or `perf script`.
    pub format: &'static str,
    /// The program.
    pub program: String,
    /// Its build id.
    pub program_id: String,
    /// The samples file written.
    pub output: String,
    /// What was read.
    pub stats: &'a outcrop_perf::Stats,
    /// Distinct branch-stack traces.
    pub distinct_traces: usize,
    /// The sampled flat profile, most samples first: the program's functions, its
    /// libraries' (`name@object`) and `[kernel]`, in the processes that ran the program.
    pub flat_profile_sampled: Vec<FlatRow>,
    /// Samples the flat profile covers.
    pub profiled_samples: u64,
    /// Samples with a call chain.
    pub with_callchains: u64,
    /// Every object with samples, most first.
    pub objects: Vec<ObjectRow>,
}

impl<'a> ImportReport<'a> {
    /// The report of an import (`outcrop_run::import::import`'s result) of `image`'s samples
    /// from `input`, written to `output`: what was read, and the `top` functions of the
    /// sampled flat profile (IP samples by function; an address where no symbol covers it).
    pub fn new(
        result: &'a outcrop_run::import::ImportResult,
        image: &outcrop_run::ProgramImage,
        input: &std::path::Path,
        output: &std::path::Path,
        top: usize,
    ) -> Result<ImportReport<'a>, outcrop_run::Error> {
        let imported = &result.imported;
        let st = &imported.stats;
        let chains = st.callchains > 0;
        let (mut flat, profiled) = match &result.summaries.profile {
            Some(p) => (
                p.functions
                    .iter()
                    .map(|f| FlatRow {
                        function: f.name.clone(),
                        samples: f.self_counts.instructions,
                        share: f.self_counts.instructions as f64 / p.instructions.max(1) as f64,
                        total_samples: chains.then_some(f.total_counts.instructions),
                    })
                    .collect(),
                p.instructions,
            ),
            None => (ip_rows(imported, image), st.samples_in_program),
        };
        flat.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.function.cmp(&b.function)));
        flat.truncate(top);
        Ok(ImportReport {
            input: input.display().to_string(),
            format: match result.format {
                outcrop_run::import::Format::PerfData => "perf.data",
                outcrop_run::import::Format::PerfScript => "perf script",
            },
            program: image.path().display().to_string(),
            program_id: image.program_id()?.to_string(),
            output: output.display().to_string(),
            stats: st,
            distinct_traces: imported.samples.traces.len(),
            flat_profile_sampled: flat,
            profiled_samples: profiled,
            with_callchains: st.callchains,
            objects: object_rows(result),
        })
    }
}

impl ImportReport<'_> {
    /// What a person should know when the import found nothing of the program: no sample
    /// and no branch record in it, and no mapping of it (so the wrong program, most likely).
    pub fn warning(&self) -> Option<String> {
        let st = self.stats;
        let none = st.samples_in_program == 0 && st.branches_in_program == 0;
        (none && st.program_mappings == 0).then(|| {
            format!(
                "no sample lies in {}: is it the program that was recorded{}?",
                self.program,
                if self.format == "perf script" {
                    " (text input is read at the program's link-time addresses: a position-independent program needs its perf.data)"
                } else {
                    ""
                }
            )
        })
    }
}

/// The flat profile of the program's IP samples alone (no profile was built).
fn ip_rows(imported: &outcrop_perf::Imported, image: &outcrop_run::ProgramImage) -> Vec<FlatRow> {
    let symbols = image.symbols().ok();
    let mut by_func: std::collections::BTreeMap<String, u64> = Default::default();
    for (&a, &c) in &imported.ips {
        let name = symbols
            .as_ref()
            .and_then(|s| s.lookup(a))
            .map_or_else(|| format!("{a:#x}"), |f| f.name.to_string());
        *by_func.entry(name).or_default() += c;
    }
    let total = imported.stats.samples_in_program.max(1);
    by_func
        .into_iter()
        .map(|(function, samples)| FlatRow {
            share: samples as f64 / total as f64,
            function,
            samples,
            total_samples: None,
        })
        .collect()
}

/// Every object with samples (and the kernel), most samples first.
fn object_rows(result: &outcrop_run::import::ImportResult) -> Vec<ObjectRow> {
    let imported = &result.imported;
    let all = imported.stats.samples.max(1) as f64;
    let mut rows: Vec<ObjectRow> = imported
        .objects
        .iter()
        .filter(|o| o.samples > 0)
        .map(|o| ObjectRow {
            object: o.path.clone(),
            program: o.program,
            samples: o.samples,
            share: o.samples as f64 / all,
            file: result
                .object_files
                .iter()
                .find(|f| f.path == o.path)
                .and_then(|f| f.file.clone()),
        })
        .collect();
    if imported.stats.kernel_samples > 0 {
        rows.push(ObjectRow {
            object: "[kernel]".into(),
            program: false,
            samples: imported.stats.kernel_samples,
            share: imported.stats.kernel_samples as f64 / all,
            file: None,
        });
    }
    rows.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.object.cmp(&b.object)));
    rows
}

impl Report for ImportReport<'_> {
    fn write_text(&self, s: &mut String) {
        let r = self;
        let st = r.stats;
        let _ = writeln!(s, "imported {} ({}) for {}", r.input, r.format, r.program);
        let _ = writeln!(
            s,
            "  samples          {:>12}  ({:.1}% in the program, {} in the kernel, {} lost records)",
            st.samples,
            pct(st.samples_in_program, st.samples),
            st.kernel_samples,
            st.lost
        );
        let _ = writeln!(
        s,
        "  branch records   {:>12}  ({:.1}% inside the program; up to {} per sample; {} distinct traces)",
        st.branches,
        pct(st.branches_in_program, st.branches),
        st.max_entries,
        r.distinct_traces
    );
        let _ = writeln!(
        s,
        "  mispredicted     {:>12}  ({} with cycle counts, {} with hw_idx, {} with branch counters, {} wrong-path dropped)",
        st.mispredicted, st.with_cycles, st.with_hw_idx, st.with_counters, st.wrong_path
    );
        let _ = writeln!(
            s,
            "  processes        {:>12}  ({} threads; {} mappings of the program)",
            st.processes.len(),
            st.threads,
            st.program_mappings
        );
        if !r.objects.is_empty() {
            let _ = writeln!(s, "\nsamples by object (of all {} samples):", st.samples);
            for o in &r.objects {
                let note = match (&o.file, o.program, o.object.starts_with('[')) {
                    (_, true, _) => " (the program)".to_string(),
                    (None, false, false) => " (file not found: its functions are [unknown])".into(),
                    _ => String::new(),
                };
                let _ = writeln!(
                    s,
                    "  {:>6.2}%  {:>10}  {}{note}",
                    100.0 * o.share,
                    o.samples,
                    o.object
                );
            }
        }
        let chains = r.with_callchains > 0;
        let _ = writeln!(
            s,
            "\nsampled flat profile ({} samples in the program's processes; samples, not exact counts{}):",
            r.profiled_samples,
            if chains {
                ""
            } else {
                "; no call chains: record with perf record -g for totals and a call tree"
            }
        );
        if chains {
            let _ = writeln!(
                s,
                "  {:>7}  {:>10}  {:>10}  function",
                "self", "self", "total"
            );
        }
        for f in &r.flat_profile_sampled {
            match f.total_samples {
                Some(t) => {
                    let _ = writeln!(
                        s,
                        "  {:>6.2}%  {:>10}  {:>10}  {}",
                        100.0 * f.share,
                        f.samples,
                        t,
                        f.function
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "  {:>6.2}%  {:>10}  {}",
                        100.0 * f.share,
                        f.samples,
                        f.function
                    );
                }
            }
        }
        let _ = writeln!(
            s,
            "\nwrote {}; next: outcrop paths report {} --binary {}",
            r.output, r.output, r.program
        );
    }
}
