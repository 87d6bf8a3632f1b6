//! `collect` against a stand-in for the Kubernetes API: it waits for the
//! Job to finish, reads each pod's report from its log, and names the pod
//! that left none. The stand-in answers the requests the real API server
//! would get (the same paths and label selector), with the two reports of
//! a real 3-shard run (`fixtures/`) in the logs of pods 0 and 1.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use h3lab_dist::{collect, Client};
use h3lab_results::load::{merge_workers, LoadReport};
use http::{Request, Response, StatusCode};
use kube::client::Body;
use serde_json::json;

const SHARD_0: &str = include_str!("fixtures/shard-0-of-3.json");
const SHARD_1: &str = include_str!("fixtures/shard-1-of-3.json");

fn pod(index: u32, phase: &str) -> serde_json::Value {
    json!({
        "metadata": {
            "name": format!("h3lab-load-{index}-x7k2p"),
            "annotations": {"batch.kubernetes.io/job-completion-index": index.to_string()},
        },
        "status": {"phase": phase},
    })
}

fn job(finished: bool) -> serde_json::Value {
    let status = if finished {
        json!({"failed": 1, "succeeded": 2,
               "conditions": [{"type": "Failed", "status": "True"}]})
    } else {
        json!({"active": 3})
    };
    json!({"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "h3lab-load", "namespace": "bench"}, "status": status})
}

/// One line of JSON, as `h3lab load --json -` prints it, among text.
fn log_with(report: &str) -> String {
    let line = LoadReport::from_json(report).unwrap().to_json_line();
    format!("https://... over h2, open model\n  requests: ...\n{line}\n")
}

/// The API server's answer to `request`; the Job is still running the
/// first time it is asked for.
fn answer(request: &Request<Body>, job_reads: &AtomicUsize) -> (StatusCode, String) {
    let path = request.uri().path();
    let query = request.uri().query().unwrap_or("");
    match path {
        "/apis/batch/v1/namespaces/bench/jobs/h3lab-load" => {
            let finished = job_reads.fetch_add(1, Ordering::SeqCst) > 0;
            (StatusCode::OK, job(finished).to_string())
        }
        "/apis/batch/v1/namespaces/bench/jobs/nothing" => (
            StatusCode::NOT_FOUND,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                   "reason": "NotFound", "code": 404, "message": "jobs \"nothing\" not found"})
            .to_string(),
        ),
        "/api/v1/namespaces/bench/pods" => {
            assert!(
                query.contains("labelSelector=batch.kubernetes.io%2Fjob-name%3Dh3lab-load"),
                "{query}"
            );
            let items = [pod(2, "Failed"), pod(1, "Succeeded"), pod(0, "Succeeded")];
            (
                StatusCode::OK,
                json!({"apiVersion": "v1", "kind": "PodList",
                                    "metadata": {}, "items": items})
                .to_string(),
            )
        }
        _ if path.ends_with("/log") => {
            assert!(query.contains("container=h3lab"), "{query}");
            let log = match path {
                "/api/v1/namespaces/bench/pods/h3lab-load-0-x7k2p/log" => log_with(SHARD_0),
                "/api/v1/namespaces/bench/pods/h3lab-load-1-x7k2p/log" => log_with(SHARD_1),
                _ => "error: --start-at 2026-11-26T11:45:20Z is 3.2 s in the past\n".to_string(),
            };
            (StatusCode::OK, log)
        }
        _ => panic!("unexpected request {} {path}?{query}", request.method()),
    }
}

fn stand_in_api() -> (Client, Arc<Mutex<Vec<String>>>) {
    let job_reads = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let service = tower::service_fn(move |request: Request<Body>| {
        let (status, body) = answer(&request, &job_reads);
        log.lock().unwrap().push(request.uri().path().to_string());
        async move {
            Ok::<_, Infallible>(
                Response::builder()
                    .status(status)
                    .body(Body::from(body.into_bytes()))
                    .unwrap(),
            )
        }
    });
    (Client::new(service, "default"), seen)
}

#[tokio::test]
async fn collect_waits_for_the_job_then_reads_each_pods_report() {
    let (client, seen) = stand_in_api();
    let mut states = Vec::new();
    let collected = collect(
        client,
        "bench",
        "h3lab-load",
        Duration::from_secs(30),
        |state| states.push(state.to_string()),
    )
    .await
    .unwrap();
    assert_eq!(states, vec!["3 pods running, 0 succeeded, 0 failed"]);
    let names: Vec<&str> = collected
        .reports
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(names, ["h3lab-load-0-x7k2p", "h3lab-load-1-x7k2p"]);
    assert_eq!(
        collected.reports[0].1,
        LoadReport::from_json(SHARD_0).unwrap()
    );
    let [why] = collected.without_report.as_slice() else {
        panic!("{:?}", collected.without_report);
    };
    assert!(
        why.contains("h3lab-load-2-x7k2p (shard 2) is Failed"),
        "{why}"
    );
    assert!(why.contains("in the past"), "{why}");
    assert_eq!(
        seen.lock().unwrap().len(),
        2 + 1 + 3,
        "two Job reads, a pod list, three logs"
    );

    let err = merge_workers(&collected.reports, false)
        .unwrap_err()
        .to_string();
    assert!(err.contains("shard(s) 2 of 3 missing"), "{err}");
    let merged = merge_workers(&collected.reports, true).unwrap();
    assert_eq!(merged.missing_shards, vec![2]);
}

#[tokio::test]
async fn a_job_that_is_not_there_is_named() {
    let (client, _) = stand_in_api();
    let err = collect(client, "bench", "nothing", Duration::from_secs(1), |_| {})
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no Job nothing in namespace bench"), "{err}");
}
