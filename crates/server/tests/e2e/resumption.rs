//! TLS 1.3 session resumption on TCP and 0-RTT on QUIC, which the ttfb benchmarks rely on.

use h3lab_server::Limits;
use http::StatusCode;

use crate::common::{connect_h3, connect_tcp, h3_over, quic_endpoint, start, tcp_tls, Proto};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_tcp_connection_resumes_the_tls_session() {
    let server = start(None, Limits::default()).await;
    for proto in [Proto::H1, Proto::H2] {
        let config = tcp_tls(&server, proto);
        let mut first = connect_tcp(server.local_addr(), config.clone(), proto).await;
        assert!(!first.resumed, "{proto:?}: first handshake cannot resume");
        // Reading a response also reads the session tickets sent after the handshake.
        assert_eq!(first.get("/health").await.status, StatusCode::OK);
        let mut second = connect_tcp(server.local_addr(), config, proto).await;
        assert!(second.resumed, "{proto:?}: second handshake did not resume");
        assert_eq!(second.get("/health").await.status, StatusCode::OK);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_quic_connection_sends_its_request_in_accepted_0rtt() {
    let server = start(None, Limits::default()).await;
    let endpoint = quic_endpoint(&server);
    let mut first = connect_h3(&endpoint, server.local_addr()).await;
    assert_eq!(first.get("/health").await.status, StatusCode::OK);
    // Close only the connection: the endpoint (and its session cache) carries on.
    first.connection().unwrap().close(0u32.into(), b"done");

    let connecting = endpoint.connect(server.local_addr(), "localhost").unwrap();
    let (connection, accepted) = connecting
        .into_0rtt()
        .unwrap_or_else(|_| panic!("no 0-RTT: the client holds no usable session ticket"));
    let mut second = h3_over(&endpoint, connection).await;
    let reply = second.get("/bytes/1000").await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body.len(), 1000);
    assert!(accepted.await, "the server rejected 0-RTT");
    second.close();
}
