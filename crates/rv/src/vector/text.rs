//! Vector instructions as LLVM's and binutils' disassemblers print them
//! (`vadd.vv v8, v8, v9, v0.t`, `vle32.v v8, (a0)`, `vsetvli a0, a1, e32, m1, ta, ma`).

use crate::inst::{fname, xname};

/// OPI mnemonics by funct6 (without the `.vv`/`.vx`/`.vi` suffix).
fn opi_name(f6: u32, f3: u32) -> Option<&'static str> {
    Some(match f6 {
        0b000000 => "vadd",
        0b000001 => "vandn",
        0b000010 => "vsub",
        0b000011 => "vrsub",
        0b000100 => "vminu",
        0b000101 => "vmin",
        0b000110 => "vmaxu",
        0b000111 => "vmax",
        0b001001 => "vand",
        0b001010 => "vor",
        0b001011 => "vxor",
        0b001100 => "vrgather",
        0b001110 if f3 == 0 => "vrgatherei16",
        0b001110 => "vslideup",
        0b001111 => "vslidedown",
        0b010000 => "vadc",
        0b010001 => "vmadc",
        0b010010 => "vsbc",
        0b010011 => "vmsbc",
        0b010100 => "vror",
        0b010101 if f3 == 3 => "vror",
        0b010101 => "vrol",
        0b010111 => "vmerge",
        0b011000 => "vmseq",
        0b011001 => "vmsne",
        0b011010 => "vmsltu",
        0b011011 => "vmslt",
        0b011100 => "vmsleu",
        0b011101 => "vmsle",
        0b011110 => "vmsgtu",
        0b011111 => "vmsgt",
        0b100000 => "vsaddu",
        0b100001 => "vsadd",
        0b100010 => "vssubu",
        0b100011 => "vssub",
        0b100101 => "vsll",
        0b100111 => "vsmul",
        0b101000 => "vsrl",
        0b101001 => "vsra",
        0b101010 => "vssrl",
        0b101011 => "vssra",
        0b101100 => "vnsrl",
        0b101101 => "vnsra",
        0b101110 => "vnclipu",
        0b101111 => "vnclip",
        0b110000 => "vwredsumu",
        0b110001 => "vwredsum",
        0b110101 => "vwsll",
        _ => return None,
    })
}

fn opm_name(f6: u32) -> Option<&'static str> {
    const N: [&str; 64] = [
        "vredsum",
        "vredand",
        "vredor",
        "vredxor",
        "vredminu",
        "vredmin",
        "vredmaxu",
        "vredmax",
        "vaaddu",
        "vaadd",
        "vasubu",
        "vasub",
        "",
        "",
        "vslide1up",
        "vslide1down",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "vcompress",
        "vmandn",
        "vmand",
        "vmor",
        "vmxor",
        "vmorn",
        "vmnand",
        "vmnor",
        "vmxnor",
        "vdivu",
        "vdiv",
        "vremu",
        "vrem",
        "vmulhu",
        "vmul",
        "vmulhsu",
        "vmulh",
        "",
        "vmadd",
        "",
        "vnmsub",
        "",
        "vmacc",
        "",
        "vnmsac",
        "vwaddu",
        "vwadd",
        "vwsubu",
        "vwsub",
        "vwaddu",
        "vwadd",
        "vwsubu",
        "vwsub",
        "vwmulu",
        "",
        "vwmulsu",
        "vwmul",
        "vwmaccu",
        "vwmacc",
        "vwmaccus",
        "vwmaccsu",
    ];
    N.get(f6 as usize).copied().filter(|n| !n.is_empty())
}

fn opf_name(f6: u32) -> Option<&'static str> {
    const N: [&str; 64] = [
        "vfadd",
        "vfredusum",
        "vfsub",
        "vfredosum",
        "vfmin",
        "vfredmin",
        "vfmax",
        "vfredmax",
        "vfsgnj",
        "vfsgnjn",
        "vfsgnjx",
        "",
        "",
        "",
        "vfslide1up",
        "vfslide1down",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "vfmerge",
        "vmfeq",
        "vmfle",
        "",
        "vmflt",
        "vmfne",
        "vmfgt",
        "",
        "vmfge",
        "vfdiv",
        "vfrdiv",
        "",
        "",
        "vfmul",
        "",
        "",
        "vfrsub",
        "vfmadd",
        "vfnmadd",
        "vfmsub",
        "vfnmsub",
        "vfmacc",
        "vfnmacc",
        "vfmsac",
        "vfnmsac",
        "vfwadd",
        "vfwredusum",
        "vfwsub",
        "vfwredosum",
        "vfwadd",
        "",
        "vfwsub",
        "",
        "vfwmul",
        "",
        "",
        "",
        "vfwmacc",
        "vfwnmacc",
        "vfwmsac",
        "vfwnmsac",
    ];
    N.get(f6 as usize).copied().filter(|n| !n.is_empty())
}

/// The `vtype` immediate as assembly (`e32, m1, ta, ma`).
fn vtype_text(t: u32) -> String {
    let sew = 8u32 << ((t >> 3) & 7);
    let lmul = ["m1", "m2", "m4", "m8", "m?", "mf8", "mf4", "mf2"][(t & 7) as usize];
    let ta = if t & 0x40 != 0 { "ta" } else { "tu" };
    let ma = if t & 0x80 != 0 { "ma" } else { "mu" };
    format!("e{sew}, {lmul}, {ta}, {ma}")
}

/// The assembly text of the vector instruction `raw`, or `None` if it is not one.
pub fn disassemble(raw: u32) -> Option<String> {
    let (vd, rs1, vs2) = ((raw >> 7) & 31, (raw >> 15) & 31, (raw >> 20) & 31);
    let f3 = (raw >> 12) & 7;
    let f6 = raw >> 26;
    let vm = if raw >> 25 & 1 == 0 { ", v0.t" } else { "" };
    let x = |r: u32| xname(r as u8);
    match raw & 0x7f {
        0x07 | 0x27 => {
            let load = raw & 0x7f == 0x07;
            let eew = match f3 {
                0 => 8,
                5 => 16,
                6 => 32,
                7 => 64,
                _ => return None,
            };
            let nf = (raw >> 29) + 1;
            let seg = if nf > 1 {
                format!("seg{nf}")
            } else {
                String::new()
            };
            let (l, s) = if load { ("l", "") } else { ("s", "") };
            let _ = s;
            let text = match (raw >> 26) & 3 {
                0 => match vs2 {
                    0 => format!("v{l}{seg}e{eew}.v v{vd}, ({}){vm}", x(rs1)),
                    0x10 if load => format!("v{l}{seg}e{eew}ff.v v{vd}, ({}){vm}", x(rs1)),
                    8 if load => format!("vl{nf}re{eew}.v v{vd}, ({})", x(rs1)),
                    8 => format!("vs{nf}r.v v{vd}, ({})", x(rs1)),
                    0xb => format!("v{l}m.v v{vd}, ({})", x(rs1)),
                    _ => return None,
                },
                2 => format!("v{l}s{seg}e{eew}.v v{vd}, ({}), {}{vm}", x(rs1), x(vs2)),
                m => {
                    let o = if m == 3 { "o" } else { "u" };
                    format!("v{l}{o}xseg{nf}ei{eew}.v v{vd}, ({}), v{vs2}{vm}", x(rs1))
                        .replace("xseg1ei", "xei")
                }
            };
            Some(text)
        }
        0x57 if f3 == 7 => Some(if raw >> 31 == 0 {
            format!(
                "vsetvli {}, {}, {}",
                x(vd),
                x(rs1),
                vtype_text((raw >> 20) & 0x7ff)
            )
        } else if raw >> 30 == 3 {
            format!(
                "vsetivli {}, {rs1}, {}",
                x(vd),
                vtype_text((raw >> 20) & 0x3ff)
            )
        } else {
            format!("vsetvl {}, {}, {}", x(vd), x(rs1), x(vs2))
        }),
        0x57 => Some(op_v(raw, (vd, rs1, vs2), f3, f6, vm)?),
        _ => None,
    }
}

fn op_v(raw: u32, (vd, rs1, vs2): (u32, u32, u32), f3: u32, f6: u32, vm: &str) -> Option<String> {
    let x = |r: u32| xname(r as u8);
    if let Some(text) = special(raw, (vd, rs1, vs2), f3, f6, vm) {
        return text;
    }
    let simm = ((i64::from(rs1) << 59) >> 59).to_string();
    let carry_in = (matches!(f3, 0 | 3 | 4)
        && (matches!(f6, 0b010000 | 0b010010 | 0b010111)
            || (matches!(f6, 0b010001 | 0b010011) && raw >> 25 & 1 == 0)))
        || (f3 == 5 && f6 == 0b010111);
    let vm = if carry_in { ", v0" } else { vm };
    let (name, suffix, src1) = match f3 {
        0 => (opi_name(f6, 0)?, "vv", format!("v{rs1}")),
        4 => (opi_name(f6, 4)?, "vx", x(rs1).to_string()),
        3 => {
            let imm = if matches!(
                f6,
                0b001100 | 0b001110 | 0b001111 | 0b100101 | 0b101000..=0b101111 | 0b110101
            ) {
                rs1.to_string()
            } else if matches!(f6, 0b010100 | 0b010101) {
                (rs1 | (f6 & 1) << 5).to_string()
            } else {
                simm
            };
            (opi_name(f6, 3)?, "vi", imm)
        }
        2 => (opm_name(f6)?, "vv", format!("v{rs1}")),
        6 => (opm_name(f6)?, "vx", x(rs1).to_string()),
        1 => (opf_name(f6)?, "vv", format!("v{rs1}")),
        _ => (opf_name(f6)?, "vf", fname(rs1 as u8).to_string()),
    };
    let narrow = matches!((f3, f6), (0 | 3 | 4, 0b101100..=0b101111));
    let wide_src = matches!(
        (f3, f6),
        (2 | 6, 0b110100..=0b110111) | (1 | 5, 0b110100 | 0b110110)
    );
    let reduction = matches!((f3, f6), (2, 0..=7) | (0, 0b110000 | 0b110001))
        || matches!((f3, f6), (1, 1 | 3 | 5 | 7 | 0b110001 | 0b110011));
    let mask_logic = f3 == 2 && (0b011000..=0b011111).contains(&f6);
    let suffix = if f3 == 2 && f6 == 0b010111 {
        "vm".into()
    } else if carry_in || f6 == 0b010111 {
        format!("{suffix}m")
    } else if narrow || wide_src {
        format!("w{}", &suffix[1..])
    } else if reduction {
        "vs".into()
    } else if mask_logic {
        "mm".into()
    } else {
        suffix.into()
    };
    // multiply-adds print the multiplier first: vmacc.vv vd, vs1, vs2
    let fused = matches!(
        (f3, f6),
        (
            2 | 6,
            0b101001 | 0b101011 | 0b101101 | 0b101111 | 0b111100..=0b111111
        )
    ) || matches!((f3, f6), (1 | 5, 0b101000..=0b101111 | 0b111100..=0b111111));
    Some(if fused {
        format!("{name}.{suffix} v{vd}, {src1}, v{vs2}{vm}")
    } else {
        format!("{name}.{suffix} v{vd}, v{vs2}, {src1}{vm}")
    })
}

/// The forms whose operands are not `vd, vs2, vs1/rs1/imm` (moves, unary groups,
/// conversions): `None` if `raw` is not one, `Some(None)` if it is a reserved encoding.
fn special(
    raw: u32,
    (vd, rs1, vs2): (u32, u32, u32),
    f3: u32,
    f6: u32,
    vm: &str,
) -> Option<Option<String>> {
    let x = |r: u32| xname(r as u8);
    let simm = ((i64::from(rs1) << 59) >> 59).to_string();
    let text = match (f3, f6) {
        (2, 0b010000) => match rs1 {
            0 => format!("vmv.x.s {}, v{vs2}", x(vd)),
            0x10 => format!("vcpop.m {}, v{vs2}{vm}", x(vd)),
            0x11 => format!("vfirst.m {}, v{vs2}{vm}", x(vd)),
            _ => return Some(None),
        },
        (6, 0b010000) => format!("vmv.s.x v{vd}, {}", x(rs1)),
        (1, 0b010000) => format!("vfmv.f.s {}, v{vs2}", fname(vd as u8)),
        (5, 0b010000) => format!("vfmv.s.f v{vd}, {}", fname(rs1 as u8)),
        (2, 0b010010) => {
            let n = match rs1 {
                2 => "vzext.vf8",
                3 => "vsext.vf8",
                4 => "vzext.vf4",
                5 => "vsext.vf4",
                6 => "vzext.vf2",
                7 => "vsext.vf2",
                8 => "vbrev8.v",
                9 => "vrev8.v",
                10 => "vbrev.v",
                12 => "vclz.v",
                13 => "vctz.v",
                14 => "vcpop.v",
                _ => return Some(None),
            };
            format!("{n} v{vd}, v{vs2}{vm}")
        }
        (2, 0b010100) => {
            let n = match rs1 {
                1 => "vmsbf.m",
                2 => "vmsof.m",
                3 => "vmsif.m",
                0x10 => "viota.m",
                0x11 => return Some(Some(format!("vid.v v{vd}{vm}"))),
                _ => return Some(None),
            };
            format!("{n} v{vd}, v{vs2}{vm}")
        }
        (1, 0b010010) => {
            const N: [&str; 24] = [
                "vfcvt.xu.f.v",
                "vfcvt.x.f.v",
                "vfcvt.f.xu.v",
                "vfcvt.f.x.v",
                "",
                "",
                "vfcvt.rtz.xu.f.v",
                "vfcvt.rtz.x.f.v",
                "vfwcvt.xu.f.v",
                "vfwcvt.x.f.v",
                "vfwcvt.f.xu.v",
                "vfwcvt.f.x.v",
                "vfwcvt.f.f.v",
                "",
                "vfwcvt.rtz.xu.f.v",
                "vfwcvt.rtz.x.f.v",
                "vfncvt.xu.f.w",
                "vfncvt.x.f.w",
                "vfncvt.f.xu.w",
                "vfncvt.f.x.w",
                "vfncvt.f.f.w",
                "vfncvt.rod.f.f.w",
                "vfncvt.rtz.xu.f.w",
                "vfncvt.rtz.x.f.w",
            ];
            let Some(n) = N.get(rs1 as usize).filter(|n| !n.is_empty()) else {
                return Some(None);
            };
            format!("{n} v{vd}, v{vs2}{vm}")
        }
        (1, 0b010011) => {
            let n = match rs1 {
                0 => "vfsqrt.v",
                4 => "vfrsqrt7.v",
                5 => "vfrec7.v",
                0x10 => "vfclass.v",
                _ => return Some(None),
            };
            format!("{n} v{vd}, v{vs2}{vm}")
        }
        (3, 0b100111) if raw >> 25 & 1 == 1 => {
            format!("vmv{}r.v v{vd}, v{vs2}", rs1 + 1)
        }
        (0 | 3 | 4, 0b010111) if raw >> 25 & 1 == 1 => {
            let src = match f3 {
                0 => format!("v.v v{vd}, v{rs1}"),
                4 => format!("v.x v{vd}, {}", x(rs1)),
                _ => format!("v.i v{vd}, {simm}"),
            };
            format!("vmv.{src}")
        }
        (5, 0b010111) if raw >> 25 & 1 == 1 => {
            format!("vfmv.v.f v{vd}, {}", fname(rs1 as u8))
        }
        _ => return None,
    };
    Some(Some(text))
}
