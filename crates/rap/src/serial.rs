//! Saving and loading trees: a compact checksummed binary form and a JSON form, both documented
//! in `docs/formats.md` ("RAP trees"). Decoding never trusts its input: every read is bounds
//! checked, the shape is checked against the config's geometry, and the guarantees' invariants
//! (counts sum to `n`, non-unit counts ≤ τ(n)) are verified, so a loaded tree keeps its bounds.

use crate::config::{Config, SplitPolicy};
use crate::tree::{RapTree, Stats, ROOT};
use crate::Error;
use serde::{Deserialize, Serialize};

const MAGIC: &[u8; 8] = b"ORAPTREE";
const VERSION: u16 = 1;

impl RapTree {
    /// Compact binary form: header, counters in pre-order as LEB128 varints with a child
    /// presence mask per non-unit node, CRC-32 trailer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128 + 4 * self.live_nodes as usize);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.push(self.config.bits());
        out.push(self.config.branching());
        out.extend_from_slice(&self.config.eps().to_bits().to_le_bytes());
        out.extend_from_slice(&self.config.first_merge().to_le_bytes());
        out.extend_from_slice(&self.config.merge_ratio().to_le_bytes());
        out.push(match self.config.split_policy() {
            SplitPolicy::Full => 0,
            SplitPolicy::Lazy => 1,
        });
        for v in [
            self.n,
            self.next_merge,
            self.merge_interval,
            self.last_merge_n,
            self.peak_nodes,
            self.stats.tree_updates,
            self.stats.splits,
            self.stats.nodes_created,
            self.stats.merge_batches,
            self.stats.merge_scanned,
            self.stats.nodes_folded,
            self.live_nodes,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        self.encode_node(ROOT, 0, &mut out);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    fn encode_node(&self, node: u32, depth: u32, out: &mut Vec<u8>) {
        put_varint(out, self.nodes[node as usize].count);
        if depth < self.geo.height {
            let mask = self
                .children(node, depth)
                .fold(0u64, |m, (slot, _)| m | (1 << slot));
            put_varint(out, mask);
            for (_, child) in self.children(node, depth) {
                self.encode_node(child, depth + 1, out);
            }
        }
    }

    /// Decodes [`RapTree::to_bytes`] output; errors name the byte offset.
    pub fn from_bytes(bytes: &[u8]) -> Result<RapTree, Error> {
        if bytes.len() < 4 {
            return Err(decode_err(0, "input shorter than the checksum"));
        }
        let (body, trailer) = bytes.split_at(bytes.len() - 4);
        let mut r = Reader {
            bytes: body,
            pos: 0,
        };
        if r.take(8)? != MAGIC {
            return Err(decode_err(0, "not a RAP tree (bad magic)"));
        }
        let version = u16::from_le_bytes(r.array()?);
        if version != VERSION {
            return Err(decode_err(8, format!("unsupported version {version}")));
        }
        let bits = r.u8()?;
        let branching = r.u8()?;
        let eps = f64::from_bits(r.u64()?);
        let first_merge = r.u64()?;
        let merge_ratio = u32::from_le_bytes(r.array()?);
        let policy_at = r.pos as u64;
        let split_policy = match r.u8()? {
            0 => SplitPolicy::Full,
            1 => SplitPolicy::Lazy,
            other => {
                return Err(decode_err(
                    policy_at,
                    format!("unknown split policy {other}"),
                ))
            }
        };
        let config = Config::builder()
            .bits(bits)
            .branching(branching)
            .eps(eps)
            .first_merge(first_merge)
            .merge_ratio(merge_ratio)
            .split_policy(split_policy)
            .build()
            .map_err(|e| decode_err(10, e.to_string()))?;
        let [n, next_merge, merge_interval, last_merge_n, peak_nodes] =
            [r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?];
        let stats = Stats {
            tree_updates: r.u64()?,
            splits: r.u64()?,
            nodes_created: r.u64()?,
            merge_batches: r.u64()?,
            merge_scanned: r.u64()?,
            nodes_folded: r.u64()?,
        };
        let node_count_at = r.pos;
        let node_count = r.u64()?;
        // every node takes at least one byte
        if node_count == 0 || node_count > (body.len() - r.pos) as u64 {
            return Err(decode_err(
                node_count_at as u64,
                format!("node count {node_count} does not fit the input"),
            ));
        }
        let crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        if crc32fast::hash(body) != crc {
            return Err(decode_err(body.len() as u64, "checksum mismatch"));
        }
        let mut tree = RapTree::new(config);
        let root_count = r.varint()?;
        tree.nodes[ROOT as usize].count = root_count;
        let mut sum = root_count;
        tree.decode_children(&mut r, ROOT, 0, &mut sum)?;
        if r.pos != body.len() {
            return Err(decode_err(r.pos as u64, "bytes left after the last node"));
        }
        if tree.live_nodes != node_count {
            return Err(decode_err(
                node_count_at as u64,
                format!("header says {node_count} nodes, found {}", tree.live_nodes),
            ));
        }
        tree.check_and_finish(
            sum,
            n,
            next_merge,
            merge_interval,
            last_merge_n,
            peak_nodes,
            stats,
        )
        .map_err(|reason| decode_err(0, reason))?;
        Ok(tree)
    }

    fn decode_children(
        &mut self,
        r: &mut Reader<'_>,
        node: u32,
        depth: u32,
        sum: &mut u64,
    ) -> Result<(), Error> {
        if depth >= self.geo.height {
            return Ok(());
        }
        let at = r.pos as u64;
        let mask = r.varint()?;
        let fanout = self.geo.fanout[depth as usize];
        if mask >> fanout != 0 {
            return Err(decode_err(
                at,
                format!("child mask {mask:#x} has bits beyond the {fanout} children of a depth-{depth} node"),
            ));
        }
        for slot in 0..fanout {
            if mask & (1 << slot) == 0 {
                continue;
            }
            let count = r.varint()?;
            *sum = sum
                .checked_add(count)
                .ok_or_else(|| decode_err(r.pos as u64, "counts overflow"))?;
            let child = self.decode_add_child(node, depth, slot, count)?;
            self.decode_children(r, child, depth + 1, sum)?;
        }
        Ok(())
    }

    /// Checks the invariants a decoded tree must satisfy for its guarantees to hold.
    #[allow(clippy::too_many_arguments)]
    fn check_and_finish(
        &mut self,
        sum: u64,
        n: u64,
        next_merge: u64,
        merge_interval: u64,
        last_merge_n: u64,
        peak_nodes: u64,
        stats: Stats,
    ) -> Result<(), String> {
        if sum != n {
            return Err(format!("counts sum to {sum} but n is {n}"));
        }
        if merge_interval == 0 || last_merge_n > n {
            return Err("inconsistent merge schedule".into());
        }
        if peak_nodes < self.live_nodes {
            return Err(format!(
                "peak node count {peak_nodes} is below the {} nodes present",
                self.live_nodes
            ));
        }
        let tau = self.config.split_threshold(n);
        if let Some(bad) = self
            .nodes()
            .into_iter()
            .find(|s| s.depth < self.geo.height && s.count > tau)
        {
            return Err(format!(
                "node [{:#x}, {:#x}] holds {} > split threshold {tau}",
                bad.lo, bad.hi, bad.count
            ));
        }
        self.decode_finish(
            n,
            next_merge,
            merge_interval,
            last_merge_n,
            peak_nodes,
            stats,
        );
        Ok(())
    }

    /// JSON form (see [`TreeJson`]).
    pub fn to_json(&self) -> TreeJson {
        TreeJson {
            format: FORMAT_NAME.into(),
            version: u32::from(VERSION),
            config: ConfigJson {
                bits: self.config.bits(),
                branching: self.config.branching(),
                eps: self.config.eps(),
                first_merge: self.config.first_merge(),
                merge_ratio: self.config.merge_ratio(),
                split_policy: self.config.split_policy(),
            },
            n: self.n,
            next_merge: self.next_merge,
            merge_interval: self.merge_interval,
            last_merge_n: self.last_merge_n,
            peak_nodes: self.peak_nodes,
            stats: self.stats,
            nodes: {
                let mut v = Vec::with_capacity(self.live_nodes as usize);
                self.push_json(ROOT, 0, 0, &mut v);
                v
            },
        }
    }

    fn push_json(&self, node: u32, depth: u32, lo: u64, out: &mut Vec<NodeJson>) {
        out.push(NodeJson {
            lo,
            hi: self.geo.hi(lo, depth),
            depth,
            count: self.nodes[node as usize].count,
        });
        for (slot, child) in self.children(node, depth) {
            let child_lo = lo + (u64::from(slot) << self.geo.shift[depth as usize]);
            self.push_json(child, depth + 1, child_lo, out);
        }
    }

    /// Rebuilds a tree from [`TreeJson`], checking shape and invariants.
    pub fn from_json(json: &TreeJson) -> Result<RapTree, Error> {
        let bad = |m: String| Error::Json(m);
        if json.format != FORMAT_NAME || json.version != u32::from(VERSION) {
            return Err(bad(format!(
                "expected format {FORMAT_NAME} version {VERSION}, got {} version {}",
                json.format, json.version
            )));
        }
        let c = &json.config;
        let config = Config::builder()
            .bits(c.bits)
            .branching(c.branching)
            .eps(c.eps)
            .first_merge(c.first_merge)
            .merge_ratio(c.merge_ratio)
            .split_policy(c.split_policy)
            .build()?;
        let mut tree = RapTree::new(config);
        let Some(root) = json.nodes.first() else {
            return Err(bad("no nodes: the root is required".into()));
        };
        if root.lo != 0 || root.hi != tree.geo.max_value || root.depth != 0 {
            return Err(bad(format!(
                "node 0 must be the root [0, {:#x}] at depth 0",
                tree.geo.max_value
            )));
        }
        tree.nodes[ROOT as usize].count = root.count;
        let mut sum = root.count;
        // (node id, depth, lo, last child slot used + 1) along the current root-to-node path
        let mut stack: Vec<(u32, u32, u64, u32)> = vec![(ROOT, 0, 0, 0)];
        for (i, j) in json.nodes.iter().enumerate().skip(1) {
            let at = |m: String| bad(format!("node {i} [{:#x}, {:#x}]: {m}", j.lo, j.hi));
            if j.depth == 0 || j.depth > tree.geo.height || j.depth as usize > stack.len() {
                return Err(at(format!("depth {} does not follow pre-order", j.depth)));
            }
            stack.truncate(j.depth as usize);
            let Some(parent) = stack.last_mut() else {
                return Err(at("no parent".into()));
            };
            let (pid, pdepth, plo, next_slot) = *parent;
            let shift = tree.geo.shift[pdepth as usize];
            let offset = j.lo.wrapping_sub(plo);
            let slot = offset >> shift;
            let fits = j.lo >= plo
                && offset & ((1u64 << shift) - 1) == 0
                && slot < u64::from(tree.geo.fanout[pdepth as usize])
                && j.hi == tree.geo.hi(j.lo, j.depth);
            if !fits {
                return Err(at(format!(
                    "not a child range of [{plo:#x}, {:#x}]",
                    tree.geo.hi(plo, pdepth)
                )));
            }
            let slot = slot as u32;
            if slot < next_slot {
                return Err(at("children must be listed once each, by address".into()));
            }
            parent.3 = slot + 1;
            sum = sum
                .checked_add(j.count)
                .ok_or_else(|| at("counts overflow".into()))?;
            let id = tree.decode_add_child(pid, pdepth, slot, j.count)?;
            stack.push((id, j.depth, j.lo, 0));
        }
        tree.check_and_finish(
            sum,
            json.n,
            json.next_merge,
            json.merge_interval,
            json.last_merge_n,
            json.peak_nodes,
            json.stats,
        )
        .map_err(bad)?;
        Ok(tree)
    }
}

/// Name in the `format` field of [`TreeJson`].
pub const FORMAT_NAME: &str = "outcrop-rap-tree";

/// The JSON form of a tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeJson {
    /// Always `"outcrop-rap-tree"`.
    pub format: String,
    /// Format version (1).
    pub version: u32,
    /// The tree's config.
    pub config: ConfigJson,
    /// Events counted.
    pub n: u64,
    /// Stream length of the next merge batch.
    pub next_merge: u64,
    /// Length of the current merge interval.
    pub merge_interval: u64,
    /// Stream length at the last merge batch.
    pub last_merge_n: u64,
    /// Largest node count reached.
    pub peak_nodes: u64,
    /// Operation counters.
    pub stats: Stats,
    /// Every node in pre-order (parent before children, children by address); node 0 is the root.
    pub nodes: Vec<NodeJson>,
}

/// Config fields in [`TreeJson`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigJson {
    /// Universe bits.
    pub bits: u8,
    /// Branching factor.
    pub branching: u8,
    /// ε.
    pub eps: f64,
    /// First merge after this many events.
    pub first_merge: u64,
    /// Merge interval ratio.
    pub merge_ratio: u32,
    /// What a split creates (`"full"` or `"lazy"`; `"full"` when absent).
    #[serde(default)]
    pub split_policy: SplitPolicy,
}

/// One node in [`TreeJson`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeJson {
    /// First value.
    pub lo: u64,
    /// Last value (inclusive).
    pub hi: u64,
    /// Depth (root = 0).
    pub depth: u32,
    /// The node's own counter.
    pub count: u64,
}

fn decode_err(offset: u64, reason: impl Into<String>) -> Error {
    Error::Decode {
        offset,
        reason: reason.into(),
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], Error> {
        let end = self.pos.checked_add(len).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => {
                let s = &self.bytes[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(decode_err(
                self.pos as u64,
                format!("truncated: need {len} more bytes"),
            )),
        }
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.array::<1>()?[0])
    }
    fn u64(&mut self) -> Result<u64, Error> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn varint(&mut self) -> Result<u64, Error> {
        let start = self.pos;
        let mut v: u64 = 0;
        for i in 0..10 {
            let byte = self.u8()?;
            let part = u64::from(byte & 0x7f);
            if i == 9 && part > 1 {
                return Err(decode_err(start as u64, "varint overflows 64 bits"));
            }
            v |= part << (7 * i);
            if byte & 0x80 == 0 {
                if i > 0 && byte == 0 {
                    return Err(decode_err(
                        start as u64,
                        "varint is not in its shortest form",
                    ));
                }
                return Ok(v);
            }
        }
        Err(decode_err(start as u64, "varint longer than 10 bytes"))
    }
}
