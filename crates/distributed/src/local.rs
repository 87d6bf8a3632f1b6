//! A Job's pods as local processes: for each completion index, the
//! environment and arguments the kubelet would give its container, so a
//! manifest can be tried on one machine before a cluster runs it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context};
use h3lab_results::load::LoadReport;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, EnvVar};

use crate::collect::{report_in_log, Collected};
use crate::manifest::{INDEX_ANNOTATION, NODE_FIELD};

/// One pod's container, as the kubelet would start it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRun {
    /// The pod's completion index.
    pub index: u32,
    /// The container's command and arguments, `$(VAR)`s expanded.
    pub argv: Vec<String>,
    /// The container's environment.
    pub env: BTreeMap<String, String>,
}

/// What one local pod left: its report, or why there is none.
type PodOutcome = Result<LoadReport, String>;

impl PodRun {
    /// The pod's name in a local run.
    pub fn name(&self) -> String {
        format!("local-{}", self.index)
    }

    /// The pod's environment and command line, as a shell would take them.
    pub fn command_line(&self) -> String {
        self.env
            .iter()
            .map(|(name, value)| format!("{name}={}", shell_word(value)))
            .chain(self.argv.iter().map(|arg| shell_word(arg)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `word`, single-quoted unless every character is safe bare.
fn shell_word(word: &str) -> String {
    let bare = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(bare) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Starts every pod at once as a process of `program` (standing in for the
/// image's command), with the pod's arguments and environment, and waits
/// for all of them. A pod's report is the last JSON line it printed.
pub fn run_pods(runs: &[PodRun], program: &Path) -> anyhow::Result<Collected> {
    let mut collected = Collected::default();
    for (run, outcome) in runs.iter().zip(wait_for_pods(runs, program)?) {
        match outcome {
            Ok(report) => collected.reports.push((run.name(), report)),
            Err(why) => collected.without_report.push(why),
        }
    }
    Ok(collected)
}

fn wait_for_pods(runs: &[PodRun], program: &Path) -> anyhow::Result<Vec<PodOutcome>> {
    let children = runs
        .iter()
        .map(|run| {
            Command::new(program)
                .args(&run.argv[1..])
                .envs(&run.env)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .with_context(|| format!("starting {} for pod {}", program.display(), run.name()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    // Each pod's pipes are drained on a thread of its own, so a pod that
    // prints much cannot stall while another is waited for.
    std::thread::scope(|scope| {
        let waits: Vec<_> = children
            .into_iter()
            .zip(runs)
            .map(|(child, run)| scope.spawn(move || outcome(child, run)))
            .collect();
        waits
            .into_iter()
            .map(|wait| wait.join().expect("a pod's waiting thread panicked"))
            .collect()
    })
}

fn outcome(child: std::process::Child, run: &PodRun) -> anyhow::Result<PodOutcome> {
    let output = child
        .wait_with_output()
        .with_context(|| format!("waiting for pod {}", run.name()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    Ok(report_in_log(&stdout).ok_or_else(|| {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().rev().find(|line| !line.trim().is_empty());
        format!(
            "pod {} ({}) printed no report{}",
            run.name(),
            output.status,
            last.map_or(String::new(), |line| format!(": {line}"))
        )
    }))
}

/// The pods of an Indexed Job, one per completion index.
pub fn pod_runs(job: &Job) -> anyhow::Result<Vec<PodRun>> {
    let spec = job.spec.as_ref().context("the Job has no spec")?;
    if spec.completion_mode.as_deref() != Some("Indexed") {
        bail!("the Job is not an Indexed Job: write it with h3lab dist k8s");
    }
    let completions = spec
        .completions
        .filter(|completions| (1..=100_000).contains(completions))
        .context("the Job's completions must be from 1 to 100000")?;
    let pod = spec
        .template
        .spec
        .as_ref()
        .context("the Job's pod template has no spec")?;
    let [container] = pod.containers.as_slice() else {
        bail!("the Job's pods must have exactly one container (h3lab)");
    };
    (0..completions as u32)
        .map(|index| pod_run(container, index))
        .collect()
}

fn pod_run(container: &Container, index: u32) -> anyhow::Result<PodRun> {
    let mut env = BTreeMap::new();
    for var in container.env.iter().flatten() {
        let value = env_value(var, index)?;
        // Later entries may refer to earlier ones, as in Kubernetes.
        let value = expand(&value, &env);
        env.insert(var.name.clone(), value);
    }
    let argv = container
        .command
        .iter()
        .flatten()
        .chain(container.args.iter().flatten())
        .map(|arg| expand(arg, &env))
        .collect();
    Ok(PodRun { index, argv, env })
}

/// The value the kubelet gives `var` in the pod of completion `index`.
fn env_value(var: &EnvVar, index: u32) -> anyhow::Result<String> {
    if let Some(value) = &var.value {
        return Ok(value.clone());
    }
    let field = var
        .value_from
        .as_ref()
        .and_then(|from| from.field_ref.as_ref())
        .map(|field| field.field_path.as_str());
    match field {
        Some(path) if path == format!("metadata.annotations['{INDEX_ANNOTATION}']") => {
            Ok(index.to_string())
        }
        // Every local pod runs on this machine.
        Some(NODE_FIELD) => Ok(std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|name| name.trim().to_string())
            .unwrap_or_else(|_| "localhost".to_string())),
        None if var.value_from.is_none() => Ok(String::new()),
        _ => Err(anyhow!(
            "environment variable {} comes from the cluster ({:?}); a local run knows only \
             literal values and the completion index",
            var.name,
            var.value_from
        )),
    }
}

/// Kubernetes' expansion of `$(VAR)` in a container's command, args and
/// env: a defined variable is replaced, `$$` is a literal `$`, and any
/// other reference is left as written.
pub fn expand(text: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
            continue;
        }
        let reference = after
            .strip_prefix('(')
            .and_then(|inner| inner.find(')').map(|end| &inner[..end]));
        match reference {
            // A whole reference: its value, or as written if undefined.
            Some(name) => {
                match env.get(name) {
                    Some(value) => out.push_str(value),
                    None => out.push_str(&rest[at..at + name.len() + 3]),
                }
                rest = &after[name.len() + 2..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{JobPlan, INDEX_VAR, NODE_VAR};

    #[test]
    fn expansion_follows_kubernetes() {
        let env = BTreeMap::from([("I".to_string(), "3".to_string())]);
        assert_eq!(expand("$(I)/8", &env), "3/8");
        assert_eq!(expand("$$(I) $(J) $I $", &env), "$(I) $(J) $I $");
        assert_eq!(expand("a$(I)b$(I)", &env), "a3b3");
        assert_eq!(expand("$(A$(I))", &env), "$(A$(I))");
        assert_eq!(expand("$(I", &env), "$(I");
    }

    #[test]
    fn each_pod_runs_its_own_shard() {
        let plan = JobPlan {
            name: "t".to_string(),
            namespace: None,
            workers: 3,
            image: "h3lab".to_string(),
            start_at: "2026-11-26T12:00:00Z".to_string(),
            load_args: vec!["load".to_string(), "https://s/".to_string()],
            cpu: "1".to_string(),
            memory: "256Mi".to_string(),
            one_node_each: false,
            deadline: None,
        };
        let runs = pod_runs(&plan.job()).unwrap();
        assert_eq!(runs.len(), 3);
        let expected: Vec<String> = ["h3lab", "load", "https://s/", "--shard=2/3"]
            .map(String::from)
            .to_vec();
        assert_eq!(runs[2].argv[..4], expected[..]);
        assert_eq!(runs[2].env[INDEX_VAR], "2");
        assert!(!runs[2].env[NODE_VAR].is_empty());
        let line = runs[2].command_line();
        let expected = " H3LAB_SHARD_INDEX=2 h3lab load https://s/ --shard=2/3 ";
        assert!(
            line.starts_with("H3LAB_NODE=") && line.contains(expected),
            "{line}"
        );
        assert!(line.ends_with(" --json=- --quiet"), "{line}");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}
