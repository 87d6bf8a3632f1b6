//! Open-model runs: the achieved rate must match the target, and sends
//! leave on time. The tests take turns: each measures timing, which a
//! neighbour's load on this 2-core machine would disturb.

mod common;

use std::sync::Mutex;
use std::time::Duration;

use common::TestServer;
use h3lab_load::CancellationToken;
use h3lab_results::load::{LoadReport, Model};
use h3lab_results::Proto;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// 200 req/s for 3 s must send 600 requests within ±5 %.
fn paced_run_hits_the_rate(proto: Proto) {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = TestServer::start();
    let mut config = server.config("/bytes/100", proto);
    config.rate = Some(200.0);
    config.duration = Some(Duration::from_secs(3));
    config.connections = 4;
    let report = h3lab_load::run(&config, CancellationToken::new()).unwrap();
    let open = report.open_model.as_ref().expect("open-model figures");
    assert_eq!(report.model, Model::Open);
    assert!(
        (570..=630).contains(&open.sent),
        "{proto}: sent {}\n{report}",
        open.sent
    );
    assert!(
        (open.achieved_rate - 200.0).abs() <= 10.0,
        "{proto}: achieved {}\n{report}",
        open.achieved_rate
    );
    assert!(
        (report.requests_per_sec - 200.0).abs() <= 10.0,
        "{proto}\n{report}"
    );
    assert_eq!(report.failed, 0, "{proto}\n{report}");
    assert_eq!(report.body_bytes, report.completed * 100);
    assert_eq!(report.completed + report.aborted_in_flight, open.sent);
    assert_eq!(
        open.lag_us.count(),
        open.sent,
        "every send's lag is recorded"
    );
    assert!(open.unsent <= 30, "{proto}\n{report}");
}

#[test]
fn h1_paced() {
    paced_run_hits_the_rate(Proto::H1);
}

#[test]
fn h2_paced() {
    paced_run_hits_the_rate(Proto::H2);
}

#[test]
fn h3_paced() {
    paced_run_hits_the_rate(Proto::H3);
}

/// Two connections of one stream each cannot keep 100 req/s against a
/// 50 ms endpoint: requests go out late and latency, measured from the
/// intended time, includes the wait (coordinated-omission correction).
#[test]
fn overload_shows_up_as_late_requests_and_long_latency() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = TestServer::start();
    let mut config = server.config("/delay/50", Proto::H2);
    config.rate = Some(100.0);
    config.requests = Some(60);
    let report = h3lab_load::run(&config, CancellationToken::new()).unwrap();
    let open = report.open_model.as_ref().unwrap();
    assert_eq!(report.completed, 60, "{report}");
    assert!(open.late > 30, "{report}");
    // 60 requests at 40 req/s capacity finish ~1.5 s after the first; the
    // last ones were due after 0.6 s, so they waited ~0.9 s.
    assert!(report.latency_us.max() > 500_000, "{report}");
    assert!(open.achieved_rate < 60.0, "{report}");
}

/// The open model measures latency from the intended send time, so a
/// generator that sends late charges its own lag to the server. At a rate
/// the server answers easily, sends leave on time: the median lag is under
/// 0.1 ms (tokio's millisecond timer left them 1.2 ms late at the median).
///
/// This asserts the generator's own lag, not that the open model's median
/// latency equals the closed model's. A client thread that idled between
/// sparse requests takes the kernel longer to wake for the response than
/// one a closed loop keeps busy: on one CI machine 177 against 73 µs, with
/// sends 2 µs late. That gap is the machine's, not the generator's;
/// `scripts/pacing-bench.sh` measures it.
#[test]
fn at_a_low_rate_sends_leave_on_time() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = TestServer::start();
    let mut config = server.config("/bytes/1000", Proto::H1);
    config.connections = 1;
    config.threads = 1;
    config.rate = Some(500.0);
    config.duration = Some(Duration::from_secs(1));
    let report = h3lab_load::run(&config, CancellationToken::new()).unwrap();
    let open = report.open_model.as_ref().expect("open-model figures");
    assert_eq!(report.failed, 0, "{report}");
    assert!(open.sent >= 475, "{report}");
    assert_eq!(open.lag_us.count(), open.sent, "{report}");
    let lag_p50 = open.lag_us.quantile(0.5);
    assert!(
        lag_p50 <= 100,
        "sends left {lag_p50} µs late at the median, more than 0.1 ms\n{report}"
    );
}

/// `--linger` of 20 ms, one connection, one request at a time: each wait
/// holds out the whole linger (the run takes at least 30 of them), yet
/// each response is timed by its arrival, well under the linger.
#[test]
fn a_linger_holds_out_but_times_each_response_by_its_arrival() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = TestServer::start();
    let linger = Duration::from_millis(20);
    for proto in [Proto::H1, Proto::H2] {
        let mut config = server.config("/bytes/1000", proto);
        config.connections = 1;
        config.requests = Some(30);
        config.linger = Some(linger);
        let report = h3lab_load::run(&config, CancellationToken::new()).unwrap();
        assert_eq!(report.completed, 30, "{proto}\n{report}");
        let batching = report.batching.as_ref().expect("the linger's figures");
        assert_eq!(batching.linger_us, 20_000, "{proto}");
        assert_eq!(batching.untimed_reads, 0, "{proto}\n{report}");
        assert!(batching.timestamped_reads >= 30, "{proto}\n{report}");
        assert!(
            report.duration_s >= 30.0 * linger.as_secs_f64() * 0.9,
            "{proto}: 30 requests in {} s, so the loop did not hold out\n{report}",
            report.duration_s
        );
        for (what, micros) in [("latency", &report.latency_us), ("ttfb", &report.ttfb_us)] {
            let p50 = micros.quantile(0.5);
            assert!(
                p50 < 10_000,
                "{proto}: {what} p50 {p50} µs: the hold was timed, not the arrival\n{report}"
            );
        }
    }
}

/// An open-model run with a linger longer than the time between sends:
/// the hold ends when the next send is due, so sends keep their schedule.
#[test]
fn a_linger_lets_open_model_sends_leave_on_time() {
    let report = open_run_with_linger(200.0, Duration::from_millis(20));
    let open = report.open_model.as_ref().expect("open-model figures");
    assert_eq!(report.failed, 0, "{report}");
    assert!(open.sent >= 190, "{report}");
    let lag_p50 = open.lag_us.quantile(0.5);
    assert!(
        lag_p50 <= 1_000,
        "sends left {lag_p50} µs late at the median: the hold kept them\n{report}"
    );
    let batching = report.batching.as_ref().expect("the linger's figures");
    assert!(batching.timestamped_reads >= open.sent, "{report}");
    assert_eq!(batching.untimed_reads, 0, "{report}");
    let p50 = report.latency_us.quantile(0.5);
    assert!(
        p50 < 10_000,
        "latency p50 {p50} µs: the hold was timed\n{report}"
    );
}

/// Connections that set up while others wait for responses: no hold
/// then, or their connect and handshake would be timed a linger late.
/// The server closes each connection after its response, so every
/// request sets one up beside the other's request in flight.
#[test]
fn a_linger_leaves_connection_set_up_untimed_by_it() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = TestServer::start();
    let mut config = server.config("/bytes/1000", Proto::H1);
    config.threads = 1;
    config.requests = Some(20);
    config
        .headers
        .insert("connection", "close".parse().unwrap());
    config.linger = Some(Duration::from_millis(50));
    let report = h3lab_load::run(&config, CancellationToken::new()).unwrap();
    assert_eq!(report.completed, 20, "{report}");
    assert!(report.connections_opened >= 20, "{report}");
    for (what, micros) in [
        ("tcp", &report.tcp_connect_us),
        ("handshake", &report.handshake_us),
    ] {
        let max = micros.max();
        assert!(
            max < 25_000,
            "a {what} took {max} µs: a hold was in it\n{report}"
        );
    }
}

/// A timed run with a linger: no hold in the last linger before the
/// deadline, where the loop ends without reading what a hold gathered,
/// so a response that came before the deadline is not cut off.
#[test]
fn a_linger_keeps_the_responses_that_came_before_the_deadline() {
    // The last request is due 20 ms before the deadline.
    let report = open_run_with_linger(50.0, Duration::from_millis(50));
    let open = report.open_model.as_ref().expect("open-model figures");
    assert_eq!(report.aborted_in_flight, 0, "{report}");
    assert_eq!(report.completed, open.sent, "{report}");
}

/// A 1 s open-model run at `rate` over one h2 connection on one thread,
/// with `linger`, against a server of its own, in its turn.
fn open_run_with_linger(rate: f64, linger: Duration) -> LoadReport {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = TestServer::start();
    let mut config = server.config("/bytes/1000", Proto::H2);
    config.connections = 1;
    config.threads = 1;
    config.rate = Some(rate);
    config.duration = Some(Duration::from_secs(1));
    config.linger = Some(linger);
    h3lab_load::run(&config, CancellationToken::new()).unwrap()
}
