//! `[target]`: the server under test.

use std::collections::BTreeMap;
use std::fmt;

use h3lab_results::{Proto, QuicCongestion};
use serde::Deserialize;

use super::values::{HumanDuration, Packets};

/// Where requests go: the built-in server, any server a command starts
/// in the server namespace, or (a field run) a deployed server h3lab did
/// not start, over the real path.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Target {
    /// A field run's pages (a URL or a list of them), on servers h3lab
    /// does not start. Page, ttfb and rps workloads without a `url` of
    /// their own request these.
    #[serde(default, deserialize_with = "one_or_many")]
    pub(crate) url: Vec<FieldUrl>,
    /// Other origins a field run's pages may fetch from
    /// (`https://cdn.example.com`); the loaders send nothing to any other
    /// host.
    #[serde(default)]
    pub(crate) origins: Vec<FieldUrl>,
    /// Host names pinned to addresses, as curl's `HOST:PORT:ADDR`; the
    /// others are resolved once, before the first cell, and pinned.
    #[serde(default)]
    pub(crate) resolve: Vec<Pin>,
    /// The pause after each cell of a field run (the write-ups waited
    /// 3 s, the default), so loads do not follow each other back to back.
    pub(crate) pause: Option<HumanDuration>,
    /// Where a field run runs, in words ("home, Berlin, cable"); recorded.
    pub(crate) place: Option<String>,
    /// Lifts a field run's caps on rps and download workloads (rate,
    /// duration, connections, streams): only for a server you run.
    #[serde(default)]
    pub(crate) allow_heavy: bool,
    /// Accept any certificate in a field run (a staging server with a
    /// self-signed one); by default the system's authorities decide.
    #[serde(default)]
    pub(crate) insecure: bool,
    /// Shell command started in the server namespace (`sh -c`); the built-in
    /// `h3lab serve` when absent. Placeholders: see [`ServerCommand`].
    pub(crate) server_cmd: Option<String>,
    /// Port the server listens on (TCP and UDP); 443 by default.
    pub(crate) port: Option<u16>,
    /// Named server commands (as `server_cmd`) for a `server` sweep.
    #[serde(default)]
    pub(crate) servers: BTreeMap<String, ServerCommand>,
    /// Named edges (reverse proxies) in front of the target, for an
    /// `edge` sweep.
    #[serde(default)]
    pub(crate) edges: BTreeMap<String, super::Edge>,
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

/// A server of `[target.servers]`: its command and, as a table, the
/// protocols it offers when it does not offer all of them (an h3-only QUIC
/// server, an nginx without QUIC) and the QUIC stack under it, which the
/// report names. Cells of other protocols are not run for it: the report
/// says "not offered".
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
    expecting = "a server command (a string), or a table { cmd = \"...\", protocols = [\"h3\"], stack = \"quinn\", document = \"/index.html\" }"
)]
pub(crate) enum ServerCommand {
    Command(String),
    Table(ServerTable),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServerTable {
    cmd: String,
    #[serde(default = "fixed_protocols")]
    protocols: Vec<Proto>,
    #[serde(default)]
    stack: Option<String>,
    /// The path page cells ask for as the document, for a server that
    /// serves no index file at `/` (tquic_server); `/` when not given.
    #[serde(default)]
    document: Option<String>,
}

impl ServerCommand {
    pub(crate) fn command(&self) -> &str {
        match self {
            ServerCommand::Command(cmd) | ServerCommand::Table(ServerTable { cmd, .. }) => cmd,
        }
    }

    /// Whether cells of `protocol` run against this server.
    pub(crate) fn offers(&self, protocol: Proto) -> bool {
        match self {
            ServerCommand::Command(_) => true,
            ServerCommand::Table(table) => table.protocols.contains(&protocol),
        }
    }

    /// The path of a page cell's document on this server: `/` unless the
    /// table gives another.
    pub(crate) fn document(&self) -> &str {
        match self {
            ServerCommand::Table(ServerTable {
                document: Some(path),
                ..
            }) => path,
            _ => "/",
        }
    }

    /// The QUIC stack under it, where the suite names one.
    pub(crate) fn stack(&self) -> Option<&str> {
        match self {
            ServerCommand::Command(_) => None,
            ServerCommand::Table(table) => table.stack.as_deref(),
        }
    }
}

impl fmt::Display for ServerCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.command())?;
        let ServerCommand::Table(table) = self else {
            return Ok(());
        };
        let mut notes: Vec<String> = table.stack.iter().map(|s| format!("QUIC: {s}")).collect();
        if table.protocols.len() < fixed_protocols().len() {
            let protocols: Vec<&str> = table.protocols.iter().map(|p| p.name()).collect();
            notes.push(format!("{} only", protocols.join(", ")));
        }
        match notes.is_empty() {
            true => Ok(()),
            false => write!(f, " ({})", notes.join("; ")),
        }
    }
}

/// h1, h2 and h3: what a server offers unless its table says otherwise.
pub(crate) fn fixed_protocols() -> Vec<Proto> {
    vec![Proto::H1, Proto::H2, Proto::H3]
}

fn follow_tcp() -> QuicCongestion {
    QuicCongestion::Auto
}

impl Default for Target {
    fn default() -> Target {
        Target {
            url: Vec::new(),
            origins: Vec::new(),
            resolve: Vec::new(),
            pause: None,
            place: None,
            allow_heavy: false,
            insecure: false,
            server_cmd: None,
            port: None,
            servers: Default::default(),
            edges: Default::default(),
            quic_cc: follow_tcp(),
            initial_window: None,
        }
    }
}

/// An `https://` URL of a field run, checked as it is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldUrl(pub(crate) url::Url);

impl FieldUrl {
    /// `host:port`, what a pin and the resolved addresses are kept by.
    pub(crate) fn host_port(&self) -> String {
        let host = self.0.host_str().unwrap_or_default();
        format!("{host}:{}", self.0.port_or_known_default().unwrap_or(443))
    }
}

impl fmt::Display for FieldUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

impl std::str::FromStr for FieldUrl {
    type Err = String;

    fn from_str(text: &str) -> Result<FieldUrl, String> {
        let url = url::Url::parse(text).map_err(|err| {
            format!("`{text}` is not a URL ({err}); write e.g. https://www.example.com/")
        })?;
        if url.scheme() != "https" {
            return Err(format!(
                "`{text}` is not an https:// URL; h2 and h3 need TLS, so a field run measures https:// pages"
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(format!("`{text}` names no host"));
        }
        Ok(FieldUrl(url))
    }
}

impl<'de> Deserialize<'de> for FieldUrl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// `HOST:PORT:ADDR`: connections to HOST on PORT go to ADDR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pin {
    pub(crate) host_port: String,
    pub(crate) address: std::net::IpAddr,
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host_port, self.address)
    }
}

impl std::str::FromStr for Pin {
    type Err = String;

    fn from_str(text: &str) -> Result<Pin, String> {
        let hint = "write HOST:PORT:ADDR, e.g. www.example.com:443:192.0.2.10";
        let mut parts = text.splitn(3, ':');
        let (Some(host), Some(port), Some(address)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(format!("`{text}` is not a pin; {hint}"));
        };
        let port: u16 = port
            .parse()
            .map_err(|_| format!("`{text}`: `{port}` is not a port; {hint}"))?;
        let address = address
            .trim_matches(|c| c == '[' || c == ']')
            .parse()
            .map_err(|_| format!("`{text}`: `{address}` is not an IP address; {hint}"))?;
        if host.is_empty() {
            return Err(format!("`{text}` names no host; {hint}"));
        }
        Ok(Pin {
            host_port: format!("{}:{port}", host.to_ascii_lowercase()),
            address,
        })
    }
}

impl<'de> Deserialize<'de> for Pin {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// A URL, or a list of them.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<FieldUrl>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged, expecting = "a URL, or a list of URLs")]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    let texts = match OneOrMany::deserialize(d)? {
        OneOrMany::One(text) => vec![text],
        OneOrMany::Many(texts) => texts,
    };
    texts
        .iter()
        .map(|text| text.parse().map_err(serde::de::Error::custom))
        .collect()
}
