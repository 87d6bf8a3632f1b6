//! `probe fallback`: what turning h3 on costs users whose network blocks
//! or throttles UDP. Per UDP policy, a fresh emulated path, the built-in
//! server with a generated site, and a DNS server in the server namespace
//! that publishes the site under two names: `www.site.test` with its
//! address alone, `h3.site.test` with an `HTTPS` record listing h3 too.
//! Then, per repetition, an h2-only load and the `auto` protocol's visits
//! (first, first with the record, repeat, repeat with QUIC known to work),
//! by the built-in loader in the client namespace.

pub mod report;

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Context};
use h3lab_client::alt_svc::H3Discovery;
use h3lab_client::{NameServer, TlsOptions};
use h3lab_dns::{Host, Publish, ZoneConfig};
use h3lab_harness::{PathDns, SITE_HOST};
use h3lab_page::loader::{load_page, LoaderOptions};
use h3lab_results::page::PageLoad;
use h3lab_results::{Proto, Visit};
use h3lab_server::cli::ServeArgs;
use h3lab_site::Shape;
use linkem::model::UdpPolicy;
use linkem::run::Interrupted;
use linkem::{EmulatedPath, LinkSettings};

use crate::shell::{ensure_root, run_each, start_server, SERVER_GRACE};
use report::{summarise_policy, verdict, FallbackReport, Gathered, PolicyResult, VisitKind};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const LOAD_TIMEOUT: Duration = Duration::from_secs(60);
/// The site's name with its address alone in DNS: a browser learns of
/// HTTP/3 from `Alt-Svc`. The server's certificate always covers it.
const ADDRESS_ONLY_HOST: &str = SITE_HOST;
/// The same site's name with an `HTTPS` record listing h3 beside it.
const RECORD_HOST: &str = "h3.site.test";

/// What `probe fallback` runs.
#[derive(Debug, Clone)]
pub struct FallbackOptions {
    /// The emulated path; its UDP policy is replaced by each of `policies`.
    pub settings: LinkSettings,
    /// The built-in profile's name, if one was given.
    pub profile: Option<String>,
    /// The UDP policies, each on a fresh path.
    pub policies: Vec<UdpPolicy>,
    /// The generated site loaded.
    pub shape: Shape,
    /// Its seed.
    pub seed: u64,
    /// Repetitions of every visit.
    pub repetitions: u32,
    /// The `h3lab` binary, started as `h3lab serve` in the server namespace.
    pub exe: PathBuf,
}

impl FallbackOptions {
    /// Refuses options that cannot give a report.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.policies.is_empty(),
            "--udp names no policy; give e.g. --udp open,blocked,throttle:1mbit"
        );
        anyhow::ensure!(
            self.repetitions >= 2,
            "--repetitions {} is too few to tell a delay from noise; give at least 2 (and {} \
             for a verdict at 5 %)",
            self.repetitions,
            h3lab_results::difference::repetitions_needed()
        );
        Ok(())
    }
}

impl fmt::Display for FallbackOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let policies: Vec<String> = self.policies.iter().map(ToString::to_string).collect();
        write!(
            f,
            "probe fallback: site {} seed {} on {} (RTT {} ms), UDP {}; {} repetitions of: \
             h2 only, then auto's first visit (without and with a DNS HTTPS record), repeat visit, \
             and repeat with QUIC known to work",
            self.shape,
            self.seed,
            self.profile.as_deref().unwrap_or("a custom path"),
            self.settings.rtt / 1_000_000,
            policies.join(" / "),
            self.repetitions,
        )
    }
}

/// Runs every policy, calling `on_policy` after each. Stops early when
/// interrupted or when a policy's run fails; the report then holds the
/// policies done so far, and the failure comes beside it.
pub fn run_fallback(
    options: &FallbackOptions,
    interrupted: &Interrupted,
    mut on_policy: impl FnMut(&PolicyResult),
) -> anyhow::Result<(FallbackReport, Option<anyhow::Error>)> {
    options.validate()?;
    ensure_root()?;
    let site = tempfile::tempdir().context("cannot create a directory for the site")?;
    h3lab_site::generate(options.shape, options.seed, site.path())?;
    let (policies, failure) = run_each(
        options.policies.iter().copied(),
        interrupted,
        |udp| format!("the run with UDP {udp}"),
        "the policies run so far",
        |udp| run_policy(options, udp, site.path().to_path_buf(), interrupted),
        &mut on_policy,
    );
    let report = FallbackReport {
        schema: report::FALLBACK_SCHEMA,
        profile: options.profile.clone(),
        link: options.settings.clone(),
        site: format!("{} seed {}", options.shape, options.seed),
        repetitions: options.repetitions,
        verdict: verdict(&policies),
        policies,
    };
    Ok((report, failure))
}

/// One policy on its own path; the path and server go away at the end,
/// whatever happened.
fn run_policy(
    options: &FallbackOptions,
    udp: UdpPolicy,
    site: PathBuf,
    interrupted: &Interrupted,
) -> anyhow::Result<PolicyResult> {
    let settings = LinkSettings {
        udp,
        ..options.settings.clone()
    };
    let mut path = EmulatedPath::start(settings.build())?;
    path.set_client_resolver(path.server_ip())?;
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let cert = scratch.path().join("server-cert.pem");
    let serve = ServeArgs {
        site: Some(site),
        sans: vec![RECORD_HOST.to_string()],
        ..ServeArgs::new()
    };
    let mut server = start_server(&path, &options.exe, &cert, &serve)?;
    let host = |name: &str, publish| Host {
        name: name.to_string(),
        address: path.server_ip(),
        publish,
    };
    let with_record = Publish::WithHttps {
        alpn: vec!["h3".to_string(), "h2".to_string()],
        port: None,
    };
    let zone = ZoneConfig {
        hosts: vec![
            host(ADDRESS_ONLY_HOST, Publish::ARecordsOnly),
            host(RECORD_HOST, with_record),
        ],
        origin_port: server.addr.port(),
    };
    let dns = PathDns::start(&path, zone)?;
    let port = server.addr.port();
    let site = Site {
        address_only: format!("https://{ADDRESS_ONLY_HOST}:{port}/"),
        with_record: format!("https://{RECORD_HOST}:{port}/"),
        cert,
        dns: dns.addr(),
    };
    let repetitions = options.repetitions;
    let stop = interrupted.clone();
    let gathered = path
        .spawn_in_client(move || visit_all(&site, repetitions, &stop))?
        .join()
        .map_err(|_| anyhow!("the client thread panicked"));
    drop(dns);
    server.process.stop(SERVER_GRACE);
    Ok(summarise_policy(udp, &gathered?))
}

/// What a visit needs to find and trust the site.
struct Site {
    /// The site under the name published with its address alone.
    address_only: String,
    /// The site under the name published with an `HTTPS` record too.
    with_record: String,
    cert: PathBuf,
    /// The path's DNS server.
    dns: SocketAddr,
}

/// Every visit of every repetition, interleaved so that a slow moment of
/// the machine falls on all visits alike.
fn visit_all(
    site: &Site,
    repetitions: u32,
    interrupted: &Interrupted,
) -> Vec<(VisitKind, Gathered)> {
    let mut gathered: Vec<(VisitKind, Gathered)> =
        VisitKind::ALL.iter().map(|&v| (v, Vec::new())).collect();
    for _ in 0..repetitions {
        if interrupted.is_set() {
            break;
        }
        for (visit, loads) in &mut gathered {
            loads.push(load(site, *visit));
        }
    }
    gathered
}

/// One measured page load of `visit`.
fn load(site: &Site, visit: VisitKind) -> Result<PageLoad, String> {
    let quic_known = || {
        let mut known = H3Discovery::default();
        known.assume_quic_works_here();
        known
    };
    let url = match visit {
        VisitKind::FirstWithHttpsRecord => &site.with_record,
        _ => &site.address_only,
    };
    let (proto, visit, h3_discovery) = match visit {
        VisitKind::H2Only => (Proto::H2, Visit::Cold, None),
        VisitKind::First | VisitKind::FirstWithHttpsRecord => (Proto::Auto, Visit::Cold, None),
        VisitKind::Repeat => (Proto::Auto, Visit::Repeat, None),
        VisitKind::RepeatQuicKnown => (Proto::Auto, Visit::Repeat, Some(quic_known())),
    };
    let options = LoaderOptions {
        proto,
        tls: TlsOptions {
            insecure: false,
            ca_file: Some(site.cert.clone()),
        },
        visit,
        loads: 1,
        connect_timeout: CONNECT_TIMEOUT,
        load_timeout: LOAD_TIMEOUT,
        h3_discovery,
        resolve: Vec::new(),
        name_server: NameServer::At(site.dns),
        recorded_errors: Vec::new(),
        recorded: None,
        browser_headers: false,
    };
    let report = load_page(url, &options, &mut |_| std::ops::ControlFlow::Continue(()))
        .map_err(|err| format!("{err:#}"))?;
    report
        .loads
        .into_iter()
        .next()
        .ok_or_else(|| "the loader reported no load".to_string())
}
