//! Each fault ends with a clear error or a partial report, never a hang.

mod common;

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use common::{TestServer, PROTOS};
use h3lab_client::{Target, TlsOptions};
use h3lab_load::{CancellationToken, LoadConfig};
use h3lab_results::load::Outcome;
use h3lab_results::Proto;

fn run_err(config: &LoadConfig) -> String {
    format!(
        "{:#}",
        h3lab_load::run(config, CancellationToken::new()).unwrap_err()
    )
}

#[test]
fn untrusted_certificate_names_the_fix() {
    let server = TestServer::start();
    for proto in PROTOS {
        let mut config = server.config("/health", proto);
        config.tls = TlsOptions::default();
        let err = run_err(&config);
        assert!(
            err.contains("no trusted root") && err.contains("--ca FILE or use --insecure"),
            "{proto}: {err}"
        );
        assert!(
            err.starts_with("TLS handshake with 127.0.0.1:"),
            "{proto}: {err}"
        );
    }
}

#[test]
fn insecure_accepts_the_self_signed_certificate() {
    let server = TestServer::start();
    for proto in PROTOS {
        let mut config = server.config("/health", proto);
        config.tls = TlsOptions {
            insecure: true,
            ca_file: None,
        };
        config.requests = Some(4);
        let report = h3lab_load::run(&config, CancellationToken::new()).unwrap();
        assert_eq!(report.completed, 4, "{proto}");
    }
}

#[test]
fn h3_without_udp_listener_times_out_clearly() {
    // Holding the port keeps it silent: QUIC packets arrive and go unread.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let mut config = LoadConfig::new(Target::parse(&format!("https://127.0.0.1:{port}/")).unwrap());
    config.proto = Proto::H3;
    config.tls.insecure = true;
    config.connect_timeout = Duration::from_secs(1);
    let err = run_err(&config);
    assert_eq!(
        err,
        format!("no HTTP/3 (QUIC) answer from 127.0.0.1:{port} within 1s: is the server listening on UDP?")
    );
}

#[test]
fn tcp_without_listener_is_a_connect_error() {
    let free_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for proto in [Proto::H1, Proto::H2] {
        let url = format!("https://127.0.0.1:{free_port}/");
        let mut config = LoadConfig::new(Target::parse(&url).unwrap());
        config.proto = proto;
        config.tls.insecure = true;
        let err = run_err(&config);
        assert!(
            err.starts_with(&format!("TCP connect to 127.0.0.1:{free_port}")),
            "{err}"
        );
    }
}

#[test]
fn cleartext_url_with_h2_is_refused() {
    let mut config = LoadConfig::new(Target::parse("http://127.0.0.1:1/").unwrap());
    config.proto = Proto::H2;
    assert!(run_err(&config).contains("works only with --proto h1"));
}

#[test]
fn server_killed_mid_run_leaves_counted_partial_results() {
    for proto in PROTOS {
        let mut server = TestServer::start();
        let mut config = server.config("/bytes/100", proto);
        config.requests = Some(1_000_000);
        config.request_timeout = Duration::from_secs(1);
        config.connect_timeout = Duration::from_millis(500);
        let run = std::thread::spawn(move || h3lab_load::run(&config, CancellationToken::new()));
        // Killed mid-run: once requests have been answered, and long
        // before the million are.
        server.wait_until_answered(100);
        server.kill();
        let report = run.join().unwrap().unwrap();
        assert!(report.completed > 0, "{proto}\n{report}");
        assert!(report.errors.connect >= 5, "{proto}\n{report}");
        assert_eq!(
            report.completed + report.failed + report.not_attempted,
            1_000_000,
            "{proto}\n{report}"
        );
        let Outcome::Failed(summary) = report.outcome() else {
            panic!("{proto}: a killed server must fail the run\n{report}");
        };
        assert!(summary.contains(" requests failed ("), "{summary}");
        assert!(summary.contains("never attempted"), "{summary}");
        assert!(!summary.contains('\n'));
    }
}

#[test]
fn cancel_stops_promptly_with_partial_results() {
    let server = TestServer::start();
    for proto in PROTOS {
        let mut config = server.config("/bytes/100", proto);
        config.duration = Some(Duration::from_secs(30));
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let started = Instant::now();
        let before = server.answered();
        let run = std::thread::spawn(move || h3lab_load::run(&config, cancel));
        server.wait_until_answered(before + 100);
        trigger.cancel();
        let report = run.join().unwrap().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{proto}: cancel was not prompt"
        );
        assert!(report.interrupted);
        assert!(report.completed > 0, "{proto}\n{report}");
        assert!(report.duration_s < 10.0, "{proto}\n{report}");
        assert_eq!(report.outcome(), Outcome::Interrupted);
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["interrupted"], true);
    }
}

#[test]
fn slow_response_is_a_timeout_on_every_protocol() {
    let server = TestServer::start();
    for proto in PROTOS {
        let mut config = server.config("/delay/3000", proto);
        config.connections = 1;
        config.requests = Some(2);
        config.request_timeout = Duration::from_millis(300);
        let report = h3lab_load::run(&config, CancellationToken::new()).unwrap();
        assert_eq!(report.completed, 0, "{proto}\n{report}");
        assert_eq!(report.errors.timeout, 2, "{proto}\n{report}");
    }
}

#[test]
fn timeout_counts_per_request_not_per_connection() {
    // Ten 100 ms requests in a row on one stream take far longer than the
    // 600 ms timeout together, but none of them alone comes close.
    let server = TestServer::start();
    for proto in PROTOS {
        let mut config = server.config("/delay/100", proto);
        config.connections = 1;
        config.requests = Some(10);
        config.request_timeout = Duration::from_millis(600);
        let report = h3lab_load::run(&config, CancellationToken::new()).unwrap();
        assert_eq!(report.completed, 10, "{proto}\n{report}");
        assert_eq!(report.errors.timeout, 0, "{proto}\n{report}");
    }
}
