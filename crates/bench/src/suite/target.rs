//! `[target]`: the server under test.

use h3lab_results::QuicCongestion;
use serde::Deserialize;

/// Where requests go: the built-in server, or any server a command starts
/// in the server namespace.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Target {
    /// Shell command started in the server namespace (`sh -c`); the built-in
    /// `h3lab serve` when absent. `{ip}` and `{port}` are replaced by the
    /// server's address and port.
    pub(crate) server_cmd: Option<String>,
    /// Port the server listens on (TCP and UDP); 443 by default.
    pub(crate) port: Option<u16>,
    /// Named server commands (as `server_cmd`) for a `server` sweep.
    #[serde(default)]
    pub(crate) servers: std::collections::BTreeMap<String, String>,
    /// The built-in server's QUIC congestion controller: `auto` (default:
    /// the family of the kernel's TCP controller, so h2 and h3 run the same
    /// congestion control), `cubic`, `newreno` or `bbr`.
    #[serde(default = "follow_tcp")]
    pub(crate) quic_cc: QuicCongestion,
}

fn follow_tcp() -> QuicCongestion {
    QuicCongestion::Auto
}

impl Default for Target {
    fn default() -> Target {
        Target {
            server_cmd: None,
            port: None,
            servers: Default::default(),
            quic_cc: follow_tcp(),
        }
    }
}
