//! Minimal h1, h2 and h3 clients for testing the server over real sockets.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures::future::poll_fn;
pub use h3lab_results::Proto;
use h3lab_server::{Limits, RunningServer, ServerConfig};
use http::{HeaderMap, Request, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

pub const PROTOCOLS: [Proto; 3] = [Proto::H1, Proto::H2, Proto::H3];

#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

pub type ClientBody = UnsyncBoxBody<Bytes, Infallible>;

pub fn full(data: Bytes) -> ClientBody {
    Full::new(data).boxed_unsync()
}

/// A body with no declared length (chunked on h1), so the server must
/// enforce its limit while reading.
pub fn streamed(data: Bytes) -> ClientBody {
    let half = data.len() / 2;
    let chunks = vec![data.slice(..half), data.slice(half..)];
    let frames = futures::stream::iter(chunks.into_iter().map(|c| Ok(Frame::data(c))));
    StreamBody::new(frames).boxed_unsync()
}

pub fn test_config(root: Option<PathBuf>, limits: Limits) -> ServerConfig {
    ServerConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        root,
        limits,
        ..ServerConfig::default()
    }
}

pub async fn start(root: Option<PathBuf>, limits: Limits) -> RunningServer {
    h3lab_server::start(test_config(root, limits))
        .await
        .unwrap()
}

/// Polls `condition` every 10 ms for up to 10 s; false if it never held.
pub async fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    for _ in 0..1000 {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// TLS 1.3 client config trusting only `server`'s certificate; resumption is on by default.
pub fn client_tls(server: &RunningServer, alpn: &[&[u8]]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut server.cert_pem().unwrap().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config
}

pub fn tcp_tls(server: &RunningServer, proto: Proto) -> Arc<rustls::ClientConfig> {
    let alpn: &[u8] = match proto {
        Proto::H2 => b"h2",
        _ => b"http/1.1",
    };
    Arc::new(client_tls(server, &[alpn]))
}

enum Sender {
    H1(hyper::client::conn::http1::SendRequest<ClientBody>),
    H2(hyper::client::conn::http2::SendRequest<ClientBody>),
    H3(h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>),
}

/// One client connection of the given protocol.
pub struct Client {
    pub proto: Proto,
    pub addr: SocketAddr,
    /// Whether the TLS handshake resumed an earlier session.
    pub resumed: bool,
    sender: Sender,
    quic: Option<(quinn::Endpoint, quinn::Connection)>,
}

pub async fn connect(server: &RunningServer, proto: Proto) -> Client {
    match proto {
        Proto::H3 => connect_h3(&quic_endpoint(server), server.local_addr()).await,
        _ => connect_tcp(server.local_addr(), tcp_tls(server, proto), proto).await,
    }
}

pub async fn connect_tcp(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    proto: Proto,
) -> Client {
    let tcp = TcpStream::connect(addr).await.unwrap();
    client_over(tcp, addr, config, proto).await
}

/// Like [`connect_tcp`], from another loopback address (another peer to the server).
pub async fn connect_tcp_from(
    local: std::net::IpAddr,
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    proto: Proto,
) -> Client {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(local, 0)).unwrap();
    let tcp = socket.connect(addr).await.unwrap();
    client_over(tcp, addr, config, proto).await
}

async fn client_over(
    tcp: TcpStream,
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    proto: Proto,
) -> Client {
    let name = ServerName::try_from("localhost").unwrap();
    let tls = TlsConnector::from(config).connect(name, tcp).await.unwrap();
    let session = tls.get_ref().1;
    let resumed = session.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    let expected_alpn: &[u8] = match proto {
        Proto::H2 => b"h2",
        _ => b"http/1.1",
    };
    assert_eq!(session.alpn_protocol(), Some(expected_alpn));
    let io = TokioIo::new(tls);
    let sender = match proto {
        Proto::H2 => {
            let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                .await
                .unwrap();
            tokio::spawn(conn);
            Sender::H2(sender)
        }
        _ => {
            let (sender, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
            tokio::spawn(conn);
            Sender::H1(sender)
        }
    };
    Client {
        proto,
        addr,
        resumed,
        sender,
        quic: None,
    }
}

/// A QUIC client endpoint trusting `server`, with 0-RTT enabled.
pub fn quic_endpoint(server: &RunningServer) -> quinn::Endpoint {
    let mut tls = client_tls(server, &[b"h3"]);
    tls.enable_early_data = true;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    endpoint
}

pub async fn connect_h3(endpoint: &quinn::Endpoint, addr: SocketAddr) -> Client {
    let connection = endpoint.connect(addr, "localhost").unwrap().await.unwrap();
    h3_over(endpoint, connection).await
}

pub async fn h3_over(endpoint: &quinn::Endpoint, connection: quinn::Connection) -> Client {
    let (mut driver, sender) = h3::client::new(h3_quinn::Connection::new(connection.clone()))
        .await
        .unwrap();
    tokio::spawn(async move { poll_fn(|cx| driver.poll_close(cx)).await });
    Client {
        proto: Proto::H3,
        addr: connection.remote_address(),
        resumed: false,
        sender: Sender::H3(sender),
        quic: Some((endpoint.clone(), connection)),
    }
}

impl Client {
    pub async fn get(&mut self, path: &str) -> Reply {
        self.send("GET", path, HeaderMap::new(), full(Bytes::new()))
            .await
    }

    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: HeaderMap,
        body: ClientBody,
    ) -> Reply {
        let port = self.addr.port();
        let uri = match self.proto {
            Proto::H1 => path.to_string(),
            _ => format!("https://localhost:{port}{path}"),
        };
        let mut request = Request::builder().method(method).uri(uri);
        if self.proto == Proto::H1 {
            request = request.header("host", format!("localhost:{port}"));
        }
        let mut request = request.body(body).unwrap();
        request.headers_mut().extend(headers);
        match &mut self.sender {
            Sender::H1(sender) => {
                sender.ready().await.expect("h1 connection ready");
                into_reply(sender.send_request(request).await.expect("h1 response")).await
            }
            Sender::H2(sender) => {
                sender.ready().await.expect("h2 connection ready");
                into_reply(sender.send_request(request).await.expect("h2 response")).await
            }
            Sender::H3(sender) => send_h3(sender, request).await.unwrap(),
        }
    }

    /// Like [`Client::send`], but an h3 request the client refuses to send
    /// (e.g. headers over the server's advertised limit) is an `Err`.
    pub async fn try_send(
        &mut self,
        method: &str,
        path: &str,
        headers: HeaderMap,
        body: ClientBody,
    ) -> Result<Reply, String> {
        match (&mut self.sender, self.proto) {
            (Sender::H3(sender), _) => {
                let port = self.addr.port();
                let mut request = Request::builder()
                    .method(method)
                    .uri(format!("https://localhost:{port}{path}"))
                    .body(body)
                    .unwrap();
                request.headers_mut().extend(headers);
                send_h3(sender, request)
                    .await
                    .map_err(|err| format!("{err:?}"))
            }
            _ => Ok(self.send(method, path, headers, body).await),
        }
    }

    /// Sends an h2 GET for `path` and drops it unanswered once it has had
    /// time to go out, so the client resets the stream (RST_STREAM CANCEL).
    /// False once the connection takes no new request (or one was answered).
    pub async fn cancel_h2(&mut self, path: &str) -> bool {
        let Sender::H2(sender) = &mut self.sender else {
            panic!("cancel_h2 needs an h2 client");
        };
        if sender.ready().await.is_err() {
            return false;
        }
        let uri = format!("https://localhost:{}{path}", self.addr.port());
        let request = Request::get(uri).body(full(Bytes::new())).unwrap();
        let response = sender.send_request(request);
        tokio::time::timeout(Duration::from_millis(5), response)
            .await
            .is_err()
    }

    /// The QUIC connection, for h3 clients.
    pub fn connection(&self) -> Option<quinn::Connection> {
        self.quic.as_ref().map(|(_, connection)| connection.clone())
    }

    /// Whether the server has closed the connection.
    pub fn is_closed(&self) -> bool {
        match (&self.sender, &self.quic) {
            (Sender::H1(sender), _) => sender.is_closed(),
            (Sender::H2(sender), _) => sender.is_closed(),
            (Sender::H3(_), Some((_, connection))) => connection.close_reason().is_some(),
            (Sender::H3(_), None) => unreachable!("an h3 client has a QUIC connection"),
        }
    }

    /// Why a QUIC connection closed, if it has.
    pub fn quic_close_reason(&self) -> Option<quinn::ConnectionError> {
        self.quic.as_ref()?.1.close_reason()
    }

    /// Closes a QUIC connection cleanly; TCP clients close when dropped.
    pub fn close(&self) {
        if let Some((endpoint, connection)) = &self.quic {
            connection.close(0u32.into(), b"done");
            endpoint.close(0u32.into(), b"done");
        }
    }
}

async fn into_reply(response: http::Response<hyper::body::Incoming>) -> Reply {
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

async fn send_h3(
    sender: &mut h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    request: Request<ClientBody>,
) -> Result<Reply, h3::error::StreamError> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    let mut stream = sender.send_request(Request::from_parts(parts, ())).await?;
    // The server may answer (e.g. 413) and stop reading before the whole body is sent.
    if !body.is_empty() {
        let _ = stream.send_data(body).await;
    }
    let _ = stream.finish().await;
    let response = stream.recv_response().await.unwrap();
    let mut data = BytesMut::new();
    while let Some(chunk) = stream.recv_data().await.unwrap() {
        data.put(chunk);
    }
    let (parts, ()) = response.into_parts();
    Ok(Reply {
        status: parts.status,
        headers: parts.headers,
        body: data.freeze(),
    })
}

/// `scratch/site` holding `files`, beside `scratch/secret.txt` holding
/// `secret`, with `site/escape.txt` a symlink to it: what no file server
/// may serve.
pub fn site_with_secret(name: &str, files: &[(&str, &[u8])], secret: &str) -> ScratchDir {
    let scratch = ScratchDir::new(name);
    let root = scratch.0.join("site");
    for (path, body) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
    std::fs::write(scratch.0.join("secret.txt"), secret).unwrap();
    std::os::unix::fs::symlink(scratch.0.join("secret.txt"), root.join("escape.txt")).unwrap();
    scratch
}

/// Asserts that each path answers its status and that no answer shows
/// `secret`.
pub async fn assert_refused(
    client: &mut Client,
    proto: Proto,
    cases: &[(&str, StatusCode)],
    secret: &str,
) {
    for &(path, status) in cases {
        let reply = client.get(path).await;
        assert_eq!(reply.status, status, "{proto:?} {path}");
        let body = String::from_utf8_lossy(&reply.body);
        assert!(!body.contains(secret), "{proto:?} {path} leaked the file");
    }
}

/// A scratch directory, removed on drop.
pub struct ScratchDir(pub PathBuf);

impl ScratchDir {
    /// A directory of its own for each call: tests run in parallel, and two
    /// that shared one (the same `name` in one process) removed each
    /// other's files while the server was reading them.
    pub fn new(name: &str) -> Self {
        static MADE: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "h3lab-server-{name}-{}-{}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
