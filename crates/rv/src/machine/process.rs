//! Processes on the machine's side (docs/machine.md, "Processes"): each process has its own
//! address space and its own decoded and compiled code ([`Space`]); the running process's
//! are the machine's fields, the others' are parked here and swapped in with the kernel's
//! state ([`crate::kernel::process`]) when the scheduler picks one of their threads.
//!
//! `fork` copies the caller's memory page by page; `execve` builds a new address space from
//! the program (and its interpreter) and drops the old one; a process that ends drops its
//! own. The memory limit holds for all processes together: the running one may map what the
//! others leave.

use super::*;
use crate::kernel::{ExecRequest, ExitStatus, Fork};

/// A process's address space and the code the machine decoded and compiled from it.
pub(super) struct Space {
    mem: Memory,
    icache: ICache,
    blocks: blocks::BlockCache,
    jit: Option<Box<blocks::jit::Tier>>,
    mappings_seen: usize,
}

impl Machine {
    /// An empty decoded-code cache for address space `mem`: the first process's budget
    /// shared by `--max-processes` (at least 64 pages, 2 MiB), so every other process
    /// together holds at most as much decoded code as the first.
    fn new_space(&self, mem: Memory) -> Space {
        let share = self.kernel.processes().max.max(1);
        let max_pages = (decoded_pages_cap(self.kernel.memory_limit()) / share).max(64);
        Space {
            mem,
            icache: ICache::new(max_pages),
            blocks: blocks::BlockCache::new(max_pages as u64 * DECODED_PAGE_BYTES),
            jit: None,
            mappings_seen: 0,
        }
    }

    fn swap_space(&mut self, s: &mut Space) {
        // the shared pages' frames go with the running process (`memory::shared`)
        self.mem.release_shared();
        std::mem::swap(&mut self.mem, &mut s.mem);
        self.mem.take_shared();
        std::mem::swap(&mut self.icache, &mut s.icache);
        std::mem::swap(&mut self.blocks, &mut s.blocks);
        std::mem::swap(&mut self.jit, &mut s.jit);
        std::mem::swap(&mut self.mappings_seen, &mut s.mappings_seen);
    }

    /// The running process may map what the others leave of the memory limit.
    fn set_memory_budget(&mut self) {
        let others: u64 = self.spaces.iter().map(|(_, s)| s.mem.mapped_pages()).sum();
        let limit = self.kernel.memory_limit();
        self.mem
            .set_limit_bytes(limit.saturating_sub(others.saturating_mul(PAGE_SIZE)));
    }

    /// The parked processes' compiling tiers.
    pub(super) fn parked_tiers(&self) -> impl Iterator<Item = &Box<blocks::jit::Tier>> {
        self.spaces.iter().filter_map(|(_, s)| s.jit.as_ref())
    }

    /// Keeps what the compiling tier of an address space going away did.
    fn retire(&mut self, space: Space) {
        if let Some(j) = &space.jit {
            self.jit_retired
                .get_or_insert_with(Default::default)
                .merge(&j.stats);
        }
    }

    /// Host bytes of the parked processes' memory and code.
    pub(super) fn parked_host_bytes(&self) -> u64 {
        self.spaces
            .iter()
            .map(|(_, s)| {
                s.mem.host_bytes()
                    + s.blocks.host_bytes()
                    + s.jit.as_ref().map_or(0, |j| j.code_bytes())
                    + (s.icache.slots.len() as u64 + 1) * DECODED_PAGE_BYTES
            })
            .sum()
    }

    /// Whether the guest ever had more than one process (the run then ends when all have).
    pub(super) fn multiprocess(&self) -> bool {
        self.kernel.processes().created > 1
    }

    /// Makes `pid` the running process: the kernel's state and the machine's address space
    /// and code. The running thread's registers must be saved already. `false` if `pid` is
    /// not a parked live process.
    pub(super) fn switch_process<O: Observer>(&mut self, pid: u32, obs: &mut O) -> bool {
        let cur = self.kernel.current_pid();
        if pid == cur {
            return true;
        }
        let Some(i) = self.spaces.iter().position(|(p, _)| *p == pid) else {
            return false;
        };
        // compiled code's counts belong to the space they ran in
        self.drain_counts(obs);
        if !self.kernel.load_process(pid) {
            return false;
        }
        let (_, mut space) = self.spaces.swap_remove(i);
        self.swap_space(&mut space);
        self.spaces.push((cur, space));
        self.set_memory_budget();
        true
    }

    /// Tells `obs` that the running process, or its program, changed since it last heard
    /// ([`Observer::process`]), after the counts compiled code kept for the one before.
    pub(super) fn note_process<O: Observer>(&mut self, obs: &mut O) -> Control {
        if !O::MAPPINGS {
            // heard with the mappings only: an observer attached later (a `--range` window)
            // hears of the process and program it starts in
            return Control::Continue;
        }
        let pid = self.kernel.current_pid();
        let procs = self.kernel.processes();
        let (parent, image) = procs.get(pid).map_or((0, 0), |p| (p.ppid, p.execs));
        let from = self.announced.unwrap_or((procs.initial, 0));
        if (pid, image) == from {
            return Control::Continue;
        }
        if pid == from.0 {
            // an `execve`: the counts compiled code kept for the old program (a switch of
            // process drained them before it left, `switch_process`)
            self.drain_counts(obs);
        }
        self.announced = Some((pid, image));
        obs.process(&outcrop_events::ProcessSwitch {
            pid,
            parent,
            image,
            from_pid: from.0,
            from_image: from.1,
        })
    }

    /// Finishes a `fork` the kernel began: the child's memory is a copy of the caller's and
    /// its thread resumes at `next` with the caller's FP state. `Err(errno)` (the fork taken
    /// back) when the copy would exceed the memory limit.
    pub(super) fn complete_fork(&mut self, f: Fork, next: u64) -> Result<(), i64> {
        const ENOMEM: i64 = 12;
        let others: u64 = self.spaces.iter().map(|(_, s)| s.mem.mapped_pages()).sum();
        let pages = self.mem.mapped_pages();
        let limit_pages = self.kernel.memory_limit() / PAGE_SIZE;
        if others.saturating_add(pages.saturating_mul(2)) > limit_pages {
            self.kernel.undo_fork(f.child);
            return Err(ENOMEM);
        }
        let mut mem = self.mem.fork_copy();
        if let Some(at) = f.child_tid {
            // (a bad address is the child's problem, as on Linux: nothing is written; a
            // shared page's frame is the caller's while it runs)
            let _ = match mem.shared_at(at) {
                Some(_) => self.mem.store_u32(at, f.child),
                None => mem.store_u32(at, f.child),
            };
        }
        let (fregs, fflags, frm) = (self.f, self.fflags, self.frm);
        if let Some(t) = self.kernel.parked_thread_mut(f.child) {
            t.hart.f = fregs;
            t.hart.v = self.v.clone();
            t.hart.fflags = fflags;
            t.hart.frm = frm;
            t.hart.pc = next;
            t.hart.block_start = next;
        }
        let space = self.new_space(mem);
        self.spaces.push((f.child, space));
        self.set_memory_budget();
        // more than one thread to run now: the quantum counts from here
        if self.sched.slice_end == u64::MAX {
            self.sched.slice_end = self
                .instret
                .saturating_add(self.traps)
                .saturating_add(self.sched.quantum_len());
        }
        Ok(())
    }

    /// Loads the program of an `execve` in place of the running process's: a new address
    /// space, registers cleared, the stack holding its arguments, environment and auxiliary
    /// vector. `Err(errno)` leaves the caller as it was.
    pub(super) fn exec(&mut self, req: &ExecRequest) -> Result<u64, i64> {
        const ENOMEM: i64 = 12;
        const ENOEXEC: i64 = 8;
        let others: u64 = self.spaces.iter().map(|(_, s)| s.mem.mapped_pages()).sum();
        let budget = self
            .kernel
            .memory_limit()
            .saturating_sub(others.saturating_mul(PAGE_SIZE));
        let program = crate::elf::Program {
            elf: &req.elf,
            args: req.args.clone(),
            env: req.env.clone(),
            memory_limit: budget,
            isa: self.isa,
        };
        let interp = req
            .interp
            .as_ref()
            .map(|(path, host, elf)| crate::elf::Interp {
                path: path.clone(),
                host_path: Some(host.clone()),
                elf,
            });
        // what /proc/self/exe names: absolute, as the dynamic linker requires
        let exe = std::fs::canonicalize(&req.host_path).unwrap_or_else(|_| req.host_path.clone());
        let execfn = req.path.as_os_str();
        let image = crate::elf::exec_image(program, interp, &exe, execfn, &mut self.kernel)
            .map_err(|e| match e {
                crate::Error::OutOfMemory(_) => ENOMEM,
                _ => ENOEXEC,
            })?;
        self.kernel.commit_exec(exe, image.brk_start, image.objects);
        // the old address space and its code go now; the counts compiled code kept for the
        // observer stay
        self.blocks.keep_counts(self.jit.as_deref_mut());
        let mut space = self.new_space(image.mem);
        self.swap_space(&mut space);
        self.blocks.take_kept_counts(&mut space.blocks);
        // the block that called `execve` ends in the old program
        space.blocks.hand_over_running(&mut self.blocks);
        self.retire(space);
        self.set_memory_budget();
        self.x = [0; 32];
        self.x[2] = image.sp;
        self.f = [0; 32];
        self.v = crate::vector::VState::new(self.v.vlenb() * 8);
        self.fflags = 0;
        self.frm = 0;
        self.reservation = None;
        // (the block in progress, which the `ecall` ends, is the old program's: it is
        // reported to the observer before the switch to the new one)
        Ok(image.pc)
    }

    /// Ends the running process with `status`. `None` when another process runs now (its
    /// thread is picked by the scheduler next); `Some` with the run's outcome — the first
    /// process's status — when that was the first process: the run ends with it, as a
    /// command ends for its shell, and processes it left running are stopped (with a
    /// warning), so a daemon cannot keep a run going.
    pub(super) fn end_process<O: Observer>(
        &mut self,
        status: ExitStatus,
        obs: &mut O,
    ) -> Option<Outcome> {
        self.drain_counts(obs);
        let dead = self.kernel.current_pid();
        if dead == self.kernel.processes().initial {
            self.kernel.record_exit(status);
            let left = self.kernel.processes().live() - 1;
            if left > 0 {
                self.kernel.warn(&format!(
                    "the program exited leaving {left} process{} running; {} stopped with it",
                    if left == 1 { "" } else { "es" },
                    if left == 1 { "it was" } else { "they were" }
                ));
            }
            return Some(match status {
                ExitStatus::Exited(c) => Outcome::Exited(i32::from(c)),
                ExitStatus::Signaled { signal, core } => Outcome::Signaled { signal, core },
            });
        }
        match self.kernel.end_process(status) {
            None => Some(
                match self.kernel.processes().initial_status.unwrap_or(status) {
                    ExitStatus::Exited(c) => Outcome::Exited(i32::from(c)),
                    ExitStatus::Signaled { signal, core } => Outcome::Signaled { signal, core },
                },
            ),
            Some(next) => {
                let i = self.spaces.iter().position(|(p, _)| *p == next)?;
                let (_, mut space) = self.spaces.swap_remove(i);
                self.swap_space(&mut space);
                self.retire(space); // the dead process's memory and code go
                if let Some(i) = self.spaces.iter().position(|(p, _)| *p == dead) {
                    let (_, s) = self.spaces.swap_remove(i);
                    self.retire(s);
                }
                self.set_memory_budget();
                // nothing in the registers belongs to a live thread now
                self.sched.hart_saved = true;
                None
            }
        }
    }
}
