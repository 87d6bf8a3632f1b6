//! `h3lab load` (being built; see the issue tracker).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`h3lab load` is not built yet")
}
