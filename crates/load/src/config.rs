//! What a load run does, and parsers for the flag values users type.

use std::time::{Duration, SystemTime};

use anyhow::{anyhow, bail, Context};
use bytes::Bytes;
use h3lab_client::{RequestNumbers, RequestTemplate, ResolveRule, Target, TlsOptions};
use h3lab_results::load::Shard;
use h3lab_results::Proto;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::Method;

/// Requests a run issues when neither a count nor a duration is given.
pub(crate) const DEFAULT_REQUESTS: u64 = 200;

/// The longest `--linger`: the h1/h2 loop sleeps at most 50 ms at a time,
/// so that it sees Ctrl-C, and a hold is one sleep.
pub(crate) const MAX_LINGER: Duration = Duration::from_millis(50);

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
    /// `--browser-headers`: a browser's request headers as well, with a
    /// 1 kB cookie and ids that change per request (`headers` win).
    pub browser_headers: bool,
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
    /// `--shard I/N`: this process runs part I of a test split N ways;
    /// connections, requests and rate above are the whole test's.
    pub shard: Option<Shard>,
    /// `--start-at`: begin at this wall-clock instant, as every worker does.
    pub start_at: Option<StartAt>,
    /// `--allow-heavy`: no caps against a server outside this machine
    /// (`politeness`).
    pub allow_heavy: bool,
    /// `--linger`: h1/h2 hold out this long before each wait while
    /// responses are due, and time reads by the kernel's receive stamps.
    pub linger: Option<Duration>,
}

/// An unsplit test: the one part of one.
const WHOLE: Shard = Shard { index: 0, count: 1 };

/// A wall-clock start shared by the workers of a split test.
#[derive(Debug, Clone, PartialEq)]
pub struct StartAt {
    /// The instant, as the system clock counts it.
    pub at: SystemTime,
    /// The same, in RFC 3339 (UTC), as reports carry it.
    pub text: String,
}

/// The RFC 3339 text, as `--start-at` reads it.
impl std::fmt::Display for StartAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// This process's part of the test.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Part {
    pub connections: usize,
    /// Measured requests to issue; `None` when bounded by time only.
    pub requests: Option<u64>,
    /// Open model: this part's requests per second.
    pub rate: Option<f64>,
    /// Open model: the threads of all shards are numbered in turn across
    /// shards and then threads, and each one's first send is offset by its
    /// number: this part's thread `t` starts at send slot `first_slot +
    /// stride * t`, one slot being `1 / whole_rate` seconds. The sends are
    /// evenly spaced when connections divide evenly, close to it otherwise.
    pub first_slot: u64,
    pub stride: u64,
    pub whole_rate: Option<f64>,
}

impl LoadConfig {
    /// The request every connection sends.
    pub(crate) fn request_template(&self) -> RequestTemplate {
        let template = RequestTemplate::new(
            &self.target,
            self.method.clone(),
            self.headers.clone(),
            self.body.clone(),
        );
        match self.browser_headers {
            true => template.with_browser_headers(&RequestNumbers::default()),
            false => template,
        }
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
            browser_headers: false,
            body: Bytes::new(),
            tls: TlsOptions::default(),
            threads: default_threads(),
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            warmup: Duration::ZERO,
            progress: false,
            qlog: None,
            resolve: Vec::new(),
            shard: None,
            start_at: None,
            allow_heavy: false,
            linger: None,
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
        self.validate_linger()?;
        self.validate_split()
    }

    fn validate_linger(&self) -> anyhow::Result<()> {
        let Some(linger) = self.linger else {
            return Ok(());
        };
        if !matches!(self.proto, Proto::H1 | Proto::H2) {
            bail!(
                "--linger holds out for responses on h1 and h2 (the TCP engine); {} reads each \
                 response as it arrives: leave --linger out, or use --proto h1 or h2",
                self.proto.name()
            );
        }
        if linger < Duration::from_micros(1) || linger > MAX_LINGER {
            bail!(
                "--linger {} is out of range: give 1us to {}, e.g. 100us (leave it out to \
                 read each response as it arrives)",
                humantime::format_duration(linger),
                humantime::format_duration(MAX_LINGER)
            );
        }
        Ok(())
    }

    fn validate_split(&self) -> anyhow::Result<()> {
        if let Some(start) = &self.start_at {
            if let Ok(past) = SystemTime::now().duration_since(start.at) {
                bail!(
                    "--start-at {} is {:.1} s in the past: give every worker the same time a \
                     little in the future",
                    start.text,
                    past.as_secs_f64()
                );
            }
        }
        let Some(shard) = self.shard else {
            return Ok(());
        };
        let count = u64::from(shard.count);
        if (self.connections as u64) < count {
            bail!(
                "-c {} connections cannot be split into {count} shards: each worker needs at \
                 least one; raise -c to {count} or more",
                self.connections
            );
        }
        if let (Some(requests), (_, Some(shares))) = (self.request_limit(), self.shard_shares()) {
            if shares.contains(&0) {
                bail!(
                    "-n {requests} requests cannot be split into {count} shards: shares follow \
                     the connections, and one worker would get none; raise -n to {} or more",
                    self.connections
                );
            }
        }
        Ok(())
    }

    /// This process's part: the whole test, or its shard's share of the
    /// connections, and of the requests and rate in proportion to them.
    /// The shares of all shards add up exactly to the whole.
    pub(crate) fn part(&self) -> Part {
        let shard = self.shard.unwrap_or(WHOLE);
        let index = shard.index as usize;
        let (connections, requests) = self.shard_shares();
        let own = connections[index];
        Part {
            connections: own as usize,
            requests: requests.map(|requests| requests[index]),
            rate: self
                .rate
                .map(|rate| rate * own as f64 / self.connections as f64),
            first_slot: u64::from(shard.index),
            stride: u64::from(shard.count),
            whole_rate: self.rate,
        }
    }

    /// Every shard's connections, and its measured requests (if counted)
    /// in proportion to them.
    fn shard_shares(&self) -> (Vec<u64>, Option<Vec<u64>>) {
        let whole = self.connections as u64;
        let count = self.shard.unwrap_or(WHOLE).count as usize;
        let connections = spread(whole, count);
        let requests = self
            .request_limit()
            .map(|limit| spread_in_proportion(limit, &connections, whole));
        (connections, requests)
    }

    /// Measured requests to issue when the user set no bound at all.
    pub(crate) fn request_limit(&self) -> Option<u64> {
        match (self.requests, self.duration) {
            (None, None) => Some(DEFAULT_REQUESTS),
            (requests, _) => requests,
        }
    }
}

/// `total` split into `parts` near-equal whole numbers, the larger first.
pub(crate) fn spread(total: u64, parts: usize) -> Vec<u64> {
    let parts_u64 = parts as u64;
    (0..parts_u64)
        .map(|i| total / parts_u64 + u64::from(i < total % parts_u64))
        .collect()
}

/// `total` split like `weights` (which sum to `weight_sum`), exactly.
pub(crate) fn spread_in_proportion(total: u64, weights: &[u64], weight_sum: u64) -> Vec<u64> {
    let mut shares: Vec<u64> = weights.iter().map(|w| total * w / weight_sum).collect();
    let mut left = total - shares.iter().sum::<u64>();
    for share in shares.iter_mut() {
        if left == 0 {
            break;
        }
        *share += 1;
        left -= 1;
    }
    shares
}

/// Parses `--shard I/N`: part I (from 0) of N.
pub fn parse_shard(text: &str) -> anyhow::Result<Shard> {
    let parsed = text.split_once('/').and_then(|(index, count)| {
        Some((
            index.trim().parse::<u32>().ok()?,
            count.trim().parse::<u32>().ok()?,
        ))
    });
    let Some((index, count)) = parsed else {
        bail!("bad shard `{text}`: write it as I/N, worker I (from 0) of N, e.g. 0/4");
    };
    if count == 0 || index >= count {
        bail!(
            "shard `{text}` is out of range: of {count} shards, I runs from 0 to {}",
            count.saturating_sub(1)
        );
    }
    Ok(Shard { index, count })
}

/// Parses `--start-at`: an RFC 3339 time such as 2026-11-26T12:00:00Z.
pub fn parse_start_at(text: &str) -> anyhow::Result<StartAt> {
    let at = humantime::parse_rfc3339_weak(text).map_err(|err| {
        anyhow!(
            "bad start time `{text}`: {err}; write it in RFC 3339, UTC, like 2026-11-26T12:00:00Z"
        )
    })?;
    Ok(StartAt {
        at,
        text: humantime::format_rfc3339(at).to_string(),
    })
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
    fn a_linger_is_for_h1_and_h2_and_within_its_range() {
        let mut config = LoadConfig::new(Target::parse("https://127.0.0.1:1/").unwrap());
        config.linger = Some(Duration::from_micros(100));
        for proto in [Proto::H1, Proto::H2] {
            config.proto = proto;
            config.validate().unwrap();
        }
        for proto in [Proto::H3, Proto::Auto] {
            config.proto = proto;
            let err = config.validate().unwrap_err().to_string();
            assert!(
                err.contains("--linger holds out for responses on h1 and h2"),
                "{err}"
            );
            assert!(err.contains(proto.name()), "{err}");
        }
        config.proto = Proto::H2;
        for linger in [
            Duration::ZERO,
            Duration::from_nanos(500),
            Duration::from_millis(51),
        ] {
            config.linger = Some(linger);
            let err = config.validate().unwrap_err().to_string();
            assert!(err.contains("is out of range: give 1us to 50ms"), "{err}");
        }
        for linger in [Duration::from_micros(1), MAX_LINGER] {
            config.linger = Some(linger);
            config.validate().unwrap();
        }
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
    fn shard_shares_add_up_to_the_whole() {
        let mut config = LoadConfig::new(Target::parse("https://127.0.0.1:1/").unwrap());
        config.connections = 10;
        config.requests = Some(1001);
        config.rate = Some(300.0);
        let parts: Vec<Part> = (0..3)
            .map(|index| {
                config.shard = Some(parse_shard(&format!("{index}/3")).unwrap());
                config.validate().unwrap();
                config.part()
            })
            .collect();
        let connections: Vec<usize> = parts.iter().map(|part| part.connections).collect();
        assert_eq!(connections, vec![4, 3, 3]);
        let requests: u64 = parts.iter().map(|part| part.requests.unwrap()).sum();
        assert_eq!(requests, 1001);
        let rate: f64 = parts.iter().map(|part| part.rate.unwrap()).sum();
        assert!((rate - 300.0).abs() < 1e-9, "{rate}");
        assert_eq!(parts[2].first_slot, 2);
        assert_eq!(parts[2].stride, 3);
    }

    #[test]
    fn bad_shards_and_start_times_say_what_to_write() {
        for (text, expected) in [
            ("4/4", "from 0 to 3"),
            ("1/0", "out of range"),
            ("a/4", "write it as I/N"),
            ("3", "write it as I/N"),
        ] {
            let err = parse_shard(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
        let err = parse_start_at("noon").unwrap_err().to_string();
        assert!(err.contains("RFC 3339"), "{err}");
        let mut config = LoadConfig::new(Target::parse("https://127.0.0.1:1/").unwrap());
        config.start_at = Some(parse_start_at("2020-01-01T00:00:00Z").unwrap());
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("in the past"), "{err}");
        config.start_at = None;
        config.connections = 3;
        config.shard = Some(parse_shard("0/4").unwrap());
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("raise -c to 4"), "{err}");
        config.connections = 10;
        config.shard = Some(parse_shard("2/3").unwrap());
        config.requests = Some(3);
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("raise -n to 10"), "{err}");
    }

    #[test]
    fn h1_refuses_multiple_streams() {
        let mut config = LoadConfig::new(Target::parse("http://127.0.0.1:1/").unwrap());
        config.streams = 4;
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("no pipelining"), "{err}");
    }
}
