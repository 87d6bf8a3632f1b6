//! A path as people describe it and the per-direction configuration the
//! model runs, built from it.

use serde::Serialize;

use super::direction::LossDirection;
use crate::model::{
    DirectionConfig, Jitter, LossModel, Nanos, QueueLimit, RateSpec, ReorderSpec, UdpPolicy, Way,
};

/// Smallest default queue, so low-BDP paths still absorb a burst.
pub const DEFAULT_QUEUE_FLOOR_BYTES: u64 = 64 * 1024;

/// Both directions of a path and the seed of every random choice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkConfig {
    /// Client to server.
    pub(crate) up: DirectionConfig,
    /// Server to client.
    pub(crate) down: DirectionConfig,
    /// Seed of every random choice on the path.
    pub(crate) seed: u64,
}

/// A path as people describe it. `build` turns it into a [`LinkConfig`]:
/// half the RTT each way; the loss model drops packets in `loss_direction`
/// only (the other way loses none at random; its queue still drops);
/// jitter, reordering and duplication apply to each direction
/// independently; without an explicit queue, each direction gets a
/// drop-tail byte limit of one bandwidth-delay product (its rate times the
/// RTT) with a floor of `DEFAULT_QUEUE_FLOOR_BYTES` (64 KiB).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkSettings {
    /// Round-trip time the path adds, in nanoseconds (half each way).
    #[serde(rename = "rtt_ns")]
    pub rtt: Nanos,
    /// Server-to-client bottleneck.
    pub down: RateSpec,
    /// Client-to-server bottleneck.
    pub up: RateSpec,
    /// Random loss, in the direction(s) `loss_direction` names.
    pub loss: LossModel,
    /// Which way `loss` drops packets.
    pub loss_direction: LossDirection,
    /// Per-direction jitter of the one-way delay.
    pub jitter: Option<Jitter>,
    /// Drop-tail queue limit per direction; `None`: one bandwidth-delay
    /// product, as above.
    pub queue: Option<QueueLimit>,
    /// Reordering per direction; `None` never reorders.
    pub reorder: Option<ReorderSpec>,
    /// Probability that a packet is sent twice, per direction.
    pub duplicate: f64,
    /// What becomes of UDP in each direction (TCP passes as configured);
    /// written only when it is not `open`.
    #[serde(skip_serializing_if = "UdpPolicy::is_open")]
    pub udp: UdpPolicy,
    /// Seed of every random choice on the path.
    pub seed: u64,
}

impl Default for LinkSettings {
    /// No impairment at all: emulation that only adds the TUN hop.
    fn default() -> Self {
        LinkSettings {
            rtt: 0,
            down: RateSpec::Unlimited,
            up: RateSpec::Unlimited,
            loss: LossModel::NONE,
            loss_direction: LossDirection::default(),
            jitter: None,
            queue: None,
            reorder: None,
            duplicate: 0.0,
            udp: UdpPolicy::Open,
            seed: 1,
        }
    }
}

impl LinkSettings {
    /// The configuration the model runs (see the type's description).
    pub fn build(&self) -> LinkConfig {
        LinkConfig {
            up: self.direction(Way::Up, &self.up),
            down: self.direction(Way::Down, &self.down),
            seed: self.seed,
        }
    }

    fn direction(&self, way: Way, rate: &RateSpec) -> DirectionConfig {
        DirectionConfig {
            delay: self.rtt / 2,
            jitter: self.jitter,
            rate: rate.clone(),
            queue: self.queue.unwrap_or_else(|| self.default_queue(rate)),
            loss: self.loss_in(way),
            reorder: self.reorder,
            duplicate: self.duplicate,
            udp: self.udp,
        }
    }

    fn loss_in(&self, way: Way) -> LossModel {
        if self.loss_direction.applies_to(way) {
            self.loss
        } else {
            LossModel::NONE
        }
    }

    fn default_queue(&self, rate: &RateSpec) -> QueueLimit {
        match rate.mean_bits_per_sec() {
            None => QueueLimit::Unlimited,
            Some(bits_per_sec) => {
                let bdp = bits_per_sec / 8.0 * (self.rtt as f64 / 1e9);
                QueueLimit::Bytes((bdp as u64).max(DEFAULT_QUEUE_FLOOR_BYTES))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Direction, DirectionStats, GilbertElliott, MILLI};

    #[test]
    fn settings_split_the_rtt_and_size_the_default_queue() {
        let settings = LinkSettings {
            rtt: 100 * MILLI,
            down: RateSpec::Fixed {
                bits_per_sec: 80_000_000,
            },
            up: RateSpec::Fixed {
                bits_per_sec: 1_000_000,
            },
            ..LinkSettings::default()
        };
        let config = settings.build();
        assert_eq!(config.down.delay, 50 * MILLI);
        assert_eq!(config.up.delay, 50 * MILLI);
        // 80 Mbit/s x 100 ms = 1 MB; 1 Mbit/s x 100 ms = 12.5 kB -> floor.
        assert_eq!(config.down.queue, QueueLimit::Bytes(1_000_000));
        assert_eq!(
            config.up.queue,
            QueueLimit::Bytes(DEFAULT_QUEUE_FLOOR_BYTES)
        );
    }

    const PACKETS: u64 = 20_000;

    /// Offers `PACKETS` packets to each direction of the model `settings`
    /// build, 1 ms apart in virtual time; returns the two directions' stats.
    fn offer_both_ways(settings: &LinkSettings) -> (DirectionStats, DirectionStats) {
        let config = settings.build();
        let run = |direction_config: &DirectionConfig, way: Way| {
            let mut direction = Direction::new(direction_config, config.seed, way);
            for i in 0..PACKETS {
                direction.offer(1500, i * MILLI);
            }
            direction.stats().clone()
        };
        (run(&config.up, Way::Up), run(&config.down, Way::Down))
    }

    /// Random-loss drops within 4 binomial standard deviations of `p`.
    fn assert_loss_share(stats: &DirectionStats, p: f64) {
        let n = stats.packets_in as f64;
        let sigma = (n * p * (1.0 - p)).sqrt();
        let lost = stats.dropped_loss as f64;
        assert!(
            (lost - n * p).abs() <= 4.0 * sigma,
            "lost {lost} of {n}, expected {} +- {}",
            n * p,
            4.0 * sigma
        );
    }

    fn lossy(direction: LossDirection, loss: LossModel) -> LinkSettings {
        LinkSettings {
            loss,
            loss_direction: direction,
            seed: 11,
            ..LinkSettings::default()
        }
    }

    const FIVE_PERCENT: LossModel = LossModel::Bernoulli { p: 0.05 };

    #[test]
    fn down_loss_drops_no_upstream_packets_but_the_queue_still_does() {
        // Upstream: 1500 B every 1 ms into 6 Mbit/s (2 ms each) overflows
        // its 10-packet queue; downstream is unlimited.
        let settings = LinkSettings {
            up: RateSpec::Fixed {
                bits_per_sec: 6_000_000,
            },
            queue: Some(QueueLimit::Packets(10)),
            ..lossy(LossDirection::Down, FIVE_PERCENT)
        };
        let (up, down) = offer_both_ways(&settings);
        assert_eq!(up.dropped_loss, 0);
        assert!(up.dropped_queue > 0, "the upstream queue never overflowed");
        assert_eq!(down.packets_in, PACKETS);
        assert_loss_share(&down, 0.05);
    }

    #[test]
    fn up_loss_drops_no_downstream_packets() {
        let (up, down) = offer_both_ways(&lossy(LossDirection::Up, FIVE_PERCENT));
        assert_eq!(down.dropped_loss, 0);
        assert_loss_share(&up, 0.05);
    }

    #[test]
    fn both_loses_each_way_with_the_patterns_one_way_loss_gives() {
        let (up, down) = offer_both_ways(&lossy(LossDirection::Both, FIVE_PERCENT));
        assert_loss_share(&up, 0.05);
        assert_loss_share(&down, 0.05);
        // Turning one way's loss off leaves the other way's decisions as
        // they were, so runs differing only in direction stay comparable.
        let (_, down_only) = offer_both_ways(&lossy(LossDirection::Down, FIVE_PERCENT));
        let (up_only, _) = offer_both_ways(&lossy(LossDirection::Up, FIVE_PERCENT));
        assert_eq!(down_only, down);
        assert_eq!(up_only, up);
    }

    #[test]
    fn the_direction_applies_to_gilbert_loss_too() {
        let bursty = LossModel::Gilbert(GilbertElliott {
            p: 0.01,
            r: 0.3,
            loss_good: 0.0,
            loss_bad: 1.0,
        });
        let (up, down) = offer_both_ways(&lossy(LossDirection::Down, bursty));
        assert_eq!(up.dropped_loss, 0);
        assert!(down.dropped_loss > 0);
        let (up, down) = offer_both_ways(&lossy(LossDirection::Up, bursty));
        assert!(up.dropped_loss > 0);
        assert_eq!(down.dropped_loss, 0);
    }
}
