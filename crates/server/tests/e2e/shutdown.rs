//! Graceful shutdown lets in-flight requests finish and reports what was served.

use std::time::{Duration, Instant};

use h3lab_server::Limits;
use http::StatusCode;

use crate::common::{connect, eventually, start, Proto, PROTOCOLS};

/// Far longer than the test's request: reaching it would mean shutdown was not graceful.
const GRACE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_completes_the_in_flight_request() {
    for proto in PROTOCOLS {
        let limits = Limits {
            shutdown_grace: GRACE,
            ..Limits::default()
        };
        let server = start(None, limits).await;
        let addr = server.local_addr();
        let mut client = connect(&server, proto).await;
        let request = tokio::spawn(async move {
            let reply = client.get("/delay/300").await;
            client.close();
            reply
        });
        assert!(
            eventually(|| server.requests_in_flight() == 1).await,
            "{proto:?}: request never arrived"
        );
        let started = Instant::now();
        let (reply, served) = tokio::join!(request, server.shutdown());
        let reply = reply.unwrap();
        assert_eq!(reply.status, StatusCode::OK, "{proto:?}");
        assert_eq!(&reply.body[..], b"{\"delay_ms\":300}\n", "{proto:?}");
        assert!(
            started.elapsed() < GRACE / 2,
            "{proto:?}: shutdown waited for the grace period"
        );
        let counted = match proto {
            Proto::H1 => served.h1,
            Proto::H2 => served.h2,
            Proto::H3 => served.h3,
            Proto::Auto => unreachable!("the loop runs h1, h2 and h3"),
        };
        assert_eq!((counted, served.total()), (1, 1), "{proto:?}");
        assert!(
            tokio::net::TcpStream::connect(addr).await.is_err(),
            "{proto:?}: still accepting"
        );
    }
}

/// An idle connection is closed at once, on every protocol: over h3 the
/// server sends GOAWAY and, with every response delivered, closes with
/// H3_NO_ERROR instead of waiting for the client (which may be gone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_do_not_hold_up_shutdown() {
    let limits = Limits {
        shutdown_grace: GRACE,
        ..Limits::default()
    };
    let server = start(None, limits).await;
    let mut clients = Vec::new();
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        assert_eq!(client.get("/health").await.status, StatusCode::OK);
        clients.push(client);
    }
    let started = Instant::now();
    let served = server.shutdown().await;
    assert!(
        started.elapsed() < GRACE / 2,
        "shutdown waited for the grace period"
    );
    assert_eq!((served.h1, served.h2, served.h3), (1, 1, 1));
    let h3 = clients.iter().find(|client| client.proto == Proto::H3);
    match h3.and_then(|client| client.quic_close_reason()) {
        Some(quinn::ConnectionError::ApplicationClosed(close)) => assert_eq!(
            u64::from(close.error_code),
            h3::error::Code::H3_NO_ERROR.value()
        ),
        other => panic!("the h3 connection was not closed by the server: {other:?}"),
    }
}

/// An h3 client that shuts down (oha does, after its last request) sends
/// GOAWAY and waits for the server to close the connection. The server
/// closes it once every response is delivered; before, each side waited
/// for the other until the 30 s idle timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_goaway_gets_the_connection_closed_once_all_is_answered() {
    let server = start(None, Limits::default()).await;
    let endpoint = crate::common::quic_endpoint(&server);
    let connection = endpoint
        .connect(server.local_addr(), "localhost")
        .unwrap()
        .await
        .unwrap();
    let (mut driver, mut sender) = h3::client::new(h3_quinn::Connection::new(connection.clone()))
        .await
        .unwrap();
    let request = http::Request::get(format!("https://localhost/bytes/{}", 200_000))
        .body(())
        .unwrap();
    let mut stream = sender.send_request(request).await.unwrap();
    stream.finish().await.unwrap();
    let response = stream.recv_response().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = 0;
    while let Some(chunk) = stream.recv_data().await.unwrap() {
        body += bytes::Buf::remaining(&chunk);
    }
    assert_eq!(body, 200_000);
    let started = Instant::now();
    driver.shutdown(0).await.unwrap();
    let closed = tokio::time::timeout(
        Duration::from_secs(10),
        futures::future::poll_fn(|cx| driver.poll_close(cx)),
    )
    .await
    .expect("the server never closed the connection after the client's GOAWAY");
    assert!(closed.is_h3_no_error(), "{closed}");
    let quinn::ConnectionError::ApplicationClosed(close) = connection.close_reason().unwrap()
    else {
        panic!("not closed by the server: {:?}", connection.close_reason());
    };
    assert_eq!(
        u64::from(close.error_code),
        h3::error::Code::H3_NO_ERROR.value()
    );
    eprintln!("closed {:?} after the client's GOAWAY", started.elapsed());
    server.shutdown().await;
}
