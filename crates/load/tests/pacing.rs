//! Open-model runs: the achieved rate must match the target, and sends
//! leave on time. The tests take turns: each measures timing, which a
//! neighbour's load on this 2-core machine would disturb.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use common::TestServer;
use h3lab_client::Target;
use h3lab_load::{CancellationToken, LoadConfig};
use h3lab_results::load::Model;
use h3lab_results::Proto;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// 200 req/s for 3 s must send 600 requests within ±5 %.
fn paced_run_hits_the_rate(proto: Proto) {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = TestServer::start();
    let mut config = server.config("/bytes/100", proto);
    config.rate = Some(200.0);
    config.duration = Some(Duration::from_secs(3));
    config.connections = 4;
    let report = h3lab_load::run(&config, CancellationToken::new()).unwrap();
    let open = report.open_model.as_ref().expect("open-model figures");
    assert_eq!(report.model, Model::Open);
    assert!(
        (570..=630).contains(&open.sent),
        "{proto}: sent {}\n{report}",
        open.sent
    );
    assert!(
        (open.achieved_rate - 200.0).abs() <= 10.0,
        "{proto}: achieved {}\n{report}",
        open.achieved_rate
    );
    assert!(
        (report.requests_per_sec - 200.0).abs() <= 10.0,
        "{proto}\n{report}"
    );
    assert_eq!(report.failed, 0, "{proto}\n{report}");
    assert_eq!(report.body_bytes, report.completed * 100);
    assert_eq!(report.completed + report.aborted_in_flight, open.sent);
    assert_eq!(
        open.lag_us.count(),
        open.sent,
        "every send's lag is recorded"
    );
    assert!(open.unsent <= 30, "{proto}\n{report}");
}

#[test]
fn h1_paced() {
    paced_run_hits_the_rate(Proto::H1);
}

#[test]
fn h2_paced() {
    paced_run_hits_the_rate(Proto::H2);
}

#[test]
fn h3_paced() {
    paced_run_hits_the_rate(Proto::H3);
}

/// Two connections of one stream each cannot keep 100 req/s against a
/// 50 ms endpoint: requests go out late and latency, measured from the
/// intended time, includes the wait (coordinated-omission correction).
#[test]
fn overload_shows_up_as_late_requests_and_long_latency() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = TestServer::start();
    let mut config = server.config("/delay/50", Proto::H2);
    config.rate = Some(100.0);
    config.requests = Some(60);
    let report = h3lab_load::run(&config, CancellationToken::new()).unwrap();
    let open = report.open_model.as_ref().unwrap();
    assert_eq!(report.completed, 60, "{report}");
    assert!(open.late > 30, "{report}");
    // 60 requests at 40 req/s capacity finish ~1.5 s after the first; the
    // last ones were due after 0.6 s, so they waited ~0.9 s.
    assert!(report.latency_us.max() > 500_000, "{report}");
    assert!(open.achieved_rate < 60.0, "{report}");
}

/// The open model measures latency from the intended send time, so a
/// generator that sends late charges its own lag to the server. Sent on
/// time, at a rate the server answers easily, the open model's median is
/// the closed model's.
///
/// The server here never sleeps: a server that idles between sparse
/// requests takes tens of microseconds longer to wake on this VM than one
/// kept busy by a closed loop, which is real latency of a lightly loaded
/// server but not the generator's; this test isolates the generator.
#[test]
fn at_a_low_rate_open_model_latency_is_the_closed_model_latency() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = SpinningServer::start(1000);
    let config = |requests: Option<u64>, rate: Option<f64>| {
        let target = Target::parse(&format!("http://{}/", server.addr)).unwrap();
        let mut config = LoadConfig::new(target);
        config.proto = Proto::H1;
        config.connections = 1;
        config.threads = 1;
        config.requests = requests;
        config.rate = rate;
        config.duration = rate.map(|_| Duration::from_secs(1));
        config
    };
    let run = |config: LoadConfig| h3lab_load::run(&config, CancellationToken::new()).unwrap();
    // Turns of each, interleaved, so slow drifts of the machine hit both.
    let mut closed = run(config(Some(500), None));
    let mut open = run(config(None, Some(500.0)));
    for _ in 0..2 {
        closed.merge(&run(config(Some(500), None))).unwrap();
        open.merge(&run(config(None, Some(500.0)))).unwrap();
    }
    closed.merge(&run(config(Some(500), None))).unwrap();
    assert_eq!(open.failed + closed.failed, 0, "{open}\n{closed}");
    assert!(open.completed >= 1425, "{open}");
    let closed_p50 = closed.latency_us.quantile(0.5) as i64;
    let open_p50 = open.latency_us.quantile(0.5) as i64;
    assert!(
        (open_p50 - closed_p50).abs() <= 100,
        "open-model p50 {open_p50} µs, closed-model p50 {closed_p50} µs: more than 0.1 ms apart\n{open}"
    );
}

/// A cleartext HTTP/1.1 server that answers every request with `body_len`
/// bytes and polls its sockets without ever sleeping, on one thread, so it
/// answers as fast when requests are sparse as when they come back to back.
struct SpinningServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SpinningServer {
    fn start(body_len: usize) -> SpinningServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let mut response =
            format!("HTTP/1.1 200 OK\r\ncontent-length: {body_len}\r\n\r\n").into_bytes();
        response.resize(response.len() + body_len, b'x');
        let thread = std::thread::spawn(move || {
            let mut connections: Vec<(TcpStream, Vec<u8>)> = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                if let Ok((stream, _)) = listener.accept() {
                    stream.set_nonblocking(true).unwrap();
                    stream.set_nodelay(true).unwrap();
                    connections.push((stream, Vec::new()));
                }
                connections.retain_mut(|(stream, pending)| answer(stream, pending, &response));
                // Never asleep, so never slow to wake; but on a 2-core machine
                // the generator may need this core, so hand it over at once.
                std::thread::yield_now();
            }
        });
        SpinningServer {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for SpinningServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

/// Reads what `stream` has and answers every complete request head in it
/// (requests here have no body); false once the connection is over.
fn answer(stream: &mut TcpStream, pending: &mut Vec<u8>, response: &[u8]) -> bool {
    let mut buffer = [0u8; 4096];
    match stream.read(&mut buffer) {
        Ok(0) => return false,
        Ok(read) => pending.extend_from_slice(&buffer[..read]),
        Err(err) if err.kind() == ErrorKind::WouldBlock => return true,
        Err(_) => return false,
    }
    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
        pending.drain(..end + 4);
        stream.set_nonblocking(false).unwrap();
        let written = stream.write_all(response);
        stream.set_nonblocking(true).unwrap();
        if written.is_err() {
            return false;
        }
    }
    true
}
