//! What the built-in server (`h3lab serve`) tells the programs that start
//! it, as data: its start-up lines, and the samples of its `/metrics` text.

use std::collections::BTreeMap;
use std::net::SocketAddr;

/// The `h3lab serve` line that says it is ready: `listening: tcp+udp
/// 198.18.0.2:443 (...)`. What it started with is in its start report
/// ([`ServeStart`]), written before this line.
pub fn is_listening_line(line: &str) -> bool {
    line.starts_with("listening:")
}

/// The version of [`ServeStart`]'s JSON.
pub const SERVE_START_SCHEMA: &str = "h3lab.serve-start/1";

/// What `h3lab serve --start-report FILE` writes before it says it
/// listens: where it is and what it runs with, typed, for the programs
/// that start it (the bench, the probes), which read no banner text.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServeStart {
    /// [`SERVE_START_SCHEMA`].
    pub schema: String,
    /// The address it listens on, TCP and UDP.
    pub listening: SocketAddr,
    /// Where it serves `/metrics`; `None` when it does not.
    pub metrics: Option<SocketAddr>,
    /// The settings that decide results, as the banner's `tuning:` lines
    /// word them (docs/tuning.md): what `results.json` keeps.
    pub tuning: BTreeMap<String, String>,
    /// QUIC's initial congestion window in bytes, read from the
    /// controller quinn builds; `None` without h3.
    pub quic_initial_window: Option<u64>,
}

impl ServeStart {
    /// Reads a start report, refusing another schema.
    pub fn from_json(text: &str) -> anyhow::Result<ServeStart> {
        let start: ServeStart = serde_json::from_str(text)?;
        anyhow::ensure!(
            start.schema == SERVE_START_SCHEMA,
            "a start report of schema {}, not {SERVE_START_SCHEMA}: h3lab serve is another version",
            start.schema
        );
        Ok(start)
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
    fn a_start_report_reads_back_and_another_schema_is_refused() {
        let start = ServeStart {
            schema: SERVE_START_SCHEMA.to_string(),
            listening: "198.18.0.2:443".parse().unwrap(),
            metrics: Some("127.0.0.1:41234".parse().unwrap()),
            tuning: [("h2_stream_window".into(), "16777216 B".into())].into(),
            quic_initial_window: Some(14_720),
        };
        let text = serde_json::to_string(&start).unwrap();
        assert_eq!(ServeStart::from_json(&text).unwrap(), start);
        let other = text.replace(SERVE_START_SCHEMA, "h3lab.serve-start/9");
        let err = ServeStart::from_json(&other).unwrap_err().to_string();
        assert!(err.contains("h3lab.serve-start/9"), "{err}");
        assert!(is_listening_line("listening: tcp+udp 198.18.0.2:443 (h3)"));
        assert!(!is_listening_line("tuning: listening = no"));
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
