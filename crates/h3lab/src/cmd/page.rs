//! `h3lab page URL`: loads a whole page (its HTML and every asset) and
//! times it, with the built-in loader or real Chromium; prints each load,
//! a summary and the median load's waterfall, and writes JSON and HAR.

use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use h3lab_client::{ResolveRule, TlsOptions};
use h3lab_page::chromium::{ChromiumOptions, Trust};
use h3lab_page::loader::{LoaderOptions, RecordedPage};
use h3lab_results::page::{PageLoad, PageReport};
use h3lab_results::{Loader, Proto, Visit};
use h3lab_site::replay::Replay;
use indicatif::{ProgressBar, ProgressStyle};

#[derive(clap::Args)]
pub struct Args {
    /// The page, e.g. https://127.0.0.1:8443/ (from `h3lab serve --site DIR`).
    url: String,
    /// Protocol of every request; auto: h2 until the page's Alt-Svc, then
    /// QUIC raced against TCP, as browsers do (docs/discovery.md).
    #[arg(long, value_enum, default_value = "h3")]
    proto: Proto,
    /// builtin: h3lab's browser-like loader (no browser needed); chromium:
    /// real headless Chromium over the DevTools protocol.
    #[arg(long, value_enum, default_value = "builtin")]
    browser: Loader,
    /// cold: new connections (a new browser and profile) for every load;
    /// warm: one priming load, then loads that resume the session (0-RTT
    /// on h3 with the built-in loader) or reload in the same browser;
    /// repeat: one unmeasured load, then new connections that keep what it
    /// learned (auto's returning visit).
    #[arg(long, value_enum, default_value = "cold")]
    visit: Visit,
    /// Built-in loader: send a browser's request headers, Chromium's
    /// recorded set with a 1 kB cookie, so that header compression shows on
    /// the wire (docs/costs.md). Chromium sends its own.
    #[arg(long)]
    browser_headers: bool,
    /// Page loads to measure.
    #[arg(short = 'n', long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    loads: u32,
    /// Accept any server certificate.
    #[arg(long)]
    insecure: bool,
    /// Trust the certificate(s) in this PEM file too, beside the system's
    /// certificate authorities (for Chromium: its first certificate's key
    /// is pinned).
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// Chromium only: trust the key with this base64 SHA-256 SPKI pin (what
    /// `h3lab serve` prints as spki-sha256).
    #[arg(long, value_name = "BASE64")]
    spki: Option<String>,
    /// Chromium only: the browser binary (default: chromium on PATH).
    #[arg(long, value_name = "PATH")]
    chromium: Option<PathBuf>,
    /// Connect to ADDR for HOST on PORT, with TLS and the requests still
    /// naming HOST (curl's convention; repeatable), e.g. for a replay
    /// site's origins: www.example.com:443:127.0.0.10.
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    resolve: Vec<ResolveRule>,
    /// The replay site (`h3lab site from-har`) the page comes from. Each
    /// origin without a --resolve rule goes to its own address: in order,
    /// those of $H3LAB_SERVER_IPS (`h3lab net run --server-addresses N`),
    /// else 127.0.0.10 on. Responses it recorded with an error status (a
    /// missing image) do not fail a load.
    #[arg(long, value_name = "DIR")]
    replay: Option<PathBuf>,
    /// Connection set-up timeout (built-in loader).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    connect_timeout: Duration,
    /// One page load may take this long before the run fails.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// Write every load as JSON (schema h3lab.page/1, docs/results-schema.md).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write every load's waterfall as HAR 1.2.
    #[arg(long, value_name = "FILE")]
    har: Option<PathBuf>,
    /// Print only the summary line.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    check_flags(&args)?;
    let mut args = args;
    let replay = args.replay.as_deref().map(Replay::read).transpose()?;
    if let Some(replay) = &replay {
        add_origin_rules(replay, &mut args.resolve)?;
    }
    // Ctrl-C ends the run after the current load, keeping the loads so far.
    let stop = super::stop_flag()?;
    let bar = progress_bar(&args);
    // Every load as it completes, so a run that fails later keeps them.
    let mut gathered = PageReport::new(&args.url, args.proto, args.browser, args.visit);
    let mut on_load = |load: &PageLoad| {
        if !args.quiet {
            // The line is built before suspend, which holds the bar's lock.
            let line = format!("load {}/{}: {load}", bar.position() + 1, args.loads);
            bar.suspend(|| eprintln!("{line}"));
        }
        bar.inc(1);
        gathered.loads.push(load.clone());
        match stop.load(Ordering::Relaxed) {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    };
    let outcome = match args.browser {
        Loader::Builtin => {
            let options = loader_options(&args, replay.as_ref());
            h3lab_page::loader::load_page(&args.url, &options, &mut on_load)
        }
        Loader::Chromium => {
            let options = chromium_options(&args, replay.as_ref());
            h3lab_page::chromium::load_page(&args.url, &options, &mut on_load)
        }
    };
    bar.finish_and_clear();
    let (report, failure) = match outcome {
        Ok(report) => (report, None),
        Err(err) => (gathered, Some(err)),
    };
    write_files(&args, &report)?;
    if let Some(err) = failure {
        let kept = match (report.loads.len(), &args.json) {
            (0, _) | (_, None) => String::new(),
            (n, Some(path)) => format!(" ({n} completed load(s) written to {})", path.display()),
        };
        return Err(err.context(format!("the page run failed{kept}")));
    }
    if !args.quiet {
        if let Some(median) = report.median_load() {
            out!("{}", report.loads[median].waterfall());
        }
    }
    outln!("{report}");
    let interrupted = report.loads.len() < args.loads as usize;
    Ok(if interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// The server's extra addresses an emulated path exports
/// (`h3lab net run --server-addresses N`), if any.
fn server_ips_from_env() -> anyhow::Result<Option<Vec<std::net::IpAddr>>> {
    let Ok(list) = std::env::var("H3LAB_SERVER_IPS") else {
        return Ok(None);
    };
    let parsed = list.split(',').map(|ip| {
        (ip.trim().parse())
            .with_context(|| format!("H3LAB_SERVER_IPS holds `{ip}`, not an IP address"))
    });
    Ok(Some(parsed.collect::<anyhow::Result<_>>()?))
}

/// `--json` and `--har`, with whatever loads there are.
fn write_files(args: &Args, report: &PageReport) -> anyhow::Result<()> {
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(report)?;
        std::fs::write(path, text)
            .with_context(|| format!("writing the JSON report {}", path.display()))?;
    }
    if let Some(path) = &args.har {
        h3lab_page::har::write_har(report, path)?;
    }
    Ok(())
}

fn check_flags(args: &Args) -> anyhow::Result<()> {
    let chromium_only = [
        ("--spki", args.spki.is_some()),
        ("--chromium", args.chromium.is_some()),
    ];
    for (flag, given) in chromium_only {
        if given && args.browser != Loader::Chromium {
            anyhow::bail!("{flag} applies to --browser chromium only");
        }
    }
    if args.browser_headers && args.browser == Loader::Chromium {
        anyhow::bail!(
            "--browser-headers applies to --browser builtin: Chromium sends its own headers"
        );
    }
    if args.insecure && (args.ca.is_some() || args.spki.is_some()) {
        anyhow::bail!("--insecure trusts any certificate; drop it, or drop --ca/--spki");
    }
    Ok(())
}

/// A `--resolve` rule for each origin of the replay that has none: its
/// own address, in order.
fn add_origin_rules(replay: &Replay, resolve: &mut Vec<ResolveRule>) -> anyhow::Result<()> {
    let server_ips = server_ips_from_env()?;
    let addresses = replay.origin_addresses(server_ips.as_deref())?;
    for (origin, addr) in replay.origins.iter().zip(addresses) {
        let ruled = (resolve.iter()).any(|r| r.host == origin.host && r.port == origin.port);
        if !ruled {
            resolve.push(ResolveRule {
                host: origin.host.clone(),
                port: origin.port,
                addr,
                connect_port: None,
            });
        }
    }
    Ok(())
}

fn loader_options(args: &Args, replay: Option<&Replay>) -> LoaderOptions {
    LoaderOptions {
        proto: args.proto,
        tls: TlsOptions {
            insecure: args.insecure,
            ca_file: args.ca.clone(),
        },
        visit: args.visit,
        loads: args.loads,
        connect_timeout: args.connect_timeout,
        load_timeout: args.timeout,
        h3_discovery: None,
        resolve: args.resolve.clone(),
        recorded_errors: replay.map(Replay::recorded_errors).unwrap_or_default(),
        recorded: replay.map(|replay| RecordedPage {
            urls: replay.responses.iter().map(|r| r.url.clone()).collect(),
            initiated: replay.initiated(),
        }),
        browser_headers: args.browser_headers,
    }
}

fn chromium_options(args: &Args, replay: Option<&Replay>) -> ChromiumOptions {
    let trust = match (&args.spki, &args.ca, args.insecure) {
        (Some(spki), _, _) => Trust::SpkiSha256Base64(spki.clone()),
        (None, Some(ca), _) => Trust::CaFile(ca.clone()),
        (None, None, true) => Trust::Insecure,
        (None, None, false) => Trust::System,
    };
    ChromiumOptions {
        binary: args.chromium.clone(),
        proto: args.proto,
        trust,
        visit: args.visit,
        loads: args.loads,
        navigation_timeout: args.timeout,
        resolve: args.resolve.clone(),
        recorded_errors: replay.map(Replay::recorded_errors).unwrap_or_default(),
    }
}

fn progress_bar(args: &Args) -> ProgressBar {
    if args.quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(u64::from(args.loads));
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} loads, ETA {eta}")
            .expect("a valid progress template"),
    );
    bar
}
