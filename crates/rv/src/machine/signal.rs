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
/// The extension-context header in the machine context (`sc_extdesc.hdr`: magic, size),
/// after the FP area's reserved word; Linux chains `struct __riscv_ctx_hdr`s from it.
const EXT_HDR: usize = UC + UC_MCONTEXT + 256 + 520;
/// `RISCV_V_MAGIC`: the vector context (`struct __riscv_v_ext_state`: vstart, vl, vtype,
/// vcsr, vlenb, datap; the registers follow it).
const V_MAGIC: u32 = 0x5346_5457;
/// Bytes of `struct __sc_riscv_v_state`.
const V_STATE: usize = 48;

/// The bytes a vector context takes in a frame (its header, its state and `vregs`), as
/// Linux's `riscv_v_sc_size`.
fn v_context_bytes(vregs: usize) -> usize {
    8 + V_STATE + vregs
}

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
    /// the mask `frame_mask` or the thread's, its alternate stack, and after it the vector
    /// state if the thread has used its unit) and enters `act`'s
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
        // a thread that has used its vector unit gets its state after the ucontext (Linux's
        // `save_v_state`), then the END header
        let vregs = self.v.registers().len();
        let bytes = if self.v.used() {
            (SIGFRAME_BYTES as usize + v_context_bytes(vregs) + 8).next_multiple_of(16)
        } else {
            SIGFRAME_BYTES as usize
        };
        let Some(frame) = base.checked_sub(bytes as u64).map(|f| f & !15) else {
            return false;
        };
        if (on_alt || base != sp) && frame < alt.sp {
            return false; // the alternate stack overflowed: Linux forces SIGSEGV
        }
        let mask = frame_mask.unwrap_or(self.kernel.sigmask());
        let mut f = vec![0u8; bytes];
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
        if self.v.used() {
            let size = v_context_bytes(vregs) as u32;
            put(&mut f, EXT_HDR, &V_MAGIC.to_le_bytes());
            put(&mut f, EXT_HDR + 4, &size.to_le_bytes());
            let state = EXT_HDR + 8;
            let data = state + V_STATE;
            let v = &self.v;
            let words = [v.vstart, v.vl, v.vtype, v.vcsr(), u64::from(v.vlenb())];
            for (i, w) in words.iter().chain([&(frame + data as u64)]).enumerate() {
                put(&mut f, state + 8 * i, &w.to_le_bytes());
            }
            put(&mut f, data, v.registers()); // the END header after it stays zero
        }
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
            // as Linux: the handler goes back to SIG_DFL, the flags and mask stay
            self.kernel.set_action(sig, SigAction { handler: 0, ..act });
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

    /// rt_sigreturn: restores the registers, the FP and vector state, the signal mask and the
    /// alternate stack from the frame at `sp` (where [`Machine::enter_handler`] put it) and
    /// returns the pc to resume at; `None`, changing no register, if the frame cannot be read
    /// or its extension context is one Linux refuses.
    pub(super) fn sigreturn(&mut self) -> Option<u64> {
        let sp = self.x[2];
        let mut f = [0u8; SIGFRAME_BYTES as usize];
        self.mem.read_bytes(sp, &mut f).ok()?;
        let word = |at: usize| u64::from_le_bytes(f[at..at + 8].try_into().unwrap_or([0; 8]));
        let pc = word(UC + UC_MCONTEXT);
        let fp = UC + UC_MCONTEXT + 256;
        // the extension contexts, checked as Linux's `restore_sigcontext` does before any
        // register changes: a zero reserved word, a vector context only if the thread has
        // used its unit, of its exact size, then the END header
        let reserved = word(EXT_HDR - 8) >> 32;
        let (magic, size) = (word(EXT_HDR) as u32, (word(EXT_HDR) >> 32) as usize);
        let vector = match magic {
            0 if reserved == 0 && size == 0 => None,
            V_MAGIC
                if reserved == 0
                    && self.v.used()
                    && size == v_context_bytes(self.v.registers().len()) =>
            {
                let mut state = [0u8; V_STATE + 8];
                self.mem
                    .read_bytes(sp + EXT_HDR as u64 + 8, &mut state[..V_STATE])
                    .ok()?;
                let end = sp + (EXT_HDR + size) as u64;
                self.mem.read_bytes(end, &mut state[V_STATE..]).ok()?;
                let w = |i: usize| {
                    u64::from_le_bytes(state[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]))
                };
                if w(6) != 0 {
                    return None; // no END header
                }
                // the registers from wherever `datap` points, as Linux reads them
                let mut regs = vec![0u8; self.v.registers().len()];
                self.mem.read_bytes(w(5), &mut regs).ok()?;
                Some(([w(0), w(1), w(2), w(3)], regs))
            }
            _ => return None,
        };
        if let Some((state, regs)) = vector {
            self.v.restore(state, &regs);
        }
        for r in 1..32 {
            self.x[r] = word(UC + UC_MCONTEXT + 8 * r);
        }
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
