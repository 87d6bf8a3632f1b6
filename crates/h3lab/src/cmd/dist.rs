//! `h3lab dist`: one load split across many machines as a Kubernetes
//! Indexed Job (`k8s`), tried out as local processes (`local`), and its
//! workers' reports gathered and merged exactly (`collect`).

use std::process::ExitCode;

use anyhow::{bail, Context};
use h3lab_dist::cli::{CollectArgs, K8sArgs, LocalArgs, MergeFlags};
use h3lab_dist::Collected;

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

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        DistCommand::K8s(args) => k8s(args),
        DistCommand::Local(args) => local(args),
        DistCommand::Collect(args) => collect(args),
    }
}

fn k8s(args: K8sArgs) -> anyhow::Result<ExitCode> {
    let plan = args.plan()?;
    let yaml = h3lab_dist::to_yaml(&plan.job())?;
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
    let (name, runs) = args.pods()?;
    if args.dry_run {
        for run in &runs {
            outln!("pod {}: {}", run.index, run.command_line());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let program = super::this_binary()?;
    eprintln!("running {} pods of {name} as local processes:", runs.len());
    for run in &runs {
        eprintln!("pod {}: {}", run.index, run.command_line());
    }
    let ran = h3lab_dist::run_pods(&runs, &program)?;
    merge_and_show(&name, ran, &args.merge)
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
    merge_and_show(&args.job, collected, &args.merge)
}

/// Keeps every worker's report on disk, then prints (and writes) the merge.
fn merge_and_show(job: &str, pods: Collected, flags: &MergeFlags) -> anyhow::Result<ExitCode> {
    for why in &pods.without_report {
        eprintln!("warning: {why}");
    }
    let dir = flags.keep_reports(job, &pods.reports)?;
    if pods.reports.is_empty() {
        bail!("no worker left a report, so there is nothing to merge");
    }
    eprintln!("each worker's report is in {}", dir.display());
    super::load::merge_and_show(&pods.reports, &flags.options)
}
