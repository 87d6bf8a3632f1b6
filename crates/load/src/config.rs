//! What a load run does, and parsers for the flag values users type.

use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use bytes::Bytes;
use h3lab_client::{RequestTemplate, ResolveRule, Target, TlsOptions};
use h3lab_results::Proto;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::Method;

/// Requests a run issues when neither a count nor a duration is given.
pub(crate) const DEFAULT_REQUESTS: u64 = 200;

/// A complete, validated description of one load run.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// The URL to load.
    pub(crate) target: Target,
    /// The protocol: h1, h2, h3 or auto (h2 until Alt-Svc, then QUIC raced against TCP).
    pub proto: Proto,
    /// Concurrent connections.
    pub connections: usize,
    /// Concurrent streams per connection (always 1 for h1).
    pub streams: usize,
    /// Stop after this many measured requests (failed attempts count).
    pub requests: Option<u64>,
    /// Stop this long after the warm-up.
    pub duration: Option<Duration>,
    /// Open model: requests per second, paced from intended send times.
    pub rate: Option<f64>,
    /// HTTP method of every request.
    pub method: Method,
    /// Extra headers sent with every request.
    pub headers: HeaderMap,
    /// Body sent with every request.
    pub body: Bytes,
    /// Which server certificates to trust.
    pub tls: TlsOptions,
    /// Worker threads (at most one per connection is used).
    pub threads: usize,
    /// How long one request may take, from its send to the last body byte.
    pub request_timeout: Duration,
    /// How long connection set-up (TCP + TLS, or QUIC) may take.
    pub connect_timeout: Duration,
    /// Run this long first; those requests are reported apart.
    pub warmup: Duration,
    /// Show a progress bar on stderr (only on a terminal, only after ~2 s).
    pub progress: bool,
    /// h3: write one qlog file per connection into this directory.
    pub qlog: Option<std::path::PathBuf>,
    /// Host names resolved to these addresses instead of by DNS.
    pub resolve: Vec<ResolveRule>,
}

impl LoadConfig {
    /// The request every connection sends.
    pub(crate) fn request_template(&self) -> RequestTemplate {
        RequestTemplate::new(
            &self.target,
            self.method.clone(),
            self.headers.clone(),
            self.body.clone(),
        )
    }

    /// A closed-model run of `DEFAULT_REQUESTS` (200) over 10 connections with
    /// the protocol the URL's scheme suggests.
    pub fn new(target: Target) -> LoadConfig {
        let proto = target.scheme().default_proto();
        LoadConfig {
            target,
            proto,
            connections: 10,
            streams: 1,
            requests: None,
            duration: None,
            rate: None,
            method: Method::GET,
            headers: HeaderMap::new(),
            body: Bytes::new(),
            tls: TlsOptions::default(),
            threads: default_threads(),
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            warmup: Duration::ZERO,
            progress: false,
            qlog: None,
            resolve: Vec::new(),
        }
    }

    /// Checks combinations no single flag parser can see.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.target.check_proto(self.proto)?;
        if self.connections == 0 {
            bail!("--connections must be at least 1");
        }
        if self.streams == 0 {
            bail!("--max-concurrent-streams must be at least 1");
        }
        if self.proto == Proto::Auto && self.qlog.is_some() {
            bail!("--qlog logs one protocol's QUIC connections; use --proto h3 with it, not auto");
        }
        if self.proto == Proto::H1 && self.streams > 1 {
            bail!("h1 carries one request at a time per connection (no pipelining); use -m 1 or more --connections");
        }
        if self.threads == 0 {
            bail!("--threads must be at least 1");
        }
        if self.requests == Some(0) {
            bail!("--requests must be at least 1");
        }
        if self.duration == Some(Duration::ZERO) {
            bail!("--duration must be longer than zero, e.g. 10s");
        }
        if let Some(rate) = self.rate {
            if !(rate.is_finite() && rate > 0.0) {
                bail!("--rate must be a positive number of requests per second, e.g. 200");
            }
        }
        if self.request_timeout.is_zero() || self.connect_timeout.is_zero() {
            bail!("--timeout and --connect-timeout must be longer than zero");
        }
        Ok(())
    }

    /// Measured requests to issue when the user set no bound at all.
    pub(crate) fn request_limit(&self) -> Option<u64> {
        match (self.requests, self.duration) {
            (None, None) => Some(DEFAULT_REQUESTS),
            (requests, _) => requests,
        }
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Parses `10s`, `500ms`, `1m`, `1m30s`.
pub fn parse_duration(text: &str) -> anyhow::Result<Duration> {
    humantime::parse_duration(text)
        .map_err(|err| anyhow!("bad duration `{text}`: {err}; write it like 10s, 500ms or 1m"))
}

/// Parses `-H "Name: value"` into a header map entry.
pub fn parse_header(text: &str, headers: &mut HeaderMap) -> anyhow::Result<()> {
    let (name, value) = text
        .split_once(':')
        .with_context(|| format!("bad header `{text}`: write it as \"Name: value\""))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|err| anyhow!("bad header name in `{text}`: {err}"))?;
    let value = HeaderValue::from_str(value.trim())
        .map_err(|err| anyhow!("bad header value in `{text}`: {err}"))?;
    headers.append(name, value);
    Ok(())
}

/// `-d STRING` sends the string; `-d @FILE` sends the file's bytes.
pub fn parse_body(text: &str) -> anyhow::Result<Bytes> {
    match text.strip_prefix('@') {
        Some(path) => std::fs::read(path)
            .map(Bytes::from)
            .with_context(|| format!("cannot read body file `{path}` given as -d @{path}")),
        None => Ok(Bytes::copy_from_slice(text.as_bytes())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_familiar_units() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        let err = parse_duration("ten").unwrap_err().to_string();
        assert!(err.contains("like 10s"), "{err}");
    }

    #[test]
    fn headers_keep_repeats() {
        let mut headers = HeaderMap::new();
        parse_header("X-A: 1", &mut headers).unwrap();
        parse_header("x-a:2", &mut headers).unwrap();
        assert_eq!(headers.get_all("x-a").iter().count(), 2);
        let err = parse_header("no colon", &mut headers)
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"Name: value\""), "{err}");
    }

    #[test]
    fn body_from_string_or_file() {
        assert_eq!(parse_body("hello").unwrap(), Bytes::from_static(b"hello"));
        let path = std::env::temp_dir().join(format!("h3lab-body-{}", std::process::id()));
        std::fs::write(&path, b"from file").unwrap();
        let body = parse_body(&format!("@{}", path.display())).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(body, Bytes::from_static(b"from file"));
        assert!(parse_body("@/nonexistent/body").is_err());
    }

    #[test]
    fn default_bound_applies_only_without_count_or_duration() {
        let mut config = LoadConfig::new(Target::parse("https://127.0.0.1:1/").unwrap());
        assert_eq!(config.request_limit(), Some(DEFAULT_REQUESTS));
        config.duration = Some(Duration::from_secs(1));
        assert_eq!(config.request_limit(), None);
        config.requests = Some(7);
        assert_eq!(config.request_limit(), Some(7));
    }

    #[test]
    fn h1_refuses_multiple_streams() {
        let mut config = LoadConfig::new(Target::parse("http://127.0.0.1:1/").unwrap());
        config.streams = 4;
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("no pipelining"), "{err}");
    }
}
