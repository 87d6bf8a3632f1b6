//! The visits a real browser makes of one page, whichever the browser:
//! cold (a new browser and profile per load), warm (one primed browser)
//! and repeat (one profile across launches, after an unmeasured first
//! visit). Each browser driver says how to launch, measure and close; the
//! order of launches and loads is this module's alone.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use h3lab_results::page::{PageLoad, PageReport};
use h3lab_results::{Loader, Proto, Visit};
use h3lab_supervise::Supervised;

/// One browser engine as the visits use it.
pub(crate) trait Engine {
    /// A running browser with one page to navigate.
    type Browser;

    /// Starts a browser: with a new profile of its own, or with `profile`,
    /// which outlives it (what it learns reaches the next launch).
    fn launch(&self, profile: Option<&Path>) -> Result<Self::Browser>;

    /// Loads the page once in `browser`.
    fn measure(&self, browser: &mut Self::Browser) -> Result<PageLoad>;

    /// Leaves the page for `about:blank`, so that the next load is a new
    /// navigation in the same browser.
    fn blank(&self, browser: &mut Self::Browser) -> Result<()>;

    /// Closes the browser as a user does, so its profile is written.
    fn close(&self, browser: Self::Browser) -> Result<()>;
}

/// What the visits are of, for the report and for errors.
pub(crate) struct Visits<'a> {
    pub(crate) url: &'a str,
    pub(crate) proto: Proto,
    pub(crate) loader: Loader,
    pub(crate) visit: Visit,
    pub(crate) loads: u32,
}

/// Runs `visits` with `engine`; `on_load` is called after each measured
/// load and stops the run by breaking.
pub(crate) fn run<E: Engine>(
    engine: &E,
    visits: &Visits,
    on_load: &mut dyn FnMut(&PageLoad) -> ControlFlow<()>,
) -> Result<PageReport> {
    let Visits {
        url,
        proto,
        loader,
        visit,
        loads,
    } = *visits;
    let mut report = PageReport::new(url, proto, loader, visit);
    let name = browser_name(loader);
    let what = |n: u32| format!("{name} load {n} of {loads} of {url} over {proto}");
    let mut measured = |load: PageLoad| {
        let flow = on_load(&load);
        report.loads.push(load);
        flow
    };
    match visit {
        Visit::Repeat => {
            let profile = tempfile::Builder::new()
                .prefix("h3lab-profile-")
                .tempdir()
                .with_context(|| format!("cannot create a {name} profile"))?;
            let first = || format!("{name}'s first visit to {url} before load 1");
            let mut browser = engine.launch(Some(profile.path())).with_context(first)?;
            engine.measure(&mut browser).with_context(first)?;
            engine.close(browser).with_context(first)?;
            for n in 1..=loads {
                let mut browser = engine
                    .launch(Some(profile.path()))
                    .with_context(|| what(n))?;
                let load = engine.measure(&mut browser).with_context(|| what(n))?;
                engine.close(browser).with_context(|| what(n))?;
                if measured(load).is_break() {
                    break;
                }
            }
        }
        Visit::Cold => {
            for n in 1..=loads {
                let mut browser = engine.launch(None).with_context(|| what(n))?;
                let load = engine.measure(&mut browser).with_context(|| what(n))?;
                drop(browser);
                if measured(load).is_break() {
                    break;
                }
            }
        }
        Visit::Warm => {
            let mut browser = engine.launch(None)?;
            engine
                .measure(&mut browser)
                .with_context(|| format!("{name}'s priming load of {url} over {proto}"))?;
            for n in 1..=loads {
                engine.blank(&mut browser).with_context(|| what(n))?;
                let load = engine.measure(&mut browser).with_context(|| what(n))?;
                if measured(load).is_break() {
                    break;
                }
            }
        }
    }
    Ok(report)
}

fn browser_name(loader: Loader) -> &'static str {
    match loader {
        Loader::Chromium => "Chromium",
        Loader::Firefox => "Firefox",
        Loader::Builtin => "the built-in loader",
    }
}

/// The host and port of the page a browser is to visit: an absolute URL,
/// https unless the protocol is h1, and a visit the protocol allows.
pub(crate) fn page_origin(url: &str, proto: Proto, visit: Visit) -> Result<(String, u16)> {
    let parsed = url::Url::parse(url)
        .with_context(|| format!("{url} is not a URL; pass an absolute https:// URL"))?;
    let host = parsed
        .host_str()
        .ok_or_else(|| anyhow!("{url} has no host; pass an absolute https:// URL"))?;
    crate::check_visit(proto, visit)?;
    match (parsed.scheme(), proto) {
        ("https", _) | ("http", Proto::H1) => {}
        (scheme, proto) => {
            bail!("{url}: {proto} needs an https:// URL, not {scheme}://; pass an https:// URL")
        }
    }
    let port = parsed
        .port_or_known_default()
        .ok_or_else(|| anyhow!("{url} has no port"))?;
    Ok((host.to_string(), port))
}

/// A browser's binary: `given` (from `--FLAG PATH`), else the first of
/// `names` on PATH; when there is none, how to install one.
pub(crate) fn find_binary(
    given: Option<&Path>,
    browser: &str,
    names: &[&str],
    flag: &str,
    install: &str,
) -> Result<std::path::PathBuf> {
    if let Some(path) = given {
        if path.is_file() {
            return Ok(path.to_path_buf());
        }
        bail!(
            "{browser} binary {} does not exist; pass its path with {flag} PATH",
            path.display()
        );
    }
    h3lab_supervise::on_path(names).ok_or_else(|| {
        anyhow!(
            "no {browser} found on PATH (tried {}); install it: {install}, or pass {flag} PATH",
            names.join(", ")
        )
    })
}

/// `err` with what became of `browser`'s process: a lost connection is
/// most often a browser that exited, so it is given a moment to be
/// reaped (its socket closes before it is), and its last words say why.
pub(crate) fn with_browser_state(
    browser: &str,
    process: &mut Supervised,
    err: anyhow::Error,
) -> anyhow::Error {
    let reaped = Instant::now() + Duration::from_secs(2);
    let exit = process.wait_until(Some(reaped), &AtomicBool::new(false), Duration::ZERO);
    let last = process.last_stderr_line();
    err.context(match exit {
        Some(exit) => format!("{}{last}", ended(browser, exit.code)),
        None => format!("{browser} is still running{last}"),
    })
}

/// How a browser's process ended, from its exit code (128 + the signal
/// when a signal ended it).
pub(crate) fn ended(browser: &str, code: i32) -> String {
    let crash = match code - 128 {
        4 => Some("SIGILL"),
        5 => Some("SIGTRAP"),
        6 => Some("SIGABRT"),
        7 => Some("SIGBUS"),
        8 => Some("SIGFPE"),
        11 => Some("SIGSEGV"),
        _ => None,
    };
    match (crash, code - 128) {
        (Some(name), signal) => format!("{browser} crashed (signal {signal}, {name})"),
        (None, 9) => format!("{browser} was killed (signal 9, SIGKILL: out of memory?)"),
        (None, signal) if signal > 0 && signal < 32 => {
            format!("{browser} was ended by signal {signal}")
        }
        _ => format!("{browser} exited with code {code}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_a_kill_and_an_exit_are_told_apart() {
        assert_eq!(
            ended("Firefox", 128 + 11),
            "Firefox crashed (signal 11, SIGSEGV)"
        );
        assert_eq!(
            ended("Chromium", 134),
            "Chromium crashed (signal 6, SIGABRT)"
        );
        assert!(ended("Firefox", 137).starts_with("Firefox was killed (signal 9"));
        assert_eq!(ended("Firefox", 143), "Firefox was ended by signal 15");
        assert_eq!(ended("Firefox", 1), "Firefox exited with code 1");
        assert_eq!(ended("Firefox", 0), "Firefox exited with code 0");
    }
}
