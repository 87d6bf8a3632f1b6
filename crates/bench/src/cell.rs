//! One cell and repetition: a fresh emulated path, the server in the server
//! namespace, one client run in the client namespace, and the record of what
//! they measured. Any failure becomes a `Failed` record carrying its error,
//! never a missing or made-up figure.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use h3lab_results::bench::{CellRecord, CpuUse, Metric, Outcome};
use h3lab_results::load::LoadReport;
use linkem::run::Placement;
use linkem::EmulatedPath;

use crate::client::{self, ClientRun};
use crate::server;
use crate::spec::CellSpec;
use crate::suite::{DownloadMetric, Load, RpsMetric, Suite};

/// What a run needs besides the suite.
pub struct RunContext {
    /// The `h3lab` executable, started as server and client in the namespaces.
    pub exe: PathBuf,
    /// Scratch space for certificates and client reports.
    pub scratch: PathBuf,
    /// Set by Ctrl-C: the runner stops after the current cell.
    pub stop: Arc<AtomicBool>,
    /// The preset the suite came from, if any.
    pub preset: Option<String>,
}

/// Runs the cell; failures are recorded, not returned.
pub(crate) fn run(suite: &Suite, spec: &CellSpec, ctx: &RunContext) -> CellRecord {
    let started = Instant::now();
    let mut record = empty_record(spec);
    if let Err(err) = measure(suite, spec, ctx, &mut record) {
        record.outcome = Outcome::Failed {
            error: format!("{err:#}"),
        };
        record.metric.samples.clear();
    }
    record.elapsed_s = started.elapsed().as_secs_f64();
    record
}

fn measure(
    suite: &Suite,
    spec: &CellSpec,
    ctx: &RunContext,
    record: &mut CellRecord,
) -> anyhow::Result<()> {
    // The same seed for every protocol of a repetition: same loss pattern.
    let seed = suite.seed.wrapping_add(u64::from(spec.repetition));
    let settings = crate::profile::settings(suite, &spec.profile, seed)?;
    record.path_rtt_ms = settings.as_ref().map_or(0.0, |s| s.rtt as f64 / 1e6);
    let path = settings
        .map(|s| EmulatedPath::start(s.build()))
        .transpose()?;
    let placement = match &path {
        Some(path) => Placement::Emulated(path),
        None => Placement::Loopback,
    };
    let scratch = cell_dir(&ctx.scratch, spec)?;
    let mut server = server::start(suite, &placement, &ctx.exe, &scratch)?;
    let outcome = client::run(
        spec,
        &placement,
        &ctx.exe,
        &server,
        &scratch,
        suite.warmup.0,
        &ctx.stop,
    );
    let server_exit = server.process.stop(Duration::from_secs(5));
    record.cpu.server_s = server_exit.cpu_s;
    if let Some(path) = path {
        record.link = Some(serde_json::to_value(path.shutdown()?)?);
    }
    let run = outcome?;
    record.cpu.client_s = run.cpu_s();
    fill_from_client(spec, run, record)?;
    if ctx.stop.load(Ordering::Relaxed) {
        bail!("interrupted (Ctrl-C) during this cell");
    }
    Ok(())
}

fn fill_from_client(
    spec: &CellSpec,
    run: ClientRun,
    record: &mut CellRecord,
) -> anyhow::Result<()> {
    match run {
        ClientRun::Load { report, .. } => {
            record.requests = report.completed;
            record.errors = report.failed + report.errors.bad_status;
            record.bytes = report.body_bytes;
            // No response within the run is an honest 0 req/s when nothing
            // failed (large bodies on a slow path); with failures it is an error.
            if report.completed == 0 && (report.failed > 0 || !is_throughput(spec)) {
                bail!("no request completed: {}", first_error(&report));
            }
            record.metric.samples = vec![load_figure(spec, &report)?];
            let value = serde_json::to_value(&report)?;
            let histogram = |field: &str| value[field]["histogram"].as_str().map(str::to_string);
            record.latency_histogram = histogram("latency_us");
            record.ttfb_histogram = histogram("ttfb_us");
            record.client_report = Some(value);
        }
        ClientRun::Ttfb { probe, .. } => {
            record.requests = probe.samples.len() as u64;
            record.metric.samples = probe.samples.iter().map(|s| s.ttfb_ms).collect();
            record.client_report = Some(serde_json::to_value(&probe)?);
        }
    }
    Ok(())
}

fn is_throughput(spec: &CellSpec) -> bool {
    matches!(
        spec.workload.load,
        Load::Rps {
            metric: RpsMetric::Throughput,
            ..
        }
    )
}

/// The cell's primary figure from a load report.
fn load_figure(spec: &CellSpec, report: &LoadReport) -> anyhow::Result<f64> {
    let ms = |us: u64| us as f64 / 1000.0;
    match &spec.workload.load {
        Load::Rps {
            metric: RpsMetric::Throughput,
            ..
        } => Ok(report.requests_per_sec),
        Load::Rps {
            metric: RpsMetric::P50,
            ..
        } => Ok(ms(report.latency_us.quantile(0.5))),
        Load::Rps {
            metric: RpsMetric::P99,
            ..
        } => Ok(ms(report.latency_us.quantile(0.99))),
        Load::Download {
            streams, metric, ..
        } => {
            if report.failed > 0 || report.completed < u64::from(streams.0) {
                bail!(
                    "download incomplete: {} of {} streams finished; {}",
                    report.completed,
                    streams.0,
                    first_error(report)
                );
            }
            Ok(match metric {
                DownloadMetric::Time => report.duration_s,
                DownloadMetric::RequestsPerSecond => f64::from(streams.0) / report.duration_s,
            })
        }
        Load::Ttfb { .. } => bail!("a ttfb cell got a load report"),
    }
}

fn first_error(report: &LoadReport) -> String {
    report
        .first_errors
        .iter()
        .next()
        .map(|(kind, message)| format!("{kind}: {message}"))
        .unwrap_or_else(|| "no error recorded".to_string())
}

/// The record before anything ran: names, the metric's unit and direction.
fn empty_record(spec: &CellSpec) -> CellRecord {
    let (name, unit, higher_is_better) = match &spec.workload.load {
        Load::Rps {
            metric: RpsMetric::Throughput,
            ..
        } => ("requests_per_s", "req/s", true),
        Load::Rps {
            metric: RpsMetric::P50,
            ..
        } => ("latency_p50_ms", "ms", false),
        Load::Rps {
            metric: RpsMetric::P99,
            ..
        } => ("latency_p99_ms", "ms", false),
        Load::Download {
            metric: DownloadMetric::Time,
            ..
        } => ("download_s", "s", false),
        Load::Download {
            metric: DownloadMetric::RequestsPerSecond,
            ..
        } => ("requests_per_s", "req/s", true),
        Load::Ttfb { .. } => ("ttfb_ms", "ms", false),
    };
    CellRecord {
        profile: spec.profile.clone(),
        workload: spec.workload.name().to_string(),
        kind: spec.workload.kind().to_string(),
        protocol: spec.protocol.to_string(),
        mode: spec.mode.map(|m| m.name().to_string()),
        repetition: spec.repetition,
        path_rtt_ms: 0.0,
        outcome: Outcome::Ok,
        metric: Metric {
            name: name.to_string(),
            unit: unit.to_string(),
            higher_is_better,
            samples: Vec::new(),
        },
        latency_histogram: None,
        ttfb_histogram: None,
        requests: 0,
        errors: 0,
        bytes: 0,
        cpu: CpuUse::default(),
        link: None,
        client_report: None,
        elapsed_s: 0.0,
    }
}

fn cell_dir(scratch: &Path, spec: &CellSpec) -> anyhow::Result<PathBuf> {
    let name: String = spec
        .label()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = scratch.join(name);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}
