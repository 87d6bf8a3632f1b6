//! QUIC settings take effect: the initial window is the first window the
//! server's qlog shows, and GSO decides how many datagrams one system call
//! sends (read from the server's metrics).

use h3lab_results::server_output::metric_samples;
use h3lab_results::QuicCongestion;
use h3lab_server::{Limits, QuicTuning, RunningServer, ServerConfig};
use http::StatusCode;

use crate::common::{connect, test_config, Proto};
use crate::qlog::records;

async fn start_with(
    congestion: QuicCongestion,
    tuning: QuicTuning,
    qlog: Option<std::path::PathBuf>,
) -> RunningServer {
    let config = ServerConfig {
        quic_congestion: congestion,
        quic_tuning: tuning,
        qlog,
        ..test_config(None, Limits::default())
    };
    h3lab_server::start(config).await.unwrap()
}

/// The congestion window of the first `recovery:metrics_updated` event of
/// the server's only qlog file, after one h3 request; the banner; and the
/// window its start report (`--start-report`) says, which must be it.
async fn first_logged_window(congestion: QuicCongestion, tuning: QuicTuning) -> (u64, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(congestion, tuning, Some(dir.path().to_path_buf())).await;
    let banner = server.banner();
    let reported = server.start_report().quic_initial_window;
    let mut client = connect(&server, Proto::H3).await;
    assert_eq!(client.get("/bytes/100000").await.status, StatusCode::OK);
    client.close();
    server.shutdown().await;
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(files.len(), 1, "one QUIC connection, one file");
    let text = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
    let window = records(&text)
        .iter()
        .filter(|event| {
            event["name"]
                .as_str()
                .is_some_and(|n| n.ends_with("metrics_updated"))
        })
        .find_map(|event| event["data"]["congestion_window"].as_u64())
        .expect("the qlog shows a congestion window");
    assert_eq!(reported, Some(window), "the start report's window");
    (window, banner)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_initial_window_is_the_first_window_the_qlog_shows() {
    let chosen = QuicTuning {
        initial_window: Some(50_000),
        ..QuicTuning::default()
    };
    let (window, banner) = first_logged_window(QuicCongestion::Cubic, chosen).await;
    assert_eq!(window, 50_000);
    assert!(
        banner.contains(&"tuning: quic_initial_window = 50000 B".to_string()),
        "{banner:#?}"
    );

    // With none chosen, the banner names the controller's default, and it
    // is the one used: quinn's for Cubic, 10 datagrams for h3lab's BBR.
    for (congestion, default, why) in [
        (
            QuicCongestion::Cubic,
            12_000,
            "quinn's default for its controller",
        ),
        (
            QuicCongestion::Bbr,
            14_720,
            "10 datagrams, as TCP's 10 segments",
        ),
    ] {
        let (window, banner) = first_logged_window(congestion, QuicTuning::default()).await;
        assert_eq!(window, default, "{congestion:?}");
        let line = format!("tuning: quic_initial_window = {default} B ({why})");
        assert!(banner.contains(&line), "{congestion:?}: {banner:#?}");
    }

    // quinn's BBR started at 240,000 B; h3lab's BBR still can.
    let quinn_start = QuicTuning {
        initial_window: Some(240_000),
        ..QuicTuning::default()
    };
    let (window, _) = first_logged_window(QuicCongestion::Bbr, quinn_start).await;
    assert_eq!(window, 240_000);
}

/// Datagrams sent and the system calls that sent them, after a 2 MB download.
async fn datagrams_and_send_calls(segmentation_offload: bool) -> (f64, f64) {
    let tuning = QuicTuning {
        segmentation_offload,
        ..QuicTuning::default()
    };
    let server = start_with(QuicCongestion::Cubic, tuning, None).await;
    let mut client = connect(&server, Proto::H3).await;
    assert_eq!(client.get("/bytes/2000000").await.body.len(), 2_000_000);
    let metrics = metric_samples(&server.metrics_text());
    client.close();
    server.shutdown().await;
    (
        metrics["h3lab_quic_datagrams_sent_total"],
        metrics["h3lab_quic_udp_send_calls_total"],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gso_sends_several_datagrams_per_system_call_and_off_sends_one() {
    let (datagrams, calls) = datagrams_and_send_calls(false).await;
    assert!(
        datagrams > 1000.0,
        "a 2 MB download sends over 1000 datagrams: {datagrams}"
    );
    assert_eq!(datagrams, calls, "without GSO each call sends one datagram");

    let (datagrams, calls) = datagrams_and_send_calls(true).await;
    eprintln!("GSO on: {datagrams} datagrams in {calls} calls");
    assert!(
        datagrams >= 2.0 * calls,
        "with GSO on loopback a call sends 2 datagrams or more on average: {datagrams} datagrams in {calls} calls"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h3_is_served_on_its_own_thread_or_on_the_shared_runtime_and_says_which() {
    for (own_thread, line) in [
        (true, "tuning: quic_thread = own (one event loop for h3)"),
        (false, "tuning: quic_thread = shared with h1 and h2"),
    ] {
        let tuning = QuicTuning {
            own_thread,
            ..QuicTuning::default()
        };
        let server = start_with(QuicCongestion::Cubic, tuning, None).await;
        assert!(
            server.banner().iter().any(|l| l == line),
            "{:?}",
            server.banner()
        );
        let mut client = connect(&server, Proto::H3).await;
        assert_eq!(client.get("/bytes/300000").await.body.len(), 300_000);
        client.close();
        server.shutdown().await;
    }
}
