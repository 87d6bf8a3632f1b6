//! The environment variables a command started at either end of a path
//! gets (`run::Placement::command`, and `origin_command` behind an edge),
//! named once: the addresses it serves on and connects from.

/// The server end's address.
pub const SERVER_IP: &str = "H3LAB_SERVER_IP";

/// The client end's address.
pub const CLIENT_IP: &str = "H3LAB_CLIENT_IP";

/// The server end's extra addresses, comma-separated, when the path has
/// any (`h3lab net run --server-addresses N`).
pub const SERVER_IPS: &str = "H3LAB_SERVER_IPS";

/// The origin's address, behind the edge in the server namespace, when the
/// path has an origin leg (`EmulatedPath::add_origin_leg`); on loopback,
/// always 127.0.0.1.
pub const ORIGIN_IP: &str = "H3LAB_ORIGIN_IP";
