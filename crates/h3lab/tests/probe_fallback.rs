//! End-to-end: `h3lab probe fallback` loads a generated site with the
//! `auto` protocol on a path with UDP open and one with UDP blocked. With
//! UDP open, the first visit stays on h2, the first visit to the site with
//! a DNS `HTTPS` record goes over h3, and the repeat visit ends on h3;
//! with UDP blocked, every request goes over h2, none fails, and the
//! fallback delay is reported. The path's namespaces, resolver file and
//! DNS servers are gone afterwards. Needs root (skips with a message
//! otherwise; fails instead under CI).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{assert_refused, interrupt, namespaces_left, run_probe, EXE};
use h3lab_supervise::{Group, Supervised};
use serde_json::Value;

/// Two policies × 2 repetitions × 7 page loads (two of them unmeasured
/// first visits) at 80 ms, plus paths.
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// Every visit a policy runs.
const VISITS: [&str; 5] = [
    "h2-only",
    "first",
    "first-with-https-record",
    "repeat",
    "repeat-quic-known",
];

fn visit<'a>(report: &'a Value, udp: &str, visit: &str) -> &'a Value {
    let policy = report["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["udp"] == udp)
        .unwrap_or_else(|| panic!("no UDP {udp} entry in {report:#}"));
    policy["visits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["visit"] == visit)
        .unwrap_or_else(|| panic!("no {visit} visit with UDP {udp} in {policy:#}"))
}

/// The protocols a visit's requests went over, and that none failed.
/// The visit's record, checked complete: two loads, none failed.
fn complete<'a>(report: &'a Value, udp: &str, name: &str) -> &'a Value {
    let entry = visit(report, udp, name);
    assert_eq!(entry["failed"], Value::Array(vec![]), "{entry:#}");
    assert_eq!(entry["load_ms"].as_array().unwrap().len(), 2, "{entry:#}");
    entry
}

fn protocols(report: &Value, udp: &str, name: &str) -> Vec<String> {
    complete(report, udp, name)["requests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn auto_ends_on_h3_with_udp_open_and_on_h2_with_no_failure_when_udp_is_blocked() {
    if !h3lab_testenv::root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("fallback.json");
    let mut command = Command::new(EXE);
    command
        // 80 ms of RTT: QUIC's one-round-trip handshake beats TCP and
        // TLS's two by 80 ms, so the race's winner does not depend on the
        // machine's load. No loss: this checks the fallback's rules. With
        // broadband's 0.1 %, CI once read the delay as -257 ms [-804,
        // +290]: one load of the two-load h2-only baseline came out over
        // half a second slow. A loss-induced retransmission timeout does
        // that (a lost SYN-ACK alone costs TCP 1 s); four runs here on a
        // quiet machine never did (loads 720-830 ms), so it is the likely
        // cause, not a proven one.
        .args([
            "probe",
            "fallback",
            "--profile",
            "broadband",
            "--rtt",
            "80ms",
            "--loss",
            "0%",
        ])
        .args(["--policies", "open,blocked", "--repetitions", "2"])
        .arg("--json")
        .arg(&json);
    let probed = run_probe(
        command,
        "h3lab probe fallback",
        &dir.path().join("out"),
        RUN_LIMIT,
    );
    let printed = probed.printed;
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["schema"], "h3lab.fallback/1");

    assert_eq!(protocols(&report, "open", "h2-only"), ["h2"]);
    assert_eq!(protocols(&report, "open", "first"), ["h2"]);
    assert_eq!(
        protocols(&report, "open", "first-with-https-record"),
        ["h3"]
    );
    assert_eq!(protocols(&report, "open", "repeat"), ["h3"]);
    assert_eq!(protocols(&report, "open", "repeat-quic-known"), ["h3"]);
    for name in VISITS {
        assert_eq!(protocols(&report, "blocked", name), ["h2"], "{name}");
    }
    // With the record and UDP blocked, the first visit's delay against
    // h2 only is reported, with no interval: 2 repetitions are too few
    // for a call at 5 %, and the report says so rather than guess.
    let record = visit(&report, "blocked", "first-with-https-record");
    let delay = &record["delay_vs_h2_ms"];
    assert!(delay["estimate"].is_f64(), "{record:#}");
    assert!(delay["interval"].is_null(), "{record:#}");
    assert_eq!(
        delay["repetitions"],
        serde_json::json!([2, 2]),
        "{record:#}"
    );
    assert!(printed.contains("too few repetitions"), "{printed}");
    assert!(printed.contains("auto: first, HTTPS record"), "{printed}");
    // Once QUIC has worked on the network, TCP waits 300 ms behind a QUIC
    // attempt that never answers: the page is that much later.
    let known = visit(&report, "blocked", "repeat-quic-known");
    let delay = known["delay_vs_h2_ms"]["estimate"].as_f64().unwrap();
    assert!(delay > 100.0, "{known:#}");
    let verdict = report["verdict"].as_str().unwrap();
    assert!(verdict.contains("0 load(s) failed"), "{verdict}");
    assert!(printed.contains(verdict), "{printed}");
    assert!(verdict.contains("with a DNS HTTPS record"), "{verdict}");
    assert!(!namespaces_left(probed.pid), "the probe left namespaces");
    assert_eq!(resolver_files_left(probed.pid), Vec::<String>::new());
}

/// The client resolver directories (/etc/netns/NAMESPACE) the finished
/// h3lab process `pid` left; other runs' have other pids.
fn resolver_files_left(pid: u32) -> Vec<String> {
    let prefix = format!("h3lab-{pid}-");
    let Ok(entries) = std::fs::read_dir("/etc/netns") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with(&prefix))
        .collect()
}

#[test]
fn ctrl_c_keeps_the_policies_done_and_leaves_no_path_resolver_or_dns_server() {
    if !h3lab_testenv::root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("interrupted.json");
    let mut command = Command::new(EXE);
    command
        .args([
            "probe",
            "fallback",
            "--profile",
            "broadband",
            "--loss",
            "0%",
        ])
        .args(["--policies", "open,blocked", "--repetitions", "2", "--json"])
        .arg(&json)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut process = Supervised::spawn(command, Group::Own, "h3lab probe fallback").unwrap();
    let pid = process.id();
    let mut lines = BufReader::new(process.take_stdout().unwrap()).lines();
    let header = lines.next().unwrap().unwrap();
    assert!(header.starts_with("probe fallback:"), "{header}");
    // Interrupt once UDP open is done: during the blocked path's run.
    let open_done = lines.next().unwrap().unwrap();
    assert_eq!(open_done, "UDP open");
    // Keep reading, so the probe never writes into a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    interrupt(&mut process, RUN_LIMIT);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // Which protocol wins a first visit's race is the other test's: here
    // a busy machine may hand it to TCP (CI's run once saw h2 beside h3).
    for name in VISITS {
        complete(&report, "open", name);
    }
    assert!(!namespaces_left(pid), "the probe left namespaces");
    assert_eq!(resolver_files_left(pid), Vec::<String>::new());
}

#[test]
fn bad_input_names_the_fix_without_running_anything() {
    let cases: [(&[&str], &str); 4] = [
        (&["--policies", "sometimes"], "throttle:RATE"),
        (&["--udp", "blocked"], "--policies"),
        (&["--repetitions", "1"], "at least 2"),
        (&["--site", "huge"], "huge"),
    ];
    assert_refused(&["probe", "fallback"], &cases);
}
