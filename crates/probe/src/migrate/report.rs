//! The versioned result of `probe migrate`: `h3lab.migrate/1`, documented
//! in docs/results-schema.md.

use std::fmt;

use h3lab_results::Proto;
use serde::Serialize;

use super::scenario::Change;
use super::summary::Summary;
pub use crate::claim::Claim;

/// The schema name and version written into every report.
pub const MIGRATE_SCHEMA: &str = "h3lab.migrate/1";

/// A whole `probe migrate` run.
#[derive(Debug, Clone, Serialize)]
pub struct MigrateReport {
    /// Always [`MIGRATE_SCHEMA`].
    pub schema: &'static str,
    /// What changed at the switch.
    pub change: Change,
    /// The built-in profile, if one was named.
    pub profile: Option<String>,
    /// The path's settings (RTT, rates, loss, seed) as run.
    pub link: linkem::LinkSettings,
    /// Requests started per second.
    pub rate_per_s: u32,
    /// How long requests were started, in seconds.
    pub duration_s: f64,
    /// When the switch was scheduled, from the first request, in seconds.
    pub switch_at_s: f64,
    /// Response body size of each request.
    pub body_bytes: u64,
    /// A request without a complete response after this long failed.
    pub request_timeout_ms: f64,
    /// A success slower than this was delayed.
    pub delay_threshold_ms: f64,
    /// One entry per protocol, in the order run.
    pub protocols: Vec<ProtoResult>,
    /// The studies' claims beside ours.
    pub claims: Vec<Claim>,
}

/// One protocol's run on its own fresh path.
#[derive(Debug, Clone, Serialize)]
pub struct ProtoResult {
    /// The protocol.
    pub proto: Proto,
    /// How the change was made for this protocol, in words.
    pub switch: String,
    /// When the change took effect, from the first request, in seconds.
    pub switched_at_s: f64,
    /// Counts, stall, connections, detection and reconnection.
    #[serde(flatten)]
    pub summary: Summary,
    /// h3: whether the server validated the new path (the client received
    /// PATH_CHALLENGE and sent PATH_RESPONSE after the switch on the
    /// connection it started with); `None` for TCP.
    pub path_validated: Option<bool>,
    /// h3: PATH_CHALLENGE frames received after the switch.
    pub path_challenges_received: Option<u64>,
    /// h3: PATH_RESPONSE frames sent after the switch.
    pub path_responses_sent: Option<u64>,
    /// Migrations the server counted (`h3lab_quic_migrations_total` from
    /// its metrics, read after the run; docs/metrics.md). A TCP connection
    /// cannot migrate, so h1 and h2 runs read 0.
    pub server_migrations: Option<u64>,
}

/// The studies' claims, a line each.
impl fmt::Display for MigrateReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let claims: Vec<String> = self.claims.iter().map(ToString::to_string).collect();
        write!(f, "{}", claims.join("\n"))
    }
}

/// Three lines: the switch; the requests and stall; the connections,
/// their break and reconnection, and whether the connection survived.
impl fmt::Display for ProtoResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.summary;
        let ms = |value: Option<f64>| value.map_or("-".to_string(), |v| format!("{v:.0} ms"));
        let validated = match self.path_validated {
            Some(true) => "yes",
            Some(false) => "no",
            None => "n/a (TCP)",
        };
        write!(
            f,
            "{}: {} at {:.2} s\n    requests {}: ok {}, failed {}, delayed after the switch {} \
             (before it {}); stall {:.0} ms\n    connections {} (broken {}); break detected after {}, \
             reconnected after {}; new path validated: {validated}; survived: {}; \
             migrations the server counted: {}",
            self.proto,
            self.switch,
            self.switched_at_s,
            s.requests,
            s.succeeded,
            s.failed,
            s.delayed_after_switch,
            s.delayed_before_switch,
            s.stall_ms,
            s.connections_used,
            s.connections_broken,
            ms(s.break_detected_after_ms),
            ms(s.reconnected_after_ms),
            if s.survived { "yes" } else { "no" },
            self.server_migrations
                .map_or("unknown".to_string(), |n| n.to_string()),
        )
    }
}
