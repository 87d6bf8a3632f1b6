//! `h3lab load URL`: HTTP/1.1, HTTP/2 or HTTP/3 load against one URL, with
//! flags familiar to h2load and oha users; `h3lab load merge`: one report
//! from the reports of a test's workers.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Context};
use h3lab_client::{ResolveRule, Target, TlsOptions};
use h3lab_load::{CancellationToken, LoadConfig, StartAt};
use h3lab_results::load::{merge_workers, LoadReport, Outcome, Shard};
use h3lab_results::Proto;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    pub merge: Option<Merge>,
    /// URL to load, e.g. https://127.0.0.1:4433/bytes/1000 (http:// only with h1).
    #[arg(required = true)]
    pub url: Option<String>,
    /// Protocol [default: h2 for https://, h1 for http://]. auto: a first
    /// call over h2 learns Alt-Svc, then each connection races QUIC
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
    #[arg(short = 'z', long, value_parser = h3lab_load::parse_duration)]
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
    #[arg(long, default_value = "30s", value_parser = h3lab_load::parse_duration)]
    pub timeout: Duration,
    /// Connection set-up timeout (TCP+TLS, or QUIC).
    #[arg(long, default_value = "5s", value_parser = h3lab_load::parse_duration)]
    pub connect_timeout: Duration,
    /// Load this long before measuring; reported separately.
    #[arg(long, default_value = "0s", value_parser = h3lab_load::parse_duration)]
    pub warmup: Duration,
    /// No progress bar.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Connect to ADDR for HOST on PORT, with TLS and the requests still
    /// naming HOST (curl's convention; repeatable), e.g. for a replay
    /// site's origins: www.example.com:443:127.0.0.10.
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    pub resolve: Vec<ResolveRule>,
    /// h3: write one qlog file per connection into DIR (created if
    /// missing; JSON-SEQ `.sqlog`, which qvis loads).
    #[arg(long, value_name = "DIR")]
    pub qlog: Option<std::path::PathBuf>,
    /// Run part I (from 0) of a test split N ways, e.g. 2/8: a 1/N share
    /// of -c, and of -n and --rate in proportion. The flags above stay the
    /// whole test's, the same for every worker (docs/distributed.md).
    #[arg(long, value_name = "I/N", value_parser = h3lab_load::parse_shard)]
    pub shard: Option<Shard>,
    /// Begin at this wall-clock time (RFC 3339, e.g. 2026-11-26T12:00:00Z),
    /// as every worker of a split test does; -z then runs from there.
    #[arg(long, value_name = "TIME", value_parser = h3lab_load::parse_start_at)]
    pub start_at: Option<StartAt>,
    /// Lift the caps on a load against a server outside this machine (at
    /// most 10 connections; closed model: 1,000 requests or 10 s; open
    /// model: 100 requests per second for 60 s). Only for a server you run.
    #[arg(long)]
    pub allow_heavy: bool,
}

/// `h3lab load merge`: one report from the reports of a test's workers.
#[derive(clap::Subcommand)]
pub enum Merge {
    /// Merge the JSON reports of one test's workers exactly (histograms
    /// added, never percentiles averaged), with a per-worker table.
    Merge(MergeArgs),
}

#[derive(clap::Args)]
pub struct MergeArgs {
    /// The workers' reports (`h3lab load --json`).
    #[arg(required = true, value_name = "REPORT.json")]
    pub reports: Vec<PathBuf>,
    #[command(flatten)]
    pub options: MergeOptions,
}

/// How a merged report is written, and whether shards may be missing.
#[derive(clap::Args)]
pub struct MergeOptions {
    /// Also write the merged report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Merge even with shards missing, and say which.
    #[arg(long)]
    pub allow_partial: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(Merge::Merge(merge)) = args.merge {
        return run_merge(merge);
    }
    let json_path = args.json.clone();
    let config = load_config(args)?;
    let cancel = CancellationToken::new();
    watch_ctrl_c(cancel.clone())?;
    let report = h3lab_load::run(&config, cancel)?;
    show(&report, json_path.as_deref())?;
    exit_code(&report)
}

/// Prints the report, and writes its JSON where asked (`-`: standard
/// output, with the text moved to standard error).
pub(super) fn show(report: &LoadReport, json_path: Option<&std::path::Path>) -> anyhow::Result<()> {
    match json_path {
        Some(path) if path.as_os_str() == "-" => {
            eprint!("{report}");
            outln!("{}", report.to_json_line());
        }
        _ => out!("{report}"),
    }
    if let Some(warning) = report.pacing_warning() {
        eprintln!("{warning}");
    }
    if let Some(path) = json_path.filter(|path| path.as_os_str() != "-") {
        std::fs::write(path, report.to_json())
            .with_context(|| format!("writing the JSON report to {}", path.display()))?;
    }
    Ok(())
}

fn run_merge(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let reports = args
        .reports
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the report {}", path.display()))?;
            let report = LoadReport::from_json(&text)
                .with_context(|| format!("{} is not an h3lab load report", path.display()))?;
            Ok((path.display().to_string(), report))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    merge_and_show(&reports, &args.options)
}

/// Merges one test's reports, prints the result and writes its JSON.
pub(super) fn merge_and_show(
    reports: &[(String, LoadReport)],
    options: &MergeOptions,
) -> anyhow::Result<ExitCode> {
    let merged = merge_workers(reports, options.allow_partial)?;
    show(&merged, options.json.as_deref())?;
    exit_code(&merged)
}

pub(super) fn exit_code(report: &LoadReport) -> anyhow::Result<ExitCode> {
    match report.outcome() {
        Outcome::Success => Ok(ExitCode::SUCCESS),
        Outcome::Interrupted => {
            eprintln!("interrupted: partial results written");
            Ok(ExitCode::from(130))
        }
        Outcome::Failed(summary) => Err(anyhow!(summary)),
    }
}

/// Checks `load URL FLAGS...` as `h3lab load` would parse and validate
/// it, without running it, and returns what it would run.
pub(super) fn check(argv: &[String]) -> anyhow::Result<LoadConfig> {
    #[derive(clap::Parser)]
    #[command(name = "h3lab")]
    struct Line {
        #[command(subcommand)]
        command: LoadOnly,
    }
    #[derive(clap::Subcommand)]
    enum LoadOnly {
        Load(Args),
    }
    let line = <Line as clap::Parser>::try_parse_from(
        std::iter::once("h3lab".to_string()).chain(argv.iter().cloned()),
    )
    .map_err(|err| {
        let text = err.render().to_string();
        anyhow!("{}", text.trim_start_matches("error: ").trim_end())
    })?;
    let LoadOnly::Load(args) = line.command;
    load_config(args)
}

fn load_config(args: Args) -> anyhow::Result<LoadConfig> {
    let url = args.url.as_deref().expect("clap requires the URL");
    let target = Target::parse(url)?;
    let mut config = LoadConfig::new(target);
    if let Some(proto) = args.proto {
        config.proto = proto;
    }
    config.connections = args.connections;
    config.streams = args.streams;
    config.requests = args.requests;
    config.duration = args.duration;
    config.rate = args.rate;
    config.method = args
        .method
        .parse()
        .map_err(|_| anyhow!("bad method `{}`: use e.g. GET or POST", args.method))?;
    for header in &args.headers {
        h3lab_load::parse_header(header, &mut config.headers)?;
    }
    config.browser_headers = args.browser_headers;
    if let Some(body) = &args.body {
        config.body = h3lab_load::parse_body(body)?;
    }
    config.tls = TlsOptions {
        insecure: args.insecure,
        ca_file: args.ca,
    };
    config.resolve = args.resolve;
    if let Some(threads) = args.threads {
        config.threads = threads;
    }
    config.request_timeout = args.timeout;
    config.connect_timeout = args.connect_timeout;
    config.warmup = args.warmup;
    config.progress = !args.quiet;
    config.qlog = args.qlog;
    config.shard = args.shard;
    config.start_at = args.start_at;
    config.allow_heavy = args.allow_heavy;
    config.validate()?;
    Ok(config)
}

/// Ctrl-C cancels the run; the engine then returns what it has so far.
fn watch_ctrl_c(cancel: CancellationToken) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the signal runtime")?;
    std::thread::Builder::new()
        .name("h3lab-ctrl-c".into())
        .spawn(move || {
            runtime.block_on(async {
                if tokio::signal::ctrl_c().await.is_ok() {
                    cancel.cancel();
                }
            })
        })
        .context("spawning the Ctrl-C watcher")?;
    Ok(())
}
