//! What the planner hands its workers: the run's shared, read-only facts
//! and each worker's part of the load.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use h3lab_client::{client_tls_config, RequestTemplate, SharedDiscovery, Target};
use h3lab_results::Proto;

use crate::config::LoadConfig;
use crate::schedule::Schedule;

/// Shared, read-only facts of the run.
pub(crate) struct Plan {
    pub(crate) target: Arc<Target>,
    pub(crate) addr: SocketAddr,
    pub(crate) proto: Proto,
    pub(crate) tls: Arc<rustls::ClientConfig>,
    /// Under `auto`: the TLS configuration of its QUIC side, and what the
    /// run learns about HTTP/3, shared by every worker as one client's.
    pub(crate) auto: Option<(Arc<rustls::ClientConfig>, SharedDiscovery)>,
    pub(crate) template: RequestTemplate,
    pub(crate) streams: usize,
    pub(crate) request_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) start: Instant,
    /// The wall clock at `start`, so outcomes land in wall-clock seconds.
    pub(crate) start_wall: SystemTime,
    pub(crate) measure_start: Instant,
    pub(crate) deadline: Option<Instant>,
    pub(crate) qlog: Option<std::path::PathBuf>,
    /// `--linger`: the h1/h2 loop's hold before each wait.
    pub(crate) linger: Option<Duration>,
}

impl Plan {
    /// `discovery` is what an `auto` run learned before it started.
    pub(crate) fn new(
        config: &LoadConfig,
        addr: SocketAddr,
        discovery: Option<SharedDiscovery>,
    ) -> anyhow::Result<Plan> {
        let start = Instant::now();
        let start_wall = SystemTime::now();
        let measure_start = start + config.warmup;
        Ok(Plan {
            target: Arc::new(config.target.clone()),
            addr,
            proto: config.proto,
            tls: client_tls_config(&config.tls, config.proto)?,
            auto: match discovery {
                Some(discovery) => Some((client_tls_config(&config.tls, Proto::H3)?, discovery)),
                None => None,
            },
            template: config.request_template(),
            streams: config.streams,
            qlog: config.qlog.clone(),
            linger: config.linger,
            request_timeout: config.request_timeout,
            connect_timeout: config.connect_timeout,
            start,
            start_wall,
            measure_start,
            deadline: config.duration.map(|duration| measure_start + duration),
        })
    }

    /// When the measured phase ended for a run stopped at `now`: then, or
    /// at the deadline if that came first.
    pub(crate) fn measured_end(&self, now: Instant) -> Instant {
        self.deadline.map_or(now, |deadline| deadline.min(now))
    }

    /// The Unix second `at` falls in, on the wall clock read at the start
    /// (not re-read, so a clock step mid-run moves no outcome).
    pub(crate) fn unix_second(&self, at: Instant) -> i64 {
        let wall = self.start_wall + at.saturating_duration_since(self.start);
        wall.duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs() as i64
    }
}

/// One worker's part of the run.
pub(crate) struct Share {
    pub(crate) connections: usize,
    pub(crate) schedule: Schedule,
}
