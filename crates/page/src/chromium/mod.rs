//! Headless Chromium as a page loader, driven over the DevTools protocol.
//!
//! [`load_page`] loads one URL a number of times and returns every load as
//! a [`PageLoad`] with its waterfall, built from Chromium's own `Network.*`
//! events. Three parts, each testable alone:
//!
//! - `devtools`: the websocket client (send, call, read with a deadline);
//! - `browser`: finding and starting Chromium (its flags), attaching to a
//!   page, collecting one navigation's events;
//! - `events`: the sans-I/O part, [`page_load_from_events`], which turns
//!   those events into a [`PageLoad`] and decides whether the load failed.
//!
//! # Protocols
//!
//! | proto | flags |
//! | --- | --- |
//! | h3 | `--enable-quic --origin-to-force-quic-on=HOST:PORT` (QUIC from the first request, no Alt-Svc round) |
//! | h2 | `--disable-quic` |
//! | h1 | `--disable-quic --disable-http2` (ALPN offers only `http/1.1`) |
//! | auto | `--enable-quic --origin-to-force-quic-on=HOST:9`: h3 only where `Alt-Svc` leads, as on the web |
//!
//! Under auto a cold load is a first visit (a new profile). A repeat run
//! keeps one profile: an unmeasured first visit, then each load a new
//! launch that finds the origin's `Alt-Svc` remembered. Each launch is
//! closed with `Browser.close`, so the profile is written as a user's
//! would be.
//!
//! Every response's `response.protocol` must be the requested one (`h3`,
//! `h2`, `http/1.1`); one that is not fails the run with its URL. Only the
//! page's origin is forced onto QUIC, so under h3 a resource from another
//! origin comes over TCP and fails the run: that is deliberate, a page
//! measured "over h3" is all h3 or not measured.
//!
//! # Trust
//!
//! [`Trust::SpkiSha256Base64`] and [`Trust::CaFile`] pass
//! `--ignore-certificate-errors-spki-list`, which Chromium honours for TCP
//! and QUIC alike (a certificate whose key matches is accepted whatever its
//! issuer or names). [`Trust::Insecure`] passes
//! `--ignore-certificate-errors`, which Chromium applies to TCP only: over
//! QUIC an untrusted certificate still fails the handshake
//! (`net::ERR_QUIC_PROTOCOL_ERROR`; checked with Chromium 156 and a
//! self-signed certificate), so an h3 run with `Insecure` works only against
//! a certificate Chromium trusts anyway, and its failure says to pin the
//! certificate instead.
//!
//! # Visits
//!
//! Cold: every load starts a new browser with a new profile in a temporary
//! directory, so no connection, TLS session, QUIC token or cache survives.
//! Warm: one browser; a priming load (not reported), then each measured
//! load navigates `about:blank` and then the page again. Chromium keeps the
//! priming load's connections open (h1/h2 pooled sockets, the QUIC session)
//! and reuses them, so warm loads skip the handshake entirely rather than
//! resuming it (seen over h3 on loopback: every warm response had
//! `connectionReused: true`); only a connection that closed in between
//! (idle timeout) is opened again, resuming its TLS session. In both visits the HTTP cache is off
//! (`Network.setCacheDisabled`), so every resource crosses the network.
//!
//! # Definitions
//!
//! Zero is the document's `Network.requestWillBeSent` timestamp (the
//! DevTools monotonic clock); every time is milliseconds after it.
//! - `start_ms`: the resource's `requestWillBeSent`;
//! - `ttfb_ms`: `response.timing.requestTime` + `receiveHeadersEnd` (the
//!   response head arrived), else the `responseReceived` timestamp;
//! - `end_ms`: `loadingFinished`;
//! - `bytes`: the sum of `Network.dataReceived.dataLength`, the decoded
//!   body bytes (headers and framing excluded);
//! - `connection`: Chromium's `connectionId`, renumbered 1, 2, 3... in the
//!   order resources were requested; `stream` is null (Chromium does not
//!   say);
//! - `render_blocking`: `renderBlockingBehavior == "Blocking"`;
//! - `load_ms`: from the start of the navigation until every resource is
//!   complete: the latest of every resource's `end_ms` and the load event;
//! - browser timings: the load event and DOMContentLoaded from
//!   `Page.loadEventFired` / `Page.domContentEventFired`; Navigation
//!   Timing's `responseStart` and Largest Contentful Paint (a buffered
//!   `PerformanceObserver`, read after the load event and the next frame;
//!   null when nothing painted) moved from the page's `timeOrigin` onto the
//!   same zero (see `events`).
//!
//! # Cleanup
//!
//! Chromium runs in its own process group; that group is killed and the
//! profile removed when a load ends, fails or the caller unwinds. Chromium
//! also gets `PR_SET_PDEATHSIG`, so it dies with h3lab on a Ctrl-C the caller
//! does not handle or a kill.

mod browser;
mod devtools;
mod events;

use std::io::BufReader;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use base64::Engine as _;
use h3lab_client::ResolveRule;
use h3lab_results::page::{PageLoad, PageReport};
use h3lab_results::{Loader, Proto, Visit};
use h3lab_site::replay::Origin;
use sha2::{Digest, Sha256};

pub use events::{page_load_from_events, PagePerformance};

use browser::Browser;

use crate::visits::{self, Engine, Visits};

/// How Chromium loads the page.
#[derive(Debug, Clone)]
pub struct ChromiumOptions {
    /// The browser; `None` finds `chromium`, `chromium-browser` or
    /// `google-chrome` on PATH.
    pub binary: Option<PathBuf>,
    /// The protocol every response must come over.
    pub proto: Proto,
    /// How the server's certificate is trusted.
    pub trust: Trust,
    /// Cold (a new browser per load) or warm (one browser, primed).
    pub visit: Visit,
    /// Measured loads.
    pub loads: u32,
    /// A load without its load event and every response complete by then
    /// fails the run.
    pub navigation_timeout: Duration,
    /// Host names resolved to these addresses (Chromium's host resolver
    /// rules); every other name but the page's and `dns_origins`' resolves
    /// to nothing.
    pub resolve: Vec<ResolveRule>,
    /// Origins besides the page's that Chromium's own resolver finds, as
    /// a replay's are on a path whose DNS server publishes them: requests
    /// may go to them, and QUIC to them is treated as to the page's.
    pub dns_origins: Vec<Origin>,
    /// URLs the captured page recorded with an error status (a replay's
    /// 404s): answered so, they do not fail the load.
    pub recorded_errors: Vec<String>,
}

/// How Chromium trusts the server's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// Base64 SHA-256 of the certificate's SubjectPublicKeyInfo (what
    /// `h3lab serve` prints as `spki-sha256:`).
    SpkiSha256Base64(String),
    /// A PEM file whose first certificate is the server's (self-signed)
    /// certificate; its SPKI is pinned as above.
    CaFile(PathBuf),
    /// Accept any certificate over TCP (`--ignore-certificate-errors`).
    /// Chromium does not apply it to QUIC: h3 needs a trusted certificate
    /// or one of the pins above.
    Insecure,
    /// The system's authorities, as Chromium trusts them on Linux: its
    /// root store and NSS's database (`$HOME/.pki/nssdb`), where a private
    /// authority is added with `certutil`. Chromium does not read
    /// `SSL_CERT_FILE`.
    System,
}

impl Trust {
    /// The Chromium flag that carries this trust; none for the system's.
    fn flag(&self) -> Result<Option<String>> {
        Ok(Some(match self {
            Trust::System => return Ok(None),
            Trust::SpkiSha256Base64(spki) => {
                format!("--ignore-certificate-errors-spki-list={spki}")
            }
            Trust::CaFile(path) => {
                let pem = std::fs::read(path).with_context(|| {
                    format!(
                        "cannot read the certificate {}; pass the server's PEM certificate",
                        path.display()
                    )
                })?;
                let spki = spki_sha256_base64(&pem)
                    .with_context(|| format!("{} holds no usable certificate", path.display()))?;
                format!("--ignore-certificate-errors-spki-list={spki}")
            }
            Trust::Insecure => "--ignore-certificate-errors".to_string(),
        }))
    }
}

/// Base64 SHA-256 of the SubjectPublicKeyInfo of the first certificate in
/// `pem`: Chromium's SPKI pin.
pub fn spki_sha256_base64(pem: &[u8]) -> Result<String> {
    let cert = rustls_pemfile::certs(&mut BufReader::new(pem))
        .next()
        .ok_or_else(|| anyhow!("no `BEGIN CERTIFICATE` block; pass a PEM certificate"))?
        .context("the PEM certificate is malformed")?;
    let parsed = webpki::EndEntityCert::try_from(&cert)
        .map_err(|err| anyhow!("the certificate cannot be parsed: {err}"))?;
    let spki = parsed.subject_public_key_info();
    Ok(base64::engine::general_purpose::STANDARD.encode(Sha256::digest(spki.as_ref())))
}

/// Run in the page after its load event: Navigation Timing's
/// `requestStart` and `responseStart` and the latest Largest Contentful
/// Paint candidate, two frames later (so what rendering requests, such as
/// CSS background images, has been requested too). A buffered observer gets the candidates so far in its
/// first callback (Chromium does not hand them to `takeRecords`); a page
/// that painted none gets no callback, hence the 500 ms fallback to null.
pub(crate) const PERFORMANCE_SCRIPT: &str = r#"(async () => {
  const frame = () => new Promise(resolve => {
    const hidden = setTimeout(resolve, 200);
    requestAnimationFrame(() => { clearTimeout(hidden); resolve(); });
  });
  await frame();
  await frame();
  const lcp = await new Promise(resolve => {
    const none = setTimeout(() => resolve(null), 500);
    try {
      new PerformanceObserver((list, observer) => {
        const entries = list.getEntries();
        if (!entries.length) return;
        clearTimeout(none);
        observer.disconnect();
        resolve(entries[entries.length - 1].startTime);
      }).observe({type: 'largest-contentful-paint', buffered: true});
    } catch (e) {
      clearTimeout(none);
      resolve(null);
    }
  });
  const nav = performance.getEntriesByType('navigation')[0] || {};
  return {requestStart: nav.requestStart ?? null, responseStart: nav.responseStart ?? null, lcp};
})()"#;

/// Loads `url` `options.loads` times and returns every load; `on_load` is
/// called after each (for progress), and stops the run early by breaking.
///
/// Fails, and stops, at the first load where a response came over another
/// protocol than `options.proto`, a request failed, a response had a
/// status of 400 or more, or the load did not complete within
/// `options.navigation_timeout`. Nothing is retried.
pub fn load_page(
    url: &str,
    options: &ChromiumOptions,
    on_load: &mut dyn FnMut(&PageLoad) -> ControlFlow<()>,
) -> Result<PageReport> {
    let (host, port) = visits::page_origin(url, options.proto, options.visit)?;
    let host = host.as_str();
    let binary = browser::find_binary(options.binary.as_deref())?;
    let mut quic_origins = vec![format!("{host}:{port}")];
    quic_origins.extend(
        (options.resolve.iter())
            .filter(|rule| !rule.host.eq_ignore_ascii_case(host))
            .map(|rule| format!("{}:{}", rule.host, rule.port)),
    );
    quic_origins.extend(
        (options.dns_origins.iter())
            .filter(|origin| !origin.host.eq_ignore_ascii_case(host))
            .map(|origin| format!("{}:{}", origin.host, origin.port)),
    );
    let mut flags = browser::protocol_flags(options.proto, &quic_origins);
    flags.extend(options.trust.flag()?);
    flags.push(host_resolver_rules(
        host,
        &options.resolve,
        &options.dns_hosts(),
    ));

    let report = run(url, options, &binary, &flags, on_load);
    match (&options.trust, options.proto, report) {
        (Trust::Insecure, Proto::H3, Err(err))
            if format!("{err:#}").contains("ERR_QUIC_PROTOCOL_ERROR") =>
        {
            Err(err.context(
                "Chromium does not apply --ignore-certificate-errors to QUIC, so an h3 run \
                 cannot use a certificate Chromium does not trust; pin the server's key: \
                 pass its certificate (--ca FILE) or its SPKI hash (--spki BASE64)",
            ))
        }
        (_, _, report) => report,
    }
}

impl ChromiumOptions {
    fn page_rules(&self) -> events::PageRules {
        let mapped = self.resolve.iter().map(|rule| rule.host.clone());
        events::PageRules {
            reachable_hosts: mapped.chain(self.dns_hosts()).collect(),
            recorded_errors: self.recorded_errors.clone(),
        }
    }

    fn dns_hosts(&self) -> Vec<String> {
        self.dns_origins.iter().map(|o| o.host.clone()).collect()
    }
}

/// `--resolve` rules as Chromium's host mapping, and every other name
/// resolving to nothing, so no request leaves for a third party, but
/// those left to DNS: the page's host unless a rule maps it, and
/// `dns_hosts`. Chromium maps a host to an address, not a port to a port.
fn host_resolver_rules(page_host: &str, resolve: &[ResolveRule], dns_hosts: &[String]) -> String {
    let mut rules: Vec<String> = resolve
        .iter()
        .map(|rule| format!("MAP {} {}", rule.host, rule.destination()))
        .collect();
    // The first MAP that matches wins. EXCLUDE takes a host out of every
    // rule, its own MAP too, so it is only for hosts left to DNS.
    rules.push("MAP * ~NOTFOUND".to_string());
    let mut left_to_dns: Vec<&str> = Vec::new();
    for host in std::iter::once(page_host).chain(dns_hosts.iter().map(String::as_str)) {
        let mapped = (resolve.iter()).any(|rule| rule.host.eq_ignore_ascii_case(host));
        let listed = left_to_dns.iter().any(|h| h.eq_ignore_ascii_case(host));
        if !mapped && !listed {
            left_to_dns.push(host);
        }
    }
    rules.extend(left_to_dns.iter().map(|host| format!("EXCLUDE {host}")));
    format!("--host-resolver-rules={}", rules.join(", "))
}

/// The loads of [`load_page`], once its arguments are checked.
fn run(
    url: &str,
    options: &ChromiumOptions,
    binary: &Path,
    flags: &[String],
    on_load: &mut dyn FnMut(&PageLoad) -> ControlFlow<()>,
) -> Result<PageReport> {
    let engine = Chromium {
        url,
        options,
        binary,
        flags,
    };
    let visits = Visits {
        url,
        proto: options.proto,
        loader: Loader::Chromium,
        visit: options.visit,
        loads: options.loads,
    };
    visits::run(&engine, &visits, on_load)
}

/// Chromium as the visits launch it: one binary, one set of flags.
struct Chromium<'a> {
    url: &'a str,
    options: &'a ChromiumOptions,
    binary: &'a Path,
    flags: &'a [String],
}

impl Engine for Chromium<'_> {
    type Browser = Browser;

    fn launch(&self, profile: Option<&Path>) -> Result<Browser> {
        match profile {
            Some(dir) => Browser::launch_in(self.binary, self.flags, dir),
            None => Browser::launch(self.binary, self.flags),
        }
    }

    fn measure(&self, browser: &mut Browser) -> Result<PageLoad> {
        measure(browser, self.url, self.options)
    }

    fn blank(&self, browser: &mut Browser) -> Result<()> {
        let timeout = self.options.navigation_timeout;
        browser.navigate("about:blank", None, timeout).map(drop)
    }

    fn close(&self, browser: Browser) -> Result<()> {
        browser.close()
    }
}

/// One navigation to `url`, as a [`PageLoad`].
fn measure(browser: &mut Browser, url: &str, options: &ChromiumOptions) -> Result<PageLoad> {
    let (events, performance) =
        browser.navigate(url, Some(PERFORMANCE_SCRIPT), options.navigation_timeout)?;
    let performance = PagePerformance::from_json(&performance);
    page_load_from_events(&events, options.proto, &performance, &options.page_rules())
        .map_err(|err| anyhow!(err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_flags_force_quic_or_turn_it_off() {
        let origins = ["127.0.0.1:4433".to_string()];
        assert_eq!(
            browser::protocol_flags(Proto::H3, &origins),
            ["--enable-quic", "--origin-to-force-quic-on=127.0.0.1:4433"]
        );
        assert_eq!(
            browser::protocol_flags(Proto::H2, &origins),
            ["--disable-quic"]
        );
        assert_eq!(
            browser::protocol_flags(Proto::H1, &origins),
            ["--disable-quic", "--disable-http2"]
        );
    }

    #[test]
    fn every_origin_of_a_replayed_page_is_forced_onto_quic_and_mapped_to_its_address() {
        let origins = [
            "www.example.test:443".to_string(),
            "img.example.test:443".to_string(),
        ];
        assert_eq!(
            browser::protocol_flags(Proto::H3, &origins)[1],
            "--origin-to-force-quic-on=www.example.test:443,img.example.test:443"
        );
        assert_eq!(
            browser::protocol_flags(Proto::Auto, &origins)[1],
            "--origin-to-force-quic-on=www.example.test:9,img.example.test:9"
        );
        let resolve = [
            "www.example.test:443:198.18.0.10".parse().unwrap(),
            "img.example.test:443:::1".parse().unwrap(),
            "static.example.test:443:127.0.0.12:4433".parse().unwrap(),
        ];
        assert_eq!(
            host_resolver_rules("www.example.test", &resolve, &[]),
            "--host-resolver-rules=MAP www.example.test 198.18.0.10, MAP img.example.test [::1], \
             MAP static.example.test 127.0.0.12:4433, MAP * ~NOTFOUND"
        );
        assert_eq!(
            host_resolver_rules("127.0.0.1", &resolve[1..2], &[]),
            "--host-resolver-rules=MAP img.example.test [::1], MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
        );
    }

    #[test]
    fn a_replays_origins_left_to_dns_are_excluded_from_the_catch_all_once_each() {
        let dns_hosts = [
            "WWW.example.test".to_string(),
            "img.example.test".to_string(),
        ];
        assert_eq!(
            host_resolver_rules("www.example.test", &[], &dns_hosts),
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE www.example.test, \
             EXCLUDE img.example.test"
        );
        let mapped = ["img.example.test:443:198.18.0.11".parse().unwrap()];
        assert_eq!(
            host_resolver_rules("www.example.test", &mapped, &dns_hosts),
            "--host-resolver-rules=MAP img.example.test 198.18.0.11, MAP * ~NOTFOUND, \
             EXCLUDE www.example.test"
        );
    }

    #[test]
    fn a_missing_binary_says_how_to_install_one() {
        let err = browser::find_binary(Some("/no/such/chromium".as_ref())).unwrap_err();
        assert!(err.to_string().contains("--chromium PATH"), "{err}");
    }

    #[test]
    fn the_spki_pin_is_the_hash_of_the_certificates_public_key() {
        use rcgen::PublicKeyData;
        let generated = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let expected = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(
            generated.signing_key.subject_public_key_info(),
        ));
        let pem = generated.cert.pem();
        assert_eq!(spki_sha256_base64(pem.as_bytes()).unwrap(), expected);
    }

    #[test]
    fn a_bad_certificate_file_is_named() {
        let err = Trust::CaFile("/no/such/cert.pem".into())
            .flag()
            .unwrap_err();
        assert!(err.to_string().contains("/no/such/cert.pem"), "{err}");
        let err = spki_sha256_base64(b"not a certificate").unwrap_err();
        assert!(err.to_string().contains("BEGIN CERTIFICATE"), "{err}");
    }

    #[test]
    fn an_http_url_is_refused_for_h2_and_h3() {
        let options = ChromiumOptions {
            binary: Some("/no/such/chromium".into()),
            proto: Proto::H3,
            trust: Trust::Insecure,
            visit: Visit::Cold,
            loads: 1,
            navigation_timeout: Duration::from_secs(1),
            resolve: Vec::new(),
            dns_origins: Vec::new(),
            recorded_errors: Vec::new(),
        };
        let err = load_page("http://127.0.0.1:1/", &options, &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap_err();
        assert!(err.to_string().contains("needs an https:// URL"), "{err}");
    }
}
