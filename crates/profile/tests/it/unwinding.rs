//! The call tree follows the stack where a program leaves functions without returning:
//! `longjmp` out of a callee, `longjmp` to an outer level of a recursion, C++ exceptions
//! caught in a loop. Each program counts its own calls (printed, and fixed by construction),
//! the independent reference the profile's call counts must equal; every engine gives the same
//! profile. Needs the RISC-V cross compilers; without them the tests are skipped unless
//! `OUTCROP_REQUIRE_CROSS=1` (CI).

use crate::common;

use outcrop_profile::{Profile, Profiler};
use outcrop_run::ProgramSpec;
use std::process::Command;

/// `thrower` leaves by `longjmp` 3,000 times, then `f` is called (and returns) 1,000 times.
const LONGJMP: &str = r#"#include <setjmp.h>
#include <stdio.h>
static jmp_buf env;
static volatile unsigned sink;
__attribute__((noinline)) static void deeper(int i) { sink += i; longjmp(env, 1); }
__attribute__((noinline)) static void thrower(int i) { sink ^= i; deeper(i); sink = 0; }
__attribute__((noinline)) static unsigned f(unsigned x) {
    unsigned h = x;
    for (int i = 0; i < 50; i++) h = h * 31 + i;
    return h;
}
int main(void) {
    for (volatile int i = 0; i < 3000; i++) {
        if (setjmp(env) == 0) thrower(i);
    }
    unsigned s = 0;
    for (int i = 0; i < 1000; i++) s += f(i);
    printf("%u %u\n", s, sink);
    return 0;
}
"#;

/// A recursion 8 deep whose innermost level jumps back to level 3, 200 times; level 3 then
/// calls `leaf` once: `leaf` must hang under the third `rec`, not deeper.
const RECURSION: &str = r#"#include <setjmp.h>
#include <stdio.h>
static jmp_buf env;
static volatile unsigned sink;
__attribute__((noinline)) static void leaf(void) { sink++; }
__attribute__((noinline)) static void rec(int depth) {
    if (depth == 8) longjmp(env, 1);
    if (depth == 3) {
        if (setjmp(env) == 0) rec(depth + 1);
        else leaf();
        return;
    }
    rec(depth + 1);
    sink += depth;
}
int main(void) {
    for (int i = 0; i < 200; i++) rec(1);
    printf("%u\n", sink);
    return 0;
}
"#;

/// C++ exceptions thrown two calls deep and caught in a loop, 2,000 times, then `f` 1,000
/// times.
const EXCEPTIONS: &str = r#"#include <cstdio>
#include <stdexcept>
static volatile unsigned sink;
__attribute__((noinline)) static void deeper(int i) { sink += i; if (i >= 0) throw std::runtime_error("x"); }
__attribute__((noinline)) static void thrower(int i) { sink ^= i; deeper(i); sink = 0; }
__attribute__((noinline)) static unsigned f(unsigned x) {
    unsigned h = x;
    for (int i = 0; i < 50; i++) h = h * 31 + i;
    return h;
}
int main() {
    for (int i = 0; i < 2000; i++) {
        try { thrower(i); } catch (const std::exception &) { sink++; }
    }
    unsigned s = 0;
    for (int i = 0; i < 1000; i++) s += f(i);
    std::printf("%u %u\n", s, sink);
    return 0;
}
"#;

fn build(source: &str, cxx: bool) -> Option<(tempfile::TempDir, std::path::PathBuf)> {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join(if cxx { "p.cc" } else { "p.c" });
    std::fs::write(&src, source).unwrap();
    let out = dir.path().join("p");
    let compiler = if cxx {
        "riscv64-linux-gnu-g++"
    } else {
        "riscv64-linux-gnu-gcc"
    };
    let o = Command::new(compiler)
        .args(["-O2", "-static", "-o"])
        .arg(&out)
        .arg(&src)
        .output();
    match o {
        Ok(o) if o.status.success() => Some((dir, out)),
        _ => {
            assert!(
                std::env::var_os("OUTCROP_REQUIRE_CROSS").is_none(),
                "{compiler} missing but OUTCROP_REQUIRE_CROSS is set"
            );
            eprintln!("note: no {compiler}: the unwinding test is skipped");
            None
        }
    }
}

/// The profile of `path` from retire records, and from blocks under the block engine and the
/// compiling tier; all three must be equal.
fn profile(path: &std::path::Path) -> Profile {
    profile_of(&ProgramSpec::observed(path, "p"))
}

/// [`profile`] of any program.
fn profile_of(spec: &ProgramSpec) -> Profile {
    let spec = spec.clone();
    let reference = common::profile_on(&spec, None, Profiler::new);
    let json = serde_json::to_string(&reference).unwrap();
    for e in [outcrop_rv::Engine::Blocks, outcrop_rv::Engine::Jit] {
        let got =
            serde_json::to_string(&common::profile_on(&spec, Some(e), Profiler::new)).unwrap();
        if let Some(d) = common::first_difference(&got, &json, 80) {
            panic!("{e:?} differs from retire records: {d}");
        }
    }
    reference
}

fn function<'p>(p: &'p Profile, name: &str) -> &'p outcrop_profile::Function {
    p.functions
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no function {name}"))
}

/// The call chain of each node of the tree, as names from the root.
fn chains(p: &Profile) -> Vec<Vec<String>> {
    (0..p.nodes.len())
        .map(|i| {
            let mut chain = Vec::new();
            let mut n = i;
            while n != 0 {
                let node = &p.nodes[n];
                if let Some(f) = node.function {
                    chain.push(p.functions[f as usize].name.clone());
                }
                n = node.parent as usize;
            }
            chain.reverse();
            chain
        })
        .collect()
}

/// Calls and totals that hold whatever the program does: each function's total is at least
/// its self count, and no node's chain holds `main` twice.
fn consistent(p: &Profile) {
    for f in &p.functions {
        assert!(
            f.total_counts.instructions >= f.self_counts.instructions,
            "{}: total {} below self {}",
            f.name,
            f.total_counts.instructions,
            f.self_counts.instructions
        );
    }
    for c in chains(p) {
        assert!(
            c.iter().filter(|n| *n == "main").count() <= 1,
            "main nested in itself: {c:?}"
        );
        assert!(c.len() < 40, "a chain {} deep: {:?}", c.len(), &c[..12]);
    }
}

#[test]
fn longjmp_out_of_a_callee_leaves_its_frames() {
    let Some((_dir, path)) = build(LONGJMP, false) else {
        return;
    };
    let p = profile(&path);
    consistent(&p);
    assert_eq!(function(&p, "main").calls, 1);
    assert_eq!(function(&p, "thrower").calls, 3000);
    assert_eq!(function(&p, "deeper").calls, 3000);
    let f = function(&p, "f");
    assert_eq!(f.calls, 1000);
    assert_eq!(f.total_counts.instructions, f.self_counts.instructions);
    assert!(f.self_counts.instructions >= 1000 * 50);
    // f hangs under main directly
    let c = chains(&p);
    let f_chains: Vec<_> = c
        .iter()
        .filter(|c| c.last().is_some_and(|n| n == "f"))
        .collect();
    assert!(
        f_chains
            .iter()
            .all(|c| c.len() >= 2 && c[c.len() - 2] == "main"),
        "{f_chains:?}"
    );
}

#[test]
fn longjmp_to_an_outer_level_of_a_recursion_lands_at_that_level() {
    let Some((_dir, path)) = build(RECURSION, false) else {
        return;
    };
    let p = profile(&path);
    consistent(&p);
    assert_eq!(function(&p, "leaf").calls, 200);
    assert_eq!(function(&p, "rec").calls, 200 * 8);
    let c = chains(&p);
    let leaf: Vec<_> = c
        .iter()
        .filter(|c| c.last().is_some_and(|n| n == "leaf"))
        .collect();
    assert!(!leaf.is_empty());
    for chain in leaf {
        let recs = chain.iter().filter(|n| *n == "rec").count();
        assert_eq!(recs, 3, "leaf under {recs} levels of rec: {chain:?}");
    }
}

#[test]
fn exceptions_caught_in_a_loop_leave_the_frames_they_unwind() {
    let Some((_dir, path)) = build(EXCEPTIONS, true) else {
        return;
    };
    let p = profile(&path);
    consistent(&p);
    // found by their mangled names (`_ZL7throweri`); shown demangled (`thrower(int)`)
    let name = |part: &str| {
        p.functions
            .iter()
            .find(|f| f.mangled.as_deref().is_some_and(|m| m.contains(part)) && f.calls > 0)
            .map(|f| f.name.clone())
            .unwrap_or_else(|| panic!("no function like {part}"))
    };
    assert_eq!(function(&p, "main").calls, 1);
    assert_eq!(function(&p, &name("7thrower")).calls, 2000);
    let f = function(&p, &name("L1fj"));
    assert_eq!(f.calls, 1000);
    assert_eq!(f.total_counts.instructions, f.self_counts.instructions);
}

/// Code that rewrites its own page on every iteration of a loop (the guest `probe smc-code`):
/// every store flushes what is decoded and compiled, so the counts of compiled blocks are
/// kept across thousands of flushes before the observer hears them. The profile from counts
/// must still be the one from retire records.
#[test]
fn counts_kept_across_code_flushes_give_the_reference_profile() {
    let probe = outcrop_testkit::root().join("crates/outcrop/tests/fixtures/guest/probe");
    let mut spec = ProgramSpec::observed(&probe, "probe");
    spec.command.extend(["smc-code".into(), "3000".into()]);
    let p = profile_of(&spec);
    assert!(p.instructions > 3000 * 4, "{}", p.instructions);
}
