//! The address space: `brk`, anonymous `mmap` and placement, `munmap`, `madvise`,
//! `mprotect`, `mremap` (file mappings: [`super::mapping`]).

use super::*;

impl Kernel {
    pub(super) fn sys_brk(&mut self, mem: &mut Memory, addr: u64) -> u64 {
        if addr < self.brk_start {
            return self.brk;
        }
        let old_end = self.brk.next_multiple_of(PAGE_SIZE);
        let Some(new_end) = addr.checked_next_multiple_of(PAGE_SIZE) else {
            return self.brk;
        };
        if new_end > old_end {
            if !self.within_rlimits(mem, new_end - old_end, true)
                || addr - self.brk_start > self.rlimit(RLIMIT_DATA)
                || !mem.is_free(old_end, new_end - old_end)
                || mem
                    .map(old_end, new_end - old_end, perm::R | perm::W)
                    .is_err()
            {
                return self.brk;
            }
        } else if new_end < old_end {
            let _ = mem.unmap(new_end, old_end - new_end);
        }
        self.brk = addr;
        addr
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn sys_mmap(
        &mut self,
        mem: &mut Memory,
        addr: u64,
        len: u64,
        prot: u64,
        flags: u64,
        fd: i64,
        offset: u64,
    ) -> i64 {
        const MAP_FIXED: u64 = 0x10;
        const MAP_ANONYMOUS: u64 = 0x20;
        if len == 0 || len > self.memory_limit {
            return if len == 0 { -EINVAL } else { -ENOMEM };
        }
        const PROT_WRITE: u64 = 2;
        const MAP_PRIVATE: u64 = 2;
        let data = prot & PROT_WRITE != 0 && flags & 3 == MAP_PRIVATE;
        if !self.within_rlimits(mem, len.next_multiple_of(PAGE_SIZE), data) {
            return -ENOMEM;
        }
        if flags & MAP_ANONYMOUS == 0 {
            return self.mmap_file(mem, addr, len, prot, flags, fd, offset);
        }
        // len ≤ the memory limit, so rounding cannot overflow
        let len = len.next_multiple_of(PAGE_SIZE);
        let p = prot_to_perm(prot);
        let start = match self.mmap_place(mem, addr, len, flags & MAP_FIXED != 0) {
            Ok(a) => a,
            Err(e) => return -e,
        };
        if flags & 3 != MAP_PRIVATE {
            // shared anonymous memory: an object no one names, which a `fork`'s child
            // shares ([`crate::memory::SharedObject`])
            let object = crate::memory::SharedObject::new(len);
            return match self.map_object(mem, start, len, p, &object, 0) {
                Ok(()) => start as i64,
                Err(e) => -e,
            };
        }
        match mem.map(start, len, p) {
            Ok(()) => start as i64,
            Err(_) => -ENOMEM,
        }
    }

    /// Where a new mapping of `len` (page-rounded) bytes goes: `addr` exactly for `MAP_FIXED`
    /// (whatever was there unmapped), else a free range.
    pub(super) fn mmap_place(
        &mut self,
        mem: &mut Memory,
        addr: u64,
        len: u64,
        fixed: bool,
    ) -> Result<u64, i64> {
        if fixed {
            if addr % PAGE_SIZE != 0 {
                return Err(EINVAL);
            }
            if addr.checked_add(len).is_none_or(|e| e > USER_TOP) {
                return Err(ENOMEM);
            }
            let _ = mem.unmap(addr, len);
            self.forget_ranges(addr, addr + len);
            Ok(addr)
        } else {
            self.find_free(mem, len).ok_or(ENOMEM)
        }
    }

    /// A free range of `len` bytes for a new mapping: after the last one, else anywhere above
    /// [`MMAP_BASE`]. Walks the mapped ranges, not the address space.
    pub(super) fn find_free(&mut self, mem: &Memory, len: u64) -> Option<u64> {
        let a = mem
            .find_free(self.mmap_next, len)
            .or_else(|| mem.find_free(MMAP_BASE, len))?;
        self.mmap_next = a.checked_add(len)?;
        Some(a)
    }

    pub(super) fn sys_munmap(&mut self, mem: &mut Memory, addr: u64, len: u64) -> i64 {
        // as Linux: the range must lie in the user address space
        if addr % PAGE_SIZE != 0 || len == 0 || addr.checked_add(len).is_none_or(|e| e > USER_TOP) {
            return -EINVAL;
        }
        match mem.unmap(addr, len) {
            Ok(()) => {
                self.forget_ranges(addr, addr.saturating_add(len));
                self.sweep_host_files(mem);
                0
            }
            Err(_) => -EINVAL,
        }
    }

    /// `msync(addr, len, flags)`: the guest's stores to shared mappings of host files reach
    /// the files (all of them: the machine keeps no dirty bit per page); the machine's own
    /// shared memory is one copy already. `EINVAL` for an unaligned address or bad flags,
    /// `ENOMEM` for a range not wholly mapped, `EIO` when a file cannot be written — as Linux.
    pub(super) fn sys_msync(&mut self, mem: &mut Memory, addr: u64, len: u64, flags: u64) -> i64 {
        const EIO: i64 = 5;
        if addr % PAGE_SIZE != 0 || flags & !7 != 0 || flags & 5 == 5 {
            return -EINVAL;
        }
        let Some(end) = addr.checked_add(len).filter(|&e| e <= USER_TOP) else {
            return -ENOMEM;
        };
        if len != 0 && !mem.is_mapped(addr, end - addr) {
            return -ENOMEM;
        }
        match self.sync_host_files(mem, None) {
            Ok(()) => 0,
            Err(e) => {
                self.warn(&e);
                -EIO
            }
        }
    }

    /// `madvise`: advice is accepted and ignored, except `MADV_DONTNEED` (and
    /// `MADV_FREE`, which may act so), whose private anonymous pages read as zeros afterwards,
    /// as on Linux. Pages of file mappings keep their bytes (Linux would read a private file
    /// page from the file again).
    pub(super) fn sys_madvise(
        &mut self,
        mem: &mut Memory,
        addr: u64,
        len: u64,
        advice: u64,
    ) -> i64 {
        const MADV_DONTNEED: u64 = 4;
        const MADV_FREE: u64 = 8;
        if addr % PAGE_SIZE != 0 || addr.checked_add(len).is_none_or(|e| e > USER_TOP) {
            return -EINVAL;
        }
        if len == 0 {
            return 0;
        }
        if advice == MADV_DONTNEED || advice == MADV_FREE {
            let end = addr.saturating_add(len.saturating_add(PAGE_SIZE - 1) & !(PAGE_SIZE - 1));
            if !mem.is_mapped(addr, end - addr) {
                return -ENOMEM;
            }
            if !self.file_maps.overlaps(addr, end) {
                let _ = mem.discard(addr, end - addr);
            }
        }
        0
    }

    pub(super) fn sys_mprotect(&mut self, mem: &mut Memory, addr: u64, len: u64, prot: u64) -> i64 {
        const PROT_WRITE: u64 = 2;
        if addr % PAGE_SIZE != 0 {
            return -EINVAL;
        }
        if len == 0 {
            return 0;
        }
        let end = addr.saturating_add(len.saturating_add(PAGE_SIZE - 1) & !(PAGE_SIZE - 1));
        if prot & PROT_WRITE != 0 && self.shared.overlaps(addr, end) {
            // a shared file mapping's stores would not reach the file: refused, never lost
            return -EACCES;
        }
        match mem.protect(addr, len, prot_to_perm(prot)) {
            Ok(()) => 0,
            Err(_) => -ENOMEM,
        }
    }

    /// mremap: shrink in place, grow in place, or move (MREMAP_MAYMOVE). Moving relinks the
    /// pages; nothing the size of the mapping is allocated on the host, and every length is
    /// checked against the address space and the memory limit first.
    pub(super) fn sys_mremap(
        &mut self,
        mem: &mut Memory,
        old: u64,
        old_len: u64,
        new_len: u64,
        flags: u64,
    ) -> i64 {
        const MREMAP_MAYMOVE: u64 = 1;
        if old % PAGE_SIZE != 0 || new_len == 0 || flags & !MREMAP_MAYMOVE != 0 {
            return -EINVAL; // MREMAP_FIXED and MREMAP_DONTUNMAP are not supported
        }
        let (Some(old_len), Some(new_len)) = (
            old_len.checked_next_multiple_of(PAGE_SIZE),
            new_len.checked_next_multiple_of(PAGE_SIZE),
        ) else {
            return -EINVAL;
        };
        if old_len == 0 || old.checked_add(old_len).is_none_or(|e| e > USER_TOP) {
            return -EINVAL;
        }
        if !mem.is_mapped(old, old_len) {
            return -EFAULT;
        }
        if new_len <= old_len {
            if new_len < old_len {
                let _ = mem.unmap(old + new_len, old_len - new_len);
                self.forget_ranges(old + new_len, old + old_len);
            }
            return old as i64;
        }
        if new_len > self.memory_limit {
            return -ENOMEM;
        }
        let p = mem.perm_at(old);
        let grow = new_len - old_len;
        if old
            .checked_add(new_len)
            .is_some_and(|e| e <= USER_TOP && mem.is_free(old + old_len, grow))
        {
            return match mem.map(old + old_len, grow, p) {
                Ok(()) => old as i64,
                Err(_) => -ENOMEM,
            };
        }
        if flags & MREMAP_MAYMOVE == 0 {
            return -ENOMEM;
        }
        if mem.mapped_pages() + grow / PAGE_SIZE > mem.limit_bytes() / PAGE_SIZE {
            return -ENOMEM;
        }
        let Some(new) = self.find_free(mem, new_len) else {
            return -ENOMEM;
        };
        if mem.move_pages(old, old_len, new).is_err() {
            return -ENOMEM;
        }
        // a file mapping moved stays one (its grown tail is new, anonymous memory)
        let (shared, file) = (
            self.shared.overlaps(old, old + old_len),
            self.file_maps.overlaps(old, old + old_len),
        );
        let (key, file_key) = (self.shared.key_at(old), self.file_maps.key_at(old));
        self.forget_ranges(old, old + old_len);
        if shared {
            let _ = self.shared.insert_file(new, new + old_len, key);
        }
        if file {
            let _ = self.file_maps.insert_file(new, new + old_len, file_key);
        }
        match mem.map(new + old_len, grow, p) {
            Ok(()) => new as i64,
            Err(_) => {
                // cannot happen after the budget check above; undo rather than lose the data
                let _ = mem.move_pages(new, old_len, old);
                -ENOMEM
            }
        }
    }
}
