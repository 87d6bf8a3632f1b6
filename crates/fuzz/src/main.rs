//! `h3lab-fuzz`: the long fuzz run on demand. Runs one target or all of
//! them for a number of inputs or seconds, prints the inputs each ran, and
//! on a failure the seed that reproduces it (exit status 1). A watchdog
//! names the input of a hang (exit status 2).

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use h3lab_fuzz::{run, Budget, TargetName};

/// An input still running after this long is a hang.
const HANG_AFTER: Duration = Duration::from_secs(60);

#[derive(Parser)]
#[command(about = "Fuzz h3lab's link model, parsers and routing on stable Rust")]
struct Args {
    /// The target to run, or `all`.
    target: Choice,
    /// Inputs per target.
    #[arg(long, conflicts_with = "seconds")]
    inputs: Option<u64>,
    /// Seconds per target (default 60 when --inputs is not given).
    #[arg(long)]
    seconds: Option<f64>,
    /// Seed of the first input; input `i` has seed `seed + i`.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Choice {
    All,
    Link,
    Trace,
    Suite,
    Profile,
    Routing,
}

impl Choice {
    fn targets(self) -> Vec<TargetName> {
        match self {
            Choice::All => TargetName::ALL.to_vec(),
            Choice::Link => vec![TargetName::Link],
            Choice::Trace => vec![TargetName::Trace],
            Choice::Suite => vec![TargetName::Suite],
            Choice::Profile => vec![TargetName::Profile],
            Choice::Routing => vec![TargetName::Routing],
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let budget = match (args.inputs, args.seconds) {
        (Some(count), _) => Budget::Inputs(count),
        (None, seconds) => Budget::Time(Duration::from_secs_f64(seconds.unwrap_or(60.0))),
    };
    for target in args.target.targets() {
        let current = Arc::new(AtomicU64::new(args.seed));
        let done = Arc::new(AtomicBool::new(false));
        watch_for_hangs(target, current.clone(), done.clone());
        let started = Instant::now();
        let outcome = run(target, args.seed, budget, &current);
        done.store(true, Ordering::Relaxed);
        match outcome {
            Ok(inputs) => println!(
                "{}: {inputs} inputs without a failure in {:.1} s (seeds {}..{})",
                target.name(),
                started.elapsed().as_secs_f64(),
                args.seed,
                args.seed.wrapping_add(inputs)
            ),
            Err(failure) => {
                eprintln!("{failure}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}

/// Exits naming the seed when one input runs longer than [`HANG_AFTER`].
fn watch_for_hangs(target: TargetName, current: Arc<AtomicU64>, done: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut last = (current.load(Ordering::Relaxed), Instant::now());
        while !done.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_secs(1));
            let seed = current.load(Ordering::Relaxed);
            if seed != last.0 {
                last = (seed, Instant::now());
            } else if last.1.elapsed() > HANG_AFTER && !done.load(Ordering::Relaxed) {
                eprintln!(
                    "target {} hung on seed {seed} (over {} s)\nreproduce: cargo run -p h3lab-fuzz --release -- {} --seed {seed} --inputs 1",
                    target.name(),
                    HANG_AFTER.as_secs(),
                    target.name()
                );
                std::process::exit(2);
            }
        }
    });
}
