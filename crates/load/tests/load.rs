//! End-to-end runs against the in-process h3lab server on all protocols.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use common::{TestServer, PROTOS};
use h3lab_load::CancellationToken;
use h3lab_results::load::{LoadReport, Model, Outcome};
use h3lab_results::Proto;

fn run(config: &h3lab_load::LoadConfig) -> LoadReport {
    h3lab_load::run(config, CancellationToken::new()).unwrap()
}

#[test]
fn counted_run_gets_exact_bytes_and_statuses() {
    let server = TestServer::start();
    for proto in PROTOS {
        let mut config = server.config("/bytes/1000", proto);
        config.requests = Some(50);
        let report = run(&config);
        assert_eq!(report.completed, 50, "{proto}\n{report}");
        assert_eq!(report.body_bytes, 50_000, "{proto}");
        assert_eq!(report.status_counts, BTreeMap::from([(200, 50)]), "{proto}");
        assert_eq!(report.failed, 0, "{proto}\n{report}");
        assert_eq!(report.latency_us.count(), 50, "{proto}");
        assert_eq!(report.ttfb_us.count(), 50, "{proto}");
        assert_eq!(report.connections_opened, 2, "{proto}");
        assert_eq!(report.handshake_us.count(), 2, "{proto}");
        assert_eq!(
            report.tcp_connect_us.count(),
            if proto == Proto::H3 { 0 } else { 2 }
        );
        assert_eq!(report.model, Model::Closed);
        assert_eq!(report.outcome(), Outcome::Success);
        assert!(report.cpu.user_s + report.cpu.sys_s > 0.0, "{proto}");
    }
}

#[test]
fn not_found_is_a_bad_status_and_a_status_count() {
    let server = TestServer::start();
    for proto in PROTOS {
        let mut config = server.config("/no-such-endpoint", proto);
        config.requests = Some(20);
        let report = run(&config);
        assert_eq!(report.status_counts, BTreeMap::from([(404, 20)]), "{proto}");
        assert_eq!(report.errors.bad_status, 20, "{proto}");
        assert_eq!(report.failed, 0, "{proto}");
    }
}

#[test]
fn concurrent_streams_share_connections() {
    let server = TestServer::start();
    for proto in [Proto::H2, Proto::H3] {
        let mut config = server.config("/bytes/3000", proto);
        config.streams = 8;
        config.requests = Some(200);
        let report = run(&config);
        assert_eq!(report.completed, 200, "{proto}\n{report}");
        assert_eq!(report.body_bytes, 600_000, "{proto}");
        assert_eq!(report.connections_opened, 2, "{proto}");
    }
}

#[test]
fn post_body_is_echoed() {
    let server = TestServer::start();
    for proto in PROTOS {
        let mut config = server.config("/echo", proto);
        config.method = http::Method::POST;
        config.body = Bytes::from_static(b"twelve bytes");
        config.requests = Some(10);
        let report = run(&config);
        assert_eq!(
            report.status_counts,
            BTreeMap::from([(200, 10)]),
            "{proto}\n{report}"
        );
        assert_eq!(report.body_bytes, 120, "{proto}");
    }
}

#[test]
fn a_body_larger_than_tls_buffers_and_flow_control_windows_goes_out_whole() {
    // 200 KB: over rustls' default 64 KiB of outgoing records and over
    // HTTP/2's and QUIC's initial windows; the server echoes it.
    let server = TestServer::start();
    for proto in PROTOS {
        let mut config = server.config("/echo", proto);
        config.requests = Some(4);
        config.method = http::Method::POST;
        config.body = Bytes::from(vec![b'x'; 200_000]);
        let report = run(&config);
        assert_eq!(report.completed, 4, "{proto}\n{report}");
        assert_eq!(report.failed, 0, "{proto}\n{report}");
        assert_eq!(report.body_bytes, 800_000, "{proto}");
    }
}

#[test]
fn warmup_is_reported_apart() {
    let server = TestServer::start();
    let mut config = server.config("/bytes/10", Proto::H2);
    config.warmup = Duration::from_millis(300);
    config.requests = Some(30);
    let report = run(&config);
    assert_eq!(report.completed, 30, "{report}");
    let warmup = report.warmup.as_ref().expect("a warm-up section");
    assert!(warmup.completed > 0, "{report}");
    assert_eq!(warmup.latency_us.count(), warmup.completed);
    assert!((warmup.duration_s - 0.3).abs() < 1e-6);
}

#[test]
fn merging_two_reports_equals_running_both() {
    let server = TestServer::start();
    let mut first = server.config("/bytes/100", Proto::H3);
    first.requests = Some(30);
    let mut second = server.config("/bytes/100", Proto::H3);
    second.requests = Some(20);
    let a = run(&first);
    let b = run(&second);
    let mut merged = LoadReport::from_json(&a.to_json()).unwrap();
    merged
        .merge(&LoadReport::from_json(&b.to_json()).unwrap())
        .unwrap();

    let mut latency = a.latency_us.clone();
    latency.add(&b.latency_us);
    assert_eq!(merged.latency_us, latency);
    assert_eq!(merged.completed, 50);
    assert_eq!(merged.body_bytes, 5_000);
    assert_eq!(merged.status_counts, BTreeMap::from([(200, 50)]));
    assert_eq!(merged.connections, 4);
    assert_eq!(
        merged.connections_opened,
        a.connections_opened + b.connections_opened
    );
    assert_eq!(merged.duration_s, a.duration_s.max(b.duration_s));
    assert_eq!(merged.requests_per_sec, 50.0 / merged.duration_s);

    let mut in_memory = a.clone();
    in_memory.merge(&b).unwrap();
    assert_eq!(in_memory, merged);
}

#[test]
fn json_report_is_versioned_and_complete() {
    let server = TestServer::start();
    let mut config = server.config("/bytes/7", Proto::H1);
    config.requests = Some(5);
    let json: serde_json::Value = serde_json::from_str(&run(&config).to_json()).unwrap();
    assert_eq!(json["schema"], "h3lab.load/1");
    assert_eq!(json["model"], "closed");
    assert_eq!(json["interrupted"], false);
    assert_eq!(json["body_bytes"], 35);
    assert_eq!(json["status_counts"]["200"], 5);
    assert_eq!(json["latency_us"]["count"], 5);
    assert!(json["latency_us"]["histogram"].as_str().unwrap().len() > 10);
    assert_eq!(json["errors"]["bad_status"], 0);
}

#[test]
fn qlog_writes_one_file_per_h3_connection() {
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut config = server.config("/bytes/1000", Proto::H3);
    config.requests = Some(20);
    config.qlog = Some(dir.path().join("qlog"));
    let report = run(&config);
    assert_eq!(report.completed, 20, "{report}");
    // The run has ended and its connections are gone, so every file is complete.
    let files: Vec<_> = std::fs::read_dir(dir.path().join("qlog"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(files.len(), report.connections_opened as usize, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.contains("\"qlog_format\":\"JSON-SEQ\""),
            "{}",
            file.display()
        );
        assert!(text.contains("packet_received"), "{}", file.display());
    }
}
