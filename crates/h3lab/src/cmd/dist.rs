//! `h3lab dist`: one load split across many machines as a Kubernetes
//! Indexed Job (`k8s`), tried out as local processes (`local`), and its
//! workers' reports gathered and merged exactly (`collect`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context};
use h3lab_dist::{JobPlan, PodRun};
use h3lab_load::cli::LoadArgs;
use h3lab_results::flags::CommandFlags;
use h3lab_results::load::LoadReport;

use super::load::MergeOptions;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: DistCommand,
}

#[derive(clap::Subcommand)]
enum DistCommand {
    /// Write the Indexed Job that runs a load split across N pods, one
    /// shard each, from a common start (kubectl apply -f it).
    K8s(K8sArgs),
    /// Run a Job manifest's pods as local processes, with the arguments
    /// and environment each pod would get, then merge their reports.
    Local(LocalArgs),
    /// Wait for a Job to finish, read its pods' reports through the
    /// Kubernetes API (kubeconfig or in-cluster), and merge them.
    Collect(CollectArgs),
}

#[derive(clap::Args)]
struct K8sArgs {
    /// Pods, one shard of the load each.
    #[arg(long)]
    workers: u32,
    /// Container image with h3lab on its PATH (see the Dockerfile).
    #[arg(long)]
    image: String,
    /// The Job's name.
    #[arg(long, default_value = "h3lab-load")]
    name: String,
    /// The Job's namespace [default: the one kubectl apply uses].
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Start the load this long after now: time for every pod to be
    /// scheduled and pull the image, and for you to apply the manifest.
    #[arg(long, default_value = "2m", value_parser = h3lab_load::parse_duration)]
    start_in: Duration,
    /// Start at this time instead (RFC 3339, UTC).
    #[arg(long, conflicts_with = "start_in", value_parser = h3lab_load::parse_start_at)]
    start_at: Option<h3lab_load::StartAt>,
    /// CPU each pod requests and is limited to.
    #[arg(long, default_value = "2")]
    cpu: String,
    /// Memory each pod requests and is limited to.
    #[arg(long, default_value = "512Mi")]
    memory: String,
    /// Let pods share a node when there are fewer nodes than workers
    /// (they then share its CPU and NIC) instead of waiting for one each.
    #[arg(long)]
    allow_shared_nodes: bool,
    /// Write the manifest here instead of to standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The load to split: `load URL FLAGS...`, the whole test's flags.
    #[arg(last = true, required = true, value_name = "load URL FLAGS")]
    load: Vec<String>,
}

#[derive(clap::Args)]
struct MergeFlags {
    #[command(flatten)]
    options: MergeOptions,
    /// Keep each worker's report in this directory [default: JOB-reports].
    #[arg(long, value_name = "DIR")]
    reports_dir: Option<PathBuf>,
}

#[derive(clap::Args)]
struct LocalArgs {
    /// The Job manifest (from h3lab dist k8s).
    manifest: PathBuf,
    /// Print each pod's environment and command line; run nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    merge: MergeFlags,
}

#[derive(clap::Args)]
struct CollectArgs {
    /// The Job's name.
    job: String,
    /// The Job's namespace [default: the kubeconfig context's].
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// How long to wait for the Job to finish.
    #[arg(long, default_value = "30m", value_parser = h3lab_load::parse_duration)]
    wait: Duration,
    #[command(flatten)]
    merge: MergeFlags,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        DistCommand::K8s(args) => k8s(args),
        DistCommand::Local(args) => local(args),
        DistCommand::Collect(args) => collect(args),
    }
}

/// Time left after the load's planned end for the pods to finish and
/// print their reports before Kubernetes stops the Job.
const DEADLINE_MARGIN: Duration = Duration::from_secs(120);

fn k8s(args: K8sArgs) -> anyhow::Result<ExitCode> {
    if args.start_at.is_none() && args.start_in.is_zero() {
        bail!("--start-in must leave the pods time to be scheduled and start, e.g. 2m");
    }
    let start_at = match args.start_at {
        Some(start) => start,
        None => {
            let at = SystemTime::now()
                .checked_add(args.start_in)
                .context("--start-in is too far ahead; a few minutes is enough")?;
            h3lab_load::parse_start_at(&humantime::format_rfc3339_seconds(at).to_string())?
        }
    };
    let mut plan = JobPlan {
        name: args.name,
        namespace: args.namespace,
        workers: args.workers,
        image: args.image,
        start_at: start_at.text.clone(),
        load_args: args.load,
        cpu: args.cpu,
        memory: args.memory,
        one_node_each: !args.allow_shared_nodes,
        deadline: None,
    };
    plan.validate()?;
    // The pods differ only in their shard, and the load's validation
    // checks every shard's share, so pod 0 stands for all of them.
    let first = &h3lab_dist::pod_runs(&plan.job())?[0];
    let load = LoadArgs::parse_flags(&first.argv[2..])
        .and_then(LoadArgs::config)
        .context("the load of pod 0")?;
    // A pod that cannot start holds an Indexed Job open for ever; past the
    // load's planned end, Kubernetes stops it and collect merges the rest.
    plan.deadline = load.duration.and_then(|duration| {
        let wait = start_at.at.duration_since(SystemTime::now()).ok()?;
        Some(wait + load.warmup + duration + load.request_timeout + DEADLINE_MARGIN)
    });
    let job = plan.job();
    let yaml = h3lab_dist::to_yaml(&job)?;
    match args.output {
        Some(path) => std::fs::write(&path, yaml)
            .with_context(|| format!("writing the manifest to {}", path.display()))?,
        None => out!("{yaml}"),
    }
    eprintln!(
        "the load starts at {}: kubectl apply -f the manifest before then, and afterwards \
         h3lab dist collect {}",
        plan.start_at, plan.name
    );
    Ok(ExitCode::SUCCESS)
}

fn local(args: LocalArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.manifest)
        .with_context(|| format!("cannot read the manifest {}", args.manifest.display()))?;
    let job = h3lab_dist::from_yaml(&text)?;
    let name = job
        .metadata
        .name
        .clone()
        .unwrap_or_else(|| "h3lab-load".to_string());
    let runs: Vec<PodRun> = h3lab_dist::pod_runs(&job)?;
    for run in &runs {
        if run.argv.first().map(String::as_str) != Some("h3lab") {
            bail!(
                "the pods do not run h3lab ({:?}): only h3lab's own Jobs run locally",
                run.argv
            );
        }
    }
    if args.dry_run {
        for run in &runs {
            outln!("pod {}: {}", run.index, run.command_line());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let program = std::env::current_exe().context("finding this h3lab binary")?;
    eprintln!("running {} pods of {name} as local processes:", runs.len());
    for run in &runs {
        eprintln!("pod {}: {}", run.index, run.command_line());
    }
    let outcomes = h3lab_dist::run_pods(&runs, &program)?;
    let mut reports = Vec::new();
    let mut without_report = Vec::new();
    for (run, outcome) in runs.iter().zip(outcomes) {
        match outcome {
            Ok(report) => reports.push((run.name(), report)),
            Err(why) => without_report.push(why),
        }
    }
    merge_and_show(&name, reports, &without_report, &args.merge)
}

fn collect(args: CollectArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let collected = runtime.block_on(async {
        let client = h3lab_dist::Client::try_default().await.context(
            "no Kubernetes API to talk to: set up a kubeconfig (as for kubectl), or run inside the cluster",
        )?;
        let namespace = args
            .namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_string());
        h3lab_dist::collect(client, &namespace, &args.job, args.wait, |state| {
            eprintln!("waiting for Job {}: {state}", args.job)
        })
        .await
    })?;
    merge_and_show(
        &args.job,
        collected.reports,
        &collected.without_report,
        &args.merge,
    )
}

/// Keeps every worker's report on disk, then prints (and writes) the merge.
fn merge_and_show(
    job: &str,
    reports: Vec<(String, LoadReport)>,
    without_report: &[String],
    flags: &MergeFlags,
) -> anyhow::Result<ExitCode> {
    for why in without_report {
        eprintln!("warning: {why}");
    }
    let dir = flags
        .reports_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{job}-reports")));
    keep_reports(&dir, &reports)?;
    if reports.is_empty() {
        bail!("no worker left a report, so there is nothing to merge");
    }
    eprintln!("each worker's report is in {}", dir.display());
    super::load::merge_and_show(&reports, &flags.options)
}

fn keep_reports(dir: &Path, reports: &[(String, LoadReport)]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, report) in reports {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, report.to_json())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
