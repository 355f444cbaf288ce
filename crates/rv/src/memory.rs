//! Guest memory: a sparse 64-bit address space of 4 KiB pages with read/write/execute
//! permissions, a small software TLB for the common case, and a page budget (the memory limit).
//!
//! Accesses may be misaligned (Linux user mode emulates them, and so does qemu-user); an
//! access that crosses a page boundary takes the byte-by-byte slow path. A write to a page that
//! is also executable bumps [`Memory::code_epoch`], telling the instruction cache to drop
//! pre-decoded code.

use std::collections::HashMap;

/// Pages per leaf of the page table (a leaf covers 16 MiB).
const LEAF_BITS: u32 = 12;
const LEAF: usize = 1 << LEAF_BITS;

/// vpn → page index: hashed 16 MiB chunks, each a flat array of page slots (index + 1, 0 =
/// unmapped), with the last chunk remembered. A TLB miss costs an array read, not a hash.
struct PageTable {
    chunks: HashMap<u64, usize>,
    leaves: Vec<Box<[u32; LEAF]>>,
    last: std::cell::Cell<(u64, usize)>,
    len: u64,
}

impl Default for PageTable {
    fn default() -> Self {
        PageTable {
            chunks: HashMap::new(),
            leaves: Vec::new(),
            // no chunk number reaches u64::MAX (vpn >> 12 < 2^40)
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
                self.leaves.push(Box::new([0; LEAF]));
                let l = self.leaves.len() - 1;
                self.chunks.insert(chunk, l);
                l
            }
        };
        let slot = &mut self.leaves[l][(vpn as usize) & (LEAF - 1)];
        if *slot == 0 {
            self.len += 1;
        }
        *slot = page + 1;
    }
    fn remove(&mut self, vpn: u64) -> Option<u32> {
        let l = self.leaf(vpn)?;
        let slot = &mut self.leaves[l][(vpn as usize) & (LEAF - 1)];
        let old = *slot;
        *slot = 0;
        (old != 0).then(|| {
            self.len -= 1;
            old - 1
        })
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
}

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
    pages: Vec<Box<[u8; PAGE_SIZE as usize]>>,
    perms: Vec<u8>,
    map: PageTable,
    free: Vec<u32>,
    tlb: Box<[TlbEntry; TLB_SIZE]>,
    limit_pages: u64,
    code_epoch: u64,
}

impl Memory {
    /// An empty address space that may map at most `limit_bytes`.
    pub fn new(limit_bytes: u64) -> Self {
        Memory {
            pages: Vec::new(),
            perms: Vec::new(),
            map: PageTable::default(),
            free: Vec::new(),
            tlb: Box::new([EMPTY; TLB_SIZE]),
            limit_pages: limit_bytes / PAGE_SIZE,
            code_epoch: 0,
        }
    }

    /// Pages mapped now.
    pub fn mapped_pages(&self) -> u64 {
        self.map.len
    }

    /// Changes whenever executable memory may have changed (stores to executable pages,
    /// unmapping or re-protecting pages).
    pub fn code_epoch(&self) -> u64 {
        self.code_epoch
    }

    fn flush_tlb(&mut self) {
        self.tlb.fill(EMPTY);
    }

    /// Maps `[addr, addr + len)` (page-rounded) with `perm`, zero-filled; pages already mapped
    /// keep their contents and get `perm`. Fails if the page budget would be exceeded.
    pub fn map(&mut self, addr: u64, len: u64, perm: u8) -> Result<(), MapError> {
        let (first, last) = page_span(addr, len)?;
        let new = (first..=last)
            .filter(|&v| self.map.get(v).is_none())
            .count() as u64;
        if self.mapped_pages() + new > self.limit_pages {
            return Err(MapError::OutOfMemory);
        }
        for vpn in first..=last {
            match self.map.get(vpn) {
                Some(i) => self.perms[i as usize] = perm,
                None => {
                    let i = match self.free.pop() {
                        Some(i) => {
                            self.pages[i as usize].fill(0);
                            self.perms[i as usize] = perm;
                            i
                        }
                        None => {
                            self.pages.push(Box::new([0; PAGE_SIZE as usize]));
                            self.perms.push(perm);
                            (self.pages.len() - 1) as u32
                        }
                    };
                    self.map.insert(vpn, i);
                }
            }
        }
        self.flush_tlb();
        self.code_epoch += 1;
        Ok(())
    }

    /// Unmaps every mapped page in `[addr, addr + len)`.
    pub fn unmap(&mut self, addr: u64, len: u64) -> Result<(), MapError> {
        let (first, last) = page_span(addr, len)?;
        for vpn in first..=last {
            if let Some(i) = self.map.remove(vpn) {
                self.free.push(i);
            }
        }
        self.flush_tlb();
        self.code_epoch += 1;
        Ok(())
    }

    /// Sets `perm` on every page of `[addr, addr + len)`; fails if one is not mapped.
    pub fn protect(&mut self, addr: u64, len: u64, perm: u8) -> Result<(), MapError> {
        let (first, last) = page_span(addr, len)?;
        if (first..=last).any(|v| self.map.get(v).is_none()) {
            return Err(MapError::NotMapped);
        }
        for vpn in first..=last {
            if let Some(i) = self.map.get(vpn) {
                self.perms[i as usize] = perm;
            }
        }
        self.flush_tlb();
        self.code_epoch += 1;
        Ok(())
    }

    /// Whether every page of `[addr, addr + len)` is unmapped.
    pub fn is_free(&self, addr: u64, len: u64) -> bool {
        match page_span(addr, len) {
            Ok((first, last)) => (first..=last).all(|v| self.map.get(v).is_none()),
            Err(_) => false,
        }
    }

    /// Permission of the page holding `addr` (0 if unmapped).
    pub fn perm_at(&self, addr: u64) -> u8 {
        self.map
            .get(addr >> PAGE_SHIFT)
            .map_or(0, |i| self.perms[i as usize])
    }

    /// Page index and permission for `vpn`, through the TLB.
    #[inline(always)]
    fn lookup(&mut self, vpn: u64) -> Option<(u32, u8)> {
        let slot = (vpn as usize) & (TLB_SIZE - 1);
        let e = self.tlb[slot];
        if e.vpn == vpn {
            return Some((e.page, e.perm));
        }
        let page = self.map.get(vpn)?;
        let perm = self.perms[page as usize];
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
            out.copy_from_slice(&self.pages[page as usize][off..off + N]);
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
            if perm & perm::X != 0 {
                self.code_epoch += 1;
            }
            self.pages[page as usize][off..off + N].copy_from_slice(&bytes);
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
            out[done..done + n].copy_from_slice(&self.pages[page as usize][off..off + n]);
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
            if perm & perm::X != 0 {
                self.code_epoch += 1;
            }
            self.pages[page as usize][off..off + n].copy_from_slice(&data[done..done + n]);
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

fn page_span(addr: u64, len: u64) -> Result<(u64, u64), MapError> {
    if len == 0 {
        return Err(MapError::BadRange);
    }
    let last = addr.checked_add(len - 1).ok_or(MapError::BadRange)?;
    Ok((addr >> PAGE_SHIFT, last >> PAGE_SHIFT))
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
    fn the_page_budget_is_enforced() {
        let mut m = Memory::new(3 * PAGE_SIZE);
        assert!(m.map(0, 3 * PAGE_SIZE, perm::R).is_ok());
        assert_eq!(m.map(0x10000, 1, perm::R), Err(MapError::OutOfMemory));
        assert_eq!(m.map(u64::MAX - 10, 100, perm::R), Err(MapError::BadRange));
    }

    #[test]
    fn stores_to_code_bump_the_epoch() {
        let mut m = Memory::new(1 << 20);
        m.map(0, 0x1000, perm::R | perm::W | perm::X).unwrap();
        let e = m.code_epoch();
        m.store_u32(0, 0x13).unwrap();
        assert!(m.code_epoch() > e);
    }
}
