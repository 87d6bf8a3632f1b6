//! What the server listens on, which certificate it presents, which limits it
//! enforces, and where it forwards as an edge.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use h3lab_results::{QuicCongestion, TcpCongestion};

pub use crate::records::{DynamicRecords, TlsRecords};

/// Everything [`crate::start`] needs to run a server.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// TCP and UDP bind here; port 0 picks one free port for both.
    pub listen: SocketAddr,
    /// Certificate source; ignored when `cleartext` is set.
    pub tls: TlsSource,
    /// Serve HTTP/1.1 and h2c (prior knowledge) on TCP without TLS, and no HTTP/3.
    pub cleartext: bool,
    /// Serve HTTP/1.1 and HTTP/2 on TCP beside HTTP/3. Without it the TCP
    /// port is bound (so the port is one for both) but never accepts.
    pub serve_tcp: bool,
    /// Directory served under `/static/`; `None` makes every `/static/` path 404.
    pub root: Option<PathBuf>,
    /// Directory served at `/` (a site whose pages use absolute paths works
    /// unchanged): every GET path the synthetic endpoints do not claim is a
    /// file in it, and every answer is `Cache-Control: no-store`. `None`
    /// makes such paths 404.
    pub site: Option<PathBuf>,
    /// Resource limits the server enforces.
    pub limits: Limits,
    /// Extra subject alternative names for a generated certificate (DNS names or IPs).
    pub extra_sans: Vec<String>,
    /// The QUIC congestion controller (TCP's is the kernel's; `Auto` picks
    /// the same family, see [`kernel_tcp_congestion`]).
    pub quic_congestion: QuicCongestion,
    /// How the TCP side (TLS records, socket, HTTP/2) is tuned.
    pub tcp_tuning: TcpTuning,
    /// How the QUIC side (initial window, GSO, UDP buffers) is tuned.
    pub quic_tuning: QuicTuning,
    /// Where to serve Prometheus metrics (`GET /metrics`, plain HTTP);
    /// `None` serves none. Port 0 picks a free port.
    pub metrics: Option<SocketAddr>,
    /// Directory for one qlog file per QUIC connection (`server-N-PEER.sqlog`);
    /// `None` writes none.
    pub qlog: Option<PathBuf>,
    /// An application answering every request in place of the built-in
    /// endpoints, and an observer of connection events (the Node package).
    pub hooks: crate::app::Hooks,
    /// Forward requests to an origin, as an edge (reverse proxy) does;
    /// `None` answers every request itself.
    pub upstream: Option<Upstream>,
}

/// The kernel's default TCP congestion controller in this network
/// namespace (`unknown` when it cannot be read), which
/// [`QuicCongestion::Auto`] follows.
pub fn kernel_tcp_congestion() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .map_or_else(|_| "unknown".to_string(), |s| s.trim().to_string())
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8443)),
            tls: TlsSource::SelfSigned,
            cleartext: false,
            serve_tcp: true,
            root: None,
            site: None,
            limits: Limits::default(),
            extra_sans: Vec::new(),
            quic_congestion: QuicCongestion::default(),
            tcp_tuning: TcpTuning::default(),
            quic_tuning: QuicTuning::default(),
            metrics: None,
            qlog: None,
            hooks: Default::default(),
            upstream: None,
        }
    }
}

/// The TCP side's settings that decide results, tuned as carefully as QUIC's
/// (see docs/tuning.md). Every one is printed at start and recorded by bench.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpTuning {
    /// TLS record sizes.
    pub tls_records: TlsRecords,
    /// `TCP_CONGESTION` on every connection; `None` leaves the kernel's
    /// default controller.
    pub congestion: Option<TcpCongestion>,
    /// `TCP_NOTSENT_LOWAT`: unsent bytes the socket holds before it stops
    /// being writable; `None` leaves the kernel's default (no limit).
    pub notsent_lowat: Option<u32>,
    /// HTTP/2 receive window per stream, as large as QUIC's so uploads are
    /// not window-limited.
    pub h2_stream_window: u32,
    /// HTTP/2 receive window per connection.
    pub h2_connection_window: u32,
    /// Bytes HTTP/2 buffers per stream ahead of the socket (hyper's
    /// `max_send_buf_size`).
    pub h2_send_buffer: usize,
    /// `SO_SNDBUF` on every TCP connection; `None` leaves the kernel's
    /// autotuning (`net.ipv4.tcp_wmem`), which a fixed size turns off.
    pub send_buffer: Option<usize>,
    /// `SO_RCVBUF` on every TCP connection; `None` leaves autotuning
    /// (`net.ipv4.tcp_rmem`).
    pub recv_buffer: Option<usize>,
    /// How one HTTP/2 connection's responses share it (see
    /// [`crate::h2_order`]).
    pub h2_stream_order: StreamOrder,
}

impl Default for TcpTuning {
    fn default() -> Self {
        Self {
            tls_records: TlsRecords::default(),
            congestion: None,
            notsent_lowat: None,
            h2_stream_window: 16 * 1024 * 1024,
            h2_connection_window: 32 * 1024 * 1024,
            h2_send_buffer: 1024 * 1024,
            send_buffer: None,
            recv_buffer: None,
            h2_stream_order: StreamOrder::Priority,
        }
    }
}

/// The QUIC side's settings that decide results, beside [`TcpTuning`]
/// (the congestion controller is [`ServerConfig::quic_congestion`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuicTuning {
    /// The congestion controller's initial window in bytes; `None` keeps
    /// the controller's own (quinn's Cubic and NewReno 12,000 B, h3lab's
    /// BBR 14,720 B).
    pub initial_window: Option<u64>,
    /// Send many datagrams in one system call with UDP GSO, where the
    /// kernel and the interface support it.
    pub segmentation_offload: bool,
    /// `SO_SNDBUF` and `SO_RCVBUF` asked for the UDP socket; the kernel
    /// caps them at `net.core.{w,r}mem_max` (the tuning lines say what it
    /// gave).
    pub udp_buffer: usize,
    /// Run QUIC (the endpoint, its connections and their requests) on a
    /// thread of its own rather than on the runtime h1 and h2 share: fewer
    /// hand-offs between threads, but h3 uses one core.
    pub own_thread: bool,
    /// Ask clients that support the ACK frequency extension to acknowledge
    /// every this many ack-eliciting packets; 2, RFC 9000's default (an ACK
    /// for every other packet), asks nothing unless `max_ack_delay` is set.
    pub ack_every: u32,
    /// The longest ACK delay asked of such clients; `None` leaves the
    /// client's own `max_ack_delay`, which quinn caps at one RTT.
    pub max_ack_delay: Option<std::time::Duration>,
    /// How one connection's responses share its packets.
    pub stream_order: StreamOrder,
}

/// How one QUIC connection's responses share its packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamOrder {
    /// In turn, a packet each (quinn's default).
    Fair,
    /// Each response whole, in the order written.
    InOrder,
    /// By the request's RFC 9218 `priority` header: more urgent first,
    /// non-incremental ones whole in stream order, incremental ones in turn
    /// (see [`crate::priority`]).
    Priority,
}

impl Default for QuicTuning {
    fn default() -> Self {
        Self {
            initial_window: None,
            segmentation_offload: true,
            udp_buffer: 8 * 1024 * 1024,
            own_thread: true,
            ack_every: 10,
            max_ack_delay: None,
            stream_order: StreamOrder::Priority,
        }
    }
}

impl QuicTuning {
    /// Rejects an initial window no controller can start from.
    pub(crate) fn validate(&self) -> Result<()> {
        if let Some(window) = self.initial_window {
            if !(MIN_INITIAL_WINDOW..=MAX_INITIAL_WINDOW).contains(&window) {
                bail!(
                    "QUIC initial window {window} B is out of range; pass --quic-initial-window \
                     from {MIN_INITIAL_WINDOW} (two packets) to {MAX_INITIAL_WINDOW} B"
                );
            }
        }
        if self.udp_buffer == 0 {
            bail!("UDP buffer 0 B; pass --udp-buffer of at least 4096, e.g. 8388608");
        }
        Ok(())
    }
}

/// Two full-size datagrams: RFC 9002's minimum congestion window.
pub const MIN_INITIAL_WINDOW: u64 = 2 * 1472;
/// 64 MiB: far above any path here, and a typo's guard.
pub const MAX_INITIAL_WINDOW: u64 = 64 * 1024 * 1024;

impl TcpTuning {
    /// Rejects a controller this kernel cannot set, naming the ones it can.
    pub(crate) fn validate(&self) -> Result<()> {
        let Some(chosen) = self.congestion else {
            return Ok(());
        };
        let probe = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
        if probe.set_tcp_congestion(chosen.name().as_bytes()).is_err() {
            let available =
                std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
                    .unwrap_or_default();
            bail!(
                "this kernel cannot set TCP congestion control `{}` (available: {}); \
                 load its module (e.g. modprobe tcp_{}) or pass another --tcp-cc",
                chosen.name(),
                available.trim(),
                chosen.name()
            );
        }
        Ok(())
    }

    /// Each setting as `(name, value)`, for the banner and results.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        let notsent = match self.notsent_lowat {
            Some(bytes) => format!("{bytes} B"),
            None => "kernel default (no limit)".to_string(),
        };
        let congestion = match self.congestion {
            Some(chosen) => format!("{} (set per connection)", chosen.name()),
            None => format!("kernel default ({})", kernel_tcp_congestion()),
        };
        vec![
            ("tls_records", self.tls_records.to_string()),
            ("tcp_congestion", congestion),
            ("tcp_nodelay", "on".to_string()),
            ("tcp_notsent_lowat", notsent),
            ("h2_stream_window", format!("{} B", self.h2_stream_window)),
            (
                "h2_connection_window",
                format!("{} B", self.h2_connection_window),
            ),
            ("h2_send_buffer", format!("{} B", self.h2_send_buffer)),
            ("h2_stream_order", self.h2_stream_order_line().to_string()),
            (
                "tcp_send_buffer",
                buffer_setting(self.send_buffer, "tcp_wmem"),
            ),
            (
                "tcp_recv_buffer",
                buffer_setting(self.recv_buffer, "tcp_rmem"),
            ),
        ]
    }

    /// `h2_stream_order`'s line, worded as `quic_stream_order`'s.
    fn h2_stream_order_line(&self) -> &'static str {
        match self.h2_stream_order {
            StreamOrder::Fair => {
                "fair: a connection's responses take turns, a DATA frame each (hyper's h2)"
            }
            StreamOrder::InOrder => "in-order: each response whole, in the order requested",
            StreamOrder::Priority => {
                "priority: by the request's RFC 9218 priority header (more urgent first; \
                 non-incremental whole in stream order, incremental in turn; \
                 no header: urgency 3, incremental), released to h2 16 KiB per turn"
            }
        }
    }
}

fn buffer_setting(bytes: Option<usize>, autotuned_by: &str) -> String {
    match bytes {
        Some(bytes) => format!("{bytes} B asked (SO_SNDBUF/SO_RCVBUF, no autotuning)"),
        None => format!("kernel autotuning (net.ipv4.{autotuned_by})"),
    }
}

/// Where the server certificate comes from.
#[derive(Clone, Debug)]
pub enum TlsSource {
    /// Generate a fresh self-signed certificate at start.
    SelfSigned,
    /// A PEM certificate chain and its PEM private key.
    PemFiles {
        /// The PEM certificate chain file.
        cert: PathBuf,
        /// The PEM private key file.
        key: PathBuf,
    },
    /// A PEM certificate chain and its PEM private key, as text (the Node
    /// package's `cert` and `key` options).
    Pem {
        /// The PEM certificate chain.
        cert: String,
        /// The PEM private key.
        key: String,
    },
}

/// Resource limits. Defaults suit a benchmark server on one machine.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest request header block (h1 read buffer, h2 header list, h3 field section).
    pub max_header_bytes: usize,
    /// Largest request body `/echo` accepts; larger gets 413.
    pub max_body_bytes: u64,
    /// Concurrent streams a client may open per h2 or h3 connection.
    pub max_streams_per_connection: u32,
    /// Open TCP connections; beyond it (or a peer's share) a connection gets
    /// 503 while a 503 slot is free, else it is closed.
    pub max_tcp_connections: usize,
    /// The share of `max_tcp_connections` one peer address may hold.
    pub max_tcp_connections_per_peer: usize,
    /// Open QUIC connections; beyond it (or a peer's share) a connection is refused.
    pub max_quic_connections: usize,
    /// The share of `max_quic_connections` one peer address may hold.
    pub max_quic_connections_per_peer: usize,
    /// Unvalidated QUIC handshakes in progress beyond which new Initials
    /// are answered with Retry (0: always).
    pub quic_retry_threshold: usize,
    /// Largest `n` for `/bytes/{n}`; larger gets 400.
    pub max_response_bytes: u64,
    /// Longest `/delay/{ms}`; longer gets 400.
    pub max_delay: Duration,
    /// How long shutdown waits for in-flight requests before closing everything.
    pub shutdown_grace: Duration,
    /// Longest time from a connection's first packet to being ready for
    /// requests: the TLS handshake on TCP; the QUIC handshake up to 0.5-RTT
    /// and HTTP/3's set-up on UDP. Past it the connection is closed.
    pub handshake_timeout: Duration,
    /// Longest time a connection with no request in flight may take to
    /// deliver a complete request's headers, counted from being ready or
    /// from its last response finishing. Past it the connection is closed
    /// (h2 and h3 with GOAWAY first).
    pub header_timeout: Duration,
    /// Longest time a TCP connection's response bodies may go without
    /// producing any data while one is being sent: the client takes none of
    /// it (h2 flow-control window left at 0, h1 socket never read). Past it
    /// the connection is closed (h2 with GOAWAY first). Without it such a
    /// connection, which always has a request in flight, would never meet
    /// the header timeout and would hold its slot and streams for ever.
    /// No flag: a client that accepts no byte for this long is broken or
    /// hostile, whatever the benchmark.
    pub send_stall_timeout: Duration,
}

/// hyper refuses an HTTP/1.1 read buffer smaller than this.
const MIN_HEADER_BYTES: usize = 8192;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_header_bytes: 64 * 1024,
            max_body_bytes: 16 * 1024 * 1024,
            max_streams_per_connection: 256,
            max_tcp_connections: 1024,
            max_tcp_connections_per_peer: 512,
            max_quic_connections: 1024,
            max_quic_connections_per_peer: 512,
            quic_retry_threshold: 256,
            max_response_bytes: 64 * 1024 * 1024 * 1024,
            max_delay: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(5),
            handshake_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(10),
            send_stall_timeout: Duration::from_secs(30),
        }
    }
}

impl Limits {
    /// Rejects values the protocol stacks cannot honour, naming the flag to change.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.max_header_bytes < MIN_HEADER_BYTES || self.max_header_bytes > u32::MAX as usize {
            bail!(
                "max header size {} is out of range; pass --max-header-bytes between {MIN_HEADER_BYTES} and {}",
                self.max_header_bytes,
                u32::MAX
            );
        }
        if self.max_streams_per_connection == 0 {
            bail!("max streams per connection is 0; pass --max-streams 1 or more");
        }
        if self.handshake_timeout.is_zero() {
            bail!("handshake timeout is 0; pass --handshake-timeout of at least 1ms, e.g. 10s");
        }
        if self.header_timeout.is_zero() {
            bail!("header timeout is 0; pass --header-timeout of at least 1ms, e.g. 10s");
        }
        if self.send_stall_timeout.is_zero() {
            bail!("send-stall timeout is 0; set Limits::send_stall_timeout to at least 1ms");
        }
        for (limit, per_peer, transport) in [
            (
                self.max_tcp_connections,
                self.max_tcp_connections_per_peer,
                "tcp",
            ),
            (
                self.max_quic_connections,
                self.max_quic_connections_per_peer,
                "quic",
            ),
        ] {
            check_connection_limits(limit, per_peer, transport)?;
        }
        Ok(())
    }
}

/// A limit of at least 1, and a share of it of at least 1 and at most all of it.
fn check_connection_limits(limit: usize, per_peer: usize, transport: &str) -> Result<()> {
    if limit == 0 {
        bail!("max {transport} connections is 0; pass --max-{transport}-connections 1 or more");
    }
    if per_peer == 0 || per_peer > limit {
        bail!(
            "max {transport} connections per peer is {per_peer}; pass --max-{transport}-connections-per-peer between 1 and {limit}"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        Limits::default().validate().unwrap();
    }

    #[test]
    fn too_small_header_limit_names_the_flag() {
        let limits = Limits {
            max_header_bytes: 100,
            ..Limits::default()
        };
        let err = limits.validate().unwrap_err().to_string();
        assert!(err.contains("--max-header-bytes"), "{err}");
    }

    #[test]
    fn zero_streams_and_connections_are_rejected() {
        let no_streams = Limits {
            max_streams_per_connection: 0,
            ..Limits::default()
        };
        assert!(no_streams.validate().is_err());
        let no_connections = Limits {
            max_quic_connections: 0,
            ..Limits::default()
        };
        let err = no_connections.validate().unwrap_err().to_string();
        assert!(err.contains("--max-quic-connections"), "{err}");
    }

    #[test]
    fn a_share_larger_than_its_limit_names_the_flag() {
        let limits = Limits {
            max_tcp_connections: 10,
            max_tcp_connections_per_peer: 11,
            ..Limits::default()
        };
        let err = limits.validate().unwrap_err().to_string();
        assert!(err.contains("--max-tcp-connections-per-peer"), "{err}");
    }
}

/// How long an idle upstream connection stays in the pool (nginx's
/// `keepalive_timeout` for upstreams is 60 s; hyper's pool default is 90 s).
pub(crate) const UPSTREAM_POOL_IDLE: Duration = Duration::from_secs(60);

/// Which requests go to the origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forward {
    /// Every request: a dynamic API behind the edge.
    All,
    /// Documents only (`/`, a path ending in `/` or `.html`); the edge
    /// serves every other file from its own copy of the site.
    Documents,
}

impl Forward {
    /// The setting's name, as the flag takes it.
    pub fn name(self) -> &'static str {
        match self {
            Forward::All => "all",
            Forward::Documents => "documents",
        }
    }

    /// Whether a request for `path` goes to the origin.
    pub(crate) fn wants(self, path: &str) -> bool {
        match self {
            Forward::All => true,
            Forward::Documents => path.ends_with('/') || path.ends_with(".html"),
        }
    }
}

/// The protocol the edge speaks to its origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpstreamProtocol {
    /// HTTP/1.1, a pool of keep-alive connections (one per concurrent request).
    H1,
    /// HTTP/2, one multiplexed connection (h2c with prior knowledge on `http://`).
    H2,
}

impl UpstreamProtocol {
    /// The protocol's name, as the flag takes it.
    pub fn name(self) -> &'static str {
        match self {
            UpstreamProtocol::H1 => "h1",
            UpstreamProtocol::H2 => "h2",
        }
    }
}

/// Where and how the edge forwards (`h3lab serve --upstream`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upstream {
    /// The origin, `https://ADDR:PORT` or `http://ADDR:PORT`.
    pub origin: http::Uri,
    /// The protocol to the origin.
    pub protocol: UpstreamProtocol,
    /// The certificate (or CA) the origin's certificate must chain to; an
    /// `https` origin needs one, since the edge verifies the origin.
    pub ca: Option<PathBuf>,
    /// Which requests go to the origin.
    pub forward: Forward,
    /// The longest wait for the origin's response head; past it, 504.
    pub timeout: Duration,
}

impl Upstream {
    /// The settings that decide a result, for the banner's `tuning:` lines.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        vec![
            ("upstream", self.origin.to_string()),
            ("upstream_protocol", self.protocol.name().to_string()),
            ("forward", self.forward.name().to_string()),
            ("upstream_timeout", format!("{:?}", self.timeout)),
            ("upstream_pool_idle", format!("{UPSTREAM_POOL_IDLE:?}")),
        ]
    }
}
