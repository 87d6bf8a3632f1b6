//! What a run's records mean: outcome counts, delays, the stall, and when
//! a broken connection was noticed and replaced. Pure functions over the
//! records, no clock and no I/O.

use std::collections::BTreeMap;
use std::time::Duration;

use h3lab_results::ErrorKind;
use serde::Serialize;

/// One request, times from the first request's intended start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestRecord {
    /// When the schedule meant it to start.
    pub intended_at: Duration,
    /// When its response ended, or when it failed.
    pub finished_at: Duration,
    /// Why it failed; `None` for a complete response with a good status.
    pub error: Option<ErrorKind>,
    /// Index of the connection it went on, if it got one.
    pub connection: Option<usize>,
}

impl RequestRecord {
    fn latency(&self) -> Duration {
        self.finished_at.saturating_sub(self.intended_at)
    }
}

/// One connection, times as for requests (a connection opened before the
/// first request is ready at zero).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConnectionRecord {
    /// When its handshake completed.
    pub ready_at: Duration,
    /// When the client found it dead (a request on it failed, or it closed).
    pub broken_at: Option<Duration>,
}

/// Everything the client saw in one protocol's run.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Every request started, in any order.
    pub requests: Vec<RequestRecord>,
    /// Every connection opened, in order.
    pub connections: Vec<ConnectionRecord>,
    /// When the change took effect.
    pub switched_at: Duration,
}

/// The figures of one protocol's run (part of `h3lab.migrate/1`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Requests started.
    pub requests: u64,
    /// Complete responses with a good status.
    pub succeeded: u64,
    /// Requests that got no complete good response.
    pub failed: u64,
    /// Failed requests by error kind.
    pub failed_by_kind: BTreeMap<ErrorKind, u64>,
    /// Successes that ended after the switch and took longer than the
    /// delay threshold.
    pub delayed_after_switch: u64,
    /// The same before the switch: the path's own noise, for comparison.
    pub delayed_before_switch: u64,
    /// Longest time without a successful response: between two, or from
    /// the last one to the end of the run.
    pub stall_ms: f64,
    /// When that stall began, from the first request.
    pub stall_started_at_s: f64,
    /// Connections opened.
    pub connections_used: usize,
    /// Connections the client found dead.
    pub connections_broken: usize,
    /// From the switch to the first sign that a connection open before it
    /// was dead; `None` when none broke.
    pub break_detected_after_ms: Option<f64>,
    /// From the switch to the first new connection ready after a break;
    /// `None` when nothing broke or no new connection came up.
    pub reconnected_after_ms: Option<f64>,
    /// No failed request and one connection throughout.
    pub survived: bool,
}

/// Summarises one run. `delay_threshold` marks a success as delayed.
pub fn summarise(observed: &Observed, delay_threshold: Duration) -> Summary {
    let failed_by_kind = count_failures(&observed.requests);
    let failed: u64 = failed_by_kind.values().sum();
    let (stall, stall_start) = longest_stall(&observed.requests);
    let (before, after) = delayed(&observed.requests, observed.switched_at, delay_threshold);
    let detected = break_detected(observed);
    let broken = observed
        .connections
        .iter()
        .filter(|c| c.broken_at.is_some())
        .count();
    let connections_used = observed.connections.len();
    Summary {
        requests: observed.requests.len() as u64,
        succeeded: observed.requests.len() as u64 - failed,
        failed,
        failed_by_kind,
        delayed_after_switch: after,
        delayed_before_switch: before,
        stall_ms: millis(stall),
        stall_started_at_s: stall_start.as_secs_f64(),
        connections_used,
        connections_broken: broken,
        break_detected_after_ms: detected.map(millis),
        reconnected_after_ms: detected.and(reconnected(observed)).map(millis),
        survived: failed == 0 && connections_used == 1 && broken == 0,
    }
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn count_failures(requests: &[RequestRecord]) -> BTreeMap<ErrorKind, u64> {
    let mut counts = BTreeMap::new();
    for kind in requests.iter().filter_map(|r| r.error) {
        *counts.entry(kind).or_insert(0) += 1;
    }
    counts
}

/// The longest gap between successive successful responses, or from the
/// last one to the run's end (the last record's end); with no success at
/// all, the whole run. Returns the gap and when it began.
pub fn longest_stall(requests: &[RequestRecord]) -> (Duration, Duration) {
    let mut successes: Vec<Duration> = requests
        .iter()
        .filter(|r| r.error.is_none())
        .map(|r| r.finished_at)
        .collect();
    successes.sort();
    let end = requests
        .iter()
        .map(|r| r.finished_at)
        .max()
        .unwrap_or_default();
    let mut marks = successes;
    if marks.is_empty() {
        marks.extend(requests.iter().map(|r| r.intended_at).min());
    }
    if marks.last().is_some_and(|&last| end > last) {
        marks.push(end);
    }
    marks
        .windows(2)
        .map(|pair| (pair[1] - pair[0], pair[0]))
        .max_by_key(|(gap, _)| *gap)
        .unwrap_or_default()
}

/// Successes slower than `threshold`, (before, after) the switch by when
/// they ended.
pub fn delayed(
    requests: &[RequestRecord],
    switched_at: Duration,
    threshold: Duration,
) -> (u64, u64) {
    let slow = requests
        .iter()
        .filter(|r| r.error.is_none() && r.latency() > threshold);
    let (mut before, mut after) = (0, 0);
    for request in slow {
        match request.finished_at >= switched_at {
            true => after += 1,
            false => before += 1,
        }
    }
    (before, after)
}

/// From the switch to the first break of a connection that was ready
/// before it.
pub fn break_detected(observed: &Observed) -> Option<Duration> {
    observed
        .connections
        .iter()
        .filter(|c| c.ready_at <= observed.switched_at)
        .filter_map(|c| c.broken_at)
        .filter(|&broken| broken >= observed.switched_at)
        .min()
        .map(|broken| broken - observed.switched_at)
}

/// From the switch to the first connection ready after it.
pub fn reconnected(observed: &Observed) -> Option<Duration> {
    observed
        .connections
        .iter()
        .map(|c| c.ready_at)
        .filter(|&ready| ready > observed.switched_at)
        .min()
        .map(|ready| ready - observed.switched_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    fn ok(intended: u64, finished: u64, connection: usize) -> RequestRecord {
        RequestRecord {
            intended_at: ms(intended),
            finished_at: ms(finished),
            error: None,
            connection: Some(connection),
        }
    }

    fn failed(intended: u64, finished: u64, kind: ErrorKind) -> RequestRecord {
        RequestRecord {
            intended_at: ms(intended),
            finished_at: ms(finished),
            error: Some(kind),
            connection: Some(0),
        }
    }

    fn connection(ready: u64, broken: Option<u64>) -> ConnectionRecord {
        ConnectionRecord {
            ready_at: ms(ready),
            broken_at: broken.map(ms),
        }
    }

    /// A migrating stream: every 20 ms a request, one of them slowed by
    /// the switch at 100 ms, none lost.
    fn migrated() -> Observed {
        let mut requests: Vec<_> = (0..10).map(|i| ok(i * 20, i * 20 + 21, 0)).collect();
        requests[5] = ok(100, 190, 0);
        Observed {
            requests,
            connections: vec![connection(0, None)],
            switched_at: ms(100),
        }
    }

    /// A TCP stream: the connection is found dead 30 ms after the switch
    /// at 100 ms, two requests fail, a new connection is ready at 180 ms.
    fn broken() -> Observed {
        let requests = vec![
            ok(0, 21, 0),
            ok(50, 71, 0),
            failed(100, 130, ErrorKind::Reset),
            failed(150, 130, ErrorKind::Reset),
            ok(200, 221, 1),
            ok(250, 271, 1),
        ];
        Observed {
            requests,
            connections: vec![connection(0, Some(130)), connection(180, None)],
            switched_at: ms(100),
        }
    }

    #[test]
    fn a_migrated_connection_survives_with_one_delayed_request() {
        let summary = summarise(&migrated(), ms(40));
        assert_eq!(
            (summary.requests, summary.succeeded, summary.failed),
            (10, 10, 0)
        );
        assert_eq!(
            (summary.delayed_before_switch, summary.delayed_after_switch),
            (0, 1)
        );
        assert_eq!(
            (summary.connections_used, summary.connections_broken),
            (1, 0)
        );
        assert_eq!(summary.break_detected_after_ms, None);
        assert_eq!(summary.reconnected_after_ms, None);
        assert!(summary.survived);
    }

    #[test]
    fn a_broken_connection_counts_failures_detection_and_reconnection() {
        let summary = summarise(&broken(), ms(40));
        assert_eq!((summary.succeeded, summary.failed), (4, 2));
        assert_eq!(
            summary.failed_by_kind,
            BTreeMap::from([(ErrorKind::Reset, 2)])
        );
        assert_eq!(
            (summary.connections_used, summary.connections_broken),
            (2, 1)
        );
        assert_eq!(summary.break_detected_after_ms, Some(30.0));
        assert_eq!(summary.reconnected_after_ms, Some(80.0));
        assert!(!summary.survived);
    }

    #[test]
    fn the_stall_is_the_longest_gap_between_successes() {
        let (stall, started) = longest_stall(&broken().requests);
        assert_eq!((stall, started), (ms(150), ms(71)));
        let (stall, started) = longest_stall(&migrated().requests);
        assert_eq!((stall, started), (ms(40), ms(101)));
    }

    #[test]
    fn failures_at_the_end_stretch_the_stall_to_the_last_record() {
        let requests = vec![ok(0, 20, 0), failed(20, 1020, ErrorKind::Timeout)];
        assert_eq!(longest_stall(&requests), (ms(1000), ms(20)));
        let none_succeeded = vec![failed(0, 500, ErrorKind::Timeout)];
        assert_eq!(longest_stall(&none_succeeded), (ms(500), ms(0)));
        assert_eq!(longest_stall(&[]), (Duration::ZERO, Duration::ZERO));
    }

    #[test]
    fn a_new_connection_without_a_break_is_no_reconnection() {
        let mut observed = migrated();
        observed.connections.push(connection(150, None));
        let summary = summarise(&observed, ms(40));
        assert_eq!(summary.reconnected_after_ms, None);
        assert!(!summary.survived, "two connections are not one surviving");
    }

    #[test]
    fn a_break_before_the_switch_is_not_the_switch_s_doing() {
        let mut observed = broken();
        observed.connections[0].broken_at = Some(ms(90));
        assert_eq!(break_detected(&observed), None);
    }
}
