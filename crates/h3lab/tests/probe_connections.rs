//! End-to-end: `h3lab probe connections` holds 100 and then 1,000 idle
//! connections per protocol to `h3lab serve`, then opens a request on
//! each: the server counts every one open, each costs it memory, and
//! nothing is left behind: no connection, server or namespace. The same
//! for nginx through `--server-cmd`, idle only. Needs root (skips with a
//! message otherwise; fails instead under CI), and nginx for its test.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{assert_refused, namespaces_left, run_probe, EXE};
use serde_json::Value;

/// Three protocols of 1,000 handshakes each on a debug build, with
/// margin for a loaded machine.
const RUN_LIMIT: Duration = Duration::from_secs(240);

/// Runs `h3lab probe connections` with `args` until it ends; its JSON
/// report and what it printed. Fails if it leaves a namespace or a
/// process behind (one whose command line names the run's directory).
fn run_connections(args: &[&str]) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("connections.json");
    let mut command = Command::new(EXE);
    command
        .args(["probe", "connections"])
        .args(args)
        .arg("--json")
        .arg(&json)
        // The server's certificate and configuration go under the test's
        // own directory: a server left running would name it on its
        // command line.
        .env("TMPDIR", dir.path());
    let output = dir.path().join("out");
    let probed = run_probe(command, "h3lab probe connections", &output, RUN_LIMIT);
    assert!(!namespaces_left(probed.pid), "namespaces left behind");
    let marker = dir.path().to_string_lossy().into_owned();
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
        .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
        .filter(|cmdline| cmdline.contains(&marker))
        .collect();
    assert!(left.is_empty(), "processes left behind: {left:?}");
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (report, probed.printed)
}

/// The server's count of the connections held at each idle step.
fn held_at_server(result: &Value) -> Vec<u64> {
    (result["idle"].as_array().unwrap().iter())
        .map(|r| r["server_connections"].as_u64().unwrap())
        .collect()
}

#[test]
fn a_thousand_connections_per_protocol_each_cost_the_server_memory_and_leave_nothing() {
    if !h3lab_testenv::root() {
        return;
    }
    let (report, printed) = run_connections(&["--counts", "100,1000"]);
    assert_eq!(report["schema"], "h3lab.connections/1");
    let protocols = report["protocols"].as_array().unwrap();
    assert_eq!(protocols.len(), 3, "{report:#}");
    for result in protocols {
        let name = result["protocol"].as_str().unwrap();
        let idle = result["idle"].as_array().unwrap();
        assert_eq!(held_at_server(result), [100, 1000], "{name}: {result:#}");
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
}

/// nginx, started by scripts/peer-server.sh as the `servers` preset starts
/// it: its connections are counted as sockets in its namespace, and its
/// workers go with it.
#[test]
fn a_server_command_is_measured_idle_and_stopped_with_its_workers() {
    if !h3lab_testenv::root() || h3lab_testenv::nginx().is_none() {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/peer-server.sh");
    let command = format!("{script} nginx {{ip}} {{port}} {{site}} {{cert}} {{key}}");
    let args = [
        "--protocols",
        "h1,h2",
        "--counts",
        "50,600",
        "--server-cmd",
        &command,
    ];
    let (report, printed) = run_connections(&args);
    assert!(report["server"]
        .as_str()
        .unwrap()
        .contains("peer-server.sh nginx"));
    for result in report["protocols"].as_array().unwrap() {
        let name = result["protocol"].as_str().unwrap();
        // Over nginx's default of 512 worker connections: the probe
        // raised it.
        assert_eq!(held_at_server(result), [50, 600], "{name}: {result:#}");
        assert_eq!(result["active"], Value::Array(Vec::new()), "{result:#}");
        let rss = result["idle_per_connection"]["rss_bytes"].as_f64().unwrap();
        assert!(rss > 1000.0, "{name}: {rss} B");
        assert!(printed.contains(&format!("{name}: idle ")), "{printed}");
    }
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
