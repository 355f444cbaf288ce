//! Prints the pc of every retired instruction of a program run with an empty environment and
//! the deterministic kernel, one per line in hex: for lockstep comparison with
//! `qemu-riscv64-static -singlestep -d cpu,nochain` (see docs/machine.md).
//!
//! `cargo run --release -p outcrop-rv --example trace_pcs -- PROG [ARGS]`
use outcrop_rv::elf::{load, Program};
use outcrop_rv::kernel::{KernelConfig, Sandbox};
use outcrop_rv::{Control, Observer, Retire, Stamp};
use std::io::Write;

struct Pcs<W: Write>(W);
impl<W: Write> Observer for Pcs<W> {
    const RETIRE: bool = true;
    fn retire(&mut self, r: &Retire, _t: Option<&Stamp>) -> Control {
        let _ = writeln!(self.0, "{:x}", r.pc);
        Control::Continue
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let elf = std::fs::read(args.first().ok_or("usage: trace_pcs PROG [ARGS]")?)?;
    let kernel = KernelConfig {
        sandbox: Sandbox::new(),
        deterministic: true,
        exe_path: std::fs::canonicalize(&args[0])?,
        stdin: Box::new(std::io::empty()),
        stdout: Box::new(std::io::sink()),
        stderr: Box::new(std::io::sink()),
        on_warning: Box::new(|m| eprintln!("{m}")),
        stdio_mode: Some(0o020666), // like /dev/null
    };
    let program = Program {
        elf: &elf,
        args: args.clone(),
        env: vec![],
        memory_limit: 1 << 32,
    };
    let mut m = load(program, kernel)?;
    let out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut obs = Pcs(out);
    let outcome = m.run(&mut obs);
    eprintln!("{outcome:?} after {} instructions", m.instret);
    Ok(())
}
