//! Timed connection set-up for h1, h2 and h3, and the request handle each
//! connection yields.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use http::StatusCode;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use quinn::crypto::rustls::QuicClientConfig;
use rustls::pki_types::ServerName;
use rustls::HandshakeKind;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_rustls::TlsConnector;

use crate::error::{error_chain, ClientError};
use crate::request::RequestTemplate;
use h3lab_results::{ErrorKind, Proto};

use crate::target::{Scheme, Target};

/// HTTP/2 receive windows (hyper's client defaults): large enough that a
/// bulk download is not paced by WINDOW_UPDATE round trips.
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
    /// Whether TLS resumed an earlier session. `None` when unknown: quinn
    /// does not expose the TLS handshake kind, and cleartext has no TLS.
    pub resumed: Option<bool>,
}

/// A fresh connection: its request handle and set-up timing.
pub struct Connection {
    pub sender: Sender,
    pub timing: ConnectTiming,
}

struct QuicClient {
    endpoint: quinn::Endpoint,
    config: quinn::ClientConfig,
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
        target.check_proto(proto)?;
        let server_name = ServerName::try_from(target.host().to_string()).map_err(|err| {
            anyhow::anyhow!("`{}` is not a valid TLS server name: {err}", target.host())
        })?;
        let quic = match proto {
            Proto::H3 => Some(quic_client(addr, &tls)?),
            Proto::H1 | Proto::H2 => None,
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

    pub fn proto(&self) -> Proto {
        self.proto
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

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Opens a new connection and measures its set-up.
    pub async fn connect(&self) -> Result<Connection, ClientError> {
        match self.proto {
            Proto::H1 => self.connect_h1().await,
            Proto::H2 => self.connect_h2().await,
            Proto::H3 => self.connect_h3().await,
        }
    }

    async fn connect_h1(&self) -> Result<Connection, ClientError> {
        let (tcp, tcp_time) = self.connect_tcp().await?;
        if self.target.scheme() == Scheme::Http {
            let sender = start_h1(tcp).await?;
            let timing = ConnectTiming {
                tcp_connect: Some(tcp_time),
                handshake: None,
                resumed: None,
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
        let connecting = self.start_quic()?;
        let conn = match timeout(self.connect_timeout, connecting).await {
            Err(_) => return Err(self.no_quic_answer()),
            Ok(Err(quinn::ConnectionError::TimedOut)) => return Err(self.no_quic_answer()),
            Ok(Err(err)) => return Err(quic_connect_error(err, self.addr)),
            Ok(Ok(conn)) => conn,
        };
        let timing = ConnectTiming {
            tcp_connect: None,
            handshake: Some(start.elapsed()),
            resumed: None,
        };
        let sender = start_h3(conn).await?;
        Ok(Connection { sender, timing })
    }

    /// h3 with the request in 0-RTT when a ticket allows it. Returns the
    /// response head, the connection's `Sender` (h3 closes a connection
    /// whose last sender is dropped, so the caller keeps it until the body
    /// is drained), the timing, and whether the server accepted the early
    /// data.
    pub(crate) async fn connect_h3_early(
        &self,
        template: &RequestTemplate,
    ) -> Result<(Response, Sender, ConnectTiming, bool), ClientError> {
        let start = Instant::now();
        let connecting = self.start_quic()?;
        let (conn, accepted) = match connecting.into_0rtt() {
            Ok(early) => early,
            Err(_) => {
                return Err(ClientError::new(
                    ErrorKind::Tls,
                    "no 0-RTT ticket from the priming connection: the server offers no 0-RTT",
                ))
            }
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
            resumed: accepted.then_some(true),
        };
        Ok((response, sender, timing, accepted))
    }

    /// Starts a QUIC handshake from this connector's endpoint.
    fn start_quic(&self) -> Result<quinn::Connecting, ClientError> {
        let quic = self
            .quic
            .as_ref()
            .ok_or_else(|| ClientError::new(ErrorKind::Protocol, "QUIC needs --proto h3"))?;
        quic.endpoint
            .connect_with(quic.config.clone(), self.addr, self.target.host())
            .map_err(|err| {
                ClientError::new(
                    ErrorKind::Connect,
                    format!("QUIC connect to {}: {err}", self.addr),
                )
            })
    }

    fn no_quic_answer(&self) -> ClientError {
        ClientError::new(
            ErrorKind::Connect,
            format!(
                "no HTTP/3 (QUIC) answer from {} within {:?}: is the server listening on UDP?",
                self.addr, self.connect_timeout
            ),
        )
    }

    async fn connect_tcp(&self) -> Result<(TcpStream, Duration), ClientError> {
        let start = Instant::now();
        let stream = match timeout(self.connect_timeout, TcpStream::connect(self.addr)).await {
            Err(_) => {
                return Err(ClientError::new(
                    ErrorKind::Connect,
                    format!(
                        "TCP connect to {} timed out after {:?}: is the server up?",
                        self.addr, self.connect_timeout
                    ),
                ))
            }
            Ok(Err(err)) => {
                return Err(ClientError::new(
                    ErrorKind::Connect,
                    format!("TCP connect to {}: {err}", self.addr),
                ))
            }
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
            Err(_) => {
                return Err(ClientError::new(
                    ErrorKind::Timeout,
                    format!(
                        "TLS handshake with {} did not finish within {:?}",
                        self.addr, self.connect_timeout
                    ),
                ))
            }
            Ok(Err(err)) => return Err(tls_failure(self.addr, &error_chain(&err))),
            Ok(Ok(tls)) => tls,
        };
        let handshake_time = start.elapsed();
        let session = tls.get_ref().1;
        let alpn = session.alpn_protocol();
        if self.proto == Proto::H2 && alpn != Some(b"h2".as_slice()) {
            return Err(ClientError::new(
                ErrorKind::Protocol,
                format!(
                    "the server at {} did not agree to HTTP/2 in ALPN; try --proto h1 or --proto h3",
                    self.addr
                ),
            ));
        }
        let timing = ConnectTiming {
            tcp_connect: Some(tcp_time),
            handshake: Some(handshake_time),
            resumed: Some(session.handshake_kind() == Some(HandshakeKind::Resumed)),
        };
        Ok((tls, timing))
    }
}

fn quic_client(addr: SocketAddr, tls: &Arc<rustls::ClientConfig>) -> anyhow::Result<QuicClient> {
    let bind: SocketAddr = if addr.is_ipv6() {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    };
    let endpoint = quinn::Endpoint::client(bind)
        .map_err(|err| anyhow::anyhow!("binding a UDP socket on {bind} for HTTP/3: {err}"))?;
    let crypto = QuicClientConfig::try_from(tls.clone())
        .map_err(|err| anyhow::anyhow!("TLS configuration unusable for QUIC: {err}"))?;
    Ok(QuicClient {
        endpoint,
        config: quinn::ClientConfig::new(Arc::new(crypto)),
    })
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

async fn start_h3(conn: quinn::Connection) -> Result<Sender, ClientError> {
    let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn.clone()))
        .await
        .map_err(|err| ClientError::new(ErrorKind::Protocol, format!("HTTP/3 set-up: {err}")))?;
    tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    Ok(Sender {
        inner: SenderInner::H3 { send, conn },
    })
}

fn is_crypto_code(code: quinn::TransportErrorCode) -> bool {
    (0x100..0x200).contains(&u64::from(code))
}

fn quic_connect_error(err: quinn::ConnectionError, addr: SocketAddr) -> ClientError {
    use quinn::ConnectionError as E;
    match &err {
        E::TransportError(transport) if is_crypto_code(transport.code) => {
            tls_failure(addr, &err.to_string())
        }
        E::ConnectionClosed(close) if is_crypto_code(close.error_code) => {
            tls_failure(addr, &err.to_string())
        }
        E::VersionMismatch | E::TransportError(_) => ClientError::new(
            ErrorKind::Protocol,
            format!("QUIC handshake with {addr}: {err}"),
        ),
        _ => ClientError::new(
            ErrorKind::Connect,
            format!("QUIC handshake with {addr}: {err}"),
        ),
    }
}

/// Certificate problems get the fix; other TLS failures keep their detail.
fn tls_failure(addr: SocketAddr, detail: &str) -> ClientError {
    let hint = if detail.contains("CaUsedAsEndEntity") {
        "; the server's certificate says it is a CA (basicConstraints CA:TRUE), which \
         TLS refuses as a server certificate even with --ca: give the server a leaf \
         certificate (e.g. openssl req -x509 ... -addext basicConstraints=critical,CA:FALSE) \
         or use --insecure"
    } else if detail.to_ascii_lowercase().contains("certificate") {
        "; use --insecure or --ca FILE to trust the server's certificate"
    } else if detail.to_ascii_lowercase().contains("application") {
        "; the server does not offer this protocol in ALPN, try another --proto"
    } else {
        ""
    };
    ClientError::new(
        ErrorKind::Tls,
        format!("TLS handshake with {addr} failed: {detail}{hint}"),
    )
}

/// Sends requests on one connection. h2 and h3 handles can be cloned to run
/// concurrent streams; an h1 handle carries one request at a time.
pub struct Sender {
    inner: SenderInner,
}

enum SenderInner {
    H1(http1::SendRequest<Full<Bytes>>),
    /// h2 directly rather than through hyper: hyper's client spawns a task
    /// and passes two channels per request, which cost more CPU than the
    /// whole HTTP/2 exchange. `closed` is set when the connection ends.
    H2 {
        send: h2::client::SendRequest<Bytes>,
        closed: Arc<AtomicBool>,
    },
    H3 {
        send: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
        conn: quinn::Connection,
    },
}

impl Sender {
    /// Another handle on the same connection (h2/h3); `None` for h1.
    pub fn try_clone(&self) -> Option<Sender> {
        let inner = match &self.inner {
            SenderInner::H1(_) => return None,
            SenderInner::H2 { send, closed } => SenderInner::H2 {
                send: send.clone(),
                closed: closed.clone(),
            },
            SenderInner::H3 { send, conn } => SenderInner::H3 {
                send: send.clone(),
                conn: conn.clone(),
            },
        };
        Some(Sender { inner })
    }

    /// True once the connection can carry no more requests.
    pub fn is_closed(&self) -> bool {
        match &self.inner {
            SenderInner::H1(send) => send.is_closed(),
            SenderInner::H2 { closed, .. } => closed.load(Ordering::Relaxed),
            SenderInner::H3 { conn, .. } => conn.close_reason().is_some(),
        }
    }

    /// Sends one request and waits for the response head (its first byte).
    pub async fn send(&mut self, template: &RequestTemplate) -> Result<Response, ClientError> {
        match &mut self.inner {
            SenderInner::H1(send) => {
                send.ready().await.map_err(closed_before_send)?;
                let response = send
                    .send_request(template.h1())
                    .await
                    .map_err(ClientError::from_hyper)?;
                Ok(Response::hyper(response))
            }
            SenderInner::H2 { send, .. } => send_h2(send, template).await,
            SenderInner::H3 { send, .. } => send_h3(send, template).await,
        }
    }
}

async fn send_h2(
    send: &mut h2::client::SendRequest<Bytes>,
    template: &RequestTemplate,
) -> Result<Response, ClientError> {
    std::future::poll_fn(|cx| send.poll_ready(cx))
        .await
        .map_err(|err| {
            ClientError::closed_before_send(format!("HTTP/2 connection closed: {err}"))
        })?;
    let end_of_stream = template.body().is_empty();
    let (response, mut body) = send
        .send_request(template.multiplexed(), end_of_stream)
        .map_err(|err| match err.is_go_away() || err.is_io() {
            true => ClientError::closed_before_send(format!("HTTP/2 connection closed: {err}")),
            false => ClientError::from_h2(err),
        })?;
    if !end_of_stream {
        // h2 queues what the peer's window does not admit yet.
        body.send_data(template.body().clone(), true)
            .map_err(ClientError::from_h2)?;
    }
    let response = response.await.map_err(|err| {
        if err.is_remote() && (err.is_go_away() || err.reason() == Some(h2::Reason::REFUSED_STREAM))
        {
            // Above the GOAWAY's last stream id, or refused: the server
            // did not process it (RFC 9113 8.7), so it may go elsewhere.
            // nginx does this after keepalive_requests.
            ClientError::closed_before_send(format!("HTTP/2 request not processed: {err}"))
        } else {
            ClientError::from_h2(err)
        }
    })?;
    Ok(Response {
        status: response.status(),
        body: Body::H2(response.into_body()),
    })
}

fn closed_before_send(err: hyper::Error) -> ClientError {
    ClientError::closed_before_send(format!("connection closed: {}", error_chain(&err)))
}

async fn send_h3(
    send: &mut h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    template: &RequestTemplate,
) -> Result<Response, ClientError> {
    let mut stream = send
        .send_request(template.multiplexed())
        .await
        .map_err(ClientError::from_h3_stream)?;
    if !template.body().is_empty() {
        stream
            .send_data(template.body().clone())
            .await
            .map_err(ClientError::from_h3_stream)?;
    }
    stream.finish().await.map_err(ClientError::from_h3_stream)?;
    let head = stream
        .recv_response()
        .await
        .map_err(ClientError::from_h3_stream)?;
    Ok(Response {
        status: head.status(),
        body: Body::H3(stream),
    })
}

/// A response whose head has arrived; the body is still on the wire.
pub struct Response {
    status: StatusCode,
    body: Body,
}

// Boxing the h3 stream would add an allocation per request; a response
// is moved only once, so its size costs less than that.
#[allow(clippy::large_enum_variant)]
enum Body {
    Hyper(hyper::body::Incoming),
    H2(h2::RecvStream),
    H3(h3::client::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>),
}

impl Response {
    fn hyper(response: http::Response<hyper::body::Incoming>) -> Response {
        Response {
            status: response.status(),
            body: Body::Hyper(response.into_body()),
        }
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// Reads the body to its end without copying it and returns its length.
    pub async fn drain(self) -> Result<u64, ClientError> {
        let mut received = 0u64;
        match self.body {
            Body::Hyper(mut body) => {
                while let Some(frame) = body.frame().await {
                    let frame = frame.map_err(ClientError::from_hyper)?;
                    if let Some(data) = frame.data_ref() {
                        received += data.len() as u64;
                    }
                }
            }
            Body::H2(mut body) => {
                while let Some(data) = body.data().await {
                    let data = data.map_err(ClientError::from_h2)?;
                    received += data.len() as u64;
                    // Hand the window back so the peer may send on.
                    body.flow_control()
                        .release_capacity(data.len())
                        .map_err(ClientError::from_h2)?;
                }
            }
            Body::H3(mut stream) => {
                while let Some(chunk) = stream
                    .recv_data()
                    .await
                    .map_err(ClientError::from_h3_stream)?
                {
                    received += chunk.remaining() as u64;
                }
            }
        }
        Ok(received)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_failures_name_the_fix() {
        let addr: SocketAddr = "127.0.0.1:443".parse().unwrap();
        let ca = tls_failure(
            addr,
            "invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))",
        );
        assert!(ca.to_string().contains("CA:FALSE"), "{ca}");
        let unknown = tls_failure(addr, "invalid peer certificate: UnknownIssuer");
        assert!(
            unknown.to_string().contains("--insecure or --ca FILE"),
            "{unknown}"
        );
        assert_eq!(unknown.kind(), ErrorKind::Tls);
    }
}
