//! Gathering a finished Job's worker reports through the Kubernetes API:
//! each pod prints its report as one JSON line, and its log keeps it.

use std::time::Duration;

use anyhow::Context;
use h3lab_results::load::LoadReport;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, LogParams};
use kube::{Api, Client};

use crate::manifest::{CONTAINER, INDEX_ANNOTATION, JOB_NAME_LABEL};

/// How often the Job's state is read while waiting for it.
const POLL: Duration = Duration::from_secs(2);

/// What a Job's pods left behind.
#[derive(Debug, Default)]
pub struct Collected {
    /// Each report found, named by its pod, in shard order.
    pub reports: Vec<(String, LoadReport)>,
    /// Pods that left no report, each with what is known of why.
    pub without_report: Vec<String>,
}

/// Waits up to `wait` for Job `name` to finish, then reads every pod's
/// report from its log (after `wait`, whatever they have printed: a pod
/// still running has no report yet). `progress` hears the Job's state.
pub async fn collect(
    client: Client,
    namespace: &str,
    name: &str,
    wait: Duration,
    mut progress: impl FnMut(&str),
) -> anyhow::Result<Collected> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), namespace);
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let job = jobs.get_opt(name).await?.with_context(|| {
            format!("no Job {name} in namespace {namespace}: check the name, and -n NAMESPACE")
        })?;
        let state = JobState::of(&job);
        if state.finished {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            progress(&format!(
                "not finished after {} ({}): collecting what the pods have printed so far",
                humantime::format_duration(wait),
                state.describe()
            ));
            break;
        }
        progress(&state.describe());
        tokio::time::sleep(POLL).await;
    }
    let pods: Api<Pod> = Api::namespaced(client, namespace);
    let selector = format!("{JOB_NAME_LABEL}={name}");
    let mut listed = pods
        .list(&ListParams::default().labels(&selector))
        .await?
        .items;
    listed.sort_by_key(|pod| (shard_index(pod), pod.metadata.name.clone()));
    let mut collected = Collected::default();
    for pod in listed {
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        let params = LogParams {
            container: Some(CONTAINER.to_string()),
            ..LogParams::default()
        };
        match pods.logs(&pod_name, &params).await {
            Ok(log) => match report_in_log(&log) {
                Some(report) => collected.reports.push((pod_name, report)),
                None => collected.without_report.push(why_no_report(&pod, &log)),
            },
            Err(err) => collected
                .without_report
                .push(format!("pod {pod_name}: its log could not be read: {err}")),
        }
    }
    Ok(collected)
}

/// The last line of `log` that is an `h3lab.load/1` report.
pub fn report_in_log(log: &str) -> Option<LoadReport> {
    log.lines()
        .rev()
        .filter(|line| line.trim_start().starts_with('{'))
        .find_map(|line| LoadReport::from_json(line).ok())
}

fn shard_index(pod: &Pod) -> Option<u32> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(INDEX_ANNOTATION)?
        .parse()
        .ok()
}

fn why_no_report(pod: &Pod, log: &str) -> String {
    let phase = pod
        .status
        .as_ref()
        .and_then(|status| status.phase.clone())
        .unwrap_or_else(|| "Unknown".to_string());
    let last = log.lines().rev().find(|line| !line.trim().is_empty());
    format!(
        "pod {} (shard {}) is {phase} and printed no report{}",
        pod.metadata.name.as_deref().unwrap_or("?"),
        shard_index(pod).map_or("?".to_string(), |index| index.to_string()),
        last.map_or(String::new(), |line| format!("; its log ends: {line}"))
    )
}

/// A Job's progress, from its status.
struct JobState {
    finished: bool,
    active: i32,
    succeeded: i32,
    failed: i32,
}

impl JobState {
    fn of(job: &Job) -> JobState {
        let status = job.status.clone().unwrap_or_default();
        let finished = status.conditions.iter().flatten().any(|condition| {
            (condition.type_ == "Complete" || condition.type_ == "Failed")
                && condition.status == "True"
        });
        JobState {
            finished,
            active: status.active.unwrap_or(0),
            succeeded: status.succeeded.unwrap_or(0),
            failed: status.failed.unwrap_or(0),
        }
    }

    fn describe(&self) -> String {
        format!(
            "{} pods running, {} succeeded, {} failed",
            self.active, self.succeeded, self.failed
        )
    }
}
