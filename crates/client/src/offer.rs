//! What an origin offers, asked the way a browser learns it: ALPN over
//! TCP for h1 and h2, a QUIC handshake for h3, and the `Alt-Svc` header
//! of a GET. A field run checks every origin with it before any cell, so
//! that a forced protocol the origin lacks is an error naming the origin,
//! not a slower row.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use h3lab_results::offer::OriginOffer;
use h3lab_results::{ErrorKind, Proto};
use http::header::ALT_SVC;
use http::{HeaderMap, Method};

use crate::connect::Connector;
use crate::error::ClientError;
use crate::request::RequestTemplate;
use crate::target::{ResolveRule, Target};
use crate::tls::{client_tls_config, TlsOptions};

/// What one answer said of a protocol.
enum Answer {
    /// Offered; for TCP, the connection, to ask for `Alt-Svc` on.
    Yes(Option<crate::Sender>),
    /// Not offered, and why.
    No(String),
    /// Could not be told, and why (unreachable, certificate refused).
    Unknown(String),
}

/// Checks the origin of `url` (its host pinned by `resolve` when a rule
/// names it), each protocol on a new connection within `timeout`.
pub async fn check_offer(
    url: &str,
    resolve: &[ResolveRule],
    tls: &TlsOptions,
    timeout: Duration,
) -> anyhow::Result<OriginOffer> {
    let target = Arc::new(Target::parse(url)?);
    let mut offer = OriginOffer {
        origin: target.origin(),
        address: None,
        h1: None,
        h2: None,
        h3: None,
        alt_svc: None,
        notes: Vec::new(),
        h3_features: None,
    };
    let addr = match target.resolve(resolve).await {
        Ok(addr) => addr,
        Err(err) => {
            offer.notes.push(err.to_string());
            return Ok(offer);
        }
    };
    offer.address = Some(addr.to_string());
    let ask = |proto| {
        let target = target.clone();
        async move {
            let tls = client_tls_config(tls, proto)?;
            let connector = Connector::new(target, addr, proto, tls, timeout)?;
            let answer = match connector.connect().await {
                Ok(connection) => Answer::Yes(Some(connection.sender)),
                Err(err) => classify(proto, &err),
            };
            connector.close().await;
            anyhow::Ok(answer)
        }
    };
    let mut alt_svc_sender = None;
    for proto in [Proto::H2, Proto::H1, Proto::H3] {
        let answer = ask(proto).await?;
        let offered = match answer {
            Answer::Yes(sender) => {
                alt_svc_sender = alt_svc_sender.or(sender.filter(|s| s.proto() != Proto::H3));
                Some(true)
            }
            Answer::No(why) => {
                offer.notes.push(format!("{proto}: {why}"));
                Some(false)
            }
            Answer::Unknown(why) => {
                offer.notes.push(format!("{proto}: {why}"));
                None
            }
        };
        match proto {
            Proto::H1 => offer.h1 = offered,
            Proto::H2 => offer.h2 = offered,
            _ => offer.h3 = offered,
        }
    }
    if let Some(mut sender) = alt_svc_sender {
        let get = RequestTemplate::new(&target, Method::GET, HeaderMap::new(), Bytes::new());
        if let Ok(Ok(response)) = tokio::time::timeout(timeout, sender.send(&get)).await {
            offer.alt_svc = (response.headers().get(ALT_SVC))
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
        }
    }
    Ok(offer)
}

/// A failed connection's meaning for the offer: the protocol refused
/// (ALPN, no QUIC answer) is `No`; anything else (refused, unreachable,
/// a certificate not trusted) leaves it unknown.
fn classify(proto: Proto, err: &ClientError) -> Answer {
    let text = err.to_string();
    let lower = text.to_ascii_lowercase();
    let refused_alpn = lower.contains("did not agree to http/2")
        || lower.contains("noapplicationprotocol")
        || lower.contains("no_application_protocol")
        || lower.contains("no application protocol");
    let no_quic = proto == Proto::H3 && lower.contains("no http/3 (quic) answer");
    if refused_alpn || no_quic {
        return Answer::No(text);
    }
    match err.kind() {
        ErrorKind::Connect | ErrorKind::Timeout | ErrorKind::Tls => Answer::Unknown(text),
        _ => Answer::No(text),
    }
}
