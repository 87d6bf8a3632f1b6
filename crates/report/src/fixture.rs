//! A small synthetic run for the unit tests, with real serialised
//! histograms. Every figure is chosen so expectations can be worked out by
//! hand.
//!
//! - [`REPETITIONS`] (5) repetitions of every cell, one sample each unless
//!   said otherwise.
//! - broadband rps-1k (req/s): h1 [100,110,120,105,115], h2
//!   [200,210,220,205,215], h3 [250,240,260,245,255] (medians 110, 210,
//!   250); repetition r records 10 latencies of (r+1)·base ms with base
//!   h1 30, h2 20, h3 10.
//! - cellular rps-1k: h1 [50], failed ("connection refused"), [70], [55],
//!   [65]; h2 [80,90,100,85,95]; h3 [120,130,140,125,135]; no histograms.
//! - broadband ttfb (ms, lower is better), modes cold and resumed, two
//!   samples per repetition, h2 and h3 only: cold h2 60..70 vs h3 70..80
//!   (h3 worse), resumed h2 40..50 vs h3 20..30 (h3 better).
//! - Claims: rps-1k (h3 > h2 > h1 published; ours agrees) and ttfb cold
//!   (h3 better published; ours differs).

use std::collections::BTreeMap;

use h3lab_results::bench::{
    CellRecord, ClientReport, CpuUse, Environment, LinkRecord, Metric, Outcome, Results,
    StudyClaim, SuiteInfo, SweptSetting, RESULTS_SCHEMA,
};
use h3lab_results::conformance::{
    CaseResult, ConformanceReport, Expected, Observed, Verdict, CONFORMANCE_SCHEMA,
};
use h3lab_results::load::OriginLeg;

use h3lab_results::page::{PageLoad, PageReport, ResourceTiming};
use h3lab_results::{Loader, Proto, ResourceKind, Visit, WorkloadKind};

use crate::histogram::tests::encoded;

/// Repetitions of every cell of [`results`]: enough for a call at 5 %.
pub(crate) const REPETITIONS: u32 = 5;

pub(crate) fn results() -> Results {
    Results {
        schema: RESULTS_SCHEMA.into(),
        suite: SuiteInfo {
            name: "fixture".into(),
            preset: Some("fixture-preset".into()),
            description: "Synthetic run for tests <b>not markup</b>".into(),
            protocols: vec!["h1".into(), "h2".into(), "h3".into()],
            profiles: vec!["broadband".into(), "cellular".into()],
            workloads: vec!["rps-1k".into(), "ttfb".into()],
            repetitions: REPETITIONS,
            seed: 7,
            warmup_s: 1.0,
            baseline: "h2".into(),
            target: "built-in server (h3lab serve)".into(),
            aa: false,
            servers: Vec::new(),
            population: None,
            pages: BTreeMap::new(),
        },
        environment: Environment {
            h3lab_version: "0.1.0".into(),
            kernel: "6.1.0-test".into(),
            cpu_model: "Test CPU".into(),
            cpu_count: 2,
            sysctls: BTreeMap::from([("net.core.rmem_max".into(), "212992".into())]),
            tcp_congestion_control: "cubic".into(),
            quic_congestion_control: "cubic".into(),
            udp_gso: "on".into(),
            library_versions: BTreeMap::from([("quinn".into(), "0.11".into())]),
            server_tuning: None,
            loopback_cpus: None,
        },
        started_at: "2026-01-01T00:00:00Z".into(),
        finished_at: Some("2026-01-01T00:10:00Z".into()),
        interrupted: false,
        cells: cells(),
        studies: claims(),
        captures: Vec::new(),
        field: None,
        handoffs: Vec::new(),
    }
}

/// The claims: rps-1k (h3 > h2 > h1 published) and ttfb cold (h3 better).
fn claims() -> Vec<StudyClaim> {
    vec![
        StudyClaim {
            sweep: None,
            study: "A. Protocol matrix".into(),
            label: "RPS, 1 KB".into(),
            profile: "broadband".into(),
            workload: "rps-1k".into(),
            mode: None,
            unit: "req/s".into(),
            higher_is_better: true,
            published: BTreeMap::from([
                ("h1".into(), 12400.0),
                ("h2".into(), 38200.0),
                ("h3".into(), 42100.0),
            ]),
            measure: None,
            caveat: "rps caveat".into(),
        },
        StudyClaim {
            sweep: None,
            study: "D. Handshakes".into(),
            label: "cold time to first byte".into(),
            profile: "broadband".into(),
            workload: "ttfb".into(),
            mode: Some("cold".into()),
            unit: "RTT".into(),
            higher_is_better: false,
            published: BTreeMap::from([("h2".into(), 3.0), ("h3".into(), 2.0)]),
            measure: None,
            caveat: "ttfb caveat </script><script>alert(1)</script>".into(),
        },
    ]
}

/// Every cell, as the module's comment lists them.
fn cells() -> Vec<CellRecord> {
    let mut cells = Vec::new();
    let rps = [
        ("h1", [100.0, 110.0, 120.0, 105.0, 115.0], 30),
        ("h2", [200.0, 210.0, 220.0, 205.0, 215.0], 20),
        ("h3", [250.0, 240.0, 260.0, 245.0, 255.0], 10),
    ];
    for (protocol, samples, latency_base_ms) in rps {
        for (rep, sample) in samples.into_iter().enumerate() {
            let latency = vec![(rep as u64 + 1) * latency_base_ms * 1000; 10];
            cells.push(rps_record(
                "broadband",
                protocol,
                rep as u32,
                sample,
                Some(&latency),
            ));
        }
    }
    for (protocol, samples) in [
        ("h1", [50.0, f64::NAN, 70.0, 55.0, 65.0]),
        ("h2", [80.0, 90.0, 100.0, 85.0, 95.0]),
        ("h3", [120.0, 130.0, 140.0, 125.0, 135.0]),
    ] {
        for (rep, sample) in samples.into_iter().enumerate() {
            let mut record = rps_record("cellular", protocol, rep as u32, sample, None);
            if sample.is_nan() {
                record.outcome = Outcome::Failed {
                    error: "connection refused".into(),
                };
                record.metric.samples.clear();
            }
            cells.push(record);
        }
    }
    for (mode, h2_start, h3_start) in [("cold", 60.0, 70.0), ("resumed", 40.0, 20.0)] {
        for (protocol, start) in [("h2", h2_start), ("h3", h3_start)] {
            for rep in 0..REPETITIONS {
                let first = start + f64::from(rep) * 2.0;
                cells.push(ttfb_record(protocol, mode, rep, vec![first, first + 2.0]));
            }
        }
    }
    cells
}

pub(crate) fn rps_record(
    profile: &str,
    protocol: &str,
    rep: u32,
    sample: f64,
    latency_micros: Option<&[u64]>,
) -> CellRecord {
    CellRecord {
        profile: profile.into(),
        workload: "rps-1k".into(),
        sweep: None,
        kind: WorkloadKind::Rps,
        protocol: protocol.parse().expect("a protocol"),
        mode: None,
        repetition: rep,
        path_rtt_ms: if profile == "broadband" { 20.0 } else { 50.0 },
        outcome: Outcome::Ok,
        metric: Metric {
            name: "requests_per_s".into(),
            unit: "req/s".into(),
            higher_is_better: true,
            samples: vec![sample],
        },
        latency_histogram: latency_micros.map(encoded),
        ttfb_histogram: None,
        requests: 1000,
        errors: 1,
        bytes: 1_024_000,
        cpu: CpuUse {
            client_s: 1.0,
            server_s: 0.5,
            ..CpuUse::default()
        },
        link: None,
        client_report: None,
        server_metrics: None,
        elapsed_s: 10.0,
        initial_windows: None,
        dns: None,
        connections_per_load: None,
        measured_rtt_ms: None,
        wire: None,
        header_blocks: None,
        replica: None,
        edge: None,
        h3_features: None,
    }
}

/// A link record whose directions delivered `(packets_out, released_late)`.
pub(crate) fn link(down: (u64, u64), up: (u64, u64)) -> LinkRecord {
    let mut link = LinkRecord::default();
    (link.down.packets_out, link.down.released_late) = down;
    (link.up.packets_out, link.up.released_late) = up;
    link
}

fn ttfb_record(protocol: &str, mode: &str, rep: u32, samples: Vec<f64>) -> CellRecord {
    CellRecord {
        workload: "ttfb".into(),
        sweep: None,
        kind: WorkloadKind::Ttfb,
        mode: Some(mode.parse().expect("a ttfb mode")),
        metric: Metric {
            name: "ttfb_ms".into(),
            unit: "ms".into(),
            higher_is_better: false,
            samples,
        },
        latency_histogram: None,
        ..rps_record("broadband", protocol, rep, 0.0, None)
    }
}

/// [`results`] with broadband h3 rps-1k at [215, 205, 225, 210, 220]
/// req/s: +2.4 % over h2's [200, 210, 220, 205, 215], but the ranges
/// overlap.
pub(crate) fn with_h3_near_h2() -> Results {
    let mut results = results();
    for record in results
        .cells
        .iter_mut()
        .filter(|r| r.profile == "broadband" && r.protocol == Proto::H3 && r.workload == "rps-1k")
    {
        record.metric.samples.iter_mut().for_each(|s| *s -= 35.0);
    }
    results
}

/// [`results`] plus page-load cells of workload `page-small` in broadband
/// (20 ms) and cellular (50 ms), h2 and h3, one repetition of 20 loads
/// each, and a study-E-like claim on cellular (h3 faster). Samples, as
/// sorted:
///
/// - broadband h2: 300, 310, …, 490 (step 10);
/// - broadband h3: 250, 255, …, 340 (step 5) and one 1000;
/// - cellular h2: 600, 620, …, 980 (step 20);
/// - cellular h3: 500, 510, …, 690 (step 10).
///
/// Each record's client report holds the median load with a 5-resource
/// waterfall (document, blocking stylesheet and script, font, image).
pub(crate) fn with_pages() -> Results {
    let mut results = results();
    results.suite.workloads.push("page-small".into());
    for (profile, protocol, first, step, outlier) in [
        ("broadband", "h2", 300.0, 10.0, None),
        ("broadband", "h3", 250.0, 5.0, Some(1000.0)),
        ("cellular", "h2", 600.0, 20.0, None),
        ("cellular", "h3", 500.0, 10.0, None),
    ] {
        let mut sorted: Vec<f64> = (0..20).map(|i| first + step * f64::from(i)).collect();
        if let Some(outlier) = outlier {
            sorted[19] = outlier;
        }
        // Recorded in load order, not sorted: 0, 7, 14, 1, 8, … (7 is coprime to 20).
        let samples = (0..20).map(|i| sorted[i * 7 % 20]).collect();
        results
            .cells
            .push(page_record(profile, protocol, samples, sorted[9]));
    }
    results.studies.push(StudyClaim {
        sweep: None,
        study: "E. Page load across conditions".into(),
        label: "median page load, lossy mobile".into(),
        profile: "cellular".into(),
        workload: "page-small".into(),
        mode: None,
        unit: "ms".into(),
        higher_is_better: false,
        published: BTreeMap::from([("h2".into(), 8940.0), ("h3".into(), 6028.0)]),
        measure: None,
        caveat: "page caveat".into(),
    });
    results
}

/// [`with_pages`] with `repetitions` repetitions of every page cell:
/// repetition r repeats the loads of repetition 0, r % slower.
pub(crate) fn with_page_repetitions(repetitions: u32) -> Results {
    let mut results = with_pages();
    let first: Vec<CellRecord> = results
        .cells
        .iter()
        .filter(|r| r.kind == WorkloadKind::Page)
        .cloned()
        .collect();
    for repetition in 1..repetitions {
        let slower = 1.0 + f64::from(repetition) / 100.0;
        results
            .cells
            .extend(first.iter().cloned().map(|mut record| {
                record.repetition = repetition;
                record.metric.samples.iter_mut().for_each(|s| *s *= slower);
                record
            }));
    }
    results
}

pub(crate) fn page_record(
    profile: &str,
    protocol: &str,
    samples: Vec<f64>,
    load_ms: f64,
) -> CellRecord {
    let proto = if protocol == "h2" {
        Proto::H2
    } else {
        Proto::H3
    };
    let mut report = PageReport::new("https://site.test/", proto, Loader::Builtin, Visit::Cold);
    report.loads.push(PageLoad {
        failed: Vec::new(),
        path_rtt_ms: None,
        started_at: "2026-01-01T00:00:00Z".into(),
        load_ms,
        resources: waterfall(protocol, load_ms),
        browser: None,
        skipped: Vec::new(),
    });
    let load = &report.loads[0];
    CellRecord {
        workload: "page-small".into(),
        sweep: None,
        kind: WorkloadKind::Page,
        metric: Metric {
            name: "page_load_ms".into(),
            unit: "ms".into(),
            higher_is_better: false,
            samples,
        },
        latency_histogram: None,
        requests: load.resources.len() as u64,
        errors: 0,
        bytes: load.bytes(),
        client_report: Some(report.into()),
        server_metrics: None,
        ..rps_record(profile, protocol, 0, 0.0, None)
    }
}

/// Five resources ending at `load_ms`: the document, then a blocking
/// stylesheet and script, then a font and an image.
fn waterfall(protocol: &str, load_ms: f64) -> Vec<ResourceTiming> {
    let at = |fraction: f64| load_ms * fraction;
    let rows = [
        ("/", ResourceKind::Document, false, 0.0, 0.2, 0.3, 4_000),
        (
            "/css/site.css",
            ResourceKind::Stylesheet,
            true,
            0.3,
            0.45,
            0.5,
            8_000,
        ),
        (
            "/js/app.js",
            ResourceKind::Script,
            true,
            0.3,
            0.5,
            0.7,
            60_000,
        ),
        (
            "/fonts/body.woff2",
            ResourceKind::Font,
            false,
            0.5,
            0.65,
            0.8,
            20_000,
        ),
        (
            "/img/hero.jpg",
            ResourceKind::Image,
            false,
            0.5,
            0.7,
            1.0,
            120_000,
        ),
    ];
    rows.iter()
        .enumerate()
        .map(
            |(index, &(path, kind, blocking, start, ttfb, end, bytes))| ResourceTiming {
                method: "GET".to_string(),
                url: format!("https://site.test{path}"),
                kind,
                render_blocking: blocking,
                status: 200,
                protocol: Some(protocol.to_string()),
                start_ms: at(start),
                ttfb_ms: at(ttfb),
                end_ms: at(end),
                bytes,
                connection: Some(1),
                stream: Some(index as u64 * 4),
            },
        )
        .collect()
}

/// The page report a page record keeps, to change in a test.
pub(crate) fn page_mut(record: &mut CellRecord) -> &mut PageReport {
    match record.client_report.as_mut() {
        Some(ClientReport::Page(report)) => report,
        other => panic!("not a page report: {other:?}"),
    }
}

/// A real load report (from the results crate's test data), with the
/// edge's split when it said.
pub(crate) fn load_report(origin_leg: Option<OriginLeg>) -> ClientReport {
    const WRITTEN: &str = include_str!("../../results/tests/data/results-written.json");
    let results: Results = serde_json::from_str(WRITTEN).unwrap();
    let mut report = (results.cells.into_iter())
        .find_map(|cell| match cell.client_report? {
            ClientReport::Load(report) => Some(report),
            _ => None,
        })
        .expect("the test data has a load report");
    report.origin_leg = origin_leg;
    ClientReport::Load(report)
}

/// A case `id` of the conformance suite with `verdict`: a failure is a
/// request answered with 200, an unknown one did not run.
pub(crate) fn conformance_case(id: &str, verdict: Verdict) -> CaseResult {
    let observed = match verdict {
        Verdict::Pass => Observed::CarriedOn,
        Verdict::Fail => Observed::Answered { status: 200 },
        Verdict::Unknown => Observed::NotRun {
            detail: "no handshake".into(),
        },
    };
    CaseResult {
        id: id.into(),
        title: format!("{id}'s title"),
        rfc: "RFC 9114 §7.2.4".into(),
        must: "MUST be ignored".into(),
        expected: Expected::Ignore,
        observed,
        verdict,
        elapsed_ms: 3,
    }
}

/// A conformance cell against `server` (a `server` sweep's value) on
/// loopback, whose report holds `cases`.
pub(crate) fn conformance_record(
    server: &str,
    repetition: u32,
    cases: Vec<CaseResult>,
) -> CellRecord {
    let report = ConformanceReport {
        schema: CONFORMANCE_SCHEMA.into(),
        target: "https://localhost:8443/bytes/1".into(),
        address: "127.0.0.1:8443".into(),
        client: "h3i".into(),
        case_timeout_ms: 2000,
        plain_status: 200,
        planned: Some(cases.len()),
        cases,
        not_covered: vec!["QUIC transport cases".into()],
    };
    let sweep = SweptSetting {
        tunable: "server".into(),
        value: server.into(),
    };
    CellRecord {
        profile: "loopback".into(),
        workload: sweep.row_label("conformance"),
        sweep: Some(sweep),
        kind: WorkloadKind::Conformance,
        metric: Metric {
            name: "failed_cases".into(),
            unit: "cases".into(),
            higher_is_better: false,
            samples: vec![report.failures().count() as f64],
        },
        client_report: Some(report.into()),
        latency_histogram: None,
        ttfb_histogram: None,
        ..rps_record("loopback", "h3", repetition, 0.0, None)
    }
}
