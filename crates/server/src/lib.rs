//! The h3lab reference server: HTTP/1.1 and HTTP/2 over TLS 1.3 on TCP and
//! HTTP/3 over QUIC on UDP, on one port, with the same synthetic endpoints
//! (`/health`, `/bytes/{n}`, `/delay/{ms}`, `/echo`, `/static/...`) on all three,
//! and optionally a site directory at `/` for page loads
//! ([`ServerConfig::site`]).
//!
//! It is a known, measurable peer for h3lab's benchmarks and tests, not a
//! general-purpose web server: no virtual hosts, no compression, no range
//! requests, no configuration files.

#![warn(missing_docs)]

mod admission;
mod app;
mod bind;
mod body;
#[cfg(feature = "clap")]
pub mod cli;
mod config;
mod frame_guard;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod h2_order;
mod header_blocks;
mod idle;
mod lifecycle;
mod metrics;
mod pattern;
mod priority;
mod proxy;
mod qlog;
mod quic;
mod quic_thread;
mod records;
mod replay;
mod respond;
mod routes;
mod tcp;
mod tls;

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use h3lab_results::server_output::{ServeStart, SERVE_START_SCHEMA};
use h3lab_results::QuicCongestion;
use h3lab_site::replay::Replay;
use http::HeaderValue;
use tracing::warn;

pub use admission::DefenceCounts;
pub use app::{App, AppRequest, AppResponse, BodyStream, EventSink, Hooks, ServerEvent};
pub use config::{
    kernel_tcp_congestion, DynamicRecords, Forward, Limits, QuicTuning, ServerConfig, StreamOrder,
    TcpTuning, TlsRecords, TlsSource, Upstream, UpstreamProtocol, MAX_INITIAL_WINDOW,
    MIN_INITIAL_WINDOW,
};
pub use h3lab_results::TcpCongestion;

use admission::Admission;
use lifecycle::Lifecycle;
use metrics::Metrics;
use quic::QuicShell;
use quic_thread::QuicThread;
use replay::ReplaySite;
use respond::{Handler, Stats};
use tcp::TcpShell;

/// After the grace period, how long to wait for connections to close.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Requests answered per protocol.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServeSummary {
    /// Requests answered over HTTP/1.1.
    pub h1: u64,
    /// Requests answered over HTTP/2.
    pub h2: u64,
    /// Requests answered over HTTP/3.
    pub h3: u64,
}

impl ServeSummary {
    /// Requests answered over all three protocols.
    pub fn total(&self) -> u64 {
        self.h1 + self.h2 + self.h3
    }
}

impl fmt::Display for ServeSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "served {} requests: h1 {}, h2 {}, h3 {}",
            self.total(),
            self.h1,
            self.h2,
            self.h3
        )
    }
}

/// A server started by [`start`]. Call [`RunningServer::shutdown`] to stop it
/// gracefully; dropping it stops it abruptly.
pub struct RunningServer {
    local_addr: SocketAddr,
    site: Option<PathBuf>,
    replay_banner: Option<String>,
    trust: Option<Trust>,
    endpoint: Option<quinn::Endpoint>,
    /// Where QUIC runs; dropped after the endpoint.
    quic_thread: Option<QuicThread>,
    lifecycle: Lifecycle,
    stats: Arc<Stats>,
    metrics: Arc<Metrics>,
    metrics_addr: Option<SocketAddr>,
    admission: Admission,
    grace: Duration,
    tuning: Vec<(&'static str, String)>,
    quic_congestion: QuicCongestion,
    /// QUIC's initial window in bytes; `None` without h3.
    quic_initial_window: Option<u64>,
}

/// What a client needs to trust the server's certificate.
struct Trust {
    spki_sha256_base64: String,
    cert_pem: String,
}

impl From<tls::TlsMaterial> for Trust {
    fn from(tls: tls::TlsMaterial) -> Trust {
        Trust {
            spki_sha256_base64: tls.spki_sha256_base64,
            cert_pem: tls.cert_pem,
        }
    }
}

/// Binds, then serves in the background on the current tokio runtime.
pub async fn start(config: ServerConfig) -> Result<RunningServer> {
    config.limits.validate()?;
    config.tcp_tuning.validate()?;
    config.quic_tuning.validate()?;
    let Content { root, site, replay } = Content::load(&config)?;
    let tls = load_tls(&config, replay.as_deref())?;
    let (sockets, granted_buffers) = bind_sockets(&config, tls.is_some())?;
    let local_addr = sockets.tcp.local_addr()?;
    let alt_svc = tls
        .as_ref()
        .map(|_| alt_svc(local_addr.port()))
        .transpose()?;
    let hooks = edge_hooks(&config)?;
    let lifecycle = Lifecycle::default();
    let admission = Admission::new(&config.limits);
    let stats = Arc::new(Stats::default());
    let metrics = Arc::new(Metrics::new(admission.counters.clone(), hooks.clone()));
    let replay_banner = replay.as_ref().map(|r| r.describe());
    let handler = Arc::new(Handler {
        root,
        site: site.clone().filter(|_| replay.is_none()),
        replay,
        limits: config.limits.clone(),
        alt_svc,
        stats: stats.clone(),
        metrics: metrics.clone(),
        hooks,
    });

    let tcp_tls = tls.as_ref().map(|t| t.tcp_config()).transpose()?;
    let tcp = TcpShell::new(
        handler.clone(),
        tcp_tls,
        admission.clone(),
        lifecycle.clone(),
        config.tcp_tuning,
    );
    let listener = tokio::net::TcpListener::from_std(sockets.tcp)?;
    let serves_h3 = sockets.udp.is_some() && tls.is_some();
    let quic = QuicPart::start(&config, sockets.udp, tls.as_ref(), &metrics)?;
    let metrics_listener = match config.metrics {
        Some(addr) => Some(bind_metrics(addr).await?),
        None => None,
    };
    if config.serve_tcp || tls.is_none() {
        lifecycle.tasks.spawn(Arc::new(tcp).accept_loop(listener));
    }
    if let Some(endpoint) = &quic.endpoint {
        let shell = QuicShell {
            handler,
            admission: admission.clone(),
            lifecycle: lifecycle.clone(),
            qlog: quic.qlog,
            stream_order: config.quic_tuning.stream_order,
        };
        let accept_loop = Arc::new(shell).accept_loop(endpoint.clone());
        (quic.runtime).spawn(lifecycle.tasks.track_future(accept_loop));
    }
    let metrics_addr = (metrics_listener)
        .map(|listener| serve_metrics(listener, &metrics, &lifecycle))
        .transpose()?;
    Ok(RunningServer {
        local_addr,
        site,
        replay_banner,
        trust: tls.map(Trust::from),
        endpoint: quic.endpoint,
        quic_thread: quic.thread,
        lifecycle,
        stats,
        metrics,
        metrics_addr,
        admission,
        grace: config.limits.shutdown_grace,
        tuning: tuning_settings(&config, serves_h3, granted_buffers),
        quic_congestion: config.quic_congestion,
        quic_initial_window: serves_h3
            .then(|| quic::initial_window(config.quic_congestion, &config.quic_tuning)),
    })
}

/// The certificate and key (none for cleartext), for the configured
/// names and a replay's hosts.
fn load_tls(
    config: &ServerConfig,
    replay: Option<&ReplaySite>,
) -> Result<Option<tls::TlsMaterial>> {
    if config.cleartext {
        return Ok(None);
    }
    let mut sans = config.extra_sans.clone();
    sans.extend(replay.iter().flat_map(|r| r.hosts().iter().cloned()));
    Ok(Some(tls::TlsMaterial::load(
        &config.tls,
        config.listen,
        &sans,
    )?))
}

/// The `Alt-Svc` every TLS response carries: h3 on the same port.
fn alt_svc(port: u16) -> Result<HeaderValue> {
    Ok(HeaderValue::try_from(format!("h3=\":{port}\"; ma=86400"))?)
}

/// The TCP listener and UDP socket on `config.listen` (UDP only with
/// TLS), with the buffers asked for, and what the kernel granted.
fn bind_sockets(
    config: &ServerConfig,
    with_udp: bool,
) -> Result<(bind::Sockets, Vec<(&'static str, String)>)> {
    let buffers = bind::Buffers {
        tcp_send: config.tcp_tuning.send_buffer,
        tcp_recv: config.tcp_tuning.recv_buffer,
        udp: config.quic_tuning.udp_buffer,
    };
    let sockets = bind::bind(config.listen, with_udp, &buffers)?;
    let granted = sockets.granted_buffers(&buffers)?;
    Ok((sockets, granted))
}

/// Where h3 runs: its endpoint and qlog (none without a UDP socket and
/// TLS), and the runtime of its tasks, on a thread of its own or shared.
struct QuicPart {
    thread: Option<QuicThread>,
    runtime: tokio::runtime::Handle,
    endpoint: Option<quinn::Endpoint>,
    qlog: Option<qlog::QlogDir>,
}

impl QuicPart {
    fn start(
        config: &ServerConfig,
        udp: Option<std::net::UdpSocket>,
        tls: Option<&tls::TlsMaterial>,
        metrics: &Arc<Metrics>,
    ) -> Result<QuicPart> {
        let serves_h3 = udp.is_some() && tls.is_some();
        let thread = (serves_h3 && config.quic_tuning.own_thread)
            .then(QuicThread::start)
            .transpose()?;
        let runtime = match &thread {
            Some(thread) => thread.handle().clone(),
            None => tokio::runtime::Handle::current(),
        };
        let (endpoint, qlog) = match (udp, tls) {
            (Some(udp), Some(tls)) => {
                let (endpoint, qlog) = quic_endpoint(config, udp, tls, metrics, &runtime)?;
                (Some(endpoint), qlog)
            }
            _ => (None, None),
        };
        Ok(QuicPart {
            thread,
            runtime,
            endpoint,
            qlog,
        })
    }
}

/// What the server serves: files under a static root, a site (with `/`
/// its index), or a replay of a captured page's origins.
struct Content {
    root: Option<PathBuf>,
    site: Option<PathBuf>,
    replay: Option<Arc<ReplaySite>>,
}

impl Content {
    fn load(config: &ServerConfig) -> Result<Content> {
        let root = (config.root.as_deref())
            .map(|dir| canonical_dir(dir, "static root", "--root"))
            .transpose()?;
        let site = (config.site.as_deref())
            .map(|dir| canonical_dir(dir, "site directory", "--site"))
            .transpose()?;
        let replay = match &site {
            Some(dir) if Replay::is_replay_site(dir) => Some(Arc::new(ReplaySite::load(dir)?)),
            _ => None,
        };
        Ok(Content { root, site, replay })
    }
}

/// The QUIC endpoint on `udp`, made on `runtime` (where its I/O then
/// runs), and the qlog directory its connections write to, if asked.
fn quic_endpoint(
    config: &ServerConfig,
    udp: std::net::UdpSocket,
    tls: &tls::TlsMaterial,
    metrics: &Arc<Metrics>,
    runtime: &tokio::runtime::Handle,
) -> Result<(quinn::Endpoint, Option<qlog::QlogDir>)> {
    let crypto = Arc::new(metrics.meter_quic_tls(tls.quic_config()?));
    let (limits, congestion) = (config.limits.clone(), config.quic_congestion);
    let quic_tuning = config.quic_tuning;
    let transport = quic::transport(&limits, congestion, &quic_tuning)?;
    let server = quic::server_config(crypto, transport);
    let qlog = (config.qlog.clone())
        .map(|dir| {
            let transport = move || quic::transport(&limits, congestion, &quic_tuning);
            qlog::QlogDir::new(dir, server.clone(), transport)
        })
        .transpose()?;
    let _on_quic_runtime = runtime.enter();
    Ok((quic::endpoint(udp, server)?, qlog))
}

/// Loads `source` as the server would at start, so that a bad certificate
/// or key is reported before anything listens.
pub fn check_tls(source: &TlsSource) -> Result<()> {
    let listen = ServerConfig::default().listen;
    tls::TlsMaterial::load(source, listen, &[]).map(drop)
}

async fn bind_metrics(addr: SocketAddr) -> Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await.with_context(|| {
        format!("cannot listen for metrics on {addr}; pick a free address with --metrics")
    })
}

/// Serves `/metrics` on `listener` in the background; answers its address.
fn serve_metrics(
    listener: tokio::net::TcpListener,
    metrics: &Arc<Metrics>,
    lifecycle: &Lifecycle,
) -> Result<SocketAddr> {
    let bound = listener.local_addr()?;
    let serve = metrics::serve_metrics(listener, metrics.clone(), lifecycle.clone());
    lifecycle.tasks.spawn(serve);
    Ok(bound)
}

/// The settings that decide results: TCP's, QUIC's when it serves h3, and
/// the socket buffers the kernel granted.
fn tuning_settings(
    config: &ServerConfig,
    serves_h3: bool,
    granted_buffers: Vec<(&'static str, String)>,
) -> Vec<(&'static str, String)> {
    let mut settings = config.tcp_tuning.settings();
    let streams = config.limits.max_streams_per_connection;
    settings.push(("max_streams", format!("{streams} per h2 or h3 connection")));
    if serves_h3 {
        settings.extend(quic::settings(config.quic_congestion, &config.quic_tuning));
    }
    settings.extend(granted_buffers);
    settings.extend(config.upstream.iter().flat_map(Upstream::settings));
    settings
}

/// The configuration's hooks, with the reverse proxy as their application
/// when the server is an edge (`upstream`).
fn edge_hooks(config: &ServerConfig) -> Result<Hooks> {
    let mut hooks = config.hooks.clone();
    if let Some(upstream) = &config.upstream {
        if hooks.app.is_some() {
            bail!("a server with an application cannot also forward to an upstream");
        }
        hooks.app = Some(Arc::new(proxy::Proxy::new(upstream, &config.tcp_tuning)?));
    }
    Ok(hooks)
}

/// `dir` made canonical, or an error naming `what` it is and the `flag` to fix.
fn canonical_dir(dir: &Path, what: &str, flag: &str) -> Result<PathBuf> {
    let canonical = dir.canonicalize().with_context(|| {
        format!(
            "{what} {} does not exist; pass an existing directory with {flag}",
            dir.display()
        )
    })?;
    if !canonical.is_dir() {
        bail!(
            "{what} {} is not a directory; pass a directory with {flag}",
            dir.display()
        );
    }
    Ok(canonical)
}

impl RunningServer {
    /// Base64 SHA-256 of the certificate's public key (what Chromium's
    /// `--ignore-certificate-errors-spki-list` takes); `None` in cleartext.
    pub fn spki_sha256_base64(&self) -> Option<&str> {
        self.trust.as_ref().map(|t| t.spki_sha256_base64.as_str())
    }

    /// The bound address; TCP and (unless cleartext) UDP share it.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Whether HTTP/3 is served (false in cleartext mode).
    pub fn serves_h3(&self) -> bool {
        self.endpoint.is_some()
    }

    /// The certificate chain as PEM, for a client's trust store. `None` in cleartext mode.
    pub fn cert_pem(&self) -> Option<&str> {
        self.trust.as_ref().map(|t| t.cert_pem.as_str())
    }

    /// Requests answered so far.
    pub fn requests_served(&self) -> ServeSummary {
        self.stats.snapshot()
    }

    /// Requests being handled right now (response not yet produced).
    pub fn requests_in_flight(&self) -> u64 {
        self.stats.in_flight()
    }

    /// Where `/metrics` is served, if it is.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Every metric now, in the OpenMetrics text format `/metrics` serves.
    pub fn metrics_text(&self) -> String {
        self.metrics.encode()
    }

    /// What the server did to connections that overstepped a limit.
    pub fn defence(&self) -> DefenceCounts {
        self.admission.counters.snapshot()
    }

    /// Open TCP and QUIC connections holding a slot (503 ones not included).
    pub fn open_connections(&self) -> (usize, usize) {
        self.admission.open()
    }

    /// What it started with, for `h3lab serve --start-report`.
    pub fn start_report(&self) -> ServeStart {
        ServeStart {
            schema: SERVE_START_SCHEMA.to_string(),
            listening: self.local_addr,
            metrics: self.metrics_addr,
            tuning: (self.tuning.iter())
                .map(|(name, value)| (name.to_string(), value.clone()))
                .collect(),
            quic_initial_window: self.quic_initial_window,
        }
    }

    /// The start-up lines `h3lab serve` prints, one item per line.
    pub fn banner(&self) -> Vec<String> {
        let addr = self.local_addr;
        let mut lines: Vec<String> = self
            .tuning
            .iter()
            .map(|(name, value)| format!("tuning: {name} = {value}"))
            .collect();
        if let Some(metrics) = self.metrics_addr {
            lines.push(format!("metrics: http://{metrics}/metrics"));
        }
        match &self.trust {
            Some(trust) => lines.extend([
                format!("listening: tcp+udp {addr} (h1,h2 over TLS 1.3; h3 over QUIC)"),
                format!("spki-sha256: {}", trust.spki_sha256_base64),
            ]),
            None => lines.push(format!(
                "listening: tcp {addr} (h1, h2c prior knowledge; cleartext, no h3)"
            )),
        }
        match (&self.replay_banner, &self.site) {
            (Some(replay), _) => lines.push(replay.clone()),
            (None, Some(site)) => lines.push(format!("site: {} at /", site.display())),
            (None, None) => {}
        }
        if self.serves_h3() {
            let tcp = kernel_tcp_congestion();
            let quic = self.quic_congestion.resolved(&tcp);
            lines.push(format!("quic-cc: {quic} (kernel TCP: {tcp})"));
        }
        lines
    }

    /// Stops accepting, lets in-flight requests finish within the grace
    /// period, closes QUIC with code 0 and returns what was served.
    pub async fn shutdown(mut self) -> ServeSummary {
        self.lifecycle.graceful.cancel();
        self.lifecycle.tasks.close();
        if tokio::time::timeout(self.grace, self.lifecycle.tasks.wait())
            .await
            .is_err()
        {
            warn!(grace = ?self.grace, "requests still running after the grace period; closing them");
        }
        self.lifecycle.hard.cancel();
        if let Some(endpoint) = &self.endpoint {
            endpoint.close(0u32.into(), b"server shutting down");
            let _ = tokio::time::timeout(CLOSE_WAIT, endpoint.wait_idle()).await;
        }
        let _ = tokio::time::timeout(CLOSE_WAIT, self.lifecycle.tasks.wait()).await;
        // Whatever QUIC still runs after the grace period ends with its thread.
        drop(self.quic_thread.take());
        self.stats.snapshot()
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.lifecycle.graceful.cancel();
        self.lifecycle.hard.cancel();
        if let Some(endpoint) = &self.endpoint {
            endpoint.close(0u32.into(), b"server dropped");
        }
    }
}
