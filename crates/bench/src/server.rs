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

use crate::process;
use crate::suite::{Suite, Target};

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
}

/// Starts the suite's target where `placement` puts servers and waits until
/// it listens. `site` is a directory the built-in server serves at `/`
/// (page workloads, which the suite allows with the built-in server only).
pub(crate) fn start(
    suite: &Suite,
    placement: &Placement<'_>,
    exe: &Path,
    scratch: &Path,
    site: Option<&Path>,
) -> anyhow::Result<ServerProcess> {
    let ip = IpAddr::V4(placement.server_ip());
    match &suite.target.server_cmd {
        None => start_builtin(placement, exe, scratch, ip, &suite.target, site),
        Some(_) if site.is_some() => {
            bail!("a page workload needs the built-in server, which serves its site")
        }
        Some(shell) => start_custom(
            placement,
            shell,
            ip,
            suite.target.port.unwrap_or(DEFAULT_PORT),
        ),
    }
}

fn start_builtin(
    placement: &Placement<'_>,
    exe: &Path,
    scratch: &Path,
    ip: IpAddr,
    target: &Target,
    site: Option<&Path>,
) -> anyhow::Result<ServerProcess> {
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
        .arg("--quic-cc")
        .arg(target.quic_cc.name());
    if let Some(site) = site {
        command.arg("--site").arg(site);
    }
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut process = process::spawn(command, "built-in server (h3lab serve)")?;
    let stdout = process.take_stdout().context("server stdout")?;
    let (addr, tuning) = wait_for_banner(stdout).map_err(|err| {
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
        tuning: Some(tuning),
    })
}

/// Reads the server's stdout on a thread until its `listening:` line, so a
/// silent server cannot block us past the timeout, and returns the address
/// with the `tuning:` lines printed before it. The thread drains the pipe
/// to the end: a closed pipe would make the server's next line fail.
fn wait_for_banner(
    stdout: impl std::io::Read + Send + 'static,
) -> anyhow::Result<(SocketAddr, BTreeMap<String, String>)> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut tuning = BTreeMap::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some((name, value)) = parse_tuning(&line) {
                tuning.insert(name, value);
            }
            if let Some(addr) = parse_banner(&line) {
                let _ = sender.send((addr, std::mem::take(&mut tuning)));
            }
        }
    });
    receiver
        .recv_timeout(START_TIMEOUT)
        .map_err(|_| anyhow!("no `listening:` line within {}s", START_TIMEOUT.as_secs()))
}

/// `listening: tcp+udp 198.18.0.2:443 (...)` → the address.
fn parse_banner(line: &str) -> Option<SocketAddr> {
    line.strip_prefix("listening:")?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// `tuning: tls_records = dynamic (...)` → (`tls_records`, `dynamic (...)`).
fn parse_tuning(line: &str) -> Option<(String, String)> {
    let (name, value) = line.strip_prefix("tuning:")?.split_once(" = ")?;
    Some((name.trim().to_string(), value.trim().to_string()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banner_line_gives_the_address() {
        let line = "listening: tcp+udp 198.18.0.2:443 (h1,h2 over TLS 1.3; h3 over QUIC)";
        assert_eq!(parse_banner(line), Some("198.18.0.2:443".parse().unwrap()));
        assert_eq!(parse_banner("spki-sha256: abc"), None);
    }

    #[test]
    fn tuning_lines_give_name_and_value() {
        let line = "tuning: h2_stream_window = 16777216 B";
        assert_eq!(
            parse_tuning(line),
            Some(("h2_stream_window".into(), "16777216 B".into()))
        );
        assert_eq!(parse_tuning("listening: tcp+udp 1.2.3.4:443"), None);
    }
}
