//! The native half of `h3lab-node`: h3lab's server (TLS, QUIC, HTTP/3,
//! HTTP/1.1 and HTTP/2 stay in Rust) with each request handed to a
//! JavaScript handler. `index.js` builds Node-style `req` and `res` objects
//! on top of it.
//!
//! JavaScript is entered once per request (its head, through a thread-safe
//! function) and once per body chunk (a `read` or `write` call), never per
//! packet. It is not a general binding of the server crate: no built-in
//! endpoints, no tuning flags.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use h3lab_results::QuicCongestion;
use h3lab_server::{
    App, AppRequest, AppResponse, BodyStream, Hooks, RunningServer, ServerConfig, ServerEvent,
    TlsSource,
};
use http::{HeaderName, HeaderValue, Response, StatusCode};
use napi::bindgen_prelude::{Buffer, Status};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use tokio::sync::{mpsc, oneshot};

mod stats;

/// Body chunks queued between JavaScript and the connection; a `write`
/// beyond them waits (backpressure).
const BODY_QUEUE: usize = 8;
/// How long a handler may take to answer, and to send each body chunk,
/// unless `handlerTimeoutMs` says otherwise.
const DEFAULT_HANDLER_TIMEOUT: Duration = Duration::from_secs(30);

/// Options of `createHttp3Server`.
#[napi(object)]
pub struct NativeOptions {
    /// PEM certificate chain; with `key`. Without both, a self-signed
    /// certificate is generated.
    pub cert: Option<String>,
    /// PEM private key.
    pub key: Option<String>,
    /// Serve HTTP/1.1 and HTTP/2 on the same TCP port, with `Alt-Svc`
    /// advertising HTTP/3 (default true).
    pub dual_stack: Option<bool>,
    /// A handler that has not answered, or sent its next body chunk, within
    /// this is timed out: 504 before the head, a reset stream after it.
    pub handler_timeout_ms: Option<u32>,
}

/// One request's head, as the JavaScript handler gets it.
#[napi(object)]
pub struct RequestHead {
    pub id: u32,
    pub method: String,
    /// Path and query.
    pub url: String,
    pub authority: Option<String>,
    pub scheme: String,
    /// Name and value, alternating, names in lower case.
    pub headers: Vec<String>,
    /// `1.1`, `2.0` or `3`.
    pub http_version: String,
    pub remote_address: String,
    pub remote_port: u32,
}

/// A connection event: `session`, `sessionClose`, `migrate` or `0rtt`.
#[napi(object)]
pub struct EventRecord {
    pub kind: String,
    pub protocol: Option<String>,
    pub address: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub accepted: Option<bool>,
}

/// Where the server listens.
#[napi(object)]
pub struct AddressInfo {
    pub address: String,
    pub port: u32,
    pub family: String,
    /// Whether HTTP/3 is served (UDP bound).
    pub h3: bool,
    /// The server's certificate (PEM), for clients that must trust it.
    pub cert_pem: Option<String>,
    /// Base64 SHA-256 of the certificate's public key (Chromium's
    /// `--ignore-certificate-errors-spki-list`).
    pub spki_sha256: Option<String>,
}

// Weak: they do not keep Node's event loop alive; index.js holds a handle
// while the server listens, as Node's own servers do.
type RequestCallback = ThreadsafeFunction<RequestHead, (), RequestHead, Status, false, true>;
type EventCallback = ThreadsafeFunction<EventRecord, (), EventRecord, Status, false, true>;

/// Requests between their head and the end of their response.
#[derive(Default)]
struct Exchanges {
    next_id: AtomicU32,
    open: Mutex<HashMap<u32, Exchange>>,
}

struct Exchange {
    /// Taken by the response head.
    head: Option<oneshot::Sender<Response<BodyStream>>>,
    /// The response body's queue, once the head is sent.
    body: Option<mpsc::Sender<Bytes>>,
    /// Resets the response stream (the handler failed or destroyed it).
    abort: Option<oneshot::Sender<()>>,
    request_body: Arc<tokio::sync::Mutex<BodyStream>>,
}

impl Exchanges {
    fn with<T>(
        &self,
        id: u32,
        f: impl FnOnce(&mut Exchange) -> napi::Result<T>,
    ) -> napi::Result<T> {
        let mut open = self.open.lock().expect("exchanges lock");
        let exchange = open.get_mut(&id).ok_or_else(|| {
            napi::Error::from_reason("the request has ended (its stream was closed or timed out)")
        })?;
        f(exchange)
    }

    fn remove(&self, id: u32) {
        self.open.lock().expect("exchanges lock").remove(&id);
    }
}

/// Removes its exchange when the request's future or response body is
/// dropped, however the request ended.
struct ExchangeGuard {
    id: u32,
    exchanges: Arc<Exchanges>,
}

impl Drop for ExchangeGuard {
    fn drop(&mut self) {
        self.exchanges.remove(self.id);
    }
}

/// The [`App`] that hands each request to JavaScript.
struct JsApp {
    on_request: RequestCallback,
    exchanges: Arc<Exchanges>,
    timeout: Duration,
}

impl App for JsApp {
    fn call(&self, request: AppRequest) -> AppResponse {
        let id = self.exchanges.next_id.fetch_add(1, Ordering::Relaxed);
        let (head_tx, head_rx) = oneshot::channel();
        let head = request_head(id, &request);
        let exchange = Exchange {
            head: Some(head_tx),
            body: None,
            abort: None,
            request_body: Arc::new(tokio::sync::Mutex::new(request.body)),
        };
        self.exchanges
            .open
            .lock()
            .expect("exchanges lock")
            .insert(id, exchange);
        let guard = ExchangeGuard {
            id,
            exchanges: self.exchanges.clone(),
        };
        let status = self
            .on_request
            .call(head, ThreadsafeFunctionCallMode::NonBlocking);
        let timeout = self.timeout;
        Box::pin(async move {
            if status != Status::Ok {
                return plain(StatusCode::SERVICE_UNAVAILABLE, "the server is closing");
            }
            match tokio::time::timeout(timeout, head_rx).await {
                Ok(Ok(response)) => response.map(|body| guarded(body, guard)),
                Ok(Err(_)) => plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the request handler ended the response without answering",
                ),
                Err(_) => plain(
                    StatusCode::GATEWAY_TIMEOUT,
                    &format!("the request handler did not answer within {timeout:?}"),
                ),
            }
        })
    }
}

/// A response body that keeps its exchange open until the body ends.
fn guarded(body: BodyStream, guard: ExchangeGuard) -> BodyStream {
    body.map(move |chunk| {
        let _ = &guard;
        chunk
    })
    .boxed()
}

fn request_head(id: u32, request: &AppRequest) -> RequestHead {
    let mut headers = Vec::with_capacity(request.headers.len() * 2);
    for (name, value) in &request.headers {
        headers.push(name.as_str().to_string());
        headers.push(String::from_utf8_lossy(value.as_bytes()).into_owned());
    }
    let http_version = match request.protocol {
        h3lab_results::Proto::H1 => "1.1",
        // A request arrives over h2 or h3; `auto` is a client's choice.
        h3lab_results::Proto::H2 | h3lab_results::Proto::Auto => "2.0",
        h3lab_results::Proto::H3 => "3",
    };
    RequestHead {
        id,
        method: request.method.to_string(),
        url: request
            .uri
            .path_and_query()
            .map_or_else(|| "/".to_string(), |p| p.to_string()),
        authority: request.uri.authority().map(|a| a.to_string()),
        scheme: "https".to_string(),
        headers,
        http_version: http_version.to_string(),
        remote_address: request.peer.ip().to_string(),
        remote_port: request.peer.port() as u32,
    }
}

fn plain(status: StatusCode, text: &str) -> Response<BodyStream> {
    let body = Bytes::from(format!("{text}\n"));
    let mut response = Response::new(futures::stream::once(async { Ok(body) }).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The response body's chunks from JavaScript's queue. A chunk that does
/// not come within `timeout`, or an abort, ends the body abnormally (the
/// stream is reset rather than finished short).
fn queued_body(
    rx: mpsc::Receiver<Bytes>,
    abort: oneshot::Receiver<()>,
    first: Option<Bytes>,
    timeout: Duration,
) -> BodyStream {
    let first = futures::stream::iter(first.map(Ok));
    let rest = futures::stream::unfold(Some((rx, Some(abort))), move |state| async move {
        let (mut rx, mut abort) = state?;
        let next = loop {
            tokio::select! {
                biased;
                outcome = async { abort.as_mut().expect("checked").await }, if abort.is_some() => {
                    match outcome {
                        Ok(()) => break Err("the request handler failed mid-response".to_string()),
                        // The sender was dropped: the normal end (the exchange was removed).
                        Err(_) => abort = None,
                    }
                }
                chunk = tokio::time::timeout(timeout, rx.recv()) => break match chunk {
                    Ok(Some(chunk)) => Ok(chunk),
                    Ok(None) => return None,
                    Err(_) => Err(format!("the request handler sent nothing for {timeout:?}")),
                },
            }
        };
        let more = next.is_ok().then_some((rx, abort));
        Some((next, more))
    });
    first.chain(rest).boxed()
}

fn header_map(pairs: &[String]) -> napi::Result<http::HeaderMap> {
    if pairs.len() % 2 != 0 {
        return Err(napi::Error::from_reason(
            "headers must be name, value pairs",
        ));
    }
    let mut map = http::HeaderMap::with_capacity(pairs.len() / 2);
    for pair in pairs.chunks(2) {
        let name = HeaderName::from_bytes(pair[0].to_ascii_lowercase().as_bytes())
            .map_err(|_| napi::Error::from_reason(format!("invalid header name {:?}", pair[0])))?;
        let value = HeaderValue::from_str(&pair[1]).map_err(|_| {
            napi::Error::from_reason(format!("invalid value for header {:?}", pair[0]))
        })?;
        map.append(name, value);
    }
    Ok(map)
}

/// The server: configured at construction, started by `listen`.
#[napi]
pub struct NativeServer {
    config: Mutex<Option<ServerConfig>>,
    running: Mutex<Option<RunningServer>>,
    exchanges: Arc<Exchanges>,
    timeout: Duration,
}

#[napi]
impl NativeServer {
    /// Checks the certificate and key (throws on bad ones) and keeps the
    /// callbacks: `onRequest(head)` for each request, `onEvent(event)` for
    /// connection events.
    #[napi(constructor)]
    pub fn new(
        options: NativeOptions,
        on_request: RequestCallback,
        on_event: EventCallback,
    ) -> napi::Result<Self> {
        let tls = match (options.cert, options.key) {
            (Some(cert), Some(key)) => TlsSource::Pem { cert, key },
            (None, None) => TlsSource::SelfSigned,
            _ => {
                return Err(napi::Error::from_reason(
                    "pass both cert and key (PEM), or neither for a self-signed certificate",
                ))
            }
        };
        h3lab_server::check_tls(&tls)
            .map_err(|err| napi::Error::from_reason(format!("{err:#}")))?;
        let timeout = options
            .handler_timeout_ms
            .map_or(DEFAULT_HANDLER_TIMEOUT, |ms| {
                Duration::from_millis(ms.into())
            });
        if timeout.is_zero() {
            return Err(napi::Error::from_reason("handlerTimeoutMs must be above 0"));
        }
        let exchanges = Arc::new(Exchanges::default());
        let app = JsApp {
            on_request,
            exchanges: exchanges.clone(),
            timeout,
        };
        let on_event = Arc::new(on_event);
        let hooks = Hooks {
            app: Some(Arc::new(app)),
            events: Some(Arc::new(move |event| {
                on_event.call(event_record(event), ThreadsafeFunctionCallMode::NonBlocking);
            })),
        };
        let config = ServerConfig {
            tls,
            serve_tcp: options.dual_stack.unwrap_or(true),
            hooks,
            // As `h3lab serve` runs by default: QUIC's controller of the same
            // family as the kernel's TCP one, so h3 and Node's own h1 and h2
            // compete alike.
            quic_congestion: QuicCongestion::Auto,
            ..ServerConfig::default()
        };
        Ok(Self {
            config: Mutex::new(Some(config)),
            running: Mutex::new(None),
            exchanges,
            timeout,
        })
    }

    /// Binds TCP and UDP on `host:port` (port 0 picks a free one) and serves.
    #[napi]
    pub async fn listen(&self, port: u32, host: String) -> napi::Result<AddressInfo> {
        let mut config = self
            .config
            .lock()
            .expect("config lock")
            .take()
            .ok_or_else(|| napi::Error::from_reason("the server is already listening or closed"))?;
        let ip: std::net::IpAddr = host.parse().map_err(|_| {
            napi::Error::from_reason(format!(
                "host {host:?} is not an IP address; pass one such as 127.0.0.1 or ::"
            ))
        })?;
        let port = u16::try_from(port)
            .map_err(|_| napi::Error::from_reason(format!("port {port} is over 65535")))?;
        config.listen = SocketAddr::new(ip, port);
        let server = h3lab_server::start(config)
            .await
            .map_err(|err| napi::Error::from_reason(format!("{err:#}")))?;
        let addr = server.local_addr();
        let info = AddressInfo {
            address: addr.ip().to_string(),
            port: addr.port() as u32,
            family: if addr.is_ipv4() { "IPv4" } else { "IPv6" }.to_string(),
            h3: server.serves_h3(),
            cert_pem: server.cert_pem().map(str::to_string),
            spki_sha256: server.spki_sha256_base64().map(str::to_string),
        };
        *self.running.lock().expect("running lock") = Some(server);
        Ok(info)
    }

    /// Sends the response head; with `end`, `body` is the whole body.
    /// Otherwise `body`, if any, is the first chunk and `write` sends more.
    #[napi]
    pub fn respond(
        &self,
        id: u32,
        status: u32,
        headers: Vec<String>,
        body: Option<Buffer>,
        end: bool,
    ) -> napi::Result<()> {
        let status = u16::try_from(status)
            .ok()
            .and_then(|s| StatusCode::from_u16(s).ok())
            .filter(|s| !s.is_informational())
            .ok_or_else(|| napi::Error::from_reason(format!("invalid status code {status}")))?;
        let mut headers = header_map(&headers)?;
        let body = body.map(|b| Bytes::copy_from_slice(&b));
        let timeout = self.timeout;
        self.exchanges.with(id, |exchange| {
            let head = exchange
                .head
                .take()
                .ok_or_else(|| napi::Error::from_reason("the response head was already sent"))?;
            let stream = if end {
                let body = body.unwrap_or_default();
                if !headers.contains_key(http::header::CONTENT_LENGTH) {
                    headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(body.len()));
                }
                futures::stream::once(async { Ok(body) }).boxed()
            } else {
                let (tx, rx) = mpsc::channel(BODY_QUEUE);
                let (abort_tx, abort_rx) = oneshot::channel();
                exchange.body = Some(tx);
                exchange.abort = Some(abort_tx);
                queued_body(rx, abort_rx, body, timeout)
            };
            let mut response = Response::new(stream);
            *response.status_mut() = status;
            *response.headers_mut() = headers;
            head.send(response).map_err(|_| {
                napi::Error::from_reason(
                    "the request has ended (its stream was closed or timed out)",
                )
            })
        })?;
        if end {
            self.exchanges.remove(id);
        }
        Ok(())
    }

    /// Queues one body chunk; resolves once it is queued (waits while the
    /// queue is full: backpressure). Rejects if the stream has ended.
    #[napi]
    pub async fn write(&self, id: u32, chunk: Buffer) -> napi::Result<()> {
        let data = Bytes::copy_from_slice(&chunk);
        drop(chunk);
        let sender = self.exchanges.with(id, |exchange| {
            exchange
                .body
                .clone()
                .ok_or_else(|| napi::Error::from_reason("write before the response head"))
        })?;
        sender
            .send(data)
            .await
            .map_err(|_| napi::Error::from_reason("the client closed the stream"))
    }

    /// Ends the response body.
    #[napi]
    pub fn end(&self, id: u32) {
        self.exchanges.remove(id);
    }

    /// Resets the response stream (before the head: a 500), e.g. when the
    /// handler failed after sending the head.
    #[napi]
    pub fn abort(&self, id: u32) {
        let exchange = self
            .exchanges
            .open
            .lock()
            .expect("exchanges lock")
            .remove(&id);
        if let Some(mut exchange) = exchange {
            // Abort while the body's sender still lives: dropped first, it
            // would end the body normally, finishing a short response.
            if let Some(abort) = exchange.abort.take() {
                let _ = abort.send(());
            }
        }
    }

    /// The next request body chunk; `null` at its end. Rejects if the body
    /// ended abnormally (the client reset the stream).
    #[napi]
    pub async fn read(&self, id: u32) -> napi::Result<Option<Buffer>> {
        let Ok(body) = self.exchanges.with(id, |e| Ok(e.request_body.clone())) else {
            return Ok(None);
        };
        let mut body = body.lock().await;
        match body.next().await {
            Some(Ok(chunk)) => Ok(Some(chunk.to_vec().into())),
            Some(Err(reason)) => Err(napi::Error::from_reason(reason)),
            None => Ok(None),
        }
    }

    /// Connections, requests, 0-RTT, migrations, loss and RTT so far.
    #[napi]
    pub fn stats(&self) -> stats::ServerStats {
        let running = self.running.lock().expect("running lock");
        stats::ServerStats::read(running.as_ref())
    }

    /// Stops accepting, sends GOAWAY, lets requests in flight finish (up to
    /// the server's grace), then closes.
    #[napi]
    pub async fn close(&self) -> napi::Result<()> {
        self.config.lock().expect("config lock").take();
        let running = self.running.lock().expect("running lock").take();
        if let Some(server) = running {
            server.shutdown().await;
        }
        Ok(())
    }
}

fn event_record(event: ServerEvent) -> EventRecord {
    let mut record = EventRecord {
        kind: String::new(),
        protocol: None,
        address: None,
        from: None,
        to: None,
        accepted: None,
    };
    match event {
        ServerEvent::Session { protocol, peer } => {
            record.kind = "session".into();
            record.protocol = Some(protocol.to_string());
            record.address = Some(peer.to_string());
        }
        ServerEvent::SessionClosed { protocol, peer } => {
            record.kind = "sessionClose".into();
            record.protocol = Some(protocol.to_string());
            record.address = Some(peer.to_string());
        }
        ServerEvent::Migrate { from, to } => {
            record.kind = "migrate".into();
            record.from = Some(from.to_string());
            record.to = Some(to.to_string());
        }
        ServerEvent::ZeroRtt { accepted } => {
            record.kind = "0rtt".into();
            record.accepted = Some(accepted);
        }
    }
    record
}
