//! `h3lab site gen`: write a deterministic synthetic site (the page-load
//! studies' shapes) for `h3lab serve --site`; `h3lab site from-har`: a
//! captured page rebuilt as a replay site.

use std::path::PathBuf;
use std::process::ExitCode;

use h3lab_site::har::ImportOptions;
use h3lab_site::replay::Think;
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
    /// Rebuild a captured page (a HAR 1.2 file from a browser or tool) as
    /// a replay site: every origin's responses, as recorded.
    FromHar(FromHarArgs),
}

#[derive(clap::Args)]
struct FromHarArgs {
    /// The HAR file (Chrome, Firefox, Playwright, WebPageTest and others).
    har: PathBuf,
    /// Directory to write (created if missing; an earlier replay site is replaced).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Server think time: `recorded` waits each response's recorded wait
    /// less one round trip; `none` answers at once.
    #[arg(long, value_name = "MODE", default_value = "recorded")]
    think: Think,
    /// The page to import, by its id in the HAR (default: the first page;
    /// for a WebPageTest HAR, the first view of the first run).
    #[arg(long, value_name = "ID")]
    page: Option<String>,
    /// Of a request the page made more than once, keep only the first
    /// response (by default each is replayed in recorded order).
    #[arg(long)]
    keep_first_duplicate: bool,
    /// Replay a capture's cleartext http:// entries over https, with the
    /// http:// URLs of its hosts in bodies and redirects made https://
    /// (by default they are skipped).
    #[arg(long)]
    upgrade_cleartext: bool,
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
        Command::FromHar(args) => from_har(args),
    }
}

fn from_har(args: FromHarArgs) -> anyhow::Result<ExitCode> {
    let options = ImportOptions {
        think: args.think,
        page: args.page,
        keep_first_duplicate: args.keep_first_duplicate,
        upgrade_cleartext: args.upgrade_cleartext,
    };
    let summary = h3lab_site::har::import(&args.har, &args.out, &options)?;
    outln!("replay site in {}", args.out.display());
    out!("{summary}");
    let replay = &summary.replay;
    let port = replay.origins[0].port;
    let resolve: Vec<String> = (replay.origins.iter().enumerate())
        .map(|(i, o)| format!("--resolve {}:{port}:127.0.0.{}", o.host, 10 + i))
        .collect();
    outln!(
        "serve it:  h3lab serve --site {} --listen 0.0.0.0:{port}\nload it:   h3lab page {} {}",
        args.out.display(),
        replay.page,
        resolve.join(" ")
    );
    Ok(ExitCode::SUCCESS)
}

fn generate(args: GenArgs) -> anyhow::Result<ExitCode> {
    let summary = h3lab_site::generate(args.shape, args.seed, &args.out)?;
    outln!(
        "site {} (seed {}) in {}",
        summary.shape,
        summary.seed,
        args.out.display()
    );
    out!("{summary}");
    Ok(ExitCode::SUCCESS)
}
