//! `handoffs` in `results.json`: the network handoffs of a population's
//! mobile groups (docs/population.md). Each is one run of `probe
//! migrate`'s scenario (docs/migrate.md) on the group's path: a steady
//! request stream whose client moves to a new address half-way, with the
//! group's h3-off protocol or with h3. A handoff ends in a reset when a
//! connection the client held broke; QUIC can migrate instead.

use serde::{Deserialize, Serialize};

use crate::outcome::Outcome;
use crate::vocab::Proto;

/// One handoff run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoffRecord {
    /// The population group (and the profile) it ran on.
    pub group: String,
    /// The protocol the client followed: the group's h3-off one, or h3.
    pub protocol: Proto,
    /// From 0; the path's seed is the suite's plus this, as a cell's.
    pub repetition: u32,
    /// The path's seed.
    pub seed: u64,
    /// What was run.
    pub scenario: HandoffScenario,
    /// Whether the run completed; a failed run carries no figures.
    pub outcome: Outcome,
    /// What the run measured; `None` unless it completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<HandoffMeasured>,
}

impl HandoffRecord {
    /// True for the h3-on side: a group's h3-off protocol is h1 or h2.
    pub fn h3_on(&self) -> bool {
        self.protocol == Proto::H3
    }
}

/// The request stream and the change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoffScenario {
    /// `address`: the client's IP address changes (a network handoff).
    pub change: String,
    /// Requests started per second, on schedule (open model).
    pub rate_per_s: u32,
    /// How long requests are started, in seconds.
    pub duration_s: f64,
    /// When the address changes, from the first request, in seconds.
    pub switch_at_s: f64,
    /// Each response's body size (`/bytes/N`).
    pub body_bytes: u64,
    /// A request with no complete response this long after its start
    /// fails, and its connection counts as broken.
    pub request_timeout_ms: f64,
}

/// The figures of one handoff run (a part of `probe migrate`'s summary).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HandoffMeasured {
    /// Requests started.
    pub requests: u64,
    /// Requests that got no complete good response.
    pub failed: u64,
    /// Connections opened.
    pub connections_used: u64,
    /// Connections the client found dead.
    pub connections_broken: u64,
    /// Longest time without a successful response, in ms.
    pub stall_ms: f64,
}

impl HandoffMeasured {
    /// Whether a connection the client held broke.
    pub fn ended_in_reset(&self) -> bool {
        self.connections_broken > 0
    }
}
