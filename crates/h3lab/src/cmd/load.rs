//! `h3lab load URL`: HTTP/1.1, HTTP/2 or HTTP/3 load against one URL, with
//! flags familiar to h2load and oha users; `h3lab load merge`: one report
//! from the reports of a test's workers.

use std::process::ExitCode;

use anyhow::{anyhow, Context};
use h3lab_load::cli::{LoadArgs, MergeArgs, MergeOptions};
use h3lab_load::CancellationToken;
use h3lab_results::load::{merge_workers, LoadReport, Outcome};

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    pub merge: Option<Merge>,
    #[command(flatten)]
    pub load: LoadArgs,
}

/// `h3lab load merge`: one report from the reports of a test's workers.
#[derive(clap::Subcommand)]
pub enum Merge {
    /// Merge the JSON reports of one test's workers exactly (histograms
    /// added, never percentiles averaged), with a per-worker table.
    Merge(MergeArgs),
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(Merge::Merge(merge)) = args.merge {
        return run_merge(merge);
    }
    h3lab_load::use_small_pages();
    let json_path = args.load.json.clone();
    let config = args.load.config()?;
    let cancel = CancellationToken::new();
    watch_ctrl_c(cancel.clone())?;
    let report = h3lab_load::run(&config, cancel)?;
    show(&report, json_path.as_deref())?;
    exit_code(&report)
}

/// Prints the report, and writes its JSON where asked (`-`: standard
/// output, with the text moved to standard error).
pub(super) fn show(report: &LoadReport, json_path: Option<&std::path::Path>) -> anyhow::Result<()> {
    match json_path {
        Some(path) if path.as_os_str() == "-" => {
            eprint!("{report}");
            outln!("{}", report.to_json_line());
        }
        _ => out!("{report}"),
    }
    if let Some(warning) = report.pacing_warning() {
        eprintln!("{warning}");
    }
    if let Some(path) = json_path.filter(|path| path.as_os_str() != "-") {
        std::fs::write(path, report.to_json())
            .with_context(|| format!("writing the JSON report to {}", path.display()))?;
    }
    Ok(())
}

fn run_merge(args: MergeArgs) -> anyhow::Result<ExitCode> {
    merge_and_show(&args.read_reports()?, &args.options)
}

/// Merges one test's reports, prints the result and writes its JSON.
pub(super) fn merge_and_show(
    reports: &[(String, LoadReport)],
    options: &MergeOptions,
) -> anyhow::Result<ExitCode> {
    let merged = merge_workers(reports, options.allow_partial)?;
    show(&merged, options.json.as_deref())?;
    exit_code(&merged)
}

pub(super) fn exit_code(report: &LoadReport) -> anyhow::Result<ExitCode> {
    match report.outcome() {
        Outcome::Success => Ok(ExitCode::SUCCESS),
        Outcome::Interrupted => {
            eprintln!("interrupted: partial results written");
            Ok(ExitCode::from(130))
        }
        Outcome::Failed(summary) => Err(anyhow!(summary)),
    }
}

/// Ctrl-C cancels the run; the engine then returns what it has so far.
fn watch_ctrl_c(cancel: CancellationToken) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the signal runtime")?;
    std::thread::Builder::new()
        .name("h3lab-ctrl-c".into())
        .spawn(move || {
            runtime.block_on(async {
                if tokio::signal::ctrl_c().await.is_ok() {
                    cancel.cancel();
                }
            })
        })
        .context("spawning the Ctrl-C watcher")?;
    Ok(())
}
