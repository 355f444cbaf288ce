//! File-backed `mmap` and the record of the objects mapped executable (docs/machine.md,
//! "Dynamic linking", "File mappings").
//!
//! A file mapping's pages are read from the host file on first touch ([`Memory::back`]), one
//! host descriptor per mapped file ([`Sources`]): `MAP_PRIVATE` (read, write, execute; the
//! guest's writes stay its own, as copy on write) and `MAP_SHARED` read-only, which the
//! guest's own writes to the file reach. A writable `MAP_SHARED` mapping is refused with
//! `EACCES` (writing the guest's stores back to the host file is not done), and so is
//! `mprotect` adding `PROT_WRITE` to one ([`SharedRanges`]). A truncation makes the pages past
//! the file's new end SIGBUS in every mapping of it. Every page counts against the memory
//! limit as anonymous memory does.
//!
//! Each executable file mapping is recorded as a [`MappedObject`] (the guest path, the host
//! file it came from, where it lies, and the build-id read from the file's notes), so that
//! reports can name code in shared libraries (`memcpy@libc.so.6`), as perf records `MMAP`
//! events.

use super::{Fd, Kernel, EACCES, EBADF, EINVAL, ENOMEM};
use crate::memory::{Memory, PAGE_SIZE};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

const ENODEV: i64 = 19;
/// Most mapped objects recorded (a guest that maps without end cannot grow the list).
pub const MAX_OBJECTS: usize = 4096;
/// Most bytes of a file read to find its build-id (its notes lie near the start).
const NOTE_WINDOW: u64 = 64 << 10;

/// An object (a program or shared library) mapped executable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappedObject {
    /// The path the guest opened it by (for the loader's own loads: the program's path and
    /// the interpreter's path in the ELF).
    pub guest_path: PathBuf,
    /// The host file it was read from (absolute; `None` if unknown).
    pub host_path: Option<PathBuf>,
    /// The lowest address of the mapping.
    pub start: u64,
    /// Its length in bytes.
    pub len: u64,
    /// The file offset mapped at `start`.
    pub offset: u64,
    /// The GNU build-id from the file's notes, if it has one.
    pub build_id: Option<Vec<u8>>,
}

impl MappedObject {
    /// The object as observers hear of it ([`outcrop_events::Mapping`]); `index` is its
    /// place in the order objects were mapped.
    pub fn mapping(&self, index: u32) -> outcrop_events::Mapping<'_> {
        outcrop_events::Mapping {
            index,
            start: self.start,
            len: self.len,
            offset: self.offset,
            path: &self.guest_path,
            host_path: self.host_path.as_deref(),
            build_id: self.build_id.as_deref(),
        }
    }

    /// The object's file name (`libc.so.6`), as reports label its functions.
    pub fn name(&self) -> String {
        self.guest_path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    }
}

impl Kernel {
    /// The objects mapped executable so far, in the order they were mapped (the program and
    /// its interpreter first).
    pub fn mapped_objects(&self) -> &[MappedObject] {
        &self.objects
    }

    /// Records an object the loader mapped (the program, the interpreter).
    pub fn record_object(&mut self, object: MappedObject) {
        if self.objects.len() < MAX_OBJECTS {
            self.objects.push(object);
        }
    }

    /// Forgets what was mapped at `[start, end)` (unmapped, or mapped over).
    pub(super) fn forget_ranges(&mut self, start: u64, end: u64) {
        self.shared.remove(start, end);
        self.file_maps.remove(start, end);
    }

    /// `mmap` of file descriptor `fd` at `offset` (the anonymous case is the caller's).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn mmap_file(
        &mut self,
        mem: &mut Memory,
        addr: u64,
        len: u64,
        prot: u64,
        flags: u64,
        fd: i64,
        offset: u64,
    ) -> i64 {
        const MAP_SHARED: u64 = 0x01;
        const MAP_PRIVATE: u64 = 0x02;
        const MAP_SHARED_VALIDATE: u64 = 0x03;
        const MAP_FIXED: u64 = 0x10;
        const PROT_WRITE: u64 = 2;
        const PROT_EXEC: u64 = 4;
        let shared = match flags & 3 {
            MAP_PRIVATE => false,
            MAP_SHARED | MAP_SHARED_VALIDATE => true,
            _ => return -EINVAL,
        };
        if offset % PAGE_SIZE != 0 {
            return -EINVAL;
        }
        if offset.checked_add(len).is_none() {
            return -EOVERFLOW;
        }
        let file = match usize::try_from(fd).ok().and_then(|i| self.fds.get(i)) {
            // /dev/zero: an anonymous mapping
            Some(Some(Fd::Device(super::Device::Zero))) => {
                return self.sys_mmap(mem, addr, len, prot, flags | 0x20, -1, 0);
            }
            Some(Some(Fd::File(f))) => match f.try_clone() {
                Ok(f) => f,
                Err(e) => return -crate::sandbox::errno(&e),
            },
            Some(Some(_)) => return -ENODEV, // stdio: not a mappable file
            _ => return -EBADF,
        };
        if super::files::path_only(&file) {
            return -EBADF; // an O_PATH descriptor maps nothing
        }
        let Ok(meta) = file.metadata() else {
            return -EACCES;
        };
        if !meta.is_file() {
            return -ENODEV;
        }
        // pages are read on first touch: a descriptor that cannot read is refused now
        let (readable, rdwr) = rustix::fs::fcntl_getfl(&file).map_or((false, false), |f| {
            use rustix::fs::OFlags;
            let readable = !f.contains(OFlags::WRONLY) && !f.contains(OFlags::PATH);
            (readable, readable && f.contains(OFlags::RDWR))
        });
        if !readable || (shared && prot & PROT_WRITE != 0 && !rdwr) {
            return -EACCES; // as Linux: a shared writable mapping needs a read-write descriptor
        }
        // len ≤ the memory limit (checked by the caller), so rounding cannot overflow
        let len = len.next_multiple_of(PAGE_SIZE);
        if shared && rdwr {
            // the guest's stores reach the file ([`super::hostfiles`])
            return self.mmap_host_shared(
                mem,
                [addr, len, prot, flags, fd as u64, offset],
                &meta,
                &file,
            );
        }
        // a private mapping shows what the shared ones stored
        self.before_file_read(mem, fd as u64);
        let start = match self.mmap_place(mem, addr, len, flags & MAP_FIXED != 0) {
            Ok(a) => a,
            Err(e) => return -e,
        };
        let want = super::prot_to_perm(prot);
        let key = {
            use std::os::unix::fs::MetadataExt;
            FileKey {
                dev: meta.dev(),
                ino: meta.ino(),
                offset,
                perm: want,
            }
        };
        if (shared && !self.shared.insert_file(start, start + len, Some(key)))
            || !self.file_maps.insert_file(start, start + len, Some(key))
        {
            self.forget_ranges(start, start + len);
            return -ENOMEM;
        }
        if mem.map(start, len, want).is_err() {
            self.forget_ranges(start, start + len);
            return -ENOMEM;
        }
        // the file's bytes, read a page at a time on first touch (a short file leaves zeros
        // after its end)
        let file_len = meta.len();
        let in_file = file_len
            .saturating_sub(offset)
            .next_multiple_of(PAGE_SIZE)
            .min(len);
        let backed = match self.sources.get(&meta, &file) {
            Some(source) => mem.back(start, in_file, source, offset).is_ok(),
            None => false,
        };
        if !backed && in_file > 0 {
            // too many distinct files mapped: this one is read now
            // (the descriptor is the guest's and a duplicate shares its position: put it back)
            let position = rustix::fs::seek(&file, rustix::fs::SeekFrom::Current(0)).ok();
            let read = read_mapping(&file, mem, start, in_file, offset);
            if let Some(p) = position {
                let _ = rustix::fs::seek(&file, rustix::fs::SeekFrom::Start(p));
            }
            if let Err(e) = read {
                let _ = mem.unmap(start, len);
                self.forget_ranges(start, start + len);
                return -e;
            }
        }
        // pages wholly past the end of the file: an access is SIGBUS, as on Linux
        let past = file_len
            .saturating_sub(offset)
            .next_multiple_of(PAGE_SIZE)
            .min(len);
        if past < len {
            let _ = mem.protect(start + past, len - past, crate::memory::perm::PAST_EOF);
        }
        if prot & PROT_EXEC != 0 {
            self.record_mapped(fd, &file, start, len, offset);
        }
        start as i64
    }

    /// Records an executable mapping of descriptor `fd` ([`MappedObject`]).
    fn record_mapped(&mut self, fd: i64, file: &std::fs::File, start: u64, len: u64, offset: u64) {
        if self.objects.len() < MAX_OBJECTS {
            let guest_path = self.fd_paths.get(&(fd as usize)).cloned();
            let host_path = self.fd_hosts.get(&(fd as usize)).cloned();
            let build_id = build_id_of(file);
            self.objects.push(MappedObject {
                guest_path: guest_path.unwrap_or_else(|| PathBuf::from(format!("fd:{fd}"))),
                host_path,
                start,
                len,
                offset,
                build_id,
            });
        }
    }

    /// `MAP_SHARED` of a host file through a read-write descriptor: its object's pages
    /// ([`super::hostfiles`]). `len` is page-rounded.
    fn mmap_host_shared(
        &mut self,
        mem: &mut Memory,
        [addr, len, prot, flags, fd, offset]: [u64; 6],
        meta: &std::fs::Metadata,
        file: &std::fs::File,
    ) -> i64 {
        use std::os::unix::fs::MetadataExt;
        const MAP_FIXED: u64 = 0x10;
        let object = match self.host_object(mem, meta, file, fd as i64) {
            Ok(o) => o,
            Err(e) => return -e,
        };
        let start = match self.mmap_place(mem, addr, len, flags & MAP_FIXED != 0) {
            Ok(a) => a,
            Err(e) => return -e,
        };
        let want = super::prot_to_perm(prot);
        let key = FileKey {
            dev: meta.dev(),
            ino: meta.ino(),
            offset,
            perm: want,
        };
        if !self.file_maps.insert_file(start, start + len, Some(key)) {
            return -ENOMEM;
        }
        if let Err(e) = self.map_object(mem, start, len, want, &object, offset / PAGE_SIZE) {
            self.forget_ranges(start, start + len);
            return -e;
        }
        if prot & 4 != 0 {
            self.record_mapped(fd as i64, file, start, len, offset);
        }
        start as i64
    }
}

const EOVERFLOW: i64 = 75;

/// Most distinct host files read lazily at once; a mapping of one more file is read when it
/// is made (each lazily read file holds one host descriptor until its last page is read or
/// unmapped).
const MAX_SOURCES: usize = 256;

/// A host file whose pages are read on first touch ([`crate::memory::PageSource`]).
pub(super) struct MappedFile(pub(super) std::fs::File);

impl crate::memory::PageSource for MappedFile {
    fn read_page(&self, offset: u64, out: &mut [u8; PAGE_SIZE as usize]) -> std::io::Result<usize> {
        read_full(&self.0, out, offset)
    }
}

/// The host files behind lazily read mappings, one handle per file (device, inode), however
/// often the guest opens and maps it.
#[derive(Clone, Default)]
pub struct Sources {
    files: std::collections::HashMap<(u64, u64), std::sync::Weak<MappedFile>>,
}

impl Sources {
    /// The page source for the file behind `meta` (`file` is a descriptor of it), `None`
    /// when [`MAX_SOURCES`] files are being read lazily already.
    fn get(
        &mut self,
        meta: &std::fs::Metadata,
        file: &std::fs::File,
    ) -> Option<std::sync::Arc<dyn crate::memory::PageSource>> {
        use std::os::unix::fs::MetadataExt;
        let key = (meta.dev(), meta.ino());
        if let Some(live) = self.files.get(&key).and_then(std::sync::Weak::upgrade) {
            return Some(live);
        }
        if self.files.len() >= MAX_SOURCES {
            self.files.retain(|_, w| w.strong_count() > 0);
            if self.files.len() >= MAX_SOURCES {
                return None;
            }
        }
        let source = std::sync::Arc::new(MappedFile(file.try_clone().ok()?));
        self.files.insert(key, std::sync::Arc::downgrade(&source));
        Some(source)
    }
}

/// Most shared file mappings kept apart at once (Linux's default `vm.max_map_count` is
/// 65,530): a guest that makes more gets `ENOMEM`, as on Linux, and the record stays bounded.
const MAX_SHARED: usize = 65_530;

/// The file a shared mapping shows: which file (device and inode), from which offset, and
/// the protection the guest asked for (restored where a truncated file grows again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileKey {
    /// Device of the file.
    pub dev: u64,
    /// Inode of the file.
    pub ino: u64,
    /// File offset at the range's start.
    pub offset: u64,
    /// The guest's protection of the pages (`perm` bits).
    pub perm: u8,
}

/// Disjoint address ranges the kernel keeps apart: where the guest's `MAP_SHARED` file
/// mappings are, with the file each shows (their pages can never become writable: `mprotect`
/// adding `PROT_WRITE` over any of them is `EACCES`, an error the guest sees, never a silent
/// success whose stores would be lost; the guest's own writes to the file reach them, and a
/// truncation makes the pages past the new end SIGBUS), and where any file mapping is
/// (`madvise(MADV_DONTNEED)` zeroes anonymous pages only) (docs/machine.md, "File mappings").
#[derive(Clone, Debug, Default)]
pub struct SharedRanges {
    /// Start → (end (exclusive), the file it maps), disjoint.
    ranges: std::collections::BTreeMap<u64, (u64, Option<FileKey>)>,
}

impl SharedRanges {
    /// Records `[start, end)`; `false` when the record is full.
    pub fn insert(&mut self, start: u64, end: u64) -> bool {
        self.insert_file(start, end, None)
    }

    /// Records `[start, end)` as showing `file`; `false` when the record is full.
    pub fn insert_file(&mut self, start: u64, end: u64, file: Option<FileKey>) -> bool {
        self.remove(start, end);
        if self.ranges.len() >= MAX_SHARED {
            return false;
        }
        self.ranges.insert(start, (end, file));
        true
    }

    /// Forgets `[start, end)` (unmapped, or mapped over), splitting ranges it cuts (the part
    /// after a cut shows the file from further on).
    pub fn remove(&mut self, start: u64, end: u64) {
        let cut: Vec<(u64, u64, Option<FileKey>)> = self
            .ranges
            .range(..end)
            .rev()
            .take_while(|(_, &(e, _))| e > start)
            .map(|(&s, &(e, f))| (s, e, f))
            .collect();
        for (s, e, f) in cut {
            self.ranges.remove(&s);
            if s < start {
                self.ranges.insert(s, (start, f));
            }
            if e > end {
                let moved = f.map(|k| FileKey {
                    offset: k.offset.saturating_add(end - s),
                    ..k
                });
                self.ranges.insert(end, (e, moved));
            }
        }
    }

    /// Whether any byte of `[start, end)` is in a recorded range.
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        self.ranges
            .range(..end)
            .next_back()
            .is_some_and(|(_, &(e, _))| e > start)
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The file shown at `addr`, its offset that of `addr`, if a recorded range holds it.
    pub fn key_at(&self, addr: u64) -> Option<FileKey> {
        let (&s, &(e, f)) = self.ranges.range(..=addr).next_back()?;
        (addr < e).then_some(())?;
        f.map(|k| FileKey {
            offset: k.offset.saturating_add(addr - s),
            ..k
        })
    }

    /// The ranges that show file (`dev`, `ino`): (start, end, its key).
    pub fn of_file(&self, dev: u64, ino: u64) -> Vec<(u64, u64, FileKey)> {
        self.ranges
            .iter()
            .filter_map(|(&s, &(e, f))| {
                f.filter(|k| k.dev == dev && k.ino == ino)
                    .map(|k| (s, e, k))
            })
            .collect()
    }
}

impl Kernel {
    /// The guest wrote `data` at `offset` of the file behind `meta`: the shared mappings of
    /// that file show it (Linux's page cache makes them coherent with `write`).
    pub(super) fn write_through_shared(
        &self,
        mem: &mut Memory,
        meta: &std::fs::Metadata,
        offset: u64,
        data: &[u8],
    ) {
        use std::os::unix::fs::MetadataExt;
        if self.file_maps.is_empty() || data.is_empty() {
            return;
        }
        let end = offset.saturating_add(data.len() as u64);
        if end >= meta.len() {
            // the write may have extended the file: pages it now covers are no longer past
            // its end
            self.follow_truncation(mem, meta, meta.len());
        }
        for (start, stop, key) in self.shared.of_file(meta.dev(), meta.ino()) {
            let map_end = key.offset.saturating_add(stop - start);
            let (lo, hi) = (offset.max(key.offset), end.min(map_end));
            if lo >= hi {
                continue;
            }
            let bytes = &data[(lo - offset) as usize..(hi - offset) as usize];
            // pages past the end of the file (SIGBUS) stay so: a write never maps them
            let at = start + (lo - key.offset);
            if !mem.past_eof(at) {
                let _ = mem.poke_bytes(at, bytes);
            }
        }
    }

    /// The file behind `meta` now has `len` bytes: in its mappings, shared and private, the
    /// rest of the page that holds the new end reads as zero and pages wholly past it are
    /// SIGBUS, the guest's private copies of them included (Linux drops those too); pages a
    /// longer file covers again come back (zero) with their protection. The
    /// pages past the end of a mapping's file form a suffix of it (the mapping starts so and
    /// every change keeps it), so only the pages that change are visited: an appending write
    /// costs what it uncovers, not the mapping's length.
    pub(super) fn follow_truncation(&self, mem: &mut Memory, meta: &std::fs::Metadata, len: u64) {
        use crate::memory::perm::PAST_EOF;
        use std::os::unix::fs::MetadataExt;
        self.host_file_truncated(mem, meta, len);
        if self.file_maps.is_empty() {
            return;
        }
        for (start, stop, key) in self.file_maps.of_file(meta.dev(), meta.ino()) {
            let pages = (stop - start) / PAGE_SIZE;
            let page = |i: u64| start + i * PAGE_SIZE;
            // pages [0, in_file) hold file bytes now
            let in_file = len.saturating_sub(key.offset).div_ceil(PAGE_SIZE);
            let boundary = in_file.min(pages);
            // marked past the end, now inside the file: the run just below the boundary
            let mut first = boundary;
            while first > 0 && mem.past_eof(page(first - 1)) {
                first -= 1;
            }
            if first < boundary {
                let n = (boundary - first) * PAGE_SIZE;
                let _ = mem.protect(page(first), n, key.perm);
                let _ = mem.discard(page(first), n); // the file's new bytes there are zero
            }
            // inside the file before, now past its end: the run from the boundary up
            let mut last = boundary;
            while last < pages && !mem.past_eof(page(last)) {
                last += 1;
            }
            if last > boundary {
                let _ = mem.protect(page(boundary), (last - boundary) * PAGE_SIZE, PAST_EOF);
            }
            // the rest of the page that holds the end (shared pages only: a private page the
            // guest wrote is its own copy, and one it only read keeps its bytes here, unlike
            // Linux, whose untouched copy would read zero from the page cache)
            let tail = len.saturating_sub(key.offset) % PAGE_SIZE;
            let shared = self.shared.key_at(start).is_some();
            if shared && tail != 0 && in_file >= 1 && in_file <= pages {
                let zeros = vec![0u8; (PAGE_SIZE - tail) as usize];
                let _ = mem.poke_bytes(page(in_file - 1) + tail, &zeros);
            }
        }
    }
}

/// Puts the data of `file` from `offset` into the `len` bytes mapped at `start`. Holes of a
/// sparse file are skipped (`SEEK_DATA`) and pages of zeros never stored: either stays an
/// untouched page that reads as zero and costs no host memory (a 1 GiB sparse mapping once
/// took 1 GB and seconds). Moves the file's position; an errno on failure.
fn read_mapping(
    file: &std::fs::File,
    mem: &mut Memory,
    start: u64,
    len: u64,
    offset: u64,
) -> Result<(), i64> {
    let mut page = vec![0u8; PAGE_SIZE as usize];
    let mut at = 0u64;
    while at < len {
        if let Some(here) = offset.checked_add(at) {
            match rustix::fs::seek(file, rustix::fs::SeekFrom::Data(here)) {
                Ok(data) if data > here => {
                    at = (data - offset) & !(PAGE_SIZE - 1);
                    if at >= len {
                        break;
                    }
                }
                Err(rustix::io::Errno::NXIO) => break, // only a hole is left
                _ => {}
            }
        }
        let n = read_full(file, &mut page, offset + at).map_err(|e| crate::sandbox::errno(&e))?;
        if n == 0 {
            break;
        }
        if page[..n].iter().any(|&b| b != 0) {
            mem.poke_bytes(start + at, &page[..n]).map_err(|_| ENOMEM)?;
        }
        at += PAGE_SIZE;
    }
    Ok(())
}

/// Reads into `buf` from `offset` until it is full or the file ends.
fn read_full(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The GNU build-id of an ELF file, from the notes its program headers place in the first
/// [`NOTE_WINDOW`] bytes (where linkers put them).
fn build_id_of(file: &std::fs::File) -> Option<Vec<u8>> {
    let size = file.metadata().ok()?.len().min(NOTE_WINDOW);
    let mut head = vec![0u8; size as usize];
    let n = read_full(file, &mut head, 0).ok()?;
    head.truncate(n);
    crate::elf::build_id_in_prefix(&head)
}

#[cfg(test)]
mod tests {
    use super::SharedRanges;

    #[test]
    fn shared_ranges_split_and_forget_as_pages_are_unmapped() {
        let mut r = SharedRanges::default();
        assert!(r.insert(0x1000, 0x5000));
        assert!(r.overlaps(0x4000, 0x5000) && r.overlaps(0, 0x2000));
        assert!(!r.overlaps(0x5000, 0x6000) && !r.overlaps(0, 0x1000));
        r.remove(0x2000, 0x3000); // a hole in the middle
        assert!(!r.overlaps(0x2000, 0x3000));
        assert!(r.overlaps(0x1000, 0x2000) && r.overlaps(0x3000, 0x4000));
        r.remove(0, u64::MAX);
        assert!(!r.overlaps(0, u64::MAX));
    }
}
