//! Per-worker counters and histograms, owned by one thread and merged once
//! at the end, so the hot path takes no lock and shares no cache line.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use h3lab_results::load::{Batching, ErrorCounts, OriginLeg, Timeline};
use h3lab_results::{ErrorKind, Micros, Proto};

/// Status codes are three digits; index them directly.
const STATUS_SLOTS: usize = 1000;

pub(crate) struct Tally {
    pub latency: Micros,
    pub ttfb: Micros,
    /// Responses that said how long their edge waited for its origin.
    pub origin_leg: Option<OriginLeg>,
    pub tcp_connect: Micros,
    pub handshake: Micros,
    pub lag: Micros,
    pub completed: u64,
    pub body_bytes: u64,
    pub sent: u64,
    pub late: u64,
    pub unsent: u64,
    pub not_attempted: u64,
    pub connections_opened: u64,
    /// Under `auto`: connections by the protocol they ended on.
    pub connections_by_protocol: BTreeMap<Proto, u64>,
    pub reconnects: u64,
    pub aborted_in_flight: u64,
    statuses: Vec<u64>,
    errors: BTreeMap<ErrorKind, u64>,
    pub first_errors: BTreeMap<ErrorKind, String>,
    pub warmup_completed: u64,
    pub warmup_failed: u64,
    pub warmup_latency: Micros,
    /// Measured outcomes per wall-clock second.
    pub timeline: Timeline,
    /// When this worker first tried to connect.
    pub first_attempt: Option<Instant>,
    /// With `--linger`: the hold and how the reads were timed.
    pub batching: Option<Batching>,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally {
            latency: Micros::default(),
            ttfb: Micros::default(),
            origin_leg: None,
            tcp_connect: Micros::default(),
            handshake: Micros::default(),
            lag: Micros::default(),
            completed: 0,
            body_bytes: 0,
            sent: 0,
            late: 0,
            unsent: 0,
            not_attempted: 0,
            connections_opened: 0,
            connections_by_protocol: BTreeMap::new(),
            reconnects: 0,
            aborted_in_flight: 0,
            statuses: vec![0; STATUS_SLOTS],
            errors: BTreeMap::new(),
            first_errors: BTreeMap::new(),
            warmup_completed: 0,
            warmup_failed: 0,
            warmup_latency: Micros::default(),
            timeline: Timeline::default(),
            first_attempt: None,
            batching: None,
        }
    }
}

impl Tally {
    /// A complete response, received in wall-clock second `unix_s`.
    pub fn record_response(
        &mut self,
        unix_s: i64,
        status: u16,
        body_bytes: u64,
        ttfb: Duration,
        latency: Duration,
        origin_wait: Option<Duration>,
    ) {
        self.timeline.record(unix_s, 1, 0, body_bytes);
        self.completed += 1;
        self.body_bytes += body_bytes;
        self.ttfb.record(ttfb);
        self.latency.record(latency);
        if let Some(wait) = origin_wait {
            let leg = self.origin_leg.get_or_insert_default();
            leg.responses += 1;
            leg.origin_wait_us.record(wait);
            leg.client_leg_us.record(latency.saturating_sub(wait));
        }
        self.statuses[usize::from(status) % STATUS_SLOTS] += 1;
        if status >= 400 {
            self.record_error(ErrorKind::BadStatus, || format!("HTTP status {status}"));
        }
    }

    /// A failed attempt, in wall-clock second `unix_s`.
    pub fn record_failure(
        &mut self,
        unix_s: i64,
        kind: ErrorKind,
        message: impl FnOnce() -> String,
    ) {
        self.timeline.record(unix_s, 0, 1, 0);
        self.record_error(kind, message);
    }

    /// `message` is only built for the first error of each kind.
    pub fn record_error(&mut self, kind: ErrorKind, message: impl FnOnce() -> String) {
        *self.errors.entry(kind).or_default() += 1;
        self.first_errors.entry(kind).or_insert_with(message);
    }

    pub fn merge(&mut self, other: Tally) {
        self.latency.add(&other.latency);
        self.ttfb.add(&other.ttfb);
        if let Some(theirs) = &other.origin_leg {
            self.origin_leg.get_or_insert_default().add(theirs);
        }
        self.tcp_connect.add(&other.tcp_connect);
        self.handshake.add(&other.handshake);
        self.lag.add(&other.lag);
        self.completed += other.completed;
        self.body_bytes += other.body_bytes;
        self.sent += other.sent;
        self.late += other.late;
        self.unsent += other.unsent;
        self.not_attempted += other.not_attempted;
        self.connections_opened += other.connections_opened;
        for (proto, count) in other.connections_by_protocol {
            *self.connections_by_protocol.entry(proto).or_default() += count;
        }
        self.reconnects += other.reconnects;
        self.aborted_in_flight += other.aborted_in_flight;
        for (mine, theirs) in self.statuses.iter_mut().zip(&other.statuses) {
            *mine += theirs;
        }
        for (kind, count) in other.errors {
            *self.errors.entry(kind).or_default() += count;
        }
        for (kind, message) in other.first_errors {
            self.first_errors.entry(kind).or_insert(message);
        }
        self.warmup_completed += other.warmup_completed;
        self.warmup_failed += other.warmup_failed;
        self.warmup_latency.add(&other.warmup_latency);
        self.timeline.add(&other.timeline);
        match (&mut self.batching, other.batching) {
            (Some(mine), Some(theirs)) => mine.add(&theirs),
            (mine, theirs) => *mine = mine.take().or(theirs),
        }
        self.first_attempt = self
            .first_attempt
            .into_iter()
            .chain(other.first_attempt)
            .min();
    }

    pub fn error_counts(&self) -> ErrorCounts {
        let count = |kind| self.errors.get(&kind).copied().unwrap_or(0);
        ErrorCounts {
            connect: count(ErrorKind::Connect),
            tls: count(ErrorKind::Tls),
            reset: count(ErrorKind::Reset),
            timeout: count(ErrorKind::Timeout),
            protocol: count(ErrorKind::Protocol),
            bad_status: count(ErrorKind::BadStatus),
        }
    }

    pub fn status_counts(&self) -> BTreeMap<u16, u64> {
        (0..STATUS_SLOTS as u16)
            .zip(&self.statuses)
            .filter(|(_, count)| **count > 0)
            .map(|(status, count)| (status, *count))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_status_counts_as_status_and_error() {
        let mut tally = Tally::default();
        let ms = Duration::from_millis(1);
        tally.record_response(7, 200, 10, ms, ms, None);
        tally.record_response(7, 404, 3, ms, ms, None);
        tally.record_error(ErrorKind::Reset, || "first".into());
        tally.record_error(ErrorKind::Reset, || "second".into());
        assert_eq!(tally.status_counts(), BTreeMap::from([(200, 1), (404, 1)]));
        let errors = tally.error_counts();
        assert_eq!((errors.bad_status, errors.reset, errors.connect), (1, 2, 0));
        assert_eq!(tally.first_errors[&ErrorKind::Reset], "first");
        assert_eq!((tally.completed, tally.body_bytes), (2, 13));
    }

    #[test]
    fn merge_adds_everything() {
        let ms = Duration::from_millis(1);
        let mut a = Tally::default();
        a.record_response(7, 200, 5, ms, ms, None);
        let mut b = Tally::default();
        b.record_response(8, 200, 7, ms, 2 * ms, Some(ms / 4));
        b.record_error(ErrorKind::Timeout, || "slow".into());
        let first = Instant::now();
        a.first_attempt = Some(first + ms);
        b.first_attempt = Some(first);
        a.merge(b);
        assert_eq!(a.first_attempt, Some(first), "the earliest attempt of all");
        assert_eq!(a.completed, 2);
        assert_eq!(a.body_bytes, 12);
        assert_eq!(a.latency.count(), 2);
        assert_eq!(a.status_counts()[&200], 2);
        assert_eq!(a.error_counts().timeout, 1);
        assert_eq!(a.timeline.completed, vec![1, 1]);
        let leg = a.origin_leg.expect("b's response said its origin time");
        assert_eq!(leg.responses, 1, "a's response said nothing");
        assert_eq!(leg.origin_wait_us.max(), 250);
        assert_eq!(
            leg.client_leg_us.max(),
            1750,
            "its latency without the wait"
        );
    }
}
