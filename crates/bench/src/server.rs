//! The target server of a cell, in the server namespace: the built-in
//! `h3lab serve`, or the suite's own command (e.g. Caddy).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use h3lab_results::Proto;
use h3lab_supervise::Supervised;
use linkem::run::Placement;

use h3lab_site::replay::Replay;

use crate::suite::Target;
use crate::sweep::{quic_initial_window, Setting};
use h3lab_harness::custom::{self, Custom};
use h3lab_harness::{BuiltinServer, End};
use h3lab_server::cli::ServeArgs;

pub(crate) const DEFAULT_PORT: u16 = 443;

/// A running server and how to reach it.
pub(crate) struct ServerProcess {
    pub(crate) process: Supervised,
    pub(crate) addr: SocketAddr,
    /// Certificate to trust; `None` means the client runs `--insecure`.
    pub(crate) cert: Option<PathBuf>,
    /// The built-in server's `tuning:` lines as name → value; `None` for a
    /// custom server.
    pub(crate) tuning: Option<BTreeMap<String, String>>,
    /// Where the built-in server serves `/metrics`, on the server side's own
    /// loopback so that scraping sends nothing over the emulated link.
    pub(crate) metrics: Option<SocketAddr>,
    /// The built-in server's QUIC initial window in bytes, as its start
    /// report gives it; `None` for a custom server or without h3.
    pub(crate) quic_initial_window: Option<u64>,
    /// A replayed page's origins, each on an address of its own.
    pub(crate) replay: Option<ReplayTarget>,
    /// The name clients reach it by, which the path's DNS server gives it;
    /// `None`: by its address.
    pub(crate) name: Option<&'static str>,
    /// The path page cells ask for as the document.
    pub(crate) document: String,
}

impl ServerProcess {
    /// The built-in server, whose certificate is `cert`.
    pub(crate) fn builtin(server: BuiltinServer, cert: PathBuf) -> ServerProcess {
        ServerProcess {
            process: server.process,
            addr: server.addr,
            cert: Some(cert),
            tuning: Some(server.start.tuning),
            metrics: server.start.metrics,
            quic_initial_window: server.start.quic_initial_window,
            replay: None,
            name: None,
            document: "/".to_string(),
        }
    }

    /// A server a command started, listening on `addr`.
    pub(crate) fn command(started: custom::Started, addr: SocketAddr) -> ServerProcess {
        ServerProcess {
            process: started.process,
            addr,
            cert: started.cert,
            tuning: None,
            metrics: None,
            quic_initial_window: None,
            replay: None,
            name: None,
            document: "/".to_string(),
        }
    }

    /// `HOST:PORT` for its URLs: its name when it has one.
    pub(crate) fn authority(&self) -> String {
        match self.name {
            Some(name) => format!("{name}:{}", self.addr.port()),
            None => self.addr.to_string(),
        }
    }
}

/// Where a replayed page's origins are: the page, the replay site, and
/// how the client finds each origin's own address.
pub(crate) struct ReplayTarget {
    pub(crate) page: String,
    pub(crate) dir: PathBuf,
    pub(crate) names: OriginNames,
}

/// How a replay's client finds its origins.
pub(crate) enum OriginNames {
    /// One `--resolve` rule per origin, to its address on the server's port.
    Rules(Vec<String>),
    /// The path's DNS server publishes them.
    Dns,
}

impl ReplayTarget {
    /// Each origin on its address in `ips`, named by a rule or, `by_dns`,
    /// left to the path's DNS server, which gives an address but not a
    /// port: then every origin must use the server's.
    pub(crate) fn new(
        replay: &Replay,
        ips: &[IpAddr],
        dir: &Path,
        port: u16,
        by_dns: bool,
    ) -> anyhow::Result<ReplayTarget> {
        let names = match by_dns {
            true => {
                if let Some(origin) = replay.origins.iter().find(|o| o.port != port) {
                    anyhow::bail!(
                        "the replayed origin {} uses port {}, and the server listens on {port}; \
                         DNS gives an address, not a port: set the suite's `[target] port = {}` \
                         or leave `dns` out of the profile",
                        origin.origin,
                        origin.port,
                        origin.port
                    );
                }
                OriginNames::Dns
            }
            false => OriginNames::Rules(
                (replay.origins.iter().zip(ips))
                    .map(|(origin, ip)| {
                        let destination = SocketAddr::new(*ip, port);
                        format!("{}:{}:{destination}", origin.host, origin.port)
                    })
                    .collect(),
            ),
        };
        Ok(ReplayTarget {
            page: replay.page.clone(),
            dir: dir.to_path_buf(),
            names,
        })
    }
}

/// Where and how a cell's server starts.
pub(crate) struct Start<'a> {
    pub(crate) placement: &'a Placement<'a>,
    /// The `h3lab` executable, for the built-in server.
    pub(crate) exe: &'a Path,
    /// The cell's own scratch directory (certificates).
    pub(crate) scratch: &'a Path,
    /// The run's scratch directory (sites and bodies shared by cells).
    pub(crate) run_scratch: &'a Path,
    /// A directory the server serves at `/` (page workloads).
    pub(crate) site: Option<&'a Path>,
    /// The body size of an `rps`, `download` or `ttfb` cell, which a
    /// server command serves as `/bytes/N`.
    pub(crate) body_size: Option<u64>,
    /// The cell's protocol, whose transport the server must listen on.
    pub(crate) protocol: Proto,
    /// Listen on every address of the server side (0.0.0.0), as a
    /// replayed page's origins need, each on an address of its own.
    pub(crate) every_address: bool,
    /// The swept setting the built-in server runs with (a suite with a
    /// sweep has no `server_cmd`).
    pub(crate) setting: Option<&'a Setting>,
    /// Where it runs: at the server end, or as the origin behind an edge.
    pub(crate) end: End,
}

/// Starts the suite's target where `start.placement` puts servers and waits
/// until it listens.
pub(crate) fn start(target: &Target, start: &Start<'_>) -> anyhow::Result<ServerProcess> {
    let swept_server = start.setting.and_then(Setting::server);
    let row = swept_server.and_then(|name| target.servers.get(name));
    let shell = match swept_server {
        Some(_) => row.map(|server| server.command()),
        None => target.server_cmd.as_deref(),
    };
    let builtin = Start {
        setting: start.setting.filter(|s| s.server().is_none()),
        ..*start
    };
    let Some(shell) = shell else {
        return start_builtin(&builtin, target);
    };
    let ip = IpAddr::V4(start.end.ip(start.placement)?);
    let custom = Custom {
        shell,
        addr: SocketAddr::new(ip, target.port.unwrap_or(DEFAULT_PORT)),
        site: start.site,
        body_size: start.body_size,
        run_scratch: start.run_scratch,
        cell_scratch: start.scratch,
        protocol: start.protocol,
        end: start.end,
    };
    let started = custom::start(start.placement, &custom)?;
    let mut server = ServerProcess::command(started, custom.addr);
    if let Some(row) = row {
        server.document = row.document().to_string();
    }
    Ok(server)
}

fn start_builtin(start: &Start<'_>, target: &Target) -> anyhow::Result<ServerProcess> {
    let Start {
        placement,
        exe,
        scratch,
        site,
        setting,
        every_address,
        end,
        ..
    } = *start;
    // On loopback other programs own ports: let the server pick one.
    let port = match placement {
        Placement::Loopback => 0,
        Placement::Emulated(_) => target.port.unwrap_or(DEFAULT_PORT),
    };
    let cert = scratch.join("server-cert.pem");
    let mut serve = ServeArgs {
        quic_cc: target.quic_cc,
        site: site.map(Path::to_path_buf),
        ..ServeArgs::new()
    };
    if let Some(setting) = setting {
        setting.apply(&mut serve)?;
    }
    // The suite checks that no sweep sets the window too.
    if let Some(packets) = target.initial_window {
        serve.quic_initial_window = Some(quic_initial_window(packets.0));
    }
    let ip = match every_address {
        true => IpAddr::from([0, 0, 0, 0]),
        false => IpAddr::V4(end.ip(placement)?),
    };
    let listen = SocketAddr::new(ip, port);
    let server = h3lab_harness::start_builtin_at(placement, end, exe, listen, &cert, &serve)?;
    Ok(ServerProcess::builtin(server, cert))
}

#[cfg(test)]
mod tests {
    use super::*;
    use h3lab_site::replay::{Origin, RecordedLoad, Think};

    /// A replay whose origins use these ports, with no responses.
    fn replay_on(origins: &[(&str, u16)]) -> Replay {
        let origin = |(host, port): &(&str, u16)| Origin {
            origin: format!("https://{host}:{port}"),
            host: host.to_string(),
            port: *port,
        };
        Replay {
            schema: h3lab_site::replay::SCHEMA.to_string(),
            source: "test".to_string(),
            page: "https://a.test/".to_string(),
            think: Think::None,
            recorded: RecordedLoad::default(),
            origins: origins.iter().map(origin).collect(),
            responses: Vec::new(),
            skipped: Vec::new(),
            upgraded: None,
        }
    }

    #[test]
    fn a_replays_origins_get_rules_or_dns_which_cannot_move_a_port() {
        let ips = [
            IpAddr::from([198, 18, 0, 10]),
            IpAddr::from([198, 18, 0, 11]),
        ];
        let replay = replay_on(&[("a.test", 443), ("b.test", 8443)]);
        let ruled = ReplayTarget::new(&replay, &ips, Path::new("r"), 443, false).unwrap();
        let OriginNames::Rules(rules) = ruled.names else {
            panic!("no rules");
        };
        assert_eq!(
            rules,
            ["a.test:443:198.18.0.10:443", "b.test:8443:198.18.0.11:443"]
        );
        let err = ReplayTarget::new(&replay, &ips, Path::new("r"), 443, true)
            .err()
            .expect("port 8443 cannot be reached by name on 443")
            .to_string();
        assert!(
            err.contains("https://b.test:8443 uses port 8443") && err.contains("port = 8443"),
            "{err}"
        );
        let same_port = replay_on(&[("a.test", 443), ("b.test", 443)]);
        let named = ReplayTarget::new(&same_port, &ips, Path::new("r"), 443, true).unwrap();
        assert!(matches!(named.names, OriginNames::Dns));
    }
}
