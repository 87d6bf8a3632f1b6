//! Time to first byte of one request on a new connection: cold, resumed
//! or 0-RTT, reporting what actually happened so no figure is mislabeled.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};

use crate::connect::Connector;
use crate::error::{ClientError, ErrorKind};
use crate::request::RequestTemplate;
use crate::target::{Proto, Target};
use crate::tls::{counted_client_tls_config, TlsOptions};

/// How the measured connection starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtfbMode {
    /// No session to resume: a full handshake.
    Cold,
    /// A priming connection first leaves a session ticket to resume.
    Resumed,
    /// h3 only: resume and send the request as 0-RTT early data.
    ZeroRtt,
}

/// One TTFB measurement and what really happened on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct TtfbSample {
    pub proto: Proto,
    pub mode: TtfbMode,
    /// Connection start (DNS excluded) to the response head.
    pub ttfb: Duration,
    pub tcp_connect: Option<Duration>,
    pub handshake: Option<Duration>,
    /// TLS resumed a session: from rustls for h1/h2, and for h3 from
    /// whether the server's certificate was sent and checked. `None` for
    /// cleartext HTTP/1.1, which has no TLS.
    pub resumed: Option<bool>,
    /// h3 0-RTT: whether the server accepted the early request.
    pub zero_rtt_accepted: Option<bool>,
    pub status: StatusCode,
    pub body_bytes: u64,
}

/// Measures `GET target` on a new connection. Uses its own TLS session
/// store, so a `Cold` sample never resumes by accident.
pub async fn measure_ttfb(
    target: &Target,
    proto: Proto,
    mode: TtfbMode,
    tls: &TlsOptions,
    connect_timeout: Duration,
) -> anyhow::Result<TtfbSample> {
    if mode == TtfbMode::ZeroRtt && proto != Proto::H3 {
        anyhow::bail!(
            "0-RTT is not supported for {proto}: TLS early data over TCP is not implemented; use h3, or measure {proto} resumed"
        );
    }
    let addr: SocketAddr = target.resolve().await?;
    let (config, full_handshakes) = counted_client_tls_config(tls, proto)?;
    let connector = Connector::new(
        Arc::new(target.clone()),
        addr,
        proto,
        config,
        connect_timeout,
    )?;
    let template = RequestTemplate::new(target, Method::GET, HeaderMap::new(), Bytes::new());
    if mode != TtfbMode::Cold {
        prime(&connector, &template).await?;
    }
    let before = full_handshakes.count();
    let sample = measure_on(&connector, &template, proto, mode).await;
    connector.close().await;
    let mut sample = sample?;
    if proto == Proto::H3 {
        // One connection at a time, so the count moved only if this one
        // made a full handshake.
        sample.resumed = Some(full_handshakes.count() == before);
    }
    Ok(sample)
}

/// The measured connection itself, after any priming.
async fn measure_on(
    connector: &Connector,
    template: &RequestTemplate,
    proto: Proto,
    mode: TtfbMode,
) -> anyhow::Result<TtfbSample> {
    let start = Instant::now();
    if mode == TtfbMode::ZeroRtt {
        // `_sender` keeps the connection open until the body is drained.
        let (response, _sender, timing, accepted) = connector.connect_h3_early(template).await?;
        let ttfb = start.elapsed();
        let status = response.status();
        return Ok(TtfbSample {
            proto,
            mode,
            ttfb,
            tcp_connect: None,
            handshake: timing.handshake,
            resumed: timing.resumed,
            zero_rtt_accepted: Some(accepted),
            status,
            body_bytes: response.drain().await?,
        });
    }
    let mut connection = connector.connect().await?;
    let response = connection.sender.send(template).await?;
    let ttfb = start.elapsed();
    let status = response.status();
    Ok(TtfbSample {
        proto,
        mode,
        ttfb,
        tcp_connect: connection.timing.tcp_connect,
        handshake: connection.timing.handshake,
        resumed: connection.timing.resumed,
        zero_rtt_accepted: None,
        status,
        body_bytes: response.drain().await?,
    })
}

/// A full request on a throw-away connection, so the server's session
/// tickets (sent after the handshake) have surely arrived.
async fn prime(connector: &Connector, template: &RequestTemplate) -> Result<(), ClientError> {
    let mut connection = connector.connect().await?;
    let response = connection.sender.send(template).await?;
    response.drain().await?;
    if connection.sender.is_closed() {
        return Err(ClientError::new(
            ErrorKind::Reset,
            "the priming connection closed before it could leave a session ticket",
        ));
    }
    Ok(())
}
