//! A [`Profile`] from sampled call stacks (`perf record -g`'s call chains, imported) rather
//! than from every retired instruction: the same tree, functions and per-address table, so
//! every view and export of an exact profile shows it, with samples where the exact profile
//! has instructions. Nothing here is exact: a node's counts are the samples whose stack
//! passed through it, and no calls are counted.

use crate::{add_function_totals, threads_of, Counts, Function, PcCounts, Profile, TreeNode};
use crate::{MAX_DEPTH, MAX_NODES};
use rustc_hash::FxHashMap;

/// A function of a sampled profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SampledFunction {
    /// Its name (`name@object` for a shared object's, as the exact profile names them).
    pub name: String,
    /// The name as the symbol table spells it, when demangling changed it.
    pub mangled: Option<String>,
    /// First byte.
    pub start: u64,
    /// Length in bytes.
    pub size: u64,
}

/// One sampled call stack.
#[derive(Clone, Copy, Debug)]
pub struct Stack<'a> {
    /// Its frames as indexes into the functions, outermost first (the innermost, last, is
    /// where the sample was taken).
    pub frames: &'a [u32],
    /// The innermost frame's address (the sampled instruction).
    pub pc: u64,
    /// Samples with this stack.
    pub samples: u64,
    /// The thread (0 is the first; each other gets a root of its own, as in a run's tree).
    pub thread: u32,
}

impl Profile {
    /// The profile of sampled `stacks` over `functions`: a node's self counts are the
    /// samples taken in it, its total the samples whose stack passed through it; a
    /// function's total counts a sample once however often the function recurs in its
    /// stack. Functions no stack names are dropped. A stack deeper than [`MAX_DEPTH`] keeps
    /// its outermost frames, and past [`MAX_NODES`] a new node's samples go to its parent
    /// (both counted in [`Profile::folded_calls`]).
    pub fn from_stacks<'a>(
        functions: &[SampledFunction],
        stacks: impl IntoIterator<Item = Stack<'a>>,
    ) -> Profile {
        let mut nodes = vec![TreeNode {
            parent: 0,
            function: None,
            self_counts: Counts::default(),
            total_counts: Counts::default(),
            calls: 0,
            thread: 0,
        }];
        let mut children: FxHashMap<(u32, Option<u32>, u32), u32> = FxHashMap::default();
        let mut pcs: FxHashMap<(u64, u32), u64> = FxHashMap::default();
        let mut folded = 0u64;
        let mut total = 0u64;
        for s in stacks {
            if s.samples == 0 {
                continue;
            }
            total = total.saturating_add(s.samples);
            let mut node = 0u32;
            if s.thread != 0 {
                node = child(&mut nodes, &mut children, 0, None, s.thread);
            }
            let depth = s.frames.len().min(MAX_DEPTH);
            folded += (s.frames.len() - depth) as u64;
            for &f in &s.frames[..depth] {
                if nodes.len() >= MAX_NODES && !children.contains_key(&(node, Some(f), s.thread)) {
                    folded += 1;
                    continue;
                }
                node = child(&mut nodes, &mut children, node, Some(f), s.thread);
            }
            nodes[node as usize].self_counts.instructions += s.samples;
            if let Some(f) = nodes[node as usize].function {
                *pcs.entry((s.pc, f)).or_default() += s.samples;
            }
        }
        // keep the functions some node names, in their order
        let mut used = vec![false; functions.len()];
        for n in &nodes {
            if let Some(f) = n.function.filter(|&f| (f as usize) < functions.len()) {
                used[f as usize] = true;
            }
        }
        let mut remap = vec![u32::MAX; functions.len()];
        let mut kept = Vec::new();
        for (i, f) in functions.iter().enumerate().filter(|&(i, _)| used[i]) {
            remap[i] = kept.len() as u32;
            kept.push(Function {
                name: f.name.clone(),
                mangled: f.mangled.clone(),
                start: f.start,
                size: f.size,
                self_counts: Counts::default(),
                total_counts: Counts::default(),
                calls: 0,
            });
        }
        for n in &mut nodes {
            n.function = n
                .function
                .and_then(|f| remap.get(f as usize).copied())
                .filter(|&f| f != u32::MAX);
            n.total_counts = n.self_counts;
        }
        for n in &nodes {
            if let Some(f) = n.function {
                kept[f as usize].self_counts.add(&n.self_counts);
            }
        }
        for i in (1..nodes.len()).rev() {
            let t = nodes[i].total_counts;
            let parent = nodes[i].parent as usize;
            nodes[parent].total_counts.add(&t);
        }
        add_function_totals(&nodes, &mut kept);
        let mut pcs: Vec<PcCounts> = pcs
            .into_iter()
            .filter_map(|((pc, f), n)| {
                let function = *remap.get(f as usize).filter(|&&f| f != u32::MAX)?;
                Some(PcCounts {
                    pc,
                    function,
                    counts: Counts {
                        instructions: n,
                        ..Counts::default()
                    },
                })
            })
            .collect();
        pcs.sort_by_key(|c| (c.pc, c.function));
        let threads = threads_of(&nodes);
        Profile {
            instructions: total,
            timed: false,
            functions: kept,
            nodes,
            folded_calls: folded,
            threads,
            pcs,
            timeline: Default::default(),
        }
    }
}

/// The child of `parent` for `function` on `thread`, made if new (`None`: a thread's root).
fn child(
    nodes: &mut Vec<TreeNode>,
    children: &mut FxHashMap<(u32, Option<u32>, u32), u32>,
    parent: u32,
    function: Option<u32>,
    thread: u32,
) -> u32 {
    *children
        .entry((parent, function, thread))
        .or_insert_with(|| {
            nodes.push(TreeNode {
                parent,
                function,
                self_counts: Counts::default(),
                total_counts: Counts::default(),
                calls: 0,
                thread,
            });
            nodes.len() as u32 - 1
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str, start: u64) -> SampledFunction {
        SampledFunction {
            name: name.into(),
            start,
            size: 16,
            ..SampledFunction::default()
        }
    }

    #[test]
    fn stacks_make_a_tree_with_self_at_the_innermost_and_recursion_counted_once() {
        let fns = [f("main", 0), f("sort", 16), f("cmp", 32), f("unused", 48)];
        let s = [
            Stack {
                frames: &[0, 1, 2],
                pc: 33,
                samples: 3,
                thread: 0,
            },
            Stack {
                frames: &[0, 1],
                pc: 17,
                samples: 2,
                thread: 0,
            },
            Stack {
                frames: &[0, 1, 1, 2],
                pc: 34,
                samples: 1,
                thread: 0,
            },
            Stack {
                frames: &[0],
                pc: 1,
                samples: 4,
                thread: 1,
            },
        ];
        let p = Profile::from_stacks(&fns, s);
        assert_eq!(p.instructions, 10);
        assert_eq!(p.functions.len(), 3, "unused is dropped");
        let by = |n: &str| p.functions.iter().find(|x| x.name == n).unwrap();
        assert_eq!(by("cmp").self_counts.instructions, 4);
        assert_eq!(by("sort").self_counts.instructions, 2);
        assert_eq!(
            by("sort").total_counts.instructions,
            6,
            "recursion counted once"
        );
        assert_eq!(by("main").total_counts.instructions, 10);
        assert_eq!(p.self_sum().instructions, 10);
        assert_eq!(p.nodes[0].total_counts.instructions, 10);
        assert_eq!(p.threads.len(), 2);
        assert_eq!(p.threads[1].counts.instructions, 4);
        let pcs: u64 = p.pcs.iter().map(|c| c.counts.instructions).sum();
        assert_eq!(pcs, 10);
        assert!(p.nodes.iter().all(|n| n.calls == 0));
    }

    #[test]
    fn a_stack_deeper_than_the_limit_keeps_its_outermost_frames() {
        let fns = [f("a", 0), f("b", 16)];
        let frames: Vec<u32> = (0..MAX_DEPTH + 10).map(|i| (i % 2) as u32).collect();
        let p = Profile::from_stacks(
            &fns,
            [Stack {
                frames: &frames,
                pc: 0,
                samples: 1,
                thread: 0,
            }],
        );
        assert_eq!(p.folded_calls, 10);
        assert_eq!(p.nodes.len(), MAX_DEPTH + 1);
        assert_eq!(p.self_sum().instructions, 1);
    }
}
