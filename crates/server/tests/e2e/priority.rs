//! RFC 9218 scheduling on h3 and h2: a request's `priority` header decides
//! which of a connection's responses goes first.

use std::time::Duration;

use bytes::{Buf, Bytes};
use h3lab_server::{Limits, QuicTuning, RunningServer, ServerConfig, StreamOrder, TcpTuning};
use http::Request;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper::client::conn::http2::{Builder, SendRequest};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::sync::oneshot::{Receiver, Sender};
use tokio_rustls::TlsConnector;

use crate::common::{quic_endpoint, tcp_tls, test_config, Proto};

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

/// How much of the background response the client has read when it asks
/// for the urgent one on h2: taking turns, the background one then ends
/// first even if the two are not served exactly alike.
const HEAD_START: usize = BODY / 2;

/// Asks for a background response (`u=7`) and, once [`HEAD_START`] of it
/// has arrived, for an urgent one (`u=0`), on one h2 connection; returns
/// the order in which their bodies ended. The background's reader waits
/// from its head start until the urgent response has begun, so the server
/// holds both before it can send the background's end: without the pause,
/// a busy machine let the reader take the rest of the background before
/// the urgent request went out (CI, 2026-12-04).
async fn h2_finish_order(order: StreamOrder) -> Vec<&'static str> {
    let server = start_h2(order).await;
    let sender = h2_connection(&server, H2_DEFAULT_WINDOW).await;
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let (go_on_tx, go_on_rx) = tokio::sync::oneshot::channel();
    let mut pause = Some(Pause {
        started: started_tx,
        go_on: go_on_rx,
    });
    let (mut under_way, mut go_on) = (Some(started_rx), Some(go_on_tx));
    for (name, priority) in [("background", "u=7"), ("urgent", "u=0")] {
        let response = sender
            .clone()
            .send_request(get(&server, BODY, priority))
            .await
            .unwrap();
        if name == "urgent" {
            go_on.take().map(|go_on| go_on.send(()));
        }
        let done = done_tx.clone();
        let paused = pause.take();
        tokio::spawn(async move {
            let received = read_all(response.into_body(), paused).await;
            done.send((name, received)).unwrap();
        });
        if let Some(under_way) = under_way.take() {
            under_way.await.unwrap();
        }
    }
    let mut ended = Vec::new();
    for _ in 0..2 {
        let (name, received) = done_rx.recv().await.unwrap();
        assert_eq!(received, BODY, "{name}: the whole body");
        ended.push(name);
    }
    server.shutdown().await;
    ended
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_urgent_response_overtakes_a_background_one_on_its_h2_connection() {
    assert_eq!(
        h2_finish_order(StreamOrder::Priority).await,
        ["urgent", "background"]
    );
}

/// The test above, under hyper's own turns: the urgent response does not
/// overtake, so that test fails without the scheduler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_priorities_the_background_response_on_h2_ends_first() {
    assert_eq!(
        h2_finish_order(StreamOrder::Fair).await,
        ["background", "urgent"]
    );
}

/// An urgent response whose client stops reading it (its stream window
/// runs out) holds up a background one on its connection only briefly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_urgent_h2_response_left_unread_does_not_starve_the_others() {
    let server = start_h2(StreamOrder::Priority).await;
    let sender = h2_connection(&server, H2_SMALL_WINDOW).await;
    let unread = sender
        .clone()
        .send_request(get(&server, BODY, "u=0"))
        .await
        .unwrap();
    let background = 1_000_000;
    let response = sender
        .clone()
        .send_request(get(&server, background, "u=7"))
        .await
        .unwrap();
    let read = tokio::time::timeout(
        Duration::from_secs(10),
        read_all(response.into_body(), None),
    );
    assert_eq!(read.await.expect("not starved"), background);
    drop(unread);
    server.shutdown().await;
}

/// hyper's client's stream window, and RFC 9113's initial one.
const H2_DEFAULT_WINDOW: u32 = 2 * 1024 * 1024;
const H2_SMALL_WINDOW: u32 = 65_535;

async fn start_h2(order: StreamOrder) -> RunningServer {
    let config = ServerConfig {
        tcp_tuning: TcpTuning {
            h2_stream_order: order,
            ..TcpTuning::default()
        },
        ..test_config(None, Limits::default())
    };
    h3lab_server::start(config).await.unwrap()
}

/// One h2 connection to `server` whose streams may each take `window`
/// bytes unread.
async fn h2_connection(server: &RunningServer, window: u32) -> SendRequest<Empty<Bytes>> {
    let tcp = TcpStream::connect(server.local_addr()).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let tls = TlsConnector::from(tcp_tls(server, Proto::H2))
        .connect(name, tcp)
        .await
        .unwrap();
    let (sender, connection) = Builder::new(TokioExecutor::new())
        .initial_stream_window_size(window)
        .handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

fn get(server: &RunningServer, bytes: usize, priority: &str) -> Request<Empty<Bytes>> {
    let url = format!(
        "https://localhost:{}/bytes/{bytes}",
        server.local_addr().port()
    );
    Request::get(url)
        .header("priority", priority)
        .body(Empty::new())
        .unwrap()
}

/// Where a reader stops: it says on `started` that [`HEAD_START`] bytes
/// have arrived, and reads on when `go_on` says so.
struct Pause {
    started: Sender<()>,
    go_on: Receiver<()>,
}

/// Reads `body` to its end, stopping once at its `pause`.
async fn read_all(mut body: Incoming, mut pause: Option<Pause>) -> usize {
    let mut received = 0;
    while let Some(frame) = body.frame().await {
        received += frame.unwrap().data_ref().map_or(0, Bytes::len);
        if received >= HEAD_START {
            if let Some(pause) = pause.take() {
                pause.started.send(()).unwrap();
                pause.go_on.await.unwrap();
            }
        }
    }
    received
}
