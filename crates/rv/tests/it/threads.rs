//! Threads and signals on the machine, checked on programs built as their users build them
//! (tests/fixtures/threads: a pthread ring with timers and signals, an OpenMP loop, C++
//! `std::async`/`std::thread`, a signals probe, a deadlock, a thread bomb): output identical
//! to qemu-user's, repeatable runs, per-thread counts that sum to the run's, and both engines
//! agreeing with switches landing inside blocks.

use outcrop_rv::elf::{load, Program};
use outcrop_rv::kernel::KernelConfig;
use outcrop_rv::{Control, Engine, Machine, Observer, Outcome};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A writer the test can read back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/threads")
        .join(name)
}

/// The fixture `name` loaded deterministically, its stdout captured.
fn machine(name: &str) -> (Machine, Shared) {
    machine_args(name, &[])
}

fn machine_args(name: &str, args: &[&str]) -> (Machine, Shared) {
    let elf = std::fs::read(fixture(name)).unwrap();
    let out = Shared::default();
    let kernel = KernelConfig {
        stdout: Box::new(out.clone()),
        ..KernelConfig::silent(format!("/{name}").into())
    };
    let program = Program {
        elf: &elf,
        args: std::iter::once(name)
            .chain(args.iter().copied())
            .map(Into::into)
            .collect(),
        env: vec![],
        memory_limit: 1 << 30,
        isa: outcrop_rv::inst::Isa::ALL,
    };
    let mut m = load(program, kernel).unwrap();
    m.max_insns = 2_000_000_000;
    (m, out)
}

/// What qemu-user printed, then `status N`.
fn qemu(name: &str) -> String {
    std::fs::read_to_string(fixture(&format!("{name}.qemu"))).unwrap()
}

/// Every observable of a run: output, status, instructions, per-thread counts and switches.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    text: String,
    outcome: Outcome,
    instret: u64,
    threads: Vec<(u32, u64, u64)>,
    switches: u64,
}

fn run_with(name: &str, set: impl FnOnce(&mut Machine), obs: &mut impl Observer) -> Run {
    let (mut m, out) = machine(name);
    set(&mut m);
    let outcome = m.run(obs);
    m.kernel.flush().unwrap();
    let status = outcome
        .exit_status()
        .unwrap_or_else(|| panic!("{name}: {outcome:?}"));
    let text =
        String::from_utf8(out.0.lock().unwrap().clone()).unwrap() + &format!("status {status}\n");
    let stats = m.thread_stats();
    let sum: u64 = stats.iter().map(|s| s.instructions).sum();
    assert_eq!(
        sum, m.instret,
        "{name}: per-thread instructions sum to the run's"
    );
    Run {
        text,
        outcome,
        instret: m.instret,
        threads: stats
            .iter()
            .map(|s| (s.index, s.instructions, s.switches))
            .collect(),
        switches: m.context_switches(),
    }
}

fn run(name: &str) -> Run {
    run_with(name, |_| {}, &mut ())
}

#[test]
fn threaded_programs_print_what_qemu_prints() {
    for name in ["tsig", "omp", "cppthreads"] {
        let r = run(name);
        assert_eq!(r.text, qemu(name), "{name}");
        assert!(
            r.threads.len() > 2,
            "{name} ran {} threads",
            r.threads.len()
        );
        assert!(r.switches > 0);
    }
}

#[test]
fn the_signals_probe_prints_what_qemu_prints_and_dies_of_sigusr1() {
    let r = run("signals");
    assert_eq!(r.text, qemu("signals"));
    assert_eq!(
        r.outcome,
        Outcome::Signaled {
            signal: 10,
            core: false
        }
    );
}

#[test]
fn repeated_runs_are_identical() {
    for name in ["tsig", "cppthreads"] {
        assert_eq!(run(name), run(name), "{name}");
    }
}

#[test]
fn schedule_seeds_change_the_interleaving_not_the_output() {
    let seeded = |seed: u64| run_with("tsig", |m| m.set_schedule(20_000, Some(seed)), &mut ());
    let (a, b, a2) = (seeded(1), seeded(2), seeded(1));
    assert_eq!(a, a2, "the same seed replays the same run");
    assert_eq!(a.text, b.text);
    assert_ne!(
        (a.instret, &a.threads),
        (b.instret, &b.threads),
        "different seeds interleave differently"
    );
}

/// Counts blocks per thread as the observer hears of them.
#[derive(Default)]
struct PerThread {
    current: u32,
    insns: std::collections::BTreeMap<u32, u64>,
    switches: u64,
}

impl Observer for PerThread {
    const BLOCKS: bool = true;
    fn block(&mut self, _start: u64, insns: u32) -> Control {
        *self.insns.entry(self.current).or_default() += u64::from(insns);
        Control::Continue
    }
    fn thread(&mut self, index: u32) -> Control {
        self.current = index;
        self.switches += 1;
        Control::Continue
    }
}

#[test]
fn both_engines_agree_with_switches_inside_blocks() {
    // a quantum prime to everything, so quanta end in the middle of blocks
    for name in ["tsig", "omp"] {
        let mut ob = PerThread::default();
        let mut os = PerThread::default();
        let blocks = run_with(name, |m| m.set_schedule(997, None), &mut ob);
        let step = run_with(
            name,
            |m| {
                m.set_schedule(997, None);
                m.engine = Engine::Step;
            },
            &mut os,
        );
        assert_eq!(blocks, step, "{name}");
        assert_eq!(ob.insns, os.insns, "{name}: the block stream per thread");
        assert_eq!(ob.switches, blocks.switches);
        // the block stream of each thread adds up to its count (blocks cut by a switch are
        // delivered whole when their thread comes back, or at its end)
        for (index, insns, _) in &blocks.threads {
            let seen = ob.insns.get(index).copied().unwrap_or(0);
            assert!(seen <= *insns && insns - seen < 64, "{name} thread {index}");
        }
    }
}

#[test]
fn a_deadlock_ends_the_run_naming_each_thread() {
    let (mut m, _) = machine("deadlock");
    assert_eq!(m.run(&mut ()), Outcome::Deadlock);
    let report = m.deadlock_report();
    assert_eq!(report.lines().count(), 2, "{report}");
    assert!(report.contains("thread 0 (tid 1000)") && report.contains("thread 1 (tid 1001)"));
    assert_eq!(report.matches("futex wait on").count(), 2, "{report}");
}

#[test]
fn a_thread_bomb_ends_at_the_thread_limit_within_bounded_memory() {
    let (mut m, _) = machine("bomb");
    m.set_max_threads(64);
    let limit = m.mem.limit_bytes();
    assert_eq!(m.run(&mut ()), Outcome::ThreadLimit);
    assert_eq!(m.kernel.threads().list.len(), 64);
    assert!(m.host_bytes() < limit * 3, "{} host bytes", m.host_bytes());
}

/// Runs `hostile MODE`: its outcome and output.
fn hostile(mode: &str) -> (Outcome, String, u64) {
    let (mut m, out) = machine_args("hostile", &[mode]);
    m.max_insns = 50_000_000;
    let o = m.run(&mut ());
    m.kernel.flush().unwrap();
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    (o, text, m.signals_delivered())
}

#[test]
fn signals_to_self_in_a_loop_and_nested_handlers_run_to_the_end() {
    let (o, text, delivered) = hostile("loop");
    assert_eq!((o, text.as_str()), (Outcome::Exited(0), "handled 100000\n"));
    assert_eq!(delivered, 100_000);
    let (o, text, _) = hostile("nested");
    assert_eq!((o, text.as_str()), (Outcome::Exited(0), "chain 21\n"));
}

#[test]
fn an_overflowing_alternate_stack_and_a_corrupt_frame_kill_only_the_guest() {
    // Linux (not qemu-user) checks that a frame fits the alternate stack it is on
    let (o, text, _) = hostile("altoverflow");
    assert_eq!(
        o,
        Outcome::Signaled {
            signal: 11,
            core: true
        },
        "{text}"
    );
    let (o, _, _) = hostile("badframe");
    match o {
        Outcome::Fault(f) => assert_eq!(f.kind, outcrop_rv::FaultKind::LoadAccess(0x10)),
        o => panic!("{o:?}"),
    }
}

mod hostile {
    //! System calls from a guest that means harm (or is wrong), at the kernel layer.
    use outcrop_rv::kernel::{Kernel, KernelConfig, SyscallOutcome, Wait};
    use outcrop_rv::memory::{perm, Memory};

    const DATA: u64 = 0x10_0000;

    fn kernel() -> (Kernel, Memory) {
        let mut mem = Memory::new(64 << 20);
        mem.map(DATA, 0x4000, perm::R | perm::W).unwrap();
        let k = Kernel::new(
            KernelConfig::silent("/p".into()),
            DATA + 0x10_0000,
            64 << 20,
        );
        (k, mem)
    }

    fn call(k: &mut Kernel, mem: &mut Memory, nr: u64, a: &[u64]) -> (SyscallOutcome, i64) {
        let mut x = [0u64; 32];
        x[17] = nr;
        x[10..10 + a.len()].copy_from_slice(a);
        let o = k.syscall(mem, &mut x, 0);
        (o, x[10] as i64)
    }

    const FUTEX: u64 = 98;

    #[test]
    fn futex_on_bad_addresses_is_an_error_not_a_wait() {
        let (mut k, mut mem) = kernel();
        assert_eq!(
            call(&mut k, &mut mem, FUTEX, &[DATA + 2, 0, 0]).1,
            -22,
            "misaligned"
        );
        assert_eq!(
            call(&mut k, &mut mem, FUTEX, &[0xdead_0000, 0, 0]).1,
            -14,
            "unmapped"
        );
        assert_eq!(
            call(&mut k, &mut mem, FUTEX, &[DATA, 0, 1]).1,
            -11,
            "value changed"
        );
        // priority inheritance: the word names its owner; a gone owner's lock is taken with
        // OWNER_DIED; unlock frees it; requeueing onto a PI futex is as a kernel without it
        let word = DATA + 0x100;
        mem.store_u32(word, 0).unwrap();
        assert_eq!(call(&mut k, &mut mem, FUTEX, &[word, 6, 0]).1, 0, "LOCK_PI");
        assert_eq!(mem.load_u32(word).unwrap(), 1000);
        assert_eq!(
            call(&mut k, &mut mem, FUTEX, &[word, 6, 0]).1,
            -35,
            "EDEADLK"
        );
        assert_eq!(
            call(&mut k, &mut mem, FUTEX, &[word, 7, 0]).1,
            0,
            "UNLOCK_PI"
        );
        assert_eq!(mem.load_u32(word).unwrap(), 0);
        assert_eq!(
            call(&mut k, &mut mem, FUTEX, &[word, 7, 0]).1,
            -1,
            "not the owner"
        );
        mem.store_u32(word, 1234).unwrap();
        assert_eq!(
            call(&mut k, &mut mem, FUTEX, &[word, 8, 0]).1,
            0,
            "TRYLOCK_PI"
        );
        assert_eq!(mem.load_u32(word).unwrap(), 1000 | 0x4000_0000);
        assert_eq!(call(&mut k, &mut mem, FUTEX, &[word, 11, 0]).1, -38);
        // CLOCK_REALTIME with plain FUTEX_WAIT
        assert_eq!(call(&mut k, &mut mem, FUTEX, &[DATA, 256, 0]).1, -38);
        // a wait with a zero bitset
        assert_eq!(call(&mut k, &mut mem, FUTEX, &[DATA, 9, 0, 0, 0, 0]).1, -22);
        assert_eq!(k.threads().cur().wait, Wait::Runnable);
    }

    #[test]
    fn futex_wait_blocks_and_wake_op_computes_and_wakes() {
        let (mut k, mut mem) = kernel();
        let (o, _) = call(&mut k, &mut mem, FUTEX, &[DATA, 0, 0]);
        assert_eq!(o, SyscallOutcome::Reschedule);
        assert!(matches!(
            k.threads().cur().wait,
            Wait::Futex { addr: DATA, .. }
        ));
        // FUTEX_WAKE_OP: *uaddr2 += 5 (op ADD, oparg 5), wake uaddr if old == 0 (cmp EQ 0)
        mem.store_u32(DATA + 8, 7).unwrap();
        let encoded = (1u64 << 28) | (5 << 12);
        let (_, woken) = call(
            &mut k,
            &mut mem,
            FUTEX,
            &[DATA + 4, 5, 1, 1, DATA + 8, encoded],
        );
        assert_eq!(woken, 0, "nobody waits on either word");
        assert_eq!(mem.load_u32(DATA + 8).unwrap(), 12);
        // the blocked (sole) thread is woken by a plain wake of its word
        assert_eq!(call(&mut k, &mut mem, FUTEX, &[DATA, 1, 10]).1, 1);
        assert_eq!(k.threads().cur().wait, Wait::Runnable);
    }

    #[test]
    fn signals_reach_only_this_process() {
        let (mut k, mut mem) = kernel();
        // pid 1 is an init outside the machine: it ignores the signal, as Linux's init
        // ignores one it has no handler for; nothing here is touched
        assert_eq!(
            call(&mut k, &mut mem, 129, &[1, 9]).1,
            0,
            "kill(1, SIGKILL)"
        );
        assert_eq!(k.threads().cur().wait, Wait::Runnable);
        assert_eq!(
            call(&mut k, &mut mem, 129, &[2, 9]).1,
            -3,
            "kill(2, SIGKILL)"
        );
        assert_eq!(
            call(&mut k, &mut mem, 129, &[u64::MAX, 15]).1,
            -3,
            "kill(-1, SIGTERM)"
        );
        assert_eq!(call(&mut k, &mut mem, 129, &[1000, 65]).1, -22, "signal 65");
        assert_eq!(
            call(&mut k, &mut mem, 131, &[1000, 4242, 10]).1,
            -3,
            "no such thread"
        );
        assert_eq!(
            call(&mut k, &mut mem, 131, &[77, 1000, 10]).1,
            -3,
            "another process"
        );
        assert_eq!(
            call(&mut k, &mut mem, 129, &[1000, 0]).1,
            0,
            "probe of itself"
        );
    }

    #[test]
    fn masks_and_stacks_are_checked() {
        let (mut k, mut mem) = kernel();
        mem.store_u64(DATA, u64::MAX).unwrap();
        assert_eq!(call(&mut k, &mut mem, 135, &[2, DATA, DATA + 8, 8]).1, 0);
        call(&mut k, &mut mem, 135, &[2, 0, DATA + 8, 8]);
        let mask = mem.load_u64(DATA + 8).unwrap();
        assert_eq!(
            mask & ((1 << 8) | (1 << 18)),
            0,
            "SIGKILL and SIGSTOP never blocked"
        );
        assert_eq!(
            call(&mut k, &mut mem, 135, &[2, DATA, 0, 99]).1,
            -22,
            "sigsetsize"
        );
        assert_eq!(
            call(&mut k, &mut mem, 134, &[10, 0, 0, 99]).1,
            -22,
            "sigsetsize"
        );
        // sigaltstack: too small, bad flags, wrapping
        for (sp, flags, size, want) in [
            (DATA, 0u32, 100u64, -12),
            (DATA, 7, 8192, -22),
            (u64::MAX - 10, 0, 8192, -22),
            (DATA, 0, 8192, 0),
        ] {
            let mut b = [0u8; 24];
            b[..8].copy_from_slice(&sp.to_le_bytes());
            b[8..12].copy_from_slice(&flags.to_le_bytes());
            b[16..].copy_from_slice(&size.to_le_bytes());
            mem.write_bytes(DATA + 64, &b).unwrap();
            assert_eq!(call(&mut k, &mut mem, 132, &[DATA + 64, 0]).1, want);
        }
    }

    #[test]
    fn clone_starts_processes_and_threads_and_refuses_shared_memory_between_processes() {
        let (mut k, mut mem) = kernel();
        let (o, pid) = call(&mut k, &mut mem, 220, &[17, 0, 0, 0, 0]);
        assert_eq!(
            o,
            SyscallOutcome::Forked(outcrop_rv::kernel::Fork {
                child: 1001,
                vfork: false,
                child_tid: None
            }),
            "fork"
        );
        assert_eq!(pid, 1001);
        assert_eq!(k.processes().list.len(), 2);
        assert_eq!(
            call(&mut k, &mut mem, 220, &[0x100 | 17, 0, 0, 0, 0]).1,
            -22,
            "a process sharing memory without vfork"
        );
        assert_eq!(
            call(&mut k, &mut mem, 220, &[0x400 | 17, 0, 0, 0, 0]).1,
            -22,
            "a process sharing descriptors"
        );
        assert_eq!(
            call(&mut k, &mut mem, 435, &[DATA, 8]).1,
            -22,
            "clone3 size"
        );
        let (o, tid) = call(
            &mut k,
            &mut mem,
            220,
            &[0x3d0f00, DATA + 0x1000, DATA, 0, DATA + 4],
        );
        assert_eq!((o, tid), (SyscallOutcome::Spawned, 1002));
        assert_eq!(mem.load_u32(DATA).unwrap(), 1002, "PARENT_SETTID");
        assert_eq!(k.threads().list.len(), 2);
    }

    #[test]
    fn system_v_queues_and_semaphores_follow_linux() {
        let (mut k, mut mem) = kernel();
        // a queue: create, refuse EXCL twice, send, receive by type, E2BIG, ENOMSG, remove
        let q = call(&mut k, &mut mem, 186, &[42, 0o1000 | 0o2000 | 0o666]).1;
        assert!(q > 0);
        assert_eq!(call(&mut k, &mut mem, 186, &[42, 0o1000 | 0o2000]).1, -17);
        assert_eq!(call(&mut k, &mut mem, 186, &[42, 0]).1, q);
        assert_eq!(call(&mut k, &mut mem, 186, &[43, 0]).1, -2);
        mem.store_u64(DATA, 5).unwrap();
        mem.write_bytes(DATA + 8, b"hello").unwrap();
        assert_eq!(call(&mut k, &mut mem, 189, &[q as u64, DATA, 5, 0]).1, 0);
        mem.store_u64(DATA, 0).unwrap(); // type 0 is not a type
        assert_eq!(call(&mut k, &mut mem, 189, &[q as u64, DATA, 5, 0]).1, -22);
        assert_eq!(
            call(&mut k, &mut mem, 188, &[q as u64, DATA, 2, 0, 0]).1,
            -7
        );
        assert_eq!(
            call(&mut k, &mut mem, 188, &[q as u64, DATA, 2, 9, 0o4000]).1,
            -42
        );
        assert_eq!(
            call(&mut k, &mut mem, 188, &[q as u64, DATA, 2, 5, 0o10000]).1,
            2
        );
        assert_eq!(mem.load_u64(DATA).unwrap(), 5);
        // an empty queue waits (the call runs again later)
        let (o, _) = call(&mut k, &mut mem, 188, &[q as u64, DATA, 64, 0, 0]);
        assert_eq!(o, SyscallOutcome::Retry);
        k.threads_mut().list[0].wait = Wait::Runnable;
        assert_eq!(call(&mut k, &mut mem, 187, &[q as u64, 0, 0]).1, 0);
        assert_eq!(call(&mut k, &mut mem, 187, &[q as u64, 0, 0]).1, -22);
        // a semaphore set: nsems bounds, semop all or nothing, IPC_NOWAIT, GETVAL
        assert_eq!(call(&mut k, &mut mem, 190, &[0, 0, 0o1000]).1, -22);
        assert_eq!(call(&mut k, &mut mem, 190, &[0, 100_000, 0o1000]).1, -22);
        let s = call(&mut k, &mut mem, 190, &[0, 2, 0o1000 | 0o600]).1 as u64;
        let sop = |num: u16, op: i16, flg: i16| {
            [num.to_le_bytes(), op.to_le_bytes(), flg.to_le_bytes()].concat()
        };
        mem.write_bytes(DATA, &[sop(0, 2, 0), sop(1, 1, 0)].concat())
            .unwrap();
        assert_eq!(call(&mut k, &mut mem, 193, &[s, DATA, 2]).1, 0);
        mem.write_bytes(DATA, &[sop(0, -1, 0), sop(1, -2, 0o4000)].concat())
            .unwrap();
        assert_eq!(
            call(&mut k, &mut mem, 193, &[s, DATA, 2]).1,
            -11,
            "none applied"
        );
        assert_eq!(call(&mut k, &mut mem, 191, &[s, 0, 12]).1, 2);
        assert_eq!(call(&mut k, &mut mem, 191, &[s, 1, 12]).1, 1);
        assert_eq!(call(&mut k, &mut mem, 191, &[s, 1, 16, 40_000]).1, -34);
        assert_eq!(call(&mut k, &mut mem, 191, &[s, 0, 0]).1, 0);
    }
}
