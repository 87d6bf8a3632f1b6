//! Connection and header limits.

use h3lab_server::Limits;
use http::{HeaderMap, HeaderValue, StatusCode};

use crate::common::{connect, connect_tcp, eventually, full, quic_endpoint, start, tcp_tls, Proto};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_connection_limit_tcp_gets_503_and_quic_is_refused() {
    let limits = Limits {
        max_connections: 1,
        ..Limits::default()
    };
    let server = start(None, limits).await;
    let addr = server.local_addr();
    let mut first = connect(&server, Proto::H1).await;
    assert_eq!(first.get("/health").await.status, StatusCode::OK);

    for proto in [Proto::H1, Proto::H2] {
        let mut extra = connect_tcp(addr, tcp_tls(&server, proto), proto).await;
        let reply = extra.get("/health").await;
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "{proto:?}");
        assert_eq!(reply.header("retry-after"), Some("1"));
    }

    let endpoint = quic_endpoint(&server);
    let refused = endpoint
        .connect(addr, "localhost")
        .unwrap()
        .await
        .err()
        .unwrap();
    match refused {
        quinn::ConnectionError::ConnectionClosed(close) => {
            assert_eq!(
                close.error_code,
                quinn::TransportErrorCode::CONNECTION_REFUSED
            )
        }
        other => panic!("expected CONNECTION_REFUSED, got {other}"),
    }

    drop(first);
    let before = server.requests_served();
    // The slot frees once the server notices the close; then QUIC gets in.
    let mut admitted = None;
    for _ in 0..100 {
        if let Ok(connection) = endpoint.connect(addr, "localhost").unwrap().await {
            admitted = Some(connection);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let mut h3 = crate::common::h3_over(
        &endpoint,
        admitted.expect("QUIC admitted after the TCP client left"),
    )
    .await;
    assert_eq!(h3.get("/health").await.status, StatusCode::OK);
    assert!(eventually(|| server.requests_served().h3 == before.h3 + 1).await);
    h3.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_h1_headers_get_431() {
    let limits = Limits {
        max_header_bytes: 8192,
        ..Limits::default()
    };
    let server = start(None, limits).await;
    let mut client = connect(&server, Proto::H1).await;
    let mut headers = HeaderMap::new();
    headers.insert(
        "x-padding",
        HeaderValue::from_str(&"a".repeat(16 * 1024)).unwrap(),
    );
    let reply = client
        .send("GET", "/health", headers, full(bytes::Bytes::new()))
        .await;
    assert_eq!(reply.status, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
}
