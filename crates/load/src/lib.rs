//! The h3lab load engine: drives HTTP/1.1, HTTP/2 or HTTP/3 load at a URL
//! in the closed model (connections x streams) or the open model (fixed
//! rate, latency corrected for coordinated omission) and returns a
//! mergeable report with HdrHistogram percentiles (`h3lab.load/1`). Each
//! protocol runs on an event loop per worker thread, no async runtime:
//! h3 on quinn-proto driven directly (`quic`), h1 and h2 on epoll with
//! rustls' sans-I/O client and framing of their own (`tcp`); `auto` and
//! h3 with `--qlog` on `h3lab-client`'s connections under tokio
//! (`worker`). With the `clap` feature, `h3lab load`'s flags (`cli`): a
//! test's, `load merge`'s, and those a distributed worker adds.
//!
//! Not for: connection set-up details (`h3lab-client`), network emulation
//! (`linkem`) or comparing protocols across runs (`h3lab-bench`).

#![warn(missing_docs)]

mod books;
#[cfg(feature = "clap")]
pub mod cli;
mod config;
mod cpu;
mod engine;
mod fields;
mod head;
mod host;
mod pacer;
mod plan;
mod politeness;
mod progress;
mod quic;
mod report;
mod schedule;
mod server_timing;
mod slot;
mod tally;
mod tcp;
mod worker;

pub use config::{
    parse_body, parse_duration, parse_header, parse_shard, parse_start_at, LoadConfig, StartAt,
};
pub use engine::{run, use_small_pages};
pub use tokio_util::sync::CancellationToken;
