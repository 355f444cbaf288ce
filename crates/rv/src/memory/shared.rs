//! Memory shared between processes (docs/machine.md, "Processes": shared memory): the pages of an
//! anonymous `MAP_SHARED` mapping, a System V segment, a `/dev/shm` file or a `memfd`.
//!
//! Only one process runs at a time, so a shared page needs no lock while the guest touches
//! it: its frame *moves*. A [`SharedObject`] holds the frames of its pages while no running
//! process maps them; the running process's [`super::Memory`] takes the frames of every shared
//! page it maps when it is switched in ([`super::Memory::take_shared`]) and gives them back
//! when it is switched out ([`super::Memory::release_shared`]). Taking and giving back move
//! pointers, never bytes; while a process holds them its loads and stores, and compiled
//! code's direct ones, reach the one copy every process sees.
//!
//! A page no one has written has no frame anywhere: it reads as zero, and its frame is made
//! by the first store, in the running process's memory, which gives it to the object at the
//! next switch.
//!
//! An object may be *backed* by a host file ([`SharedObject::backed`]: a writable `MAP_SHARED`
//! mapping of it): its page `p` is file offset `p × PAGE_SIZE`, read from the file the first
//! time anyone takes, reads or writes it, and [`SharedObject::write_back`] puts the pages read
//! back into the file.

use super::{PageSource, PAGE_SIZE};
use std::sync::{Arc, Mutex, MutexGuard};

type Frame = Box<[u8; PAGE_SIZE as usize]>;

/// The pages of one shared object, by page of the object.
#[derive(Default)]
pub struct SharedObject {
    pages: Mutex<Pages>,
    /// The file whose bytes the object's pages start with (`None`: they start as zeros).
    source: Option<Arc<dyn PageSource>>,
}

#[derive(Default)]
struct Pages {
    frames: Vec<Option<Frame>>,
    /// Bytes of the object (`ftruncate` and `write` change it; an anonymous mapping's and a
    /// System V segment's are fixed).
    len: u64,
    /// For a backed object: which pages were read from the file (or made since).
    loaded: Vec<bool>,
    /// A frame was taken or written since the last [`SharedObject::write_back`].
    dirty: bool,
}

impl Pages {
    /// Reads page `page` from `source` the first time it is reached (a page of zeros, or
    /// one the file no longer has, keeps no frame).
    fn load(&mut self, source: Option<&Arc<dyn PageSource>>, page: usize) {
        let (Some(source), Some(false)) = (source, self.loaded.get(page).copied()) else {
            return;
        };
        self.loaded[page] = true;
        let mut frame: Frame = Box::new([0; PAGE_SIZE as usize]);
        if let Ok(n) = source.read_page(page as u64 * PAGE_SIZE, &mut frame) {
            if frame[..n].iter().any(|&b| b != 0) {
                self.frames[page] = Some(frame);
            }
        }
    }
}

impl SharedObject {
    /// A zero-filled object of `len` bytes. Costs no host memory until a page is written.
    pub fn new(len: u64) -> Arc<SharedObject> {
        let o = Arc::new(SharedObject::default());
        o.resize(len);
        o
    }

    /// An object of `len` bytes showing a host file from its start: each page is read from
    /// `source` when first reached ([`SharedObject::write_back`] returns them).
    pub fn backed(len: u64, source: Arc<dyn PageSource>) -> Arc<SharedObject> {
        let o = Arc::new(SharedObject {
            pages: Mutex::default(),
            source: Some(source),
        });
        o.resize(len);
        o.pages().loaded.fill(false);
        o
    }

    /// Hands every page read from the backing file, as the object holds it now, to
    /// `out(offset, bytes)` (the bytes up to the object's end), if anything was taken or
    /// written since the last call; the first error stops it. The running process's frames
    /// must have been given back.
    pub fn write_back(
        &self,
        mut out: impl FnMut(u64, &[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut p = self.pages();
        if !p.dirty || self.source.is_none() {
            return Ok(());
        }
        p.dirty = false;
        let len = p.len;
        for (i, f) in p.frames.iter().enumerate() {
            let at = i as u64 * PAGE_SIZE;
            let n = (len - at).min(PAGE_SIZE) as usize;
            // (a page without a frame is zeros, in the file too: never read, read as zeros,
            // or past an end the file was truncated to and grown from)
            if let Some(f) = f {
                out(at, &f[..n])?;
            }
        }
        Ok(())
    }

    fn pages(&self) -> MutexGuard<'_, Pages> {
        // (nothing panics while holding the lock; a poisoned one still holds sound pages)
        self.pages.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The object's identity: equal for two handles of one object, whoever holds them.
    pub fn key(self: &Arc<Self>) -> usize {
        Arc::as_ptr(self) as usize
    }

    /// The object's length in bytes.
    pub fn len(&self) -> u64 {
        self.pages().len
    }

    /// Whether the object has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets the length to `len` bytes: pages past the new end lose their bytes (a page that
    /// comes back reads as zero), as does the rest of the page holding the end. The caller
    /// bounds `len` and has the running process's frames given back first.
    pub fn resize(&self, len: u64) {
        let mut p = self.pages();
        let pages = len.div_ceil(PAGE_SIZE) as usize;
        p.frames.truncate(pages);
        p.frames.resize_with(pages, || None);
        // (pages past the old end are zeros in the file too: its length changed first)
        p.loaded.resize(pages, true);
        let tail = (len % PAGE_SIZE) as usize;
        if tail != 0 && len < p.len {
            if let Some(Some(f)) = p.frames.last_mut() {
                f[tail..].fill(0);
            }
        }
        p.len = len;
    }

    /// Host bytes the object's frames hold now (frames the running process holds are its).
    pub fn host_bytes(&self) -> u64 {
        let p = self.pages();
        p.frames.iter().flatten().count() as u64 * PAGE_SIZE + p.frames.len() as u64 * 8
    }

    /// Copies bytes from `offset` into `out`, up to the object's end; the bytes copied. The
    /// running process's frames must have been given back.
    pub fn read(&self, offset: u64, out: &mut [u8]) -> usize {
        let mut p = self.pages();
        let n = (p.len.saturating_sub(offset)).min(out.len() as u64) as usize;
        let mut done = 0;
        while done < n {
            let at = offset + done as u64;
            let (page, off) = ((at / PAGE_SIZE) as usize, (at % PAGE_SIZE) as usize);
            let k = (PAGE_SIZE as usize - off).min(n - done);
            p.load(self.source.as_ref(), page);
            match &p.frames[page] {
                Some(f) => out[done..done + k].copy_from_slice(&f[off..off + k]),
                None => out[done..done + k].fill(0),
            }
            done += k;
        }
        n
    }

    /// Copies `data` in at `offset`, growing the object to hold it. The caller bounds the
    /// end and has the running process's frames given back first.
    pub fn write(&self, offset: u64, data: &[u8]) {
        let end = offset.saturating_add(data.len() as u64);
        if end > self.len() {
            self.resize(end);
        }
        let mut p = self.pages();
        let mut done = 0;
        while done < data.len() {
            let at = offset + done as u64;
            let (page, off) = ((at / PAGE_SIZE) as usize, (at % PAGE_SIZE) as usize);
            let k = (PAGE_SIZE as usize - off).min(data.len() - done);
            p.load(self.source.as_ref(), page);
            p.dirty = true;
            let f = p.frames[page].get_or_insert_with(|| Box::new([0; PAGE_SIZE as usize]));
            f[off..off + k].copy_from_slice(&data[done..done + k]);
            done += k;
        }
    }

    /// Whether page `page` holds bytes now (read from its file, or written).
    pub(super) fn has_frame(&self, page: u64) -> bool {
        self.pages()
            .frames
            .get(page as usize)
            .is_some_and(Option::is_some)
    }

    /// Takes page `page`'s frame (`None`: never written, or past the end).
    pub(super) fn take(&self, page: u64) -> Option<Frame> {
        let mut p = self.pages();
        if page as usize >= p.frames.len() {
            return None;
        }
        p.load(self.source.as_ref(), page as usize);
        p.dirty = true;
        p.frames[page as usize].take()
    }

    /// Gives page `page`'s frame back (dropped if the object no longer reaches the page).
    pub(super) fn give(&self, page: u64, frame: Frame) {
        if let Some(slot) = self.pages().frames.get_mut(page as usize) {
            *slot = Some(frame);
        }
    }
}

/// A shared page mapped in a [`super::Memory`]: the object and which of its pages.
#[derive(Clone)]
pub(super) struct SharedPage {
    pub(super) object: Arc<SharedObject>,
    pub(super) page: u64,
    /// The other frames showing the page (second views, each with its own protection).
    pub(super) aliases: Vec<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_writes_and_resizes_keep_the_bytes_they_should() {
        let o = SharedObject::new(10);
        assert_eq!(o.len(), 10);
        let mut buf = [1u8; 16];
        assert_eq!(o.read(0, &mut buf), 10);
        assert_eq!(&buf[..10], &[0; 10]);
        o.write(PAGE_SIZE - 2, b"abcd");
        assert_eq!(o.len(), PAGE_SIZE + 2);
        assert_eq!(o.read(PAGE_SIZE - 2, &mut buf), 4);
        assert_eq!(&buf[..4], b"abcd");
        // shrinking into the second page zeroes its tail; growing again reads zeros there
        o.resize(PAGE_SIZE + 1);
        o.resize(PAGE_SIZE + 2);
        assert_eq!(o.read(PAGE_SIZE - 2, &mut buf), 4);
        assert_eq!(&buf[..4], b"abc\0");
        // reads past the end copy nothing
        assert_eq!(o.read(1 << 40, &mut buf), 0);
        assert_eq!(o.host_bytes(), 2 * PAGE_SIZE + 16);
    }
}
