//! A direction plus the packets it holds: the scheduler the I/O shell drives.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::{Direction, Fate, Nanos, Transport};

struct Scheduled<P> {
    at: Nanos,
    seq: u64,
    len: u32,
    payload: P,
}

impl<P> PartialEq for Scheduled<P> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<P> Eq for Scheduled<P> {}
impl<P> PartialOrd for Scheduled<P> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<P> Ord for Scheduled<P> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// Holds packets until their departure time; ties leave in arrival order.
pub(crate) struct Pipe<P> {
    direction: Direction,
    due: BinaryHeap<Reverse<Scheduled<P>>>,
    seq: u64,
}

impl<P: Clone> Pipe<P> {
    pub fn new(direction: Direction) -> Self {
        Pipe {
            direction,
            due: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Offers a packet of `transport` arriving at `now`; hands the payload
    /// back when the link drops it, so the caller can reuse the buffer.
    pub fn push(&mut self, payload: P, len: u32, transport: Transport, now: Nanos) -> Option<P> {
        match self.direction.offer_as(len, transport, now) {
            Fate::Drop(_) => Some(payload),
            Fate::Deliver { at, copies } => {
                for _ in 1..copies {
                    self.schedule(at, len, payload.clone());
                }
                self.schedule(at, len, payload);
                None
            }
        }
    }

    fn schedule(&mut self, at: Nanos, len: u32, payload: P) {
        self.seq += 1;
        self.due.push(Reverse(Scheduled {
            at,
            seq: self.seq,
            len,
            payload,
        }));
    }

    /// Packets waiting to leave.
    pub fn len(&self) -> usize {
        self.due.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.due.is_empty()
    }

    /// When the next packet leaves, if any is waiting.
    pub fn next_due(&self) -> Option<Nanos> {
        self.due.peek().map(|Reverse(next)| next.at)
    }

    /// The next packet whose departure time has come, counted as sent.
    pub fn pop_due(&mut self, now: Nanos) -> Option<P> {
        if self.next_due()? > now {
            return None;
        }
        let Reverse(packet) = self.due.pop()?;
        let lateness = now - packet.at;
        self.direction.stats_mut().record_out(packet.len, lateness);
        Some(packet.payload)
    }

    pub fn direction(&self) -> &Direction {
        &self.direction
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DirectionConfig, RateSpec, ReorderSpec, UdpPolicy};
    use crate::model::{LossModel, QueueLimit, Way, MILLI};

    fn pipe(reorder: Option<ReorderSpec>, duplicate: f64) -> Pipe<u32> {
        let config = DirectionConfig {
            delay: 10 * MILLI,
            jitter: None,
            rate: RateSpec::Fixed {
                bits_per_sec: 120_000_000,
            },
            queue: QueueLimit::Packets(1000),
            loss: LossModel::Bernoulli { p: 0.1 },
            reorder,
            duplicate,
            udp: UdpPolicy::Open,
        };
        Pipe::new(Direction::new(&config, 11, Way::Down))
    }

    /// Feeds ids 0..n at 50 us spacing and drains in virtual time.
    fn drain(pipe: &mut Pipe<u32>, n: u32) -> Vec<(Nanos, u32)> {
        let mut out = Vec::new();
        let mut dropped = 0;
        for id in 0..n {
            let now = Nanos::from(id) * 50_000;
            while let Some(at) = pipe.next_due().filter(|&at| at <= now) {
                out.push((at, pipe.pop_due(now).unwrap()));
            }
            dropped += u64::from(pipe.push(id, 1500, Transport::Other, now).is_some());
        }
        while let Some(at) = pipe.next_due() {
            let waiting = pipe.len();
            assert_eq!(pipe.pop_due(at - 1), None, "left before its time");
            assert_eq!(pipe.len(), waiting);
            out.push((at, pipe.pop_due(at).unwrap()));
        }
        assert!(pipe.is_empty());
        let stats = pipe.direction().stats();
        assert_eq!(stats.packets_in, u64::from(n));
        assert_eq!(stats.dropped_loss + stats.dropped_queue, dropped);
        assert!(stats.dropped_loss > 0 && stats.dropped_queue > 0);
        assert_eq!(stats.packets_out, out.len() as u64);
        out
    }

    #[test]
    fn packets_released_over_a_millisecond_late_are_counted() {
        let mut pipe = pipe(None, 0.0);
        let (mut late, mut now) = (0, 0);
        for id in 0..200u32 {
            if pipe.push(id, 1500, Transport::Other, now).is_some() {
                continue;
            }
            // Every other packet leaves 2 ms late; the rest exactly 1 ms,
            // which is not beyond the bound.
            let behind = if id % 2 == 0 { 2 * MILLI } else { MILLI };
            late += u64::from(id % 2 == 0);
            now = pipe.next_due().unwrap() + behind;
            pipe.pop_due(now).unwrap();
        }
        let stats = pipe.direction().stats();
        assert_eq!(stats.released_late, late, "{stats:?}");
    }

    #[test]
    fn packets_leave_in_time_order_with_counts_balanced() {
        let out = drain(&mut pipe(None, 0.0), 10_000);
        assert!(out.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
    }

    #[test]
    fn duplicates_and_reordering_reach_the_output() {
        let reorder = ReorderSpec {
            probability: 0.05,
            extra_delay: MILLI,
        };
        let mut pipe = pipe(Some(reorder), 0.02);
        let out = drain(&mut pipe, 10_000);
        let ids: Vec<u32> = out.iter().map(|&(_, id)| id).collect();
        assert!(ids.windows(2).any(|w| w[0] > w[1]), "no reordering");
        assert!(ids.windows(2).any(|w| w[0] == w[1]), "no duplicate");
        assert_eq!(
            pipe.direction().stats().duplicated as usize,
            out.len() - {
                let mut unique = ids.clone();
                unique.sort_unstable();
                unique.dedup();
                unique.len()
            }
        );
    }
}
