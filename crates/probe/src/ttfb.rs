//! `probe ttfb`'s sampling loop: one new connection per sample, in order,
//! stopping at the first that fails.

use std::time::Duration;

use anyhow::Context;
use h3lab_client::{measure_ttfb, ModeNotOffered, ResolveRule, Target, TlsOptions};
use h3lab_results::ttfb::{TtfbReport, TtfbSample, TTFB_SCHEMA};
use h3lab_results::{Proto, TtfbMode};

/// What `probe ttfb` measures.
#[derive(Debug, Clone)]
pub struct TtfbOptions {
    /// The URL requested on every connection.
    pub url: String,
    /// The protocol of every connection.
    pub proto: Proto,
    /// How every connection starts.
    pub mode: TtfbMode,
    /// New connections to measure.
    pub samples: u32,
    /// Which certificates to trust.
    pub tls: TlsOptions,
    /// Connection set-up timeout.
    pub connect_timeout: Duration,
    /// Host names pinned to addresses (curl's `--resolve`).
    pub resolve: Vec<ResolveRule>,
}

/// Measures `options.samples` new connections, calling `on_sample` after
/// each. The report holds the samples measured; a failure stops the run
/// and comes beside it, saying how many were measured.
pub fn sample_ttfb(
    options: &TtfbOptions,
    mut on_sample: impl FnMut(&TtfbSample),
) -> anyhow::Result<(TtfbReport, Option<anyhow::Error>)> {
    let target = Target::parse(&options.url)?;
    target.check_proto(options.proto)?;
    anyhow::ensure!(
        options.proto != Proto::Auto,
        "probe ttfb times one protocol's handshake; give --proto h1, h2 or h3"
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    let mut report = TtfbReport {
        schema: TTFB_SCHEMA.to_string(),
        url: options.url.clone(),
        proto: options.proto,
        mode: options.mode,
        samples: Vec::new(),
        not_offered: None,
    };
    for _ in 0..options.samples {
        let measured = runtime.block_on(measure_ttfb(
            &target,
            &options.resolve,
            options.proto,
            options.mode,
            &options.tls,
            options.connect_timeout,
        ));
        match measured {
            Ok(sample) => {
                on_sample(&sample);
                report.samples.push(sample);
            }
            Err(err) => {
                report.not_offered = err.downcast_ref::<ModeNotOffered>().map(|n| n.0.clone());
                let context = format!(
                    "{} of {} samples measured",
                    report.samples.len(),
                    options.samples
                );
                return Ok((report, Some(err.context(context))));
            }
        }
    }
    Ok((report, None))
}
