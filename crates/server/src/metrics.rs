//! The server's Prometheus metrics: what every request, connection and
//! handshake did, in the OpenMetrics text format that Prometheus scrapes.
//!
//! Request and connection figures are counted as they happen. QUIC's
//! transport figures (packets, loss, datagrams) live inside quinn, so they
//! are read on each scrape: the live connections' statistics plus the final
//! statistics of every connection that has closed.

mod quic;
mod quic_tls;
mod serve;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

use h3lab_results::Proto;

pub use quic::QuicTrack;
pub use quic_tls::MeteredQuicConfig;
pub use serve::serve_metrics;

use crate::admission::Counters;
use crate::body::ReplyBody;

/// Which connection a figure belongs to: the HTTP version ALPN chose, or
/// `cleartext` for unencrypted TCP, where hyper picks h1 or h2c per request.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum ConnectionKind {
    h1,
    h2,
    h3,
    cleartext,
}

impl From<Proto> for ConnectionKind {
    fn from(protocol: Proto) -> Self {
        match protocol {
            Proto::H1 => ConnectionKind::h1,
            // `auto` is a client's choice between these, never a connection's.
            Proto::H2 | Proto::Auto => ConnectionKind::h2,
            Proto::H3 => ConnectionKind::h3,
        }
    }
}

/// Who sent a header block (see [`crate::header_blocks`]).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Direction {
    request,
    response,
}

/// Whether a block was its connection's first in its direction.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Position {
    first,
    later,
}

/// The transport a handshake ran on.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Transport {
    tcp,
    quic,
}

/// How a handshake ended.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum HandshakeResult {
    ok,
    failed,
    timeout,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProtocolLabel {
    protocol: ConnectionKind,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    protocol: ConnectionKind,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabel {
    method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HeaderBlockLabels {
    protocol: ConnectionKind,
    direction: Direction,
    position: Position,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransportLabel {
    transport: Transport,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HandshakeLabels {
    transport: Transport,
    result: HandshakeResult,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Latencies from 100 µs to about 100 s.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-4, 2.0, 21))
}

/// Every metric the server keeps, registered once at start.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_duration: Histograms<ProtocolLabel>,
    responses_aborted: Family<ProtocolLabel, Counter>,
    response_bytes: Family<ProtocolLabel, Counter>,
    header_blocks: Family<HeaderBlockLabels, Counter>,
    header_block_bytes: Family<HeaderBlockLabels, Counter>,
    replayed: Family<MethodLabel, Counter>,
    replayed_request_bytes: Family<MethodLabel, Counter>,
    connections_open: Family<ProtocolLabel, Gauge>,
    connections: Family<ProtocolLabel, Counter>,
    handshakes: Family<HandshakeLabels, Counter>,
    handshake_duration: Histograms<TransportLabel>,
    quic: Arc<quic::QuicConnections>,
    zero_rtt: Arc<quic_tls::ZeroRttCounts>,
    /// Told of 0-RTT outcomes as they are counted.
    hooks: crate::app::Hooks,
}

impl Metrics {
    /// Registers every metric; `defence` is read on each scrape.
    pub fn new(defence: Arc<Counters>, hooks: crate::app::Hooks) -> Self {
        let mut metrics = Metrics {
            registry: Registry::with_prefix("h3lab"),
            requests: Family::default(),
            request_duration: Family::new_with_constructor(latency_histogram),
            responses_aborted: Family::default(),
            response_bytes: Family::default(),
            header_blocks: Family::default(),
            header_block_bytes: Family::default(),
            replayed: Family::default(),
            replayed_request_bytes: Family::default(),
            connections_open: Family::default(),
            connections: Family::default(),
            handshakes: Family::default(),
            handshake_duration: Family::new_with_constructor(latency_histogram),
            quic: Arc::default(),
            zero_rtt: Arc::default(),
            hooks,
        };
        metrics.register(defence);
        metrics
    }

    fn register(&mut self, defence: Arc<Counters>) {
        let r = &mut self.registry;
        r.register(
            "http_requests",
            "Requests answered, by protocol and status code",
            self.requests.clone(),
        );
        r.register_with_unit(
            "http_request_duration",
            "From a request's complete headers to its response body's last byte handed to the transport",
            Unit::Seconds,
            self.request_duration.clone(),
        );
        r.register(
            "http_responses_aborted",
            "Responses whose body the client abandoned before its end (stream reset or connection closed)",
            self.responses_aborted.clone(),
        );
        r.register_with_unit(
            "http_response_body",
            "Response body bytes handed to the transport",
            Unit::Bytes,
            self.response_bytes.clone(),
        );
        r.register(
            "http_header_blocks",
            "Header blocks (an HTTP/1.1 message head, an HPACK or QPACK block) received and sent on TLS connections, by protocol, direction and whether first on the connection",
            self.header_blocks.clone(),
        );
        r.register_with_unit(
            "http_header_block",
            "Bytes of those header blocks, as the connection carried them (compressed on h2 and h3)",
            Unit::Bytes,
            self.header_block_bytes.clone(),
        );
        r.register(
            "replay_requests",
            "Requests a replay site answered as recorded, by method",
            self.replayed.clone(),
        );
        r.register_with_unit(
            "replay_request_body",
            "Request body bytes those requests sent (a beacon's payload), by method",
            Unit::Bytes,
            self.replayed_request_bytes.clone(),
        );
        r.register(
            "connections_open",
            "Connections open now, by protocol",
            self.connections_open.clone(),
        );
        r.register(
            "connections",
            "Connections served, by protocol",
            self.connections.clone(),
        );
        r.register(
            "handshakes",
            "TLS handshakes on TCP and QUIC handshakes, by result",
            self.handshakes.clone(),
        );
        r.register_with_unit(
            "handshake_duration",
            "From accepting a connection to its completed handshake",
            Unit::Seconds,
            self.handshake_duration.clone(),
        );
        r.register_collector(Box::new(self.quic.clone()));
        r.register_collector(Box::new(self.zero_rtt.clone()));
        r.register_collector(Box::new(DefenceCollector(defence)));
    }

    /// Counts a request a replay site answered, with its body's bytes.
    pub fn replayed(&self, method: &http::Method, body_bytes: u64) {
        let label = MethodLabel {
            method: method.to_string(),
        };
        self.replayed.get_or_create(&label).inc();
        (self.replayed_request_bytes.get_or_create(&label)).inc_by(body_bytes);
    }

    /// The OpenMetrics text of every metric now.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }

    /// Counts a request answered with `status`, and meters its body: the
    /// request's duration ends when the body's last byte is handed over.
    pub fn meter(
        self: &Arc<Self>,
        protocol: Proto,
        status: u16,
        started: Instant,
        body: ReplyBody,
    ) -> MeteredBody {
        let protocol = ConnectionKind::from(protocol);
        self.requests
            .get_or_create(&RequestLabels { protocol, status })
            .inc();
        let mut metered = MeteredBody {
            body,
            metrics: self.clone(),
            protocol,
            started,
            completed: false,
        };
        // An empty body may never be polled.
        if metered.body.is_end_stream() {
            metered.complete();
        }
        metered
    }

    /// Counts a header block of `bytes` (see [`crate::header_blocks`]).
    pub fn header_block(
        &self,
        protocol: ConnectionKind,
        direction: Direction,
        position: Position,
        bytes: u64,
    ) {
        let labels = HeaderBlockLabels {
            protocol,
            direction,
            position,
        };
        self.header_blocks.get_or_create(&labels).inc();
        self.header_block_bytes.get_or_create(&labels).inc_by(bytes);
    }

    /// Counts a connection as open until the returned guard drops.
    pub fn connection(self: &Arc<Self>, kind: ConnectionKind) -> OpenConnection {
        let label = ProtocolLabel { protocol: kind };
        self.connections.get_or_create(&label).inc();
        self.connections_open.get_or_create(&label).inc();
        OpenConnection {
            metrics: self.clone(),
            label,
        }
    }

    /// Counts a handshake that ended with `result` after `started`.
    pub fn handshake(&self, transport: Transport, result: HandshakeResult, started: Instant) {
        self.handshakes
            .get_or_create(&HandshakeLabels { transport, result })
            .inc();
        if result == HandshakeResult::ok {
            self.handshake_duration
                .get_or_create(&TransportLabel { transport })
                .observe(started.elapsed().as_secs_f64());
        }
    }

    /// Reads `connection`'s QUIC statistics on every scrape until the guard drops.
    pub fn track_quic(&self, connection: &quinn::Connection) -> QuicTrack {
        quic::QuicConnections::track(&self.quic, connection)
    }

    /// Wraps the QUIC TLS configuration so that handshakes, 0-RTT offers
    /// and their outcome are counted.
    pub fn meter_quic_tls(
        self: &Arc<Self>,
        config: quinn::crypto::rustls::QuicServerConfig,
    ) -> MeteredQuicConfig {
        MeteredQuicConfig::new(config, self.clone())
    }
}

/// A connection counted as open.
pub struct OpenConnection {
    metrics: Arc<Metrics>,
    label: ProtocolLabel,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.metrics
            .connections_open
            .get_or_create(&self.label)
            .dec();
    }
}

/// A response body that counts its bytes and its request's duration, taken
/// when the last byte is handed over: before the client can have read it,
/// so a client that has its response finds it counted. A body dropped
/// before its end is an aborted response.
#[derive(Debug)]
pub struct MeteredBody {
    body: ReplyBody,
    metrics: Arc<Metrics>,
    protocol: ConnectionKind,
    started: Instant,
    completed: bool,
}

impl MeteredBody {
    fn label(&self) -> ProtocolLabel {
        ProtocolLabel {
            protocol: self.protocol,
        }
    }

    fn complete(&mut self) {
        self.completed = true;
        self.metrics
            .request_duration
            .get_or_create(&self.label())
            .observe(self.started.elapsed().as_secs_f64());
    }
}

impl Body for MeteredBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, |data| data.len() as u64);
                this.metrics
                    .response_bytes
                    .get_or_create(&this.label())
                    .inc_by(len);
                if this.body.is_end_stream() && !this.completed {
                    this.complete();
                }
            }
            Poll::Ready(None) if !this.completed => this.complete(),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for MeteredBody {
    fn drop(&mut self) {
        if !self.completed {
            self.metrics
                .responses_aborted
                .get_or_create(&self.label())
                .inc();
        }
    }
}

/// What the server's defences did (see `docs/hardening.md`), read on each scrape.
#[derive(Debug)]
struct DefenceCollector(Arc<Counters>);

impl prometheus_client::collector::Collector for DefenceCollector {
    fn encode(
        &self,
        encoder: prometheus_client::encoding::DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        let counts = self.0.snapshot();
        let actions = [
            ("tcp_busy", counts.tcp_busy),
            ("tcp_closed", counts.tcp_closed),
            ("quic_refused", counts.quic_refused),
            ("quic_retries", counts.quic_retries),
            ("handshake_timeouts", counts.handshake_timeouts),
            ("header_timeouts", counts.header_timeouts),
            ("send_stalls", counts.send_stalls),
            ("cancel_floods", counts.cancel_floods),
        ];
        let help = "Connections the server's defences acted on: answered busy (503), closed at once, refused, sent a Retry, closed at a timeout, or closed for cancelling far more requests than it let complete";
        encode_counts(encoder, "defence_actions", help, "action", &actions)
    }
}

/// Writes `counts` on a scrape as one counter family whose single label
/// `label` takes each count's name.
fn encode_counts(
    mut encoder: prometheus_client::encoding::DescriptorEncoder,
    name: &str,
    help: &str,
    label: &str,
    counts: &[(&str, u64)],
) -> Result<(), std::fmt::Error> {
    use prometheus_client::encoding::EncodeMetric;
    let family = Family::<[(&str, &str); 1], Counter>::default();
    for &(value, count) in counts {
        family.get_or_create(&[(label, value)]).inc_by(count);
    }
    let metric = encoder.encode_descriptor(name, help, None, family.metric_type())?;
    family.encode(metric)
}
