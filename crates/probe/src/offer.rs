//! `probe offer`: what each origin offers (h1 and h2 by ALPN, h3 by a QUIC
//! handshake, and its `Alt-Svc`), and what its h3 does (0-RTT, a QPACK
//! dynamic table, a new client port), one origin after another.

use std::time::Duration;

use anyhow::Context;
use h3lab_client::{check_h3_features, check_offer, ResolveRule, Target, TlsOptions};
use h3lab_results::offer::{OfferReport, OFFER_SCHEMA};

/// Checks the origin of each URL in turn. `window_url`, on one of their
/// origins, is the large response that origin's initial window is counted
/// on; the others are counted on their URL itself.
pub fn check_offers(
    urls: &[String],
    window_url: Option<&str>,
    resolve: &[ResolveRule],
    tls: &TlsOptions,
    timeout: Duration,
) -> anyhow::Result<OfferReport> {
    let window_origin = window_url.map(origin_of).transpose()?;
    let url_origins = urls
        .iter()
        .map(|url| origin_of(url))
        .collect::<Result<Vec<_>, _>>()?;
    if let (Some(window), Some(origin)) = (window_url, &window_origin) {
        anyhow::ensure!(
            url_origins.contains(origin),
            "--window-url {window} is on none of the origins checked; give a URL on one of them"
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    let mut origins = Vec::new();
    for (url, origin) in urls.iter().zip(&url_origins) {
        let mut offer = runtime.block_on(check_offer(url, resolve, tls, timeout))?;
        if offer.h3 == Some(true) {
            let window = match window_origin.as_ref() == Some(origin) {
                true => window_url.unwrap_or(url),
                false => url,
            };
            let features =
                runtime.block_on(check_h3_features(url, window, resolve, tls, timeout))?;
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

fn origin_of(url: &str) -> anyhow::Result<String> {
    Ok(Target::parse(url)?.origin())
}
