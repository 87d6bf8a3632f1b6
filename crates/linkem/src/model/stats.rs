//! Link statistics: counts per direction and a queueing-delay histogram.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::{DropCause, Nanos, MILLI};

/// A packet written this much after its departure time counts as late:
/// the forwarding thread fell behind its schedule (its normal wake-up
/// lateness and interrupt coalescing stay within a tenth of this).
pub const LATE_RELEASE: Nanos = MILLI;

/// Queueing delays (time from arrival at the bottleneck queue until the
/// bottleneck lets the packet go, its own serialization included).
#[derive(Debug, Clone, PartialEq)]
pub struct DelayHistogram(Histogram<u64>);

/// Largest recordable delay: 1000 s in nanoseconds.
const MAX_DELAY: u64 = 1_000_000_000_000;

impl Default for DelayHistogram {
    fn default() -> Self {
        DelayHistogram(Histogram::new_with_bounds(1, MAX_DELAY, 3).expect("valid bounds"))
    }
}

impl DelayHistogram {
    pub(crate) fn record(&mut self, delay: Nanos) {
        self.0.saturating_record(delay.max(1));
    }

    /// The underlying histogram, in nanoseconds.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.0
    }

    fn millis_at(&self, quantile: f64) -> f64 {
        self.0.value_at_quantile(quantile) as f64 / 1e6
    }
}

/// The serialized form: readable percentiles plus the full histogram
/// (HdrHistogram V2 deflate, base64) so runs can be merged later.
#[derive(Serialize, Deserialize)]
struct DelayHistogramJson {
    count: u64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    hdr_v2_deflate_base64: String,
}

impl Serialize for DelayHistogram {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.0, &mut bytes)
            .map_err(|err| serde::ser::Error::custom(format!("{err:?}")))?;
        DelayHistogramJson {
            count: self.0.len(),
            p50_ms: self.millis_at(0.5),
            p99_ms: self.millis_at(0.99),
            max_ms: self.0.max() as f64 / 1e6,
            hdr_v2_deflate_base64: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for DelayHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let json = DelayHistogramJson::deserialize(deserializer)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(json.hdr_v2_deflate_base64)
            .map_err(serde::de::Error::custom)?;
        let histogram = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|err| serde::de::Error::custom(format!("{err:?}")))?;
        Ok(DelayHistogram(histogram))
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Most lost-packet indices kept per direction, so a long lossy run keeps
/// a bounded record.
pub const MAX_LOST_RECORDED: usize = 100_000;

/// What one direction did with its packets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirectionStats {
    /// Packets offered to the direction.
    pub packets_in: u64,
    /// Bytes offered to the direction.
    pub(crate) bytes_in: u64,
    /// Packets that left the direction (duplicates included).
    pub packets_out: u64,
    /// Bytes that left the direction.
    pub(crate) bytes_out: u64,
    /// Packets dropped by random loss.
    pub dropped_loss: u64,
    /// Which packets random loss dropped: their indices among the packets
    /// offered to this direction, from 0, at most [`MAX_LOST_RECORDED`].
    /// Loss is decided first, one seeded draw per packet, so the same seed
    /// drops the same indices whatever the traffic. Kept in memory for
    /// the caller (`probe hol` reports it), not serialized: saved link
    /// statistics (a bench cell's) stay counts.
    #[serde(skip)]
    pub lost_packets: Vec<u64>,
    /// Packets dropped because the queue was full.
    pub dropped_queue: u64,
    /// UDP packets the path's UDP policy dropped (written only when some
    /// were).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_udp: u64,
    /// Bytes of the packets dropped for any cause: what the senders had to
    /// send again (written only when some were).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes_dropped: u64,
    /// Packets sent twice.
    pub(crate) duplicated: u64,
    /// Packets that left more than [`LATE_RELEASE`] after their departure
    /// time.
    #[serde(default)]
    pub released_late: u64,
    /// Time spent in the bottleneck queue, serialization included.
    pub queue_delay: DelayHistogram,
}

impl DirectionStats {
    pub(crate) fn record_in(&mut self, len: u32) {
        self.packets_in += 1;
        self.bytes_in += u64::from(len);
    }

    /// A packet left `lateness` after its departure time.
    pub(crate) fn record_out(&mut self, len: u32, lateness: Nanos) {
        self.packets_out += 1;
        self.bytes_out += u64::from(len);
        if lateness > LATE_RELEASE {
            self.released_late += 1;
        }
    }

    pub(crate) fn record_drop(&mut self, cause: DropCause, len: u32) {
        self.bytes_dropped += u64::from(len);
        match cause {
            DropCause::Loss => {
                self.dropped_loss += 1;
                if self.lost_packets.len() < MAX_LOST_RECORDED {
                    self.lost_packets.push(self.packets_in - 1);
                }
            }
            DropCause::Queue => self.dropped_queue += 1,
            DropCause::Udp => self.dropped_udp += 1,
        }
    }

    fn summary(&self) -> String {
        let udp = match self.dropped_udp {
            0 => String::new(),
            n => format!(", {n} UDP dropped by policy"),
        };
        format!(
            "{} pkts in, {} out, {} lost, {} queue drops{udp}, queue delay p50 {:.2} ms p99 {:.2} ms max {:.2} ms, {} sent over 1 ms late",
            self.packets_in,
            self.packets_out,
            self.dropped_loss,
            self.dropped_queue,
            self.queue_delay.millis_at(0.5),
            self.queue_delay.millis_at(0.99),
            self.queue_delay.0.max() as f64 / 1e6,
            self.released_late,
        )
    }
}

/// Statistics of a whole path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkStats {
    /// Client to server.
    pub up: DirectionStats,
    /// Server to client.
    pub down: DirectionStats,
    /// CPU time of the thread forwarding both directions.
    #[serde(default)]
    pub(crate) forwarder_cpu_s: f64,
    /// The seed of the path's random choices.
    pub(crate) seed: u64,
    /// Seconds since the path started.
    pub(crate) elapsed_s: f64,
}

impl LinkStats {
    /// One line for stderr.
    pub fn summary_line(&self) -> String {
        format!(
            "link: up: {}; down: {}",
            self.up.summary(),
            self.down.summary()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_round_trip_through_json_with_the_histogram() {
        let mut stats = LinkStats::default();
        for delay in [1_000u64, 2_000_000, 30_000_000] {
            stats.down.queue_delay.record(delay);
            stats.down.record_in(1500);
        }
        stats.down.record_drop(DropCause::Queue, 1500);
        let json = serde_json::to_string(&stats).unwrap();
        let back: LinkStats = serde_json::from_str(&json).unwrap();
        assert_eq!(back.down.queue_delay.histogram().len(), 3);
        assert_eq!(back.down.dropped_queue, 1);
        assert_eq!(back.down.bytes_dropped, 1500);
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        let p99 = value["down"]["queue_delay"]["p99_ms"].as_f64().unwrap();
        assert!((p99 - 30.0).abs() < 0.1, "{p99}");
    }
}
