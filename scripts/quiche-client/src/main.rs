//! quiche-client downloads one URL once over HTTP/3 with quiche, on one
//! thread with a plain event loop (no async runtime, no channels), and
//! prints the bytes it read. It receives with UDP GRO, as `h3lab load`
//! does, so both see the same batches. It is the leanest QUIC client at
//! hand for scripts/client-cost.sh; it verifies no certificate, so use it
//! only against a test server.

use std::io::{IoSliceMut, Write};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::process::exit;
use std::time::Instant;

use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags, SockaddrIn};
use quiche::h3::NameValue;
use ring::rand::{SecureRandom, SystemRandom};

/// The most one receive returns: a GRO batch is below 64 KiB.
const RECEIVE_BYTES: usize = 65_536;
const SEND_BYTES: usize = 1_452;

fn main() {
    let url = match std::env::args().nth(1).map(|arg| url::Url::parse(&arg)) {
        Some(Ok(url)) if url.scheme() == "https" => url,
        _ => fail("usage: quiche-client https://HOST:PORT/PATH"),
    };
    match download(&url) {
        Ok((bytes, status, seconds)) => {
            println!("bytes {bytes} status {status} seconds {seconds:.3}");
        }
        Err(err) => fail(&format!("quiche-client: {err}")),
    }
}

fn fail(message: &str) -> ! {
    let _ = writeln!(std::io::stderr(), "{message}");
    exit(1)
}

fn download(url: &url::Url) -> Result<(u64, String, f64), String> {
    let peer = *url
        .socket_addrs(|| Some(443))
        .map_err(|err| format!("resolving {url}: {err}"))?
        .first()
        .ok_or_else(|| format!("{url} has no address"))?;
    let mut socket = mio::net::UdpSocket::bind("0.0.0.0:0".parse().expect("an address"))
        .map_err(|err| format!("binding a UDP socket: {err}"))?;
    setsockopt(&socket, sockopt::UdpGroSegment, &true)
        .map_err(|err| format!("enabling UDP GRO: {err}"))?;
    let local = socket.local_addr().map_err(|err| err.to_string())?;
    let mut poll = mio::Poll::new().map_err(|err| err.to_string())?;
    poll.registry()
        .register(&mut socket, mio::Token(0), mio::Interest::READABLE)
        .map_err(|err| err.to_string())?;

    let mut config = quic_config()?;
    let mut scid = [0; quiche::MAX_CONN_ID_LEN];
    SystemRandom::new()
        .fill(&mut scid)
        .map_err(|_| "no randomness".to_string())?;
    let scid = quiche::ConnectionId::from_ref(&scid);
    let mut conn = quiche::connect(url.host_str(), &scid, local, peer, &mut config)
        .map_err(|err| format!("starting the connection: {err}"))?;
    let h3_config = quiche::h3::Config::new().map_err(|err| err.to_string())?;
    let request = [
        quiche::h3::Header::new(b":method", b"GET"),
        quiche::h3::Header::new(b":scheme", b"https"),
        quiche::h3::Header::new(b":authority", url.host_str().unwrap_or("").as_bytes()),
        quiche::h3::Header::new(b":path", url.path().as_bytes()),
    ];

    let start = Instant::now();
    let mut h3: Option<quiche::h3::Connection> = None;
    let mut events = mio::Events::with_capacity(8);
    let mut received = vec![0; RECEIVE_BYTES];
    let mut body = vec![0; RECEIVE_BYTES];
    let mut bytes = 0u64;
    let mut status = String::new();
    loop {
        flush(&mut conn, &socket)?;
        if conn.is_closed() {
            break;
        }
        poll.poll(&mut events, conn.timeout())
            .map_err(|err| err.to_string())?;
        if events.is_empty() {
            conn.on_timeout();
        }
        receive_all(&mut conn, &socket, local, &mut received)?;
        if h3.is_none() && conn.is_established() {
            let mut connection = quiche::h3::Connection::with_transport(&mut conn, &h3_config)
                .map_err(|err| format!("starting HTTP/3: {err}"))?;
            connection
                .send_request(&mut conn, &request, true)
                .map_err(|err| format!("sending the request: {err}"))?;
            h3 = Some(connection);
        }
        let Some(connection) = h3.as_mut() else {
            continue;
        };
        loop {
            match connection.poll(&mut conn) {
                Ok((_, quiche::h3::Event::Headers { list, .. })) => {
                    if let Some(header) = list.iter().find(|h| h.name() == b":status") {
                        status = String::from_utf8_lossy(header.value()).into_owned();
                    }
                }
                Ok((stream, quiche::h3::Event::Data)) => {
                    while let Ok(read) = connection.recv_body(&mut conn, stream, &mut body) {
                        bytes += read as u64;
                    }
                }
                Ok((_, quiche::h3::Event::Finished)) => {
                    let _ = conn.close(true, 0x100, b"");
                }
                Ok((_, quiche::h3::Event::Reset(code))) => {
                    return Err(format!("the server reset the response ({code})"));
                }
                Ok(_) => {}
                Err(quiche::h3::Error::Done) => break,
                Err(err) => return Err(format!("HTTP/3: {err}")),
            }
        }
    }
    if let Some(err) = conn.peer_error().filter(|err| err.error_code != 0x100) {
        return Err(format!("the server closed the connection: {err:?}"));
    }
    if status.is_empty() {
        return Err(format!(
            "no response from {peer}: the connection {} (is the server up, on UDP?)",
            if conn.is_timed_out() {
                "timed out"
            } else {
                "closed"
            }
        ));
    }
    Ok((bytes, status, start.elapsed().as_secs_f64()))
}

/// Flow-control windows large enough that they never limit a download.
fn quic_config() -> Result<quiche::Config, String> {
    let mut config =
        quiche::Config::new(quiche::PROTOCOL_VERSION).map_err(|err| err.to_string())?;
    config.verify_peer(false);
    config
        .set_application_protos(quiche::h3::APPLICATION_PROTOCOL)
        .map_err(|err| err.to_string())?;
    config.set_max_idle_timeout(30_000);
    config.set_max_recv_udp_payload_size(65_527);
    config.set_max_send_udp_payload_size(SEND_BYTES);
    config.set_initial_max_data(100_000_000);
    config.set_initial_max_stream_data_bidi_local(50_000_000);
    config.set_initial_max_stream_data_bidi_remote(1_000_000);
    config.set_initial_max_stream_data_uni(1_000_000);
    config.set_initial_max_streams_bidi(100);
    config.set_initial_max_streams_uni(100);
    config.set_disable_active_migration(true);
    Ok(config)
}

/// Sends whatever the connection has to send (the handshake, ACKs).
fn flush(conn: &mut quiche::Connection, socket: &mio::net::UdpSocket) -> Result<(), String> {
    let mut out = [0; SEND_BYTES];
    loop {
        match conn.send(&mut out) {
            Ok((len, info)) => {
                if let Err(err) = socket.send_to(&out[..len], info.to) {
                    if err.kind() != std::io::ErrorKind::WouldBlock {
                        return Err(format!("sending: {err}"));
                    }
                }
            }
            Err(quiche::Error::Done) => return Ok(()),
            Err(err) => return Err(format!("building a packet: {err}")),
        }
    }
}

/// Reads every waiting batch and hands each datagram of it to quiche.
fn receive_all(
    conn: &mut quiche::Connection,
    socket: &mio::net::UdpSocket,
    local: SocketAddr,
    buffer: &mut [u8],
) -> Result<(), String> {
    loop {
        let mut space = nix::cmsg_space!(i32);
        let (len, segment, from) = {
            let mut iov = [IoSliceMut::new(buffer)];
            let message = match recvmsg::<SockaddrIn>(
                socket.as_raw_fd(),
                &mut iov,
                Some(&mut space),
                MsgFlags::empty(),
            ) {
                Ok(message) => message,
                Err(nix::errno::Errno::EAGAIN) => return Ok(()),
                Err(err) => return Err(format!("receiving: {err}")),
            };
            let segment =
                message
                    .cmsgs()
                    .map_err(|err| err.to_string())?
                    .find_map(|cmsg| match cmsg {
                        ControlMessageOwned::UdpGroSegments(size) => Some(size as usize),
                        _ => None,
                    });
            let from = message
                .address
                .map(|addr| SocketAddr::V4(addr.into()))
                .ok_or("a datagram without a sender")?;
            (message.bytes, segment.unwrap_or(message.bytes), from)
        };
        let info = quiche::RecvInfo { to: local, from };
        for datagram in buffer[..len].chunks_mut(segment.max(1)) {
            // A datagram quiche refuses (a stray, a duplicate) is dropped,
            // as a QUIC endpoint does.
            let _ = conn.recv(datagram, info);
        }
    }
}
