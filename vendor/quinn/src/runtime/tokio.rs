use std::{
    future::Future,
    io,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll, ready},
    time::Instant,
};

use tokio::{
    io::{Interest, unix::AsyncFd},
    time::{Sleep, sleep_until},
};

use super::{AsyncTimer, AsyncUdpSocket, Runtime, UdpPollHelper};

/// A Quinn runtime for Tokio
#[derive(Debug)]
pub struct TokioRuntime;

impl Runtime for TokioRuntime {
    fn new_timer(&self, t: Instant) -> Pin<Box<dyn AsyncTimer>> {
        Box::pin(sleep_until(t.into()))
    }

    fn spawn(&self, future: Pin<Box<dyn Future<Output = ()> + Send>>) {
        tokio::spawn(future);
    }

    fn wrap_udp_socket(&self, sock: std::net::UdpSocket) -> io::Result<Arc<dyn AsyncUdpSocket>> {
        sock.set_nonblocking(true)?;
        Ok(Arc::new(UdpSocket {
            inner: udp::UdpSocketState::new((&sock).into())?,
            io: register(sock, Interest::READABLE)?,
            full: AtomicBool::new(false),
        }))
    }

    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }
}

impl AsyncTimer for Sleep {
    fn reset(self: Pin<&mut Self>, t: Instant) {
        Self::reset(self, t.into())
    }
    fn poll(self: Pin<&mut Self>, cx: &mut Context) -> Poll<()> {
        Future::poll(self, cx)
    }
}

/// h3lab: the socket is registered with the runtime for reading only. A
/// registration for writing as well (as `tokio::net::UdpSocket` makes)
/// wakes the runtime's poller each time the kernel frees a sent datagram
/// (`sock_wfree`), which on a busy path is thousands of times a second, and
/// on a multi-threaded runtime each such wake-up is a context switch of an
/// idle worker. A send buffer that is full is rare; only then does a
/// registration for writing exist, on a duplicate of the descriptor, until
/// the buffer has room.
#[derive(Debug)]
struct UdpSocket {
    io: AsyncFd<std::net::UdpSocket>,
    inner: udp::UdpSocketState,
    /// Set when a send found the send buffer full.
    full: AtomicBool,
}

impl UdpSocket {
    async fn writable(&self) -> io::Result<()> {
        if !self.full.load(Ordering::Acquire) {
            return Ok(());
        }
        let watch = register(self.io.get_ref().try_clone()?, Interest::WRITABLE)?;
        drop(watch.writable().await?);
        self.full.store(false, Ordering::Release);
        Ok(())
    }
}

fn register(
    socket: std::net::UdpSocket,
    interest: Interest,
) -> io::Result<AsyncFd<std::net::UdpSocket>> {
    // SAFETY: the socket owns its descriptor, which stays open and the same
    // for as long as the `AsyncFd` holds the socket.
    Ok(unsafe { AsyncFd::register_with_interest(socket, interest) }?)
}

impl AsyncUdpSocket for UdpSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn super::UdpPoller>> {
        Box::pin(UdpPollHelper::new(move || {
            let socket = self.clone();
            async move { socket.writable().await }
        }))
    }

    fn try_send(&self, transmit: &udp::Transmit) -> io::Result<()> {
        let result = self.inner.send(self.io.get_ref().into(), transmit);
        if matches!(&result, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
            self.full.store(true, Ordering::Release);
        }
        result
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [std::io::IoSliceMut<'_>],
        meta: &mut [udp::RecvMeta],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.io.poll_read_ready(cx))?;
            if let Ok(res) = guard.try_io(|io| self.inner.recv(io.get_ref().into(), bufs, meta)) {
                return Poll::Ready(res);
            }
        }
    }

    fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.io.get_ref().local_addr()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }

    fn max_transmit_segments(&self) -> usize {
        self.inner.max_gso_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.inner.gro_segments()
    }
}
