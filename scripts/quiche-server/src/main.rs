//! quiche-server serves the files under a directory over HTTP/3 with
//! Cloudflare's quiche, driven by tokio-quiche as Cloudflare deploys it. It
//! is the "Cloudflare quiche" row of h3lab's `servers` preset, a peer to
//! measure beside the other servers on the same file tree: GET and HEAD
//! only, no HTTP/1.1 or HTTP/2, no ranges, no compression, no directory
//! listings, no logging. It is not a production server.
//!
//! Usage: `quiche-server IP PORT CERT_PEM KEY_PEM ROOT_DIR`. Once the UDP
//! socket is bound it prints `listening on IP:PORT` and stays quiet.
//!
//! Each response is read in 64 KiB chunks and handed to tokio-quiche's
//! per-stream channel, which holds at most 16 chunks: a send waits while
//! quiche's flow control or congestion window keeps the stream from
//! taking more, so a 1 GB file never sits in memory. The reads are plain
//! blocking reads on the runtime's threads, as nginx does without aio;
//! the served files are expected to be in the page cache.

use std::fs::File;
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::exit;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use tokio_quiche::buf_factory::BufFactory;
use tokio_quiche::http3::driver::{
    H3Event, IncomingH3Headers, OutboundFrame, OutboundFrameSender, ServerH3Event,
};
use tokio_quiche::http3::settings::Http3Settings;
use tokio_quiche::metrics::DefaultMetrics;
use tokio_quiche::quiche::h3::{Header, NameValue};
use tokio_quiche::settings::{CertificateKind, Hooks, QuicSettings, TlsCertificatePaths};
use tokio_quiche::{ConnectionParams, ServerH3Driver};

const USAGE: &str = "usage: quiche-server IP PORT CERT_PEM KEY_PEM ROOT_DIR";
/// The body chunk handed to tokio-quiche, its own largest buffer.
const CHUNK_BYTES: usize = BufFactory::MAX_BUF_SIZE;
const MIB: u64 = 1024 * 1024;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [ip, port, cert, key, root] = args.as_slice() else {
        fail(USAGE)
    };
    let ip: IpAddr = ip.parse().unwrap_or_else(|_| {
        fail(&format!(
            "quiche-server: {ip:?} is not an IP address\n{USAGE}"
        ))
    });
    let port: u16 = port
        .parse()
        .unwrap_or_else(|_| fail(&format!("quiche-server: {port:?} is not a port\n{USAGE}")));
    for file in [cert, key] {
        if !Path::new(file).is_file() {
            fail(&format!("quiche-server: {file} is not a readable file"));
        }
    }
    if !Path::new(root).is_dir() {
        fail(&format!("quiche-server: {root} is not a directory"));
    }

    let socket = tokio::net::UdpSocket::bind(SocketAddr::new(ip, port))
        .await
        .unwrap_or_else(|err| fail(&format!("quiche-server: binding UDP {ip}:{port}: {err}")));
    let local = socket
        .local_addr()
        .unwrap_or_else(|err| fail(&err.to_string()));
    let params = ConnectionParams::new_server(
        quic_settings(),
        TlsCertificatePaths {
            cert,
            private_key: key,
            kind: CertificateKind::X509,
        },
        Hooks::default(),
    );
    let mut listeners = tokio_quiche::listen([socket], params, DefaultMetrics)
        .unwrap_or_else(|err| {
            fail(&format!(
                "quiche-server: starting QUIC on {local}: {err} (are {cert} and {key} a PEM certificate and its key?)"
            ))
        });
    println!("listening on {local}");

    let root = Arc::new(PathBuf::from(root));
    let mut connections = listeners.remove(0);
    while let Some(connection) = connections.next().await {
        // An error here is one failed accept: keep listening.
        let Ok(connection) = connection else { continue };
        let (driver, mut controller) = ServerH3Driver::new(Http3Settings::default());
        connection.start(driver);
        let root = Arc::clone(&root);
        tokio::spawn(async move {
            while let Some(event) = controller.event_receiver_mut().recv().await {
                match event {
                    ServerH3Event::Headers {
                        incoming_headers, ..
                    } => {
                        tokio::spawn(respond(Arc::clone(&root), incoming_headers));
                    }
                    ServerH3Event::Core(
                        H3Event::ConnectionShutdown(_) | H3Event::ConnectionError(_),
                    ) => break,
                    ServerH3Event::Core(_) => {}
                }
            }
        });
    }
}

fn fail(message: &str) -> ! {
    eprintln!("{message}");
    exit(1)
}

/// tokio-quiche's defaults but for the windows and limits below, wide
/// enough that a client running 25+ concurrent streams never waits on a
/// limit of ours. Congestion control is left alone (see Cargo.toml).
fn quic_settings() -> QuicSettings {
    let mut settings = QuicSettings::default();
    settings.initial_max_data = 64 * MIB;
    settings.max_connection_window = 64 * MIB;
    settings.initial_max_stream_data_bidi_local = 16 * MIB;
    settings.initial_max_stream_data_bidi_remote = 16 * MIB;
    settings.max_stream_window = 16 * MIB;
    settings.initial_max_streams_bidi = 256;
    settings.max_idle_timeout = Some(Duration::from_secs(30));
    // 0-RTT on resumption; BoringSSL issues session tickets by default.
    settings.enable_early_data = true;
    // tokio-quiche's default sends every new client a Retry first, a round
    // trip that servers do not spend by default (quic-go, nginx, ngtcp2).
    settings.disable_client_ip_validation = true;
    settings
}

async fn respond(root: Arc<PathBuf>, request: IncomingH3Headers) {
    let mut send = request.send;
    let header = |name: &[u8]| {
        request
            .headers
            .iter()
            .find(|h| h.name() == name)
            .map(|h| h.value().to_vec())
            .unwrap_or_default()
    };
    let method = header(b":method");
    if method != b"GET" && method != b"HEAD" {
        return short_response(&mut send, b"405", "method not allowed\n").await;
    }
    let Some((mut file, length)) = open(&root, &header(b":path")) else {
        return short_response(&mut send, b"404", "not found\n").await;
    };
    let headers = vec![
        Header::new(b":status", b"200"),
        Header::new(b"content-type", content_type(&header(b":path")).as_bytes()),
        Header::new(b"content-length", length.to_string().as_bytes()),
        Header::new(b"cache-control", b"no-store"),
    ];
    if send
        .send(OutboundFrame::Headers(headers, None))
        .await
        .is_err()
    {
        return;
    }
    let mut remaining = if method == b"HEAD" { 0 } else { length };
    if remaining == 0 {
        let _ = send.send(OutboundFrame::Body(Bytes::new(), true)).await;
        return;
    }
    while remaining > 0 {
        let want = remaining.min(CHUNK_BYTES as u64);
        let mut chunk = Vec::with_capacity(want as usize);
        match (&mut file).take(want).read_to_end(&mut chunk) {
            Ok(read) if read > 0 => remaining -= read as u64,
            // The file shrank or failed under us: reset the stream rather
            // than end a response shorter than its content-length.
            _ => {
                let _ = send.send(OutboundFrame::PeerStreamError).await;
                return;
            }
        }
        let frame = OutboundFrame::Body(Bytes::from(chunk), remaining == 0);
        if send.send(frame).await.is_err() {
            return; // the stream or the connection is gone
        }
    }
}

/// A response with a short text body, for errors.
async fn short_response(send: &mut OutboundFrameSender, status: &[u8], body: &'static str) {
    let headers = vec![
        Header::new(b":status", status),
        Header::new(b"content-type", b"text/plain"),
        Header::new(b"content-length", body.len().to_string().as_bytes()),
        Header::new(b"cache-control", b"no-store"),
    ];
    if send
        .send(OutboundFrame::Headers(headers, None))
        .await
        .is_ok()
    {
        let _ = send
            .send(OutboundFrame::Body(
                Bytes::from_static(body.as_bytes()),
                true,
            ))
            .await;
    }
}

/// The regular file a request path names under root, and its length: the
/// query is dropped, a path ending in `/` names its index.html, and a path
/// with a `..` segment names nothing.
fn open(root: &Path, path: &[u8]) -> Option<(File, u64)> {
    let path = std::str::from_utf8(path).ok()?;
    let path = path.split(['?', '#']).next()?.strip_prefix('/')?;
    if path.split('/').any(|segment| segment == "..") || path.contains('\\') {
        return None;
    }
    let mut file_path = root.join(path);
    if path.is_empty() || path.ends_with('/') {
        file_path.push("index.html");
    }
    let file = File::open(file_path).ok()?;
    let metadata = file.metadata().ok()?;
    metadata.is_file().then_some((file, metadata.len()))
}

fn content_type(path: &[u8]) -> &'static str {
    let path = String::from_utf8_lossy(path);
    let path = path.split(['?', '#']).next().unwrap_or("");
    let path = if path.ends_with('/') {
        "index.html"
    } else {
        path
    };
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css",
        Some("js") => "text/javascript",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    }
}
