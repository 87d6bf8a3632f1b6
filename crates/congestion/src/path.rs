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
pub fn transfer(bbr: Bbr, path: &PathSpec, bytes: u64, seed: u64) -> Outcome {
    let mut transfer = Transfer::new(bbr, path, bytes, seed);
    loop {
        transfer.send_what_is_allowed();
        if transfer.unsent == 0 && transfer.retransmit == 0 && transfer.in_flight.is_empty() {
            transfer.outcome.elapsed = transfer.now - transfer.start;
            return transfer.outcome;
        }
        let Some(Reverse((at, event))) = transfer.events.pop() else {
            panic!(
                "the transfer stalled with {} packets in flight",
                transfer.in_flight.len()
            );
        };
        transfer.now = at;
        match event {
            Event::Wake => transfer.wake_pending = false,
            Event::Arrive(pn) => {
                (transfer.events).push(Reverse((at + transfer.one_way, Event::Ack(pn))))
            }
            Event::Ack(pn) => transfer.on_ack(pn),
        }
    }
}

/// A transfer in progress: the sender, the bottleneck and the events
/// between them.
struct Transfer<'a> {
    bbr: Bbr,
    path: &'a PathSpec,
    start: Instant,
    now: Instant,
    one_way: Duration,
    /// Seconds a byte takes at the bottleneck.
    byte_time: f64,
    random: u64,
    events: BinaryHeap<Reverse<(Instant, Event)>>,
    outcome: Outcome,
    /// Sent and not yet acknowledged, by packet number: when each was sent.
    in_flight: BTreeMap<u64, Instant>,
    unsent: u64,
    /// Lost packets still to send again.
    retransmit: u64,
    next_pn: u64,
    /// When the bottleneck is next free.
    link_free: Instant,
    /// Bytes in the bottleneck's queue, by when they leave it.
    queued: BTreeMap<Instant, u64>,
    pacer: Pacer,
    srtt: Option<Duration>,
    min_rtt: Duration,
    wake_pending: bool,
}

impl<'a> Transfer<'a> {
    fn new(bbr: Bbr, path: &'a PathSpec, bytes: u64, seed: u64) -> Self {
        let start = Instant::now();
        Transfer {
            bbr,
            path,
            start,
            now: start,
            one_way: path.rtt / 2,
            byte_time: 8.0 / path.bits_per_sec as f64,
            random: seed.wrapping_mul(6364136223846793005).wrapping_add(1),
            events: BinaryHeap::new(),
            outcome: Outcome::default(),
            in_flight: BTreeMap::new(),
            unsent: bytes,
            retransmit: 0,
            next_pn: 0,
            link_free: start,
            queued: BTreeMap::new(),
            pacer: Pacer {
                tokens: 10 * DATAGRAM,
                last: start,
            },
            srtt: None,
            min_rtt: Duration::MAX,
            wake_pending: false,
        }
    }

    fn has_data(&self) -> bool {
        self.unsent > 0 || self.retransmit > 0
    }

    fn window_allows_one_more(&self, window: u64) -> bool {
        (self.in_flight.len() as u64 + 1) * DATAGRAM <= window
    }

    /// Sends what the window and the pacer allow, in batches.
    fn send_what_is_allowed(&mut self) {
        loop {
            let window = self.bbr.window();
            if !self.has_data() || !self.window_allows_one_more(window) {
                break;
            }
            let rtt_for_pacing = self.srtt.unwrap_or(Duration::from_millis(333));
            if let Some(at) = self.pacer.delay(self.now, window, rtt_for_pacing) {
                if !self.wake_pending {
                    self.events.push(Reverse((at, Event::Wake)));
                    self.wake_pending = true;
                }
                break;
            }
            let mut batch = 0;
            while batch < BATCH
                && self.has_data()
                && self.window_allows_one_more(window)
                && self.pacer.tokens >= DATAGRAM
            {
                self.send_one();
                batch += 1;
            }
            self.bbr.on_sent(self.now);
        }
    }

    /// One datagram, new data or a retransmission, into the bottleneck:
    /// random loss, then the drop-tail queue.
    fn send_one(&mut self) {
        if self.retransmit > 0 {
            self.retransmit -= 1;
        } else {
            self.unsent = self.unsent.saturating_sub(DATAGRAM);
        }
        self.pacer.tokens -= DATAGRAM;
        let pn = self.next_pn;
        self.next_pn += 1;
        self.in_flight.insert(pn, self.now);
        self.outcome.sent += 1;
        if self.srtt.is_none() {
            self.outcome.first_flight += DATAGRAM;
        }
        self.random ^= self.random << 13;
        self.random ^= self.random >> 7;
        self.random ^= self.random << 17;
        if (self.random % 1_000_000) as f64 / 1e6 < self.path.random_loss {
            self.outcome.random_drops += 1;
            return;
        }
        self.queued = self.queued.split_off(&self.now);
        let backlog: u64 = self.queued.values().sum();
        self.outcome.max_queue = self.outcome.max_queue.max(backlog);
        if backlog + DATAGRAM > self.path.bdp().max(64 * 1024) {
            self.outcome.queue_drops += 1;
            self.outcome.queue_drop_times.push(self.now - self.start);
            return;
        }
        let departs = self.link_free.max(self.now)
            + Duration::from_secs_f64(DATAGRAM as f64 * self.byte_time);
        self.link_free = departs;
        *self.queued.entry(departs).or_default() += DATAGRAM;
        (self.events).push(Reverse((departs + self.one_way, Event::Arrive(pn))));
    }

    /// Packet `pn`'s ACK: a round-trip sample for the controller, and the
    /// packets three older declared lost (RFC 9002's packet threshold).
    fn on_ack(&mut self, pn: u64) {
        let Some(sent) = self.in_flight.remove(&pn) else {
            return;
        };
        let now = self.now;
        let sample = now - sent;
        self.min_rtt = self.min_rtt.min(sample);
        let srtt = self.srtt.map_or(sample, |s| (s * 7 + sample) / 8);
        self.srtt = Some(srtt);
        let seen = self.min_rtt.mul_f64(self.path.min_rtt_seen);
        self.bbr.on_ack(now, sent, DATAGRAM, false, seen, srtt);
        let lost: Vec<u64> = (self.in_flight.range(..pn.saturating_sub(2)))
            .map(|(&pn, _)| pn)
            .collect();
        for pn in &lost {
            self.in_flight.remove(pn);
        }
        let in_flight_bytes = self.in_flight.len() as u64 * DATAGRAM;
        self.bbr.on_end_acks(now, in_flight_bytes, false);
        if !lost.is_empty() {
            self.retransmit += lost.len() as u64;
            self.bbr.on_congestion_event(false);
        }
    }
}
