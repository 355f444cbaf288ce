//! Socket options (docs/machine.md, "Processes"): `getsockopt` answers what the machine's
//! sockets are (type, family, protocol, buffer sizes, listening, the peer's credentials);
//! `setsockopt` accepts the options Linux has and changes nothing (timeouts, buffer sizes
//! and `SO_REUSEADDR` mean nothing on the machine's loopback). Both check their arguments as
//! Linux does: the level, the option's name, the length, then the buffer.

use super::net::{AF_INET, AF_UNIX, ENOTSOCK};
use super::{Fd, Kernel, EFAULT, EINVAL};
use crate::memory::Memory;

const SOL_SOCKET: i32 = 1;
const SOL_IP: i32 = 0;
const SOL_TCP: i32 = 6;
const SOL_UDP: i32 = 17;
const ENOPROTOOPT: i64 = 92;
const EOPNOTSUPP: i64 = 95;
const SO_TYPE: i32 = 3;
const SO_SNDBUF: i32 = 7;
const SO_RCVBUF: i32 = 8;
const SO_LINGER: i32 = 13;
const SO_PEERCRED: i32 = 17;
const SO_RCVLOWAT: i32 = 18;
const SO_RCVTIMEO: i32 = 20;
const SO_SNDTIMEO: i32 = 21;
const SO_ACCEPTCONN: i32 = 30;
const SO_PROTOCOL: i32 = 38;
const SO_DOMAIN: i32 = 39;

/// The `SOL_SOCKET` options Linux has (`asm-generic/socket.h`), and the bytes each holds.
fn socket_option(name: i32) -> Option<usize> {
    Some(match name {
        SO_LINGER => 8,
        SO_PEERCRED => 12,
        SO_RCVTIMEO | SO_SNDTIMEO | 66 | 67 => 16,
        1..=12 | 14..=16 | 18 | 19 | 25..=27 | 29..=36 | 38..=50 | 52..=54 | 58..=65 => 4,
        _ => return None,
    })
}

/// What a socket descriptor is: (family, stream, listening, the peer's pid).
struct Kind {
    family: u16,
    stream: bool,
    listening: bool,
    peer_pid: u32,
}

impl Kernel {
    fn sock_kind(&mut self, fd: u64) -> Result<Kind, i64> {
        match self.fd(fd)? {
            Fd::Net(s) => {
                let (family, stream, listening) = s.kind();
                Ok(Kind {
                    family,
                    stream,
                    listening,
                    peer_pid: 0,
                })
            }
            Fd::Socket(s) => Ok(Kind {
                family: match s.names.as_ref().map(|n| &n.0) {
                    Some(super::net::Addr::Inet(..)) => AF_INET,
                    _ => AF_UNIX,
                },
                stream: true,
                listening: false,
                peer_pid: s.peer_pid,
            }),
            _ => Err(ENOTSOCK),
        }
    }

    /// Whether `k`'s protocol has options at `level` (`Err(unknown)` if not; a Unix
    /// socket has only `SOL_SOCKET`'s: `EOPNOTSUPP`).
    fn check_level(k: &Kind, level: i32, unknown: i64) -> Result<(), i64> {
        match level {
            SOL_SOCKET => Ok(()),
            _ if k.family != AF_INET => Err(EOPNOTSUPP),
            SOL_TCP if k.stream => Ok(()),
            SOL_UDP if !k.stream => Ok(()),
            SOL_IP => Ok(()),
            _ => Err(unknown),
        }
    }

    /// Whether option `name` exists at `level` (checked by [`Kernel::check_level`]).
    fn check_name(level: i32, name: i32) -> Result<(), i64> {
        let known = match level {
            SOL_SOCKET => socket_option(name).is_some(),
            SOL_TCP => (1..=37).contains(&name),
            SOL_UDP => matches!(name, 1 | 100..=103),
            _ => (1..=50).contains(&name),
        };
        if known {
            Ok(())
        } else {
            Err(ENOPROTOOPT)
        }
    }

    /// `getsockopt(fd, level, name, value, len)`.
    pub(super) fn sys_getsockopt(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        self.getsockopt(mem, a).unwrap_or_else(|e| -e)
    }

    fn getsockopt(&mut self, mem: &mut Memory, a: [u64; 6]) -> Result<i64, i64> {
        let k = self.sock_kind(a[0])?;
        let (level, name) = (a[1] as i32, a[2] as i32);
        let len = mem.load_u32(a[4]).map_err(|_| EFAULT)? as i32;
        if len < 0 {
            return Err(EINVAL);
        }
        // another protocol's level is EOPNOTSUPP here (ip_getsockopt), ENOPROTOOPT in set
        Self::check_level(&k, level, EOPNOTSUPP)?;
        Self::check_name(level, name)?;
        let mut v = [0u8; 16];
        let size = match (level, name) {
            (SOL_SOCKET, SO_PEERCRED) => {
                // struct ucred: the peer's pid; uid and gid 0, the machine's only user
                v[..4].copy_from_slice(&k.peer_pid.to_le_bytes());
                12
            }
            (SOL_SOCKET, n) => {
                let int = match n {
                    SO_TYPE => 1 + u32::from(!k.stream),
                    SO_SNDBUF | SO_RCVBUF => super::net::RCVBUF as u32,
                    SO_ACCEPTCONN => u32::from(k.listening),
                    SO_DOMAIN => u32::from(k.family),
                    SO_PROTOCOL if k.family == AF_INET => {
                        if k.stream {
                            6
                        } else {
                            17
                        }
                    }
                    SO_RCVLOWAT => 1,
                    _ => 0, // SO_ERROR: none pending; flags off
                };
                v[..4].copy_from_slice(&int.to_le_bytes());
                socket_option(n).unwrap_or(4)
            }
            _ => 4,
        };
        let n = (len as usize).min(size);
        mem.write_bytes(a[3], &v[..n]).map_err(|_| EFAULT)?;
        mem.store_u32(a[4], n as u32).map_err(|_| EFAULT)?;
        Ok(0)
    }

    /// `setsockopt(fd, level, name, value, len)`: checked, then without effect.
    pub(super) fn sys_setsockopt(&mut self, mem: &mut Memory, a: [u64; 6]) -> i64 {
        let r = self.sock_kind(a[0]).and_then(|k| {
            let (level, name, len) = (a[1] as i32, a[2] as i32, a[4] as u32 as i32);
            // as Linux: the level, the length, the value, then the option
            Self::check_level(&k, level, ENOPROTOOPT)?;
            if len < 4 {
                return Err(EINVAL);
            }
            let mut b = [0u8; 4];
            mem.read_bytes(a[3], &mut b).map_err(|_| EFAULT)?;
            Self::check_name(level, name)?;
            let need = if level == SOL_SOCKET {
                socket_option(name).unwrap_or(4)
            } else {
                4
            };
            if (len as usize) < need {
                return Err(EINVAL);
            }
            Ok(0)
        });
        r.unwrap_or_else(|e| -e)
    }
}

/// The machine's one network interface, as `SIOCGIFCONF` lists it: `lo`, 127.0.0.1.
const LOOPBACK: &[u8] = b"lo";
const IFREQ: u64 = 40;

impl Kernel {
    /// The socket `ioctl`s (`None`: not a socket, or not one of them): `SIOCATMARK` (no
    /// urgent data on a stream; `ENOTTY` on a datagram socket), and the interface queries a
    /// program sizes its network with, answered for the machine's loopback only
    /// (`SIOCGIFCONF`, `SIOCGIFFLAGS`, `SIOCGIFINDEX`, `SIOCGIFNAME`); setting an interface's
    /// flags is `EPERM`.
    pub(super) fn socket_ioctl(
        &mut self,
        mem: &mut Memory,
        fd: u64,
        req: u64,
        arg: u64,
    ) -> Option<i64> {
        const SIOCATMARK: u64 = 0x8905;
        const SIOCGIFNAME: u64 = 0x8910;
        const SIOCGIFCONF: u64 = 0x8912;
        const SIOCGIFFLAGS: u64 = 0x8913;
        const SIOCSIFFLAGS: u64 = 0x8914;
        const SIOCGIFINDEX: u64 = 0x8933;
        const ENODEV: i64 = 19;
        const EPERM: i64 = 1;
        // IFF_UP | IFF_LOOPBACK | IFF_RUNNING
        const LO_FLAGS: u16 = 0x49;
        let stream = match self.fds.get(fd as usize) {
            Some(Some(Fd::Socket(_))) => true,
            Some(Some(Fd::Net(n))) => n.kind().1,
            _ => return None,
        };
        let fault = |r: Result<(), crate::memory::AccessError>| r.map_or(-EFAULT, |()| 0);
        // the interface a `struct ifreq` names (its first 16 bytes)
        let named = |mem: &mut Memory| -> Result<bool, i64> {
            let mut name = [0u8; 16];
            mem.read_bytes(arg, &mut name).map_err(|_| EFAULT)?;
            let len = name.iter().position(|&b| b == 0).unwrap_or(16);
            Ok(&name[..len] == LOOPBACK)
        };
        Some(match req {
            SIOCATMARK if !stream => -super::ENOTTY,
            SIOCATMARK => fault(mem.store_u32(arg, 0)),
            SIOCGIFCONF => {
                // struct ifconf { int ifc_len; char *ifc_buf; }
                let (Ok(len), Ok(buf)) = (mem.load_u32(arg), mem.load_u64(arg.wrapping_add(8)))
                else {
                    return Some(-EFAULT);
                };
                let fits = buf != 0 && (len as i32) >= IFREQ as i32;
                if fits {
                    let mut r = [0u8; IFREQ as usize];
                    r[..2].copy_from_slice(LOOPBACK);
                    r[16..18].copy_from_slice(&super::net::AF_INET.to_le_bytes());
                    r[20..24].copy_from_slice(&[127, 0, 0, 1]);
                    if mem.write_bytes(buf, &r).is_err() {
                        return Some(-EFAULT);
                    }
                }
                // a null buffer asks for the length the list needs
                let wrote = if fits || buf == 0 { IFREQ as u32 } else { 0 };
                fault(mem.store_u32(arg, wrote))
            }
            SIOCGIFFLAGS | SIOCGIFINDEX => match named(mem) {
                Err(e) => -e,
                Ok(false) => -ENODEV,
                Ok(true) if req == SIOCGIFFLAGS => fault(mem.store_u16(arg + 16, LO_FLAGS)),
                Ok(true) => fault(mem.store_u32(arg + 16, 1)),
            },
            SIOCGIFNAME => match mem.load_u32(arg.wrapping_add(16)) {
                Err(_) => -EFAULT,
                Ok(1) => {
                    let mut name = [0u8; 16];
                    name[..2].copy_from_slice(LOOPBACK);
                    fault(mem.write_bytes(arg, &name))
                }
                Ok(_) => -ENODEV,
            },
            SIOCSIFFLAGS => match named(mem) {
                Err(e) => -e,
                Ok(false) => -ENODEV,
                Ok(true) => -EPERM,
            },
            _ => return None,
        })
    }
}
