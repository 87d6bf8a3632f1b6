//! The event loop's UDP socket: batched receives (`recvmmsg`, with GRO)
//! and segmented sends (GSO) through quinn-udp, as quinn's own endpoint
//! does them, and a wait for readiness or a deadline to the microsecond.

use std::io::{self, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::Duration;

use bytes::BytesMut;
use quinn_proto::{EcnCodepoint, Transmit};
use quinn_udp::{RecvMeta, UdpSocketState, BATCH_SIZE};

/// The largest message one receive returns on Linux (GRO stops a UDP train
/// before 64 KiB): vendor/README.md, "a 2 MiB receive buffer".
const MAX_RECEIVED_MESSAGE: usize = 64 * 1024;

/// Datagrams per GSO send, as the vendored quinn sends them (40 of 1452
/// bytes stay under the 64 KB one send may carry).
pub(crate) const MAX_TRANSMIT_SEGMENTS: usize = 40;

/// One received datagram (or a GRO train's worth of them, `stride` apart).
pub(crate) struct Received {
    pub(crate) from: SocketAddr,
    pub(crate) local_ip: Option<IpAddr>,
    pub(crate) ecn: Option<EcnCodepoint>,
    pub(crate) data: BytesMut,
    pub(crate) stride: usize,
}

pub(crate) struct Socket {
    io: std::net::UdpSocket,
    state: UdpSocketState,
    buffer: Vec<u8>,
    metas: [RecvMeta; BATCH_SIZE],
}

impl Socket {
    /// A socket for talking to `remote`, with the buffers every h3lab QUIC
    /// client asks for (`h3lab_client::udp_socket`).
    pub(crate) fn bind(remote: SocketAddr) -> io::Result<Socket> {
        let local: SocketAddr = match remote {
            SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
            SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let io = h3lab_client::udp_socket(local)?;
        io.set_nonblocking(true)?;
        let state = UdpSocketState::new((&io).into())?;
        let mut buffer = vec![0; MAX_RECEIVED_MESSAGE * BATCH_SIZE];
        // Touched now, not during the run: a first touch costs a page fault
        // (a page zeroed) mid-measurement.
        buffer.iter_mut().step_by(4096).for_each(|byte| *byte = 1);
        Ok(Socket {
            io,
            state,
            buffer,
            metas: [RecvMeta::default(); BATCH_SIZE],
        })
    }

    /// Datagrams per send this socket may carry.
    pub(crate) fn max_segments(&self) -> usize {
        self.state.max_gso_segments().min(MAX_TRANSMIT_SEGMENTS)
    }

    /// One batch of received messages into `out`; how many (0 when none
    /// waited: fewer than [`BATCH_SIZE`] means the socket had no more).
    pub(crate) fn receive(&mut self, out: &mut Vec<Received>) -> io::Result<usize> {
        let mut chunks = self.buffer.chunks_mut(MAX_RECEIVED_MESSAGE);
        let mut slices: [IoSliceMut<'_>; BATCH_SIZE] = std::array::from_fn(|_| {
            IoSliceMut::new(chunks.next().expect("a chunk per message of the batch"))
        });
        let count = match self
            .state
            .recv((&self.io).into(), &mut slices, &mut self.metas)
        {
            Ok(count) => count,
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(err) => return Err(err),
        };
        for (meta, slice) in self.metas.iter().zip(&slices).take(count) {
            out.push(Received {
                from: meta.addr,
                local_ip: meta.dst_ip,
                ecn: meta.ecn.and_then(|ecn| EcnCodepoint::from_bits(ecn as u8)),
                data: BytesMut::from(&slice[..meta.len]),
                stride: meta.stride,
            });
        }
        Ok(count)
    }

    /// Sends `contents` as `transmit` describes; false when the socket's
    /// buffer is full and nothing was sent.
    pub(crate) fn send(&self, transmit: &Transmit, contents: &[u8]) -> io::Result<bool> {
        let udp = quinn_udp::Transmit {
            destination: transmit.destination,
            ecn: transmit
                .ecn
                .and_then(|ecn| quinn_udp::EcnCodepoint::from_bits(ecn as u8)),
            contents,
            segment_size: transmit.segment_size,
            src_ip: transmit.src_ip,
        };
        match self.state.send((&self.io).into(), &udp) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// Waits until the socket is readable (or writable, when `writable`),
    /// or `timeout` passes; returns whether it is readable, so that a turn
    /// whose wait only timed out makes no receive call. The thread's timer
    /// slack is 1 ns (`run_worker`), so the wait ends on time, not 50 µs
    /// later.
    pub(crate) fn wait(&self, timeout: Duration, writable: bool) -> io::Result<bool> {
        let events = if writable {
            libc::POLLIN | libc::POLLOUT
        } else {
            libc::POLLIN
        };
        let mut fds = [libc::pollfd {
            fd: self.io.as_raw_fd(),
            events,
            revents: 0,
        }];
        let timeout = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask.
        let status = unsafe { libc::ppoll(fds.as_mut_ptr(), 1, &timeout, std::ptr::null()) };
        if status < 0 {
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
        // An error waiting on the socket counts as readable: the receive
        // reports it, where a wait alone would return at once, again and
        // again.
        Ok(fds[0].revents & (libc::POLLIN | libc::POLLERR) != 0)
    }
}
