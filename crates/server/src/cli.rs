//! `h3lab serve`'s flags (behind the `clap` feature): every setting of
//! [`ServerConfig`] a user can choose, with its default and its help, next
//! to the settings themselves; and the way back to a command line
//! ([`CommandFlags::to_args`]), with which the bench, the probes and the
//! harness start the server from typed values.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use h3lab_results::flags::{self, CommandFlags};
use h3lab_results::{QuicCongestion, TcpCongestion};
use serde::Serialize;

use crate::{
    Forward, Limits, QuicTuning, ServerConfig, TcpTuning, TlsRecords, TlsSource, Upstream,
    UpstreamProtocol,
};

/// The flags of `h3lab serve`.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize)]
pub struct ServeArgs {
    /// Address and port for TCP (h1, h2) and UDP (h3); port 0 picks a free one.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8443")]
    pub listen: SocketAddr,
    /// PEM certificate chain (default: generate a self-signed one).
    #[arg(long, value_name = "PEM", requires = "key")]
    pub cert: Option<PathBuf>,
    /// PEM private key for --cert.
    #[arg(long, value_name = "PEM", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Extra name or IP for the generated certificate (repeatable).
    #[arg(long = "san", value_name = "NAME", conflicts_with = "cert")]
    pub sans: Vec<String>,
    /// Write the certificate as PEM here, for clients' --ca.
    #[arg(long, value_name = "PATH")]
    pub write_cert: Option<PathBuf>,
    /// Write what the server started with (its address, metrics
    /// address, the settings that decide results and QUIC's initial
    /// window, schema h3lab.serve-start/1) as JSON to FILE before it says
    /// it listens, for a program that starts it.
    #[arg(long, value_name = "FILE")]
    pub start_report: Option<PathBuf>,
    /// QUIC congestion controller for HTTP/3 (TCP uses the kernel's); auto
    /// picks the family of the kernel's TCP controller (bbr, reno, else cubic).
    #[arg(long, value_enum, default_value = "auto")]
    pub quic_cc: QuicCongestion,
    /// Serve HTTP/1.1 and h2c on TCP without TLS (no HTTP/3).
    #[arg(long, conflicts_with_all = ["cert", "key", "sans", "write_cert"])]
    pub cleartext: bool,
    /// Directory served under /static/.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Directory served at / (e.g. from `h3lab site gen`): every GET path
    /// other than the synthetic endpoints is a file in it, a directory's
    /// index.html answers for it (without the trailing slash: a 301 to it),
    /// and every answer is Cache-Control: no-store.
    #[arg(long, value_name = "DIR")]
    pub site: Option<PathBuf>,
    /// Largest request header block in bytes (h1 buffer, h2 header list, h3 field section).
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_header_bytes)]
    pub max_header_bytes: usize,
    /// Largest /echo request body in bytes; larger gets 413.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_body_bytes)]
    pub max_body_bytes: u64,
    /// Largest N for /bytes/N; larger gets 400.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_response_bytes)]
    pub max_response_bytes: u64,
    /// Worker threads of the server's runtime for h1 and h2 (default: one
    /// per CPU); h3 runs on a thread of its own. On a machine whose other
    /// cores run the client, fewer workers hand less work between
    /// threads; see docs/performance.md.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Concurrent streams per h2 or h3 connection.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_streams_per_connection)]
    pub max_streams: u32,
    /// Open TCP connections (h1, h2); beyond it, or a peer address's share,
    /// a connection gets 503 while one of 64 503-slots is free, else it is closed.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_tcp_connections)]
    pub max_tcp_connections: usize,
    /// The share of --max-tcp-connections one peer address may hold
    /// (set it equal to the limit for one-address benchmarks that need more).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_tcp_connections_per_peer)]
    pub max_tcp_connections_per_peer: usize,
    /// Open QUIC connections (h3); beyond it, or a peer address's share, a
    /// connection is refused.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_quic_connections)]
    pub max_quic_connections: usize,
    /// The share of --max-quic-connections one peer address may hold.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_quic_connections_per_peer)]
    pub max_quic_connections_per_peer: usize,
    /// Unvalidated QUIC handshakes in progress beyond which new Initials are
    /// answered with Retry, making clients prove their address (0: always).
    #[arg(long, value_name = "N", default_value_t = Limits::default().quic_retry_threshold)]
    pub quic_retry_threshold: usize,
    /// Longest delay for /delay/MS; longer gets 400.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().max_delay.as_millis() as u64)]
    pub max_delay_ms: u64,
    /// On SIGINT/SIGTERM, how long in-flight requests may still run.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().shutdown_grace.as_millis() as u64)]
    pub shutdown_grace_ms: u64,
    /// Longest time a new connection may take to be ready for requests (TLS
    /// handshake on TCP; QUIC handshake and HTTP/3 set-up on UDP), e.g. 10s.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration")]
    pub handshake_timeout: Duration,
    /// Longest time a connection with no request in flight may take to send
    /// a complete request's headers, from being ready or from its last
    /// response; past it the connection is closed (h2/h3: GOAWAY), e.g. 10s.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration")]
    pub header_timeout: Duration,
    /// TLS record sizes on TCP: dynamic (small records first so a large
    /// response's headers arrive in the first round trip, then 16 KB) or max
    /// (16 KB from the start, as rustls and nginx do by default).
    #[arg(long, value_enum, default_value = "dynamic")]
    #[serde(serialize_with = "flags::word")]
    pub tls_records: RecordSizing,
    /// TCP_NOTSENT_LOWAT in bytes: how much unsent data a TCP socket holds
    /// before the server stops writing to it (default: the kernel's, no limit).
    #[arg(long, value_name = "BYTES")]
    pub tcp_notsent_lowat: Option<u32>,
    /// TCP congestion controller set on every h1/h2 connection
    /// (TCP_CONGESTION); default: the kernel's.
    #[arg(long, value_enum)]
    pub tcp_cc: Option<TcpCongestion>,
    /// HTTP/2 receive window per stream, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = TcpTuning::default().h2_stream_window)]
    pub h2_stream_window: u32,
    /// HTTP/2 receive window per connection, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = TcpTuning::default().h2_connection_window)]
    pub h2_connection_window: u32,
    /// Bytes HTTP/2 buffers per stream ahead of the socket.
    #[arg(long, value_name = "BYTES", default_value_t = TcpTuning::default().h2_send_buffer)]
    pub h2_send_buffer: usize,
    /// How one HTTP/2 connection's responses share it: priority, by the
    /// request's RFC 9218 priority header, as --quic-stream-order's
    /// priority (no header: in turn); fair, in turn, a DATA frame each
    /// (hyper's own); in-order, each response whole in the order requested.
    #[arg(long, value_enum, default_value = "priority")]
    #[serde(serialize_with = "flags::word")]
    pub h2_stream_order: StreamOrder,
    /// SO_SNDBUF for every TCP connection, in bytes (default: the kernel's
    /// autotuning, which a fixed size turns off).
    #[arg(long, value_name = "BYTES")]
    pub tcp_send_buffer: Option<usize>,
    /// SO_RCVBUF for every TCP connection, in bytes (default: autotuning).
    #[arg(long, value_name = "BYTES")]
    pub tcp_recv_buffer: Option<usize>,
    /// The QUIC congestion controller's initial window, in bytes (default:
    /// 12000 for cubic and newreno, 14720 (10 datagrams) for bbr; 240000
    /// is the start of quinn's own BBR).
    #[arg(long, value_name = "BYTES")]
    pub quic_initial_window: Option<u64>,
    /// UDP generic segmentation offload for HTTP/3: many datagrams per
    /// system call, where the kernel supports it.
    #[arg(long, value_enum, default_value = "on")]
    #[serde(serialize_with = "flags::word")]
    pub gso: Switch,
    /// SO_SNDBUF and SO_RCVBUF asked for the UDP socket, in bytes (the
    /// kernel caps them at net.core.wmem_max and rmem_max).
    #[arg(long, value_name = "BYTES", default_value_t = QuicTuning::default().udp_buffer)]
    pub udp_buffer: usize,
    /// Where h3 runs: own, one thread of its own (quinn's tasks then never
    /// hand work across threads, but h3 uses one core); shared, the
    /// runtime h1 and h2 use (--threads), for more than one core's worth
    /// of h3.
    #[arg(long, value_enum, default_value = "own")]
    #[serde(serialize_with = "flags::word")]
    pub quic_thread: QuicThreadChoice,
    /// Ask clients that support the ACK frequency extension to acknowledge
    /// every N ack-eliciting packets (10: Chromium's decimation; 2: RFC
    /// 9000's ACK for every other packet, asked of no one).
    #[arg(long, value_name = "N", default_value_t = QuicTuning::default().ack_every,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub quic_ack_every: u32,
    /// The longest ACK delay asked of such clients (default: the client's
    /// own max_ack_delay, which quinn caps at one RTT).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration_opt")]
    pub quic_max_ack_delay: Option<std::time::Duration>,
    /// How one connection's responses share its packets: priority, by the
    /// request's RFC 9218 priority header (as quic-go does; no header: in
    /// turn); fair, in turn, a packet each; in-order, each response whole
    /// in the order written.
    #[arg(long, value_enum, default_value = "priority")]
    #[serde(serialize_with = "flags::word")]
    pub quic_stream_order: StreamOrder,
    /// Serve Prometheus metrics at http://ADDR:PORT/metrics (plain HTTP, a
    /// listener of its own; port 0 picks a free one). See docs/metrics.md.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<SocketAddr>,
    /// Write one qlog file per QUIC connection into DIR (created if
    /// missing; JSON-SEQ `.sqlog`, which qvis loads).
    #[arg(long, value_name = "DIR")]
    pub qlog: Option<PathBuf>,
    /// Be an edge: forward requests to the origin at URL (https://ADDR:PORT,
    /// or http://ADDR:PORT for cleartext) on a pooled upstream, as a CDN or
    /// nginx in front of an application does. See docs/edge.md.
    #[arg(long, value_name = "URL")]
    #[serde(serialize_with = "flags::display_opt")]
    pub upstream: Option<http::Uri>,
    /// The protocol to the origin: h2, one multiplexed connection; h1, a
    /// pool of keep-alive connections, one per concurrent request.
    #[arg(long, value_enum, default_value = "h2", requires = "upstream")]
    #[serde(serialize_with = "flags::word")]
    pub upstream_protocol: UpstreamChoice,
    /// The origin's certificate (or its CA) as PEM; the edge verifies an
    /// https origin against it.
    #[arg(long, value_name = "PEM", requires = "upstream")]
    pub upstream_ca: Option<PathBuf>,
    /// Which requests go to the origin: all (a dynamic API), or documents
    /// (`/`, paths ending in / or .html), the edge serving the rest of
    /// --site itself, as a CDN with the site cached does.
    #[arg(long, value_enum, default_value = "all", requires = "upstream")]
    #[serde(serialize_with = "flags::word")]
    pub forward: ForwardChoice,
    /// The longest wait for the origin's response head (then 504), e.g. 60s
    /// (nginx's proxy_read_timeout).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration")]
    pub upstream_timeout: Duration,
}

/// `--upstream-protocol`.
#[allow(missing_docs)] // as `StreamOrder`'s
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum UpstreamChoice {
    H1,
    H2,
}

/// `--forward`.
#[allow(missing_docs)] // as `StreamOrder`'s
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ForwardChoice {
    All,
    Documents,
}

/// `--quic-stream-order` and `--h2-stream-order`.
// The values are explained in their flag's help; doc comments here
// would be printed again under each value.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StreamOrder {
    Priority,
    Fair,
    InOrder,
}

impl From<StreamOrder> for crate::StreamOrder {
    fn from(order: StreamOrder) -> Self {
        match order {
            StreamOrder::Priority => crate::StreamOrder::Priority,
            StreamOrder::Fair => crate::StreamOrder::Fair,
            StreamOrder::InOrder => crate::StreamOrder::InOrder,
        }
    }
}

/// `--gso`.
#[allow(missing_docs)] // as `StreamOrder`'s
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Switch {
    On,
    Off,
}

/// `--quic-thread`.
#[allow(missing_docs)] // as `StreamOrder`'s
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QuicThreadChoice {
    Own,
    Shared,
}

/// `--tls-records`.
#[allow(missing_docs)] // as `StreamOrder`'s
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RecordSizing {
    Dynamic,
    Max,
}

impl Default for ServeArgs {
    fn default() -> Self {
        ServeArgs::new()
    }
}

impl CommandFlags for ServeArgs {
    const COMMAND: &'static str = "h3lab serve";
}

impl ServeArgs {
    /// `h3lab serve` with every flag at its default.
    pub fn new() -> ServeArgs {
        ServeArgs::parse_flags(None::<OsString>).expect("no flags is a valid `h3lab serve`")
    }

    /// The server these flags describe.
    pub fn server_config(self) -> ServerConfig {
        let tls = match (self.cert, self.key) {
            (Some(cert), Some(key)) => TlsSource::PemFiles { cert, key },
            _ => TlsSource::SelfSigned,
        };
        ServerConfig {
            listen: self.listen,
            tls,
            cleartext: self.cleartext,
            root: self.root,
            site: self.site,
            limits: Limits {
                max_header_bytes: self.max_header_bytes,
                max_body_bytes: self.max_body_bytes,
                max_streams_per_connection: self.max_streams,
                max_tcp_connections: self.max_tcp_connections,
                max_tcp_connections_per_peer: self.max_tcp_connections_per_peer,
                max_quic_connections: self.max_quic_connections,
                max_quic_connections_per_peer: self.max_quic_connections_per_peer,
                quic_retry_threshold: self.quic_retry_threshold,
                max_response_bytes: self.max_response_bytes,
                max_delay: Duration::from_millis(self.max_delay_ms),
                shutdown_grace: Duration::from_millis(self.shutdown_grace_ms),
                handshake_timeout: self.handshake_timeout,
                header_timeout: self.header_timeout,
                send_stall_timeout: Limits::default().send_stall_timeout,
            },
            extra_sans: self.sans,
            quic_congestion: self.quic_cc,
            tcp_tuning: TcpTuning {
                tls_records: match self.tls_records {
                    RecordSizing::Dynamic => TlsRecords::default(),
                    RecordSizing::Max => TlsRecords::Max,
                },
                congestion: self.tcp_cc,
                notsent_lowat: self.tcp_notsent_lowat,
                h2_stream_window: self.h2_stream_window,
                h2_connection_window: self.h2_connection_window,
                h2_send_buffer: self.h2_send_buffer,
                send_buffer: self.tcp_send_buffer,
                recv_buffer: self.tcp_recv_buffer,
                h2_stream_order: self.h2_stream_order.into(),
            },
            quic_tuning: QuicTuning {
                initial_window: self.quic_initial_window,
                segmentation_offload: self.gso == Switch::On,
                udp_buffer: self.udp_buffer,
                own_thread: self.quic_thread == QuicThreadChoice::Own,
                ack_every: self.quic_ack_every,
                max_ack_delay: self.quic_max_ack_delay,
                stream_order: self.quic_stream_order.into(),
            },
            metrics: self.metrics,
            qlog: self.qlog,
            upstream: self.upstream.map(|origin| Upstream {
                origin,
                protocol: match self.upstream_protocol {
                    UpstreamChoice::H1 => UpstreamProtocol::H1,
                    UpstreamChoice::H2 => UpstreamProtocol::H2,
                },
                ca: self.upstream_ca,
                forward: match self.forward {
                    ForwardChoice::All => Forward::All,
                    ForwardChoice::Documents => Forward::Documents,
                },
                timeout: self.upstream_timeout,
            }),
            ..ServerConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::ServeArgs;
    use h3lab_results::flags::CommandFlags;

    #[derive(Parser)]
    struct Serve {
        #[command(flatten)]
        args: ServeArgs,
    }

    #[test]
    fn threads_are_at_least_one() {
        let parse = |value: &str| Serve::try_parse_from(["serve", "--threads", value]);
        assert_eq!(parse("2").unwrap().args.threads, Some(2));
        let err = parse("0").err().expect("0 threads is refused").to_string();
        assert!(err.contains("--threads"), "{err}");
        assert_eq!(Serve::try_parse_from(["serve"]).unwrap().args.threads, None);
    }

    #[test]
    fn h3_has_its_own_thread_unless_asked_to_share() {
        let own_thread = |args: &[&str]| {
            let serve = Serve::try_parse_from(args).unwrap();
            serve.args.server_config().quic_tuning.own_thread
        };
        assert!(own_thread(&["serve"]));
        assert!(!own_thread(&["serve", "--quic-thread", "shared"]));
        assert!(Serve::try_parse_from(["serve", "--quic-thread", "two"]).is_err());
    }

    #[test]
    fn defaults_and_every_flag_parse_back_to_themselves() {
        let defaults = ServeArgs::new();
        assert_eq!(defaults.to_args().unwrap(), ["--"]);
        let every = ServeArgs::parse_flags([
            "--listen=10.0.0.1:443",
            "--san=www.site.test",
            "--san=10.0.0.1",
            "--write-cert=/tmp/a cert.pem",
            "--quic-cc=bbr",
            "--site=site dir",
            "--root=static",
            "--max-header-bytes=1000",
            "--max-body-bytes=2000",
            "--max-response-bytes=3000",
            "--threads=3",
            "--max-streams=7",
            "--max-tcp-connections=11",
            "--max-tcp-connections-per-peer=5",
            "--max-quic-connections=13",
            "--max-quic-connections-per-peer=6",
            "--quic-retry-threshold=0",
            "--max-delay-ms=99",
            "--shutdown-grace-ms=98",
            "--handshake-timeout=3s 5ms",
            "--header-timeout=1h",
            "--tls-records=max",
            "--tcp-notsent-lowat=16384",
            "--tcp-cc=reno",
            "--h2-stream-window=65535",
            "--h2-connection-window=65536",
            "--h2-send-buffer=4096",
            "--h2-stream-order=fair",
            "--tcp-send-buffer=8192",
            "--tcp-recv-buffer=8193",
            "--quic-initial-window=29440",
            "--gso=off",
            "--udp-buffer=1000000",
            "--quic-thread=shared",
            "--quic-ack-every=2",
            "--quic-max-ack-delay=5ms",
            "--quic-stream-order=in-order",
            "--metrics=127.0.0.1:0",
            "--qlog=qlogs",
            "--upstream=https://10.0.0.2:8443",
            "--upstream-protocol=h1",
            "--upstream-ca=origin.pem",
            "--forward=documents",
            "--upstream-timeout=5s",
        ])
        .unwrap();
        let tls = ServeArgs::parse_flags(["--cert=c.pem", "--key=k.pem"]).unwrap();
        let cleartext = ServeArgs::parse_flags(["--cleartext"]).unwrap();
        for args in [defaults, every, tls, cleartext] {
            assert_eq!(args.round_trip().unwrap(), args);
        }
    }
}
