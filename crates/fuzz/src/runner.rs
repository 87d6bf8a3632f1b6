//! Runs a target over seeded inputs, and turns a panic (a crash or a failed
//! invariant) into the seed that reproduces it.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arbitrary::Unstructured;

use crate::input::seeded_bytes;
use crate::target::{Target, TargetName};
use crate::{link, profile, routing, suite, trace};

/// Every target, built from its name; the targets sit below this module
/// and know nothing of it.
fn build(name: TargetName) -> anyhow::Result<Box<dyn Target>> {
    Ok(match name {
        TargetName::Link => Box::new(link::LinkTarget),
        TargetName::Trace => Box::new(trace::TraceTarget),
        TargetName::Suite => Box::new(suite::SuiteTarget),
        TargetName::Profile => Box::new(profile::ProfileTarget::new()?),
        TargetName::Routing => Box::new(routing::RoutingTarget::new()?),
    })
}

/// How long a run goes on.
#[derive(Clone, Copy, Debug)]
pub enum Budget {
    /// Exactly this many inputs.
    Inputs(u64),
    /// Inputs until this much time has passed.
    Time(Duration),
}

impl Budget {
    fn allows(self, done: u64, started: Instant) -> bool {
        match self {
            Budget::Inputs(count) => done < count,
            Budget::Time(limit) => started.elapsed() < limit,
        }
    }
}

/// An input that crashed a target or broke one of its invariants.
#[derive(Debug)]
pub struct Failure {
    /// The target that failed.
    pub target: TargetName,
    /// The seed of the input, which reproduces the failure on its own.
    pub seed: u64,
    /// The panic message.
    pub message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "target {} failed on seed {}: {}\nreproduce: cargo run -p h3lab-fuzz --release -- {} --seed {} --inputs 1",
            self.target.name(),
            self.seed,
            self.message,
            self.target.name(),
            self.seed
        )
    }
}

/// Runs `name` on the inputs of seeds `first_seed`, `first_seed + 1`, ...
/// within `budget`, storing each seed in `current` before it runs (so a
/// watchdog can name the input of a hang). Returns the inputs run.
pub fn run(
    name: TargetName,
    first_seed: u64,
    budget: Budget,
    current: &AtomicU64,
) -> Result<u64, Failure> {
    let mut target = build(name).map_err(|err| Failure {
        target: name,
        seed: first_seed,
        message: format!("set-up failed: {err:#}"),
    })?;
    let started = Instant::now();
    let mut done = 0;
    while budget.allows(done, started) {
        let seed = first_seed.wrapping_add(done);
        current.store(seed, Ordering::Relaxed);
        check_one(target.as_mut(), seed).map_err(|message| Failure {
            target: name,
            seed,
            message,
        })?;
        done += 1;
    }
    Ok(done)
}

fn check_one(target: &mut dyn Target, seed: u64) -> Result<(), String> {
    let bytes = seeded_bytes(seed);
    catch_unwind(AssertUnwindSafe(|| {
        // A short input is still a complete run: what it did not reach
        // took default values.
        let _ = target.check(&mut Unstructured::new(&bytes));
    }))
    .map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails on the inputs whose first byte is odd.
    struct OddFirstByte;

    impl Target for OddFirstByte {
        fn check(&mut self, u: &mut Unstructured) -> arbitrary::Result<()> {
            assert!(u.arbitrary::<u8>()? % 2 == 0, "odd first byte");
            Ok(())
        }
    }

    #[test]
    fn a_failing_input_is_reported_with_its_message_and_seeds_replay() {
        let outcomes: Vec<Result<(), String>> = (0..64)
            .map(|seed| check_one(&mut OddFirstByte, seed))
            .collect();
        let failing = outcomes
            .iter()
            .position(Result::is_err)
            .expect("some seed fails");
        assert_eq!(outcomes[failing], Err("odd first byte".to_string()));
        assert!(outcomes.iter().any(Result::is_ok), "some seed passes");
        assert_eq!(
            check_one(&mut OddFirstByte, failing as u64),
            outcomes[failing]
        );
    }
}
