//! A bulk transfer over a simulated path, in virtual time, to test the
//! controller against what decides its results: a bottleneck rate, a
//! drop-tail queue of one BDP (as linkem's default), random loss, and
//! quinn's pacer, which sends at 1.25 × window ÷ smoothed RTT in batches
//! of up to 10 datagrams.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::{Duration, Instant};

use crate::bbr::Bbr;

pub const DATAGRAM: u64 = 1472;
const BATCH: u64 = 10;

pub struct PathSpec {
    pub bits_per_sec: u64,
    pub rtt: Duration,
    pub random_loss: f64,
    /// The share of the true minimum RTT the controller is told: below 1
    /// for a sender that stamps packets before they leave (quinn does).
    pub min_rtt_seen: f64,
}

impl PathSpec {
    pub fn bdp(&self) -> u64 {
        (self.bits_per_sec as f64 / 8.0 * self.rtt.as_secs_f64()) as u64
    }
}

#[derive(Debug, Default)]
pub struct Outcome {
    pub elapsed: Duration,
    pub sent: u64,
    pub queue_drops: u64,
    /// When each queue drop happened, from the start.
    pub queue_drop_times: Vec<Duration>,
    pub random_drops: u64,
    pub max_queue: u64,
    /// Bytes in the first flight, before any ACK came back.
    pub first_flight: u64,
}

impl Outcome {
    pub fn goodput_bits_per_sec(&self, bytes: u64) -> f64 {
        bytes as f64 * 8.0 / self.elapsed.as_secs_f64()
    }

    pub fn queue_drop_share(&self) -> f64 {
        self.queue_drops as f64 / self.sent as f64
    }

    /// Queue drops once `after` has passed (Startup's overshoot aside).
    pub fn queue_drops_after(&self, after: Duration) -> usize {
        self.queue_drop_times
            .iter()
            .filter(|&&at| at > after)
            .count()
    }
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// Packet `pn` reaches the receiver; its ACK comes back after one way.
    Arrive(u64),
    Ack(u64),
    Wake,
}

/// quinn 0.11's token-bucket pacer, reduced to what sets the sending rate.
struct Pacer {
    tokens: u64,
    last: Instant,
}

impl Pacer {
    fn capacity(window: u64, srtt: Duration) -> u64 {
        let burst = (window as f64 * 0.002 / srtt.as_secs_f64()) as u64;
        burst.clamp(10 * DATAGRAM, 256 * DATAGRAM)
    }

    /// None when a datagram may leave now, else when to try again.
    fn delay(&mut self, now: Instant, window: u64, srtt: Duration) -> Option<Instant> {
        let capacity = Self::capacity(window, srtt);
        let elapsed = (now - self.last).as_secs_f64();
        let refill = window as f64 * 1.25 * elapsed / srtt.as_secs_f64();
        self.tokens = (self.tokens + refill as u64).min(capacity);
        self.last = now;
        if self.tokens >= DATAGRAM {
            return None;
        }
        let missing = (capacity - self.tokens) as f64;
        let wait = srtt.as_secs_f64() * missing / (window as f64 * 1.25);
        Some(now + Duration::from_secs_f64(wait))
    }
}

/// Sends `bytes` through `path`, driving `bbr` the way quinn does.
pub fn transfer(mut bbr: Bbr, path: &PathSpec, bytes: u64, seed: u64) -> Outcome {
    let start = Instant::now();
    let one_way = path.rtt / 2;
    let byte_time = 8.0 / path.bits_per_sec as f64;
    let mut random = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    let mut events = BinaryHeap::new();
    let mut outcome = Outcome::default();
    let mut in_flight: BTreeMap<u64, Instant> = BTreeMap::new();
    let mut unsent = bytes;
    let mut next_pn = 0;
    let mut link_free = start;
    let mut queued: BTreeMap<Instant, u64> = BTreeMap::new();
    let mut pacer = Pacer {
        tokens: 10 * DATAGRAM,
        last: start,
    };
    let (mut srtt, mut min_rtt) = (None::<Duration>, Duration::MAX);
    let mut retransmit = 0u64;
    let mut now = start;
    let mut wake_pending = false;
    loop {
        // Send what the window and the pacer allow, in batches.
        loop {
            let window = bbr.window();
            let has_data = unsent > 0 || retransmit > 0;
            if !has_data || (in_flight.len() as u64 + 1) * DATAGRAM > window {
                break;
            }
            let rtt_for_pacing = srtt.unwrap_or(Duration::from_millis(333));
            if let Some(at) = pacer.delay(now, window, rtt_for_pacing) {
                if !wake_pending {
                    events.push(Reverse((at, Event::Wake)));
                    wake_pending = true;
                }
                break;
            }
            let mut batch = 0;
            while batch < BATCH
                && (unsent > 0 || retransmit > 0)
                && (in_flight.len() as u64 + 1) * DATAGRAM <= window
                && pacer.tokens >= DATAGRAM
            {
                if retransmit > 0 {
                    retransmit -= 1;
                } else {
                    unsent = unsent.saturating_sub(DATAGRAM);
                }
                pacer.tokens -= DATAGRAM;
                let pn = next_pn;
                next_pn += 1;
                in_flight.insert(pn, now);
                outcome.sent += 1;
                if srtt.is_none() {
                    outcome.first_flight += DATAGRAM;
                }
                batch += 1;
                // The bottleneck: random loss, then the drop-tail queue.
                random ^= random << 13;
                random ^= random >> 7;
                random ^= random << 17;
                if (random % 1_000_000) as f64 / 1e6 < path.random_loss {
                    outcome.random_drops += 1;
                    continue;
                }
                queued = queued.split_off(&now);
                let backlog: u64 = queued.values().sum();
                outcome.max_queue = outcome.max_queue.max(backlog);
                if backlog + DATAGRAM > path.bdp().max(64 * 1024) {
                    outcome.queue_drops += 1;
                    outcome.queue_drop_times.push(now - start);
                    continue;
                }
                let departs =
                    link_free.max(now) + Duration::from_secs_f64(DATAGRAM as f64 * byte_time);
                link_free = departs;
                *queued.entry(departs).or_default() += DATAGRAM;
                events.push(Reverse((departs + one_way, Event::Arrive(pn))));
            }
            bbr.on_sent(now);
        }
        if unsent == 0 && retransmit == 0 && in_flight.is_empty() {
            outcome.elapsed = now - start;
            return outcome;
        }
        let Some(Reverse((at, event))) = events.pop() else {
            panic!(
                "the transfer stalled with {} packets in flight",
                in_flight.len()
            );
        };
        now = at;
        match event {
            Event::Wake => wake_pending = false,
            Event::Arrive(pn) => events.push(Reverse((now + one_way, Event::Ack(pn)))),
            Event::Ack(pn) => {
                let Some(sent) = in_flight.remove(&pn) else {
                    continue;
                };
                let sample = now - sent;
                min_rtt = min_rtt.min(sample);
                srtt = Some(srtt.map_or(sample, |s| (s * 7 + sample) / 8));
                let seen = min_rtt.mul_f64(path.min_rtt_seen);
                bbr.on_ack(now, sent, DATAGRAM, false, seen, srtt.unwrap_or(sample));
                // Packet threshold 3 (RFC 9002): older unacked packets are lost.
                let lost: Vec<u64> = in_flight
                    .range(..pn.saturating_sub(2))
                    .map(|(&pn, _)| pn)
                    .collect();
                for pn in &lost {
                    in_flight.remove(pn);
                }
                let in_flight_bytes = in_flight.len() as u64 * DATAGRAM;
                bbr.on_end_acks(now, in_flight_bytes, false);
                if !lost.is_empty() {
                    retransmit += lost.len() as u64;
                    bbr.on_congestion_event(false);
                }
            }
        }
    }
}
