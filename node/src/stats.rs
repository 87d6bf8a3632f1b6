//! `server.stats()`: read from the same Prometheus registry `/metrics`
//! serves, so the two always agree.

use h3lab_results::server_output::Sample;
use h3lab_server::RunningServer;
use napi_derive::napi;

/// Counts per protocol.
#[napi(object)]
#[derive(Default)]
pub struct PerProtocol {
    pub h1: f64,
    pub h2: f64,
    pub h3: f64,
}

/// What `server.stats()` answers. Figures the server cannot know yet (no
/// connection has closed, so no RTT was taken) are `null`.
#[napi(object)]
#[derive(Default)]
pub struct ServerStats {
    /// Connections open now.
    pub connections_open: PerProtocol,
    /// Connections accepted so far.
    pub connections_total: PerProtocol,
    /// Requests (streams) answered so far.
    pub requests: PerProtocol,
    /// Requests being answered now.
    pub requests_in_flight: f64,
    pub zero_rtt_offered: f64,
    pub zero_rtt_accepted: f64,
    pub zero_rtt_rejected: f64,
    pub migrations: f64,
    pub quic_packets_sent: f64,
    pub quic_packets_lost: f64,
    /// Mean smoothed RTT of closed QUIC connections, in milliseconds.
    pub quic_rtt_mean_ms: Option<f64>,
}

impl ServerStats {
    /// All zero before `listen`.
    pub fn read(server: Option<&RunningServer>) -> Self {
        let Some(server) = server else {
            return Self::default();
        };
        let text = server.metrics_text();
        let samples: Vec<Sample> = text.lines().filter_map(Sample::parse).collect();
        let sum = |name: &str, label: Option<(&str, &str)>| -> f64 {
            samples
                .iter()
                .filter(|s| s.name == name && label.is_none_or(|(k, v)| s.label(k) == Some(v)))
                .map(|s| s.value)
                .sum()
        };
        let per_protocol = |name: &str| PerProtocol {
            h1: sum(name, Some(("protocol", "h1"))),
            h2: sum(name, Some(("protocol", "h2"))),
            h3: sum(name, Some(("protocol", "h3"))),
        };
        let rtt_count = sum("h3lab_quic_rtt_seconds_count", None);
        Self {
            connections_open: per_protocol("h3lab_connections_open"),
            connections_total: per_protocol("h3lab_connections_total"),
            requests: per_protocol("h3lab_http_requests_total"),
            requests_in_flight: server.requests_in_flight() as f64,
            zero_rtt_offered: sum("h3lab_quic_zero_rtt_total", Some(("outcome", "offered"))),
            zero_rtt_accepted: sum("h3lab_quic_zero_rtt_total", Some(("outcome", "accepted"))),
            zero_rtt_rejected: sum("h3lab_quic_zero_rtt_total", Some(("outcome", "rejected"))),
            migrations: sum("h3lab_quic_migrations_total", None),
            quic_packets_sent: sum("h3lab_quic_packets_sent_total", None),
            quic_packets_lost: sum("h3lab_quic_packets_lost_total", None),
            quic_rtt_mean_ms: (rtt_count > 0.0)
                .then(|| sum("h3lab_quic_rtt_seconds_sum", None) / rtt_count * 1000.0),
        }
    }
}
