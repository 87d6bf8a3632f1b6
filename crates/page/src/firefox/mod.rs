//! Headless Firefox as a page loader, driven over WebDriver BiDi: a
//! second browser engine beside Chromium, whose HTTP/3 and QUIC stack
//! (neqo) shares no code with Chromium's or h3lab's.
//!
//! [`load_page`] loads one URL a number of times, with the same visits as
//! Chromium (cold, warm, repeat; `crate::visits`), and returns every load
//! as a [`PageLoad`] built from BiDi's `network.*` events (`events`).
//!
//! # Protocols
//!
//! | proto | preferences |
//! | --- | --- |
//! | h3 | `network.http.http3.enable`, and every origin in `network.http.http3.alt-svc-mapping-for-testing` (`HOST;h3=:PORT`): QUIC from the first request |
//! | auto | `network.http.http3.enable`: h3 only where `Alt-Svc` leads |
//! | h2 | HTTP/3 off |
//! | h1 | HTTP/3 and `network.http.http2.enabled` off |
//!
//! Every response's `protocol` must be the requested one; one that is not
//! fails the load with its URL, so an h3 load Firefox took over h2 (a
//! preference or trust problem) is never an h3 figure.
//!
//! # Trust
//!
//! [`Trust::CaFile`]: every certificate in the file is trusted as an
//! authority in the profile's certificate database (a private CA's chain
//! verifies), and the first is also pinned on every origin of the page in
//! `cert_override.txt` (by its SHA-256, as Firefox's own "accept the risk"
//! does: a self-signed server certificate); both are honoured over TCP and
//! QUIC. [`Trust::Insecure`]: WebDriver's `acceptInsecureCerts`, over both
//! too. [`Trust::System`]: Firefox's own roots, and the system's store as
//! h3lab's clients read it (`SSL_CERT_FILE`, `SSL_CERT_DIR`, else
//! `/etc/ssl/certs`), which Firefox on Linux does not read: a field run
//! trusts the same authorities in every loader. An SPKI pin is Chromium's
//! and is refused.
//!
//! # Names
//!
//! `--resolve` rules become host name overrides in Firefox's parent
//! process (`nsINativeDNSResolverOverride`, through
//! `--remote-allow-system-access`); every other name goes to the system's
//! resolver (a replay's DNS server on an emulated path). A request to a
//! host that is neither the page's nor a replay origin is listed as
//! skipped.
//!
//! # Definitions
//!
//! Zero is the document's `timings.requestTime`; every time is
//! milliseconds after it. `start_ms`: the request's `requestTime`;
//! `ttfb_ms`: `responseStart`; `end_ms`: `responseEnd`; `bytes`: the
//! response's `bodySize` (the body as it crossed the network); the load
//! and DOMContentLoaded events from `browsingContext.*`. BiDi names no
//! connection, so `connection` is null (unknown), and Firefox does not
//! say what blocks rendering, so a stylesheet is taken to. The HTTP cache
//! is off (preferences), so every resource crosses the network.

mod browser;
mod events;
mod profile;

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use h3lab_client::ResolveRule;
use h3lab_results::page::{PageLoad, PageReport};
use h3lab_results::{Loader, Proto, Visit};
use h3lab_site::replay::Origin;

pub use events::page_load_from_bidi_events;

use crate::chromium::{PagePerformance, Trust, PERFORMANCE_SCRIPT};
use crate::rules::PageRules;
use crate::visits::{self, Engine, Visits};
use browser::{Authorities, Browser, Setup};

/// How Firefox loads the page.
#[derive(Debug, Clone)]
pub struct FirefoxOptions {
    /// The browser; `None` finds `firefox` or `firefox-esr` on PATH.
    pub binary: Option<PathBuf>,
    /// The protocol every response must come over.
    pub proto: Proto,
    /// How the server's certificate is trusted.
    pub trust: Trust,
    /// Cold, warm or repeat.
    pub visit: Visit,
    /// Measured loads.
    pub loads: u32,
    /// A load without its load event and every response complete by then
    /// fails the run.
    pub navigation_timeout: Duration,
    /// Host names resolved to these addresses.
    pub resolve: Vec<ResolveRule>,
    /// Origins besides the page's that the system's resolver finds.
    pub dns_origins: Vec<Origin>,
    /// URLs the captured page recorded with an error status.
    pub recorded_errors: Vec<String>,
}

/// Loads `url` `options.loads` times and returns every load; `on_load` is
/// called after each, and stops the run early by breaking. Fails, and
/// stops, at the first load with a problem (see `events`); nothing is
/// retried.
pub fn load_page(
    url: &str,
    options: &FirefoxOptions,
    on_load: &mut dyn FnMut(&PageLoad) -> ControlFlow<()>,
) -> Result<PageReport> {
    let (host, port) = visits::page_origin(url, options.proto, options.visit)?;
    let binary = browser::find_binary(options.binary.as_deref())?;
    let setup = setup(&host, port, options)?;
    let engine = Firefox {
        url,
        options,
        binary: &binary,
        setup: &setup,
    };
    let visits = Visits {
        url,
        proto: options.proto,
        loader: Loader::Firefox,
        visit: options.visit,
        loads: options.loads,
    };
    visits::run(&engine, &visits, on_load)
}

/// The profile's files and scripts for a page on `host:port`.
fn setup(host: &str, port: u16, options: &FirefoxOptions) -> Result<Setup> {
    let mut origins = vec![(host.to_string(), port)];
    let others = (options.resolve.iter())
        .map(|rule| (rule.host.clone(), rule.port))
        .chain((options.dns_origins.iter()).map(|o| (o.host.clone(), o.port)));
    for origin in others {
        if !origins.contains(&origin) {
            origins.push(origin);
        }
    }
    let (cert_overrides, authorities) = match &options.trust {
        Trust::CaFile(path) => {
            let certificates = certificates(path)?;
            let authorities = Authorities {
                script: profile::authorities_script(certificates.iter().map(Vec::as_slice)),
                ca_file: Some(path.clone()),
            };
            let pin = profile::cert_overrides(&certificates[0], &origins);
            (Some(pin), Some(authorities))
        }
        Trust::SpkiSha256Base64(_) => bail!(
            "Firefox cannot pin a key's SPKI hash (--spki is Chromium's); pass the server's \
             certificate with --ca FILE"
        ),
        Trust::System => (None, system_authorities()),
        Trust::Insecure => (None, None),
    };
    Ok(Setup {
        user_js: profile::user_js(&profile::prefs(options.proto, &origins)),
        cert_overrides,
        authorities,
        host_names: profile::dns_override_script(&options.resolve)?,
        insecure: options.trust == Trust::Insecure,
    })
}

/// The DER of the first certificate in the PEM file `path`.
fn certificates(path: &Path) -> Result<Vec<Vec<u8>>> {
    let pem = std::fs::read(path).with_context(|| {
        format!(
            "cannot read the certificate {}; pass the server's PEM certificate",
            path.display()
        )
    })?;
    let certificates = rustls_pemfile::certs(&mut std::io::BufReader::new(&pem[..]))
        .map(|cert| cert.map(|cert| cert.to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("the PEM certificate {} is malformed", path.display()))?;
    if certificates.is_empty() {
        bail!(
            "{} holds no `BEGIN CERTIFICATE` block; pass a PEM certificate",
            path.display()
        );
    }
    Ok(certificates)
}

/// The system's store as h3lab's own clients read it (`SSL_CERT_FILE`,
/// `SSL_CERT_DIR`, else `/etc/ssl/certs`), which Firefox on Linux does not
/// read itself; `None` when it is empty.
fn system_authorities() -> Option<Authorities> {
    let roots = h3lab_client::system_roots();
    (!roots.is_empty()).then(|| Authorities {
        script: profile::authorities_script(roots.iter().map(|der| der.as_ref())),
        ca_file: None,
    })
}

/// Firefox as the visits launch it.
struct Firefox<'a> {
    url: &'a str,
    options: &'a FirefoxOptions,
    binary: &'a Path,
    setup: &'a Setup,
}

impl Engine for Firefox<'_> {
    type Browser = Browser;

    fn launch(&self, profile: Option<&Path>) -> Result<Browser> {
        Browser::launch(self.binary, self.setup, profile)
    }

    fn measure(&self, browser: &mut Browser) -> Result<PageLoad> {
        let timeout = self.options.navigation_timeout;
        let (events, performance) =
            browser.navigate(self.url, Some(PERFORMANCE_SCRIPT), timeout)?;
        let performance = PagePerformance::from_json(&performance);
        page_load_from_bidi_events(
            &events,
            self.options.proto,
            &performance,
            &self.page_rules(),
        )
        .map_err(|err| anyhow!(err))
    }

    fn blank(&self, browser: &mut Browser) -> Result<()> {
        let timeout = self.options.navigation_timeout;
        browser.navigate("about:blank", None, timeout).map(drop)
    }

    fn close(&self, browser: Browser) -> Result<()> {
        browser.close()
    }
}

impl Firefox<'_> {
    fn page_rules(&self) -> PageRules {
        let mapped = self.options.resolve.iter().map(|rule| rule.host.clone());
        let dns = self.options.dns_origins.iter().map(|o| o.host.clone());
        PageRules {
            reachable_hosts: mapped.chain(dns).collect(),
            recorded_errors: self.options.recorded_errors.clone(),
        }
    }
}
