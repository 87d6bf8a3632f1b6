//! The server as a child process: `h3lab serve` started at the server end
//! of a path (or on loopback) with its certificate written and its metrics
//! listener on, its start-up banner read (`start`), and its Prometheus
//! metrics scraped from its own side of the path (`scrape`); or a server a
//! command starts (Caddy, nginx, ...), its placeholders filled in and its
//! start awaited (`custom`); and the path's DNS server, on a thread in the
//! server namespace (`dns`).
//!
//! It is what `h3lab-bench` (a cell's server) and `h3lab-probe` (the
//! probes' server) share. Not for: serving (`h3lab-server`, which this
//! only starts as a process, from its typed flags `ServeArgs`), what the banner and metrics text mean
//! (`h3lab-results`), or the path and the supervisor (`linkem`).

#![warn(missing_docs)]

pub mod custom;
mod dns;
mod end;
mod scrape;
mod start;

pub use dns::{PathDns, SITE_HOST};
pub use end::End;
pub use scrape::{scrape, scrape_at};
pub use start::{start_builtin, start_builtin_at, start_builtin_on, BuiltinServer};
