//! The QUIC shell: HTTP/3 over quinn and h3, tuned for high bandwidth-delay
//! paths and accepting 0-RTT.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Result};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures::StreamExt;
use h3::error::Code;
use h3::server::{RequestResolver, RequestStream};
use http::Response;
use http_body_util::BodyExt;
use quinn::congestion::{ControllerFactory, CubicConfig, NewRenoConfig};
use quinn::{
    AckFrequencyConfig, Connecting, Connection, Endpoint, EndpointConfig, Incoming,
    TransportConfig, VarInt, ZeroRttAccepted,
};
use tokio::time::{timeout, timeout_at, Instant};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use h3lab_congestion::BbrConfig;
use h3lab_results::{Proto, QuicCongestion};

use crate::admission::{Admission, Counters, QuicAdmission, QuicTicket, Unvalidated};
use crate::app::{AppRequest, BodyStream, ServerEvent};
use crate::config::{kernel_tcp_congestion, Limits, QuicTuning, StreamOrder};
use crate::frame_guard::{Counted, Guarded, GuardedConnection};
use crate::header_blocks::BlockCount;
use crate::idle::{AckWait, RequestWatch};
use crate::lifecycle::Lifecycle;
use crate::metrics::{ConnectionKind, MeteredBody, QuicTrack};
use crate::priority::Priority;
use crate::qlog::QlogDir;
use crate::respond::{declared_length, EchoBody, Handler};

/// Per-stream and send windows sized above a 1 Gbit/s x 100 ms path (12.5 MB)
/// so a single transfer is not window-limited.
const STREAM_WINDOW: u32 = 16 * 1024 * 1024;
const SEND_WINDOW: u64 = 64 * 1024 * 1024;
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How often an idle connection looks again whether its last responses
/// are acknowledged, before its GOAWAY.
const ACK_CHECK: Duration = Duration::from_millis(50);
/// How long an idle connection waits for an acknowledgement that does not
/// come, in round trips, and at least.
const ACK_PATIENCE_RTTS: u32 = 8;
const MIN_ACK_PATIENCE: Duration = Duration::from_secs(1);
/// After an idle connection's GOAWAY, how long the client has to close it.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// QUIC's settings that decide results, as `(name, value)`, beside
/// [`crate::TcpTuning::settings`].
pub fn settings(congestion: QuicCongestion, tuning: &QuicTuning) -> Vec<(&'static str, String)> {
    let window = initial_window(congestion, tuning);
    let initial_window = match (
        tuning.initial_window,
        congestion.resolved(&kernel_tcp_congestion()),
    ) {
        (Some(_), _) => format!("{window} B"),
        (None, QuicCongestion::Bbr) => format!("{window} B (10 datagrams, as TCP's 10 segments)"),
        (None, _) => format!("{window} B (quinn's default for its controller)"),
    };
    let quic_thread = match tuning.own_thread {
        true => "own (one event loop for h3)",
        false => "shared with h1 and h2",
    };
    let gso = match tuning.segmentation_offload {
        true => "on (where the kernel supports it)",
        false => "off",
    };
    vec![
        ("quic_stream_window", format!("{STREAM_WINDOW} B")),
        ("quic_send_window", format!("{SEND_WINDOW} B")),
        ("quic_initial_window", initial_window),
        ("quic_gso", gso.to_string()),
        ("quic_ack_frequency", ack_frequency_line(tuning)),
        (
            "quic_stream_order",
            match tuning.stream_order {
                StreamOrder::Fair => "fair: a connection's responses take turns, a packet each",
                StreamOrder::InOrder => "in-order: each response whole, in the order written",
                StreamOrder::Priority => {
                    "priority: by the request's RFC 9218 priority header (more urgent first; \
                     non-incremental whole in stream order, incremental in turn; \
                     no header: urgency 3, incremental)"
                }
            }
            .to_string(),
        ),
        ("udp_buffer", format!("{} B asked", tuning.udp_buffer)),
        ("quic_thread", quic_thread.to_string()),
    ]
}

/// The initial congestion window in bytes, read from the controller
/// quinn builds, so that what the server reports cannot drift from it.
pub fn initial_window(congestion: QuicCongestion, tuning: &QuicTuning) -> u64 {
    congestion_factory(congestion, tuning.initial_window)
        .build(std::time::Instant::now(), INITIAL_MTU)
        .initial_window()
}

/// quinn's initial datagram size, at which controllers are built.
const INITIAL_MTU: u16 = 1200;

type H3Connection = h3::server::Connection<GuardedConnection, Bytes>;
type H3RecvHalf = Guarded<h3_quinn::RecvStream>;
type H3SendHalf = Counted<h3_quinn::SendStream<Bytes>>;

/// The largest frame other than DATA a client may send, in multiples of
/// the field-section limit. A HEADERS frame carries one field section, and
/// h3 counts a section's size as at least its encoded bytes (each field
/// line counts its name, value and 32), so twice the limit leaves every
/// oversized section to h3's 431 and refuses only frames that no field
/// section needs (see [`crate::frame_guard`]).
const FRAME_LIMIT_FACTOR: u64 = 2;

/// Throughput-oriented transport settings, built afresh for each use
/// (quinn's `TransportConfig` cannot be cloned).
pub fn transport(
    limits: &Limits,
    congestion: QuicCongestion,
    tuning: &QuicTuning,
) -> Result<TransportConfig> {
    let mut transport = TransportConfig::default();
    transport.congestion_controller_factory(congestion_factory(congestion, tuning.initial_window));
    transport
        .enable_segmentation_offload(tuning.segmentation_offload)
        .max_concurrent_bidi_streams(VarInt::from_u32(limits.max_streams_per_connection))
        .stream_receive_window(VarInt::from_u32(STREAM_WINDOW))
        .send_window(SEND_WINDOW)
        .send_fairness(tuning.stream_order != StreamOrder::InOrder)
        .max_idle_timeout(Some(IDLE_TIMEOUT.try_into()?));
    transport.ack_frequency_config(ack_frequency(tuning));
    Ok(transport)
}

/// What clients that support the ACK frequency extension are asked for:
/// nothing at RFC 9000's defaults. Fewer ACKs spare both ends a datagram,
/// a system call and a wake-up per two packets received.
fn ack_frequency(tuning: &QuicTuning) -> Option<AckFrequencyConfig> {
    if tuning.ack_every == RFC_ACK_EVERY && tuning.max_ack_delay.is_none() {
        return None;
    }
    let mut config = AckFrequencyConfig::default();
    // The threshold counts the packets a client may hold unacknowledged.
    config.ack_eliciting_threshold(VarInt::from_u32(tuning.ack_every - 1));
    config.max_ack_delay(tuning.max_ack_delay);
    Some(config)
}

/// RFC 9000's default: an ACK for every other ack-eliciting packet.
const RFC_ACK_EVERY: u32 = 2;

fn ack_frequency_line(tuning: &QuicTuning) -> String {
    let delay = match tuning.max_ack_delay {
        Some(delay) => format!("{} ms", delay.as_secs_f64() * 1e3),
        None => "one RTT (the client's max_ack_delay, capped at the RTT)".to_string(),
    };
    match ack_frequency(tuning) {
        None => "none asked: RFC 9000's ACK for every other packet".to_string(),
        Some(_) => format!(
            "ACK every {} ack-eliciting packets or after {delay}, asked of clients that support it",
            tuning.ack_every
        ),
    }
}

/// The server configuration: `crypto` with the [`transport`] settings.
pub fn server_config(
    crypto: Arc<dyn quinn::crypto::ServerConfig>,
    transport: TransportConfig,
) -> quinn::ServerConfig {
    let mut server = quinn::ServerConfig::with_crypto(crypto);
    server.transport_config(Arc::new(transport));
    server
}

/// A quinn endpoint on `socket` serving `server`.
pub fn endpoint(socket: std::net::UdpSocket, server: quinn::ServerConfig) -> Result<Endpoint> {
    let runtime = quinn::default_runtime()
        .ok_or_else(|| anyhow!("the QUIC endpoint needs a tokio runtime"))?;
    Ok(Endpoint::new(
        EndpointConfig::default(),
        Some(server),
        socket,
        runtime,
    )?)
}

fn congestion_factory(
    congestion: QuicCongestion,
    initial_window: Option<u64>,
) -> Arc<dyn ControllerFactory + Send + Sync> {
    // Each controller keeps its own default window when none is given:
    // quinn's Cubic and NewReno start at 12,000 B, h3lab's BBR at 14,720 B
    // (quinn's BBR, which h3lab's replaces, started at 240,000 B).
    macro_rules! with_window {
        ($config:expr) => {{
            let mut config = $config;
            if let Some(window) = initial_window {
                config.initial_window(window);
            }
            Arc::new(config)
        }};
    }
    match congestion.resolved(&kernel_tcp_congestion()) {
        // `resolved` never answers `Auto`.
        QuicCongestion::Cubic | QuicCongestion::Auto => with_window!(CubicConfig::default()),
        QuicCongestion::NewReno => with_window!(NewRenoConfig::default()),
        QuicCongestion::Bbr => Arc::new(match initial_window {
            Some(window) => BbrConfig::with_initial_window(window),
            None => BbrConfig::default(),
        }),
    }
}

/// Why a connection never got as far as serving requests.
enum SetupFailure {
    Quic(quinn::ConnectionError),
    Http3(h3::error::ConnectionError),
    /// Still open: the caller closes it with [`SETUP_TIMEOUT_CODE`].
    TimedOut(Connection),
}

/// The application error code a connection is closed with when its
/// HTTP/3 set-up outlives the handshake timeout.
const SETUP_TIMEOUT_CODE: Code = Code::H3_INTERNAL_ERROR;

pub struct QuicShell {
    pub handler: Arc<Handler>,
    pub admission: Admission,
    pub lifecycle: Lifecycle,
    /// `--qlog`: each connection gets a configuration logging to its own file.
    pub qlog: Option<QlogDir>,
    /// How each connection's responses share its packets.
    pub stream_order: StreamOrder,
}

impl QuicShell {
    /// Accepts connections until graceful shutdown starts, then refuses new ones.
    pub async fn accept_loop(self: Arc<Self>, endpoint: Endpoint) {
        loop {
            let incoming = tokio::select! {
                _ = self.lifecycle.graceful.cancelled() => break,
                incoming = endpoint.accept() => incoming,
            };
            let Some(incoming) = incoming else { break };
            self.admit(incoming);
        }
        endpoint.set_server_config(None);
    }

    /// Serves, retries or refuses one incoming connection.
    fn admit(self: &Arc<Self>, incoming: Incoming) {
        let peer = incoming.remote_address();
        let validated = incoming.remote_address_validated();
        match self.admission.admit_quic(peer.ip(), validated) {
            QuicAdmission::Accept(ticket) => {
                let shell = self.clone();
                self.lifecycle
                    .tasks
                    .spawn(async move { shell.serve(incoming, ticket).await });
            }
            QuicAdmission::Retry => {
                if let Err(err) = incoming.retry() {
                    debug!(%peer, %err, "QUIC Retry not possible; ignoring the Initial");
                }
            }
            QuicAdmission::Refuse => {
                debug!(%peer, "connection limit or peer share reached; refusing QUIC connection");
                incoming.refuse();
            }
        }
    }

    async fn serve(&self, incoming: Incoming, mut ticket: QuicTicket) {
        let peer = incoming.remote_address();
        let accepted = match &self.qlog {
            None => incoming.accept(),
            Some(qlog) => match qlog.config_for(peer) {
                Ok(config) => incoming.accept_with(config),
                Err(err) => {
                    warn!("{err:#}; accepting the connection without qlog");
                    incoming.accept()
                }
            },
        };
        let connecting = match accepted {
            Ok(connecting) => connecting,
            Err(err) => return debug!(%err, "QUIC connection failed before the handshake"),
        };
        let (connection, h3) = match self.set_up(connecting, ticket.unvalidated.take()).await {
            Ok(ready) => ready,
            Err(SetupFailure::Quic(err)) => return debug!(%peer, %err, "QUIC handshake failed"),
            Err(SetupFailure::Http3(err)) => return debug!(%peer, %err, "HTTP/3 setup failed"),
            Err(SetupFailure::TimedOut(connection)) => {
                Counters::count(&self.admission.counters.handshake_timeouts);
                let timeout = self.handler.limits.handshake_timeout;
                warn!(%peer, ?timeout, "HTTP/3 setup did not finish in time; closing the connection");
                let reason = format!("HTTP/3 setup did not finish within {timeout:?}");
                connection.close(
                    VarInt::from_u64(SETUP_TIMEOUT_CODE.value()).unwrap_or_default(),
                    reason.as_bytes(),
                );
                return;
            }
        };
        let metrics = &self.handler.metrics;
        let _open = metrics.connection(ConnectionKind::h3);
        let _session = self.handler.hooks.session(Proto::H3, peer);
        let track = metrics.track_quic(&connection);
        // Held until the end: dropping h3's connection closes the QUIC one.
        let mut h3 = h3;
        let ended = self.serve_requests(&mut h3, &connection, &track).await;
        // GOAWAY is sent and every request answered. Closing now would discard
        // response bytes still queued in quinn, so let the client close first.
        let (grace, reason): (_, &[u8]) = match ended {
            Ended::Idle => (Some(CLOSE_GRACE), b"no request within the header timeout"),
            Ended::ClientDone => (
                Some(Duration::ZERO),
                b"the client sent GOAWAY; all answered",
            ),
            Ended::Drained => (Some(Duration::ZERO), b"server shutting down; all answered"),
            Ended::Otherwise => (None, b""),
        };
        let close_grace = async {
            match grace {
                Some(grace) => tokio::time::sleep(grace).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = connection.closed() => {}
            _ = self.lifecycle.hard.cancelled() => {}
            _ = close_grace => connection.close(
                VarInt::from_u64(Code::H3_NO_ERROR.value()).unwrap_or_default(),
                reason,
            ),
        }
        drop(h3);
    }

    /// The QUIC handshake as far as 0.5-RTT, then HTTP/3's control and
    /// QPACK streams, all within the handshake timeout.
    async fn set_up(
        &self,
        mut connecting: Connecting,
        unvalidated: Option<Unvalidated>,
    ) -> Result<(Connection, H3Connection), SetupFailure> {
        let deadline = Instant::now() + self.handler.limits.handshake_timeout;
        // The client's transport parameters come with its ClientHello, which
        // may span several Initial packets (Chromium's does). HTTP/3 opened
        // before they arrive finds a limit of 0 unidirectional streams, and
        // quinn does not wake the opener when the parameters raise it, so
        // set-up would wait forever. The handshake data is ready as soon as
        // the whole ClientHello is in, which costs no round trip: 0.5-RTT
        // answers and 0-RTT requests keep their timing.
        let ready = timeout_at(deadline, connecting.handshake_data())
            .await
            .map(|data| data.map(drop));
        let connection = match connecting.into_0rtt() {
            Ok((connection, handshake_done)) => {
                let watch = self.handshake_watch(&connection, deadline, unvalidated);
                self.lifecycle.tasks.spawn(watch.finish(handshake_done));
                connection
            }
            Err(connecting) => connecting.await.map_err(SetupFailure::Quic)?,
        };
        match ready {
            Err(_) => return Err(SetupFailure::TimedOut(connection)),
            Ok(Err(err)) => return Err(SetupFailure::Quic(err)),
            Ok(Ok(())) => {}
        }
        let mut builder = h3::server::builder();
        builder.max_field_section_size(self.handler.limits.max_header_bytes as u64);
        let frame_limit = FRAME_LIMIT_FACTOR * self.handler.limits.max_header_bytes as u64;
        let blocks = BlockCount::new(self.handler.metrics.clone(), ConnectionKind::h3);
        let guarded = GuardedConnection::new(connection.clone(), frame_limit, blocks);
        let build = builder.build(guarded);
        match timeout_at(deadline, build).await {
            Err(_) => Err(SetupFailure::TimedOut(connection)),
            Ok(Err(err)) => Err(SetupFailure::Http3(err)),
            Ok(Ok(h3)) => Ok((connection, h3)),
        }
    }

    fn handshake_watch(
        &self,
        connection: &Connection,
        deadline: Instant,
        unvalidated: Option<Unvalidated>,
    ) -> HandshakeWatch {
        HandshakeWatch {
            connection: connection.clone(),
            deadline,
            unvalidated,
            counters: self.admission.counters.clone(),
            hard: self.lifecycle.hard.clone(),
        }
    }

    /// Whether the responses handed to quinn are delivered, or the peer
    /// stopped acknowledging them: either way the wait for acks is over.
    fn wait_is_over(
        &self,
        connection: &Connection,
        own_streams: usize,
        awaiting_acks: &mut Option<AckWait>,
    ) -> bool {
        let delivered = connection.send_streams() <= own_streams;
        // A peer that stops acknowledging is given up on after a few round
        // trips: time for lost probes to be sent again (8 RTT, at least 1 s,
        // at most the header timeout).
        let patience = (connection.rtt() * ACK_PATIENCE_RTTS)
            .max(MIN_ACK_PATIENCE)
            .min(self.handler.limits.header_timeout);
        let acks = connection.stats().frame_rx.acks;
        awaiting_acks
            .as_mut()
            .is_some_and(|wait| wait.over(Instant::now(), acks, delivered, patience))
    }

    async fn serve_requests(
        &self,
        h3: &mut H3Connection,
        connection: &Connection,
        track: &QuicTrack,
    ) -> Ended {
        let watch = RequestWatch::new();
        let mut draining = false;
        // h3's own streams (control, QPACK) stay open for the connection's
        // life; more than these means a response is not yet acknowledged.
        let own_streams = connection.send_streams();
        let mut awaiting_acks: Option<AckWait> = None;
        // The client sent GOAWAY (or ended its control stream): no request
        // comes any more, and the client waits for the server to close.
        let mut client_done = false;
        loop {
            // Once either side has sent GOAWAY no request is awaited: the
            // connection ends when its last response is delivered.
            let idle_wait = match client_done || draining {
                true => Duration::ZERO,
                false => self.handler.limits.header_timeout,
            };
            tokio::select! {
                accepted = h3.accept(), if !client_done => match accepted {
                    Ok(Some(resolver)) => {
                        awaiting_acks = None;
                        if let Some((from, to)) = track.saw_request() {
                            self.handler.hooks.emit(ServerEvent::Migrate { from, to });
                        }
                        let handler = self.handler.clone();
                        let peer = connection.remote_address();
                        // Boxed: the request's future is kilobytes, and tokio
                        // moves an unboxed one several times while spawning it.
                        let request = Box::pin(serve_request(handler, resolver, peer, watch.clone(), self.stream_order));
                        self.lifecycle.tasks.spawn(request);
                    }
                    Ok(None) => client_done = true,
                    Err(err) => {
                        debug!(%err, "HTTP/3 connection ended");
                        return Ended::Otherwise;
                    }
                },
                _ = self.lifecycle.graceful.cancelled(), if !draining => {
                    draining = true;
                    if let Err(err) = h3.shutdown(0).await {
                        debug!(%err, "HTTP/3 GOAWAY failed");
                        return Ended::Otherwise;
                    }
                }
                _ = watch.idle_for(idle_wait), if awaiting_acks.is_none() => {
                    // The last response was handed to quinn, not delivered:
                    // on a slow path it may still be on the wire.
                    awaiting_acks = Some(AckWait::new(Instant::now(), connection.stats().frame_rx.acks));
                }
                _ = tokio::time::sleep(ACK_CHECK), if awaiting_acks.is_some() => {
                    if self.wait_is_over(connection, own_streams, &mut awaiting_acks) {
                        if draining {
                            return Ended::Drained;
                        }
                        if !client_done {
                            Counters::count(&self.admission.counters.header_timeouts);
                        }
                        if let Err(err) = h3.shutdown(0).await {
                            debug!(%err, "HTTP/3 GOAWAY failed");
                        }
                        return match client_done {
                            true => Ended::ClientDone,
                            false => Ended::Idle,
                        };
                    }
                }
                _ = self.lifecycle.hard.cancelled() => return Ended::Otherwise,
            }
        }
    }
}

/// Serving starts at 0.5-RTT, before the client has finished the handshake
/// (and so proved its address); this bounds the rest of the handshake.
struct HandshakeWatch {
    connection: Connection,
    deadline: Instant,
    /// Released once the handshake is over, either way.
    unvalidated: Option<Unvalidated>,
    counters: Arc<Counters>,
    hard: CancellationToken,
}

impl HandshakeWatch {
    /// Closes the connection if `handshake_done` misses the deadline.
    async fn finish(self, handshake_done: ZeroRttAccepted) {
        tokio::select! {
            finished = timeout_at(self.deadline, handshake_done) => {
                if finished.is_err() {
                    Counters::count(&self.counters.handshake_timeouts);
                    debug!(peer = %self.connection.remote_address(), "QUIC handshake did not finish in time");
                    self.connection.close(
                        VarInt::from_u64(SETUP_TIMEOUT_CODE.value()).unwrap_or_default(),
                        b"handshake did not finish within the handshake timeout",
                    );
                }
            }
            _ = self.hard.cancelled() => {}
        }
        drop(self.unvalidated);
    }
}

/// How a connection's request loop ended.
enum Ended {
    /// No request came within the header timeout; GOAWAY is sent.
    Idle,
    /// The client sent GOAWAY, every response is delivered, and so is
    /// the server's GOAWAY: the server closes, as an h3 client that
    /// shuts down waits for it to (oha, the h3 crate's own client).
    ClientDone,
    /// The server is shutting down: its GOAWAY is sent and every
    /// response delivered, so it closes rather than wait for the client
    /// (which may be gone) until the grace period ends.
    Drained,
    /// The client closed, the connection failed or the grace period ended.
    Otherwise,
}

async fn serve_request(
    handler: Arc<Handler>,
    resolver: RequestResolver<GuardedConnection, Bytes>,
    peer: SocketAddr,
    watch: Arc<RequestWatch>,
    order: StreamOrder,
) {
    let header_timeout = handler.limits.header_timeout;
    let (request, stream) = match timeout(header_timeout, resolver.resolve_request()).await {
        Ok(Ok(resolved)) => resolved,
        Ok(Err(err)) => return debug!(%err, "HTTP/3 request headers unreadable"),
        Err(_) => return debug!(?header_timeout, "HTTP/3 request headers incomplete in time"),
    };
    let _in_flight = watch.begin();
    let (mut send_half, mut recv_half) = stream.split();
    if order == StreamOrder::Priority {
        schedule(&send_half, Priority::of(request.headers()));
    }
    let response = match handler.app_for(request.method(), request.uri().path()) {
        Some(app) => {
            let (parts, ()) = request.into_parts();
            let request = AppRequest {
                protocol: Proto::H3,
                peer,
                method: parts.method,
                uri: parts.uri,
                headers: parts.headers,
                body: body_chunks(recv_half),
            };
            handler.handle_app(app, request).await
        }
        None => {
            let declared = declared_length(request.headers());
            let mut read = false;
            let response = handler
                .handle(
                    Proto::H3,
                    request.method(),
                    request.uri(),
                    request.headers(),
                    |limit| {
                        read = true;
                        collect(&mut recv_half, declared, limit)
                    },
                )
                .await;
            if !read {
                if let Err(code) = discard(&mut recv_half, header_timeout).await {
                    // RFC 9114 §4.1.2: a malformed request is a stream error.
                    return send_half.stop_stream(code);
                }
            }
            response
        }
    };
    if let Err(err) = send(&mut send_half, response).await {
        debug!("HTTP/3 response not sent: {err:#}");
    }
}

/// Sets the response's place among the connection's others before any of
/// it is written, so quinn queues it there from its first byte.
fn schedule(stream: &RequestStream<H3SendHalf, Bytes>, priority: Priority) {
    let value = priority.quinn_value(stream.send_id().index());
    if let Err(err) = stream.quic_stream().get_ref().set_priority(value) {
        debug!(%err, "HTTP/3 response not scheduled: the stream is gone");
    }
}

/// Reads the body up to `limit`. Over it, the unread rest is abandoned:
/// dropping the stream sends STOP_SENDING, which QUIC clients handle cleanly.
async fn collect(
    stream: &mut RequestStream<H3RecvHalf, Bytes>,
    declared: Option<u64>,
    limit: u64,
) -> EchoBody {
    if declared.is_some_and(|len| len > limit) {
        return EchoBody::TooLarge;
    }
    let mut body = BytesMut::new();
    loop {
        match stream.recv_data().await {
            Ok(Some(chunk)) => {
                if (body.len() + chunk.remaining()) as u64 > limit {
                    return EchoBody::TooLarge;
                }
                body.put(chunk);
            }
            Ok(None) => {
                return match end_of_body(stream).await {
                    Ok(()) => EchoBody::Complete(body.freeze()),
                    Err(err) => EchoBody::Failed(err.to_string()),
                }
            }
            Err(err) => return EchoBody::Failed(err.to_string()),
        }
    }
}

/// Reads a body no endpoint wants to its end, and its trailers, so that the
/// answer follows a complete request, as on TCP (see `discard` in tcp.rs).
/// A body that pauses for `stall` is left unread. The error code when h3
/// finds the request malformed there (a content-length its DATA does not
/// add up to, a pseudo-header in its trailers).
async fn discard(
    stream: &mut RequestStream<H3RecvHalf, Bytes>,
    stall: Duration,
) -> Result<(), Code> {
    let malformed = |err: &h3::error::StreamError| match err {
        h3::error::StreamError::StreamError { code, .. } if *code == Code::H3_MESSAGE_ERROR => {
            Err(*code)
        }
        _ => Ok(()),
    };
    loop {
        match timeout(stall, stream.recv_data()).await {
            Ok(Ok(Some(_))) => continue,
            Ok(Ok(None)) => break,
            Ok(Err(err)) => return malformed(&err),
            Err(_) => return Ok(()),
        }
    }
    match timeout(stall, end_of_body(stream)).await {
        Ok(Err(err)) => malformed(&err),
        _ => Ok(()),
    }
}

/// Reads the trailers, if any, after a body's last DATA: h3 checks them
/// there (RFC 9114 §4.3: no pseudo-header), so a body read without this
/// step would pass a malformed request as complete.
async fn end_of_body(
    stream: &mut RequestStream<H3RecvHalf, Bytes>,
) -> Result<(), h3::error::StreamError> {
    stream.recv_trailers().await.map(drop)
}

/// A request body as the chunks an application reads.
fn body_chunks(recv: RequestStream<H3RecvHalf, Bytes>) -> BodyStream {
    futures::stream::try_unfold(recv, |mut recv| async move {
        match recv.recv_data().await {
            Ok(Some(mut chunk)) => {
                let data = chunk.copy_to_bytes(chunk.remaining());
                Ok(Some((data, recv)))
            }
            Ok(None) => end_of_body(&mut recv).await.map(|()| None),
            Err(err) => Err(err),
        }
        .map_err(|err| err.to_string())
    })
    .boxed()
}

async fn send<S: h3::quic::SendStream<Bytes>>(
    stream: &mut RequestStream<S, Bytes>,
    response: Response<MeteredBody>,
) -> Result<()> {
    let (parts, mut body) = response.into_parts();
    stream
        .send_response(Response::from_parts(parts, ()))
        .await?;
    while let Some(frame) = body.frame().await {
        let data = match frame {
            Ok(frame) => frame.into_data().unwrap_or_default(),
            Err(err) => {
                // Reset rather than finish, so the client cannot take a short body as complete.
                stream.stop_stream(Code::H3_INTERNAL_ERROR);
                return Err(err.into());
            }
        };
        stream.send_data(data).await?;
    }
    stream.finish().await?;
    Ok(())
}
