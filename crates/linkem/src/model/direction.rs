//! One direction of a link: loss, then the UDP policy (UDP only), then the
//! bottleneck (queue + rate), then propagation delay, reordering and
//! duplication.

use super::{
    stream, Delay, DropCause, Duplicate, Impairment, Loss, Nanos, Queue, Rate, Reorder, Stage,
    Transport, UdpGate, Verdict, Way,
};
use crate::model::{DirectionConfig, DirectionStats, RateSpec};

/// What becomes of a packet offered to a direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Leaves the link at `at`, `copies` times (2 when duplicated).
    Deliver {
        at: Nanos,
        copies: u8,
    },
    Drop(DropCause),
}

/// The stages of one direction, composed. Loss comes first, so a lost
/// packet takes no capacity (as in netem); the queue's sojourn time is what
/// the queueing-delay histogram records.
pub(crate) struct Direction {
    loss: Loss,
    udp: UdpGate,
    bottleneck: Queue<Rate>,
    egress: Vec<Box<dyn Stage>>,
    stats: DirectionStats,
}

impl Direction {
    pub fn new(config: &DirectionConfig, seed: u64, way: Way) -> Direction {
        let rate = match &config.rate {
            RateSpec::Unlimited => Rate::Unlimited,
            RateSpec::Fixed { bits_per_sec } => Rate::fixed(*bits_per_sec),
            RateSpec::Trace(trace) => Rate::trace(trace.clone()),
        };
        let jitter = config
            .jitter
            .map(|jitter| (jitter, stream(seed, way, Impairment::Jitter)));
        let mut egress: Vec<Box<dyn Stage>> = vec![Box::new(Delay::new(config.delay, jitter))];
        if let Some(reorder) = config.reorder {
            egress.push(Box::new(Reorder::new(
                reorder.probability,
                reorder.extra_delay,
                stream(seed, way, Impairment::Reorder),
            )));
        }
        if config.duplicate > 0.0 {
            egress.push(Box::new(Duplicate::new(
                config.duplicate,
                stream(seed, way, Impairment::Duplicate),
            )));
        }
        Direction {
            loss: Loss::new(config.loss, stream(seed, way, Impairment::Loss)),
            udp: UdpGate::new(config.udp),
            bottleneck: Queue::new(config.queue, rate),
            egress,
            stats: DirectionStats::default(),
        }
    }

    /// Decides the fate of a packet of `len` bytes, not UDP, arriving at
    /// `now`. Arrivals must come in non-decreasing time order.
    #[cfg(test)]
    pub fn offer(&mut self, len: u32, now: Nanos) -> Fate {
        self.offer_as(len, Transport::Other, now)
    }

    /// [`Direction::offer`] for a packet of `transport`.
    pub fn offer_as(&mut self, len: u32, transport: Transport, now: Nanos) -> Fate {
        self.stats.record_in(len);
        match self.decide(len, transport, now) {
            Ok((at, copies)) => {
                if copies > 1 {
                    self.stats.duplicated += 1;
                }
                Fate::Deliver { at, copies }
            }
            Err(cause) => {
                self.stats.record_drop(cause, len);
                Fate::Drop(cause)
            }
        }
    }

    fn decide(
        &mut self,
        len: u32,
        transport: Transport,
        now: Nanos,
    ) -> Result<(Nanos, u8), DropCause> {
        let mut copies = 1;
        let queued = step(&mut self.loss, len, now, &mut copies)?;
        if transport == Transport::Udp && !self.udp.admit(len, queued) {
            return Err(DropCause::Udp);
        }
        let mut at = step(&mut self.bottleneck, len, queued, &mut copies)?;
        self.stats.queue_delay.record(at - queued);
        for stage in &mut self.egress {
            at = step(stage.as_mut(), len, at, &mut copies)?;
        }
        Ok((at, copies))
    }

    pub fn stats(&self) -> &DirectionStats {
        &self.stats
    }

    pub(crate) fn stats_mut(&mut self) -> &mut DirectionStats {
        &mut self.stats
    }
}

fn step(stage: &mut dyn Stage, len: u32, at: Nanos, copies: &mut u8) -> Result<Nanos, DropCause> {
    match stage.offer(len, at) {
        Verdict::Pass(t) => Ok(t),
        Verdict::Duplicate(t) => {
            *copies = copies.saturating_mul(2);
            Ok(t)
        }
        Verdict::Drop(cause) => Err(cause),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ReorderSpec;
    use crate::model::{Jitter, JitterShape, LossModel, QueueLimit, UdpPolicy, MILLI};

    fn config() -> DirectionConfig {
        DirectionConfig {
            delay: 20 * MILLI,
            jitter: None,
            rate: RateSpec::Fixed {
                bits_per_sec: 12_000_000,
            },
            queue: QueueLimit::Unlimited,
            loss: LossModel::NONE,
            reorder: None,
            duplicate: 0.0,
            udp: UdpPolicy::Open,
        }
    }

    #[test]
    fn the_udp_policy_drops_udp_only_and_leaves_the_loss_pattern_alone() {
        let lossy = DirectionConfig {
            loss: LossModel::Bernoulli { p: 0.2 },
            ..config()
        };
        let blocked = DirectionConfig {
            udp: UdpPolicy::Blocked,
            ..lossy.clone()
        };
        let mut open = Direction::new(&lossy, 3, Way::Down);
        let mut closed = Direction::new(&blocked, 3, Way::Down);
        for i in 0..1000 {
            let at = i * MILLI;
            open.offer_as(1200, Transport::Udp, at);
            closed.offer_as(1200, Transport::Udp, at);
        }
        assert_eq!(open.stats().lost_packets, closed.stats().lost_packets);
        let lost = closed.stats().dropped_loss;
        assert_eq!(closed.stats().dropped_udp, 1000 - lost);
        assert_eq!(open.stats().dropped_udp, 0);
        assert!(matches!(
            closed.offer_as(1200, Transport::Other, 1000 * MILLI),
            Fate::Deliver { .. } | Fate::Drop(DropCause::Loss)
        ));
    }

    fn run(direction: &mut Direction, arrivals: &[Nanos]) -> Vec<Fate> {
        arrivals
            .iter()
            .map(|&at| direction.offer(1500, at))
            .collect()
    }

    fn departures(fates: &[Fate]) -> Vec<Nanos> {
        fates
            .iter()
            .filter_map(|fate| match fate {
                Fate::Deliver { at, .. } => Some(*at),
                Fate::Drop(_) => None,
            })
            .collect()
    }

    #[test]
    fn the_same_seed_drops_the_same_packet_indices_whatever_the_traffic() {
        let mut cfg = config();
        cfg.loss = LossModel::Bernoulli { p: 0.05 };
        let mut small = Direction::new(&cfg, 7, Way::Down);
        let mut large = Direction::new(&cfg, 7, Way::Down);
        let small_fates: Vec<Fate> = (0..2000).map(|i| small.offer(100, i * MILLI)).collect();
        for i in 0..2000 {
            large.offer(1500, i * 3 * MILLI);
        }
        let lost: Vec<u64> = small_fates
            .iter()
            .enumerate()
            .filter(|(_, fate)| **fate == Fate::Drop(DropCause::Loss))
            .map(|(index, _)| index as u64)
            .collect();
        assert!(lost.len() > 50, "{}", lost.len());
        assert_eq!(small.stats().lost_packets, lost);
        assert_eq!(large.stats().lost_packets, lost);
        let mut other = Direction::new(&cfg, 8, Way::Down);
        for i in 0..2000 {
            other.offer(100, i * MILLI);
        }
        assert_ne!(other.stats().lost_packets, lost);
    }

    #[test]
    fn every_packet_gets_exactly_delay_plus_serialization_when_idle() {
        let mut direction = Direction::new(&config(), 1, Way::Down);
        // 5 ms apart: the 1 ms serialization never queues.
        let arrivals: Vec<Nanos> = (0..1000).map(|i| i * 5 * MILLI + 17).collect();
        let out = departures(&run(&mut direction, &arrivals));
        for (at, left) in arrivals.iter().zip(&out) {
            assert_eq!(left - at, 21 * MILLI);
        }
        let histogram = direction.stats().queue_delay.histogram();
        assert!(histogram.equivalent(histogram.min(), MILLI));
        assert!(histogram.equivalent(histogram.max(), MILLI));
    }

    #[test]
    fn saturated_direction_delivers_the_rate_and_respects_the_queue() {
        let mut cfg = config();
        cfg.queue = QueueLimit::Packets(50);
        let mut direction = Direction::new(&cfg, 1, Way::Down);
        // Offered at 2x the rate for 10 s.
        let arrivals: Vec<Nanos> = (0..20_000).map(|i| i * MILLI / 2).collect();
        let fates = run(&mut direction, &arrivals);
        let out = departures(&fates);
        let span = (out.last().unwrap() - out.first().unwrap()) as f64 / 1e9;
        let rate = (out.len() - 1) as f64 * 1500.0 * 8.0 / span;
        assert!((rate / 12e6 - 1.0).abs() < 0.01, "{rate}");
        // Queue: at most 50 packets (50 ms at 1 ms each) of waiting.
        let max_queue = direction.stats().queue_delay.histogram().max();
        assert!(max_queue <= 51 * MILLI, "{max_queue}");
        assert!(max_queue >= 49 * MILLI, "{max_queue}");
        let stats = direction.stats();
        assert_eq!(stats.packets_in, 20_000);
        assert_eq!(stats.dropped_queue + out.len() as u64, 20_000);
    }

    #[test]
    fn bursty_overload_still_delivers_the_full_rate() {
        // fast-1g as the shell sees it: bursts of 64 packets read at once,
        // 118 k packets/s offered to a 1 Gbit/s link with a 250 kB queue.
        let cfg = DirectionConfig {
            rate: RateSpec::Fixed {
                bits_per_sec: 1_000_000_000,
            },
            queue: QueueLimit::Bytes(250_000),
            delay: MILLI,
            ..config()
        };
        let mut direction = Direction::new(&cfg, 1, Way::Down);
        let arrivals: Vec<Nanos> = (0..118_000u64).map(|i| (i / 64) * 542_000).collect();
        let out = departures(&run(&mut direction, &arrivals));
        let span = (out.last().unwrap() - out.first().unwrap()) as f64 / 1e9;
        let rate = (out.len() - 1) as f64 * 1500.0 * 8.0 / span;
        assert!((rate / 1e9 - 1.0).abs() < 0.01, "{rate}");
    }

    fn impaired() -> DirectionConfig {
        DirectionConfig {
            jitter: Some(Jitter {
                amount: 3 * MILLI,
                shape: JitterShape::Normal,
            }),
            loss: LossModel::Bernoulli { p: 0.05 },
            queue: QueueLimit::Bytes(30_000),
            duplicate: 0.01,
            ..config()
        }
    }

    #[test]
    fn a_seed_reproduces_every_decision() {
        let arrivals: Vec<Nanos> = (0..20_000).map(|i| i * 700_000).collect();
        let a = run(&mut Direction::new(&impaired(), 99, Way::Up), &arrivals);
        let b = run(&mut Direction::new(&impaired(), 99, Way::Up), &arrivals);
        let c = run(&mut Direction::new(&impaired(), 100, Way::Up), &arrivals);
        let d = run(&mut Direction::new(&impaired(), 99, Way::Down), &arrivals);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d, "directions must use separate streams");
    }

    #[test]
    fn loss_pattern_does_not_depend_on_other_impairments() {
        let arrivals: Vec<Nanos> = (0..5000).map(|i| i * 2 * MILLI).collect();
        let lost = |cfg: DirectionConfig| -> Vec<bool> {
            run(&mut Direction::new(&cfg, 5, Way::Down), &arrivals)
                .iter()
                .map(|fate| *fate == Fate::Drop(DropCause::Loss))
                .collect()
        };
        let plain = DirectionConfig {
            loss: LossModel::Bernoulli { p: 0.05 },
            ..config()
        };
        assert_eq!(lost(plain.clone()), lost(impaired()));
    }

    #[test]
    fn jitter_reorders_only_when_reordering_is_on() {
        let arrivals: Vec<Nanos> = (0..20_000).map(|i| i * 2 * MILLI).collect();
        let in_order = departures(&run(
            &mut Direction::new(&impaired(), 3, Way::Down),
            &arrivals,
        ));
        assert!(in_order.windows(2).all(|w| w[0] <= w[1]));
        let reordering = DirectionConfig {
            reorder: Some(ReorderSpec {
                probability: 0.02,
                extra_delay: 10 * MILLI,
            }),
            ..impaired()
        };
        let shuffled = departures(&run(
            &mut Direction::new(&reordering, 3, Way::Down),
            &arrivals,
        ));
        assert!(shuffled.windows(2).any(|w| w[0] > w[1]));
    }
}
