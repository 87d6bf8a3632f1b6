//! One summary per cell (profile × workload × protocol × mode), pooling the
//! samples of all successful repetitions.

use std::collections::BTreeMap;

use h3lab_results::bench::{
    CellRecord, Loss, LossDirection, Outcome, Replica, Results, SERVER_CPU_RESOLVED_S,
};
use h3lab_results::CostMeasure;
use h3lab_results::WorkloadKind;
use hdrhistogram::Histogram;

use crate::bottleneck::bottlenecks;
use crate::cell::{CellKey, CellSummary, Failure, PageConnections};
use crate::histogram::{self, LatencySummary};
use crate::stats::{split_finite, SampleStats};
use h3lab_results::difference::Difference;

/// What `profile`'s path does beyond its rates and round trip, from the
/// link settings its cells recorded: random loss and the direction it
/// applies to (`loss 1 % down`) and a UDP policy other than open (`UDP
/// blocked`), joined by commas; `None` when it does neither or no cell
/// recorded settings (loopback, or a run written before they were).
pub fn path_impairments(results: &Results, profile: &str) -> Option<String> {
    let settings = results
        .cells
        .iter()
        .filter(|cell| cell.profile == profile)
        .find_map(|cell| cell.link.as_ref()?.settings.as_ref())?;
    let direction = match settings.loss_direction {
        LossDirection::Down => "down",
        LossDirection::Up => "up",
        LossDirection::Both => "both",
    };
    let loss = match settings.loss {
        Loss::Bernoulli { p: 0.0 } => None,
        Loss::Bernoulli { p } => Some(format!("{} %", crate::format::short(p * 100.0))),
        Loss::Gilbert { .. } => Some("(gilbert)".to_string()),
    }
    .map(|amount| format!("loss {amount} {direction}"));
    let udp = (settings.udp.as_ref()).map(|policy| format!("UDP {policy}"));
    let parts: Vec<String> = loss.into_iter().chain(udp).collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Summaries of every cell, ordered as the suite lists profiles, workloads
/// and protocols (unlisted names last, by first appearance).
pub fn summarize(results: &Results) -> Vec<CellSummary> {
    let mut summaries: Vec<CellSummary> = group_records(results)
        .into_iter()
        .map(|(key, records)| summarize_cell(key, &records, &results.suite.baseline))
        .collect();
    match results.suite.aa {
        true => fill_replica_differences(&mut summaries),
        false => fill_baseline_differences(&mut summaries, &results.suite.baseline),
    }
    if results.field.is_some() {
        let measured = crate::field::measured_rtt_by_profile(results);
        for summary in &mut summaries {
            summary.on_real_path = true;
            summary.measured_rtt_ms = measured.get(&summary.key.profile).copied();
        }
    }
    summaries
}

/// Merged latency histogram of a cell's successful repetitions, keyed like
/// the summaries; cells without histograms are absent.
pub fn merged_latency(results: &Results) -> Vec<(CellKey, Histogram<u64>)> {
    group_records(results)
        .into_iter()
        .filter_map(|(key, records)| {
            let (merged, _) = merge_latency(&ok_records(&records));
            merged.map(|histogram| (key, histogram))
        })
        .collect()
}

fn group_records(results: &Results) -> Vec<(CellKey, Vec<&CellRecord>)> {
    let order = SuiteOrder::new(results);
    let mut groups: BTreeMap<(Vec<usize>, CellKey), Vec<&CellRecord>> = BTreeMap::new();
    for record in &results.cells {
        let key = CellKey::of(record);
        groups
            .entry((order.rank(&key), key))
            .or_default()
            .push(record);
    }
    groups
        .into_iter()
        .map(|((_, key), records)| (key, records))
        .collect()
}

/// Sort ranks from the suite's own lists, falling back to first appearance.
struct SuiteOrder<'a> {
    results: &'a Results,
}

impl<'a> SuiteOrder<'a> {
    fn new(results: &'a Results) -> Self {
        SuiteOrder { results }
    }

    fn rank(&self, key: &CellKey) -> Vec<usize> {
        let suite = &self.results.suite;
        let cells = &self.results.cells;
        vec![
            rank_in(&suite.profiles, &key.profile, || {
                cells.iter().position(|c| c.profile == key.profile)
            }),
            rank_in(&suite.workloads, &key.workload, || {
                cells.iter().position(|c| c.workload == key.workload)
            }),
            cells
                .iter()
                .position(|c| CellKey::of(c).mode == key.mode)
                .unwrap_or(0),
            rank_in(&suite.protocols, &key.protocol, || {
                cells.iter().position(|c| c.protocol.name() == key.protocol)
            }),
        ]
    }
}

fn rank_in(listed: &[String], name: &str, appearance: impl Fn() -> Option<usize>) -> usize {
    match listed.iter().position(|listed| listed == name) {
        Some(index) => index,
        None => listed.len() + appearance().unwrap_or(0),
    }
}

fn ok_records<'a>(records: &[&'a CellRecord]) -> Vec<&'a CellRecord> {
    records
        .iter()
        .copied()
        .filter(|record| record.outcome == Outcome::Ok)
        .collect()
}

fn summarize_cell(key: CellKey, records: &[&CellRecord], baseline: &str) -> CellSummary {
    let ok = ok_records(records);
    let described_by = ok.first().or(records.first()).copied();
    let metric = described_by.map(|r| &r.metric);
    let metric_name = metric.map_or("", |m| m.name.as_str());
    let (samples_by_repetition, repetition_numbers, mut problems) =
        measured_samples(&ok, metric_name);
    let samples = samples_by_repetition.concat();
    let (merged, histogram_problems) = merge_latency(&ok);
    problems.extend(histogram_problems);
    problems.extend(unreadable_client_reports(records));

    CellSummary {
        is_baseline: match key.replica {
            Some(replica) => replica == Replica::A,
            None => key.protocol == baseline,
        },
        kind: described_by.map(|r| r.kind),
        metric: metric.map_or_else(String::new, |m| m.name.clone()),
        unit: metric.map_or_else(String::new, |m| m.unit.clone()),
        higher_is_better: metric.is_some_and(|m| m.higher_is_better),
        path_rtt_ms: described_by.map_or(0.0, |r| r.path_rtt_ms),
        on_real_path: false,
        measured_rtt_ms: None,
        repetitions: records.len(),
        failures: failures(records),
        interrupted: records
            .iter()
            .filter(|record| record.outcome == Outcome::Interrupted)
            .map(|record| record.repetition)
            .collect(),
        not_offered: records.iter().find_map(|record| match &record.outcome {
            Outcome::NotOffered { reason } => Some(reason.clone()),
            _ => None,
        }),
        sweep: described_by.and_then(|r| r.sweep.clone()),
        initial_windows: agreed(ok.iter().map(|r| r.initial_windows)),
        stats: SampleStats::of(&samples),
        samples_by_repetition,
        repetition_numbers,
        vs_baseline: None,
        reference: None,
        latency: merged.as_ref().and_then(LatencySummary::of),
        legs: crate::legs::legs(&ok),
        requests: ok.iter().map(|r| r.requests).sum(),
        request_errors: ok.iter().map(|r| r.errors).sum(),
        client_cpu_pct: cpu_percent(&ok, |r| r.cpu.client_s),
        server_cpu_pct: cpu_percent(&ok, |r| r.cpu.server_s),
        server_cpu_per_request_us: server_cpu_per(&ok, |r| r.requests as f64 / 1e6),
        server_cpu_per_gb_s: server_cpu_per(&ok, |r| r.bytes as f64 / 1e9),
        client_cpu_per_request_us: client_cpu_per(&ok, |r| r.requests as f64 / 1e6),
        client_cpu_per_gb_s: client_cpu_per(&ok, |r| r.bytes as f64 / 1e9),
        wire: added_up(&ok, |record| record.wire),
        header_blocks: added_up(&ok, |record| record.header_blocks),
        costs_by_repetition: costs_by_repetition(&ok),
        page_connections: page_connections(&ok),
        page_requests: page_requests(&ok),
        bottlenecks: bottlenecks(&ok),
        problems,
        key,
    }
}

/// The finite samples of the repetitions that recorded `metric`, by
/// repetition; those repetitions' numbers; and what was left out (another
/// metric, non-finite samples), said as problems.
fn measured_samples(ok: &[&CellRecord], metric: &str) -> (Vec<Vec<f64>>, Vec<u32>, Vec<String>) {
    let mut problems = Vec::new();
    let mixed: Vec<&str> = (ok.iter())
        .map(|r| r.metric.name.as_str())
        .filter(|name| *name != metric)
        .collect();
    if !mixed.is_empty() {
        problems.push(format!(
            "repetitions record different metrics ({}); only {metric} is summarised",
            mixed.join(", "),
        ));
    }
    let measured: Vec<&&CellRecord> = ok.iter().filter(|r| r.metric.name == metric).collect();
    let repetition_numbers = measured.iter().map(|r| r.repetition).collect();
    let (samples_by_repetition, dropped): (Vec<Vec<f64>>, Vec<usize>) = (measured.iter())
        .map(|r| split_finite(&r.metric.samples))
        .unzip();
    let dropped: usize = dropped.iter().sum();
    if dropped > 0 {
        problems.push(format!("{dropped} non-finite sample(s) left out"));
    }
    (samples_by_repetition, repetition_numbers, problems)
}

/// The client reports this version could not read (written by another
/// version), by repetition: what they held is missing from the details.
fn unreadable_client_reports(records: &[&CellRecord]) -> Vec<String> {
    (records.iter())
        .filter_map(|record| {
            let why = record.client_report.as_ref()?.unreadable()?;
            Some(format!(
                "repetition {}: client report left out: {why}",
                record.repetition
            ))
        })
        .collect()
}

/// Each cost the repetitions measured, by repetition.
fn costs_by_repetition(ok: &[&CellRecord]) -> std::collections::BTreeMap<CostMeasure, Vec<f64>> {
    (CostMeasure::ALL.iter())
        .map(|&cost| {
            (
                cost,
                ok.iter().filter_map(|r| cost.of(r)).collect::<Vec<_>>(),
            )
        })
        .filter(|(_, values)| !values.is_empty())
        .collect()
}

/// The connections of every load of the successful repetitions of a page
/// cell; None for other cells, or when a load does not say.
/// The median of the requests each kept page load made.
fn page_requests(ok: &[&CellRecord]) -> Option<f64> {
    let mut requests = Vec::new();
    for record in ok {
        if record.kind != WorkloadKind::Page {
            return None;
        }
        for load in &crate::cell::page_report(record).ok()?.loads {
            requests.push(load.resources.len() as f64);
        }
    }
    Some(SampleStats::of(&requests)?.median)
}

fn page_connections(ok: &[&CellRecord]) -> Option<PageConnections> {
    let mut all = Vec::new();
    let mut by_host: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for record in ok {
        if record.kind != WorkloadKind::Page {
            return None;
        }
        for load in &crate::cell::page_report(record).ok()?.loads {
            all.push(load.connections()? as f64);
            for (host, count) in load.connections_by_host()? {
                by_host.entry(host).or_default().push(count as f64);
            }
        }
    }
    let median = |values: &[f64]| Some(SampleStats::of(values)?.median);
    Some(PageConnections {
        all: median(&all)?,
        by_host: (by_host.iter())
            .map(|(host, counts)| Some((host.clone(), median(counts)?)))
            .collect::<Option<_>>()?,
    })
}

/// The successful repetitions' counts added up, if each has them.
fn added_up<T: std::ops::Add<Output = T>>(
    ok: &[&CellRecord],
    count: impl Fn(&CellRecord) -> Option<T>,
) -> Option<T> {
    let mut counts = ok.iter().map(|record| count(record));
    let first = counts.next()??;
    counts.try_fold(first, |sum, count| Some(sum + count?))
}

/// The one value every item has, if they all have the same.
fn agreed<T: PartialEq>(mut values: impl Iterator<Item = Option<T>>) -> Option<T> {
    let first = values.next()??;
    values
        .all(|value| value.as_ref() == Some(&first))
        .then_some(first)
}

fn failures(records: &[&CellRecord]) -> Vec<Failure> {
    records
        .iter()
        .filter_map(|record| match &record.outcome {
            Outcome::Failed { error } => Some(Failure {
                repetition: record.repetition,
                error: error.clone(),
            }),
            Outcome::Ok | Outcome::Interrupted | Outcome::NotOffered { .. } => None,
        })
        .collect()
}

fn merge_latency(ok: &[&CellRecord]) -> (Option<Histogram<u64>>, Vec<String>) {
    let mut problems = Vec::new();
    let mut decoded = Vec::new();
    for record in ok {
        let Some(encoded) = &record.latency_histogram else {
            continue;
        };
        match histogram::decode(encoded) {
            Ok(histogram) => decoded.push(histogram),
            Err(err) => problems.push(format!(
                "latency histogram of repetition {} left out: {err:#}",
                record.repetition
            )),
        }
    }
    match histogram::merge(&decoded) {
        Ok(merged) => (merged, problems),
        Err(err) => {
            problems.push(format!("latency histograms not merged: {err:#}"));
            (None, problems)
        }
    }
}

fn cpu_percent(ok: &[&CellRecord], seconds: impl Fn(&CellRecord) -> f64) -> Option<f64> {
    let wall: f64 = ok.iter().map(|r| r.elapsed_s).sum();
    let cpu: f64 = ok.iter().map(|r| seconds(r)).sum();
    (wall > 0.0 && cpu.is_finite()).then(|| cpu / wall * 100.0)
}

/// The server's measured-interval CPU seconds per `amount` (summed over
/// the repetitions).
fn server_cpu_per(ok: &[&CellRecord], amount: impl Fn(&CellRecord) -> f64) -> Option<f64> {
    let cpu: Option<f64> = ok.iter().map(|r| r.cpu.server_interval_s).sum();
    let amount: f64 = ok.iter().map(|r| amount(r)).sum();
    cpu.filter(|cpu| cpu.is_finite() && *cpu >= SERVER_CPU_RESOLVED_S && amount > 0.0)
        .map(|cpu| cpu / amount)
}

/// The client's CPU seconds (whole runs) per `amount`, summed over the
/// repetitions. Its CPU is always known: the kernel reports it when the
/// client exits.
fn client_cpu_per(ok: &[&CellRecord], amount: impl Fn(&CellRecord) -> f64) -> Option<f64> {
    let cpu: f64 = ok.iter().map(|r| r.cpu.client_s).sum();
    let amount: f64 = ok.iter().map(|r| amount(r)).sum();
    (cpu.is_finite() && amount > 0.0).then(|| cpu / amount)
}

/// An A/A run's verdicts: each B replica against its A, the only
/// difference a verdict there can have.
fn fill_replica_differences(summaries: &mut [CellSummary]) {
    let firsts: Vec<(CellKey, Vec<Vec<f64>>)> = summaries
        .iter()
        .filter(|s| s.key.replica == Some(Replica::A))
        .map(|s| (s.key.clone(), s.samples_by_repetition.clone()))
        .collect();
    for summary in summaries.iter_mut() {
        let Some((reference_key, reference)) = firsts
            .iter()
            .find(|(key, _)| summary.key.is_replica_a_of(key))
        else {
            continue;
        };
        summary.vs_baseline = Difference::relative(
            &summary.samples_by_repetition,
            reference,
            summary.higher_is_better,
            summary.key.seed_against(reference_key),
        );
        summary.reference = Some(reference_key.protocol.clone());
    }
}

fn fill_baseline_differences(summaries: &mut [CellSummary], baseline: &str) {
    let baselines: BTreeMap<CellKey, (String, Vec<Vec<f64>>)> = summaries
        .iter()
        .filter(|s| s.is_baseline)
        .map(|s| {
            let samples = s.samples_by_repetition.clone();
            (s.key.clone(), (s.metric.clone(), samples))
        })
        .collect();
    for summary in summaries.iter_mut().filter(|s| !s.is_baseline) {
        let reference_key = summary.key.with_protocol(baseline);
        let Some((metric, reference)) = baselines.get(&reference_key) else {
            continue;
        };
        if *metric == summary.metric {
            summary.vs_baseline = Difference::relative(
                &summary.samples_by_repetition,
                reference,
                summary.higher_is_better,
                summary.key.seed_against(&reference_key),
            );
            summary.reference = Some(baseline.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use h3lab_results::bench::WireCost;
    use h3lab_results::difference::Call;
    use h3lab_results::{Proto, WorkloadKind};

    fn find<'a>(
        summaries: &'a [CellSummary],
        profile: &str,
        workload: &str,
        protocol: &str,
        mode: Option<&str>,
    ) -> &'a CellSummary {
        summaries
            .iter()
            .find(|s| {
                s.key.profile == profile
                    && s.key.workload == workload
                    && s.key.protocol == protocol
                    && s.key.mode.as_deref() == mode
            })
            .unwrap_or_else(|| panic!("no cell {profile} {workload} {protocol} {mode:?}"))
    }

    #[test]
    fn cells_follow_the_suite_order() {
        let order: Vec<String> = summarize(&fixture::results())
            .iter()
            .map(|s| {
                format!(
                    "{} {} {}",
                    s.key.profile,
                    s.key.workload_label(),
                    s.key.protocol
                )
            })
            .collect();
        assert_eq!(
            order,
            [
                "broadband rps-1k h1",
                "broadband rps-1k h2",
                "broadband rps-1k h3",
                "broadband ttfb (cold) h2",
                "broadband ttfb (cold) h3",
                "broadband ttfb (resumed) h2",
                "broadband ttfb (resumed) h3",
                "cellular rps-1k h1",
                "cellular rps-1k h2",
                "cellular rps-1k h3",
            ]
        );
    }

    #[test]
    fn medians_compare_against_the_baseline_protocol() {
        let summaries = summarize(&fixture::results());
        let h2 = find(&summaries, "broadband", "rps-1k", "h2", None);
        assert!(h2.is_baseline);
        assert_eq!(h2.vs_baseline, None);

        // h3 [250, 240, 260, 245, 255] against h2 [200, 210, 220, 205, 215]:
        // the ranges do not overlap.
        let h3 = find(&summaries, "broadband", "rps-1k", "h3", None);
        assert_eq!(h3.stats.as_ref().unwrap().median, 250.0);
        let diff = h3.vs_baseline.as_ref().unwrap();
        assert!((diff.estimate - (250.0 - 210.0) / 210.0 * 100.0).abs() < 1e-9);
        assert_eq!(diff.call(), Call::Better);

        let h1 = find(&summaries, "broadband", "rps-1k", "h1", None);
        assert_eq!(h1.vs_baseline.as_ref().unwrap().call(), Call::Worse);

        // Lower is better: h3 cold medians 75 ms (70, 72, …, 80) vs h2 65 ms.
        let cold = find(&summaries, "broadband", "ttfb", "h3", Some("cold"));
        let stats = cold.stats.as_ref().unwrap();
        assert_eq!((stats.n, stats.median), (10, 75.0));
        assert_eq!(cold.samples_by_repetition.len(), 5, "two samples in each");
        let diff = cold.vs_baseline.as_ref().unwrap();
        assert!((diff.estimate - 10.0 / 65.0 * 100.0).abs() < 1e-9);
        assert_eq!(diff.call(), Call::Worse);
        let resumed = find(&summaries, "broadband", "ttfb", "h3", Some("resumed"));
        assert_eq!(resumed.vs_baseline.as_ref().unwrap().call(), Call::Better);
    }

    #[test]
    fn overlapping_repetitions_against_the_baseline_are_no_clear_difference() {
        let summaries = summarize(&fixture::with_h3_near_h2());
        let h3 = find(&summaries, "broadband", "rps-1k", "h3", None);
        let diff = h3.vs_baseline.as_ref().unwrap();
        assert!(diff.estimate > 0.0);
        assert_eq!(diff.call(), Call::NoClearDifference);
    }

    #[test]
    fn first_byte_medians_are_counted_in_path_round_trips() {
        let summaries = summarize(&fixture::results());
        // broadband's path RTT in the fixture is 20 ms; h3 cold median 75 ms.
        let cold = find(&summaries, "broadband", "ttfb", "h3", Some("cold"));
        assert!((cold.median_rtts().unwrap() - 75.0 / 20.0).abs() < 1e-9);
        let rps = find(&summaries, "broadband", "rps-1k", "h3", None);
        assert_eq!(
            rps.median_rtts(),
            None,
            "only ttfb cells are counted in round trips"
        );
    }

    #[test]
    fn failed_repetitions_are_counted_and_left_out() {
        let summaries = summarize(&fixture::results());
        let h1 = find(&summaries, "cellular", "rps-1k", "h1", None);
        assert_eq!(h1.repetitions, 5);
        assert_eq!(
            h1.failures,
            vec![Failure {
                repetition: 1,
                error: "connection refused".into()
            }]
        );
        let stats = h1.stats.as_ref().unwrap();
        assert_eq!(
            (stats.n, stats.median, stats.min, stats.max),
            (4, 60.0, 50.0, 70.0)
        );
        assert_eq!(h1.requests, 4000);
    }

    #[test]
    fn identical_errors_are_grouped() {
        let mut results = fixture::results();
        for record in results
            .cells
            .iter_mut()
            .filter(|r| r.profile == "cellular" && r.protocol == Proto::H2)
        {
            record.outcome = Outcome::Failed {
                error: if record.repetition == 1 {
                    "reset".into()
                } else {
                    "timeout".into()
                },
            };
        }
        let summaries = summarize(&results);
        let h2 = find(&summaries, "cellular", "rps-1k", "h2", None);
        assert_eq!(
            h2.failures_by_error(),
            vec![(vec![0, 2, 3, 4], "timeout"), (vec![1], "reset")]
        );
        assert_eq!(h2.stats, None);
    }

    #[test]
    fn latency_histograms_merge_across_repetitions() {
        let summaries = summarize(&fixture::results());
        // h2: 10 × 20 ms, 10 × 40 ms, 10 × 60 ms, 10 × 80 ms, 10 × 100 ms.
        let latency = find(&summaries, "broadband", "rps-1k", "h2", None)
            .latency
            .clone()
            .unwrap();
        assert_eq!(latency.count, 50);
        for (got, want) in [
            (latency.p50_ms, 60.0),
            (latency.p90_ms, 100.0),
            (latency.p99_ms, 100.0),
            (latency.max_ms, 100.0),
        ] {
            assert!((got - want).abs() <= want * 0.001, "{got} vs {want}");
        }
        assert_eq!(
            find(&summaries, "cellular", "rps-1k", "h2", None).latency,
            None
        );
    }

    #[test]
    fn cpu_is_time_over_wall_time() {
        let summaries = summarize(&fixture::results());
        let h3 = find(&summaries, "broadband", "rps-1k", "h3", None);
        // 5 × 1.0 s client and 5 × 0.5 s server over 5 × 10 s.
        assert!((h3.client_cpu_pct.unwrap() - 10.0).abs() < 1e-9);
        assert!((h3.server_cpu_pct.unwrap() - 5.0).abs() < 1e-9);
    }

    #[test]
    fn wire_counts_add_up_over_repetitions_and_one_unknown_makes_them_unknown() {
        let cost = |requests| WireCost {
            up_bytes: 10,
            down_bytes: 100,
            requests,
            body_bytes: 50,
            ..WireCost::default()
        };
        let mut records = [
            record_with_wire(Some(cost(2))),
            record_with_wire(Some(cost(3))),
        ];
        let ok: Vec<&CellRecord> = records.iter().collect();
        let sum = added_up(&ok, |record| record.wire).unwrap();
        assert_eq!(
            (sum.total_bytes(), sum.requests, sum.body_bytes),
            (220, 5, 100)
        );
        assert_eq!(sum.bytes_per_request(), Some(44.0));
        records[1].wire = None;
        let ok: Vec<&CellRecord> = records.iter().collect();
        assert_eq!(added_up(&ok, |record| record.wire), None);
    }

    fn record_with_wire(wire: Option<WireCost>) -> CellRecord {
        let mut record = crate::fixture::results().cells.remove(0);
        record.wire = wire;
        record
    }

    #[test]
    fn client_cpu_is_per_request_and_per_gb_of_the_successful_repetitions() {
        let summaries = summarize(&fixture::results());
        let h3 = find(&summaries, "broadband", "rps-1k", "h3", None);
        // 5 × 1.0 s over 5 × 1000 requests and 5 × 1,024,000 bytes.
        assert!((h3.client_cpu_per_request_us.unwrap() - 1000.0).abs() < 1e-9);
        assert!((h3.client_cpu_per_gb_s.unwrap() - 5.0 / 0.005_12).abs() < 1e-6);
    }

    #[test]
    fn server_cpu_is_per_request_and_per_gb_and_unknown_if_any_repetition_lacks_it() {
        let mut results = fixture::results();
        let h3_broadband = |r: &&mut CellRecord| {
            r.profile == "broadband" && r.protocol == Proto::H3 && r.workload == "rps-1k"
        };
        for record in results.cells.iter_mut().filter(h3_broadband) {
            record.cpu.server_interval_s = Some(0.25);
        }
        let summaries = summarize(&results);
        let h3 = find(&summaries, "broadband", "rps-1k", "h3", None);
        // 5 × 0.25 s over 5 × 1000 requests and 5 × 1,024,000 bytes.
        assert!((h3.server_cpu_per_request_us.unwrap() - 250.0).abs() < 1e-9);
        assert!((h3.server_cpu_per_gb_s.unwrap() - 1.25 / 0.005_12).abs() < 1e-6);
        let first = results.cells.iter_mut().find(h3_broadband).unwrap();
        first.cpu.server_interval_s = None;
        let summaries = summarize(&results);
        let h3 = find(&summaries, "broadband", "rps-1k", "h3", None);
        assert_eq!(h3.server_cpu_per_request_us, None);
        assert_eq!(h3.server_cpu_per_gb_s, None);

        for record in results.cells.iter_mut().filter(h3_broadband) {
            record.cpu.server_interval_s = Some(0.008);
        }
        let summaries = summarize(&results);
        let h3 = find(&summaries, "broadband", "rps-1k", "h3", None);
        assert_eq!(
            h3.server_cpu_per_request_us, None,
            "5 × 8 ms, 4 ticks, are not a figure"
        );
    }

    #[test]
    fn bad_data_becomes_a_visible_problem() {
        let mut results = fixture::results();
        results.cells[0].latency_histogram = Some("not a histogram".into());
        results.cells[1].metric.samples.push(f64::INFINITY);
        let summaries = summarize(&results);
        let h1 = find(&summaries, "broadband", "rps-1k", "h1", None);
        assert_eq!(h1.stats.as_ref().unwrap().n, 5);
        assert_eq!(h1.problems.len(), 2, "{:?}", h1.problems);
        assert!(h1.problems.iter().any(|p| p.contains("non-finite")));
        assert!(h1
            .problems
            .iter()
            .any(|p| p.contains("repetition 0") && p.contains("base64")));
        // The four readable histograms are still merged.
        assert_eq!(h1.latency.as_ref().unwrap().count, 40);
    }

    #[test]
    fn page_cells_pool_every_load_and_lower_is_better() {
        let summaries = summarize(&fixture::with_pages());
        let h3 = find(&summaries, "cellular", "page-small", "h3", None);
        assert_eq!(h3.kind, Some(WorkloadKind::Page));
        assert_eq!(h3.measure(), "page load");
        assert_eq!(h3.unit, "ms");
        let stats = h3.stats.as_ref().unwrap();
        assert_eq!((stats.n, stats.median), (20, 595.0));
        // h2 median (780 + 800) / 2 = 790; h3 595 is lower, but 20 loads of
        // one repetition each cannot tell how much repetitions vary.
        let diff = h3.vs_baseline.as_ref().unwrap();
        assert!((diff.estimate - (595.0 - 790.0) / 790.0 * 100.0).abs() < 1e-9);
        assert_eq!(diff.call(), Call::TooFewRepetitions);
        assert_eq!(h3.median_rtts(), None);
        assert_eq!(h3.latency, None);
        assert_eq!(h3.requests, 5);

        // Five repetitions of each, repetition r r % slower, make it clear:
        // h3's slowest repetition median, 595 × 1.04, is below h2's fastest.
        let summaries = summarize(&fixture::with_page_repetitions(5));
        let h3 = find(&summaries, "cellular", "page-small", "h3", None);
        assert_eq!(h3.vs_baseline.as_ref().unwrap().call(), Call::Better);
    }
}
