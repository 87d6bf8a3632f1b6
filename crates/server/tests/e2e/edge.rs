//! The server as an edge (`--upstream`): every protocol reaches the origin
//! over the upstream protocol asked for, documents-only forwarding leaves
//! the other files at the edge, and an origin that is down or slow is a
//! 502 or a 504.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use h3lab_server::{Forward, RunningServer, ServerConfig, Upstream, UpstreamProtocol};
use http::{HeaderMap, StatusCode};

use crate::common::{connect, full, Proto, ScratchDir, PROTOCOLS};

/// A site of two files whose bodies say which server sent them.
fn site(scratch: &ScratchDir, who: &str) -> PathBuf {
    let dir = scratch.0.join(who);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.html"), format!("{who} page")).unwrap();
    std::fs::write(dir.join("app.js"), format!("{who} script")).unwrap();
    dir
}

async fn origin(scratch: &ScratchDir) -> RunningServer {
    h3lab_server::start(ServerConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        site: Some(site(scratch, "origin")),
        ..ServerConfig::default()
    })
    .await
    .unwrap()
}

fn written_cert(origin: &RunningServer, scratch: &ScratchDir) -> PathBuf {
    let path = scratch.0.join("origin.pem");
    std::fs::write(&path, origin.cert_pem().unwrap()).unwrap();
    path
}

async fn edge(
    scratch: &ScratchDir,
    origin: &str,
    ca: &Path,
    protocol: UpstreamProtocol,
    forward: Forward,
    timeout: Duration,
) -> RunningServer {
    h3lab_server::start(ServerConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        site: Some(site(scratch, "edge")),
        upstream: Some(Upstream {
            origin: origin.parse().unwrap(),
            protocol,
            ca: Some(ca.to_path_buf()),
            forward,
            timeout,
        }),
        ..ServerConfig::default()
    })
    .await
    .unwrap()
}

fn https(server: &RunningServer) -> String {
    format!("https://{}", server.local_addr())
}

async fn every_protocol_through_an_edge(protocol: UpstreamProtocol) {
    let scratch = ScratchDir::new("edge-all");
    let origin = origin(&scratch).await;
    let ca = written_cert(&origin, &scratch);
    let edge = edge(
        &scratch,
        &https(&origin),
        &ca,
        protocol,
        Forward::All,
        Duration::from_secs(10),
    )
    .await;
    for proto in PROTOCOLS {
        let mut client = connect(&edge, proto).await;
        for path in ["/", "/app.js"] {
            let reply = client.get(path).await;
            assert_eq!(reply.status, StatusCode::OK, "{proto:?} {path}");
            assert!(reply.body.starts_with(b"origin "), "{proto:?} {path}");
            let timing = reply.header("server-timing").unwrap_or_default();
            assert!(timing.starts_with("origin;dur="), "{proto:?}: {timing}");
        }
        let mut headers = HeaderMap::new();
        headers.insert("content-type", "text/plain".parse().unwrap());
        let body = Bytes::from(vec![b'x'; 100_000]);
        let reply = client
            .send("POST", "/echo", headers, full(body.clone()))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{proto:?} echo");
        assert_eq!(reply.body, body, "{proto:?} echo");
    }
    let at_origin = origin.requests_served();
    let (h1, h2) = match protocol {
        UpstreamProtocol::H1 => (9, 0),
        UpstreamProtocol::H2 => (0, 9),
    };
    assert_eq!((at_origin.h1, at_origin.h2, at_origin.h3), (h1, h2, 0));
    let at_edge = edge.requests_served();
    assert_eq!((at_edge.h1, at_edge.h2, at_edge.h3), (3, 3, 3));
}

#[tokio::test]
async fn every_protocol_reaches_the_origin_over_h2() {
    every_protocol_through_an_edge(UpstreamProtocol::H2).await;
}

#[tokio::test]
async fn every_protocol_reaches_the_origin_over_h1() {
    every_protocol_through_an_edge(UpstreamProtocol::H1).await;
}

#[tokio::test]
async fn documents_go_to_the_origin_and_the_other_files_stay_at_the_edge() {
    let scratch = ScratchDir::new("edge-documents");
    let origin = origin(&scratch).await;
    let ca = written_cert(&origin, &scratch);
    let edge = edge(
        &scratch,
        &https(&origin),
        &ca,
        UpstreamProtocol::H2,
        Forward::Documents,
        Duration::from_secs(10),
    )
    .await;
    let mut client = connect(&edge, Proto::H3).await;
    for (path, from) in [
        ("/", "origin page"),
        ("/index.html", "origin page"),
        ("/app.js", "edge script"),
    ] {
        let reply = client.get(path).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(reply.body, from.as_bytes(), "{path}");
    }
    assert_eq!(origin.requests_served().total(), 2);
}

#[tokio::test]
async fn an_origin_that_is_down_is_a_502_and_a_slow_one_a_504() {
    let scratch = ScratchDir::new("edge-faults");
    let slow = origin(&scratch).await;
    let ca = written_cert(&slow, &scratch);
    let edge_to_slow = edge(
        &scratch,
        &https(&slow),
        &ca,
        UpstreamProtocol::H2,
        Forward::All,
        Duration::from_millis(300),
    )
    .await;
    let mut client = connect(&edge_to_slow, Proto::H2).await;
    let reply = client.get("/delay/3000").await;
    assert_eq!(reply.status, StatusCode::GATEWAY_TIMEOUT);
    assert!(String::from_utf8_lossy(&reply.body).contains("no response head within"));

    let gone = slow.local_addr();
    slow.shutdown().await;
    let edge_to_gone = edge(
        &scratch,
        &format!("https://{gone}"),
        &ca,
        UpstreamProtocol::H2,
        Forward::All,
        Duration::from_secs(10),
    )
    .await;
    let mut client = connect(&edge_to_gone, Proto::H1).await;
    let reply = client.get("/").await;
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY);
    let message = String::from_utf8_lossy(&reply.body);
    assert!(
        message.contains(&format!("the origin {gone} did not answer")),
        "{message}"
    );
}
