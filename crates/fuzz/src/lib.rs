//! Fuzzing on stable Rust for h3lab: seeded, reproducible inputs fed
//! through `arbitrary` to five targets, each of which checks invariants as
//! well as "no panic":
//!
//! - `link`: the link model (any settings, any packet sequence);
//! - `trace`: the Mahimahi trace parser and the trace-driven rate;
//! - `suite`: the suite TOML parser;
//! - `profile`: the profile value parsers and a suite's `[[profile]]` tables;
//! - `routing`: URL and header handling in the server's routing and
//!   responders.
//!
//! The crate's tests are the bounded smoke runs CI does; the `h3lab-fuzz`
//! binary is the long run on demand (`docs/fuzzing.md`). It is not a
//! coverage-guided fuzzer: inputs come from a seeded generator, so every
//! failure is reproduced by its seed alone.

#![warn(missing_docs)]

pub mod input;
pub mod link;
pub mod oracle;
pub mod profile;
pub mod routing;
pub mod runner;
pub mod suite;
pub mod target;
pub mod trace;

pub use runner::{run, Budget, Failure};
pub use target::TargetName;
