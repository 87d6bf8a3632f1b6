//! A field run's preparation, before its first cell: every host the
//! workloads talk to is resolved once and pinned (so every cell, and a
//! run again from `results.json`, goes to the same address, and the
//! client namespace needs no resolver), and every origin is asked what it
//! offers, over the real path. A forced protocol an origin does not offer
//! then fails its cells with a message naming the origin, instead of
//! running a row that measures something else.

use std::collections::BTreeMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use h3lab_probe::cli::OfferArgs;
use h3lab_results::bench::FieldRun;
use h3lab_results::flags::CommandFlags;
use h3lab_results::offer::{OfferReport, OriginOffer};
use linkem::run::{Placement, Side};

use crate::process;
use crate::spec::CellSpec;
use crate::suite::{FieldUrl, Pin, Site, Suite, DEFAULT_PAUSE};

/// How long each connection of the offer check may take; a QUIC
/// handshake with no answer within it means the origin offers no h3.
const OFFER_TIMEOUT: Duration = Duration::from_secs(3);

/// What every cell of a field run needs: the pinned addresses, what each
/// origin offers, and the record of it all.
pub struct FieldTarget {
    /// What the results record of the target and its origins.
    pub record: FieldRun,
}

impl FieldTarget {
    /// Resolves and pins every host, then checks what every origin offers
    /// with `h3lab probe offer` (the executable `exe`), writing into
    /// `scratch`. An origin that offers nothing (unreachable, refused, a
    /// certificate not trusted) is an error naming it.
    pub fn prepare(suite: &Suite, exe: &Path, scratch: &Path) -> anyhow::Result<FieldTarget> {
        let urls = every_url(suite);
        let (resolved, pinned) = resolve(suite, &urls)?;
        let origins = check_offers(suite, exe, scratch, &urls, &pinned)?;
        if let Some(dead) = origins.iter().find(|o| o.offered() == "none") {
            bail!(
                "{} offers no protocol h3lab could reach: {}",
                dead.origin,
                dead.notes.join("; ")
            );
        }
        let mut page_urls: Vec<String> = Vec::new();
        for workload in &suite.workloads {
            if let Some(url) = &workload.url {
                if !page_urls.contains(&url.to_string()) {
                    page_urls.push(url.to_string());
                }
            }
        }
        Ok(FieldTarget {
            record: FieldRun {
                urls: page_urls,
                resolved,
                pinned: pinned.iter().map(Pin::to_string).collect(),
                origins,
                place: suite.target.place.clone(),
                hostname: hostname(),
                pause_s: pause(suite).as_secs_f64(),
                suite_toml: suite.source.clone(),
            },
        })
    }

    /// The pins as `--resolve` rules.
    pub(crate) fn pins(&self) -> &[String] {
        &self.record.pinned
    }

    /// Why `spec` cannot run: its protocol is forced and one of its
    /// origins does not offer it. `None` when it can.
    pub(crate) fn refusal(&self, suite: &Suite, spec: &CellSpec) -> Option<String> {
        let origins = workload_origins(suite, spec);
        self.record
            .origins
            .iter()
            .filter(|offer| origins.contains(&offer.origin))
            .find_map(|offer| offer.refusal(spec.protocol))
    }
}

/// How a field run's results name a profile: `real path` alone, or
/// `real path + PROFILE` with its conditions emulated on top.
pub(crate) fn profile_label(profile: &str) -> String {
    match profile == crate::suite::REAL {
        true => "real path".to_string(),
        false => format!("real path + {profile}"),
    }
}

/// The pause after each cell of a field run.
pub(crate) fn pause(suite: &Suite) -> Duration {
    suite.target.pause.map_or(DEFAULT_PAUSE, |pause| pause.0)
}

/// The workloads' URLs and the extra origins, each once, in suite order.
fn every_url(suite: &Suite) -> Vec<FieldUrl> {
    let mut urls: Vec<FieldUrl> = Vec::new();
    let workload_urls = suite.workloads.iter().filter_map(|w| w.url.clone());
    for url in workload_urls.chain(suite.target.origins.iter().cloned()) {
        if !urls.contains(&url) {
            urls.push(url);
        }
    }
    urls
}

/// The origins (`https://host:port`, as `OriginOffer` names them) a
/// cell's workload talks to: its URL's, and for a page the extra ones.
fn workload_origins(suite: &Suite, spec: &CellSpec) -> Vec<String> {
    let mut origins: Vec<String> = spec.workload.url.iter().map(origin_of).collect();
    if let crate::suite::Load::Page {
        site: Site::Remote, ..
    } = &spec.workload.load
    {
        origins.extend(suite.target.origins.iter().map(origin_of));
    }
    origins
}

fn origin_of(url: &FieldUrl) -> String {
    let host = url.0.host_str().unwrap_or_default();
    format!(
        "https://{host}:{}",
        url.0.port_or_known_default().unwrap_or(443)
    )
}

/// Every `host:port` with the addresses it resolved to (or was pinned to).
type Resolved = BTreeMap<String, Vec<String>>;

/// Every `host:port` with the addresses it resolved to, and the one pin
/// per `host:port` the cells use: the suite's own, an IP address as
/// itself, else the first IPv4 address the system's resolver gives (the
/// emulated paths carry IPv4).
fn resolve(suite: &Suite, urls: &[FieldUrl]) -> anyhow::Result<(Resolved, Vec<Pin>)> {
    let mut resolved = BTreeMap::new();
    let mut pins = Vec::new();
    for url in urls {
        let host_port = url.host_port();
        if resolved.contains_key(&host_port) {
            continue;
        }
        let host = url.0.host_str().unwrap_or_default();
        let host = host.trim_matches(|c| c == '[' || c == ']');
        let pin = match suite
            .target
            .resolve
            .iter()
            .find(|p| p.host_port == host_port)
        {
            Some(pin) => {
                resolved.insert(host_port.clone(), vec![pin.address.to_string()]);
                pin.clone()
            }
            None => {
                let addresses = lookup(host, &host_port)?;
                let chosen = addresses
                    .iter()
                    .find(|a| a.is_ipv4())
                    .or(addresses.first())
                    .copied()
                    .with_context(|| format!("`{host}` resolves to no address"))?;
                resolved.insert(
                    host_port.clone(),
                    addresses.iter().map(IpAddr::to_string).collect(),
                );
                Pin {
                    host_port,
                    address: chosen,
                }
            }
        };
        pins.push(pin);
    }
    Ok((resolved, pins))
}

fn lookup(host: &str, host_port: &str) -> anyhow::Result<Vec<IpAddr>> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![ip]);
    }
    let addresses = host_port.to_socket_addrs().map_err(|err| {
        anyhow::anyhow!(
            "cannot resolve `{host}`: {err}; check the URL, or pin the name with [target] \
             resolve = [\"{host_port}:ADDRESS\"]"
        )
    })?;
    let mut ips: Vec<IpAddr> = addresses.map(|a| a.ip()).collect();
    ips.dedup();
    Ok(ips)
}

/// `h3lab probe offer` for every URL, from this machine's own network:
/// the real path, as the cells of `real` see it.
fn check_offers(
    suite: &Suite,
    exe: &Path,
    scratch: &Path,
    urls: &[FieldUrl],
    pins: &[Pin],
) -> anyhow::Result<Vec<OriginOffer>> {
    let json = scratch.join("offers.json");
    let mut command = process::command(&Placement::Loopback, Side::Client, exe);
    let offer = OfferArgs {
        urls: urls.iter().map(FieldUrl::to_string).collect(),
        resolve: pins
            .iter()
            .map(|pin| pin.to_string().parse())
            .collect::<anyhow::Result<_>>()?,
        insecure: suite.target.insecure,
        ca: None,
        timeout: OFFER_TIMEOUT,
        window_url: None,
        json: Some(json.clone()),
    };
    command.args(offer.command_args()?);
    command.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut check = process::spawn(command, "the offer check (h3lab probe offer)")?;
    let budget = OFFER_TIMEOUT * 4 * (urls.len() as u32 + 1);
    let never = std::sync::atomic::AtomicBool::new(false);
    if check
        .wait_until(Some(Instant::now() + budget), &never, budget)
        .is_none()
    {
        check.stop(Duration::from_secs(2));
        bail!(
            "the offer check did not finish within {}s",
            budget.as_secs()
        );
    }
    let text = std::fs::read_to_string(&json).map_err(|_| {
        anyhow::anyhow!(
            "the offer check wrote no report{}",
            check.last_stderr_line()
        )
    })?;
    let report: OfferReport = serde_json::from_str(&text).context("reading the offer report")?;
    Ok(report.origins)
}

/// This machine's host name; `None` if the kernel does not say.
fn hostname() -> Option<String> {
    let text = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    Some(text.trim().to_string())
}
