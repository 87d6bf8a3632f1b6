//! Time to first byte of one request on a new connection: cold, resumed
//! or 0-RTT, reporting what actually happened so no figure is mislabeled.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method};

use h3lab_results::ttfb::TtfbSample;
use h3lab_results::{ErrorKind, Proto, TtfbMode};

use crate::connect::{ConnectTiming, Connector};
use crate::error::ClientError;
use crate::request::RequestTemplate;
use crate::target::{ResolveRule, Target};
use crate::tls::{counted_client_tls_config, HandshakeCounts, TlsOptions};

/// The longest pause after closing the priming connection: a round trip
/// on any path the profiles emulate but the satellite one.
const MAX_CLOSE_WAIT: Duration = Duration::from_millis(250);

/// How long a QUIC priming connection waits for a session ticket that has
/// not come with the response. The ticket travels in its own CRYPTO frame,
/// so a lost packet can hold it back while the response arrives: its
/// retransmission comes a probe timeout later (3 round trips plus the
/// peer's 25 ms ack delay at the first sample) and half a round trip on.
/// Twice that, for a second loss.
fn ticket_wait(rtt: Duration) -> Duration {
    (2 * (rtt * 7 / 2 + Duration::from_millis(25))).min(MAX_TICKET_WAIT)
}

/// A server that never sends a ticket costs at most this once.
const MAX_TICKET_WAIT: Duration = Duration::from_secs(3);

/// Measures `GET target` on a new connection. Uses its own TLS session
/// store, so a `Cold` sample never resumes by accident. A sample whose
/// connection did not start the way `mode` claims, or whose response was
/// not a success, is an error ([`TtfbSample::check`]), never a mislabelled
/// figure. `resolve` pins host names to addresses, as curl's `--resolve`.
pub async fn measure_ttfb(
    target: &Target,
    resolve: &[ResolveRule],
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
    let addr: SocketAddr = target.resolve(resolve).await?;
    let (config, counts) = counted_client_tls_config(tls, proto)?;
    let connector = Connector::new(
        Arc::new(target.clone()),
        addr,
        proto,
        config,
        connect_timeout,
    )?;
    let template = RequestTemplate::new(target, Method::GET, HeaderMap::new(), Bytes::new());
    if mode != TtfbMode::Cold {
        prime(&connector, &template, &counts).await?;
        if counts.tickets() == 0 {
            connector.close().await;
            return Err(ModeNotOffered(format!(
                "the server issued no session ticket on a priming connection, so it offers no \
                 {mode} handshake over {proto}"
            ))
            .into());
        }
    }
    let before = counts.full_handshakes();
    let sample = measure_on(&connector, &template, mode).await;
    connector.close().await;
    let mut sample = sample?;
    if proto == Proto::H3 {
        // One connection at a time, so the count moved only if this one
        // made a full handshake.
        sample.resumed = Some(counts.full_handshakes() == before);
    }
    if mode == TtfbMode::ZeroRtt && sample.early_data_accepted == Some(false) {
        return Err(ModeNotOffered(
            "the server rejected the request sent as 0-RTT early data: it accepts no 0-RTT"
                .to_string(),
        )
        .into());
    }
    sample.check(mode).map_err(anyhow::Error::msg)?;
    Ok(sample)
}

/// The server cannot give the mode measured (it issues no session ticket,
/// or accepts no early data): something it lacks, not a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeNotOffered(pub String);

impl std::fmt::Display for ModeNotOffered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModeNotOffered {}

/// The measured connection itself, after any priming.
async fn measure_on(
    connector: &Connector,
    template: &RequestTemplate,
    mode: TtfbMode,
) -> anyhow::Result<TtfbSample> {
    let start = Instant::now();
    if mode == TtfbMode::ZeroRtt {
        // `_sender` keeps the connection open until the body is drained.
        let Some((response, _sender, timing, accepted)) =
            connector.connect_h3_early(template).await?
        else {
            return Err(ModeNotOffered(
                "the server's session ticket allows no early data: it offers no 0-RTT".to_string(),
            )
            .into());
        };
        let ttfb = start.elapsed();
        let status = response.status().as_u16();
        return Ok(sample(
            ttfb,
            timing,
            Some(accepted),
            status,
            response.drain().await?,
        ));
    }
    let mut connection = connector.connect().await?;
    let response = connection.sender.send(template).await?;
    let ttfb = start.elapsed();
    let status = response.status().as_u16();
    let body_bytes = response.drain().await?;
    Ok(sample(ttfb, connection.timing, None, status, body_bytes))
}

fn sample(
    ttfb: Duration,
    timing: ConnectTiming,
    early_data_accepted: Option<bool>,
    status: u16,
    body_bytes: u64,
) -> TtfbSample {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    TtfbSample {
        ttfb_ms: ms(ttfb),
        tcp_connect_ms: timing.tcp_connect.map(ms),
        handshake_ms: timing.handshake.map(ms),
        resumed: timing.resumed,
        early_data_accepted,
        status,
        body_bytes,
        path_rtt_ms: timing.path_rtt.map(ms),
    }
}

/// A full request on a throw-away connection, so the server's session
/// tickets (sent after the handshake) have arrived: over TCP they come
/// before the response in the byte stream; over QUIC, a lost packet can
/// hold one back, so it is waited for ([`ticket_wait`]). A QUIC connection
/// is then closed and given a round trip to be gone, so that neither end is
/// still tearing it down while the measured handshake runs.
async fn prime(
    connector: &Connector,
    template: &RequestTemplate,
    counts: &HandshakeCounts,
) -> Result<(), ClientError> {
    let mut connection = connector.connect().await?;
    let response = connection.sender.send(template).await?;
    response.drain().await?;
    if let Some(rtt) = connection.sender.quic_rtt() {
        let deadline = tokio::time::Instant::now() + ticket_wait(rtt);
        counts.wait_for_ticket(deadline).await;
    }
    if connection.sender.is_closed() {
        return Err(ClientError::new(
            ErrorKind::Reset,
            "the priming connection closed before it could leave a session ticket",
        ));
    }
    if let Some(rtt) = connection.sender.close_quic() {
        tokio::time::sleep(rtt.min(MAX_CLOSE_WAIT)).await;
    }
    Ok(())
}
