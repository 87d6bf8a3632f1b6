//! The target server of a cell, in the server namespace: the built-in
//! `h3lab serve`, or the suite's own command (e.g. Caddy).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use linkem::run::{Placement, Side};
use linkem::supervise::Supervised;

use h3lab_results::server_output::BannerLine;

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
            None => start_builtin(&builtin, ip, &suite.target),
            Some(shell) => start_custom(start.placement, shell, ip, port),
        };
    }
    match &suite.target.server_cmd {
        None => start_builtin(start, ip, &suite.target),
        Some(_) if start.site.is_some() => {
            bail!("a page workload needs the built-in server, which serves its site")
        }
        Some(shell) => start_custom(start.placement, shell, ip, port),
    }
}

fn start_builtin(start: &Start<'_>, ip: IpAddr, target: &Target) -> anyhow::Result<ServerProcess> {
    let Start {
        placement,
        exe,
        scratch,
        site,
        setting,
    } = *start;
    // On loopback other programs own ports: let the server pick one.
    let port = match placement {
        Placement::Loopback => 0,
        Placement::Emulated(_) => target.port.unwrap_or(DEFAULT_PORT),
    };
    let cert = scratch.join("server-cert.pem");
    let mut command = process::command(placement, Side::Server, exe);
    command
        .arg("serve")
        .arg("--listen")
        .arg(SocketAddr::new(ip, port).to_string())
        .arg("--san")
        .arg(ip.to_string())
        .arg("--write-cert")
        .arg(&cert)
        .arg("--metrics")
        .arg("127.0.0.1:0");
    match setting {
        Some(setting) if setting.tunable.sets_quic_cc() => {}
        _ => {
            command.arg("--quic-cc").arg(target.quic_cc.name());
        }
    }
    if let Some(setting) = setting {
        command.args(setting.server_args());
    }
    if let Some(site) = site {
        command.arg("--site").arg(site);
    }
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut process = process::spawn(command, "built-in server (h3lab serve)")?;
    let stdout = process.take_stdout().context("server stdout")?;
    let (addr, banner) = wait_for_banner(stdout).map_err(|err| {
        process.stop(Duration::from_secs(1));
        anyhow!(
            "the built-in server did not start: {err}{}",
            process.last_stderr_line()
        )
    })?;
    Ok(ServerProcess {
        process,
        addr,
        cert: Some(cert),
        tuning: Some(banner.tuning),
        metrics: banner.metrics,
    })
}

/// What the built-in server prints before its `listening:` line.
#[derive(Default)]
struct Banner {
    tuning: BTreeMap<String, String>,
    metrics: Option<SocketAddr>,
}

/// Reads the server's stdout on a thread until its `listening:` line, so a
/// silent server cannot block us past the timeout, and returns the address
/// with the `tuning:` and `metrics:` lines printed before it. The thread
/// drains the pipe to the end: a closed pipe would make the server's next
/// line fail.
fn wait_for_banner(
    stdout: impl std::io::Read + Send + 'static,
) -> anyhow::Result<(SocketAddr, Banner)> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut banner = Banner::default();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            match BannerLine::parse(&line) {
                BannerLine::Tuning(name, value) => {
                    banner.tuning.insert(name, value);
                }
                BannerLine::Metrics(addr) => banner.metrics = Some(addr),
                BannerLine::Listening(addr) => {
                    let _ = sender.send((addr, std::mem::take(&mut banner)));
                }
                BannerLine::Other => {}
            }
        }
    });
    receiver
        .recv_timeout(START_TIMEOUT)
        .map_err(|_| anyhow!("no `listening:` line within {}s", START_TIMEOUT.as_secs()))
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
    let mut command = process::command(placement, Side::Server, "sh");
    command
        .arg("-c")
        .arg(&shell)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut process = process::spawn(command, &format!("server command `{shell}`"))?;
    let addr = SocketAddr::new(ip, port);
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
    })
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
