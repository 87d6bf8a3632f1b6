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
//! each costs the server in memory (`connections`); and `probe
//! conformance`, which runs the HTTP/3, QPACK and QUIC transport
//! error-handling suite of the `h3lab-conformance` helper against a URL
//! (`conformance`).
//!
//! Each probe has one home: `ttfb`, `offer` and `conformance` (a file
//! each), and
//! `migrate`, `hol`, `fallback` and `connections` (a folder each, with
//! its pure summaries and report beside the I/O that gathers them). Those
//! four run on an emulated path and share `shell`: the root check, the
//! built-in server, a client that trusts it, and the loop that runs each
//! variant, keeps what it gathered and stops on Ctrl-C. The reports print
//! themselves (`Display`) as the command shows them. Each probe's flags,
//! and what they ask for, are in `cli` (with the `clap` feature).
//!
//! Not for: load generation or throughput figures (`h3lab-load`), matrix
//! runs (`h3lab-bench`), or drawing reports (`h3lab-report`); the
//! statistics `fallback` uses (`Difference`) are `h3lab-results`'. The
//! probes on an emulated path need root: they create network namespaces
//! (and capture packets or change addresses inside them); the built-in
//! server they start is `h3lab-harness`'s.

#![warn(missing_docs)]

mod claim;
#[cfg(feature = "clap")]
pub mod cli;
pub mod conformance;
pub mod connections;
pub mod fallback;
pub mod hol;
pub mod migrate;
pub mod offer;
mod shell;
pub mod ttfb;

pub use migrate::{run_migrate, MigrateOptions};
pub use shell::ensure_root;
