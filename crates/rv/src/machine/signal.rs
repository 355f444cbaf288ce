//! Signal delivery on the hart (docs/machine.md, "Signals"): the Linux riscv64 signal frame,
//! entering a handler (on the alternate stack when asked), `rt_sigreturn`, and the
//! synchronous signals of faults.

use super::{FaultKind, Machine, SIGFRAME_BYTES, UC, UC_MCONTEXT, UC_SIGMASK};
use crate::kernel::signals::{siginfo_bytes, SA_ONSTACK, SA_RESETHAND};
use crate::kernel::threads::{AltStack, SigInfo};
use crate::kernel::{SigAction, SA_NODEFER};

/// `uc_stack` in the ucontext: ss_sp, ss_flags, ss_size.
const UC_STACK: usize = 16;
const SS_ONSTACK: u32 = 1;
const SS_DISABLE: u32 = 2;
const SS_AUTODISARM: u32 = 1 << 31;

/// The signal, `si_code` and `si_addr` Linux sends for a fault of kind `kind` at `pc`;
/// `mapped` tells whether an address is mapped (SEGV_MAPERR vs SEGV_ACCERR).
pub(super) fn fault_signal(
    kind: FaultKind,
    pc: u64,
    mapped: impl Fn(u64) -> bool,
) -> (u64, SigInfo) {
    let info = |code: i32, addr: u64| SigInfo {
        code,
        word16: addr,
        word24: 0,
    };
    match kind {
        FaultKind::IllegalInstruction => (4, info(1, pc)), // ILL_ILLOPC
        FaultKind::Breakpoint => (5, info(1, pc)),         // TRAP_BRKPT
        FaultKind::MisalignedAtomic(a) => (7, info(1, a)), // BUS_ADRALN
        FaultKind::PastEndOfFile(a) => (7, info(2, a)),    // BUS_ADRERR
        FaultKind::FetchAccess(a) | FaultKind::LoadAccess(a) | FaultKind::StoreAccess(a) => {
            // SEGV_MAPERR: nothing mapped there; SEGV_ACCERR: mapped without the permission
            (11, info(if mapped(a) { 2 } else { 1 }, a))
        }
    }
}

impl Machine {
    /// Delivers the signal of fault `kind` at `pc` to the guest's handler if it has one it
    /// does not block; returns whether it did (then `self.pc` is the handler). Otherwise the
    /// fault ends the run, as Linux's forced signal would.
    #[cold]
    pub(super) fn deliver_fault(&mut self, kind: FaultKind, pc: u64) -> bool {
        let kind = self.refine_kind(kind);
        let (sig, info) = fault_signal(kind, pc, |a| self.mem.perm_at(a) != 0);
        let act = self.kernel.action(sig);
        let blocked = self.kernel.sigmask() & (1 << (sig - 1)) != 0;
        if act.handler <= 1 || blocked {
            return false;
        }
        self.pc = pc;
        self.enter_handler(sig, info, act, None)
    }

    /// Pushes a Linux riscv64 signal frame (siginfo, then a ucontext holding every register,
    /// the mask `frame_mask` or the thread's, and its alternate stack) and enters `act`'s
    /// handler with `a0` = `sig`, `a1` = &siginfo, `a2` = &ucontext and `ra` = the
    /// rt_sigreturn trampoline; the frame resumes at `self.pc`. Returns false, changing
    /// nothing, when the frame cannot be written (or would overflow the alternate stack).
    pub(super) fn enter_handler(
        &mut self,
        sig: u64,
        info: SigInfo,
        act: SigAction,
        frame_mask: Option<u64>,
    ) -> bool {
        let alt = self.kernel.altstack();
        let sp = self.x[2];
        let on_alt = alt.contains(sp);
        let base = if act.flags & SA_ONSTACK != 0 && alt.size != 0 && !on_alt {
            alt.sp + alt.size
        } else {
            sp
        };
        let Some(frame) = base.checked_sub(SIGFRAME_BYTES).map(|f| f & !15) else {
            return false;
        };
        if (on_alt || base != sp) && frame < alt.sp {
            return false; // the alternate stack overflowed: Linux forces SIGSEGV
        }
        let mask = frame_mask.unwrap_or(self.kernel.sigmask());
        let mut f = [0u8; SIGFRAME_BYTES as usize];
        let put = |f: &mut [u8], at: usize, v: &[u8]| f[at..at + v.len()].copy_from_slice(v);
        put(&mut f, 0, &siginfo_bytes(sig, info));
        // ucontext: uc_stack (the alternate stack as it was), the mask, the registers
        let ss_flags = if on_alt {
            SS_ONSTACK
        } else if alt.size == 0 {
            SS_DISABLE
        } else {
            0
        } | if alt.autodisarm { SS_AUTODISARM } else { 0 };
        put(&mut f, UC + UC_STACK, &alt.sp.to_le_bytes());
        put(&mut f, UC + UC_STACK + 8, &ss_flags.to_le_bytes());
        put(&mut f, UC + UC_STACK + 16, &alt.size.to_le_bytes());
        put(&mut f, UC + UC_SIGMASK, &mask.to_le_bytes());
        put(&mut f, UC + UC_MCONTEXT, &self.pc.to_le_bytes());
        for r in 1..32 {
            put(&mut f, UC + UC_MCONTEXT + 8 * r, &self.x[r].to_le_bytes());
        }
        let fp = UC + UC_MCONTEXT + 256;
        for r in 0..32 {
            put(&mut f, fp + 8 * r, &self.f[r].to_le_bytes());
        }
        let fcsr = u32::from(self.fflags) | (u32::from(self.frm) << 5);
        put(&mut f, fp + 256, &fcsr.to_le_bytes());
        if self.mem.write_bytes(frame, &f).is_err() {
            return false;
        }
        self.check_code_epoch();
        if base != sp && alt.autodisarm {
            self.kernel.set_altstack(AltStack::default());
        }
        let mut new_mask = mask | act.mask;
        if act.flags & SA_NODEFER == 0 {
            new_mask |= 1 << (sig - 1);
        }
        self.kernel.set_sigmask(new_mask);
        if act.flags & SA_RESETHAND != 0 {
            self.kernel.set_action(sig, SigAction::default());
        }
        self.x[10] = sig;
        self.x[11] = frame;
        self.x[12] = frame + UC as u64;
        self.x[2] = frame;
        self.x[1] = crate::elf::SIGRETURN_TRAMPOLINE;
        self.pc = act.handler & !1; // through sepc, whose bit 0 is zero (see `pc`)
        self.reservation = None;
        self.sched.delivered += 1;
        true
    }

    /// rt_sigreturn: restores the registers, the FP state, the signal mask and the alternate
    /// stack from the frame at `sp` (where [`Machine::enter_handler`] put it) and returns the
    /// pc to resume at; `None` if the frame cannot be read.
    pub(super) fn sigreturn(&mut self) -> Option<u64> {
        let sp = self.x[2];
        let mut f = [0u8; SIGFRAME_BYTES as usize];
        self.mem.read_bytes(sp, &mut f).ok()?;
        let word = |at: usize| u64::from_le_bytes(f[at..at + 8].try_into().unwrap_or([0; 8]));
        let pc = word(UC + UC_MCONTEXT);
        for r in 1..32 {
            self.x[r] = word(UC + UC_MCONTEXT + 8 * r);
        }
        let fp = UC + UC_MCONTEXT + 256;
        for r in 0..32 {
            self.f[r] = word(fp + 8 * r);
        }
        let fcsr = word(fp + 256) as u32;
        self.fflags = (fcsr & 0x1f) as u8;
        self.frm = ((fcsr >> 5) & 7) as u8;
        self.kernel.set_sigmask(word(UC + UC_SIGMASK));
        // the alternate stack as the frame recorded it (Linux's restore_altstack; a value
        // it would refuse, while on that stack, is ignored)
        let ss_flags = word(UC + UC_STACK + 8) as u32;
        let (ss_sp, ss_size) = (word(UC + UC_STACK), word(UC + UC_STACK + 16));
        if !self.kernel.altstack().contains(self.x[2]) {
            let restored = if ss_flags & SS_DISABLE != 0 || ss_size == 0 {
                AltStack::default()
            } else {
                AltStack {
                    sp: ss_sp,
                    size: ss_size,
                    autodisarm: ss_flags & SS_AUTODISARM != 0,
                }
            };
            if restored.size == 0 || restored.sp.checked_add(restored.size).is_some() {
                self.kernel.set_altstack(restored);
            }
        }
        self.reservation = None;
        Some(pc & !1) // through sepc, whose bit 0 is zero (see `pc`)
    }
}
