//! A TUN device: an IP interface whose packets a process reads and writes through a file
//! descriptor. Made inside a namespace (the device belongs to the namespace of the thread
//! that asks for it), without packet information headers, non-blocking; it lives as long as
//! the descriptor is open.

use std::fs::OpenOptions;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;

use crate::LabError;

/// `_IOW('T', 202, int)`: make (or attach to) a TUN device.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// `struct ifreq` as TUNSETIFF reads it: the name, then the flags (the rest of the union
/// unused).
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _rest: [u8; 22],
}

/// Makes the TUN device `name` in the calling thread's network namespace; its descriptor.
pub fn create(name: &str) -> Result<OwnedFd, LabError> {
    let failed = |e: std::io::Error| LabError::Tun(format!("{name}: {e}"));
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(LabError::Tun(format!("{name:?}: a device name has 1 to 15 bytes")));
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")
        .map_err(failed)?;
    let mut req = IfReq { name: [0; libc::IFNAMSIZ], flags: IFF_TUN | IFF_NO_PI, _rest: [0; 22] };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads and writes a `struct ifreq`, which `req` is laid out as and
    // outlives the call.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF, &mut req as *mut IfReq) };
    if rc < 0 {
        return Err(failed(std::io::Error::last_os_error()));
    }
    Ok(file.into())
}
