//! Fuzz target: the ELF loader and the first steps of the machine on arbitrary bytes.
//!
//! Loading must return an error or a machine (never panic, never map more than the 64 MiB
//! limit); a loaded machine then runs at most 10,000 instructions with an empty sandbox and no
//! stdin, which must end in an exit, a fault or the limit. An input that starts with `PAIR`
//! and a byte B is split at B/256 of the rest into a program and an interpreter (a dynamically
//! linked program's dynamic linker: both loaded, the interpreter first to run).

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_rv::elf::Program;
use outcrop_rv::kernel::{KernelConfig, Sandbox};

fuzz_target!(|data: &[u8]| {
    let (data, interp) = match data {
        [b'P', b'A', b'I', b'R', b, rest @ ..] => {
            let at = rest.len() * usize::from(*b) / 256;
            (&rest[..at], Some(&rest[at..]))
        }
        _ => (data, None),
    };
    let program = Program {
        elf: data,
        args: vec!["prog".into()],
        env: vec![],
        memory_limit: 64 << 20,
        isa: outcrop_rv::inst::Isa::ALL,
    };
    let kernel = KernelConfig {
        sandbox: Sandbox::new(),
        deterministic: true,
        exe_path: "/prog".into(),
        stdin: Box::new(std::io::empty()),
        stdout: Box::new(std::io::sink()),
        stderr: Box::new(std::io::sink()),
        on_warning: Box::new(|_| {}),
        stdio_mode: None,
    };
    let interp = interp.map(|elf| outcrop_rv::elf::Interp {
        path: "/lib/ld.so".into(),
        host_path: None,
        elf,
    });
    if let Ok(mut machine) = outcrop_rv::elf::load_with(program, interp, kernel) {
        assert!(machine.mem.mapped_pages() * 4096 <= 64 << 20);
        machine.max_insns = 10_000;
        let _ = machine.run(&mut ());
    }
});
