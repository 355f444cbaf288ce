//! `execve` (docs/machine.md, "Processes"): the program, `#!` interpreters and the dynamic
//! linker are found beneath the grants (the sysroot answers absolute paths, as for the first
//! program), read with a bound, and handed to the machine, which loads them into a new
//! address space ([`crate::machine`]); only then does the caller's process change
//! (close-on-exec descriptors, caught signals, other threads). A guest can run only what it
//! could read: exec grants nothing new.

use super::*;

/// Most bytes of arguments and environment `execve` takes (with their NULs); more is `E2BIG`.
pub const MAX_EXEC_ARGS_BYTES: usize = 1 << 20;
/// Most arguments plus environment strings `execve` takes.
const MAX_EXEC_STRINGS: usize = 1 << 16;
/// `#!` interpreters followed before `ELOOP` (Linux follows 4 too).
const MAX_SCRIPT_DEPTH: usize = 4;
/// Bytes of a `#!` line read (Linux's `BINPRM_BUF_SIZE`).
const SCRIPT_LINE: usize = 256;

const E2BIG: i64 = 7;
const ENOEXEC: i64 = 8;
const ELOOP: i64 = 40;
const ENOENT: i64 = 2;

/// What `execve` found: the program and its interpreter, read through the sandbox.
#[derive(PartialEq, Eq)]
pub struct ExecRequest {
    /// The path the guest gave (after `#!` interpreters, the interpreter's).
    pub path: PathBuf,
    /// The host file read for it.
    pub host_path: PathBuf,
    /// Its bytes.
    pub elf: Vec<u8>,
    /// Its `PT_INTERP` interpreter: guest path, host path, bytes.
    pub interp: Option<(PathBuf, PathBuf, Vec<u8>)>,
    /// `argv`.
    pub args: Vec<std::ffi::OsString>,
    /// `envp`.
    pub env: Vec<std::ffi::OsString>,
}

impl std::fmt::Debug for ExecRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecRequest")
            .field("path", &self.path)
            .field("host_path", &self.host_path)
            .field("bytes", &self.elf.len())
            .field("interp", &self.interp.as_ref().map(|i| &i.0))
            .field("args", &self.args)
            .finish_non_exhaustive()
    }
}

impl Kernel {
    /// `execve(path, argv, envp)`: finds the program (following `#!` lines) and its
    /// interpreter beneath the grants and hands them to the machine to load
    /// ([`SyscallOutcome::Exec`]). Nothing of the caller changes unless loading succeeds.
    pub(super) fn sys_execve(&mut self, mem: &mut Memory, a: [u64; 6]) -> Result<Ret, i64> {
        let [path, argv, envp, ..] = a;
        let path = self.guest_path(mem, AT_FDCWD, path)?;
        let mut budget = MAX_EXEC_ARGS_BYTES;
        let mut args = read_strings(mem, argv, &mut budget)?;
        let env = read_strings(mem, envp, &mut budget)?;
        let mut path = path;
        for _ in 0..=MAX_SCRIPT_DEPTH {
            let (host, bytes) = self.read_executable(&path)?;
            if let Some(line) = bytes.strip_prefix(b"#!") {
                let line = &line[..line.len().min(SCRIPT_LINE - 2)];
                let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
                let text: Vec<&[u8]> = line
                    .trim_ascii()
                    .splitn(2, |b| *b == b' ' || *b == b'\t')
                    .map(<[u8]>::trim_ascii)
                    .filter(|s| !s.is_empty())
                    .collect();
                let Some(interp) = text.first() else {
                    return Err(ENOEXEC);
                };
                let interp = PathBuf::from(std::ffi::OsStr::from_bytes(interp));
                let mut new = vec![interp.clone().into_os_string()];
                if let Some(arg) = text.get(1) {
                    new.push(std::ffi::OsStr::from_bytes(arg).to_owned());
                }
                new.push(path.clone().into_os_string());
                new.extend(args.into_iter().skip(1));
                args = new;
                path = interp;
                continue;
            }
            if crate::elf::riscv_header(&bytes, "the program").is_err() {
                return Err(ENOEXEC);
            }
            let interp = match crate::elf::interpreter(&bytes).map_err(|_| ENOEXEC)? {
                Some(i) => {
                    let i = PathBuf::from(i);
                    let (h, b) = self.read_executable(&i).inspect_err(|&e| {
                        if e == ENOENT {
                            self.warn_once(
                                0x5_0000_0000,
                                &format!(
                                    "execve of {}: its interpreter {} is not beneath the \
                                     sysroot or a grant (give --sysroot); returning ENOENT",
                                    path.display(),
                                    i.display()
                                ),
                            );
                        }
                    })?;
                    Some((i, h, b))
                }
                None => None,
            };
            return Ok(Ret::Exec(Box::new(ExecRequest {
                path,
                host_path: host,
                elf: bytes,
                interp,
                args,
                env,
            })));
        }
        Err(ELOOP)
    }

    /// Reads the executable at guest path `path` through the sandbox, bounded by the memory
    /// limit: (host path, bytes).
    fn read_executable(&mut self, path: &std::path::Path) -> Result<(PathBuf, Vec<u8>), i64> {
        use std::os::unix::fs::PermissionsExt;
        let limit = self.memory_limit;
        let (host, file) = if self.is_own_exe(path) {
            // the program this process runs (it was read through the grants to start it)
            let host = self.exe_path.clone();
            let file = std::fs::File::open(&host).map_err(|e| errno(&e))?;
            (host, file)
        } else {
            let r = self.resolve_at(AT_FDCWD, path, false)?;
            let host = r.host_path();
            let file = r.open(OpenFlags {
                read: true,
                ..OpenFlags::default()
            })?;
            (host, file)
        };
        let meta = file.metadata().map_err(|e| errno(&e))?;
        if meta.is_dir() {
            return Err(EACCES);
        }
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(EACCES);
        }
        if meta.len() > limit {
            return Err(ENOMEM);
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        (&file)
            .take(limit)
            .read_to_end(&mut bytes)
            .map_err(|e| errno(&e))?;
        Ok((host, bytes))
    }

    /// Whether `path` names the running process's program: `/proc/self/exe` or
    /// `/proc/PID/exe` with its own pid (how a program runs itself again: busybox's applets).
    pub(super) fn is_own_exe(&self, path: &std::path::Path) -> bool {
        let own = format!("/proc/{}/exe", self.threads.pid);
        path == std::path::Path::new("/proc/self/exe") || path == std::path::Path::new(&own)
    }

    /// After the machine loaded an `execve`'s program: descriptors marked close-on-exec
    /// close, caught signals go back to their default, the other threads end, the memory's
    /// records start anew, and a `vfork` parent goes on.
    pub(crate) fn commit_exec(
        &mut self,
        path: PathBuf,
        brk_start: u64,
        objects: Vec<MappedObject>,
    ) {
        for fd in std::mem::take(&mut self.cloexec) {
            self.sys_close(fd as u64);
        }
        for a in self.actions.iter_mut() {
            if a.handler != 1 {
                *a = SigAction::default();
            }
        }
        self.signals.timers.clear();
        self.brk_start = brk_start;
        self.brk = brk_start;
        self.mmap_next = MMAP_BASE;
        self.objects = objects;
        self.shared = mapping::SharedRanges::default();
        self.file_maps = mapping::SharedRanges::default();
        self.sources = mapping::Sources::default();
        let cur = self.threads.current;
        for (i, t) in self.threads.list.iter_mut().enumerate() {
            if i != cur {
                t.wait = Wait::Exited;
            }
        }
        let name = path
            .file_name()
            .map(|n| n.as_bytes().to_vec())
            .unwrap_or_default();
        let t = self.threads.cur_mut();
        t.altstack = Default::default();
        t.clear_tid = 0;
        t.robust_list = 0;
        t.name = [0; 16];
        let n = name.len().min(15);
        t.name[..n].copy_from_slice(&name[..n]);
        self.exe_path = path;
        let pid = self.threads.pid;
        if let Some(p) = self.procs.get_mut(pid) {
            p.vfork_pending = false;
            p.execs += 1;
        }
        let program = self.exe_path.display().to_string();
        if let Some(s) = self.procs.stat_mut(pid) {
            s.program = program;
            s.execs += 1;
        }
        self.io_changed();
    }
}

/// Reads a NULL-terminated array of C strings at `at` (0: none), charging each to `budget`.
fn read_strings(
    mem: &mut Memory,
    at: u64,
    budget: &mut usize,
) -> Result<Vec<std::ffi::OsString>, i64> {
    let mut out = Vec::new();
    if at == 0 {
        return Ok(out);
    }
    for i in 0..=MAX_EXEC_STRINGS as u64 {
        if i == MAX_EXEC_STRINGS as u64 {
            return Err(E2BIG);
        }
        let p = mem.load_u64(at.wrapping_add(8 * i)).map_err(|_| EFAULT)?;
        if p == 0 {
            break;
        }
        let s = mem
            .read_cstr(p, (*budget).min(PATH_MAX * 32))
            .map_err(|_| EFAULT)?;
        if s.len() + 1 > *budget || s.len() >= PATH_MAX * 32 {
            return Err(E2BIG);
        }
        *budget -= s.len() + 1;
        out.push(std::ffi::OsStr::from_bytes(&s).to_owned());
    }
    Ok(out)
}
