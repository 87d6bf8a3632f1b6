//! `[target.edges.NAME]`: an edge (a reverse proxy, load balancer or CDN
//! node) in front of the target, which then is the origin, for an `edge`
//! sweep. The client reaches the edge over the cell's path; the edge
//! reaches the origin over a link of its own.

use std::fmt;

use h3lab_results::Proto;
use serde::Deserialize;

use super::values::HumanDuration;

/// An edge of `[target.edges]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Edge {
    /// Which server is the edge.
    pub(crate) server: EdgeServer,
    /// The protocol from the edge to the origin: `h2` (default) or `h1`.
    #[serde(default)]
    pub(crate) origin_protocol: OriginProtocol,
    /// Which requests go to the origin; by default a page's documents
    /// (the edge serving its other files, as a CDN with the site cached
    /// does) and every request of the other workloads.
    pub(crate) forward: Option<Forwarding>,
    /// The origin leg as a profile (built-in or `[[profile]]`).
    pub(crate) origin_profile: Option<String>,
    /// Or as a round trip alone, with no rate limit and no loss, such as
    /// `"1ms"` (one data centre) or `"80ms"` (an ocean away).
    pub(crate) origin_rtt: Option<HumanDuration>,
}

/// The servers h3lab starts as an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EdgeServer {
    /// `h3lab serve --upstream`.
    H3lab,
    /// nginx 1.26 with its own HTTP/3 (Debian 13's build).
    Nginx,
    /// HAProxy 3.0 with its own QUIC (Debian 13's build).
    Haproxy,
    /// Caddy's `reverse_proxy` (quic-go).
    Caddy,
}

impl EdgeServer {
    pub(crate) fn name(self) -> &'static str {
        match self {
            EdgeServer::H3lab => "h3lab",
            EdgeServer::Nginx => "nginx",
            EdgeServer::Haproxy => "haproxy",
            EdgeServer::Caddy => "caddy",
        }
    }

    /// The protocols it can speak to an origin.
    fn origin_protocols(self) -> &'static [OriginProtocol] {
        match self {
            // nginx proxies HTTP to upstreams over HTTP/1.x only
            // (its HTTP/2 upstreams are gRPC's).
            EdgeServer::Nginx => &[OriginProtocol::H1],
            _ => &[OriginProtocol::H1, OriginProtocol::H2],
        }
    }

    /// Whether it can serve the site's files itself.
    fn serves_files(self) -> bool {
        self != EdgeServer::Haproxy
    }
}

/// The protocol of the edge–origin leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OriginProtocol {
    H1,
    #[default]
    H2,
}

impl OriginProtocol {
    pub(crate) fn name(self) -> &'static str {
        match self {
            OriginProtocol::H1 => "h1",
            OriginProtocol::H2 => "h2",
        }
    }

    pub(crate) fn proto(self) -> Proto {
        match self {
            OriginProtocol::H1 => Proto::H1,
            OriginProtocol::H2 => Proto::H2,
        }
    }
}

/// Which requests an edge forwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Forwarding {
    All,
    Documents,
}

impl Forwarding {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Forwarding::All => "all",
            Forwarding::Documents => "documents",
        }
    }
}

impl Edge {
    /// What it forwards for a workload that is (or is not) a page.
    pub(crate) fn forwarding(&self, page: bool) -> Forwarding {
        match (self.forward, page) {
            (Some(forward), _) => forward,
            (None, true) => Forwarding::Documents,
            (None, false) => Forwarding::All,
        }
    }

    /// The edge's own contradictions, named with the fix.
    pub(crate) fn check(&self, name: &str, has_pages: bool) -> anyhow::Result<()> {
        let server = self.server.name();
        let offered = self.server.origin_protocols();
        if !offered.contains(&self.origin_protocol) {
            let names: Vec<&str> = offered.iter().map(|p| p.name()).collect();
            anyhow::bail!(
                "[target.edges.{name}]: {server} cannot speak {} to its origin (it speaks {}); \
                 set origin_protocol = \"{}\"",
                self.origin_protocol.name(),
                names.join(", "),
                names[0]
            );
        }
        if !self.server.serves_files() && self.forwarding(has_pages) == Forwarding::Documents {
            anyhow::bail!(
                "[target.edges.{name}]: {server} cannot serve the site's files itself; \
                 set forward = \"all\""
            );
        }
        match (&self.origin_profile, &self.origin_rtt) {
            (Some(_), None) | (None, Some(_)) => Ok(()),
            _ => anyhow::bail!(
                "[target.edges.{name}]: give the origin leg as origin_rtt = \"80ms\" or as \
                 origin_profile = \"NAME\", one of the two"
            ),
        }
    }
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, {} to the origin",
            self.server.name(),
            self.origin_protocol.name()
        )?;
        match (&self.origin_profile, &self.origin_rtt) {
            (Some(profile), _) => write!(f, " over {profile}"),
            (_, Some(rtt)) => write!(f, " {} away", humantime::format_duration(rtt.0)),
            _ => Ok(()),
        }
    }
}
