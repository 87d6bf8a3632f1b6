//! A QUIC client socket whose sends can be switched off: while muted, every
//! datagram the client would send is dropped, acknowledgements included.
//! A server that hears nothing back sends what its congestion window
//! allows and then waits, so what arrives before it falls silent is its
//! window, however late the client reads it (`probe offer`'s first flight).
//! Its [`Marks`] see every read, and may mute it or drop one datagram.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, UdpPoller};

use crate::marks::Marks;

/// A socket that passes everything to `inner`, except that it drops its
/// sends while muted, and shows every read to its [`Marks`].
pub(crate) struct MutedSocket {
    inner: Arc<dyn AsyncUdpSocket>,
    marks: Marks,
}

impl MutedSocket {
    pub(crate) fn new(inner: Arc<dyn AsyncUdpSocket>, marks: Marks) -> MutedSocket {
        MutedSocket { inner, marks }
    }
}

impl fmt::Debug for MutedSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MutedSocket")
            .field("muted", &self.marks.mute().is_set())
            .finish_non_exhaustive()
    }
}

impl AsyncUdpSocket for MutedSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.inner.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        match self.marks.mute().is_set() {
            // Sent as far as QUIC knows: lost on the way.
            true => Ok(()),
            false => self.inner.try_send(transmit),
        }
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [io::IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let poll = self.inner.poll_recv(cx, bufs, meta);
        if let Poll::Ready(Ok(reads)) = &poll {
            let now = Instant::now();
            for (read, buf) in meta[..*reads].iter_mut().zip(bufs.iter_mut()) {
                self.marks.observe(read, buf, now);
            }
        }
        poll
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.inner.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn::Runtime;

    /// What `receiver` got within a moment, if anything.
    fn received(receiver: &std::net::UdpSocket) -> Option<Vec<u8>> {
        let mut buf = [0u8; 64];
        receiver
            .set_read_timeout(Some(std::time::Duration::from_millis(200)))
            .unwrap();
        receiver.recv(&mut buf).ok().map(|len| buf[..len].to_vec())
    }

    #[tokio::test]
    async fn a_muted_socket_drops_its_sends_and_sends_again_when_unmuted() {
        let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let inner = quinn::TokioRuntime.wrap_udp_socket(sender).unwrap();
        let marks = Marks::default();
        let mute = marks.mute();
        let socket = MutedSocket::new(inner, marks.clone());
        let send = |contents: &[u8]| {
            let transmit = Transmit {
                destination: receiver.local_addr().unwrap(),
                ecn: None,
                contents,
                segment_size: None,
                src_ip: None,
            };
            socket.try_send(&transmit).unwrap();
        };
        mute.set(true);
        send(b"dropped");
        assert_eq!(received(&receiver), None);
        mute.set(false);
        send(b"sent");
        assert_eq!(received(&receiver).as_deref(), Some(&b"sent"[..]));
    }
}
