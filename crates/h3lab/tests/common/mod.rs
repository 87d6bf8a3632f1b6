//! Shared pieces of the binary's end-to-end tests: a running `h3lab serve`
//! and the checks that decide whether an environment-dependent test runs.

#![allow(dead_code)] // each test binary uses its own subset

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub const EXE: &str = env!("CARGO_BIN_EXE_h3lab");

/// `h3lab serve` on an ephemeral loopback port; stopped on drop.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    pub spki: String,
    pub cert: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    pub fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("cert.pem");
        let mut child = Command::new(EXE)
            .args(["serve", "--listen", "127.0.0.1:0", "--write-cert"])
            .arg(&cert)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start h3lab serve");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut field = |prefix: &str| -> String {
            let line = lines.next().expect("server banner").unwrap();
            line.strip_prefix(prefix)
                .unwrap_or_else(|| panic!("banner line {line:?}"))
                .trim()
                .to_string()
        };
        let listening = field("listening:");
        let spki = field("spki-sha256:");
        let addr = listening
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        // Keep draining stdout so the server never writes into a closed pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Server {
            child,
            addr,
            spki,
            cert,
            _dir: dir,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True when running as root; otherwise prints why the test is skipped.
pub fn root_or_skip(test: &str) -> bool {
    let root = nix::unistd::geteuid().is_root();
    if !root {
        eprintln!("skipping {test}: needs root for network namespaces (CI runs as root)");
    }
    root
}

/// Chromium's path; in CI its absence is a failure, elsewhere a skip.
pub fn chromium_or_skip() -> Option<String> {
    let path = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    if path.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "Chromium is missing: `apt-get install chromium` (.ci/run does)"
        );
        eprintln!("skipping: Chromium is not installed (apt-get install chromium)");
    }
    path.map(str::to_string)
}
