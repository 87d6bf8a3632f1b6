//! A packet capture at the client's end of the path: an `AF_PACKET` socket
//! in the client namespace that sees every IPv4 packet the client's
//! interface receives, stamped by the kernel as it arrives (before TCP or
//! QUIC looked at it), on the same clock as the application's reads
//! (`CLOCK_REALTIME`). The path hands the client coalesced packets, as a
//! NIC's receive offload does (`linkem::model::gro_segment`); the capture
//! cuts each back into the packets that crossed the link.

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use linkem::model::{gro_segment, VNET_HEADER_LEN};

use super::packets::Captured;
use super::timeline::Nanos;

/// Largest read: a virtio-net header and a coalesced packet of up to 64 KB.
const SNAP_LEN: usize = VNET_HEADER_LEN + 65_535;
/// Kernel buffer for packets not yet read, so a busy moment loses none.
const RECEIVE_BUFFER: libc::c_int = 16 << 20;
/// How long a read waits before the thread checks whether to stop.
const POLL_MS: libc::c_int = 50;

/// A running capture; [`Capture::finish`] stops it and hands back what it
/// saw.
pub struct Capture {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<io::Result<Vec<Captured>>>,
    socket: Arc<OwnedFd>,
}

impl Capture {
    /// Opens the socket in the calling thread's network namespace and
    /// starts reading on a thread of its own.
    pub fn start() -> io::Result<Capture> {
        let socket = Arc::new(open_socket()?);
        let stop = Arc::new(AtomicBool::new(false));
        let reader = (socket.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("hol-capture".into())
            .spawn(move || read_until_stopped(&reader.0, &reader.1))?;
        Ok(Capture {
            stop,
            thread,
            socket,
        })
    }

    /// Stops reading and returns every packet, in arrival order. Fails if
    /// the kernel dropped any: a capture with holes would turn into
    /// made-up arrival times.
    pub fn finish(self) -> anyhow::Result<Vec<Captured>> {
        self.stop.store(true, Ordering::Relaxed);
        let packets = self
            .thread
            .join()
            .map_err(|_| anyhow::anyhow!("the capture thread panicked"))??;
        let dropped = dropped_packets(&self.socket)?;
        anyhow::ensure!(
            dropped == 0,
            "the capture lost {dropped} packet(s) (the machine was too busy); run again"
        );
        Ok(packets)
    }
}

fn open_socket() -> io::Result<OwnedFd> {
    let protocol = (libc::ETH_P_IP as u16).to_be() as libc::c_int;
    // SAFETY: plain socket(2) call; the descriptor is owned below.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, protocol) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor that nothing else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    set_option(&socket, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
    set_option(
        &socket,
        libc::SOL_SOCKET,
        libc::SO_RCVBUFFORCE,
        RECEIVE_BUFFER,
    )?;
    // The segment size of a coalesced packet comes in this header.
    set_option(&socket, libc::SOL_PACKET, libc::PACKET_VNET_HDR, 1)?;
    Ok(socket)
}

fn set_option(
    socket: &OwnedFd,
    level: libc::c_int,
    option: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: a valid descriptor and a c_int option value of the right size.
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            option,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn read_until_stopped(socket: &OwnedFd, stop: &AtomicBool) -> io::Result<Vec<Captured>> {
    let mut packets = Vec::new();
    let mut buffer = vec![0u8; SNAP_LEN];
    loop {
        let mut poll = libc::pollfd {
            fd: socket.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut poll, 1, POLL_MS) };
        if ready < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if ready == 0 {
            if stop.load(Ordering::Relaxed) {
                return Ok(packets);
            }
            continue;
        }
        receive(socket, &mut buffer, &mut packets)?;
    }
}

/// Appends the packets of one read to `packets`, each with the read's
/// kernel receive time.
fn receive(socket: &OwnedFd, buffer: &mut [u8], packets: &mut Vec<Captured>) -> io::Result<()> {
    let mut control = [0u64; 16];
    let mut iov = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: buffer.len(),
    };
    // SAFETY: an all-zero msghdr is valid; its pointers are set below.
    let mut message: libc::msghdr = unsafe { zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = size_of::<[u64; 16]>();
    // SAFETY: the message points at live buffers of the sizes given.
    let len = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut message, 0) };
    if len < 0 {
        return Err(io::Error::last_os_error());
    }
    let at = timestamp(&message)
        .ok_or_else(|| io::Error::other("a captured packet came without its kernel timestamp"))?;
    let pieces = gro_segment(&buffer[..len as usize])
        .ok_or_else(|| io::Error::other("a captured packet came without its virtio-net header"))?;
    packets.extend(pieces.into_iter().map(|bytes| Captured { at, bytes }));
    Ok(())
}

/// The SCM_TIMESTAMPNS time of a received message, in nanoseconds.
fn timestamp(message: &libc::msghdr) -> Option<Nanos> {
    // SAFETY: the control buffer was filled by recvmsg; the CMSG macros
    // walk it within msg_controllen.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET
                && (*header).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let time: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast());
                return Some(time.tv_sec as Nanos * 1_000_000_000 + time.tv_nsec as Nanos);
            }
            header = libc::CMSG_NXTHDR(message, header);
        }
    }
    None
}

fn dropped_packets(socket: &OwnedFd) -> anyhow::Result<u32> {
    // SAFETY: an all-zero tpacket_stats is valid.
    let mut stats: libc::tpacket_stats = unsafe { zeroed() };
    let mut len = size_of::<libc::tpacket_stats>() as libc::socklen_t;
    // SAFETY: a valid descriptor and an out-buffer of the stated size.
    let result = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&mut stats as *mut libc::tpacket_stats).cast(),
            &mut len,
        )
    };
    anyhow::ensure!(
        result == 0,
        "cannot read the capture's statistics: {}",
        io::Error::last_os_error()
    );
    Ok(stats.tp_drops)
}

/// Now on the capture's clock.
pub fn now() -> Nanos {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as Nanos)
}
