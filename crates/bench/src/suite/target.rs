//! `[target]`: the server under test.

use std::collections::BTreeMap;
use std::fmt;

use h3lab_results::{Proto, QuicCongestion};
use serde::Deserialize;

use super::values::Packets;

/// Where requests go: the built-in server, or any server a command starts
/// in the server namespace.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Target {
    /// Shell command started in the server namespace (`sh -c`); the built-in
    /// `h3lab serve` when absent. Placeholders: see [`ServerCommand`].
    pub(crate) server_cmd: Option<String>,
    /// Port the server listens on (TCP and UDP); 443 by default.
    pub(crate) port: Option<u16>,
    /// Named server commands (as `server_cmd`) for a `server` sweep.
    #[serde(default)]
    pub(crate) servers: BTreeMap<String, ServerCommand>,
    /// The built-in server's QUIC congestion controller: `auto` (default:
    /// the family of the kernel's TCP controller, so h2 and h3 run the same
    /// congestion control), `cubic`, `newreno` or `bbr`.
    #[serde(default = "follow_tcp")]
    pub(crate) quic_cc: QuicCongestion,
    /// Both transports' initial congestion window, in packets, for every
    /// cell on an emulated path: TCP's through the path's routes (for any
    /// server), QUIC's through the built-in server's flag. Unset: Linux's
    /// 10 segments and each QUIC server's own.
    pub(crate) initial_window: Option<Packets>,
}

/// A server of `[target.servers]`: its command, and the protocols it
/// offers when it does not offer all of them (an h3-only QUIC server, an
/// nginx without QUIC). Cells of other protocols are not run for it.
///
/// The command is started with `sh -c` in the server namespace, with these
/// placeholders replaced: `{ip}` and `{port}`, where it listens; `{site}`,
/// the directory to serve at `/` (a page cell's site, or for other cells a
/// directory holding `bytes/N` for the workload's body size); `{cert}` and
/// `{key}`, a certificate for the server's addresses and its key, which the
/// client then trusts (without them the client runs `--insecure`).
#[derive(Debug, Clone, Deserialize)]
#[serde(
    untagged,
    expecting = "a server command (a string), or a table { cmd = \"...\", protocols = [\"h3\"] }"
)]
pub(crate) enum ServerCommand {
    Command(String),
    Table { cmd: String, protocols: Vec<Proto> },
}

impl ServerCommand {
    pub(crate) fn command(&self) -> &str {
        match self {
            ServerCommand::Command(cmd) | ServerCommand::Table { cmd, .. } => cmd,
        }
    }

    /// Whether cells of `protocol` run against this server.
    pub(crate) fn offers(&self, protocol: Proto) -> bool {
        match self {
            ServerCommand::Command(_) => true,
            ServerCommand::Table { protocols, .. } => protocols.contains(&protocol),
        }
    }
}

impl fmt::Display for ServerCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerCommand::Command(cmd) => f.write_str(cmd),
            ServerCommand::Table { cmd, protocols } => {
                let protocols: Vec<&str> = protocols.iter().map(|p| p.name()).collect();
                write!(f, "{cmd} ({} only)", protocols.join(", "))
            }
        }
    }
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
            initial_window: None,
        }
    }
}
