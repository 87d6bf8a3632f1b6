//! What a fuzz target is and the names of all of them. Below the targets
//! and the runner, so a target needs nothing but this to be one.

use arbitrary::Unstructured;

/// The fuzz targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetName {
    /// The link model: any settings and packet sequence.
    Link,
    /// The Mahimahi trace parser and the trace-driven rate.
    Trace,
    /// The suite TOML parser.
    Suite,
    /// Profile values and a suite's `[[profile]]` tables.
    Profile,
    /// URL and header handling in the server's routing.
    Routing,
}

impl TargetName {
    /// Every target, in the order `all` runs them.
    pub const ALL: [TargetName; 5] = [
        TargetName::Link,
        TargetName::Trace,
        TargetName::Suite,
        TargetName::Profile,
        TargetName::Routing,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TargetName::Link => "link",
            TargetName::Trace => "trace",
            TargetName::Suite => "suite",
            TargetName::Profile => "profile",
            TargetName::Routing => "routing",
        }
    }
}

/// One fuzz target: checks one input and panics when an invariant fails.
pub trait Target {
    /// Runs the input `u` holds; an `Err` only means the input ran short.
    fn check(&mut self, u: &mut Unstructured) -> arbitrary::Result<()>;
}
