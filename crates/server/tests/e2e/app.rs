//! The application path (what h3lab-node's handlers sit behind): thousands
//! of requests on one connection of each protocol are all answered on it,
//! and the rapid-reset defence still cuts a client that cancels them.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use h3lab_server::{App, AppRequest, AppResponse, Hooks, Limits, RunningServer};
use http::header::CONTENT_LENGTH;
use http::{HeaderMap, HeaderValue, Response, StatusCode};

use crate::common::*;

/// Well past the cancelled-request allowance (100) of the rapid-reset defence.
const REQUESTS: usize = 2_000;
const BODY: &[u8] = b"hello from the app\n";

/// Answers as h3lab-node's `res.end(body)` does: the whole body in one
/// chunk, with its `content-length`. `/slow` takes a second to answer.
struct Hello;

impl App for Hello {
    fn call(&self, request: AppRequest) -> AppResponse {
        Box::pin(async move {
            if request.uri.path() == "/slow" {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            let mut response = Response::new(
                futures::stream::once(async { Ok(Bytes::from_static(BODY)) }).boxed(),
            );
            response
                .headers_mut()
                .insert(CONTENT_LENGTH, HeaderValue::from(BODY.len()));
            response
        })
    }
}

async fn start_app() -> RunningServer {
    let mut config = test_config(None, Limits::default());
    config.hooks = Hooks {
        app: Some(Arc::new(Hello)),
        events: None,
    };
    h3lab_server::start(config).await.unwrap()
}

#[tokio::test]
async fn one_connection_of_each_protocol_carries_thousands_of_app_requests() {
    let server = start_app().await;
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        for i in 0..REQUESTS {
            // `send` panics if the server has closed the connection.
            let reply = client.get("/hello").await;
            assert_eq!(reply.status, StatusCode::OK, "{proto} request {i}");
            assert_eq!(reply.body, BODY, "{proto} request {i}");
        }
        assert!(
            !client.is_closed(),
            "{proto}: the server closed the connection"
        );
        client.close();
    }
    assert_eq!(server.defence().cancel_floods, 0);
}

/// A HEAD's answer has no body: h2 sent one (which clients reject), and h1
/// never polled it, so each HEAD counted as cancelled and a few hundred of
/// them closed the connection.
#[tokio::test]
async fn head_requests_complete_without_a_body() {
    let server = start(None, Limits::default()).await;
    for proto in [Proto::H1, Proto::H2] {
        let mut client = connect(&server, proto).await;
        for i in 0..REQUESTS / 4 {
            let reply = client
                .send("HEAD", "/bytes/1000", HeaderMap::new(), full(Bytes::new()))
                .await;
            // The built-in endpoints answer GET (and POST for /echo) only.
            assert_eq!(
                reply.status,
                StatusCode::METHOD_NOT_ALLOWED,
                "{proto} HEAD {i}"
            );
            assert!(reply.body.is_empty(), "{proto}");
        }
        assert!(
            !client.is_closed(),
            "{proto}: the server closed the connection"
        );
    }
    assert_eq!(server.defence().cancel_floods, 0);
}

#[tokio::test]
async fn an_h2_client_cancelling_app_requests_is_cut_off() {
    let server = start_app().await;
    let mut client = connect(&server, Proto::H2).await;
    let mut cancelled = 0;
    while cancelled < 10 * REQUESTS && client.cancel_h2("/slow").await {
        cancelled += 1;
    }
    assert!(
        cancelled < 10 * REQUESTS,
        "{cancelled} requests cancelled and the connection still takes more"
    );
    assert!(
        cancelled > 100,
        "the allowance is 100 cancelled requests, but the connection closed after {cancelled}"
    );
    assert_eq!(server.defence().cancel_floods, 1);
}
