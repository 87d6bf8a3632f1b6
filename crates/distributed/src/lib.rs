//! One `h3lab load` split across many machines, on Kubernetes: the Indexed
//! Job manifest (one shard per pod, a common start), the same pods run as
//! local processes to try a manifest out, and the collection of the pods'
//! reports through the Kubernetes API for an exact merge. With the `clap`
//! feature, `h3lab dist`'s flags (`cli`) and the Job `k8s`'s flags plan.
//!
//! Not for: generating load (`h3lab-load`) or merging reports
//! (`h3lab_results::load::merge_workers`); nor for managing a cluster:
//! Kubernetes schedules, starts and retries the pods.

#![warn(missing_docs)]

#[cfg(feature = "clap")]
pub mod cli;
mod collect;
mod local;
mod manifest;

pub use collect::{collect, report_in_log, Collected};
pub use kube::Client;
pub use local::{expand, pod_runs, run_pods, PodRun};
pub use manifest::{from_yaml, to_yaml, JobPlan, CONTAINER, INDEX_ANNOTATION, JOB_NAME_LABEL};
