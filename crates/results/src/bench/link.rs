//! `cells[].link`: what an emulated path did with each direction's packets,
//! and the settings it ran with.

use serde::{Deserialize, Serialize};

use super::is_zero;

/// `cells[].link`: what the emulated path did and what it was set to.
/// linkem writes it (`LinkStats` and `LinkSettings`); this crate sits below
/// linkem, so it reads the same JSON with types of its own. Fields are in
/// linkem's order, so a record read and written again keeps its bytes.
/// Fields a newer linkem adds are not known here: they are read past, and
/// not written back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkRecord {
    /// Client to server.
    pub up: DirectionRecord,
    /// Server to client.
    pub down: DirectionRecord,
    /// CPU seconds of the path's forwarding thread (absent in old runs).
    #[serde(default)]
    pub forwarder_cpu_s: f64,
    /// The seed of the path's random decisions.
    pub seed: u64,
    /// Seconds the path ran.
    pub elapsed_s: f64,
    /// What the path was set to; absent in records written before it was
    /// added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<PathSettings>,
}

/// What one direction of the path did with its packets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirectionRecord {
    /// Packets offered to the direction.
    pub packets_in: u64,
    /// Bytes offered to the direction.
    pub bytes_in: u64,
    /// Packets that left the direction (duplicates included).
    pub packets_out: u64,
    /// Bytes that left the direction.
    pub bytes_out: u64,
    /// Packets dropped by random loss.
    pub dropped_loss: u64,
    /// Packets dropped because the queue was full.
    pub dropped_queue: u64,
    /// UDP packets the path's UDP policy dropped (absent when none were).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_udp: u64,
    /// Bytes of the packets dropped for any cause, which their senders
    /// had to send again (absent when none were, and in old runs).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes_dropped: u64,
    /// Packets sent twice.
    pub duplicated: u64,
    /// Packets that left over 1 ms after their departure time (absent in
    /// old runs).
    #[serde(default)]
    pub released_late: u64,
    /// Time in the bottleneck queue, serialization included.
    pub queue_delay: QueueDelay,
}

/// Queueing delay of one direction: readable percentiles and the full
/// histogram, so runs can be merged later.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueDelay {
    /// Packets measured.
    pub count: u64,
    /// Median delay, in ms.
    pub p50_ms: f64,
    /// 99th percentile delay, in ms.
    pub p99_ms: f64,
    /// Largest delay, in ms.
    pub max_ms: f64,
    /// The histogram in nanoseconds (HdrHistogram V2 + DEFLATE, base64).
    pub hdr_v2_deflate_base64: String,
}

/// `link.settings`: the path's settings, the profile after the suite's
/// changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathSettings {
    /// Round trip the path adds, in ns (half each way).
    pub rtt_ns: u64,
    /// Server-to-client bottleneck.
    pub down: Rate,
    /// Client-to-server bottleneck.
    pub up: Rate,
    /// Random loss, in the direction(s) `loss_direction` names.
    pub loss: Loss,
    /// Which way `loss` drops packets.
    pub loss_direction: LossDirection,
    /// Random variation of each direction's one-way delay.
    pub jitter: Option<Jitter>,
    /// Each direction's drop-tail queue limit; `null`: one bandwidth-delay
    /// product (docs/results-schema.md).
    pub queue: Option<QueueLimit>,
    /// Reordering in each direction.
    pub reorder: Option<Reorder>,
    /// Probability that a packet is sent twice, per direction.
    #[serde(default)]
    pub duplicate: f64,
    /// What the path does to UDP, as `--udp` spells it (`blocked`,
    /// `blocked-after:20`, `throttle:2mbit`); absent when UDP passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<String>,
    /// Seed of every random choice on the path.
    pub seed: u64,
}

/// Random variation of the one-way delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jitter {
    /// Half-width (uniform) or standard deviation (normal), in ns.
    pub amount_ns: u64,
    /// The distribution it is drawn from.
    pub shape: JitterShape,
}

/// The distribution jitter is drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JitterShape {
    /// Uniform in `[-amount, +amount]`.
    Uniform,
    /// Normal with standard deviation `amount`.
    Normal,
}

/// How much a direction's bottleneck queue may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueLimit {
    /// At most this many packets.
    Packets(u64),
    /// At most this many bytes.
    Bytes(u64),
    /// No limit.
    Unlimited,
}

/// A share of packets held back so that later ones overtake them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Reorder {
    /// Share of packets held back (0 to 1).
    pub probability: f64,
    /// How much longer a held-back packet takes, in ns.
    pub extra_delay_ns: u64,
}

/// The bottleneck of one direction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// No rate limit.
    Unlimited,
    /// Serialization at a fixed bit rate.
    Fixed {
        /// The rate, in bits/s.
        bits_per_sec: u64,
    },
    /// Delivery opportunities from a Mahimahi trace file, as given.
    Trace(String),
}

/// How packets are lost at random, probabilities 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum Loss {
    /// Each packet is lost independently with probability `p`.
    Bernoulli {
        /// Loss probability per packet.
        p: f64,
    },
    /// Gilbert-Elliott bursty loss, as netem's `gemodel` names it.
    Gilbert {
        /// P(good -> bad) per packet.
        p: f64,
        /// P(bad -> good) per packet.
        r: f64,
        /// Loss probability in the good state.
        loss_good: f64,
        /// Loss probability in the bad state.
        loss_bad: f64,
    },
}

/// Which way the path's random loss drops packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LossDirection {
    /// Server to client.
    Down,
    /// Client to server.
    Up,
    /// Each way independently.
    Both,
}
