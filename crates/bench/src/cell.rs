//! One cell and repetition: a fresh emulated path, the server in the server
//! namespace, one client run in the client namespace, and the record of what
//! they measured. Any failure becomes a `Failed` record carrying its error,
//! never a missing or made-up figure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use h3lab_results::bench::{CellRecord, ClientReport, CpuUse, LinkRecord, Metric, Outcome};
use h3lab_results::load::LoadReport;
use h3lab_results::page::PageReport;
use linkem::model::LinkStats;
use linkem::run::Placement;
use linkem::{EmulatedPath, LinkSettings};

use crate::client::{self, Aim, ClientRun};
use crate::field::FieldTarget;
use crate::plan::CellPlan;
use crate::spec::CellSpec;
use crate::suite::{DownloadMetric, Load, RpsMetric, Site};
use crate::usage;

mod lab;
mod record;

use record::CellOutcome;

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
    /// A field run's pinned addresses and offers (`FieldTarget::prepare`);
    /// `None` for a lab run.
    pub field: Option<FieldTarget>,
}

/// Runs the cell and makes its record; failures are recorded, not
/// returned. Fills `server_tuning` from the built-in server's start
/// report if it is still empty.
pub(crate) fn run(
    plan: &CellPlan,
    ctx: &RunContext,
    server_tuning: &mut Option<BTreeMap<String, String>>,
) -> CellRecord {
    let started = Instant::now();
    let mut outcome = CellOutcome::default();
    outcome.failure = match &ctx.field {
        Some(field) => run_field(plan, ctx, field, &mut outcome),
        None => lab::run(plan, ctx, &mut outcome),
    }
    .err();
    outcome.interrupted = ctx.stop.load(Ordering::Relaxed);
    outcome.elapsed_s = started.elapsed().as_secs_f64();
    if server_tuning.is_none() {
        *server_tuning = outcome.server.as_ref().and_then(|s| s.tuning.clone());
    }
    record::record(plan, outcome)
}

/// The record of a cell that does not run, and why (a field origin
/// does not offer its protocol).
pub(crate) fn refused(spec: &CellSpec, why: String) -> CellRecord {
    let mut record = empty_record(spec);
    record.outcome = Outcome::Failed { error: why };
    record
}

/// A field cell: no server; the client in a namespace whose traffic
/// crosses the profile's emulated link and leaves through NAT to this
/// machine's network (or, on `real`, in this namespace), to the
/// workload's URL at its pinned address.
fn run_field(
    plan: &CellPlan,
    ctx: &RunContext,
    field: &FieldTarget,
    out: &mut CellOutcome,
) -> anyhow::Result<()> {
    let spec = &plan.spec;
    let mut path = (plan.link.as_ref())
        .map(|s| EmulatedPath::start(s.build()))
        .transpose()?;
    if let Some(path) = &mut path {
        path.route_out()?;
    }
    let placement = match &path {
        Some(path) => Placement::Emulated(path),
        None => Placement::Loopback,
    };
    let scratch = cell_dir(&ctx.scratch, spec)?;
    let url = (spec.workload.url.as_ref()).context("a field workload has a URL")?;
    let aim = Aim::Field {
        url,
        pins: field.pins(),
        insecure: plan.target.insecure,
        allow_heavy: plan.target.allow_heavy,
    };
    let before = usage::Reading::now(None, path.as_ref());
    let client = client::run(
        spec,
        &placement,
        &ctx.exe,
        &aim,
        &scratch,
        plan.warmup,
        &ctx.stop,
    );
    let after = usage::Reading::now(None, path.as_ref());
    usage::record_interval(&before, &after, &mut out.cpu);
    out.client = Some(client);
    if let Some(path) = path {
        out.link = Some(path.shutdown()?);
    }
    Ok(())
}

/// `cells[].link`: the link's statistics, and under `settings` what the
/// path was set to (loss direction included), so a record says on its own
/// which way its loss applied. linkem's types and h3lab-results' mirror
/// each other's JSON field for field (tested below), so the record is
/// linkem's JSON read back.
fn link_record(stats: LinkStats, settings: &LinkSettings) -> anyhow::Result<LinkRecord> {
    let mut link: LinkRecord = mirrored(&stats)?;
    link.settings = Some(mirrored(settings)?);
    Ok(link)
}

fn mirrored<T: serde::de::DeserializeOwned>(value: &impl serde::Serialize) -> anyhow::Result<T> {
    Ok(serde_json::from_slice(&serde_json::to_vec(value)?)?)
}

/// The load run's figure, unless the run cannot stand for one.
fn load_figure_of_a_sound_run(spec: &CellSpec, report: &LoadReport) -> anyhow::Result<f64> {
    // No response within the run is an honest 0 req/s when nothing
    // failed (large bodies on a slow path); with failures it is an error.
    if report.completed == 0 && (report.failed > 0 || !is_throughput(spec)) {
        bail!("no request completed: {}", first_error(report));
    }
    // An error page is a response, but not the one measured: an
    // edge's fast 502 would count as throughput.
    if report.errors.bad_status > 0 {
        bail!(
            "{} of {} responses had an error status ({}); the figure would count \
             error pages",
            report.errors.bad_status,
            report.completed,
            error_statuses(report)
        );
    }
    load_figure(spec, report)
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
            record.latency_histogram = Some(report.latency_us.encode());
            record.ttfb_histogram = Some(report.ttfb_us.encode());
            let figure = load_figure_of_a_sound_run(spec, &report);
            // Kept on failure too: the report says what went wrong.
            record.client_report = Some(ClientReport::Load(report));
            record.metric.samples = vec![figure?];
        }
        ClientRun::Ttfb { probe, .. } => {
            record.measured_rtt_ms = median_of(probe.samples.iter().map(|s| s.path_rtt_ms));
            record.requests = probe.samples.len() as u64;
            record.metric.samples = probe.samples.iter().map(|s| s.ttfb_ms).collect();
            record.client_report = Some(probe.into());
        }
        ClientRun::Conformance { report, .. } => {
            let failed = report.failures().count();
            record.requests = report.cases.len() as u64;
            record.errors = failed as u64;
            record.metric.samples = vec![failed as f64];
            record.client_report = Some((*report).into());
        }
        ClientRun::Page { report, .. } => {
            let Load::Page { loads, .. } = &spec.workload.load else {
                bail!("a {} cell got a page report", spec.workload.kind());
            };
            let loads = match spec.unit {
                Some(_) => 1,
                None => loads.0,
            };
            anyhow::ensure!(
                report.loads.len() == loads as usize,
                "the page run reported {} of {loads} loads",
                report.loads.len(),
            );
            record.measured_rtt_ms = median_of(report.loads.iter().map(|l| l.path_rtt_ms));
            fill_from_page(*report, record)?;
        }
    }
    Ok(())
}

/// Fails unless every page load of a generated site fetched every file of
/// the site. A server that does not serve the site for the name it is
/// asked by (a server command whose site address is its IP alone) may
/// answer the page with an empty `200`, which would load fast and
/// complete, and give a wrong figure.
fn check_whole_site(plan: &CellPlan, report: &PageReport, authority: &str) -> anyhow::Result<()> {
    let Load::Page {
        site: Site::Shape(shape),
        ..
    } = &plan.spec.workload.load
    else {
        return Ok(());
    };
    let plan = h3lab_site::plan(*shape, plan.site_seed);
    let path_of = |url: &str| url::Url::parse(url).ok().map(|url| url.path().to_string());
    for (index, load) in report.loads.iter().enumerate() {
        let fetched: Vec<String> = (load.resources.iter())
            .filter_map(|resource| path_of(&resource.url))
            .collect();
        let missing: Vec<&str> = (plan.assets())
            .map(|file| file.path.as_str())
            .filter(|path| !fetched.iter().any(|fetched| fetched == path))
            .collect();
        let Some(first) = missing.first() else {
            continue;
        };
        let (number, assets) = (index + 1, plan.assets().count());
        if fetched.len() > 1 {
            // It served the site, but not all of it this time.
            let why = (load.failed.iter())
                .find(|failed| path_of(&failed.url).as_deref() == Some(*first))
                .map_or("never asked for", |failed| failed.why.as_str());
            bail!(
                "page load {number} of the `{shape}` site went on without {} of its {assets} \
                 assets: {first}: {why}",
                missing.len(),
            );
        }
        let document = load.resources.first().map_or(0, |resource| resource.bytes);
        bail!(
            "page load {number} of the `{shape}` site missed {} of its {assets} assets ({first}, \
             ...), and the page itself was {document} B: the server does not seem to serve the \
             site as https://{authority}/; a server command must answer for that host name, not \
             for its address alone (e.g. Caddy's site address `https://:{{port}}`)",
            missing.len(),
        );
    }
    Ok(())
}

/// The median of the values known; `None` if none is.
fn median_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let mut known: Vec<f64> = values.flatten().collect();
    h3lab_results::quantile::median(&mut known)
}

/// A page cell's record from its client's report: every load time as a
/// sample (in load order), the median load's resource count and bytes, and
/// the report cut down to that one median load, which keeps its waterfall
/// but keeps `results.json` small.
fn fill_from_page(mut report: PageReport, record: &mut CellRecord) -> anyhow::Result<()> {
    let median = report
        .median_load()
        .context("the page run reported no load")?;
    record.metric.samples = report.loads.iter().map(|load| load.load_ms).collect();
    record.connections_per_load = (report.loads.iter())
        .map(|load| load.connections().map(|count| count as u32))
        .collect();
    // Resources the loads went on without (a beacon, an image), over
    // every load: a page that lost them is not the page measured.
    record.errors = (report.loads.iter())
        .map(|load| load.failed.len() as u64)
        .sum();
    let load = report.loads.swap_remove(median);
    record.requests = load.resources.len() as u64;
    record.bytes = load.bytes();
    record.latency_histogram = None;
    record.ttfb_histogram = None;
    report.loads = vec![load];
    record.client_report = Some(report.into());
    Ok(())
}

/// The body the client asks for as `/bytes/N`, which a server command
/// serves from a file of that size; `None` for page cells.
fn body_size(spec: &CellSpec) -> Option<u64> {
    match &spec.workload.load {
        Load::Rps { size, .. } | Load::Download { size, .. } => size.map(|size| size.0),
        Load::Ttfb { .. } | Load::Conformance { .. } => Some(client::TTFB_BODY_SIZE),
        Load::Page { .. } => None,
    }
}

/// The directory the server of a page cell serves: the suite's own, or the
/// synthetic site of its shape, generated from the suite's seed into the
/// run's scratch space by the first cell that needs it. `None` for other
/// workloads.
fn site_dir(plan: &CellPlan, scratch: &Path) -> anyhow::Result<Option<PathBuf>> {
    let (spec, seed) = (&plan.spec, plan.site_seed);
    let Load::Page { site, .. } = &spec.workload.load else {
        return Ok(None);
    };
    let name = match site {
        Site::Remote => return Ok(None),
        Site::Dir(dir) => {
            let dir = dir
                .canonicalize()
                .with_context(|| format!("the site directory {} is gone", dir.display()))?;
            return Ok(Some(dir));
        }
        Site::Shape(shape) => format!("site-{shape}-{seed}"),
        Site::Har(_) => format!("replay-{}", spec.workload.name()),
    };
    let dir = scratch.join(&name);
    if !dir.is_dir() {
        // Written aside and renamed into place: a site directory that
        // exists is complete.
        let partial = scratch.join(format!(".{name}.partial"));
        if partial.exists() {
            std::fs::remove_dir_all(&partial)
                .with_context(|| format!("cannot remove {}", partial.display()))?;
        }
        write_site(site, seed, &partial)?;
        std::fs::rename(&partial, &dir)
            .with_context(|| format!("cannot move the site to {}", dir.display()))?;
    }
    Ok(Some(dir))
}

/// Generates a shape's site, or imports a HAR as a replay site, into `out`.
fn write_site(site: &Site, seed: u64, out: &Path) -> anyhow::Result<()> {
    match site {
        Site::Shape(shape) => h3lab_site::generate(*shape, seed, out)
            .map(drop)
            .with_context(|| format!("generating the `{shape}` site")),
        Site::Har(har) => crate::suite::import_har(&har.path, &har.import, out)
            .map(drop)
            .with_context(|| format!("importing {}", har.path.display())),
        Site::Dir(dir) => bail!("{} is served where it is, not written", dir.display()),
        Site::Remote => bail!("a field run's page is on its server, not written"),
    }
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
        Load::Ttfb { .. } | Load::Page { .. } | Load::Conformance { .. } => {
            bail!("a {} cell got a load report", spec.workload.kind())
        }
    }
}

/// `502 x40, 504 x2`: the error statuses and how often each came.
fn error_statuses(report: &LoadReport) -> String {
    let statuses: Vec<String> = (report.status_counts.iter())
        .filter(|(status, _)| **status >= 400)
        .map(|(status, count)| format!("{status} x{count}"))
        .collect();
    statuses.join(", ")
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
        Load::Page { .. } => ("page_load_ms", "ms", false),
        Load::Conformance { .. } => ("failed_cases", "cases", false),
    };
    CellRecord {
        profile: spec.profile.clone(),
        workload: spec.workload_label(),
        sweep: spec.setting.as_ref().map(|setting| setting.recorded()),
        kind: spec.workload.kind(),
        protocol: spec.protocol,
        mode: spec.mode,
        repetition: spec.record_repetition(),
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
        server_metrics: None,
        elapsed_s: 0.0,
        initial_windows: None,
        dns: None,
        connections_per_load: None,
        measured_rtt_ms: None,
        wire: None,
        header_blocks: None,
        replica: spec.replica,
        edge: None,
        h3_features: None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::Suite;
    use h3lab_results::bench::{Loss, LossDirection, Rate};
    use h3lab_results::page::{PageLoad, ResourceTiming};
    use h3lab_results::{Loader, Proto, ResourceKind, Visit, WorkloadKind};

    #[test]
    fn the_link_record_carries_the_settings_with_the_loss_direction() {
        let settings = linkem::profile("cellular").unwrap().settings.unwrap();
        let link = link_record(LinkStats::default(), &settings).unwrap();
        let recorded = link.settings.as_ref().unwrap();
        assert_eq!(recorded.loss_direction, LossDirection::Down);
        assert_eq!(recorded.loss, Loss::Bernoulli { p: 0.01 });
        assert_eq!(recorded.rtt_ns, 50_000_000);
        assert_eq!(
            recorded.down,
            Rate::Fixed {
                bits_per_sec: 50_000_000
            }
        );
        assert_eq!(link.down.packets_in, 0, "the statistics stay");
    }

    /// The typed record writes the bytes linkem's own JSON has, for every
    /// built-in profile and for a suite's profile with what those leave at
    /// their defaults (Gilbert loss both ways, normal jitter, a queue limit,
    /// a UDP policy, reordering and duplication).
    #[test]
    fn the_link_record_writes_what_linkem_writes() {
        let mut all: Vec<LinkSettings> = linkem::profiles()
            .into_iter()
            .filter_map(|profile| profile.settings)
            .collect();
        let suite = Suite::from_toml(
            "name = \"t\"\nprotocols = [\"h3\"]\nprofiles = [\"odd\"]\n\
             [[profile]]\nname = \"odd\"\nbase = \"cellular\"\n\
             loss_model = \"gilbert:1%,30%,0%,50%\"\nloss_direction = \"both\"\n\
             jitter = \"3ms:normal\"\nqueue = \"64kb\"\nudp = \"blocked-after:20\"\n\
             [[workload]]\nkind = \"ttfb\"\nname = \"hs\"\n",
        )
        .unwrap();
        let odd = crate::profile::settings(&suite, "odd", 3).unwrap().unwrap();
        all.push(LinkSettings {
            reorder: Some(linkem::model::ReorderSpec {
                probability: 0.01,
                extra_delay: 5_000_000,
            }),
            duplicate: 0.001,
            ..odd.clone()
        });
        all.push(odd);
        for settings in all {
            let mut linkem = serde_json::to_value(LinkStats::default()).unwrap();
            linkem["settings"] = serde_json::to_value(&settings).unwrap();
            let typed = link_record(LinkStats::default(), &settings).unwrap();
            assert_eq!(
                serde_json::to_string_pretty(&typed).unwrap(),
                serde_json::to_string_pretty(&linkem).unwrap(),
                "{settings:?}"
            );
        }
    }

    fn page_spec(loads: u32) -> CellSpec {
        let suite = Suite::from_toml(&format!(
            "name = \"t\"\nprotocols = [\"h3\"]\nprofiles = [\"loopback\"]\nrepetitions = 1\n\
             [[workload]]\nkind = \"page\"\nname = \"p\"\nsite = \"small\"\nloads = {loads}\n"
        ))
        .unwrap();
        crate::runner::plan(&suite).remove(0)
    }

    fn load(ms: f64, sizes: &[u64]) -> PageLoad {
        PageLoad {
            failed: Vec::new(),
            path_rtt_ms: None,
            started_at: "2026-11-23T08:00:00.000Z".into(),
            load_ms: ms,
            resources: sizes
                .iter()
                .map(|&bytes| ResourceTiming {
                    method: "GET".to_string(),
                    url: "https://a.test/x".into(),
                    kind: ResourceKind::Script,
                    render_blocking: false,
                    status: 200,
                    protocol: Some("h3".into()),
                    start_ms: 0.0,
                    ttfb_ms: 1.0,
                    end_ms: ms,
                    bytes,
                    connection: Some(1),
                    stream: None,
                })
                .collect(),
            browser: None,
            skipped: Vec::new(),
        }
    }

    #[test]
    fn a_page_report_becomes_a_record_of_its_median_load() {
        let spec = page_spec(3);
        let mut report =
            PageReport::new("https://a.test/", Proto::H3, Loader::Builtin, Visit::Cold);
        report.loads = vec![
            load(300.0, &[10, 20, 30]),
            load(100.0, &[10, 20]),
            load(200.0, &[5, 5, 5, 5]),
        ];
        let run = ClientRun::Page {
            report: Box::new(report),
            cpu_s: 0.5,
        };
        let mut record = empty_record(&spec);
        fill_from_client(&spec, run, &mut record).unwrap();
        assert_eq!(record.kind, WorkloadKind::Page);
        assert_eq!(record.mode, None);
        assert_eq!(record.metric.name, "page_load_ms");
        assert_eq!(record.metric.unit, "ms");
        assert!(!record.metric.higher_is_better);
        assert_eq!(record.metric.samples, [300.0, 100.0, 200.0], "load order");
        assert_eq!(record.connections_per_load, Some(vec![1, 1, 1]));
        // The median load is the 200 ms one: 4 resources, 20 bytes.
        assert_eq!((record.requests, record.errors, record.bytes), (4, 0, 20));
        assert!(record.latency_histogram.is_none() && record.ttfb_histogram.is_none());
        let client_report = record.client_report.unwrap();
        let kept = client_report.page().unwrap();
        assert_eq!(kept.loads, [load(200.0, &[5, 5, 5, 5])]);
        assert_eq!(kept.url, "https://a.test/");
    }

    #[test]
    fn connections_per_load_are_unknown_when_a_resource_does_not_name_its_own() {
        let spec = page_spec(2);
        let mut report =
            PageReport::new("https://a.test/", Proto::H2, Loader::Chromium, Visit::Cold);
        let mut unnamed = load(100.0, &[1, 2]);
        unnamed.resources[1].connection = None;
        let mut two = load(90.0, &[1, 2]);
        two.resources[1].connection = Some(2);
        report.loads = vec![two.clone(), two];
        let run = |report: PageReport| ClientRun::Page {
            report: Box::new(report),
            cpu_s: 0.1,
        };
        let mut record = empty_record(&spec);
        fill_from_client(&spec, run(report.clone()), &mut record).unwrap();
        assert_eq!(record.connections_per_load, Some(vec![2, 2]));
        report.loads[1] = unnamed;
        fill_from_client(&spec, run(report), &mut record).unwrap();
        assert_eq!(record.connections_per_load, None);
    }

    #[test]
    fn a_page_run_missing_loads_is_an_error() {
        let spec = page_spec(3);
        let mut report =
            PageReport::new("https://a.test/", Proto::H3, Loader::Builtin, Visit::Cold);
        report.loads = vec![load(100.0, &[1])];
        let run = ClientRun::Page {
            report: Box::new(report),
            cpu_s: 0.0,
        };
        let err = fill_from_client(&spec, run, &mut empty_record(&spec)).unwrap_err();
        assert!(err.to_string().contains("1 of 3 loads"), "{err}");
    }

    /// A load of the generated site with the paths given, as the loader
    /// reports it (the document first).
    fn site_load(paths: &[&str]) -> PageLoad {
        let mut page = load(100.0, &vec![1000; paths.len()]);
        for (resource, path) in page.resources.iter_mut().zip(paths) {
            resource.url = format!("https://a.test{path}");
        }
        page
    }

    #[test]
    fn a_site_load_without_some_assets_names_them_and_without_all_names_the_host() {
        let suite = Suite::from_toml(
            "name = \"t\"\nprotocols = [\"h3\"]\nprofiles = [\"loopback\"]\n\
             [[workload]]\nkind = \"page\"\nname = \"p\"\nsite = \"small\"\nloads = 1\n",
        )
        .unwrap();
        let spec = crate::runner::plan(&suite).remove(0);
        let plan = h3lab_site::plan(h3lab_site::Shape::Small, suite.seed);
        let assets: Vec<&str> = plan.assets().map(|file| file.path.as_str()).collect();
        let mut report =
            PageReport::new("https://a.test/", Proto::H3, Loader::Builtin, Visit::Cold);
        let cell = CellPlan::new(&suite, &spec).unwrap();
        let check = |report: &PageReport| check_whole_site(&cell, report, "a.test:443");
        let whole: Vec<&str> = std::iter::once("/").chain(assets.iter().copied()).collect();
        report.loads = vec![site_load(&whole)];
        check(&report).unwrap();
        // One asset failed with a reset stream: named, with why.
        let mut partial = site_load(&whole[..whole.len() - 1]);
        partial.failed.push(h3lab_results::page::FailedResource {
            method: "GET".into(),
            url: format!("https://a.test{}", assets[assets.len() - 1]),
            why: "the stream was reset".into(),
        });
        report.loads = vec![partial];
        let err = check(&report).unwrap_err().to_string();
        let expected = format!(
            "went on without 1 of its {} assets: {}: the stream was reset",
            assets.len(),
            assets[assets.len() - 1]
        );
        assert!(err.contains(&expected), "{err}");
        assert!(!err.contains("host name"), "{err}");
        // The page alone: the server answered another site.
        report.loads = vec![site_load(&["/"])];
        let err = check(&report).unwrap_err().to_string();
        assert!(err.contains("must answer for that host name"), "{err}");
    }
}
