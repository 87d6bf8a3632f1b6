//! The synthetic endpoints answer the same on h1, h2 and h3.

use std::time::{Duration, Instant};

use bytes::Bytes;
use h3lab_results::QuicCongestion;
use h3lab_server::{Limits, ServerConfig};
use http::{HeaderMap, HeaderValue, StatusCode};

use crate::common::{connect, full, start, streamed, test_config, Proto, PROTOCOLS};

const BODY_LIMIT: u64 = 64 * 1024;
const RESPONSE_LIMIT: u64 = 8 * 1024 * 1024;

fn limits() -> Limits {
    Limits {
        max_body_bytes: BODY_LIMIT,
        max_response_bytes: RESPONSE_LIMIT,
        max_delay: Duration::from_secs(2),
        ..Limits::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_are_exact_and_follow_the_documented_pattern() {
    let server = start(None, limits()).await;
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        for n in [0u64, 1, 1 << 20, 3 * 65_536 + 12_345] {
            let reply = client.get(&format!("/bytes/{n}")).await;
            assert_eq!(reply.status, StatusCode::OK, "{proto:?} /bytes/{n}");
            assert_eq!(
                reply.header("content-length"),
                Some(n.to_string().as_str()),
                "{proto:?}"
            );
            assert_eq!(reply.body.len() as u64, n, "{proto:?} /bytes/{n}");
            let wrong = reply
                .body
                .iter()
                .enumerate()
                .position(|(i, byte)| *byte != (i % 251) as u8);
            assert_eq!(wrong, None, "{proto:?} /bytes/{n}: first wrong byte");
        }
        client.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_names_the_protocol_used() {
    let server = start(None, limits()).await;
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        let reply = client.get("/health").await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.header("content-type"), Some("application/json"));
        let json: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(json["status"], "ok");
        assert_eq!(json["protocol"], proto.name());
        assert_eq!(json["version"], env!("CARGO_PKG_VERSION"));
        client.close();
    }
    let served = server.shutdown().await;
    assert_eq!((served.h1, served.h2, served.h3), (1, 1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_unknown_paths_and_wrong_methods() {
    let server = start(None, limits()).await;
    let too_big = format!("/bytes/{}", RESPONSE_LIMIT + 1);
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        for path in [
            "/bytes/abc",
            "/bytes/-1",
            too_big.as_str(),
            "/delay/2001",
            "/delay/x",
        ] {
            assert_eq!(
                client.get(path).await.status,
                StatusCode::BAD_REQUEST,
                "{proto:?} {path}"
            );
        }
        for path in ["/", "/nope", "/bytes", "/health/x"] {
            assert_eq!(
                client.get(path).await.status,
                StatusCode::NOT_FOUND,
                "{proto:?} {path}"
            );
        }
        let post_health = client
            .send("POST", "/health", HeaderMap::new(), full(Bytes::new()))
            .await;
        assert_eq!(
            post_health.status,
            StatusCode::METHOD_NOT_ALLOWED,
            "{proto:?}"
        );
        assert_eq!(post_health.header("allow"), Some("GET"));
        let get_echo = client.get("/echo").await;
        assert_eq!(get_echo.status, StatusCode::METHOD_NOT_ALLOWED, "{proto:?}");
        assert_eq!(get_echo.header("allow"), Some("POST"));
        client.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alt_svc_advertises_h3_on_tcp_only() {
    let server = start(None, limits()).await;
    let expected = format!("h3=\":{}\"; ma=86400", server.local_addr().port());
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        for path in ["/health", "/nope"] {
            let reply = client.get(path).await;
            let alt_svc = reply.header("alt-svc");
            match proto {
                Proto::H3 => assert_eq!(alt_svc, None, "{path}"),
                _ => assert_eq!(alt_svc, Some(expected.as_str()), "{proto:?} {path}"),
            }
        }
        client.close();
    }
}

fn echo_payload(len: usize) -> Bytes {
    (0..len).map(|i| (i * 7 % 256) as u8).collect()
}

fn octet_stream() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        "content-type",
        HeaderValue::from_static("application/x-h3lab-test"),
    );
    headers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_returns_the_body_with_and_without_declared_length() {
    let server = start(None, limits()).await;
    let payload = echo_payload(BODY_LIMIT as usize);
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        for body in [full(payload.clone()), streamed(payload.clone())] {
            let reply = client.send("POST", "/echo", octet_stream(), body).await;
            assert_eq!(reply.status, StatusCode::OK, "{proto:?}");
            assert_eq!(
                reply.header("content-type"),
                Some("application/x-h3lab-test")
            );
            assert_eq!(reply.body, payload, "{proto:?}");
        }
        let empty = client
            .send("POST", "/echo", HeaderMap::new(), full(Bytes::new()))
            .await;
        assert_eq!(
            (empty.status, empty.body.len()),
            (StatusCode::OK, 0),
            "{proto:?}"
        );
        client.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_over_the_body_limit_is_413() {
    let server = start(None, limits()).await;
    let payload = echo_payload(BODY_LIMIT as usize + 1);
    for proto in PROTOCOLS {
        for streamed_body in [false, true] {
            let body = match streamed_body {
                true => streamed(payload.clone()),
                false => full(payload.clone()),
            };
            // A fresh connection each time: after a 413 the server may close it.
            let mut client = connect(&server, proto).await;
            let reply = client.send("POST", "/echo", HeaderMap::new(), body).await;
            assert_eq!(
                reply.status,
                StatusCode::PAYLOAD_TOO_LARGE,
                "{proto:?} streamed={streamed_body}"
            );
            client.close();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delay_waits_at_least_the_requested_time() {
    let server = start(None, limits()).await;
    for proto in PROTOCOLS {
        let mut client = connect(&server, proto).await;
        let started = Instant::now();
        let reply = client.get("/delay/150").await;
        assert!(started.elapsed() >= Duration::from_millis(150), "{proto:?}");
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(&reply.body[..], b"{\"delay_ms\":150}\n");
        client.close();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_quic_congestion_controller_serves_h3() {
    for congestion in [
        QuicCongestion::Cubic,
        QuicCongestion::NewReno,
        QuicCongestion::Bbr,
    ] {
        let config = ServerConfig {
            quic_congestion: congestion,
            ..test_config(None, limits())
        };
        let server = h3lab_server::start(config).await.unwrap();
        let mut client = connect(&server, Proto::H3).await;
        let reply = client.get("/bytes/300000").await;
        assert_eq!(reply.status, StatusCode::OK, "{}", congestion.name());
        assert_eq!(reply.body.len(), 300_000, "{}", congestion.name());
    }
}
