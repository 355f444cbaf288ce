//! Golden-data test for `outcrop_rv::fpu`: every case recorded from real RISC-V F/D
//! instructions (run under `qemu-riscv64-static`, see `tests/fixtures/fpu/README.md`) must be
//! reproduced bit for bit and flag for flag, by the public (fast-path-first) API and by the
//! slow path alone.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use outcrop_rv::fpu::{self, Rm};

/// The committed golden file (zstd-compressed text).
const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/fpu/golden.txt.zst"
);

/// Which implementation to evaluate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// The public API (fast path in RNE, slow path otherwise).
    Api,
    /// `fpu::slow` only.
    Slow,
}

/// Picks the public or the slow-path version of a function.
macro_rules! pick {
    ($path:expr, $name:ident) => {
        match $path {
            Path::Api => fpu::$name as _,
            Path::Slow => fpu::slow::$name as _,
        }
    };
}

/// One parsed golden line.
#[derive(Debug)]
struct Case<'a> {
    line_no: usize,
    line: &'a str,
    op: &'a str,
    rm: Option<Rm>,
    operands: Vec<u64>,
    result: u64,
    flags: u8,
}

fn parse_rm(s: &str) -> Result<Option<Rm>, String> {
    Ok(match s {
        "-" => None,
        "rne" => Some(Rm::Rne),
        "rtz" => Some(Rm::Rtz),
        "rdn" => Some(Rm::Rdn),
        "rup" => Some(Rm::Rup),
        "rmm" => Some(Rm::Rmm),
        other => return Err(format!("unknown rounding mode {other:?}")),
    })
}

fn parse_line(line_no: usize, line: &str) -> Result<Case<'_>, String> {
    let fields: Vec<&str> = line.split_ascii_whitespace().collect();
    if fields.len() < 5 {
        return Err(format!("line {line_no}: too few fields: {line:?}"));
    }
    let hex = |s: &str| {
        u64::from_str_radix(s, 16).map_err(|e| format!("line {line_no}: bad hex {s:?}: {e}"))
    };
    let n = fields.len();
    Ok(Case {
        line_no,
        line,
        op: fields[0],
        rm: parse_rm(fields[1]).map_err(|e| format!("line {line_no}: {e}"))?,
        operands: fields[2..n - 2]
            .iter()
            .map(|s| hex(s))
            .collect::<Result<_, _>>()?,
        result: hex(fields[n - 2])?,
        flags: u8::try_from(hex(fields[n - 1])?)
            .map_err(|e| format!("line {line_no}: flags: {e}"))?,
    })
}

fn sext32(x: u32) -> u64 {
    x as i32 as i64 as u64
}

/// Evaluates one golden case in rounding mode `rm` on `path`, returning (result as printed in
/// the golden file, flags).
fn eval(path: Path, op: &str, rm: Rm, x: &[u64]) -> Result<(u64, u8), String> {
    let mut fl = 0u8;
    let arity = |n: usize| {
        if x.len() == n {
            Ok(())
        } else {
            Err(format!("{op}: expected {n} operands, got {}", x.len()))
        }
    };
    let s = |v: u64| v as u32;
    let r: u64 = match op {
        "fadd.s" | "fsub.s" | "fmul.s" | "fdiv.s" => {
            arity(2)?;
            let f: fn(u32, u32, Rm, &mut u8) -> u32 = match op {
                "fadd.s" => pick!(path, f32_add),
                "fsub.s" => pick!(path, f32_sub),
                "fmul.s" => pick!(path, f32_mul),
                _ => pick!(path, f32_div),
            };
            f(s(x[0]), s(x[1]), rm, &mut fl).into()
        }
        "fadd.d" | "fsub.d" | "fmul.d" | "fdiv.d" => {
            arity(2)?;
            let f: fn(u64, u64, Rm, &mut u8) -> u64 = match op {
                "fadd.d" => pick!(path, f64_add),
                "fsub.d" => pick!(path, f64_sub),
                "fmul.d" => pick!(path, f64_mul),
                _ => pick!(path, f64_div),
            };
            f(x[0], x[1], rm, &mut fl)
        }
        "fmadd.s" | "fmsub.s" | "fnmsub.s" | "fnmadd.s" => {
            arity(3)?;
            let f: fn(u32, u32, u32, Rm, &mut u8) -> u32 = match op {
                "fmadd.s" => pick!(path, f32_madd),
                "fmsub.s" => pick!(path, f32_msub),
                "fnmsub.s" => pick!(path, f32_nmsub),
                _ => pick!(path, f32_nmadd),
            };
            f(s(x[0]), s(x[1]), s(x[2]), rm, &mut fl).into()
        }
        "fmadd.d" | "fmsub.d" | "fnmsub.d" | "fnmadd.d" => {
            arity(3)?;
            let f: fn(u64, u64, u64, Rm, &mut u8) -> u64 = match op {
                "fmadd.d" => pick!(path, f64_madd),
                "fmsub.d" => pick!(path, f64_msub),
                "fnmsub.d" => pick!(path, f64_nmsub),
                _ => pick!(path, f64_nmadd),
            };
            f(x[0], x[1], x[2], rm, &mut fl)
        }
        "fmin.s" | "fmax.s" => {
            arity(2)?;
            let f: fn(u32, u32, &mut u8) -> u32 = if op == "fmin.s" {
                pick!(path, f32_min)
            } else {
                pick!(path, f32_max)
            };
            f(s(x[0]), s(x[1]), &mut fl).into()
        }
        "fmin.d" | "fmax.d" => {
            arity(2)?;
            let f: fn(u64, u64, &mut u8) -> u64 = if op == "fmin.d" {
                pick!(path, f64_min)
            } else {
                pick!(path, f64_max)
            };
            f(x[0], x[1], &mut fl)
        }
        "feq.s" | "flt.s" | "fle.s" => {
            arity(2)?;
            let f: fn(u32, u32, &mut u8) -> bool = match op {
                "feq.s" => pick!(path, f32_eq),
                "flt.s" => pick!(path, f32_lt),
                _ => pick!(path, f32_le),
            };
            f(s(x[0]), s(x[1]), &mut fl).into()
        }
        "feq.d" | "flt.d" | "fle.d" => {
            arity(2)?;
            let f: fn(u64, u64, &mut u8) -> bool = match op {
                "feq.d" => pick!(path, f64_eq),
                "flt.d" => pick!(path, f64_lt),
                _ => pick!(path, f64_le),
            };
            f(x[0], x[1], &mut fl).into()
        }
        "fsqrt.s" => {
            arity(1)?;
            let f: fn(u32, Rm, &mut u8) -> u32 = pick!(path, f32_sqrt);
            f(s(x[0]), rm, &mut fl).into()
        }
        "fsqrt.d" => {
            arity(1)?;
            let f: fn(u64, Rm, &mut u8) -> u64 = pick!(path, f64_sqrt);
            f(x[0], rm, &mut fl)
        }
        "fclass.s" => {
            arity(1)?;
            let f: fn(u32) -> u32 = pick!(path, f32_classify);
            f(s(x[0])).into()
        }
        "fclass.d" => {
            arity(1)?;
            let f: fn(u64) -> u32 = pick!(path, f64_classify);
            f(x[0]).into()
        }
        "fcvt.d.s" => {
            arity(1)?;
            let f: fn(u32, &mut u8) -> u64 = pick!(path, f32_to_f64);
            f(s(x[0]), &mut fl)
        }
        "fcvt.s.d" => {
            arity(1)?;
            let f: fn(u64, Rm, &mut u8) -> u32 = pick!(path, f64_to_f32);
            f(x[0], rm, &mut fl).into()
        }
        "fmv.s" => {
            arity(1)?;
            // fsgnj.s rd, rs, rs: unbox, keep the value, box.
            fpu::nan_box(fpu::nan_unbox(x[0]))
        }
        "fcvt.w.s" | "fcvt.wu.s" | "fcvt.l.s" | "fcvt.lu.s" => {
            arity(1)?;
            let a = s(x[0]);
            match op {
                "fcvt.w.s" => {
                    let f: fn(u32, Rm, &mut u8) -> i32 = pick!(path, f32_to_i32);
                    f(a, rm, &mut fl) as i64 as u64
                }
                "fcvt.wu.s" => {
                    let f: fn(u32, Rm, &mut u8) -> u32 = pick!(path, f32_to_u32);
                    sext32(f(a, rm, &mut fl))
                }
                "fcvt.l.s" => {
                    let f: fn(u32, Rm, &mut u8) -> i64 = pick!(path, f32_to_i64);
                    f(a, rm, &mut fl) as u64
                }
                _ => {
                    let f: fn(u32, Rm, &mut u8) -> u64 = pick!(path, f32_to_u64);
                    f(a, rm, &mut fl)
                }
            }
        }
        "fcvt.w.d" | "fcvt.wu.d" | "fcvt.l.d" | "fcvt.lu.d" => {
            arity(1)?;
            let a = x[0];
            match op {
                "fcvt.w.d" => {
                    let f: fn(u64, Rm, &mut u8) -> i32 = pick!(path, f64_to_i32);
                    f(a, rm, &mut fl) as i64 as u64
                }
                "fcvt.wu.d" => {
                    let f: fn(u64, Rm, &mut u8) -> u32 = pick!(path, f64_to_u32);
                    sext32(f(a, rm, &mut fl))
                }
                "fcvt.l.d" => {
                    let f: fn(u64, Rm, &mut u8) -> i64 = pick!(path, f64_to_i64);
                    f(a, rm, &mut fl) as u64
                }
                _ => {
                    let f: fn(u64, Rm, &mut u8) -> u64 = pick!(path, f64_to_u64);
                    f(a, rm, &mut fl)
                }
            }
        }
        "fcvt.s.w" | "fcvt.s.wu" | "fcvt.s.l" | "fcvt.s.lu" => {
            arity(1)?;
            let v = x[0];
            let r = match op {
                "fcvt.s.w" => {
                    let f: fn(i32, Rm, &mut u8) -> u32 = pick!(path, f32_from_i32);
                    f(v as u32 as i32, rm, &mut fl)
                }
                "fcvt.s.wu" => {
                    let f: fn(u32, Rm, &mut u8) -> u32 = pick!(path, f32_from_u32);
                    f(v as u32, rm, &mut fl)
                }
                "fcvt.s.l" => {
                    let f: fn(i64, Rm, &mut u8) -> u32 = pick!(path, f32_from_i64);
                    f(v as i64, rm, &mut fl)
                }
                _ => {
                    let f: fn(u64, Rm, &mut u8) -> u32 = pick!(path, f32_from_u64);
                    f(v, rm, &mut fl)
                }
            };
            r.into()
        }
        "fcvt.d.w" | "fcvt.d.wu" | "fcvt.d.l" | "fcvt.d.lu" => {
            arity(1)?;
            let v = x[0];
            match op {
                "fcvt.d.w" => {
                    let f: fn(i32, Rm, &mut u8) -> u64 = pick!(path, f64_from_i32);
                    f(v as u32 as i32, rm, &mut fl)
                }
                "fcvt.d.wu" => {
                    let f: fn(u32, Rm, &mut u8) -> u64 = pick!(path, f64_from_u32);
                    f(v as u32, rm, &mut fl)
                }
                "fcvt.d.l" => {
                    let f: fn(i64, Rm, &mut u8) -> u64 = pick!(path, f64_from_i64);
                    f(v as i64, rm, &mut fl)
                }
                _ => {
                    let f: fn(u64, Rm, &mut u8) -> u64 = pick!(path, f64_from_u64);
                    f(v, rm, &mut fl)
                }
            }
        }
        other => return Err(format!("unknown op {other:?}")),
    };
    Ok((r, fl))
}

fn flag_names(f: u8) -> String {
    let names = [
        (fpu::flags::NV, "NV"),
        (fpu::flags::DZ, "DZ"),
        (fpu::flags::OF, "OF"),
        (fpu::flags::UF, "UF"),
        (fpu::flags::NX, "NX"),
    ];
    let v: Vec<&str> = names
        .iter()
        .filter(|(bit, _)| f & bit != 0)
        .map(|(_, n)| *n)
        .collect();
    if v.is_empty() {
        "-".to_string()
    } else {
        v.join("|")
    }
}

#[test]
fn golden_cases_match_riscv_hardware_semantics() {
    // OUTCROP_FPU_GOLDEN may name another (larger, uncommitted) file from the same generator,
    // plain or .zst, for soak runs; see the fixture README.
    let path = std::env::var("OUTCROP_FPU_GOLDEN").unwrap_or_else(|_| GOLDEN.to_string());
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let raw = if path.ends_with(".zst") {
        zstd::decode_all(&bytes[..]).expect("decompressing golden data")
    } else {
        bytes
    };
    let text = String::from_utf8(raw).expect("golden data is UTF-8");

    let mut per_op: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut checked = 0usize;
    let mut failures = 0usize;
    let mut report = String::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let case = parse_line(i + 1, line).unwrap_or_else(|e| panic!("{e}"));
        // Lines without a rounding mode are rounding-mode independent: check all five.
        let modes: Vec<Rm> = match case.rm {
            Some(rm) => vec![rm],
            None => Rm::ALL.to_vec(),
        };
        let entry = per_op.entry(case.op).or_default();
        entry.0 += 1;
        let mut bad = false;
        for path in [Path::Api, Path::Slow] {
            for &rm in &modes {
                let got = eval(path, case.op, rm, &case.operands)
                    .unwrap_or_else(|e| panic!("line {}: {e}", case.line_no));
                checked += 1;
                if got != (case.result, case.flags) {
                    bad = true;
                    failures += 1;
                    if failures <= 40 {
                        let _ = writeln!(
                            report,
                            "line {} [{path:?}, {rm:?}]: {}\n    expected {:x} {}  got {:x} {}",
                            case.line_no,
                            case.line,
                            case.result,
                            flag_names(case.flags),
                            got.0,
                            flag_names(got.1),
                        );
                    }
                }
            }
        }
        if bad {
            entry.1 += 1;
        }
    }
    let mut summary = String::new();
    for (op, (n, bad)) in &per_op {
        let _ = writeln!(summary, "  {op:<10} {n:>7} cases, {bad} mismatching");
    }
    eprintln!(
        "golden fpu: {checked} evaluations over {} ops\n{summary}",
        per_op.len()
    );
    assert!(
        per_op.values().map(|v| v.0).sum::<usize>() > 100_000,
        "golden file looks truncated"
    );
    assert_eq!(
        failures, 0,
        "{failures} golden mismatches; first ones:\n{report}\nper op:\n{summary}"
    );
}
