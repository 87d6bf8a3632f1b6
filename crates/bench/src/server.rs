//! The target server of a cell, in the server namespace: the built-in
//! `h3lab serve`, or the suite's own command (e.g. Caddy).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use linkem::run::{Placement, Side};
use linkem::supervise::Supervised;

use h3lab_site::replay::Replay;

use crate::process;
use crate::suite::{Suite, Target};
use crate::sweep::{Setting, Tunable};

/// How long a server may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(15);
const DEFAULT_PORT: u16 = 443;

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
    /// A replayed page's origins, each on an address of its own.
    pub(crate) replay: Option<ReplayTarget>,
}

/// Where a replayed page's origins are: the page, the replay site, and one
/// `--resolve` rule per origin to its own address on the server's port.
pub(crate) struct ReplayTarget {
    pub(crate) page: String,
    pub(crate) dir: PathBuf,
    pub(crate) rules: Vec<String>,
}

impl ReplayTarget {
    pub(crate) fn new(replay: &Replay, ips: &[IpAddr], dir: &Path, port: u16) -> ReplayTarget {
        let rules = (replay.origins.iter().zip(ips))
            .map(|(origin, ip)| {
                let destination = SocketAddr::new(*ip, port);
                format!("{}:{}:{destination}", origin.host, origin.port)
            })
            .collect();
        ReplayTarget {
            page: replay.page.clone(),
            dir: dir.to_path_buf(),
            rules,
        }
    }
}

/// Where and how a cell's server starts.
pub(crate) struct Start<'a> {
    pub(crate) placement: &'a Placement<'a>,
    /// The `h3lab` executable, for the built-in server.
    pub(crate) exe: &'a Path,
    /// Where the built-in server writes its certificate.
    pub(crate) scratch: &'a Path,
    /// A directory the built-in server serves at `/` (page workloads, which
    /// the suite allows with the built-in server only).
    pub(crate) site: Option<&'a Path>,
    /// Listen on every address of the server side (0.0.0.0), as a
    /// replayed page's origins need, each on an address of its own.
    pub(crate) every_address: bool,
    /// The swept setting the built-in server runs with (a suite with a
    /// sweep has no `server_cmd`).
    pub(crate) setting: Option<&'a Setting>,
}

/// Starts the suite's target where `start.placement` puts servers and waits
/// until it listens.
pub(crate) fn start(suite: &Suite, start: &Start<'_>) -> anyhow::Result<ServerProcess> {
    let ip = IpAddr::V4(start.placement.server_ip());
    let port = suite.target.port.unwrap_or(DEFAULT_PORT);
    if let Some(setting) = start.setting.filter(|s| s.tunable == Tunable::Server) {
        let builtin = Start {
            setting: None,
            ..*start
        };
        return match suite.target.servers.get(&setting.value) {
            None => start_builtin(&builtin, &suite.target),
            Some(shell) => start_custom(start.placement, shell, ip, port),
        };
    }
    match &suite.target.server_cmd {
        None => start_builtin(start, &suite.target),
        Some(_) if start.site.is_some() => {
            bail!("a page workload needs the built-in server, which serves its site")
        }
        Some(shell) => start_custom(start.placement, shell, ip, port),
    }
}

fn start_builtin(start: &Start<'_>, target: &Target) -> anyhow::Result<ServerProcess> {
    let Start {
        placement,
        exe,
        scratch,
        site,
        setting,
        every_address,
    } = *start;
    // On loopback other programs own ports: let the server pick one.
    let port = match placement {
        Placement::Loopback => 0,
        Placement::Emulated(_) => target.port.unwrap_or(DEFAULT_PORT),
    };
    let cert = scratch.join("server-cert.pem");
    let mut extra: Vec<OsString> = Vec::new();
    match setting {
        Some(setting) if setting.tunable.sets_quic_cc() => {}
        _ => extra.extend(["--quic-cc".into(), target.quic_cc.name().into()]),
    }
    if let Some(setting) = setting {
        extra.extend(setting.server_args().into_iter().map(OsString::from));
    }
    if let Some(site) = site {
        extra.extend(["--site".into(), site.into()]);
    }
    let ip = match every_address {
        true => IpAddr::from([0, 0, 0, 0]),
        false => IpAddr::V4(placement.server_ip()),
    };
    let listen = SocketAddr::new(ip, port);
    let server = h3lab_harness::start_builtin_on(placement, exe, listen, &cert, &extra)?;
    Ok(ServerProcess {
        process: server.process,
        addr: server.addr,
        cert: Some(cert),
        tuning: Some(server.tuning),
        metrics: server.metrics,
        replay: None,
    })
}

fn start_custom(
    placement: &Placement<'_>,
    shell: &str,
    ip: IpAddr,
    port: u16,
) -> anyhow::Result<ServerProcess> {
    let shell = shell
        .replace("{ip}", &ip.to_string())
        .replace("{port}", &port.to_string());
    let addr = SocketAddr::new(ip, port);
    if let Placement::Loopback = placement {
        check_free(addr)?;
    }
    let mut command = process::command(placement, Side::Server, "sh");
    command
        .arg("-c")
        .arg(&shell)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut process = process::spawn(command, &format!("server command `{shell}`"))?;
    wait_until_listening(placement, addr, &mut process).map_err(|err| {
        process.stop(Duration::from_secs(1));
        anyhow!(
            "server command `{shell}` did not start: {err}{}",
            process.last_stderr_line()
        )
    })?;
    Ok(ServerProcess {
        process,
        addr,
        cert: None,
        tuning: None,
        metrics: None,
        replay: None,
    })
}

/// On loopback a server command shares ports with every other program:
/// if one already listens on `addr`, the cells would measure it, not the
/// command's server, which fails to bind.
fn check_free(addr: SocketAddr) -> anyhow::Result<()> {
    let in_use = |proto: &str, err: std::io::Error| {
        anyhow!(
            "{proto} {addr} is already in use by another program ({err}), so the cells would \
             measure that program, not this server; stop it, or set another port with \
             [target] port"
        )
    };
    TcpListener::bind(addr).map_err(|err| in_use("TCP", err))?;
    UdpSocket::bind(addr).map_err(|err| in_use("UDP", err))?;
    Ok(())
}

/// Polls a TCP connect to `addr` from the client side.
fn wait_until_listening(
    placement: &Placement<'_>,
    addr: SocketAddr,
    process: &mut Supervised,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + START_TIMEOUT;
    while Instant::now() < deadline {
        if let Some(exit) = process.poll() {
            bail!("it exited with code {}", exit.code);
        }
        if connects(placement, addr)? {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!(
        "nothing listens on TCP {addr} after {}s",
        START_TIMEOUT.as_secs()
    )
}

fn connects(placement: &Placement<'_>, addr: SocketAddr) -> anyhow::Result<bool> {
    let attempt = move || TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok();
    match placement {
        Placement::Emulated(path) => Ok(path.spawn_in_client(attempt)?.join().unwrap_or(false)),
        Placement::Loopback => Ok(attempt()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_command_on_a_loopback_port_another_program_holds_fails_and_says_so() {
        let squatter = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = squatter.local_addr().unwrap().port();
        let ip = IpAddr::from([127, 0, 0, 1]);
        let err = start_custom(&Placement::Loopback, "sleep 30", ip, port)
            .err()
            .expect("the port is taken");
        let message = format!("{err:#}");
        assert!(
            message.contains(&format!("TCP 127.0.0.1:{port} is already in use")),
            "{message}"
        );
        assert!(message.contains("[target] port"), "{message}");
        drop(squatter);
        // An address of its own, where no test's TCP connection can hold
        // the same port number and make TCP's check fail first.
        let udp = UdpSocket::bind("127.0.0.78:0").unwrap();
        let port = udp.local_addr().unwrap().port();
        let ip = IpAddr::from([127, 0, 0, 78]);
        let err = start_custom(&Placement::Loopback, "sleep 30", ip, port)
            .err()
            .expect("the UDP port is taken");
        assert!(format!("{err:#}").contains("UDP 127.0.0.78:"), "{err:#}");
    }
}
