//! Helpers the profile's integration tests share: one run of a program under an engine, and
//! where two serialized profiles first differ.

use outcrop_profile::{Profile, Profiler};
use outcrop_run::{load, ProgramSpec};
use outcrop_rv::symbols::Symbols;

/// The profile of `spec` run to its end: from retire records (`engine` `None`, the single-step
/// interpreter) or from blocks under `engine`, compiled from a block's second run on this
/// thread (whatever the host's timing). `make` builds the profiler from the program's symbols.
pub fn profile_on(
    spec: &ProgramSpec,
    engine: Option<outcrop_rv::Engine>,
    make: impl Fn(Symbols) -> Profiler,
) -> Profile {
    let mut guest = load(spec, Box::new(|_| {})).unwrap();
    let mut p = make(Symbols::from_elf(&guest.elf).unwrap());
    match engine {
        None => {
            guest.machine.run(&mut p);
        }
        Some(e) => {
            guest.machine.engine = e;
            guest.machine.jit_hot = 1;
            guest.machine.jit_background = false;
            guest.machine.run(&mut p.by_blocks());
        }
    }
    p.finish_profile()
}

/// `None` when `got` equals `reference`, else where they first differ, with `context` bytes
/// of each around it.
pub fn first_difference(got: &str, reference: &str, context: usize) -> Option<String> {
    if got == reference {
        return None;
    }
    let at = got
        .bytes()
        .zip(reference.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(reference.len()));
    let around = |s: &str| {
        let b = &s.as_bytes()[at.saturating_sub(context)..(at + context).min(s.len())];
        String::from_utf8_lossy(b).into_owned()
    };
    Some(format!(
        "differs at byte {at}: {} vs {}",
        around(got),
        around(reference)
    ))
}
