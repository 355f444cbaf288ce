//! Shared by the integration tests: a machine loaded with a bundled workload, run the way the
//! qemu references were recorded (empty environment, argv[0] = `bin/<name>`, stdio reported as
//! /dev/null, deterministic kernel, and `/proc/self/exe` naming the path the references were
//! recorded at).

use outcrop_rv::elf::Program;
use outcrop_rv::kernel::{KernelConfig, Sandbox};
use outcrop_rv::Machine;
use std::path::Path;

/// Where Debian's cross toolchain keeps the riscv64 libraries (the dynamic workloads').
pub const SYSROOT: &str = "/usr/riscv64-linux-gnu";

/// `workloads/bin/<name>` ready to run, stopping after `max_insns`.
pub fn workload(name: &str, max_insns: u64) -> Machine {
    let bin = outcrop_testkit::workloads().join("bin").join(name);
    let elf = std::fs::read(&bin).unwrap();
    let kernel = KernelConfig {
        sandbox: Sandbox::new(),
        deterministic: true,
        // glibc's start-up copies readlink("/proc/self/exe"), so its length shows in the pc
        // stream: report the path the qemu references were recorded at, not this checkout's.
        exe_path: format!("/work/main/workloads/bin/{name}").into(),
        stdin: Box::new(std::io::empty()),
        stdout: Box::new(std::io::sink()),
        stderr: Box::new(std::io::sink()),
        on_warning: Box::new(|m| panic!("unexpected warning: {m}")),
        stdio_mode: Some(0o020666), // /dev/null, as in the reference runs
    };
    let program = Program {
        elf: &elf,
        args: vec![format!("bin/{name}").into()],
        env: vec![],
        memory_limit: 1 << 30,
        isa: outcrop_rv::inst::Isa::ALL,
    };
    // a dynamically linked workload (`*_dyn`) finds its libraries under the cross sysroot
    let mut kernel = kernel;
    let interp = match outcrop_rv::elf::interpreter(&elf).unwrap() {
        Some(path) => {
            kernel.sandbox.set_sysroot(Path::new(SYSROOT)).unwrap();
            let (bytes, host) = kernel
                .sandbox
                .read_file(Path::new(&path), 64 << 20)
                .unwrap();
            Some((path, host, bytes))
        }
        None => None,
    };
    let interp = interp
        .as_ref()
        .map(|(path, host, bytes)| outcrop_rv::elf::Interp {
            path: path.into(),
            host_path: Some(host.clone()),
            elf: bytes,
        });
    let mut m = outcrop_rv::elf::load_with(program, interp, kernel).unwrap();
    m.max_insns = max_insns;
    m
}
