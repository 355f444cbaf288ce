//! `Config` and its builder: the parameters of one RAP tree, validated once.
//!
//! RAP §2.2 sets `SplitThreshold = ε·n / log(R)`; §3.1 picks the branching factor `b` (4) and
//! batches merges at exponentially spaced stream lengths (first after `E` events, each interval
//! `q` times longer than the previous one, `q = 2`).

use crate::Error;

/// Smallest ε we accept: ε is held as a Q32 fixed-point number, so it must be at least 2⁻³².
pub const MIN_EPS: f64 = 1.0 / 4_294_967_296.0;

/// What a split creates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitPolicy {
    /// All `b` children, counts 0 (RAP §2.2, §3.3: "four new children nodes are created").
    #[default]
    Full,
    /// Beyond the paper: only the child that receives the splitting event. Missing siblings
    /// are created by later splits, exactly as after a partial merge. Same guarantees and
    /// bounds; fewer nodes while the stream is spread thin (e.g. the exact warm-up, τ < 1).
    Lazy,
}

/// Parameters of a RAP tree. Build one with [`Config::builder`] or take [`Config::default`].
///
/// Two trees can be combined with [`crate::RapTree::merge`] only when their configs are equal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    bits: u8,
    branching: u8,
    eps: f64,
    eps_q32: u64,
    first_merge: u64,
    merge_ratio: u32,
    split_policy: SplitPolicy,
}

impl Default for Config {
    /// 64-bit universe, b = 4, ε = 1%, first merge after 1024 events, q = 2 (the paper's choices).
    fn default() -> Self {
        // The defaults are valid by construction; `eps_q32` is ⌊0.01·2³²⌋.
        Config {
            bits: 64,
            branching: 4,
            eps: 0.01,
            eps_q32: eps_to_q32(0.01),
            first_merge: 1024,
            merge_ratio: 2,
            split_policy: SplitPolicy::Full,
        }
    }
}

impl Config {
    /// A builder starting from the defaults.
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder {
            bits: 64,
            branching: 4,
            eps: 0.01,
            first_merge: 1024,
            merge_ratio: 2,
            split_policy: SplitPolicy::Full,
        }
    }

    /// Universe size in bits: values are in `0 ..= 2^bits − 1`.
    pub fn bits(&self) -> u8 {
        self.bits
    }

    /// Branching factor `b`: children created by one split.
    pub fn branching(&self) -> u8 {
        self.branching
    }

    /// ε as given by the user.
    pub fn eps(&self) -> f64 {
        self.eps
    }

    /// ε as used by the tree: `⌊ε·2³²⌋ / 2³²` (never larger than [`Config::eps`]).
    pub fn eps_q32(&self) -> u64 {
        self.eps_q32
    }

    /// Stream length at which the first merge batch runs (`E`).
    pub fn first_merge(&self) -> u64 {
        self.first_merge
    }

    /// Ratio `q` between consecutive merge intervals.
    pub fn merge_ratio(&self) -> u32 {
        self.merge_ratio
    }

    /// What a split creates.
    pub fn split_policy(&self) -> SplitPolicy {
        self.split_policy
    }

    /// log₂ b.
    pub(crate) fn log2_branching(&self) -> u32 {
        u32::from(self.branching).trailing_zeros()
    }

    /// Tree height `H`: levels below the root until ranges are one value wide,
    /// `⌈bits / log₂ b⌉`. Every node has at most `H` strict ancestors.
    pub fn height(&self) -> u32 {
        u32::from(self.bits).div_ceil(self.log2_branching())
    }

    /// `SplitThreshold` τ(n) = ⌊ε'·n / H⌋ in exact integer arithmetic (ε' = `eps_q32`/2³²).
    pub fn split_threshold(&self, n: u64) -> u64 {
        let den = u128::from(self.height()) << 32;
        // n < 2^64 and eps_q32 ≤ 2^32, so the product fits in u128 and the quotient in u64.
        (u128::from(n) * u128::from(self.eps_q32) / den) as u64
    }

    /// Smallest `n' > n` with `split_threshold(n') > split_threshold(n)`, or `u64::MAX`.
    pub(crate) fn next_threshold_step(&self, n: u64) -> u64 {
        let tau = u128::from(self.split_threshold(n));
        let den = u128::from(self.height()) << 32;
        let e = u128::from(self.eps_q32);
        // smallest m with m·e ≥ (τ+1)·den
        let m = ((tau + 1) * den).div_ceil(e);
        u64::try_from(m).unwrap_or(u64::MAX)
    }
}

fn eps_to_q32(eps: f64) -> u64 {
    // eps ∈ [2^-32, 1] was checked; the product is in [1, 2^32] and exactly representable.
    (eps * 4_294_967_296.0).floor() as u64
}

/// Builder for [`Config`]; [`ConfigBuilder::build`] validates every field.
#[derive(Clone, Copy, Debug)]
pub struct ConfigBuilder {
    bits: u8,
    branching: u8,
    eps: f64,
    first_merge: u64,
    merge_ratio: u32,
    split_policy: SplitPolicy,
}

impl ConfigBuilder {
    /// Universe bits, 1..=64 (default 64).
    pub fn bits(mut self, bits: u8) -> Self {
        self.bits = bits;
        self
    }
    /// Branching factor, one of 2, 4, 8, 16 (default 4).
    pub fn branching(mut self, b: u8) -> Self {
        self.branching = b;
        self
    }
    /// ε in (0, 1] (default 0.01).
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self
    }
    /// First merge batch after this many events (default 1024), at least 1.
    pub fn first_merge(mut self, e: u64) -> Self {
        self.first_merge = e;
        self
    }
    /// Merge interval ratio q ≥ 2 (default 2).
    pub fn merge_ratio(mut self, q: u32) -> Self {
        self.merge_ratio = q;
        self
    }
    /// What a split creates (default [`SplitPolicy::Full`], the paper's rule).
    pub fn split_policy(mut self, p: SplitPolicy) -> Self {
        self.split_policy = p;
        self
    }

    /// Checks every field and returns the config.
    pub fn build(self) -> Result<Config, Error> {
        let invalid =
            |field: &'static str, reason: String| Err(Error::InvalidConfig { field, reason });
        if !(1..=64).contains(&self.bits) {
            return invalid(
                "bits",
                format!("universe bits must be in 1..=64, got {}", self.bits),
            );
        }
        if ![2, 4, 8, 16].contains(&self.branching) {
            return invalid(
                "branching",
                format!(
                    "branching factor must be 2, 4, 8 or 16, got {}",
                    self.branching
                ),
            );
        }
        if !(self.eps.is_finite() && self.eps > 0.0 && self.eps <= 1.0) {
            return invalid("eps", format!("ε must be in (0, 1], got {:e}", self.eps));
        }
        if self.eps < MIN_EPS {
            return invalid(
                "eps",
                format!("ε must be at least 2^-32, got {:e}", self.eps),
            );
        }
        if self.first_merge == 0 {
            return invalid(
                "first_merge",
                "the first merge must come after at least 1 event".into(),
            );
        }
        if self.merge_ratio < 2 {
            return invalid(
                "merge_ratio",
                format!(
                    "merge interval ratio q must be at least 2, got {}",
                    self.merge_ratio
                ),
            );
        }
        Ok(Config {
            bits: self.bits,
            branching: self.branching,
            eps: self.eps,
            eps_q32: eps_to_q32(self.eps),
            first_merge: self.first_merge,
            merge_ratio: self.merge_ratio,
            split_policy: self.split_policy,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_papers() {
        let c = Config::default();
        assert_eq!(c, Config::builder().build().unwrap());
        assert_eq!(
            (c.bits(), c.branching(), c.first_merge(), c.merge_ratio()),
            (64, 4, 1024, 2)
        );
        assert_eq!(c.height(), 32);
    }

    #[test]
    fn heights() {
        let h = |bits, b| {
            Config::builder()
                .bits(bits)
                .branching(b)
                .build()
                .unwrap()
                .height()
        };
        assert_eq!(h(64, 2), 64);
        assert_eq!(h(64, 16), 16);
        assert_eq!(h(8, 2), 8);
        assert_eq!(h(9, 4), 5);
        assert_eq!(h(1, 16), 1);
    }

    #[test]
    fn rejects_bad_fields() {
        for (b, msg) in [
            (Config::builder().bits(0), "bits"),
            (Config::builder().bits(65), "bits"),
            (Config::builder().branching(3), "branching"),
            (Config::builder().eps(0.0), "eps"),
            (Config::builder().eps(1.5), "eps"),
            (Config::builder().eps(f64::NAN), "eps"),
            (Config::builder().first_merge(0), "first_merge"),
            (Config::builder().merge_ratio(1), "merge_ratio"),
        ] {
            match b.build() {
                Err(Error::InvalidConfig { field, .. }) => assert_eq!(field, msg),
                other => panic!("expected InvalidConfig({msg}), got {other:?}"),
            }
        }
    }

    #[test]
    fn threshold_is_exact_and_steps_are_right() {
        let c = Config::builder().eps(0.01).build().unwrap();
        // H = 32, ε' ≈ 0.01: τ steps every ~3200 events.
        assert_eq!(c.split_threshold(0), 0);
        let s = c.next_threshold_step(0);
        assert_eq!(c.split_threshold(s), 1);
        assert_eq!(c.split_threshold(s - 1), 0);
        assert!((3199..=3201).contains(&s));
        assert!(c.split_threshold(u64::MAX) <= (u64::MAX as f64 * 0.01 / 32.0) as u64);
        // H·τ(n) ≤ ε·n always
        for n in [1u64, 999, 3200, 1 << 40, u64::MAX] {
            assert!((c.split_threshold(n) as f64) * 32.0 <= 0.01 * n as f64 * (1.0 + 1e-12));
        }
    }
}
