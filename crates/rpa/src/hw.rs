//! The RPA's hardware resources in time (§4, §6): profile networks, profile buffers, the
//! barrel-and-slot query engine and the message queues' modelled service threads.
//!
//! The model is driven in program order by whoever owns the core's timing (Outcrop's run
//! glue, through the timing model's feedback hook) and answers one question per selected
//! instruction: the earliest cycle it may dispatch. Everything else follows from the paper:
//!
//! * **At dispatch** a selected instruction takes a profile buffer and, for an *expensive*
//!   profile (one collecting pipeline-time items), a profile network. If either is missing,
//!   dispatch stalls until one frees (§4: "Instruction dispatch stalls if either is
//!   unavailable").
//! * **At retire** its network frees; its record is complete and waits for one of the engine's
//!   `slots` (four in the paper).
//! * **In the engine** each query instruction takes `stages` cycles (a four-stage barrel: one
//!   instruction per active query every four cycles); a send writes the message's 8 words in
//!   `write_cycles`. A message finds its queue full when the modelled service thread, which
//!   consumes one message every `service_cycles`, is `capacity` messages behind: an `always`
//!   query waits in its slot (back-pressure that ends as a dispatch stall once the buffers are
//!   all waiting); a sampled one drops the message and counts it.
//! * **When the query completes** its buffer frees.
//!
//! Beyond the paper, [`Adaptive`] lets the RPA watch itself (§6.2 suggests it): a controller
//! that throttles sampled queries while dispatch stalls exceed a budget.
//!
//! The record's words are built when its retire group is known (the RPA's `rrate` holds the
//! number of instructions retiring in the same cycle), so the owner tells the model when a
//! retire group closes. The one case that needs care: a buffer whose query is not scheduled
//! yet (its retire group is still open) frees after that group's retire cycle, so an
//! instruction that must wait for it dispatches after that cycle and so closes the group;
//! [`Hardware::acquire`] then answers [`Acquire::CloseGroup`] and the owner schedules the
//! group's queries before asking again.
//!
//! Event records (`evL2DMISS` …) are known only once the instruction has executed: they take
//! no network, but take a buffer at the instruction's retire ([`Hardware::acquire_event`]).
//! With none free, the record waits for one, and dispatch stalls from that cycle until it
//! gets one (the owner holds every instruction that would dispatch in between), so an
//! `always` event query whose service falls behind slows the program instead of queueing
//! without bound.

use outcrop_sampling::rng::SplitMix64;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Most networks, buffers or engine slots a configuration may have.
pub const MAX_UNITS: u32 = 256;

/// The hardware's sizes and speeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HwConfig {
    /// Profile networks (instructions profiled in flight at once).
    pub networks: u32,
    /// Profile buffers (records held until their query completes).
    pub buffers: u32,
    /// Queries the engine runs at once (barrel slots).
    pub slots: u32,
    /// Cycles per query instruction per slot (the barrel's pipeline depth).
    pub stages: u32,
    /// Cycles to write one 8-word message.
    pub write_cycles: u32,
    /// Cycles the modelled service thread spends per message.
    pub service_cycles: u32,
    /// Records with only retire-time items take no network (§6.3's cheap profiles).
    pub cheap: bool,
}

impl HwConfig {
    /// The paper's design point (§6.2): 4 networks, 8 buffers, a 4-stage engine with 4 slots;
    /// expensive profiles, as its Figures 7 and 8 assume.
    pub fn paper() -> HwConfig {
        HwConfig {
            networks: 4,
            buffers: 8,
            slots: 4,
            stages: 4,
            write_cycles: 4,
            service_cycles: 50,
            cheap: false,
        }
    }

    /// The paper's "essentially unrestricted" resources of Figure 7: 32 networks, 32 buffers.
    pub fn unrestricted() -> HwConfig {
        HwConfig {
            networks: 32,
            buffers: 32,
            ..HwConfig::paper()
        }
    }

    /// Parses `paper`, `unrestricted` or `NETWORKS:BUFFERS` (on the paper's engine).
    pub fn parse(s: &str) -> Result<HwConfig, crate::Error> {
        Self::parse_text(s).map_err(crate::Error::Hardware)
    }

    fn parse_text(s: &str) -> Result<HwConfig, String> {
        let c = match s {
            "paper" => HwConfig::paper(),
            "unrestricted" => HwConfig::unrestricted(),
            _ => {
                let (n, b) = s.split_once(':').ok_or_else(|| {
                    format!("`{s}`: expected paper, unrestricted or NETWORKS:BUFFERS (e.g. 4:8)")
                })?;
                let num = |t: &str, what: &str| {
                    t.trim()
                        .parse::<u32>()
                        .map_err(|_| format!("`{t}` is not a number of {what}"))
                };
                HwConfig {
                    networks: num(n, "networks")?,
                    buffers: num(b, "buffers")?,
                    ..HwConfig::paper()
                }
            }
        };
        c.sizes()?;
        Ok(c)
    }

    /// Checks every size is in range.
    pub fn validate(&self) -> Result<(), crate::Error> {
        self.sizes().map_err(crate::Error::Hardware)
    }

    fn sizes(&self) -> Result<(), String> {
        for (name, v, lo) in [
            ("networks", self.networks, 1),
            ("buffers", self.buffers, 1),
            ("slots", self.slots, 1),
            ("stages", self.stages, 1),
            ("write_cycles", self.write_cycles, 0),
            ("service_cycles", self.service_cycles, 0),
        ] {
            let hi = if name.ends_with("cycles") {
                1_000_000
            } else {
                MAX_UNITS
            };
            if !(lo..=hi).contains(&v) {
                return Err(format!(
                    "RPA hardware: {name} must be {lo} to {hi}, not {v}"
                ));
            }
        }
        Ok(())
    }
}

/// What [`Hardware::acquire`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// The instruction dispatches at this cycle with its resources.
    At(u64),
    /// It must wait for a buffer whose query is not scheduled yet: it dispatches after the
    /// open retire group's cycle, which closes that group. Schedule its queries
    /// ([`Hardware::schedule`]) and ask again.
    CloseGroup,
}

/// One send of a scheduled query, as the model decided it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Written at this cycle into message slot `index` (messages written so far to that
    /// queue, modulo its capacity).
    Written {
        /// Cycle the 8 words are in memory.
        at: u64,
        /// The queue's message index (0-based, counting every message written).
        index: u64,
        /// Cycle the modelled service thread has consumed it.
        consumed: u64,
    },
    /// Dropped: a sampled query found the queue full.
    Dropped,
}

/// How busy the hardware was.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HwStats {
    /// Instructions given resources at dispatch.
    pub profiled: u64,
    /// Of them, how many took a network (expensive profiles).
    pub with_network: u64,
    /// Dispatches held for a network, and the cycles they waited.
    pub held_network: u64,
    /// See `held_network`.
    pub held_network_cycles: u64,
    /// Dispatches held for a buffer, and the cycles they waited (a hold for both counts as
    /// a buffer hold).
    pub held_buffer: u64,
    /// See `held_buffer`.
    pub held_buffer_cycles: u64,
    /// Queries run by the engine.
    pub queries: u64,
    /// Query instructions executed.
    pub steps: u64,
    /// Cycles records waited for an engine slot, summed.
    pub slot_wait_cycles: u64,
    /// Messages written.
    pub messages: u64,
    /// Sends of `always` queries that found the queue full and waited, and the cycles.
    pub queue_waits: u64,
    /// See `queue_waits`.
    pub queue_wait_cycles: u64,
    /// Sends of sampled queries dropped because the modelled queue was full.
    pub dropped: u64,
    /// Cycles from the instruction's dispatch to its query's completion, summed over
    /// profiled instructions (buffer occupancy).
    pub buffer_cycles: u64,
}

/// A queue as the model sees it: when each message in it is consumed.
#[derive(Clone, Debug, Default)]
struct QueueModel {
    /// Consumption cycle of the last `capacity` messages (a ring indexed by message number).
    consumed: Vec<u64>,
    written: u64,
    last_consumed: u64,
}

/// The RPA's resources over time (see the module documentation).
#[derive(Clone, Debug)]
pub struct Hardware {
    cfg: HwConfig,
    capacity: usize,
    /// Free cycles of busy networks.
    nets: BinaryHeap<Reverse<u64>>,
    /// The instruction between [`Hardware::acquire`] and [`Hardware::retired`] took a network.
    net_pending: bool,
    /// Free cycles of busy buffers whose query is scheduled.
    bufs: BinaryHeap<Reverse<u64>>,
    /// Buffers whose query is not scheduled yet, and the retire cycle of their group.
    open: u32,
    open_retire: u64,
    /// The pending instruction took a buffer.
    buf_pending: bool,
    /// Dispatch cycle of the buffers not yet scheduled, oldest first.
    open_since: VecDeque<u64>,
    /// Free cycle of each engine slot.
    slots: Vec<u64>,
    queues: Vec<QueueModel>,
    /// The sweep's clock and the cycles spent with exactly k buffers / networks in use.
    clock: u64,
    hist_buffers: Vec<u64>,
    hist_networks: Vec<u64>,
    stats: HwStats,
}

/// Cycles spent with at least x resources in use, for x = 0, 1, … (Figure 7's histograms).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Occupancy {
    /// Cycles covered (the run's cycles).
    pub cycles: u64,
    /// `buffers[x]`: cycles with at least x profile buffers in use.
    pub buffers: Vec<u64>,
    /// `networks[x]`: cycles with at least x profiled instructions in flight.
    pub networks: Vec<u64>,
}

impl Occupancy {
    /// Share of cycles (0–1) with at least `x` buffers in use.
    pub fn buffers_at_least(&self, x: usize) -> f64 {
        share(self.buffers.get(x).copied().unwrap_or(0), self.cycles)
    }

    /// Share of cycles (0–1) with at least `x` profiled instructions in flight.
    pub fn networks_at_least(&self, x: usize) -> f64 {
        share(self.networks.get(x).copied().unwrap_or(0), self.cycles)
    }
}

fn share(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

impl Hardware {
    /// Idle hardware with `cfg` (validated) and queues of `capacity` messages (1 to 128).
    pub fn new(cfg: HwConfig, capacity: usize) -> Hardware {
        let capacity = capacity.clamp(1, crate::queue::MAX_MESSAGES);
        Hardware {
            cfg,
            capacity,
            nets: BinaryHeap::new(),
            net_pending: false,
            bufs: BinaryHeap::new(),
            open: 0,
            open_retire: 0,
            buf_pending: false,
            open_since: VecDeque::new(),
            slots: vec![0; cfg.slots.max(1) as usize],
            queues: (0..16)
                .map(|_| QueueModel {
                    consumed: vec![0; capacity],
                    ..QueueModel::default()
                })
                .collect(),
            clock: 0,
            hist_buffers: vec![0; cfg.buffers as usize + 1],
            hist_networks: vec![0; cfg.networks as usize + 1],
            stats: HwStats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &HwConfig {
        &self.cfg
    }

    /// Statistics so far.
    pub fn stats(&self) -> &HwStats {
        &self.stats
    }

    fn buffers_in_use(&self) -> usize {
        self.bufs.len() + self.open as usize + usize::from(self.buf_pending)
    }

    fn networks_in_use(&self) -> usize {
        self.nets.len() + usize::from(self.net_pending)
    }

    /// Advances the sweep to cycle `t`, freeing what frees by then.
    fn advance(&mut self, t: u64) {
        loop {
            let nb = self.bufs.peek().map_or(u64::MAX, |r| r.0);
            let nn = self.nets.peek().map_or(u64::MAX, |r| r.0);
            let next = nb.min(nn);
            if next > t {
                break;
            }
            self.tick(next);
            if nb == next {
                self.bufs.pop();
            } else {
                self.nets.pop();
            }
        }
        self.tick(t);
    }

    /// Counts the cycles from the clock to `t` at the current occupancy.
    fn tick(&mut self, t: u64) {
        if t > self.clock {
            let dt = t - self.clock;
            let b = self.buffers_in_use().min(self.hist_buffers.len() - 1);
            let n = self.networks_in_use().min(self.hist_networks.len() - 1);
            self.hist_buffers[b] += dt;
            self.hist_networks[n] += dt;
            self.clock = t;
        }
    }

    /// Whether a profile of these items is expensive: it collects pipeline-time items and
    /// so needs a network for the instruction's whole flight (always, unless `cheap`).
    pub fn needs_network(&self, items: &[u8]) -> bool {
        !self.cfg.cheap
            || items.iter().any(|&i| {
                crate::names::PIPELINE_ITEMS.contains(&crate::names::ITEMS[usize::from(i)])
            })
    }

    /// A selected instruction the core would dispatch at `d`: the cycle it may (holding it
    /// until a buffer, and with `network` a network, is free), or [`Acquire::CloseGroup`].
    /// Calls come in program order, each followed by [`Hardware::retired`] before the next.
    pub fn acquire(&mut self, d: u64, network: bool) -> Acquire {
        let d = d.max(self.clock);
        let mut e = d;
        // what the instruction first found missing (for the hold's attribution)
        let mut short_of_buffer = None;
        loop {
            if self.open > 0 && e > self.open_retire {
                return Acquire::CloseGroup;
            }
            self.advance(e);
            let buf_free = self.buffers_in_use() < self.cfg.buffers as usize;
            let net_free = !network || self.networks_in_use() < self.cfg.networks as usize;
            if buf_free && net_free {
                break;
            }
            short_of_buffer.get_or_insert(!buf_free);
            // the earliest cycle the missing resources free; buffers not scheduled yet free
            // after their group's retire cycle (so waiting for them closes the group)
            let tb = if buf_free {
                e
            } else {
                self.bufs.peek().map_or(u64::MAX, |r| r.0)
            };
            let tn = if net_free {
                e
            } else {
                self.nets.peek().map_or(u64::MAX, |r| r.0)
            };
            let next = tb.max(tn);
            if next == u64::MAX {
                if self.open > 0 {
                    return Acquire::CloseGroup;
                }
                // cannot happen: every busy network frees at its retire and every busy buffer
                // is scheduled or open; let it go rather than hang
                break;
            }
            // advance() freed everything due by e, so next > e
            e = next.max(e + 1);
        }
        if e > d {
            if short_of_buffer == Some(true) {
                self.stats.held_buffer += 1;
                self.stats.held_buffer_cycles += e - d;
            } else {
                self.stats.held_network += 1;
                self.stats.held_network_cycles += e - d;
            }
        }
        self.stats.profiled += 1;
        self.buf_pending = true;
        self.open_since.push_back(e);
        if network {
            self.net_pending = true;
            self.stats.with_network += 1;
        }
        Acquire::At(e)
    }

    /// The instruction last given resources retires at `retire`: its network frees, and its
    /// buffer waits for its query, in the retire group of `retire`. Call
    /// [`Hardware::schedule`] for every instruction of an earlier group first.
    pub fn retired(&mut self, retire: u64) {
        if self.net_pending {
            self.net_pending = false;
            self.nets.push(Reverse(retire.max(self.clock)));
        }
        if self.buf_pending {
            self.buf_pending = false;
            self.open += 1;
            self.open_retire = retire;
        }
    }

    /// Runs one query in the engine: its record is complete at `retire`, it executes `steps`
    /// query instructions and sends to `sends` (queue, whether the query is `always`).
    /// `buffer`: the record holds a buffer (taken at [`Hardware::acquire`]; event records do
    /// not). Queries are scheduled in program order. Returns when it completes and what
    /// became of each send, in order.
    pub fn schedule(
        &mut self,
        retire: u64,
        steps: u32,
        sends: &[(u8, bool)],
        buffer: bool,
        out: &mut Vec<Delivery>,
    ) -> u64 {
        out.clear();
        let (si, &slot_free) = self
            .slots
            .iter()
            .enumerate()
            .min_by_key(|(_, t)| **t)
            .unwrap_or((0, &0));
        let ready = retire + 1;
        let start = ready.max(slot_free);
        self.stats.slot_wait_cycles += start - ready;
        self.stats.queries += 1;
        self.stats.steps += u64::from(steps);
        let mut t = start + u64::from(steps.max(1)) * u64::from(self.cfg.stages);
        let cap = self.capacity as u64;
        for &(q, always) in sends {
            let qm = &mut self.queues[usize::from(q) & 15];
            // space for message k once message k − capacity is consumed
            let k = qm.written;
            let free_at = if k >= cap {
                qm.consumed[(k % cap) as usize]
            } else {
                0
            };
            if free_at > t {
                if always {
                    self.stats.queue_waits += 1;
                    self.stats.queue_wait_cycles += free_at - t;
                    t = free_at;
                } else {
                    self.stats.dropped += 1;
                    out.push(Delivery::Dropped);
                    continue;
                }
            }
            t += u64::from(self.cfg.write_cycles);
            let consumed = t.max(qm.last_consumed) + u64::from(self.cfg.service_cycles);
            qm.last_consumed = consumed;
            qm.consumed[(k % cap) as usize] = consumed;
            qm.written += 1;
            self.stats.messages += 1;
            out.push(Delivery::Written {
                at: t,
                index: k,
                consumed,
            });
        }
        self.slots[si] = t;
        if buffer && self.open > 0 {
            self.open -= 1;
            let since = self.open_since.pop_front().unwrap_or(t);
            self.stats.buffer_cycles += t.saturating_sub(since);
            self.bufs.push(Reverse(t.max(self.clock)));
        }
        t
    }

    /// An event record of the instruction retiring at `retire` (after its
    /// [`Hardware::retired`]) takes a buffer: the cycle it gets one (from then the record
    /// is open in the retire group of `retire`), or [`Acquire::CloseGroup`] as for
    /// [`Hardware::acquire`]. A cycle later than `retire` means dispatch is stalled from
    /// `retire` to it; the owner holds the instructions dispatching in between and counts
    /// the hold with [`Hardware::count_event_hold`].
    pub fn acquire_event(&mut self, retire: u64) -> Acquire {
        // acquire() counts a wait as a buffer hold of the instruction; an event's wait is
        // counted when it holds one
        let before = (self.stats.held_buffer, self.stats.held_buffer_cycles);
        let a = self.acquire(retire, false);
        (self.stats.held_buffer, self.stats.held_buffer_cycles) = before;
        if let Acquire::At(_) = a {
            // the record belongs to its instruction's retire group
            self.retired(retire);
        }
        a
    }

    /// Counts a dispatch held `cycles` by an event record waiting for a buffer.
    pub fn count_event_hold(&mut self, cycles: u64) {
        if cycles > 0 {
            self.stats.held_buffer += 1;
            self.stats.held_buffer_cycles += cycles;
        }
    }

    /// Ends the run at cycle `cycles` (schedule every query first): the occupancy histograms.
    pub fn finish(&mut self, cycles: u64) -> Occupancy {
        let end = cycles.max(self.clock);
        // what is still busy past the run's end is counted up to it
        self.open = 0;
        self.open_since.clear();
        self.buf_pending = false;
        self.net_pending = false;
        self.advance(end);
        let cumulative = |h: &[u64]| {
            let mut out = vec![0u64; h.len()];
            let mut acc = 0;
            for x in (0..h.len()).rev() {
                acc += h[x];
                out[x] = acc;
            }
            out
        };
        Occupancy {
            cycles: self.hist_buffers.iter().sum(),
            buffers: cumulative(&self.hist_buffers),
            networks: cumulative(&self.hist_networks),
        }
    }
}

/// The adaptive rate: every `window` cycles the controller compares the share of cycles
/// dispatch was held by the RPA for sampled queries' instructions (what throttling can
/// remove; its owner measures them) with `budget`; above it, every sampled query keeps only
/// half as many of the records it selects as before (a throttle level up, at most
/// `max_level`: 1 in 2^level kept); below a quarter of it, a level down.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveConfig {
    /// Share of cycles (0–1) dispatch may be held.
    pub budget: f64,
    /// Cycles per decision.
    pub window: u64,
    /// Highest throttle level.
    pub max_level: u32,
}

impl Default for AdaptiveConfig {
    /// A 0.5% budget (the paper's slowdown target), decided every 10,000 cycles, up to 1/256.
    fn default() -> Self {
        AdaptiveConfig {
            budget: 0.005,
            window: 10_000,
            max_level: 8,
        }
    }
}

impl AdaptiveConfig {
    /// Checks the budget (0 to 1), window (100 to 10^9) and level (1 to 16).
    pub fn validate(&self) -> Result<(), crate::Error> {
        self.bounds().map_err(crate::Error::Adaptive)
    }

    fn bounds(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.budget) {
            return Err(format!(
                "adaptive budget must be a share from 0 to 1 (0.005 = 0.5%), not {}",
                self.budget
            ));
        }
        if !(100..=1_000_000_000).contains(&self.window) {
            return Err(format!(
                "adaptive window must be 100 to 10^9 cycles, not {}",
                self.window
            ));
        }
        if !(1..=16).contains(&self.max_level) {
            return Err(format!(
                "adaptive max level must be 1 to 16, not {}",
                self.max_level
            ));
        }
        Ok(())
    }
}

/// What the adaptive rate did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveReport {
    /// Its settings.
    pub config: AdaptiveConfig,
    /// Decisions taken (windows ended).
    pub windows: u64,
    /// Windows that ended over budget (the level went up, or stayed at the top).
    pub over_budget: u64,
    /// The level at the end and the highest reached.
    pub level: u32,
    /// See `level`.
    pub max_level_reached: u32,
    /// `level_cycles[k]`: cycles spent at throttle level k.
    pub level_cycles: Vec<u64>,
}

/// The adaptive rate's controller (see [`AdaptiveConfig`]): driven at each dispatch of a
/// selected-class instruction with the hold cycles so far.
#[derive(Clone, Debug)]
pub struct Adaptive {
    cfg: AdaptiveConfig,
    level: u32,
    window_start: u64,
    held_at_start: u64,
    rng: SplitMix64,
    report: AdaptiveReport,
}

impl Adaptive {
    /// A controller at level 0, its throttle decisions drawn from `seed`.
    pub fn new(cfg: AdaptiveConfig, seed: u64) -> Adaptive {
        Adaptive {
            cfg,
            level: 0,
            window_start: 0,
            held_at_start: 0,
            rng: SplitMix64::new(seed),
            report: AdaptiveReport {
                config: cfg,
                windows: 0,
                over_budget: 0,
                level: 0,
                max_level_reached: 0,
                level_cycles: vec![0; cfg.max_level as usize + 1],
            },
        }
    }

    /// The current throttle level (1 in 2^level selected records kept).
    pub fn level(&self) -> u32 {
        self.level
    }

    /// Ends the run at `cycles` with `held` hold cycles: the last, partial window counted.
    pub fn finish(&mut self, cycles: u64, held: u64) -> AdaptiveReport {
        let span = cycles.saturating_sub(self.window_start);
        if let Some(c) = self.report.level_cycles.get_mut(self.level as usize) {
            *c += span;
        }
        self.window_start = cycles.max(self.window_start);
        self.held_at_start = held;
        self.report.level = self.level;
        self.report.clone()
    }

    /// At dispatch cycle `d` with `held` stall cycles so far: end the window if it is over.
    pub fn tick(&mut self, d: u64, held: u64) {
        let span = d.saturating_sub(self.window_start);
        if span < self.cfg.window {
            return;
        }
        let share = held.saturating_sub(self.held_at_start) as f64 / span as f64;
        if let Some(c) = self.report.level_cycles.get_mut(self.level as usize) {
            *c += span;
        }
        self.report.windows += 1;
        if share > self.cfg.budget {
            self.report.over_budget += 1;
            self.level = (self.level + 1).min(self.cfg.max_level);
        } else if share < self.cfg.budget / 4.0 && self.level > 0 {
            self.level -= 1;
        }
        self.report.max_level_reached = self.report.max_level_reached.max(self.level);
        self.window_start = d;
        self.held_at_start = held;
    }

    /// Whether a record a sampled query selected is kept: 1 in 2^level.
    pub fn keep(&mut self) -> bool {
        self.level == 0 || self.rng.next_u64() >> (64 - self.level) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(networks: u32, buffers: u32) -> HwConfig {
        HwConfig {
            networks,
            buffers,
            ..HwConfig::paper()
        }
    }

    #[test]
    fn parses_the_named_points_and_pairs() {
        assert_eq!(HwConfig::parse("paper").unwrap().networks, 4);
        assert_eq!(HwConfig::parse("unrestricted").unwrap().buffers, 32);
        let c = HwConfig::parse("2:6").unwrap();
        assert_eq!((c.networks, c.buffers), (2, 6));
        assert!(HwConfig::parse("0:8")
            .unwrap_err()
            .to_string()
            .contains("networks"));
        assert!(HwConfig::parse("4")
            .unwrap_err()
            .to_string()
            .contains("NETWORKS:BUFFERS"));
        assert!(HwConfig::parse("4:x")
            .unwrap_err()
            .to_string()
            .contains("buffers"));
    }

    #[test]
    fn one_network_serialises_profiled_instructions_in_flight() {
        let mut hw = Hardware::new(cfg(1, 8), 128);
        let mut out = Vec::new();
        // first: dispatched at 10, retires at 20
        assert_eq!(hw.acquire(10, true), Acquire::At(10));
        hw.retired(20);
        // second wants to dispatch at 11: the network frees at 20
        assert_eq!(hw.acquire(11, true), Acquire::At(20));
        hw.retired(30);
        assert_eq!(hw.stats().held_network, 1);
        assert_eq!(hw.stats().held_network_cycles, 9);
        // the first's group (retire 20) is closed by the second retiring at 30
        hw.schedule(20, 1, &[], true, &mut out);
        hw.schedule(30, 1, &[], true, &mut out);
        let occ = hw.finish(40);
        assert_eq!(occ.cycles, 40);
        // in flight: [10, 20) and [20, 30)
        assert_eq!(occ.networks[1], 20);
        assert_eq!(occ.networks.get(2).copied().unwrap_or(0), 0);
    }

    #[test]
    fn a_buffer_is_held_until_the_query_completes() {
        let mut hw = Hardware::new(cfg(4, 1), 128);
        let mut out = Vec::new();
        assert_eq!(hw.acquire(5, false), Acquire::At(5));
        hw.retired(8);
        // the only buffer is open (its query not scheduled): waiting for it closes the group
        assert_eq!(hw.acquire(6, false), Acquire::CloseGroup);
        // 3 query instructions from cycle 9: 12 cycles, done at 21
        assert_eq!(hw.schedule(8, 3, &[], true, &mut out), 21);
        assert_eq!(hw.acquire(6, false), Acquire::At(21));
        assert_eq!(hw.stats().held_buffer_cycles, 15);
    }

    #[test]
    fn an_always_query_waits_for_queue_space_and_a_sampled_one_drops() {
        let c = HwConfig {
            service_cycles: 100,
            write_cycles: 0,
            ..cfg(32, 32)
        };
        let mut hw = Hardware::new(c, 2);
        let mut out = Vec::new();
        // three sends in quick succession to a 2-message queue consumed every 100 cycles
        hw.schedule(0, 1, &[(1, true)], false, &mut out);
        hw.schedule(0, 1, &[(1, true)], false, &mut out);
        let t = hw.schedule(0, 1, &[(1, true)], false, &mut out);
        // the first message is consumed at 5 + 100
        assert_eq!(t, 105);
        assert_eq!(hw.stats().queue_waits, 1);
        hw.schedule(0, 1, &[(1, false)], false, &mut out);
        assert_eq!(out, vec![Delivery::Dropped]);
        assert_eq!(hw.stats().dropped, 1);
    }

    #[test]
    fn the_barrel_runs_four_queries_at_once() {
        let mut hw = Hardware::new(cfg(32, 32), 128);
        let mut out = Vec::new();
        let ends: Vec<u64> = (0..5)
            .map(|_| hw.schedule(10, 2, &[], false, &mut out))
            .collect();
        // four slots start at 11 and take 8 cycles; the fifth waits for the first slot
        assert_eq!(ends, vec![19, 19, 19, 19, 27]);
        assert_eq!(hw.stats().slot_wait_cycles, 8);
    }

    #[test]
    fn the_adaptive_rate_climbs_over_budget_and_comes_back_under_a_quarter_of_it() {
        let cfg = AdaptiveConfig {
            budget: 0.01,
            window: 1000,
            max_level: 3,
        };
        let mut a = Adaptive::new(cfg, 7);
        // 20 held cycles in the first window (2%): up
        a.tick(1000, 20);
        assert_eq!(a.level(), 1);
        // 5 more in the next (0.5%): between a quarter and the budget, stays
        a.tick(2000, 25);
        assert_eq!(a.level(), 1);
        // a window not yet over decides nothing
        a.tick(2500, 1000);
        assert_eq!(a.level(), 1);
        a.tick(3000, 1000);
        a.tick(4000, 2000);
        a.tick(5000, 3000);
        assert_eq!(a.level(), 3, "capped at max_level");
        // quiet windows: down one level each
        a.tick(6000, 3000);
        assert_eq!(a.level(), 2);
        // at level 2, one in four selected records is kept
        let kept = (0..40_000).filter(|_| a.keep()).count();
        assert!((9_000..11_000).contains(&kept), "{kept}");
        let r = a.finish(6500, 3000);
        assert_eq!(r.windows, 6);
        assert_eq!(r.over_budget, 4);
        assert_eq!(r.max_level_reached, 3);
        assert_eq!(r.level_cycles.iter().sum::<u64>(), 6500);
        assert_eq!(r.level_cycles, vec![1000, 2000, 1500, 2000]);
    }

    use proptest::prelude::*;

    /// Cycles with at least x intervals open, for x = 0..=max, over [0, end).
    fn at_least(intervals: &[(u64, u64)], end: u64, max: usize) -> Vec<u64> {
        let mut ev: Vec<(u64, i64)> = Vec::new();
        for &(a, b) in intervals {
            if b > a {
                ev.push((a, 1));
                ev.push((b, -1));
            }
        }
        ev.sort_unstable();
        let mut out = vec![0u64; max + 1];
        let (mut level, mut t) = (0i64, 0u64);
        for (time, delta) in ev.into_iter().chain([(end, 0)]) {
            let time = time.min(end);
            for o in out.iter_mut().take((level.max(0) as usize).min(max) + 1) {
                *o += time - t;
            }
            t = time;
            level += delta;
        }
        out
    }

    proptest! {
        /// A core in miniature drives the model by the owner's protocol, class records
        /// taken at dispatch and event records at retire (an event's wait holding later
        /// dispatches); whatever the mix, no more networks or buffers are ever in use than
        /// exist, nobody dispatches early, always-queries never drop, and the occupancy
        /// histograms equal the ones computed from every interval.
        #[test]
        fn resources_are_never_over_allocated(
            insns in prop::collection::vec(
                (0u64..3, any::<bool>(), 1u64..40, 1u32..5, 0u8..3, prop::bool::weighted(0.2)),
                1..400,
            ),
            networks in 1u32..5,
            buffers in 1u32..9,
            service in 0u32..200,
            cap in 1usize..6,
        ) {
            let c = HwConfig { networks, buffers, service_cycles: service, ..HwConfig::paper() };
            let mut hw = Hardware::new(c, cap);
            let mut out = Vec::new();
            let (mut natural, mut dprev, mut rprev) = (0u64, 0u64, 0u64);
            // the open group: (insn, buffer interval, ready cycle)
            let mut group: Vec<(usize, usize, u64)> = Vec::new();
            let mut group_r = None;
            let mut nets = Vec::new();
            let mut bufs: Vec<(u64, u64)> = Vec::new();
            let mut drops = 0;
            let mut floor: Option<(u64, u64)> = None;
            let mut run_group = |hw: &mut Hardware, group: &mut Vec<(usize, usize, u64)>, bufs: &mut Vec<(u64, u64)>, drops: &mut u64| {
                for (i, b, ready) in group.drain(..) {
                    let (_, _, _, steps, send, _) = insns[i];
                    // send 1: an always query; 2: a sampled one
                    let sends: &[(u8, bool)] = match send { 1 => &[(1, true)], 2 => &[(2, false)], _ => &[] };
                    let end = hw.schedule(ready, steps, sends, true, &mut out);
                    *drops += out.iter().filter(|d| **d == Delivery::Dropped).count() as u64;
                    if send == 1 {
                        assert!(out.iter().all(|d| *d != Delivery::Dropped));
                    }
                    bufs[b].1 = end;
                }
            };
            for (i, &(gap, selected, lat, _, _, event)) in insns.iter().enumerate() {
                natural += gap;
                let mut d = natural.max(dprev);
                if let Some((from, until)) = floor {
                    if d >= from && d < until {
                        hw.count_event_hold(until - d);
                        d = until;
                    }
                    floor = None;
                }
                let e = if selected {
                    loop {
                        match hw.acquire(d, true) {
                            Acquire::At(e) => break e,
                            Acquire::CloseGroup => run_group(&mut hw, &mut group, &mut bufs, &mut drops),
                        }
                    }
                } else {
                    d
                };
                prop_assert!(e >= d);
                dprev = e;
                let r = (e + lat).max(rprev);
                rprev = r;
                if group_r != Some(r) {
                    run_group(&mut hw, &mut group, &mut bufs, &mut drops);
                    group_r = Some(r);
                }
                hw.retired(r);
                if selected {
                    group.push((i, bufs.len(), r));
                    nets.push((e, r));
                    bufs.push((e, u64::MAX));
                }
                if event {
                    let got = loop {
                        match hw.acquire_event(r) {
                            Acquire::At(x) => break x,
                            Acquire::CloseGroup => run_group(&mut hw, &mut group, &mut bufs, &mut drops),
                        }
                    };
                    prop_assert!(got >= r);
                    if got > r {
                        floor = Some((r, got));
                    }
                    group.push((i, bufs.len(), got));
                    bufs.push((got, u64::MAX));
                }
            }
            run_group(&mut hw, &mut group, &mut bufs, &mut drops);
            let end = bufs.iter().map(|b| b.1).chain([rprev]).max().unwrap_or(0);
            let occ = hw.finish(end);
            let b = at_least(&bufs, end, buffers as usize + 1);
            let n = at_least(&nets, end, networks as usize + 1);
            prop_assert_eq!(b[buffers as usize + 1], 0, "buffers over-allocated");
            prop_assert_eq!(n[networks as usize + 1], 0, "networks over-allocated");
            prop_assert_eq!(&occ.buffers[..], &b[..=buffers as usize]);
            prop_assert_eq!(&occ.networks[..], &n[..=networks as usize]);
            prop_assert_eq!(hw.stats().dropped, drops);
        }
    }
}
