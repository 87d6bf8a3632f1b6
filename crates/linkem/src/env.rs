//! The environment variables a command started at either end of a path
//! gets (`run::Placement::command`), named once: the addresses it serves
//! on and connects from.

/// The server end's address.
pub const SERVER_IP: &str = "H3LAB_SERVER_IP";

/// The client end's address.
pub const CLIENT_IP: &str = "H3LAB_CLIENT_IP";

/// The server end's extra addresses, comma-separated, when the path has
/// any (`h3lab net run --server-addresses N`).
pub const SERVER_IPS: &str = "H3LAB_SERVER_IPS";
