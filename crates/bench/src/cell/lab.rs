//! A lab cell: its emulated path, its servers (an edge in front of the
//! target, the path's DNS server) and its client, started and stopped in
//! that order, with what each measured written into the cell's record.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;
use h3lab_dns::{Host, Publish, ZoneConfig};
use h3lab_harness::{End, PathDns, SITE_HOST};
use h3lab_results::bench::{CpuUse, EdgeRecord};
use h3lab_site::replay::Replay;
use linkem::model::LinkStats;
use linkem::run::Placement;
use linkem::EmulatedPath;

use super::record::{CellOutcome, ServerSide};
use super::{body_size, cell_dir, site_dir, RunContext};
use crate::client::{self, Aim};
use crate::edge::EdgeStart;
use crate::plan::{CellPlan, EdgePlan};
use crate::server;
use crate::suite::Load;
use crate::usage;

/// A lab cell's path before any server starts: the emulated link (none on
/// loopback), the site and replay it serves, an edge's origin leg, and
/// the DNS the profile publishes.
struct LabPath<'a> {
    plan: &'a CellPlan,
    path: Option<EmulatedPath>,
    site: Option<PathBuf>,
    replay: Option<Replay>,
    /// A replay's origins, each on an address of its own.
    origin_ips: Option<Vec<IpAddr>>,
}

impl<'a> LabPath<'a> {
    /// Starts the path, with an edge's origin leg, the TCP initial window
    /// the plan asks for and the resolver the published DNS needs.
    fn start(plan: &'a CellPlan, scratch: &Path) -> anyhow::Result<Self> {
        let site = site_dir(plan, scratch)?;
        let replay = match &site {
            Some(dir) if Replay::is_replay_site(dir) => Some(Replay::read(dir)?),
            _ => None,
        };
        let mut path = (plan.link.as_ref())
            .map(|s| EmulatedPath::start(s.build()))
            .transpose()?;
        let origin_ips = match (&replay, &mut path) {
            (None, _) => None,
            (Some(replay), Some(path)) => {
                let ips = path.add_server_addresses(replay.origins.len())?;
                let ips: Vec<IpAddr> = ips.into_iter().map(IpAddr::V4).collect();
                Some(replay.origin_addresses(Some(&ips))?)
            }
            (Some(replay), None) => Some(replay.origin_addresses(None)?),
        };
        if let (Some(edge), Some(path)) = (&plan.edge, &mut path) {
            path.add_origin_leg(edge.origin_link.build())?;
        }
        set_tcp_initial_window(plan.tcp_window, path.as_ref())?;
        if let (Some(_), Some(path)) = (&plan.publish, &mut path) {
            path.set_client_resolver(path.server_ip())?;
        }
        Ok(LabPath {
            plan,
            path,
            site,
            replay,
            origin_ips,
        })
    }

    fn placement(&self) -> Placement<'_> {
        match &self.path {
            Some(path) => Placement::Emulated(path),
            None => Placement::Loopback,
        }
    }

    /// Stops the path: each leg's link statistics (the client's, and
    /// behind an edge the origin's), none on loopback.
    fn shutdown(self) -> anyhow::Result<(Option<LinkStats>, Option<LinkStats>)> {
        let Some(path) = self.path else {
            return Ok((None, None));
        };
        let legs = path.shutdown_legs()?;
        Ok((Some(legs.client_leg), legs.origin_leg))
    }
}

/// The cell's servers on the path: the target (or an edge in front of
/// it, with the target as its origin and the edge's record), and the
/// path's DNS server when the profile publishes one.
struct Servers {
    server: server::ServerProcess,
    origin: Option<(server::ServerProcess, EdgeRecord)>,
    dns: Option<PathDns>,
}

impl Servers {
    fn start(lab: &LabPath<'_>, at: &server::Start<'_>) -> anyhow::Result<Servers> {
        let plan = lab.plan;
        let (mut server, origin) = match &plan.edge {
            None => (server::start(&plan.target, at)?, None),
            Some(edge) => {
                let (front, target, record) = start_edge(plan, at, edge)?;
                (front, Some((target, record)))
            }
        };
        if let (Some(replay), Some(ips), Some(dir)) = (&lab.replay, &lab.origin_ips, &lab.site) {
            let port = server.addr.port();
            let by_dns = plan.publish.is_some();
            server.replay = Some(server::ReplayTarget::new(replay, ips, dir, port, by_dns)?);
        }
        let dns = match (&plan.publish, &lab.path) {
            (Some(publish), Some(path)) => {
                let named = (lab.replay.as_ref()).zip(lab.origin_ips.as_deref());
                let zone = zone(path, &mut server, named, publish)?;
                Some(PathDns::start(path, zone)?)
            }
            _ => None,
        };
        Ok(Servers {
            server,
            origin,
            dns,
        })
    }

    /// The server the suite targets: behind an edge, the origin.
    fn target(&self) -> &server::ServerProcess {
        (self.origin.as_ref()).map_or(&self.server, |(target, _)| target)
    }

    /// Stops the servers and the DNS server after the client ran: their
    /// metrics (unless one exited), their CPU time, and why the cell
    /// cannot stand if one exited while the client ran.
    fn stop(mut self, placement: &Placement<'_>, cpu: &mut CpuUse) -> anyhow::Result<Stopped> {
        let ended = Ended::check(&mut self.server, self.origin.as_mut().map(|(t, _)| t));
        let metrics = match &ended {
            Some(_) => Ok(None),
            None => (self.server.metrics)
                .map(|addr| h3lab_harness::scrape(placement, addr))
                .transpose(),
        };
        let origin_metrics = self.origin.as_ref().and_then(|(target, _)| {
            let addr = target.metrics.filter(|_| ended.is_none())?;
            Some(h3lab_harness::scrape_at(placement, End::Origin, addr))
        });
        cpu.server_s = self.server.process.stop(Duration::from_secs(5)).cpu_s;
        if let Some((target, edge)) = &mut self.origin {
            cpu.server_s += target.process.stop(Duration::from_secs(5)).cpu_s;
            edge.origin_metrics = origin_metrics.transpose()?;
        }
        // Once both are stopped, nothing holds their stderr open.
        let origin = self.origin.as_mut().map(|(target, _)| target);
        let ended = ended.map(|ended| ended.explain(&mut self.server, origin));
        drop(self.dns);
        Ok(Stopped {
            edge: self.origin.map(|(_, edge)| edge),
            ended,
            metrics,
        })
    }
}

/// What the servers left when they stopped.
struct Stopped {
    /// The edge's record, with its origin's metrics.
    edge: Option<EdgeRecord>,
    /// Why the cell cannot stand: a server exited while the client ran.
    ended: Option<String>,
    /// The target's metrics (`None` when one exited, or it serves none).
    metrics: anyhow::Result<Option<BTreeMap<String, f64>>>,
}

/// Runs a lab cell: its path, its servers, its client, stopped in turn,
/// each giving back into `out` what it measured; an error where it
/// stopped short.
pub(super) fn run(plan: &CellPlan, ctx: &RunContext, out: &mut CellOutcome) -> anyhow::Result<()> {
    let spec = &plan.spec;
    let lab = LabPath::start(plan, &ctx.scratch)?;
    let placement = lab.placement();
    let scratch = cell_dir(&ctx.scratch, spec)?;
    let at = server::Start {
        placement: &placement,
        exe: &ctx.exe,
        scratch: &scratch,
        run_scratch: &ctx.scratch,
        site: lab.site.as_deref(),
        body_size: body_size(spec),
        protocol: spec.protocol,
        setting: spec.setting.as_ref(),
        every_address: lab.replay.is_some(),
        end: End::Server,
    };
    let servers = Servers::start(&lab, &at)?;
    let server = &servers.server;
    out.server = Some(ServerSide {
        tuning: servers.target().tuning.clone(),
        quic_initial_window: server.quic_initial_window,
        authority: server.authority(),
        metrics: Ok(None),
        ended: None,
    });
    if plan.probes_features {
        let aim = Aim::Lab(server);
        out.h3_features = client::h3_features(&placement, &ctx.exe, &aim, &scratch, &ctx.stop);
    }
    let before = usage::Reading::now(Some(&server.process), lab.path.as_ref());
    let aim = Aim::Lab(server);
    let client = client::run(
        spec,
        &placement,
        &ctx.exe,
        &aim,
        &scratch,
        plan.warmup,
        &ctx.stop,
    );
    let after = usage::Reading::now(Some(&server.process), lab.path.as_ref());
    usage::record_interval(&before, &after, &mut out.cpu);
    out.client = Some(client);
    let stopped = servers.stop(&placement, &mut out.cpu)?;
    if let Some(side) = &mut out.server {
        (side.metrics, side.ended) = (stopped.metrics, stopped.ended);
    }
    out.edge = stopped.edge;
    (out.link, out.origin_link) = lab.shutdown()?;
    Ok(())
}

/// The server, or behind an edge the origin, exited while the client
/// ran: the cell's figure cannot stand, and what was measured is kept.
struct Ended {
    in_origin: bool,
    code: i32,
}

impl Ended {
    fn check(
        server: &mut server::ServerProcess,
        origin: Option<&mut server::ServerProcess>,
    ) -> Option<Ended> {
        if let Some(exit) = origin.and_then(|origin| origin.process.poll()) {
            return Some(Ended {
                in_origin: true,
                code: exit.code,
            });
        }
        let exit = server.process.poll()?;
        Some(Ended {
            in_origin: false,
            code: exit.code,
        })
    }

    /// The error, with the process's last words; call it once the
    /// processes are stopped.
    fn explain(
        self,
        server: &mut server::ServerProcess,
        origin: Option<&mut server::ServerProcess>,
    ) -> String {
        let (what, process) = match (self.in_origin, origin) {
            (true, Some(origin)) => ("the origin behind the edge", origin),
            (_, Some(_)) => ("the edge", server),
            (_, None) => ("the server", server),
        };
        format!(
            "{what} exited (code {}) while the client ran{}; what the client measured until \
             then is kept in the record",
            self.code,
            process.process.last_stderr_line()
        )
    }
}

/// The target started as the origin behind the edge, then the edge in
/// front of it: (the edge, the origin, the edge's record so far).
fn start_edge(
    plan: &CellPlan,
    at: &server::Start<'_>,
    edge: &EdgePlan,
) -> anyhow::Result<(server::ServerProcess, server::ServerProcess, EdgeRecord)> {
    let origin_scratch = at.scratch.join("origin");
    std::fs::create_dir_all(&origin_scratch)?;
    let target = server::Start {
        scratch: &origin_scratch,
        end: End::Origin,
        protocol: edge.edge.origin_protocol.proto(),
        ..*at
    };
    let target = server::start(&plan.target, &target)?;
    let is_page = matches!(plan.spec.workload.load, Load::Page { .. });
    let forward = edge.edge.forwarding(is_page);
    let front = crate::edge::start(&EdgeStart {
        name: &edge.name,
        edge: &edge.edge,
        at,
        origin: &target,
        forward,
        port: target.addr.port(),
    })?;
    let record = crate::edge::record(&edge.name, &edge.edge, forward, &front, at.run_scratch);
    Ok((front, target, record))
}

/// What the path's DNS server publishes, on the server's port: a replay's
/// origins, each on its own address, or else the site's name, which the
/// server's clients then reach it by.
fn zone(
    path: &EmulatedPath,
    server: &mut server::ServerProcess,
    replay: Option<(&Replay, &[IpAddr])>,
    publish: &Publish,
) -> anyhow::Result<ZoneConfig> {
    let host = |name: &str, address| Host {
        name: name.to_string(),
        address,
        publish: publish.clone(),
    };
    let hosts = match replay {
        Some((replay, ips)) => (replay.origins.iter().zip(ips))
            .map(|(origin, ip)| match ip {
                IpAddr::V4(ip) => Ok(host(&origin.host, *ip)),
                IpAddr::V6(ip) => bail!("a path's DNS server publishes IPv4 addresses, not {ip}"),
            })
            .collect::<anyhow::Result<_>>()?,
        None => {
            server.name = Some(SITE_HOST);
            vec![host(SITE_HOST, path.server_ip())]
        }
    };
    let origin_port = server.addr.port();
    Ok(ZoneConfig { hosts, origin_port })
}

/// Sets the TCP initial window the plan asks for (its sweep's value, or
/// `[target] initial_window`) on the cell's path.
fn set_tcp_initial_window(asked: Option<u32>, path: Option<&EmulatedPath>) -> anyhow::Result<()> {
    match (asked, path) {
        (None, _) => Ok(()),
        (Some(segments), Some(path)) => path.set_tcp_initial_window(segments),
        (Some(segments), None) => bail!(
            "an initial window of {segments} packets is set on an emulated path's routes; on \
             loopback it would change this machine's own, so run it on another profile"
        ),
    }
}
