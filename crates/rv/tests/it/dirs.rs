//! Directory file descriptors (tests/fixtures/dirs): the `*at` calls relative to a directory
//! fd, getdents64, dup, pread/pwrite, readv and ftruncate print what they print under qemu;
//! and a directory fd stays beneath its grant when `..`, symlinks or a directory swapped for
//! a symlink mid-run try to lead it out.

use outcrop_rv::elf::{load, Program};
use outcrop_rv::kernel::{KernelConfig, Sandbox};
use outcrop_rv::{Engine, Outcome};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);
impl std::io::Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Stdin whose first read runs `swap` (the host changing the tree while the guest waits).
struct SwapOnRead(Option<Box<dyn FnOnce() + Send>>);
impl std::io::Read for SwapOnRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.0.take() {
            Some(f) => {
                f();
                buf[..3].copy_from_slice(b"go\n");
                Ok(3)
            }
            None => Ok(0),
        }
    }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dirs")
        .join(name)
}

fn run(dir: &Path, extra: &[&str], stdin: Box<dyn std::io::Read + Send>) -> (Outcome, String) {
    let elf = std::fs::read(fixture("dirs")).unwrap();
    let out = Shared::default();
    let mut sandbox = Sandbox::new();
    sandbox.allow_write(dir).unwrap();
    let kernel = KernelConfig {
        sandbox,
        deterministic: true,
        exe_path: "/dirs".into(),
        stdin,
        stdout: Box::new(out.clone()),
        stderr: Box::new(std::io::sink()),
        on_warning: Box::new(|m| panic!("unexpected warning: {m}")),
        stdio_mode: None,
    };
    let mut args: Vec<std::ffi::OsString> = vec!["dirs".into(), dir.as_os_str().to_owned()];
    args.extend(extra.iter().map(|a| a.into()));
    let program = Program {
        elf: &elf,
        args,
        env: vec![],
        memory_limit: 1 << 28,
        isa: outcrop_rv::inst::Isa::ALL,
    };
    let mut m = load(program, kernel).unwrap();
    let outcome = m.run(&mut ());
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    (outcome, text)
}

#[test]
fn directory_descriptors_behave_as_under_qemu() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, text) = run(dir.path(), &[], Box::new(std::io::empty()));
    assert_eq!(outcome, Outcome::Exited(0));
    let want = std::fs::read_to_string(fixture("dirs.qemu")).unwrap();
    assert_eq!(format!("{text}status 0\n"), want);
}

#[test]
fn a_directory_fd_stays_beneath_its_grant_when_its_directory_is_swapped_mid_run() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("granted");
    std::fs::create_dir(&dir).unwrap();
    // outside the grant: a secret next to it
    let outside = base.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("passwd"), "secret").unwrap();
    let (d, o) = (dir.clone(), outside.clone());
    let swap: Box<dyn FnOnce() + Send> = Box::new(move || {
        std::fs::rename(d.join("sub"), d.join("sub_old")).unwrap();
        std::os::unix::fs::symlink(&o, d.join("sub")).unwrap();
    });
    let (outcome, text) = run(&dir, &["swap"], Box::new(SwapOnRead(Some(swap))));
    assert_eq!(outcome, Outcome::Exited(0), "{text}");
    for line in [
        "read go: 0",
        // the fd names the directory that was opened (now sub_old)
        "openat kept.txt via sub fd: 0",
        "openat passwd via sub fd: -1 ENOENT",
        // the symlink put in its place leads out of the grant
        "openat sub/passwd via dir fd: -1 EACCES",
        "openat ../.. via sub fd: -1 EACCES",
        // `..` out of a directory fd is refused even inside the grant (stricter than Linux)
        "openat .. via sub fd: -1 EACCES",
        "mkdirat via dir fd in the symlink: -1 EACCES",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    assert!(!dir.join("sub_old/new").exists() && !outside.join("new").exists());
    assert!(dir.join("sub_old/kept.txt").exists());
}

/// Fixture `name` loaded with `args`, `dir` granted read-write as its working directory,
/// deterministic, its stdout kept; `memory_limit` bytes of guest memory.
fn in_writable_dir(
    name: &str,
    args: &[&str],
    dir: &Path,
    memory_limit: u64,
) -> (outcrop_rv::Machine, Shared) {
    let elf = std::fs::read(fixture(name)).unwrap();
    let out = Shared::default();
    let mut sandbox = Sandbox::new();
    sandbox.allow_write(dir).unwrap();
    sandbox.set_cwd(dir).unwrap();
    let kernel = KernelConfig {
        sandbox,
        deterministic: true,
        exe_path: format!("/{name}").into(),
        stdin: Box::new(std::io::empty()),
        stdout: Box::new(out.clone()),
        stderr: Box::new(std::io::sink()),
        on_warning: Box::new(|m| panic!("unexpected warning: {m}")),
        stdio_mode: None,
    };
    let mut argv: Vec<std::ffi::OsString> = vec![name.into()];
    argv.extend(args.iter().map(std::ffi::OsString::from));
    let program = Program {
        elf: &elf,
        args: argv,
        env: vec![],
        memory_limit,
        isa: outcrop_rv::inst::Isa::ALL,
    };
    (load(program, kernel).unwrap(), out)
}

#[test]
fn file_mappings_behave_as_under_qemu_and_shared_writable_ones_are_made() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.bin");
    std::fs::write(
        &file,
        (0..10_000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    for shared_write in [false, true] {
        let mut args = vec!["f.bin"];
        if shared_write {
            args.push("shared-write");
        }
        let (mut m, out) = in_writable_dir("maps", &args, dir.path(), 1 << 28);
        let outcome = m.run(&mut ());
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let want = std::fs::read_to_string(fixture("maps.qemu")).unwrap();
        if shared_write {
            assert_eq!(outcome, Outcome::Exited(0));
            assert!(
                text.ends_with(
                    "shared writable: 0\n\
                     shared read-only of a writable file: 0\n\
                     mprotect shared writable: 0\n\
                     munmap half: 0\n\
                     anonymous over it: 0\n\
                     mprotect anonymous writable: 0\n"
                ),
                "{text}"
            );
        } else {
            // it ends touching a page past the end of the file: SIGBUS, as under qemu
            let status = outcome.exit_status().unwrap();
            assert_eq!(format!("{text}status {status}\n"), want, "{outcome:?}");
        }
        // the private write never reached the file
        assert_eq!(std::fs::read(&file).unwrap()[0], 0);
    }
}

/// Writable shared mappings of a host file (`fixtures/dirs/wshared.c`, against qemu's output
/// and the file qemu leaves): the stores reach the file for `read`, `pread`, another mapping,
/// a child process, a private mapping and after `munmap`; `pwrite` reaches the mapping; bytes
/// past the file's end stay out of it; `msync`'s errors; a read-only descriptor is refused;
/// the last stores, made just before exiting, reach the file when the run ends — on every
/// engine.
#[test]
fn writable_shared_file_mappings_reach_the_file_as_under_qemu() {
    let want = std::fs::read_to_string(fixture("wshared.qemu")).unwrap();
    for engine in [Engine::Jit, Engine::Blocks, Engine::Step] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.bin");
        std::fs::write(
            &file,
            (0..5000u32)
                .map(|i| b'A' + (i % 26) as u8)
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let (mut m, out) = in_writable_dir("wshared", &["f.bin"], dir.path(), 1 << 28);
        m.engine = engine;
        let status = m.run(&mut ()).exit_status().unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let data = std::fs::read(&file).unwrap();
        let got = format!(
            "{text}status {status}\n{}\n{}\n",
            String::from_utf8_lossy(&data[..70]),
            data.len()
        );
        assert_eq!(got, want, "{engine:?}");
    }
}

/// inotify as Linux reports it (`fixtures/dirs/notify.c`, against the host kernel's events
/// through qemu): file and directory events with names, `IN_ISDIR` and cookies, the
/// directory's watch before the file's, `IN_DELETE_SELF` once the last link and descriptor
/// are gone, `IN_IGNORED`, `IN_ONESHOT`, `IN_EXCL_UNLINK`, `IN_MASK_ADD`/`IN_MASK_CREATE`,
/// merging, the overflow event, a child's operations, a blocked read woken by another
/// process, `poll`, `FIONREAD`, `fdinfo` and the calls' errors — on every engine.
#[test]
fn inotify_reports_the_guests_file_operations_as_linux() {
    prints_what_qemu_printed_on_every_engine("notify");
}

/// Fixture `name`, run without arguments in an empty writable directory on each engine,
/// prints what `name.qemu` holds (its stdout, then `status N`).
fn prints_what_qemu_printed_on_every_engine(name: &str) {
    let want = std::fs::read_to_string(fixture(&format!("{name}.qemu"))).unwrap();
    for engine in [Engine::Jit, Engine::Blocks, Engine::Step] {
        let dir = tempfile::tempdir().unwrap();
        let (mut m, out) = in_writable_dir(name, &[], dir.path(), 1 << 28);
        m.engine = engine;
        let status = m.run(&mut ()).exit_status().unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(format!("{text}status {status}\n"), want, "{engine:?}");
    }
}

/// A System V queue or semaphore set removed while a process waits on it
/// (`fixtures/dirs/sysv.c`, against qemu's output): the waiter's `msgrcv`, `msgsnd` or
/// `semop` fails with `EIDRM`, an identifier never made with `EINVAL` — on every engine.
#[test]
fn system_v_objects_removed_under_a_waiter_are_eidrm() {
    prints_what_qemu_printed_on_every_engine("sysv");
}

/// Shared file mappings as Linux keeps them (`fixtures/dirs/shared.c`, against qemu's
/// output): the guest's writes to the file show through, a truncation makes the pages past
/// the new end SIGBUS and zeroes the rest of the last page, an appended or grown file covers
/// its pages again, and a 1 GiB sparse file maps in a moment without its size in host
/// memory (it once took 1 GB and seconds, and the mapping showed stale bytes); a 96 MiB
/// dense file mapped privately is read only where touched (it was read whole when mapped),
/// and once the file is truncated its pages are SIGBUS, the guest's written copy included.
#[test]
fn shared_file_mappings_follow_the_file_as_under_qemu() {
    let dir = tempfile::tempdir().unwrap();
    let files = ["f.bin", "sparse.bin", "dense.bin"];
    let (mut m, out) = in_writable_dir("shared", &files, dir.path(), 2 << 30);
    let t = std::time::Instant::now();
    let outcome = m.run(&mut ());
    let status = outcome.exit_status().unwrap();
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    let want = std::fs::read_to_string(fixture("shared.qemu")).unwrap();
    assert_eq!(format!("{text}status {status}\n"), want, "{outcome:?}");
    assert!(
        m.mem.host_bytes() < 64 << 20,
        "{} bytes of host memory for a sparse mapping",
        m.mem.host_bytes()
    );
    assert!(
        t.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        t.elapsed()
    );
}

mod kernel_level {
    //! The machine's devices, resource limits and the other new calls, at the kernel layer.
    use outcrop_rv::kernel::{Kernel, KernelConfig};
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

    fn call(k: &mut Kernel, mem: &mut Memory, nr: u64, a: &[u64]) -> i64 {
        let mut x = [0u64; 32];
        x[17] = nr;
        x[10..10 + a.len()].copy_from_slice(a);
        k.syscall(mem, &mut x, 0);
        x[10] as i64
    }

    fn path(mem: &mut Memory, at: u64, p: &str) -> u64 {
        let mut b = p.as_bytes().to_vec();
        b.push(0);
        mem.write_bytes(at, &b).unwrap();
        at
    }

    const OPENAT: u64 = 56;
    const READ: u64 = 63;
    const WRITE: u64 = 64;
    const MMAP: u64 = 222;
    const PRLIMIT: u64 = 261;
    const AT_FDCWD: u64 = -100i64 as u64;

    /// `madvise(MADV_DONTNEED)` on private anonymous memory: the pages read as zeros
    /// afterwards (glibc's allocator relies on it), as on Linux and under qemu; other advice
    /// changes nothing.
    #[test]
    fn madvise_dontneed_zeroes_private_anonymous_pages() {
        const MADVISE: u64 = 233;
        let (mut k, mut mem) = kernel();
        mem.write_bytes(DATA, &[7; 0x4000]).unwrap();
        assert_eq!(call(&mut k, &mut mem, MADVISE, &[DATA, 0x2000, 3]), 0); // WILLNEED
        assert_eq!(mem.load_u8(DATA).unwrap(), 7);
        assert_eq!(call(&mut k, &mut mem, MADVISE, &[DATA, 0x2000, 4]), 0); // DONTNEED
        assert_eq!(mem.load_u64(DATA).unwrap(), 0);
        assert_eq!(mem.load_u64(DATA + 0x1ff8).unwrap(), 0);
        assert_eq!(mem.load_u8(DATA + 0x2000).unwrap(), 7, "past the range");
        // still mapped and writable
        mem.store_u8(DATA + 5, 1).unwrap();
        assert_eq!(mem.load_u8(DATA + 5).unwrap(), 1);
        // an unmapped range is ENOMEM, a misaligned one EINVAL
        assert_eq!(
            call(&mut k, &mut mem, MADVISE, &[DATA + 0x8000, 0x1000, 4]),
            -12
        );
        assert_eq!(call(&mut k, &mut mem, MADVISE, &[DATA + 1, 0x1000, 4]), -22);
    }

    /// FUTEX_WAKE and (CMP_)REQUEUE find each futex's key first, as Linux does: a shared
    /// futex on an unmapped page is EFAULT, any futex outside the user address space too; a
    /// private one needs only a user address.
    #[test]
    fn futex_wake_and_requeue_fault_on_addresses_linux_cannot_key() {
        const FUTEX: u64 = 98;
        const WAKE: u64 = 1;
        const REQUEUE: u64 = 3;
        const CMP_REQUEUE: u64 = 4;
        const PRIVATE: u64 = 128;
        let (mut k, mut mem) = kernel();
        let unmapped = DATA + 0x8000;
        let kernel_half = 0xffff_ffff_0000_0000;
        assert_eq!(call(&mut k, &mut mem, FUTEX, &[DATA, WAKE, 1]), 0);
        assert_eq!(call(&mut k, &mut mem, FUTEX, &[unmapped, WAKE, 1]), -14);
        assert_eq!(
            call(&mut k, &mut mem, FUTEX, &[unmapped, WAKE | PRIVATE, 1]),
            0
        );
        assert_eq!(
            call(&mut k, &mut mem, FUTEX, &[kernel_half, WAKE | PRIVATE, 1]),
            -14
        );
        for op in [REQUEUE, CMP_REQUEUE] {
            // val3 (the compared word) is 0, as the mapped word is
            let a = [DATA, op, 1, 1, unmapped, 0];
            assert_eq!(call(&mut k, &mut mem, FUTEX, &a), -14, "{op}");
            let a = [DATA, op | PRIVATE, 1, 1, kernel_half, 0];
            assert_eq!(call(&mut k, &mut mem, FUTEX, &a), -14, "{op}");
            let a = [DATA, op, 1, 1, DATA + 8, 0];
            assert_eq!(call(&mut k, &mut mem, FUTEX, &a), 0, "{op}");
        }
    }

    /// The calls LTP checks errors of (issue 53): each answers as Linux does for the
    /// arguments a test passes, and the machine's own limits where it keeps them.
    #[test]
    fn the_calls_ltp_checks_answer_linux_errors() {
        let (mut k, mut mem) = kernel();
        let e = |v: i64| -v;
        // msync: unaligned EINVAL, bad flags EINVAL, unmapped ENOMEM, mapped 0
        assert_eq!(call(&mut k, &mut mem, 227, &[DATA + 1, 8, 4]), e(22));
        assert_eq!(call(&mut k, &mut mem, 227, &[DATA, 8, 5]), e(22));
        assert_eq!(
            call(&mut k, &mut mem, 227, &[DATA + 0x8000, 0x1000, 4]),
            e(12)
        );
        assert_eq!(call(&mut k, &mut mem, 227, &[DATA, 0x1000, 4]), 0);
        // chroot: an empty path ENOENT
        let empty = path(&mut mem, DATA + 0x3000, "");
        assert_eq!(call(&mut k, &mut mem, 51, &[empty]), e(2));
        // clock_settime: bad nanoseconds EINVAL, good ones EPERM (the clock is never set);
        // settimeofday the same with microseconds; another clock EINVAL
        mem.write_bytes(DATA + 0x100, &[0; 16]).unwrap();
        mem.store_u64(DATA + 0x108, 1_000_000_000).unwrap();
        assert_eq!(call(&mut k, &mut mem, 112, &[0, DATA + 0x100]), e(22));
        mem.store_u64(DATA + 0x108, 5).unwrap();
        assert_eq!(call(&mut k, &mut mem, 112, &[0, DATA + 0x100]), e(1));
        assert_eq!(call(&mut k, &mut mem, 112, &[1, DATA + 0x100]), e(22));
        assert_eq!(call(&mut k, &mut mem, 170, &[DATA + 0x100, 0]), e(1));
        // adjtimex: reading answers TIME_ERROR (unsynchronized) with a 10 ms tick;
        // ADJ_ADJTIME alone EINVAL; a change EPERM
        mem.write_bytes(DATA + 0x200, &[0; 208]).unwrap();
        assert_eq!(call(&mut k, &mut mem, 171, &[DATA + 0x200]), 5);
        assert_eq!(mem.load_u64(DATA + 0x200 + 88).unwrap(), 10_000);
        mem.store_u32(DATA + 0x200, 0x8000).unwrap();
        assert_eq!(call(&mut k, &mut mem, 171, &[DATA + 0x200]), e(22));
        mem.store_u32(DATA + 0x200, 1).unwrap();
        assert_eq!(call(&mut k, &mut mem, 266, &[0, DATA + 0x200]), e(1));
        // sync_file_range on a device ESPIPE
        let pn = path(&mut mem, DATA, "/dev/null");
        let null = call(&mut k, &mut mem, OPENAT, &[AT_FDCWD, pn, 0, 0]);
        assert!(null >= 0);
        assert_eq!(call(&mut k, &mut mem, 84, &[null as u64, 0, 1, 4]), e(29));
        // memfd_create: a name of 250 bytes EINVAL, of 249 fine
        let long = "n".repeat(250);
        let at = path(&mut mem, DATA + 0x400, &long);
        assert_eq!(call(&mut k, &mut mem, 279, &[at, 0]), e(22));
        let at = path(&mut mem, DATA + 0x400, &long[..249]);
        assert!(call(&mut k, &mut mem, 279, &[at, 0]) >= 0);
        // socket: a type past SOCK_PACKET EINVAL, raw IP EPROTONOSUPPORT
        assert_eq!(call(&mut k, &mut mem, 198, &[2, 75, 0]), e(22));
        assert_eq!(call(&mut k, &mut mem, 198, &[2, 3, 0]), e(93));
        // getsockname: a null address with room EFAULT, a negative length EINVAL
        let sock = call(&mut k, &mut mem, 198, &[2, 1, 0]) as u64;
        mem.store_u32(DATA + 0x3900, 16).unwrap();
        assert_eq!(
            call(&mut k, &mut mem, 204, &[sock, 0, DATA + 0x3900]),
            e(14)
        );
        mem.store_u32(DATA + 0x3900, u32::MAX).unwrap();
        assert_eq!(
            call(&mut k, &mut mem, 204, &[sock, DATA + 0x3a00, DATA + 0x3900]),
            e(22)
        );
        // recvfrom on a connected stream: MSG_OOB EINVAL, MSG_ERRQUEUE EAGAIN
        assert_eq!(call(&mut k, &mut mem, 199, &[1, 1, 0, DATA + 0x3b00]), 0);
        let sv0 = u64::from(mem.load_u32(DATA + 0x3b00).unwrap());
        assert_eq!(
            call(&mut k, &mut mem, 207, &[sv0, DATA + 0x3c00, 1, 1, 0, 0]),
            e(22)
        );
        assert_eq!(
            call(
                &mut k,
                &mut mem,
                207,
                &[sv0, DATA + 0x3c00, 1, 0x2000, 0, 0]
            ),
            e(11)
        );
        // unlinkat: unknown flags EINVAL, an empty path ENOENT
        assert_eq!(call(&mut k, &mut mem, 35, &[AT_FDCWD, empty, 9999]), e(22));
        assert_eq!(call(&mut k, &mut mem, 35, &[AT_FDCWD, empty, 0]), e(2));
        // setpgid to a negative group EINVAL
        assert_eq!(call(&mut k, &mut mem, 154, &[0, u64::MAX]), e(22));
        // shmctl: IPC_INFO gives shmmin 1 and returns the highest index; SHM_LOCK shows in
        // the mode; SHM_STAT returns the id
        let id = call(&mut k, &mut mem, 194, &[0, 4096, 0o1600]);
        assert!(id > 0);
        assert_eq!(call(&mut k, &mut mem, 195, &[0, 3, DATA + 0x800]), id);
        assert_eq!(mem.load_u64(DATA + 0x808).unwrap(), 1);
        assert_eq!(call(&mut k, &mut mem, 195, &[id as u64, 11, 0]), 0);
        assert_eq!(
            call(&mut k, &mut mem, 195, &[id as u64, 2, DATA + 0x800]),
            0
        );
        assert_ne!(mem.load_u32(DATA + 0x800 + 20).unwrap() & 0o2000, 0);
        assert_eq!(
            call(&mut k, &mut mem, 195, &[id as u64, 13, DATA + 0x800]),
            id
        );
        // msgctl: IPC_INFO returns the highest index, MSG_STAT of it the id
        let q = call(&mut k, &mut mem, 186, &[0, 0o1600]);
        assert!(q > 0);
        let top = call(&mut k, &mut mem, 187, &[q as u64, 3, DATA + 0x800]);
        assert_eq!(top, q);
        assert_eq!(mem.load_u32(DATA + 0x808).unwrap(), 8192, "msgmax");
        assert_eq!(
            call(&mut k, &mut mem, 187, &[top as u64, 11, DATA + 0x800]),
            q
        );
        // mlock faults its pages in: mincore says resident after, not before
        let m = call(&mut k, &mut mem, MMAP, &[0, 0x2000, 3, 0x22, u64::MAX, 0]) as u64;
        assert_eq!(call(&mut k, &mut mem, 232, &[m, 0x2000, DATA + 0x3800]), 0);
        assert_eq!(mem.load_u16(DATA + 0x3800).unwrap(), 0);
        assert_eq!(call(&mut k, &mut mem, 228, &[m, 0x2000]), 0);
        assert_eq!(call(&mut k, &mut mem, 232, &[m, 0x2000, DATA + 0x3800]), 0);
        assert_eq!(mem.load_u16(DATA + 0x3800).unwrap(), 0x0101);
    }

    /// A kernel whose working directory is a fresh temporary directory, granted read-write,
    /// holding file `f` with `contents`; `data` bytes of guest memory mapped at `DATA`.
    fn in_temp_dir(contents: &[u8], data: u64) -> (tempfile::TempDir, Kernel, Memory) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), contents).unwrap();
        let mut sandbox = outcrop_rv::kernel::Sandbox::new();
        sandbox.allow_write(dir.path()).unwrap();
        sandbox.set_cwd(dir.path()).unwrap();
        let mut config = KernelConfig::silent("/p".into());
        config.sandbox = sandbox;
        let mut mem = Memory::new(64 << 20);
        mem.map(DATA, data, perm::R | perm::W).unwrap();
        let k = Kernel::new(config, DATA + 0x10_0000, 64 << 20);
        (dir, k, mem)
    }

    /// Unix sockets bound to a path are files beneath the grants (LTP's bind, connect and
    /// send tests), datagram socket pairs, socket options' errors, `O_PATH`, `SEEK_DATA`,
    /// extended attributes and a pipe's hang-up, each as Linux answers.
    #[test]
    fn sockets_paths_and_descriptors_answer_as_linux() {
        const SOCKET: u64 = 198;
        const SOCKETPAIR: u64 = 199;
        const BIND: u64 = 200;
        const LISTEN: u64 = 201;
        const CONNECT: u64 = 203;
        const SENDTO: u64 = 206;
        const SETSOCKOPT: u64 = 208;
        const GETSOCKOPT: u64 = 209;
        const UNLINKAT: u64 = 35;
        const LSEEK: u64 = 62;
        const FCHMOD: u64 = 52;
        const SETXATTR: u64 = 5;
        const GETXATTR: u64 = 8;
        const REMOVEXATTR: u64 = 14;
        const PPOLL: u64 = 73;
        const PIPE2: u64 = 59;
        const CLOSE: u64 = 57;
        const NEWFSTATAT: u64 = 79;
        let (dir, mut k, mut mem) = in_temp_dir(b"data", 0x8000);
        let c = |k: &mut Kernel, mem: &mut Memory, nr: u64, a: &[u64]| call(k, mem, nr, a);

        // bind makes the socket's file (stat says socket); a second bind EADDRINUSE; a
        // connect finds it by its file; once unlinked ENOENT
        let addr = DATA + 0x1000;
        mem.store_u16(addr, 1).unwrap();
        path(&mut mem, addr + 2, "s.sock");
        let srv = c(&mut k, &mut mem, SOCKET, &[1, 1, 0]) as u64;
        assert_eq!(c(&mut k, &mut mem, BIND, &[srv, addr, 110]), 0);
        use std::os::unix::fs::FileTypeExt;
        let meta = std::fs::symlink_metadata(dir.path().join("s.sock")).unwrap();
        assert!(meta.file_type().is_socket());
        let other = c(&mut k, &mut mem, SOCKET, &[1, 1, 0]) as u64;
        assert_eq!(c(&mut k, &mut mem, BIND, &[other, addr, 110]), -98);
        assert_eq!(c(&mut k, &mut mem, LISTEN, &[srv, 5]), 0);
        let cli = c(&mut k, &mut mem, SOCKET, &[1, 1, 0]) as u64;
        assert_eq!(c(&mut k, &mut mem, CONNECT, &[cli, addr, 110]), 0);
        // SO_PEERCRED of the connecting end: the listener's pid
        mem.store_u32(DATA + 0x2000, 12).unwrap();
        let opt = [cli, 1, 17, DATA + 0x2100, DATA + 0x2000];
        assert_eq!(c(&mut k, &mut mem, GETSOCKOPT, &opt), 0);
        assert_eq!(mem.load_u32(DATA + 0x2100).unwrap(), k.current_pid());
        let sp = path(&mut mem, DATA + 0x3000, "s.sock");
        assert_eq!(c(&mut k, &mut mem, UNLINKAT, &[AT_FDCWD, sp, 0]), 0);
        let late = c(&mut k, &mut mem, SOCKET, &[1, 1, 0]) as u64;
        assert_eq!(c(&mut k, &mut mem, CONNECT, &[late, addr, 110]), -2);
        // an AF_UNIX address on an AF_INET socket EAFNOSUPPORT; a 108-byte abstract name
        let inet = c(&mut k, &mut mem, SOCKET, &[2, 1, 0]) as u64;
        assert_eq!(c(&mut k, &mut mem, BIND, &[inet, addr, 110]), -97);
        mem.write_bytes(addr + 2, &[0; 108]).unwrap();
        mem.write_bytes(addr + 3, b"abstract").unwrap();
        assert_eq!(c(&mut k, &mut mem, BIND, &[other, addr, 110]), 0);
        // a UDP connect needs nobody on the port; MSG_OOB on it EOPNOTSUPP; a TCP send
        // before connecting EPIPE
        let udp = c(&mut k, &mut mem, SOCKET, &[2, 2, 0]) as u64;
        let sin = DATA + 0x1200;
        mem.write_bytes(
            sin,
            &[2, 0, 0x30, 0x39, 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
        )
        .unwrap();
        assert_eq!(c(&mut k, &mut mem, CONNECT, &[udp, sin, 16]), 0);
        assert_eq!(c(&mut k, &mut mem, SENDTO, &[udp, DATA, 1, 1, 0, 0]), -95);
        assert_eq!(
            c(&mut k, &mut mem, SENDTO, &[inet, DATA, 1, 0x4000, 0, 0]),
            -32
        );
        // socketpair: socket's errors first, then EOPNOTSUPP for AF_INET; a datagram pair
        // carries datagrams both ways
        let sv = DATA + 0x1400;
        assert_eq!(c(&mut k, &mut mem, SOCKETPAIR, &[2, 75, 0, sv]), -22);
        assert_eq!(c(&mut k, &mut mem, SOCKETPAIR, &[2, 2, 17, sv]), -95);
        assert_eq!(c(&mut k, &mut mem, SOCKETPAIR, &[2, 2, 6, sv]), -93);
        assert_eq!(c(&mut k, &mut mem, SOCKETPAIR, &[1, 2, 0, sv]), 0);
        let (d0, d1) = (
            u64::from(mem.load_u32(sv).unwrap()),
            u64::from(mem.load_u32(sv + 4).unwrap()),
        );
        mem.write_bytes(DATA + 0x1500, b"ping").unwrap();
        assert_eq!(c(&mut k, &mut mem, WRITE, &[d0, DATA + 0x1500, 4]), 4);
        assert_eq!(c(&mut k, &mut mem, READ, &[d1, DATA + 0x1600, 64]), 4);
        // setsockopt: another protocol's level ENOPROTOOPT, a short length EINVAL, an
        // unreadable value EFAULT; getsockopt: another level EOPNOTSUPP
        mem.store_u32(DATA + 0x1700, 1).unwrap();
        let set = |level: u64, name: u64, val: u64, len: u64| [inet, level, name, val, len];
        assert_eq!(
            c(
                &mut k,
                &mut mem,
                SETSOCKOPT,
                &set(500, 10, DATA + 0x1700, 4)
            ),
            -92
        );
        assert_eq!(
            c(&mut k, &mut mem, SETSOCKOPT, &set(17, 10, DATA + 0x1700, 4)),
            -92
        );
        assert_eq!(
            c(&mut k, &mut mem, SETSOCKOPT, &set(1, 10, DATA + 0x1700, 0)),
            -22
        );
        assert_eq!(c(&mut k, &mut mem, SETSOCKOPT, &set(1, 10, 0, 4)), -14);
        assert_eq!(
            c(
                &mut k,
                &mut mem,
                SETSOCKOPT,
                &set(6, u64::MAX, DATA + 0x1700, 4)
            ),
            -92
        );
        assert_eq!(
            c(&mut k, &mut mem, SETSOCKOPT, &set(1, 10, DATA + 0x1700, 4)),
            0
        );
        mem.store_u32(DATA + 0x2000, 4).unwrap();
        let get = [inet, 17, 10, DATA + 0x2100, DATA + 0x2000];
        assert_eq!(c(&mut k, &mut mem, GETSOCKOPT, &get), -95);

        // O_PATH: the file is named, not read, changed or mapped
        let f = path(&mut mem, DATA + 0x3000, "f");
        let o = c(&mut k, &mut mem, OPENAT, &[AT_FDCWD, f, 0o10000000, 0]) as u64;
        assert_eq!(c(&mut k, &mut mem, READ, &[o, DATA + 0x1600, 4]), -9);
        assert_eq!(c(&mut k, &mut mem, FCHMOD, &[o, 0o600]), -9);
        assert_eq!(c(&mut k, &mut mem, MMAP, &[0, 0x1000, 1, 2, o, 0]), -9);
        assert_eq!(c(&mut k, &mut mem, CONNECT, &[o, addr, 110]), -9);
        // SEEK_DATA from 0 is 0; past the end ENXIO; SEEK_HOLE at the end
        let fd = c(&mut k, &mut mem, OPENAT, &[AT_FDCWD, f, 2, 0]) as u64;
        assert_eq!(c(&mut k, &mut mem, LSEEK, &[fd, 0, 3]), 0);
        assert_eq!(c(&mut k, &mut mem, LSEEK, &[fd, 4, 3]), -6);
        assert_eq!(c(&mut k, &mut mem, LSEEK, &[fd, 0, 4]), 4);
        // fstatat: unknown flags EINVAL
        assert_eq!(
            c(
                &mut k,
                &mut mem,
                NEWFSTATAT,
                &[AT_FDCWD, f, DATA + 0x4000, 9999]
            ),
            -22
        );
        // extended attributes: user. set, read and removed on the host file; another
        // namespace EPERM; a missing one ENODATA
        let name = path(&mut mem, DATA + 0x3100, "user.outcrop");
        mem.write_bytes(DATA + 0x3200, b"v1").unwrap();
        let setx = c(&mut k, &mut mem, SETXATTR, &[f, name, DATA + 0x3200, 2, 0]);
        if setx == -95 {
            eprintln!("the host file system has no user xattrs: that part is skipped");
        } else {
            assert_eq!(setx, 0);
            assert_eq!(
                c(&mut k, &mut mem, GETXATTR, &[f, name, DATA + 0x3300, 16]),
                2
            );
            assert_eq!(
                mem.load_u16(DATA + 0x3300).unwrap(),
                u16::from_le_bytes(*b"v1")
            );
            assert_eq!(c(&mut k, &mut mem, REMOVEXATTR, &[f, name]), 0);
            assert_eq!(c(&mut k, &mut mem, REMOVEXATTR, &[f, name]), -61);
        }
        let sec = path(&mut mem, DATA + 0x3400, "security.outcrop");
        assert_eq!(
            c(&mut k, &mut mem, SETXATTR, &[f, sec, DATA + 0x3200, 2, 0]),
            -1
        );

        // a pipe whose writer is gone: POLLHUP without POLLIN
        assert_eq!(c(&mut k, &mut mem, PIPE2, &[DATA + 0x5000, 0]), 0);
        let (r, w) = (
            u64::from(mem.load_u32(DATA + 0x5000).unwrap()),
            u64::from(mem.load_u32(DATA + 0x5004).unwrap()),
        );
        assert_eq!(c(&mut k, &mut mem, CLOSE, &[w]), 0);
        mem.store_u32(DATA + 0x5100, r as u32).unwrap();
        mem.store_u32(DATA + 0x5104, 1).unwrap(); // events POLLIN, revents 0
        assert_eq!(c(&mut k, &mut mem, PPOLL, &[DATA + 0x5100, 1, 0, 0, 8]), 1);
        assert_eq!(mem.load_u16(DATA + 0x5106).unwrap(), 0x10, "POLLHUP alone");

        // RLIMIT_FSIZE: a write is cut at the limit, past it EFBIG (and SIGXFSZ)
        mem.write_bytes(
            DATA + 0x5200,
            &[0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0],
        )
        .unwrap(); // soft and hard 4096
        assert_eq!(c(&mut k, &mut mem, PRLIMIT, &[0, 1, DATA + 0x5200, 0]), 0);
        let big = path(&mut mem, DATA + 0x3500, "big");
        let b = c(&mut k, &mut mem, OPENAT, &[AT_FDCWD, big, 0o102, 0o644]) as u64;
        assert_eq!(c(&mut k, &mut mem, LSEEK, &[b, 4000, 0]), 4000);
        assert_eq!(c(&mut k, &mut mem, WRITE, &[b, DATA, 200]), 96);
        assert_eq!(c(&mut k, &mut mem, WRITE, &[b, DATA, 1]), -27);
        // prctl: arguments past an option's must be 0; capability changes EPERM
        assert_eq!(c(&mut k, &mut mem, 167, &[38, 1, 1, 0, 0]), -22); // NO_NEW_PRIVS
        assert_eq!(c(&mut k, &mut mem, 167, &[39, 1, 0, 0, 0]), -22);
        assert_eq!(c(&mut k, &mut mem, 167, &[41, 0, 1, 0, 0]), -22); // THP_DISABLE
        assert_eq!(c(&mut k, &mut mem, 167, &[28, 0, 0, 0, 0]), -1); // SECUREBITS
                                                                     // clock_nanosleep on a thread's CPU clock ENOTSUP
        mem.write_bytes(DATA + 0x5300, &[0; 16]).unwrap();
        mem.store_u64(DATA + 0x5308, 1000).unwrap();
        assert_eq!(c(&mut k, &mut mem, 115, &[3, 0, DATA + 0x5300, 0]), -95);
        // renameat2(RENAME_EXCHANGE) swaps two names; with RENAME_NOREPLACE EINVAL
        std::fs::write(dir.path().join("x"), b"X").unwrap();
        std::fs::write(dir.path().join("y"), b"Y").unwrap();
        let (x, y) = (
            path(&mut mem, DATA + 0x3600, "x"),
            path(&mut mem, DATA + 0x3700, "y"),
        );
        assert_eq!(
            c(&mut k, &mut mem, 276, &[AT_FDCWD, x, AT_FDCWD, y, 3]),
            -22
        );
        assert_eq!(c(&mut k, &mut mem, 276, &[AT_FDCWD, x, AT_FDCWD, y, 2]), 0);
        assert_eq!(std::fs::read(dir.path().join("x")).unwrap(), b"Y");
        // clone3: a stack without a size (or a size without a stack) EINVAL
        let mut args = [0u8; 88];
        args[32..40].copy_from_slice(&17u64.to_le_bytes()); // exit_signal SIGCHLD
        args[40..48].copy_from_slice(&(DATA + 0x6000).to_le_bytes()); // stack, size 0
        mem.write_bytes(DATA + 0x5400, &args).unwrap();
        assert_eq!(c(&mut k, &mut mem, 435, &[DATA + 0x5400, 88]), -22);
    }

    /// `flock` locks belong to the open file description, as on Linux: two `open`s of one
    /// file conflict in one process, a `dup` shares its original's lock, and the lock goes
    /// with the description's last descriptor.
    /// The guest's umask over the host's, `/proc/self/fd` as a directory, a FIFO opened
    /// read-write, packet pipes, pid 1, System V limits, the loopback's interface ioctls and
    /// a UDP datagram corked with `MSG_MORE`, each as Linux answers.
    #[test]
    fn proc_directories_fifos_and_corked_datagrams_answer_as_linux() {
        const UMASK: u64 = 166;
        const MKDIRAT: u64 = 34;
        const MKNODAT: u64 = 33;
        const GETDENTS64: u64 = 61;
        const READLINKAT: u64 = 78;
        const FSTAT: u64 = 80;
        const FCNTL: u64 = 25;
        const PIPE2: u64 = 59;
        const IOCTL: u64 = 29;
        const GETPGID: u64 = 155;
        const SEMGET: u64 = 190;
        const SEMCTL: u64 = 191;
        const SOCKET: u64 = 198;
        const BIND: u64 = 200;
        const SENDTO: u64 = 206;
        const RECVFROM: u64 = 207;
        let (dir, mut k, mut mem) = in_temp_dir(b"data", 0x10000);
        let c = |k: &mut Kernel, mem: &mut Memory, nr: u64, a: &[u64]| call(k, mem, nr, a);
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &str| {
            std::fs::metadata(dir.path().join(p))
                .unwrap()
                .permissions()
                .mode()
        };

        // the guest's umask decides a new file's and directory's mode, not the host's
        assert_eq!(c(&mut k, &mut mem, UMASK, &[0]), 0o022);
        let u = path(&mut mem, DATA, "u");
        let fd = c(&mut k, &mut mem, OPENAT, &[AT_FDCWD, u, 0o101, 0o777]) as u64;
        assert_eq!(mode("u") & 0o7777, 0o777);
        assert_eq!(c(&mut k, &mut mem, UMASK, &[0o027]), 0);
        let d = path(&mut mem, DATA, "d");
        assert_eq!(c(&mut k, &mut mem, MKDIRAT, &[AT_FDCWD, d, 0o777]), 0);
        assert_eq!(mode("d") & 0o7777, 0o750);

        // statx: newfstatat's answer in its own layout; an empty path ENOENT, a reserved
        // mask bit EINVAL
        let f = path(&mut mem, DATA, "f");
        assert_eq!(
            c(
                &mut k,
                &mut mem,
                291,
                &[AT_FDCWD, f, 0, 0x7ff, DATA + 0x2000]
            ),
            0
        );
        assert_eq!(
            mem.load_u32(DATA + 0x2000).unwrap(),
            0x7ff,
            "STATX_BASIC_STATS"
        );
        assert_eq!(mem.load_u16(DATA + 0x201c).unwrap() & 0o170000, 0o100000);
        assert_eq!(mem.load_u64(DATA + 0x2028).unwrap(), 4, "stx_size");
        let empty = path(&mut mem, DATA, "");
        assert_eq!(
            c(
                &mut k,
                &mut mem,
                291,
                &[AT_FDCWD, empty, 0, 0, DATA + 0x2000]
            ),
            -2
        );
        let reserved = [AT_FDCWD, f, 0, 0x8000_0000, DATA + 0x2000];
        assert_eq!(c(&mut k, &mut mem, 291, &reserved), -22);

        // /proc/self/fd lists the descriptors; a directory to fstat, EISDIR to read; each
        // entry's link names the file
        let p = path(&mut mem, DATA, "/proc/self/fd");
        let pd = c(&mut k, &mut mem, OPENAT, &[AT_FDCWD, p, 0o200000]) as u64;
        let n = c(&mut k, &mut mem, GETDENTS64, &[pd, DATA + 0x1000, 4096]);
        assert!(n > 0);
        let mut raw = vec![0u8; n as usize];
        mem.read_bytes(DATA + 0x1000, &mut raw).unwrap();
        let mut names = Vec::new();
        let mut at = 0;
        while at < raw.len() {
            let len = u16::from_le_bytes([raw[at + 16], raw[at + 17]]) as usize;
            let name = &raw[at + 19..at + len];
            names.push(
                String::from_utf8_lossy(&name[..name.iter().position(|&b| b == 0).unwrap()])
                    .into_owned(),
            );
            at += len;
        }
        for want in [".", "..", "0", "1", "2", &fd.to_string(), &pd.to_string()] {
            assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
        }
        assert_eq!(c(&mut k, &mut mem, FSTAT, &[pd, DATA + 0x2000]), 0);
        assert_eq!(mem.load_u32(DATA + 0x2010).unwrap() & 0o170000, 0o040000);
        assert_eq!(c(&mut k, &mut mem, READ, &[pd, DATA + 0x2000, 16]), -21);
        let link = path(&mut mem, DATA, &format!("/proc/self/fd/{fd}"));
        let n = c(
            &mut k,
            &mut mem,
            READLINKAT,
            &[AT_FDCWD, link, DATA + 0x2000, 256],
        );
        let mut target = vec![0u8; n as usize];
        mem.read_bytes(DATA + 0x2000, &mut target).unwrap();
        assert!(
            target.starts_with(b"/") && target.ends_with(b"/u"),
            "{target:?}"
        );
        let stat = path(&mut mem, DATA, "/proc/self/stat");
        assert_eq!(
            c(&mut k, &mut mem, OPENAT, &[AT_FDCWD, stat, 0o200000]),
            -20
        );
        // kcmp: a dup shares the open file description, another open does not
        let me = u64::from(k.current_pid());
        let twin = c(&mut k, &mut mem, 23, &[fd]) as u64;
        assert_eq!(c(&mut k, &mut mem, 272, &[me, me, 0, fd, twin]), 0);
        let other = c(&mut k, &mut mem, 272, &[me, me, 0, fd, pd]);
        assert!(other == 1 || other == 2, "{other}");
        assert_eq!(c(&mut k, &mut mem, 272, &[me, me, 0, fd, 999]), -9, "EBADF");
        assert_eq!(
            c(&mut k, &mut mem, 272, &[me, me, 9, fd, fd]),
            -22,
            "EINVAL"
        );
        assert_eq!(
            c(&mut k, &mut mem, 272, &[me, 77_777, 0, fd, fd]),
            -3,
            "ESRCH"
        );
        // pid 1: an init in its own group, with a /proc/1/stat
        assert_eq!(c(&mut k, &mut mem, GETPGID, &[1]), 1);
        let init = path(&mut mem, DATA, "/proc/1/stat");
        assert!(c(&mut k, &mut mem, OPENAT, &[AT_FDCWD, init, 0]) >= 0);
        // a /proc/PID directory is a pidfd: signal 0 to oneself, EPERM to the init
        let own = path(&mut mem, DATA, "/proc/self");
        let own = c(&mut k, &mut mem, OPENAT, &[AT_FDCWD, own, 0o200000]) as u64;
        assert_eq!(c(&mut k, &mut mem, 424, &[own, 0, 0, 0]), 0);
        let one = path(&mut mem, DATA, "/proc/1");
        let one = c(&mut k, &mut mem, OPENAT, &[AT_FDCWD, one, 0o200000]) as u64;
        assert_eq!(c(&mut k, &mut mem, 424, &[one, 10, 0, 0]), -1);

        // a FIFO opened O_RDWR is both ends: never waits for another, reads what it wrote
        let ff = path(&mut mem, DATA, "ff");
        assert_eq!(
            c(&mut k, &mut mem, MKNODAT, &[AT_FDCWD, ff, 0o010600, 0]),
            0
        );
        let f = c(&mut k, &mut mem, OPENAT, &[AT_FDCWD, ff, 0o2]) as u64;
        assert_eq!(
            c(&mut k, &mut mem, FCNTL, &[f, 3]) & 3,
            2,
            "F_GETFL: O_RDWR"
        );
        mem.write_bytes(DATA + 0x3000, b"hi").unwrap();
        assert_eq!(c(&mut k, &mut mem, WRITE, &[f, DATA + 0x3000, 2]), 2);
        assert_eq!(c(&mut k, &mut mem, READ, &[f, DATA + 0x3100, 16]), 2);
        // pipe2(O_DIRECT): packets, one a read, and F_GETFL says so
        let fds = DATA + 0x3200;
        assert_eq!(c(&mut k, &mut mem, PIPE2, &[fds, 0o40000]), 0);
        let (r, w) = (
            u64::from(mem.load_u32(fds).unwrap()),
            u64::from(mem.load_u32(fds + 4).unwrap()),
        );
        assert_eq!(c(&mut k, &mut mem, FCNTL, &[w, 3]) & 0o40000, 0o40000);
        assert_eq!(c(&mut k, &mut mem, WRITE, &[w, DATA + 0x3000, 2]), 2);
        assert_eq!(c(&mut k, &mut mem, WRITE, &[w, DATA + 0x3000, 1]), 1);
        assert_eq!(c(&mut k, &mut mem, READ, &[r, DATA + 0x3100, 16]), 2);
        assert_eq!(c(&mut k, &mut mem, READ, &[r, DATA + 0x3100, 16]), 1);

        // memfd seals: only with MFD_ALLOW_SEALING; F_SEAL_WRITE refuses writes (EPERM)
        let name = path(&mut mem, DATA, "m");
        let sealed = c(&mut k, &mut mem, 279, &[name, 2]) as u64;
        let plain = c(&mut k, &mut mem, 279, &[name, 0]) as u64;
        assert_eq!(c(&mut k, &mut mem, FCNTL, &[plain, 1034]), 1, "F_SEAL_SEAL");
        assert_eq!(c(&mut k, &mut mem, FCNTL, &[plain, 1033, 8]), -1);
        assert_eq!(c(&mut k, &mut mem, WRITE, &[sealed, DATA + 0x3000, 2]), 2);
        assert_eq!(c(&mut k, &mut mem, FCNTL, &[sealed, 1033, 8]), 0);
        assert_eq!(c(&mut k, &mut mem, FCNTL, &[sealed, 1034]), 8);
        assert_eq!(c(&mut k, &mut mem, WRITE, &[sealed, DATA + 0x3000, 2]), -1);
        assert_eq!(c(&mut k, &mut mem, FCNTL, &[f, 1034]), -22, "not a memfd");

        // System V: /proc/sysvipc/sem lists a set; IPC_INFO answers the highest id
        let id = c(&mut k, &mut mem, SEMGET, &[0, 2, 0o1600]);
        assert!(id >= 0);
        assert_eq!(
            c(&mut k, &mut mem, SEMCTL, &[id as u64, 0, 3, DATA + 0x3400]),
            id
        );
        assert_eq!(mem.load_u32(DATA + 0x3404).unwrap(), 1024, "semmni");
        assert_eq!(
            c(&mut k, &mut mem, SEMCTL, &[id as u64, 0, 14, 0]),
            0,
            "GETNCNT"
        );
        let sem = path(&mut mem, DATA, "/proc/sysvipc/sem");
        let sf = c(&mut k, &mut mem, OPENAT, &[AT_FDCWD, sem, 0]) as u64;
        let n = c(&mut k, &mut mem, READ, &[sf, DATA + 0x4000, 4096]);
        let mut listing = vec![0u8; n as usize];
        mem.read_bytes(DATA + 0x4000, &mut listing).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&listing).lines().count(),
            2,
            "a header, a set"
        );

        // msgrcv(MSG_COPY): the message at an index, left in the queue; only with IPC_NOWAIT
        let q = c(&mut k, &mut mem, 186, &[0, 0o1600]) as u64;
        mem.store_u64(DATA + 0x4800, 7).unwrap();
        mem.write_bytes(DATA + 0x4808, b"one").unwrap();
        assert_eq!(c(&mut k, &mut mem, 189, &[q, DATA + 0x4800, 3, 0]), 0);
        mem.write_bytes(DATA + 0x4808, b"two").unwrap();
        assert_eq!(c(&mut k, &mut mem, 189, &[q, DATA + 0x4800, 3, 0]), 0);
        let copy = [q, DATA + 0x4900, 64, 1, 0o44000, 0];
        assert_eq!(c(&mut k, &mut mem, 188, &copy), 3);
        let mut got = [0u8; 3];
        mem.read_bytes(DATA + 0x4908, &mut got).unwrap();
        assert_eq!(&got, b"two");
        assert_eq!(c(&mut k, &mut mem, 188, &copy), 3, "still there");
        assert_eq!(
            c(
                &mut k,
                &mut mem,
                188,
                &[q, DATA + 0x4900, 64, 2, 0o44000, 0]
            ),
            -42
        );
        assert_eq!(
            c(
                &mut k,
                &mut mem,
                188,
                &[q, DATA + 0x4900, 64, 1, 0o40000, 0]
            ),
            -22
        );

        // the loopback's interface ioctls; SIOCATMARK on UDP ENOTTY; RNDGETENTCNT 256
        let udp = c(&mut k, &mut mem, SOCKET, &[2, 2, 0]) as u64;
        mem.store_u32(DATA + 0x5000, 400).unwrap();
        mem.store_u64(DATA + 0x5008, DATA + 0x5100).unwrap();
        assert_eq!(c(&mut k, &mut mem, IOCTL, &[udp, 0x8912, DATA + 0x5000]), 0);
        assert_eq!(mem.load_u32(DATA + 0x5000).unwrap(), 40, "one ifreq");
        assert_eq!(
            mem.load_u16(DATA + 0x5100).unwrap(),
            u16::from_le_bytes(*b"lo")
        );
        assert_eq!(c(&mut k, &mut mem, IOCTL, &[udp, 0x8913, DATA + 0x5100]), 0);
        assert_eq!(
            mem.load_u16(DATA + 0x5110).unwrap(),
            0x49,
            "UP, LOOPBACK, RUNNING"
        );
        assert_eq!(
            c(&mut k, &mut mem, IOCTL, &[udp, 0x8905, DATA + 0x5000]),
            -25
        );
        let rnd = path(&mut mem, DATA, "/dev/urandom");
        let rf = c(&mut k, &mut mem, OPENAT, &[AT_FDCWD, rnd, 0]) as u64;
        assert_eq!(
            c(&mut k, &mut mem, IOCTL, &[rf, 0x8004_5200, DATA + 0x5000]),
            0
        );
        assert_eq!(mem.load_u32(DATA + 0x5000).unwrap(), 256);

        // MSG_MORE: the parts of one UDP datagram go as one with the send that ends it
        let sin = DATA + 0x6000;
        mem.write_bytes(
            sin,
            &[2, 0, 0x30, 0x3a, 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
        )
        .unwrap();
        assert_eq!(c(&mut k, &mut mem, BIND, &[udp, sin, 16]), 0);
        let tx = c(&mut k, &mut mem, SOCKET, &[2, 2, 0]) as u64;
        mem.write_bytes(DATA + 0x6100, b"abcd").unwrap();
        let more = [tx, DATA + 0x6100, 2, 0x8000, sin, 16];
        assert_eq!(c(&mut k, &mut mem, SENDTO, &more), 2);
        let dontwait = [udp, DATA + 0x6200, 64, 0x40, 0, 0];
        assert_eq!(c(&mut k, &mut mem, RECVFROM, &dontwait), -11, "held back");
        assert_eq!(
            c(
                &mut k,
                &mut mem,
                SENDTO,
                &[tx, DATA + 0x6102, 2, 0, sin, 16]
            ),
            2
        );
        assert_eq!(c(&mut k, &mut mem, RECVFROM, &dontwait), 4, "one datagram");
        let mut got = [0u8; 4];
        mem.read_bytes(DATA + 0x6200, &mut got).unwrap();
        assert_eq!(&got, b"abcd");
    }

    #[test]
    fn flock_locks_belong_to_the_open_file_description() {
        const FLOCK: u64 = 32;
        const DUP: u64 = 23;
        const CLOSE: u64 = 57;
        const EX_NB: u64 = 2 | 4;
        let (_dir, mut k, mut mem) = in_temp_dir(b"x", 0x4000);
        let p = path(&mut mem, DATA, "f");
        let a = call(&mut k, &mut mem, OPENAT, &[AT_FDCWD, p, 2, 0]) as u64;
        let b = call(&mut k, &mut mem, OPENAT, &[AT_FDCWD, p, 2, 0]) as u64;
        assert_eq!(call(&mut k, &mut mem, FLOCK, &[a, EX_NB]), 0);
        assert_eq!(
            call(&mut k, &mut mem, FLOCK, &[b, EX_NB]),
            -11,
            "a second open"
        );
        let c = call(&mut k, &mut mem, DUP, &[a]) as u64;
        assert_eq!(
            call(&mut k, &mut mem, FLOCK, &[c, EX_NB]),
            0,
            "a dup shares it"
        );
        assert_eq!(call(&mut k, &mut mem, CLOSE, &[a]), 0);
        assert_eq!(
            call(&mut k, &mut mem, FLOCK, &[b, EX_NB]),
            -11,
            "the dup holds it"
        );
        assert_eq!(call(&mut k, &mut mem, CLOSE, &[c]), 0);
        assert_eq!(
            call(&mut k, &mut mem, FLOCK, &[b, EX_NB]),
            0,
            "gone with the last"
        );
    }

    #[test]
    fn devices_need_no_grant_and_reach_nothing_on_the_host() {
        let (mut k, mut mem) = kernel();
        let pz = path(&mut mem, DATA, "/dev/zero");
        let pn = path(&mut mem, DATA + 0x40, "/dev/null");
        let pf = path(&mut mem, DATA + 0x80, "/dev/full");
        let ps = path(&mut mem, DATA + 0xc0, "/dev/sda");
        let zero = call(&mut k, &mut mem, OPENAT, &[AT_FDCWD, pz, 2]);
        assert!(zero >= 3);
        mem.write_bytes(DATA + 0x100, &[7; 16]).unwrap();
        assert_eq!(
            call(&mut k, &mut mem, READ, &[zero as u64, DATA + 0x100, 16]),
            16
        );
        let mut b = [1u8; 16];
        mem.read_bytes(DATA + 0x100, &mut b).unwrap();
        assert_eq!(b, [0; 16]);
        let null = call(&mut k, &mut mem, OPENAT, &[AT_FDCWD, pn, 2]);
        assert_eq!(
            call(&mut k, &mut mem, READ, &[null as u64, DATA + 0x100, 16]),
            0
        );
        assert_eq!(
            call(&mut k, &mut mem, WRITE, &[null as u64, DATA + 0x100, 16]),
            16
        );
        let full = call(&mut k, &mut mem, OPENAT, &[AT_FDCWD, pf, 2]);
        assert_eq!(
            call(&mut k, &mut mem, WRITE, &[full as u64, DATA + 0x100, 16]),
            -28
        );
        // a mapping of /dev/zero is anonymous memory
        let m = call(&mut k, &mut mem, MMAP, &[0, 8192, 3, 2, zero as u64, 0]);
        assert!(m > 0, "{m}");
        assert_eq!(mem.load_u64(m as u64 + 8000).unwrap(), 0);
        // other device paths are not provided
        assert_eq!(call(&mut k, &mut mem, OPENAT, &[AT_FDCWD, ps, 0]), -13);
    }

    #[test]
    fn resource_limits_are_kept_and_enforced() {
        let (mut k, mut mem) = kernel();
        // RLIMIT_NOFILE 5: descriptors 0..4 only
        mem.write_bytes(
            DATA + 0x200,
            &[5u64.to_le_bytes(), 5u64.to_le_bytes()].concat(),
        )
        .unwrap();
        assert_eq!(call(&mut k, &mut mem, PRLIMIT, &[0, 7, DATA + 0x200, 0]), 0);
        let p = path(&mut mem, DATA, "/dev/null");
        assert_eq!(call(&mut k, &mut mem, OPENAT, &[AT_FDCWD, p, 0]), 3);
        assert_eq!(call(&mut k, &mut mem, OPENAT, &[AT_FDCWD, p, 0]), 4);
        assert_eq!(
            call(&mut k, &mut mem, OPENAT, &[AT_FDCWD, p, 0]),
            -24,
            "EMFILE"
        );
        // raising the hard limit is EPERM; soft above hard EINVAL
        mem.write_bytes(
            DATA + 0x200,
            &[6u64.to_le_bytes(), 6u64.to_le_bytes()].concat(),
        )
        .unwrap();
        assert_eq!(
            call(&mut k, &mut mem, PRLIMIT, &[0, 7, DATA + 0x200, 0]),
            -1
        );
        mem.write_bytes(
            DATA + 0x200,
            &[9u64.to_le_bytes(), 4u64.to_le_bytes()].concat(),
        )
        .unwrap();
        assert_eq!(
            call(&mut k, &mut mem, PRLIMIT, &[0, 7, DATA + 0x200, 0]),
            -22
        );
        // RLIMIT_AS: a mapping past it fails with ENOMEM
        let as_ = (mem.mapped_pages() * 4096 + (1 << 20)).to_le_bytes();
        mem.write_bytes(DATA + 0x200, &[as_, u64::MAX.to_le_bytes()].concat())
            .unwrap();
        assert_eq!(
            call(
                &mut k,
                &mut mem,
                PRLIMIT,
                &[0, 9, DATA + 0x200, DATA + 0x300]
            ),
            0
        );
        assert_eq!(
            mem.load_u64(DATA + 0x300).unwrap(),
            u64::MAX,
            "the old limit"
        );
        assert!(
            call(
                &mut k,
                &mut mem,
                MMAP,
                &[0, 1 << 19, 3, 0x22, -1i64 as u64, 0]
            ) > 0
        );
        assert_eq!(
            call(
                &mut k,
                &mut mem,
                MMAP,
                &[0, 1 << 20, 3, 0x22, -1i64 as u64, 0]
            ),
            -12
        );
        // another process's limits: ESRCH
        assert_eq!(
            call(&mut k, &mut mem, PRLIMIT, &[4242, 7, 0, DATA + 0x300]),
            -3
        );
    }
}
