//! A cell's edge: the server the client reaches, started at the server
//! end of the path in front of the target, which runs as the origin
//! behind a link of its own. `h3lab serve --upstream`, or nginx, HAProxy
//! or Caddy from `scripts/edge-server.sh` (carried in the binary, so an
//! installed h3lab needs no checkout).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use h3lab_harness::custom::{self, Custom};
use h3lab_harness::End;
use h3lab_results::bench::EdgeRecord;
use h3lab_server::cli::{ForwardChoice, ServeArgs, UpstreamChoice};

use crate::server::{ServerProcess, Start};
use crate::suite::{Edge, EdgeServer, Forwarding, OriginProtocol};

/// The script that starts nginx, HAProxy or Caddy as an edge.
const EDGE_SCRIPT: &str = include_str!("../../../scripts/edge-server.sh");

/// An edge to start in front of `origin`.
pub(crate) struct EdgeStart<'a> {
    pub(crate) name: &'a str,
    pub(crate) edge: &'a Edge,
    /// Where and how, as for a server at the server end (its scratch
    /// directory the edge's own).
    pub(crate) at: &'a Start<'a>,
    /// The target, already listening as the origin.
    pub(crate) origin: &'a ServerProcess,
    pub(crate) forward: Forwarding,
    pub(crate) port: u16,
}

/// Starts the edge and waits until it listens.
pub(crate) fn start(start: &EdgeStart<'_>) -> anyhow::Result<ServerProcess> {
    let ip = IpAddr::V4(start.at.placement.server_ip());
    let addr = SocketAddr::new(ip, start.port);
    match start.edge.server {
        EdgeServer::H3lab => start_builtin(start, addr),
        server => start_script(start, server, addr),
    }
    .with_context(|| format!("starting the edge `{}` ({})", start.name, start.edge))
}

fn start_builtin(start: &EdgeStart<'_>, listen: SocketAddr) -> anyhow::Result<ServerProcess> {
    let Some(origin_cert) = &start.origin.cert else {
        anyhow::bail!(
            "the h3lab edge verifies its origin's certificate, and the origin's command was given \
             none: add {{cert}} and {{key}} to the server command"
        );
    };
    let serve = ServeArgs {
        site: start.at.site.map(Path::to_path_buf),
        upstream: Some(format!("https://{}", start.origin.addr).parse()?),
        upstream_protocol: match start.edge.origin_protocol {
            OriginProtocol::H1 => UpstreamChoice::H1,
            OriginProtocol::H2 => UpstreamChoice::H2,
        },
        upstream_ca: Some(origin_cert.clone()),
        forward: match start.forward {
            Forwarding::All => ForwardChoice::All,
            Forwarding::Documents => ForwardChoice::Documents,
        },
        ..ServeArgs::new()
    };
    let cert = start.at.scratch.join("edge-cert.pem");
    let placement = start.at.placement;
    let server = h3lab_harness::start_builtin_at(
        placement,
        End::Server,
        start.at.exe,
        listen,
        &cert,
        &serve,
    )?;
    Ok(ServerProcess::builtin(server, cert))
}

fn start_script(
    start: &EdgeStart<'_>,
    server: EdgeServer,
    addr: SocketAddr,
) -> anyhow::Result<ServerProcess> {
    let script = written_script(start.at.run_scratch)?;
    let origin = start.origin.addr;
    let shell = format!(
        "bash '{}' {} {{ip}} {{port}} {{site}} {{cert}} {{key}} {} {} {} {}",
        script.display(),
        server.name(),
        origin.ip(),
        origin.port(),
        start.edge.origin_protocol.name(),
        start.forward.name()
    );
    let custom = Custom {
        shell: &shell,
        addr,
        site: start.at.site,
        body_size: start.at.body_size,
        run_scratch: start.at.run_scratch,
        cell_scratch: start.at.scratch,
        protocol: start.at.protocol,
        end: End::Server,
    };
    let started = custom::start(start.at.placement, &custom)?;
    Ok(ServerProcess::command(started, addr))
}

/// The edge script, written once per run into its scratch directory.
fn written_script(run_scratch: &Path) -> anyhow::Result<PathBuf> {
    let path = run_scratch.join("edge-server.sh");
    if !path.is_file() {
        std::fs::write(&path, EDGE_SCRIPT)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(path)
}

/// The cell's record of its edge, before the origin link's statistics.
pub(crate) fn record(
    name: &str,
    edge: &Edge,
    forward: Forwarding,
    front: &ServerProcess,
    run_scratch: &Path,
) -> EdgeRecord {
    EdgeRecord {
        name: name.to_string(),
        server: edge.server.name().to_string(),
        version: version(edge.server, run_scratch),
        origin_protocol: edge.origin_protocol.proto(),
        forward: forward.name().to_string(),
        settings: front.tuning.clone().unwrap_or_default(),
        origin_link: None,
        origin_metrics: None,
    }
}

/// `h3lab/0.1.0`, `nginx/1.26.3`...; `None` when the server does not say.
fn version(server: EdgeServer, run_scratch: &Path) -> Option<String> {
    if server == EdgeServer::H3lab {
        return Some(concat!("h3lab/", env!("CARGO_PKG_VERSION")).to_string());
    }
    let script = written_script(run_scratch).ok()?;
    let output = Command::new("bash")
        .arg(script)
        .args(["--version", server.name()])
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (output.status.success() && !text.is_empty()).then_some(text)
}
