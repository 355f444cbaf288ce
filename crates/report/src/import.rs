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
    /// IP samples in it.
    pub samples: u64,
    /// Its share of the samples in the program.
    pub share: f64,
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
    /// The sampled flat profile, most samples first.
    pub flat_profile_sampled: Vec<FlatRow>,
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
        let symbols = image.symbols().ok();
        let mut by_func: std::collections::BTreeMap<String, u64> = Default::default();
        for (&a, &c) in &imported.ips {
            let name = symbols
                .as_ref()
                .and_then(|s| s.lookup(a))
                .map_or_else(|| format!("{a:#x}"), |f| f.name.to_string());
            *by_func.entry(name).or_default() += c;
        }
        let total = st.samples_in_program.max(1);
        let mut flat: Vec<FlatRow> = by_func
            .into_iter()
            .map(|(function, samples)| FlatRow {
                share: samples as f64 / total as f64,
                function,
                samples,
            })
            .collect();
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
        })
    }
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
        let _ = writeln!(s, "\nsampled flat profile (IP samples, not exact counts):");
        for f in &r.flat_profile_sampled {
            let _ = writeln!(
                s,
                "  {:>6.2}%  {:>10}  {}",
                100.0 * f.share,
                f.samples,
                f.function
            );
        }
        let _ = writeln!(
            s,
            "\nwrote {}; next: outcrop paths report {} --binary {}",
            r.output, r.output, r.program
        );
    }
}
