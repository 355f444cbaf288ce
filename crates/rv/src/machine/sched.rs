//! The scheduler (docs/machine.md, "Threads"): guest threads take turns on the one hart in
//! quanta of retired instructions, switching also where a thread blocks, yields or exits;
//! timers fire and pending signals are delivered at these points. One host thread, no host
//! clock: the same program and seed give the same interleaving every time.

use super::{Machine, Outcome};
use crate::kernel::signals::{default_action, signal_name, DefaultAction, SA_RESTART};
use crate::kernel::threads::{Hart, ThreadStat, Wait, DEFAULT_QUANTUM};
use crate::kernel::ExitStatus;
use crate::vector::VState;
use outcrop_events::record::{Control, Observer};

/// One live thread and what it waits on ([`Machine::thread_waits`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadWait {
    /// Creation index.
    pub index: u32,
    /// Thread id.
    pub tid: u32,
    /// Its name, if it set one.
    pub name: String,
    /// Where it is.
    pub pc: u64,
    /// Its return-address register (the caller of a blocking libc function).
    pub ra: u64,
    /// What it waits on.
    pub wait: String,
}

/// How the scheduler picks (see [`Machine::set_schedule`]).
#[derive(Clone, Debug)]
pub(super) struct Scheduler {
    /// Round-robin quantum in retired instructions.
    quantum: u64,
    /// With a seed, quanta vary in length and the next thread is drawn at random.
    seed: Option<u64>,
    rng: outcrop_sampling::SplitMix64,
    /// Where the running thread's quantum ends (instructions + traps).
    pub(super) slice_end: u64,
    /// Creation index of the running thread (what retire records carry).
    pub(super) thread_index: u32,
    /// `instret` when the running thread was switched in.
    switched_at: u64,
    /// Context switches so far.
    pub(super) switches: u64,
    /// Stop signals already warned about.
    warned_stop: bool,
    /// Handlers entered (synchronous and asynchronous signals).
    pub(super) delivered: u64,
    /// `rt_sigreturn`s not yet told to the observer.
    pub(super) sigreturns: u64,
    /// The machine's registers are saved in the running thread's entry (or belong to no
    /// live thread): saving them again would overwrite a thread's with stale ones.
    pub(super) hart_saved: bool,
}

impl Default for Scheduler {
    fn default() -> Self {
        Scheduler {
            quantum: DEFAULT_QUANTUM,
            seed: None,
            rng: outcrop_sampling::SplitMix64::new(0),
            slice_end: u64::MAX,
            thread_index: 0,
            switched_at: 0,
            switches: 0,
            warned_stop: false,
            delivered: 0,
            sigreturns: 0,
            hart_saved: false,
        }
    }
}

impl Scheduler {
    fn next_random(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// The round-robin quantum.
    pub(super) fn quantum_len(&self) -> u64 {
        self.quantum
    }

    fn quantum(&mut self) -> u64 {
        match self.seed {
            None => self.quantum,
            // between half and one and a half quanta
            Some(_) => self.quantum / 2 + self.next_random() % self.quantum.max(1),
        }
    }
}

impl Machine {
    /// Sets the round-robin quantum (retired instructions, at least 1) and the schedule
    /// seed: `None` is plain round robin (what `--deterministic` runs use); a seed varies
    /// each quantum between ½ and 1½ of its length and draws the next thread at random, so
    /// different seeds give different interleavings and the same seed the same one.
    pub fn set_schedule(&mut self, quantum: u64, seed: Option<u64>) {
        self.sched.quantum = quantum.max(1);
        self.sched.seed = seed;
        self.sched.rng = outcrop_sampling::SplitMix64::new(seed.unwrap_or(0));
    }

    /// The schedule seed in use (`None`: plain round robin).
    pub fn schedule_seed(&self) -> Option<u64> {
        self.sched.seed
    }

    /// Most threads that may be alive at once (`--max-threads`; at least 1).
    pub fn set_max_threads(&mut self, n: usize) {
        self.kernel.threads_mut().max_threads = n.max(1);
    }

    /// Signal handlers entered so far (synchronous and asynchronous signals).
    pub fn signals_delivered(&self) -> u64 {
        self.sched.delivered
    }

    /// Context switches so far.
    pub fn context_switches(&self) -> u64 {
        self.sched.switches
    }

    /// Creation index of the running thread (0 is the main thread).
    pub fn thread_index(&self) -> u32 {
        self.sched.thread_index
    }

    /// What every thread did so far, by creation order: instructions that sum to
    /// [`Machine::instret`], and switches.
    pub fn thread_stats(&self) -> Vec<ThreadStat> {
        let threads = self.kernel.threads();
        let mut stats = threads.stats.clone();
        let run = self.instret - self.sched.switched_at;
        if let Some(s) = stats
            .iter_mut()
            .rev()
            .find(|s| s.index == self.sched.thread_index)
        {
            s.instructions += run;
        } else if let Some(last) = stats.last_mut() {
            last.instructions += run; // past the kept entries: summed in the last
        }
        for s in &mut stats {
            if let Some(t) = threads.list.iter().find(|t| t.index == s.index) {
                s.name = t.name();
            }
        }
        stats
    }

    /// Each live thread and what it waits on (the deadlock report's rows), the running
    /// process's first, then the other processes'.
    pub fn thread_waits(&self) -> Vec<ThreadWait> {
        let threads = self.kernel.threads();
        let row = |t: &crate::kernel::Thread, pc: u64, ra: u64| ThreadWait {
            index: t.index,
            tid: t.tid,
            name: t.name(),
            pc,
            ra,
            wait: t.wait.describe(),
        };
        let own = threads.list.iter().enumerate().map(|(i, t)| {
            if i == threads.current && !self.sched.hart_saved {
                row(t, self.pc, self.x[1])
            } else {
                row(t, t.hart.pc, t.hart.x[1])
            }
        });
        let parked = self
            .kernel
            .parked_threads()
            .filter(|(_, t)| t.wait != Wait::Exited)
            .map(|(_, t)| row(t, t.hart.pc, t.hart.x[1]));
        own.chain(parked).collect()
    }

    /// Each live thread and what it waits on, one per line, with `name(pc)` naming the code
    /// at an address when it can (the deadlock report).
    pub fn deadlock_report_with(&self, name: impl Fn(u64) -> Option<String>) -> String {
        let mut out = String::new();
        for w in self.thread_waits() {
            let place = match (name(w.pc), name(w.ra)) {
                (Some(f), Some(c)) if f != c => format!(" in {f}, called from {c}"),
                (Some(f), _) => format!(" in {f}"),
                _ => String::new(),
            };
            out.push_str(&format!(
                "thread {} (tid {}{}{}) at pc {:#x}{place}: {}\n",
                w.index,
                w.tid,
                if w.name.is_empty() { "" } else { ", " },
                w.name,
                w.pc,
                w.wait
            ));
        }
        out
    }

    /// [`Machine::deadlock_report_with`] without names.
    pub fn deadlock_report(&self) -> String {
        self.deadlock_report_with(|_| None)
    }

    /// Runs until exit, fault, the instruction limit, or the observer stops it, switching
    /// between the guest's threads and delivering its signals on the way.
    pub fn run<O: Observer>(&mut self, obs: &mut O) -> Outcome {
        let outcome = self.run_threads(obs);
        // compiled code's counts reach the observer before the run returns, and the guest's
        // stores to shared mappings of host files reach the files
        self.drain_counts(obs);
        self.kernel.finish_host_files(&mut self.mem);
        outcome
    }

    /// [`Machine::run`] but for compiled code's counts.
    fn run_threads<O: Observer>(&mut self, obs: &mut O) -> Outcome {
        // Validate the instruction cache against the memory once; afterwards only instructions
        // that can change code (stores, AMOs, system calls) re-check it.
        self.check_code_epoch();
        self.pc &= !1; // see the `pc` field
        if O::BLOCKS && !self.blocks_tracked {
            // the last run's observer did not follow blocks: every thread's next block
            // starts where it is now
            self.block_start = self.pc;
            self.block_len = 0;
            self.block_lens.clear();
            for t in &mut self.kernel.threads_mut().list {
                t.hart.block_start = t.hart.pc;
                t.hart.block_len = 0;
                t.hart.block_lens.clear();
            }
        }
        self.blocks_tracked = O::BLOCKS;
        if O::MAPPINGS && self.note_mappings(obs) == Control::Stop {
            return Outcome::Stopped;
        }
        loop {
            self.stop_at = self.next_stop();
            match self.run_engine(obs) {
                Outcome::InstructionLimit
                    if self.instret.saturating_add(self.traps) < self.max_insns =>
                {
                    if let Some(end) = self.schedule(obs) {
                        return end;
                    }
                }
                Outcome::Fault(f) if self.deliver_fault(f.kind, f.pc) => {
                    // a fetch fault (the others are delivered inside the engines)
                    self.traps += 1;
                    if self.signal_entered(obs) == Control::Stop {
                        return Outcome::Stopped;
                    }
                }
                // one of several processes ended: the others go on
                Outcome::Exited(code) if self.multiprocess() => {
                    let status = ExitStatus::Exited(code as u8);
                    if let Some(end) = self.end_process(status, obs) {
                        return end;
                    }
                    if let Some(end) = self.schedule(obs) {
                        return end;
                    }
                }
                Outcome::Fault(f) if self.multiprocess() => {
                    let signal = (f.exit_status() - 128) as u8;
                    self.kernel.warn(&format!(
                        "process {} was killed by {}: {f}",
                        self.kernel.current_pid(),
                        signal_name(u64::from(signal)),
                    ));
                    let status = ExitStatus::Signaled { signal, core: true };
                    if let Some(end) = self.end_process(status, obs) {
                        return end;
                    }
                    if let Some(end) = self.schedule(obs) {
                        return end;
                    }
                }
                other => return other,
            }
        }
    }

    /// Ends every thread's basic block in progress for `obs` (each reported under its thread,
    /// [`Observer::thread`]), for an observer that will not see this run again: the run
    /// stopped mid-block at the instruction limit, as at the end of `outcrop run --range`.
    /// Without it, up to one block per thread would go unreported.
    pub fn flush_blocks<O: Observer>(&mut self, obs: &mut O) {
        if !O::BLOCKS {
            return;
        }
        let running = self.sched.thread_index;
        let current = self.kernel.threads().current;
        let threads = &self.kernel.threads().list;
        let parked: Vec<(usize, u32)> = threads
            .iter()
            .enumerate()
            .filter(|(i, t)| *i != current && t.hart.block_len > 0)
            .map(|(i, t)| (i, t.index))
            .collect();
        let switched = !parked.is_empty();
        for (i, index) in parked {
            let _ = obs.thread(index);
            let t = &mut self.kernel.threads_mut().list[i];
            let (start, len) = (t.hart.block_start, t.hart.block_len);
            let lens = std::mem::take(&mut t.hart.block_lens);
            t.hart.block_start = t.hart.pc;
            t.hart.block_len = 0;
            let _ = if O::BLOCK_LENS {
                obs.block_lens(start, &lens)
            } else {
                obs.block(start, len)
            };
        }
        if switched {
            let _ = obs.thread(running);
        }
        if self.block_len > 0 {
            let _ = self.end_block(obs);
            self.block_start = self.pc;
        }
    }

    /// Where the engines should stop next.
    fn next_stop(&self) -> u64 {
        let threads = self.kernel.threads();
        let mut stop = self.max_insns;
        if threads.list.len() > 1 || !self.spaces.is_empty() {
            stop = stop.min(self.sched.slice_end);
        }
        if let Some(t) = self.kernel.next_timer() {
            let now = self.kernel.machine_ns(self.instret);
            let done = self.instret.saturating_add(self.traps);
            stop = stop.min(done.saturating_add(t.saturating_sub(now)));
        }
        stop
    }

    /// A scheduling point: fire timers, wake waiters, pick the thread to run, deliver its
    /// signals. `Some` when the run ends here.
    fn schedule<O: Observer>(&mut self, obs: &mut O) -> Option<Outcome> {
        if self.kernel.threads().limit_hit {
            return Some(Outcome::ThreadLimit);
        }
        for _ in 0..std::mem::take(&mut self.sched.sigreturns) {
            if obs.signal(false) == Control::Stop {
                return Some(Outcome::Stopped);
            }
        }
        loop {
            let now = self.kernel.machine_ns(self.instret);
            self.kernel.fire_timers(now);
            self.save_hart();
            self.wake_waiters(now);
            let single = self.spaces.is_empty();
            let (picked, switched) = match self.pick(single) {
                Some(next) => (Some(next), false),
                None if single => (None, false),
                None => (self.pick_process(now, obs), true),
            };
            if let Some(next) = picked {
                if self.switch_to(next, switched, obs) == Control::Stop {
                    return Some(Outcome::Stopped);
                }
                match self.deliver_pending(obs) {
                    Some(Outcome::Signaled { signal, core }) if self.multiprocess() => {
                        let status = ExitStatus::Signaled { signal, core };
                        if let Some(end) = self.end_process(status, obs) {
                            return Some(end);
                        }
                        continue;
                    }
                    other => return other,
                }
            }
            // everyone waits: skip the machine clock to the first deadline
            let deadline = self.deadlines();
            match deadline {
                Some(d) => {
                    self.kernel.threads_mut().idle_ns += d.saturating_sub(now).max(1);
                }
                None => return Some(Outcome::Deadlock),
            }
        }
    }

    /// The first deadline any thread of any process waits for, or a timer.
    fn deadlines(&self) -> Option<u64> {
        let own = self
            .kernel
            .threads()
            .list
            .iter()
            .filter_map(|t| t.wait.deadline())
            .chain(self.kernel.next_timer())
            .min();
        own.into_iter().chain(self.kernel.parked_deadlines()).min()
    }

    /// The running process has no thread to run before its turn ends: the other processes'
    /// threads in turn, then its own from the first. Leaves the process of the thread picked
    /// running (`None`: every thread waits; the machine is back in the process it was in).
    fn pick_process<O: Observer>(&mut self, now: u64, obs: &mut O) -> Option<usize> {
        let home = self.kernel.current_pid();
        if O::BLOCK_LENS {
            // the outgoing thread's block in progress, told once before leaving its process
            let threads = self.kernel.threads();
            let h = &threads.list[threads.current].hart;
            if !h.block_lens.is_empty() && threads.list[threads.current].wait != Wait::Exited {
                let _ = obs.block_part(h.block_start, &h.block_lens);
            }
        }
        for pid in self.kernel.other_processes().into_iter().chain([home]) {
            if !self.switch_process(pid, obs) {
                continue;
            }
            if pid != home {
                self.kernel.fire_timers(now);
                self.wake_waiters(now);
            }
            if let Some(next) = self.pick_any() {
                return Some(next);
            }
        }
        None
    }

    /// The first runnable thread of the running process after the one that ran last (that
    /// one last), so that every thread of every process gets its turn.
    fn pick_any(&mut self) -> Option<usize> {
        let threads = self.kernel.threads();
        let n = threads.list.len();
        let cur = threads.current;
        let candidates: Vec<usize> = (1..=n)
            .map(|k| (cur + k) % n)
            .filter(|&i| threads.list[i].wait == Wait::Runnable)
            .collect();
        match (candidates.len(), self.sched.seed) {
            (0, _) => None,
            (_, None) => Some(candidates[0]),
            (k, Some(_)) => Some(candidates[(self.sched.next_random() % k as u64) as usize]),
        }
    }

    /// Saves the running thread's registers into its table entry (once: see
    /// [`Scheduler::hart_saved`]).
    fn save_hart(&mut self) {
        if std::mem::replace(&mut self.sched.hart_saved, true) {
            return;
        }
        let hart = Hart {
            x: self.x,
            f: self.f,
            pc: self.pc,
            fflags: self.fflags,
            frm: self.frm,
            reservation: self.reservation,
            block_start: self.block_start,
            block_len: self.block_len,
            block_lens: std::mem::take(&mut self.block_lens),
            v: self.v.clone(),
        };
        let threads = self.kernel.threads_mut();
        let cur = threads.current;
        threads.list[cur].hart = hart;
    }

    /// Ends the waits that are over: deadlines passed, and signals that interrupt them.
    fn wake_waiters(&mut self, now: u64) {
        self.kernel.threads_mut().expire(now, &mut self.mem);
        let n = self.kernel.threads().list.len();
        for i in 0..n {
            self.kernel.take_shared(i);
            if self.kernel.finish_sigwait(i, &mut self.mem) {
                continue;
            }
            // a handled signal interrupts a retried call before another change wakes it: so
            // a call Linux never restarts (System V's) is not run again after the handler
            let dropped = |k: &crate::kernel::Kernel, sig: u64| {
                let act = k.action(sig);
                act.handler == 1
                    || (act.handler == 0
                        && matches!(
                            default_action(sig),
                            DefaultAction::Ignore | DefaultAction::Stop
                        ))
            };
            let signalled = matches!(self.kernel.threads().list[i].wait, Wait::Retry { .. })
                && self
                    .kernel
                    .deliverable(i)
                    .is_some_and(|sig| !dropped(&self.kernel, sig));
            if !signalled && self.kernel.wake_if_ready(i) {
                continue;
            }
            let wait = self.kernel.threads().list[i].wait;
            if matches!(wait, Wait::Runnable | Wait::Exited) {
                continue;
            }
            let Some(sig) = self.kernel.deliverable(i) else {
                continue;
            };
            let act = self.kernel.action(sig);
            if dropped(&self.kernel, sig) {
                continue; // dropped when it is delivered; it does not wake anyone
            }
            if let Wait::Suspend { saved_mask } = wait {
                self.kernel.threads_mut().list[i].restore_mask = Some(saved_mask);
            }
            let restart = act.flags & SA_RESTART != 0;
            self.kernel
                .threads_mut()
                .interrupt(i, restart, now, &mut self.mem);
        }
    }

    /// The thread to run next: the running one until its quantum ends (unless it yielded or
    /// stopped running), else the next runnable one in creation order after it (or a random
    /// one under a seed). `None` when every thread waits.
    fn pick(&mut self, wrap: bool) -> Option<usize> {
        let done = self.instret.saturating_add(self.traps);
        let threads = self.kernel.threads_mut();
        let yielded = std::mem::take(&mut threads.yield_now);
        let cur = threads.current;
        let n = threads.list.len();
        let runnable = |i: usize| threads.list[i].wait == Wait::Runnable;
        if runnable(cur) && !yielded && done < self.sched.slice_end && n > 0 {
            return Some(cur);
        }
        // without `wrap`, only the threads after the running one: the other processes'
        // come before the rest of this one's
        let candidates: Vec<usize> = (1..=n)
            .map(|k| (cur + k) % n)
            .take_while(|&i| wrap || i > cur)
            .filter(|&i| runnable(i))
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let pick = match self.sched.seed {
            None => candidates[0],
            Some(_) => candidates[(self.sched.next_random() % candidates.len() as u64) as usize],
        };
        Some(pick)
    }

    /// Makes thread `next` (a list index) the running one: loads its registers, drops the
    /// exited threads, starts its quantum, tells the observer.
    fn switch_to<O: Observer>(&mut self, next: usize, switched: bool, obs: &mut O) -> Control {
        let run = self.instret - self.sched.switched_at;
        self.sched.switched_at = self.instret;
        let index = self.sched.thread_index;
        let threads = self.kernel.threads_mut();
        if let Some(s) = threads.stat_mut(index) {
            s.instructions += run;
        }
        let quantum = self.sched.quantum();
        self.sched.slice_end = self
            .instret
            .saturating_add(self.traps)
            .saturating_add(quantum);
        // a change of process (or of program: `execve` reschedules) comes first
        let mut announced = self.note_process(obs);
        if O::MAPPINGS && self.mappings_seen != self.kernel.mapped_objects().len() {
            // (a new process's or program's objects, before any of its records)
            announced = announced.and(self.note_mappings(obs));
        }
        let threads = self.kernel.threads_mut();
        // (after a change of process, the outgoing thread's part was told already)
        let same = next == threads.current && !switched;
        let next_index = threads.list[next].index;
        let mut part = Control::Continue;
        if O::BLOCK_LENS && !same && !switched {
            // the outgoing thread's block in progress: its instructions retired so far, told
            // now so that counts by address follow the retired instructions in time order
            let h = &threads.list[threads.current].hart;
            if !h.block_lens.is_empty() {
                part = obs.block_part(h.block_start, &h.block_lens);
            }
        }
        let threads = self.kernel.threads_mut();
        // (the running thread's too: a wake may have changed its saved registers)
        let mut h = threads.list[next].hart.clone();
        self.sched.hart_saved = false;
        self.x = h.x;
        self.f = h.f;
        self.pc = h.pc;
        self.fflags = h.fflags;
        self.frm = h.frm;
        self.reservation = h.reservation;
        self.block_start = h.block_start;
        self.block_len = h.block_len;
        self.block_lens = std::mem::take(&mut h.block_lens);
        // (a new thread's unit has the default VLEN: it starts afresh at the machine's)
        self.v = if h.v.vlenb() == self.v.vlenb() {
            std::mem::take(&mut h.v)
        } else {
            VState::new(self.v.vlenb() * 8)
        };
        // drop the threads that exited (the running one is never among them now)
        let next_tid = threads.list[next].tid;
        for t in threads.list.iter().filter(|t| t.wait == Wait::Exited) {
            let (i, name) = (t.index, t.name());
            if let Some(s) = threads.stats.iter_mut().find(|s| s.index == i) {
                s.name = name;
            }
        }
        threads.list.retain(|t| t.wait != Wait::Exited);
        threads.current = threads
            .list
            .iter()
            .position(|t| t.tid == next_tid)
            .unwrap_or(0);
        if same {
            return announced;
        }
        self.sched.switches += 1;
        self.sched.thread_index = next_index;
        if let Some(s) = self.kernel.threads_mut().stat_mut(next_index) {
            s.switches += 1;
        }
        part.and(announced).and(obs.thread(next_index))
    }

    /// Delivers the running thread's deliverable signals: enters their handlers (nested, the
    /// last one entered runs first), drops ignored ones, or ends the run by a default action.
    fn deliver_pending<O: Observer>(&mut self, obs: &mut O) -> Option<Outcome> {
        let cur = self.kernel.threads().current;
        // at most one frame per signal number: each handler masks its own signal
        for _ in 0..64 {
            let sig = self.kernel.deliverable(cur)?;
            let info = self.kernel.dequeue(cur, sig);
            let act = self.kernel.action(sig);
            match act.handler {
                1 => continue, // ignored
                0 => match default_action(sig) {
                    DefaultAction::Ignore => continue,
                    DefaultAction::Stop => {
                        if !self.sched.warned_stop {
                            self.sched.warned_stop = true;
                            self.kernel.warn(&format!(
                                "{} would stop the process; a run cannot be stopped, so it is ignored",
                                signal_name(sig)
                            ));
                        }
                        continue;
                    }
                    DefaultAction::Terminate => {
                        return Some(Outcome::Signaled {
                            signal: sig as u8,
                            core: false,
                        })
                    }
                    DefaultAction::Core => {
                        return Some(Outcome::Signaled {
                            signal: sig as u8,
                            core: true,
                        })
                    }
                },
                _ => {
                    let mask = self.kernel.threads_mut().list[cur].restore_mask.take();
                    if !self.enter_handler(sig, info, act, mask) {
                        // no room for the frame: Linux forces SIGSEGV, which kills
                        return Some(Outcome::Signaled {
                            signal: 11,
                            core: true,
                        });
                    }
                    if self.signal_entered(obs) == Control::Stop {
                        return Some(Outcome::Stopped);
                    }
                }
            }
        }
        None
    }

    /// Completes the hart of the thread `clone` just added (it resumes at `next` with the
    /// caller's FP state) and tells the observer nothing yet: it has not run.
    pub(super) fn complete_child(&mut self, next: u64) {
        let (f, fflags, frm) = (self.f, self.fflags, self.frm);
        let threads = self.kernel.threads_mut();
        if let Some(t) = threads.list.last_mut() {
            t.hart.f = f;
            t.hart.fflags = fflags;
            t.hart.frm = frm;
            t.hart.pc = next;
            t.hart.block_start = next;
        }
        // more than one thread now: the quantum counts from here
        if self.sched.slice_end == u64::MAX {
            self.sched.slice_end = self
                .instret
                .saturating_add(self.traps)
                .saturating_add(self.sched.quantum);
        }
    }
}
