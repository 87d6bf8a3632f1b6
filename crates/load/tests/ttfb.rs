//! TTFB on new connections: cold, resumed and 0-RTT report what happened.

mod common;
mod ticket_relay;

use std::time::Duration;

use common::{TestServer, PROTOS};
use h3lab_client::{measure_ttfb, Target, TlsOptions};
use h3lab_results::ttfb::TtfbSample;
use h3lab_results::{Proto, TtfbMode};
use ticket_relay::TicketRelay;

fn measure(server: &TestServer, proto: Proto, mode: TtfbMode) -> anyhow::Result<TtfbSample> {
    measure_path(server, "/bytes/321", proto, mode)
}

fn measure_path(
    server: &TestServer,
    path: &str,
    proto: Proto,
    mode: TtfbMode,
) -> anyhow::Result<TtfbSample> {
    measure_url(&server.url(path), proto, mode)
}

fn measure_url(url: &str, proto: Proto, mode: TtfbMode) -> anyhow::Result<TtfbSample> {
    let target = Target::parse(url).unwrap();
    let tls = TlsOptions {
        insecure: true,
        ca_file: None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(measure_ttfb(
        &target,
        &[],
        proto,
        mode,
        &tls,
        Duration::from_secs(2),
    ))
}

#[test]
fn cold_connections_do_not_resume() {
    let server = TestServer::start();
    for proto in PROTOS {
        let sample = measure(&server, proto, TtfbMode::Cold).unwrap();
        assert_eq!(sample.status, 200, "{proto}");
        assert_eq!(sample.body_bytes, 321, "{proto}");
        assert_eq!(sample.resumed, Some(false), "{proto}");
        assert!(
            sample.ttfb_ms >= sample.handshake_ms.unwrap(),
            "{proto}: {sample:?}"
        );
    }
}

#[test]
fn resumed_connections_say_so_on_every_protocol() {
    let server = TestServer::start();
    for proto in PROTOS {
        let sample = measure(&server, proto, TtfbMode::Resumed).unwrap();
        assert_eq!(sample.resumed, Some(true), "{proto}");
        assert_eq!(sample.body_bytes, 321, "{proto}");
    }
}

#[test]
fn h3_zero_rtt_is_accepted_and_reported() {
    let server = TestServer::start();
    let sample = measure(&server, Proto::H3, TtfbMode::ZeroRtt).unwrap();
    assert_eq!(sample.early_data_accepted, Some(true), "{sample:?}");
    assert_eq!(sample.resumed, Some(true));
    assert_eq!(sample.status, 200);
    assert_eq!(sample.body_bytes, 321);
}

/// The body arrives after the response head: the connection must stay open
/// until it is drained (h3 closes a connection whose last sender is gone).
#[test]
fn a_zero_rtt_body_longer_than_the_head_is_received_whole() {
    let server = TestServer::start();
    for mode in [TtfbMode::Cold, TtfbMode::ZeroRtt] {
        let sample = measure_path(&server, "/bytes/4000000", Proto::H3, mode).unwrap();
        assert_eq!(sample.body_bytes, 4_000_000, "{mode:?}");
    }
}

#[test]
fn zero_rtt_over_tcp_is_refused_clearly() {
    let server = TestServer::start();
    for proto in [Proto::H1, Proto::H2] {
        let err = measure(&server, proto, TtfbMode::ZeroRtt)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("0-RTT is not supported for {proto}")),
            "{err}"
        );
    }
}

/// A QUIC session ticket travels apart from the response, so a lost packet
/// can bring it after the response: the priming connection waits for it
/// rather than report that the server offers no resumption. (Without the
/// wait, every one of these measurements failed with "the server issued no
/// session ticket".)
#[test]
fn a_session_ticket_held_back_by_a_lost_packet_is_waited_for() {
    let server = TestServer::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let relay = runtime.block_on(TicketRelay::start(server.addr(), Duration::from_millis(25)));
    let url = format!("https://127.0.0.1:{}/bytes/321", relay.addr.port());
    for mode in [TtfbMode::Resumed, TtfbMode::ZeroRtt, TtfbMode::Resumed] {
        let sample = measure_url(&url, Proto::H3, mode).unwrap();
        assert_eq!(sample.resumed, Some(true), "{mode:?}: {sample:?}");
        assert_eq!(sample.body_bytes, 321, "{mode:?}");
    }
    // At least each priming connection's (a resumed one may send fewer
    // than three datagrams with 1-RTT packets).
    assert!(relay.cuts() >= 3, "{} datagrams cut", relay.cuts());
}
