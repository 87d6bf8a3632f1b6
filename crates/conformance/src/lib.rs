//! `h3lab probe conformance`: HTTP/3, QPACK and QUIC transport parameter
//! error handling, case by case. Each case sends what a conforming client
//! never would (a frame on the wrong stream, a second control stream, a
//! malformed request, a QPACK reference to nothing, an invalid transport
//! parameter) on a connection of its own, cites the RFC
//! text it checks, and reports what the server did: closed with the right
//! code or another, reset the stream, carried on, stopped answering.
//!
//! The cases are data (`suite`), the verdict is pure (`judge`), and the
//! I/O is h3i's blocking client (`run`), or quiche itself for the cases
//! that bend the client's transport parameters (`handshake`). quiche
//! sends those as set but keeps every other QUIC rule, so the cases bend
//! HTTP/3, QPACK and transport parameters only: the report lists what the
//! suite does not cover.
//!
//! It is a project of its own, not a member of h3lab's workspace: h3i's
//! quiche builds BoringSSL, which h3lab's build and tests should not need.
//! `h3lab probe conformance` resolves the URL, runs this crate's binary
//! (`h3lab-conformance run`, src/main.rs) with what it found, and names what
//! a URL offers when it does not answer over HTTP/3.
//!
//! Not for: interoperability or speed (`h3lab bench`'s `servers` preset),
//! or HTTP/2 (h2spec does that).

#![warn(missing_docs)]

mod codes;
mod handshake;
mod judge;
mod options;
mod run;
mod suite;
mod wire;

pub use options::Options;
pub use run::{run_suite, NoHttp3};
pub use suite::{cases, Case, Origin};
