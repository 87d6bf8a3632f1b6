//! The TCP shell: TLS 1.3 with ALPN choosing HTTP/1.1 or HTTP/2 (or cleartext
//! HTTP/1.1 and h2c), served by hyper.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use bytes::BytesMut;
use futures::{StreamExt, TryStreamExt};
use http::{Request, Response, StatusCode, Version};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tracing::{debug, warn};

use crate::admission::{Admission, Counters, TcpTicket};
use crate::app::{AppRequest, BodyStream};
use crate::config::{Limits, StreamOrder, TcpTuning};
use crate::h2_order::{self, ScheduledBody, Scheduler, WriteCount};
use crate::header_blocks::{BlockCount, HeaderTap};
use crate::idle::{RequestWatch, Watched};
use crate::lifecycle::Lifecycle;
use crate::metrics::{ConnectionKind, HandshakeResult, MeteredBody, Transport};
use crate::records::SizedRecords;
use crate::respond::{declared_length, EchoBody, Handler};
use h3lab_results::Proto;

/// A client over the connection limit gets this long to read its 503s.
const BUSY_LINGER: Duration = Duration::from_secs(5);
/// After a busy or idle connection is told to close (h2: GOAWAY), how long
/// a response already under way may still take.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// After a failed accept (e.g. out of file descriptors), pause before retrying.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Rapid reset (CVE-2023-44487): streams the client opened and reset before
/// they were accepted, beyond which h2 closes the connection with
/// GOAWAY(ENHANCE_YOUR_CALM). h2's own default, pinned so that an upgrade
/// changing it shows up here (docs/hardening.md has the measurements).
const MAX_PENDING_ACCEPT_RESETS: usize = 20;
/// Rapid reset, when h2's limit above does not trip (hyper accepts streams
/// as fast as they come, so few wait reset): requests the client may cancel
/// beyond those it lets complete before the connection is closed.
const CANCELLED_REQUEST_ALLOWANCE: u64 = 100;
/// A cancel flood's own requests are all that a grace would serve: only
/// long enough to flush the GOAWAY. h2's graceful GOAWAY (last stream
/// 2^31-1) keeps accepting new streams until the client answers its PING,
/// which a flooding client need not do; with a 100 ms grace the server went
/// on starting the flood's requests for those 100 ms.
const CANCEL_FLOOD_GRACE: Duration = Duration::from_millis(10);
/// MadeYouReset (CVE-2025-8671): streams the client made the server reset
/// (invalid frames on them), beyond which h2 closes the connection with
/// GOAWAY(ENHANCE_YOUR_CALM). hyper's default, pinned likewise.
const MAX_LOCAL_ERROR_RESETS: usize = 1024;

/// Over the body limit, how much more of a request body is read and discarded
/// before answering 413, and for how long at most.
const DRAIN_BYTES: u64 = 1024 * 1024;
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

type Builder = auto::Builder<TokioExecutor>;

pub struct TcpShell {
    handler: Arc<Handler>,
    tls: Option<TlsAcceptor>,
    admission: Admission,
    lifecycle: Lifecycle,
    tuning: TcpTuning,
    /// Per negotiated protocol: ALPN h2, ALPN http/1.1 (or none), cleartext (h1 or h2c).
    h2_only: Builder,
    h1_only: Builder,
    cleartext: Builder,
}

impl TcpShell {
    pub fn new(
        handler: Arc<Handler>,
        tls: Option<Arc<rustls::ServerConfig>>,
        admission: Admission,
        lifecycle: Lifecycle,
        tuning: TcpTuning,
    ) -> Self {
        let limits = &handler.limits;
        Self {
            h2_only: builder(limits, &tuning).http2_only(),
            h1_only: builder(limits, &tuning).http1_only(),
            cleartext: builder(limits, &tuning),
            tuning,
            tls: tls.map(TlsAcceptor::from),
            handler,
            admission,
            lifecycle,
        }
    }

    /// Accepts connections until graceful shutdown starts.
    pub async fn accept_loop(self: Arc<Self>, listener: TcpListener) {
        loop {
            let accepted = tokio::select! {
                _ = self.lifecycle.graceful.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    warn!(%err, "TCP accept failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            };
            let Some(ticket) = self.admission.admit_tcp(peer.ip()) else {
                debug!(%peer, "connection limit and 503 slots full; closing new TCP connection");
                continue;
            };
            let shell = self.clone();
            self.lifecycle.tasks.spawn(async move {
                if let Err(err) = shell.serve(stream, peer, ticket).await {
                    debug!("TCP connection ended: {err:#}");
                }
            });
        }
    }

    async fn serve(&self, stream: TcpStream, peer: SocketAddr, ticket: TcpTicket) -> Result<()> {
        // Responses are written whole; Nagle would only delay small ones.
        stream.set_nodelay(true)?;
        if let Some(congestion) = self.tuning.congestion {
            socket2::SockRef::from(&stream).set_tcp_congestion(congestion.name().as_bytes())?;
        }
        if let Some(bytes) = self.tuning.notsent_lowat {
            set_notsent_lowat(&stream, bytes)?;
        }
        let metrics = &self.handler.metrics;
        let Some(acceptor) = &self.tls else {
            let _open = metrics.connection(ConnectionKind::cleartext);
            // h2c or HTTP/1.1: only HTTP/2 requests use the scheduler.
            let scheduler = self.h2_scheduler();
            let stream = WriteCount::new(stream, scheduler.clone());
            return self
                .serve_http(stream, &self.cleartext, peer, ticket.busy, scheduler)
                .await;
        };
        let started = Instant::now();
        let handshake = tokio::time::timeout(
            self.handler.limits.handshake_timeout,
            acceptor.accept(stream),
        )
        .await;
        let result = match &handshake {
            Ok(Ok(_)) => HandshakeResult::ok,
            Ok(Err(_)) => HandshakeResult::failed,
            Err(_) => HandshakeResult::timeout,
        };
        metrics.handshake(Transport::tcp, result, started);
        if handshake.is_err() {
            Counters::count(&self.admission.counters.handshake_timeouts);
        }
        let tls = handshake
            .context("TLS handshake timed out")?
            .context("TLS handshake failed")?;
        let (builder, protocol) = match tls.get_ref().1.alpn_protocol() {
            Some(b"h2") => (&self.h2_only, Proto::H2),
            _ => (&self.h1_only, Proto::H1),
        };
        let _open = metrics.connection(protocol.into());
        let _session = self.handler.hooks.session(protocol, peer);
        let tls = SizedRecords::new(tls, self.tuning.tls_records);
        let blocks = BlockCount::new(metrics.clone(), protocol.into());
        let tapped = HeaderTap::new(tls, protocol == Proto::H2, blocks);
        let scheduler = self.h2_scheduler().filter(|_| protocol == Proto::H2);
        let counted = WriteCount::new(tapped, scheduler.clone());
        self.serve_http(counted, builder, peer, ticket.busy, scheduler)
            .await
    }

    /// A new connection's HTTP/2 scheduler, unless its responses take
    /// turns as hyper's h2 sends them.
    fn h2_scheduler(&self) -> Option<Arc<Scheduler>> {
        (self.tuning.h2_stream_order != StreamOrder::Fair).then(Scheduler::new)
    }

    async fn serve_http<I>(
        &self,
        io: I,
        builder: &Builder,
        peer: SocketAddr,
        busy: bool,
        scheduler: Option<Arc<Scheduler>>,
    ) -> Result<()>
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let watch = RequestWatch::new();
        let handler = self.handler.clone();
        let requests = watch.clone();
        let order = self.tuning.h2_stream_order;
        let service = service_fn(move |request: Request<Incoming>| {
            let handler = handler.clone();
            let mut in_flight = requests.begin();
            // Entered here, as hyper hands over requests: in stream order.
            let turns = scheduler
                .as_ref()
                .filter(|_| request.version() == Version::HTTP_2)
                .and_then(|scheduler| {
                    scheduler.enter(h2_order::priority(order, request.headers()))
                });
            async move {
                let response = respond(&handler, request, peer, busy).await;
                let status = response.status();
                if status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
                    in_flight.expect_no_body();
                }
                // The watch inside: it counts what the handler produces, not
                // the pieces a turn releases, so a stream passed over for a
                // closed window does not pass for progress (see idle.rs).
                let body = |body| ScheduledBody::new(Watched::new(body, in_flight), turns);
                Ok::<_, Infallible>(response.map(body))
            }
        });
        let connection = builder.serve_connection(TokioIo::new(io), service);
        tokio::pin!(connection);
        let busy_deadline = async {
            match busy {
                true => tokio::time::sleep(BUSY_LINGER).await,
                false => std::future::pending().await,
            }
        };
        // How long the connection may still take after GOAWAY; `None`: as
        // long as server shutdown allows.
        let grace = tokio::select! {
            served = connection.as_mut() => return served.map_err(|err| anyhow!(err)),
            _ = self.lifecycle.graceful.cancelled() => None,
            _ = busy_deadline => Some(CLOSE_GRACE),
            _ = watch.idle_for(self.handler.limits.header_timeout) => {
                Counters::count(&self.admission.counters.header_timeouts);
                Some(CLOSE_GRACE)
            }
            _ = watch.stalled_for(self.handler.limits.send_stall_timeout) => {
                Counters::count(&self.admission.counters.send_stalls);
                Some(CLOSE_GRACE)
            }
            _ = watch.cancelling(CANCELLED_REQUEST_ALLOWANCE) => {
                Counters::count(&self.admission.counters.cancel_floods);
                Some(CANCEL_FLOOD_GRACE)
            }
        };
        connection.as_mut().graceful_shutdown();
        let close_grace = async {
            match grace {
                None => std::future::pending().await,
                Some(grace) => tokio::time::sleep(grace).await,
            }
        };
        tokio::select! {
            served = connection.as_mut() => served.map_err(|err| anyhow!(err)),
            _ = self.lifecycle.hard.cancelled() => Ok(()),
            _ = close_grace => Ok(()),
        }
    }
}

fn builder(limits: &Limits, tuning: &TcpTuning) -> Builder {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        // The header timeout is enforced for every protocol by `RequestWatch`.
        .header_read_timeout(None)
        .max_buf_size(limits.max_header_bytes);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.max_streams_per_connection)
        .max_pending_accept_reset_streams(MAX_PENDING_ACCEPT_RESETS)
        .max_local_error_reset_streams(MAX_LOCAL_ERROR_RESETS)
        // Also bounds CONTINUATION frames per header block (h2 allows what
        // this size needs, 5 at 64 KiB) and closes the connection when a
        // block decodes past 4 times it (an HPACK bomb).
        .max_header_list_size(limits.max_header_bytes as u32)
        .initial_stream_window_size(tuning.h2_stream_window)
        .initial_connection_window_size(tuning.h2_connection_window)
        .max_send_buf_size(tuning.h2_send_buffer);
    builder
}

/// `TCP_NOTSENT_LOWAT`, which socket2 does not wrap.
fn set_notsent_lowat(stream: &TcpStream, bytes: u32) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let value = bytes as libc::c_int;
    // SAFETY: setsockopt(2) on a socket we own, with a c_int option value
    // and its size.
    let status = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    match status {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

async fn respond(
    handler: &Handler,
    request: Request<Incoming>,
    peer: SocketAddr,
    busy: bool,
) -> Response<MeteredBody> {
    let protocol = match request.version() {
        Version::HTTP_2 => Proto::H2,
        _ => Proto::H1,
    };
    if busy {
        return handler.busy(protocol);
    }
    let (parts, body) = request.into_parts();
    if let Some(app) = handler.app_for(&parts.method, parts.uri.path()) {
        let request = AppRequest {
            protocol,
            peer,
            method: parts.method,
            uri: parts.uri,
            headers: parts.headers,
            body: body_chunks(body),
        };
        return handler.handle_app(app, request).await;
    }
    let declared = declared_length(&parts.headers);
    let mut unread = Some(body);
    let response = handler
        .handle(
            protocol,
            &parts.method,
            &parts.uri,
            &parts.headers,
            |limit| {
                collect(
                    unread.take().expect("the body is read once"),
                    declared,
                    limit,
                )
            },
        )
        .await;
    if let Some(body) = unread {
        discard(body, handler.limits.header_timeout).await;
    }
    response
}

/// Reads a body no endpoint wants to its end, so that the answer follows a
/// complete request: HTTP/2 checks a body against its `content-length` and
/// its trailers only as it is read (RFC 9113 section 8.1), and answering
/// first made the server reset the stream with NO_ERROR instead of the
/// PROTOCOL_ERROR a malformed request earns. A body that pauses for `stall`
/// is left unread and answered as it stands.
async fn discard(mut body: Incoming, stall: Duration) {
    while let Ok(Some(Ok(_))) = tokio::time::timeout(stall, body.frame()).await {}
}

/// A request body as the chunks an application reads.
fn body_chunks(body: Incoming) -> BodyStream {
    http_body_util::BodyDataStream::new(body)
        .map_err(|err| err.to_string())
        .boxed()
}

/// Reads the body up to `limit`. Over it, discards up to [`DRAIN_BYTES`]
/// more so an HTTP/1.1 client still writing its body reads the 413 instead
/// of a broken pipe (closing with unread data would reset the connection).
async fn collect(mut body: Incoming, declared: Option<u64>, limit: u64) -> EchoBody {
    if declared.is_some_and(|len| len > limit) {
        drain(body, declared.unwrap_or(0)).await;
        return EchoBody::TooLarge;
    }
    let mut collected = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let data = match frame {
            Ok(frame) => frame.into_data().unwrap_or_default(),
            Err(err) => return EchoBody::Failed(err.to_string()),
        };
        if (collected.len() + data.len()) as u64 > limit {
            drain(body, 0).await;
            return EchoBody::TooLarge;
        }
        collected.extend_from_slice(&data);
    }
    EchoBody::Complete(collected.freeze())
}

async fn drain(mut body: Incoming, declared: u64) {
    if declared > DRAIN_BYTES {
        return;
    }
    let discard = async {
        let mut discarded = 0u64;
        while let Some(Ok(frame)) = body.frame().await {
            discarded += frame.data_ref().map_or(0, |d| d.len() as u64);
            if discarded > DRAIN_BYTES {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, discard).await;
}
