//! What the built-in server (`h3lab serve`) tells the programs that start
//! it, as data: its start-up lines, and the samples of its `/metrics` text.

use std::collections::BTreeMap;
use std::net::SocketAddr;

/// One line of the start-up banner `h3lab serve` prints. `tuning:` and
/// `metrics:` lines come before the `listening:` line, so a reader can stop
/// at that one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BannerLine {
    /// `listening: tcp+udp 198.18.0.2:443 (...)`: the address clients use.
    Listening(SocketAddr),
    /// `tuning: NAME = VALUE`: a setting that decides results (docs/tuning.md).
    Tuning(String, String),
    /// `metrics: http://ADDR/metrics`: where the Prometheus metrics are.
    Metrics(SocketAddr),
    /// Any other line.
    Other,
}

impl BannerLine {
    /// Reads one line of the banner.
    pub fn parse(line: &str) -> Self {
        if let Some(rest) = line.strip_prefix("listening:") {
            if let Some(addr) = rest.split_whitespace().nth(1).and_then(|a| a.parse().ok()) {
                return BannerLine::Listening(addr);
            }
        }
        if let Some((name, value)) = line
            .strip_prefix("tuning:")
            .and_then(|rest| rest.split_once(" = "))
        {
            return BannerLine::Tuning(name.trim().to_string(), value.trim().to_string());
        }
        let metrics = line
            .strip_prefix("metrics: http://")
            .and_then(|rest| rest.strip_suffix("/metrics"))
            .and_then(|addr| addr.parse().ok());
        match metrics {
            Some(addr) => BannerLine::Metrics(addr),
            None => BannerLine::Other,
        }
    }
}

/// One sample line of the Prometheus (OpenMetrics) text format:
/// `name{k="v",...} value`. The one reader of the server's `/metrics` text,
/// for results files and for the Node.js binding's `server.stats()`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<'a> {
    /// `name{labels}` as written.
    pub series: &'a str,
    /// The metric's name.
    pub name: &'a str,
    /// The labels between the braces, empty without.
    pub labels: &'a str,
    /// The value.
    pub value: f64,
}

impl<'a> Sample<'a> {
    /// Reads one line; `None` for a comment or a line that is not a sample.
    pub fn parse(line: &'a str) -> Option<Self> {
        if line.starts_with('#') {
            return None;
        }
        let (series, value) = line.rsplit_once(' ')?;
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (name, rest.strip_suffix('}')?),
            None => (series, ""),
        };
        Some(Self {
            series,
            name,
            labels,
            value: value.parse().ok()?,
        })
    }

    /// The value of label `key`, unquoted.
    pub fn label(&self, key: &str) -> Option<&'a str> {
        self.labels.split(',').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k == key).then(|| v.trim_matches('"'))
        })
    }
}

/// The samples of an OpenMetrics text as `name{labels}` → value, histogram
/// buckets left out: `_sum` and `_count` keep what a results file needs, at
/// a tenth of the size.
pub fn metric_samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter_map(Sample::parse)
        .filter(|s| !s.series.contains("_bucket{") && !s.series.ends_with("_bucket"))
        .map(|s| (s.series.to_string(), s.value))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banner_lines_give_address_tuning_and_metrics() {
        let line = "listening: tcp+udp 198.18.0.2:443 (h1,h2 over TLS 1.3; h3 over QUIC)";
        assert_eq!(
            BannerLine::parse(line),
            BannerLine::Listening("198.18.0.2:443".parse().unwrap())
        );
        assert_eq!(
            BannerLine::parse("tuning: h2_stream_window = 16777216 B"),
            BannerLine::Tuning("h2_stream_window".into(), "16777216 B".into())
        );
        assert_eq!(
            BannerLine::parse("metrics: http://127.0.0.1:41234/metrics"),
            BannerLine::Metrics("127.0.0.1:41234".parse().unwrap())
        );
        for other in [
            "spki-sha256: abc",
            "metrics: 127.0.0.1:41234",
            "listening: soon",
        ] {
            assert_eq!(BannerLine::parse(other), BannerLine::Other, "{other}");
        }
    }

    #[test]
    fn samples_keep_counters_and_histogram_totals_but_not_buckets() {
        let text = "# HELP h3lab_connections Connections served.\n\
                    # TYPE h3lab_connections counter\n\
                    h3lab_connections_total{protocol=\"h3\"} 2\n\
                    h3lab_quic_rtt_seconds_sum 0.042\n\
                    h3lab_quic_rtt_seconds_count 2\n\
                    h3lab_quic_rtt_seconds_bucket{le=\"0.1\"} 2\n\
                    # EOF\n";
        let found = metric_samples(text);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found["h3lab_connections_total{protocol=\"h3\"}"], 2.0);
        assert_eq!(found["h3lab_quic_rtt_seconds_sum"], 0.042);
        assert_eq!(found["h3lab_quic_rtt_seconds_count"], 2.0);
    }

    #[test]
    fn a_sample_line_gives_name_labels_and_value() {
        let sample =
            Sample::parse("h3lab_quic_zero_rtt_total{outcome=\"accepted\",protocol=\"h3\"} 3")
                .unwrap();
        assert_eq!(sample.name, "h3lab_quic_zero_rtt_total");
        assert_eq!(sample.label("outcome"), Some("accepted"));
        assert_eq!(sample.label("protocol"), Some("h3"));
        assert_eq!(sample.label("le"), None);
        assert_eq!(sample.value, 3.0);
        let bare = Sample::parse("h3lab_quic_migrations_total 1").unwrap();
        assert_eq!(
            (bare.name, bare.labels, bare.value),
            ("h3lab_quic_migrations_total", "", 1.0)
        );
        for not_a_sample in ["# TYPE x counter", "", "x{a=\"b\" 1", "x one"] {
            assert_eq!(Sample::parse(not_a_sample), None, "{not_a_sample}");
        }
    }
}
