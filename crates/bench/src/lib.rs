//! Bench suites, presets and the matrix runner.
//!
//! It runs cells (protocol × profile × workload [× swept setting] ×
//! repetition) on fresh emulated paths and records what they measured, in
//! the `results.json` schema that `h3lab-results` owns. It does not draw
//! or summarise results: that is `h3lab-report`'s job.

#![warn(missing_docs)]

mod cell;
mod client;
mod edge;
mod environment;
pub mod field;
pub mod handoff;
mod plan;
pub mod presets;
mod process;
mod profile;
pub mod runner;
mod server;
mod spec;
pub mod suite;
mod sweep;
mod usage;

pub use spec::CellSpec;
