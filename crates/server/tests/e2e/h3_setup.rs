//! HTTP/3 connection set-up when the client's ClientHello spans two
//! datagrams: the server must not open its control and QPACK streams before
//! the client's transport parameters allow it, or it waits forever.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use h3lab_server::{Limits, RunningServer};
use http::StatusCode;

use crate::common::{client_tls, connect_h3, h3_over, start};
use crate::relay::SplitFlightRelay;

/// Longer than the server needs to take up the first Initial and start
/// HTTP/3, shorter than quinn's first probe timeout (about 1 s).
const HOLD_BACK: Duration = Duration::from_millis(300);

/// Without a stall, a request through the relay takes HOLD_BACK plus
/// loopback round trips; the stall never ends.
const NO_STALL_WITHIN: Duration = Duration::from_secs(5);

/// ALPN ids that only pad the ClientHello past one Initial packet, as
/// Chromium's key shares do; the server picks `h3`.
fn padded_alpn() -> Vec<Vec<u8>> {
    let mut alpn = vec![b"h3".to_vec()];
    alpn.extend((b'a'..=b'e').map(|c| vec![c; 255]));
    alpn
}

fn split_hello_endpoint(server: &RunningServer) -> quinn::Endpoint {
    let alpn = padded_alpn();
    let alpn: Vec<&[u8]> = alpn.iter().map(Vec::as_slice).collect();
    let mut tls = client_tls(server, &alpn);
    tls.enable_early_data = true;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    endpoint
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_hello_split_across_datagrams_gets_its_response() {
    let server = start(None, Limits::default()).await;
    let relay = SplitFlightRelay::start(server.local_addr(), HOLD_BACK).await;
    let endpoint = split_hello_endpoint(&server);
    let request = async {
        let mut client = connect_h3(&endpoint, relay.addr).await;
        let reply = client.get("/health").await;
        client.close();
        reply
    };
    let reply = tokio::time::timeout(NO_STALL_WITHIN, request)
        .await
        .expect("HTTP/3 stalled: no response within 5 s to a split ClientHello");
    assert_eq!(reply.status, StatusCode::OK);
    assert!(
        relay.split_an_initial_flight(),
        "the ClientHello fit one datagram, so this test proved nothing: pad it more"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_client_hello_with_0rtt_is_answered_from_early_data() {
    let server = start(None, Limits::default()).await;
    let endpoint = split_hello_endpoint(&server);
    let mut first = connect_h3(&endpoint, server.local_addr()).await;
    assert_eq!(first.get("/health").await.status, StatusCode::OK);
    first.connection().unwrap().close(0u32.into(), b"done");

    let relay = SplitFlightRelay::start(server.local_addr(), HOLD_BACK).await;
    let connecting = endpoint.connect(relay.addr, "localhost").unwrap();
    let (connection, accepted) = connecting
        .into_0rtt()
        .unwrap_or_else(|_| panic!("no 0-RTT: the client holds no usable session ticket"));
    let request = async {
        let mut second = h3_over(&endpoint, connection).await;
        let reply = second.get("/bytes/1000").await;
        let accepted = accepted.await;
        second.close();
        (reply, accepted)
    };
    let (reply, accepted) = tokio::time::timeout(NO_STALL_WITHIN, request)
        .await
        .expect("HTTP/3 stalled: no response within 5 s to a split ClientHello with 0-RTT");
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body.len(), 1000);
    assert!(accepted, "the server rejected 0-RTT");
    assert!(
        relay.split_an_initial_flight(),
        "the ClientHello fit one datagram"
    );
}

/// On one thread, so the server's tasks log to this test's subscriber.
#[tokio::test(flavor = "current_thread")]
async fn http3_setup_that_cannot_finish_is_closed_at_the_handshake_timeout() {
    let logs = CapturedLogs::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(logs.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);
    let limits = Limits {
        handshake_timeout: Duration::from_millis(500),
        ..Limits::default()
    };
    let server = start(None, limits).await;
    // A client that allows the server no unidirectional stream: HTTP/3's
    // control stream can never open, so set-up cannot finish.
    let mut transport = quinn::TransportConfig::default();
    transport.max_concurrent_uni_streams(0u32.into());
    let crypto =
        quinn::crypto::rustls::QuicClientConfig::try_from(client_tls(&server, &[b"h3"])).unwrap();
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let connection = endpoint
        .connect_with(config, server.local_addr(), "localhost")
        .unwrap()
        .await
        .unwrap();
    let closed = tokio::time::timeout(NO_STALL_WITHIN, connection.closed())
        .await
        .expect("the server left a connection it cannot set up open");
    let quinn::ConnectionError::ApplicationClosed(close) = closed else {
        panic!("closed without an application error code: {closed}");
    };
    assert_eq!(
        u64::from(close.error_code),
        h3::error::Code::H3_INTERNAL_ERROR.value(),
        "{close}"
    );
    let reason = String::from_utf8_lossy(&close.reason);
    assert!(
        reason.contains("HTTP/3 setup did not finish within 500ms"),
        "{reason}"
    );
    let logged = logs.text();
    let peer = endpoint.local_addr().unwrap().to_string();
    assert!(
        logged.contains("WARN") && logged.contains(&peer) && logged.contains("HTTP/3 setup"),
        "no warning naming the peer {peer}: {logged:?}"
    );
}

/// Log lines written by the server, for assertions.
#[derive(Clone, Default)]
struct CapturedLogs(Arc<Mutex<Vec<u8>>>);

impl CapturedLogs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for CapturedLogs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for CapturedLogs {
    type Writer = CapturedLogs;

    fn make_writer(&'a self) -> CapturedLogs {
        self.clone()
    }
}
