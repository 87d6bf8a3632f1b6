//! The bounded smoke run CI does: each target over a fixed range of seeds,
//! the same inputs every time. The counts keep the whole file under ~30 s
//! in a debug test build; `h3lab-fuzz` runs the long ones.

use std::sync::atomic::AtomicU64;

use h3lab_fuzz::{run, Budget, TargetName};

/// Runs `target` on seeds `0..inputs` and fails with the reproducing seed.
fn smoke(target: TargetName, inputs: u64) {
    let current = AtomicU64::new(0);
    match run(target, 0, Budget::Inputs(inputs), &current) {
        Ok(done) => {
            assert_eq!(done, inputs);
            println!("{}: {done} inputs without a failure", target.name());
        }
        Err(failure) => panic!("{failure}"),
    }
}

#[test]
fn link_model_smoke() {
    smoke(TargetName::Link, 300);
}

#[test]
fn trace_parser_smoke() {
    smoke(TargetName::Trace, 2000);
}

#[test]
fn suite_parser_smoke() {
    smoke(TargetName::Suite, 2000);
}

#[test]
fn profile_parsers_smoke() {
    smoke(TargetName::Profile, 2000);
}

#[test]
fn routing_smoke() {
    smoke(TargetName::Routing, 1000);
}
