//! What one direction of the model is given: its delay, bottleneck, queue,
//! loss, reordering, duplication and UDP policy.

use serde::{Serialize, Serializer};

use super::{Jitter, LossModel, Nanos, QueueLimit, Trace, UdpPolicy};

/// The bottleneck service of one direction.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RateSpec {
    /// No rate limit.
    Unlimited,
    /// Serialization at a fixed bit rate.
    Fixed {
        /// The rate, in bits/s.
        bits_per_sec: u64,
    },
    /// Delivery opportunities from a Mahimahi trace.
    Trace(Trace),
}

impl Serialize for Trace {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl RateSpec {
    /// Mean rate in bits per second; `None` when unlimited.
    pub fn mean_bits_per_sec(&self) -> Option<f64> {
        match self {
            RateSpec::Unlimited => None,
            RateSpec::Fixed { bits_per_sec } => Some(*bits_per_sec as f64),
            RateSpec::Trace(trace) => Some(trace.mean_bits_per_sec()),
        }
    }
}

/// Holding back a share of packets so later ones overtake them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ReorderSpec {
    /// Share of packets held back (0 to 1).
    pub probability: f64,
    /// How long a held-back packet is delayed further, in nanoseconds.
    #[serde(rename = "extra_delay_ns")]
    pub extra_delay: Nanos,
}

/// Everything one direction of the model needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct DirectionConfig {
    /// One-way propagation delay.
    pub delay: Nanos,
    pub jitter: Option<Jitter>,
    pub rate: RateSpec,
    pub queue: QueueLimit,
    pub loss: LossModel,
    pub reorder: Option<ReorderSpec>,
    /// Probability that a packet is sent twice.
    pub duplicate: f64,
    /// What becomes of UDP (TCP passes as configured).
    pub udp: UdpPolicy,
}
