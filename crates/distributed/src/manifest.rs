//! The Kubernetes Indexed Job that runs one `h3lab load` split across N
//! pods, built from the API's own types (k8s-openapi) so it matches the
//! schema.

use std::collections::BTreeMap;

use anyhow::bail;
use h3lab_load::cli::{worker_flag_names, worker_flags};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Container, EnvVar, EnvVarSource, ObjectFieldSelector, PodAffinityTerm,
    PodAntiAffinity, PodSpec, PodTemplateSpec, ResourceRequirements, SecurityContext,
    WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

/// The environment variable that names the pod's node (`spec.nodeName`).
pub use h3lab_results::env::NODE as NODE_VAR;
/// The environment variable that carries a pod's completion index, from
/// the annotation the Job controller sets on every pod of an Indexed Job.
pub use h3lab_results::env::SHARD_INDEX as INDEX_VAR;
/// Where the downward API finds a pod's node.
pub const NODE_FIELD: &str = "spec.nodeName";
/// Kubernetes' limit on an Indexed Job with a per-index backoff limit.
const MAX_WORKERS: u32 = 100_000;
/// Where the Job controller puts a pod's completion index.
pub const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// The label the Job controller puts on its pods (Kubernetes 1.27+).
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
/// The name of the one container in each pod.
pub const CONTAINER: &str = "h3lab";

/// What the Job runs and where.
#[derive(Debug, Clone)]
pub struct JobPlan {
    /// The Job's name (a DNS label of at most 52 characters).
    pub name: String,
    /// Its namespace; `None` leaves it to `kubectl apply -n`.
    pub namespace: Option<String>,
    /// Pods, one shard each.
    pub workers: u32,
    /// The container image with `h3lab` on its PATH.
    pub image: String,
    /// The common start, RFC 3339.
    pub start_at: String,
    /// `load URL ...`: the whole test's flags, the same for every pod.
    pub load_args: Vec<String>,
    /// CPU each pod requests and is limited to, e.g. `2`.
    pub cpu: String,
    /// Memory each pod requests and is limited to, e.g. `512Mi`.
    pub memory: String,
    /// Require one node per pod (`true`), or only prefer it.
    pub one_node_each: bool,
    /// How long the Job may run before Kubernetes stops it, from when it
    /// is created; `None` when the load's length is unknown (`-n`).
    pub deadline: Option<std::time::Duration>,
}

impl JobPlan {
    /// Checks what Kubernetes and the split would refuse later.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !is_dns_label(&self.name) || self.name.len() > 52 {
            bail!(
                "job name `{}` is not usable: Kubernetes wants lower-case letters, digits and \
                 '-', starting and ending with a letter or digit, at most 52 characters (its \
                 pods add a suffix)",
                self.name
            );
        }
        if !(1..=MAX_WORKERS).contains(&self.workers) {
            bail!(
                "--workers must be from 1 to {MAX_WORKERS} (Kubernetes' limit for an Indexed Job)"
            );
        }
        if self.load_args.first().map(String::as_str) != Some("load") {
            bail!("after `--` give the load to split, e.g. -- load https://server/ -c 64 --rate 50000 -z 60s");
        }
        for flag in worker_flag_names() {
            if self
                .load_args
                .iter()
                .any(|arg| *arg == flag || arg.starts_with(&format!("{flag}=")))
            {
                bail!("leave {flag} out of the load's flags: h3lab dist sets it for each pod");
            }
        }
        Ok(())
    }

    /// The arguments every pod's container gets; `$(H3LAB_SHARD_INDEX)` is
    /// expanded by the kubelet from the pod's environment.
    pub fn pod_args(&self) -> Vec<String> {
        let mut args = self.load_args.clone();
        let index = format!("$({INDEX_VAR})");
        args.extend(worker_flags(&index, self.workers, &self.start_at));
        args
    }

    /// The Indexed Job.
    pub fn job(&self) -> Job {
        let labels = BTreeMap::from([
            ("app.kubernetes.io/name".to_string(), "h3lab".to_string()),
            (
                "app.kubernetes.io/component".to_string(),
                "load-worker".to_string(),
            ),
        ]);
        Job {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: self.namespace.clone(),
                labels: Some(labels.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(JobSpec {
                completion_mode: Some("Indexed".to_string()),
                completions: Some(self.workers as i32),
                parallelism: Some(self.workers as i32),
                // A retried pod would start after the common start, and
                // refuse to; and one failed shard must not stop the others,
                // so each index fails alone, without a retry.
                backoff_limit_per_index: Some(0),
                active_deadline_seconds: self.deadline.map(|deadline| deadline.as_secs() as i64),
                // A day to collect the pods' reports, then the Job goes.
                ttl_seconds_after_finished: Some(24 * 3600),
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(labels),
                        ..ObjectMeta::default()
                    }),
                    spec: Some(self.pod_spec()),
                },
                ..JobSpec::default()
            }),
            status: None,
        }
    }

    fn pod_spec(&self) -> PodSpec {
        let resources: BTreeMap<String, Quantity> = BTreeMap::from([
            ("cpu".to_string(), Quantity(self.cpu.clone())),
            ("memory".to_string(), Quantity(self.memory.clone())),
        ]);
        PodSpec {
            restart_policy: Some("Never".to_string()),
            affinity: Some(self.spread_over_nodes()),
            containers: vec![Container {
                name: CONTAINER.to_string(),
                image: Some(self.image.clone()),
                command: Some(vec!["h3lab".to_string()]),
                args: Some(self.pod_args()),
                env: Some(vec![
                    field_env(
                        INDEX_VAR,
                        &format!("metadata.annotations['{INDEX_ANNOTATION}']"),
                    ),
                    field_env(NODE_VAR, NODE_FIELD),
                ]),
                // Requests equal to limits: the Guaranteed QoS class, so
                // no worker is squeezed by a neighbour it cannot see.
                resources: Some(ResourceRequirements {
                    requests: Some(resources.clone()),
                    limits: Some(resources),
                    ..ResourceRequirements::default()
                }),
                security_context: Some(SecurityContext {
                    run_as_non_root: Some(true),
                    read_only_root_filesystem: Some(true),
                    allow_privilege_escalation: Some(false),
                    ..SecurityContext::default()
                }),
                ..Container::default()
            }],
            ..PodSpec::default()
        }
    }

    /// Two workers on one node share its CPU and NIC, and each then
    /// measures the other's load.
    fn spread_over_nodes(&self) -> Affinity {
        let term = PodAffinityTerm {
            label_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    JOB_NAME_LABEL.to_string(),
                    self.name.clone(),
                )])),
                ..LabelSelector::default()
            }),
            topology_key: "kubernetes.io/hostname".to_string(),
            ..PodAffinityTerm::default()
        };
        let anti_affinity = if self.one_node_each {
            PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: Some(vec![term]),
                ..PodAntiAffinity::default()
            }
        } else {
            PodAntiAffinity {
                preferred_during_scheduling_ignored_during_execution: Some(vec![
                    WeightedPodAffinityTerm {
                        pod_affinity_term: term,
                        weight: 100,
                    },
                ]),
                ..PodAntiAffinity::default()
            }
        };
        Affinity {
            pod_anti_affinity: Some(anti_affinity),
            ..Affinity::default()
        }
    }
}

/// An environment variable the kubelet fills from the pod's own fields.
fn field_env(name: &str, field_path: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: field_path.to_string(),
                api_version: None,
            }),
            ..EnvVarSource::default()
        }),
        value: None,
    }
}

/// The Job as YAML, with `apiVersion` and `kind` (for `kubectl apply -f`).
pub fn to_yaml(job: &Job) -> anyhow::Result<String> {
    Ok(serde_yaml_ng::to_string(job)?)
}

/// Reads a Job back from YAML (or JSON), as `h3lab dist local` does.
pub fn from_yaml(text: &str) -> anyhow::Result<Job> {
    let job: Job = serde_yaml_ng::from_str(text)
        .map_err(|err| anyhow::anyhow!("not a Kubernetes Job manifest: {err}"))?;
    Ok(job)
}

fn is_dns_label(name: &str) -> bool {
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    edge_ok(name.chars().next())
        && edge_ok(name.chars().last())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn plan(workers: u32) -> JobPlan {
        JobPlan {
            name: "h3lab-load".to_string(),
            namespace: Some("bench".to_string()),
            workers,
            image: "registry.example/h3lab:0.1".to_string(),
            start_at: "2026-11-26T12:00:00Z".to_string(),
            load_args: [
                "load",
                "https://server.bench:443/bytes/1000",
                "-c",
                "64",
                "--rate",
                "8000",
                "-z",
                "60s",
            ]
            .map(String::from)
            .to_vec(),
            cpu: "2".to_string(),
            memory: "512Mi".to_string(),
            one_node_each: true,
            deadline: Some(std::time::Duration::from_secs(300)),
        }
    }

    #[test]
    fn the_yaml_reads_back_as_the_same_job() {
        let job = plan(8).job();
        let yaml = to_yaml(&job).unwrap();
        assert!(
            yaml.starts_with("apiVersion: batch/v1\nkind: Job\n"),
            "{yaml}"
        );
        assert_eq!(from_yaml(&yaml).unwrap(), job);
        let spec = job.spec.unwrap();
        assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
        assert_eq!((spec.completions, spec.parallelism), (Some(8), Some(8)));
    }

    #[test]
    fn the_pods_get_their_shard_from_the_completion_index() {
        let args = plan(8).pod_args();
        assert!(
            args.contains(&"--shard=$(H3LAB_SHARD_INDEX)/8".to_string()),
            "{args:?}"
        );
        let job = plan(8).job();
        let container = &job.spec.unwrap().template.spec.unwrap().containers[0];
        let env = &container.env.as_ref().unwrap()[0];
        let field = &env
            .value_from
            .as_ref()
            .unwrap()
            .field_ref
            .as_ref()
            .unwrap()
            .field_path;
        assert_eq!(
            field,
            "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        );
    }

    #[test]
    fn bad_plans_are_refused_with_the_fix() {
        let mut bad = plan(4);
        bad.name = "Load_Test".to_string();
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("lower-case"));
        let mut bad = plan(4);
        bad.load_args
            .extend(["--shard".to_string(), "0/4".to_string()]);
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("leave --shard out"));
        let mut bad = plan(4);
        bad.load_args.remove(0);
        assert!(bad.validate().unwrap_err().to_string().contains("-- load"));
        for workers in [0, 100_001] {
            let err = plan(workers).validate().unwrap_err().to_string();
            assert!(err.contains("from 1 to 100000"), "{err}");
        }
        plan(4).validate().unwrap();
    }
}
