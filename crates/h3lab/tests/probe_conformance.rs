//! `h3lab probe conformance` end to end: the helper run on a resolved URL,
//! its report, and the errors a user can meet (no HTTP/3 at the URL, no
//! helper). The suite's own cases are tested in crates/conformance.

mod common;

use std::net::TcpListener;
use std::process::Command;

use common::{Server, EXE};
use h3lab_results::conformance::{ConformanceReport, Verdict, CONFORMANCE_SCHEMA};

fn probe(helper: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(EXE)
        .args(["probe", "conformance"])
        .args(args)
        .env("H3LAB_CONFORMANCE", helper)
        .output()
        .unwrap()
}

#[test]
fn the_built_in_server_passes_and_the_report_is_written() {
    let Some(helper) = h3lab_testenv::conformance_helper(std::path::Path::new(EXE)) else {
        return;
    };
    let server = Server::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("conformance.json");
    let url = format!("https://localhost:{}/bytes/10", server.addr.port());
    let resolve = format!("localhost:{}:127.0.0.1", server.addr.port());
    let output = probe(
        &helper,
        &[
            &url,
            "--resolve",
            &resolve,
            "--only",
            "qpack.",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: ConformanceReport =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.schema, CONFORMANCE_SCHEMA);
    assert_eq!(report.address, format!("127.0.0.1:{}", server.addr.port()));
    assert!(report.cases.len() >= 5);
    assert!(report
        .cases
        .iter()
        .all(|case| case.id.starts_with("qpack.")));
    // h3lab serve announces no QPACK dynamic table, so no request can
    // block on it: that case does not run, has no verdict, and is no
    // failure (the exit status above).
    let (passed, not_run): (Vec<_>, Vec<_>) =
        (report.cases.iter()).partition(|case| case.id != "qpack.blocked-streams-overflow");
    assert!(passed.iter().all(|case| case.verdict == Verdict::Pass));
    assert!(
        matches!(not_run.as_slice(), [case] if case.verdict == Verdict::Unknown),
        "{not_run:?}"
    );
    assert!(
        stdout.contains("pass  qpack.static-index-out-of-range")
            && stdout.contains(" 0 failed, 1 without a verdict"),
        "{stdout}"
    );
}

#[test]
fn a_url_without_http3_ends_with_what_it_offers() {
    let Some(helper) = h3lab_testenv::conformance_helper(std::path::Path::new(EXE)) else {
        return;
    };
    // A TCP listener that never answers, and no UDP listener on its port.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "https://127.0.0.1:{}/",
        listener.local_addr().unwrap().port()
    );
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("conformance.json");
    let json_text = json.to_str().unwrap();
    let quick = ["--timeout", "300ms", "--settle", "100ms"];
    let output = probe(
        &helper,
        &[&[url.as_str(), "--json", json_text][..], &quick].concat(),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("does not answer a plain GET over HTTP/3"),
        "{stderr}"
    );
    assert!(stderr.contains("what it offers"), "{stderr}");
    assert!(!json.exists(), "no case ran, so no report");
    // A --json path that cannot be written fails before any case.
    let bad = [url.as_str(), "--json", "/nonexistent/dir/c.json"];
    let output = probe(&helper, &[&bad[..], &quick].concat());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot write /nonexistent/dir/c.json"),
        "{stderr}"
    );
}

#[test]
fn a_missing_helper_is_named() {
    let output = probe(
        std::path::Path::new("/nonexistent/h3lab-conformance"),
        &["https://127.0.0.1:1/"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains(
            "H3LAB_CONFORMANCE is /nonexistent/h3lab-conformance, which is no executable file"
        ),
        "{stderr}"
    );
}
