//! `h3lab page URL`: loads a whole page (its HTML and every asset) and
//! times it, with the built-in loader or real Chromium; prints each load,
//! a summary and the median load's waterfall, and writes JSON and HAR.

use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context;
use h3lab_client::{ResolveRule, TlsOptions};
use h3lab_page::chromium::{ChromiumOptions, Trust};
use h3lab_page::cli::PageArgs;
use h3lab_page::loader::{LoaderOptions, RecordedPage};
use h3lab_results::page::{PageLoad, PageReport};
use h3lab_results::Loader;
use h3lab_site::replay::Replay;
use indicatif::{ProgressBar, ProgressStyle};

pub fn run(args: PageArgs) -> anyhow::Result<ExitCode> {
    args.check()?;
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
    let Ok(list) = std::env::var(linkem::env::SERVER_IPS) else {
        return Ok(None);
    };
    let parsed = list.split(',').map(|ip| {
        (ip.trim().parse())
            .with_context(|| format!("H3LAB_SERVER_IPS holds `{ip}`, not an IP address"))
    });
    Ok(Some(parsed.collect::<anyhow::Result<_>>()?))
}

/// `--json` and `--har`, with whatever loads there are.
fn write_files(args: &PageArgs, report: &PageReport) -> anyhow::Result<()> {
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

fn loader_options(args: &PageArgs, replay: Option<&Replay>) -> LoaderOptions {
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

fn chromium_options(args: &PageArgs, replay: Option<&Replay>) -> ChromiumOptions {
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

fn progress_bar(args: &PageArgs) -> ProgressBar {
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
