//! The sandbox: which host paths a guest may reach, resolved race-free beneath granted roots.
//!
//! A grant ([`Sandbox::allow_read`], [`Sandbox::allow_write`]) opens its directory once, as a
//! capability ([`cap_std::fs::Dir`]); a grant of a single file opens the file's directory and
//! remembers the one name. Every guest path is then matched *lexically* against the grants'
//! names (no host lookup happens for a path outside them), and the rest of the path is opened
//! through the root's handle with `cap-std`, which resolves every component — `..` and
//! symlinks included — beneath that handle in one step (`openat2` with `RESOLVE_BENEATH` on
//! Linux). So:
//!
//! * a symlink inside a granted tree that points out of it, dangling or not, is refused, also
//!   when the guest creates a file through it;
//! * swapping a granted directory for a symlink after the grant changes nothing: the handle
//!   still names the directory that was granted;
//! * a path outside every grant fails with `EACCES` before the host is asked anything, so the
//!   answer is the same whether or not the path exists.
//!
//! The guest's working directory is the host's; relative paths are joined to it.
//!
//! A *sysroot* ([`Sandbox::set_sysroot`], `--sysroot`, like qemu-user's `-L`) is a read-only
//! grant whose name is `/`: an absolute guest path not under a more specific grant is looked
//! up beneath the sysroot (`/lib/libc.so.6` → `SYSROOT/lib/libc.so.6`), through its handle,
//! so symlinks inside it resolve within it and nothing outside it is reached. Writing
//! through it is refused.

use cap_std::fs::{Dir, Metadata, OpenOptions};
use std::ffi::OsString;
use std::fs::File;
use std::path::{Component, Path, PathBuf};

// errno values (asm-generic) the sandbox answers with
pub(crate) const EACCES: i64 = 13;
pub(crate) const ENOENT: i64 = 2;
const ENOTDIR: i64 = 20;
const EEXIST: i64 = 17;
const EINVAL: i64 = 22;
const EXDEV: i32 = 18;

/// Paths the guest may open: granted roots, each a directory tree or a single file.
#[derive(Debug, Default)]
pub struct Sandbox {
    roots: Vec<Root>,
    /// The guest's working directory (absolute): relative guest paths resolve against it
    /// rather than the host process's, so that runs in one process can each have their own.
    cwd: Option<PathBuf>,
    /// The sysroot's canonical host path ([`Sandbox::set_sysroot`]).
    sysroot: Option<PathBuf>,
}

#[derive(Debug)]
struct Root {
    /// The names a guest path may start with: the grant as given (made absolute) and its
    /// canonical form.
    names: Vec<PathBuf>,
    access: RootAccess,
    write: bool,
    /// The canonical host path granted.
    host: PathBuf,
}

#[derive(Debug)]
enum RootAccess {
    /// A directory tree.
    Tree(Dir),
    /// One file: its directory and its name (opened without following a symlink).
    File { parent: Dir, name: OsString },
}

/// Where a guest path lands: a granted root and the path beneath it.
pub(crate) struct Resolved<'a> {
    access: &'a RootAccess,
    rel: PathBuf,
    /// The root's host path.
    base: &'a Path,
    /// Whether the root may be written.
    write: bool,
}

/// A directory the guest opened (a directory file descriptor): the `*at` calls resolve
/// relative paths beneath its handle, with the access of the grant it was opened under. The
/// handle names the directory that was opened: renaming it, or putting a symlink in its
/// place, changes nothing; `..` out of it is refused like any escape.
#[derive(Debug)]
pub(crate) struct DirGrant {
    access: RootAccess,
    write: bool,
    host: PathBuf,
}

impl DirGrant {
    /// Another handle to the same directory (`dup`).
    pub(crate) fn try_clone(&self) -> Result<DirGrant, i64> {
        let access = match &self.access {
            RootAccess::Tree(d) => RootAccess::Tree(d.try_clone().map_err(|e| errno(&e))?),
            RootAccess::File { parent, name } => RootAccess::File {
                parent: parent.try_clone().map_err(|e| errno(&e))?,
                name: name.clone(),
            },
        };
        Ok(DirGrant {
            access,
            write: self.write,
            host: self.host.clone(),
        })
    }

    /// `rel` beneath this directory (for writing only if its grant allows it).
    pub(crate) fn resolve(&self, rel: &Path, write: bool) -> Result<Resolved<'_>, i64> {
        if write && !self.write {
            return Err(EACCES);
        }
        Ok(Resolved {
            access: &self.access,
            rel: rel
                .components()
                .filter(|c| *c != Component::CurDir)
                .collect(),
            base: &self.host,
            write: self.write,
        })
    }

    /// The directory's metadata.
    pub(crate) fn metadata(&self) -> Result<Metadata, i64> {
        match &self.access {
            RootAccess::Tree(d) => d.dir_metadata().map_err(|e| errno(&e)),
            RootAccess::File { .. } => Err(ENOTDIR),
        }
    }

    /// Its entries (`.` and `..` first, then by name: a deterministic order, which needs
    /// them all). A directory with more than `max` entries, or more than [`MAX_DIR_BYTES`] of
    /// names, is `ENOMEM`: never a listing that stops early and looks complete.
    pub(crate) fn entries(&self, max: usize) -> Result<Vec<(u64, u8, Vec<u8>)>, i64> {
        use std::os::unix::ffi::OsStrExt;
        let RootAccess::Tree(d) = &self.access else {
            return Err(ENOTDIR);
        };
        let meta = d.dir_metadata().map_err(|e| errno(&e))?;
        let ino = cap_std::fs::MetadataExt::ino(&meta);
        let mut out = vec![(ino, 4u8, b".".to_vec()), (ino, 4u8, b"..".to_vec())];
        let mut rest = Vec::new();
        let mut bytes = 0usize;
        for e in d.entries().map_err(|e| errno(&e))? {
            let Ok(e) = e else { continue };
            bytes += e.file_name().len() + 24;
            if rest.len() >= max.saturating_sub(2) || bytes > MAX_DIR_BYTES {
                return Err(ENOMEM);
            }
            let kind = match e.file_type() {
                Ok(t) if t.is_dir() => 4,
                Ok(t) if t.is_file() => 8,
                Ok(t) if t.is_symlink() => 10,
                Ok(_) => 0,
                Err(_) => 0,
            };
            let ino = std::os::unix::fs::DirEntryExt::ino(&e);
            rest.push((ino, kind, e.file_name().as_bytes().to_vec()));
        }
        rest.sort_by(|a, b| a.2.cmp(&b.2));
        out.extend(rest);
        Ok(out)
    }
}

/// Most bytes of names (plus 24 per entry) one directory listing holds.
pub(crate) const MAX_DIR_BYTES: usize = 64 << 20;

/// Out of memory, as `getdents64` answers for a directory larger than a listing holds.
const ENOMEM: i64 = 12;

/// How to open a file (the subset of `open(2)` flags the kernel passes on).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OpenFlags {
    pub read: bool,
    pub write: bool,
    pub append: bool,
    pub truncate: bool,
    pub create: bool,
    pub exclusive: bool,
    pub nofollow: bool,
    /// `O_NONBLOCK`: the host file stays non-blocking (it is opened so in any case).
    pub nonblock: bool,
    /// `O_PATH`: a handle that names the file and neither reads nor writes it (the host's
    /// own `O_PATH`, so every call on its contents is `EBADF` there).
    pub path_only: bool,
    pub mode: u32,
    /// `O_CREAT` where the kernel found no file: the file made gets `mode` exactly (the
    /// host's umask is not the guest's).
    pub created: bool,
}

/// Gives a file or directory this open or `mkdir` just made the mode the guest asked for
/// (after the guest's own umask): the host's umask may have taken bits away. Only bits the
/// host removed are restored, so a file found made by someone else in between keeps its own.
fn guest_mode(file: &std::fs::File, meta: &std::fs::Metadata, mode: u32) -> Result<(), i64> {
    use std::os::unix::fs::MetadataExt as _;
    let now = meta.mode() & 0o7777;
    let want = mode & 0o1777;
    if now != want && now & !want == 0 {
        rustix::fs::fchmod(file, rustix::fs::Mode::from_raw_mode(want))
            .map_err(|e| i64::from(e.raw_os_error()))?;
    }
    Ok(())
}

impl Sandbox {
    /// No host paths at all.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the guest's working directory (made absolute against the host's now): relative
    /// guest paths, and relative grants made after this, resolve against it. Granting it is
    /// still up to the caller.
    pub fn set_cwd(&mut self, dir: &Path) -> std::io::Result<()> {
        self.cwd = Some(std::path::absolute(dir)?);
        Ok(())
    }

    /// The guest path `path` as the host sees it: relative paths against the guest's working
    /// directory.
    pub fn host_path(&self, path: &Path) -> PathBuf {
        match &self.cwd {
            Some(cwd) if path.is_relative() => cwd.join(path),
            _ => path.to_path_buf(),
        }
    }

    /// Makes the directory `dir` the guest's read-only root for absolute paths no other grant
    /// covers (where the dynamic linker and shared libraries are found).
    pub fn set_sysroot(&mut self, dir: &Path) -> std::io::Result<()> {
        let canonical = std::fs::canonicalize(self.host_path(dir))?;
        if !canonical.is_dir() {
            return Err(std::io::Error::other(format!(
                "{} is not a directory",
                canonical.display()
            )));
        }
        let access = RootAccess::Tree(Dir::open_ambient_dir(
            &canonical,
            cap_std::ambient_authority(),
        )?);
        self.sysroot = Some(canonical.clone());
        self.roots.push(Root {
            names: vec![PathBuf::from("/")],
            access,
            write: false,
            host: canonical,
        });
        Ok(())
    }

    /// The sysroot's host directory, if one is set.
    pub fn sysroot(&self) -> Option<&Path> {
        self.sysroot.as_deref()
    }

    /// Reads the file the guest sees at `path` through the grants (the sysroot included),
    /// beneath its root as the guest's own opens are, at most `cap` bytes: how the loader
    /// reads the program's interpreter. Returns the bytes and the host path they came from.
    pub fn read_file(&self, path: &Path, cap: u64) -> std::io::Result<(Vec<u8>, PathBuf)> {
        use std::io::Read;
        let resolved = self
            .resolve(path, false)
            .map_err(|e| std::io::Error::from_raw_os_error(e as i32))?;
        // a FIFO, socket or device is named as such (opening one is refused before it could
        // block, which would otherwise read as "Permission denied")
        if let Ok(meta) = resolved.metadata(false) {
            if !meta.is_file() {
                let ft = meta.file_type();
                use cap_std::fs::FileTypeExt;
                let kind = if ft.is_dir() {
                    "a directory"
                } else if ft.is_fifo() {
                    "a FIFO"
                } else if ft.is_socket() {
                    "a socket"
                } else if ft.is_char_device() || ft.is_block_device() {
                    "a device"
                } else {
                    "a special file"
                };
                return Err(std::io::Error::other(format!("{kind}, not a regular file")));
            }
        }
        let file = resolved
            .open(OpenFlags {
                read: true,
                ..OpenFlags::default()
            })
            .map_err(|e| std::io::Error::from_raw_os_error(e as i32))?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        if meta.len() > cap {
            return Err(std::io::Error::other(format!(
                "{} bytes; the most read is {cap}",
                meta.len()
            )));
        }
        let mut out = Vec::with_capacity(meta.len() as usize);
        file.take(cap + 1).read_to_end(&mut out)?;
        if out.len() as u64 > cap {
            return Err(std::io::Error::other(format!("grew past {cap} bytes")));
        }
        Ok((out, resolved.host_path()))
    }

    /// Grants read-only access to `path` (a file or a directory tree).
    pub fn allow_read(&mut self, path: &Path) -> std::io::Result<()> {
        self.grant(path, false)
    }

    /// Grants read-write access to `path` (a file or a directory tree).
    pub fn allow_write(&mut self, path: &Path) -> std::io::Result<()> {
        self.grant(path, true)
    }

    fn grant(&mut self, path: &Path, write: bool) -> std::io::Result<()> {
        let path = &self.host_path(path);
        let canonical = std::fs::canonicalize(path)?;
        let authority = cap_std::ambient_authority();
        let access = if canonical.is_dir() {
            RootAccess::Tree(Dir::open_ambient_dir(&canonical, authority)?)
        } else {
            let (Some(parent), Some(name)) = (canonical.parent(), canonical.file_name()) else {
                return Err(std::io::Error::other("cannot grant the file system root"));
            };
            RootAccess::File {
                parent: Dir::open_ambient_dir(parent, authority)?,
                name: name.to_os_string(),
            }
        };
        let mut names = vec![canonical.clone()];
        if let Ok(given) = absolute(path) {
            if !names.contains(&given) {
                names.push(given);
            }
        }
        self.roots.push(Root {
            names,
            access,
            write,
            host: canonical,
        });
        Ok(())
    }

    /// The root `path` lies under and the rest of the path, or `EACCES` when no grant covers
    /// it (for writing: no read-write grant). Purely lexical: the host is not consulted.
    pub(crate) fn resolve(&self, path: &Path, write: bool) -> Result<Resolved<'_>, i64> {
        let abs = absolute(&self.host_path(path)).map_err(|_| EACCES)?;
        let mut best: Option<(usize, &Root, PathBuf)> = None;
        for root in self.roots.iter().filter(|r| r.write || !write) {
            for name in &root.names {
                let Ok(rel) = abs.strip_prefix(name) else {
                    continue;
                };
                let depth = name.components().count();
                if best.as_ref().is_none_or(|(d, ..)| depth > *d) {
                    best = Some((depth, root, rel.to_path_buf()));
                }
            }
        }
        let (_, root, rel) = best.ok_or(EACCES)?;
        if matches!(root.access, RootAccess::File { .. }) && !rel.as_os_str().is_empty() {
            // beneath a granted file: nothing there, and `..` must not climb out of it
            return Err(if rel.components().any(|c| c == Component::ParentDir) {
                EACCES
            } else {
                ENOTDIR
            });
        }
        Ok(Resolved {
            access: &root.access,
            rel,
            base: &root.host,
            write: root.write,
        })
    }
}

impl Resolved<'_> {
    /// The host path this resolves to (for reports: which file a mapping came from; opening
    /// goes through the root's handle, never this path).
    pub(crate) fn host_path(&self) -> PathBuf {
        if self.rel.as_os_str().is_empty() {
            self.base.to_path_buf()
        } else {
            self.base.join(&self.rel)
        }
    }

    /// The host path of the root it lies under.
    pub(crate) fn base(&self) -> &Path {
        self.base
    }

    /// The path to hand to a root's directory handle ("." for the root itself).
    fn rel(&self) -> &Path {
        if self.rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.rel
        }
    }

    /// Opens the file, beneath the root.
    pub(crate) fn open(&self, f: OpenFlags) -> Result<File, i64> {
        let mut o = OpenOptions::new();
        o.read(f.read)
            .write(f.write)
            .append(f.append)
            .truncate(f.truncate);
        // Never block the host: a FIFO with no writer would hang the open. What was opened is
        // then checked by its descriptor (no race) and anything but a regular file or a
        // directory refused (docs/machine.md, "Security model").
        let mut custom = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
        if f.path_only {
            custom = rustix::fs::OFlags::PATH;
            // (the access mode is ignored beside O_PATH: read keeps cap-std content)
            o.read(true).write(false).append(false).truncate(false);
        } else if (f.create || f.truncate) && !f.write && !f.append {
            // Linux creates (and truncates) for a read-only open too; the options refuse
            // that combination, so those flags go as the open's own
            o.truncate(false);
            if f.create {
                custom |= rustix::fs::OFlags::CREATE;
            }
            if f.create && f.exclusive {
                custom |= rustix::fs::OFlags::EXCL;
            }
            if f.truncate {
                custom |= rustix::fs::OFlags::TRUNC;
            }
        } else if f.exclusive {
            o.create_new(f.create);
        } else {
            o.create(f.create);
        }
        cap_std::fs::OpenOptionsExt::mode(&mut o, f.mode);
        cap_std::fs::OpenOptionsExt::custom_flags(&mut o, custom.bits() as i32);
        let nofollow = f.nofollow || matches!(self.access, RootAccess::File { .. });
        if nofollow {
            cap_fs_ext::OpenOptionsFollowExt::follow(&mut o, cap_fs_ext::FollowSymlinks::No);
        }
        let file = match self.access {
            RootAccess::Tree(dir) => dir.open_with(self.rel(), &o),
            RootAccess::File { parent, name } => parent.open_with(name, &o),
        };
        const ENXIO: i64 = 6;
        let file = file.map(|f| f.into_std()).map_err(|e| match errno(&e) {
            // a FIFO opened for writing without a reader (the host open does not block):
            // refused as every FIFO is
            ENXIO => EACCES,
            n => n,
        })?;
        let meta = file.metadata().map_err(|e| errno(&e))?;
        if !meta.is_file() && !meta.is_dir() {
            return Err(EACCES); // a FIFO, socket or device: dropping the file closes it
        }
        if f.created {
            guest_mode(&file, &meta, f.mode)?;
        }
        if !f.nonblock && !f.path_only {
            let flags = rustix::fs::fcntl_getfl(&file).map_err(|e| i64::from(e.raw_os_error()))?;
            rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)
                .map_err(|e| i64::from(e.raw_os_error()))?;
        }
        Ok(file)
    }

    /// The directory opened by `file` (a descriptor [`Resolved::open`] returned for a
    /// directory) as a base for `*at` calls, with this root's access.
    pub(crate) fn dir_grant(&self, file: File) -> DirGrant {
        DirGrant {
            access: RootAccess::Tree(Dir::from_std_file(file)),
            write: self.write,
            host: self.host_path(),
        }
    }

    /// Creates the directory.
    pub(crate) fn mkdir(&self, mode: u32) -> Result<(), i64> {
        let RootAccess::Tree(d) = self.access else {
            return Err(EEXIST);
        };
        if self.rel.as_os_str().is_empty() {
            return Err(EEXIST);
        }
        let mut b = cap_std::fs::DirBuilder::new();
        cap_std::fs::DirBuilderExt::mode(&mut b, mode);
        d.create_dir_with(&self.rel, &b).map_err(|e| errno(&e))?;
        // the host's umask is not the guest's: the new directory, opened without following,
        // gets the mode the guest's umask left
        let mut o = OpenOptions::new();
        o.read(true);
        cap_fs_ext::OpenOptionsFollowExt::follow(&mut o, cap_fs_ext::FollowSymlinks::No);
        cap_std::fs::OpenOptionsExt::custom_flags(
            &mut o,
            rustix::fs::OFlags::DIRECTORY.bits() as i32,
        );
        if let Ok(made) = d.open_with(&self.rel, &o) {
            let made = made.into_std();
            if let Ok(meta) = made.metadata() {
                guest_mode(&made, &meta, mode)?;
            }
        }
        Ok(())
    }

    /// The target of the symlink.
    pub(crate) fn read_link(&self) -> Result<PathBuf, i64> {
        match self.access {
            RootAccess::Tree(d) if !self.rel.as_os_str().is_empty() => {
                d.read_link_contents(&self.rel).map_err(|e| errno(&e))
            }
            _ => Err(EINVAL),
        }
    }

    /// Renames it to `to` (both beneath writable roots).
    pub(crate) fn rename(&self, to: &Resolved<'_>) -> Result<(), i64> {
        match (self.access, to.access) {
            (RootAccess::Tree(a), RootAccess::Tree(b))
                if !self.rel.as_os_str().is_empty() && !to.rel.as_os_str().is_empty() =>
            {
                a.rename(&self.rel, b, &to.rel).map_err(|e| errno(&e))
            }
            _ => Err(EACCES),
        }
    }

    /// Creates a symbolic link here to `target`. A link must not lead out of its grant when
    /// anyone follows it later (Outcrop's own outputs, the user's tools): a target with a `..`
    /// component, or an absolute one outside the grant's host path, is `EACCES`. Without
    /// `..`, a relative target stays beneath the link's directory however the links it meets
    /// resolve (docs/machine.md, "Security model").
    pub(crate) fn symlink(&self, target: &Path) -> Result<(), i64> {
        let RootAccess::Tree(d) = self.access else {
            return Err(EEXIST);
        };
        if self.rel.as_os_str().is_empty() {
            return Err(EEXIST);
        }
        if target.as_os_str().is_empty() {
            return Err(ENOENT);
        }
        if target.components().any(|c| c == Component::ParentDir)
            || (target.is_absolute() && !target.starts_with(self.base))
        {
            return Err(EACCES);
        }
        d.symlink_contents(target, &self.rel).map_err(|e| errno(&e))
    }

    /// Creates a named pipe (or, with `socket`, a Unix socket's file) here: `mknodat` on the
    /// parent directory's handle (opened beneath the root) with the last component's name,
    /// so nothing outside is touched.
    pub(crate) fn mknod(&self, socket: bool, mode: u32) -> Result<(), i64> {
        let (dir, name) = self.parent_and_name()?;
        rustix::fs::mknodat(
            dir.as_ref().unwrap_or(self.tree()?),
            name,
            if socket {
                rustix::fs::FileType::Socket
            } else {
                rustix::fs::FileType::Fifo
            },
            rustix::fs::Mode::from_raw_mode(mode & 0o777),
            0,
        )
        .map_err(|e| i64::from(e.raw_os_error()))
    }

    /// The root's directory handle (`EEXIST` for a granted file: nothing is made there).
    fn tree(&self) -> Result<&Dir, i64> {
        match self.access {
            RootAccess::Tree(d) => Ok(d),
            RootAccess::File { .. } => Err(EEXIST),
        }
    }

    /// The directory holding this path, opened beneath the root (`None`: the root itself),
    /// and the last component's name; a path with `..` is `EACCES`.
    fn parent_and_name(&self) -> Result<(Option<Dir>, &std::ffi::OsStr), i64> {
        let d = self.tree()?;
        let (Some(name), parent) = (self.rel.file_name(), self.rel.parent()) else {
            return Err(EEXIST);
        };
        if self.rel.components().any(|c| c == Component::ParentDir) {
            return Err(EACCES);
        }
        let dir = match parent.filter(|p| !p.as_os_str().is_empty()) {
            Some(p) => Some(d.open_dir(p).map_err(|e| errno(&e))?),
            None => None,
        };
        Ok((dir, name))
    }

    /// Exchanges this path and `to` (`renameat2(RENAME_EXCHANGE)`), both beneath read-write
    /// grants, through their parents' handles.
    pub(crate) fn exchange(&self, to: &Resolved<'_>) -> Result<(), i64> {
        if !self.write || !to.write {
            return Err(EACCES);
        }
        let (a, an) = self.parent_and_name()?;
        let (b, bn) = to.parent_and_name()?;
        rustix::fs::renameat_with(
            a.as_ref().unwrap_or(self.tree()?),
            an,
            b.as_ref().unwrap_or(to.tree()?),
            bn,
            rustix::fs::RenameFlags::EXCHANGE,
        )
        .map_err(|e| i64::from(e.raw_os_error()))
    }

    /// Makes `to` a second name of this file (both beneath writable grants: a link would
    /// otherwise make a read-only file writable through the new name).
    pub(crate) fn hard_link(&self, to: &Resolved<'_>) -> Result<(), i64> {
        match (self.access, to.access) {
            (RootAccess::Tree(a), RootAccess::Tree(b))
                if self.write
                    && to.write
                    && !self.rel.as_os_str().is_empty()
                    && !to.rel.as_os_str().is_empty() =>
            {
                a.hard_link(&self.rel, b, &to.rel).map_err(|e| errno(&e))
            }
            _ => Err(EACCES),
        }
    }

    /// The file's metadata (of a symlink itself with `nofollow`).
    pub(crate) fn metadata(&self, nofollow: bool) -> Result<Metadata, i64> {
        let m = match self.access {
            RootAccess::Tree(dir) if self.rel.as_os_str().is_empty() => dir.dir_metadata(),
            RootAccess::Tree(dir) if nofollow => dir.symlink_metadata(self.rel()),
            RootAccess::Tree(dir) => dir.metadata(self.rel()),
            RootAccess::File { parent, name } => parent.symlink_metadata(name),
        };
        m.map_err(|e| errno(&e))
    }

    /// Removes the file (or the empty directory, with `dir`).
    pub(crate) fn remove(&self, dir: bool) -> Result<(), i64> {
        let r = match self.access {
            RootAccess::Tree(_) if self.rel.as_os_str().is_empty() => return Err(EACCES),
            RootAccess::Tree(d) if dir => d.remove_dir(self.rel()),
            RootAccess::Tree(d) => d.remove_file(self.rel()),
            RootAccess::File { .. } if dir => return Err(ENOTDIR),
            RootAccess::File { parent, name } => parent.remove_file(name),
        };
        r.map_err(|e| errno(&e))
    }
}

/// `path` made absolute against the host's working directory, with `.` components dropped
/// (`..` is kept: resolving it is the root handle's job, not ours).
fn absolute(path: &Path) -> std::io::Result<PathBuf> {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    Ok(joined
        .components()
        .filter(|c| *c != Component::CurDir)
        .collect())
}

/// The guest errno for a host error. An attempt to leave a root (cap-std reports it without
/// an OS error, or as `EXDEV` from `openat2`) is `EACCES`, like any path outside the grants.
pub(crate) fn errno(e: &std::io::Error) -> i64 {
    match e.raw_os_error() {
        Some(EXDEV) => EACCES,
        Some(n) => i64::from(n),
        None => match e.kind() {
            std::io::ErrorKind::NotFound => ENOENT,
            _ => EACCES,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory larger than a listing holds is an error, never a short listing that
    /// looks complete (getdents64 once stopped at 65,536 entries with no error).
    #[test]
    fn a_directory_listing_is_complete_or_an_error() {
        let base = tempfile::tempdir().unwrap();
        for i in 0..100 {
            std::fs::write(base.path().join(format!("f{i:03}")), "").unwrap();
        }
        let dir =
            cap_std::fs::Dir::open_ambient_dir(base.path(), cap_std::ambient_authority()).unwrap();
        let grant = DirGrant {
            access: RootAccess::Tree(dir),
            write: false,
            host: base.path().to_path_buf(),
        };
        let all = grant.entries(1000).unwrap();
        assert_eq!(all.len(), 102);
        assert_eq!(all[2].2, b"f000".to_vec());
        assert_eq!(all[101].2, b"f099".to_vec());
        assert_eq!(grant.entries(102).unwrap().len(), 102);
        assert_eq!(grant.entries(101).err(), Some(ENOMEM));
        assert_eq!(grant.entries(50).err(), Some(ENOMEM));
    }

    #[test]
    fn a_guest_working_directory_resolves_relative_paths_beneath_it_only() {
        let base = tempfile::tempdir().unwrap();
        let scratch = base.path().join("scratch");
        let other = base.path().join("other");
        std::fs::create_dir_all(&scratch).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(scratch.join("in.txt"), "x").unwrap();
        std::fs::write(other.join("secret"), "y").unwrap();
        let mut s = Sandbox::new();
        s.set_cwd(&scratch).unwrap();
        // a relative grant is relative to the guest's directory, not the host process's
        s.allow_write(Path::new(".")).unwrap();
        assert!(s.resolve(Path::new("in.txt"), false).is_ok());
        assert!(s.resolve(Path::new("new.txt"), true).is_ok());
        assert!(s.resolve(&scratch.join("in.txt"), true).is_ok());
        // `..` out of it, or another directory by name, is refused
        let read = OpenFlags {
            read: true,
            ..OpenFlags::default()
        };
        let opened = s
            .resolve(Path::new("../other/secret"), false)
            .and_then(|r| r.open(read).map(drop));
        assert_eq!(opened.err(), Some(EACCES));
        assert!(s
            .resolve(Path::new("in.txt"), false)
            .and_then(|r| r.open(read).map(drop))
            .is_ok());
        assert_eq!(s.resolve(&other.join("secret"), false).err(), Some(EACCES));
        assert_eq!(
            s.host_path(Path::new("a/b")),
            std::path::absolute(&scratch).unwrap().join("a/b")
        );
        assert_eq!(s.host_path(Path::new("/etc/x")), Path::new("/etc/x"));
    }

    #[test]
    fn a_sysroot_answers_absolute_paths_read_only_and_never_leads_out() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("sysroot");
        std::fs::create_dir_all(root.join("lib")).unwrap();
        std::fs::write(root.join("lib/libc.so.6"), "libc").unwrap();
        std::fs::write(base.path().join("secret"), "secret").unwrap();
        std::os::unix::fs::symlink("libc.so.6", root.join("lib/libc.so")).unwrap();
        std::os::unix::fs::symlink(base.path().join("secret"), root.join("lib/abs")).unwrap();
        std::os::unix::fs::symlink("../../secret", root.join("lib/rel")).unwrap();
        let mut s = Sandbox::new();
        s.set_sysroot(&root).unwrap();
        let read = OpenFlags {
            read: true,
            ..OpenFlags::default()
        };
        let open = |s: &Sandbox, p: &str| {
            s.resolve(Path::new(p), false)
                .and_then(|r| r.open(read).map(drop))
        };
        assert!(open(&s, "/lib/libc.so.6").is_ok());
        assert!(open(&s, "/lib/libc.so").is_ok()); // a relative symlink inside it
        assert_eq!(open(&s, "/lib/abs").err(), Some(EACCES)); // absolute: out of it
        assert_eq!(open(&s, "/lib/rel").err(), Some(EACCES));
        assert_eq!(open(&s, "/../secret").err(), Some(EACCES));
        assert_eq!(open(&s, "/lib/missing").err(), Some(ENOENT));
        // never written through
        assert_eq!(s.resolve(Path::new("/lib/new"), true).err(), Some(EACCES));
        let (bytes, host) = s.read_file(Path::new("/lib/libc.so.6"), 100).unwrap();
        assert_eq!(
            (bytes.as_slice(), host),
            (
                &b"libc"[..],
                std::fs::canonicalize(&root).unwrap().join("lib/libc.so.6")
            )
        );
        assert!(s.read_file(Path::new("/lib/libc.so.6"), 2).is_err()); // bounded
                                                                       // a grant of its own wins over the sysroot for the paths under it
        s.allow_read(base.path()).unwrap();
        assert!(open(&s, base.path().join("secret").to_str().unwrap()).is_ok());
    }
}
