//! A fair fight on TCP: on the same emulated path, `h3lab serve`'s HTTP/2
//! is at least as fast as nginx's (Debian's package, started by the suite's
//! `server_cmd`) to the first byte of a large response and for 2 MB and
//! 10 MB downloads, and that first byte takes one round trip.

mod common;

use std::path::Path;
use std::process::Command;

use h3lab_results::bench::{CellRecord, Outcome, Results};

use common::{bench, results};

/// The path's round trip, in ms (broadband's, with no loss so the two
/// servers are compared on their own behaviour, not on where losses fell).
const RTT_MS: f64 = 20.0;

/// "At least as fast": h3lab's median may exceed nginx's by this share at
/// most. Both run the same kernel TCP, so what remains between them is
/// scheduling noise; a server-side handicap such as a first byte a round
/// trip late shows as 100 %. 5 % was too thin for a shared 2-core machine
/// (a 2 MB download medianed 0.335 s against nginx's 0.316 s, +6 %, in 1
/// of 3 CI runs here); the precise ratio is the `servers` preset's job.
const TOLERANCE: f64 = 0.20;

/// Rounds; each runs one repetition against h3lab, then one against nginx,
/// so that a passing load on the machine (the Chromium test before this
/// one leaves some) falls on both servers alike, not on whichever ran first.
const ROUNDS: usize = 3;

const SUITE: &str = r#"
name = "h2-cross-check"
protocols = ["h2"]
profiles = ["broadband-clean"]
repetitions = 1
[[profile]]
name = "broadband-clean"
base = "broadband"
loss = "0%"
[[workload]]
kind = "download"
name = "download-2MB"
size = "2MB"
[[workload]]
kind = "download"
name = "download-10MB"
size = "10MB"
"#;

#[test]
fn h3lab_h2_is_as_fast_as_nginx_h2_and_its_first_byte_takes_one_round_trip() {
    if !h3lab_testenv::root() {
        return;
    }
    let Some(nginx) = h3lab_testenv::nginx() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = nginx_config(dir.path());
    let nginx_target = format!(
        "[target]\nserver_cmd = \"{} -c {} -g 'daemon off;'\"\nport = 443\n",
        nginx.display(),
        config.display()
    );
    let nginx_suite = format!("{SUITE}\n{nginx_target}");
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        ours.push(run(&dir.path().join(format!("h3lab-{round}")), SUITE));
        theirs.push(run(
            &dir.path().join(format!("nginx-{round}")),
            &nginx_suite,
        ));
    }
    assert!(
        ours[0].environment.server_tuning.is_some(),
        "h3lab serve's tuning is recorded"
    );
    assert!(
        theirs[0].environment.server_tuning.is_none(),
        "nginx's tuning is unknown, not guessed"
    );
    for workload in ["download-2MB", "download-10MB"] {
        let (our_time, their_time) = (
            median(&ours, workload, download_s),
            median(&theirs, workload, download_s),
        );
        assert!(
            our_time <= their_time * (1.0 + TOLERANCE),
            "{workload}: h3lab h2 took {our_time:.3} s, nginx h2 {their_time:.3} s (medians of {ROUNDS})"
        );
        let (our_first, their_first) = (
            median(&ours, workload, first_byte_ms),
            median(&theirs, workload, first_byte_ms),
        );
        eprintln!(
            "{workload}: download h3lab {our_time:.3} s, nginx {their_time:.3} s; \
             first byte h3lab {our_first:.2} ms, nginx {their_first:.2} ms"
        );
        assert!(
            our_first <= their_first * (1.0 + TOLERANCE),
            "{workload}: h3lab h2's first byte after {our_first:.1} ms, nginx's after {their_first:.1} ms"
        );
        assert!(
            our_first <= 1.5 * RTT_MS,
            "{workload}: h3lab h2's first byte after {our_first:.1} ms, more than one {RTT_MS} ms round trip"
        );
    }
}

/// Runs `h3lab bench` on `suite`, writing into `out`, and returns its results.
fn run(out: &Path, suite: &str) -> Results {
    let (output, _) = bench(suite, out);
    assert!(
        output.status.success(),
        "bench failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    results(out)
}

/// The median over the rounds' runs of a workload's `figure`.
fn median(runs: &[Results], workload: &str, figure: fn(&CellRecord) -> f64) -> f64 {
    let mut values: Vec<f64> = runs
        .iter()
        .flat_map(|results| &results.cells)
        .filter(|cell| cell.workload == workload)
        .inspect(|cell| assert_eq!(cell.outcome, Outcome::Ok, "cell failed: {cell:?}"))
        .map(figure)
        .collect();
    assert_eq!(values.len(), ROUNDS, "{workload}: one repetition per round");
    values.sort_by(f64::total_cmp);
    values[ROUNDS / 2]
}

fn download_s(cell: &CellRecord) -> f64 {
    cell.metric.samples[0]
}

/// From the request's send to the response's first byte, after the handshake.
fn first_byte_ms(cell: &CellRecord) -> f64 {
    common::load_report(cell).ttfb_us.quantile(0.5) as f64 / 1000.0
}

/// An nginx configuration serving `/bytes/{n}` for both sizes over TLS 1.3
/// with HTTP/2 on port 443 of the server namespace. Settings are Debian's
/// defaults (`sendfile`, `tcp_nopush`, a 16 KB `ssl_buffer_size`).
fn nginx_config(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("www");
    std::fs::create_dir_all(root.join("bytes")).unwrap();
    for size in [2_000_000usize, 10_000_000] {
        let body: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        std::fs::write(root.join("bytes").join(size.to_string()), body).unwrap();
    }
    let certified = rcgen::generate_simple_self_signed(vec!["h3lab".to_string()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let d = dir.display();
    let config = format!(
        "worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\nevents {{}}\n\
         http {{\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n\
         \x20 client_body_temp_path {d}/body;\n  default_type application/octet-stream;\n\
         \x20 server {{\n    listen 443 ssl http2;\n    ssl_protocols TLSv1.3;\n\
         \x20   ssl_certificate {};\n    ssl_certificate_key {};\n    root {};\n  }}\n}}\n",
        cert.display(),
        key.display(),
        root.display()
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, config).unwrap();
    // Workers run as nobody when started as root: let them read the files.
    let status = Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
    path
}
