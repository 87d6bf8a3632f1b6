//! Single-property probes of the transports: `probe ttfb`, which times
//! the first response byte on new connections (cold, resumed or 0-RTT)
//! against any URL; `probe migrate`, which moves a client to a new port or
//! address in the middle of a steady request stream on an emulated path
//! and reports what each protocol does (QUIC migrates; a TCP connection
//! breaks and is replaced); and `probe hol`, which runs parallel streams on
//! one h2 or h3 connection through a lossy path and measures, per stream,
//! how long data that had arrived waited behind another stream
//! (head-of-line blocking); and `probe fallback`, which loads a site with
//! `Alt-Svc` discovery on paths that let UDP through, block it or throttle
//! it, against the same site over h2 only; and `probe offer`, which asks
//! origins what they offer (ALPN, QUIC, `Alt-Svc`), as a field run does
//! before it measures; and `probe connections`, which holds N idle and then
//! active connections to the built-in server per protocol and reads what
//! each costs the server in memory (`connections`).
//!
//! For ttfb: the sampling loop (`ttfb`) over `h3lab-client`'s measurement.
//! For migrate: the scenario (`scenario`), the pure summaries (`summary`,
//! `claims`), the report (`h3lab.migrate/1`, `report`) and the I/O shell
//! (`run`, `drive`). For hol (`hol`): pure readers of a client-side packet
//! capture (TCP, TLS records and HTTP/2 frames; QUIC packets and HTTP/3
//! frames, opened with the client's TLS key log), the pure stall
//! computation (`hol::timeline`), the report (`h3lab.hol/1`) and its shell.
//! For fallback (`fallback`): the report and its pure summary
//! (`h3lab.fallback/1`) and the shell that runs the built-in loader.
//! The reports print themselves (`Display`) as the command shows them.
//!
//! Not for: load generation or throughput figures (`h3lab-load`), matrix
//! runs (`h3lab-bench`), or drawing reports (`h3lab-report`, of which
//! `fallback` uses only the statistics: `Difference`, `Call`, `seed_for`). Migrate, hol,
//! fallback and connections need root: they create network namespaces (and capture
//! packets or change addresses inside them); the built-in server they start is
//! `h3lab-harness`'s.

#![warn(missing_docs)]

mod claims;
pub mod connections;
mod drive;
pub mod fallback;
pub mod hol;
pub mod offer;
pub mod report;
mod run;
pub mod scenario;
pub mod summary;
pub mod ttfb;

pub use run::{ensure_root, run_migrate, MigrateOptions};
