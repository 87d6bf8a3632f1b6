//! Prometheus metrics after a known load: the counts must be exact.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use h3lab_results::server_output::metric_samples;
use h3lab_server::{Limits, RunningServer, ServerConfig};
use http::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::{connect, eventually, h3_over, quic_endpoint, test_config, Client, Proto};

async fn start_with_metrics() -> RunningServer {
    let config = ServerConfig {
        metrics: Some("127.0.0.1:0".parse().unwrap()),
        ..test_config(None, Limits::default())
    };
    h3lab_server::start(config).await.unwrap()
}

/// `GET /metrics` over plain HTTP/1.1, as Prometheus does; the body's
/// samples as `name{labels}` → value (histogram buckets left out).
async fn scrape(addr: SocketAddr) -> BTreeMap<String, f64> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET /metrics HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.contains("application/openmetrics-text"),
        "content type: {head}"
    );
    assert!(
        body.ends_with("# EOF\n"),
        "an OpenMetrics body ends with # EOF"
    );
    metric_samples(body)
}

fn value(metrics: &BTreeMap<String, f64>, key: &str) -> f64 {
    *metrics
        .get(key)
        .unwrap_or_else(|| panic!("no {key} in the metrics: {metrics:#?}"))
}

/// Per protocol: requests for 1,000 bytes, then one for a path that does not exist.
const LOAD: [(Proto, usize); 3] = [(Proto::H1, 3), (Proto::H2, 4), (Proto::H3, 5)];

async fn known_load(server: &RunningServer) -> (Vec<Client>, BTreeMap<&'static str, usize>) {
    let mut clients = Vec::new();
    let mut body_bytes = BTreeMap::new();
    for (proto, requests) in LOAD {
        let mut client = connect(server, proto).await;
        let mut bytes = 0;
        for _ in 0..requests {
            let reply = client.get("/bytes/1000").await;
            assert_eq!(reply.status, StatusCode::OK);
            bytes += reply.body.len();
        }
        let missing = client.get("/no/such/path").await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND);
        bytes += missing.body.len();
        body_bytes.insert(label(proto), bytes);
        clients.push(client);
    }
    (clients, body_bytes)
}

fn label(proto: Proto) -> &'static str {
    proto.name()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_a_known_load_exactly() {
    let server = start_with_metrics().await;
    let (clients, body_bytes) = known_load(&server).await;

    let m = scrape(server.metrics_addr().unwrap()).await;
    for (proto, requests) in LOAD {
        let p = label(proto);
        let ok = format!("h3lab_http_requests_total{{protocol=\"{p}\",status=\"200\"}}");
        let missing = format!("h3lab_http_requests_total{{protocol=\"{p}\",status=\"404\"}}");
        assert_eq!(value(&m, &ok), requests as f64, "{ok}");
        assert_eq!(value(&m, &missing), 1.0, "{missing}");
        let durations = format!("h3lab_http_request_duration_seconds_count{{protocol=\"{p}\"}}");
        assert_eq!(value(&m, &durations), requests as f64 + 1.0, "{durations}");
        let bytes = format!("h3lab_http_response_body_bytes_total{{protocol=\"{p}\"}}");
        assert_eq!(value(&m, &bytes), body_bytes[p] as f64, "{bytes}");
        let open = format!("h3lab_connections_open{{protocol=\"{p}\"}}");
        assert_eq!(value(&m, &open), 1.0, "{open}");
        let total = format!("h3lab_connections_total{{protocol=\"{p}\"}}");
        assert_eq!(value(&m, &total), 1.0, "{total}");
    }
    assert!(value(&m, "h3lab_quic_packets_sent_total") > 0.0);
    assert!(value(&m, "h3lab_quic_datagrams_received_total") > 0.0);
    assert_eq!(value(&m, "h3lab_quic_migrations_total"), 0.0);

    for client in &clients {
        client.close();
    }
    drop(clients);
    let all_closed = eventually(|| {
        let m = metric_samples(&server.metrics_text());
        ["h1", "h2", "h3"]
            .iter()
            .all(|p| m.get(&format!("h3lab_connections_open{{protocol=\"{p}\"}}")) == Some(&0.0))
    })
    .await;
    assert!(
        all_closed,
        "connections still open: {}",
        server.metrics_text()
    );

    let m = metric_samples(&server.metrics_text());
    let handshakes = |transport: &str, result: &str| {
        let key =
            format!("h3lab_handshakes_total{{transport=\"{transport}\",result=\"{result}\"}}");
        m.get(&key).copied().unwrap_or(0.0)
    };
    assert_eq!(handshakes("tcp", "ok"), 2.0);
    assert_eq!(handshakes("quic", "ok"), 1.0);
    assert_eq!(
        handshakes("tcp", "failed") + handshakes("quic", "failed"),
        0.0
    );
    assert_eq!(
        value(
            &m,
            "h3lab_handshake_duration_seconds_count{transport=\"quic\"}"
        ),
        1.0
    );
    assert_eq!(value(&m, "h3lab_quic_connections_closed_total"), 1.0);
    assert_eq!(value(&m, "h3lab_quic_rtt_seconds_count"), 1.0);
    assert_eq!(value(&m, "h3lab_quic_congestion_window_bytes_count"), 1.0);
    for p in ["h1", "h2", "h3"] {
        let aborted = format!("h3lab_http_responses_aborted_total{{protocol=\"{p}\"}}");
        assert_eq!(m.get(&aborted).copied().unwrap_or(0.0), 0.0, "{aborted}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_rtt_is_counted_as_offered_and_accepted_or_rejected() {
    let server = start_with_metrics().await;
    let endpoint = quic_endpoint(&server);
    let first = connect_over(&endpoint, &server).await;
    // Close only the connection: the endpoint (and its session cache) carries on.
    first.connection().unwrap().close(0u32.into(), b"done");

    // The same endpoint holds the server's ticket: the second connection offers 0-RTT.
    let connecting = endpoint.connect(server.local_addr(), "localhost").unwrap();
    let (connection, accepted) = connecting
        .into_0rtt()
        .unwrap_or_else(|_| panic!("no 0-RTT: the client holds no session ticket"));
    let mut second = h3_over(&endpoint, connection).await;
    assert_eq!(second.get("/health").await.status, StatusCode::OK);
    assert!(accepted.await, "the server rejected 0-RTT");

    let m = metric_samples(&server.metrics_text());
    let zero_rtt = |outcome: &str| {
        value(
            &m,
            &format!("h3lab_quic_zero_rtt_total{{outcome=\"{outcome}\"}}"),
        )
    };
    assert_eq!(
        zero_rtt("offered"),
        1.0,
        "only the second connection offered 0-RTT"
    );
    assert_eq!(zero_rtt("accepted"), 1.0);
    assert_eq!(zero_rtt("rejected"), 0.0);

    // Another server has never seen the ticket: it must reject the offer.
    let other = start_with_metrics().await;
    let connecting = endpoint.connect(other.local_addr(), "localhost").unwrap();
    let (connection, _) = connecting
        .into_0rtt()
        .unwrap_or_else(|_| panic!("no 0-RTT: the client holds no second session ticket"));
    // The handshake then fails: the client trusts only the first server's certificate.
    let _ = connection.closed().await;
    let m = metric_samples(&other.metrics_text());
    let zero_rtt = |outcome: &str| {
        value(
            &m,
            &format!("h3lab_quic_zero_rtt_total{{outcome=\"{outcome}\"}}"),
        )
    };
    assert_eq!(zero_rtt("offered"), 1.0);
    assert_eq!(zero_rtt("accepted"), 0.0);
    assert_eq!(zero_rtt("rejected"), 1.0);
    second.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_moves_to_a_new_port_counts_one_migration() {
    let server = start_with_metrics().await;
    let endpoint = quic_endpoint(&server);
    let mut client = connect_over(&endpoint, &server).await;
    let moved = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    endpoint.rebind(moved).unwrap();
    assert_eq!(client.get("/health").await.status, StatusCode::OK);

    let m = metric_samples(&server.metrics_text());
    assert_eq!(value(&m, "h3lab_quic_migrations_total"), 1.0);
    client.close();
}

async fn connect_over(endpoint: &quinn::Endpoint, server: &RunningServer) -> Client {
    let mut client = crate::common::connect_h3(endpoint, server.local_addr()).await;
    assert_eq!(client.get("/health").await.status, StatusCode::OK);
    client
}
