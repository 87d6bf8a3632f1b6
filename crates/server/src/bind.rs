//! Binds TCP and UDP on one port number.

use std::net::{SocketAddr, TcpListener, UdpSocket};

use anyhow::{bail, Context, Result};
use socket2::{Domain, Protocol, Socket, Type};

/// With port 0, tries this many kernel-chosen TCP ports for one whose UDP twin is free.
const PORT_ATTEMPTS: usize = 32;
const LISTEN_BACKLOG: i32 = 1024;
/// Requested UDP socket buffers; the kernel caps them at net.core.{r,w}mem_max.
const UDP_BUFFER_BYTES: usize = 8 * 1024 * 1024;

pub struct Sockets {
    pub tcp: TcpListener,
    pub udp: Option<UdpSocket>,
}

/// Binds TCP on `listen`, and UDP on the same address and port when `with_udp`.
pub fn bind(listen: SocketAddr, with_udp: bool) -> Result<Sockets> {
    for _ in 0..PORT_ATTEMPTS {
        let tcp = bind_tcp(listen)?;
        if !with_udp {
            return Ok(Sockets { tcp, udp: None });
        }
        let addr = tcp.local_addr()?;
        match bind_udp(addr) {
            Ok(udp) => return Ok(Sockets { tcp, udp: Some(udp) }),
            Err(err) if listen.port() == 0 && err.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(err) => bail!(
                "cannot bind UDP {addr} for HTTP/3: {err}; pick a port that is free for both TCP and UDP with --listen"
            ),
        }
    }
    bail!("none of {PORT_ATTEMPTS} free TCP ports had a free UDP twin; pass a fixed port with --listen")
}

fn bind_tcp(addr: SocketAddr) -> Result<TcpListener> {
    let fix = "pick a free address and port with --listen";
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // A restarted server must not fail on the previous run's TIME_WAIT sockets.
    socket.set_reuse_address(true)?;
    socket
        .bind(&addr.into())
        .with_context(|| format!("cannot bind TCP {addr}; {fix}"))?;
    socket
        .listen(LISTEN_BACKLOG)
        .with_context(|| format!("cannot listen on TCP {addr}; {fix}"))?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

fn bind_udp(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    socket.bind(&addr.into())?;
    // Best effort: larger buffers absorb bursts at high rates; the kernel may cap them.
    let _ = socket.set_recv_buffer_size(UDP_BUFFER_BYTES);
    let _ = socket.set_send_buffer_size(UDP_BUFFER_BYTES);
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_zero_gives_tcp_and_udp_the_same_port() {
        let sockets = bind("127.0.0.1:0".parse().unwrap(), true).unwrap();
        let tcp = sockets.tcp.local_addr().unwrap();
        let udp = sockets.udp.unwrap().local_addr().unwrap();
        assert_ne!(tcp.port(), 0);
        assert_eq!(tcp, udp);
    }

    #[test]
    fn taken_udp_port_is_a_clear_error() {
        let squatter = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = squatter.local_addr().unwrap();
        let err = bind(addr, true).err().expect("UDP port is taken");
        let message = format!("{err:#}");
        assert!(
            message.contains("UDP") && message.contains("--listen"),
            "{message}"
        );
    }

    #[test]
    fn cleartext_binds_no_udp() {
        let sockets = bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
        assert!(sockets.udp.is_none());
    }
}
