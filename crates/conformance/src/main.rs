//! `h3lab-conformance`: the suite's binary, which `h3lab probe
//! conformance` runs with the target already resolved. Exit status: 0 when
//! every case passed, 1 when one failed or could not run, 2 for bad input
//! or a fault of the client, 3 when the server did not answer a plain GET
//! over HTTP/3 (h3lab then says what the URL offers).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use h3lab_conformance::{cases, run_suite, NoHttp3, Options, Origin};
use h3lab_results::conformance::{ConformanceReport, Verdict};

#[derive(Parser)]
#[command(
    about = "The HTTP/3, QPACK and QUIC transport conformance suite that `h3lab probe conformance` runs"
)]
enum Command {
    /// Lists the cases: id, RFC section, what the client sends and what a
    /// conforming server does.
    List,
    /// Runs the suite against one server.
    Run(Box<RunArgs>),
}

#[derive(clap::Args)]
struct RunArgs {
    /// The URL probed, as the user gave it (for the report).
    #[arg(long)]
    target: String,
    /// Where its QUIC packets go.
    #[arg(long)]
    address: SocketAddr,
    /// The TLS server name.
    #[arg(long)]
    server_name: String,
    /// A valid request's :authority.
    #[arg(long)]
    authority: String,
    /// A valid request's :path.
    #[arg(long)]
    path: String,
    /// How long a case waits for any answer.
    #[arg(long, value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// How long a case listens after the follow-up request's answer.
    #[arg(long, value_parser = humantime::parse_duration)]
    settle: Duration,
    /// Run only the cases whose id starts with this; repeatable.
    #[arg(long)]
    only: Vec<String>,
    /// Write the report (h3lab.conformance/1) to FILE.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn main() -> ExitCode {
    match Command::parse() {
        Command::List => {
            for case in cases() {
                println!("{:<42} {:<18} {}", case.id, case.rfc, case.title);
                println!("{:<42} expected: {}", "", case.expected());
            }
            ExitCode::SUCCESS
        }
        Command::Run(args) => match run(*args) {
            Ok(code) => code,
            Err(err) => {
                eprintln!("error: {err:#}");
                let no_http3 = err.downcast_ref::<NoHttp3>().is_some();
                ExitCode::from(if no_http3 { 3 } else { 2 })
            }
        },
    }
}

fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let options = Options {
        target: args.target,
        origin: Origin {
            authority: args.authority,
            path: args.path,
        },
        server_name: args.server_name,
        address: args.address,
        case_timeout: args.timeout,
        settle: args.settle,
        only: args.only,
    };
    println!(
        "h3lab probe conformance: {} ({}), each case on a new connection",
        options.target, options.address
    );
    if let Some(path) = &args.json {
        // A path that cannot be written fails now, not after the cases.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| {
                format!(
                    "cannot write {}; pass a writable --json path",
                    path.display()
                )
            })?;
    }
    let mut written = Ok(());
    let report = run_suite(&options, |so_far| {
        if let Some(case) = so_far.cases.last() {
            println!("{case}");
        }
        if let (Some(path), Ok(())) = (&args.json, &written) {
            written = write_report(path, so_far);
        }
    });
    if let (Err(_), Some(path)) = (&report, &args.json) {
        // Nothing ran: no report, not an empty file.
        let _ = std::fs::remove_file(path);
    }
    let report = report?;
    written?;
    println!("{report}");
    // A case without a verdict (`?`) is not a failure.
    let failed = (report.cases.iter()).any(|case| case.verdict == Verdict::Fail);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The report so far, written after every case: Ctrl-C keeps what ran.
fn write_report(path: &Path, report: &ConformanceReport) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(path, text).with_context(|| {
        format!(
            "cannot write {}; pass a writable --json path",
            path.display()
        )
    })
}
