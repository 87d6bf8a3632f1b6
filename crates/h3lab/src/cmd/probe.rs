//! `h3lab probe`: single-property measurements. `probe ttfb` times the
//! first response byte on new connections: cold, resumed, or 0-RTT (h3).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use h3lab_client::{measure_ttfb, Target, TlsOptions};
use h3lab_results::ttfb::{TtfbReport, TTFB_SCHEMA};
use h3lab_results::{Proto, TtfbMode};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    probe: Probe,
}

#[derive(clap::Subcommand)]
enum Probe {
    /// Time to the first response byte on new connections.
    Ttfb(TtfbArgs),
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
