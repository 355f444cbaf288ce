//! The Relational Profiling Architecture during a run: the profile control table selects
//! records from the retire stream (and the timing model's events), the query engine runs the
//! encoded query instructions on each, sends go into message queues, and one service thread
//! per queue reads them by the paper's protocol (§3.4.2) while the guest runs.
//!
//! Every record is accounted for ([`QueryStats`]). An `always` query never loses a message:
//! when its queue is full the machine waits for the service thread (back-pressure; the next
//! issue turns the wait into stall cycles). A sampled query drops a message when the queue is
//! full and counts it — unless the run is `lossless`, which makes every query wait, so that
//! a run's results do not depend on the host's thread scheduling (`--deterministic`).
//!
//! With `exact`, the observer also computes, on the same run, the exact reference of each
//! service from every record of its query's classes, before any sampling: per-branch
//! outcomes (edges), per-instruction Σ (c + 1/n) (CPI), the full log of reference stores with
//! null ones (GC), the event count (log).

use crate::hw::{
    Acquire, Adaptive, AdaptiveConfig, AdaptiveReport, Delivery, Hardware, HwConfig, HwStats,
    Occupancy,
};
use crate::isa::{Act, PctEntry};
use crate::prefetch::{PrefetchConfig, PrefetchReport, Prefetcher};
use crate::queue::{channel, Consumer, Producer, Received, MAX_MESSAGES};
use crate::record::{build, check_items, op_class};
use crate::services::{store_hash, word_of, ExactCpi, HeapLayout, Kind, Service, WEIGHT_WORD};
use crate::stats::QueryStats;
use crate::tags::Tags;
use crate::{Assembled, Engine, Error};
use outcrop_events::processes::{ProcessKey, ProcessRows, MAX_PROCESS_ROWS};
use outcrop_events::record::{
    Control, Mapping, Observer, ProcessSwitch, Retire, Stamp, TimingEvents,
};
use outcrop_timing::feedback::{Feedback, Fills};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Queues a program may send to (the 4-bit queue field).
pub const QUEUES: usize = 16;

/// Most reference stores the GC reference keeps (16 bytes each): past this, the collector
/// check is skipped and says so.
pub const MAX_STORE_LOG: usize = 1 << 24;

/// What to run.
#[derive(Clone, Debug)]
pub struct RpaSpec {
    /// The assembled queries.
    pub program: Assembled,
    /// The profile tag of every instruction.
    pub tags: Tags,
    /// The service reading each queue; a queue that is sent to but not listed gets the
    /// service its query's records suggest ([`Kind::infer`]).
    pub services: BTreeMap<u8, Kind>,
    /// The guest's heap, for the collector on the GC service.
    pub heap: Option<HeapLayout>,
    /// Seed of the engine's LFSR (`every N`, `filter N`).
    pub seed: u64,
    /// Messages per queue (1 to 128).
    pub capacity: usize,
    /// Messages a service reads before it stores the buffer read status.
    pub batch: usize,
    /// Sampled queries wait for space too (no drops): results independent of scheduling.
    pub lossless: bool,
    /// Compute each service's exact reference on the same run.
    pub exact: bool,
    /// Model the RPA's hardware in the timing model ([`crate::hw`]): selected
    /// instructions take profile networks and buffers at dispatch and hold it when they run
    /// out; queues are consumed by modelled service threads. Needs timing.
    pub hardware: Option<HwConfig>,
    /// With the hardware model: close Figure 2b's loop. Every message a modelled service
    /// thread reads from a `log` queue whose records carry `pc` and `res2` (an L2-miss
    /// query) goes to a prefetcher ([`crate::prefetch`]) whose requests enter the L2
    /// `latency` + memory-latency cycles after the thread read it.
    pub prefetch: Option<PrefetchConfig>,
    /// With the hardware model: throttle sampled queries when dispatch stalls exceed a
    /// budget (the RPA watching itself, §6.2); `always` queries are never throttled.
    pub adaptive: Option<AdaptiveConfig>,
}

impl RpaSpec {
    /// `program` with no tags, inferred services, 128-message queues read in batches of 32,
    /// a fixed seed, drops allowed, exact references on.
    pub fn new(program: Assembled) -> RpaSpec {
        RpaSpec {
            program,
            tags: Tags::default(),
            services: BTreeMap::new(),
            heap: None,
            seed: 0x5eed,
            capacity: MAX_MESSAGES,
            batch: 32,
            lossless: false,
            exact: true,
            hardware: None,
            prefetch: None,
            adaptive: None,
        }
    }

    /// The queues each query sends to.
    fn sends(&self) -> Vec<Vec<u8>> {
        self.program
            .queries
            .iter()
            .map(|q| {
                let lo = usize::from(q.first);
                let hi = lo + usize::from(q.len);
                let mut v: Vec<u8> = self.program.insns
                    [lo.min(self.program.insns.len())..hi.min(self.program.insns.len())]
                    .iter()
                    .filter_map(|i| match i.act {
                        Act::Send(q) => Some(q),
                        _ => None,
                    })
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect()
    }

    /// The service of every queue sent to, with the query feeding it; errors: items a
    /// service needs but its query does not collect, a queue fed by queries collecting
    /// different records, timing items without timing.
    pub fn plan(&self, timing: bool) -> Result<Vec<QueuePlan>, Error> {
        if !(1..=MAX_MESSAGES).contains(&self.capacity) {
            return Err(Error::Plan(format!(
                "a queue holds 1 to {MAX_MESSAGES} messages, not {}",
                self.capacity
            )));
        }
        for (i, q) in self.program.queries.iter().enumerate() {
            check_items(&q.items, timing)
                .map_err(|e| Error::Plan(format!("query {}: {e}", i + 1)))?;
        }
        if let Some(h) = &self.hardware {
            if !timing {
                return Err(Error::Plan(
                    "the RPA hardware model holds instructions at dispatch: run with a timing model (--timing)"
                        .into(),
                ));
            }
            h.validate()?;
        }
        if self.hardware.is_none() && (self.prefetch.is_some() || self.adaptive.is_some()) {
            return Err(Error::Plan(
                "prefetching into the caches and the adaptive rate act through the RPA's hardware model: give it (--rpa-hw)"
                    .into(),
            ));
        }
        if let Some(p) = &self.prefetch {
            p.validate()?;
        }
        if let Some(a) = &self.adaptive {
            a.validate()?;
        }
        if !timing {
            if let Some(i) = (32..35).find(|&i| self.program.pct.get(i).is_some_and(|e| e.enabled))
            {
                return Err(Error::Plan(format!(
                    "{}: event records come from the timing model's caches and TLBs: run with --timing",
                    crate::names::EVENTS[i - 32]
                )));
            }
        }
        let sends = self.sends();
        let mut plans: Vec<QueuePlan> = Vec::new();
        for (qi, qs) in sends.iter().enumerate() {
            let items = &self.program.queries[qi].items;
            for &q in qs {
                if let Some(p) = plans.iter().find(|p| p.queue == q) {
                    if self.program.queries[p.query].items != *items {
                        return Err(Error::Plan(format!(
                            "queries {} and {} both send to queue {q} but collect different records: give each its own queue",
                            p.query + 1,
                            qi + 1
                        )));
                    }
                    continue;
                }
                let kind = self
                    .services
                    .get(&q)
                    .copied()
                    .unwrap_or_else(|| Kind::infer(items));
                Service::new(kind, items, None)
                    .map_err(|e| Error::Plan(format!("queue {q} (query {}): {e}", qi + 1)))?;
                if kind == Kind::Cpi && !timing {
                    return Err(Error::Plan(format!(
                        "queue {q}: the cpi service needs rrate, which needs the timing model (--timing)"
                    )));
                }
                plans.push(QueuePlan {
                    queue: q,
                    kind,
                    query: qi,
                });
            }
        }
        if let Some((&q, _)) = self
            .services
            .iter()
            .find(|(q, _)| !plans.iter().any(|p| p.queue == **q))
        {
            return Err(Error::Plan(format!(
                "a service is given for queue {q}, but no query sends to it"
            )));
        }
        plans.sort_by_key(|p| p.queue);
        Ok(plans)
    }
}

/// A queue, its service, and the query that feeds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuePlan {
    /// Queue number.
    pub queue: u8,
    /// Its service.
    pub kind: Kind,
    /// The (first) query sending to it.
    pub query: usize,
}

/// One query's exact reference.
#[derive(Clone, Debug, Default)]
pub struct Exact {
    /// Conditional branches: pc → [taken, not taken].
    pub edges: BTreeMap<u64, [u64; 2]>,
    /// pc → Σ (c + 1/n).
    pub cpi: BTreeMap<u64, ExactCpi>,
    /// Non-null stores, exactly.
    pub stores: u64,
    /// Σ store_hash over them.
    pub checksum: u64,
    /// Every store, null ones included, in order (slot, value), up to [`MAX_STORE_LOG`].
    pub store_log: Vec<(u32, u32)>,
    /// Whether the store log hit its bound.
    pub store_log_truncated: bool,
    /// Records of the query's classes (for the log service: the events).
    pub records: u64,
}

#[derive(Default)]
struct ExactAcc {
    edges: FxHashMap<u64, [u64; 2]>,
    cpi: FxHashMap<u64, ExactCpi>,
    ex: Exact,
}

/// What one process and program's records did: its queries' accounting, exact references
/// and `count` counters.
#[derive(Clone, Debug, Default)]
pub struct RowResult {
    /// Per query, in source order.
    pub queries: Vec<QueryStats>,
    /// Per query, its exact reference (when asked for and a service needs one).
    pub exact: Vec<Option<Exact>>,
    /// The `count` actions' counters, per query instruction.
    pub counters: Vec<u64>,
}

/// The observer's results once its queues are closed: the first process's first program's
/// and every other process and program's, in the order their records first came.
#[derive(Clone, Debug, Default)]
pub struct Closed {
    /// The first process's first program (the whole run when only one ran).
    pub first: RowResult,
    /// Which it was, when there were others.
    pub first_key: Option<ProcessKey>,
    /// Every other (process, program).
    pub others: Vec<(ProcessKey, RowResult)>,
}

impl Closed {
    /// The run's result, with each queue's service rows (row 0 the first process's first
    /// program, as [`ServiceEnd::run`] gives them) and the hardware's account.
    pub fn into_result(
        self,
        program: Assembled,
        services: Vec<(QueuePlan, Vec<(u64, Service)>)>,
        hardware: Option<HwReport>,
    ) -> RpaResult {
        let mut per_queue: Vec<(QueuePlan, std::vec::IntoIter<(u64, Service)>)> = services
            .into_iter()
            .map(|(plan, rows)| (plan, rows.into_iter()))
            .collect();
        let mut take = || -> Vec<(QueuePlan, u64, Service)> {
            per_queue
                .iter_mut()
                .filter_map(|(plan, rows)| rows.next().map(|(n, s)| (*plan, n, s)))
                .collect()
        };
        let queues = take();
        let processes = self
            .others
            .into_iter()
            .map(|(key, row)| RpaProcess {
                key,
                queues: take(),
                row,
            })
            .collect();
        RpaResult {
            program,
            queries: self.first.queries,
            queues,
            exact: self.first.exact,
            counters: self.first.counters,
            hardware,
            first_process: self.first_key,
            processes,
        }
    }
}

/// What one other process and program did under the RPA (docs/rpa.md, "Processes").
#[derive(Debug)]
pub struct RpaProcess {
    /// Which process and program.
    pub key: ProcessKey,
    /// Its queries' accounting, exact references and counters.
    pub row: RowResult,
    /// Per queue: its plan, the messages its service read for this row, and the service's
    /// state for it.
    pub queues: Vec<(QueuePlan, u64, Service)>,
}

/// A process and program's part of the observer's state.
#[derive(Default)]
struct RowState {
    stats: Vec<QueryStats>,
    exact: Vec<ExactAcc>,
    counters: Vec<u64>,
    /// Its program is the first one: the tags apply.
    tags: bool,
}

impl RowState {
    fn new(queries: usize, insns: usize, tags: bool) -> RowState {
        RowState {
            stats: vec![QueryStats::default(); queries],
            exact: (0..queries).map(|_| ExactAcc::default()).collect(),
            counters: vec![0; insns],
            tags,
        }
    }
}

/// What the RPA did during a run.
#[derive(Debug)]
pub struct RpaResult {
    /// The program run.
    pub program: Assembled,
    /// Per query, in source order.
    pub queries: Vec<QueryStats>,
    /// Per queue: its plan, messages its service read, and the service's state.
    pub queues: Vec<(QueuePlan, u64, Service)>,
    /// Per query, its exact reference (when asked for and a service needs one).
    pub exact: Vec<Option<Exact>>,
    /// The `count` actions' counters, per query instruction.
    pub counters: Vec<u64>,
    /// The hardware model's account, when it ran (the one core's, every process's).
    pub hardware: Option<HwReport>,
    /// Which process and program the fields above are, when the guest ran more than one.
    pub first_process: Option<ProcessKey>,
    /// Every process and program after the first, when the guest ran more than one: the
    /// fields above are the first process's first program's.
    pub processes: Vec<RpaProcess>,
}

/// What the RPA's hardware did during a run.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct HwReport {
    /// Its sizes.
    pub config: HwConfig,
    /// Holds, queries, messages, drops.
    pub stats: HwStats,
    /// Cycles with at least x buffers / networks in use.
    pub occupancy: Occupancy,
    /// The closed prefetch loop, when it ran.
    pub prefetch: Option<PrefetchReport>,
    /// The adaptive rate, when it ran.
    pub adaptive: Option<AdaptiveReport>,
}

/// Where the modelled message queues live (their lines pass through the L2): queue `q`'s
/// message `i` is at `QUEUE_BASE + q * 4096 + (i mod capacity) * 32`.
pub const QUEUE_BASE: u64 = 0x7e00_0000_0000;

/// A record of the open retire group, waiting for the group's size (`rrate`'s n).
#[derive(Clone, Copy, Debug)]
struct Pend {
    r: Retire,
    s: Stamp,
    /// PCT entry.
    idx: usize,
    selected: bool,
    /// It holds a profile buffer (class records selected at dispatch, selected events).
    buffer: bool,
    /// The cycle its record is complete: its retire, or for an event record that waited
    /// for a buffer, the cycle it got one.
    ready: u64,
    /// The adaptive rate's throttle level when it was selected.
    level: u8,
}

/// The hardware model's state inside the observer.
struct HwState {
    hw: Hardware,
    /// Per PCT entry: whether its records need a network.
    network: Vec<bool>,
    /// The current instruction's PCT entry, selection and throttle level, decided at
    /// dispatch.
    current: Option<(usize, bool, u8)>,
    /// Records of the open retire group, in program order.
    pending: Vec<Pend>,
    group_retire: u64,
    group_n: u32,
    /// Message writes to put through the L2 at the next chance: (address, cycle).
    writes: Vec<(u64, u64)>,
    sends: Vec<(u8, bool)>,
    deliveries: Vec<Delivery>,
    capacity: u64,
    /// An event record waited for a buffer: dispatch is stalled over [from, until).
    floor: Option<(u64, u64)>,
    /// Cycles sampled queries' instructions were held at dispatch (the adaptive rate's
    /// measure).
    sampled_held: u64,
    /// The closed prefetch loop: the predictor, the memory latency, and per queue the
    /// record words of `pc` and `res2` when that queue feeds it.
    prefetch: Option<PrefetchLoop>,
    adaptive: Option<Adaptive>,
}

struct PrefetchLoop {
    prefetcher: Prefetcher,
    memory_latency: u32,
    /// Per queue feeding it: the record words of `pc`, `res2` and, if collected, `rtime`.
    words: [Option<(usize, usize, Option<usize>)>; QUEUES],
    /// Cycles from a miss to its prefetches' arrival when the record has no `rtime`: the
    /// queue's write and service time, the service's latency, the memory's.
    lead: u64,
    lines: Vec<u64>,
    /// Fills to put into the L2 at the next chance: (address, cycle).
    fills: Vec<(u64, u64)>,
}

/// The RPA hardware as an observer: PCT, engine, queues' producer ends.
pub struct RpaObserver {
    pct: Vec<PctEntry>,
    /// Per PCT entry: its items and its query.
    items: Vec<Vec<u8>>,
    query_of: Vec<usize>,
    always: Vec<bool>,
    engine: Engine,
    producers: Vec<Option<Producer>>,
    tags: Tags,
    lossless: bool,
    /// Per query: which exact reference to keep.
    exact_kind: Vec<Option<Kind>>,
    /// The running process and program's accounting.
    row: RowState,
    /// Every other process and program's (docs/rpa.md, "Processes").
    rows: ProcessRows<RowState>,
    /// The engine's counters when the running row's part began.
    counters_seen: Vec<u64>,
    /// Per process: whether the program its latest row runs is the first one (whose
    /// instructions the tags name).
    first_program: FxHashMap<u32, bool>,
    events: bool,
    hw: Option<HwState>,
    /// Per query: its records carry the adaptive rate's throttle level in
    /// [`WEIGHT_WORD`] (a sampled query with a word to spare, under `adaptive`).
    weighted: Vec<bool>,
}

/// The service end of a queue, to run on its own thread.
pub struct ServiceEnd {
    /// The plan.
    pub plan: QueuePlan,
    consumer: Consumer,
    service: Service,
}

impl ServiceEnd {
    /// Reads the queue until the observer is done with it; returns the plan and, per
    /// process and program (row 0 the first process's first program), the records read and
    /// the service's state.
    pub fn run(mut self) -> (QueuePlan, Vec<(u64, Service)>) {
        let template = self.service.clone();
        let mut rows = vec![(0u64, self.service)];
        let mut cur = 0usize;
        self.consumer.drain(|m| match m {
            Received::Record(m) => {
                if let Some((n, s)) = rows.get_mut(cur) {
                    *n += 1;
                    s.message(&m);
                }
            }
            Received::Switch(row) => {
                let row = (row as usize).min(MAX_PROCESS_ROWS - 1);
                while rows.len() <= row {
                    rows.push((0, template.clone()));
                }
                cur = row;
            }
        });
        (self.plan, rows)
    }
}

impl RpaObserver {
    /// The observer and one service end per queue (give each a thread).
    pub fn new(
        spec: &RpaSpec,
        timing: Option<&outcrop_timing::Config>,
    ) -> Result<(RpaObserver, Vec<ServiceEnd>), Error> {
        let plans = spec.plan(timing.is_some())?;
        let p = &spec.program;
        let mut query_of = vec![usize::MAX; p.pct.len()];
        for (qi, q) in p.queries.iter().enumerate() {
            for &c in &q.classes {
                if let Some(x) = query_of.get_mut(c) {
                    *x = qi;
                }
            }
        }
        let sampled = |q: &crate::asm::AssembledQuery| {
            q.classes
                .first()
                .and_then(|&c| p.pct.get(c))
                .is_some_and(|e| e.rate_log2 > 0)
        };
        let weighted: Vec<bool> = p
            .queries
            .iter()
            .map(|q| {
                spec.adaptive.is_some()
                    && spec.hardware.is_some()
                    && sampled(q)
                    && q.items.len() < crate::queue::RECORD_WORDS
            })
            .collect();
        let mut producers: Vec<Option<Producer>> = (0..QUEUES).map(|_| None).collect();
        let mut ends = Vec::new();
        let mut exact_kind = vec![None; p.queries.len()];
        for plan in &plans {
            let (tx, rx) = channel(spec.capacity, spec.batch)
                .ok_or_else(|| Error::Plan(format!("queue capacity {}", spec.capacity)))?;
            producers[usize::from(plan.queue) % QUEUES] = Some(tx);
            let heap = if plan.kind == Kind::Gc {
                spec.heap
            } else {
                None
            };
            let mut service = Service::new(plan.kind, &p.queries[plan.query].items, heap)?;
            if weighted.get(plan.query).copied().unwrap_or(false) {
                service.weigh(WEIGHT_WORD);
            }
            if spec.exact {
                exact_kind[plan.query].get_or_insert(plan.kind);
            }
            ends.push(ServiceEnd {
                plan: *plan,
                consumer: rx,
                service,
            });
        }
        let engine = Engine::new(&p.insns, &Engine::random_config(spec.seed))
            .map_err(|e| Error::Plan(e.to_string()))?;
        let always = p
            .queries
            .iter()
            .map(|q| {
                q.classes
                    .first()
                    .and_then(|&c| p.pct.get(c))
                    .is_some_and(|e| e.rate_log2 == 0)
            })
            .collect();
        let events = p.pct.iter().skip(32).any(|e| e.enabled);
        let prefetch = match (spec.prefetch, timing) {
            (Some(pc), Some(t)) => {
                let mut words = [None; QUEUES];
                for plan in plans.iter().filter(|p| p.kind == Kind::Log) {
                    let items = &p.queries[plan.query].items;
                    words[usize::from(plan.queue) % QUEUES] = word_of(items, "pc")
                        .zip(word_of(items, "res2"))
                        .map(|(p, a)| (p, a, word_of(items, "rtime")));
                }
                if words.iter().all(Option::is_none) {
                    return Err(Error::Plan("prefetching needs a query sending L2-miss records (collect pc res2) to a log queue, as Figure 2b does".into()));
                }
                let lead = spec.hardware.map_or(0, |h| {
                    u64::from(h.stages + h.write_cycles + h.service_cycles)
                }) + u64::from(pc.latency)
                    + u64::from(t.memory.latency);
                Some(PrefetchLoop {
                    prefetcher: Prefetcher::new(pc, t.l2.line.trailing_zeros()),
                    lead,
                    memory_latency: t.memory.latency,
                    words,
                    lines: Vec::new(),
                    fills: Vec::new(),
                })
            }
            _ => None,
        };
        let mut prefetch = prefetch;
        let adaptive = spec
            .adaptive
            .map(|cfg| Adaptive::new(cfg, spec.seed ^ 0xada9_71fe));
        let mut adaptive = adaptive;
        let hw = spec.hardware.map(|cfg| {
            let hw = Hardware::new(cfg, spec.capacity);
            HwState {
                prefetch: prefetch.take(),
                adaptive: adaptive.take(),
                network: p
                    .pct
                    .iter()
                    .map(|e| hw.needs_network(&e.record_items()))
                    .collect(),
                hw,
                current: None,
                pending: Vec::new(),
                group_retire: u64::MAX,
                group_n: 0,
                writes: Vec::new(),
                sends: Vec::new(),
                deliveries: Vec::new(),
                capacity: spec.capacity as u64,
                floor: None,
                sampled_held: 0,
            }
        });
        Ok((
            RpaObserver {
                pct: p.pct.clone(),
                items: p.pct.iter().map(|e| e.record_items()).collect(),
                query_of,
                always,
                engine,
                producers,
                tags: spec.tags.clone(),
                lossless: spec.lossless,
                row: RowState::new(p.queries.len(), p.insns.len(), true),
                rows: ProcessRows::new(),
                counters_seen: vec![0; p.insns.len()],
                first_program: FxHashMap::default(),
                exact_kind,
                events,
                hw,
                weighted,
            },
            ends,
        ))
    }

    /// Whether the hardware model runs: then the observer is the timing model's
    /// [`Feedback`], not an observer of the retire stream.
    pub fn hardware(&self) -> bool {
        self.hw.is_some()
    }

    /// The hardware model's account at the end of a run of `cycles` (after the timing model
    /// finished).
    pub fn hardware_report(&mut self, cycles: u64) -> Option<HwReport> {
        let h = self.hw.as_mut()?;
        let occupancy = h.hw.finish(cycles);
        let held = h.sampled_held;
        Some(HwReport {
            config: *h.hw.config(),
            stats: h.hw.stats().clone(),
            occupancy,
            prefetch: h.prefetch.as_ref().map(|p| PrefetchReport {
                config: *p.prefetcher.config(),
                memory_latency: p.memory_latency,
                stats: p.prefetcher.stats().clone(),
            }),
            adaptive: h.adaptive.as_mut().map(|a| a.finish(cycles, held)),
        })
    }

    /// Closes every queue (the service threads drain and stop) and returns the accounting,
    /// the exact references and the counters of each process and program.
    pub fn close(mut self) -> Closed {
        self.close_group();
        self.settle_counters();
        self.producers.clear();
        let finish = |row: RowState, kinds: &[Option<Kind>]| RowResult {
            queries: row.stats,
            exact: row
                .exact
                .into_iter()
                .zip(kinds)
                .map(|(acc, k)| {
                    k.map(|_| {
                        let mut ex = acc.ex;
                        ex.edges = acc.edges.into_iter().collect();
                        ex.cpi = acc.cpi.into_iter().collect();
                        ex
                    })
                })
                .collect(),
            counters: row.counters,
        };
        if !self.rows.switched() {
            return Closed {
                first: finish(self.row, &self.exact_kind),
                first_key: None,
                others: Vec::new(),
            };
        }
        let mut rows = self.rows.finish(self.row).into_iter();
        let (first_key, first) = rows
            .next()
            .map(|(k, r)| (Some(k), finish(r, &self.exact_kind)))
            .unwrap_or_default();
        Closed {
            first,
            first_key,
            others: rows
                .map(|(k, r)| (k, finish(r, &self.exact_kind)))
                .collect(),
        }
    }

    /// The profile tag of the instruction at `pc`: the tags name the first program's
    /// instructions, so another program's are all 0.
    #[inline]
    fn tag(&self, pc: u64) -> u8 {
        if self.tags.is_empty() || !self.row.tags {
            0
        } else {
            self.tags.get(pc)
        }
    }

    /// The `count` actions since the running row's part began go to it.
    fn settle_counters(&mut self) {
        for ((c, seen), &now) in self
            .row
            .counters
            .iter_mut()
            .zip(&mut self.counters_seen)
            .zip(self.engine.counters())
        {
            *c += now - *seen;
            *seen = now;
        }
    }

    /// The records from here are `p`'s process and program's: the running row's part ends
    /// (its open retire group run first) and every service switches with it, as an
    /// operating system switches a process's profiling context.
    fn switch_process(&mut self, p: &ProcessSwitch) {
        self.close_group();
        self.settle_counters();
        self.first_program.insert(p.from_pid, self.row.tags);
        // a forked child runs its parent's program until it calls execve
        let tags = p.image == 0 && self.first_program.get(&p.parent).copied().unwrap_or(false);
        let (queries, insns) = (self.exact_kind.len(), self.counters_seen.len());
        if self
            .rows
            .switch(p, &mut self.row, || RowState::new(queries, insns, tags))
        {
            let row = u32::try_from(self.rows.running()).unwrap_or(u32::MAX);
            for q in self.producers.iter_mut().flatten() {
                // a service that has gone loses nothing more by missing the switch
                let _ = q.send_switch(row);
            }
        }
    }

    /// Counts a record of PCT entry `idx` and feeds the exact references; its query, if any.
    #[inline]
    fn account(&mut self, idx: usize, r: &Retire, t: Option<&Stamp>) -> Option<usize> {
        let qi = self.query_of[idx];
        let st = self.row.stats.get_mut(qi)?;
        st.records += 1;
        if let Some(kind) = self.exact_kind[qi] {
            let acc = &mut self.row.exact[qi];
            match kind {
                Kind::Edges => {
                    acc.edges.entry(r.pc).or_default()[usize::from(!r.taken)] += 1;
                }
                Kind::Cpi => {
                    if let Some(t) = t {
                        let e = acc.cpi.entry(r.pc).or_default();
                        e.executions += 1;
                        e.cycles +=
                            f64::from(t.retire_stall) + 1.0 / f64::from(t.retire_group.max(1));
                    }
                }
                Kind::Gc => {
                    let (slot, value) = (r.mem_addr as u32, r.mem_value as u32);
                    if value != 0 {
                        acc.ex.stores += 1;
                        acc.ex.checksum = acc.ex.checksum.wrapping_add(store_hash(slot, value));
                    }
                    if acc.ex.store_log.len() < MAX_STORE_LOG {
                        acc.ex.store_log.push((slot, value));
                    } else {
                        acc.ex.store_log_truncated = true;
                    }
                }
                Kind::Log => acc.ex.records += 1,
            }
        }
        Some(qi)
    }

    #[inline]
    fn fire(&mut self, idx: usize, r: &Retire, t: Option<&Stamp>) {
        let Some(qi) = self.account(idx, r, t) else {
            return;
        };
        let e = self.pct[idx];
        if !self.engine.select(idx, &e) {
            return;
        }
        let st = &mut self.row.stats[qi];
        st.selected += 1;
        let record = build(&self.items[idx], r, t);
        let wait = self.lossless || self.always[qi];
        let lossless = self.lossless;
        let producers = &mut self.producers;
        let mut sent = 0u64;
        let (mut dropped, mut lost, mut waited) = (0u64, 0u64, 0u64);
        let (steps, interrupts) = self.engine.run_with(e.qpc, &record, |q| {
            let Some(p) = producers.get_mut(usize::from(q)).and_then(|p| p.as_mut()) else {
                lost += 1;
                return;
            };
            if wait {
                match p.send_waiting(&record) {
                    Some(w) => {
                        sent += 1;
                        // how often the queue was full depends on the host's scheduling:
                        // a lossless (deterministic) run does not report it
                        waited += u64::from(w > 0 && !lossless);
                    }
                    None => lost += 1,
                }
            } else if p.try_send(&record) {
                sent += 1;
            } else {
                dropped += 1;
            }
        });
        st.steps += u64::from(steps);
        st.interrupts += interrupts.len() as u64;
        if sent + dropped + lost == 0 {
            st.filtered += 1;
        }
        st.sent += sent;
        st.dropped += dropped;
        st.lost += lost;
        st.waited += waited;
    }

    /// A record of the open retire group, now that the group's size is known: accounted,
    /// and when selected at dispatch, run through the engine and scheduled in the hardware,
    /// which decides what each send becomes.
    fn fire_timed(&mut self, p: &Pend, t: &Stamp) {
        let Some(qi) = self.account(p.idx, &p.r, Some(t)) else {
            // no query (cannot happen for an enabled entry): still free its buffer
            if let Some(h) = self.hw.as_mut().filter(|_| p.buffer) {
                h.hw.schedule(p.ready, 1, &[], true, &mut h.deliveries);
            }
            return;
        };
        if !p.selected {
            return;
        }
        let Some(h) = self.hw.as_mut() else {
            return;
        };
        let e = self.pct[p.idx];
        let st = &mut self.row.stats[qi];
        st.selected += 1;
        let mut record = build(&self.items[p.idx], &p.r, Some(t));
        if self.weighted[qi] {
            record[WEIGHT_WORD] = u32::from(p.level);
        }
        let always = self.always[qi];
        h.sends.clear();
        let sends = &mut h.sends;
        let (steps, interrupts) = self
            .engine
            .run_with(e.qpc, &record, |q| sends.push((q, always)));
        st.steps += u64::from(steps);
        st.interrupts += interrupts.len() as u64;
        h.hw.schedule(p.ready, steps, &h.sends, p.buffer, &mut h.deliveries);
        if h.sends.is_empty() {
            st.filtered += 1;
        }
        for (&(q, _), d) in h.sends.iter().zip(&h.deliveries) {
            match *d {
                Delivery::Dropped => st.dropped += 1,
                Delivery::Written {
                    at,
                    index,
                    consumed,
                } => {
                    let addr = QUEUE_BASE + u64::from(q) * 4096 + (index % h.capacity) * 32;
                    h.writes.push((addr, at));
                    if let Some(pl) = h.prefetch.as_mut() {
                        if let Some((pw, aw, tw)) = pl.words[usize::from(q) % QUEUES] {
                            // the record's words are the low halves; the upper ones are the
                            // instruction's own (a 64-bit machine's record would carry them)
                            let word = |w: usize, full: u64| {
                                (full & !0xffff_ffff)
                                    | u64::from(record.get(w).copied().unwrap_or(0))
                            };
                            let (pc, miss) = (word(pw, p.r.pc), word(aw, p.r.mem_addr));
                            let arrive = consumed
                                + u64::from(pl.prefetcher.config().latency)
                                + u64::from(pl.memory_latency);
                            // when the miss happened: its rtime if the record has it (the
                            // low word; the upper from the service's clock), else the
                            // service's clock and the lead of an empty queue
                            let (at, lead) = match tw.and_then(|w| record.get(w)) {
                                Some(&low) => {
                                    let mut t = (consumed & !0xffff_ffff) | u64::from(low);
                                    if t > consumed {
                                        t = t.saturating_sub(1 << 32);
                                    }
                                    (t, arrive - t)
                                }
                                None => (consumed, pl.lead),
                            };
                            pl.prefetcher.miss(pc, miss, at, lead, &mut pl.lines);
                            for &line in &pl.lines {
                                pl.fills.push((line, arrive));
                            }
                        }
                    }
                    // the model decided there was room: the host queue waits rather than
                    // drop, so results do not depend on the host's scheduling
                    match self
                        .producers
                        .get_mut(usize::from(q))
                        .and_then(|p| p.as_mut())
                        .and_then(|p| p.send_waiting(&record))
                    {
                        Some(_) => st.sent += 1,
                        None => st.lost += 1,
                    }
                }
            }
        }
    }

    /// A selected event record of the instruction retiring at `retire` takes a buffer: the
    /// cycle it has one; a wait stalls dispatch until then.
    fn event_buffer(&mut self, retire: u64) -> u64 {
        loop {
            let Some(h) = self.hw.as_mut() else {
                return retire;
            };
            match h.hw.acquire_event(retire) {
                Acquire::At(e) => {
                    if e > retire {
                        let from = h.floor.map_or(retire, |f| f.0.min(retire));
                        h.floor = Some((from, e));
                    }
                    return e;
                }
                // the group is closed early: its records are scheduled with the retire
                // count so far (rrate's n may be low for it; only events wait like this)
                Acquire::CloseGroup => self.close_group(),
            }
        }
    }

    /// Runs the open retire group's records, now that its size is final.
    fn close_group(&mut self) {
        let Some(h) = self.hw.as_mut() else {
            return;
        };
        let n = u8::try_from(h.group_n).unwrap_or(u8::MAX);
        h.group_n = 0;
        let pending = std::mem::take(&mut h.pending);
        for p in &pending {
            let t = Stamp {
                retire_group: n,
                ..p.s
            };
            self.fire_timed(p, &t);
        }
        if let Some(h) = self.hw.as_mut() {
            h.pending = pending;
            h.pending.clear();
        }
    }
}

impl Feedback for RpaObserver {
    fn dispatch(&mut self, r: &Retire, d: u64) -> u64 {
        // an event record waiting for a buffer stalls every dispatch over its wait
        let mut d = d;
        if let Some(h) = self.hw.as_mut() {
            if let Some((from, until)) = h.floor {
                if d >= until {
                    h.floor = None;
                } else if d >= from {
                    h.hw.count_event_hold(until - d);
                    h.floor = None;
                    d = until;
                }
            }
        }
        let Some(op) = op_class(r) else {
            return d;
        };
        let tag = self.tag(r.pc);
        let idx = usize::from(op) * 4 + usize::from(tag);
        let e = self.pct[idx];
        if !e.enabled {
            return d;
        }
        // selection happens here, at dispatch, in program order: the same decisions the
        // functional path makes at retire
        let mut selected = self.engine.select(idx, &e);
        let Some(h) = self.hw.as_mut() else {
            return d;
        };
        if let Some(a) = h.adaptive.as_mut() {
            // the controller weighs only the holds of sampled queries' instructions: what
            // throttling can remove (an always query's stalls are the price of losing nothing)
            a.tick(d, h.sampled_held);
            if selected && e.rate_log2 > 0 && !a.keep() {
                selected = false;
                if let Some(st) = self
                    .query_of
                    .get(idx)
                    .and_then(|&q| self.row.stats.get_mut(q))
                {
                    st.throttled += 1;
                }
            }
        }
        let level = h.adaptive.as_ref().map_or(0, |a| a.level() as u8);
        h.current = Some((idx, selected, level));
        if !selected {
            return d;
        }
        let network = h.network[idx];
        let sampled = e.rate_log2 > 0;
        loop {
            let Some(h) = self.hw.as_mut() else {
                return d;
            };
            match h.hw.acquire(d, network) {
                Acquire::At(e) => {
                    if sampled {
                        h.sampled_held += e - d;
                    }
                    return e;
                }
                Acquire::CloseGroup => self.close_group(),
            }
        }
    }

    fn stamped(&mut self, r: &Retire, s: &Stamp, fills: &mut Fills) {
        let Some(h) = self.hw.as_mut() else {
            return;
        };
        if s.retire != h.group_retire {
            if !h.pending.is_empty() || h.group_n > 0 {
                self.close_group();
            }
            let Some(h) = self.hw.as_mut() else {
                return;
            };
            h.group_retire = s.retire;
            h.group_n = 0;
        }
        let Some(h) = self.hw.as_mut() else {
            return;
        };
        h.group_n += 1;
        h.hw.retired(s.retire);
        if let Some((idx, selected, level)) = h.current.take() {
            h.pending.push(Pend {
                r: *r,
                s: *s,
                idx,
                selected,
                buffer: selected,
                ready: s.retire,
                level,
            });
        }
        if self.events {
            for (i, ev) in [
                TimingEvents::L2D_MISS,
                TimingEvents::DTLB_MISS,
                TimingEvents::ITLB_MISS,
            ]
            .into_iter()
            .enumerate()
            {
                let e = self.pct[32 + i];
                if e.enabled && s.events.contains(ev) {
                    let selected = self.engine.select(32 + i, &e);
                    let ready = if selected {
                        self.event_buffer(s.retire)
                    } else {
                        s.retire
                    };
                    if let Some(h) = self.hw.as_mut() {
                        h.pending.push(Pend {
                            r: *r,
                            s: *s,
                            idx: 32 + i,
                            selected,
                            buffer: selected,
                            ready,
                            level: 0,
                        });
                    }
                }
            }
        }
        if let Some(h) = self.hw.as_mut() {
            for (addr, at) in h.writes.drain(..) {
                fills.push(addr, at, false);
            }
            if let Some(pl) = h.prefetch.as_mut() {
                for (addr, at) in pl.fills.drain(..) {
                    fills.push(addr, at, false);
                }
            }
        }
    }

    fn finish(&mut self) {
        self.close_group();
    }

    fn process(&mut self, p: &ProcessSwitch) {
        self.switch_process(p);
    }

    fn mapped(&mut self, m: &Mapping<'_>) {
        self.rows.mapped(m);
    }
}

impl Observer for RpaObserver {
    const RETIRE: bool = true;
    const MAPPINGS: bool = true;

    fn process(&mut self, p: &ProcessSwitch) -> Control {
        self.switch_process(p);
        Control::Continue
    }

    fn mapped(&mut self, m: &Mapping<'_>) -> Control {
        self.rows.mapped(m);
        Control::Continue
    }

    #[inline]
    fn retire(&mut self, r: &Retire, t: Option<&Stamp>) -> Control {
        if let Some(op) = op_class(r) {
            let tag = self.tag(r.pc);
            let idx = usize::from(op) * 4 + usize::from(tag);
            if self.pct[idx].enabled {
                self.fire(idx, r, t);
            }
        }
        if self.events {
            if let Some(t) = t {
                for (i, ev) in [
                    TimingEvents::L2D_MISS,
                    TimingEvents::DTLB_MISS,
                    TimingEvents::ITLB_MISS,
                ]
                .into_iter()
                .enumerate()
                {
                    if self.pct[32 + i].enabled && t.events.contains(ev) {
                        self.fire(32 + i, r, Some(t));
                    }
                }
            }
        }
        Control::Continue
    }
}
