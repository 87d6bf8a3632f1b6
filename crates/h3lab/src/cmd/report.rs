//! `h3lab report` and `h3lab compare`: re-render or compare saved runs.

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ReportArgs {
    /// A results.json written by `h3lab bench`.
    results: PathBuf,
    /// Where to write results.csv and report.html (default: beside the JSON).
    #[arg(long, value_name = "DIR", conflicts_with = "calibrate")]
    out: Option<PathBuf>,
    /// With an A/A run's results.json (`h3lab bench --aa`): count the
    /// false verdicts per workload kind over disjoint blocks of this many
    /// repetitions (e.g. `3,4,5`), for the current rule and the old one,
    /// print the table and exit (docs/statistics.md).
    #[arg(long, value_name = "REPS,...", value_delimiter = ',')]
    calibrate: Option<Vec<usize>>,
}

#[derive(clap::Args)]
pub struct CompareArgs {
    /// The earlier run's results.json.
    a: PathBuf,
    /// The later run's results.json.
    b: PathBuf,
}

pub fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let results = h3lab_report::load_results(&args.results)?;
    if let Some(blocks) = &args.calibrate {
        anyhow::ensure!(
            !blocks.is_empty() && blocks.iter().all(|&block| block > 0),
            "--calibrate takes repetition counts above zero, e.g. --calibrate 3,4,5"
        );
        let calibration = h3lab_report::calibrate(&results, blocks)?;
        out!("{}", h3lab_report::calibration_table(&calibration));
        return Ok(ExitCode::SUCCESS);
    }
    let out = args
        .out
        .or_else(|| args.results.parent().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."));
    h3lab_report::write_all(&results, &out)?;
    out!("{}", h3lab_report::terminal_table(&results));
    outln!("\nreport: {}", out.join("report.html").display());
    Ok(ExitCode::SUCCESS)
}

pub fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let a = h3lab_report::load_results(&args.a)?;
    let b = h3lab_report::load_results(&args.b)?;
    out!("{}", h3lab_report::compare(&a, &b));
    Ok(ExitCode::SUCCESS)
}
