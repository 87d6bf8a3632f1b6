//! The event loop's UDP socket: batched receives (`recvmmsg`, with GRO)
//! and segmented sends (GSO) through quinn-udp, as quinn's own endpoint
//! does them, and a wait for readiness or a deadline to the microsecond.

use std::collections::VecDeque;
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

/// Bytes of each receive buffer: room for a few of the largest messages, so
/// that a buffer is set aside once per several messages, not per message.
const BUFFER_BYTES: usize = 2 * MAX_RECEIVED_MESSAGE;

/// Buffers set aside at most, waiting for their messages to be dropped
/// (16 MiB); past that the oldest is let go, to be freed by its last message.
const MAX_SET_ASIDE: usize = 128;

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
    /// One buffer per message of a batch. A message is split off the front
    /// of its buffer and handed on as it is, so that quinn-proto decrypts
    /// it where the kernel wrote it: no copy.
    buffers: Vec<BytesMut>,
    /// Buffers too short for another message, set aside until the messages
    /// split off them are dropped (quinn-proto holds a datagram's stream
    /// data until it is read); then each is taken back whole. A datagram
    /// still held keeps its whole buffer: the engine reads each response as
    /// it comes, so that is until the turn's reads, or for data past a gap
    /// until the gap is filled.
    set_aside: VecDeque<BytesMut>,
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
        Ok(Socket {
            io,
            state,
            buffers: (0..BATCH_SIZE).map(|_| new_buffer()).collect(),
            set_aside: VecDeque::new(),
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
        self.refill();
        let mut buffers = self.buffers.iter_mut();
        let mut slices: [IoSliceMut<'_>; BATCH_SIZE] = std::array::from_fn(|_| {
            let buffer = buffers.next().expect("a buffer per message of the batch");
            IoSliceMut::new(&mut buffer[..MAX_RECEIVED_MESSAGE])
        });
        let count = match self
            .state
            .recv((&self.io).into(), &mut slices, &mut self.metas)
        {
            Ok(count) => count,
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(err) => return Err(err),
        };
        for (meta, buffer) in self.metas.iter().zip(&mut self.buffers).take(count) {
            out.push(Received {
                from: meta.addr,
                local_ip: meta.dst_ip,
                ecn: meta.ecn.and_then(|ecn| EcnCodepoint::from_bits(ecn as u8)),
                data: buffer.split_to(meta.len),
                stride: meta.stride,
            });
        }
        Ok(count)
    }

    /// Gives every buffer room for the largest message: one too short is
    /// set aside for a reclaimed or a new one.
    fn refill(&mut self) {
        for index in 0..self.buffers.len() {
            if self.buffers[index].len() >= MAX_RECEIVED_MESSAGE {
                continue;
            }
            let fresh = reclaim(&mut self.set_aside).unwrap_or_else(new_buffer);
            let spent = std::mem::replace(&mut self.buffers[index], fresh);
            if self.set_aside.len() == MAX_SET_ASIDE {
                self.set_aside.pop_front();
            }
            self.set_aside.push_back(spent);
        }
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

/// A receive buffer of [`BUFFER_BYTES`] initialised bytes, each of its
/// pages touched at once: the buffers made with the socket are faulted in
/// before the run, not by its first receives (a first touch costs a page
/// fault, a page zeroed).
fn new_buffer() -> BytesMut {
    let mut buffer = BytesMut::zeroed(BUFFER_BYTES);
    buffer.iter_mut().step_by(4096).for_each(|byte| *byte = 1);
    buffer
}

/// The first set-aside buffer whose messages are all dropped, taken back
/// whole: the same allocation, so no zeroing and no page faults.
fn reclaim(set_aside: &mut VecDeque<BytesMut>) -> Option<BytesMut> {
    let index = set_aside.iter_mut().position(|buffer| {
        buffer.clear();
        buffer.try_reclaim(BUFFER_BYTES)
    })?;
    let mut buffer = set_aside.remove(index)?;
    assert!(buffer.capacity() >= BUFFER_BYTES);
    // SAFETY: `try_reclaim` gave back the buffer's own allocation without
    // allocating, from its start (no other handle to it is left), and its
    // capacity is at least BUFFER_BYTES (checked above). Those bytes were
    // initialised when `new_buffer` made it (zeroed) and have only been
    // written since: the kernel's receives and quinn-proto's in-place
    // decryption.
    unsafe { buffer.set_len(BUFFER_BYTES) };
    Some(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A peer on loopback and our socket, with the address it sends to.
    fn pair() -> (std::net::UdpSocket, Socket, SocketAddr) {
        let peer = std::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let socket = Socket::bind(peer.local_addr().unwrap()).unwrap();
        let port = socket.io.local_addr().unwrap().port();
        (peer, socket, (Ipv4Addr::LOCALHOST, port).into())
    }

    fn payload(round: usize) -> Vec<u8> {
        (0..1200).map(|i| (i + round) as u8).collect()
    }

    /// Sends one datagram and receives it as one message.
    fn round_trip(
        peer: &std::net::UdpSocket,
        socket: &mut Socket,
        to: SocketAddr,
        round: usize,
    ) -> Received {
        peer.send_to(&payload(round), to).unwrap();
        assert!(
            socket.wait(Duration::from_secs(5), false).unwrap(),
            "round {round}: nothing came"
        );
        let mut out = Vec::new();
        assert_eq!(socket.receive(&mut out).unwrap(), 1);
        out.pop().unwrap()
    }

    /// Messages dropped as they are read (as the engine does) leave their
    /// buffers to be taken back: none piles up, whatever the rounds.
    #[test]
    fn buffers_come_back_once_their_messages_are_dropped() {
        let (peer, mut socket, to) = pair();
        for round in 0..1000 {
            let message = round_trip(&peer, &mut socket, to, round);
            assert_eq!(&message.data[..], &payload(round)[..], "round {round}");
        }
        // 1000 messages of 1200 B fill 18 buffers' spare 64 KiB.
        assert!(
            socket.set_aside.len() <= 1,
            "{} set aside",
            socket.set_aside.len()
        );
    }

    /// A message still held keeps its bytes while later ones are received:
    /// its buffer is set aside, not written again.
    #[test]
    fn a_held_message_is_never_written_over() {
        let (peer, mut socket, to) = pair();
        let held: Vec<Received> = (0..1000)
            .map(|round| round_trip(&peer, &mut socket, to, round))
            .collect();
        for (round, message) in held.iter().enumerate() {
            assert_eq!(&message.data[..], &payload(round)[..], "round {round}");
        }
        assert!(
            socket.set_aside.len() >= 15,
            "{} set aside",
            socket.set_aside.len()
        );
    }
}
