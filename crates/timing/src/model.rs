//! The pipeline model: one pass over the retire stream that gives every instruction its fetch,
//! dispatch, issue, complete and retire cycles (a dependence-based timestamp model in the
//! manner of interval simulation; docs/timing.md lists what it leaves out).
//!
//! For instruction *i*, in program order:
//! * **fetch** `F`: at most `fetch_width` per cycle; a predicted-taken transfer ends the fetch
//!   group; a new I-cache line (or page) is looked up in the L1I (ITLB) and a miss delays fetch
//!   by the L2/memory latency; a misprediction resolved at execute holds fetch until
//!   `C(branch) + mispredict_penalty − frontend_depth`, so the correct path dispatches
//!   `mispredict_penalty` cycles after the branch executes; a BTB miss on a taken direct
//!   transfer costs `redirect_penalty` (resolved at decode).
//! * **dispatch** `D = max(F + frontend_depth, D(i−1), R(i−rob) + 1)`, at most `width` per cycle.
//! * **issue** `I = max(D + 1, ready(sources))`; in-order cores also `I ≥ I(i−1)`.
//! * **complete** `C = I + latency`: loads take the L1D hit latency, plus the DTLB penalty on a
//!   miss, plus the L2 latency on an L1D miss, plus the memory latency on an L2 miss. Stores
//!   complete into the store buffer (`latency.store`), their cache misses do not stall.
//! * **retire** `R = max(C + 1, R(i−1))`, at most `width` per cycle.
//!
//! Only the correct path runs (the functional machine does not execute wrong paths), so
//! wrong-path cache pollution and prefetching are absent.

use crate::cache::Cache;
use crate::config::Config;
use crate::feedback::{Feedback, Fills, NoFeedback};
use crate::predictor::{Btb, DirectionPredictor, Ras};
use outcrop_events::record::{BranchKind, Class, Retire, Unit, WarmEnd, WarmRun};
pub use outcrop_events::record::{Stamp, TimingEvents as Events};
use serde::{Deserialize, Serialize};

/// Where stall cycles went (a CPI stack; `base + branch + brr + icache + dcache + hold +
/// switch + other = cycles`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpiStack {
    /// Cycles in which at least one instruction retired.
    pub base: u64,
    /// Cycles lost to mispredictions and fetch redirects.
    pub branch: u64,
    /// Cycles lost to fetch redirects of taken branch-on-random instructions (resolved at
    /// decode; counted apart from `branch`).
    pub brr: u64,
    /// Cycles lost to instruction-cache and ITLB misses.
    pub icache: u64,
    /// Cycles lost to data-cache and DTLB misses.
    pub dcache: u64,
    /// Cycles lost holding instructions at dispatch for a profiling mechanism (the RPA's
    /// profile networks and buffers: [`Feedback`]).
    pub hold: u64,
    /// Cycles lost to switches between the guest's threads (`core.context_switch` each).
    #[serde(default)]
    pub switch: u64,
    /// Everything else: dependences, long-latency operations, a full reorder buffer.
    pub other: u64,
}

/// Run totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Configuration name.
    pub config: String,
    /// Retired instructions.
    pub instructions: u64,
    /// Cycles (the last instruction's retire cycle).
    pub cycles: u64,
    /// Instructions per cycle.
    pub ipc: f64,
    /// Switches between the guest's threads, each costing `core.context_switch` cycles.
    #[serde(default)]
    pub context_switches: u64,
    /// L1I lookups (one per fetched line change).
    pub l1i_accesses: u64,
    /// L1I misses.
    pub l1i_misses: u64,
    /// L1D accesses (loads, stores, AMOs).
    pub l1d_accesses: u64,
    /// L1D misses.
    pub l1d_misses: u64,
    /// L2 accesses from instruction fetch.
    pub l2_inst_accesses: u64,
    /// L2 misses from instruction fetch.
    pub l2_inst_misses: u64,
    /// L2 accesses from data accesses.
    pub l2_data_accesses: u64,
    /// L2 misses from data accesses.
    pub l2_data_misses: u64,
    /// ITLB misses.
    pub itlb_misses: u64,
    /// DTLB misses.
    pub dtlb_misses: u64,
    /// Conditional branches.
    pub cond_branches: u64,
    /// Mispredicted conditional branches.
    pub cond_mispredicts: u64,
    /// Returns.
    pub returns: u64,
    /// Returns the RAS mispredicted.
    pub return_mispredicts: u64,
    /// Indirect jumps and calls (not returns).
    pub indirect: u64,
    /// Indirect transfers with a wrong BTB target.
    pub indirect_mispredicts: u64,
    /// Taken direct transfers the BTB missed (decode redirects).
    pub btb_misses: u64,
    /// All mispredictions resolved at execute.
    pub mispredicts: u64,
    /// Branch-on-random instructions (`brr`), never predicted.
    pub brr: u64,
    /// How many of them were taken (each a decode-resolved fetch redirect).
    pub brr_taken: u64,
    /// Instructions a feedback mechanism held at dispatch.
    pub dispatch_holds: u64,
    /// Cycles of dispatch holds, summed over the held instructions.
    pub dispatch_hold_cycles: u64,
    /// Cache fills a feedback mechanism asked for, dropped (too many in flight), and filled.
    pub fills_requested: u64,
    /// See `fills_requested`.
    pub fills_dropped: u64,
    /// See `fills_requested`.
    pub fills_filled: u64,
    /// Demand misses that found their line's fill in flight (waited for it only).
    pub fills_late: u64,
    /// Where the cycles went.
    pub cpi_stack: CpiStack,
}

impl Totals {
    /// L1D miss rate.
    pub fn l1d_miss_rate(&self) -> f64 {
        ratio(self.l1d_misses, self.l1d_accesses)
    }
    /// L1I miss rate (per line lookup).
    pub fn l1i_miss_rate(&self) -> f64 {
        ratio(self.l1i_misses, self.l1i_accesses)
    }
    /// L2 miss rate over all L2 accesses.
    pub fn l2_miss_rate(&self) -> f64 {
        ratio(
            self.l2_inst_misses + self.l2_data_misses,
            self.l2_inst_accesses + self.l2_data_accesses,
        )
    }
    /// Conditional-branch misprediction rate.
    pub fn cond_mispredict_rate(&self) -> f64 {
        ratio(self.cond_mispredicts, self.cond_branches)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FetchCause {
    None,
    Branch,
    Brr,
    ICache,
    Switch,
}

/// The timing model's state.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    cfg: Config,
    l1i: Cache,
    l1d: Cache,
    l2: Cache,
    itlb: Cache,
    dtlb: Cache,
    predictor: DirectionPredictor,
    btb: Btb,
    ras: Ras,
    /// Execution latency by [`Unit`] (loads: the L1D hit latency).
    unit_latency: [u32; Unit::ALL.len()],
    /// Cycle each register's value is available (RegUse numbering; 0 = none).
    reg_ready: [u64; 64],
    fetch_cycle: u64,
    fetch_in_cycle: u32,
    fetch_line: u64,
    fetch_page: u64,
    /// Fetch may not start before this cycle (a pending redirect), and why.
    redirect_at: u64,
    redirect_cause: FetchCause,
    dispatch_cycle: u64,
    dispatch_in_cycle: u32,
    last_issue: u64,
    /// Retire cycles of the last `rob` instructions (a ring).
    rob: Vec<u64>,
    rob_pos: usize,
    retire_cycle: u64,
    retire_in_cycle: u32,
    totals: Totals,
    l2_inst_misses: u64,
    l2_data_misses: u64,
    fills: Box<Fills>,
    /// The last dispatch cycle a feedback hold set (or carried on to).
    hold_cycle: u64,
}

impl Model {
    /// A cold machine (empty caches, untrained predictors) with configuration `cfg`
    /// (validate it first: [`Config::validate`]).
    pub fn new(cfg: &Config) -> Model {
        let lat = &cfg.latency;
        let unit_latency = Unit::ALL.map(|u| match u {
            Unit::Alu => lat.alu,
            Unit::Mult => lat.mult,
            Unit::Div => lat.div,
            Unit::Float => lat.float,
            Unit::FloatDiv => lat.fdiv,
            Unit::Load => cfg.l1d.latency.max(1),
            Unit::Store => lat.store,
            Unit::Branch | Unit::BranchOnRandom => lat.branch,
            Unit::Jump | Unit::JumpIndirect => lat.jump,
            Unit::Sys => lat.sys,
            Unit::Vector => lat.vector,
        });
        Model {
            l1i: Cache::from_config(&cfg.l1i),
            l1d: Cache::from_config(&cfg.l1d),
            l2: Cache::from_config(&cfg.l2),
            itlb: Cache::tlb(&cfg.itlb),
            dtlb: Cache::tlb(&cfg.dtlb),
            predictor: DirectionPredictor::new(&cfg.predictor),
            btb: Btb::new(cfg.predictor.btb_entries, cfg.predictor.btb_ways),
            ras: Ras::new(cfg.predictor.ras_entries),
            unit_latency,
            reg_ready: [0; 64],
            fetch_cycle: 0,
            fetch_in_cycle: 0,
            fetch_line: u64::MAX,
            fetch_page: u64::MAX,
            redirect_at: 0,
            redirect_cause: FetchCause::None,
            dispatch_cycle: 0,
            dispatch_in_cycle: 0,
            last_issue: 0,
            rob: vec![0; cfg.core.rob.max(1) as usize],
            rob_pos: 0,
            retire_cycle: 0,
            retire_in_cycle: 0,
            totals: Totals {
                config: cfg.name.clone(),
                ..Totals::default()
            },
            l2_inst_misses: 0,
            l2_data_misses: 0,
            fills: Box::new(Fills::new(Cache::from_config(&cfg.l2).line_shift())),
            hold_cycle: 0,
            cfg: cfg.clone(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The core switches to another guest thread: the next instruction is fetched
    /// `core.context_switch` cycles after the last retirement (docs/timing.md, "Threads").
    pub fn context_switch(&mut self) {
        let at = self.retire_cycle + u64::from(self.cfg.core.context_switch);
        if at > self.redirect_at {
            self.redirect_at = at;
            self.redirect_cause = FetchCause::Switch;
        }
        self.totals.context_switches += 1;
    }

    /// Times one retired instruction (they must come in program order). `retire_group` of the
    /// result is 0: the cycle's group is only known once the next cycle starts (see
    /// [`crate::Timed`]).
    #[inline]
    pub fn step(&mut self, r: &Retire) -> Stamp {
        self.step_with(r, &mut NoFeedback)
    }

    /// [`Model::step`] with a mechanism that may hold the instruction at dispatch and ask for
    /// cache fills ([`Feedback`]).
    #[inline]
    pub fn step_with<F: Feedback>(&mut self, r: &Retire, fb: &mut F) -> Stamp {
        let core = self.cfg.core;
        let mut events = Events::default();

        let (f, fetch_delay, fetch_cause) = self.fetch(r, &mut events);

        // ---- dispatch
        let natural = (f + u64::from(core.frontend_depth)).max(self.rob[self.rob_pos] + 1);
        let mut d = natural.max(self.dispatch_cycle);
        if d == self.dispatch_cycle && self.dispatch_in_cycle >= core.width {
            d += 1;
        }
        // cycles this instruction's dispatch lost to holds: its own, and (dispatch being in
        // order) those of an older instruction that pushed the dispatch cycle past its own
        let mut hold = 0u64;
        if F::ACTIVE {
            if self.hold_cycle >= d.saturating_sub(1) && d > natural && self.hold_cycle > 0 {
                hold = d - natural;
                self.hold_cycle = d;
            }
            let e = fb.dispatch(r, d);
            if e > d {
                hold += e - d;
                self.totals.dispatch_holds += 1;
                self.totals.dispatch_hold_cycles += e - d;
                d = e;
                self.hold_cycle = e;
            }
        }
        if d != self.dispatch_cycle {
            self.dispatch_in_cycle = 0;
            self.dispatch_cycle = d;
        }
        self.dispatch_in_cycle += 1;

        // ---- issue
        let regs = r.regs;
        let mut i = d + 1;
        for s in regs.src {
            i = i.max(self.reg_ready[s as usize & 63]);
        }
        if core.in_order {
            i = i.max(self.last_issue);
            self.last_issue = i;
        }

        // ---- execute
        let mut latency = u64::from(self.unit_latency[r.unit as usize]);
        let mem_extra = self.data_access::<F>(r, i, &mut events);
        latency += mem_extra;
        let c = i + latency;
        if regs.dst != 0 {
            self.reg_ready[regs.dst as usize & 63] = c;
        }

        self.control_flow(r, f, c, &mut events);

        let (ret, stall) = self.retire::<F>(c, mem_extra, hold, (fetch_delay, fetch_cause));

        let stamp = Stamp {
            fetch: f,
            dispatch: d,
            issue: i,
            complete: c,
            retire: ret,
            events,
            retire_group: 0,
            retire_stall: u32::try_from(stall).unwrap_or(u32::MAX),
        };
        if F::ACTIVE {
            fb.stamped(r, &stamp, &mut self.fills);
        }
        stamp
    }

    /// Fetch: the cycle `r` is fetched in, the cycles fetch lost before it and why (a
    /// redirect, an instruction-cache or ITLB miss).
    #[inline(always)]
    fn fetch(&mut self, r: &Retire, events: &mut Events) -> (u64, u64, FetchCause) {
        let core = self.cfg.core;
        let mut f = self.fetch_cycle;
        let mut fetch_delay = 0;
        let mut fetch_cause = FetchCause::None;
        if self.redirect_at > f {
            fetch_delay = self.redirect_at - f;
            fetch_cause = self.redirect_cause;
            f = self.redirect_at;
            self.fetch_in_cycle = 0;
        }
        if self.fetch_in_cycle >= core.fetch_width {
            f += 1;
            self.fetch_in_cycle = 0;
        }
        let line = self.l1i.line_of(r.pc);
        if line != self.fetch_line {
            self.fetch_line = line;
            let mut stall = 0;
            let page = self.itlb.line_of(r.pc);
            if page != self.fetch_page {
                self.fetch_page = page;
                if !self.itlb.access(r.pc) {
                    events.insert(Events::ITLB_MISS);
                    stall += self.cfg.itlb.miss_penalty;
                }
            }
            if !self.l1i.access(r.pc) {
                events.insert(Events::L1I_MISS);
                stall += self.cfg.l2.latency;
                self.totals.l2_inst_accesses += 1;
                if !self.l2.access(r.pc) {
                    events.insert(Events::L2I_MISS);
                    self.l2_inst_misses += 1;
                    stall += self.cfg.memory.latency;
                }
            }
            if stall > 0 {
                f += u64::from(stall);
                self.fetch_in_cycle = 0;
                if fetch_cause == FetchCause::None {
                    fetch_cause = FetchCause::ICache;
                }
                fetch_delay += u64::from(stall);
            }
        }
        self.fetch_in_cycle += 1;
        self.fetch_cycle = f;

        (f, fetch_delay, fetch_cause)
    }

    /// The data access of `r` issued at cycle `i`: the cycles its misses add to its latency
    /// (none for a store: it retires into the store buffer).
    #[inline(always)]
    fn data_access<F: Feedback>(&mut self, r: &Retire, i: u64, events: &mut Events) -> u64 {
        let mut mem_extra = 0u64;
        if r.mem_size > 0 {
            let mut extra = 0u32;
            if F::ACTIVE && !self.fills.is_empty() {
                let (l1d, l2) = (&mut self.l1d, &mut self.l2);
                self.fills.arrived(i, |addr, l1| {
                    l2.fill(addr);
                    if l1 {
                        l1d.fill(addr);
                    }
                });
            }
            self.totals.l1d_accesses += 1;
            if !self.dtlb.access(r.mem_addr) {
                events.insert(Events::DTLB_MISS);
                extra += self.cfg.dtlb.miss_penalty;
            }
            if !self.l1d.access_range(r.mem_addr, u64::from(r.mem_size)) {
                events.insert(Events::L1D_MISS);
                extra += self.cfg.l2.latency;
                self.totals.l2_data_accesses += 1;
                if !self.l2.access_range(r.mem_addr, u64::from(r.mem_size)) {
                    events.insert(Events::L2D_MISS);
                    self.l2_data_misses += 1;
                    let mut mem = self.cfg.memory.latency;
                    if F::ACTIVE {
                        // a fill in flight for this line: wait for it, not for memory
                        if let Some(at) = self.fills.arriving(r.mem_addr) {
                            self.fills.late += 1;
                            let wait = at.saturating_sub(i);
                            mem = mem.min(u32::try_from(wait).unwrap_or(u32::MAX));
                        }
                    }
                    extra += mem;
                }
            }
            // stores retire into the store buffer: their misses do not delay completion
            if r.class != Some(Class::Store) {
                mem_extra = u64::from(extra);
            }
        }
        mem_extra
    }

    /// Control flow: predicted at fetch (cycle `f`), resolved at execute (cycle `c`);
    /// branch-on-random never enters the predictor, the BTB or the history: predicted not
    /// taken, decided at decode, and when taken it redirects fetch from there.
    #[inline(always)]
    fn control_flow(&mut self, r: &Retire, f: u64, c: u64, events: &mut Events) {
        match r.class {
            _ if r.unit == Unit::BranchOnRandom => {
                self.totals.brr += 1;
                if r.taken {
                    self.totals.brr_taken += 1;
                    self.redirect_for(
                        f + 1 + u64::from(self.cfg.core.brr_penalty),
                        FetchCause::Brr,
                    );
                }
            }
            Some(Class::Branch) => {
                self.totals.cond_branches += 1;
                let predicted = self.predictor.predict_and_train(r.pc, r.taken);
                if predicted != r.taken {
                    self.totals.cond_mispredicts += 1;
                    events.insert(Events::MISPREDICT);
                    self.redirect_after_execute(c, f);
                } else if r.taken {
                    self.taken_direct(r.pc, r.next_pc, f, events);
                }
            }
            Some(Class::Jump) => match r.transfer {
                Some(BranchKind::Return) => {
                    self.totals.returns += 1;
                    if self.ras.pop() != Some(r.next_pc) {
                        self.totals.return_mispredicts += 1;
                        events.insert(Events::MISPREDICT);
                        self.redirect_after_execute(c, f);
                    } else {
                        self.end_fetch_group();
                    }
                }
                kind => {
                    let call = kind == Some(BranchKind::Call);
                    if call {
                        self.ras.push(r.pc.wrapping_add(u64::from(r.len)));
                    }
                    if r.unit == Unit::Jump {
                        self.taken_direct(r.pc, r.next_pc, f, events);
                    } else {
                        self.totals.indirect += 1;
                        if self.btb.lookup(r.pc) != Some(r.next_pc) {
                            self.totals.indirect_mispredicts += 1;
                            events.insert(Events::MISPREDICT);
                            self.redirect_after_execute(c, f);
                        } else {
                            self.end_fetch_group();
                        }
                        self.btb.update(r.pc, r.next_pc);
                    }
                }
            },
            _ => {}
        }
    }

    /// Retire: the cycle `r` retires in (it completed at `c`) and the stall before it,
    /// charged to the CPI stack's causes in order: the data cache, dispatch holds, then the
    /// cause of the fetch delay.
    #[inline(always)]
    fn retire<F: Feedback>(
        &mut self,
        c: u64,
        mem_extra: u64,
        hold: u64,
        (fetch_delay, fetch_cause): (u64, FetchCause),
    ) -> (u64, u64) {
        let core = self.cfg.core;
        let mut ret = (c + 1).max(self.retire_cycle);
        if ret == self.retire_cycle && self.retire_in_cycle >= core.width {
            ret += 1;
        }
        let mut stall = 0;
        if ret != self.retire_cycle {
            // first to retire in a new cycle: the gap before it is its stall, and this cycle
            // counts as a base cycle
            stall = ret - self.retire_cycle - 1;
            self.retire_cycle = ret;
            self.retire_in_cycle = 0;
            let cpi = &mut self.totals.cpi_stack;
            cpi.base += 1;
            let mut rest = stall;
            let dc = rest.min(mem_extra);
            cpi.dcache += dc;
            rest -= dc;
            if F::ACTIVE {
                let hc = rest.min(hold);
                cpi.hold += hc;
                rest -= hc;
            }
            let fc = rest.min(fetch_delay);
            match fetch_cause {
                FetchCause::Branch => cpi.branch += fc,
                FetchCause::Brr => cpi.brr += fc,
                FetchCause::ICache => cpi.icache += fc,
                FetchCause::Switch => cpi.switch += fc,
                FetchCause::None => {}
            }
            if fetch_cause != FetchCause::None {
                rest -= fc;
            }
            cpi.other += rest;
        }
        self.retire_in_cycle += 1;
        self.rob[self.rob_pos] = ret;
        self.rob_pos += 1;
        if self.rob_pos == self.rob.len() {
            self.rob_pos = 0;
        }
        self.totals.instructions += 1;

        (ret, stall)
    }

    /// Functional warming: updates the caches, TLBs, direction predictor, BTB and
    /// return-address stack as [`Model::step`] would for `r`, without timing it and without
    /// counting it in the totals (SMARTS's functional warming, Wunderlich et al. 2003: the
    /// state a detailed window inherits from the fast-forward before it). docs/phases.md.
    #[inline]
    pub fn warm(&mut self, r: &Retire) {
        self.warm_fetch(r.pc);
        if r.mem_size > 0 {
            self.warm_data(r.mem_addr, r.mem_size);
        }
        match r.class {
            _ if r.unit == Unit::BranchOnRandom => {}
            Some(Class::Branch) => self.warm_branch(r.pc, r.taken, r.next_pc),
            Some(Class::Jump) => {
                let indirect = r.unit != Unit::Jump;
                self.warm_jump((r.pc, r.len), r.transfer, indirect, r.next_pc);
            }
            _ => {}
        }
    }

    /// Functional warming of the instructions one compiled block run retired
    /// ([`outcrop_events::record::Observer::warm`]): exactly what [`Model::warm`] does with
    /// their retire records, in the same order (the fetch and the access of each instruction,
    /// then the final transfer).
    #[inline]
    pub fn warm_run(&mut self, run: &WarmRun<'_>) {
        let mut pc = run.start;
        let mut addrs = run.addrs.iter();
        let mut last = (pc, 0);
        for (&len, &size) in run.lens.iter().zip(run.sizes) {
            self.warm_fetch(pc);
            if size > 0 {
                if let Some(&a) = addrs.next() {
                    self.warm_data(a, size);
                }
            }
            last = (pc, len);
            pc = pc.wrapping_add(u64::from(len));
        }
        match run.end {
            Some(WarmEnd::Branch) => self.warm_branch(last.0, run.next != pc, run.next),
            Some(WarmEnd::Jump { kind, indirect }) => {
                self.warm_jump(last, Some(kind), indirect, run.next);
            }
            None => {}
        }
    }

    /// Warms the instruction fetch of the instruction at `pc`.
    #[inline(always)]
    fn warm_fetch(&mut self, pc: u64) {
        let line = self.l1i.line_of(pc);
        if line != self.fetch_line {
            self.fetch_line = line;
            let page = self.itlb.line_of(pc);
            if page != self.fetch_page {
                self.fetch_page = page;
                self.itlb.warm(pc);
            }
            if !self.l1i.warm(pc) {
                self.l2.warm(pc);
            }
        }
    }

    /// Warms a data access of `size` bytes at `addr`.
    #[inline(always)]
    fn warm_data(&mut self, addr: u64, size: u8) {
        self.dtlb.warm(addr);
        if !self.l1d.warm_range(addr, u64::from(size)) {
            self.l2.warm_range(addr, u64::from(size));
        }
    }

    /// Warms the predictors with a conditional branch at `pc`, `taken` to `next`.
    #[inline(always)]
    fn warm_branch(&mut self, pc: u64, taken: bool, next: u64) {
        let predicted = self.predictor.predict_and_train(pc, taken);
        if predicted == taken && taken && self.btb.lookup(pc) != Some(next) {
            self.btb.update(pc, next);
        }
    }

    /// Warms the return stack and BTB with a jump (`pc`, `len` bytes) of `kind` to `next`.
    #[inline(always)]
    fn warm_jump(
        &mut self,
        (pc, len): (u64, u8),
        kind: Option<BranchKind>,
        indirect: bool,
        next: u64,
    ) {
        match kind {
            Some(BranchKind::Return) => {
                self.ras.pop();
            }
            kind => {
                if kind == Some(BranchKind::Call) {
                    self.ras.push(pc.wrapping_add(u64::from(len)));
                }
                if !indirect {
                    if self.btb.lookup(pc) != Some(next) {
                        self.btb.update(pc, next);
                    }
                } else {
                    self.btb.lookup(pc);
                    self.btb.update(pc, next);
                }
            }
        }
    }

    /// A taken direct branch or jump predicted correctly in direction: the BTB supplies the
    /// target at fetch, or decode redirects fetch after `redirect_penalty`.
    #[inline]
    fn taken_direct(&mut self, pc: u64, target: u64, f: u64, events: &mut Events) {
        if self.btb.lookup(pc) != Some(target) {
            self.totals.btb_misses += 1;
            events.insert(Events::BTB_MISS);
            self.btb.update(pc, target);
            self.redirect(f + 1 + u64::from(self.cfg.core.redirect_penalty));
        } else {
            self.end_fetch_group();
        }
    }

    /// A misprediction found when the transfer executes at cycle `c`.
    #[inline]
    fn redirect_after_execute(&mut self, c: u64, f: u64) {
        self.totals.mispredicts += 1;
        let core = self.cfg.core;
        let at =
            (c + u64::from(core.mispredict_penalty)).saturating_sub(core.frontend_depth.into());
        self.redirect(at.max(f + 1));
    }

    #[inline]
    fn redirect(&mut self, at: u64) {
        self.redirect_for(at, FetchCause::Branch);
    }

    #[inline]
    fn redirect_for(&mut self, at: u64, cause: FetchCause) {
        if at > self.redirect_at {
            self.redirect_at = at;
            self.redirect_cause = cause;
        }
        self.end_fetch_group();
    }

    /// A predicted-taken transfer: the next instruction is fetched in the next cycle.
    #[inline]
    fn end_fetch_group(&mut self) {
        self.fetch_in_cycle = self.cfg.core.fetch_width;
    }

    /// Totals so far.
    pub fn totals(&self) -> Totals {
        let mut t = self.totals.clone();
        t.cycles = self.retire_cycle;
        t.ipc = ratio(t.instructions, t.cycles);
        t.l1i_accesses = self.l1i.accesses;
        t.l1i_misses = self.l1i.misses;
        t.l1d_misses = self.l1d.misses;
        t.l2_inst_misses = self.l2_inst_misses;
        t.l2_data_misses = self.l2_data_misses;
        t.itlb_misses = self.itlb.misses;
        t.dtlb_misses = self.dtlb.misses;
        t.fills_requested = self.fills.requested;
        t.fills_dropped = self.fills.dropped;
        t.fills_filled = self.fills.filled;
        t.fills_late = self.fills.late;
        t
    }
}
