//! Guest memory: a sparse 64-bit address space of 4 KiB pages with read/write/execute
//! permissions, a small software TLB for the common case, and a page budget (the memory limit).
//!
//! Accesses may be misaligned (Linux user mode emulates them, and so does qemu-user); an
//! access that crosses a page boundary takes the byte-by-byte slow path. A write to a page an
//! instruction was fetched from (since the machine last dropped its decoded code) bumps
//! [`Memory::code_epoch`], telling the instruction cache to drop pre-decoded code; a write to
//! an executable page nothing ran from (data in a read-write-execute mapping) does not.

use std::collections::{BTreeMap, HashMap};

mod shared;
pub use shared::SharedObject;

/// Pages per leaf of the page table (a leaf covers 2 MiB of address space and takes 2 KiB).
const LEAF_BITS: u32 = 9;
const LEAF: usize = 1 << LEAF_BITS;

/// One past the highest user address: 2^47 (Sv48). Every mapping lies below it, so page numbers
/// stay below 2^35.
pub const USER_TOP: u64 = 1 << 47;

/// vpn → page index: hashed 2 MiB chunks, each a flat array of page slots (index + 1, 0 =
/// unmapped), with the last chunk remembered. A TLB miss costs an array read, not a hash.
///
/// A leaf is freed (kept for reuse) when its last page is unmapped, so the table never holds
/// more leaves than there are mapped pages: host memory for the table is bounded by the
/// memory limit, whatever pattern of map and unmap the guest uses.
#[derive(Clone)]
struct PageTable {
    chunks: HashMap<u64, usize>,
    leaves: Vec<[u32; LEAF]>,
    /// Mapped slots per leaf.
    live: Vec<u32>,
    /// Leaves no chunk uses (all slots 0).
    spare: Vec<usize>,
    last: std::cell::Cell<(u64, usize)>,
    len: u64,
}

impl Default for PageTable {
    fn default() -> Self {
        PageTable {
            chunks: HashMap::new(),
            leaves: Vec::new(),
            live: Vec::new(),
            spare: Vec::new(),
            // no chunk number reaches u64::MAX (vpn >> 9 < 2^55)
            last: std::cell::Cell::new((u64::MAX, 0)),
            len: 0,
        }
    }
}

impl PageTable {
    #[inline]
    fn leaf(&self, vpn: u64) -> Option<usize> {
        let chunk = vpn >> LEAF_BITS;
        let (c, l) = self.last.get();
        if c == chunk {
            return Some(l);
        }
        let &l = self.chunks.get(&chunk)?;
        self.last.set((chunk, l));
        Some(l)
    }
    #[inline]
    fn get(&self, vpn: u64) -> Option<u32> {
        let l = self.leaf(vpn)?;
        let e = self.leaves[l][(vpn as usize) & (LEAF - 1)];
        (e != 0).then(|| e - 1)
    }
    fn insert(&mut self, vpn: u64, page: u32) {
        let chunk = vpn >> LEAF_BITS;
        let l = match self.chunks.get(&chunk) {
            Some(&l) => l,
            None => {
                let l = match self.spare.pop() {
                    Some(l) => l,
                    None => {
                        self.leaves.push([0; LEAF]);
                        self.live.push(0);
                        self.leaves.len() - 1
                    }
                };
                self.chunks.insert(chunk, l);
                l
            }
        };
        let slot = &mut self.leaves[l][(vpn as usize) & (LEAF - 1)];
        if *slot == 0 {
            self.len += 1;
            self.live[l] += 1;
        }
        *slot = page + 1;
    }
    fn remove(&mut self, vpn: u64) -> Option<u32> {
        let l = self.leaf(vpn)?;
        let slot = &mut self.leaves[l][(vpn as usize) & (LEAF - 1)];
        let old = *slot;
        *slot = 0;
        if old == 0 {
            return None;
        }
        self.len -= 1;
        self.live[l] -= 1;
        if self.live[l] == 0 {
            self.chunks.remove(&(vpn >> LEAF_BITS));
            self.spare.push(l);
            self.last.set((u64::MAX, 0));
        }
        Some(old - 1)
    }
    /// Leaves allocated (in use or spare).
    fn leaves(&self) -> usize {
        self.leaves.len()
    }
}

/// The mapped page numbers as coalesced ranges `start → end` (exclusive): what lets unmap,
/// remap, protect and the free-range search walk mapped pages instead of address ranges.
#[derive(Clone, Default)]
struct Regions(BTreeMap<u64, u64>);

impl Regions {
    /// The mapped parts of `[first, end)`, in order.
    fn overlapping(&self, first: u64, end: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        if let Some((_, &e)) = self.0.range(..first).next_back() {
            if e > first {
                out.push((first, e.min(end)));
            }
        }
        for (&s, &e) in self.0.range(first..end) {
            out.push((s, e.min(end)));
        }
        out
    }
    /// Mapped pages in `[first, end)`.
    fn count(&self, first: u64, end: u64) -> u64 {
        self.overlapping(first, end)
            .iter()
            .map(|(s, e)| e - s)
            .sum()
    }
    fn any(&self, first: u64, end: u64) -> bool {
        self.0
            .range(..first)
            .next_back()
            .is_some_and(|(_, &e)| e > first)
            || self.0.range(first..end).next().is_some()
    }
    fn insert(&mut self, first: u64, end: u64) {
        let (mut lo, mut hi) = (first, end);
        if let Some((&s, &e)) = self.0.range(..=first).next_back() {
            if e >= first {
                lo = s;
                hi = hi.max(e);
            }
        }
        let inside: Vec<u64> = self.0.range(lo..=end).map(|(&s, _)| s).collect();
        for s in inside {
            if let Some(e) = self.0.remove(&s) {
                hi = hi.max(e);
            }
        }
        self.0.insert(lo, hi);
    }
    fn remove(&mut self, first: u64, end: u64) {
        let mut touched: Vec<(u64, u64)> = Vec::new();
        if let Some((&s, &e)) = self.0.range(..first).next_back() {
            if e > first {
                touched.push((s, e));
            }
        }
        touched.extend(self.0.range(first..end).map(|(&s, &e)| (s, e)));
        for (s, e) in touched {
            self.0.remove(&s);
            if s < first {
                self.0.insert(s, first);
            }
            if e > end {
                self.0.insert(end, e);
            }
        }
    }
    /// The lowest page number ≥ `from` where `pages` free pages lie below `top`.
    fn gap(&self, from: u64, pages: u64, top: u64) -> Option<u64> {
        let mut at = from;
        if let Some((_, &e)) = self.0.range(..at).next_back() {
            at = at.max(e);
        }
        for (&s, &e) in self.0.range(at..) {
            if s >= at.checked_add(pages)? {
                break;
            }
            at = at.max(e);
        }
        (at.checked_add(pages)? <= top).then_some(at)
    }
}

/// Page size in bytes.
pub const PAGE_SIZE: u64 = 4096;
const PAGE_SHIFT: u32 = 12;
const TLB_SIZE: usize = 1024;

/// Page permission bits.
pub mod perm {
    /// Readable.
    pub const R: u8 = 1;
    /// Writable.
    pub const W: u8 = 2;
    /// Executable.
    pub const X: u8 = 4;
    /// Private to the memory: an instruction was fetched from the page since the machine
    /// last dropped its decoded code, so a store to it changes code the machine holds.
    pub(crate) const DECODED: u8 = 0x80;
    /// The permission bits proper.
    pub(crate) const RWX: u8 = R | W | X;
    /// A page of a file mapping wholly past the end of its file: no access, and an access
    /// is SIGBUS (BUS_ADRERR) rather than SIGSEGV, as on Linux.
    pub(crate) const PAST_EOF: u8 = 0x40;
    /// A page of a file mapping not yet touched: its bytes are read from its
    /// [`super::PageSource`] on first access (kept across `mprotect`).
    pub(crate) const LAZY: u8 = 0x20;
    /// Private to the memory: a page of a [`super::SharedObject`] (its frame moves between
    /// the processes that map it; kept across `mprotect`).
    pub(crate) const SHARED: u8 = 0x10;
    /// Private to the memory: a shared page whose frame this memory took from its object
    /// while its process runs.
    pub(crate) const HELD: u8 = 0x08;
    /// The bits a page keeps whatever protection it is given.
    pub(crate) const KEPT: u8 = LAZY | SHARED | HELD;
}

/// Where the bytes of a file-mapped page come from, read on the page's first access
/// (`mmap` reads nothing up front, as Linux's page cache faults pages in).
pub trait PageSource: Send + Sync {
    /// Reads the page at file offset `offset` into `out`; the bytes read (fewer at the
    /// file's end, 0 past it).
    fn read_page(&self, offset: u64, out: &mut [u8; PAGE_SIZE as usize]) -> std::io::Result<usize>;
}

/// A lazily read range of virtual pages: its end (exclusive), source, and the file offset of
/// its first page.
type Backing = (u64, std::sync::Arc<dyn PageSource>, u64);

/// Why an access failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// No page is mapped at `addr`.
    Unmapped(u64),
    /// The page at `addr` lacks the needed permission.
    Denied(u64),
}

impl AccessError {
    /// The faulting address.
    pub fn addr(self) -> u64 {
        match self {
            AccessError::Unmapped(a) | AccessError::Denied(a) => a,
        }
    }
}

#[derive(Clone, Copy)]
struct TlbEntry {
    vpn: u64,
    page: u32,
    perm: u8,
}

const EMPTY: TlbEntry = TlbEntry {
    vpn: u64::MAX,
    page: 0,
    perm: 0,
};

/// The guest address space.
pub struct Memory {
    /// Page frames; `None` is a page not yet written, which reads as zeros (a mapping costs
    /// no host memory until the guest stores to it: thread stacks, arenas, PROT_NONE
    /// reservations).
    pages: Vec<Option<Box<[u8; PAGE_SIZE as usize]>>>,
    /// Frames in `pages` that hold a page of bytes.
    materialized: u64,
    perms: Vec<u8>,
    map: PageTable,
    regions: Regions,
    free: Vec<u32>,
    tlb: Box<[TlbEntry; TLB_SIZE]>,
    limit_pages: u64,
    code_epoch: u64,
    /// Pages marked [`perm::DECODED`]: (virtual page number, frame).
    decoded: Vec<(u64, u32)>,
    /// Moves whenever a frame lent to the compiling tier may be freed or moved, or a page's
    /// permission changes ([`outcrop_jit::Host::frames_epoch`]).
    frames_epoch: u64,
    /// Where the bytes of pages marked [`perm::LAZY`] come from, by range of virtual pages
    /// (first page → [`Backing`]; disjoint; one entry per file mapping, whatever its size).
    lazy: std::collections::BTreeMap<u64, Backing>,
    /// The frames of shared pages, with the object page each shows ([`shared`]).
    shared: BTreeMap<u32, shared::SharedPage>,
    /// The frame of each object page in `shared`, by (object key, page).
    shared_keys: HashMap<(usize, u64), u32>,
    /// Frames that are a second view of a shared frame (the page mapped again, with its own
    /// protection): alias → the frame that holds the bytes.
    aliases: HashMap<u32, u32>,
    /// Whether this memory's process runs (it may hold its shared pages' frames).
    shared_held: bool,
    /// Shared frames taken from their objects since the process last ran
    /// ([`perm::HELD`]).
    taken: Vec<u32>,
    /// Whether any shared page is executable or held decoded code.
    shared_code: bool,
    /// Attachments by start address: (end, the kernel's token). Unmapping any of a range
    /// drops its token, and a `fork` copies it: the kernel counts a System V segment's
    /// attaches by its token's holders.
    attachments: BTreeMap<u64, (u64, Attachment)>,
    /// The running thread's vector unit while compiled code runs (it reaches vector
    /// instructions through [`outcrop_jit::Host::float`]), and whether Zvbb and Zvfhmin are
    /// enabled; the default (empty) otherwise ([`Memory::park_vector`]).
    vector: (crate::vector::VState, bool, bool),
}

/// What the kernel attached to a range of an address space ([`Memory::attach`]).
pub type Attachment = std::sync::Arc<dyn std::any::Any + Send + Sync>;

impl Memory {
    /// An empty address space that may map at most `limit_bytes`.
    pub fn new(limit_bytes: u64) -> Self {
        Memory {
            pages: Vec::new(),
            materialized: 0,
            perms: Vec::new(),
            map: PageTable::default(),
            regions: Regions::default(),
            free: Vec::new(),
            tlb: Box::new([EMPTY; TLB_SIZE]),
            limit_pages: limit_bytes / PAGE_SIZE,
            code_epoch: 0,
            decoded: Vec::new(),
            frames_epoch: 0,
            lazy: std::collections::BTreeMap::new(),
            shared: BTreeMap::new(),
            shared_keys: HashMap::new(),
            aliases: HashMap::new(),
            shared_held: true,
            vector: Default::default(),
            taken: Vec::new(),
            shared_code: false,
            attachments: BTreeMap::new(),
        }
    }

    /// Attaches `token` to `[start, end)`: it stays while every page of the range does.
    pub fn attach(&mut self, start: u64, end: u64, token: Attachment) {
        self.attachments.insert(start, (end, token));
    }

    /// The attachment starting at `start`: its end and token.
    pub fn attachment(&self, start: u64) -> Option<(u64, &Attachment)> {
        self.attachments.get(&start).map(|(e, t)| (*e, t))
    }

    /// Drops the attachments any byte of `[start, end)` belongs to.
    fn detach(&mut self, start: u64, end: u64) {
        if self.attachments.is_empty() {
            return;
        }
        let gone: Vec<u64> = self
            .attachments
            .range(..end)
            .rev()
            .take_while(|(_, (e, _))| *e > start)
            .map(|(&s, _)| s)
            .collect();
        for s in gone {
            self.attachments.remove(&s);
        }
    }

    /// A copy of this address space for a new process: every private page copied, every
    /// shared page still shared (the copy holds none of their frames until it runs,
    /// [`Memory::take_shared`]), no page marked as holding decoded code (the copy's machine
    /// has decoded nothing yet).
    pub fn fork_copy(&self) -> Memory {
        let mut pages = self.pages.clone();
        let mut perms = self.perms.clone();
        let mut materialized = self.materialized;
        for &f in self.shared.keys() {
            perms[f as usize] &= !perm::HELD;
            if pages[f as usize].take().is_some() {
                materialized -= 1;
            }
        }
        let mut m = Memory {
            pages,
            materialized,
            perms,
            map: self.map.clone(),
            regions: self.regions.clone(),
            free: self.free.clone(),
            tlb: Box::new([EMPTY; TLB_SIZE]),
            limit_pages: self.limit_pages,
            code_epoch: 0,
            decoded: self.decoded.clone(),
            frames_epoch: 0,
            lazy: self.lazy.clone(),
            shared: self.shared.clone(),
            shared_keys: self.shared_keys.clone(),
            aliases: self.aliases.clone(),
            shared_held: false,
            taken: Vec::new(),
            shared_code: self.shared_code,
            attachments: self.attachments.clone(),
            vector: Default::default(),
        };
        m.forget_decoded();
        m
    }

    /// Maps `[addr, addr + len)` (page-rounded, free) to the pages of `object` from its page
    /// `first` on, with `perm`: every process mapping a page of it sees the others' stores.
    /// Pages past the object's end are SIGBUS, as on Linux, until given a protection again. A page this address space maps
    /// already gets a second view with its own protection, its bytes the first view's.
    /// Fails, before mapping anything, if the range is not free or the budget would be
    /// exceeded.
    pub fn map_shared(
        &mut self,
        addr: u64,
        len: u64,
        perm: u8,
        object: &std::sync::Arc<SharedObject>,
        first: u64,
    ) -> Result<(), MapError> {
        let (start, end) = user_span(addr, len)?;
        if self.regions.any(start, end) {
            return Err(MapError::BadRange);
        }
        let key = object.key();
        self.map(addr, len, perm)?;
        let in_object = object.len().div_ceil(PAGE_SIZE);
        for k in 0..end - start {
            let Some(f) = self.map.get(start + k) else {
                continue;
            };
            let page = first.saturating_add(k);
            // a page past the object's end is SIGBUS, but still its page: an object grown
            // (a host file appended to) covers it again when it is made accessible
            if page >= in_object {
                self.perms[f as usize] = perm::PAST_EOF;
            }
            self.perms[f as usize] |= perm::SHARED;
            if let Some(&seen) = self.shared_keys.get(&(key, page)) {
                // a second view: its own frame and protection, the first view's bytes
                self.aliases.insert(f, seen);
                if let Some(s) = self.shared.get_mut(&seen) {
                    s.aliases.push(f);
                }
                continue;
            }
            self.shared.insert(
                f,
                shared::SharedPage {
                    object: object.clone(),
                    page,
                    aliases: Vec::new(),
                },
            );
            self.shared_keys.insert((key, page), f);
        }
        self.shared_code |= perm & perm::X != 0;
        self.flush_tlb();
        Ok(())
    }

    /// Gives the frames of the shared pages this memory took back to their objects: its
    /// process is switched out (or the kernel is about to read or write an object
    /// directly). Moves pointers only, for the pages touched since it last ran.
    pub fn release_shared(&mut self) {
        if !self.shared_held {
            return;
        }
        self.shared_held = false;
        if self.taken.is_empty() {
            return;
        }
        for f in std::mem::take(&mut self.taken) {
            if self.perms[f as usize] & perm::HELD == 0 {
                continue; // unmapped since (its bytes went back then)
            }
            self.perms[f as usize] &= !perm::HELD;
            if let (Some(frame), Some(s)) = (self.pages[f as usize].take(), self.shared.get(&f)) {
                self.materialized -= 1;
                s.object.give(s.page, frame);
            }
        }
        // frames lent to compiled code are gone
        self.flush_tlb();
    }

    /// This memory's process runs now: it may take the frames of the shared pages it maps,
    /// each on its first access ([`Memory::take_frame`]). Code decoded from a shared page may
    /// have been changed by another process since: the code epoch moves if any shared page
    /// is executable or held decoded code.
    pub fn take_shared(&mut self) {
        if self.shared_held {
            return;
        }
        self.shared_held = true;
        if self.shared_code {
            self.flush_tlb();
            self.code_epoch += 1;
        }
    }

    /// Takes shared frame `f`'s bytes from its object, once per run of this memory's process
    /// (a page no one wrote has none: it reads as zero, and a store makes its frame here).
    #[cold]
    #[inline(never)]
    fn take_frame(&mut self, f: u32) {
        if !self.shared_held || self.perms[f as usize] & (perm::SHARED | perm::HELD) != perm::SHARED
        {
            return;
        }
        let Some(s) = self.shared.get(&f) else {
            return;
        };
        if let Some(frame) = s.object.take(s.page) {
            self.pages[f as usize] = Some(frame);
            self.materialized += 1;
        }
        self.perms[f as usize] |= perm::HELD;
        self.taken.push(f);
    }

    /// The shared object page `addr` lies in, as (object key, byte offset in the object):
    /// what names a futex every process mapping it shares.
    pub fn shared_at(&self, addr: u64) -> Option<(usize, u64)> {
        let f = self.map.get(addr >> PAGE_SHIFT)?;
        let f = self.aliases.get(&f).copied().unwrap_or(f);
        let s = self.shared.get(&f)?;
        Some((
            s.object.key(),
            s.page * PAGE_SIZE + (addr & (PAGE_SIZE - 1)),
        ))
    }

    /// Frame `f`, a view of a shared page, is unmapped: the frame no longer shows it. The
    /// bytes go back to the object, or, if another view remains, to that view's frame.
    fn unshare(&mut self, f: u32) {
        self.perms[f as usize] &= !perm::SHARED;
        if let Some(primary) = self.aliases.remove(&f) {
            if let Some(s) = self.shared.get_mut(&primary) {
                s.aliases.retain(|&a| a != f);
            }
            return;
        }
        let Some(mut s) = self.shared.remove(&f) else {
            return;
        };
        let frame = self.pages[f as usize].take();
        let held = self.perms[f as usize] & perm::HELD != 0;
        self.perms[f as usize] &= !perm::HELD;
        if let Some(next) = s.aliases.pop() {
            // the next view holds the bytes now
            if held {
                self.perms[next as usize] |= perm::HELD;
                self.taken.push(next);
            }
            self.aliases.remove(&next);
            for &a in &s.aliases {
                self.aliases.insert(a, next);
            }
            self.pages[next as usize] = frame;
            self.shared_keys.insert((s.object.key(), s.page), next);
            self.shared.insert(next, s);
            return;
        }
        self.shared_keys.remove(&(s.object.key(), s.page));
        if let Some(frame) = frame {
            self.materialized -= 1;
            if held {
                s.object.give(s.page, frame);
            }
        }
    }

    /// Sets the memory limit to `limit_bytes` (page-rounded down): what the other processes
    /// leave of the machine's. Pages mapped already stay mapped.
    pub fn set_limit_bytes(&mut self, limit_bytes: u64) {
        self.limit_pages = limit_bytes / PAGE_SIZE;
    }

    /// Pages mapped now.
    pub fn mapped_pages(&self) -> u64 {
        self.map.len
    }

    /// The memory limit in bytes (page-rounded down).
    pub fn limit_bytes(&self) -> u64 {
        self.limit_pages * PAGE_SIZE
    }

    /// Host bytes held for guest memory: page frames (in use or kept for reuse), their
    /// permissions, the page table and the record of lazily read file pages. Never more than 1.51 × the limit (see docs/machine.md,
    /// "Security model"), plus the region map's few bytes per mapped range.
    pub fn host_bytes(&self) -> u64 {
        let frames = self.materialized * PAGE_SIZE + self.pages.len() as u64 * 9;
        let table = self.map.leaves() as u64 * (LEAF as u64 * 4 + 4);
        // a lazily read range's entry (about 64 bytes with the tree's own)
        let lazy = self.lazy.len() as u64 * 64;
        frames + table + lazy
    }

    /// Changes whenever code the machine may hold decoded changed: a store to a page an
    /// instruction was fetched from since [`Memory::forget_decoded`] (a store to an
    /// executable page nothing ran from changes nothing decoded), unmapping, remapping,
    /// moving or re-protecting a page that was executable or had code fetched from it (a
    /// thread's stack coming and going changes nothing decoded).
    pub fn code_epoch(&self) -> u64 {
        self.code_epoch
    }

    /// The machine dropped all its decoded code: no page holds decoded instructions now, and
    /// stores to them stop changing the epoch until an instruction is fetched there again.
    pub fn forget_decoded(&mut self) {
        for (vpn, f) in self.decoded.drain(..) {
            if let Some(p) = self.perms.get_mut(f as usize) {
                *p &= !perm::DECODED;
            }
            // the TLB's copy, in the one slot the page can occupy (remapping flushes the whole
            // TLB; a stale copy elsewhere could only make a store bump the epoch needlessly)
            let e = &mut self.tlb[(vpn as usize) & (TLB_SIZE - 1)];
            if e.vpn == vpn && e.page == f {
                e.perm &= !perm::DECODED;
            }
        }
    }

    /// Marks the page of `addr` as holding decoded code (see [`perm::DECODED`]).
    #[cold]
    fn mark_decoded(&mut self, addr: u64) {
        let vpn = addr >> PAGE_SHIFT;
        if let Some(f) = self.map.get(vpn) {
            if self.perms[f as usize] & (perm::SHARED | perm::DECODED) == perm::SHARED {
                // every view of the page: a store through any of them changes this code
                self.shared_code = true;
                let primary = self.aliases.get(&f).copied().unwrap_or(f);
                let views: Vec<u32> = std::iter::once(primary)
                    .chain(
                        self.shared
                            .get(&primary)
                            .into_iter()
                            .flat_map(|s| s.aliases.clone()),
                    )
                    .collect();
                for v in views {
                    if self.perms[v as usize] & perm::DECODED == 0 {
                        self.perms[v as usize] |= perm::DECODED;
                        // (no TLB slot to mend: the whole TLB goes below)
                        self.decoded.push((u64::MAX, v));
                    }
                }
                self.flush_tlb();
                return;
            }
            if self.perms[f as usize] & perm::DECODED == 0 {
                self.perms[f as usize] |= perm::DECODED;
                self.decoded.push((vpn, f));
                // compiled code's direct stores to the page must stop: they change code now
                self.frames_epoch += 1;
                // the TLB's copy of the permissions must carry the mark too
                let e = &mut self.tlb[(vpn as usize) & (TLB_SIZE - 1)];
                if e.vpn == vpn {
                    e.perm |= perm::DECODED;
                }
            }
        }
    }

    fn flush_tlb(&mut self) {
        self.tlb.fill(EMPTY);
        // every change of mapping or permission comes here: frames lent to the compiling
        // tier may be gone
        self.frames_epoch += 1;
    }

    /// Maps `[addr, addr + len)` (page-rounded) with `perm`, zero-filled; pages already mapped
    /// keep their contents and get `perm`. Fails, before allocating anything, if the range
    /// leaves the user address space or the page budget would be exceeded.
    pub fn map(&mut self, addr: u64, len: u64, perm: u8) -> Result<(), MapError> {
        let (first, end) = user_span(addr, len)?;
        let mapped = self.regions.count(first, end);
        let new = (end - first) - mapped;
        if new > self.limit_pages - self.mapped_pages().min(self.limit_pages) {
            return Err(MapError::OutOfMemory);
        }
        // `end - first` ≤ new + mapped ≤ 2 × the limit: the loop is bounded by the budget.
        let mut code = false;
        for vpn in first..end {
            match self.map.get(vpn) {
                Some(i) => {
                    code |= holds_code(self.perms[i as usize]);
                    self.perms[i as usize] = perm | (self.perms[i as usize] & perm::KEPT);
                }
                None => {
                    let i = match self.free.pop() {
                        Some(i) => {
                            // reused: zero again, without host memory until written
                            if self.pages[i as usize].take().is_some() {
                                self.materialized -= 1;
                            }
                            self.perms[i as usize] = perm;
                            i
                        }
                        None => {
                            self.pages.push(None);
                            self.perms.push(perm);
                            (self.pages.len() - 1) as u32
                        }
                    };
                    self.map.insert(vpn, i);
                }
            }
        }
        self.regions.insert(first, end);
        self.flush_tlb();
        self.code_epoch += u64::from(code);
        Ok(())
    }

    /// Unmaps every mapped page in `[addr, addr + len)`. Walks the mapped pages only, so a
    /// huge length costs no more than the pages it really unmaps.
    pub fn unmap(&mut self, addr: u64, len: u64) -> Result<(), MapError> {
        let (first, end) = span(addr, len)?;
        let mut code = false;
        for (s, e) in self.regions.overlapping(first, end) {
            for vpn in s..e {
                if let Some(i) = self.map.remove(vpn) {
                    code |= holds_code(self.perms[i as usize]);
                    if self.perms[i as usize] & perm::SHARED != 0 {
                        self.unshare(i);
                    }
                    // its bytes go back to the host now; the slot is reused zeroed
                    if self.pages[i as usize].take().is_some() {
                        self.materialized -= 1;
                    }
                    self.drop_backing(i);
                    self.free.push(i);
                }
            }
        }
        self.regions.remove(first, end);
        self.cut_backing(first, end);
        self.detach(first << PAGE_SHIFT, end << PAGE_SHIFT);
        self.flush_tlb();
        self.code_epoch += u64::from(code);
        Ok(())
    }

    /// Drops the bytes of every mapped page in `[addr, addr + len)` (`madvise(MADV_DONTNEED)`
    /// on private anonymous memory): the pages stay mapped with their permissions and read as
    /// zeros again, and their frames go back to the host; shared pages keep their bytes.
    /// Walks the mapped pages only.
    pub fn discard(&mut self, addr: u64, len: u64) -> Result<(), MapError> {
        let (first, end) = span(addr, len)?;
        let mut code = false;
        for (s, e) in self.regions.overlapping(first, end) {
            for vpn in s..e {
                if let Some(i) = self.map.get(vpn) {
                    if self.perms[i as usize] & perm::SHARED != 0 {
                        // the object keeps its bytes (Linux rereads them)
                        continue;
                    }
                    if self.pages[i as usize].take().is_some() {
                        code |= holds_code(self.perms[i as usize]);
                        self.materialized -= 1;
                    }
                    self.drop_backing(i);
                }
            }
        }
        self.flush_tlb();
        self.code_epoch += u64::from(code);
        Ok(())
    }

    /// Moves the mapped pages of `[from, from + len)` to `[to, to + len)` with their contents
    /// and permissions (mremap): page-table entries move, no bytes are copied. The
    /// destination must be free, and both addresses page aligned.
    pub fn move_pages(&mut self, from: u64, len: u64, to: u64) -> Result<(), MapError> {
        let (first, end) = span(from, len)?;
        let (to_first, to_end) = user_span(to, len)?;
        if from % PAGE_SIZE != 0 || to % PAGE_SIZE != 0 || self.regions.any(to_first, to_end) {
            return Err(MapError::BadRange);
        }
        let moved = self.regions.overlapping(first, end);
        let mut code = false;
        for &(s, e) in &moved {
            for vpn in s..e {
                if let Some(i) = self.map.remove(vpn) {
                    code |= holds_code(self.perms[i as usize]);
                    self.map.insert(vpn - first + to_first, i);
                }
            }
        }
        self.regions.remove(first, end);
        for (s, e) in moved {
            self.regions
                .insert(s - first + to_first, e - first + to_first);
        }
        // the lazily read ranges move with their pages
        for (s, (e, source, offset)) in self.cut_backing(first, end) {
            let (lo, hi) = (s.max(first), e.min(end));
            let at = offset.saturating_add((lo - s) * PAGE_SIZE);
            self.lazy
                .insert(lo - first + to_first, (hi - first + to_first, source, at));
        }
        self.flush_tlb();
        self.code_epoch += u64::from(code);
        Ok(())
    }

    /// Sets `perm` on every page of `[addr, addr + len)`; fails if one is not mapped.
    pub fn protect(&mut self, addr: u64, len: u64, perm: u8) -> Result<(), MapError> {
        let (first, end) = span(addr, len)?;
        if self.regions.count(first, end) != end - first {
            return Err(MapError::NotMapped);
        }
        // every page of the range is mapped: the loop is bounded by the budget
        let mut code = false;
        for vpn in first..end {
            if let Some(i) = self.map.get(vpn) {
                code |= holds_code(self.perms[i as usize]);
                self.perms[i as usize] = perm | (self.perms[i as usize] & perm::KEPT);
            }
        }
        self.flush_tlb();
        self.code_epoch += u64::from(code);
        Ok(())
    }

    /// Whether `addr` lies in a page of a file mapping past the end of its file
    /// ([`perm::PAST_EOF`]).
    pub fn past_eof(&self, addr: u64) -> bool {
        self.map
            .get(addr >> 12)
            .is_some_and(|i| self.perms[i as usize] & perm::PAST_EOF != 0)
    }

    /// Whether every page of `[addr, addr + len)` is unmapped.
    pub fn is_free(&self, addr: u64, len: u64) -> bool {
        match span(addr, len) {
            Ok((first, end)) => !self.regions.any(first, end),
            Err(_) => false,
        }
    }

    /// Whether every page of `[addr, addr + len)` is mapped.
    pub fn is_mapped(&self, addr: u64, len: u64) -> bool {
        match span(addr, len) {
            Ok((first, end)) => self.regions.count(first, end) == end - first,
            Err(_) => false,
        }
    }

    /// The lowest page-aligned address ≥ `from` with `len` free bytes below [`USER_TOP`].
    pub fn find_free(&self, from: u64, len: u64) -> Option<u64> {
        let pages = len.div_ceil(PAGE_SIZE).max(1);
        self.regions
            .gap(from.div_ceil(PAGE_SIZE), pages, USER_TOP >> PAGE_SHIFT)
            .map(|vpn| vpn << PAGE_SHIFT)
    }

    /// The mapped ranges `(start, end, permission)` in address order, a range per run of pages
    /// with one permission, at most `max` of them (what `/proc/self/maps` lists).
    pub fn mapped_ranges(&self, max: usize) -> Vec<(u64, u64, u8)> {
        let mut out: Vec<(u64, u64, u8)> = Vec::new();
        'regions: for (&first, &end) in &self.regions.0 {
            let mut start = first;
            let mut p = self.perm_at(first << PAGE_SHIFT);
            for vpn in first + 1..=end {
                let q = if vpn == end {
                    u8::MAX
                } else {
                    self.perm_at(vpn << PAGE_SHIFT)
                };
                if q != p {
                    if out.len() >= max {
                        break 'regions;
                    }
                    out.push((start << PAGE_SHIFT, vpn << PAGE_SHIFT, p));
                    start = vpn;
                    p = q;
                }
            }
        }
        out
    }

    /// Whether the page holding `addr` holds bytes in host memory (written, or read from its
    /// file): what `mincore` reports as resident. A page never touched reads as zeros
    /// without any.
    pub fn resident(&self, addr: u64) -> bool {
        let Some(f) = self.map.get(addr >> PAGE_SHIFT) else {
            return false;
        };
        let f = self.aliases.get(&f).copied().unwrap_or(f);
        if self.pages.get(f as usize).is_some_and(Option::is_some) {
            return true;
        }
        // a shared page this memory has not taken: resident if its object holds bytes
        self.perms[f as usize] & (perm::SHARED | perm::HELD) == perm::SHARED
            && self
                .shared
                .get(&f)
                .is_some_and(|s| s.object.has_frame(s.page))
    }

    /// Makes every mapped page of `[addr, addr + len)` resident, as `mlock` faults pages in:
    /// zeros, or its file's bytes (a shared page's object's). Pages past the end of their
    /// file stay as they are.
    pub fn populate(&mut self, addr: u64, len: u64) {
        let Ok((first, end)) = span(addr, len) else {
            return;
        };
        for (s, e) in self.regions.overlapping(first, end) {
            for vpn in s..e {
                let Some(f) = self.map.get(vpn) else {
                    continue;
                };
                let f = self.aliases.get(&f).copied().unwrap_or(f);
                if self.pages[f as usize].is_none() && self.perms[f as usize] & perm::PAST_EOF == 0
                {
                    let _ = self.materialize(f, vpn);
                }
            }
        }
        self.flush_tlb();
    }

    /// Permission of the page holding `addr` (0 if unmapped).
    pub fn perm_at(&self, addr: u64) -> u8 {
        self.map
            .get(addr >> PAGE_SHIFT)
            .map_or(0, |i| self.perms[i as usize] & perm::RWX)
    }

    /// The bytes of frame `page` (at virtual page `vpn`), made real on its first write
    /// (zeroed, or read from its file); `None` if the file no longer reaches the page (it is
    /// past the end now).
    #[inline(always)]
    fn frame_mut(&mut self, page: u32, vpn: u64) -> Option<&mut [u8; PAGE_SIZE as usize]> {
        if self.pages[page as usize].is_none() {
            self.materialize(page, vpn)?;
        }
        self.pages[page as usize].as_deref_mut()
    }

    /// `None` if frame `page` is a shared page whose frame another process holds (this
    /// memory's process is parked): nothing may read or write it here.
    #[inline(always)]
    fn held(&self, page: u32) -> Option<()> {
        (self.shared_held || self.perms[page as usize] & perm::SHARED == 0).then_some(())
    }

    /// Gives frame `page` bytes: its file's ([`Memory::fill`]), else zeros.
    #[cold]
    #[inline(never)]
    fn materialize(&mut self, page: u32, vpn: u64) -> Option<()> {
        self.held(page)?;
        if self.perms[page as usize] & perm::SHARED != 0 {
            self.take_frame(page);
            if self.pages[page as usize].is_some() {
                return Some(());
            }
        }
        self.fill(page, vpn)?;
        if self.pages[page as usize].is_none() {
            self.materialized += 1;
            self.pages[page as usize] = Some(Box::new([0; PAGE_SIZE as usize]));
        }
        Some(())
    }

    /// Reads a [`perm::LAZY`] frame's bytes (virtual page `vpn`) from its file (a page of
    /// zeros, a hole of a sparse file, stays without a frame: it reads as zero). A file that
    /// no longer reaches the page (truncated since, or unreadable) makes it a page past the
    /// end: no access, SIGBUS as on Linux; `None` then.
    #[cold]
    #[inline(never)]
    fn fill(&mut self, page: u32, vpn: u64) -> Option<()> {
        if self.perms[page as usize] & perm::LAZY == 0 {
            return Some(());
        }
        self.perms[page as usize] &= !perm::LAZY;
        self.flush_tlb();
        let Some((&start, (end, source, offset))) = self.lazy.range(..=vpn).next_back() else {
            return Some(());
        };
        if vpn >= *end {
            return Some(());
        }
        let at = offset.saturating_add((vpn - start) * PAGE_SIZE);
        let source = source.clone();
        let mut bytes = Box::new([0; PAGE_SIZE as usize]);
        match source.read_page(at, &mut bytes) {
            Ok(n) if n > 0 => {
                if bytes.iter().any(|&b| b != 0) {
                    self.materialized += 1;
                    self.pages[page as usize] = Some(bytes);
                }
                Some(())
            }
            _ => {
                self.perms[page as usize] = perm::PAST_EOF;
                None
            }
        }
    }

    /// Frame `page` no longer reads from a file (its page is gone or zeroed).
    fn drop_backing(&mut self, page: u32) {
        self.perms[page as usize] &= !perm::LAZY;
    }

    /// Forgets the lazily read ranges over virtual pages `[first, end)`, splitting those it
    /// cuts (the part after a cut reads from further on in its file); the ranges it touched,
    /// whole, as they were.
    fn cut_backing(&mut self, first: u64, end: u64) -> Vec<(u64, Backing)> {
        let cut: Vec<(u64, Backing)> = self
            .lazy
            .range(..end)
            .rev()
            .take_while(|(_, b)| b.0 > first)
            .map(|(&s, b)| (s, b.clone()))
            .collect();
        for (s, (e, source, offset)) in &cut {
            self.lazy.remove(s);
            if *s < first {
                self.lazy.insert(*s, (first, source.clone(), *offset));
            }
            if *e > end {
                let at = offset.saturating_add((end - s) * PAGE_SIZE);
                self.lazy.insert(end, (*e, source.clone(), at));
            }
        }
        cut
    }

    /// Backs the mapped pages of `[addr, addr + len)`, which hold no bytes yet, by `source`
    /// from file offset `offset`: each is read on its first access ([`PageSource`]). Pages
    /// holding bytes already are left as they are. Costs one entry, whatever the length.
    pub fn back(
        &mut self,
        addr: u64,
        len: u64,
        source: std::sync::Arc<dyn PageSource>,
        offset: u64,
    ) -> Result<(), MapError> {
        let (first, end) = span(addr, len)?;
        if self.regions.count(first, end) != end - first {
            return Err(MapError::NotMapped);
        }
        for vpn in first..end {
            if let Some(i) = self.map.get(vpn) {
                if self.pages[i as usize].is_none() {
                    self.perms[i as usize] |= perm::LAZY;
                }
            }
        }
        self.cut_backing(first, end);
        self.lazy.insert(first, (end, source, offset));
        self.flush_tlb();
        Ok(())
    }

    /// Page index and permission for `vpn`, through the TLB.
    #[inline(always)]
    fn lookup(&mut self, vpn: u64) -> Option<(u32, u8)> {
        let slot = (vpn as usize) & (TLB_SIZE - 1);
        let e = self.tlb[slot];
        if e.vpn == vpn {
            return Some((e.page, e.perm));
        }
        let mut page = self.map.get(vpn)?;
        let perm = self.perms[page as usize];
        if perm & perm::SHARED != 0 {
            // a second view: its protection, the bytes of the frame that holds them
            page = self.aliases.get(&page).copied().unwrap_or(page);
        }
        self.tlb[slot] = TlbEntry { vpn, page, perm };
        Some((page, perm))
    }

    /// Reads `N` bytes at `addr` needing `need` permission.
    #[inline(always)]
    fn read<const N: usize>(&mut self, addr: u64, need: u8) -> Result<[u8; N], AccessError> {
        let off = (addr & (PAGE_SIZE - 1)) as usize;
        if off + N <= PAGE_SIZE as usize {
            let (page, perm) = self
                .lookup(addr >> PAGE_SHIFT)
                .ok_or(AccessError::Unmapped(addr))?;
            if perm & need == 0 {
                return Err(AccessError::Denied(addr));
            }
            let mut out = [0; N];
            if let Some(p) = &self.pages[page as usize] {
                out.copy_from_slice(&p[off..off + N]);
            } else if perm & perm::SHARED != 0 {
                self.held(page).ok_or(AccessError::Denied(addr))?;
                self.take_frame(page);
                if let Some(p) = &self.pages[page as usize] {
                    out.copy_from_slice(&p[off..off + N]);
                }
            } else if perm & perm::LAZY != 0 {
                self.fill(page, addr >> PAGE_SHIFT)
                    .ok_or(AccessError::Denied(addr))?;
                if let Some(p) = &self.pages[page as usize] {
                    out.copy_from_slice(&p[off..off + N]);
                }
            }
            Ok(out)
        } else {
            let mut out = [0; N];
            for (k, b) in out.iter_mut().enumerate() {
                *b = self.read::<1>(addr.wrapping_add(k as u64), need)?[0];
            }
            Ok(out)
        }
    }

    #[inline(always)]
    fn write<const N: usize>(&mut self, addr: u64, bytes: [u8; N]) -> Result<(), AccessError> {
        let off = (addr & (PAGE_SIZE - 1)) as usize;
        if off + N <= PAGE_SIZE as usize {
            let (page, perm) = self
                .lookup(addr >> PAGE_SHIFT)
                .ok_or(AccessError::Unmapped(addr))?;
            if perm & perm::W == 0 {
                return Err(AccessError::Denied(addr));
            }
            if perm & perm::DECODED != 0 {
                self.code_epoch += 1;
            }
            self.frame_mut(page, addr >> PAGE_SHIFT)
                .ok_or(AccessError::Denied(addr))?[off..off + N]
                .copy_from_slice(&bytes);
            Ok(())
        } else {
            // check every byte first so a failing store writes nothing
            for k in 0..N as u64 {
                let a = addr.wrapping_add(k);
                match self.lookup(a >> PAGE_SHIFT) {
                    None => return Err(AccessError::Unmapped(a)),
                    Some((_, p)) if p & perm::W == 0 => return Err(AccessError::Denied(a)),
                    _ => {}
                }
            }
            for (k, b) in bytes.into_iter().enumerate() {
                self.write::<1>(addr.wrapping_add(k as u64), [b])?;
            }
            Ok(())
        }
    }

    /// Loads a byte.
    #[inline(always)]
    pub fn load_u8(&mut self, addr: u64) -> Result<u8, AccessError> {
        Ok(self.read::<1>(addr, perm::R)?[0])
    }
    /// Loads a little-endian u16.
    #[inline(always)]
    pub fn load_u16(&mut self, addr: u64) -> Result<u16, AccessError> {
        Ok(u16::from_le_bytes(self.read(addr, perm::R)?))
    }
    /// Loads a little-endian u32.
    #[inline(always)]
    pub fn load_u32(&mut self, addr: u64) -> Result<u32, AccessError> {
        Ok(u32::from_le_bytes(self.read(addr, perm::R)?))
    }
    /// Loads a little-endian u64.
    #[inline(always)]
    pub fn load_u64(&mut self, addr: u64) -> Result<u64, AccessError> {
        Ok(u64::from_le_bytes(self.read(addr, perm::R)?))
    }
    /// Fetches a 16-bit instruction parcel (needs execute permission).
    #[inline(always)]
    pub fn fetch_u16(&mut self, addr: u64) -> Result<u16, AccessError> {
        let (_, perm) = self
            .lookup(addr >> PAGE_SHIFT)
            .ok_or(AccessError::Unmapped(addr))?;
        if perm & perm::DECODED == 0 {
            // every decoder fetches here: the page now holds code the machine may keep
            if perm & perm::X == 0 {
                return Err(AccessError::Denied(addr));
            }
            self.mark_decoded(addr);
            if addr & (PAGE_SIZE - 1) == PAGE_SIZE - 1 {
                self.mark_decoded(addr.wrapping_add(1));
            }
        }
        Ok(u16::from_le_bytes(self.read(addr, perm::X)?))
    }
    /// Stores a byte.
    #[inline(always)]
    pub fn store_u8(&mut self, addr: u64, v: u8) -> Result<(), AccessError> {
        self.write(addr, [v])
    }
    /// Stores a little-endian u16.
    #[inline(always)]
    pub fn store_u16(&mut self, addr: u64, v: u16) -> Result<(), AccessError> {
        self.write(addr, v.to_le_bytes())
    }
    /// Stores a little-endian u32.
    #[inline(always)]
    pub fn store_u32(&mut self, addr: u64, v: u32) -> Result<(), AccessError> {
        self.write(addr, v.to_le_bytes())
    }
    /// Stores a little-endian u64.
    #[inline(always)]
    pub fn store_u64(&mut self, addr: u64, v: u64) -> Result<(), AccessError> {
        self.write(addr, v.to_le_bytes())
    }

    /// Loads `size` bytes (1, 2, 4; anything else 8), zero-extended.
    #[inline(always)]
    pub fn load_sized(&mut self, addr: u64, size: u8) -> Result<u64, AccessError> {
        match size {
            1 => self.load_u8(addr).map(u64::from),
            2 => self.load_u16(addr).map(u64::from),
            4 => self.load_u32(addr).map(u64::from),
            _ => self.load_u64(addr),
        }
    }
    /// Stores the low `size` bytes (1, 2, 4; anything else 8) of `v`.
    #[inline(always)]
    pub fn store_sized(&mut self, addr: u64, size: u8, v: u64) -> Result<(), AccessError> {
        match size {
            1 => self.store_u8(addr, v as u8),
            2 => self.store_u16(addr, v as u16),
            4 => self.store_u32(addr, v as u32),
            _ => self.store_u64(addr, v),
        }
    }

    /// Copies guest bytes out, ignoring permissions other than "mapped and readable"
    /// (for syscalls such as write).
    pub fn read_bytes(&mut self, addr: u64, out: &mut [u8]) -> Result<(), AccessError> {
        let mut done = 0usize;
        while done < out.len() {
            let a = addr.wrapping_add(done as u64);
            let off = (a & (PAGE_SIZE - 1)) as usize;
            let n = (PAGE_SIZE as usize - off).min(out.len() - done);
            let (page, perm) = self
                .lookup(a >> PAGE_SHIFT)
                .ok_or(AccessError::Unmapped(a))?;
            if perm & perm::R == 0 {
                return Err(AccessError::Denied(a));
            }
            if perm & perm::LAZY != 0 {
                self.fill(page, a >> PAGE_SHIFT)
                    .ok_or(AccessError::Denied(a))?;
            }
            self.held(page).ok_or(AccessError::Denied(a))?;
            if perm & perm::SHARED != 0 {
                self.take_frame(page);
            }
            match &self.pages[page as usize] {
                Some(p) => out[done..done + n].copy_from_slice(&p[off..off + n]),
                None => out[done..done + n].fill(0),
            }
            done += n;
        }
        Ok(())
    }

    /// Copies bytes into guest memory; the whole range must be writable (checked first).
    pub fn write_bytes(&mut self, addr: u64, data: &[u8]) -> Result<(), AccessError> {
        self.check_range(addr, data.len() as u64, perm::W)?;
        self.poke_bytes(addr, data)
    }

    /// Checks that every byte of `[addr, addr + len)` is mapped with `need`.
    pub fn check_range(&mut self, addr: u64, len: u64, need: u8) -> Result<(), AccessError> {
        if len == 0 {
            return Ok(());
        }
        let last = addr
            .checked_add(len - 1)
            .ok_or(AccessError::Unmapped(addr))?;
        let mut vpn = addr >> PAGE_SHIFT;
        loop {
            let a = (vpn << PAGE_SHIFT).max(addr);
            match self.lookup(vpn) {
                None => return Err(AccessError::Unmapped(a)),
                Some((_, p)) if p & need == 0 => return Err(AccessError::Denied(a)),
                _ => {}
            }
            if vpn == last >> PAGE_SHIFT {
                return Ok(());
            }
            vpn += 1;
        }
    }

    /// Writes bytes regardless of the W permission (loader and kernel use: the initial stack,
    /// ELF segments into read-only pages). Pages must be mapped.
    pub fn poke_bytes(&mut self, addr: u64, data: &[u8]) -> Result<(), AccessError> {
        let mut done = 0usize;
        while done < data.len() {
            let a = addr.wrapping_add(done as u64);
            let off = (a & (PAGE_SIZE - 1)) as usize;
            let n = (PAGE_SIZE as usize - off).min(data.len() - done);
            let (page, perm) = self
                .lookup(a >> PAGE_SHIFT)
                .ok_or(AccessError::Unmapped(a))?;
            if perm & perm::DECODED != 0 {
                self.code_epoch += 1;
            }
            self.frame_mut(page, a >> PAGE_SHIFT)
                .ok_or(AccessError::Denied(a))?[off..off + n]
                .copy_from_slice(&data[done..done + n]);
            done += n;
        }
        Ok(())
    }

    /// Reads a NUL-terminated string of at most `max` bytes (syscall path arguments).
    pub fn read_cstr(&mut self, addr: u64, max: usize) -> Result<Vec<u8>, AccessError> {
        let mut out = Vec::new();
        loop {
            let b = self.load_u8(addr.wrapping_add(out.len() as u64))?;
            if b == 0 {
                return Ok(out);
            }
            out.push(b);
            if out.len() >= max {
                return Ok(out);
            }
        }
    }
}

/// Why a mapping operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// The range wraps around the address space.
    BadRange,
    /// The memory limit would be exceeded.
    OutOfMemory,
    /// Part of the range is not mapped.
    NotMapped,
}

/// Page numbers `[first, end)` of the pages `[addr, addr + len)` touches.
/// Guest memory as compiled code sees it: frames are lent only for plain accesses (reads of
/// readable pages that hold bytes; stores to writable pages that hold no decoded code), and
/// [`Memory::flush_tlb`] and [`Memory::mark_decoded`] move the epoch on every change that could
/// void a lent frame (every unmap, remap, move and permission change flushes the TLB).
impl outcrop_jit::Host for Memory {
    fn frames_epoch(&self) -> u64 {
        self.frames_epoch
    }

    fn frame(&mut self, addr: u64, write: bool) -> Option<&mut [u8; PAGE_SIZE as usize]> {
        let (page, p) = self.lookup(addr >> PAGE_SHIFT)?;
        if write {
            // (readable too: atomics read and write through these entries)
            if p & perm::W == 0 || p & perm::R == 0 || p & perm::DECODED != 0 {
                return None;
            }
            self.frame_mut(page, addr >> PAGE_SHIFT)
        } else {
            if p & perm::R == 0 {
                return None;
            }
            if p & perm::LAZY != 0 {
                self.fill(page, addr >> PAGE_SHIFT)?;
            }
            if p & perm::SHARED != 0 {
                self.held(page)?;
                self.take_frame(page);
            }
            self.pages[page as usize].as_deref_mut()
        }
    }

    fn load(&mut self, addr: u64, size: u8) -> Option<u64> {
        match size {
            1 => self.load_u8(addr).ok().map(u64::from),
            2 => self.load_u16(addr).ok().map(u64::from),
            4 => self.load_u32(addr).ok().map(u64::from),
            _ => self.load_u64(addr).ok(),
        }
    }

    fn store(&mut self, addr: u64, size: u8, value: u64) -> outcrop_jit::Stored {
        let epoch = self.code_epoch;
        let r = match size {
            1 => self.store_u8(addr, value as u8),
            2 => self.store_u16(addr, value as u16),
            4 => self.store_u32(addr, value as u32),
            _ => self.store_u64(addr, value),
        };
        match r {
            Err(_) => outcrop_jit::Stored::Fault,
            Ok(()) if self.code_epoch != epoch => outcrop_jit::Stored::CodeChanged,
            Ok(()) => outcrop_jit::Stored::Ok,
        }
    }

    fn float(&mut self, inst: u64, x: &mut [u64; 32], f: &mut [u64; 32], fcsr: &mut u64) -> bool {
        match crate::machine::packed_vector(inst) {
            Some(raw) => self.run_vector(raw, x, f, fcsr),
            None => crate::machine::run_float(inst, x, f, fcsr),
        }
    }
}

impl Memory {
    /// Holds the running thread's vector unit (and whether Zvbb and Zvfhmin are enabled)
    /// while compiled code runs, which reaches it through this memory.
    pub(crate) fn park_vector(&mut self, v: crate::vector::VState, zvbb: bool, zvfhmin: bool) {
        self.vector = (v, zvbb, zvfhmin);
    }

    /// The vector unit [`Memory::park_vector`] held, back.
    pub(crate) fn unpark_vector(&mut self) -> crate::vector::VState {
        std::mem::take(&mut self.vector.0)
    }

    /// A vector instruction for compiled code: true if done; false if the engine must run it
    /// (a fault, with `vstart` at the faulting element; or a store that changed code: running
    /// the store again stores the same bytes, and the engine flushes the changed code).
    fn run_vector(
        &mut self,
        raw: u32,
        x: &mut [u64; 32],
        f: &mut [u64; 32],
        fcsr: &mut u64,
    ) -> bool {
        let (mut v, zvbb, zvfhmin) = std::mem::take(&mut self.vector);
        let epoch = self.code_epoch;
        let mut fflags = (*fcsr & 0x1f) as u8;
        let mut c = crate::vector::Ctx {
            x,
            f,
            fflags: &mut fflags,
            frm: ((*fcsr >> 5) & 7) as u8,
            mem: self,
            zvbb,
            zvfhmin,
        };
        let r = crate::vector::execute(&mut v, &mut c, raw);
        self.vector = (v, zvbb, zvfhmin);
        *fcsr = (*fcsr & !0x1f) | u64::from(fflags & 0x1f);
        r.is_ok() && self.code_epoch == epoch
    }
}

fn span(addr: u64, len: u64) -> Result<(u64, u64), MapError> {
    if len == 0 {
        return Err(MapError::BadRange);
    }
    let last = addr.checked_add(len - 1).ok_or(MapError::BadRange)?;
    Ok((addr >> PAGE_SHIFT, (last >> PAGE_SHIFT) + 1))
}

/// As [`span`], for ranges that must lie below [`USER_TOP`] (new mappings).
fn user_span(addr: u64, len: u64) -> Result<(u64, u64), MapError> {
    let (first, end) = span(addr, len)?;
    if end > USER_TOP >> PAGE_SHIFT {
        return Err(MapError::BadRange);
    }
    Ok((first, end))
}

/// Whether a page with permissions `p` may hold code the machine decoded: executable, or
/// fetched from since the last flush.
fn holds_code(p: u8) -> bool {
    p & (perm::X | perm::DECODED) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_and_misaligned_cross_page_accesses() {
        let mut m = Memory::new(1 << 20);
        m.map(0x1000, 0x2000, perm::R | perm::W).unwrap();
        m.store_u64(0x1ffc, 0x1122_3344_5566_7788).unwrap(); // crosses into the next page
        assert_eq!(m.load_u64(0x1ffc).unwrap(), 0x1122_3344_5566_7788);
        assert_eq!(m.load_u32(0x2000).unwrap(), 0x1122_3344);
        assert_eq!(m.load_u8(0x3000), Err(AccessError::Unmapped(0x3000)));
        // a store crossing into an unmapped page writes nothing
        assert_eq!(
            m.store_u32(0x2ffe, 0xdead_beef),
            Err(AccessError::Unmapped(0x3000))
        );
        assert_eq!(m.load_u16(0x2ffe).unwrap(), 0);
        m.protect(0x1000, 0x1000, perm::R).unwrap();
        assert_eq!(m.store_u8(0x1000, 1), Err(AccessError::Denied(0x1000)));
        assert_eq!(m.fetch_u16(0x1000), Err(AccessError::Denied(0x1000)));
        m.unmap(0x1000, 0x1000).unwrap();
        assert_eq!(m.load_u8(0x1000), Err(AccessError::Unmapped(0x1000)));
    }

    #[test]
    fn shared_pages_move_between_processes_and_views() {
        let obj = SharedObject::new(2 * PAGE_SIZE);
        let mut a = Memory::new(1 << 20);
        a.map_shared(0x10000, 2 * PAGE_SIZE, perm::R | perm::W, &obj, 0)
            .unwrap();
        a.store_u32(0x10004, 7).unwrap();
        // a fork's child shares the pages; it holds none of their frames until it runs
        let mut b = a.fork_copy();
        assert_eq!(b.load_u32(0x10004), Err(AccessError::Denied(0x10004)));
        a.release_shared();
        b.take_shared();
        assert_eq!(b.load_u32(0x10004).unwrap(), 7);
        b.store_u32(0x11000, 9).unwrap();
        // the parked process can neither read nor write them
        assert_eq!(a.store_u8(0x10000, 1), Err(AccessError::Denied(0x10000)));
        b.release_shared();
        a.take_shared();
        assert_eq!(a.load_u32(0x11000).unwrap(), 9);
        assert_eq!(a.shared_at(0x11008), Some((obj.key(), PAGE_SIZE + 8)));
        // a second view with its own protection shows the same bytes
        a.map_shared(0x40000, PAGE_SIZE, perm::R, &obj, 1).unwrap();
        assert_eq!(a.load_u32(0x40000).unwrap(), 9);
        assert_eq!(a.store_u32(0x40000, 1), Err(AccessError::Denied(0x40000)));
        a.store_u32(0x11000, 10).unwrap();
        assert_eq!(a.load_u32(0x40000).unwrap(), 10);
        assert_eq!(a.shared_at(0x40000), a.shared_at(0x11000));
        // unmapping the first view leaves the second with the bytes
        a.unmap(0x11000, PAGE_SIZE).unwrap();
        assert_eq!(a.load_u32(0x40000).unwrap(), 10);
        // MADV_DONTNEED keeps shared bytes
        a.discard(0x10000, PAGE_SIZE).unwrap();
        assert_eq!(a.load_u32(0x10004).unwrap(), 7);
        // the last view unmapped: the object keeps the bytes for the next mapping
        a.unmap(0x40000, PAGE_SIZE).unwrap();
        a.release_shared();
        let mut buf = [0u8; 4];
        obj.read(PAGE_SIZE, &mut buf);
        assert_eq!(u32::from_le_bytes(buf), 10);
        // pages past the object's end are SIGBUS pages
        let mut c = Memory::new(1 << 20);
        c.map_shared(0x10000, 3 * PAGE_SIZE, perm::R, &obj, 1)
            .unwrap();
        assert!(c.past_eof(0x11000) && !c.past_eof(0x10000));
    }

    #[test]
    fn code_fetched_through_one_view_is_changed_by_stores_through_another() {
        let obj = SharedObject::new(PAGE_SIZE);
        let mut m = Memory::new(1 << 20);
        m.map_shared(0x10000, PAGE_SIZE, perm::R | perm::W, &obj, 0)
            .unwrap();
        m.map_shared(0x20000, PAGE_SIZE, perm::R | perm::X, &obj, 0)
            .unwrap();
        m.store_u32(0x10000, 0x13).unwrap();
        let e = m.code_epoch();
        m.fetch_u16(0x20000).unwrap();
        m.store_u32(0x10000, 0x13).unwrap();
        assert!(m.code_epoch() > e);
    }

    #[test]
    fn the_page_budget_is_enforced() {
        let mut m = Memory::new(3 * PAGE_SIZE);
        assert!(m.map(0, 3 * PAGE_SIZE, perm::R).is_ok());
        assert_eq!(m.map(0x10000, 1, perm::R), Err(MapError::OutOfMemory));
        assert_eq!(m.map(u64::MAX - 10, 100, perm::R), Err(MapError::BadRange));
    }

    #[test]
    fn stores_to_fetched_code_bump_the_epoch() {
        let mut m = Memory::new(1 << 20);
        m.map(0, 0x3000, perm::R | perm::W | perm::X).unwrap();
        // an executable page nothing was fetched from: data, as far as the machine knows
        let e = m.code_epoch();
        m.store_u32(0, 0x13).unwrap();
        assert_eq!(m.code_epoch(), e);
        // fetched from: a store there changes decoded code (also through the TLB's copy)
        m.fetch_u16(0).unwrap();
        m.store_u32(4, 0x13).unwrap();
        assert!(m.code_epoch() > e);
        assert_eq!(m.perm_at(0), perm::R | perm::W | perm::X);
        // a parcel fetched at a page's last byte marks the next page too
        let _ = m.fetch_u16(0x1fff);
        let e = m.code_epoch();
        m.store_u8(0x2000, 1).unwrap();
        assert!(m.code_epoch() > e);
        // forgotten: stores are data again until the next fetch
        m.forget_decoded();
        let e = m.code_epoch();
        m.store_u32(0, 0x13).unwrap();
        m.write_bytes(0x1000, &[1, 2, 3]).unwrap();
        assert_eq!(m.code_epoch(), e);
    }

    #[test]
    fn huge_ranges_cost_only_the_pages_they_touch() {
        let mut m = Memory::new(16 << 20);
        m.map(0x10000, 3 * PAGE_SIZE, perm::R | perm::W).unwrap();
        let t = std::time::Instant::now();
        // munmap(addr, 2^62), mprotect over 2^46 bytes, is_free over 2^62: all instant
        assert!(m.protect(0, 1 << 46, perm::R).is_err());
        assert!(!m.is_free(0, 1 << 62));
        assert!(m.is_free(0x20000, 1 << 40));
        m.unmap(0, 1 << 62).unwrap();
        assert_eq!(m.mapped_pages(), 0);
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        // mappings above the user address space are refused before anything is allocated
        assert_eq!(m.map(USER_TOP, PAGE_SIZE, perm::R), Err(MapError::BadRange));
        assert_eq!(
            m.map(0, 1 << 40, perm::R),
            Err(MapError::OutOfMemory),
            "a range beyond the budget fails before the loop"
        );
    }

    #[test]
    fn page_table_leaves_are_reused_after_unmap() {
        // one page in a new 2 MiB chunk each time, unmapped again: the table must not grow
        let mut m = Memory::new(16 << 20);
        for k in 0..100_000u64 {
            let a = k << 25;
            m.map(a, PAGE_SIZE, perm::R).unwrap();
            m.unmap(a, PAGE_SIZE).unwrap();
        }
        assert!(m.host_bytes() < 64 << 10, "{} host bytes", m.host_bytes());
    }

    #[test]
    fn host_memory_stays_within_the_documented_factor() {
        // worst case for the table: one page per 2 MiB chunk up to the limit
        let limit = 4u64 << 20;
        let mut m = Memory::new(limit);
        let mut k = 0;
        while m.map(k << 21, PAGE_SIZE, perm::R).is_ok() {
            k += 1;
        }
        assert_eq!(m.mapped_pages(), limit / PAGE_SIZE);
        assert!(m.host_bytes() <= limit * 151 / 100, "{}", m.host_bytes());
    }

    #[test]
    fn moving_pages_keeps_contents_and_permissions() {
        let mut m = Memory::new(1 << 20);
        m.map(0x10000, 2 * PAGE_SIZE, perm::R | perm::W).unwrap();
        m.store_u64(0x10ff8, 0x1234).unwrap();
        m.store_u64(0x11000, 0x5678).unwrap();
        m.move_pages(0x10000, 2 * PAGE_SIZE, 0x40000).unwrap();
        assert!(m.is_free(0x10000, 2 * PAGE_SIZE));
        assert_eq!(m.load_u64(0x40ff8).unwrap(), 0x1234);
        assert_eq!(m.load_u64(0x41000).unwrap(), 0x5678);
        m.store_u8(0x41000, 1).unwrap();
        // onto mapped pages: refused
        m.map(0x80000, PAGE_SIZE, perm::R).unwrap();
        assert_eq!(
            m.move_pages(0x40000, 2 * PAGE_SIZE, 0x7f000),
            Err(MapError::BadRange)
        );
    }

    #[test]
    fn find_free_skips_mapped_ranges() {
        let mut m = Memory::new(1 << 20);
        m.map(0x10000, PAGE_SIZE, perm::R).unwrap();
        m.map(0x12000, PAGE_SIZE, perm::R).unwrap();
        assert_eq!(m.find_free(0x10000, PAGE_SIZE), Some(0x11000));
        assert_eq!(m.find_free(0x10000, 2 * PAGE_SIZE), Some(0x13000));
        assert_eq!(m.find_free(USER_TOP - PAGE_SIZE, 2 * PAGE_SIZE), None);
    }

    mod regions {
        use super::super::Regions;
        use proptest::prelude::*;
        use std::collections::BTreeSet;

        fn check(r: &Regions, model: &BTreeSet<u64>) {
            // coalesced, ordered, non-empty, the same pages as the model
            let mut prev_end = None;
            for (&s, &e) in &r.0 {
                assert!(s < e);
                if let Some(p) = prev_end {
                    assert!(s > p, "ranges touch or overlap");
                }
                prev_end = Some(e);
            }
            let pages: BTreeSet<u64> = r.0.iter().flat_map(|(&s, &e)| s..e).collect();
            assert_eq!(&pages, model);
        }

        proptest! {
            #[test]
            fn region_map_matches_a_page_set(ops in proptest::collection::vec((any::<bool>(), 0u64..64, 1u64..16), 1..60)) {
                let mut r = Regions::default();
                let mut model = BTreeSet::new();
                for (insert, first, len) in ops {
                    let end = first + len;
                    prop_assert_eq!(r.count(first, end), (first..end).filter(|v| model.contains(v)).count() as u64);
                    prop_assert_eq!(r.any(first, end), (first..end).any(|v| model.contains(&v)));
                    if insert {
                        r.insert(first, end);
                        model.extend(first..end);
                    } else {
                        r.remove(first, end);
                        for v in first..end { model.remove(&v); }
                    }
                    check(&r, &model);
                    let g = r.gap(first, len, 200);
                    let want = (first..=200 - len).find(|&a| (a..a + len).all(|v| !model.contains(&v)));
                    prop_assert_eq!(g, want);
                }
            }
        }
    }

    mod lazy {
        use super::*;
        use proptest::prelude::*;

        /// A file of `len` bytes, byte `i` being `i % 251 + 1` (never zero), that counts reads.
        struct File {
            len: u64,
            reads: std::sync::atomic::AtomicU64,
        }

        impl PageSource for File {
            fn read_page(
                &self,
                offset: u64,
                out: &mut [u8; PAGE_SIZE as usize],
            ) -> std::io::Result<usize> {
                self.reads
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let n = self.len.saturating_sub(offset).min(PAGE_SIZE) as usize;
                for (i, b) in out[..n].iter_mut().enumerate() {
                    *b = ((offset + i as u64) % 251 + 1) as u8;
                }
                Ok(n)
            }
        }

        const BASE: u64 = 0x40_0000;
        const PAGES: u64 = 16;

        /// The same file mapped at BASE eagerly (`lazy == None`) or lazily.
        fn mapped(lazy: Option<std::sync::Arc<File>>) -> Memory {
            let mut m = Memory::new(1 << 24);
            m.map(BASE, PAGES * PAGE_SIZE, perm::R | perm::W).unwrap();
            match lazy {
                Some(f) => m.back(BASE, PAGES * PAGE_SIZE, f, 0).unwrap(),
                None => {
                    let bytes: Vec<u8> = (0..PAGES * PAGE_SIZE)
                        .map(|i| (i % 251 + 1) as u8)
                        .collect();
                    m.poke_bytes(BASE, &bytes).unwrap();
                }
            }
            m
        }

        #[test]
        fn pages_are_read_on_first_touch_only() {
            let f = std::sync::Arc::new(File {
                len: PAGES * PAGE_SIZE,
                reads: 0.into(),
            });
            let mut m = mapped(Some(f.clone()));
            assert_eq!(m.host_bytes() / PAGE_SIZE, 0, "nothing read when mapped");
            assert_eq!(
                m.load_u8(BASE + 5 * PAGE_SIZE + 7).unwrap(),
                ((5 * PAGE_SIZE + 7) % 251 + 1) as u8
            );
            assert_eq!(
                m.load_u8(BASE + 5 * PAGE_SIZE + 8).unwrap(),
                ((5 * PAGE_SIZE + 8) % 251 + 1) as u8
            );
            assert_eq!(f.reads.load(std::sync::atomic::Ordering::Relaxed), 1);
            // a store to an untouched page keeps the rest of the file's bytes
            m.store_u8(BASE + 3 * PAGE_SIZE, 0).unwrap();
            assert_eq!(
                m.load_u8(BASE + 3 * PAGE_SIZE + 1).unwrap(),
                ((3 * PAGE_SIZE + 1) % 251 + 1) as u8
            );
            assert_eq!(f.reads.load(std::sync::atomic::Ordering::Relaxed), 2);
            // unmapped before being touched: never read
            m.unmap(BASE + 8 * PAGE_SIZE, 8 * PAGE_SIZE).unwrap();
            assert_eq!(f.reads.load(std::sync::atomic::Ordering::Relaxed), 2);
            assert!(m.lazy.len() <= 1);
        }

        #[test]
        fn a_page_the_file_no_longer_reaches_is_past_its_end() {
            let f = std::sync::Arc::new(File {
                len: PAGE_SIZE + 10, // truncated since the mapping was made
                reads: 0.into(),
            });
            let mut m = mapped(Some(f));
            assert_eq!(
                m.load_u8(BASE + PAGE_SIZE + 20).unwrap(),
                0,
                "the rest of the last page"
            );
            assert_eq!(
                m.load_u8(BASE + 2 * PAGE_SIZE),
                Err(AccessError::Denied(BASE + 2 * PAGE_SIZE))
            );
            assert!(m.past_eof(BASE + 2 * PAGE_SIZE));
            assert_eq!(
                m.store_u8(BASE + 3 * PAGE_SIZE, 1),
                Err(AccessError::Denied(BASE + 3 * PAGE_SIZE))
            );
        }

        #[derive(Clone, Debug)]
        enum Op {
            Load(u64),
            Store(u64, u8),
            Protect(u64, u64, bool),
            Discard(u64, u64),
            Unmap(u64, u64),
            Remap(u64, u64),
            Move(u64, u64, u64),
            ReadBytes(u64, u64),
        }

        fn op() -> impl Strategy<Value = Op> {
            let page = 0..PAGES;
            prop_oneof![
                (0..PAGES * PAGE_SIZE).prop_map(Op::Load),
                (0..PAGES * PAGE_SIZE, any::<u8>()).prop_map(|(a, v)| Op::Store(a, v)),
                (page.clone(), 1..4u64, any::<bool>()).prop_map(|(p, n, w)| Op::Protect(p, n, w)),
                (page.clone(), 1..4u64).prop_map(|(p, n)| Op::Discard(p, n)),
                (page.clone(), 1..4u64).prop_map(|(p, n)| Op::Unmap(p, n)),
                (page.clone(), 1..4u64).prop_map(|(p, n)| Op::Remap(p, n)),
                (0..4u64, page.clone(), 1..6u64).prop_map(|(k, p, n)| Op::Move(k, p, n)),
                (0..PAGES * PAGE_SIZE, 1..3 * PAGE_SIZE).prop_map(|(a, n)| Op::ReadBytes(a, n)),
            ]
        }

        fn apply(m: &mut Memory, op: &Op) -> String {
            let at = |p: u64| BASE + p * PAGE_SIZE;
            match *op {
                Op::Load(a) => format!("{:?}", m.load_u64(BASE + a)),
                Op::Store(a, v) => format!("{:?}", m.store_u16(BASE + a, u16::from(v) * 257)),
                Op::Protect(p, n, w) => {
                    let perm = if w { perm::R | perm::W } else { perm::R };
                    format!("{:?}", m.protect(at(p), n * PAGE_SIZE, perm))
                }
                Op::Discard(p, n) => format!("{:?}", m.discard(at(p), n * PAGE_SIZE)),
                Op::Unmap(p, n) => format!("{:?}", m.unmap(at(p), n * PAGE_SIZE)),
                Op::Remap(p, n) => format!("{:?}", m.map(at(p), n * PAGE_SIZE, perm::R | perm::W)),
                Op::Move(k, p, n) => {
                    // part of the window away and back: page-table entries move, frames stay
                    let n = n.min(PAGES - p);
                    let away = BASE + (64 + k) * PAGE_SIZE * PAGES;
                    let a = m.move_pages(at(p), n * PAGE_SIZE, away);
                    let seen = m.load_u64(away + (n - 1) * PAGE_SIZE + 8);
                    let b = m.move_pages(away, n * PAGE_SIZE, at(p));
                    format!("{a:?}{seen:?}{b:?}")
                }
                Op::ReadBytes(a, n) => {
                    let mut out = vec![0; n as usize];
                    let r = m.read_bytes(BASE + a, &mut out);
                    format!("{r:?}{}", out.iter().map(|&b| u64::from(b)).sum::<u64>())
                }
            }
        }

        proptest! {
            /// A lazily read mapping is indistinguishable from one read when made, whatever
            /// the guest does to it.
            #[test]
            fn lazy_pages_read_as_eager_ones(ops in proptest::collection::vec(op(), 1..80)) {
                let f = std::sync::Arc::new(File { len: PAGES * PAGE_SIZE, reads: 0.into() });
                let (mut lazy, mut eager) = (mapped(Some(f)), mapped(None));
                for op in &ops {
                    prop_assert_eq!(apply(&mut lazy, op), apply(&mut eager, op), "{:?}", op);
                }
                for p in 0..PAGES * PAGE_SIZE / 8 {
                    let a = BASE + p * 8;
                    prop_assert_eq!(lazy.load_u64(a), eager.load_u64(a));
                }
                prop_assert!(lazy.materialized <= eager.materialized);
            }
        }
    }
}
