//! `h3lab page URL`: loads a whole page (its HTML and every asset) and
//! times it, with the built-in loader or real Chromium or Firefox; prints each load,
//! a summary and the median load's waterfall, and writes JSON and HAR.

use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context;
use h3lab_page::cli::PageArgs;
use h3lab_results::page::{PageLoad, PageReport};
use h3lab_results::Loader;
use h3lab_site::replay::Replay;
use indicatif::{ProgressBar, ProgressStyle};

pub fn run(args: PageArgs) -> anyhow::Result<ExitCode> {
    args.check()?;
    let mut args = args;
    let replay = args.replay.as_deref().map(Replay::read).transpose()?;
    if let Some(replay) = &replay {
        args.resolve_replay_origins(replay)?;
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
            let options = args.loader_options(replay.as_ref());
            h3lab_page::loader::load_page(&args.url, &options, &mut on_load)
        }
        Loader::Chromium => {
            let options = args.chromium_options(replay.as_ref());
            h3lab_page::chromium::load_page(&args.url, &options, &mut on_load)
        }
        Loader::Firefox => {
            let options = args.firefox_options(replay.as_ref());
            h3lab_page::firefox::load_page(&args.url, &options, &mut on_load)
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
