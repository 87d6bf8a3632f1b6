//! An in-process h3lab server on 127.0.0.1:0 and configs that point at it.
#![allow(dead_code)] // each test binary uses a different part of this helper

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use h3lab_client::{Target, TlsOptions};
use h3lab_load::LoadConfig;
use h3lab_results::Proto;
use h3lab_server::{RunningServer, ServerConfig};

pub const PROTOS: [Proto; 3] = [Proto::H1, Proto::H2, Proto::H3];

pub struct TestServer {
    runtime: Option<tokio::runtime::Runtime>,
    server: Option<RunningServer>,
    addr: SocketAddr,
    ca: tempfile::NamedTempFile,
}

impl TestServer {
    pub fn start() -> TestServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let config = ServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            ..ServerConfig::default()
        };
        let server = runtime.block_on(h3lab_server::start(config)).unwrap();
        let mut ca = tempfile::NamedTempFile::new().unwrap();
        ca.write_all(server.cert_pem().unwrap().as_bytes()).unwrap();
        TestServer {
            addr: server.local_addr(),
            runtime: Some(runtime),
            server: Some(server),
            ca,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.addr.port())
    }

    /// A quiet config trusting the server's certificate via `--ca`.
    pub fn config(&self, path: &str, proto: Proto) -> LoadConfig {
        let mut config = LoadConfig::new(Target::parse(&self.url(path)).unwrap());
        config.proto = proto;
        config.connections = 2;
        config.threads = 2;
        config.tls = TlsOptions {
            insecure: false,
            ca_file: Some(self.ca.path().to_path_buf()),
        };
        config.request_timeout = Duration::from_secs(5);
        config.connect_timeout = Duration::from_secs(2);
        config
    }

    /// Requests answered so far, over all protocols.
    pub fn answered(&self) -> u64 {
        let server = self.server.as_ref().expect("the server is running");
        server.requests_served().total()
    }

    /// Returns once the server has answered `count` requests in all;
    /// panics naming the wait if that takes over 30 s.
    pub fn wait_until_answered(&self, count: u64) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while self.answered() < count {
            assert!(
                std::time::Instant::now() < deadline,
                "the server answered {} of {count} requests within 30 s",
                self.answered()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Like a crash: every server task stops at once and QUIC sends no
    /// CONNECTION_CLOSE.
    pub fn kill(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        self.server.take();
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
    }
}
