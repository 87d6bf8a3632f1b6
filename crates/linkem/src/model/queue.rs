//! The drop-tail queue in front of the bottleneck's service.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{DropCause, Nanos, Stage, Verdict};

/// How much the bottleneck queue may hold.
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

/// Drop-tail queue wrapping the stage that drains it (the rate). A packet
/// counts as queued from its arrival until the inner stage lets it go, so
/// the queue only knows its depth through the service it feeds.
pub(crate) struct Queue<S> {
    limit: QueueLimit,
    service: S,
    /// Departure times and sizes of admitted packets still inside, in order.
    backlog: VecDeque<(Nanos, u32)>,
    bytes: u64,
}

impl<S: Stage> Queue<S> {
    pub fn new(limit: QueueLimit, service: S) -> Self {
        Queue {
            limit,
            service,
            backlog: VecDeque::new(),
            bytes: 0,
        }
    }

    fn drain_until(&mut self, at: Nanos) {
        while let Some(&(departure, len)) = self.backlog.front() {
            if departure > at {
                break;
            }
            self.bytes -= u64::from(len);
            self.backlog.pop_front();
        }
    }

    fn has_room_for(&self, len: u32) -> bool {
        match self.limit {
            QueueLimit::Packets(max) => (self.backlog.len() as u64) < max,
            QueueLimit::Bytes(max) => self.bytes + u64::from(len) <= max,
            QueueLimit::Unlimited => true,
        }
    }
}

impl<S: Stage> Stage for Queue<S> {
    fn offer(&mut self, len: u32, at: Nanos) -> Verdict {
        self.drain_until(at);
        if !self.has_room_for(len) {
            return Verdict::Drop(DropCause::Queue);
        }
        let verdict = self.service.offer(len, at);
        if let Verdict::Pass(departure) | Verdict::Duplicate(departure) = verdict {
            self.backlog.push_back((departure, len));
            self.bytes += u64::from(len);
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Rate, MILLI};

    /// Offers a burst at time 0 and returns how many were admitted.
    fn admitted(queue: &mut Queue<Rate>, count: usize, len: u32, at: Nanos) -> usize {
        (0..count)
            .filter(|_| matches!(queue.offer(len, at), Verdict::Pass(_)))
            .count()
    }

    #[test]
    fn packet_limit_holds_and_frees_as_the_link_drains() {
        // 12 Mbit/s: one 1500-byte packet per ms.
        let mut queue = Queue::new(QueueLimit::Packets(10), Rate::fixed(12_000_000));
        assert_eq!(admitted(&mut queue, 50, 1500, 0), 10);
        // At 3.5 ms three packets have left: room for exactly three.
        assert_eq!(admitted(&mut queue, 50, 1500, 3 * MILLI + MILLI / 2), 3);
        // Once drained, a full burst fits again.
        assert_eq!(admitted(&mut queue, 50, 1500, 100 * MILLI), 10);
    }

    #[test]
    fn byte_limit_holds() {
        let mut queue = Queue::new(QueueLimit::Bytes(10_000), Rate::fixed(12_000_000));
        assert_eq!(admitted(&mut queue, 50, 1500, 0), 6);
        // 1000 bytes still fit beside 9000.
        assert_eq!(admitted(&mut queue, 5, 1000, 0), 1);
        assert_eq!(admitted(&mut queue, 5, 1, 0), 0);
    }

    #[test]
    fn unlimited_queue_admits_everything() {
        let mut queue = Queue::new(QueueLimit::Unlimited, Rate::fixed(1_000_000));
        assert_eq!(admitted(&mut queue, 5000, 1500, 0), 5000);
    }
}
