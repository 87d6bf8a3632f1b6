//! The matrix runner: expands a suite into cells and runs each on a fresh
//! emulated path, recording what it measured. Cells run in order
//! repetition → profile → workload → mode → swept setting → protocol, so
//! the protocols of one condition run back to back and slow drifts of the
//! machine hit them alike.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

pub use crate::cell::RunContext;

use crate::cell;
use anyhow::Context;
use h3lab_site::replay::Think;
use linkem::run::Interrupted;
use linkem::EmulatedPath;

use crate::environment;
use crate::handoff::HandoffPlan;
use crate::plan::CellPlan;
use crate::profile;
use crate::spec::{CellSpec, Unit};
use crate::suite::{Load, PublishedFigure, Site, Suite, Workload};
use crate::sweep::Sweep;
use h3lab_results::bench::{
    CapturedPage, CellRecord, ClaimSweep, Replica, Results, ServerRow, StudyClaim, SuiteInfo,
    RESULTS_SCHEMA,
};
use h3lab_results::conformance::CONFORMANCE_CASES;
use h3lab_results::handoff::HandoffRecord;
use h3lab_results::{Proto, Visit};

/// Every cell of the suite, in run order. In a field run each page load
/// and ttfb sample is a cell of its own, and the protocols take turns
/// load by load, so a real path's drift hits them alike.
pub fn plan(suite: &Suite) -> Vec<CellSpec> {
    let mut cells = Vec::new();
    for repetition in 0..suite.repetitions.0 {
        for profile in &suite.profiles {
            for workload in suite.workloads.iter().filter(|w| w.runs_on(profile)) {
                for mode in modes_of(workload) {
                    for setting in Sweep::settings_for(suite.sweep.as_ref(), workload.name()) {
                        for unit in units_of(suite, workload) {
                            for &protocol in &suite.protocols {
                                if mode.is_none_or(|m| m.applies_to(protocol))
                                    && workload.runs_over(protocol)
                                    && suite.offers(setting.as_ref(), protocol)
                                {
                                    for replica in replicas(suite) {
                                        cells.push(CellSpec {
                                            profile: profile.clone(),
                                            workload: workload.clone(),
                                            protocol,
                                            mode,
                                            setting: setting.clone(),
                                            repetition,
                                            unit,
                                            replica,
                                        });
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    cells
}

/// What an A/A of a field run can and cannot show, said before it runs.
pub const FIELD_AA_NOTE: &str =
    "note: an A/A of a field run compares loads made back to back over \
a real path that drifts. Its false verdicts count the path's drift between the two replicas as \
well as the noise, so they show how far a verdict on this path can be trusted, not the test's \
error rate alone; the load on the real server doubles.";

/// An A/A run's two replicas of every cell, back to back as protocols
/// run (A first, so an effect of running second shows as a false
/// verdict); one cell otherwise.
fn replicas(suite: &Suite) -> Vec<Option<Replica>> {
    match suite.aa {
        true => vec![Some(Replica::A), Some(Replica::B)],
        false => vec![None],
    }
}

/// A field run's loads (page) or samples (ttfb) of one repetition, each
/// a cell; one cell of the whole workload otherwise.
fn units_of(suite: &Suite, workload: &Workload) -> Vec<Option<Unit>> {
    let count = match (&workload.load, suite.is_field()) {
        (Load::Page { loads, .. }, true) => loads.0,
        (Load::Ttfb { samples, .. }, true) => samples.0,
        _ => return vec![None],
    };
    (0..count)
        .map(|index| Some(Unit { index, count }))
        .collect()
}

/// The plan's rough wall time in whole minutes, as `--list`, `--dry-run`
/// and a run's first line say it.
pub fn estimated_minutes(suite: &Suite, cells: &[CellSpec]) -> u64 {
    let seconds: Vec<f64> = (cells.iter())
        .map(|cell| estimated_seconds(suite, cell))
        .collect();
    whole_minutes(&seconds)
}

/// Cells' estimated seconds as whole minutes in all.
pub fn whole_minutes(seconds: &[f64]) -> u64 {
    (seconds.iter().sum::<f64>() / 60.0).round() as u64
}

/// Rough wall time of a cell: set-up plus the workload's own length on the
/// profile's path.
pub fn estimated_seconds(suite: &Suite, cell: &CellSpec) -> f64 {
    const SETUP_S: f64 = 1.0;
    let settings = profile::settings(suite, &cell.profile, suite.seed)
        .ok()
        .flatten();
    let (rtt_s, down_bits_per_s, loss) = settings.map_or((0.0, 10e9, 0.0), |s| {
        let rate = s.down.mean_bits_per_sec().unwrap_or(10e9);
        (s.rtt as f64 / 1e9, rate, s.loss.mean_loss())
    });
    let pause = match suite.is_field() {
        true => crate::field::pause(suite).as_secs_f64(),
        false => 0.0,
    };
    let units = |asked: u32| match cell.unit {
        Some(_) => 1.0,
        None => f64::from(asked),
    };
    SETUP_S
        + pause
        + match &cell.workload.load {
            Load::Rps { duration, .. } => duration.0.as_secs_f64(),
            Load::Download { size, streams, .. } => {
                let bytes = size.map_or(UNKNOWN_BODY_BYTES, |size| size.0 as f64);
                bytes * f64::from(streams.0) * 8.0 / down_bits_per_s + 20.0 * rtt_s
            }
            Load::Ttfb { samples, .. } => (units(samples.0) + 1.0) * 4.0 * rtt_s,
            // Cases of a few round trips and a 200 ms settle each: 5-15 s a
            // server on loopback, minutes for one that stalls (kwik); the
            // `conformance` preset's 11 servers took 13 min 55 s (71 cases,
            // twice each, 2026-12-05).
            Load::Conformance { .. } => CONFORMANCE_CASES as f64 * (0.5 + 4.0 * rtt_s),
            Load::Page {
                site, visit, loads, ..
            } => {
                let measured = units(loads.0);
                let primed = match visit {
                    Visit::Cold => 0.0,
                    Visit::Warm | Visit::Repeat => 1.0,
                };
                let page = PageSize::of(site, suite.seed);
                let path = PathShape {
                    rtt_s,
                    down_bits_per_s,
                    loss,
                };
                (measured + primed) * page_load_seconds(&page, cell.protocol, &path)
            }
        }
}

/// A field download's size as the estimate assumes it (the response's is
/// unknown until it arrives): 10 MB.
const UNKNOWN_BODY_BYTES: f64 = 10e6;

/// What decides a page load's length: its bytes and its resources.
struct PageSize {
    bytes: f64,
    resources: f64,
}

impl PageSize {
    fn of(site: &Site, seed: u64) -> PageSize {
        let (bytes, resources) = match site {
            Site::Shape(shape) => {
                let plan = h3lab_site::plan(*shape, seed);
                let bytes = plan.files.iter().map(|file| file.bytes).sum();
                (bytes, plan.files.len() as u64 + 1)
            }
            Site::Dir(dir) => directory_size(dir),
            Site::Har(har) => (har.bytes, har.responses as u64),
            // A deployed page is unknown until loaded: the estimate takes
            // a median web page (HTTP Archive, 2024: about 2.5 MB, 70
            // requests).
            Site::Remote => (2_500_000, 70),
        };
        PageSize {
            bytes: bytes as f64,
            resources: resources as f64,
        }
    }
}

/// The path as the estimate sees it.
struct PathShape {
    rtt_s: f64,
    down_bits_per_s: f64,
    loss: f64,
}

/// Rough time of one page load over `proto`, in round trips:
/// - the handshake: TCP, then TLS 1.3 (two), or QUIC (one);
/// - the chain of discoveries (document, stylesheet or module, import):
///   three, or, for h1, which carries one request at a time on each of its
///   six connections, N resources ÷ 6 if that is more;
/// - slow start: a 10-segment window doubling each round trip until a
///   connection's share of the bytes, or the path's bandwidth-delay
///   product, is in flight;
///
/// then the bytes at the link's rate (the loader and the user-space link
/// do not go much beyond a few hundred Mbit/s here), and retransmissions
/// when the path loses packets. Study C's preset, 108 cells, was
/// estimated at 15 min by the protocol-blind model before this one and took
/// 22 min 16 s on the 2-core machine (2026-11-26); this one says 23 min.
fn page_load_seconds(page: &PageSize, proto: Proto, path: &PathShape) -> f64 {
    const PER_LOAD_S: f64 = 0.05;
    const FASTEST_BITS_PER_S: f64 = 300e6;
    const INITIAL_WINDOW_BYTES: f64 = 14_600.0;
    const CHAIN: f64 = 3.0;
    const H1_CONNECTIONS: f64 = 6.0;
    let rate = path.down_bits_per_s.min(FASTEST_BITS_PER_S);
    let (handshake, connections, serial) = match proto {
        Proto::H3 => (1.0, 1.0, 0.0),
        Proto::H1 => (
            2.0,
            H1_CONNECTIONS,
            (page.resources / H1_CONNECTIONS).ceil(),
        ),
        Proto::H2 | Proto::Auto => (2.0, 1.0, 0.0),
    };
    let bdp_bytes = rate / 8.0 * path.rtt_s;
    let in_flight = (page.bytes / connections).min(bdp_bytes.max(INITIAL_WINDOW_BYTES));
    let slow_start = (in_flight / INITIAL_WINDOW_BYTES + 1.0).log2();
    let round_trips = handshake + CHAIN.max(serial) + slow_start;
    let seconds = PER_LOAD_S + round_trips * path.rtt_s + page.bytes * 8.0 / rate;
    seconds * (1.0 + 20.0 * path.loss)
}

/// Bytes and files below `dir` (an unreadable one counts as empty: this
/// is only an estimate).
fn directory_size(dir: &std::path::Path) -> (u64, u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => directory_size(&entry.path()),
            Ok(kind) if kind.is_file() => (entry.metadata().map_or(0, |m| m.len()), 1),
            _ => (0, 0),
        })
        .fold((0, 0), |(bytes, files), (b, f)| (bytes + b, files + f))
}

/// Fails early, with linkem's explanation, when this process cannot build
/// the suite's emulated paths and work in them, instead of failing every
/// cell the same way. Without root a path can be built in user namespaces,
/// but a cell also checks its server from a thread inside the path, which
/// only root can do.
pub fn check_can_emulate(suite: &Suite) -> anyhow::Result<()> {
    for name in &suite.profiles {
        let Some(settings) = profile::settings(suite, name, suite.seed)? else {
            continue;
        };
        let cannot = || format!("`h3lab bench` cannot emulate profile `{name}`");
        let mut path = EmulatedPath::start(settings.build()).with_context(cannot)?;
        let inside = path.spawn_in_client(|| ()).with_context(cannot)?;
        inside
            .join()
            .map_err(|_| anyhow::anyhow!("a thread inside the path panicked"))?;
        if suite.is_field() {
            path.route_out().with_context(|| {
                format!("`h3lab bench` cannot take profile `{name}` out to the real path")
            })?;
        }
        path.shutdown()?;
        return Ok(());
    }
    Ok(())
}

fn modes_of(workload: &Workload) -> Vec<Option<h3lab_results::TtfbMode>> {
    match &workload.load {
        Load::Ttfb { modes, .. } => modes.iter().copied().map(Some).collect(),
        _ => vec![None],
    }
}

/// An empty result set for `suite`, ready to receive cells.
pub fn new_results(suite: &Suite, ctx: &RunContext) -> Results {
    Results {
        schema: RESULTS_SCHEMA.to_string(),
        suite: suite_info(suite, ctx),
        environment: environment::capture(suite),
        started_at: now_rfc3339(),
        finished_at: None,
        interrupted: false,
        cells: Vec::new(),
        studies: study_claims(suite),
        captures: captured_pages(suite),
        field: ctx.field.as_ref().map(|field| field.record.clone()),
        handoffs: Vec::new(),
    }
}

/// The HARs the page workloads replay, with what each recorded.
fn captured_pages(suite: &Suite) -> Vec<CapturedPage> {
    let hars = suite
        .workloads
        .iter()
        .filter_map(|workload| match &workload.load {
            Load::Page {
                site: Site::Har(har),
                ..
            } => Some((workload.name(), har)),
            _ => None,
        });
    hars.map(|(workload, har)| CapturedPage {
        workload: workload.to_string(),
        har: har.path.display().to_string(),
        tool: har.recorded.tool.clone(),
        page: har.page.clone(),
        origins: har.origins,
        responses: har.responses,
        outside_load: har.outside_load,
        protocol: har.recorded.protocol.clone(),
        on_load_ms: har.recorded.on_load_ms,
        on_content_load_ms: har.recorded.on_content_load_ms,
        upgraded_from_cleartext: har.import.upgrade_cleartext,
        without_think_time: har.import.think == Think::None,
    })
    .collect()
}

/// What just finished: a cell, or one of a population's handoff runs.
pub enum Finished<'a> {
    /// A cell's repetition.
    Cell(&'a CellRecord),
    /// A handoff run.
    Handoff(&'a HandoffRecord),
}

/// Runs every cell, then the population's `handoffs` (from
/// [`crate::handoff::plan`]), calling `after_each` with the results so far
/// after each (so they can be written to disk at once). Stops early when
/// `ctx.stop` is set; the results then say `interrupted`.
pub fn run(
    suite: &Suite,
    ctx: &RunContext,
    handoffs: &[HandoffPlan],
    mut after_each: impl FnMut(&Results, Finished),
) -> Results {
    let mut results = new_results(suite, ctx);
    for (i, spec) in plan(suite).into_iter().enumerate() {
        if ctx.stop.load(Ordering::Relaxed) {
            results.interrupted = true;
            break;
        }
        if let (Some(_), true) = (&ctx.field, i > 0) {
            pause(crate::field::pause(suite), &ctx.stop);
        }
        let refusal = (ctx.field.as_ref()).and_then(|field| field.refusal(suite, &spec));
        let planned = CellPlan::new(suite, &spec);
        let mut record = match (refusal, planned) {
            (Some(refusal), _) => cell::refused(&spec, refusal),
            (None, Err(err)) => cell::refused(&spec, format!("{err:#}")),
            (None, Ok(plan)) => cell::run(&plan, ctx, &mut results.environment.server_tuning),
        };
        if ctx.field.is_some() {
            record.profile = crate::field::profile_label(&spec.profile);
        }
        results.cells.push(record);
        if ctx.stop.load(Ordering::Relaxed) {
            results.interrupted = true;
        }
        after_each(
            &results,
            Finished::Cell(results.cells.last().expect("just pushed")),
        );
    }
    let interrupted = Interrupted::watching(ctx.stop.clone());
    for plan in handoffs {
        if results.interrupted || interrupted.is_set() {
            results.interrupted = true;
            break;
        }
        results
            .handoffs
            .push(crate::handoff::run(plan, &ctx.exe, &interrupted));
        results.interrupted = interrupted.is_set();
        after_each(
            &results,
            Finished::Handoff(results.handoffs.last().expect("just pushed")),
        );
    }
    results.finished_at = Some(now_rfc3339());
    results
}

/// Waits `how_long`, or until Ctrl-C.
fn pause(how_long: std::time::Duration, stop: &std::sync::atomic::AtomicBool) {
    let end = std::time::Instant::now() + how_long;
    while !stop.load(Ordering::Relaxed) {
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(50)));
    }
}

fn suite_info(suite: &Suite, ctx: &RunContext) -> SuiteInfo {
    SuiteInfo {
        name: suite.name.clone(),
        preset: ctx.preset.clone(),
        description: suite.description.clone(),
        protocols: suite
            .protocols
            .iter()
            .flat_map(|protocol| {
                let protocol = protocol.to_string();
                replicas(suite)
                    .into_iter()
                    .map(move |replica| match replica {
                        Some(replica) => replica.label(&protocol),
                        None => protocol.clone(),
                    })
            })
            .collect(),
        profiles: match ctx.field {
            Some(_) => suite
                .profiles
                .iter()
                .map(|p| crate::field::profile_label(p))
                .collect(),
            None => suite.profiles.clone(),
        },
        workloads: workload_labels(suite),
        repetitions: suite.repetitions.0,
        seed: suite.seed,
        warmup_s: suite.warmup.0.as_secs_f64(),
        baseline: suite.baseline.to_string(),
        target: match &suite.target.server_cmd {
            _ if suite.is_field() => {
                let urls: Vec<String> = suite.target.url.iter().map(|u| u.to_string()).collect();
                format!(
                    "field: {} (a deployed server, over the real path)",
                    urls.join(", ")
                )
            }
            Some(command) => format!("custom server: {command}"),
            None if !suite.target.servers.is_empty() => {
                let servers: Vec<String> = suite
                    .target
                    .servers
                    .iter()
                    .map(|(name, command)| format!("{name}: {command}"))
                    .collect();
                format!(
                    "per row ([sweep] server); builtin: h3lab serve; {}",
                    servers.join("; ")
                )
            }
            None => "built-in server (h3lab serve)".to_string(),
        },
        aa: suite.aa,
        servers: server_rows(suite),
        population: suite.population.clone(),
        pages: page_sites(suite),
    }
}

/// What each page workload loads, by workload name.
fn page_sites(suite: &Suite) -> BTreeMap<String, String> {
    (suite.workloads.iter())
        .filter_map(|workload| match &workload.load {
            Load::Page { site, .. } => Some((workload.name().to_string(), site.describe())),
            _ => None,
        })
        .collect()
}

/// Each workload's row label (one per swept value), once: a population
/// runs copies of a page workload under its name, one per group.
fn workload_labels(suite: &Suite) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    for workload in &suite.workloads {
        for setting in Sweep::settings_for(suite.sweep.as_ref(), workload.name()) {
            let label = crate::sweep::workload_label(workload.name(), setting.as_ref());
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
    }
    labels
}

/// The rows of a `server` sweep, with each one's stack and protocols.
fn server_rows(suite: &Suite) -> Vec<ServerRow> {
    let Some(sweep) = &suite.sweep else {
        return Vec::new();
    };
    let every = crate::suite::fixed_protocols();
    sweep
        .values
        .iter()
        .filter_map(crate::sweep::Setting::server)
        .map(|name| match suite.target.servers.get(name) {
            Some(server) => ServerRow {
                name: name.to_string(),
                stack: server.stack().map(str::to_string),
                offers: every
                    .iter()
                    .copied()
                    .filter(|p| server.offers(*p))
                    .collect(),
            },
            None => ServerRow {
                name: name.to_string(),
                stack: Some("quinn".to_string()),
                offers: every.clone(),
            },
        })
        .collect()
}

pub(crate) fn study_claims(suite: &Suite) -> Vec<StudyClaim> {
    suite
        .published
        .iter()
        .map(|figure| StudyClaim {
            study: figure.study.clone(),
            profile: figure.profile.clone(),
            workload: match (&figure.row, &suite.sweep) {
                (Some(value), Some(sweep)) => {
                    crate::sweep::workload_label(&figure.workload, sweep.value_named(value))
                }
                _ => figure.workload.clone(),
            },
            mode: figure.mode.clone(),
            unit: figure.unit.clone(),
            higher_is_better: figure.higher_is_better,
            published: published_values(figure),
            sweep: figure
                .sweep
                .as_ref()
                .zip(suite.sweep.as_ref())
                .map(|(published, sweep)| ClaimSweep {
                    tunable: sweep.tunable.name().to_string(),
                    baseline: published.baseline.clone(),
                }),
            label: figure.label.clone(),
            measure: figure.measure,
            caveat: figure.caveat.clone(),
        })
        .collect()
}

/// The published values per protocol, or a published difference as the
/// one key `subject-other` (the report's convention, results-schema.md).
fn published_values(figure: &PublishedFigure) -> std::collections::BTreeMap<String, f64> {
    if let Some(d) = &figure.difference {
        return [(format!("{}-{}", d.subject, d.other), d.value)].into();
    }
    if let Some(sweep) = &figure.sweep {
        return sweep.values.clone();
    }
    [("h1", figure.h1), ("h2", figure.h2), ("h3", figure.h3)]
        .into_iter()
        .filter_map(|(proto, value)| value.map(|v| (proto.to_string(), v)))
        .collect()
}

/// Seconds since the Unix epoch, formatted as RFC 3339 UTC.
fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Where a run writes when not told: `h3lab-results/<suite>-<time>`, the
/// time without colons, which some file systems refuse.
pub fn default_out_dir(suite: &Suite) -> PathBuf {
    let stamp = now_rfc3339().replace(':', "");
    PathBuf::from("h3lab-results").join(format!("{}-{stamp}", suite.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use h3lab_results::Proto;

    /// An h2 and h3 suite on broadband with these repetitions and tables.
    fn h2_h3_suite(repetitions: u32, tables: &str) -> Suite {
        Suite::from_toml(&format!(
            "name = \"t\"\nprotocols = [\"h2\", \"h3\"]\nprofiles = [\"broadband\"]\n\
             repetitions = {repetitions}\n{tables}"
        ))
        .unwrap()
    }

    #[test]
    fn the_default_out_dir_is_named_after_the_suite_and_the_time() {
        let dir = default_out_dir(&h2_h3_suite(
            1,
            "[[workload]]\nkind = \"ttfb\"\nname = \"hs\"\n",
        ));
        assert_eq!(dir.parent(), Some(std::path::Path::new("h3lab-results")));
        let name = dir.file_name().unwrap().to_str().unwrap();
        let stamp = name.strip_prefix("t-").unwrap();
        assert!(stamp.ends_with('Z') && !stamp.contains(':'), "{name}");
    }

    #[test]
    fn plan_interleaves_protocols_and_skips_zero_rtt_for_tcp() {
        let suite = h2_h3_suite(
            2,
            r#"
[[workload]]
kind = "ttfb"
name = "hs"
modes = ["cold", "0rtt"]
"#,
        );
        let cells = plan(&suite);
        let labels: Vec<String> = cells
            .iter()
            .map(|c| format!("{}{}{}", c.repetition, c.mode.unwrap(), c.protocol))
            .collect();
        assert_eq!(
            labels,
            ["0coldh2", "0coldh3", "00rtth3", "1coldh2", "1coldh3", "10rtth3"]
        );
        assert!(cells.iter().all(|c| c.mode.unwrap().applies_to(c.protocol)));
        assert_eq!(cells.iter().filter(|c| c.protocol == Proto::H3).count(), 4);
    }

    #[test]
    fn an_a_a_run_runs_every_cell_twice_back_to_back_as_two_replicas() {
        let tables = "[[workload]]\nkind = \"ttfb\"\nname = \"hs\"\nmodes = [\"cold\"]\n";
        let mut suite = h2_h3_suite(2, tables);
        suite.aa = true;
        let labels: Vec<String> = plan(&suite).iter().map(CellSpec::label).collect();
        assert_eq!(
            labels,
            [
                "broadband hs cold h2 #1",
                "broadband hs cold h2 again #1",
                "broadband hs cold h3 #1",
                "broadband hs cold h3 again #1",
                "broadband hs cold h2 #2",
                "broadband hs cold h2 again #2",
                "broadband hs cold h3 #2",
                "broadband hs cold h3 again #2",
            ]
        );
        let context = RunContext {
            exe: PathBuf::new(),
            scratch: PathBuf::new(),
            stop: Default::default(),
            preset: None,
            field: None,
        };
        let info = suite_info(&suite, &context);
        assert!(info.aa);
        assert_eq!(info.protocols, ["h2", "h2 again", "h3", "h3 again"]);
    }

    #[test]
    fn a_field_run_takes_turns_load_by_load_and_counts_each_load_as_a_repetition() {
        let suite = Suite::from_toml(
            "name = \"t\"\nprotocols = [\"h2\", \"h3\"]\nprofiles = [\"real\"]\nrepetitions = 2\n\
             [target]\nurl = \"https://www.site.test/\"\n\
             [[workload]]\nkind = \"page\"\nname = \"p\"\nloads = 2\n",
        )
        .unwrap();
        let cells = plan(&suite);
        let labels: Vec<String> = cells.iter().map(CellSpec::label).collect();
        assert_eq!(
            labels,
            [
                "real p h2 #1.1",
                "real p h3 #1.1",
                "real p h2 #1.2",
                "real p h3 #1.2",
                "real p h2 #2.1",
                "real p h3 #2.1",
                "real p h2 #2.2",
                "real p h3 #2.2"
            ]
        );
        let counted: Vec<u32> = cells.iter().map(CellSpec::record_repetition).collect();
        assert_eq!(counted, [0, 0, 1, 1, 2, 2, 3, 3]);
        assert!(cells.iter().all(|c| c.workload.url.is_some()));
    }

    #[test]
    fn a_sweep_runs_each_value_of_its_workloads_with_protocols_back_to_back() {
        let suite = h2_h3_suite(
            1,
            r#"
[[workload]]
kind = "rps"
name = "small"
size = "1KB"
duration = "1s"
[[workload]]
kind = "download"
name = "big"
size = "1MB"
[sweep]
tunable = "cc"
values = ["cubic", "bbr"]
workloads = ["small"]
"#,
        );
        let labels: Vec<String> = plan(&suite)
            .iter()
            .map(|c| format!("{} {}", c.workload_label(), c.protocol))
            .collect();
        assert_eq!(
            labels,
            [
                "small [cc=cubic] h2",
                "small [cc=cubic] h3",
                "small [cc=bbr] h2",
                "small [cc=bbr] h3",
                "big h2",
                "big h3"
            ]
        );
    }

    #[test]
    fn a_sweep_needs_the_built_in_server_and_real_workloads() {
        let suite = |extra: &str| {
            Suite::from_toml(&format!(
                "name = \"t\"\nprotocols = [\"h2\"]\nprofiles = [\"broadband\"]\n{extra}\n\
                 [[workload]]\nkind = \"rps\"\nname = \"small\"\nsize = \"1KB\"\nduration = \"1s\"\n\
                 [sweep]\ntunable = \"gso\"\nvalues = [\"on\", \"off\"]\nworkloads = [\"small\"]\n"
            ))
        };
        assert!(suite("").is_ok());
        let err = suite("[target]\nserver_cmd = \"caddy run\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("built-in server"), "{err}");
        let err = Suite::from_toml(
            "name = \"t\"\nprotocols = [\"h2\"]\nprofiles = [\"broadband\"]\n\
             [[workload]]\nkind = \"rps\"\nname = \"small\"\nsize = \"1KB\"\nduration = \"1s\"\n\
             [sweep]\ntunable = \"gso\"\nvalues = [\"on\", \"off\"]\nworkloads = [\"tiny\"]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("workload `tiny`"), "{err}");
    }

    fn page_suite(profile: &str, site: &str, visit: &str, loads: u32) -> Suite {
        Suite::from_toml(&format!(
            "name = \"t\"\nprotocols = [\"h2\"]\nprofiles = [\"{profile}\"]\nrepetitions = 1\n\
             [[workload]]\nkind = \"page\"\nname = \"p\"\nsite = \"{site}\"\nvisit = \"{visit}\"\nloads = {loads}\n"
        ))
        .unwrap()
    }

    fn estimate(suite: &Suite) -> f64 {
        let cells = plan(suite);
        assert_eq!(cells.len(), 1);
        estimated_seconds(suite, &cells[0])
    }

    fn page_suite_over(proto: &str, profile: &str, site: &str, visit: &str, loads: u32) -> Suite {
        let text = format!(
            "name = \"t\"\nprotocols = [\"{proto}\"]\nprofiles = [\"{profile}\"]\nrepetitions = 1\n\
             [[workload]]\nkind = \"page\"\nname = \"p\"\nsite = \"{site}\"\nvisit = \"{visit}\"\nloads = {loads}\n"
        );
        Suite::from_toml(&text).unwrap()
    }

    #[test]
    fn page_estimate_follows_loads_round_trips_bytes_and_loss() {
        let small = estimate(&page_suite("broadband", "small", "cold", 5));
        // Twice the loads, about twice the time; a warm visit adds its priming load.
        let ten = estimate(&page_suite("broadband", "small", "cold", 10));
        assert!((ten - 1.0 - 2.0 * (small - 1.0)).abs() < 1e-6);
        let warm = estimate(&page_suite("broadband", "small", "warm", 5));
        assert!((warm - 1.0 - 6.0 / 5.0 * (small - 1.0)).abs() < 1e-6);
        // Farther, bigger and lossier all take longer.
        assert!(estimate(&page_suite("intercontinental", "small", "cold", 5)) > small);
        assert!(estimate(&page_suite("broadband", "spa", "cold", 5)) > small);
        let lossy = estimate(&page_suite("lte-poor", "cms", "cold", 5));
        let clean = estimate(&page_suite("lte", "cms", "cold", 5));
        assert!(lossy > 2.0 * clean, "{lossy} vs {clean}");
    }

    #[test]
    fn page_estimate_counts_each_protocols_round_trips() {
        let far = |proto: &str, site: &str| {
            estimate(&page_suite_over(proto, "intercontinental", site, "cold", 1)) - 1.0
        };
        // QUIC's handshake is one round trip (250 ms) shorter than TCP + TLS.
        assert!((far("h2", "small") - far("h3", "small") - 0.25).abs() < 1e-9);
        // h1's one request per connection at a time: 115 resources on six
        // connections take many more round trips than one h2 connection.
        assert!(far("h1", "spa") > far("h2", "spa") + 10.0 * 0.25);
        // A 15 MB page needs more doublings of the window than a 600 KB one.
        let ramp = far("h2", "spa") - far("h2", "small") - 14.4e6 * 8.0 / 200e6;
        assert!(ramp > 2.0 * 0.25, "{ramp}");
    }

    #[test]
    fn default_preset_is_estimated_under_twelve_minutes() {
        let suite = crate::presets::preset("default").unwrap();
        let total: f64 = plan(&suite)
            .iter()
            .map(|cell| estimated_seconds(&suite, cell))
            .sum();
        // The small page at two initial windows is most of it. Five
        // repetitions, so that verdicts can be called at 5 %; the estimate
        // runs high (it was 7 minutes for 4 min 50 s measured at three).
        assert!(total < 720.0, "default preset estimated at {total:.0} s");
    }

    #[test]
    fn published_differences_become_one_subject_minus_other_value() {
        let suite = crate::presets::preset("study-c").unwrap();
        let claims = study_claims(&suite);
        assert_eq!(
            claims[0].label,
            "Small site, New York (~30 ms): h3 faster than h2"
        );
        assert_eq!(claims[0].published.len(), 1);
        assert_eq!(claims[0].published["h3-h2"], -200.0);
        let study_e = study_claims(&crate::presets::preset("study-e").unwrap());
        assert_eq!(study_e.len(), 6);
        assert_eq!(study_e[5].published["h3"], 6028.0);
    }
}
