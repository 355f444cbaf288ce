//! [`Lfsr`]: a linear feedback shift register, the branch-on-random paper's source of random
//! bits (§3.3, Figures 6 and 7).
//!
//! The register shifts right on every update; the left-most bit receives the XOR of the tap
//! bits. Taps are given as the exponents of the feedback polynomial, as the paper lists them
//! ("taps at bits (32, 31, 30, 10)"): exponent `k` of an `n`-bit register is bit `n - k`
//! counted from the right (bit 0), so `(4, 3)` XORs "the right two bits" of Figure 6. With a
//! primitive polynomial the register visits all `2^n - 1` non-zero values.

use crate::error::{Error, Result};

/// Taps (polynomial exponents) of maximal-length registers for common widths (Xilinx XAPP 052
/// table; the 32-bit set is the paper's first, §5.3).
pub const MAXIMAL_TAPS: &[(u8, &[u8])] = &[
    (4, &[4, 3]),
    (8, &[8, 6, 5, 4]),
    (16, &[16, 15, 13, 4]),
    (20, &[20, 17]),
    (24, &[24, 23, 22, 17]),
    (32, &[32, 31, 30, 10]),
];

/// A Fibonacci LFSR of 2 to 64 bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lfsr {
    width: u8,
    taps: u64,
    state: u64,
}

impl Lfsr {
    /// An `width`-bit register with feedback polynomial exponents `taps`, starting at `seed`
    /// (truncated to `width` bits; must not be zero there, where the register would stick).
    pub fn new(width: u8, taps: &[u8], seed: u64) -> Result<Lfsr> {
        if !(2..=64).contains(&width) {
            return Err(Error::Config(format!(
                "LFSR width must be 2..=64, not {width}"
            )));
        }
        let mut mask = 0u64;
        for &k in taps {
            if k == 0 || k > width {
                return Err(Error::Config(format!(
                    "LFSR tap {k} is outside 1..={width}"
                )));
            }
            mask |= 1 << (width - k);
        }
        let state = seed & Self::ones(width);
        if state == 0 {
            return Err(Error::Config(
                "an LFSR seed must have a non-zero bit".into(),
            ));
        }
        Ok(Lfsr {
            width,
            taps: mask,
            state,
        })
    }

    /// A register from checked parts: `taps` a bit mask within `width`, `state` non-zero.
    pub(crate) const fn from_parts(width: u8, taps: u64, state: u64) -> Lfsr {
        Lfsr { width, taps, state }
    }

    /// A maximal-length register of `width` bits from [`MAXIMAL_TAPS`].
    pub fn maximal(width: u8, seed: u64) -> Result<Lfsr> {
        let taps = MAXIMAL_TAPS
            .iter()
            .find(|(w, _)| *w == width)
            .ok_or_else(|| Error::Config(format!("no maximal taps listed for width {width}")))?
            .1;
        Lfsr::new(width, taps, seed)
    }

    fn ones(width: u8) -> u64 {
        u64::MAX >> (64 - u32::from(width))
    }

    /// The register's bits (bit 0 is the right-most).
    #[inline]
    pub fn state(&self) -> u64 {
        self.state
    }

    /// The width in bits.
    pub fn width(&self) -> u8 {
        self.width
    }

    /// One update: shift right, feed the XOR of the taps into the left-most bit.
    #[inline]
    pub fn step(&mut self) -> u64 {
        let feedback = u64::from((self.state & self.taps).count_ones() & 1);
        self.state = (self.state >> 1) | (feedback << (self.width - 1));
        self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figure_6_worked_example() {
        // "A 4-bit LFSR with the right two bits selected for XOR will update from the value
        // 0110 to 1011."
        let mut l = Lfsr::new(4, &[4, 3], 0b0110).unwrap();
        assert_eq!(l.step(), 0b1011);
    }

    #[test]
    fn maximal_registers_visit_every_nonzero_value() {
        for width in [4u8, 8, 16, 20] {
            let mut l = Lfsr::maximal(width, 1).unwrap();
            let start = l.state();
            let mut period = 0u64;
            loop {
                period += 1;
                assert_ne!(l.step(), 0);
                if l.state() == start {
                    break;
                }
            }
            assert_eq!(period, (1u64 << width) - 1, "width {width}");
        }
    }

    #[test]
    fn rejects_bad_configurations() {
        assert!(Lfsr::new(1, &[1], 1).is_err());
        assert!(Lfsr::new(8, &[9], 1).is_err());
        assert!(Lfsr::new(8, &[8, 6], 0x100).is_err()); // zero in the low 8 bits
        assert!(Lfsr::maximal(7, 1).is_err());
    }
}
