//! Connection and header limits.

use bytes::Bytes;
use h3lab_server::Limits;
use http::{HeaderMap, HeaderValue, StatusCode};

use std::time::Duration;

use crate::common::{
    connect, connect_tcp, connect_tcp_from, eventually, full, h3_over, quic_endpoint, start,
    tcp_tls, Proto, PROTOCOLS,
};

fn one_connection_each() -> Limits {
    Limits {
        max_tcp_connections: 1,
        max_tcp_connections_per_peer: 1,
        max_quic_connections: 1,
        max_quic_connections_per_peer: 1,
        ..Limits::default()
    }
}

fn assert_refused(refused: quinn::ConnectionError) {
    match refused {
        quinn::ConnectionError::ConnectionClosed(close) => {
            assert_eq!(
                close.error_code,
                quinn::TransportErrorCode::CONNECTION_REFUSED
            )
        }
        other => panic!("expected CONNECTION_REFUSED, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_each_transport_limit_tcp_gets_503_and_quic_is_refused() {
    let server = start(None, one_connection_each()).await;
    let addr = server.local_addr();
    let mut first = connect(&server, Proto::H1).await;
    assert_eq!(first.get("/health").await.status, StatusCode::OK);

    for proto in [Proto::H1, Proto::H2] {
        let mut extra = connect_tcp(addr, tcp_tls(&server, proto), proto).await;
        let reply = extra.get("/health").await;
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "{proto:?}");
        assert_eq!(reply.header("retry-after"), Some("1"));
    }

    // A full TCP side leaves QUIC's own slot free.
    let endpoint = quic_endpoint(&server);
    let mut h3 = h3_over(
        &endpoint,
        endpoint.connect(addr, "localhost").unwrap().await.unwrap(),
    )
    .await;
    assert_eq!(h3.get("/health").await.status, StatusCode::OK);
    let refused = endpoint.connect(addr, "localhost").unwrap().await.err();
    assert_refused(refused.expect("a second QUIC connection is refused"));
    assert_eq!(server.defence().quic_refused, 1);
    assert_eq!(server.defence().tcp_busy, 2);

    drop(first);
    // The slot frees once the server notices the close; then TCP gets in.
    assert!(eventually(|| server.open_connections().0 == 0).await);
    let mut again = connect(&server, Proto::H2).await;
    assert_eq!(again.get("/health").await.status, StatusCode::OK);
    h3.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_over_its_share_gets_503_while_another_address_is_served() {
    let limits = Limits {
        max_tcp_connections: 4,
        max_tcp_connections_per_peer: 1,
        ..Limits::default()
    };
    let server = start(None, limits).await;
    let addr = server.local_addr();
    let mut first = connect(&server, Proto::H1).await;
    assert_eq!(first.get("/health").await.status, StatusCode::OK);
    let mut over_share = connect(&server, Proto::H1).await;
    let reply = over_share.get("/health").await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    let other_peer = "127.0.0.2".parse().unwrap();
    let mut other =
        connect_tcp_from(other_peer, addr, tcp_tls(&server, Proto::H1), Proto::H1).await;
    assert_eq!(other.get("/health").await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_without_a_request_is_closed_at_the_header_timeout() {
    let limits = Limits {
        header_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let server = start(None, limits).await;
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        assert_eq!(
            client.get("/health").await.status,
            StatusCode::OK,
            "{proto:?}"
        );
        let closed = eventually(|| client.is_closed()).await;
        assert!(closed, "{proto:?}: idle connection still open");
    }
    assert_eq!(server.defence().header_timeouts, 3);
    assert!(eventually(|| server.open_connections() == (0, 0)).await);
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
