//! The client side of a cell: `h3lab load` (rps, download), `h3lab probe
//! ttfb`, `h3lab page` or `h3lab probe conformance` run in the client
//! namespace, writing JSON that is read back here. Each command line is
//! built from the command's typed flags (`LoadArgs`, `TtfbArgs`,
//! `PageArgs`, `ConformanceArgs`), never from flag names.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use h3lab_client::{ModeNotOffered, ResolveRule};
use h3lab_harness::custom::FIRST_FLIGHT_BODY_SIZE;
use h3lab_load::cli::LoadArgs;
use h3lab_page::cli::PageArgs;
use h3lab_probe::cli::{ConformanceArgs, OfferArgs, TtfbArgs};
use linkem::run::{Placement, Side};

use crate::process;
use crate::server::{OriginNames, ServerProcess};
use crate::spec::CellSpec;
use h3lab_results::conformance::ConformanceReport;
use h3lab_results::flags::CommandFlags;
use h3lab_results::load::LoadReport;
use h3lab_results::offer::{H3Features, OfferReport};
use h3lab_results::page::PageReport;
use h3lab_results::ttfb::TtfbReport;
use h3lab_results::{HeaderSet, Proto};

use crate::suite::{caps, ByteSize, FieldUrl, Load};

/// A finished client run.
pub(crate) enum ClientRun {
    Load {
        report: Box<LoadReport>,
        cpu_s: f64,
    },
    Ttfb {
        probe: TtfbReport,
        cpu_s: f64,
    },
    Page {
        report: Box<PageReport>,
        cpu_s: f64,
    },
    Conformance {
        report: Box<ConformanceReport>,
        cpu_s: f64,
    },
}

impl ClientRun {
    pub(crate) fn cpu_s(&self) -> f64 {
        match self {
            ClientRun::Load { cpu_s, .. }
            | ClientRun::Ttfb { cpu_s, .. }
            | ClientRun::Page { cpu_s, .. }
            | ClientRun::Conformance { cpu_s, .. } => *cpu_s,
        }
    }
}

/// The body a ttfb cell asks for: one byte, so the first byte is the
/// whole response.
pub(crate) const TTFB_BODY_SIZE: u64 = 1;

/// How long a run of the conformance suite may take: 10 s a case, twice
/// its 2 s timeout, the check after a case that timed out, and room to
/// spare (a server that stalls on every case takes about this long).
const CONFORMANCE_BUDGET: Duration =
    Duration::from_secs(10 * h3lab_results::conformance::CONFORMANCE_CASES as u64);

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
                Ok(format!("https://{}/bytes/{}", server.authority(), size.0))
            }
            (Aim::Field { url, .. }, _) => Ok(url.to_string()),
            (Aim::Lab(_), None) => bail!("a lab workload needs a size"),
        }
    }

    /// How a client trusts the server and reaches its hosts: the lab
    /// server's certificate, or a field run's pins and the system's
    /// authorities (any certificate when `insecure`).
    fn trust(
        &self,
        insecure: &mut bool,
        ca: &mut Option<PathBuf>,
        resolve: &mut Vec<ResolveRule>,
    ) -> anyhow::Result<()> {
        match self {
            Aim::Lab(server) => match &server.cert {
                Some(cert) => *ca = Some(cert.clone()),
                None => *insecure = true,
            },
            Aim::Field {
                pins,
                insecure: field_insecure,
                ..
            } => {
                resolve.extend(parse_rules(pins)?);
                *insecure = *field_insecure;
            }
        }
        Ok(())
    }
}

/// `HOST:PORT:ADDR` rules, as `--resolve` reads them.
fn parse_rules(rules: &[String]) -> anyhow::Result<Vec<ResolveRule>> {
    rules.iter().map(|rule| rule.parse()).collect()
}

/// `h3lab load`'s flags for an rps or download cell, and how long it may
/// run.
fn load_args(
    spec: &CellSpec,
    aim: &Aim<'_>,
    json: &Path,
    warmup: Duration,
) -> anyhow::Result<(LoadArgs, Duration)> {
    let (mut load, budget) = match &spec.workload.load {
        Load::Rps {
            size,
            connections,
            streams,
            duration,
            rate,
            headers,
            ..
        } => {
            let mut load = LoadArgs::new(&aim.body_url(*size)?);
            load.browser_headers = *headers == HeaderSet::Browser;
            load.connections = connections.0 as usize;
            // h1 has no multiplexing: one request at a time per connection.
            load.streams = match spec.protocol {
                Proto::H1 => 1,
                _ => streams.0 as usize,
            };
            load.duration = Some(duration.0);
            load.rate = match aim {
                Aim::Field { .. } => Some(rate.map_or(caps::DEFAULT_RATE, |r| r.0)),
                Aim::Lab(_) => rate.map(|r| r.0),
            }
            .map(f64::from);
            load.warmup = warmup;
            (load, duration.0 + warmup + Duration::from_secs(60))
        }
        Load::Download {
            size,
            streams,
            connections,
            ..
        } => {
            let mut load = LoadArgs::new(&aim.body_url(*size)?);
            // h1 has no multiplexing: parallel streams need connections.
            let connections = match (spec.protocol, connections) {
                (Proto::H1, _) => streams.0,
                (_, Some(connections)) => connections.0.min(streams.0),
                (_, None) => 1,
            };
            load.connections = connections as usize;
            load.streams = streams.0.div_ceil(connections) as usize;
            load.requests = Some(u64::from(streams.0));
            load.timeout = Duration::from_secs(900);
            (load, Duration::from_secs(960))
        }
        Load::Ttfb { .. } | Load::Page { .. } | Load::Conformance { .. } => {
            bail!("only rps and download cells run `h3lab load`")
        }
    };
    load.proto = Some(spec.protocol);
    load.json = Some(json.to_path_buf());
    load.quiet = true;
    load.allow_heavy = matches!(
        aim,
        Aim::Field {
            allow_heavy: true,
            ..
        }
    );
    aim.trust(&mut load.insecure, &mut load.ca, &mut load.resolve)?;
    Ok((load, budget))
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
    let (args, budget) = client_args(spec, aim, &json, warmup)?;
    let mut command = process::command(placement, Side::Client, exe);
    command.args(args);
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
    read_report(spec, &text, exit.code, exit.cpu_s, &stderr)
}

/// The cell's client command (`h3lab load`, `probe ttfb` or `page`, with
/// its report going to `json`), and how long it may take.
fn client_args(
    spec: &CellSpec,
    aim: &Aim<'_>,
    json: &Path,
    warmup: Duration,
) -> anyhow::Result<(Vec<OsString>, Duration)> {
    // A field cell is one load or sample of the repetition.
    let units = |asked: u32| match spec.unit {
        Some(_) => 1,
        None => asked,
    };
    match &spec.workload.load {
        Load::Rps { .. } | Load::Download { .. } => {
            let (load, budget) = load_args(spec, aim, json, warmup)?;
            Ok((load.command_args()?, budget))
        }
        Load::Ttfb { samples, .. } => {
            let mut ttfb = TtfbArgs::new(&aim.body_url(Some(ByteSize(TTFB_BODY_SIZE)))?);
            ttfb.mode = spec.mode.context("a ttfb cell needs a mode")?;
            ttfb.samples = units(samples.0);
            ttfb.proto = spec.protocol;
            ttfb.json = Some(json.to_path_buf());
            ttfb.quiet = true;
            aim.trust(&mut ttfb.insecure, &mut ttfb.ca, &mut ttfb.resolve)?;
            let budget = Duration::from_secs(30) * (ttfb.samples + 1) * 2;
            Ok((ttfb.command_args()?, budget))
        }
        Load::Page {
            loader,
            visit,
            loads,
            headers,
            ..
        } => {
            let mut page = page_target(aim)?;
            page.browser = *loader;
            page.visit = *visit;
            page.browser_headers = *headers == HeaderSet::Browser;
            page.loads = units(loads.0);
            page.timeout = PAGE_LOAD_TIMEOUT;
            page.proto = spec.protocol;
            page.json = Some(json.to_path_buf());
            page.quiet = true;
            aim.trust(&mut page.insecure, &mut page.ca, &mut page.resolve)?;
            let budget = PAGE_LOAD_TIMEOUT * page.loads + Duration::from_secs(60);
            Ok((page.command_args()?, budget))
        }
        Load::Conformance { only } => {
            let mut conformance =
                ConformanceArgs::new(&aim.body_url(Some(ByteSize(TTFB_BODY_SIZE)))?);
            conformance.only = only.clone();
            conformance.json = Some(json.to_path_buf());
            let (mut insecure, mut ca) = (false, None);
            aim.trust(&mut insecure, &mut ca, &mut conformance.resolve)?;
            Ok((conformance.command_args()?, CONFORMANCE_BUDGET))
        }
    }
}

/// `h3lab page`'s arguments for the page `aim` names: a replayed page
/// with its origins, the lab server's document, or a field URL.
fn page_target(aim: &Aim<'_>) -> anyhow::Result<PageArgs> {
    Ok(match aim {
        Aim::Lab(ServerProcess {
            replay: Some(replay),
            ..
        }) => {
            let mut page = PageArgs::new(&replay.page);
            page.replay = Some(replay.dir.clone());
            match &replay.names {
                OriginNames::Rules(rules) => page.resolve = parse_rules(rules)?,
                OriginNames::Dns => page.dns_origins = true,
            }
            page
        }
        Aim::Lab(server) => PageArgs::new(&format!(
            "https://{}{}",
            server.authority(),
            server.document
        )),
        Aim::Field { url, .. } => PageArgs::new(url.0.as_str()),
    })
}

/// The client's report, read as the cell's kind of run; a failed exit
/// fails the cell (with the client's last words, `stderr`) unless the
/// report says why the mode is not offered.
fn read_report(
    spec: &CellSpec,
    text: &str,
    code: i32,
    cpu_s: f64,
    stderr: &str,
) -> anyhow::Result<ClientRun> {
    match spec.workload.load {
        Load::Page { .. } => {
            if code != 0 {
                bail!("the page loads failed (exit code {code}){stderr}");
            }
            let report: PageReport =
                serde_json::from_str(text).context("reading the page report")?;
            Ok(ClientRun::Page {
                report: Box::new(report),
                cpu_s,
            })
        }
        Load::Ttfb { .. } => {
            let probe: TtfbReport =
                serde_json::from_str(text).context("reading the ttfb probe report")?;
            if let Some(reason) = probe.not_offered {
                return Err(ModeNotOffered(reason).into());
            }
            if code != 0 {
                bail!("the ttfb probe failed (exit code {code}){stderr}");
            }
            Ok(ClientRun::Ttfb { probe, cpu_s })
        }
        Load::Conformance { .. } => {
            let report: ConformanceReport =
                serde_json::from_str(text).context("reading the conformance report")?;
            // Failed cases exit non-zero too: they are the measurement.
            // A run that stopped early is not.
            if !report.is_complete() {
                bail!(
                    "the conformance run stopped after {} of {} cases (exit code {code}){stderr}",
                    report.cases.len(),
                    report.planned.map_or("?".to_string(), |n| n.to_string())
                );
            }
            Ok(ClientRun::Conformance {
                report: Box::new(report),
                cpu_s,
            })
        }
        _ => {
            let report = serde_json::from_str(text).context("reading the load report")?;
            Ok(ClientRun::Load {
                report: Box::new(report),
                cpu_s,
            })
        }
    }
}

/// `h3lab probe offer` against the cell's server from the client's side
/// of the path: what its h3 does (its `server` header, 0-RTT, the QPACK
/// dynamic table, a new client port). `None` when the probe could not
/// run or answer: unknown, not false.
pub(crate) fn h3_features(
    placement: &Placement<'_>,
    exe: &Path,
    aim: &Aim<'_>,
    scratch: &Path,
    stop: &AtomicBool,
) -> Option<H3Features> {
    let json = scratch.join("offer.json");
    let mut offer = OfferArgs {
        urls: vec![aim.body_url(Some(ByteSize(TTFB_BODY_SIZE))).ok()?],
        window_url: match aim {
            Aim::Lab(_) => Some(aim.body_url(Some(ByteSize(FIRST_FLIGHT_BODY_SIZE))).ok()?),
            Aim::Field { .. } => None,
        },
        resolve: Vec::new(),
        insecure: false,
        ca: None,
        timeout: Duration::from_secs(3),
        json: Some(json.clone()),
    };
    aim.trust(&mut offer.insecure, &mut offer.ca, &mut offer.resolve)
        .ok()?;
    let mut command = process::command(placement, Side::Client, exe);
    command.args(offer.command_args().ok()?);
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let mut process = process::spawn(command, "probe offer").ok()?;
    let budget = Duration::from_secs(60);
    let exit = process.wait_until(Some(Instant::now() + budget), stop, budget);
    if exit.is_none_or(|exit| exit.code != 0) {
        process.stop(Duration::from_secs(2));
        return None;
    }
    let report: OfferReport = serde_json::from_str(&std::fs::read_to_string(json).ok()?).ok()?;
    report.origins.into_iter().next()?.h3_features
}
