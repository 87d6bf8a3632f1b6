//! A finished run's tally turned into its report (`h3lab.load/1`, whose
//! types live in `h3lab-results`).

use h3lab_results::load::{
    Cpu, FirstCall, LoadReport, Model, OpenModel, Warmup, Worker, LOAD_SCHEMA,
};
use h3lab_results::Proto;

use crate::tally::Tally;

/// The run's shape, fixed before it starts.
pub(crate) struct RunShape {
    pub url: String,
    pub proto: Proto,
    pub connections: usize,
    pub streams: usize,
    pub threads: usize,
    pub target_rate: Option<f64>,
    /// `auto`'s first call, before the run.
    pub first_call: Option<FirstCall>,
}

/// What the engine measured besides the per-request tally.
pub(crate) struct RunTotals {
    /// Which engine drove the connections (`engine::Engine::name`).
    pub engine: &'static str,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub interrupted: bool,
    pub user_s: f64,
    pub sys_s: f64,
}

/// The report of a finished run.
pub(crate) fn build(
    shape: RunShape,
    tally: Tally,
    totals: RunTotals,
    worker: Worker,
) -> LoadReport {
    let errors = tally.error_counts();
    let status_counts = tally.status_counts();
    let open_model = open_model(&shape, &tally);
    let warmup = warmup(&totals, &tally);
    let mut report = LoadReport {
        schema: LOAD_SCHEMA.to_string(),
        url: shape.url,
        proto: shape.proto,
        model: if shape.target_rate.is_some() {
            Model::Open
        } else {
            Model::Closed
        },
        connections: shape.connections,
        streams_per_connection: shape.streams,
        threads: shape.threads,
        interrupted: totals.interrupted,
        duration_s: totals.duration_s,
        completed: tally.completed,
        failed: errors.transport_failures(),
        body_bytes: tally.body_bytes,
        requests_per_sec: 0.0,
        body_bytes_per_sec: 0.0,
        latency_us: tally.latency,
        ttfb_us: tally.ttfb,
        origin_leg: tally.origin_leg,
        tcp_connect_us: tally.tcp_connect,
        handshake_us: tally.handshake,
        status_counts,
        errors,
        first_errors: tally
            .first_errors
            .into_iter()
            .map(|(kind, message)| (kind.name().to_string(), message))
            .collect(),
        connections_opened: tally.connections_opened,
        connections_by_protocol: tally
            .connections_by_protocol
            .into_iter()
            .map(|(proto, count)| (proto.name().to_string(), count))
            .collect(),
        first_call: shape.first_call,
        reconnects: tally.reconnects,
        aborted_in_flight: tally.aborted_in_flight,
        not_attempted: tally.not_attempted,
        open_model,
        cpu: Cpu {
            user_s: totals.user_s,
            sys_s: totals.sys_s,
            requests_per_cpu_s: 0.0,
            engine: Some(totals.engine.to_string()),
        },
        batching: tally.batching,
        warmup,
        worker: Some(worker),
        timeline: Some(tally.timeline),
        workers: Vec::new(),
        missing_shards: Vec::new(),
    };
    report.derive_rates();
    report
}

/// The open model's sends, when the run had a target rate; its achieved
/// rate is derived with the others.
fn open_model(shape: &RunShape, tally: &Tally) -> Option<OpenModel> {
    shape.target_rate.map(|target_rate| OpenModel {
        target_rate,
        sent: tally.sent,
        achieved_rate: 0.0,
        late: tally.late,
        lag_us: tally.lag.clone(),
        unsent: tally.unsent,
    })
}

/// What the warm-up did, when there was one.
fn warmup(totals: &RunTotals, tally: &Tally) -> Option<Warmup> {
    (totals.warmup_s > 0.0).then(|| Warmup {
        duration_s: totals.warmup_s,
        completed: tally.warmup_completed,
        failed: tally.warmup_failed,
        latency_us: tally.warmup_latency.clone(),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A 10 s open-model run on 2 threads whose sends lagged `lag_us` each.
    fn paced_run(lag_us: u64, cpu_s: f64) -> LoadReport {
        let mut tally = Tally::default();
        for _ in 0..1000 {
            tally.lag.record(Duration::from_micros(lag_us));
        }
        tally.sent = 1000;
        let shape = RunShape {
            url: "https://127.0.0.1/".to_string(),
            proto: Proto::H1,
            connections: 4,
            streams: 1,
            threads: 2,
            target_rate: Some(100.0),
            first_call: None,
        };
        let totals = RunTotals {
            engine: "tcp",
            duration_s: 10.0,
            warmup_s: 0.0,
            interrupted: false,
            user_s: cpu_s,
            sys_s: 0.0,
        };
        let worker = Worker {
            shard: None,
            host: "test".to_string(),
            start_at: None,
            started_late_us: None,
            clock: Default::default(),
        };
        build(shape, tally, totals, worker)
    }

    #[test]
    fn sends_within_the_bounds_need_no_warning() {
        assert_eq!(paced_run(15, 1.0).pacing_warning(), None);
    }

    #[test]
    fn a_busy_generator_is_named_as_the_cause_of_lag() {
        let warning = paced_run(900, 19.0).pacing_warning().unwrap();
        assert!(warning.contains("busy 95 %"), "{warning}");
        assert!(warning.contains("no CPU was left"), "{warning}");
    }

    #[test]
    fn an_idle_generator_with_lag_points_at_connections_and_threads() {
        let warning = paced_run(900, 1.0).pacing_warning().unwrap();
        assert!(warning.contains("900 µs (p50)"), "{warning}");
        assert!(warning.contains("raise -c or -m"), "{warning}");
        assert!(warning.contains("2 per thread"), "{warning}");
    }
}
