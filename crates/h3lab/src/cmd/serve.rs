//! `h3lab serve` (being built; see the issue tracker).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`h3lab serve` is not built yet")
}
