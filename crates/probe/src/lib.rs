//! Single-property probes of the transports: today `probe migrate`, which
//! moves a client to a new port or address in the middle of a steady
//! request stream on an emulated path and reports what each protocol
//! does (QUIC migrates; a TCP connection breaks and is replaced).
//!
//! The crate holds the scenario (`scenario`), the pure summaries of what
//! was observed (`summary`, `claims`), the versioned report
//! (`h3lab.migrate/1`, `report`), and the thin I/O shell that sets up the
//! path, the server and the client (`run`, `drive`).
//!
//! Not for: load generation or throughput figures (`h3lab-load`), matrix
//! runs (`h3lab-bench`), or drawing reports (`h3lab-report`). It needs
//! root: it changes addresses inside the network namespaces it creates.

#![warn(missing_docs)]

mod claims;
mod drive;
pub mod hol;
pub mod report;
mod run;
pub mod scenario;
pub mod summary;

pub use run::{ensure_root, run_migrate, MigrateOptions};
