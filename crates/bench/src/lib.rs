//! Bench suites, presets, the matrix runner and the `results.json` schema.
//!
//! It runs cells (protocol × profile × workload × repetition) on fresh
//! emulated paths and records what they measured. It does not draw or
//! summarise results: that is `h3lab-report`'s job.

pub mod results;
