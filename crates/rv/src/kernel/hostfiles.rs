//! Writable `MAP_SHARED` mappings of host files (docs/machine.md, "File mappings").
//!
//! A `MAP_SHARED` mapping through a descriptor opened for reading and writing shows one
//! [`SharedObject`] per host file (device, inode), *backed* by the file: each page is read
//! from the file when first reached, and every process mapping the file shares its frames,
//! as with the machine's own shared memory. The guest's stores go back to the file — the
//! pages read, as the object holds them — at `msync`, at `munmap` of the file's last mapping,
//! before the guest reads the file through a descriptor (`read`, `pread64`, `readv`,
//! `sendfile`, a private `mmap`), and when a run ends. The guest's `write`s and truncations
//! of the file reach the object, as Linux's page cache is one copy. The host file is written
//! only through the guest's own read-write descriptor (duplicated), beneath a grant that
//! allowed opening it so.

use super::mapping::MappedFile;
use super::{Kernel, ENOMEM};
use crate::memory::{Memory, SharedObject};
use std::collections::HashMap;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::Arc;

/// Most host files mapped writable-shared at once (each holds two host descriptors): one
/// more is `ENOMEM` until a mapping goes.
pub const MAX_HOST_FILES: usize = 256;

/// The objects of the host files mapped shared through read-write descriptors, by (device,
/// inode); one table for every process.
#[derive(Default)]
pub(crate) struct HostFiles {
    files: HashMap<(u64, u64), HostFile>,
}

struct HostFile {
    object: Arc<SharedObject>,
    /// Where the guest's stores go back (a duplicate of the guest's descriptor).
    file: std::fs::File,
    /// What the guest opened it by (for messages).
    path: std::path::PathBuf,
}

impl HostFile {
    fn write_back(&self) -> Result<(), String> {
        self.object
            .write_back(|at, bytes| self.file.write_all_at(bytes, at))
            .map_err(|e| {
                format!(
                    "writing the guest's stores to a shared mapping of {} back: {e}",
                    self.path.display()
                )
            })
    }
}

impl HostFiles {
    /// Whether no host file is mapped so.
    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

impl Kernel {
    /// The object showing the host file `file` (opened read-write by the guest's descriptor
    /// `fd`) to `MAP_SHARED` mappings; made on the first mapping of the file.
    pub(super) fn host_object(
        &mut self,
        mem: &mut Memory,
        meta: &std::fs::Metadata,
        file: &std::fs::File,
        fd: i64,
    ) -> Result<Arc<SharedObject>, i64> {
        let key = (meta.dev(), meta.ino());
        if let Some(h) = self.host_files.files.get(&key) {
            return Ok(h.object.clone());
        }
        if self.host_files.files.len() >= MAX_HOST_FILES {
            self.sweep_host_files(mem);
            if self.host_files.files.len() >= MAX_HOST_FILES {
                return Err(ENOMEM);
            }
        }
        let dup = |f: &std::fs::File| f.try_clone().map_err(|e| crate::sandbox::errno(&e));
        let source = Arc::new(MappedFile(dup(file)?));
        let object = SharedObject::backed(meta.len(), source);
        let path = self
            .fd_paths
            .get(&(fd as usize))
            .cloned()
            .unwrap_or_else(|| format!("fd {fd}").into());
        self.host_files.files.insert(
            key,
            HostFile {
                object: object.clone(),
                file: dup(file)?,
                path,
            },
        );
        Ok(object)
    }

    /// Puts the guest's stores to the shared mappings of host files back into the files:
    /// every file, or only the one `only` names (device, inode). The running process's
    /// frames are given back around it. The first file that cannot be written is named.
    pub(super) fn sync_host_files(
        &mut self,
        mem: &mut Memory,
        only: Option<(u64, u64)>,
    ) -> Result<(), String> {
        if self.host_files.files.is_empty() {
            return Ok(());
        }
        mem.release_shared();
        let mut result = Ok(());
        for (key, h) in &self.host_files.files {
            if only.is_none_or(|k| k == *key) && result.is_ok() {
                result = h.write_back();
            }
        }
        mem.take_shared();
        result
    }

    /// Writes back and forgets the host files no process maps any more.
    pub(super) fn sweep_host_files(&mut self, mem: &mut Memory) {
        if self.host_files.files.is_empty() {
            return;
        }
        mem.release_shared();
        let mut failed = Vec::new();
        self.host_files.files.retain(|_, h| {
            if Arc::strong_count(&h.object) > 1 {
                return true;
            }
            if let Err(e) = h.write_back() {
                failed.push(e);
            }
            false
        });
        mem.take_shared();
        for e in failed {
            self.warn(&e);
        }
    }

    /// The run ends (or pauses): every host file gets the guest's stores; a file that cannot
    /// be written is warned of.
    pub fn finish_host_files(&mut self, mem: &mut Memory) {
        if let Err(e) = self.sync_host_files(mem, None) {
            self.warn(&e);
        }
    }

    /// The guest wrote `data` at `offset` of the file behind `meta` (the host file has it):
    /// its object shows it too.
    pub(super) fn host_file_written(
        &self,
        mem: &mut Memory,
        meta: &std::fs::Metadata,
        offset: u64,
        data: &[u8],
    ) {
        if let Some(h) = self.host_files.files.get(&(meta.dev(), meta.ino())) {
            mem.release_shared();
            h.object.write(offset, data);
            mem.take_shared();
        }
    }

    /// The file behind `meta` was truncated (or grown) to `len` bytes: so is its object.
    pub(super) fn host_file_truncated(&self, mem: &mut Memory, meta: &std::fs::Metadata, len: u64) {
        if let Some(h) = self.host_files.files.get(&(meta.dev(), meta.ino())) {
            mem.release_shared();
            h.object.resize(len);
            mem.take_shared();
        }
    }

    /// The guest is about to read the file behind descriptor `fd`: the stores to its shared
    /// mappings reach the file first (a read sees them, as through Linux's page cache).
    pub(super) fn before_file_read(&mut self, mem: &mut Memory, fd: u64) {
        if self.host_files.files.is_empty() {
            return;
        }
        let Ok(super::Fd::File(f)) = self.fd(fd) else {
            return;
        };
        if let Ok(meta) = f.metadata() {
            if let Err(e) = self.sync_host_files(mem, Some((meta.dev(), meta.ino()))) {
                self.warn(&e);
            }
        }
    }
}
