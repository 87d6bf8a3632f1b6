//! `h3lab load` against servers other than its own: Caddy (h1, h2, and h3
//! over quic-go) and nginx (h1, h2). `.ci/run` installs both; elsewhere a
//! test skips with a message when its server is missing. H3LAB_CADDY or
//! H3LAB_NGINX name a binary outside the usual places.

use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use h3lab_client::{Target, TlsOptions};
use h3lab_load::{CancellationToken, LoadConfig};
use h3lab_results::load::LoadReport;
use h3lab_results::Proto;
use h3lab_supervise::{Group, Supervised};

const BODY_BYTES: usize = 1000;
const REQUESTS: u64 = 2000;

/// `N` distinct ports free on loopback for both TCP and UDP (h3 shares the
/// TCP port). Each port's sockets stay bound until all are picked, so the
/// kernel cannot hand the same ephemeral port out twice.
fn free_ports<const N: usize>() -> [u16; N] {
    let mut held = Vec::with_capacity(N);
    while held.len() < N {
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        if let Ok(udp) = UdpSocket::bind(("127.0.0.1", port)) {
            held.push((port, tcp, udp));
        }
    }
    std::array::from_fn(|i| held[i].0)
}

/// A server process, stopped and reaped when dropped.
struct Server {
    process: Supervised,
    log: PathBuf,
}

impl Server {
    fn spawn(mut command: Command, log: PathBuf) -> Server {
        let output = std::fs::File::create(&log).unwrap();
        command
            .stdin(Stdio::null())
            .stdout(output.try_clone().unwrap())
            .stderr(output);
        let process = Supervised::spawn(command, Group::Own, "server").unwrap();
        Server { process, log }
    }

    /// Waits (at most 20 s) until the server accepts TCP on `port`.
    fn wait_listening(&mut self, port: u16) {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if let Some(exit) = self.process.poll() {
                panic!(
                    "server exited with code {}:\n{}",
                    exit.code,
                    self.log_text()
                );
            }
            assert!(
                Instant::now() < deadline,
                "server not listening on {addr} after 20 s:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    /// SIGTERM first, so nginx's master stops its workers; SIGKILL to the
    /// whole group if it is not gone in 5 s.
    fn drop(&mut self) {
        self.process.stop(Duration::from_secs(5));
    }
}

/// A directory with `file1000`, `BODY_BYTES` bytes every server serves.
fn site(dir: &Path) -> PathBuf {
    let root = dir.join("www");
    std::fs::create_dir(&root).unwrap();
    let body: Vec<u8> = (0..BODY_BYTES).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.join("file1000"), body).unwrap();
    root
}

/// Waits (at most 20 s) until one h1 request succeeds: Caddy accepts TCP
/// before `tls internal` has issued its certificate.
fn wait_serving(url: &str, tls: &TlsOptions, server: &Server) {
    let mut config = LoadConfig::new(Target::parse(url).unwrap());
    config.proto = Proto::H1;
    config.connections = 1;
    config.requests = Some(1);
    config.tls = tls.clone();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match h3lab_load::run(&config, CancellationToken::new()) {
            Ok(report) if report.completed == 1 => return,
            outcome => assert!(
                Instant::now() < deadline,
                "{url} not serving after 20 s: {:?}\n{}",
                outcome
                    .map_err(|err| format!("{err:#}"))
                    .map(|report| report.to_string()),
                server.log_text()
            ),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `REQUESTS` requests per protocol and checks every one of them.
fn load_every_protocol(url: &str, protos: &[Proto], tls: TlsOptions, server: &Server) {
    wait_serving(url, &tls, server);
    for &proto in protos {
        let mut config = LoadConfig::new(Target::parse(url).unwrap());
        config.proto = proto;
        config.connections = 4;
        config.streams = if proto == Proto::H1 { 1 } else { 8 };
        config.threads = 2;
        config.requests = Some(REQUESTS);
        config.tls = tls.clone();
        config.request_timeout = Duration::from_secs(10);
        let report = h3lab_load::run(&config, CancellationToken::new())
            .unwrap_or_else(|err| panic!("{proto} {url}: {err:#}\n{}", server.log_text()));
        check_report(proto, &report);
        eprintln!(
            "{proto} {url}: {} responses, {} connections, {:.0} req/s",
            report.completed, report.connections_opened, report.requests_per_sec
        );
    }
}

fn check_report(proto: Proto, report: &LoadReport) {
    assert_eq!(report.completed, REQUESTS, "{proto}\n{report}");
    assert_eq!(report.failed, 0, "{proto}\n{report}");
    assert_eq!(
        report.status_counts.get(&200),
        Some(&REQUESTS),
        "{proto}\n{report}"
    );
    assert_eq!(
        report.body_bytes,
        REQUESTS * BODY_BYTES as u64,
        "{proto}\n{report}"
    );
}

#[test]
fn caddy_h1_h2_h3() {
    let Some(caddy) = h3lab_testenv::caddy() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = site(dir.path());
    let [port, http_port] = free_ports();
    let caddyfile = dir.path().join("Caddyfile");
    std::fs::write(
        &caddyfile,
        format!(
            "{{\n\tlocal_certs\n\tskip_install_trust\n\tadmin off\n\tpersist_config off\n\
             \tauto_https disable_redirects\n\thttp_port {http_port}\n}}\n\
             https://127.0.0.1:{port} {{\n\ttls internal\n\troot * {}\n\tfile_server\n}}\n",
            root.display()
        ),
    )
    .unwrap();
    let mut command = Command::new(caddy);
    command
        .args(["run", "--adapter", "caddyfile", "--config"])
        .arg(&caddyfile)
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"));
    let mut server = Server::spawn(command, dir.path().join("caddy.log"));
    server.wait_listening(port);
    // `tls internal` signs with Caddy's own throw-away CA.
    let tls = TlsOptions {
        insecure: true,
        ca_file: None,
    };
    let url = format!("https://127.0.0.1:{port}/file1000");
    load_every_protocol(&url, &[Proto::H1, Proto::H2, Proto::H3], tls, &server);
}

#[test]
fn nginx_h1_h2_with_connections_closed_every_100_requests() {
    let Some(nginx) = h3lab_testenv::nginx() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = site(dir.path());
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let [port] = free_ports();
    let d = dir.path().display();
    // keepalive_requests 100: nginx ends each connection (Connection: close
    // on h1, GOAWAY on h2) many times in one run; none may cost a request.
    let config = format!(
        "worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\nevents {{}}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  keepalive_requests 100;\n\
         \x20 server {{\n    listen 127.0.0.1:{port} ssl http2;\n    ssl_certificate {};\n\
         \x20   ssl_certificate_key {};\n    root {};\n  }}\n}}\n",
        cert.display(),
        key.display(),
        root.display()
    );
    let config_path = dir.path().join("nginx.conf");
    std::fs::write(&config_path, config).unwrap();
    // Workers run as nobody when started as root: let them read the site.
    let status = Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let mut command = Command::new(nginx);
    command
        .arg("-c")
        .arg(&config_path)
        .args(["-g", "daemon off;"]);
    let mut server = Server::spawn(command, dir.path().join("nginx.log"));
    server.wait_listening(port);
    let tls = TlsOptions {
        insecure: false,
        ca_file: Some(cert),
    };
    let url = format!("https://127.0.0.1:{port}/file1000");
    load_every_protocol(&url, &[Proto::H1, Proto::H2], tls, &server);
}
