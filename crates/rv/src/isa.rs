//! The extensions the machine implements, and the set a run enables (`--isa`).
//!
//! Every entry of the opcode table belongs to one [`Ext`]; a compressed instruction also needs
//! C (or Zcb / Zcmop for the encodings those add). An [`Isa`] is a set of extensions written as
//! GCC's and clang's `-march` strings are (`rv64gc_zba_zbb`), or as a RISC-V profile name
//! (`rva22u64`); an instruction of an extension outside the set decodes as illegal, so a user
//! can see what a program needs. [`unimplemented`] names the extension of an encoding the
//! machine does not implement at all (V, Zfh, Q, cache-block operations…), for fault messages.

use std::fmt;

/// One ISA extension (or base) the machine implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Ext {
    /// RV64I, the base integer ISA.
    I,
    /// Integer multiply and divide.
    M,
    /// Atomics.
    A,
    /// Single-precision floating point.
    F,
    /// Double-precision floating point.
    D,
    /// Compressed instructions (16-bit encodings).
    C,
    /// Control and status register instructions.
    Zicsr,
    /// `fence.i`.
    Zifencei,
    /// Address generation (`sh1add`, `add.uw`…).
    Zba,
    /// Basic bit manipulation (`clz`, `andn`, `rev8`…).
    Zbb,
    /// Carry-less multiplication (`clmul`, `clmulh`, `clmulr`).
    Zbc,
    /// Single-bit instructions (`bset`, `bext`…).
    Zbs,
    /// Integer conditional operations (`czero.eqz`, `czero.nez`).
    Zicond,
    /// Additional floating-point instructions (`fli`, `fround`, `fminm`…).
    Zfa,
    /// Additional compressed instructions (`c.lbu`, `c.zext.b`, `c.mul`…).
    Zcb,
    /// May-be-operations (`mop.r.N`, `mop.rr.N`: write zero).
    Zimop,
    /// Compressed may-be-operations (`c.mop.N`: no-ops).
    Zcmop,
    /// Wait on reservation set (`wrs.nto`, `wrs.sto`: no-ops on one hart).
    Zawrs,
    /// Outcrop's branch-on-random (custom-0).
    Xbrr,
    /// Vectors (RVV 1.0).
    V,
    /// Vector basic bit manipulation (`vandn`, `vrev8`, `vclz`, `vwsll`…).
    Zvbb,
    /// Vector data-independent execution latency (a promise, no instructions: every vector
    /// instruction's time here is independent of its data).
    Zvkt,
    /// Vector half-precision conversions (`vfwcvt.f.f.v`, `vfncvt.f.f.w` at SEW 16).
    Zvfhmin,
    /// Cache-block management (`cbo.clean`, `cbo.flush`, `cbo.inval`: no effect here).
    Zicbom,
    /// Cache-block zero (`cbo.zero`: 64 bytes).
    Zicboz,
}

impl Ext {
    /// Every extension, in canonical `-march` order.
    pub const ALL: [Ext; 25] = [
        Ext::I,
        Ext::M,
        Ext::A,
        Ext::F,
        Ext::D,
        Ext::C,
        Ext::Zicsr,
        Ext::Zifencei,
        Ext::Zba,
        Ext::Zbb,
        Ext::Zbc,
        Ext::Zbs,
        Ext::Zicond,
        Ext::Zfa,
        Ext::Zcb,
        Ext::Zimop,
        Ext::Zcmop,
        Ext::Zawrs,
        Ext::Xbrr,
        Ext::V,
        Ext::Zvbb,
        Ext::Zvkt,
        Ext::Zvfhmin,
        Ext::Zicbom,
        Ext::Zicboz,
    ];

    /// The name as in `-march` strings (`zba`, `m`).
    pub fn name(self) -> &'static str {
        match self {
            Ext::I => "i",
            Ext::M => "m",
            Ext::A => "a",
            Ext::F => "f",
            Ext::D => "d",
            Ext::C => "c",
            Ext::Zicsr => "zicsr",
            Ext::Zifencei => "zifencei",
            Ext::Zba => "zba",
            Ext::Zbb => "zbb",
            Ext::Zbc => "zbc",
            Ext::Zbs => "zbs",
            Ext::Zicond => "zicond",
            Ext::Zfa => "zfa",
            Ext::Zcb => "zcb",
            Ext::Zimop => "zimop",
            Ext::Zcmop => "zcmop",
            Ext::Zawrs => "zawrs",
            Ext::Xbrr => "xbrr",
            Ext::V => "v",
            Ext::Zvbb => "zvbb",
            Ext::Zvkt => "zvkt",
            Ext::Zvfhmin => "zvfhmin",
            Ext::Zicbom => "zicbom",
            Ext::Zicboz => "zicboz",
        }
    }

    /// The name as the specification writes it (`Zba`, `M`).
    pub fn title(self) -> String {
        let n = self.name();
        let mut c = n.chars();
        match c.next() {
            Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
            None => String::new(),
        }
    }

    const fn bit(self) -> u32 {
        1 << self as u8
    }
}

/// A set of enabled extensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Isa(u32);

/// Extensions in `g` (besides I).
const G: [Ext; 6] = [Ext::M, Ext::A, Ext::F, Ext::D, Ext::Zicsr, Ext::Zifencei];

impl Default for Isa {
    fn default() -> Self {
        Isa::ALL
    }
}

impl Isa {
    /// Everything the machine implements (the default).
    pub const ALL: Isa = Isa((1 << Ext::ALL.len() as u32) - 1);
    /// RV64GC with branch-on-random: the machine before the B, Zicond, Zcb and Zfa extensions.
    pub const RV64GC: Isa = Isa(Ext::I.bit()
        | Ext::M.bit()
        | Ext::A.bit()
        | Ext::F.bit()
        | Ext::D.bit()
        | Ext::C.bit()
        | Ext::Zicsr.bit()
        | Ext::Zifencei.bit()
        | Ext::Xbrr.bit());

    /// Whether `ext` is enabled.
    #[inline]
    pub fn has(self, ext: Ext) -> bool {
        self.0 & ext.bit() != 0
    }

    /// `AT_HWCAP` as Linux computes it for this set: one bit per single-letter extension
    /// (`'a'` is bit 0), for I, M, A, F, D, C and V.
    pub fn hwcap(self) -> u64 {
        [
            (Ext::I, b'i'),
            (Ext::M, b'm'),
            (Ext::A, b'a'),
            (Ext::F, b'f'),
            (Ext::D, b'd'),
            (Ext::C, b'c'),
            (Ext::V, b'v'),
        ]
        .into_iter()
        .filter(|&(e, _)| self.has(e))
        .fold(0, |h, (_, letter)| h | 1 << (letter - b'a'))
    }

    /// This set with `ext` added.
    pub fn with(self, ext: Ext) -> Isa {
        Isa(self.0 | ext.bit())
    }

    /// This set without `ext`.
    pub fn without(self, ext: Ext) -> Isa {
        Isa(self.0 & !ext.bit())
    }

    /// Parses an `-march`-style string (`rv64gc`, `rv64imac_zba_zbb`, `rv64gc_zicond_xbrr`) or a
    /// profile name (`rva20u64`, `rva22u64`, `rva23u64`).
    /// Branch-on-random (`xbrr`) stays enabled unless the string starts with `-` … no: it is
    /// enabled only when named or in the default set. The base `i` is always required.
    pub fn parse(s: &str) -> Result<Isa, String> {
        let lower = s.trim().to_ascii_lowercase();
        match lower.as_str() {
            "all" | "default" => return Ok(Isa::ALL),
            "rva20u64" => return Ok(Isa::RV64GC),
            "rva22u64" => {
                // RVA22U64 mandates Zba, Zbb, Zbs and hints (Zihintpause, Zicbop) beyond RVA20
                return Ok(Isa::RV64GC.with(Ext::Zba).with(Ext::Zbb).with(Ext::Zbs));
            }
            "rva23u64" => {
                // RVA23U64 adds V, Zvbb, Zvkt, Zvfhmin, Zicond, Zcb, Zfa, Zimop, Zcmop,
                // Zawrs and the cache-block operations to RVA22U64 (Zbc is optional)
                return Ok([
                    Ext::V,
                    Ext::Zvbb,
                    Ext::Zvkt,
                    Ext::Zvfhmin,
                    Ext::Zicond,
                    Ext::Zcb,
                    Ext::Zfa,
                    Ext::Zimop,
                    Ext::Zcmop,
                    Ext::Zawrs,
                    Ext::Zicbom,
                    Ext::Zicboz,
                ]
                .into_iter()
                .fold(Isa::parse("rva22u64")?, Isa::with));
            }
            _ => {}
        }
        let Some(rest) = lower.strip_prefix("rv64") else {
            return Err(format!(
                "`{s}`: an ISA string starts with rv64 (e.g. rv64gc_zba_zbb) or is a profile \
                 (rva20u64, rva22u64, rva23u64)"
            ));
        };
        let mut parts = rest.split('_');
        let letters = parts.next().unwrap_or("");
        let mut isa = Isa(Ext::Xbrr.bit());
        for c in letters.chars() {
            isa = match c {
                'i' => isa.with(Ext::I),
                'g' => G.iter().fold(isa.with(Ext::I), |i, &e| i.with(e)),
                'm' => isa.with(Ext::M),
                'a' => isa.with(Ext::A),
                'f' => isa.with(Ext::F).with(Ext::Zicsr),
                'd' => isa.with(Ext::D).with(Ext::F).with(Ext::Zicsr),
                'c' => isa.with(Ext::C),
                'v' => isa.with(Ext::V).with(Ext::Zicsr),
                other => {
                    return Err(format!(
                        "`{s}`: unknown or unimplemented single-letter extension `{other}` \
                         (implemented: i m a f d c v, and g for imafd_zicsr_zifencei)"
                    ))
                }
            };
        }
        if !isa.has(Ext::I) {
            return Err(format!("`{s}`: the base ISA `i` (or `g`) is required"));
        }
        for name in parts {
            if name.is_empty() {
                continue;
            }
            // hint extensions decode as no-ops whatever the set (base encodings)
            if matches!(
                name,
                "zihintpause" | "zihintntl" | "zicbop" | "zca" | "zcd" | "zmmul"
            ) {
                isa = match name {
                    "zca" | "zcd" => isa.with(Ext::C),
                    "zmmul" => isa.with(Ext::M),
                    _ => isa,
                };
                continue;
            }
            let Some(ext) = Ext::ALL.iter().find(|e| e.name() == name) else {
                return Err(format!(
                    "`{s}`: unknown or unimplemented extension `{name}` (implemented: {})",
                    Ext::ALL
                        .iter()
                        .filter(|&&e| e.name().len() > 1 && e != Ext::Xbrr)
                        .map(|e| e.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            };
            isa = isa.with(*ext);
        }
        Ok(isa)
    }

    /// The enabled extensions.
    pub fn extensions(self) -> impl Iterator<Item = Ext> {
        Ext::ALL.into_iter().filter(move |&e| self.has(e))
    }
}

impl fmt::Display for Isa {
    /// The set as an `-march` string: `rv64imafdc_zicsr_zifencei_zba…`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("rv64")?;
        for e in self.extensions().filter(|e| e.name().len() == 1) {
            f.write_str(e.name())?;
        }
        for e in self
            .extensions()
            .filter(|&e| e.name().len() > 1 && e != Ext::Xbrr)
        {
            write!(f, "_{}", e.name())?;
        }
        Ok(())
    }
}

/// The extension an encoding the machine does not implement belongs to, when it can be told
/// from the encoding: `V` for vector instructions (and their loads and stores), `Zfh` and
/// `Q` for half- and quad-precision arithmetic, `Zicbom`/`Zicboz` for cache-block operations,
/// the `Zacas`/`Zabha` atomics. `None` for an encoding reserved everywhere.
pub fn unimplemented(raw: u32, len: u8) -> Option<&'static str> {
    if len != 4 {
        return None;
    }
    let major = raw & 0x7f;
    let f3 = (raw >> 12) & 7;
    match major {
        0x07 | 0x27 if f3 == 1 => Some("Zfh (half-precision loads and stores)"),
        0x07 | 0x27 if f3 == 4 => Some("Q (quad-precision loads and stores)"),
        0x43 | 0x47 | 0x4b | 0x4f | 0x53 => match (raw >> 25) & 3 {
            2 => Some("Zfh (half precision)"),
            3 => Some("Q (quad precision)"),
            _ => None,
        },
        0x2f if (raw >> 27) == 0b00101 => Some("Zacas (compare and swap)"),
        0x2f if matches!(f3, 0 | 1) => Some("Zabha (byte and halfword atomics)"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn march_strings_round_trip() {
        let isa = Isa::parse("rv64gc_zba_zbb").unwrap();
        assert!(isa.has(Ext::Zba) && isa.has(Ext::Zbb) && !isa.has(Ext::Zbs));
        assert!(isa.has(Ext::Zifencei) && isa.has(Ext::C) && isa.has(Ext::Xbrr));
        assert_eq!(isa.to_string(), "rv64imafdc_zicsr_zifencei_zba_zbb");
        assert_eq!(Isa::parse(&isa.to_string()).unwrap(), isa);
        assert_eq!(Isa::parse(&Isa::ALL.to_string()).unwrap(), Isa::ALL);
        assert_eq!(Isa::parse("RV64GC").unwrap(), Isa::RV64GC);
        assert_eq!(Isa::parse("rv64gc_xbrr").unwrap(), Isa::RV64GC);
        let p = Isa::parse("rva22u64").unwrap();
        assert!(p.has(Ext::Zbs) && !p.has(Ext::Zicond) && !p.has(Ext::V));
        let p = Isa::parse("rva23u64").unwrap();
        assert!(p.has(Ext::V) && p.has(Ext::Zvbb) && p.has(Ext::Zicboz) && !p.has(Ext::Zbc));
        assert!(Isa::parse("rv64gcv").unwrap().has(Ext::V));
    }

    #[test]
    fn bad_strings_say_why() {
        for (s, says) in [
            ("rv32gc", "starts with rv64"),
            ("rv64gc_zbkb", "zbkb"),
            ("rv64mac", "`i`"),
            ("rv64gq", "`q`"),
        ] {
            let e = Isa::parse(s).unwrap_err();
            assert!(e.contains(says), "{s}: {e}");
        }
    }

    #[test]
    fn unimplemented_encodings_are_named() {
        // fadd.h fa0, fa1, fa2 = 0x04c5f553
        assert_eq!(unimplemented(0x04c5f553, 4), Some("Zfh (half precision)"));
        assert_eq!(unimplemented(0xffffffff, 4), None);
    }
}
