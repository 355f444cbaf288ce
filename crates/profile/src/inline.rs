//! Inlined calls as frames: a [`Profile`] whose instructions inside inlined calls (DWARF's
//! `DW_TAG_inlined_subroutine`, found through [`LineTable::inlined_at`]) are charged to the
//! innermost inlined function, as perf, samply and pprof show them.
//!
//! The flat profile is exact: an inlined function's self counts are the counts of the
//! addresses inside it (every address's counts are exact), and its caller's self counts lose
//! them. In the call tree, an inlined call is a child node of the node it was inlined into,
//! named `name (inlined)`. Where the function holding the inlined code is reached by one call
//! chain, its node's split is exact; where by several, the profile keeps its counts by
//! address for the function, not per chain, so each node's self counts are split in the
//! proportion of the function's own ([`InlineStats::apportioned`] counts those nodes).

use crate::lines::LineTable;
use crate::{add_function_totals, Counts, Function, Profile, TreeNode};
use rustc_hash::FxHashMap;

/// What [`Profile::with_inlined`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct InlineStats {
    /// Functions with instructions inside inlined calls.
    pub functions: usize,
    /// Distinct inlined functions.
    pub inlined: usize,
    /// Call-tree nodes split exactly (their function is reached by one call chain).
    pub exact: usize,
    /// Call-tree nodes split in proportion to their function's counts.
    pub apportioned: usize,
}

/// The suffix that marks an inlined call's function.
pub const INLINED: &str = " (inlined)";

impl Profile {
    /// This profile with inlined calls as frames (see the module docs), or `None` when no
    /// counted address lies in an inlined call. `mangled` keeps the names as DWARF spells
    /// them.
    pub fn with_inlined(
        &self,
        table: &mut LineTable,
        mangled: bool,
    ) -> Option<(Profile, InlineStats)> {
        // per function: (chain, counts) of its addresses inside inlined calls
        let mut chains: Vec<Vec<String>> = Vec::new();
        let mut chain_ids: FxHashMap<Vec<String>, u32> = FxHashMap::default();
        let mut by_fn: FxHashMap<u32, FxHashMap<u32, Counts>> = FxHashMap::default();
        for pc in &self.pcs {
            let Some(f) = self.functions.get(pc.function as usize) else {
                continue;
            };
            if f.size == 0 {
                continue; // `[unknown]`: no function, no inlined calls in it
            }
            let chain = table.inlined_at(pc.pc, mangled);
            if chain.is_empty() {
                continue;
            }
            let id = *chain_ids.entry(chain.clone()).or_insert_with(|| {
                chains.push(chain);
                chains.len() as u32 - 1
            });
            by_fn
                .entry(pc.function)
                .or_default()
                .entry(id)
                .or_default()
                .add(&pc.counts);
        }
        if by_fn.is_empty() {
            return None;
        }
        let mut p = self.clone();
        let mut stats = InlineStats {
            functions: by_fn.len(),
            ..InlineStats::default()
        };
        // the inlined functions, by name
        let mut inlined_ids: FxHashMap<String, u32> = FxHashMap::default();
        let mut fn_of = |name: &str, functions: &mut Vec<Function>| -> u32 {
            *inlined_ids.entry(name.to_string()).or_insert_with(|| {
                functions.push(Function {
                    name: format!("{name}{INLINED}"),
                    mangled: None,
                    start: 0,
                    size: 0,
                    self_counts: Counts::default(),
                    total_counts: Counts::default(),
                    calls: 0,
                });
                functions.len() as u32 - 1
            })
        };
        // the flat profile: exact, from the addresses
        let mut sorted: Vec<(u32, Vec<(u32, Counts)>)> = by_fn
            .into_iter()
            .map(|(f, m)| {
                let mut v: Vec<(u32, Counts)> = m.into_iter().collect();
                v.sort_unstable_by_key(|&(c, _)| c);
                (f, v)
            })
            .collect();
        sorted.sort_unstable_by_key(|(f, _)| *f);
        for (f, v) in &sorted {
            for (c, counts) in v {
                let inner = chains[*c as usize].last().map_or("", String::as_str);
                let g = fn_of(inner, &mut p.functions);
                p.functions[g as usize].self_counts.add(counts);
                sub(&mut p.functions[*f as usize].self_counts, counts);
            }
        }
        // the tree: each node of such a function gets its inlined calls as children
        let (nodes_of, own) = self.nodes_and_counts();
        let by_fn: FxHashMap<u32, &Vec<(u32, Counts)>> =
            sorted.iter().map(|(f, v)| (*f, v)).collect();
        let mut children: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        for n in 0..self.nodes.len() {
            let Some(f) = self.nodes[n].function else {
                continue;
            };
            let Some(v) = by_fn.get(&f) else {
                continue;
            };
            let node_self = p.nodes[n].self_counts;
            if node_self.instructions == 0 {
                continue;
            }
            let exact = nodes_of.get(&f) == Some(&1);
            if exact {
                stats.exact += 1;
            } else {
                stats.apportioned += 1;
            }
            let whole = own.get(&f).copied().unwrap_or_default();
            for (c, counts) in v.iter() {
                let share = if exact {
                    *counts
                } else {
                    proportion(&node_self, counts, &whole)
                };
                if share == Counts::default() {
                    continue;
                }
                let mut at = n as u32;
                for name in &chains[*c as usize] {
                    let g = fn_of(name, &mut p.functions);
                    at = *children.entry((at, g)).or_insert_with(|| {
                        p.nodes.push(TreeNode {
                            parent: at,
                            function: Some(g),
                            self_counts: Counts::default(),
                            total_counts: Counts::default(),
                            calls: 0,
                            thread: self.nodes[n].thread,
                        });
                        p.nodes.len() as u32 - 1
                    });
                }
                p.nodes[at as usize].self_counts.add(&share);
                sub(&mut p.nodes[n].self_counts, &share);
            }
        }
        stats.inlined = inlined_ids.len();
        retotal(&mut p);
        Some((p, stats))
    }
}

impl Profile {
    /// Per function: how many call-tree nodes it has, and the sum of its addresses' counts.
    fn nodes_and_counts(&self) -> (FxHashMap<u32, u32>, FxHashMap<u32, Counts>) {
        let mut nodes_of: FxHashMap<u32, u32> = FxHashMap::default();
        for n in &self.nodes {
            if let Some(f) = n.function {
                *nodes_of.entry(f).or_default() += 1;
            }
        }
        let mut own: FxHashMap<u32, Counts> = FxHashMap::default();
        for pc in &self.pcs {
            own.entry(pc.function).or_default().add(&pc.counts);
        }
        (nodes_of, own)
    }
}

/// Every node's and function's totals (and calls) again, from the tree's self counts.
fn retotal(p: &mut Profile) {
    for n in &mut p.nodes {
        n.total_counts = n.self_counts;
    }
    for i in (1..p.nodes.len()).rev() {
        let t = p.nodes[i].total_counts;
        let parent = p.nodes[i].parent as usize;
        p.nodes[parent].total_counts.add(&t);
    }
    for f in &mut p.functions {
        f.total_counts = Counts::default();
        f.calls = 0;
    }
    add_function_totals(&p.nodes, &mut p.functions);
}

/// `a -= b`, field by field, never below 0.
fn sub(a: &mut Counts, b: &Counts) {
    a.instructions = a.instructions.saturating_sub(b.instructions);
    a.cycles = a.cycles.saturating_sub(b.cycles);
    a.mispredicts = a.mispredicts.saturating_sub(b.mispredicts);
    a.l1i_misses = a.l1i_misses.saturating_sub(b.l1i_misses);
    a.l1d_misses = a.l1d_misses.saturating_sub(b.l1d_misses);
    a.l2_misses = a.l2_misses.saturating_sub(b.l2_misses);
}

/// `node`'s share of `part` of `whole`, field by field (`node × part / whole`, rounded
/// down, never more than `node`).
fn proportion(node: &Counts, part: &Counts, whole: &Counts) -> Counts {
    let f = |n: u64, p: u64, w: u64| -> u64 {
        if w == 0 {
            0
        } else {
            ((u128::from(n) * u128::from(p)) / u128::from(w)).min(u128::from(n)) as u64
        }
    };
    Counts {
        instructions: f(node.instructions, part.instructions, whole.instructions),
        cycles: f(node.cycles, part.cycles, whole.cycles),
        mispredicts: f(node.mispredicts, part.mispredicts, whole.mispredicts),
        l1i_misses: f(node.l1i_misses, part.l1i_misses, whole.l1i_misses),
        l1d_misses: f(node.l1d_misses, part.l1d_misses, whole.l1d_misses),
        l2_misses: f(node.l2_misses, part.l2_misses, whole.l2_misses),
    }
}
