//! What sampling branch records costs the profiled program: named presets with their sources.
//!
//! A sample interrupts the program, reads the branch-record buffer and stores it. The cost is
//! modelled as cycles per sample plus a fixed share of the run (daemons, buffer copies that
//! do not scale with the sample count):
//! `overhead = samples × cycles_per_sample ÷ run cycles + fixed`.
//!
//! * [`CostModel::PERF_LBR`], a modern Linux `perf record -b` on x86 LBR: 7,500 cycles per
//!   sample, no fixed part. Source: the kernel's own budget for a sampling interrupt —
//!   `perf_event_max_sample_rate` defaults to 100,000 samples/s and `perf_cpu_time_max_percent`
//!   to 25%, so the kernel allows 2.5 µs per sample before it throttles, and kernels on real
//!   machines report handlers at that limit ("perf: interrupt took too long (2507 > 2500)").
//!   2.5 µs at 3 GHz is 7,500 cycles. An estimate, not a measurement: this development machine
//!   is a VM with no PMU.
//! * [`CostModel::ITANIUM2_PERFMON`], the path paper's own setup (Itanium 2, perfmon/libpfm,
//!   `001_*.txt` §4.2, Figure 4): ~50% overhead at a 50 K-cycle period and ~1% at 10 M. Solving
//!   `c/P + f` through both points gives c ≈ 24,600 cycles per sample and f ≈ 0.75% fixed; the
//!   model then gives 5.7% at 500 K, matching the paper's "less than 10% from 10M down to
//!   around 500K".

/// Cost of sampling: cycles per sample and a fixed share of the run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostModel {
    /// Preset name (`perf-lbr`, `itanium2-perfmon`) or `custom`.
    pub name: &'static str,
    /// Cycles one sample costs (interrupt, reading the buffer, storing the trace).
    pub cycles_per_sample: u64,
    /// Share of the run spent regardless of the sample count (0.0075 = 0.75%).
    pub fixed: f64,
}

impl CostModel {
    /// Modern Linux perf on x86 LBR (see the module docs for the derivation).
    pub const PERF_LBR: CostModel = CostModel {
        name: "perf-lbr",
        cycles_per_sample: 7_500,
        fixed: 0.0,
    };
    /// The path paper's Itanium 2 with perfmon, fitted to its Figure 4.
    pub const ITANIUM2_PERFMON: CostModel = CostModel {
        name: "itanium2-perfmon",
        cycles_per_sample: 24_600,
        fixed: 0.0075,
    };
    /// Every preset.
    pub const PRESETS: [CostModel; 2] = [CostModel::PERF_LBR, CostModel::ITANIUM2_PERFMON];

    /// A preset by name.
    pub fn preset(name: &str) -> Option<CostModel> {
        CostModel::PRESETS.into_iter().find(|m| m.name == name)
    }

    /// Cycles per sample only, no fixed part.
    pub fn custom(cycles_per_sample: u64) -> CostModel {
        CostModel {
            name: "custom",
            cycles_per_sample,
            fixed: 0.0,
        }
    }

    /// Modelled overhead of `samples` samples on a run of `cycles` cycles (0 for an empty run).
    pub fn overhead(&self, samples: u64, cycles: u64) -> f64 {
        if cycles == 0 {
            return 0.0;
        }
        samples as f64 * self.cycles_per_sample as f64 / cycles as f64 + self.fixed
    }

    /// The shortest mean period (cycles) whose modelled overhead is at most `budget`, or
    /// `None` if the fixed part alone exceeds it.
    pub fn period_for(&self, budget: f64) -> Option<u64> {
        let per = budget - self.fixed;
        (per > 0.0).then(|| (self.cycles_per_sample as f64 / per).ceil() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn itanium_preset_reproduces_the_papers_figure_4() {
        let m = CostModel::ITANIUM2_PERFMON;
        // one sample per period: overhead = c/P + f
        let at = |p: u64| m.overhead(1_000, 1_000 * p);
        assert!((at(50_000) - 0.50).abs() < 0.01, "{}", at(50_000));
        assert!((at(10_000_000) - 0.01).abs() < 0.001, "{}", at(10_000_000));
        assert!(at(500_000) < 0.10);
        assert_eq!(m.period_for(0.01), Some(9_840_000));
    }

    #[test]
    fn perf_preset_and_budgets() {
        let m = CostModel::PERF_LBR;
        assert_eq!(m.period_for(0.01), Some(750_000));
        assert!((m.overhead(100, 75_000_000) - 0.01).abs() < 1e-12);
        assert_eq!(m.overhead(5, 0), 0.0);
        assert_eq!(CostModel::preset("perf-lbr"), Some(m));
        assert_eq!(CostModel::preset("nope"), None);
        let f = CostModel { fixed: 0.02, ..m };
        assert_eq!(f.period_for(0.01), None);
    }
}
