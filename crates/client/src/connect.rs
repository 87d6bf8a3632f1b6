//! Timed connection set-up for h1, h2 and h3, each yielding a request handle.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use quinn::crypto::rustls::QuicClientConfig;
use rustls::pki_types::ServerName;
use rustls::HandshakeKind;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_rustls::TlsConnector;

use crate::error::{error_chain, quic_connect_error, tls_failure, ClientError};
use crate::marks::Marks;
use crate::mute::MutedSocket;
use crate::request::RequestTemplate;
use crate::response::Response;
use crate::send::{Sender, SenderInner};
use h3lab_results::{ErrorKind, Proto};

use crate::target::{Scheme, Target};

/// HTTP/2 receive windows (hyper's client defaults): large enough that a
/// bulk download is not paced by WINDOW_UPDATE round trips.
/// The UDP socket buffers the QUIC client asks for, as the server does:
/// the kernel's default (about 200 KB) holds too few datagrams for a
/// fast path's bursts, and datagrams beyond it are dropped before QUIC
/// sees them, where TCP autotunes its buffer. The kernel caps the ask at
/// `net.core.rmem_max` / `wmem_max`.
const UDP_BUFFER_BYTES: usize = 8 * 1024 * 1024;
const H2_STREAM_WINDOW: u32 = 2 * 1024 * 1024;
const H2_CONNECTION_WINDOW: u32 = 5 * 1024 * 1024;

/// How long each phase of connection set-up took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConnectTiming {
    /// TCP three-way handshake; `None` for QUIC.
    pub tcp_connect: Option<Duration>,
    /// TLS handshake after TCP, or the whole QUIC handshake; `None` for
    /// cleartext HTTP/1.1.
    pub handshake: Option<Duration>,
    /// Whether TLS resumed an earlier session, from rustls for h1/h2.
    /// `None` for cleartext, and for h3: quinn does not expose the handshake
    /// kind (the ttfb probe proves h3 resumption from the handshake itself).
    pub(crate) resumed: Option<bool>,
    /// The path's round trip as the connection itself measured it just
    /// after set-up: the kernel's smoothed RTT (TCP_INFO, from the SYN and
    /// the TLS flights) or QUIC's estimate. `None` where the kernel did not
    /// say. A real path drifts, so this is recorded beside each figure.
    pub path_rtt: Option<Duration>,
}

impl ConnectTiming {
    /// A QUIC connection's: its handshake and QUIC's RTT estimate after it.
    pub fn quic(handshake: Duration, path_rtt: Duration) -> ConnectTiming {
        ConnectTiming {
            tcp_connect: None,
            handshake: Some(handshake),
            resumed: None,
            path_rtt: Some(path_rtt),
        }
    }

    /// A TCP connection's: the three-way handshake, TLS's (`None` for
    /// cleartext) and whether it resumed a session, and the kernel's RTT.
    pub fn tcp(
        tcp_connect: Duration,
        tls: Option<(Duration, bool)>,
        path_rtt: Option<Duration>,
    ) -> ConnectTiming {
        ConnectTiming {
            tcp_connect: Some(tcp_connect),
            handshake: tls.map(|(handshake, _)| handshake),
            resumed: tls.map(|(_, resumed)| resumed),
            path_rtt,
        }
    }
}

/// A fresh connection: its request handle and set-up timing.
pub struct Connection {
    /// The handle requests are sent on.
    pub sender: Sender,
    /// How long the connection's set-up took.
    pub timing: ConnectTiming,
}

struct QuicClient {
    endpoint: quinn::Endpoint,
    config: quinn::ClientConfig,
    /// Directory for one qlog file per connection, if any.
    qlog: Option<PathBuf>,
}

/// Opens connections to one resolved address with one protocol.
pub struct Connector {
    target: Arc<Target>,
    addr: SocketAddr,
    proto: Proto,
    tls: Arc<rustls::ClientConfig>,
    server_name: ServerName<'static>,
    quic: Option<QuicClient>,
    connect_timeout: Duration,
}

impl Connector {
    /// For h3 this binds a UDP socket on the wildcard address (so it works
    /// inside network namespaces) and must be called inside the tokio
    /// runtime that will drive its connections.
    pub fn new(
        target: Arc<Target>,
        addr: SocketAddr,
        proto: Proto,
        tls: Arc<rustls::ClientConfig>,
        connect_timeout: Duration,
    ) -> anyhow::Result<Connector> {
        Connector::build(target, addr, proto, tls, connect_timeout, None)
    }

    /// An h3 connector whose socket the returned [`Marks`] record, mute,
    /// and drop a datagram of, for every connection it opens.
    pub(crate) fn new_marking(
        target: Arc<Target>,
        addr: SocketAddr,
        tls: Arc<rustls::ClientConfig>,
        connect_timeout: Duration,
    ) -> anyhow::Result<(Connector, Marks)> {
        let marks = Marks::default();
        let connector = Connector::build(
            target,
            addr,
            Proto::H3,
            tls,
            connect_timeout,
            Some(marks.clone()),
        )?;
        Ok((connector, marks))
    }

    fn build(
        target: Arc<Target>,
        addr: SocketAddr,
        proto: Proto,
        tls: Arc<rustls::ClientConfig>,
        connect_timeout: Duration,
        marks: Option<Marks>,
    ) -> anyhow::Result<Connector> {
        target.check_proto(proto)?;
        let server_name = ServerName::try_from(target.host().to_string()).map_err(|err| {
            anyhow::anyhow!("`{}` is not a valid TLS server name: {err}", target.host())
        })?;
        let quic = match proto {
            Proto::H3 => Some(quic_client(addr, &tls, marks)?),
            Proto::H1 | Proto::H2 => None,
            Proto::Auto => {
                anyhow::bail!("a Connector speaks one protocol; auto is AutoConnector's")
            }
        };
        Ok(Connector {
            target,
            addr,
            proto,
            tls,
            server_name,
            quic,
            connect_timeout,
        })
    }

    /// Closes every QUIC connection of this connector with code 0 and gives
    /// the CONNECTION_CLOSE a moment to leave, so the server frees them at
    /// once instead of waiting out its idle timeout. TCP connections close
    /// when their handles drop.
    pub async fn close(&self) {
        if let Some(quic) = &self.quic {
            quic.endpoint.close(0u32.into(), b"done");
            let _ = timeout(Duration::from_millis(100), quic.endpoint.wait_idle()).await;
        }
    }

    /// Moves every QUIC connection of this connector to a new UDP socket
    /// bound to `local` (port 0: any free port), as a client that changed
    /// networks or ports does; the connections carry on over the new
    /// path once the server validates it. Must be called inside the
    /// connector's tokio runtime. TCP connections cannot move: an error.
    pub fn rebind(&self, local: SocketAddr) -> anyhow::Result<()> {
        let quic = self.quic.as_ref().ok_or_else(|| {
            anyhow::anyhow!("only QUIC connections can move to a new address; use --proto h3")
        })?;
        let socket = udp_socket(local)
            .map_err(|err| anyhow::anyhow!("binding a new UDP socket on {local}: {err}"))?;
        quic.endpoint
            .rebind(socket)
            .map_err(|err| anyhow::anyhow!("moving the QUIC endpoint to {local}: {err}"))
    }

    /// Writes one qlog file per QUIC connection from now on into `dir`
    /// (`client-PID-N.sqlog`), through quinn's qlog support. Does nothing
    /// for TCP protocols.
    pub fn log_qlog(&mut self, dir: PathBuf) -> anyhow::Result<()> {
        std::fs::create_dir_all(&dir).map_err(|err| {
            anyhow::anyhow!(
                "cannot create the qlog directory {}: {err}; pass a writable --qlog DIR",
                dir.display()
            )
        })?;
        if let Some(quic) = &mut self.quic {
            quic.qlog = Some(dir);
        }
        Ok(())
    }

    /// Has QUIC connections opened from now on send a PING every
    /// `interval` when nothing else is sent, so an idle connection outlives
    /// the 30 s idle timeout (TCP connections stay open by themselves).
    pub fn keep_quic_alive(&mut self, interval: Duration) {
        if let Some(quic) = &mut self.quic {
            let mut transport = quinn::TransportConfig::default();
            transport.keep_alive_interval(Some(interval));
            quic.config.transport_config(Arc::new(transport));
        }
    }

    /// Opens a new connection and measures its set-up.
    pub async fn connect(&self) -> Result<Connection, ClientError> {
        match self.proto {
            Proto::H1 => self.connect_h1().await,
            Proto::H2 => self.connect_h2().await,
            Proto::H3 => self.connect_h3().await,
            Proto::Auto => unreachable!("Connector::new refuses auto"),
        }
    }

    async fn connect_h1(&self) -> Result<Connection, ClientError> {
        let (tcp, tcp_time) = self.connect_tcp().await?;
        if self.target.scheme() == Scheme::Http {
            let path_rtt = tcp_rtt(&tcp);
            let sender = start_h1(tcp).await?;
            let timing = ConnectTiming {
                tcp_connect: Some(tcp_time),
                handshake: None,
                resumed: None,
                path_rtt,
            };
            return Ok(Connection { sender, timing });
        }
        let (tls, timing) = self.handshake_tls(tcp, tcp_time).await?;
        let sender = start_h1(tls).await?;
        Ok(Connection { sender, timing })
    }

    async fn connect_h2(&self) -> Result<Connection, ClientError> {
        let (tcp, tcp_time) = self.connect_tcp().await?;
        let (tls, timing) = self.handshake_tls(tcp, tcp_time).await?;
        let (send, conn) = h2::client::Builder::new()
            .initial_window_size(H2_STREAM_WINDOW)
            .initial_connection_window_size(H2_CONNECTION_WINDOW)
            .enable_push(false)
            .handshake::<_, Bytes>(tls)
            .await
            .map_err(ClientError::from_h2)?;
        let closed = Arc::new(AtomicBool::new(false));
        let driver_closed = closed.clone();
        tokio::spawn(async move {
            let _ = conn.await;
            driver_closed.store(true, Ordering::Relaxed);
        });
        let sender = Sender {
            inner: SenderInner::H2 { send, closed },
        };
        Ok(Connection { sender, timing })
    }

    async fn connect_h3(&self) -> Result<Connection, ClientError> {
        let start = Instant::now();
        let conn = self.finish_quic_handshake(self.start_quic()?).await?;
        h3_connection(conn, start, true).await
    }

    /// A new connection that reuses an earlier session where it can: TLS
    /// resumption for h1/h2 (from the shared session store), and for h3 a
    /// connection usable at once in 0-RTT when a ticket allows it, so the
    /// requests sent before the handshake completes travel as early data.
    /// Without a ticket it is [`Connector::connect`].
    pub async fn connect_early(&self) -> Result<Connection, ClientError> {
        if self.proto != Proto::H3 {
            return self.connect().await;
        }
        let start = Instant::now();
        let connecting = self.start_quic()?;
        let (conn, handshake_done) = match connecting.into_0rtt() {
            Ok((conn, _accepted)) => (conn, false),
            Err(connecting) => (self.finish_quic_handshake(connecting).await?, true),
        };
        h3_connection(conn, start, handshake_done).await
    }

    /// h3 with the request in 0-RTT. Returns the response head, the
    /// connection's `Sender` (h3 closes a connection whose last sender is
    /// dropped, so the caller keeps it until the body is drained), the
    /// timing, and whether the server accepted the early data; `None` when
    /// no ticket the server gave allows early data, so no 0-RTT was tried.
    pub(crate) async fn connect_h3_early(
        &self,
        template: &RequestTemplate,
    ) -> Result<Option<(Response, Sender, ConnectTiming, bool)>, ClientError> {
        let start = Instant::now();
        let connecting = self.start_quic()?;
        let Ok((conn, accepted)) = connecting.into_0rtt() else {
            return Ok(None);
        };
        let mut sender = start_h3(conn).await?;
        let response = match timeout(self.connect_timeout, sender.send(template)).await {
            Err(_) => return Err(self.no_quic_answer()),
            Ok(result) => result?,
        };
        let accepted = accepted.await;
        let timing = ConnectTiming {
            tcp_connect: None,
            handshake: Some(start.elapsed()),
            resumed: None,
            // Known once the handshake has completed, as it has when the
            // early data's fate is.
            path_rtt: sender.quic_rtt(),
        };
        Ok(Some((response, sender, timing, accepted)))
    }

    /// A QUIC connection with ALPN h3 and nothing of HTTP/3 on it, for
    /// reading what the server sends of its own accord.
    pub(crate) async fn connect_quic(&self) -> Result<quinn::Connection, ClientError> {
        let connecting = self.start_quic()?;
        self.finish_quic_handshake(connecting).await
    }

    /// Waits for a QUIC handshake to complete, within the connect timeout.
    async fn finish_quic_handshake(
        &self,
        connecting: quinn::Connecting,
    ) -> Result<quinn::Connection, ClientError> {
        match timeout(self.connect_timeout, connecting).await {
            Err(_) | Ok(Err(quinn::ConnectionError::TimedOut)) => Err(self.no_quic_answer()),
            Ok(Err(err)) => Err(quic_connect_error(err, self.addr)),
            Ok(Ok(conn)) => Ok(conn),
        }
    }

    /// Starts a QUIC handshake from this connector's endpoint.
    fn start_quic(&self) -> Result<quinn::Connecting, ClientError> {
        let quic = self
            .quic
            .as_ref()
            .ok_or_else(|| ClientError::new(ErrorKind::Protocol, "QUIC needs --proto h3"))?;
        let config = match &quic.qlog {
            Some(dir) => qlog_config(&quic.config, dir)
                .map_err(|err| ClientError::new(ErrorKind::Connect, format!("{err:#}")))?,
            None => quic.config.clone(),
        };
        quic.endpoint
            .connect_with(config, self.addr, self.target.host())
            .map_err(|err| {
                ClientError::new(
                    ErrorKind::Connect,
                    format!("QUIC connect to {}: {err}", self.addr),
                )
            })
    }

    fn no_quic_answer(&self) -> ClientError {
        no_quic_answer(self.addr, self.connect_timeout)
    }

    async fn connect_tcp(&self) -> Result<(TcpStream, Duration), ClientError> {
        let start = Instant::now();
        let stream = match timeout(self.connect_timeout, TcpStream::connect(self.addr)).await {
            Err(_) => return Err(tcp_connect_timeout(self.addr, self.connect_timeout)),
            Ok(Err(err)) => return Err(tcp_connect_error(self.addr, &err)),
            Ok(Ok(stream)) => stream,
        };
        let elapsed = start.elapsed();
        stream.set_nodelay(true).map_err(|err| {
            ClientError::new(ErrorKind::Connect, format!("setting TCP_NODELAY: {err}"))
        })?;
        Ok((stream, elapsed))
    }

    async fn handshake_tls(
        &self,
        tcp: TcpStream,
        tcp_time: Duration,
    ) -> Result<(tokio_rustls::client::TlsStream<TcpStream>, ConnectTiming), ClientError> {
        let start = Instant::now();
        let connector = TlsConnector::from(self.tls.clone());
        let handshake = connector.connect(self.server_name.clone(), tcp);
        let tls = match timeout(self.connect_timeout, handshake).await {
            Err(_) => return Err(tls_handshake_timeout(self.addr, self.connect_timeout)),
            Ok(Err(err)) => return Err(tls_failure(self.addr, &error_chain(&err))),
            Ok(Ok(tls)) => tls,
        };
        let handshake_time = start.elapsed();
        let session = tls.get_ref().1;
        let alpn = session.alpn_protocol();
        if self.proto == Proto::H2 && alpn != Some(b"h2".as_slice()) {
            return Err(no_h2_in_alpn(self.addr));
        }
        let timing = ConnectTiming {
            tcp_connect: Some(tcp_time),
            handshake: Some(handshake_time),
            resumed: Some(session.handshake_kind() == Some(HandshakeKind::Resumed)),
            path_rtt: tcp_rtt(tls.get_ref().0),
        };
        Ok((tls, timing))
    }
}

fn quic_client(
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
    marks: Option<Marks>,
) -> anyhow::Result<QuicClient> {
    let bind: SocketAddr = if addr.is_ipv6() {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    };
    let socket = udp_socket(bind)
        .map_err(|err| anyhow::anyhow!("binding a UDP socket on {bind} for HTTP/3: {err}"))?;
    let runtime = quinn::default_runtime()
        .ok_or_else(|| anyhow::anyhow!("the QUIC client needs a tokio runtime"))?;
    let starting = |err| anyhow::anyhow!("starting the QUIC client on {bind}: {err}");
    let mut socket = runtime.wrap_udp_socket(socket).map_err(starting)?;
    if let Some(marks) = marks {
        socket = Arc::new(MutedSocket::new(socket, marks));
    }
    let endpoint = quinn::Endpoint::new_with_abstract_socket(
        quinn::EndpointConfig::default(),
        None,
        socket,
        runtime,
    )
    .map_err(starting)?;
    Ok(QuicClient {
        endpoint,
        config: quic_client_config(tls)?,
        qlog: None,
    })
}

/// A TCP connect to `addr` that failed.
pub fn tcp_connect_error(addr: SocketAddr, err: &std::io::Error) -> ClientError {
    ClientError::new(ErrorKind::Connect, format!("TCP connect to {addr}: {err}"))
}

/// A TCP connect to `addr` that got no answer within `limit`.
pub fn tcp_connect_timeout(addr: SocketAddr, limit: Duration) -> ClientError {
    ClientError::new(
        ErrorKind::Connect,
        format!("TCP connect to {addr} timed out after {limit:?}: is the server up?"),
    )
}

/// A TLS handshake with `addr` that did not finish within `limit`.
pub fn tls_handshake_timeout(addr: SocketAddr, limit: Duration) -> ClientError {
    ClientError::new(
        ErrorKind::Timeout,
        format!("TLS handshake with {addr} did not finish within {limit:?}"),
    )
}

/// A server that did not choose h2 in ALPN when asked for it alone.
pub fn no_h2_in_alpn(addr: SocketAddr) -> ClientError {
    ClientError::new(
        ErrorKind::Protocol,
        format!(
            "the server at {addr} did not agree to HTTP/2 in ALPN; try --proto h1 or --proto h3"
        ),
    )
}

/// A QUIC handshake that got no answer from `addr` within `limit`.
pub fn no_quic_answer(addr: SocketAddr, limit: Duration) -> ClientError {
    ClientError::new(
        ErrorKind::Connect,
        format!(
            "no HTTP/3 (QUIC) answer from {addr} within {limit:?}: is the server listening on UDP?"
        ),
    )
}

/// The QUIC client configuration every h3lab client uses: `tls` with
/// quinn's default transport, for quinn and for quinn-proto driven directly
/// (the load generator's event loop) alike.
pub fn quic_client_config(tls: &Arc<rustls::ClientConfig>) -> anyhow::Result<quinn::ClientConfig> {
    let crypto = QuicClientConfig::try_from(tls.clone())
        .map_err(|err| anyhow::anyhow!("TLS configuration unusable for QUIC: {err}"))?;
    Ok(quinn::ClientConfig::new(Arc::new(crypto)))
}

/// The kernel's smoothed RTT of a TCP connection (`tcpi_rtt`, in µs).
pub fn tcp_rtt(stream: &impl std::os::fd::AsRawFd) -> Option<Duration> {
    // SAFETY: tcp_info is plain data, zeroed is a valid value of it.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: a live socket's descriptor, and a buffer of `len` bytes.
    let status = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (status == 0 && info.tcpi_rtt > 0).then(|| Duration::from_micros(info.tcpi_rtt.into()))
}

/// A UDP socket on `local` with [`UDP_BUFFER_BYTES`] buffers asked each way.
pub fn udp_socket(local: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))?;
    if local.is_ipv6() {
        // Dual-stack, as quinn's own client endpoint makes it; best effort.
        let _ = socket.set_only_v6(false);
    }
    socket.set_recv_buffer_size(UDP_BUFFER_BYTES)?;
    socket.set_send_buffer_size(UDP_BUFFER_BYTES)?;
    socket.bind(&local.into())?;
    Ok(socket.into())
}

/// `config` with a transport of its own that logs to a new qlog file in
/// `dir`: quinn takes one qlog stream per transport configuration.
fn qlog_config(
    config: &quinn::ClientConfig,
    dir: &std::path::Path,
) -> anyhow::Result<quinn::ClientConfig> {
    static CONNECTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = CONNECTIONS.fetch_add(1, Ordering::Relaxed) + 1;
    let path = dir.join(format!("client-{}-{n:06}.sqlog", std::process::id()));
    let file = std::fs::File::create(&path)
        .map_err(|err| anyhow::anyhow!("cannot create the qlog file {}: {err}", path.display()))?;
    let mut qlog = quinn::QlogConfig::default();
    qlog.writer(Box::new(std::io::BufWriter::new(file)))
        .title(Some(format!("h3lab client: connection {n}")));
    let mut transport = quinn::TransportConfig::default();
    transport.qlog_stream(qlog.into_stream());
    let mut config = config.clone();
    config.transport_config(Arc::new(transport));
    Ok(config)
}

async fn start_h1<S>(io: S) -> Result<Sender, ClientError>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (send, conn) = http1::handshake(TokioIo::new(io))
        .await
        .map_err(ClientError::from_hyper)?;
    tokio::spawn(conn);
    Ok(Sender {
        inner: SenderInner::H1(send),
    })
}

/// An h3 connection over `conn`, its handshake timed from `start`: the
/// same for a full handshake and for 0-RTT. Before the handshake is done
/// (0-RTT) QUIC has no RTT sample yet, only its initial guess (333 ms),
/// so the path's round trip is unknown then.
async fn h3_connection(
    conn: quinn::Connection,
    start: Instant,
    handshake_done: bool,
) -> Result<Connection, ClientError> {
    let timing = ConnectTiming {
        tcp_connect: None,
        handshake: Some(start.elapsed()),
        resumed: None,
        path_rtt: handshake_done.then(|| conn.rtt()),
    };
    let sender = start_h3(conn).await?;
    Ok(Connection { sender, timing })
}

async fn start_h3(conn: quinn::Connection) -> Result<Sender, ClientError> {
    let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn.clone()))
        .await
        .map_err(|err| ClientError::new(ErrorKind::Protocol, format!("HTTP/3 set-up: {err}")))?;
    tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    Ok(Sender {
        inner: SenderInner::H3 { send, conn },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux reports twice the size granted, and grants what was asked up
    /// to `net.core.{r,w}mem_max`.
    fn granted(asked: usize, cap_file: &str) -> usize {
        let cap: usize = std::fs::read_to_string(cap_file)
            .expect("Linux has net.core.*mem_max")
            .trim()
            .parse()
            .unwrap();
        2 * asked.min(cap)
    }

    #[test]
    fn the_quic_clients_udp_socket_asks_for_large_buffers() {
        let socket = udp_socket("127.0.0.1:0".parse().unwrap()).unwrap();
        let socket = socket2::SockRef::from(&socket);
        let rmem = granted(UDP_BUFFER_BYTES, "/proc/sys/net/core/rmem_max");
        let wmem = granted(UDP_BUFFER_BYTES, "/proc/sys/net/core/wmem_max");
        assert_eq!(socket.recv_buffer_size().unwrap(), rmem);
        assert_eq!(socket.send_buffer_size().unwrap(), wmem);
    }
}
