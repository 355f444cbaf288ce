//! The prefetching service thread of Figure 2b, closed into the caches: L2-miss records
//! (`pc`, `res2`) come in, prefetch requests for the lines a miss predicts go out.
//!
//! The paper (§3.2, example b) sends every L2 miss's pc and effective address "to a service
//! thread that executes prefetch instructions on behalf of the application", sharing the L2,
//! and cites Song and Dubois's assisted execution, which implements sequential and stride
//! prefetching in such threads. It gives no predictor. Ours is what a service thread can
//! afford in software, two tables in its own memory:
//!
//! * **Stride, per pc.** Each missing pc's last line and last stride; a stride seen twice in a
//!   row (and not zero) is confirmed, and a confirmed pc prefetches the `degree` lines
//!   `distance`, `distance + 1`, … strides ahead.
//! * **Correlation** (a Markov predictor over each pc's miss sequence), for misses with no
//!   stride: the address this pc missed on next the last time it missed on this address
//!   (8-byte granules, so two objects sharing a line keep their own successors); a chain of
//!   `degree` successors is prefetched. Pointer chasing over a structure walked more than once
//!   (linked lists, trees, graphs) repeats its miss sequence, which no stride predicts.
//!
//! Both tables are direct-mapped with tags and bounded ([`PrefetchConfig::table_log2`]), so
//! the service's memory is fixed whatever the program does. The model is pure: the run layer
//! hands it each record the modelled service thread consumes and turns its answers into cache
//! fills arriving `latency` + memory-latency cycles later.

use serde::{Deserialize, Serialize};

/// The prefetching service's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefetchConfig {
    /// Cycles from the modelled service thread reading the message to its prefetch leaving
    /// for memory (its own work; the line then takes the memory latency to arrive).
    pub latency: u32,
    /// Lines prefetched per miss.
    pub degree: u32,
    /// How many strides ahead a confirmed stride starts (1: the next one).
    pub distance: u32,
    /// log2 of the correlation table's entries (lines; 16 bytes each). The stride table has
    /// 2^min(this, 12) entries (pcs).
    pub table_log2: u32,
}

impl Default for PrefetchConfig {
    /// Latency 100 cycles, degree 4, distance 2, a 2^22-entry correlation table (64 MiB of
    /// the service thread's memory: room for the walk of a structure of millions of objects,
    /// such as ptrchase's 1.3 M nodes; at 2^20 entries conflicts leave it half the hits).
    fn default() -> Self {
        PrefetchConfig {
            latency: 100,
            degree: 4,
            distance: 2,
            table_log2: 22,
        }
    }
}

impl PrefetchConfig {
    /// Checks the sizes: degree 1–16, distance 1–64, tables 2^4–2^24, latency ≤ 10^6.
    pub fn validate(&self) -> Result<(), crate::Error> {
        self.bounds().map_err(crate::Error::Prefetch)
    }

    fn bounds(&self) -> Result<(), String> {
        let check = |name: &str, v: u32, lo: u32, hi: u32| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(format!("prefetch {name} must be {lo} to {hi}, not {v}"))
            }
        };
        check("latency", self.latency, 0, 1_000_000)?;
        check("degree", self.degree, 1, 16)?;
        check("distance", self.distance, 1, 64)?;
        check("table_log2", self.table_log2, 4, 24)
    }
}

/// What the prefetcher did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefetchStats {
    /// Miss records read.
    pub misses: u64,
    /// Misses whose pc had a confirmed stride.
    pub stride_hits: u64,
    /// Misses predicted by the correlation table (at least one successor known).
    pub correlation_hits: u64,
    /// Prefetch requests issued (lines).
    pub issued: u64,
}

/// What the prefetching service did (the caches' side is in the timing totals:
/// `fills_requested`, `fills_filled`, `fills_late`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrefetchReport {
    /// Its settings, with the memory latency a fill takes after the request.
    pub config: PrefetchConfig,
    /// See `config`.
    pub memory_latency: u32,
    /// Misses read, predicted, lines asked for.
    pub stats: PrefetchStats,
}

#[derive(Clone, Copy, Debug, Default)]
struct StrideEntry {
    /// pc + 1 (0: empty).
    tag: u64,
    /// Line of the last miss.
    last: u64,
    /// Granule of the last miss.
    last_granule: u64,
    stride: i64,
    confirmed: bool,
    /// Cycle of the last miss, and the running mean of the cycles between misses.
    last_cycle: u64,
    interval: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct CorrelationEntry {
    /// granule + 1 (0: empty).
    tag: u64,
    /// The granule missed next.
    next: u64,
}

/// Correlation keys: 8-byte granules.
const GRANULE_SHIFT: u32 = 3;

/// The service's predictor (see the module documentation).
#[derive(Clone, Debug)]
pub struct Prefetcher {
    cfg: PrefetchConfig,
    line_shift: u32,
    strides: Vec<StrideEntry>,
    correlation: Vec<CorrelationEntry>,
    stats: PrefetchStats,
}

/// Most strides (or correlation successors) ahead a prefetch starts.
pub const MAX_AHEAD: u64 = 1024;

fn hash(x: u64, bits: u32) -> usize {
    (x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
}

impl Prefetcher {
    /// A prefetcher with `cfg` (validated by the caller) over lines of `1 << line_shift`
    /// bytes.
    pub fn new(cfg: PrefetchConfig, line_shift: u32) -> Prefetcher {
        let bits = cfg.table_log2.clamp(4, 24);
        Prefetcher {
            cfg: PrefetchConfig {
                table_log2: bits,
                ..cfg
            },
            line_shift: line_shift.clamp(GRANULE_SHIFT, 12),
            strides: vec![StrideEntry::default(); 1 << bits.min(12)],
            correlation: vec![CorrelationEntry::default(); 1 << bits],
            stats: PrefetchStats::default(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &PrefetchConfig {
        &self.cfg
    }

    /// What it did so far.
    pub fn stats(&self) -> &PrefetchStats {
        &self.stats
    }

    /// One miss record: `pc` missed the L2 on `addr` at `cycle`, and what is asked for now
    /// arrives `lead` cycles after that miss (0: unknown). Pushes the byte addresses (line
    /// aligned) to prefetch onto `out` (cleared first), at most `degree`, none twice and
    /// never the missing line itself.
    ///
    /// Timeliness: a pc whose misses come every T cycles (a running mean) makes ⌈lead / T⌉
    /// more before a prefetch lands, so a stride starts at least that many strides ahead and
    /// a correlation chain skips that many successors but one (at most [`MAX_AHEAD`]).
    pub fn miss(&mut self, pc: u64, addr: u64, cycle: u64, lead: u64, out: &mut Vec<u64>) {
        out.clear();
        self.stats.misses += 1;
        let bits = self.cfg.table_log2;
        let line = addr >> self.line_shift;
        let granule = addr >> GRANULE_SHIFT;
        let si = hash(pc, bits.min(12));
        let e = self.strides[si];
        let mut prev = None;
        let entry = if e.tag == pc.wrapping_add(1) {
            prev = Some(e.last_granule);
            let stride = line.wrapping_sub(e.last) as i64;
            let gap = cycle.saturating_sub(e.last_cycle);
            StrideEntry {
                tag: e.tag,
                last: line,
                last_granule: granule,
                stride,
                confirmed: stride != 0 && stride == e.stride,
                last_cycle: cycle,
                interval: if e.interval == 0 {
                    gap
                } else {
                    (3 * e.interval + gap) / 4
                },
            }
        } else {
            StrideEntry {
                tag: pc.wrapping_add(1),
                last: line,
                last_granule: granule,
                stride: 0,
                confirmed: false,
                last_cycle: cycle,
                interval: 0,
            }
        };
        // misses this pc makes before a prefetch asked for now arrives
        let ahead = if lead > 0 && entry.interval > 0 {
            lead.div_ceil(entry.interval).min(MAX_AHEAD)
        } else {
            0
        };
        // learn: this pc's previous miss is followed by this one
        if let Some(p) = prev.filter(|&p| p != granule) {
            self.correlation[hash(p, bits)] = CorrelationEntry {
                tag: p.wrapping_add(1),
                next: granule,
            };
        }
        let push = |out: &mut Vec<u64>, l: u64| {
            if l != line && !out.contains(&(l << self.line_shift)) {
                out.push(l << self.line_shift);
            }
        };
        if entry.confirmed {
            self.stats.stride_hits += 1;
            let first = u64::from(self.cfg.distance).max(ahead);
            for k in 0..u64::from(self.cfg.degree) {
                let ahead = (first + k) as i64;
                push(
                    out,
                    line.wrapping_add(entry.stride.wrapping_mul(ahead) as u64),
                );
            }
        } else {
            let mut at = granule;
            let skip = ahead.saturating_sub(1);
            for k in 0..skip + u64::from(self.cfg.degree) {
                let c = self.correlation[hash(at, bits)];
                if c.tag != at.wrapping_add(1) {
                    break;
                }
                if k >= skip {
                    push(out, c.next >> (self.line_shift - GRANULE_SHIFT));
                }
                at = c.next;
            }
            if !out.is_empty() {
                self.stats.correlation_hits += 1;
            }
        }
        self.strides[si] = entry;
        self.stats.issued += out.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines arrive 100 cycles after the miss.
    const LEAD: u64 = 100;

    fn pf(degree: u32, distance: u32) -> Prefetcher {
        Prefetcher::new(
            PrefetchConfig {
                degree,
                distance,
                ..PrefetchConfig::default()
            },
            6,
        )
    }

    #[test]
    fn a_confirmed_stride_prefetches_ahead() {
        let mut p = pf(2, 2);
        let mut out = Vec::new();
        // lines 10, 13, 16: stride 3 seen twice at the third miss
        p.miss(0x400, 10 << 6, 0, LEAD, &mut out);
        assert!(out.is_empty());
        p.miss(0x400, 13 << 6, 0, LEAD, &mut out);
        assert!(out.is_empty());
        p.miss(0x400, 16 << 6, 0, LEAD, &mut out);
        assert_eq!(out, vec![22 << 6, 25 << 6]);
        assert_eq!(p.stats().stride_hits, 1);
        // a negative stride works the same way
        let mut q = pf(1, 1);
        for l in [100u64, 98, 96] {
            q.miss(8, l << 6, 0, LEAD, &mut out);
        }
        assert_eq!(out, vec![94 << 6]);
    }

    #[test]
    fn a_repeated_pointer_chase_is_predicted_by_correlation() {
        let mut p = pf(3, 1);
        let mut out = Vec::new();
        let walk = [7u64, 900, 31, 4242, 77, 5];
        for &l in &walk {
            p.miss(0x10, l << 6, 0, LEAD, &mut out);
        }
        assert_eq!(p.stats().issued, 0, "the first walk has nothing to go on");
        // the second walk: each miss predicts the next three of the first walk
        p.miss(0x10, 7 << 6, 0, LEAD, &mut out);
        assert_eq!(out, vec![900 << 6, 31 << 6, 4242 << 6]);
        p.miss(0x10, 31 << 6, 0, LEAD, &mut out);
        assert_eq!(out, vec![4242 << 6, 77 << 6, 5 << 6]);
        assert_eq!(p.stats().correlation_hits, 2);
    }

    #[test]
    fn prefetches_start_far_enough_ahead_to_arrive_in_time() {
        // misses every 10 cycles, lines arriving 100 cycles after a miss: 10 misses' worth
        let mut p = Prefetcher::new(
            PrefetchConfig {
                degree: 2,
                distance: 2,
                ..PrefetchConfig::default()
            },
            6,
        );
        let mut out = Vec::new();
        for k in 0..4u64 {
            p.miss(0x400, (100 + k) << 6, 10 * k, LEAD, &mut out);
        }
        assert_eq!(out, vec![(103 + 10) << 6, (103 + 11) << 6]);
        // a repeated chase: the chain skips the 9 successors that would arrive late
        let mut c = Prefetcher::new(
            PrefetchConfig {
                degree: 2,
                ..PrefetchConfig::default()
            },
            6,
        );
        let walk: Vec<u64> = (0..30).map(|i| (i * 7919) % 1000 + 5000).collect();
        for (k, &l) in walk.iter().enumerate() {
            c.miss(0x10, l << 6, 10 * k as u64, LEAD, &mut out);
        }
        c.miss(0x10, walk[0] << 6, 300, LEAD, &mut out);
        assert_eq!(out, vec![walk[10] << 6, walk[11] << 6]);
    }

    #[test]
    fn pcs_do_not_share_strides_and_sizes_are_checked() {
        let mut p = pf(1, 1);
        let mut out = Vec::new();
        for (pc, l) in [(1u64, 10u64), (2, 500), (1, 12), (2, 400), (1, 14)] {
            p.miss(pc, l << 6, 0, LEAD, &mut out);
        }
        assert_eq!(out, vec![16 << 6]);
        assert!(PrefetchConfig {
            degree: 0,
            ..PrefetchConfig::default()
        }
        .validate()
        .unwrap_err()
        .to_string()
        .contains("degree"));
        assert!(PrefetchConfig::default().validate().is_ok());
    }

    use proptest::prelude::*;

    proptest! {
        /// Whatever the misses, at most `degree` distinct lines come out, never the missing
        /// line, all line-aligned, and the counts add up.
        #[test]
        fn answers_are_bounded(
            misses in prop::collection::vec((0u64..4, any::<u32>()), 1..300),
            degree in 1u32..6,
            distance in 1u32..4,
        ) {
            let mut p = Prefetcher::new(PrefetchConfig { degree, distance, table_log2: 4, latency: 0 }, 6);
            let mut out = Vec::new();
            let mut issued = 0u64;
            for (k, (pc, a)) in misses.into_iter().enumerate() {
                let a = u64::from(a);
                p.miss(pc, a, 7 * k as u64, LEAD, &mut out);
                prop_assert!(out.len() <= degree as usize);
                prop_assert!(out.iter().all(|&x| x & 63 == 0 && x >> 6 != a >> 6));
                let mut d = out.clone();
                d.sort_unstable();
                d.dedup();
                prop_assert_eq!(d.len(), out.len());
                issued += out.len() as u64;
            }
            prop_assert_eq!(p.stats().issued, issued);
        }
    }
}
