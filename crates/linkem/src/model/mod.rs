//! The pure link model: stages that decide whether and when a packet leaves,
//! what they are given, and what they count.
//!
//! Time is a plain number of nanoseconds since the path started ([`Nanos`]);
//! nothing here reads a clock, a socket or a file descriptor, so every
//! decision can be replayed and tested exactly in virtual time.

mod delay;
mod direction;
mod gro;
mod loss;
mod nat;
mod params;
mod pipe;
mod queue;
mod rate;
mod stats;
mod udp;

pub use delay::Jitter;
pub(crate) use delay::JitterShape;
use delay::{Delay, Duplicate, Reorder};
pub(crate) use direction::Direction;
use direction::Fate;
pub(crate) use gro::{merge as gro_merge, run_length as gro_run_length, PLAIN_HEADER};
pub use gro::{segment as gro_segment, VNET_HEADER_LEN};
use loss::Loss;
pub use loss::{GilbertElliott, LossModel};
pub(crate) use nat::{translate as nat_translate, NatVerdict};
pub(crate) use params::DirectionConfig;
pub use params::{RateSpec, ReorderSpec};
pub(crate) use pipe::Pipe;
use queue::Queue;
pub use queue::QueueLimit;
use rate::Rate;
pub use rate::{Trace, MAX_TRACE_MS, TRACE_OPPORTUNITY_BYTES};
pub use stats::{DelayHistogram, DirectionStats, LinkStats, LATE_RELEASE, MAX_LOST_RECORDED};
pub(crate) use udp::{Transport, UdpGate};
pub use udp::{UdpPolicy, POLICER_BURST, POLICER_MIN_BYTES};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Nanoseconds since the start of the emulated path.
pub type Nanos = u64;

/// Nanoseconds in one millisecond.
pub const MILLI: Nanos = 1_000_000;

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DropCause {
    /// Random loss (Bernoulli or Gilbert-Elliott).
    Loss,
    /// The bottleneck queue was full (drop-tail).
    Queue,
    /// The path's UDP policy ([`UdpPolicy`]).
    Udp,
}

/// What a stage decided about one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The packet leaves the stage at this time.
    Pass(Nanos),
    /// The packet leaves at this time, together with an identical copy.
    Duplicate(Nanos),
    /// The packet is gone.
    Drop(DropCause),
}

/// One impairment: delay, rate, queue, loss, reordering or duplication.
///
/// Every stage answers the same question, so a direction is just stages in a
/// row, each feeding its departure time to the next. Packets must be offered
/// in arrival order (non-decreasing `at` for stages that keep FIFO state).
pub(crate) trait Stage: Send {
    /// A packet of `len` bytes reaches this stage at `at`.
    fn offer(&mut self, len: u32, at: Nanos) -> Verdict;
}

/// Which way packets travel; selects independent random streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Way {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// The impairment a random stream belongs to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Impairment {
    Loss = 0,
    Jitter = 1,
    Reorder = 2,
    Duplicate = 3,
}

/// A generator for one impairment of one direction. Separate streams keep
/// e.g. the loss pattern independent of whether jitter is on, so runs with the
/// same seed (TCP or QUIC) see the same loss decisions per packet index.
pub(crate) fn stream(seed: u64, way: Way, impairment: Impairment) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream((way as u64) * 16 + impairment as u64);
    rng
}
