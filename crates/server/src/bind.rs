//! Binds TCP and UDP on one port number.

use std::net::{SocketAddr, TcpListener, UdpSocket};

use anyhow::{bail, Context, Result};
use socket2::{Domain, Protocol, Socket, Type};

/// With port 0, tries this many kernel-chosen TCP ports for one whose UDP twin is free.
const PORT_ATTEMPTS: usize = 32;
const LISTEN_BACKLOG: i32 = 1024;
/// Socket buffer sizes to ask for; see [`crate::TcpTuning`] and
/// [`crate::QuicTuning`].
#[derive(Clone, Copy, Debug)]
pub struct Buffers {
    pub tcp_send: Option<usize>,
    pub tcp_recv: Option<usize>,
    pub udp: usize,
}

pub struct Sockets {
    pub tcp: TcpListener,
    pub udp: Option<UdpSocket>,
}

impl Sockets {
    /// What the kernel gave for each buffer asked for, as tuning lines:
    /// `getsockopt` reports twice the size asked (the kernel's bookkeeping
    /// share) unless `net.core.{w,r}mem_max` capped it.
    pub fn granted_buffers(&self, asked: &Buffers) -> Result<Vec<(&'static str, String)>> {
        let mut lines = Vec::new();
        let tcp = socket2::SockRef::from(&self.tcp);
        if asked.tcp_send.is_some() {
            lines.push((
                "tcp_send_buffer_granted",
                format!("{} B", tcp.send_buffer_size()?),
            ));
        }
        if asked.tcp_recv.is_some() {
            lines.push((
                "tcp_recv_buffer_granted",
                format!("{} B", tcp.recv_buffer_size()?),
            ));
        }
        if let Some(udp) = &self.udp {
            let udp = socket2::SockRef::from(udp);
            lines.push((
                "udp_send_buffer_granted",
                format!("{} B", udp.send_buffer_size()?),
            ));
            lines.push((
                "udp_recv_buffer_granted",
                format!("{} B", udp.recv_buffer_size()?),
            ));
        }
        Ok(lines)
    }
}

/// Binds TCP on `listen`, and UDP on the same address and port when `with_udp`.
pub fn bind(listen: SocketAddr, with_udp: bool, buffers: &Buffers) -> Result<Sockets> {
    for _ in 0..PORT_ATTEMPTS {
        let tcp = bind_tcp(listen, buffers)?;
        if !with_udp {
            return Ok(Sockets { tcp, udp: None });
        }
        let addr = tcp.local_addr()?;
        match bind_udp(addr, buffers.udp) {
            Ok(udp) => return Ok(Sockets { tcp, udp: Some(udp) }),
            Err(err) if listen.port() == 0 && err.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(err) => bail!(
                "cannot bind UDP {addr} for HTTP/3: {err}; pick a port that is free for both TCP and UDP with --listen"
            ),
        }
    }
    bail!("none of {PORT_ATTEMPTS} free TCP ports had a free UDP twin; pass a fixed port with --listen")
}

fn bind_tcp(addr: SocketAddr, buffers: &Buffers) -> Result<TcpListener> {
    let fix = "pick a free address and port with --listen";
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // A restarted server must not fail on the previous run's TIME_WAIT sockets.
    socket.set_reuse_address(true)?;
    // Set on the listener, before any connection exists: accepted sockets
    // inherit them, and the receive buffer decides the window scale that
    // the handshake announces.
    if let Some(bytes) = buffers.tcp_send {
        socket.set_send_buffer_size(bytes)?;
    }
    if let Some(bytes) = buffers.tcp_recv {
        socket.set_recv_buffer_size(bytes)?;
    }
    socket
        .bind(&addr.into())
        .with_context(|| format!("cannot bind TCP {addr}; {fix}"))?;
    socket
        .listen(LISTEN_BACKLOG)
        .with_context(|| format!("cannot listen on TCP {addr}; {fix}"))?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

fn bind_udp(addr: SocketAddr, buffer: usize) -> std::io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    socket.bind(&addr.into())?;
    // Larger buffers absorb bursts at high rates; the kernel may cap them,
    // and the tuning lines say by how much.
    socket.set_recv_buffer_size(buffer)?;
    socket.set_send_buffer_size(buffer)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL_BUFFERS: Buffers = Buffers {
        tcp_send: None,
        tcp_recv: None,
        udp: 8 * 1024 * 1024,
    };

    #[test]
    fn port_zero_gives_tcp_and_udp_the_same_port() {
        let sockets = bind("127.0.0.1:0".parse().unwrap(), true, &KERNEL_BUFFERS).unwrap();
        let tcp = sockets.tcp.local_addr().unwrap();
        let udp = sockets.udp.unwrap().local_addr().unwrap();
        assert_ne!(tcp.port(), 0);
        assert_eq!(tcp, udp);
    }

    #[test]
    fn taken_udp_port_is_a_clear_error() {
        // An address of its own: on 127.0.0.1 the UDP squatter's port can
        // be some other test's TCP ephemeral port, and then TCP's bind
        // fails first.
        let squatter = UdpSocket::bind("127.0.0.77:0").unwrap();
        let addr = squatter.local_addr().unwrap();
        let err = bind(addr, true, &KERNEL_BUFFERS)
            .err()
            .expect("UDP port is taken");
        let message = format!("{err:#}");
        assert!(
            message.contains("UDP") && message.contains("--listen"),
            "{message}"
        );
    }

    #[test]
    fn cleartext_binds_no_udp() {
        let sockets = bind("127.0.0.1:0".parse().unwrap(), false, &KERNEL_BUFFERS).unwrap();
        assert!(sockets.udp.is_none());
    }

    /// Linux reports twice the size asked (below the `*mem_max` caps), so
    /// the sizes asked are read back doubled, on the listener and on an
    /// accepted connection, which inherits them.
    #[test]
    fn asked_buffer_sizes_reach_the_sockets_and_accepted_connections() {
        let asked = Buffers {
            tcp_send: Some(96 * 1024),
            tcp_recv: Some(64 * 1024),
            udp: 48 * 1024,
        };
        let sockets = bind("127.0.0.1:0".parse().unwrap(), true, &asked).unwrap();
        let granted: std::collections::BTreeMap<_, _> = sockets
            .granted_buffers(&asked)
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(granted["tcp_send_buffer_granted"], "196608 B");
        assert_eq!(granted["tcp_recv_buffer_granted"], "131072 B");
        assert_eq!(granted["udp_send_buffer_granted"], "98304 B");
        assert_eq!(granted["udp_recv_buffer_granted"], "98304 B");
        let client = std::net::TcpStream::connect(sockets.tcp.local_addr().unwrap()).unwrap();
        let (accepted, _) = sockets.tcp.accept().unwrap();
        let accepted = socket2::SockRef::from(&accepted);
        assert_eq!(accepted.send_buffer_size().unwrap(), 196_608);
        assert_eq!(accepted.recv_buffer_size().unwrap(), 131_072);
        drop(client);
    }
}
