//! Connection and header limits.

use bytes::Bytes;
use h3lab_server::Limits;
use http::{HeaderMap, HeaderValue, StatusCode};

use crate::common::{
    connect, connect_tcp, eventually, full, h3_over, quic_endpoint, start, tcp_tls, Proto,
    PROTOCOLS,
};

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
    let mut h3 = h3_over(
        &endpoint,
        admitted.expect("QUIC admitted after the TCP client left"),
    )
    .await;
    assert_eq!(h3.get("/health").await.status, StatusCode::OK);
    assert!(eventually(|| server.requests_served().h3 == before.h3 + 1).await);
    h3.close();
}

fn padded(len: usize) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        "x-padding",
        HeaderValue::from_str(&"a".repeat(len)).unwrap(),
    );
    headers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_headers_get_431_on_every_protocol() {
    let limits = Limits {
        max_header_bytes: 8192,
        ..Limits::default()
    };
    let server = start(None, limits).await;
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        let small = client
            .send("GET", "/health", padded(2048), full(Bytes::new()))
            .await;
        assert_eq!(small.status, StatusCode::OK, "{proto:?}");
        let large = client
            .try_send("GET", "/health", padded(16 * 1024), full(Bytes::new()))
            .await;
        match large {
            Ok(reply) => assert_eq!(
                reply.status,
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "{proto:?}"
            ),
            // An h3 client that has the server's SETTINGS refuses to send; the
            // limit it cites is the one the server advertised.
            Err(err) => assert!(
                proto == Proto::H3 && err.contains("max_size: 8192"),
                "{proto:?}: {err}"
            ),
        }
        client.close();
    }
}
