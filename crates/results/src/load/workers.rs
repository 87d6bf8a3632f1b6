//! One test split across machines: where each part ran, its per-second
//! timeline, and the exact merge of the parts with a per-worker table.

use std::collections::BTreeSet;
use std::fmt;

use anyhow::bail;
use serde::{Deserialize, Serialize};

use super::{LoadReport, BUSY_GENERATOR};

/// Which part of a split test a run was, and where it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Worker {
    /// `--shard I/N`; absent for a run that was not split.
    pub shard: Option<Shard>,
    /// The machine's name: under `h3lab dist k8s` the pod's node, else
    /// the host name.
    pub host: String,
    /// `--start-at` as given (RFC 3339, UTC); absent without it.
    pub start_at: Option<String>,
    /// How long after `start_at` the load began, in µs; absent without it.
    pub started_late_us: Option<u64>,
    /// The kernel's view of its own clock when the run began.
    pub clock: Clock,
}

/// `--shard I/N`: part `index` (from 0) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Shard {
    /// Which part, from 0.
    pub index: u32,
    /// How many parts the test has.
    pub count: u32,
}

/// `I/N`, as `--shard` reads it.
impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What the kernel knows of its clock (`adjtimex`). The offset from true
/// time itself is unknown to h3lab, which asks no time server; the
/// kernel's bound on it is what two workers' start times can differ by.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Clock {
    /// Whether a time daemon keeps the clock synchronised; null when the
    /// kernel could not be asked.
    pub synchronized: Option<bool>,
    /// The kernel's bound on the clock's offset from true time, in µs;
    /// null when the clock is not synchronised (no bound holds).
    pub max_error_us: Option<u64>,
}

/// Per wall-clock second of the measured phase: what completed and failed.
/// Buckets are whole UTC seconds, so the timelines of workers on different
/// machines line up (to within their clocks' offsets).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// Unix time, in whole seconds, at which the first bucket starts.
    pub start_unix_s: i64,
    /// Responses received in full, per second.
    pub completed: Vec<u64>,
    /// Attempts that got no complete response, per second.
    pub failed: Vec<u64>,
    /// Response body bytes, per second.
    pub body_bytes: Vec<u64>,
}

/// One merged run's row in the per-worker table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerRow {
    /// Where the run's report came from (a file or a pod).
    pub source: String,
    /// Its shard, host, start and clock; absent in reports that lack them.
    pub worker: Option<Worker>,
    /// Responses received in full.
    pub completed: u64,
    /// Attempts that got no complete response.
    pub failed: u64,
    /// Its own measured wall time, in seconds.
    pub duration_s: f64,
    /// Its completed responses per second.
    pub requests_per_sec: f64,
    /// Its median latency, in µs.
    pub latency_p50_us: u64,
    /// Its 99th-percentile latency, in µs.
    pub latency_p99_us: u64,
    /// Its generator's CPU time (user + system), in seconds.
    pub cpu_s: f64,
    /// Its worker threads.
    pub threads: usize,
    /// Share of its threads' wall time they were busy (0..1).
    pub busy: f64,
    /// Busy for 80 % of the time or more: the generator, not the server,
    /// may have set this worker's pace.
    pub cpu_bound: bool,
}

impl Timeline {
    /// Counts one outcome at `unix_s`, growing the timeline at either end
    /// (threads merge theirs in any order).
    pub fn record(&mut self, unix_s: i64, completed: u64, failed: u64, body_bytes: u64) {
        let index = self.slot(unix_s);
        self.completed[index] += completed;
        self.failed[index] += failed;
        self.body_bytes[index] += body_bytes;
    }

    /// Adds `other` second by second, aligned on wall-clock time.
    pub fn add(&mut self, other: &Timeline) {
        if other.completed.is_empty() {
            return;
        }
        if self.completed.is_empty() {
            *self = other.clone();
            return;
        }
        let last = other.start_unix_s + other.completed.len() as i64 - 1;
        self.slot(last);
        self.slot(other.start_unix_s);
        let offset = (other.start_unix_s - self.start_unix_s) as usize;
        let series = [
            (&mut self.completed, &other.completed),
            (&mut self.failed, &other.failed),
            (&mut self.body_bytes, &other.body_bytes),
        ];
        for (mine, theirs) in series {
            for (slot, value) in mine[offset..].iter_mut().zip(theirs) {
                *slot += value;
            }
        }
    }

    /// The bucket of `unix_s`, growing the timeline at either end to hold it.
    fn slot(&mut self, unix_s: i64) -> usize {
        if self.completed.is_empty() {
            self.start_unix_s = unix_s;
        }
        if unix_s < self.start_unix_s {
            let grow = (self.start_unix_s - unix_s) as usize;
            for series in [&mut self.completed, &mut self.failed, &mut self.body_bytes] {
                series.splice(0..0, std::iter::repeat_n(0, grow));
            }
            self.start_unix_s = unix_s;
        }
        let index = (unix_s - self.start_unix_s) as usize;
        if index >= self.completed.len() {
            for series in [&mut self.completed, &mut self.failed, &mut self.body_bytes] {
                series.resize(index + 1, 0);
            }
        }
        index
    }

    /// Completed per second over the whole seconds only (the first and the
    /// last bucket are partial): (min, median, max), or `None` under 3 s.
    pub fn full_seconds(&self) -> Option<(u64, u64, u64)> {
        if self.completed.len() < 3 {
            return None;
        }
        let mut full = self.completed[1..self.completed.len() - 1].to_vec();
        full.sort_unstable();
        Some((full[0], full[full.len() / 2], full[full.len() - 1]))
    }

    /// Three series of one length, starting at a plausible time.
    fn is_consistent(&self) -> bool {
        let len = self.completed.len();
        self.failed.len() == len && self.body_bytes.len() == len && self.start_unix_s >= 0
    }
}

/// Two timelines further apart than this are not of one test.
const MAX_TIMELINE_GAP_S: i64 = 7 * 24 * 3600;

impl WorkerRow {
    fn new(source: &str, report: &LoadReport) -> WorkerRow {
        let cpu_s = report.cpu.user_s + report.cpu.sys_s;
        let busy = report.busy_share();
        WorkerRow {
            source: source.to_string(),
            worker: report.worker.clone(),
            completed: report.completed,
            failed: report.failed,
            duration_s: report.duration_s,
            requests_per_sec: report.requests_per_sec,
            latency_p50_us: report.latency_us.quantile(0.5),
            latency_p99_us: report.latency_us.quantile(0.99),
            cpu_s,
            threads: report.threads,
            busy,
            cpu_bound: busy >= BUSY_GENERATOR,
        }
    }
}

/// Merges the reports of one test's workers exactly: histograms added,
/// counts summed, timelines aligned on wall-clock seconds. Each report is
/// named by where it came from. Refuses reports of different tests, and a
/// split test with a shard twice or (unless `allow_partial`) missing.
pub fn merge_workers(
    reports: &[(String, LoadReport)],
    allow_partial: bool,
) -> anyhow::Result<LoadReport> {
    let Some((first_name, first)) = reports.first() else {
        bail!("nothing to merge: give the workers' JSON reports");
    };
    for (name, report) in &reports[1..] {
        check_same_test(first_name, first, name, report)?;
    }
    let missing = check_shards(reports, allow_partial)?;
    let mut merged = first.clone();
    for (_, report) in &reports[1..] {
        merged.merge(report)?;
    }
    merged.worker = None;
    merged.workers = reports
        .iter()
        .map(|(name, report)| WorkerRow::new(name, report))
        .collect();
    merged.missing_shards = missing;
    Ok(merged)
}

fn check_same_test(
    first_name: &str,
    first: &LoadReport,
    name: &str,
    report: &LoadReport,
) -> anyhow::Result<()> {
    let differs = |what: &str, mine: String, theirs: String| {
        anyhow::anyhow!(
            "{name} is not part of the same test as {first_name}: its {what} is {theirs}, \
             not {mine}; merge only the workers of one run"
        )
    };
    if report.url != first.url {
        return Err(differs("URL", first.url.clone(), report.url.clone()));
    }
    if report.proto != first.proto || report.model != first.model {
        return Err(differs(
            "protocol and model",
            format!("{} {}", first.proto, first.model),
            format!("{} {}", report.proto, report.model),
        ));
    }
    if report.streams_per_connection != first.streams_per_connection {
        return Err(differs(
            "streams per connection",
            first.streams_per_connection.to_string(),
            report.streams_per_connection.to_string(),
        ));
    }
    let linger = |report: &LoadReport| match &report.batching {
        Some(batching) => format!("{} µs", batching.linger_us),
        None => "none".to_string(),
    };
    if linger(report) != linger(first) {
        return Err(differs("--linger", linger(first), linger(report)));
    }
    for (which, other) in [(first_name, first), (name, report)] {
        if let Some(timeline) = &other.timeline {
            if !timeline.is_consistent() {
                bail!("{which} has a damaged timeline (series of different lengths)");
            }
        }
    }
    if let (Some(mine), Some(theirs)) = (&first.timeline, &report.timeline) {
        if (mine.start_unix_s - theirs.start_unix_s).abs() > MAX_TIMELINE_GAP_S {
            bail!("{name} ran more than a week apart from {first_name}: merge only the workers of one run");
        }
    }
    let start = |report: &LoadReport| {
        report
            .worker
            .as_ref()
            .and_then(|worker| worker.start_at.clone())
            .unwrap_or_else(|| "none".to_string())
    };
    if start(report) != start(first) {
        return Err(differs(
            "start time (--start-at)",
            start(first),
            start(report),
        ));
    }
    Ok(())
}

/// The shard indices missing from a split test (empty when whole).
fn check_shards(reports: &[(String, LoadReport)], allow_partial: bool) -> anyhow::Result<Vec<u32>> {
    let shard = |report: &LoadReport| report.worker.as_ref().and_then(|worker| worker.shard);
    let split = reports
        .iter()
        .filter(|(_, report)| shard(report).is_some())
        .count();
    if split == 0 {
        return Ok(Vec::new());
    }
    if split != reports.len() {
        bail!("some reports are shards of a split test (--shard) and some are not: merge only the workers of one run");
    }
    let count = shard(&reports[0].1).expect("checked above").count;
    let mut seen = BTreeSet::new();
    for (name, report) in reports {
        let this = shard(report).expect("checked above");
        if this.index >= this.count {
            bail!(
                "{name} claims shard {}/{}, which does not exist",
                this.index,
                this.count
            );
        }
        if this.count != count {
            bail!(
                "{name} is shard {}/{}, but {} is one of {count}: merge only the workers of one run",
                this.index,
                this.count,
                reports[0].0
            );
        }
        if !seen.insert(this.index) {
            bail!(
                "shard {}/{count} appears twice ({name} is the second): each worker's report once",
                this.index
            );
        }
    }
    let missing: Vec<u32> = (0..count).filter(|index| !seen.contains(index)).collect();
    if !missing.is_empty() && !allow_partial {
        bail!(
            "shard(s) {} of {count} missing: the merged figures would cover only part of the \
             load; add their reports, or pass --allow-partial to merge what is here",
            join(&missing)
        );
    }
    Ok(missing)
}

fn join(indices: &[u32]) -> String {
    indices
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The per-worker table printed under a merged report.
pub(super) struct WorkerTable<'a>(pub &'a LoadReport);

impl fmt::Display for WorkerTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let report = self.0;
        writeln!(f, "  workers:   {} merged", report.workers.len())?;
        writeln!(
            f,
            "    {:<7} {:<24} {:>10} {:>7} {:>9} {:>9} {:>7} {:>6} {:>11} {:>10}",
            "shard",
            "host",
            "req/s",
            "failed",
            "p50 ms",
            "p99 ms",
            "cpu s",
            "busy",
            "late start",
            "clock ±"
        )?;
        for row in &report.workers {
            let worker = row.worker.as_ref();
            let shard = worker
                .and_then(|worker| worker.shard)
                .map_or("-".to_string(), |shard| {
                    format!("{}/{}", shard.index, shard.count)
                });
            let host = worker.map_or(row.source.as_str(), |worker| worker.host.as_str());
            let late = worker
                .and_then(|worker| worker.started_late_us)
                .map_or("-".to_string(), |us| {
                    format!("{:.1} ms", us as f64 / 1000.0)
                });
            let clock = match worker.map(|worker| &worker.clock) {
                Some(Clock {
                    max_error_us: Some(us),
                    ..
                }) => format!("{:.1} ms", *us as f64 / 1000.0),
                Some(Clock {
                    synchronized: Some(false),
                    ..
                }) => "unsynced".to_string(),
                _ => "unknown".to_string(),
            };
            writeln!(
                f,
                "    {:<7} {:<24} {:>10.1} {:>7} {:>9.2} {:>9.2} {:>7.2} {:>5.0}% {:>11} {:>10}{}",
                shard,
                host,
                row.requests_per_sec,
                row.failed,
                row.latency_p50_us as f64 / 1000.0,
                row.latency_p99_us as f64 / 1000.0,
                row.cpu_s,
                row.busy * 100.0,
                late,
                clock,
                if row.cpu_bound { "  CPU-BOUND" } else { "" }
            )?;
        }
        if !report.missing_shards.is_empty() {
            writeln!(
                f,
                "  PARTIAL:   shard(s) {} missing; the figures cover only the shards above",
                join(&report.missing_shards)
            )?;
        }
        let bound: Vec<&str> = report
            .workers
            .iter()
            .filter(|row| row.cpu_bound)
            .map(|row| row.source.as_str())
            .collect();
        if !bound.is_empty() {
            writeln!(
                f,
                "  warning:   {} had no CPU to spare: its pace may be its own, not the server's; \
                 give it more CPU or add workers",
                bound.join(", ")
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::*;
    use crate::load::{Batching, Cpu, ErrorCounts, FirstCall, Model};
    use crate::{Micros, Proto};

    /// Shard `index` of `count`, with these latencies (µs) and errors.
    fn shard_report(index: u32, count: u32, latencies: &[u64], timeouts: u64) -> LoadReport {
        let mut latency = Micros::default();
        for &us in latencies {
            latency.record(Duration::from_micros(us));
        }
        LoadReport {
            schema: crate::load::LOAD_SCHEMA.to_string(),
            url: "https://127.0.0.1:4433/".to_string(),
            proto: Proto::H3,
            model: Model::Closed,
            connections: 1,
            streams_per_connection: 1,
            threads: 1,
            interrupted: false,
            duration_s: 10.0,
            completed: latencies.len() as u64,
            failed: timeouts,
            body_bytes: 0,
            requests_per_sec: 0.0,
            body_bytes_per_sec: 0.0,
            ttfb_us: latency.clone(),
            latency_us: latency,
            origin_leg: None,
            tcp_connect_us: Micros::default(),
            handshake_us: Micros::default(),
            status_counts: BTreeMap::from([(200, latencies.len() as u64)]),
            errors: ErrorCounts {
                timeout: timeouts,
                ..ErrorCounts::default()
            },
            first_errors: BTreeMap::new(),
            connections_opened: 1,
            connections_by_protocol: BTreeMap::new(),
            first_call: None,
            reconnects: 0,
            aborted_in_flight: 0,
            not_attempted: 0,
            open_model: None,
            cpu: Cpu {
                user_s: 1.0,
                sys_s: 0.5,
                requests_per_cpu_s: 0.0,
                engine: Some("tcp".into()),
            },
            batching: None,
            warmup: None,
            worker: Some(Worker {
                shard: Some(Shard { index, count }),
                host: format!("pod-{index}"),
                start_at: Some("2026-11-26T12:00:00Z".to_string()),
                started_late_us: Some(120),
                clock: Clock::default(),
            }),
            timeline: None,
            workers: Vec::new(),
            missing_shards: Vec::new(),
        }
    }

    /// A heavy-tailed set of latencies, from a fixed seed.
    fn latencies(count: usize) -> Vec<u64> {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        (0..count)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let uniform = (state >> 11) as f64 / (1u64 << 53) as f64;
                (200.0 / (1.0 - uniform).powf(0.7)) as u64
            })
            .collect()
    }

    #[test]
    fn merged_percentiles_equal_one_histogram_of_every_latency() {
        let all = latencies(200_000);
        let mut whole = Micros::default();
        for &us in &all {
            whole.record(Duration::from_micros(us));
        }
        // Uneven, interleaved shares, as workers at different speeds take.
        let mut parts: Vec<Vec<u64>> = vec![Vec::new(); 4];
        for (i, &us) in all.iter().enumerate() {
            parts[(i * i) % 7 % 4].push(us);
        }
        let reports: Vec<(String, LoadReport)> = parts
            .iter()
            .enumerate()
            .map(|(index, part)| {
                let report = shard_report(index as u32, 4, part, index as u64 + 1);
                (format!("w{index}.json"), report)
            })
            .collect();
        let merged = merge_workers(&reports, false).unwrap();
        for quantile in [0.5, 0.9, 0.99, 0.999] {
            assert_eq!(
                merged.latency_us.quantile(quantile),
                whole.quantile(quantile),
                "{quantile}"
            );
        }
        assert_eq!(merged.latency_us.max(), whole.max());
        assert_eq!(merged.latency_us, whole);
        assert_eq!(merged.completed, 200_000);
        assert_eq!((merged.failed, merged.errors.timeout), (10, 10));
        assert_eq!(merged.workers.len(), 4);
        assert!(merged.worker.is_none());
        let averaged = parts
            .iter()
            .map(|part| {
                let mut one = Micros::default();
                part.iter()
                    .for_each(|&us| one.record(Duration::from_micros(us)));
                one.quantile(0.999)
            })
            .sum::<u64>()
            / 4;
        assert_ne!(
            averaged,
            whole.quantile(0.999),
            "the test's shares must differ"
        );
    }

    #[test]
    fn a_merged_first_call_is_kept_only_when_every_run_agrees() {
        let h3_first = Some(FirstCall {
            protocol: Proto::H3,
            https_record_alpn: Some(vec!["h3".into()]),
        });
        let shard = |index: u32, first_call: &Option<FirstCall>| {
            let report = LoadReport {
                first_call: first_call.clone(),
                ..shard_report(index, 2, &[100], 0)
            };
            (format!("w{index}.json"), report)
        };
        let agreeing = [shard(0, &h3_first), shard(1, &h3_first)];
        assert_eq!(
            merge_workers(&agreeing, false).unwrap().first_call,
            h3_first
        );
        let h2_first = Some(FirstCall {
            protocol: Proto::H2,
            https_record_alpn: None,
        });
        let differing = [shard(0, &h3_first), shard(1, &h2_first)];
        assert_eq!(merge_workers(&differing, false).unwrap().first_call, None);
    }

    #[test]
    fn a_merged_engine_is_kept_only_when_every_run_agrees() {
        let shard = |index: u32, engine: &str| {
            let mut report = shard_report(index, 2, &[100], 0);
            report.cpu.engine = Some(engine.to_string());
            (format!("w{index}.json"), report)
        };
        let agreeing = [shard(0, "quic"), shard(1, "quic")];
        let merged = merge_workers(&agreeing, false).unwrap();
        assert_eq!(merged.cpu.engine.as_deref(), Some("quic"));
        let differing = [shard(0, "quic"), shard(1, "tokio")];
        assert_eq!(merge_workers(&differing, false).unwrap().cpu.engine, None);
    }

    #[test]
    fn merged_batching_adds_the_reads_of_runs_with_the_same_linger() {
        let shard = |index: u32, batching: Option<Batching>| {
            let mut report = shard_report(index, 2, &[100], 0);
            report.batching = batching;
            (format!("w{index}.json"), report)
        };
        let batching = |linger_us, timestamped_reads, untimed_reads| Batching {
            linger_us,
            timestamped_reads,
            untimed_reads,
        };
        let both = [
            shard(0, Some(batching(200, 40, 1))),
            shard(1, Some(batching(200, 60, 0))),
        ];
        let merged = merge_workers(&both, false).unwrap();
        assert_eq!(merged.batching, Some(batching(200, 100, 1)));
        let neither = [shard(0, None), shard(1, None)];
        assert_eq!(merge_workers(&neither, false).unwrap().batching, None);
        for (mine, theirs, said) in [
            (
                Some(batching(100, 40, 1)),
                Some(batching(200, 60, 0)),
                "200 µs, not 100 µs",
            ),
            (None, Some(batching(200, 60, 0)), "200 µs, not none"),
        ] {
            let err = merge_workers(&[shard(0, mine), shard(1, theirs)], false)
                .unwrap_err()
                .to_string();
            assert!(err.contains(&format!("its --linger is {said}")), "{err}");
        }
    }

    #[test]
    fn reports_of_other_tests_do_not_merge() {
        let a = shard_report(0, 2, &[100], 0);
        let mut other_url = shard_report(1, 2, &[100], 0);
        other_url.url = "https://127.0.0.1:4433/other".to_string();
        let mut other_start = shard_report(1, 2, &[100], 0);
        other_start.worker.as_mut().unwrap().start_at = Some("2026-11-26T13:00:00Z".into());
        let unsplit = {
            let mut report = shard_report(1, 2, &[100], 0);
            report.worker.as_mut().unwrap().shard = None;
            report
        };
        let cases = [
            (other_url, "its URL is"),
            (other_start, "start time"),
            (unsplit, "some are not"),
            (shard_report(1, 3, &[100], 0), "one of 2"),
            (shard_report(0, 2, &[100], 0), "appears twice"),
        ];
        for (b, expected) in cases {
            let err = merge_workers(&[("a".into(), a.clone()), ("b".into(), b)], false)
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "{err}");
        }
    }

    #[test]
    fn a_missing_shard_is_refused_unless_partial_is_allowed() {
        let reports = [
            ("a".to_string(), shard_report(0, 3, &[100], 0)),
            ("c".to_string(), shard_report(2, 3, &[100], 0)),
        ];
        let err = merge_workers(&reports, false).unwrap_err().to_string();
        assert!(err.contains("shard(s) 1 of 3 missing"), "{err}");
        assert!(err.contains("--allow-partial"), "{err}");
        let merged = merge_workers(&reports, true).unwrap();
        assert_eq!(merged.missing_shards, vec![1]);
        assert!(merged.to_string().contains("PARTIAL:   shard(s) 1 missing"));
    }

    fn timeline(start: i64, completed: &[u64]) -> Timeline {
        Timeline {
            start_unix_s: start,
            completed: completed.to_vec(),
            failed: vec![0; completed.len()],
            body_bytes: completed.iter().map(|count| count * 10).collect(),
        }
    }

    #[test]
    fn timelines_line_up_on_wall_clock_seconds() {
        let mut merged = timeline(100, &[1, 2, 3]);
        merged.add(&timeline(102, &[10, 20]));
        assert_eq!(merged, timeline(100, &[1, 2, 13, 20]));
        merged.add(&timeline(98, &[5]));
        assert_eq!(merged, timeline(98, &[5, 0, 1, 2, 13, 20]));
    }

    #[test]
    fn recording_grows_the_timeline_both_ways() {
        let mut line = Timeline::default();
        line.record(50, 1, 0, 10);
        line.record(52, 1, 0, 10);
        line.record(49, 1, 0, 10);
        assert_eq!(line, timeline(49, &[1, 1, 0, 1]));
    }

    #[test]
    fn full_seconds_leave_out_the_partial_ends() {
        assert_eq!(
            timeline(0, &[1, 50, 40, 60, 2]).full_seconds(),
            Some((40, 50, 60))
        );
        assert_eq!(timeline(0, &[1, 2]).full_seconds(), None);
    }
}
