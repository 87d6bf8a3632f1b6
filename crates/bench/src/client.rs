//! The client side of a cell: `h3lab load` (rps, download), `h3lab probe
//! ttfb` or `h3lab page` run in the client namespace, writing JSON that is
//! read back here.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use linkem::run::{Placement, Side};

use crate::process;
use crate::server::ServerProcess;
use crate::spec::CellSpec;
use h3lab_results::load::LoadReport;
use h3lab_results::page::PageReport;
use h3lab_results::ttfb::TtfbReport;
use h3lab_results::{HeaderSet, Proto};

use crate::suite::{caps, ByteSize, FieldUrl, Load};

/// A finished client run.
pub(crate) enum ClientRun {
    Load { report: Box<LoadReport>, cpu_s: f64 },
    Ttfb { probe: TtfbReport, cpu_s: f64 },
    Page { report: Box<PageReport>, cpu_s: f64 },
}

impl ClientRun {
    pub(crate) fn cpu_s(&self) -> f64 {
        match self {
            ClientRun::Load { cpu_s, .. }
            | ClientRun::Ttfb { cpu_s, .. }
            | ClientRun::Page { cpu_s, .. } => *cpu_s,
        }
    }
}

/// The body a ttfb cell asks for: one byte, so the first byte is the
/// whole response.
pub(crate) const TTFB_BODY_SIZE: u64 = 1;

/// How long one page load may take before the page run fails.
const PAGE_LOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// What a cell's client requests, and how it trusts the server.
pub(crate) enum Aim<'a> {
    /// A server the cell started: `/bytes/N`, its site or its replay.
    Lab(&'a ServerProcess),
    /// A deployed server: the workload's URL, every host pinned, trusted
    /// through the system's authorities unless `insecure`.
    Field {
        url: &'a FieldUrl,
        pins: &'a [String],
        insecure: bool,
        /// The suite lifted the field caps, so `h3lab load` lifts its own.
        allow_heavy: bool,
    },
}

impl Aim<'_> {
    /// The URL of a body of `size` bytes, or the field URL.
    fn body_url(&self, size: Option<ByteSize>) -> anyhow::Result<String> {
        match (self, size) {
            (Aim::Lab(server), Some(size)) => {
                Ok(format!("https://{}/bytes/{}", server.addr, size.0))
            }
            (Aim::Field { url, .. }, _) => Ok(url.to_string()),
            (Aim::Lab(_), None) => bail!("a lab workload needs a size"),
        }
    }

    /// `h3lab load`'s own caps against a server outside this machine,
    /// lifted when the suite lifted the field caps.
    fn add_load_flags(&self, command: &mut Command) {
        if let Aim::Field {
            allow_heavy: true, ..
        } = self
        {
            command.arg("--allow-heavy");
        }
    }

    /// `--resolve` rules, and the trust flags.
    fn add_flags(&self, command: &mut Command) {
        match self {
            Aim::Lab(server) => match &server.cert {
                Some(cert) => command.arg("--ca").arg(cert),
                None => command.arg("--insecure"),
            },
            Aim::Field { pins, insecure, .. } => {
                for pin in *pins {
                    command.args(["--resolve", pin]);
                }
                match insecure {
                    true => command.arg("--insecure"),
                    false => command,
                }
            }
        };
    }
}

/// Runs the cell's client against `aim` and reads its JSON report.
pub(crate) fn run(
    spec: &CellSpec,
    placement: &Placement<'_>,
    exe: &Path,
    aim: &Aim<'_>,
    scratch: &Path,
    warmup: Duration,
    stop: &AtomicBool,
) -> anyhow::Result<ClientRun> {
    let json = scratch.join("client.json");
    let mut command = process::command(placement, Side::Client, exe);
    // A field cell is one load or sample of the repetition.
    let units = |asked: u32| match spec.unit {
        Some(_) => 1,
        None => asked,
    };
    let budget = match &spec.workload.load {
        Load::Rps {
            size,
            connections,
            streams,
            duration,
            rate,
            headers,
            ..
        } => {
            command.arg("load").arg(aim.body_url(*size)?);
            aim.add_load_flags(&mut command);
            if *headers == HeaderSet::Browser {
                command.arg("--browser-headers");
            }
            // h1 has no multiplexing: one request at a time per connection.
            let streams = match spec.protocol {
                Proto::H1 => 1,
                _ => streams.0,
            };
            command.args(["-c", &connections.0.to_string(), "-m", &streams.to_string()]);
            command.args(["-z", &format!("{}ms", duration.0.as_millis())]);
            let rate = match aim {
                Aim::Field { .. } => Some(rate.map_or(caps::DEFAULT_RATE, |r| r.0)),
                Aim::Lab(_) => rate.map(|r| r.0),
            };
            if let Some(rate) = rate {
                command.args(["--rate", &rate.to_string()]);
            }
            if !warmup.is_zero() {
                command.args(["--warmup", &format!("{}ms", warmup.as_millis())]);
            }
            duration.0 + warmup + Duration::from_secs(60)
        }
        Load::Download {
            size,
            streams,
            connections,
            ..
        } => {
            command.arg("load").arg(aim.body_url(*size)?);
            aim.add_load_flags(&mut command);
            // h1 has no multiplexing: parallel streams need connections.
            let connections = match (spec.protocol, connections) {
                (Proto::H1, _) => streams.0,
                (_, Some(connections)) => connections.0.min(streams.0),
                (_, None) => 1,
            };
            let per_connection = streams.0.div_ceil(connections);
            command.args([
                "-c",
                &connections.to_string(),
                "-m",
                &per_connection.to_string(),
            ]);
            command.args(["-n", &streams.0.to_string(), "--timeout", "900s"]);
            Duration::from_secs(960)
        }
        Load::Ttfb { samples, .. } => {
            let mode = spec.mode.context("a ttfb cell needs a mode")?;
            let samples = units(samples.0);
            let url = aim.body_url(Some(ByteSize(TTFB_BODY_SIZE)))?;
            command.args(["probe", "ttfb", &url]);
            command.args(["--mode", mode.name(), "--samples", &samples.to_string()]);
            Duration::from_secs(30) * (samples + 1) * 2
        }
        Load::Page {
            loader,
            visit,
            loads,
            headers,
            ..
        } => {
            match aim {
                Aim::Lab(ServerProcess {
                    replay: Some(replay),
                    ..
                }) => {
                    command
                        .args(["page", &replay.page, "--replay"])
                        .arg(&replay.dir);
                    for rule in &replay.rules {
                        command.args(["--resolve", rule]);
                    }
                }
                Aim::Lab(server) => {
                    command.args(["page", &format!("https://{}/", server.addr)]);
                }
                Aim::Field { url, .. } => {
                    command.args(["page", url.0.as_str()]);
                }
            }
            let loads = units(loads.0);
            command.args(["--browser", loader.name(), "--visit", visit.name()]);
            if *headers == HeaderSet::Browser {
                command.arg("--browser-headers");
            }
            command.args(["-n", &loads.to_string()]);
            command.args(["--timeout", &format!("{}s", PAGE_LOAD_TIMEOUT.as_secs())]);
            PAGE_LOAD_TIMEOUT * loads + Duration::from_secs(60)
        }
    };
    command
        .args(["--proto", spec.protocol.name(), "--json"])
        .arg(&json);
    command.arg("--quiet");
    aim.add_flags(&mut command);
    command.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut process = process::spawn(command, "client")?;
    // On Ctrl-C the client gets SIGINT and writes what it gathered; it is
    // killed only at the budget's end.
    let exit = match process.wait_until(Some(Instant::now() + budget), stop, budget) {
        Some(exit) => exit,
        None => {
            process.stop(Duration::from_secs(2));
            bail!("the client did not finish within {}s", budget.as_secs());
        }
    };
    let stderr = process.last_stderr_line();
    let text = std::fs::read_to_string(&json).map_err(|_| {
        anyhow!(
            "the client wrote no report (exit code {}){stderr}",
            exit.code
        )
    })?;
    match spec.workload.load {
        Load::Page { .. } => {
            if exit.code != 0 {
                bail!("the page loads failed (exit code {}){stderr}", exit.code);
            }
            let report: PageReport =
                serde_json::from_str(&text).context("reading the page report")?;
            Ok(ClientRun::Page {
                report: Box::new(report),
                cpu_s: exit.cpu_s,
            })
        }
        Load::Ttfb { .. } => {
            let probe: TtfbReport =
                serde_json::from_str(&text).context("reading the ttfb probe report")?;
            if exit.code != 0 {
                bail!("the ttfb probe failed (exit code {}){stderr}", exit.code);
            }
            Ok(ClientRun::Ttfb {
                probe,
                cpu_s: exit.cpu_s,
            })
        }
        _ => {
            let report = serde_json::from_str(&text).context("reading the load report")?;
            Ok(ClientRun::Load {
                report: Box::new(report),
                cpu_s: exit.cpu_s,
            })
        }
    }
}
