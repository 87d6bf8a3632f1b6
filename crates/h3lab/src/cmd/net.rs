//! `h3lab net`: run programs behind an emulated network link (linkem).

use std::fs::File;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use linkem::config::{parse_time, Overrides};
use linkem::model::Nanos;
use linkem::run::{run_commands, Interrupted, Placement};
use linkem::{EmulatedPath, LinkSettings};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: NetCommand,
}

#[derive(clap::Subcommand)]
enum NetCommand {
    /// Run CMD in the client namespace of an emulated path
    /// (H3LAB_SERVER_IP and H3LAB_CLIENT_IP are exported).
    Run(Box<RunArgs>),
    /// List the built-in network profiles with their sources.
    Profiles,
    /// Remove namespaces left behind by h3lab processes that died.
    Cleanup,
    /// Measure forwarding capacity: packets/s and CPU per packet.
    Bench(BenchArgs),
}

#[derive(clap::Args)]
struct RunArgs {
    /// Built-in profile (see `h3lab net profiles`); without it, only the
    /// given overrides apply.
    #[arg(long)]
    profile: Option<String>,
    #[command(flatten)]
    link: Overrides,
    /// Write the link statistics as JSON to this file at exit.
    #[arg(long)]
    stats: Option<PathBuf>,
    /// Shell command to run in the server namespace while CMD runs.
    #[arg(long)]
    server_cmd: Option<String>,
    /// Give the server N more addresses (198.18.0.10 on; the commands see
    /// them in H3LAB_SERVER_IPS), one per origin of a replayed page
    /// (`h3lab page --replay` uses them). Needs root.
    #[arg(long, value_name = "N", default_value_t = 0)]
    server_addresses: usize,
    /// The program to run in the client namespace, after `--`.
    #[arg(last = true)]
    command: Vec<String>,
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Profile to forward through; default: no rate limit (raw capacity).
    #[arg(long)]
    profile: Option<String>,
    /// How long to blast.
    #[arg(long, default_value = "3s", value_parser = parse_time)]
    duration: Nanos,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        NetCommand::Run(args) => run_behind_link(*args),
        NetCommand::Profiles => {
            for profile in linkem::profiles() {
                outln!("{}", profile.describe());
            }
            Ok(ExitCode::SUCCESS)
        }
        NetCommand::Cleanup => {
            let removed = linkem::cleanup_stale()?;
            eprintln!("removed {} stale namespace(s)", removed.len());
            for name in removed {
                outln!("{name}");
            }
            Ok(ExitCode::SUCCESS)
        }
        NetCommand::Bench(args) => bench(args),
    }
}

fn run_behind_link(args: RunArgs) -> anyhow::Result<ExitCode> {
    // Everything is checked before anything is created.
    anyhow::ensure!(
        !args.command.is_empty(),
        "missing command: put the program to run after `--`, \
         e.g. `h3lab net run --profile cellular -- curl http://$H3LAB_SERVER_IP/`"
    );
    let settings = settings_from(&args)?;
    let stats_file = args
        .stats
        .as_ref()
        .map(|path| {
            File::create(path).with_context(|| {
                format!(
                    "cannot write stats file {}; give a writable path",
                    path.display()
                )
            })
        })
        .transpose()?;
    let interrupted = Interrupted::install()?;
    let Some(settings) = settings else {
        anyhow::ensure!(
            args.server_addresses == 0,
            "--server-addresses needs an emulated path; on plain loopback every 127.0.0.0/8 address is the server's already"
        );
        let exit = run_commands(
            &Placement::Loopback,
            &args.command,
            args.server_cmd.as_deref(),
            &interrupted,
        )?;
        return Ok(ExitCode::from(exit.shell_code()));
    };
    let mut path = EmulatedPath::start(settings.build())?;
    if args.server_addresses > 0 {
        path.add_server_addresses(args.server_addresses)?;
    }
    let exit = run_commands(
        &Placement::Emulated(&path),
        &args.command,
        args.server_cmd.as_deref(),
        &interrupted,
    );
    let stats = path.shutdown()?;
    eprintln!("{}", stats.summary_line());
    if let Some(file) = stats_file {
        serde_json::to_writer_pretty(file, &stats).context("writing the stats file")?;
    }
    Ok(ExitCode::from(exit?.shell_code()))
}

/// The profile with the overrides applied; `None` means plain loopback
/// (the `loopback` profile without overrides).
fn settings_from(args: &RunArgs) -> anyhow::Result<Option<LinkSettings>> {
    let base = match &args.profile {
        Some(name) => linkem::profile(name)?.settings,
        None => Some(LinkSettings::default()),
    };
    args.link.apply(base)
}

fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let settings = match &args.profile {
        Some(name) => linkem::profile(name)?.settings.with_context(|| {
            format!("profile `{name}` does not emulate anything; pick an emulated profile")
        })?,
        None => LinkSettings::default(),
    };
    eprintln!(
        "blasting 1500-byte UDP packets client -> server for {:.1} s...",
        args.duration as f64 / 1e9
    );
    let report = linkem::capacity::measure(&settings, Duration::from_nanos(args.duration))?;
    outln!("{}", serde_json::to_string_pretty(&report)?);
    eprintln!("{report}");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use linkem::config::LossDirection;

    #[derive(Parser)]
    struct RunCli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn run_args(flags: &[&str]) -> Result<RunArgs, clap::Error> {
        let argv = ["net-run"].iter().chain(flags).chain(&["--", "true"]);
        RunCli::try_parse_from(argv).map(|cli| cli.run)
    }

    fn loss_direction(flags: &[&str]) -> LossDirection {
        let args = run_args(flags).unwrap();
        settings_from(&args).unwrap().unwrap().loss_direction
    }

    #[test]
    fn loss_direction_flag_sets_the_direction_over_the_default_and_the_profile() {
        assert_eq!(loss_direction(&["--loss", "1%"]), LossDirection::Down);
        for (value, expected) in [
            ("down", LossDirection::Down),
            ("up", LossDirection::Up),
            ("both", LossDirection::Both),
        ] {
            let flags = ["--profile", "cellular", "--loss-direction", value];
            assert_eq!(loss_direction(&flags), expected);
        }
    }
}
