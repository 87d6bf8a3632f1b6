//! `h3lab probe`: single-property measurements. `probe ttfb` times the
//! first response byte on new connections: cold, resumed, or 0-RTT (h3);
//! `probe migrate` moves the client to a new port or address mid-stream;
//! `probe hol` measures head-of-line stalls of parallel streams under loss.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use h3lab_client::{measure_ttfb, Target, TlsOptions};
use h3lab_probe::hol::report::{HolReport, HolRun, RunCpu, Spread, StreamResult};
use h3lab_probe::hol::{run_hol, HolOptions};
use h3lab_probe::report::{Claim, MigrateReport, ProtoResult};
use h3lab_probe::scenario::{default_delay_threshold, default_request_timeout, Change, Scenario};
use h3lab_probe::{ensure_root, run_migrate, MigrateOptions};
use h3lab_report::{distribution_html, Chart, Series};
use h3lab_results::ttfb::{TtfbReport, TTFB_SCHEMA};
use h3lab_results::{Proto, TtfbMode};
use linkem::run::Interrupted;

use super::link_flags::LinkFlags;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    probe: Probe,
}

#[derive(clap::Subcommand)]
enum Probe {
    /// Time to the first response byte on new connections.
    Ttfb(TtfbArgs),
    /// Move the client to a new port or address during a steady request
    /// stream, on an emulated path: h3 migrates, TCP breaks (needs root).
    Migrate(Box<MigrateArgs>),
    /// Parallel streams on one h2 and one h3 connection through a lossy
    /// path: each stream's head-of-line stall and completion (needs root).
    Hol(Box<HolArgs>),
}

#[derive(clap::Args)]
struct TtfbArgs {
    /// URL to request, e.g. https://127.0.0.1:8443/bytes/1.
    url: String,
    /// Protocol.
    #[arg(long, value_enum, default_value = "h2")]
    proto: Proto,
    /// cold: full handshake; resumed: TLS/QUIC session resumption; 0rtt: the
    /// request in 0-RTT early data (h3 only).
    #[arg(long, value_enum, default_value = "cold")]
    mode: TtfbMode,
    /// New connections to measure.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    samples: u32,
    /// Accept any server certificate.
    #[arg(long)]
    insecure: bool,
    /// Trust the certificate(s) in this PEM file.
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// Connection set-up timeout.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    connect_timeout: Duration,
    /// Also write the samples as JSON (schema h3lab.ttfb/2, docs/results-schema.md) to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Print only the summary line.
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.probe {
        Probe::Ttfb(args) => ttfb(args),
        Probe::Migrate(args) => migrate(*args),
        Probe::Hol(args) => hol(*args),
    }
}

fn ttfb(args: TtfbArgs) -> anyhow::Result<ExitCode> {
    let target = Target::parse(&args.url)?;
    let proto = args.proto;
    target.check_proto(proto)?;
    let tls = TlsOptions {
        insecure: args.insecure,
        ca_file: args.ca.clone(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    let mut report = TtfbReport {
        schema: TTFB_SCHEMA.to_string(),
        url: args.url.clone(),
        proto,
        mode: args.mode,
        samples: Vec::new(),
    };
    let mut failure = None;
    for _ in 0..args.samples {
        let measured = runtime.block_on(measure_ttfb(
            &target,
            proto,
            args.mode,
            &tls,
            args.connect_timeout,
        ));
        match measured {
            Ok(sample) => {
                if !args.quiet {
                    let handshake = sample
                        .handshake_ms
                        .map_or(String::new(), |ms| format!("  (handshake {ms:.2} ms)"));
                    println!("ttfb {:8.2} ms{handshake}", sample.ttfb_ms);
                }
                report.samples.push(sample);
            }
            Err(err) => {
                failure = Some(err);
                break;
            }
        }
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text).with_context(|| {
            format!(
                "cannot write {}; pass a writable --json path",
                path.display()
            )
        })?;
    }
    print_summary(&report);
    match failure {
        Some(err) => Err(err.context(format!(
            "{} of {} samples measured",
            report.samples.len(),
            args.samples
        ))),
        None => Ok(ExitCode::SUCCESS),
    }
}

fn print_summary(report: &TtfbReport) {
    let mut values: Vec<f64> = report.samples.iter().map(|s| s.ttfb_ms).collect();
    values.sort_by(f64::total_cmp);
    let Some((min, max)) = values.first().zip(values.last()) else {
        println!("{} {} {}: no sample", report.proto, report.mode, report.url);
        return;
    };
    let median = values[values.len() / 2];
    println!(
        "{} {} ttfb: median {median:.2} ms, min {min:.2} ms, max {max:.2} ms over {} new connections",
        report.proto,
        report.mode,
        values.len()
    );
}

#[derive(clap::Args)]
struct MigrateArgs {
    /// What changes at the switch: `port` (NAT rebinding) or `address` (a
    /// network handoff to a second client address).
    #[arg(long, default_value = "port")]
    change: Change,
    /// Protocols to run, each on a fresh path, e.g. h2,h3.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "h1,h2,h3")]
    proto: Vec<Proto>,
    /// Built-in network profile (see `h3lab net profiles`).
    #[arg(long, default_value = "broadband")]
    profile: String,
    #[command(flatten)]
    path: LinkFlags,
    /// Requests started per second.
    #[arg(long, default_value_t = 50)]
    rate: u32,
    /// How long requests are started.
    #[arg(long, default_value = "4s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// When the change happens, from the first request; default: half-way.
    #[arg(long, value_parser = humantime::parse_duration)]
    switch_at: Option<Duration>,
    /// Response body size of each request (`/bytes/N`).
    #[arg(long, default_value_t = 1000)]
    bytes: u64,
    /// A request without a complete response this long after its
    /// scheduled start fails; default: 8 RTT, at least 1 s.
    #[arg(long, value_parser = humantime::parse_duration)]
    request_timeout: Option<Duration>,
    /// A successful request slower than this counts as delayed; default:
    /// 2 RTT, at least 10 ms.
    #[arg(long, value_parser = humantime::parse_duration)]
    delay_threshold: Option<Duration>,
    /// Also write the report as JSON (schema h3lab.migrate/1,
    /// docs/results-schema.md) to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

fn migrate(args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let settings = args.path.emulated(&args.profile, "a migration")?;
    let rtt = Duration::from_nanos(settings.rtt);
    let scenario = Scenario {
        change: args.change,
        protos: args.proto.clone(),
        rate_per_s: args.rate,
        duration: args.duration,
        switch_at: args.switch_at.unwrap_or(args.duration / 2),
        body_bytes: args.bytes,
        request_timeout: args
            .request_timeout
            .unwrap_or_else(|| default_request_timeout(rtt)),
        delay_threshold: args
            .delay_threshold
            .unwrap_or_else(|| default_delay_threshold(rtt)),
    };
    scenario.validate()?;
    ensure_root()?;
    let options = MigrateOptions {
        settings,
        profile: Some(args.profile.clone()),
        scenario,
        exe: std::env::current_exe().context("cannot find the h3lab binary to start the server")?,
    };
    let interrupted = Interrupted::install()?;
    print_migrate_header(&options);
    let (report, failure) = run_migrate(&options, &interrupted, print_proto_result)?;
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text).with_context(|| {
            format!(
                "cannot write {}; pass a writable --json path",
                path.display()
            )
        })?;
    }
    print_migrate_summary(&report);
    match failure {
        Some(err) => Err(err),
        None => Ok(ExitCode::SUCCESS),
    }
}

fn print_migrate_header(options: &MigrateOptions) {
    let scenario = &options.scenario;
    println!(
        "probe migrate: {} change at {:.2} s; {} req/s of /bytes/{} for {:.1} s; path {} (RTT {} ms); \
         request timeout {} ms, delayed above {} ms",
        scenario.change,
        scenario.switch_at.as_secs_f64(),
        scenario.rate_per_s,
        scenario.body_bytes,
        scenario.duration.as_secs_f64(),
        options.profile.as_deref().unwrap_or("custom"),
        options.settings.rtt / 1_000_000,
        scenario.request_timeout.as_millis(),
        scenario.delay_threshold.as_millis(),
    );
}

fn print_proto_result(result: &ProtoResult) {
    let s = &result.summary;
    let ms = |value: Option<f64>| value.map_or("-".to_string(), |v| format!("{v:.0} ms"));
    let validated = match result.path_validated {
        Some(true) => "yes",
        Some(false) => "no",
        None => "n/a (TCP)",
    };
    println!(
        "{}: {} at {:.2} s\n    requests {}: ok {}, failed {}, delayed after the switch {} \
         (before it {}); stall {:.0} ms\n    connections {} (broken {}); break detected after {}, \
         reconnected after {}; new path validated: {validated}; survived: {}; \
         migrations the server counted: {}",
        result.proto,
        result.switch,
        result.switched_at_s,
        s.requests,
        s.succeeded,
        s.failed,
        s.delayed_after_switch,
        s.delayed_before_switch,
        s.stall_ms,
        s.connections_used,
        s.connections_broken,
        ms(s.break_detected_after_ms),
        ms(s.reconnected_after_ms),
        if s.survived { "yes" } else { "no" },
        result
            .server_migrations
            .map_or("unknown".to_string(), |n| n.to_string()),
    );
}

fn print_migrate_summary(report: &MigrateReport) {
    print_claims(&report.claims);
}

fn print_claims(claims: &[Claim]) {
    for Claim {
        study,
        claim,
        theirs,
        ours,
        same_direction,
        ..
    } in claims
    {
        let verdict = match same_direction {
            Some(true) => "same direction",
            Some(false) => "OTHER direction",
            None => "not comparable",
        };
        println!("study {study}, {claim}: theirs {theirs}; ours {ours} ({verdict})");
    }
}

#[derive(clap::Args)]
struct HolArgs {
    /// Parallel GETs on the one connection.
    #[arg(long, default_value_t = 8)]
    streams: u32,
    /// Response body size of each stream (`/bytes/N`).
    #[arg(long, default_value_t = 131_072)]
    size: u64,
    /// Protocols, each on its own fresh path with the same seed.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "h2,h3")]
    protos: Vec<Proto>,
    /// Built-in network profile (see `h3lab net profiles`); study A's claim
    /// is at 1 % loss, as in `cellular`.
    #[arg(long, default_value = "cellular")]
    profile: String,
    #[command(flatten)]
    path: LinkFlags,
    /// Repetitions; repetition r runs every protocol with seed + r.
    #[arg(long, default_value_t = 1)]
    repetitions: u32,
    /// Also write the report as JSON (schema h3lab.hol/1,
    /// docs/results-schema.md) to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also draw the per-stream stalls and completions into an HTML page.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

fn hol(args: HolArgs) -> anyhow::Result<ExitCode> {
    let options = HolOptions {
        settings: args.path.emulated(&args.profile, "a head-of-line probe")?,
        profile: Some(args.profile.clone()),
        protos: args.protos.clone(),
        streams: args.streams,
        body_bytes: args.size,
        repetitions: args.repetitions,
        exe: std::env::current_exe().context("cannot find the h3lab binary to start the server")?,
    };
    options.validate()?;
    ensure_root()?;
    let interrupted = Interrupted::install()?;
    println!(
        "probe hol: {} streams of /bytes/{} on one connection; path {} (RTT {} ms, loss {:.1} %, seed {}); {} repetition(s) of {}",
        options.streams,
        options.body_bytes,
        args.profile,
        options.settings.rtt / 1_000_000,
        options.settings.loss.mean_loss() * 100.0,
        options.settings.seed,
        options.repetitions,
        options.protos.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
    );
    let (report, failure) = run_hol(&options, &interrupted, print_hol_run)?;
    if let Some(path) = &args.json {
        write_file(path, &serde_json::to_string_pretty(&report)?, "--json")?;
    }
    if let Some(path) = &args.html {
        write_file(path, &hol_html(&report), "--html")?;
    }
    print_hol_summary(&report);
    match failure {
        Some(err) => Err(err),
        None => Ok(ExitCode::SUCCESS),
    }
}

fn write_file(path: &std::path::Path, text: &str, flag: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| {
        format!(
            "cannot write {}; pass a writable {flag} path",
            path.display()
        )
    })
}

fn spread_line(spread: Option<Spread>) -> String {
    spread.map_or("-".to_string(), |s| {
        format!("median {:.1}, p90 {:.1}, max {:.1} ms", s.p50, s.p90, s.max)
    })
}

/// h2's wait in TCP's order, as a clause; nothing for h3.
fn order_clause(spread: Option<Spread>) -> String {
    spread.map_or(String::new(), |s| {
        format!(
            " (in TCP's order: median {:.1}, max {:.1} ms)",
            s.p50, s.max
        )
    })
}

/// The client's CPU and its wait for a CPU, against the run's wall time.
fn client_cpu(cpu: &RunCpu) -> String {
    match (cpu.client_s, cpu.client_waiting_s) {
        (Some(running), Some(waiting)) => format!(
            "ran {:.0} ms and waited for a CPU {:.0} ms of {:.0} ms",
            running * 1e3,
            waiting * 1e3,
            cpu.wall_s * 1e3
        ),
        _ => format!("CPU unknown over {:.0} ms", cpu.wall_s * 1e3),
    }
}

fn print_hol_run(run: &HolRun) {
    let order: Vec<f64> = run
        .streams
        .iter()
        .filter_map(|s| s.transport_order_wait_ms)
        .collect();
    let stalls: Vec<f64> = run.streams.iter().filter_map(|s| s.stall_ms).collect();
    let completions: Vec<f64> = run.streams.iter().filter_map(|s| s.completion_ms).collect();
    let unmeasured = run.streams.iter().filter(|s| s.stall_ms.is_none()).count();
    println!(
        "{} repetition {} (seed {}): stall {}{}; completion {}; lost down {} of {} packets (+{} queue drops), up {} of {}; client {}{}",
        run.proto,
        run.repetition + 1,
        run.seed,
        spread_line(Spread::of(&stalls)),
        order_clause(Spread::of(&order)),
        spread_line(Spread::of(&completions)),
        run.loss.down.lost.len(),
        run.loss.down.packets,
        run.loss.down.queue_drops,
        run.loss.up.lost.len(),
        run.loss.up.packets,
        client_cpu(&run.cpu),
        if unmeasured > 0 {
            format!("; {unmeasured} stream(s) unmeasured")
        } else {
            String::new()
        },
    );
}

fn print_hol_summary(report: &HolReport) {
    for summary in &report.summary {
        println!(
            "{} over {} stream(s): stall {}{}; completion {}",
            summary.proto,
            summary.streams_measured,
            spread_line(summary.stall_ms),
            order_clause(summary.transport_order_wait_ms),
            spread_line(summary.completion_ms),
        );
    }
    print_claims(&report.claims);
}

fn hol_html(report: &HolReport) -> String {
    let chart = |title: &str, pick: fn(&StreamResult) -> Option<f64>| Chart {
        title: title.to_string(),
        x_label: "milliseconds".to_string(),
        series: report
            .summary
            .iter()
            .map(|summary| Series {
                name: summary.proto.to_string(),
                values: report
                    .runs
                    .iter()
                    .filter(|run| run.proto == summary.proto)
                    .flat_map(|run| run.streams.iter().filter_map(pick))
                    .collect(),
            })
            .collect(),
    };
    let charts = [
        chart("Head-of-line stall per stream", |s| s.stall_ms),
        chart("Completion per stream", |s| s.completion_ms),
    ];
    let mut notes = vec![format!(
        "{} parallel GETs of {} bytes on one connection; profile {}, RTT {} ms, loss {:.1} %; seeds {} to {}.",
        report.streams,
        report.body_bytes,
        report.profile.as_deref().unwrap_or("custom"),
        report.link.rtt / 1_000_000,
        report.link.loss.mean_loss() * 100.0,
        report.link.seed,
        report.link.seed + u64::from(report.repetitions) - 1,
    )];
    notes.extend(report.claims.iter().map(|claim| {
        format!(
            "Study {}, {}: theirs {}; ours {}.",
            claim.study, claim.claim, claim.theirs, claim.ours
        )
    }));
    distribution_html(
        "h3lab probe hol: per-stream head-of-line stall and completion",
        &notes,
        &charts,
    )
}
