//! `h3lab bench`: run a suite (a preset or a TOML file) and write
//! `results.json`, `results.csv` and `report.html`, rewritten after every
//! cell so an interrupted or crashed run keeps what it finished.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use h3lab_bench::field::FieldTarget;
use h3lab_bench::handoff::{self, HandoffPlan};
use h3lab_bench::runner::{self, Finished, RunContext};
use h3lab_bench::suite::Suite;
use h3lab_bench::{presets, CellSpec};
use h3lab_results::bench::{Outcome, Results};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(clap::Args)]
pub struct Args {
    /// Suite file (TOML, see docs/suite.md), or a field run's results.json
    /// to run again (same suite, same addresses); default: the `default`
    /// preset.
    #[arg(value_name = "SUITE.toml", conflicts_with_all = ["preset", "url"])]
    suite: Option<PathBuf>,
    /// A field run of the `field` preset against this deployed page, over
    /// the real path (docs/field.md).
    #[arg(long, value_name = "URL", conflicts_with = "preset")]
    url: Option<String>,
    /// With --url: connect to ADDR for HOST:PORT instead of resolving HOST
    /// (curl's --resolve); repeatable.
    #[arg(long, value_name = "HOST:PORT:ADDR", requires = "url")]
    resolve: Vec<String>,
    /// Run a built-in preset (see --list).
    #[arg(long, value_name = "NAME")]
    preset: Option<String>,
    /// List the built-in presets and exit.
    #[arg(long)]
    list: bool,
    /// Print a preset's suite file (a starting point for your own) and exit.
    #[arg(long, value_name = "NAME")]
    show: Option<String>,
    /// Directory for results.json, results.csv and report.html
    /// (default: h3lab-results/<suite>-<time>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run on these profiles instead of the suite's (built-in ones, see
    /// `h3lab net profiles`, or the suite's [[profile]] tables; `real` is
    /// a field run's real path alone).
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    profiles: Option<Vec<String>>,
    /// Print the cells that would run, and exit.
    #[arg(long)]
    dry_run: bool,
    /// Run an A/A test of the suite: every cell twice, back to back, as
    /// two replicas of the same protocol, and every verdict compares
    /// them, so each better or worse is a false one (docs/statistics.md).
    #[arg(long)]
    aa: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.list {
        print_presets()?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(name) = &args.show {
        let text = presets::preset_text(name).with_context(|| {
            format!(
                "unknown preset `{name}`; choose one of: {}",
                presets::names().join(", ")
            )
        })?;
        out!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let (mut suite, preset) = load_suite(&args)?;
    if let Some(profiles) = &args.profiles {
        suite = suite.with_profiles(profiles.clone())?;
    }
    if args.aa {
        if suite.is_field() {
            eprintln!("{}", runner::FIELD_AA_NOTE);
        }
        suite.aa = true;
    }
    // A dry run of `--url` tries the path too, so that it lists the cells
    // the run would really have.
    let real_path_will_do = args.url.is_some() && args.profiles.is_none();
    if !args.dry_run || real_path_will_do {
        suite = emulate_or_fall_back(suite, real_path_will_do)?;
    }
    let cells = runner::plan(&suite);
    if args.dry_run {
        for import in suite.har_imports() {
            outln!("{import}\n");
        }
        for cell in &cells {
            outln!("{}", cell.label());
        }
        let minutes = runner::estimated_minutes(&suite, &cells);
        outln!("{} cells, about {minutes} min", cells.len());
        return Ok(ExitCode::SUCCESS);
    }
    let out = (args.out.clone()).unwrap_or_else(|| runner::default_out_dir(&suite));
    run_suite(&suite, preset, &cells, &out)
}

/// Fails when the suite's emulated profiles cannot run here, except that
/// `--url`, with its profiles not chosen, goes on over the real path alone
/// and says what it left out: a newcomer's first field run needs no root.
fn emulate_or_fall_back(suite: Suite, real_path_will_do: bool) -> anyhow::Result<Suite> {
    let Err(err) = runner::check_can_emulate(&suite) else {
        return Ok(suite);
    };
    if !real_path_will_do {
        return Err(err);
    }
    let (left_out, suite) = suite.real_path_only()?;
    eprintln!(
        "h3lab bench: the real path alone; left out {}, since {err:#}. For those too, run as \
         root with iptables installed; `--profiles real` asks for the real path alone.",
        left_out.join(", ")
    );
    Ok(suite)
}

fn load_suite(args: &Args) -> anyhow::Result<(Suite, Option<String>)> {
    if let Some(url) = &args.url {
        return Ok((
            presets::field(url, &args.resolve)?,
            Some("field".to_string()),
        ));
    }
    match (&args.suite, &args.preset) {
        (Some(path), _) if is_json(path) => {
            let results = h3lab_report::load_results(path)?;
            Ok((Suite::rerun_of(&results, path)?, None))
        }
        (Some(path), _) => Ok((Suite::from_file(path)?, None)),
        (None, preset) => {
            let name = preset.as_deref().unwrap_or("default");
            let suite = presets::preset(name)?;
            let canonical = suite.name.clone();
            Ok((suite, Some(canonical)))
        }
    }
}

fn is_json(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "json")
}

fn print_presets() -> anyhow::Result<()> {
    use std::io::Write;
    let text = presets::catalogue()?;
    let mut out = std::io::stdout().lock();
    // A reader that stops early (`| head`) is not an error.
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(err.into()),
        _ => Ok(()),
    }
}

fn run_suite(
    suite: &Suite,
    preset: Option<String>,
    cells: &[CellSpec],
    out: &Path,
) -> anyhow::Result<ExitCode> {
    // After a second Ctrl-C the next start removes stale namespaces.
    let stop = super::stop_flag()?;
    let scratch = tempfile::Builder::new()
        .prefix("h3lab-bench-")
        .tempdir()
        .context("cannot create a scratch directory")?;
    let mut ctx = RunContext {
        exe: super::this_binary()?,
        scratch: scratch.path().to_path_buf(),
        stop: stop.clone(),
        preset,
        field: None,
    };
    if suite.is_field() {
        eprintln!("h3lab bench: checking what each origin offers, over the real path");
        let field = FieldTarget::prepare(suite, &ctx.exe, &ctx.scratch)?;
        eprint!("{}", h3lab_report::field_origins_text(&field.record));
        ctx.field = Some(field);
    }
    // Write an empty but valid result set first: even a run killed in its
    // first cell leaves files that say so.
    h3lab_report::write_all(&runner::new_results(suite, &ctx), out)?;
    let handoffs = handoff::plan(suite)?;
    // Estimated once: a profile's settings may come from trace files.
    let seconds: Vec<f64> = (cells.iter())
        .map(|cell| runner::estimated_seconds(suite, cell))
        .chain(handoffs.iter().map(HandoffPlan::estimated_seconds))
        .collect();
    let estimates: Vec<u64> = seconds.iter().map(|s| s.round() as u64).collect();
    let labels: Vec<String> = (cells.iter().map(CellSpec::label))
        .chain(handoffs.iter().map(HandoffPlan::label))
        .collect();
    eprintln!(
        "h3lab bench: suite `{}`, {} cells{}, about {} min, writing to {}",
        suite.name,
        cells.len(),
        match handoffs.len() {
            0 => String::new(),
            runs => format!(" and {runs} handoff runs"),
        },
        runner::whole_minutes(&seconds),
        out.display()
    );
    let progress = progress_bar(&estimates, &labels);
    let mut write_error = None;
    let mut index = 0;
    let results = runner::run(suite, &ctx, &handoffs, |results, finished| {
        progress.inc(estimates[index]);
        index += 1;
        if let Some(line) = outcome_line(&finished) {
            progress.println(line);
        }
        if let Some(next) = labels.get(index) {
            progress.set_message(next.clone());
        }
        if let Err(err) = h3lab_report::write_all(results, out) {
            write_error.get_or_insert(err);
        }
    });
    progress.finish_and_clear();
    h3lab_report::write_all(&results, out)?;
    if let Some(err) = write_error {
        eprintln!("warning: writing intermediate results failed once: {err:#}");
    }
    out!("{}", h3lab_report::terminal_table(&results));
    if let Some(field) = &results.field {
        out!("\n{}", h3lab_report::field_origins_text(field));
        out!("{}", h3lab_report::field_drift_text(&results));
    }
    outln!("\nresults: {}", out.join("results.json").display());
    outln!("table:   {}", out.join("results.csv").display());
    outln!("report:  {}", out.join("report.html").display());
    Ok(exit_code(&results, &stop))
}

/// A line for a cell or handoff run that failed or measured nothing.
fn outcome_line(finished: &Finished) -> Option<String> {
    let (run, what, outcome) = match finished {
        Finished::Cell(record) => (
            "cell",
            format!("{} {} {}", record.profile, record.workload, record.protocol),
            &record.outcome,
        ),
        Finished::Handoff(record) => (
            "handoff",
            format!("{} {}", record.group, record.protocol),
            &record.outcome,
        ),
    };
    match outcome {
        Outcome::Failed { error } => Some(format!("{run} failed: {what}: {error}")),
        Outcome::NotOffered { reason } => Some(format!("not offered: {what}: {reason}")),
        Outcome::Ok | Outcome::Interrupted => None,
    }
}

fn exit_code(results: &Results, stop: &AtomicBool) -> ExitCode {
    let failed = |outcomes: &mut dyn Iterator<Item = &Outcome>| {
        outcomes
            .filter(|outcome| matches!(outcome, Outcome::Failed { .. }))
            .count()
    };
    let failed_cells = failed(&mut results.cells.iter().map(|cell| &cell.outcome));
    let failed_handoffs = failed(&mut results.handoffs.iter().map(|run| &run.outcome));
    if stop.load(Ordering::Relaxed) {
        eprintln!(
            "interrupted: {} cells finished; the files above hold them",
            results.cells.len()
        );
        return ExitCode::from(130);
    }
    if failed_cells > 0 {
        eprintln!(
            "error: {failed_cells} of {} cells failed; their errors are in the report",
            results.cells.len()
        );
    }
    if failed_handoffs > 0 {
        eprintln!(
            "error: {failed_handoffs} of {} handoff runs failed; their errors are in the report",
            results.handoffs.len()
        );
    }
    if failed_cells + failed_handoffs > 0 {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// A progress bar whose units are the cells' (and handoff runs')
/// estimated seconds, so the ETA accounts for runs of very different
/// lengths.
fn progress_bar(estimates: &[u64], labels: &[String]) -> ProgressBar {
    let bar = ProgressBar::new(estimates.iter().sum());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% ETA {eta} {msg}",
        )
        .expect("valid progress template"),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    if let Some(first) = labels.first() {
        bar.set_message(first.clone());
    }
    bar
}
