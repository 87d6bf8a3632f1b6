//! `h3lab serve`'s flags (behind the `clap` feature): every setting of
//! [`ServerConfig`] a user can choose, with its default and its help, next
//! to the settings themselves.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use h3lab_results::QuicCongestion;

use crate::{Limits, QuicTuning, ServerConfig, TcpCongestion, TcpTuning, TlsRecords, TlsSource};

/// The flags of `h3lab serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address and port for TCP (h1, h2) and UDP (h3); port 0 picks a free one.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8443")]
    listen: SocketAddr,
    /// PEM certificate chain (default: generate a self-signed one).
    #[arg(long, value_name = "PEM", requires = "key")]
    cert: Option<PathBuf>,
    /// PEM private key for --cert.
    #[arg(long, value_name = "PEM", requires = "cert")]
    key: Option<PathBuf>,
    /// Extra name or IP for the generated certificate (repeatable).
    #[arg(long = "san", value_name = "NAME", conflicts_with = "cert")]
    sans: Vec<String>,
    /// Write the certificate as PEM here, for clients' --ca.
    #[arg(long, value_name = "PATH")]
    pub write_cert: Option<PathBuf>,
    /// QUIC congestion controller for HTTP/3 (TCP uses the kernel's); auto
    /// picks the family of the kernel's TCP controller (bbr, reno, else cubic).
    #[arg(long, value_enum, default_value = "auto")]
    quic_cc: QuicCongestion,
    /// Serve HTTP/1.1 and h2c on TCP without TLS (no HTTP/3).
    #[arg(long, conflicts_with_all = ["cert", "key", "sans", "write_cert"])]
    cleartext: bool,
    /// Directory served under /static/.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Directory served at / (e.g. from `h3lab site gen`): every GET path
    /// other than the synthetic endpoints is a file in it, a directory's
    /// index.html answers for it (without the trailing slash: a 301 to it),
    /// and every answer is Cache-Control: no-store.
    #[arg(long, value_name = "DIR")]
    site: Option<PathBuf>,
    /// Largest request header block in bytes (h1 buffer, h2 header list, h3 field section).
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_header_bytes)]
    max_header_bytes: usize,
    /// Largest /echo request body in bytes; larger gets 413.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_body_bytes)]
    max_body_bytes: u64,
    /// Largest N for /bytes/N; larger gets 400.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_response_bytes)]
    max_response_bytes: u64,
    /// Worker threads of the server's runtime for h1 and h2 (default: one
    /// per CPU); h3 runs on a thread of its own. On a machine whose other
    /// cores run the client, fewer workers hand less work between
    /// threads; see docs/performance.md.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Concurrent streams per h2 or h3 connection.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_streams_per_connection)]
    max_streams: u32,
    /// Open TCP connections (h1, h2); beyond it, or a peer address's share,
    /// a connection gets 503 while one of 64 503-slots is free, else it is closed.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_tcp_connections)]
    max_tcp_connections: usize,
    /// The share of --max-tcp-connections one peer address may hold
    /// (set it equal to the limit for one-address benchmarks that need more).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_tcp_connections_per_peer)]
    max_tcp_connections_per_peer: usize,
    /// Open QUIC connections (h3); beyond it, or a peer address's share, a
    /// connection is refused.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_quic_connections)]
    max_quic_connections: usize,
    /// The share of --max-quic-connections one peer address may hold.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_quic_connections_per_peer)]
    max_quic_connections_per_peer: usize,
    /// Unvalidated QUIC handshakes in progress beyond which new Initials are
    /// answered with Retry, making clients prove their address (0: always).
    #[arg(long, value_name = "N", default_value_t = Limits::default().quic_retry_threshold)]
    quic_retry_threshold: usize,
    /// Longest delay for /delay/MS; longer gets 400.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().max_delay.as_millis() as u64)]
    max_delay_ms: u64,
    /// On SIGINT/SIGTERM, how long in-flight requests may still run.
    #[arg(long, value_name = "MS", default_value_t = Limits::default().shutdown_grace.as_millis() as u64)]
    shutdown_grace_ms: u64,
    /// Longest time a new connection may take to be ready for requests (TLS
    /// handshake on TCP; QUIC handshake and HTTP/3 set-up on UDP), e.g. 10s.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    handshake_timeout: Duration,
    /// Longest time a connection with no request in flight may take to send
    /// a complete request's headers, from being ready or from its last
    /// response; past it the connection is closed (h2/h3: GOAWAY), e.g. 10s.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    header_timeout: Duration,
    /// TLS record sizes on TCP: dynamic (small records first so a large
    /// response's headers arrive in the first round trip, then 16 KB) or max
    /// (16 KB from the start, as rustls and nginx do by default).
    #[arg(long, value_enum, default_value = "dynamic")]
    tls_records: RecordSizing,
    /// TCP_NOTSENT_LOWAT in bytes: how much unsent data a TCP socket holds
    /// before the server stops writing to it (default: the kernel's, no limit).
    #[arg(long, value_name = "BYTES")]
    tcp_notsent_lowat: Option<u32>,
    /// TCP congestion controller set on every h1/h2 connection
    /// (TCP_CONGESTION); default: the kernel's.
    #[arg(long, value_enum)]
    tcp_cc: Option<TcpCc>,
    /// HTTP/2 receive window per stream, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = TcpTuning::default().h2_stream_window)]
    h2_stream_window: u32,
    /// HTTP/2 receive window per connection, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = TcpTuning::default().h2_connection_window)]
    h2_connection_window: u32,
    /// Bytes HTTP/2 buffers per stream ahead of the socket.
    #[arg(long, value_name = "BYTES", default_value_t = TcpTuning::default().h2_send_buffer)]
    h2_send_buffer: usize,
    /// SO_SNDBUF for every TCP connection, in bytes (default: the kernel's
    /// autotuning, which a fixed size turns off).
    #[arg(long, value_name = "BYTES")]
    tcp_send_buffer: Option<usize>,
    /// SO_RCVBUF for every TCP connection, in bytes (default: autotuning).
    #[arg(long, value_name = "BYTES")]
    tcp_recv_buffer: Option<usize>,
    /// The QUIC congestion controller's initial window, in bytes (default:
    /// 12000 for cubic and newreno, 14720 (10 datagrams) for bbr; 240000
    /// is the start of quinn's own BBR).
    #[arg(long, value_name = "BYTES")]
    quic_initial_window: Option<u64>,
    /// UDP generic segmentation offload for HTTP/3: many datagrams per
    /// system call, where the kernel supports it.
    #[arg(long, value_enum, default_value = "on")]
    gso: Switch,
    /// SO_SNDBUF and SO_RCVBUF asked for the UDP socket, in bytes (the
    /// kernel caps them at net.core.wmem_max and rmem_max).
    #[arg(long, value_name = "BYTES", default_value_t = QuicTuning::default().udp_buffer)]
    udp_buffer: usize,
    /// Where h3 runs: own, one thread of its own (quinn's tasks then never
    /// hand work across threads, but h3 uses one core); shared, the
    /// runtime h1 and h2 use (--threads), for more than one core's worth
    /// of h3.
    #[arg(long, value_enum, default_value = "own")]
    quic_thread: QuicThreadChoice,
    /// Ask clients that support the ACK frequency extension to acknowledge
    /// every N ack-eliciting packets (10: Chromium's decimation; 2: RFC
    /// 9000's ACK for every other packet, asked of no one).
    #[arg(long, value_name = "N", default_value_t = QuicTuning::default().ack_every,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    quic_ack_every: u32,
    /// The longest ACK delay asked of such clients (default: the client's
    /// own max_ack_delay, which quinn caps at one RTT).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    quic_max_ack_delay: Option<std::time::Duration>,
    /// How one connection's responses share its packets: priority, by the
    /// request's RFC 9218 priority header (as quic-go does; no header: in
    /// turn); fair, in turn, a packet each; in-order, each response whole
    /// in the order written.
    #[arg(long, value_enum, default_value = "priority")]
    quic_stream_order: StreamOrder,
    /// Serve Prometheus metrics at http://ADDR:PORT/metrics (plain HTTP, a
    /// listener of its own; port 0 picks a free one). See docs/metrics.md.
    #[arg(long, value_name = "ADDR:PORT")]
    metrics: Option<SocketAddr>,
    /// Write one qlog file per QUIC connection into DIR (created if
    /// missing; JSON-SEQ `.sqlog`, which qvis loads).
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
}

/// `--tcp-cc`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum TcpCc {
    Cubic,
    Bbr,
    Reno,
}

impl From<TcpCc> for TcpCongestion {
    fn from(cc: TcpCc) -> Self {
        match cc {
            TcpCc::Cubic => TcpCongestion::Cubic,
            TcpCc::Bbr => TcpCongestion::Bbr,
            TcpCc::Reno => TcpCongestion::Reno,
        }
    }
}

/// `--quic-stream-order`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum StreamOrder {
    Priority,
    Fair,
    InOrder,
}

/// `--gso`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Switch {
    On,
    Off,
}

/// `--quic-thread`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum QuicThreadChoice {
    Own,
    Shared,
}

/// `--tls-records`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum RecordSizing {
    Dynamic,
    Max,
}

impl ServeArgs {
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
                congestion: self.tcp_cc.map(TcpCongestion::from),
                notsent_lowat: self.tcp_notsent_lowat,
                h2_stream_window: self.h2_stream_window,
                h2_connection_window: self.h2_connection_window,
                h2_send_buffer: self.h2_send_buffer,
                send_buffer: self.tcp_send_buffer,
                recv_buffer: self.tcp_recv_buffer,
            },
            quic_tuning: QuicTuning {
                initial_window: self.quic_initial_window,
                segmentation_offload: self.gso == Switch::On,
                udp_buffer: self.udp_buffer,
                own_thread: self.quic_thread == QuicThreadChoice::Own,
                ack_every: self.quic_ack_every,
                max_ack_delay: self.quic_max_ack_delay,
                stream_order: match self.quic_stream_order {
                    StreamOrder::Priority => crate::StreamOrder::Priority,
                    StreamOrder::Fair => crate::StreamOrder::Fair,
                    StreamOrder::InOrder => crate::StreamOrder::InOrder,
                },
            },
            metrics: self.metrics,
            qlog: self.qlog,
            ..ServerConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::ServeArgs;

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
}
