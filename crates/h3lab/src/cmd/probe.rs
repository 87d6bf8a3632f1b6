//! `h3lab probe`: single-property measurements. `probe ttfb` times the
//! first response byte on new connections: cold, resumed, or 0-RTT (h3);
//! `probe migrate` moves the client to a new port or address mid-stream;
//! `probe hol` measures head-of-line stalls of parallel streams under loss.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use h3lab_client::{ResolveRule, TlsOptions};
use h3lab_probe::cli::TtfbArgs;
use h3lab_probe::connections::{run_connections, ConnectionsOptions};
use h3lab_probe::fallback::{run_fallback, FallbackOptions};
use h3lab_probe::hol::report::{HolReport, StreamResult};
use h3lab_probe::hol::{run_hol, HolOptions};
use h3lab_probe::migrate::scenario::{
    default_delay_threshold, default_request_timeout, Change, Scenario,
};
use h3lab_probe::offer::check_offers;
use h3lab_probe::ttfb::sample_ttfb;
use h3lab_probe::{ensure_root, run_migrate, MigrateOptions};
use h3lab_report::{distribution_html, Chart, Series};
use h3lab_results::Proto;
use h3lab_site::Shape;
use linkem::config::Overrides;
use linkem::model::UdpPolicy;
use linkem::run::Interrupted;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    probe: Probe,
}

#[derive(clap::Subcommand)]
enum Probe {
    /// Time to the first response byte on new connections.
    Ttfb(TtfbArgs),
    /// Move the client to a new port or address during a steady request
    /// stream, on an emulated path: h3 migrates, TCP breaks (needs root).
    Migrate(Box<MigrateArgs>),
    /// Parallel streams on one h2 and one h3 connection through a lossy
    /// path: each stream's head-of-line stall and completion (needs root).
    Hol(Box<HolArgs>),
    /// What turning h3 on costs users whose network blocks or throttles
    /// UDP: page loads with Alt-Svc discovery against an h2-only site
    /// (needs root).
    Fallback(Box<FallbackArgs>),
    /// What each origin offers: h1 and h2 by ALPN over TCP, h3 by a QUIC
    /// handshake, and the Alt-Svc it advertises.
    Offer(OfferArgs),
    /// What a connection costs the built-in server in memory, per
    /// protocol: N connections held idle, then with a request open each
    /// (needs root).
    Connections(ConnectionsArgs),
}

#[derive(clap::Args)]
struct ConnectionsArgs {
    /// Protocols, each against a fresh server on a fresh path.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "h1,h2,h3")]
    protocols: Vec<Proto>,
    /// Connections held at each step, ascending.
    #[arg(long, value_delimiter = ',', default_value = "100,1000")]
    counts: Vec<u32>,
    /// Connections opened at once while growing to a step.
    #[arg(long, default_value_t = 50)]
    concurrency: u32,
    /// How long each step waits before reading memory.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    settle: Duration,
    /// Measure a server this command starts instead of h3lab serve, e.g.
    /// "scripts/peer-server.sh caddy {ip} {port} {site} {cert} {key}"
    /// (placeholders as in a suite's server_cmd; {cert} and {key} are
    /// needed). Idle connections only: h3lab serve alone has an answer
    /// that waits.
    #[arg(long, value_name = "COMMAND")]
    server_cmd: Option<String>,
    /// Also write the report as JSON (schema h3lab.connections/1) to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

fn connections(args: ConnectionsArgs) -> anyhow::Result<ExitCode> {
    let options = ConnectionsOptions {
        protocols: args.protocols,
        counts: args.counts,
        concurrency: args.concurrency,
        settle: args.settle,
        exe: std::env::current_exe().context("cannot find the h3lab binary to start the server")?,
        server_cmd: args.server_cmd,
    };
    options.validate()?;
    let states = match options.server_cmd {
        None => "idle then with a request open each",
        Some(_) => "idle",
    };
    let header = format!(
        "probe connections: {} connections per protocol ({}), {states}, against {}",
        options
            .counts
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", then "),
        options
            .protocols
            .iter()
            .map(Proto::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        options.server_name()
    );
    run_emulated(&header, args.json.as_deref(), None, |interrupted| {
        run_connections(&options, interrupted, |result| out!("{result}"))
    })
}

#[derive(clap::Args)]
struct OfferArgs {
    /// URLs whose origins to check, e.g. https://www.example.com/.
    #[arg(required = true)]
    urls: Vec<String>,
    /// Connect to ADDR for HOST:PORT instead of resolving HOST (curl's
    /// --resolve HOST:PORT:ADDR); repeatable.
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    resolve: Vec<ResolveRule>,
    /// Accept any server certificate.
    #[arg(long)]
    insecure: bool,
    /// Trust the certificate(s) in this PEM file too (the system's
    /// certificate authorities, or SSL_CERT_FILE's, are always trusted).
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// How long each connection may take; a QUIC handshake with no answer
    /// within it means no h3.
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// Also write the report as JSON (schema h3lab.offer/1) to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.probe {
        Probe::Ttfb(args) => ttfb(args),
        Probe::Migrate(args) => migrate(*args),
        Probe::Hol(args) => hol(*args),
        Probe::Fallback(args) => fallback(*args),
        Probe::Offer(args) => offer(args),
        Probe::Connections(args) => connections(args),
    }
}

fn offer(args: OfferArgs) -> anyhow::Result<ExitCode> {
    let tls = TlsOptions {
        insecure: args.insecure,
        ca_file: args.ca,
    };
    let report = check_offers(&args.urls, &args.resolve, &tls, args.timeout)?;
    let json = (args.json.as_deref(), || {
        serde_json::to_string_pretty(&report)
    });
    let unreachable = report
        .origins
        .iter()
        .find(|o| o.offered() == "none")
        .map(|o| {
            anyhow::anyhow!(
                "{} offers no protocol h3lab could use; see the notes above",
                o.origin
            )
        });
    finish(json, None, &report, unreachable)
}

fn ttfb(args: TtfbArgs) -> anyhow::Result<ExitCode> {
    let options = args.options();
    let (report, failure) = sample_ttfb(&options, |sample| {
        if !args.quiet {
            outln!("{sample}");
        }
    })?;
    let json = (args.json.as_deref(), || {
        serde_json::to_string_pretty(&report)
    });
    finish(json, None, &report, failure)
}

/// Writes `--json` (then `--html`, when there is one), prints the summary
/// and turns a failure into the exit.
fn finish(
    (json, report_json): (Option<&Path>, impl FnOnce() -> serde_json::Result<String>),
    html: Option<(&Path, String)>,
    summary: &dyn std::fmt::Display,
    failure: Option<anyhow::Error>,
) -> anyhow::Result<ExitCode> {
    if let Some(path) = json {
        write_file(path, &report_json()?, "--json")?;
    }
    if let Some((path, text)) = html {
        write_file(path, &text, "--html")?;
    }
    outln!("{summary}");
    match failure {
        Some(err) => Err(err),
        None => Ok(ExitCode::SUCCESS),
    }
}

#[derive(clap::Args)]
struct MigrateArgs {
    /// What changes at the switch: `port` (NAT rebinding) or `address` (a
    /// network handoff to a second client address).
    #[arg(long, default_value = "port")]
    change: Change,
    /// Protocols to run, each on a fresh path, e.g. h2,h3.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "h1,h2,h3")]
    proto: Vec<Proto>,
    /// Built-in network profile (see `h3lab net profiles`).
    #[arg(long, default_value = "broadband")]
    profile: String,
    #[command(flatten)]
    path: Overrides,
    /// Requests started per second.
    #[arg(long, default_value_t = 50)]
    rate: u32,
    /// How long requests are started.
    #[arg(long, default_value = "4s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// When the change happens, from the first request; default: half-way.
    #[arg(long, value_parser = humantime::parse_duration)]
    switch_at: Option<Duration>,
    /// Response body size of each request (`/bytes/N`).
    #[arg(long, default_value_t = 1000)]
    bytes: u64,
    /// A request without a complete response this long after its
    /// scheduled start fails; default: 8 RTT, at least 1 s.
    #[arg(long, value_parser = humantime::parse_duration)]
    request_timeout: Option<Duration>,
    /// A successful request slower than this counts as delayed; default:
    /// 2 RTT, at least 10 ms.
    #[arg(long, value_parser = humantime::parse_duration)]
    delay_threshold: Option<Duration>,
    /// Also write the report as JSON (schema h3lab.migrate/1,
    /// docs/results-schema.md) to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

fn migrate(args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let settings = args.path.emulated(&args.profile, "a migration")?;
    let rtt = Duration::from_nanos(settings.rtt);
    let scenario = Scenario {
        change: args.change,
        protos: args.proto.clone(),
        rate_per_s: args.rate,
        duration: args.duration,
        switch_at: args.switch_at.unwrap_or(args.duration / 2),
        body_bytes: args.bytes,
        request_timeout: args
            .request_timeout
            .unwrap_or_else(|| default_request_timeout(rtt)),
        delay_threshold: args
            .delay_threshold
            .unwrap_or_else(|| default_delay_threshold(rtt)),
    };
    scenario.validate()?;
    let options = MigrateOptions {
        settings,
        profile: Some(args.profile.clone()),
        scenario,
        exe: std::env::current_exe().context("cannot find the h3lab binary to start the server")?,
    };
    run_emulated(&options, args.json.as_deref(), None, |interrupted| {
        run_migrate(&options, interrupted, |result| outln!("{result}"))
    })
}

#[derive(clap::Args)]
struct HolArgs {
    /// Parallel GETs on the one connection.
    #[arg(long, default_value_t = 8)]
    streams: u32,
    /// Response body size of each stream (`/bytes/N`).
    #[arg(long, default_value_t = 131_072)]
    size: u64,
    /// Protocols, each on its own fresh path with the same seed.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "h2,h3")]
    protos: Vec<Proto>,
    /// Built-in network profile (see `h3lab net profiles`); study A's claim
    /// is at 1 % loss, as in `cellular`.
    #[arg(long, default_value = "cellular")]
    profile: String,
    #[command(flatten)]
    path: Overrides,
    /// Repetitions; repetition r runs every protocol with seed + r.
    #[arg(long, default_value_t = 1)]
    repetitions: u32,
    /// Also write the report as JSON (schema h3lab.hol/1,
    /// docs/results-schema.md) to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also draw the per-stream stalls and completions into an HTML page.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

fn hol(args: HolArgs) -> anyhow::Result<ExitCode> {
    let options = HolOptions {
        settings: args.path.emulated(&args.profile, "a head-of-line probe")?,
        profile: Some(args.profile.clone()),
        protos: args.protos.clone(),
        streams: args.streams,
        body_bytes: args.size,
        repetitions: args.repetitions,
        exe: std::env::current_exe().context("cannot find the h3lab binary to start the server")?,
    };
    options.validate()?;
    let html = args
        .html
        .as_deref()
        .map(|path| (path, hol_html as fn(&HolReport) -> String));
    run_emulated(&options, args.json.as_deref(), html, |interrupted| {
        run_hol(&options, interrupted, |run| outln!("{run}"))
    })
}

#[derive(clap::Args)]
struct FallbackArgs {
    /// The UDP policies, each on a fresh path: open, blocked,
    /// blocked-after:N or throttle:RATE.
    #[arg(long, value_delimiter = ',', default_value = "open,blocked,throttle:1mbit",
          value_parser = linkem::config::parse_udp_policy)]
    policies: Vec<UdpPolicy>,
    /// Built-in network profile (see `h3lab net profiles`).
    #[arg(long, default_value = "broadband")]
    profile: String,
    #[command(flatten)]
    path: Overrides,
    /// The generated site loaded (see `h3lab site generate`).
    #[arg(long, default_value = "small")]
    site: Shape,
    /// The site's seed (`--seed` is the path's).
    #[arg(long, default_value_t = 1)]
    site_seed: u64,
    /// Repetitions of every visit.
    #[arg(long, default_value_t = 5)]
    repetitions: u32,
    /// Also write the report as JSON (schema h3lab.fallback/1,
    /// docs/results-schema.md) to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

fn fallback(args: FallbackArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.path.udp.is_none(),
        "probe fallback runs each of --policies in turn; give the UDP policies there, not with --udp"
    );
    let options = FallbackOptions {
        settings: args.path.emulated(&args.profile, "a fallback probe")?,
        profile: Some(args.profile.clone()),
        policies: args.policies.clone(),
        shape: args.site,
        seed: args.site_seed,
        repetitions: args.repetitions,
        exe: std::env::current_exe().context("cannot find the h3lab binary to start the server")?,
    };
    options.validate()?;
    run_emulated(&options, args.json.as_deref(), None, |interrupted| {
        run_fallback(&options, interrupted, |policy| out!("{policy}"))
    })
}

/// Where `--html` goes, and what draws the report there.
type Drawing<'a, R> = (&'a Path, fn(&R) -> String);

/// What the probes on emulated paths share once their options are valid:
/// root, Ctrl-C, the header line, the run, then `--json` (and `--html`,
/// drawn by `draw`) and the summary.
fn run_emulated<R: serde::Serialize + std::fmt::Display>(
    header: &dyn std::fmt::Display,
    json: Option<&Path>,
    html: Option<Drawing<'_, R>>,
    run: impl FnOnce(&Interrupted) -> anyhow::Result<(R, Option<anyhow::Error>)>,
) -> anyhow::Result<ExitCode> {
    ensure_root()?;
    let interrupted = Interrupted::install()?;
    outln!("{header}");
    let (report, failure) = run(&interrupted)?;
    let html = html.map(|(path, draw)| (path, draw(&report)));
    let json = (json, || serde_json::to_string_pretty(&report));
    finish(json, html, &report, failure)
}

fn write_file(path: &Path, text: &str, flag: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| {
        format!(
            "cannot write {}; pass a writable {flag} path",
            path.display()
        )
    })
}

fn hol_html(report: &HolReport) -> String {
    let chart = |title: &str, pick: fn(&StreamResult) -> Option<f64>| Chart {
        title: title.to_string(),
        x_label: "milliseconds".to_string(),
        series: report
            .per_stream(pick)
            .into_iter()
            .map(|(proto, values)| Series {
                name: proto.to_string(),
                values,
            })
            .collect(),
    };
    distribution_html(
        "h3lab probe hol: per-stream head-of-line stall and completion",
        &report.notes(),
        &[
            chart("Head-of-line stall per stream", |s| s.stall_ms),
            chart("Completion per stream", |s| s.completion_ms),
        ],
    )
}
