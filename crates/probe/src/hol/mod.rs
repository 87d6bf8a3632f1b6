//! `probe hol`: N parallel GETs on one h2 or h3 connection over a lossy
//! emulated path, and per stream the head-of-line stall and completion
//! time, measured at the receiver. A capture in the client namespace
//! gives each packet's arrival; the client's TLS key log opens the
//! server's TLS records (h2) or QUIC packets (h3), so each stream's bytes
//! get the time they arrived; the application's reads give the time they
//! were readable. docs/hol.md says what that measures and its limits.

mod analyse;
mod capture;
mod claim;
mod drive;
#[cfg(test)]
mod fixtures;
mod keys;
mod packets;
mod quic;
pub mod report;
mod run;
pub mod timeline;
mod tls;

pub use run::{run_hol, HolOptions};
