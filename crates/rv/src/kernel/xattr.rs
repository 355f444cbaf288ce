//! Extended attributes (docs/machine.md, "Files"): `getxattr`, `setxattr`, `listxattr` and
//! `removexattr` with their `l` (no last symbolic link) and `f` (a descriptor) forms, on the
//! host file itself, reached through the grants as every file is. Reading gives what the host
//! file has; setting and removing need a read-write grant and reach only the `user.`
//! namespace (`EPERM` otherwise, as for an unprivileged Linux user): a guest never sets a
//! host file's `security.` or `trusted.` attributes. A symbolic link has no `user.`
//! attributes (Linux refuses them), so the `l` forms on one find none.

use super::*;

/// `XATTR_NAME_MAX` and `XATTR_SIZE_MAX`.
const NAME_MAX: usize = 255;
const SIZE_MAX: usize = 65_536;
const ERANGE: i64 = 34;
const ENODATA: i64 = 61;
const E2BIG: i64 = 7;

/// Which of the three forms a call is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Path,
    Link,
    Fd,
}

impl Kernel {
    /// The xattr calls (numbers 5–16: set, get, list, remove × path, link, fd).
    pub(super) fn xattr_call(&mut self, mem: &mut Memory, nr: u64, a: [u64; 6]) -> Option<i64> {
        if !(5..=16).contains(&nr) {
            return None;
        }
        let form = [Form::Path, Form::Link, Form::Fd][((nr - 5) % 3) as usize];
        let op = (nr - 5) / 3; // 0 set, 1 get, 2 list, 3 remove
        Some(self.xattr(mem, form, op, a).unwrap_or_else(|e| -e))
    }

    fn xattr(&mut self, mem: &mut Memory, form: Form, op: u64, a: [u64; 6]) -> Result<i64, i64> {
        // the name first (list has none), as Linux copies it before finding the file
        let name = if op == 2 {
            Vec::new()
        } else {
            let n = mem.read_cstr(a[1], NAME_MAX + 1).map_err(|_| EFAULT)?;
            if n.is_empty() || n.len() > NAME_MAX {
                return Err(ERANGE);
            }
            n
        };
        let write = op == 0 || op == 3;
        if write && !name.starts_with(b"user.") {
            return Err(EPERM);
        }
        let file = match form {
            Form::Fd => match self.fd(a[0])? {
                Fd::File(f) => f.try_clone().map_err(|e| errno(&e))?,
                _ => return Err(if write { EPERM } else { ENODATA }),
            },
            _ => {
                let p = self.guest_path(mem, AT_FDCWD, a[0])?;
                if p.as_os_str().is_empty() {
                    return Err(ENOENT);
                }
                let r = self.resolve_at(AT_FDCWD, &p, write)?;
                if form == Form::Link && r.metadata(true)?.file_type().is_symlink() {
                    return match op {
                        1 | 3 => Err(if write { EPERM } else { ENODATA }),
                        2 => Ok(0),
                        _ => Err(EPERM),
                    };
                }
                r.open(OpenFlags {
                    read: true,
                    nofollow: form == Form::Link,
                    ..OpenFlags::default()
                })?
            }
        };
        let os = |e: rustix::io::Errno| i64::from(e.raw_os_error());
        let name = std::ffi::OsStr::from_bytes(&name);
        let size = usize::try_from(a[if op == 2 { 2 } else { 3 }]).unwrap_or(usize::MAX);
        match op {
            0 => {
                if size > SIZE_MAX {
                    return Err(E2BIG);
                }
                let mut v = vec![0u8; size];
                mem.read_bytes(a[2], &mut v).map_err(|_| EFAULT)?;
                let flags = rustix::fs::XattrFlags::from_bits(a[4] as u32).ok_or(EINVAL)?;
                rustix::fs::fsetxattr(&file, name, &v, flags).map_err(os)?;
                Ok(0)
            }
            3 => rustix::fs::fremovexattr(&file, name)
                .map(|()| 0)
                .map_err(os),
            _ => {
                let mut v = vec![0u8; size.min(SIZE_MAX)];
                let n = match (op, size) {
                    (1, 0) => rustix::fs::fgetxattr_query(&file, name),
                    (1, _) => rustix::fs::fgetxattr(&file, name, &mut v[..]),
                    (_, 0) => rustix::fs::flistxattr_query(&file),
                    _ => rustix::fs::flistxattr(&file, &mut v[..]),
                }
                .map_err(os)?;
                if size > 0 {
                    let buf = if op == 2 { a[1] } else { a[2] };
                    mem.write_bytes(buf, &v[..n]).map_err(|_| EFAULT)?;
                }
                Ok(n as i64)
            }
        }
    }
}
