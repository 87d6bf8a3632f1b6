//! What h3lab measures, as data: the versioned JSON schemas every command
//! writes and reads (`h3lab.results/1`, `h3lab.load/1`, `h3lab.ttfb/2`,
//! `h3lab.page/1`, `h3lab.conformance/1`), the mergeable latency histogram they carry, the
//! shared vocabulary (protocol, QUIC congestion controller, handshake mode,
//! workload kind, error kind, page loader, visit, resource kind), the text
//! the built-in server prints and serves (its banner, its metrics'
//! samples), the one quantile of raw samples everything computes, and
//! whether two sets of repetitions differ (`difference`: the permutation
//! test, its interval and the call every verdict comes from; `permutation`
//! its arithmetic; `range_bootstrap` the old rule, kept to measure how
//! often it was wrong), and the command line
//! built back from a command's typed flags (`flags`).
//!
//! Not for: measuring, running or drawing anything. It sits at the bottom of
//! the workspace, so it knows nothing of sockets, processes or HTML, and
//! every other crate can depend on it.

#![warn(missing_docs)]

pub mod bench;
pub mod conformance;
pub mod difference;
pub mod env;
#[cfg(feature = "clap")]
pub mod flags;
pub mod handoff;
mod histogram;
pub mod load;
pub mod offer;
mod outcome;
pub mod page;
pub mod permutation;
pub mod population;
pub mod quantile;
pub mod range_bootstrap;
pub mod server_output;
pub mod ttfb;
mod vocab;

pub use histogram::Micros;
pub use vocab::{
    CostMeasure, ErrorKind, HeaderSet, Loader, Proto, QuicCongestion, ResourceKind, TcpCongestion,
    TtfbMode, UnknownName, Visit, WorkloadKind,
};
