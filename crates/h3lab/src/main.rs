//! `h3lab`: compare HTTP/1.1, HTTP/2 and HTTP/3 on the same emulated path.
//!
//! This binary only parses arguments and wires the library crates together;
//! the work lives in `crates/*`.

/// `println!` through [`output::write`].
macro_rules! outln {
    () => {
        $crate::output::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` through [`output::write`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*))
    };
}

mod cmd;
#[cfg(test)]
mod docs_drift;
mod output;

/// mimalloc instead of glibc's malloc: the HTTP stacks allocate per request
/// and per packet, and glibc's malloc and free took about 10 % of the
/// server's CPU at 1 KB requests (docs/performance.md). Every protocol
/// gets it alike.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "h3lab",
    version,
    about = "Is HTTP/3 faster than HTTP/2 and HTTP/1.1 for my users? Measure it."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the dual-stack reference server (h1+h2 on TCP, h3 on UDP, one port).
    Serve(h3lab_server::cli::ServeArgs),
    /// Load-test a URL over h1, h2, h3 or auto (discovery as browsers do).
    Load(cmd::load::Args),
    /// Split one load across many machines as a Kubernetes Indexed Job,
    /// and merge the workers' reports exactly.
    Dist(cmd::dist::Args),
    /// Run commands behind an emulated network link (no netem needed).
    Net(cmd::net::Args),
    /// Write a synthetic site shaped after the page-load studies (gen), or
    /// rebuild a captured page from its HAR as a replay site (from-har).
    Site(cmd::site::Args),
    /// Load a whole page (HTML and every asset) and time it, with the built-in
    /// loader or real Chromium.
    Page(h3lab_page::cli::PageArgs),
    /// Single-property probes: first byte cold, resumed and 0-RTT (ttfb),
    /// connection migration (migrate), head-of-line blocking (hol), UDP
    /// blocked or throttled (fallback), what an origin offers (offer), a
    /// connection's memory (connections), HTTP/3, QPACK and QUIC transport
    /// parameter error handling against the RFCs (conformance).
    Probe(cmd::probe::Args),
    /// Compare h1, h2 and h3 across network profiles and workloads (the main
    /// job): a preset, your own suite or HAR, or your deployed site (--url).
    Bench(cmd::bench::Args),
    /// Re-render a saved results.json into results.csv and report.html.
    Report(cmd::report::ReportArgs),
    /// Show how two saved runs differ.
    Compare(cmd::report::CompareArgs),
}

fn main() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Serve(args) => cmd::serve::run(args),
        Command::Load(args) => cmd::load::run(args),
        Command::Dist(args) => cmd::dist::run(args),
        Command::Net(args) => cmd::net::run(args),
        Command::Site(args) => cmd::site::run(args),
        Command::Page(args) => cmd::page::run(args),
        Command::Probe(args) => cmd::probe::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Report(args) => cmd::report::report(args),
        Command::Compare(args) => cmd::report::compare(args),
    };
    match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("H3LAB_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// `h3lab --help` names every probe and every way to make a site, so a
    /// new one cannot go unmentioned there.
    #[test]
    fn the_top_level_help_names_every_probe_and_site_command() {
        let cli = super::Cli::command();
        for group in ["probe", "site"] {
            let command = cli.find_subcommand(group).unwrap();
            let about = command.get_about().unwrap().to_string();
            for sub in command.get_subcommands() {
                let name = format!("({})", sub.get_name());
                assert!(
                    about.contains(&name),
                    "`{group}`'s help misses {name}: {about}"
                );
            }
        }
    }
}
