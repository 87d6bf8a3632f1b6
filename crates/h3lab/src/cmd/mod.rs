//! One module per subcommand: its clap arguments and a `run` that wires the
//! library crates together.

pub mod bench;
mod link_flags;
pub mod load;
pub mod net;
pub mod page;
pub mod probe;
pub mod report;
pub mod serve;
pub mod site;
