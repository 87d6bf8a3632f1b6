//! One module per subcommand: its clap arguments and a `run` that wires the
//! library crates together.

pub mod bench;
pub mod dist;
pub mod load;
pub mod net;
pub mod page;
pub mod probe;
pub mod report;
pub mod serve;
pub mod site;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;
use signal_hook::consts::{SIGINT, SIGTERM};

/// A flag SIGINT and SIGTERM set, so a run can end after its current step
/// and keep what it finished; a second SIGINT exits at once with 130.
fn stop_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register_conditional_shutdown(SIGINT, 130, stop.clone())?;
    signal_hook::flag::register(SIGINT, stop.clone())?;
    signal_hook::flag::register(SIGTERM, stop.clone())?;
    Ok(stop)
}

/// This binary, which runs itself: as a bench cell's server and client, a
/// probe's server, a local pod.
fn this_binary() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("cannot find this h3lab binary")
}
