//! `probe offer`: what each origin offers (h1 and h2 by ALPN, h3 by a QUIC
//! handshake, and its `Alt-Svc`), and what its h3 does (0-RTT, a QPACK
//! dynamic table, a new client port), one origin after another.

use std::time::Duration;

use anyhow::Context;
use h3lab_client::{check_h3_features, check_offer, ResolveRule, TlsOptions};
use h3lab_results::offer::{OfferReport, OFFER_SCHEMA};

/// Checks the origin of each URL in turn.
pub fn check_offers(
    urls: &[String],
    resolve: &[ResolveRule],
    tls: &TlsOptions,
    timeout: Duration,
) -> anyhow::Result<OfferReport> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    let mut origins = Vec::new();
    for url in urls {
        let mut offer = runtime.block_on(check_offer(url, resolve, tls, timeout))?;
        if offer.h3 == Some(true) {
            let features = runtime.block_on(check_h3_features(url, resolve, tls, timeout))?;
            offer.h3_features = Some(features);
        }
        if !origins
            .iter()
            .any(|o: &h3lab_results::offer::OriginOffer| o.origin == offer.origin)
        {
            origins.push(offer);
        }
    }
    Ok(OfferReport {
        schema: OFFER_SCHEMA.to_string(),
        origins,
    })
}
