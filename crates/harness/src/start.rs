//! Starting `h3lab serve` at a placement and reading its banner.

use std::io::{BufRead, BufReader, Read};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{anyhow, Context};
use h3lab_results::flags::CommandFlags;
use h3lab_results::server_output::{is_listening_line, ServeStart};
use h3lab_server::cli::ServeArgs;

use crate::End;
use h3lab_supervise::{Group, Supervised};
use linkem::run::Placement;

/// How long the server may take to print its `listening:` line.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// Between SIGTERM and SIGKILL for a server that did not start.
const FAILED_START_GRACE: Duration = Duration::from_secs(1);

/// A running `h3lab serve` and what its banner said.
pub struct BuiltinServer {
    /// The server process, in a process group of its own.
    pub process: Supervised,
    /// The address clients use (from its `listening:` line).
    pub addr: SocketAddr,
    /// What it started with (its start report): the settings that decide
    /// results, QUIC's initial window, and where it serves `/metrics`, on
    /// the server side's own loopback so that scraping sends nothing over
    /// the emulated link.
    pub start: ServeStart,
}

/// Starts `exe serve` with `serve`'s flags where `placement` puts
/// servers, listening on `port` (0: a free one) at the server's address,
/// writing its certificate to `cert`; returns once it listens.
pub fn start_builtin(
    placement: &Placement<'_>,
    exe: &Path,
    port: u16,
    cert: &Path,
    serve: &ServeArgs,
) -> anyhow::Result<BuiltinServer> {
    let ip = IpAddr::V4(placement.server_ip());
    start_builtin_on(placement, exe, SocketAddr::new(ip, port), cert, serve)
}

/// [`start_builtin`] listening on `listen`: 0.0.0.0 serves every address
/// of the server side, as a replayed page's origins need. The address
/// returned is then the server's own.
pub fn start_builtin_on(
    placement: &Placement<'_>,
    exe: &Path,
    listen: SocketAddr,
    cert: &Path,
    serve: &ServeArgs,
) -> anyhow::Result<BuiltinServer> {
    start_builtin_at(placement, End::Server, exe, listen, cert, serve)
}

/// [`start_builtin_on`] at `end`: the origin behind an edge too.
pub fn start_builtin_at(
    placement: &Placement<'_>,
    end: End,
    exe: &Path,
    listen: SocketAddr,
    cert: &Path,
    serve: &ServeArgs,
) -> anyhow::Result<BuiltinServer> {
    let ip = IpAddr::V4(end.ip(placement)?);
    let mut serve = serve.clone();
    serve.listen = listen;
    serve.sans.push(ip.to_string());
    serve.sans.push(crate::SITE_HOST.to_string());
    serve.write_cert = Some(cert.to_path_buf());
    serve.metrics = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
    let report = cert.with_extension("start.json");
    serve.start_report = Some(report.clone());
    let mut command = end.command(placement, exe)?;
    command
        .args(serve.command_args()?)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so a terminal's Ctrl-C reaches only h3lab,
    // which then stops its children in order.
    let mut process = Supervised::spawn(command, Group::Own, "built-in server (h3lab serve)")?;
    let stdout = process.take_stdout().context("the server's stdout")?;
    let started = wait_for_listening(stdout).and_then(|()| read_start(&report));
    match started {
        Ok(start) => Ok(BuiltinServer {
            process,
            addr: match start.listening.ip().is_unspecified() {
                true => SocketAddr::new(ip, start.listening.port()),
                false => start.listening,
            },
            start,
        }),
        Err(err) => {
            process.stop(FAILED_START_GRACE);
            Err(anyhow!(
                "the built-in server did not start: {err}{}",
                process.last_stderr_line()
            ))
        }
    }
}

/// The start report the server wrote before it said it listens.
fn read_start(path: &Path) -> anyhow::Result<ServeStart> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("it wrote no start report at {}", path.display()))?;
    ServeStart::from_json(&text).with_context(|| format!("reading {}", path.display()))
}

/// Reads the server's stdout on a thread until its `listening:` line, so a
/// silent server cannot block us past the timeout. The thread drains the
/// pipe to the end: a closed pipe would make the server's next line fail.
fn wait_for_listening(stdout: impl Read + Send + 'static) -> anyhow::Result<()> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if is_listening_line(&line) {
                let _ = sender.send(());
            }
        }
    });
    receiver
        .recv_timeout(START_TIMEOUT)
        .map_err(|_| anyhow!("no `listening:` line within {}s", START_TIMEOUT.as_secs()))
}
