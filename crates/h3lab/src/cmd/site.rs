//! `h3lab site gen`: write a deterministic synthetic site (the page-load
//! studies' shapes) for `h3lab serve --site`.

use std::path::PathBuf;
use std::process::ExitCode;

use h3lab_site::Shape;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Generate a site: small, content, spa (study C) or cms (study E).
    Gen(GenArgs),
}

#[derive(clap::Args)]
struct GenArgs {
    /// The site's shape: small, content, spa or cms.
    shape: Shape,
    /// Directory to write (created if missing; an earlier generated site is replaced).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Seed for the file sizes and filler; the same shape and seed give the same bytes.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Gen(args) => generate(args),
    }
}

fn generate(args: GenArgs) -> anyhow::Result<ExitCode> {
    let summary = h3lab_site::generate(args.shape, args.seed, &args.out)?;
    println!(
        "site {} (seed {}) in {}",
        summary.shape,
        summary.seed,
        args.out.display()
    );
    print!("{summary}");
    Ok(ExitCode::SUCCESS)
}
