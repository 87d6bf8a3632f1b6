//! `h3lab-dns`: the DNS server of an emulated path. It answers, with
//! authority, for the host names of the site under test: an `A` record per
//! host, and optionally an `HTTPS` record (RFC 9460, type 65) such as
//! `1 . alpn="h3,h2"` that tells a browser, before its first connection,
//! that the origin speaks HTTP/3. Every other name is NXDOMAIN.
//!
//! Two parts: [`zone`], the records a [`zone::ZoneConfig`] publishes (pure,
//! no sockets), and [`server`], which serves them on UDP and TCP with
//! hickory-server's catalog doing the DNS itself.
//!
//! Not for: resolving names (clients use hickory-resolver or their own
//! resolver), recursion or forwarding, DNSSEC, zone files or dynamic
//! updates, nor placing the server in a namespace (the caller runs it at
//! the server end of a path).

#![warn(missing_docs)]

pub mod server;
pub mod zone;

pub use server::DnsServer;
pub use zone::{Host, Publish, ZoneConfig};
