//! A TUN device from /dev/net/tun: IP packets behind a virtio-net header
//! (`IFF_VNET_HDR`), no packet-info header. No offloads are turned on, so
//! each read is one real packet of at most the MTU with a header of
//! zeros; a write may carry a GSO packet (see `model::gro`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `_IOW('T', 202, int)` from linux/if_tun.h.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
/// From linux/if_tun.h; the libc crate does not have it.
const IFF_VNET_HDR: libc::c_int = 0x4000;

/// The `ifreq` that TUNSETIFF takes.
#[repr(C)]
pub struct InterfaceRequest {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

impl InterfaceRequest {
    /// A request for TUN device `name`: IP packets behind a virtio-net
    /// header, no packet info.
    pub fn tun(name: &str) -> io::Result<InterfaceRequest> {
        if name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "interface name too long",
            ));
        }
        let mut request = InterfaceRequest {
            name: [0; libc::IFNAMSIZ],
            flags: (libc::IFF_TUN | libc::IFF_NO_PI | IFF_VNET_HDR) as libc::c_short,
            _pad: [0; 22],
        };
        request.name[..name.len()].copy_from_slice(name.as_bytes());
        Ok(request)
    }
}

/// Creates TUN device `name` in the calling thread's network namespace and
/// returns its non-blocking file descriptor; the device lives as long as it.
pub fn open(name: &str) -> io::Result<OwnedFd> {
    open_raw(&InterfaceRequest::tun(name)?)
}

/// [`open`] with a prepared request, in plain system calls (no allocation),
/// so a forked child may call it.
pub fn open_raw(request: &InterfaceRequest) -> io::Result<OwnedFd> {
    // SAFETY: a NUL-terminated path; the result is checked.
    let fd = unsafe {
        libc::open(
            c"/dev/net/tun".as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let file = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: TUNSETIFF reads an `ifreq`-sized struct valid for the call.
    if unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, request) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// Reads one packet with its virtio-net header; `Ok(None)` when none is
/// waiting.
pub fn read_packet(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: the buffer is valid for `buf.len()` bytes.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let err = io::Error::last_os_error();
    match err.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
        _ => Err(err),
    }
}

/// Writes one packet, behind its virtio-net header, into the device's
/// namespace.
pub fn write_packet(fd: &OwnedFd, packet: &[u8]) -> io::Result<()> {
    // SAFETY: the slice is valid for its length.
    let n = unsafe { libc::write(fd.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
