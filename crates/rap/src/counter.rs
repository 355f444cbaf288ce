//! Exact first, then RAP ([`RapCounter`]): count every value exactly while an exact table is
//! the smaller structure, and hand over to a [`RapTree`] built from those counts once no tree
//! can ever hold more (issue 55; docs/rap.md, "Exact first").
//!
//! A RAP tree's size is set by ε and the universe (its warm-up, while τ = ⌊ε'·n/H⌋ is 0,
//! splits every value down to a leaf; its jump table alone is 20 KiB), not by the distinct
//! count, so on a short stream, or one with few distinct values, an exact table is smaller.
//! The counter starts as an `FxHashMap` grown on demand — which holds the same buckets as one
//! presized to the distinct count, the fair exact peer of docs/BENCHMARKS.md "RAP" — and when
//! the table grows to [`max_allocated_bytes`] of the config or more, builds a
//! [`RapTree::with_bounded_arena`] from the counts, which never holds more than that. The
//! distinct count only grows, so from then on the tree holds at most what the presized table
//! would at any later length: the counter never holds more than the exact table.
//!
//! The tree built from the counts obeys every guarantee of a tree fed the stream itself
//! (RAP's invariants hold for any order of adds, and the counts are the stream's), and before
//! the hand-over every estimate is exact.

use crate::bound::max_allocated_bytes;
use crate::{Config, Error, RapTree};
use rustc_hash::FxHashMap;
use std::borrow::Cow;

/// A stream's counts: exact while that is smaller, then a [`RapTree`].
#[derive(Clone, Debug)]
pub struct RapCounter {
    config: Config,
    /// [`max_allocated_bytes`] of `config`: the table's size at which it hands over.
    handover_bytes: u64,
    state: State,
}

#[derive(Clone, Debug)]
enum State {
    /// Exact counts, the events counted, the table's capacity when last looked at.
    Exact(FxHashMap<u64, u64>, u64, usize),
    Tree(Box<RapTree>),
}

/// Host bytes an `FxHashMap<u64, u64>` of `capacity` holds (hashbrown: `capacity` is 7/8 of
/// a power-of-two bucket count from 8 buckets up, 16 bytes an entry and one control byte a
/// bucket, plus a group of control bytes).
pub fn table_bytes(capacity: usize) -> u64 {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 8 {
        (capacity + 1).next_power_of_two()
    } else {
        (capacity * 8 / 7).next_power_of_two()
    };
    (buckets * 17 + 16) as u64
}

/// `Err` naming the first of `values` outside the universe of `config` (as the tree refuses
/// it).
fn in_universe(config: &Config, values: &[u64]) -> Result<(), Error> {
    let bits = config.bits();
    match values
        .iter()
        .find(|&&v| u32::from(bits) < 64 && v >> bits != 0)
    {
        Some(&value) => Err(Error::ValueOutOfRange { value, bits }),
        None => Ok(()),
    }
}

impl RapCounter {
    /// An empty counter (nothing allocated).
    pub fn new(config: Config) -> Self {
        RapCounter {
            config,
            handover_bytes: max_allocated_bytes(&config),
            state: State::Exact(FxHashMap::default(), 0, 0),
        }
    }

    /// The configuration of the tree it hands over to.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Events counted so far (sum of weights).
    pub fn n(&self) -> u64 {
        match &self.state {
            State::Exact(_, n, _) => *n,
            State::Tree(t) => t.n(),
        }
    }

    /// Whether it still counts exactly.
    pub fn is_exact(&self) -> bool {
        matches!(self.state, State::Exact(..))
    }

    /// Host bytes it holds: the table's, or the tree's ([`RapTree::allocated_bytes`]).
    pub fn allocated_bytes(&self) -> u64 {
        match &self.state {
            State::Exact(map, _, _) => table_bytes(map.capacity()),
            State::Tree(t) => t.allocated_bytes(),
        }
    }

    /// Counts one event.
    #[inline]
    pub fn add(&mut self, value: u64) -> Result<(), Error> {
        self.add_weighted(value, 1)
    }

    /// Counts `weight` events of `value` ([`RapTree::add_weighted`]'s errors).
    pub fn add_weighted(&mut self, value: u64, weight: u64) -> Result<(), Error> {
        match &mut self.state {
            State::Tree(t) => t.add_weighted(value, weight),
            State::Exact(map, n, cap) => {
                in_universe(&self.config, &[value])?;
                *n = n
                    .checked_add(weight)
                    .ok_or(Error::CountOverflow { n: *n, weight })?;
                if weight > 0 {
                    *map.entry(value).or_insert(0) += weight;
                }
                let grew = map.len() > *cap;
                if grew {
                    self.after_growth()?;
                }
                Ok(())
            }
        }
    }

    /// Counts a slice of events, all or nothing ([`RapTree::add_batch`]).
    pub fn add_batch(&mut self, values: &[u64]) -> Result<(), Error> {
        if let State::Tree(t) = &mut self.state {
            return t.add_batch(values);
        }
        in_universe(&self.config, values)?;
        let (n, total) = (self.n(), values.len() as u64);
        if n.checked_add(total).is_none() {
            return Err(Error::CountOverflow { n, weight: total });
        }
        let mut rest = values;
        while !rest.is_empty() {
            let State::Exact(map, n, cap) = &mut self.state else {
                break;
            };
            // up to the insert that grows the table: one compare an event
            let mut k = 0;
            for &v in rest {
                k += 1;
                *map.entry(v).or_insert(0) += 1;
                if map.len() > *cap {
                    break;
                }
            }
            *n += k as u64;
            rest = &rest[k..];
            if map.len() > *cap {
                self.after_growth()?;
            }
        }
        match &mut self.state {
            // handed over inside the slice: the tree counts the rest
            State::Tree(t) if !rest.is_empty() => t.add_batch(rest),
            _ => Ok(()),
        }
    }

    /// After the table grew: once it holds [`max_allocated_bytes`] or more, the tree built
    /// from the counts replaces it.
    #[cold]
    fn after_growth(&mut self) -> Result<(), Error> {
        let State::Exact(map, _, cap) = &mut self.state else {
            return Ok(());
        };
        *cap = map.capacity();
        if table_bytes(*cap) >= self.handover_bytes {
            let tree = self.build()?;
            self.state = State::Tree(Box::new(tree));
        }
        Ok(())
    }

    /// The tree of the exact counts: the heaviest values first (ties by value), so that τ
    /// grows before the light ones arrive and they stay in wide ranges, then a merge batch.
    fn build(&self) -> Result<RapTree, Error> {
        let mut tree = RapTree::with_bounded_arena(self.config);
        if let State::Exact(map, _, _) = &self.state {
            let mut counts: Vec<(u64, u64)> = map.iter().map(|(&v, &c)| (v, c)).collect();
            counts.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            for (v, c) in counts {
                tree.add_weighted(v, c)?;
            }
            tree.compact();
        }
        Ok(tree)
    }

    /// The tree for queries: the counter's own, or one built from the exact counts.
    pub fn tree(&self) -> Result<Cow<'_, RapTree>, Error> {
        match &self.state {
            State::Tree(t) => Ok(Cow::Borrowed(t)),
            State::Exact(..) => self.build().map(Cow::Owned),
        }
    }

    /// The tree, built from the exact counts if it has not been handed over yet.
    pub fn into_tree(self) -> Result<RapTree, Error> {
        match self.state {
            State::Tree(t) => Ok(*t),
            State::Exact(..) => self.build(),
        }
    }

    /// The exact counts, while it keeps them (`None` once the tree has them).
    pub fn exact_counts(&self) -> Option<&FxHashMap<u64, u64>> {
        match &self.state {
            State::Exact(map, _, _) => Some(map),
            State::Tree(_) => None,
        }
    }
}
