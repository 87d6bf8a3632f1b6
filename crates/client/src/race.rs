//! The `auto` protocol's connections: HTTP/2 until the origin advertises
//! HTTP/3 (by `Alt-Svc`, or before the first connection by a DNS `HTTPS`
//! record), then QUIC raced against TCP by the rules of [`crate::alt_svc`].

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use http::header::ALT_SVC;
use http::{HeaderMap, HeaderValue};
use tokio::task::JoinHandle;

use crate::alt_svc::{Alternative, ConnectPlan, H3Discovery};
use crate::connect::{Connection, Connector};
use crate::dns::HttpsRecord;
use crate::error::ClientError;
use crate::target::Target;
use h3lab_results::Proto;

/// What a browser remembers about HTTP/3, shared by every connector of a
/// run (and across its visits).
pub type SharedDiscovery = Arc<Mutex<H3Discovery>>;

type QuicAttempt = JoinHandle<Result<Connection, ClientError>>;

/// Opens connections to one origin the way a browser does: over TCP
/// (h2 by ALPN) until the origin's `Alt-Svc` names HTTP/3, then QUIC first
/// with TCP after the discovery's delay, the first to connect winning.
pub struct AutoConnector {
    origin: String,
    target: Arc<Target>,
    addr: SocketAddr,
    tcp: Connector,
    quic_tls: Arc<rustls::ClientConfig>,
    connect_timeout: Duration,
    quic: Mutex<Option<(Alternative, Arc<Connector>)>>,
    discovery: SharedDiscovery,
    /// QUIC attempts that lost the race and go on, as Chromium lets them:
    /// their outcome still marks the alternative working or broken.
    pending: Mutex<Vec<QuicAttempt>>,
    /// The `Alt-Svc` value last taken in, and when: the same value again
    /// within [`REOBSERVE_AFTER`] changes nothing, so a busy load does not
    /// parse it and take the shared lock for every response.
    last_seen: Mutex<Option<(HeaderValue, Instant)>>,
}

/// How long an `Alt-Svc` value already taken in is not taken in again.
const REOBSERVE_AFTER: Duration = Duration::from_secs(1);

impl AutoConnector {
    /// `tcp_tls` offers h2 and `quic_tls` h3; both trust the server alike.
    pub fn new(
        target: Arc<Target>,
        addr: SocketAddr,
        tcp_tls: Arc<rustls::ClientConfig>,
        quic_tls: Arc<rustls::ClientConfig>,
        connect_timeout: Duration,
        discovery: SharedDiscovery,
    ) -> anyhow::Result<AutoConnector> {
        let tcp = Connector::new(target.clone(), addr, Proto::H2, tcp_tls, connect_timeout)?;
        Ok(AutoConnector {
            origin: target.origin(),
            target,
            addr,
            tcp,
            quic_tls,
            connect_timeout,
            quic: Mutex::new(None),
            discovery,
            pending: Mutex::new(Vec::new()),
            last_seen: Mutex::new(None),
        })
    }

    /// Takes in a response's `Alt-Svc`, if it has one. Responses over
    /// HTTP/3 are left out: RFC 9114 3.1.1 lets a client ignore them.
    pub fn observe(&self, proto: Proto, headers: &HeaderMap) {
        let Some(value) = headers.get(ALT_SVC).filter(|_| proto != Proto::H3) else {
            return;
        };
        let now = Instant::now();
        {
            let mut last_seen = lock(&self.last_seen);
            if let Some((seen, at)) = last_seen.as_ref() {
                if seen == value && now.duration_since(*at) < REOBSERVE_AFTER {
                    return;
                }
            }
            *last_seen = Some((value.clone(), now));
        }
        if let Ok(text) = value.to_str() {
            lock(&self.discovery).observe(&self.origin, text, now);
        }
    }

    /// Takes in the origin's DNS `HTTPS` record: one that lists `h3` makes
    /// QUIC a candidate from the first connection, at the record's port or
    /// the origin's own, for as long as the record may be kept.
    pub fn observe_https_record(&self, record: &HttpsRecord) {
        if !record.lists_h3() {
            return;
        }
        let alternative = Alternative {
            host: None,
            port: record.port.unwrap_or(self.target.port()),
            max_age: record.ttl,
        };
        lock(&self.discovery).observe_https_record(&self.origin, alternative, Instant::now());
    }

    /// Opens a connection by the discovery's plan; its sender says which
    /// protocol won.
    pub async fn connect(&self) -> Result<Connection, ClientError> {
        let plan = lock(&self.discovery).plan(&self.origin, Instant::now());
        match plan {
            ConnectPlan::Tcp => self.tcp.connect().await,
            ConnectPlan::Race {
                alternative,
                tcp_delay,
            } => self.race(&alternative, tcp_delay).await,
        }
    }

    async fn race(
        &self,
        alternative: &Alternative,
        tcp_delay: Duration,
    ) -> Result<Connection, ClientError> {
        let mut quic = self.start_quic(alternative)?;
        // TCP starts after its delay, or at once when QUIC fails first.
        tokio::select! {
            biased;
            joined = &mut quic => match joined {
                Ok(Ok(connection)) => return Ok(connection),
                _ => return self.tcp.connect().await,
            },
            _ = tokio::time::sleep(tcp_delay) => {}
        }
        let tcp = self.tcp.connect();
        tokio::pin!(tcp);
        tokio::select! {
            biased;
            joined = &mut quic => match joined {
                Ok(Ok(connection)) => Ok(connection),
                _ => tcp.await,
            },
            tcp_result = &mut tcp => match tcp_result {
                Ok(connection) => {
                    lock(&self.pending).push(quic);
                    Ok(connection)
                }
                Err(tcp_error) => match quic.await {
                    Ok(Ok(connection)) => Ok(connection),
                    _ => Err(tcp_error),
                },
            },
        }
    }

    /// A QUIC attempt to `alternative` that records its outcome in the
    /// discovery whether or not it wins.
    fn start_quic(&self, alternative: &Alternative) -> Result<QuicAttempt, ClientError> {
        let connector = self.quic_connector(alternative)?;
        let discovery = self.discovery.clone();
        let origin = self.origin.clone();
        Ok(tokio::spawn(async move {
            let result = connector.connect().await;
            let mut discovery = lock(&discovery);
            match &result {
                Ok(connection) => {
                    let rtt = connection.sender.quic_rtt().unwrap_or_default();
                    discovery.quic_connected(&origin, rtt);
                }
                Err(_) => discovery.quic_failed(&origin, Instant::now()),
            }
            result
        }))
    }

    /// The QUIC connector for `alternative`: the origin's own address with
    /// the alternative's port, or the alternative's host resolved.
    fn quic_connector(&self, alternative: &Alternative) -> Result<Arc<Connector>, ClientError> {
        let mut quic = lock(&self.quic);
        if let Some((known, connector)) = quic.as_ref() {
            if known == alternative {
                return Ok(connector.clone());
            }
        }
        let addr = match &alternative.host {
            None => SocketAddr::new(self.addr.ip(), alternative.port),
            Some(host) => {
                std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), alternative.port))
                    .ok()
                    .and_then(|mut addrs| addrs.next())
                    .ok_or_else(|| {
                        ClientError::new(
                            h3lab_results::ErrorKind::Connect,
                            format!("the Alt-Svc host `{host}` does not resolve"),
                        )
                    })?
            }
        };
        let connector = Connector::new(
            self.target.clone(),
            addr,
            Proto::H3,
            self.quic_tls.clone(),
            self.connect_timeout,
        )
        .map_err(|err| ClientError::new(h3lab_results::ErrorKind::Connect, format!("{err:#}")))?;
        let connector = Arc::new(connector);
        *quic = Some((alternative.clone(), connector.clone()));
        Ok(connector)
    }

    /// Abandons QUIC attempts still under way (neither working nor broken,
    /// as a browser closed before they ended), then closes every QUIC
    /// connection.
    pub async fn close(&self) {
        for attempt in lock(&self.pending).drain(..) {
            attempt.abort();
        }
        let quic = lock(&self.quic).take();
        if let Some((_, connector)) = quic {
            connector.close().await;
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Opens an origin's connections: with one protocol, or by HTTP/3
/// discovery (`auto`).
pub enum OriginConnector {
    /// One protocol.
    Fixed(Box<Connector>),
    /// `auto`.
    Auto(Box<AutoConnector>),
}

impl OriginConnector {
    /// A new connection; `early` asks a fixed protocol to reuse an earlier
    /// session ([`Connector::connect_early`]).
    pub async fn connect(&self, early: bool) -> Result<Connection, ClientError> {
        match (self, early) {
            (OriginConnector::Fixed(connector), true) => connector.connect_early().await,
            (OriginConnector::Fixed(connector), false) => connector.connect().await,
            (OriginConnector::Auto(connector), _) => connector.connect().await,
        }
    }

    /// Lets discovery see a response's headers; nothing for a fixed protocol.
    pub fn observe(&self, proto: Proto, headers: &HeaderMap) {
        if let OriginConnector::Auto(connector) = self {
            connector.observe(proto, headers);
        }
    }

    /// Closes its QUIC connections ([`Connector::close`]).
    pub async fn close(&self) {
        match self {
            OriginConnector::Fixed(connector) => connector.close().await,
            OriginConnector::Auto(connector) => connector.close().await,
        }
    }
}
