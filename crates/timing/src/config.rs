//! Timing-model configuration: presets and TOML files.
//!
//! A preset is a complete TOML document (`presets/*.toml`, compiled in). A user file may name a
//! base with `preset = "NAME"` (default: `default`) and override any subset of keys; unknown
//! keys are errors, so a typo never silently falls back to a default.

use serde::{Deserialize, Serialize};

/// Presets by name, with their TOML text.
pub const PRESETS: &[(&str, &str)] = &[
    ("default", include_str!("../presets/default.toml")),
    ("inorder", include_str!("../presets/inorder.toml")),
    ("rpa2000", include_str!("../presets/rpa2000.toml")),
];

/// A configuration problem: which key or file, and why.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// Not valid TOML, or a key/type the schema does not have.
    #[error("{0}")]
    Parse(String),
    /// `preset = "..."` (or a preset name) that does not exist.
    #[error("unknown timing preset `{0}` (presets: {1})")]
    UnknownPreset(String, String),
    /// A value outside its allowed range.
    #[error("{key} = {value}: {why}")]
    Invalid {
        /// Dotted key, e.g. `l1d.ways`.
        key: String,
        /// The value given.
        value: u64,
        /// What is required.
        why: &'static str,
    },
}

/// The whole machine timing configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// A label for reports.
    pub name: String,
    /// Pipeline shape.
    pub core: CoreConfig,
    /// Branch prediction.
    pub predictor: PredictorConfig,
    /// Level-1 instruction cache.
    pub l1i: CacheConfig,
    /// Level-1 data cache.
    pub l1d: CacheConfig,
    /// Shared level-2 cache (instruction and data).
    pub l2: CacheConfig,
    /// Main memory.
    pub memory: MemoryConfig,
    /// Instruction TLB.
    pub itlb: TlbConfig,
    /// Data TLB.
    pub dtlb: TlbConfig,
    /// Execution latencies per instruction kind.
    pub latency: Latencies,
}

/// Pipeline shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreConfig {
    /// Issue in program order (a scalar/in-order core) instead of out of order.
    pub in_order: bool,
    /// Instructions fetched per cycle.
    pub fetch_width: u32,
    /// Dispatch and retire width.
    pub width: u32,
    /// Reorder-buffer entries (instructions in flight between dispatch and retire).
    pub rob: u32,
    /// Cycles from fetch to dispatch.
    pub frontend_depth: u32,
    /// Cycles from a mispredicted branch's execution to the dispatch of the correct path.
    pub mispredict_penalty: u32,
    /// Fetch bubble when decode finds a taken direct branch/jump the BTB did not predict.
    pub redirect_penalty: u32,
    /// Fetch bubble after a taken branch-on-random (`brr`), resolved at decode: the paper's
    /// "front-end misprediction" (§3.3). A configuration that leaves it out gets
    /// `frontend_depth`: the paper resolves `brr` at decode, its pipeline's 5th stage, and
    /// charges a taken one the flush of every stage before (§5.3, "the 5-cycle pipeline
    /// flush").
    pub brr_penalty: u32,
    /// Cycles a switch between the guest's threads costs the one core they share: fetch of
    /// the incoming thread starts this long after the outgoing one's last retirement (the
    /// kernel's save, schedule and restore; caches and predictors are shared and kept).
    #[serde(default = "default_context_switch")]
    pub context_switch: u32,
}

/// [`CoreConfig::context_switch`] when a configuration does not set it: about a microsecond
/// at 2 GHz, the order of a Linux context switch between threads of one process.
fn default_context_switch() -> u32 {
    2000
}

/// Direction predictor kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PredictorKind {
    /// Static: every conditional branch predicted not taken.
    NotTaken,
    /// 2-bit counters indexed by pc.
    Bimodal,
    /// 2-bit counters indexed by pc xor global history.
    Gshare,
    /// Bimodal and gshare with a per-pc 2-bit chooser (McFarling).
    Tournament,
}

/// Branch prediction structures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredictorConfig {
    /// Direction predictor.
    pub kind: PredictorKind,
    /// Bimodal table entries (power of two).
    pub bimodal_entries: u32,
    /// Global-history bits of gshare (its table has 2^bits entries).
    pub gshare_history: u32,
    /// Tournament chooser entries (power of two).
    pub chooser_entries: u32,
    /// Branch-target-buffer entries (power of two).
    pub btb_entries: u32,
    /// BTB associativity.
    pub btb_ways: u32,
    /// Return-address-stack entries.
    pub ras_entries: u32,
}

/// One set-associative, LRU, write-allocate cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// Capacity in bytes.
    pub size: u64,
    /// Associativity.
    pub ways: u32,
    /// Line size in bytes (power of two).
    pub line: u32,
    /// Hit latency in cycles.
    pub latency: u32,
}

/// Main memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// Latency of an access that misses the L2, in cycles (added to the L2's).
    pub latency: u32,
}

/// A set-associative LRU TLB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbConfig {
    /// Entries.
    pub entries: u32,
    /// Associativity (`entries` for fully associative).
    pub ways: u32,
    /// Page size in bytes (power of two).
    pub page: u64,
    /// Cycles added to an access that misses.
    pub miss_penalty: u32,
}

/// Execution latencies in cycles. Loads take the cache hierarchy's latency instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latencies {
    /// Integer ALU operations.
    pub alu: u32,
    /// Conditional branches.
    pub branch: u32,
    /// Jumps.
    pub jump: u32,
    /// Integer multiply.
    pub mult: u32,
    /// Integer divide and remainder.
    pub div: u32,
    /// FP arithmetic, moves, conversions, fused multiply-add.
    pub float: u32,
    /// FP divide and square root.
    pub fdiv: u32,
    /// Stores (into the store buffer).
    pub store: u32,
    /// System instructions, CSR accesses, fences.
    pub sys: u32,
    /// Vector arithmetic (the vector unit's pipeline; vector loads and stores take the
    /// cache hierarchy's and the store latency). Default 4.
    #[serde(default = "default_vector_latency")]
    pub vector: u32,
}

fn default_vector_latency() -> u32 {
    4
}

impl Default for Config {
    fn default() -> Self {
        Config::preset("default").unwrap_or_else(|_| unreachable!("built-in preset is valid"))
    }
}

impl Config {
    /// A built-in preset by name.
    pub fn preset(name: &str) -> Result<Config, ConfigError> {
        let table: toml::Table = preset_text(name)?
            .parse()
            .map_err(|e: toml::de::Error| ConfigError::Parse(e.to_string()))?;
        Config::from_table(table)
    }

    /// A complete table to a checked configuration; `core.brr_penalty` defaults to
    /// `core.frontend_depth` (the decode stage).
    fn from_table(mut table: toml::Table) -> Result<Config, ConfigError> {
        if let Some(toml::Value::Table(core)) = table.get_mut("core") {
            if !core.contains_key("brr_penalty") {
                if let Some(depth) = core.get("frontend_depth").cloned() {
                    core.insert("brr_penalty".into(), depth);
                }
            }
        }
        let cfg: Config = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Parse(e.to_string()))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Parses a user TOML document: a preset (`preset = "NAME"`, default `default`) with the
    /// document's keys overriding it.
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let user: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| ConfigError::Parse(e.to_string()))?;
        let base_name = match user.get("preset") {
            None => "default",
            Some(toml::Value::String(s)) => s.as_str(),
            Some(_) => return Err(ConfigError::Parse("`preset` must be a string".into())),
        };
        let mut base: toml::Table = preset_text(base_name)?
            .parse()
            .map_err(|e: toml::de::Error| ConfigError::Parse(e.to_string()))?;
        for (k, v) in user {
            if k == "preset" {
                continue;
            }
            overlay(&mut base, k, v);
        }
        Config::from_table(base)
    }

    /// This configuration as a complete TOML document.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Checks every value's range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, value, why| invalid(key, value, why);
        let c = &self.core;
        for (key, v) in [("core.fetch_width", c.fetch_width), ("core.width", c.width)] {
            if !(1..=16).contains(&v) {
                return bad(key, v.into(), "must be 1..=16");
            }
        }
        if c.rob < c.width || c.rob > 4096 {
            return bad(
                "core.rob",
                c.rob.into(),
                "must be at least core.width and at most 4096",
            );
        }
        for (key, v) in [
            ("core.frontend_depth", c.frontend_depth),
            ("core.mispredict_penalty", c.mispredict_penalty),
            ("core.redirect_penalty", c.redirect_penalty),
            ("core.brr_penalty", c.brr_penalty),
        ] {
            if v > 1000 {
                return bad(key, v.into(), "must be at most 1000");
            }
        }
        let p = &self.predictor;
        for (key, v) in [
            ("predictor.bimodal_entries", p.bimodal_entries),
            ("predictor.chooser_entries", p.chooser_entries),
            ("predictor.btb_entries", p.btb_entries),
        ] {
            if !v.is_power_of_two() || v > 1 << 24 {
                return bad(key, v.into(), "must be a power of two up to 2^24");
            }
        }
        if !(1..=24).contains(&p.gshare_history) {
            return bad(
                "predictor.gshare_history",
                p.gshare_history.into(),
                "must be 1..=24",
            );
        }
        if !p.btb_ways.is_power_of_two() || p.btb_ways > p.btb_entries {
            return bad(
                "predictor.btb_ways",
                p.btb_ways.into(),
                "must be a power of two, at most btb_entries",
            );
        }
        if !(1..=1024).contains(&p.ras_entries) {
            return bad(
                "predictor.ras_entries",
                p.ras_entries.into(),
                "must be 1..=1024",
            );
        }
        for (name, cache) in [("l1i", &self.l1i), ("l1d", &self.l1d), ("l2", &self.l2)] {
            cache.validate(name)?;
        }
        // The model keeps one 8-byte tag per line: bound the total so that a config that
        // passes validation can always be built (a 16 GiB cache of 4-byte lines would need
        // 32 GiB of tags).
        let lines: u64 = [&self.l1i, &self.l1d, &self.l2]
            .iter()
            .map(|c| c.size / u64::from(c.line))
            .sum();
        if lines > MAX_CACHE_LINES {
            return bad(
                "l1i+l1d+l2 lines",
                lines,
                "the caches may have at most 2^24 lines in all (128 MiB of tags)",
            );
        }
        if self.memory.latency > 100_000 {
            return bad(
                "memory.latency",
                self.memory.latency.into(),
                "must be at most 100000",
            );
        }
        for (name, tlb) in [("itlb", &self.itlb), ("dtlb", &self.dtlb)] {
            tlb.validate(name)?;
        }
        let l = &self.latency;
        for (key, v) in [
            ("alu", l.alu),
            ("branch", l.branch),
            ("jump", l.jump),
            ("mult", l.mult),
            ("div", l.div),
            ("float", l.float),
            ("fdiv", l.fdiv),
            ("store", l.store),
            ("sys", l.sys),
            ("vector", l.vector),
        ] {
            if !(1..=1000).contains(&v) {
                return bad(&format!("latency.{key}"), v.into(), "must be 1..=1000");
            }
        }
        Ok(())
    }
}

impl CacheConfig {
    /// Number of sets.
    pub fn sets(&self) -> u64 {
        self.size / (u64::from(self.ways) * u64::from(self.line))
    }

    fn validate(&self, name: &str) -> Result<(), ConfigError> {
        let bad = |key: &str, value, why| invalid(&format!("{name}.{key}"), value, why);
        if !self.line.is_power_of_two() || !(4..=4096).contains(&self.line) {
            return bad(
                "line",
                self.line.into(),
                "must be a power of two in 4..=4096",
            );
        }
        if !(1..=64).contains(&self.ways) {
            return bad("ways", self.ways.into(), "must be 1..=64");
        }
        let way_bytes = u64::from(self.ways) * u64::from(self.line);
        if self.size == 0
            || self.size > 1 << 34
            || self.size % way_bytes != 0
            || !self.sets().is_power_of_two()
        {
            return bad(
                "size",
                self.size,
                "must be ways x line x (a power-of-two number of sets), at most 16 GiB",
            );
        }
        if self.latency > 10_000 {
            return bad("latency", self.latency.into(), "must be at most 10000");
        }
        Ok(())
    }
}

impl TlbConfig {
    fn validate(&self, name: &str) -> Result<(), ConfigError> {
        let bad = |key: &str, value, why| invalid(&format!("{name}.{key}"), value, why);
        if !self.page.is_power_of_two() || !(4096..=1 << 30).contains(&self.page) {
            return bad("page", self.page, "must be a power of two, 4096 to 2^30");
        }
        if !(1..=64).contains(&self.ways) {
            return bad("ways", self.ways.into(), "must be 1..=64");
        }
        if self.entries == 0
            || self.entries > 1 << 16
            || self.entries % self.ways != 0
            || !(self.entries / self.ways).is_power_of_two()
        {
            return bad(
                "entries",
                self.entries.into(),
                "must be ways x a power of two, at most 65536",
            );
        }
        if self.miss_penalty > 10_000 {
            return bad(
                "miss_penalty",
                self.miss_penalty.into(),
                "must be at most 10000",
            );
        }
        Ok(())
    }
}

/// Most cache lines the L1I, L1D and L2 may have together (each costs 8 host bytes).
pub const MAX_CACHE_LINES: u64 = 1 << 24;

/// A value out of range at `key`.
fn invalid(key: &str, value: u64, why: &'static str) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid {
        key: key.to_string(),
        value,
        why,
    })
}

fn preset_text(name: &str) -> Result<&'static str, ConfigError> {
    PRESETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
            ConfigError::UnknownPreset(name.to_string(), names.join(", "))
        })
}

/// Overlays `value` at `key` of `base`: tables merge key by key, anything else replaces.
fn overlay(base: &mut toml::Table, key: String, value: toml::Value) {
    match (base.get_mut(&key), value) {
        (Some(toml::Value::Table(b)), toml::Value::Table(v)) => {
            for (k, v) in v {
                overlay(b, k, v);
            }
        }
        (_, v) => {
            base.insert(key, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brr_penalty_follows_the_decode_stage_unless_set() {
        let deep = Config::from_toml("[core]\nfrontend_depth = 9\n").unwrap();
        assert_eq!(deep.core.brr_penalty, 9);
        let set = Config::from_toml("[core]\nfrontend_depth = 9\nbrr_penalty = 3\n").unwrap();
        assert_eq!(set.core.brr_penalty, 3);
        assert_eq!(Config::preset("inorder").unwrap().core.brr_penalty, 3);
        // the complete document round-trips with the value written out
        let back = Config::from_toml(&set.to_toml()).unwrap();
        assert_eq!(back, set);
    }

    #[test]
    fn presets_parse_and_validate() {
        for (name, _) in PRESETS {
            let c = Config::preset(name).unwrap();
            assert_eq!(&c.name, name);
        }
        let d = Config::default();
        assert_eq!(d.core.brr_penalty, 5, "brr resolves at decode, stage 5");
        assert_eq!(d.core.width, 4);
        assert_eq!(d.core.rob, 80);
        assert_eq!(d.l2.size, 1 << 20);
        assert_eq!(d.memory.latency, 140);
        assert_eq!(d.predictor.kind, PredictorKind::Tournament);
    }

    #[test]
    fn overrides_apply_on_a_preset() {
        let c = Config::from_toml("preset = \"inorder\"\nname = \"x\"\n[l1d]\nways = 8\n").unwrap();
        assert_eq!(c.name, "x");
        assert_eq!(c.l1d.ways, 8);
        assert_eq!(c.l1d.size, 32768);
        assert!(c.core.in_order);
        let d = Config::from_toml("[core]\nrob = 128\n").unwrap();
        assert_eq!(d.core.rob, 128);
        assert_eq!(d.core.width, 4);
    }

    #[test]
    fn round_trips_through_toml() {
        let c = Config::default();
        assert_eq!(Config::from_toml(&c.to_toml()).unwrap(), c);
    }

    #[test]
    fn caches_too_big_to_build_are_refused() {
        // 16 GiB of 4-byte lines: passes every per-cache rule, needs 32 GiB of tags
        let e = Config::from_toml("[l2]\nsize = 17179869184\nline = 4\nways = 4\n").unwrap_err();
        assert!(
            e.to_string().starts_with("l1i+l1d+l2 lines = 4294968320"),
            "{e}"
        );
        // a large but buildable L2 is fine
        Config::from_toml("[l2]\nsize = 268435456\nline = 64\nways = 16\n").unwrap();
    }

    #[test]
    fn bad_configs_name_the_key() {
        let e = Config::from_toml("[l1d]\nways = 3\n").unwrap_err();
        assert!(e.to_string().starts_with("l1d.size = 32768"), "{e}");
        let e = Config::from_toml("[l1d]\nline = 48\n").unwrap_err();
        assert!(e.to_string().starts_with("l1d.line = 48"), "{e}");
        let e = Config::from_toml("[core]\nwidht = 4\n").unwrap_err();
        assert!(e.to_string().contains("widht"), "{e}");
        let e = Config::from_toml("preset = \"nope\"").unwrap_err();
        assert!(matches!(e, ConfigError::UnknownPreset(..)));
        let e = Config::from_toml("[core\n").unwrap_err();
        assert!(matches!(e, ConfigError::Parse(_)));
        let e = Config::from_toml("[predictor]\nkind = \"perceptron\"\n").unwrap_err();
        assert!(e.to_string().contains("perceptron"), "{e}");
        let e = Config::from_toml("[core]\nrob = 2\n").unwrap_err();
        assert!(e.to_string().starts_with("core.rob"), "{e}");
    }
}
