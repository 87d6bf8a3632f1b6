//! The suite against a server built to pass every case (`h3lab serve`,
//! h3lab's build of it) and three built here to fail them: on quiche, one
//! that shrugs at everything (it answers every request and never closes)
//! and one that closes at anything it did not expect, for the HTTP/3 and
//! QPACK cases; on aioquic, one that takes invalid transport parameters,
//! for the transport cases. Every case must pass against the first and
//! fail against one of the others, so no case can pass against anything.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use h3i::quiche;
use h3lab_conformance::{cases, run_suite, Options, Origin};
use h3lab_results::conformance::{CaseResult, ConformanceReport, Expected, Observed, Verdict};
use h3lab_results::server_output::is_listening_line;

fn options(address: SocketAddr, path: &str) -> Options {
    Options {
        target: format!("https://127.0.0.1:{}{path}", address.port()),
        origin: Origin {
            authority: format!("127.0.0.1:{}", address.port()),
            path: path.to_string(),
        },
        server_name: "127.0.0.1".to_string(),
        address,
        case_timeout: Duration::from_millis(800),
        settle: Duration::from_millis(100),
        only: Vec::new(),
    }
}

fn verdicts(report: &ConformanceReport, verdict: Verdict) -> Vec<&str> {
    report
        .cases
        .iter()
        .filter(|case| case.verdict == verdict)
        .map(|case| case.id.as_str())
        .collect()
}

#[test]
fn h3lab_serve_passes_every_case() {
    let Some(server) = BuiltinServer::start() else {
        return;
    };
    let report = run_suite(&options(server.address, "/bytes/10"), |_| {}).unwrap();
    assert_eq!(report.cases.len(), cases().count());
    assert_eq!(report.plain_status, 200);
    let not_passed: Vec<String> = report
        .cases
        .iter()
        .filter(|case| case.verdict != Verdict::Pass && !is_without_table(case))
        .map(|case| format!("{case}"))
        .collect();
    assert!(
        not_passed.is_empty(),
        "h3lab serve:\n{}",
        not_passed.join("\n")
    );
}

/// `qpack.blocked-streams-overflow` against a server whose QPACK dynamic
/// table holds nothing, which no request can block on (h3lab serve's, and
/// quiche's): not run, and so no verdict.
const BLOCKED_STREAMS: &str = "qpack.blocked-streams-overflow";

fn is_without_table(result: &CaseResult) -> bool {
    result.id == BLOCKED_STREAMS
        && result.verdict == Verdict::Unknown
        && matches!(&result.observed, Observed::NotRun { detail }
            if detail.contains("dynamic table holds no entry"))
}

/// `h3lab serve` on 127.0.0.1, from h3lab's own build: `H3LAB_BIN`, or
/// `target/debug/h3lab` of the workspace this crate sits in.
struct BuiltinServer {
    child: Child,
    address: SocketAddr,
}

impl BuiltinServer {
    /// None, with a message, where h3lab is not built (CI builds it first,
    /// and there a missing binary fails the test).
    fn start() -> Option<BuiltinServer> {
        let binary = std::env::var_os("H3LAB_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/h3lab")
            });
        if !binary.exists() {
            let why = format!(
                "{} is not built: run `cargo build` in the workspace, or set H3LAB_BIN",
                binary.display()
            );
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("skipped: {why}");
            return None;
        }
        let mut child = Command::new(&binary)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // The banner's line `listening: tcp+udp 127.0.0.1:PORT (...)`.
        let line = lines
            .by_ref()
            .map_while(Result::ok)
            .find(|line| is_listening_line(line))
            .expect("h3lab serve printed no `listening:` line");
        // Keep draining, so the server never writes into a closed pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let address = line
            .split_whitespace()
            .find_map(|word| word.parse().ok())
            .expect("the `listening:` line names the address");
        Some(BuiltinServer { child, address })
    }
}

impl Drop for BuiltinServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn every_http3_case_fails_against_a_server_built_to_fail_it() {
    let shrugging = TestServer::start(Behaviour::Shrug);
    let shrugged = run_suite(&options(shrugging.address, "/"), |_| {}).unwrap();
    let hasty = TestServer::start(Behaviour::CloseAtAnythingElse);
    // Its transport cases would time out as the other's do (below).
    let http3_groups = (cases().filter(|case| !case.is_transport()))
        .map(|case| format!("{}.", case.id.split('.').next().unwrap()))
        .collect();
    let http3_only = Options {
        only: http3_groups,
        ..options(hasty.address, "/")
    };
    let hastily = run_suite(&http3_only, |_| {}).unwrap();
    // quiche's server, when the first packet a client sends cannot be
    // processed, closes without a CONNECTION_CLOSE (quiche 0.30,
    // `Connection::close` before any packet was received): the transport
    // parameter cases fail against it by timing out. (It refuses the
    // transport cases' frames as it should: those fail against the lenient
    // server, below.)
    let parameter_cases: Vec<&str> = (cases())
        .filter(|case| refuses_handshake(&case.expected()))
        .map(|case| case.id)
        .collect();
    let seen: Vec<(Verdict, &Observed)> = (shrugged.cases.iter())
        .filter(|result| parameter_cases.contains(&result.id.as_str()))
        .map(|result| (result.verdict, &result.observed))
        .collect();
    assert_eq!(
        seen,
        vec![(Verdict::Fail, &Observed::TimedOut); parameter_cases.len()]
    );
    assert_eq!(parameter_cases.len(), 6);
    for case in cases().filter(|case| !case.is_transport() && case.id != BLOCKED_STREAMS) {
        let result = |report: &ConformanceReport| {
            let found = report.cases.iter().find(|result| result.id == case.id);
            found.expect("every case ran").clone()
        };
        let (shrug, hasty) = (result(&shrugged), result(&hastily));
        // A case that expects the server to carry on fails against the server
        // that closes, and so does one whose defect is in a body (an answer
        // to it gives no verdict); every other case fails against the one
        // that carries on.
        let expected = case.expected();
        let expected_failure = match expected {
            Expected::Ignore => &hasty,
            _ if in_body(&expected) => &hasty,
            _ => &shrug,
        };
        assert_eq!(
            expected_failure.verdict,
            Verdict::Fail,
            "{} passed against a server that breaks it: {expected_failure}",
            case.id
        );
    }
    // The two servers are what they claim: the one that shrugs passes
    // exactly the cases that ask to carry on, the one that closes passes
    // none (no case expects its code).
    let carry_on: Vec<&str> = cases()
        .filter(|case| case.expected() == Expected::Ignore)
        .map(|case| case.id)
        .collect();
    let body_cases: Vec<&str> = cases()
        .filter(|case| in_body(&case.expected()))
        .map(|case| case.id)
        .collect();
    let http3_passes = |report| {
        let mut passed = verdicts(report, Verdict::Pass);
        passed.retain(|id| !is_transport(id));
        passed
    };
    assert_eq!(http3_passes(&shrugged), carry_on);
    assert_eq!(http3_passes(&hastily), Vec::<&str>::new());
    // The blocked-streams case needs the server's SETTINGS, which the one
    // that shrugs never sends; the hasty one closes at the client's.
    let with_blocked = [body_cases.as_slice(), &[BLOCKED_STREAMS]].concat();
    assert_eq!(verdicts(&shrugged, Verdict::Unknown), with_blocked);
    assert_eq!(body_cases.len(), 2);
    assert!(verdicts(&hastily, Verdict::Unknown).is_empty());
}

/// The blocked-streams case needs a server with a dynamic table: aioquic
/// (ls-qpack) refuses one request blocked beyond its
/// SETTINGS_QPACK_BLOCKED_STREAMS, and fails the case when its decoder
/// takes more than those SETTINGS say.
#[test]
fn the_blocked_streams_case_passes_against_aioquic_and_fails_against_a_lax_decoder() {
    let only = |server: &LenientServer| Options {
        only: vec![BLOCKED_STREAMS.to_string()],
        ..options(server.address, "/")
    };
    let Some(strict) = LenientServer::start(&[]) else {
        return;
    };
    let report = run_suite(&only(&strict), |_| {}).unwrap();
    let [result] = report.cases.as_slice() else {
        panic!("one case ran: {report}");
    };
    assert_eq!(result.verdict, Verdict::Pass, "{result}");
    let lax = LenientServer::start(&["--blocked-streams-beyond-settings"]).unwrap();
    let report = run_suite(&only(&lax), |_| {}).unwrap();
    let [result] = report.cases.as_slice() else {
        panic!("one case ran: {report}");
    };
    assert_eq!(result.verdict, Verdict::Fail, "{result}");
    assert_eq!(result.observed, Observed::CarriedOn, "{result}");
}

/// The transport cases fail against a server that takes what RFC 9000 says
/// to refuse: aioquic, with each invalid transport parameter moved into
/// range before it checks, every frame allowed in every packet type, the
/// frames a client must not send skipped, and its limits lifted
/// (tests/lenient_quic_server.py).
#[test]
fn every_transport_case_fails_against_a_server_that_takes_invalid_parameters() {
    let Some(server) = LenientServer::start(&[]) else {
        return;
    };
    let only = Options {
        only: vec!["transport.".to_string()],
        ..options(server.address, "/")
    };
    let report = run_suite(&only, |_| {}).unwrap();
    let transport_cases = cases().filter(|case| case.is_transport()).count();
    assert_eq!(report.cases.len(), transport_cases);
    assert_eq!(transport_cases, 17);
    for result in &report.cases {
        assert_eq!(result.verdict, Verdict::Fail, "{result}");
        assert_eq!(result.observed, Observed::CarriedOn, "{result}");
    }
}

/// Whether a conforming server refuses the case's handshake: the transport
/// parameter cases.
fn refuses_handshake(expected: &Expected) -> bool {
    matches!(expected, Expected::TransportError { codes }
        if codes.iter().all(|code| code.name == "TRANSPORT_PARAMETER_ERROR"))
}

fn is_transport(id: &str) -> bool {
    cases().any(|case| case.id == id && case.is_transport())
}

/// tests/lenient_quic_server.py under the Python of the hypercorn peer
/// (scripts/peer-setup.sh quick), which has aioquic.
struct LenientServer {
    child: Child,
    address: SocketAddr,
    _dir: tempfile::TempDir,
}

impl LenientServer {
    fn start(flags: &[&str]) -> Option<LenientServer> {
        let peers = std::env::var_os("H3LAB_PEERS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/opt/h3lab-ci/peers"));
        let python = peers.join("hypercorn/bin/python3");
        if !python.is_file() {
            let why = format!(
                "{} is missing: `scripts/peer-setup.sh quick` installs the hypercorn peer, \
                 whose aioquic the lenient server runs on (or set H3LAB_PEERS_DIR)",
                python.display()
            );
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("skipped: {why}");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = write_certificate(&dir);
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lenient_quic_server.py");
        let mut child = Command::new(python)
            .arg(script)
            .args([&cert, &key])
            .args(flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = lines.next().and_then(Result::ok);
        let address = line
            .as_deref()
            .and_then(|line| line.strip_prefix("listening: udp "))
            .and_then(|address| address.parse().ok())
            .unwrap_or_else(|| panic!("the lenient server did not start: {line:?}"));
        Some(LenientServer {
            child,
            address,
            _dir: dir,
        })
    }
}

impl Drop for LenientServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn in_body(expected: &Expected) -> bool {
    matches!(expected, Expected::StreamError { in_body: true, .. })
}

/// What a test server does with what it did not expect.
#[derive(Clone, Copy, PartialEq)]
enum Behaviour {
    /// Answers every request with 200 and never closes.
    Shrug,
    /// Closes with H3_INTERNAL_ERROR (a fault of its own, which no case
    /// accepts) at anything but a control stream with an empty SETTINGS
    /// and a request on stream 4.
    CloseAtAnythingElse,
}

const H3_INTERNAL_ERROR: u64 = 0x102;
/// A control stream's type (0x00) and an empty SETTINGS frame.
const PLAIN_CONTROL_STREAM: [u8; 3] = [0x00, 0x04, 0x00];

/// A QUIC server on quiche that speaks just enough HTTP/3 to answer a
/// request: on its own thread until dropped.
struct TestServer {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    fn start(behaviour: Behaviour) -> TestServer {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(5)))
            .unwrap();
        let address = socket.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || serve(socket, behaviour, &stop))
        };
        TestServer {
            address,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

/// A self-signed certificate for 127.0.0.1 and its key, as PEM files in
/// `dir`.
fn write_certificate(dir: &tempfile::TempDir) -> (String, String) {
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let text = |path: PathBuf| path.to_str().unwrap().to_string();
    (text(cert), text(key))
}

fn quiche_config(dir: &tempfile::TempDir) -> quiche::Config {
    let (cert, key) = write_certificate(dir);
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    config.load_cert_chain_from_pem_file(&cert).unwrap();
    config.load_priv_key_from_pem_file(&key).unwrap();
    config.set_application_protos(&[b"h3"]).unwrap();
    config.set_max_idle_timeout(5_000);
    config.set_initial_max_data(1_000_000);
    config.set_initial_max_stream_data_bidi_remote(100_000);
    config.set_initial_max_stream_data_uni(100_000);
    config.set_initial_max_streams_bidi(100);
    config.set_initial_max_streams_uni(100);
    config
}

/// One client's connection and what its streams carried so far.
struct Client {
    connection: quiche::Connection,
    received: HashMap<u64, Vec<u8>>,
}

fn serve(socket: UdpSocket, behaviour: Behaviour, stop: &AtomicBool) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = quiche_config(&dir);
    let local = socket.local_addr().unwrap();
    let mut clients: HashMap<Vec<u8>, Client> = HashMap::new();
    let mut aliases: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    let mut accepted = 0u64;
    let mut buf = [0u8; 65_535];
    let mut out = [0u8; 1_350];
    while !stop.load(Ordering::Relaxed) {
        match socket.recv_from(&mut buf) {
            Ok((len, from)) => {
                let header = quiche::Header::from_slice(&mut buf[..len], quiche::MAX_CONN_ID_LEN);
                let Ok(header) = header else { continue };
                // Short headers carry no length: each connection ID this
                // server picks is MAX_CONN_ID_LEN long, and a client's first
                // packets use the one it picked, kept as an alias.
                let dcid = header.dcid.to_vec();
                let key = aliases.get(&dcid).cloned().unwrap_or(dcid.clone());
                if !clients.contains_key(&key) {
                    if header.ty != quiche::Type::Initial {
                        continue;
                    }
                    accepted += 1;
                    let mut id = [0u8; quiche::MAX_CONN_ID_LEN];
                    id[..8].copy_from_slice(&accepted.to_be_bytes());
                    let scid = quiche::ConnectionId::from_ref(&id);
                    let connection = quiche::accept(&scid, None, local, from, &mut config).unwrap();
                    aliases.insert(dcid, id.to_vec());
                    let client = Client {
                        connection,
                        received: HashMap::new(),
                    };
                    clients.insert(id.to_vec(), client);
                }
                let key = aliases.get(&key).cloned().unwrap_or(key);
                let client = clients.get_mut(&key).unwrap();
                let info = quiche::RecvInfo { from, to: local };
                let _ = client.connection.recv(&mut buf[..len], info);
                handle(client, behaviour);
            }
            Err(_) => {
                for client in clients.values_mut() {
                    client.connection.on_timeout();
                }
            }
        }
        for client in clients.values_mut() {
            while let Ok((len, info)) = client.connection.send(&mut out) {
                let _ = socket.send_to(&out[..len], info.to);
            }
        }
        clients.retain(|_, client| !client.connection.is_closed());
    }
}

/// Reads what arrived, then answers each finished request with 200 (or,
/// for the closing server, closes at the first thing it did not expect).
fn handle(client: &mut Client, behaviour: Behaviour) {
    let connection = &mut client.connection;
    if !connection.is_established() {
        return;
    }
    let mut finished = Vec::new();
    for stream in connection.readable() {
        let mut chunk = [0u8; 4_096];
        while let Ok((len, fin)) = connection.stream_recv(stream, &mut chunk) {
            client
                .received
                .entry(stream)
                .or_default()
                .extend_from_slice(&chunk[..len]);
            if fin {
                finished.push(stream);
            }
        }
    }
    if behaviour == Behaviour::CloseAtAnythingElse {
        let unexpected = client.received.iter().any(|(&stream, bytes)| match stream {
            2 => !PLAIN_CONTROL_STREAM.starts_with(bytes),
            4 => false,
            _ => true,
        });
        if unexpected {
            let _ = connection.close(true, H3_INTERNAL_ERROR, b"unexpected");
            return;
        }
    }
    for stream in finished.into_iter().filter(|stream| stream % 4 == 0) {
        let mut block = [0u8; 64];
        let status = [quiche::h3::Header::new(b":status", b"200")];
        let len = quiche::h3::qpack::Encoder::new()
            .encode(&status, &mut block)
            .unwrap();
        let mut frame = vec![0x01, len as u8];
        frame.extend_from_slice(&block[..len]);
        let _ = connection.stream_send(stream, &frame, true);
    }
}
