//! The environment variables one h3lab process sets for another, named
//! once. (The path's own, `H3LAB_SERVER_IP` and its kin, are `linkem`'s:
//! `linkem::env`.)

/// A Kubernetes pod's completion index, which `h3lab dist k8s` turns into
/// the pod's `--shard`.
pub const SHARD_INDEX: &str = "H3LAB_SHARD_INDEX";

/// The node a pod of `h3lab dist k8s` runs on, which `h3lab load` reports
/// as its host: an Indexed Job's pods are all called `JOB-INDEX`, and the
/// node is what tells two workers apart.
pub const NODE: &str = "H3LAB_NODE";
