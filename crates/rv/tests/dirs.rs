//! Directory file descriptors (tests/fixtures/dirs): the `*at` calls relative to a directory
//! fd, getdents64, dup, pread/pwrite, readv and ftruncate print what they print under qemu;
//! and a directory fd stays beneath its grant when `..`, symlinks or a directory swapped for
//! a symlink mid-run try to lead it out.

use outcrop_rv::elf::{load, Program};
use outcrop_rv::kernel::{KernelConfig, Sandbox};
use outcrop_rv::Outcome;
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

#[test]
fn file_mappings_behave_as_under_qemu_and_shared_writable_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.bin");
    std::fs::write(
        &file,
        (0..10_000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    let elf = std::fs::read(fixture("maps")).unwrap();
    for shared_write in [false, true] {
        let out = Shared::default();
        let mut sandbox = Sandbox::new();
        sandbox.allow_write(dir.path()).unwrap();
        sandbox.set_cwd(dir.path()).unwrap();
        let kernel = KernelConfig {
            sandbox,
            deterministic: true,
            exe_path: "/maps".into(),
            stdin: Box::new(std::io::empty()),
            stdout: Box::new(out.clone()),
            stderr: Box::new(std::io::sink()),
            on_warning: Box::new(|m| panic!("unexpected warning: {m}")),
            stdio_mode: None,
        };
        let mut args: Vec<std::ffi::OsString> = vec!["maps".into(), "f.bin".into()];
        if shared_write {
            args.push("shared-write".into());
        }
        let program = Program {
            elf: &elf,
            args,
            env: vec![],
            memory_limit: 1 << 28,
        };
        let mut m = load(program, kernel).unwrap();
        let outcome = m.run(&mut ());
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let want = std::fs::read_to_string(fixture("maps.qemu")).unwrap();
        if shared_write {
            assert_eq!(outcome, Outcome::Exited(0));
            assert!(text.ends_with("shared writable: -1 EACCES\n"), "{text}");
        } else {
            // it ends touching a page past the end of the file: SIGBUS, as under qemu
            let status = outcome.exit_status().unwrap();
            assert_eq!(format!("{text}status {status}\n"), want, "{outcome:?}");
        }
        // the private write never reached the file
        assert_eq!(std::fs::read(&file).unwrap()[0], 0);
    }
}
