//! `h3lab page`'s flags (behind the `clap` feature), and the way back:
//! [`CommandFlags::to_args`] gives the flags that parse to the same value, so
//! a bench cell starts the page loader from a typed value. Also what the
//! flags ask of each loader, a replay site's included.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use h3lab_client::{NameServer, ResolveRule, TlsOptions};
use h3lab_results::flags::{self, CommandFlags};
use h3lab_results::{Loader, Proto, Visit};
use h3lab_site::replay::Replay;
use serde::Serialize;

use crate::chromium::{ChromiumOptions, Trust};
use crate::firefox::FirefoxOptions;
use crate::loader::{LoaderOptions, RecordedPage};

/// The flags of `h3lab page URL`.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize)]
pub struct PageArgs {
    /// The page, e.g. https://127.0.0.1:8443/ (from `h3lab serve --site DIR`).
    pub url: String,
    /// Protocol of every request; auto: h2 until the page's Alt-Svc, then
    /// QUIC raced against TCP, as browsers do (docs/discovery.md).
    #[arg(long, value_enum, default_value = "h3")]
    pub proto: Proto,
    /// builtin: h3lab's browser-like loader (no browser needed); chromium:
    /// real headless Chromium over the DevTools protocol; firefox: real
    /// headless Firefox over WebDriver BiDi.
    #[arg(long, value_enum, default_value = "builtin")]
    pub browser: Loader,
    /// cold: new connections (a new browser and profile) for every load;
    /// warm: one priming load, then loads that resume the session (0-RTT
    /// on h3 with the built-in loader) or reload in the same browser;
    /// repeat: one unmeasured load, then new connections that keep what it
    /// learned (auto's returning visit).
    #[arg(long, value_enum, default_value = "cold")]
    pub visit: Visit,
    /// Built-in loader: send a browser's request headers, Chromium's
    /// recorded set with a 1 kB cookie, so that header compression shows on
    /// the wire (docs/costs.md). Chromium sends its own.
    #[arg(long)]
    pub browser_headers: bool,
    /// Page loads to measure.
    #[arg(short = 'n', long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub loads: u32,
    /// Accept any server certificate.
    #[arg(long)]
    pub insecure: bool,
    /// Trust the certificate(s) in this PEM file too, beside the system's
    /// certificate authorities (for Chromium: its first certificate's key
    /// is pinned).
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// Chromium only: trust the key with this base64 SHA-256 SPKI pin (what
    /// `h3lab serve` prints as spki-sha256).
    #[arg(long, value_name = "BASE64")]
    pub spki: Option<String>,
    /// Chromium only: the browser binary (default: chromium on PATH).
    #[arg(long, value_name = "PATH")]
    pub chromium: Option<PathBuf>,
    /// Firefox only: the browser binary (default: firefox or firefox-esr
    /// on PATH).
    #[arg(long, value_name = "PATH")]
    pub firefox: Option<PathBuf>,
    /// Connect to ADDR for HOST on PORT, with TLS and the requests still
    /// naming HOST (curl's convention; repeatable), e.g. for a replay
    /// site's origins: www.example.com:443:127.0.0.10.
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    #[serde(serialize_with = "flags::display_each")]
    pub resolve: Vec<ResolveRule>,
    /// The replay site (`h3lab site from-har`) the page comes from. Each
    /// origin without a --resolve rule goes to its own address: in order,
    /// those of $H3LAB_SERVER_IPS (`h3lab net run --server-addresses N`),
    /// else 127.0.0.10 on. Responses it recorded with an error status (a
    /// missing image) do not fail a load.
    #[arg(long, value_name = "DIR")]
    pub replay: Option<PathBuf>,
    /// With --replay: find the origins through DNS (the system's
    /// resolver, or Chromium's own) instead of giving each an address,
    /// for a network whose DNS server publishes them, as a bench
    /// profile's `dns` runs one. Under auto their HTTPS records count.
    #[arg(long, requires = "replay")]
    pub dns_origins: bool,
    /// Connection set-up timeout (built-in loader).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration")]
    pub connect_timeout: Duration,
    /// One page load may take this long before the run fails.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "flags::duration")]
    pub timeout: Duration,
    /// Write every load as JSON (schema h3lab.page/1, docs/results-schema.md).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write every load's waterfall as HAR 1.2.
    #[arg(long, value_name = "FILE")]
    pub har: Option<PathBuf>,
    /// Print only the summary line.
    #[arg(short, long)]
    pub quiet: bool,
}

impl CommandFlags for PageArgs {
    const COMMAND: &'static str = "h3lab page";
}

impl PageArgs {
    /// `h3lab page URL` with every other flag at its default.
    pub fn new(url: &str) -> PageArgs {
        PageArgs::parse_flags([url]).expect("a URL alone is a valid `h3lab page`")
    }

    /// Refuses flags that do not go together, naming the fix.
    pub fn check(&self) -> anyhow::Result<()> {
        let chromium_only = [
            ("--spki", self.spki.is_some()),
            ("--chromium", self.chromium.is_some()),
        ];
        for (flag, given) in chromium_only {
            if given && self.browser != Loader::Chromium {
                anyhow::bail!("{flag} applies to --browser chromium only");
            }
        }
        if self.firefox.is_some() && self.browser != Loader::Firefox {
            anyhow::bail!("--firefox applies to --browser firefox only");
        }
        if self.browser_headers && self.browser != Loader::Builtin {
            anyhow::bail!(
                "--browser-headers applies to --browser builtin: a browser sends its own headers"
            );
        }
        if self.insecure && (self.ca.is_some() || self.spki.is_some()) {
            anyhow::bail!("--insecure trusts any certificate; drop it, or drop --ca/--spki");
        }
        Ok(())
    }

    /// Adds a `--resolve` rule for each origin of the replay that has
    /// none: its own address, in order (those of `$H3LAB_SERVER_IPS` on an
    /// emulated path). With `--dns-origins` DNS finds them instead.
    pub fn resolve_replay_origins(&mut self, replay: &Replay) -> anyhow::Result<()> {
        if self.dns_origins {
            return Ok(());
        }
        let server_ips = std::env::var(linkem::env::SERVER_IPS).ok();
        let server_ips = server_ips.as_deref().map(parse_server_ips).transpose()?;
        let addresses = replay.origin_addresses(server_ips.as_deref())?;
        for (origin, addr) in replay.origins.iter().zip(addresses) {
            let ruled =
                (self.resolve.iter()).any(|r| r.host == origin.host && r.port == origin.port);
            if !ruled {
                self.resolve.push(ResolveRule {
                    host: origin.host.clone(),
                    port: origin.port,
                    addr,
                    connect_port: None,
                });
            }
        }
        Ok(())
    }

    /// What the flags ask of the built-in loader, for the page or its replay.
    pub fn loader_options(&self, replay: Option<&Replay>) -> LoaderOptions {
        LoaderOptions {
            proto: self.proto,
            tls: TlsOptions {
                insecure: self.insecure,
                ca_file: self.ca.clone(),
            },
            visit: self.visit,
            loads: self.loads,
            connect_timeout: self.connect_timeout,
            load_timeout: self.timeout,
            h3_discovery: None,
            resolve: self.resolve.clone(),
            name_server: NameServer::System,
            recorded_errors: replay.map(Replay::recorded_errors).unwrap_or_default(),
            recorded: replay.map(|replay| RecordedPage {
                urls: replay.responses.iter().map(|r| r.url.clone()).collect(),
                initiated: replay.initiated(),
            }),
            browser_headers: self.browser_headers,
        }
    }

    /// What the flags ask of Chromium, for the page or its replay.
    pub fn chromium_options(&self, replay: Option<&Replay>) -> ChromiumOptions {
        ChromiumOptions {
            binary: self.chromium.clone(),
            proto: self.proto,
            trust: self.trust(),
            visit: self.visit,
            loads: self.loads,
            navigation_timeout: self.timeout,
            resolve: self.resolve.clone(),
            dns_origins: match (replay, self.dns_origins) {
                (Some(replay), true) => replay.origins.clone(),
                _ => Vec::new(),
            },
            recorded_errors: replay.map(Replay::recorded_errors).unwrap_or_default(),
        }
    }

    /// What the flags ask of Firefox, for the page or its replay.
    pub fn firefox_options(&self, replay: Option<&Replay>) -> FirefoxOptions {
        let chromium = self.chromium_options(replay);
        FirefoxOptions {
            binary: self.firefox.clone(),
            proto: chromium.proto,
            trust: chromium.trust,
            visit: chromium.visit,
            loads: chromium.loads,
            navigation_timeout: chromium.navigation_timeout,
            resolve: chromium.resolve,
            dns_origins: chromium.dns_origins,
            recorded_errors: chromium.recorded_errors,
        }
    }

    /// How a browser trusts the server: the narrowest trust given wins.
    fn trust(&self) -> Trust {
        match (&self.spki, &self.ca, self.insecure) {
            (Some(spki), _, _) => Trust::SpkiSha256Base64(spki.clone()),
            (None, Some(ca), _) => Trust::CaFile(ca.clone()),
            (None, None, true) => Trust::Insecure,
            (None, None, false) => Trust::System,
        }
    }
}

/// The server's extra addresses an emulated path exports
/// (`h3lab net run --server-addresses N`), comma-separated.
fn parse_server_ips(list: &str) -> anyhow::Result<Vec<IpAddr>> {
    let parsed = list.split(',').map(|ip| {
        (ip.trim().parse())
            .with_context(|| format!("H3LAB_SERVER_IPS holds `{ip}`, not an IP address"))
    });
    parsed.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A replay site's manifest with these origins (on port 443) and no
    /// responses.
    fn replay_of(origins: &[&str]) -> Replay {
        let origins: Vec<_> = (origins.iter())
            .map(|host| serde_json::json!({"origin": format!("https://{host}"), "host": host, "port": 443}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "schema": "h3lab.replay/1", "source": "test", "page": "https://a.test/",
            "think": "none", "recorded": {"tool": "test"}, "origins": origins,
            "responses": [], "skipped": [],
        }))
        .unwrap()
    }

    #[test]
    fn each_replayed_origin_without_a_rule_gets_its_own_address() {
        let mut args = PageArgs::new("https://a.test/");
        args.resolve = vec!["b.test:443:10.0.0.1".parse().unwrap()];
        args.resolve_replay_origins(&replay_of(&["a.test", "b.test", "c.test"]))
            .unwrap();
        let rules: Vec<String> = args.resolve.iter().map(ToString::to_string).collect();
        assert_eq!(
            rules,
            [
                "b.test:443:10.0.0.1",
                "a.test:443:127.0.0.10",
                "c.test:443:127.0.0.12"
            ]
        );
    }

    #[test]
    fn origins_found_by_dns_get_no_rule_and_chromium_leaves_them_to_its_resolver() {
        let replay = replay_of(&["a.test", "b.test"]);
        let mut args =
            PageArgs::parse_flags(["https://a.test/", "--replay", "r", "--dns-origins"]).unwrap();
        args.resolve_replay_origins(&replay).unwrap();
        assert!(args.resolve.is_empty(), "{:?}", args.resolve);
        let hosts: Vec<String> = (args.chromium_options(Some(&replay)).dns_origins.iter())
            .map(|origin| format!("{}:{}", origin.host, origin.port))
            .collect();
        assert_eq!(hosts, ["a.test:443", "b.test:443"]);
        let without_replay = PageArgs::parse_flags(["https://a.test/", "--dns-origins"]);
        let err = without_replay.unwrap_err().to_string();
        assert!(err.contains("--replay"), "{err}");
    }

    #[test]
    fn server_ips_are_read_or_the_bad_one_named() {
        let ips = parse_server_ips("198.18.0.10, 198.18.0.11").unwrap();
        assert_eq!(
            ips,
            [
                IpAddr::from([198, 18, 0, 10]),
                IpAddr::from([198, 18, 0, 11])
            ]
        );
        let err = parse_server_ips("198.18.0.10,nope")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`nope`"), "{err}");
    }

    #[test]
    fn chromium_trusts_the_pin_then_the_ca_then_anything_if_insecure() {
        let mut args = PageArgs::new("https://a.test/");
        assert_eq!(args.trust(), Trust::System);
        args.insecure = true;
        assert_eq!(args.trust(), Trust::Insecure);
        args.ca = Some(PathBuf::from("ca.pem"));
        assert_eq!(args.trust(), Trust::CaFile(PathBuf::from("ca.pem")));
        args.spki = Some("AAAA".to_string());
        assert_eq!(args.trust(), Trust::SpkiSha256Base64("AAAA".to_string()));
    }

    fn round_trip(args: &PageArgs) -> PageArgs {
        args.round_trip().unwrap()
    }

    #[test]
    fn defaults_and_every_flag_parse_back_to_themselves() {
        let defaults = PageArgs::new("https://127.0.0.1:8443/");
        let every = PageArgs {
            url: "https://www.example.test/-page".to_string(),
            proto: Proto::Auto,
            browser: Loader::Chromium,
            visit: Visit::Repeat,
            browser_headers: true,
            loads: 9,
            insecure: true,
            ca: Some(PathBuf::from("/tmp/ca.pem")),
            spki: Some("AAAA+/=".to_string()),
            chromium: Some(PathBuf::from("/usr/bin/chromium")),
            firefox: Some(PathBuf::from("/usr/bin/firefox-esr")),
            resolve: vec!["www.example.test:443:127.0.0.10".parse().unwrap()],
            replay: Some(PathBuf::from("replay dir")),
            dns_origins: true,
            connect_timeout: Duration::from_millis(2_500),
            timeout: Duration::from_secs(120),
            json: Some(PathBuf::from("out.json")),
            har: Some(PathBuf::from("out.har")),
            quiet: true,
        };
        for args in [defaults, every] {
            assert_eq!(round_trip(&args), args);
        }
    }

    #[test]
    fn flags_that_do_not_go_together_are_refused() {
        let mut args = PageArgs::new("https://a/");
        args.spki = Some("AAAA".to_string());
        let err = args.check().unwrap_err().to_string();
        assert!(
            err.contains("--spki applies to --browser chromium only"),
            "{err}"
        );
        let mut args = PageArgs::new("https://a/");
        args.firefox = Some(PathBuf::from("/usr/bin/firefox"));
        let err = args.check().unwrap_err().to_string();
        assert!(
            err.contains("--firefox applies to --browser firefox"),
            "{err}"
        );
        args.browser = Loader::Firefox;
        args.check().unwrap();
        args.browser_headers = true;
        let err = args.check().unwrap_err().to_string();
        assert!(err.contains("a browser sends its own headers"), "{err}");
    }
}
