//! End-to-end: `h3lab probe connections` holds 100 and then 1,000 idle
//! connections per protocol to `h3lab serve`, then opens a request on
//! each: the server counts every one open, each costs it memory, and
//! nothing is left behind: no connection, server or namespace. Needs root
//! (skips with a message otherwise; fails instead under CI).

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{assert_refused, namespaces_left, EXE};
use linkem::supervise::{Group, Supervised};
use serde_json::Value;

/// Three protocols of 1,000 handshakes each on a debug build, with
/// margin for a loaded machine.
const RUN_LIMIT: Duration = Duration::from_secs(240);

#[test]
fn a_thousand_connections_per_protocol_each_cost_the_server_memory_and_leave_nothing() {
    if !h3lab_testenv::root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("connections.json");
    let mut command = Command::new(EXE);
    command
        .args(["probe", "connections", "--counts", "100,1000", "--json"])
        .arg(&json)
        // The server's certificate goes under the test's own directory:
        // a server left running would name it on its command line.
        .env("TMPDIR", dir.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut probe = Supervised::spawn(command, Group::Own, "h3lab probe connections").unwrap();
    let stdout = probe.take_stdout().unwrap();
    let printed = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap());
    let exit = probe.wait_until(
        Some(Instant::now() + RUN_LIMIT),
        &std::sync::atomic::AtomicBool::new(false),
        Duration::from_secs(2),
    );
    let Some(exit) = exit else {
        probe.stop(Duration::from_secs(5));
        panic!("the probe ran past {RUN_LIMIT:?}");
    };
    let printed = printed.join().unwrap();
    assert_eq!(exit.code, 0, "{printed}{}", probe.last_stderr_line());

    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["schema"], "h3lab.connections/1");
    let protocols = report["protocols"].as_array().unwrap();
    assert_eq!(protocols.len(), 3, "{report:#}");
    for result in protocols {
        let name = result["protocol"].as_str().unwrap();
        let idle = result["idle"].as_array().unwrap();
        let held: Vec<u64> = (idle.iter())
            .map(|r| r["server_connections"].as_u64().unwrap())
            .collect();
        assert_eq!(held, [100, 1000], "{name}: {result:#}");
        let active = &result["active"][0];
        assert_eq!(active["server_connections"], 1000, "{name}: {result:#}");
        if name != "h3" {
            // Each TCP connection is a socket in the server's namespace.
            assert!(
                idle[1]["tcp_sockets"].as_u64().unwrap() >= 1000,
                "{result:#}"
            );
        }
        for state in ["idle_per_connection", "active_per_connection"] {
            let rss = result[state]["rss_bytes"].as_f64().unwrap();
            assert!(rss > 1000.0, "{name} {state}: {rss} B");
        }
        assert!(
            printed.contains(&format!("{name}: idle ")),
            "{name} missing from the summary:\n{printed}"
        );
    }
    assert!(!namespaces_left(probe.id()), "namespaces left behind");
    let marker = dir.path().to_string_lossy().into_owned();
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
        .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
        .filter(|cmdline| cmdline.contains(&marker))
        .collect();
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[test]
fn bad_input_names_the_fix_without_running_anything() {
    let cases: [(&[&str], &str); 4] = [
        (&["--counts", "1000,100"], "grow"),
        (&["--counts", "100,50000"], "at most 20000"),
        (&["--protocols", "auto"], "auto is a client's choice"),
        (&["--concurrency", "0"], "at least 1"),
    ];
    assert_refused(&["probe", "connections"], &cases);
}
