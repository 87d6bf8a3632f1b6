//! `h3lab probe`: single-property measurements. `probe ttfb` times the
//! first response byte on new connections: cold, resumed, or 0-RTT (h3);
//! `probe migrate` moves the client to a new port or address mid-stream;
//! `probe hol` measures head-of-line stalls of parallel streams under loss;
//! `probe conformance` checks a server's HTTP/3 and QPACK error handling.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use h3lab_probe::cli::{
    ConformanceArgs, ConnectionsArgs, FallbackArgs, HolArgs, MigrateArgs, OfferArgs, TtfbArgs,
};
use h3lab_probe::connections::run_connections;
use h3lab_probe::fallback::run_fallback;
use h3lab_probe::hol::report::{HolReport, StreamResult};
use h3lab_probe::hol::run_hol;
use h3lab_probe::offer::check_offers;
use h3lab_probe::ttfb::sample_ttfb;
use h3lab_probe::{ensure_root, run_migrate};
use h3lab_report::{distribution_html, Chart, Series};
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
    /// handshake, and the Alt-Svc it advertises; and of its h3, the server
    /// header, 0-RTT, the QPACK dynamic table and a new client port.
    Offer(OfferArgs),
    /// What a connection costs the built-in server in memory, per
    /// protocol: N connections held idle, then with a request open each
    /// (needs root).
    Connections(ConnectionsArgs),
    /// HTTP/3, QPACK and QUIC error handling, case by case against the
    /// RFCs' MUSTs: what the server does with frames on the wrong stream,
    /// malformed requests, QPACK references to nothing and QUIC frames and
    /// transport parameters it must refuse.
    Conformance(ConformanceArgs),
}

fn connections(args: ConnectionsArgs) -> anyhow::Result<ExitCode> {
    let options = args.options(super::this_binary()?)?;
    run_emulated(&options, args.json.as_deref(), None, |interrupted| {
        run_connections(&options, interrupted, |result| out!("{result}"))
    })
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.probe {
        Probe::Ttfb(args) => ttfb(args),
        Probe::Migrate(args) => migrate(*args),
        Probe::Hol(args) => hol(*args),
        Probe::Fallback(args) => fallback(*args),
        Probe::Offer(args) => offer(args),
        Probe::Connections(args) => connections(args),
        Probe::Conformance(args) => conformance(&args),
    }
}

fn conformance(args: &ConformanceArgs) -> anyhow::Result<ExitCode> {
    match args.options() {
        Some(options) => h3lab_probe::conformance::run(&options)?,
        None => h3lab_probe::conformance::list()?,
    }
    Ok(ExitCode::SUCCESS)
}

fn offer(args: OfferArgs) -> anyhow::Result<ExitCode> {
    let report = check_offers(
        &args.urls,
        args.window_url.as_deref(),
        &args.resolve,
        &args.tls(),
        args.timeout,
    )?;
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

fn migrate(args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let options = args.options(super::this_binary()?)?;
    run_emulated(&options, args.json.as_deref(), None, |interrupted| {
        run_migrate(&options, interrupted, |result| outln!("{result}"))
    })
}

fn hol(args: HolArgs) -> anyhow::Result<ExitCode> {
    let options = args.options(super::this_binary()?)?;
    let html = args
        .html
        .as_deref()
        .map(|path| (path, hol_html as fn(&HolReport) -> String));
    run_emulated(&options, args.json.as_deref(), html, |interrupted| {
        run_hol(&options, interrupted, |run| outln!("{run}"))
    })
}

fn fallback(args: FallbackArgs) -> anyhow::Result<ExitCode> {
    let options = args.options(super::this_binary()?)?;
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
