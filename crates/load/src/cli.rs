//! `h3lab load`'s flags (behind the `clap` feature): the one parser of
//! them, and the way back. [`CommandFlags::to_args`] gives the flags that parse
//! to the same value, so a process that starts `h3lab load` (a bench
//! cell's client) builds a typed value, and a renamed flag breaks the
//! build or the round-trip test, not a benchmark run. Also the flags a
//! distributed worker adds ([`worker_flags`]) and `h3lab load merge`'s.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Context};
use h3lab_client::{ResolveRule, Target, TlsOptions};
use h3lab_results::flags::{self, CommandFlags};
use h3lab_results::load::{LoadReport, Shard};
use h3lab_results::Proto;
use serde::Serialize;

use crate::{parse_body, parse_duration, parse_header, parse_shard, parse_start_at};
use crate::{LoadConfig, StartAt};

/// The flags [`worker_flags`] sets, which the whole test's flags must
/// leave out.
pub fn worker_flag_names() -> [String; 3] {
    ["shard", "start_at", "json"].map(flags::flag::<LoadArgs>)
}

/// What one worker of a split test adds to the whole test's flags: its
/// shard `index` of `count`, the common start, its report as one JSON
/// line on standard output and no progress bar. `index` is text: in a
/// Kubernetes manifest it is the kubelet's `$(VAR)`, expanded in the pod.
pub fn worker_flags(index: &str, count: u32, start_at: &str) -> Vec<String> {
    let [shard, start, json] = worker_flag_names();
    // One word per flag: a bare time would be a timestamp, not a string,
    // to YAML 1.1 readers.
    vec![
        format!("{shard}={index}/{count}"),
        format!("{start}={start_at}"),
        format!("{json}=-"),
        flags::flag::<LoadArgs>("quiet"),
    ]
}

/// The flags of `h3lab load URL`.
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize)]
pub struct LoadArgs {
    /// URL to load, e.g. https://127.0.0.1:4433/bytes/1000 (http:// only with h1).
    #[arg(required = true)]
    pub url: Option<String>,
    /// Protocol [default: h2 for https://, h1 for http://]. auto: a first
    /// call learns Alt-Svc (over h2, or QUIC raced against TCP when the
    /// host's DNS HTTPS record lists h3), then each connection races QUIC
    /// against TCP, as browsers do (docs/discovery.md).
    #[arg(long, value_enum)]
    pub proto: Option<Proto>,
    /// Concurrent connections.
    #[arg(short = 'c', long, default_value_t = 10)]
    pub connections: usize,
    /// Concurrent streams per connection (h2/h3; h1 is always 1, no pipelining).
    #[arg(short = 'm', long = "max-concurrent-streams", default_value_t = 1)]
    pub streams: usize,
    /// Total requests [default: 200 when neither -n nor -z is given].
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// Run for this long after warm-up, e.g. 10s, 500ms, 1m.
    #[arg(short = 'z', long, value_parser = parse_duration)]
    #[serde(serialize_with = "flags::duration_opt")]
    pub duration: Option<Duration>,
    /// Open model: send this many requests per second, latency measured from
    /// each request's intended send time (coordinated-omission corrected).
    #[arg(long)]
    pub rate: Option<f64>,
    /// HTTP method.
    #[arg(short = 'X', long, default_value = "GET")]
    pub method: String,
    /// Extra request header "Name: value" (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Send a browser's request headers too: Chromium's recorded set with
    /// a 1 kB cookie, and a trace id and request id that change per
    /// request, so that header compression shows on the wire
    /// (docs/costs.md). A -H header replaces the browser's of its name.
    #[arg(long)]
    pub browser_headers: bool,
    /// Request body: a string, or @FILE for a file's contents.
    #[arg(short = 'd', long)]
    pub body: Option<String>,
    /// Accept any server certificate.
    #[arg(long)]
    pub insecure: bool,
    /// Trust the certificate(s) in this PEM file too (the system's
    /// certificate authorities, or SSL_CERT_FILE's, are always trusted).
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// Also write the report as JSON (schema h3lab.load/1) to FILE; with
    /// `-`, to standard output, and the text report to standard error.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Worker threads [default: number of cores].
    #[arg(long)]
    pub threads: Option<usize>,
    /// Per-request timeout.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    #[serde(serialize_with = "flags::duration")]
    pub timeout: Duration,
    /// Connection set-up timeout (TCP+TLS, or QUIC).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    #[serde(serialize_with = "flags::duration")]
    pub connect_timeout: Duration,
    /// Load this long before measuring; reported separately.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    #[serde(serialize_with = "flags::duration")]
    pub warmup: Duration,
    /// No progress bar.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Connect to ADDR for HOST on PORT, with TLS and the requests still
    /// naming HOST (curl's convention; repeatable), e.g. for a replay
    /// site's origins: www.example.com:443:127.0.0.10.
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    #[serde(serialize_with = "flags::display_each")]
    pub resolve: Vec<ResolveRule>,
    /// h3: write one qlog file per connection into DIR (created if
    /// missing; JSON-SEQ `.sqlog`, which qvis loads). Such a run goes
    /// through quinn's client, not the load's own QUIC loop, and costs
    /// about twice the CPU per request.
    #[arg(long, value_name = "DIR")]
    pub qlog: Option<PathBuf>,
    /// Run part I (from 0) of a test split N ways, e.g. 2/8: a 1/N share
    /// of -c, and of -n and --rate in proportion. The flags above stay the
    /// whole test's, the same for every worker (docs/distributed.md).
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    #[serde(serialize_with = "flags::display_opt")]
    pub shard: Option<Shard>,
    /// Begin at this wall-clock time (RFC 3339, e.g. 2026-11-26T12:00:00Z),
    /// as every worker of a split test does; -z then runs from there.
    #[arg(long, value_name = "TIME", value_parser = parse_start_at)]
    #[serde(serialize_with = "flags::display_opt")]
    pub start_at: Option<StartAt>,
    /// Lift the caps on a load against a server outside this machine (at
    /// most 10 connections; closed model: 1,000 requests or 10 s; open
    /// model: 100 requests per second for 60 s). Only for a server you run.
    #[arg(long)]
    pub allow_heavy: bool,
    /// h1/h2: before each wait, while responses are due, hold out this
    /// long (1us to 50ms, e.g. 200us) so that one wake-up reads many, as
    /// shb batches its completions: less client CPU per request, and sends
    /// later in the closed model. Each read is then timed by the kernel's
    /// receive stamp, the arrival of its last segment: exact for a response
    /// that ends a read, an upper bound within the linger for one that
    /// does not (several h2 responses in a read; a first byte read with
    /// the rest). Open-model sends keep their schedule.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    #[serde(serialize_with = "flags::duration_opt")]
    pub linger: Option<Duration>,
}

/// The flags of `h3lab load merge`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct MergeArgs {
    /// The workers' reports (`h3lab load --json`).
    #[arg(required = true, value_name = "REPORT.json")]
    pub reports: Vec<PathBuf>,
    /// Where the merge goes, and whether shards may be missing.
    #[command(flatten)]
    pub options: MergeOptions,
}

/// How a merged report is written, and whether shards may be missing.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct MergeOptions {
    /// Also write the merged report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Merge even with shards missing, and say which.
    #[arg(long)]
    pub allow_partial: bool,
}

impl MergeArgs {
    /// The workers' reports, each named by its path.
    pub fn read_reports(&self) -> anyhow::Result<Vec<(String, LoadReport)>> {
        (self.reports.iter())
            .map(|path| {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read the report {}", path.display()))?;
                let report = LoadReport::from_json(&text)
                    .with_context(|| format!("{} is not an h3lab load report", path.display()))?;
                Ok((path.display().to_string(), report))
            })
            .collect()
    }
}

impl CommandFlags for LoadArgs {
    const COMMAND: &'static str = "h3lab load";
}

impl LoadArgs {
    /// `h3lab load URL` with every other flag at its default.
    pub fn new(url: &str) -> LoadArgs {
        LoadArgs::parse_flags([url]).expect("a URL alone is a valid `h3lab load`")
    }

    /// What the flags ask for, checked as `h3lab load` checks it before it
    /// runs.
    pub fn config(self) -> anyhow::Result<LoadConfig> {
        let url = self.url.as_deref().expect("clap requires the URL");
        let mut config = LoadConfig::new(Target::parse(url)?);
        if let Some(proto) = self.proto {
            config.proto = proto;
        }
        config.connections = self.connections;
        config.streams = self.streams;
        config.requests = self.requests;
        config.duration = self.duration;
        config.rate = self.rate;
        config.method = self
            .method
            .parse()
            .map_err(|_| anyhow!("bad method `{}`: use e.g. GET or POST", self.method))?;
        for header in &self.headers {
            parse_header(header, &mut config.headers)?;
        }
        config.browser_headers = self.browser_headers;
        if let Some(body) = &self.body {
            config.body = parse_body(body)?;
        }
        config.tls = TlsOptions {
            insecure: self.insecure,
            ca_file: self.ca,
        };
        config.resolve = self.resolve;
        if let Some(threads) = self.threads {
            config.threads = threads;
        }
        config.request_timeout = self.timeout;
        config.connect_timeout = self.connect_timeout;
        config.warmup = self.warmup;
        config.progress = !self.quiet;
        config.qlog = self.qlog;
        config.shard = self.shard;
        config.start_at = self.start_at;
        config.allow_heavy = self.allow_heavy;
        config.linger = self.linger;
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(args: &LoadArgs) -> LoadArgs {
        args.round_trip().unwrap()
    }

    #[test]
    fn defaults_parse_back_to_themselves() {
        let args = LoadArgs::new("https://127.0.0.1:4433/bytes/1000");
        assert_eq!(round_trip(&args), args);
    }

    #[test]
    fn every_flag_set_parses_back_to_itself() {
        let args = LoadArgs {
            url: Some("https://www.example.test:8443/a?b=-c".to_string()),
            proto: Some(Proto::H3),
            connections: 7,
            streams: 3,
            requests: Some(1234),
            duration: Some(Duration::from_millis(1_500)),
            rate: Some(12.5),
            method: "POST".to_string(),
            headers: vec!["x-a: 1".to_string(), "x-b: -2".to_string()],
            browser_headers: true,
            body: Some("-d looks like a flag".to_string()),
            insecure: true,
            ca: Some(PathBuf::from("/tmp/a cert.pem")),
            json: Some(PathBuf::from("-")),
            threads: Some(2),
            timeout: Duration::from_nanos(2_000_000_123),
            connect_timeout: Duration::from_secs(3),
            warmup: Duration::from_millis(250),
            quiet: true,
            resolve: vec!["www.example.test:8443:127.0.0.10".parse().unwrap()],
            qlog: Some(PathBuf::from("qlogs")),
            shard: Some(Shard { index: 2, count: 8 }),
            start_at: Some(parse_start_at("2026-11-26T12:00:00.250Z").unwrap()),
            allow_heavy: true,
            linger: Some(Duration::from_micros(150)),
        };
        assert_eq!(round_trip(&args), args);
    }

    #[test]
    fn a_workers_flags_parse_to_its_shard_and_start() {
        let start = "2026-11-26T12:00:00Z";
        let mut flags = vec!["https://x/".to_string()];
        flags.extend(worker_flags("2", 8, start));
        let args = LoadArgs::parse_flags(&flags).unwrap();
        assert_eq!(args.shard, Some(Shard { index: 2, count: 8 }));
        assert_eq!(args.start_at, Some(parse_start_at(start).unwrap()));
        assert_eq!(args.json, Some(PathBuf::from("-")));
        assert!(args.quiet);
        let with_values = flags.iter().filter_map(|flag| flag.split_once('='));
        let set: Vec<&str> = with_values.map(|(name, _)| name).collect();
        assert_eq!(set, worker_flag_names());
        assert_eq!(set, ["--shard", "--start-at", "--json"]);
    }

    #[test]
    fn a_report_that_cannot_be_merged_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.json");
        std::fs::write(&text, "{}").unwrap();
        for (path, expected) in [
            (dir.path().join("missing.json"), "cannot read the report"),
            (text, "is not an h3lab load report"),
        ] {
            let args = MergeArgs {
                reports: vec![path.clone()],
                options: MergeOptions {
                    json: None,
                    allow_partial: false,
                },
            };
            let err = args.read_reports().unwrap_err().to_string();
            assert!(err.contains(expected), "{err}");
            assert!(err.contains(&path.display().to_string()), "{err}");
        }
    }

    #[test]
    fn a_bad_flag_is_named() {
        let err = LoadArgs::parse_flags(["https://x/", "--conections", "2"]).unwrap_err();
        assert!(err.to_string().contains("--conections"), "{err}");
    }
}
