//! `outcrop-instrument`: counting instrumentation for GCC RISC-V assembly, with the sampling
//! frameworks the branch-on-random paper compares (§4.1, §5.3).
//!
//! [`instrument`] rewrites the output of `gcc -O2 -S` so that every variant of a program keeps
//! the same instructions, registers and layout and differs only in how a *site* is sampled,
//! the paper's own method (§5.3: "post-process the assembly to insert the different
//! instrumentation implementations"):
//!
//! * **Sites** ([`Sites`]): function entries (the paper's method-invocation profile), or both
//!   edges of every conditional branch (its microbenchmark's edge profile). The taken edge gets
//!   an out-of-line trampoline (`bCC …, T` becomes `bCC …, t` with `t: site; j T`), the
//!   fall-through edge its site right after the branch.
//! * **Sampling** ([`Sampling`]): `Full` increments the site's counter every time;
//!   `Counter` is Arnold–Ryder's software counter (Figure 1/4: load the global countdown,
//!   branch when it is zero, decrement, store; the sample path reloads it from the reset
//!   value); `Brr` is one `brr LEVEL, sample` (taken with probability `1/interval`).
//!   Sampled instrumentation is out of line (Figure 8): the common case falls through, and the
//!   sample path ends with a jump back.
//! * **Duplication**: No-Duplication puts a check at every site; Full-Duplication
//!   (Arnold–Ryder, Figure 11) keeps the original body free of instrumentation, appends a
//!   fully instrumented copy whose loop back edges return to the original, and puts one check
//!   at the function entry and at every loop head (a label some later branch jumps back to)
//!   that enters the copy when it samples.
//!
//! Scratch registers are chosen per function among `t0, t3–t6`: two that the function never
//! names are dead everywhere in it (they are caller-saved and carry no arguments). A function
//! that names them all, or contains inline assembly or data in its code (where registers
//! cannot be read from the text), spills two registers below `sp` around each use instead.
//!
//! The rewritten file defines, per file, a counter per site (`.Loutcrop_counts`), the sites'
//! names, and a descriptor in section `outcrop_sites` that the runtime
//! (`workloads/runtime/outcrop_rt.c`) walks at exit to write `COUNT NAME` lines to
//! `$OUTCROP_PROFILE`. The software counter is one shared object, `__outcrop_counter`
//! (countdown, reset), defined in a COMDAT group by every file that uses it.
//!
//! ```
//! use outcrop_instrument::{instrument, Config, Sampling, Sites};
//!
//! let src = "\t.text\n\t.globl\tf\n\t.type\tf, @function\nf:\n\tbeq\ta0,zero,.L2\n\
//!            \tli\ta0,1\n.L2:\n\tret\n\t.size\tf, .-f\n";
//! let cfg = Config { sites: Sites::Edges, sampling: Sampling::Brr, ..Config::default() };
//! let out = instrument(src, &cfg).unwrap();
//! assert_eq!(out.sites, vec!["f:5:taken", "f:5:fall"]);
//! assert!(out.text.contains(".insn j 0x0b, x9, ")); // brr 1/1024
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod asm;
mod rewrite;

use thiserror::Error;

/// What is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sites {
    /// Every function entry (method invocations).
    Entries,
    /// Both edges of every conditional branch.
    Edges,
}

impl Sites {
    /// Its command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Sites::Entries => "entries",
            Sites::Edges => "edges",
        }
    }
}

/// How a site decides to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// Every execution.
    Full,
    /// Arnold–Ryder's software counter: every `interval`-th check samples.
    Counter,
    /// One branch-on-random: each check samples with probability `1/interval`.
    Brr,
}

impl Sampling {
    /// Its command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Sampling::Full => "full",
            Sampling::Counter => "counter",
            Sampling::Brr => "brr",
        }
    }
}

/// What [`instrument`] does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// What is counted.
    pub sites: Sites,
    /// How sites sample.
    pub sampling: Sampling,
    /// Sampling interval: 1 sample per `interval` checks (counter: exactly; brr: a power of
    /// two from 2 to 65,536, on average). Ignored by [`Sampling::Full`].
    pub interval: u64,
    /// Arnold–Ryder Full-Duplication instead of a check at every site.
    pub full_duplication: bool,
    /// Whether a sample increments its site's counter; `false` leaves the sample path empty
    /// (the check and the jump back only), to measure the sampling framework's own cost
    /// (the paper's Figure 13, solid lines).
    pub count: bool,
    /// Qualifies the names of file-local (`static`) functions, `name@unit`, so that two
    /// files' local functions of one name stay apart; usually the source file's stem.
    pub unit: String,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            sites: Sites::Entries,
            sampling: Sampling::Full,
            interval: 1024,
            full_duplication: false,
            count: true,
            unit: String::new(),
        }
    }
}

impl Config {
    /// Checks the combination; the brr level for [`Sampling::Brr`].
    pub fn check(&self) -> Result<u8> {
        if self.full_duplication && self.sampling == Sampling::Full {
            return Err(Error::Config(
                "--full-duplication needs a sampled framework (--sampling counter or brr): \
                 with full instrumentation both copies would count every execution"
                    .into(),
            ));
        }
        if !self.count && self.sampling == Sampling::Full {
            return Err(Error::Config(
                "--framework-only needs a sampled framework (--sampling counter or brr): full \
                 instrumentation without counting inserts nothing"
                    .into(),
            ));
        }
        match self.sampling {
            Sampling::Full => Ok(0),
            Sampling::Counter => {
                if self.interval == 0 || self.interval > i64::MAX as u64 {
                    return Err(Error::Config(format!(
                        "--interval {}: the counter samples every N-th check, N from 1 to 2^63-1",
                        self.interval
                    )));
                }
                Ok(0)
            }
            Sampling::Brr => {
                let i = self.interval;
                if !(2..=65_536).contains(&i) || !i.is_power_of_two() {
                    return Err(Error::Config(format!(
                        "--interval {i}: brr samples with probability 1/2^(LEVEL+1), so the \
                         interval must be a power of two from 2 to 65536 (e.g. 1024)"
                    )));
                }
                Ok((i.trailing_zeros() - 1) as u8)
            }
        }
    }
}

/// The rewritten file and what was done to it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Instrumented {
    /// The rewritten assembly.
    pub text: String,
    /// The sites' names, in counter order (`f`, `f@unit`, `f:LINE:taken`, `f:LINE:fall`).
    pub sites: Vec<String>,
    /// Functions rewritten.
    pub functions: usize,
    /// Functions where no two scratch registers were free (or registers could not be read),
    /// so site code spills two registers below `sp`.
    pub spilled: Vec<String>,
    /// Loop heads given a Full-Duplication check.
    pub loop_heads: usize,
    /// Conditional branches inside inline assembly, left uninstrumented.
    pub skipped_branches: usize,
}

/// What can go wrong.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A bad combination of options.
    #[error("{0}")]
    Config(String),
    /// The assembly cannot be rewritten at `line` (1-based).
    #[error("line {line}: {detail}\n  {line} | {text}")]
    Asm {
        /// 1-based line number.
        line: usize,
        /// The line (truncated to 120 characters).
        text: String,
        /// What is wrong there.
        detail: String,
    },
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Rewrites GCC RISC-V assembly `src` as `cfg` says.
pub fn instrument(src: &str, cfg: &Config) -> Result<Instrumented> {
    let level = cfg.check()?;
    rewrite::rewrite(src, cfg, level)
}
