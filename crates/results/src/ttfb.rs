//! The ttfb probe record (`h3lab.ttfb/2`, docs/results-schema.md): one
//! sample per new connection, each saying how its handshake really went.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::vocab::{Proto, TtfbMode};

/// Schema identifier of a [`TtfbReport`].
pub const TTFB_SCHEMA: &str = "h3lab.ttfb/2";

/// What `h3lab probe ttfb` measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TtfbReport {
    /// Always [`TTFB_SCHEMA`].
    pub schema: String,
    /// The URL requested.
    pub url: String,
    /// The protocol of every connection.
    pub proto: Proto,
    /// How every connection started.
    pub mode: TtfbMode,
    /// One per new connection, in the order measured.
    pub samples: Vec<TtfbSample>,
    /// Why the server cannot give `mode` (it issued no session ticket, or
    /// accepts no early data); set when the probe stopped for that reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_offered: Option<String>,
}

/// One new connection's time to the first response byte.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TtfbSample {
    /// Connection start (DNS excluded) to the first byte of the response head.
    pub ttfb_ms: f64,
    /// TCP connect (h1/h2); null for h3, which has none.
    pub tcp_connect_ms: Option<f64>,
    /// TLS handshake after TCP, or the QUIC handshake; null for cleartext.
    pub handshake_ms: Option<f64>,
    /// The handshake resumed a TLS session; null for cleartext, which has
    /// no TLS.
    pub resumed: Option<bool>,
    /// Whether the server accepted the request sent as 0-RTT early data;
    /// null when none was sent.
    pub early_data_accepted: Option<bool>,
    /// The response's status code.
    pub status: u16,
    /// Response body bytes received.
    pub body_bytes: u64,
    /// The path's round trip as the connection measured it just after
    /// set-up (TCP_INFO's smoothed RTT, or QUIC's estimate); absent when
    /// unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_rtt_ms: Option<f64>,
}

impl TtfbSample {
    /// Refuses a sample whose connection did not start the way `mode`
    /// claims (a "0-RTT" figure from a full handshake would mislead), or
    /// whose response was not a success.
    pub fn check(&self, mode: TtfbMode) -> Result<(), String> {
        if !(200..300).contains(&self.status) {
            return Err(format!(
                "the server answered {}; probe a URL that returns 2xx",
                self.status
            ));
        }
        if mode == TtfbMode::ZeroRtt && self.early_data_accepted != Some(true) {
            return Err(
                "the server did not accept 0-RTT early data, so this was no 0-RTT \
                 connection; check that the server enables early data (max_early_data_size) \
                 and issues tickets"
                    .to_string(),
            );
        }
        if mode != TtfbMode::Cold {
            match self.resumed {
                Some(true) => {}
                Some(false) => {
                    return Err("the TLS session was not resumed (the server sent its \
                         certificate again); check that the server issues session tickets"
                        .to_string())
                }
                None => {
                    return Err("resumption needs TLS, and this URL is cleartext: probe an \
                         https:// URL"
                        .to_string())
                }
            }
        }
        Ok(())
    }
}

/// One line: the sample's ttfb, and its handshake when there was one.
impl fmt::Display for TtfbSample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ttfb {:8.2} ms", self.ttfb_ms)?;
        match self.handshake_ms {
            Some(ms) => write!(f, "  (handshake {ms:.2} ms)"),
            None => Ok(()),
        }
    }
}

/// One line: median, min and max ttfb over the samples.
impl fmt::Display for TtfbReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut values: Vec<f64> = self.samples.iter().map(|s| s.ttfb_ms).collect();
        values.sort_by(f64::total_cmp);
        let Some((min, max)) = values.first().zip(values.last()) else {
            return write!(f, "{} {} {}: no sample", self.proto, self.mode, self.url);
        };
        let median = crate::quantile::quantile_sorted(&values, 0.5);
        write!(
            f,
            "{} {} ttfb: median {median:.2} ms, min {min:.2} ms, max {max:.2} ms over {} new connections",
            self.proto,
            self.mode,
            values.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TtfbSample {
        TtfbSample {
            path_rtt_ms: None,
            ttfb_ms: 20.0,
            tcp_connect_ms: None,
            handshake_ms: Some(10.0),
            resumed: Some(true),
            early_data_accepted: Some(true),
            status: 200,
            body_bytes: 1,
        }
    }

    #[test]
    fn a_sample_that_is_what_its_mode_claims_passes() {
        for mode in TtfbMode::ALL {
            assert_eq!(sample().check(*mode), Ok(()), "{mode}");
        }
    }

    #[test]
    fn mislabelled_samples_are_refused() {
        let full = TtfbSample {
            resumed: Some(false),
            ..sample()
        };
        assert!(full
            .check(TtfbMode::Resumed)
            .unwrap_err()
            .contains("not resumed"));
        assert_eq!(full.check(TtfbMode::Cold), Ok(()));
        let rejected = TtfbSample {
            early_data_accepted: Some(false),
            ..sample()
        };
        assert!(rejected
            .check(TtfbMode::ZeroRtt)
            .unwrap_err()
            .contains("0-RTT"));
        let cleartext = TtfbSample {
            resumed: None,
            ..sample()
        };
        assert!(cleartext
            .check(TtfbMode::Resumed)
            .unwrap_err()
            .contains("https://"));
        let missing = TtfbSample {
            status: 404,
            ..sample()
        };
        assert!(missing.check(TtfbMode::Cold).unwrap_err().contains("404"));
    }

    #[test]
    fn a_report_prints_its_median_min_and_max() {
        let mut report = TtfbReport {
            schema: TTFB_SCHEMA.to_string(),
            url: "https://x/".to_string(),
            proto: Proto::H3,
            mode: TtfbMode::Cold,
            samples: Vec::new(),
            not_offered: None,
        };
        assert_eq!(report.to_string(), "h3 cold https://x/: no sample");
        for ttfb_ms in [30.0, 10.0, 20.0] {
            report.samples.push(TtfbSample {
                path_rtt_ms: None,
                ttfb_ms,
                ..sample()
            });
        }
        assert_eq!(
            report.to_string(),
            "h3 cold ttfb: median 20.00 ms, min 10.00 ms, max 30.00 ms over 3 new connections"
        );
        report.samples.push(TtfbSample {
            path_rtt_ms: None,
            ttfb_ms: 40.0,
            ..sample()
        });
        assert!(
            report.to_string().contains("median 25.00 ms"),
            "an even count's median is the mean of the middle two: {report}"
        );
        assert_eq!(
            report.samples[0].to_string(),
            "ttfb    30.00 ms  (handshake 10.00 ms)"
        );
    }
}
