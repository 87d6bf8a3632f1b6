//! Shared pieces of the binary's end-to-end tests: a running `h3lab serve`.

#![allow(dead_code)] // each test binary uses its own subset

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use linkem::supervise::{Group, Supervised};

pub const EXE: &str = env!("CARGO_BIN_EXE_h3lab");

/// `h3lab serve` on an ephemeral loopback port; stopped on drop.
pub struct Server {
    /// Killed and reaped on drop.
    _process: Supervised,
    pub addr: SocketAddr,
    pub spki: String,
    pub cert: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    /// `h3lab serve` with `args` added to its defaults.
    pub fn start(args: &[&OsStr]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("cert.pem");
        let mut command = Command::new(EXE);
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--write-cert"])
            .arg(&cert)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut process = Supervised::spawn(command, Group::Own, "h3lab serve").unwrap();
        let mut lines = BufReader::new(process.take_stdout().unwrap()).lines();
        // The banner's `tuning:` lines come first.
        let mut field = |prefix: &str| -> String {
            let line = lines
                .by_ref()
                .map(|line| line.unwrap())
                .find(|line| !line.starts_with("tuning:"))
                .expect("server banner");
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
            _process: process,
            addr,
            spki,
            cert,
            _dir: dir,
        }
    }
}
