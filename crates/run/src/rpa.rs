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

use outcrop_events::record::{Control, Observer, Retire, Stamp, TimingEvents};
use outcrop_rpa::isa::{Act, PctEntry};
use outcrop_rpa::queue::{channel, Consumer, Producer, MAX_MESSAGES};
use outcrop_rpa::record::{build, check_items, op_class};
use outcrop_rpa::services::{store_hash, ExactCpi, HeapLayout, Kind, Service};
use outcrop_rpa::stats::QueryStats;
use outcrop_rpa::tags::Tags;
use outcrop_rpa::{Assembled, Engine};
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
    pub fn plan(&self, timing: bool) -> Result<Vec<QueuePlan>, String> {
        if !(1..=MAX_MESSAGES).contains(&self.capacity) {
            return Err(format!(
                "a queue holds 1 to {MAX_MESSAGES} messages, not {}",
                self.capacity
            ));
        }
        for (i, q) in self.program.queries.iter().enumerate() {
            check_items(&q.items, timing).map_err(|e| format!("query {}: {e}", i + 1))?;
        }
        if !timing {
            if let Some(i) = (32..35).find(|&i| self.program.pct.get(i).is_some_and(|e| e.enabled))
            {
                return Err(format!(
                    "{}: event records come from the timing model's caches and TLBs: run with --timing",
                    outcrop_rpa::names::EVENTS[i - 32]
                ));
            }
        }
        let sends = self.sends();
        let mut plans: Vec<QueuePlan> = Vec::new();
        for (qi, qs) in sends.iter().enumerate() {
            let items = &self.program.queries[qi].items;
            for &q in qs {
                if let Some(p) = plans.iter().find(|p| p.queue == q) {
                    if self.program.queries[p.query].items != *items {
                        return Err(format!(
                            "queries {} and {} both send to queue {q} but collect different records: give each its own queue",
                            p.query + 1,
                            qi + 1
                        ));
                    }
                    continue;
                }
                let kind = self
                    .services
                    .get(&q)
                    .copied()
                    .unwrap_or_else(|| Kind::infer(items));
                Service::new(kind, items, None)
                    .map_err(|e| format!("queue {q} (query {}): {e}", qi + 1))?;
                if kind == Kind::Cpi && !timing {
                    return Err(format!(
                        "queue {q}: the cpi service needs rrate, which needs the timing model (--timing)"
                    ));
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
            return Err(format!(
                "a service is given for queue {q}, but no query sends to it"
            ));
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
    stats: Vec<QueryStats>,
    tags: Tags,
    lossless: bool,
    /// Per query: which exact reference to keep.
    exact_kind: Vec<Option<Kind>>,
    exact: Vec<ExactAcc>,
    events: bool,
}

/// The service end of a queue, to run on its own thread.
pub struct ServiceEnd {
    /// The plan.
    pub plan: QueuePlan,
    consumer: Consumer,
    service: Service,
}

impl ServiceEnd {
    /// Reads the queue until the observer is done with it; returns the plan, the messages
    /// read and the service.
    pub fn run(mut self) -> (QueuePlan, u64, Service) {
        let service = &mut self.service;
        self.consumer.drain(|m| service.message(m));
        (self.plan, self.consumer.read(), self.service)
    }
}

impl RpaObserver {
    /// The observer and one service end per queue (give each a thread).
    pub fn new(spec: &RpaSpec, timing: bool) -> Result<(RpaObserver, Vec<ServiceEnd>), String> {
        let plans = spec.plan(timing)?;
        let p = &spec.program;
        let mut query_of = vec![usize::MAX; p.pct.len()];
        for (qi, q) in p.queries.iter().enumerate() {
            for &c in &q.classes {
                if let Some(x) = query_of.get_mut(c) {
                    *x = qi;
                }
            }
        }
        let mut producers: Vec<Option<Producer>> = (0..QUEUES).map(|_| None).collect();
        let mut ends = Vec::new();
        let mut exact_kind = vec![None; p.queries.len()];
        for plan in &plans {
            let (tx, rx) = channel(spec.capacity, spec.batch)
                .ok_or_else(|| format!("queue capacity {}", spec.capacity))?;
            producers[usize::from(plan.queue) % QUEUES] = Some(tx);
            let heap = if plan.kind == Kind::Gc {
                spec.heap
            } else {
                None
            };
            let service = Service::new(plan.kind, &p.queries[plan.query].items, heap)?;
            if spec.exact {
                exact_kind[plan.query].get_or_insert(plan.kind);
            }
            ends.push(ServiceEnd {
                plan: *plan,
                consumer: rx,
                service,
            });
        }
        let engine =
            Engine::new(&p.insns, &Engine::random_config(spec.seed)).map_err(|e| e.to_string())?;
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
        Ok((
            RpaObserver {
                pct: p.pct.clone(),
                items: p.pct.iter().map(|e| e.record_items()).collect(),
                query_of,
                always,
                engine,
                producers,
                stats: vec![QueryStats::default(); p.queries.len()],
                tags: spec.tags.clone(),
                lossless: spec.lossless,
                exact: (0..p.queries.len()).map(|_| ExactAcc::default()).collect(),
                exact_kind,
                events,
            },
            ends,
        ))
    }

    /// Closes every queue (the service threads drain and stop) and returns the accounting,
    /// the exact references and the counters.
    pub fn close(mut self) -> (Vec<QueryStats>, Vec<Option<Exact>>, Vec<u64>) {
        self.producers.clear();
        let exact = self
            .exact
            .into_iter()
            .zip(&self.exact_kind)
            .map(|(acc, k)| {
                k.map(|_| {
                    let mut ex = acc.ex;
                    ex.edges = acc.edges.into_iter().collect();
                    ex.cpi = acc.cpi.into_iter().collect();
                    ex
                })
            })
            .collect();
        (self.stats, exact, self.engine.counters().to_vec())
    }

    #[inline]
    fn fire(&mut self, idx: usize, r: &Retire, t: Option<&Stamp>) {
        let qi = self.query_of[idx];
        let Some(st) = self.stats.get_mut(qi) else {
            return;
        };
        st.records += 1;
        if let Some(kind) = self.exact_kind[qi] {
            let acc = &mut self.exact[qi];
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
        let e = self.pct[idx];
        if !self.engine.select(idx, &e) {
            return;
        }
        let st = &mut self.stats[qi];
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
}

impl Observer for RpaObserver {
    const RETIRE: bool = true;

    #[inline]
    fn retire(&mut self, r: &Retire, t: Option<&Stamp>) -> Control {
        if let Some(op) = op_class(r) {
            let tag = if self.tags.is_empty() {
                0
            } else {
                self.tags.get(r.pc)
            };
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
