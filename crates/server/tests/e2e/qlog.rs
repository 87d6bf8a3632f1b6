//! `--qlog DIR`: one JSON-SEQ qlog file per QUIC connection.

use h3lab_server::{Limits, ServerConfig};
use http::StatusCode;
use serde_json::Value;

use crate::common::{connect, test_config, Proto};

/// JSON-SEQ (RFC 7464): each record starts with the RS character.
pub fn records(text: &str) -> Vec<Value> {
    text.split('\u{1e}')
        .filter(|record| !record.trim().is_empty())
        .map(|record| serde_json::from_str(record).expect("each record is JSON"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_quic_connection_gets_a_qlog_file_with_its_packets() {
    let dir = tempfile::tempdir().unwrap();
    let config = ServerConfig {
        qlog: Some(dir.path().join("qlog")),
        ..test_config(None, Limits::default())
    };
    let server = h3lab_server::start(config).await.unwrap();
    for _ in 0..2 {
        let mut client = connect(&server, Proto::H3).await;
        assert_eq!(client.get("/bytes/5000").await.status, StatusCode::OK);
        client.close();
    }
    let mut tcp = connect(&server, Proto::H2).await;
    assert_eq!(tcp.get("/health").await.status, StatusCode::OK);
    drop(tcp);
    // Shutting down drops every connection, which flushes its file.
    server.shutdown().await;

    let mut files: Vec<_> = std::fs::read_dir(dir.path().join("qlog"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(
        files.len(),
        2,
        "one file per QUIC connection, none for TCP: {files:?}"
    );
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            name.starts_with("server-") && name.ends_with(".sqlog"),
            "{name}"
        );
        let records = records(&std::fs::read_to_string(&file).unwrap());
        assert_eq!(records[0]["qlog_format"], "JSON-SEQ", "{}", records[0]);
        let names: Vec<&str> = records[1..]
            .iter()
            .filter_map(|event| event["name"].as_str())
            .collect();
        for wanted in ["packet_sent", "packet_received"] {
            assert!(
                names.iter().any(|name| name.ends_with(wanted)),
                "{name}: no {wanted} event in {names:?}"
            );
        }
    }
}
