//! The vector unit's own checks; whole programs are checked against qemu in the integration
//! tests (`vector` guests).

use super::*;

#[test]
fn vsetvl_grants_min_of_avl_and_vlmax() {
    let mut v = VState::new(128);
    // e32, m1: VLMAX 4
    assert_eq!(v.set_vtype(Some(10), 0b010_000), 4);
    assert_eq!(v.set_vtype(Some(3), 0b010_000), 3);
    // e8, m8: VLMAX 128
    assert_eq!(v.set_vtype(Some(u64::MAX), 0b000_011), 128);
    // e64, mf8 is unsupported: vill
    assert_eq!(v.set_vtype(Some(4), 0b011_101), 0);
    assert_eq!(v.vtype, VILL);
    // reserved vlmul 4
    v.set_vtype(Some(4), 0b000_100);
    assert_eq!(v.vtype, VILL);
}

#[test]
fn fixed_point_rounding_follows_vxrm() {
    // 0b1011 >> 2 = 0b10 rem 0b11
    assert_eq!(round_inc(0b1011, 2, 0), 1); // rnu
    assert_eq!(round_inc(0b1010, 2, 1), 0); // rne: exactly half, even
    assert_eq!(round_inc(0b1110, 2, 1), 1); // rne: half, odd
    assert_eq!(round_inc(0b1011, 2, 2), 0); // rdn
    assert_eq!(round_inc(0b1001, 2, 3), 1); // rod: even result, inexact
    assert_eq!(round_inc(0b1101, 2, 3), 0);
}

#[test]
fn vector_csrs_read_and_write() {
    let mut v = VState::new(256);
    assert_eq!(v.csr(0xc22, None), Some(32));
    assert_eq!(v.csr(0x00a, Some(3)), Some(0));
    assert_eq!(v.csr(0x00f, None), Some(6));
    assert_eq!(v.csr(0x999, None), None);
}

#[test]
fn half_conversions_round_and_flag() {
    let mut fl = 0;
    assert_eq!(
        fp::f32_to_f16(1.0f32.to_bits(), crate::fpu::Rm::Rne, &mut fl),
        0x3c00
    );
    assert_eq!(fl, 0);
    assert_eq!(fp::f16_to_f32(0x3c00, &mut fl), 1.0f32.to_bits());
    // 65520 rounds to infinity in rne, to the largest finite in rtz
    assert_eq!(
        fp::f32_to_f16(65520.0f32.to_bits(), crate::fpu::Rm::Rne, &mut fl),
        0x7c00
    );
    assert_eq!(
        fp::f32_to_f16(65520.0f32.to_bits(), crate::fpu::Rm::Rtz, &mut fl),
        0x7bff
    );
    // smallest subnormal half
    assert_eq!(fp::f16_to_f32(1, &mut fl), 2f32.powi(-24).to_bits());
    let mut fl = 0;
    assert_eq!(
        fp::f32_to_f16(2f32.powi(-24).to_bits(), crate::fpu::Rm::Rne, &mut fl),
        1
    );
    assert_eq!(fl, 0);
    for h in [0u16, 1, 0x3ff, 0x400, 0x3555, 0x7bff, 0x8001, 0xc000] {
        let mut fl = 0;
        let f = fp::f16_to_f32(h, &mut fl);
        assert_eq!(fp::f32_to_f16(f, crate::fpu::Rm::Rne, &mut fl), h, "{h:#x}");
        assert_eq!(fl, 0);
    }
}

#[test]
fn disassembly_matches_llvm() {
    for (raw, text) in [
        (0x0d007057u32, "vsetvli zero, zero, e32, m1, ta, ma"),
        (0x022180d7, "vadd.vv v1, v2, v3"),
        (0x02050087, "vle8.v v1, (a0)"),
        (0xcd027057, "vsetivli zero, 4, e32, m1, ta, ma"),
    ] {
        assert_eq!(disassemble(raw).as_deref(), Some(text), "{raw:#x}");
    }
}

/// Every vector instruction form of the `vops` guest as `llvm-objdump-19 -M no-aliases` prints
/// it (scripts/rvv-cases.py): the disassembler prints the same text.
#[test]
fn disassembly_matches_llvm_on_every_form() {
    let mut bad = Vec::new();
    let table = include_str!("llvm.txt");
    for line in table.lines() {
        let (word, text) = line.split_once('\t').expect("word TAB text");
        let raw = u32::from_str_radix(word, 16).expect("hex word");
        // (llvm-objdump-19 prints immediates in hex, the machine's disassembler in decimal)
        let want = text
            .split_whitespace()
            .map(|t| {
                let (body, comma) = t.strip_suffix(',').map_or((t, ""), |b| (b, ","));
                let (neg, hex) = match body.strip_prefix('-') {
                    Some(h) => ("-", h),
                    None => ("", body),
                };
                match hex.strip_prefix("0x").map(|h| i64::from_str_radix(h, 16)) {
                    Some(Ok(n)) => format!("{neg}{n}{comma}"),
                    _ => t.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        let got = disassemble(raw).unwrap_or_default();
        if got != want {
            bad.push(format!("{word}: llvm `{want}`, ours `{got}`"));
        }
    }
    assert!(table.lines().count() > 800);
    assert!(bad.is_empty(), "{} differ:\n{}", bad.len(), bad.join("\n"));
}
