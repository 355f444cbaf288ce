//! A context model for the temporal stream: PPM (prediction by partial matching) over whole
//! items, driving a range coder. Format version 2 stores a stream chunk this way (an `STRC`
//! section) when it is smaller than the zstd-compressed columns (`STRM`).
//!
//! Why: the stream of (level, id, trip) items is a Markov-like source. The item after a given
//! item, or after a given pair of items, is nearly always one of a few. zstd finds repeated
//! *strings* of items and pays whole bytes for what it cannot match. A data-dependent branch
//! inside a loop (qsort's partition, a hash probe, BFS's visited test) breaks strings every few
//! items, but leaves the successor sets small. Coding each item with the probability the
//! context gives it pays fractions of a bit for the likely successor. On those programs this
//! coder is 30–50% smaller than zstd. On programs dominated by long exact repeats (a fixed
//! loop nest), zstd's long matches win, so the writer keeps whichever is smaller per chunk
//! (docs/strata.md, "Stream coding").
//!
//! The model, per item (each chunk starts from an empty model, so chunks decode alone):
//!
//! 1. Items are interned as dense *symbols* in order of first appearance in the chunk.
//! 2. Order 2 (the two previous symbols), then order 1 (the previous symbol): each context
//!    keeps its successors with counts. The item is coded with probability
//!    `count / (total + distinct)`; otherwise an escape with probability
//!    `distinct / (total + distinct)` (PPM method C, Moffat 1990). There is no exclusion
//!    (a lower order still reserves probability for symbols a higher order offered): measured,
//!    exclusion saved 1.3–1.7% and made decoding 1.6x slower. Only the contexts from the one
//!    that coded the item upward learn it (update exclusion).
//! 3. Order 0: a known symbol, coded uniformly among the known symbols; or a new one, coded
//!    as its level (adaptive), its id (one bit-ish flag when it is the next unused id of
//!    its level, which it usually is because dictionaries number entries in order of first
//!    use; else its bit length and bits) and its trip count (bit length and bits).
//!
//! The range coder is the carry-propagating kind used by LZMA: 32-bit range, renormalized
//! a byte at a time below 2^24, frequencies totalling at most 2^16.

use crate::builder::Item;
use rustc_hash::FxHashMap;

/// Largest total frequency an interval may be coded against.
const MAX_TOTAL: u32 = 1 << 16;
/// Renormalize below this range.
const TOP: u32 = 1 << 24;
/// A context stops taking new successors at this many (so `total + distinct` stays in range).
const MAX_ENTRIES: usize = 1 << 14;
/// Counts of a context are halved when its total exceeds this.
const RESCALE: u32 = 1 << 15;
/// Largest item count a reader accepts in one chunk (bounds work on hostile input).
pub const MAX_ITEMS: u64 = 1 << 26;

// ------------------------------------------------------------------------------ range coder

struct Encoder {
    low: u64,
    range: u32,
    cache: u8,
    pending: u64,
    out: Vec<u8>,
}

impl Encoder {
    fn new() -> Encoder {
        Encoder {
            low: 0,
            range: u32::MAX,
            cache: 0,
            pending: 1,
            out: Vec::new(),
        }
    }

    /// Narrows to `[cum, cum + freq)` of `tot`.
    #[inline]
    fn encode(&mut self, cum: u32, freq: u32, tot: u32) {
        debug_assert!(freq > 0 && cum + freq <= tot && tot <= MAX_TOTAL);
        let r = self.range / tot;
        self.low += u64::from(r) * u64::from(cum);
        self.range = r * freq;
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    fn shift_low(&mut self) {
        if (self.low as u32) < 0xFF00_0000 || (self.low >> 32) != 0 {
            let carry = (self.low >> 32) as u8;
            let mut byte = self.cache;
            loop {
                self.out.push(byte.wrapping_add(carry));
                byte = 0xFF;
                self.pending -= 1;
                if self.pending == 0 {
                    break;
                }
            }
            self.cache = (self.low >> 24) as u8;
        }
        self.pending += 1;
        self.low = (self.low & 0x00FF_FFFF) << 8;
    }

    /// `bits` low bits of `v`, uniformly.
    fn bits(&mut self, v: u64, bits: u32) {
        let mut left = bits;
        while left > 0 {
            let n = left.min(16);
            left -= n;
            self.encode(((v >> left) & ((1 << n) - 1)) as u32, 1, 1 << n);
        }
    }

    /// `v < n`, uniformly.
    fn uniform(&mut self, v: u32, n: u32) {
        if n <= MAX_TOTAL {
            self.encode(v, 1, n);
        } else {
            self.encode(v >> 16, 1, ((n - 1) >> 16) + 1);
            self.encode(v & 0xFFFF, 1, MAX_TOTAL);
        }
    }

    fn finish(mut self) -> Vec<u8> {
        for _ in 0..5 {
            self.shift_low();
        }
        self.out
    }
}

struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
    range: u32,
    code: u32,
    r: u32,
}

impl<'a> Decoder<'a> {
    fn new(data: &'a [u8]) -> Decoder<'a> {
        let mut d = Decoder {
            data,
            pos: 0,
            range: u32::MAX,
            code: 0,
            r: 1,
        };
        for _ in 0..5 {
            d.code = (d.code << 8) | u32::from(d.byte());
        }
        d
    }

    #[inline]
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// The frequency point the next symbol of a `tot` interval lies at.
    #[inline]
    fn target(&mut self, tot: u32) -> Result<u32, String> {
        self.r = self.range / tot;
        let v = self.code / self.r;
        if v >= tot {
            return Err(format!(
                "coded byte {}: value outside the coding interval",
                self.pos
            ));
        }
        Ok(v)
    }

    #[inline]
    fn consume(&mut self, cum: u32, freq: u32) {
        self.code -= self.r * cum;
        self.range = self.r * freq;
        while self.range < TOP {
            self.code = (self.code << 8) | u32::from(self.byte());
            self.range <<= 8;
        }
    }

    fn bits(&mut self, bits: u32) -> Result<u64, String> {
        let mut v = 0u64;
        let mut left = bits;
        while left > 0 {
            let n = left.min(16);
            left -= n;
            let x = self.target(1 << n)?;
            self.consume(x, 1);
            v = (v << n) | u64::from(x);
        }
        Ok(v)
    }

    fn uniform(&mut self, n: u32) -> Result<u32, String> {
        if n <= MAX_TOTAL {
            let v = self.target(n)?;
            self.consume(v, 1);
            Ok(v)
        } else {
            let hi = self.target(((n - 1) >> 16) + 1)?;
            self.consume(hi, 1);
            let lo = self.target(MAX_TOTAL)?;
            self.consume(lo, 1);
            let v = (hi << 16) | lo;
            if v >= n {
                return Err(format!("coded byte {}: symbol {v} of {n}", self.pos));
            }
            Ok(v)
        }
    }
}

// --------------------------------------------------------------------------- small models

/// An adaptive frequency table over `0..n` for small alphabets.
struct Freq {
    counts: Vec<u32>,
    total: u32,
}

impl Freq {
    const INC: u32 = 24;
    const LIMIT: u32 = 1 << 13;

    fn new(n: usize) -> Freq {
        Freq {
            counts: vec![1; n],
            total: n as u32,
        }
    }

    fn update(&mut self, s: usize) {
        self.counts[s] += Self::INC;
        self.total += Self::INC;
        if self.total > Self::LIMIT {
            self.total = 0;
            for c in &mut self.counts {
                *c = c.div_ceil(2);
                self.total += *c;
            }
        }
    }

    fn encode(&mut self, e: &mut Encoder, s: usize) {
        let cum: u32 = self.counts[..s].iter().sum();
        e.encode(cum, self.counts[s], self.total);
        self.update(s);
    }

    fn decode(&mut self, d: &mut Decoder) -> Result<usize, String> {
        let v = d.target(self.total)?;
        let mut cum = 0;
        for (s, &c) in self.counts.iter().enumerate() {
            if v < cum + c {
                d.consume(cum, c);
                self.update(s);
                return Ok(s);
            }
            cum += c;
        }
        Err(format!("coded byte {}: frequency table overrun", d.pos))
    }
}

/// How an unsigned number is coded: its bit length (adaptive), then the bits below the top one.
struct Number {
    len: Freq,
}

impl Number {
    fn new() -> Number {
        Number { len: Freq::new(65) }
    }

    fn encode(&mut self, e: &mut Encoder, v: u64) {
        let n = 64 - v.leading_zeros();
        self.len.encode(e, n as usize);
        if n > 1 {
            e.bits(v, n - 1);
        }
    }

    fn decode(&mut self, d: &mut Decoder) -> Result<u64, String> {
        let n = self.len.decode(d)? as u32;
        Ok(match n {
            0 => 0,
            1 => 1,
            _ => (1 << (n - 1)) | d.bits(n - 1)?,
        })
    }
}

// --------------------------------------------------------------------------------- contexts

/// One context: its successors as (symbol, count), most frequent roughly first.
#[derive(Default)]
struct Ctx {
    succ: Vec<(u32, u32)>,
    total: u32,
}

impl Ctx {
    /// Counts successor `s`, found at `at` (or absent: `None`; no scan is needed because
    /// coding already looked).
    fn add(&mut self, s: u32, at: Option<usize>) {
        match at {
            Some(i) => {
                self.succ[i].1 += 1;
                self.total += 1;
                // keep frequent successors near the front: shorter scans
                if i > 0 && self.succ[i].1 > self.succ[i - 1].1 {
                    self.succ.swap(i, i - 1);
                }
            }
            None if self.succ.len() < MAX_ENTRIES => {
                self.succ.push((s, 1));
                self.total += 1;
            }
            None => {}
        }
        if self.total > RESCALE {
            self.total = 0;
            for (_, c) in &mut self.succ {
                *c = c.div_ceil(2);
                self.total += *c;
            }
        }
    }
}

/// The model state both sides keep in step.
struct Model {
    /// Order-1 context of symbol `s` is `ctxs[order1[s]]` (u32::MAX: none yet).
    order1: Vec<u32>,
    /// Order-2 context of `(older, newer)`.
    order2: FxHashMap<u64, u32>,
    ctxs: Vec<Ctx>,
    /// Order-0 flag: 0 known symbol, 1 new symbol.
    new_flag: Freq,
    level: Freq,
    next_flag: Freq,
    id: Number,
    trip: Number,
    /// Next unused id per level.
    next_id: Vec<u64>,
    /// The two previous symbols, newest last.
    hist: [u32; 2],
    seen: usize,
}

const NONE: u32 = u32::MAX;

impl Model {
    fn new() -> Model {
        Model {
            order1: Vec::new(),
            order2: FxHashMap::default(),
            ctxs: Vec::new(),
            new_flag: Freq::new(2),
            level: Freq::new(256),
            next_flag: Freq::new(2),
            id: Number::new(),
            trip: Number::new(),
            next_id: vec![0; 256],
            hist: [NONE; 2],
            seen: 0,
        }
    }

    fn key(&self) -> u64 {
        (u64::from(self.hist[0]) << 32) | u64::from(self.hist[1])
    }

    /// The contexts that exist for the current history, highest order first, with their
    /// order index (0: order 2, 1: order 1).
    fn contexts(&self) -> impl Iterator<Item = (usize, &Ctx)> {
        self.context_ids()
            .into_iter()
            .enumerate()
            .filter(|&(_, c)| c != NONE)
            .map(|(k, c)| (k, &self.ctxs[c as usize]))
    }

    fn context_ids(&self) -> [u32; 2] {
        let o2 = if self.seen >= 2 {
            self.order2.get(&self.key()).copied().unwrap_or(NONE)
        } else {
            NONE
        };
        let o1 = if self.seen >= 1 {
            self.order1[self.hist[1] as usize]
        } else {
            NONE
        };
        [o2, o1]
    }

    /// Records that symbol `s` followed the current history; `coded` is (order index, position)
    /// of the context that coded it (index 0: order 2, 1: order 1), `None` for order 0.
    /// Contexts above it did not hold `s`; with update exclusion, contexts below it are left
    /// alone.
    fn update(&mut self, s: u32, coded: Option<(usize, usize)>) {
        let at = |k: usize| match coded {
            Some((c, i)) if c == k => Some(i),
            _ => None,
        };
        let by_order2 = matches!(coded, Some((0, _)));
        if self.order1.len() <= s as usize {
            self.order1.resize(s as usize + 1, NONE);
        }
        if self.seen >= 2 {
            let next = self.ctxs.len() as u32;
            let c = *self.order2.entry(self.key()).or_insert(next);
            if c == next {
                self.ctxs.push(Ctx::default());
            }
            self.ctxs[c as usize].add(s, at(0));
        }
        if self.seen >= 1 && !by_order2 {
            let p = self.hist[1] as usize;
            if self.order1[p] == NONE {
                self.order1[p] = self.ctxs.len() as u32;
                self.ctxs.push(Ctx::default());
            }
            let c = self.order1[p] as usize;
            self.ctxs[c].add(s, at(1));
        }
        self.hist = [self.hist[1], s];
        self.seen += 1;
    }
}

// ----------------------------------------------------------------------------------- public

/// Codes a chunk of the temporal stream.
pub fn encode(items: &[Item]) -> Vec<u8> {
    let mut e = Encoder::new();
    let mut m = Model::new();
    let mut intern: FxHashMap<Item, u32> = FxHashMap::default();
    let mut known = 0u32;
    for &item in items {
        let s = *intern.entry(item).or_insert(known);
        let mut coded = None;
        for (order, ctx) in m.contexts() {
            let distinct = ctx.succ.len() as u32;
            let tot = ctx.total;
            let mut cum = 0;
            let mut found = None;
            for (i, &(x, n)) in ctx.succ.iter().enumerate() {
                if x == s {
                    found = Some((i, n));
                    break;
                }
                cum += n;
            }
            if let Some((i, n)) = found {
                e.encode(cum, n, tot + distinct);
                coded = Some((order, i));
                break;
            }
            e.encode(tot, distinct, tot + distinct);
        }
        if coded.is_none() {
            if s < known {
                m.new_flag.encode(&mut e, 0);
                e.uniform(s, known);
            } else {
                m.new_flag.encode(&mut e, 1);
                let level = usize::from(item.level);
                m.level.encode(&mut e, level);
                let id = u64::from(item.id);
                if id == m.next_id[level] {
                    m.next_flag.encode(&mut e, 1);
                } else {
                    m.next_flag.encode(&mut e, 0);
                    m.id.encode(&mut e, id);
                }
                m.next_id[level] = m.next_id[level].max(id + 1);
                m.trip.encode(&mut e, item.trip);
                known += 1;
            }
        }
        m.update(s, coded);
    }
    e.finish()
}

/// Decodes `n` items coded by [`encode`]. Errors name the coded byte where decoding failed;
/// nothing here panics on arbitrary bytes.
pub fn decode(data: &[u8], n: u64) -> Result<Vec<Item>, String> {
    if n > MAX_ITEMS {
        return Err(format!(
            "{n} items in one chunk exceeds the reader's limit {MAX_ITEMS}"
        ));
    }
    let mut d = Decoder::new(data);
    let mut m = Model::new();
    let mut symbols: Vec<Item> = Vec::new();
    let mut out = Vec::with_capacity((n as usize).min(data.len().saturating_mul(64) + 16));
    for i in 0..n {
        // a valid chunk never needs more than a few bytes beyond its end
        if d.pos > data.len() + 8 {
            return Err(format!("item {i}: coded data ends early"));
        }
        let mut sym = None;
        let mut coded = None;
        for (order, ctx) in m.contexts() {
            let distinct = ctx.succ.len() as u32;
            let tot = ctx.total;
            let v = d.target(tot + distinct)?;
            if v >= tot {
                d.consume(tot, distinct);
                continue;
            }
            let mut cum = 0;
            for (i, &(x, n)) in ctx.succ.iter().enumerate() {
                if v < cum + n {
                    d.consume(cum, n);
                    sym = Some(x);
                    coded = Some((order, i));
                    break;
                }
                cum += n;
            }
            break;
        }
        let s = match sym {
            Some(s) => s,
            None => {
                let known = symbols.len() as u32;
                if m.new_flag.decode(&mut d)? == 0 {
                    if known == 0 {
                        return Err(format!("item {i}: a known symbol before any was defined"));
                    }
                    d.uniform(known)?
                } else {
                    let level = m.level.decode(&mut d)?;
                    let id = if m.next_flag.decode(&mut d)? == 1 {
                        m.next_id[level]
                    } else {
                        m.id.decode(&mut d)?
                    };
                    let Ok(id32) = u32::try_from(id) else {
                        return Err(format!("item {i}: id {id} does not fit in 32 bits"));
                    };
                    m.next_id[level] = m.next_id[level].max(id + 1);
                    let trip = m.trip.decode(&mut d)?;
                    let item = Item {
                        level: level as u8,
                        id: id32,
                        trip,
                    };
                    symbols.push(item);
                    known
                }
            }
        };
        out.push(symbols[s as usize]);
        m.update(s, coded);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_items() -> impl Strategy<Value = Vec<Item>> {
        // small alphabets (so contexts fill up and rescale) mixed with arbitrary values
        let small =
            (0u8..3, 0u32..12, 1u64..4).prop_map(|(level, id, trip)| Item { level, id, trip });
        let any = (any::<u8>(), any::<u32>(), any::<u64>()).prop_map(|(level, id, trip)| Item {
            level,
            id,
            trip,
        });
        prop::collection::vec(prop_oneof![8 => small, 1 => any], 0..3000)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn any_items_round_trip(items in arb_items()) {
            let coded = encode(&items);
            prop_assert_eq!(decode(&coded, items.len() as u64).unwrap(), items);
        }

        #[test]
        fn any_bytes_decode_without_panic(
            data in prop::collection::vec(any::<u8>(), 0..400),
            n in 0u64..5000,
        ) {
            if let Ok(items) = decode(&data, n) {
                prop_assert_eq!(items.len() as u64, n);
            }
        }
    }

    fn item(level: u8, id: u32, trip: u64) -> Item {
        Item { level, id, trip }
    }

    #[test]
    fn round_trips_small_streams() {
        let cases: Vec<Vec<Item>> = vec![
            vec![],
            vec![item(0, 0, 1)],
            vec![item(0, 0, 1), item(0, 0, 1), item(0, 0, 1)],
            vec![
                item(3, u32::MAX, u64::MAX),
                item(0, 7, 0),
                item(255, 0, 1 << 40),
            ],
            (0..1000)
                .map(|i| item(0, i % 7, 1 + u64::from(i % 3)))
                .collect(),
        ];
        for items in cases {
            let coded = encode(&items);
            assert_eq!(decode(&coded, items.len() as u64).unwrap(), items);
        }
    }

    #[test]
    fn predictable_streams_cost_little() {
        // a loop whose body takes one of two paths: about a bit per choice, nothing per repeat
        let mut x = 0x2545_f491_u32;
        let mut items = Vec::new();
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            items.push(item(0, 0, 1));
            items.push(item(0, 1 + (x & 1), 1));
            items.push(item(0, 3, 4));
        }
        let coded = encode(&items);
        assert!(coded.len() < 100_000 / 8 * 11 / 10, "{} bytes", coded.len());
        assert_eq!(decode(&coded, items.len() as u64).unwrap(), items);
    }

    #[test]
    fn bad_data_is_an_error_not_a_panic() {
        let items: Vec<Item> = (0..5000).map(|i| item(0, i % 13, 1)).collect();
        let coded = encode(&items);
        for cut in [0, 1, 5, coded.len() / 2] {
            let r = decode(&coded[..cut], items.len() as u64);
            assert!(r.is_err() || r.unwrap() != items);
        }
        let mut bad = coded.clone();
        for b in bad.iter_mut().skip(6).step_by(7) {
            *b ^= 0x5a;
        }
        let _ = decode(&bad, items.len() as u64);
        assert!(decode(&coded, MAX_ITEMS + 1).is_err());
    }
}
