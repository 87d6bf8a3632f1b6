//! `h3lab dist`'s flags (behind the `clap` feature), and what `k8s`'s
//! flags plan: the Job, its common start checked through pod 0's load, and
//! the deadline past the load's planned end.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context};
use h3lab_load::cli::{LoadArgs, MergeOptions};
use h3lab_load::{parse_duration, parse_start_at, LoadConfig, StartAt};
use h3lab_results::flags::CommandFlags;
use h3lab_results::load::LoadReport;

use crate::local::{pod_runs, PodRun};
use crate::manifest::{from_yaml, JobPlan};

/// The flags of `h3lab dist k8s`.
#[derive(Debug, Clone, clap::Args)]
pub struct K8sArgs {
    /// Pods, one shard of the load each.
    #[arg(long)]
    pub workers: u32,
    /// Container image with h3lab on its PATH (see the Dockerfile).
    #[arg(long)]
    pub image: String,
    /// The Job's name.
    #[arg(long, default_value = "h3lab-load")]
    pub name: String,
    /// The Job's namespace [default: the one kubectl apply uses].
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Start the load this long after now: time for every pod to be
    /// scheduled and pull the image, and for you to apply the manifest.
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    pub start_in: Duration,
    /// Start at this time instead (RFC 3339, UTC).
    #[arg(long, conflicts_with = "start_in", value_parser = parse_start_at)]
    pub start_at: Option<StartAt>,
    /// CPU each pod requests and is limited to.
    #[arg(long, default_value = "2")]
    pub cpu: String,
    /// Memory each pod requests and is limited to.
    #[arg(long, default_value = "512Mi")]
    pub memory: String,
    /// Let pods share a node when there are fewer nodes than workers
    /// (they then share its CPU and NIC) instead of waiting for one each.
    #[arg(long)]
    pub allow_shared_nodes: bool,
    /// Write the manifest here instead of to standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The load to split: `load URL FLAGS...`, the whole test's flags.
    #[arg(last = true, required = true, value_name = "load URL FLAGS")]
    pub load: Vec<String>,
}

/// What `local` and `collect` do with the workers' reports.
#[derive(Debug, Clone, clap::Args)]
pub struct MergeFlags {
    /// Where the merge goes, and whether shards may be missing.
    #[command(flatten)]
    pub options: MergeOptions,
    /// Keep each worker's report in this directory [default: JOB-reports].
    #[arg(long, value_name = "DIR")]
    pub reports_dir: Option<PathBuf>,
}

/// The flags of `h3lab dist local`.
#[derive(Debug, Clone, clap::Args)]
pub struct LocalArgs {
    /// The Job manifest (from h3lab dist k8s).
    pub manifest: PathBuf,
    /// Print each pod's environment and command line; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The merge of the pods' reports.
    #[command(flatten)]
    pub merge: MergeFlags,
}

/// The flags of `h3lab dist collect`.
#[derive(Debug, Clone, clap::Args)]
pub struct CollectArgs {
    /// The Job's name.
    pub job: String,
    /// The Job's namespace [default: the kubeconfig context's].
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// How long to wait for the Job to finish.
    #[arg(long, default_value = "30m", value_parser = parse_duration)]
    pub wait: Duration,
    /// The merge of the pods' reports.
    #[command(flatten)]
    pub merge: MergeFlags,
}

/// Time left after the load's planned end for the pods to finish and
/// print their reports before Kubernetes stops the Job.
const DEADLINE_MARGIN: Duration = Duration::from_secs(120);

impl K8sArgs {
    /// The Job the flags ask for, refused as Kubernetes or the pods'
    /// `h3lab load` would refuse it.
    pub fn plan(&self) -> anyhow::Result<JobPlan> {
        let start_at = self.start(SystemTime::now())?;
        let mut plan = JobPlan {
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            workers: self.workers,
            image: self.image.clone(),
            start_at: start_at.text.clone(),
            load_args: self.load.clone(),
            cpu: self.cpu.clone(),
            memory: self.memory.clone(),
            one_node_each: !self.allow_shared_nodes,
            deadline: None,
        };
        plan.validate()?;
        let load = first_pods_load(&plan)?;
        // A pod that cannot start holds an Indexed Job open for ever; past the
        // load's planned end, Kubernetes stops it and collect merges the rest.
        plan.deadline = load.duration.and_then(|duration| {
            let wait = start_at.at.duration_since(SystemTime::now()).ok()?;
            Some(wait + load.warmup + duration + load.request_timeout + DEADLINE_MARGIN)
        });
        Ok(plan)
    }

    /// The common start: `--start-at`, or `--start-in` after `now`.
    fn start(&self, now: SystemTime) -> anyhow::Result<StartAt> {
        if let Some(start) = &self.start_at {
            return Ok(start.clone());
        }
        if self.start_in.is_zero() {
            bail!("--start-in must leave the pods time to be scheduled and start, e.g. 2m");
        }
        let at = now
            .checked_add(self.start_in)
            .context("--start-in is too far ahead; a few minutes is enough")?;
        parse_start_at(&humantime::format_rfc3339_seconds(at).to_string())
    }
}

/// The load of pod 0, checked as its `h3lab load` will check it: the pods
/// differ only in their shard, and the load's validation checks every
/// shard's share, so pod 0 stands for all of them.
fn first_pods_load(plan: &JobPlan) -> anyhow::Result<LoadConfig> {
    let first = &pod_runs(&plan.job())?[0];
    // The flags follow the pod's `h3lab load`.
    LoadArgs::parse_flags(&first.argv[2..])
        .and_then(LoadArgs::config)
        .context("the load of pod 0")
}

impl MergeFlags {
    /// Writes each worker's report as `NAME.json` into `--reports-dir`
    /// (default: `JOB-reports`), and returns that directory.
    pub fn keep_reports(
        &self,
        job: &str,
        reports: &[(String, LoadReport)],
    ) -> anyhow::Result<PathBuf> {
        let dir = self.reports_dir(job);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        for (name, report) in reports {
            let path = dir.join(format!("{name}.json"));
            std::fs::write(&path, report.to_json())
                .with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(dir)
    }

    fn reports_dir(&self, job: &str) -> PathBuf {
        (self.reports_dir.clone()).unwrap_or_else(|| PathBuf::from(format!("{job}-reports")))
    }
}

impl LocalArgs {
    /// The manifest's Job name and its pods, refused unless every pod
    /// runs h3lab (which `local` starts as this binary).
    pub fn pods(&self) -> anyhow::Result<(String, Vec<PodRun>)> {
        let text = std::fs::read_to_string(&self.manifest)
            .with_context(|| format!("cannot read the manifest {}", self.manifest.display()))?;
        let job = from_yaml(&text)?;
        let name = job.metadata.name.clone();
        let runs = pod_runs(&job)?;
        for run in &runs {
            if run.argv.first().map(String::as_str) != Some("h3lab") {
                bail!(
                    "the pods do not run h3lab ({:?}): only h3lab's own Jobs run locally",
                    run.argv
                );
            }
        }
        Ok((name.unwrap_or_else(|| "h3lab-load".to_string()), runs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k8s(flags: &[&str]) -> K8sArgs {
        h3lab_results::flags::parse("h3lab dist k8s", flags).unwrap()
    }

    fn plan(flags: &[&str]) -> anyhow::Result<JobPlan> {
        let mut all = vec!["--workers=4", "--image=h3lab"];
        all.extend(flags);
        k8s(&all).plan()
    }

    #[test]
    fn the_deadline_is_the_loads_planned_end_with_a_margin() {
        let load = [
            "--",
            "load",
            "https://s/",
            "-c",
            "8",
            "-z",
            "60s",
            "--warmup=5s",
        ];
        let timed = plan(&load).unwrap();
        // From now: the 2 min start (to the second), the warm-up, the load,
        // the default 30 s request timeout and the margin.
        let deadline = timed.deadline.unwrap().as_secs_f64();
        assert!((334.0..=335.0).contains(&deadline), "{deadline}");
        let counted = plan(&["--", "load", "https://s/", "-c", "8", "-n", "800"]).unwrap();
        assert_eq!(counted.deadline, None, "a load of -n requests has no end");
    }

    #[test]
    fn the_start_is_start_at_or_start_in_from_now() {
        let start = "2036-11-26T12:00:00Z";
        let at = plan(&["--start-at", start, "--", "load", "https://s/"]).unwrap();
        assert_eq!(at.start_at, start);
        let now = SystemTime::now();
        let args = k8s(&["--workers=1", "--image=i", "--start-in=90s", "--", "load"]);
        let start = args.start(now).unwrap().at.duration_since(now).unwrap();
        assert!(start > Duration::from_secs(89) && start <= Duration::from_secs(90));
        let err = plan(&["--start-in=0s", "--", "load", "https://s/"]).unwrap_err();
        assert!(err.to_string().contains("e.g. 2m"), "{err}");
    }

    #[test]
    fn a_load_one_shard_cannot_run_is_refused_for_pod_0() {
        let err = plan(&["--", "load", "https://s/", "-c", "2"]).unwrap_err();
        let err = format!("{err:#}");
        assert!(err.starts_with("the load of pod 0: "), "{err}");
        assert!(err.contains("raise -c to 4"), "{err}");
    }

    #[test]
    fn the_reports_are_kept_by_name_in_the_reports_dir() {
        let report = include_str!("../tests/fixtures/shard-0-of-3.json");
        let reports = [(
            "local-0".to_string(),
            LoadReport::from_json(report).unwrap(),
        )];
        let dir = tempfile::tempdir().unwrap();
        let mut flags = MergeFlags {
            options: MergeOptions {
                json: None,
                allow_partial: false,
            },
            reports_dir: Some(dir.path().join("kept")),
        };
        let kept = flags.keep_reports("job", &reports).unwrap();
        assert_eq!(kept, dir.path().join("kept"));
        let back = std::fs::read_to_string(kept.join("local-0.json")).unwrap();
        assert_eq!(LoadReport::from_json(&back).unwrap(), reports[0].1);
        flags.reports_dir = None;
        assert_eq!(flags.reports_dir("job"), PathBuf::from("job-reports"));
    }
}
