//! End-to-end: `h3lab probe migrate` moves the client to a new port and
//! to a new address mid-stream. HTTP/3 must keep its one connection with
//! no failed request and a validated path; HTTP/2 must show its TCP
//! connection breaking and being replaced. Needs root (skips with a
//! message otherwise; fails instead under CI).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{assert_refused, interrupt, run_probe, EXE};
use h3lab_supervise::{Group, Supervised};
use serde_json::Value;

/// Two protocols, 3 s of requests each, plus path and server start-up.
/// 50 requests/s for 3 s.
const REQUESTS: u64 = 150;
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// Runs `h3lab probe migrate --change CHANGE` for h2 and h3 and returns
/// its JSON report; panics with the output when it fails or overruns.
/// The switch comes at 1 s of 3, so a TCP connection found dead by the
/// 1 s request timeout still has a second in which to reconnect.
fn migrate(change: &str, dir: &Path) -> Value {
    let json = dir.join(format!("{change}.json"));
    let output = dir.join(format!("{change}.out"));
    let mut command = Command::new(EXE);
    command
        .args(["probe", "migrate", "--change", change, "--proto", "h2,h3"])
        .args(["--rate", "50", "--duration", "3s", "--switch-at", "1s"])
        .arg("--json")
        .arg(&json);
    run_probe(command, "h3lab probe migrate", &output, RUN_LIMIT);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["schema"], "h3lab.migrate/1");
    assert_eq!(report["change"], change);
    report
}

fn protocol<'a>(report: &'a Value, proto: &str) -> &'a Value {
    report["protocols"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["proto"] == proto)
        .unwrap_or_else(|| panic!("no {proto} entry in {report:#}"))
}

fn count(entry: &Value, field: &str) -> u64 {
    entry[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} missing in {entry:#}"))
}

/// Every request is counted once, as a success or a failure by kind.
fn assert_counts_add_up(entry: &Value) {
    assert_eq!(count(entry, "requests"), REQUESTS, "{entry:#}");
    assert_eq!(
        count(entry, "succeeded") + count(entry, "failed"),
        REQUESTS,
        "{entry:#}"
    );
    let by_kind: u64 = entry["failed_by_kind"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(by_kind, count(entry, "failed"), "{entry:#}");
}

fn assert_h3_migrated(report: &Value) {
    let h3 = protocol(report, "h3");
    assert_counts_add_up(h3);
    assert_eq!(count(h3, "failed"), 0, "h3 lost requests: {h3:#}");
    assert_eq!(count(h3, "connections_used"), 1, "{h3:#}");
    assert_eq!(count(h3, "connections_broken"), 0, "{h3:#}");
    assert_eq!(h3["path_validated"], true, "{h3:#}");
    assert!(count(h3, "path_challenges_received") >= 1, "{h3:#}");
    assert!(count(h3, "path_responses_sent") >= 1, "{h3:#}");
    assert_eq!(h3["survived"], true);
    assert_eq!(
        count(h3, "server_migrations"),
        1,
        "the server saw one move: {h3:#}"
    );
    assert_eq!(h3["break_detected_after_ms"], Value::Null);
}

/// The TCP connection broke after the switch and a new one replaced it.
fn assert_h2_broke_and_reconnected(report: &Value) {
    let h2 = protocol(report, "h2");
    assert_counts_add_up(h2);
    assert!(count(h2, "connections_broken") >= 1, "{h2:#}");
    assert!(count(h2, "connections_used") >= 2, "{h2:#}");
    assert!(h2["break_detected_after_ms"].as_f64().is_some(), "{h2:#}");
    assert!(h2["reconnected_after_ms"].as_f64().is_some(), "{h2:#}");
    assert_eq!(h2["path_validated"], Value::Null);
    assert_eq!(
        count(h2, "server_migrations"),
        0,
        "TCP cannot migrate: {h2:#}"
    );
    assert_eq!(h2["survived"], false);
}

fn claim<'a>(report: &'a Value, study: &str) -> &'a Value {
    report["claims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|claim| claim["study"] == study)
        .unwrap()
}

#[test]
fn h3_keeps_its_connection_across_a_port_change_and_tcp_is_reset() {
    if !h3lab_testenv::root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let report = migrate("port", dir.path());
    assert_h3_migrated(&report);
    assert_h2_broke_and_reconnected(&report);
    assert_eq!(claim(&report, "A")["ours"], "h2 no, h3 yes");
    assert_eq!(claim(&report, "A")["same_direction"], true);
}

#[test]
fn h3_keeps_its_connection_across_an_address_change_and_tcp_times_out() {
    if !h3lab_testenv::root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let report = migrate("address", dir.path());
    assert_h3_migrated(&report);
    assert_h2_broke_and_reconnected(&report);
    let h2 = protocol(&report, "h2");
    // The old address is gone: nothing answers, so requests on the dead
    // connection time out.
    assert!(count(h2, "failed") >= 1, "{h2:#}");
    assert!(
        h2["failed_by_kind"]["timeout"].as_u64() >= Some(1),
        "{h2:#}"
    );
    let resets = claim(&report, "B");
    assert_eq!(resets["ours_change_percent"], -100.0, "{resets:#}");
    assert_eq!(resets["same_direction"], true);
}

#[test]
fn bad_input_names_the_fix_without_running_anything() {
    let cases: [(&[&str], &str); 3] = [
        (&["--change", "wifi"], "`port`"),
        (&["--profile", "moon"], "choose one of"),
        (&["--switch-at", "9s"], "--switch-at"),
    ];
    assert_refused(&["probe", "migrate"], &cases);
}

/// Processes whose environment holds `marker`: the probe's children
/// inherit it, so none may outlive the probe.
fn processes_marked(marker: &str) -> Vec<String> {
    let needle = marker.as_bytes();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| {
            let pid = entry.ok()?.file_name().into_string().ok()?;
            pid.parse::<u32>().ok()?;
            let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            environ
                .split(|&byte| byte == 0)
                .any(|variable| variable == needle)
                .then_some(pid)
        })
        .collect()
}

#[test]
fn ctrl_c_stops_the_probe_keeps_what_finished_and_leaves_nothing_behind() {
    if !h3lab_testenv::root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("interrupted.json");
    let marker = format!("H3LAB_MIGRATE_TEST={}", std::process::id());
    let (name, value) = marker.split_once('=').unwrap();
    let mut command = Command::new(EXE);
    command
        .args([
            "probe", "migrate", "--change", "address", "--proto", "h2,h3",
        ])
        .args(["--duration", "2s", "--switch-at", "1s", "--json"])
        .arg(&json)
        .env(name, value)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut process = Supervised::spawn(command, Group::Own, "h3lab probe migrate").unwrap();
    let mut lines =
        std::io::BufRead::lines(std::io::BufReader::new(process.take_stdout().unwrap()));
    let header = lines.next().unwrap().unwrap();
    assert!(header.starts_with("probe migrate:"), "{header}");
    // Interrupt once h2 is done: during h3's set-up or run.
    let h2_done = lines.next().unwrap().unwrap();
    assert!(h2_done.starts_with("h2:"), "{h2_done}");
    // Keep reading, so the probe never writes into a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    // The probe carries the marker too; its namespaces are named after it.
    let marked_while_running = processes_marked(&marker);
    assert!(!marked_while_running.is_empty());
    interrupt(&mut process, RUN_LIMIT);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["schema"], "h3lab.migrate/1");
    assert_eq!(protocol(&report, "h2")["requests"], 100, "h2's run is kept");
    assert_eq!(processes_marked(&marker), Vec::<String>::new());
    let namespaces = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let namespaces = String::from_utf8_lossy(&namespaces.stdout);
    for pid in marked_while_running {
        let prefix = format!("h3lab-{pid}-");
        assert!(!namespaces.contains(&prefix), "left behind: {namespaces}");
    }
}
