//! RFC 9218 scheduling on h3: a request's `priority` header decides which
//! of a connection's responses goes first.

use bytes::Buf;
use h3lab_server::{Limits, QuicTuning, ServerConfig, StreamOrder};
use http::Request;

use crate::common::{quic_endpoint, test_config};

/// Long enough that the second request arrives while the first response is
/// still being sent, even on loopback.
const BODY: usize = 10_000_000;

/// Asks for a background response (`u=7`), then for an urgent one (`u=0`),
/// on one connection; returns the order in which their bodies ended.
async fn finish_order(order: StreamOrder) -> Vec<&'static str> {
    let config = ServerConfig {
        quic_tuning: QuicTuning {
            stream_order: order,
            ..QuicTuning::default()
        },
        ..test_config(None, Limits::default())
    };
    let server = h3lab_server::start(config).await.unwrap();
    let endpoint = quic_endpoint(&server);
    let connection = endpoint
        .connect(server.local_addr(), "localhost")
        .unwrap()
        .await
        .unwrap();
    let (mut driver, sender) = h3::client::new(h3_quinn::Connection::new(connection.clone()))
        .await
        .unwrap();
    tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    let url = format!(
        "https://localhost:{}/bytes/{BODY}",
        server.local_addr().port()
    );
    for (name, priority) in [("background", "u=7"), ("urgent", "u=0")] {
        let request = Request::get(&url)
            .header("priority", priority)
            .body(())
            .unwrap();
        let mut stream = sender.clone().send_request(request).await.unwrap();
        stream.finish().await.unwrap();
        let done = done_tx.clone();
        tokio::spawn(async move {
            stream.recv_response().await.unwrap();
            let mut received = 0;
            while let Some(chunk) = stream.recv_data().await.unwrap() {
                received += chunk.remaining();
            }
            done.send((name, received)).unwrap();
        });
    }
    let mut ended = Vec::new();
    for _ in 0..2 {
        let (name, received) = done_rx.recv().await.unwrap();
        assert_eq!(received, BODY, "{name}: the whole body");
        ended.push(name);
    }
    connection.close(0u32.into(), b"done");
    server.shutdown().await;
    ended
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_urgent_response_overtakes_a_background_one_on_its_connection() {
    assert_eq!(
        finish_order(StreamOrder::Priority).await,
        ["urgent", "background"]
    );
}
