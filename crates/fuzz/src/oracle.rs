//! Checks more than one target makes: the link model run twice with every
//! packet accounted for, service on a trace's opportunities, and what any
//! settings from a suite must be. A target uses these and no other target.

use std::collections::HashMap;

use linkem::config::MAX_TIME;
use linkem::fuzzing::VirtualDirection;
use linkem::model::{
    DirectionStats, Nanos, QueueLimit, LATE_RELEASE, MILLI, TRACE_OPPORTUNITY_BYTES,
};
use linkem::LinkSettings;

use crate::input::Packet;

/// What the link did with one offered packet of a direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    /// Dropped by random loss.
    Lost,
    /// Dropped by a full queue.
    QueueDropped,
    /// Taken in, to leave later.
    Admitted,
}

/// A packet that left, as the harness saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Departure {
    /// The packet's id (its index in the input).
    pub id: u64,
    /// Its departure time.
    pub due: Nanos,
    /// When the harness took it out.
    pub popped_at: Nanos,
}

/// Everything one direction did with its packets.
#[derive(Debug, PartialEq)]
pub struct Run {
    /// Per offered packet: id, arrival, length, outcome.
    pub offers: Vec<(u64, Nanos, u32, Offered)>,
    /// The packets that left, in the order they left.
    pub departures: Vec<Departure>,
    stats: DirectionStats,
    duplicated: u64,
}

/// A delivered packet and when it left the bottleneck.
#[derive(Debug, Clone, Copy)]
pub struct Delivery {
    /// The packet's id (its index in the input).
    pub id: u64,
    /// When it reached the link.
    pub arrival: Nanos,
    /// Its size in bytes.
    pub len: u32,
    /// When it left the bottleneck.
    pub exit: Nanos,
}

/// For settings this harness did not make: both directions run twice
/// with the same decisions, and every packet is accounted for.
pub fn check_settings(settings: &LinkSettings, packets: &[Packet]) {
    for upstream in [true, false] {
        checked_run(settings, packets, upstream);
    }
}

/// One direction run twice with the same decisions, every packet
/// accounted for; the first run.
pub fn checked_run(settings: &LinkSettings, packets: &[Packet], upstream: bool) -> Run {
    let run = simulate(settings, packets, upstream);
    let again = simulate(settings, packets, upstream);
    assert!(run == again, "the same seed gave different decisions");
    check_accounting(&run);
    run
}

/// Offers this direction's packets in time order, releasing what is due
/// before each arrival (late by up to the gap, as a busy forwarder would),
/// then drains the rest exactly on time.
pub fn simulate(settings: &LinkSettings, packets: &[Packet], upstream: bool) -> Run {
    let mut direction = match upstream {
        true => VirtualDirection::upstream(settings),
        false => VirtualDirection::downstream(settings),
    };
    let mut offers = Vec::new();
    let mut departures = Vec::new();
    let mut now: Nanos = 0;
    for (id, packet) in packets.iter().enumerate() {
        now += packet.gap;
        if packet.upstream != upstream {
            continue;
        }
        release_due(&mut direction, now, &mut departures);
        let id = id as u64;
        let outcome = offer(&mut direction, id, packet.len, now);
        offers.push((id, now, packet.len, outcome));
    }
    while let Some(due) = direction.next_due() {
        if due > 0 {
            assert_eq!(direction.pop_due(due - 1), None, "a packet left early");
        }
        release_due(&mut direction, due, &mut departures);
    }
    assert_eq!(direction.waiting(), 0, "packets stuck after draining");
    Run {
        offers,
        departures,
        stats: direction.stats().clone(),
        duplicated: direction.duplicated(),
    }
}

fn release_due(direction: &mut VirtualDirection, now: Nanos, out: &mut Vec<Departure>) {
    while let Some(due) = direction.next_due().filter(|&due| due <= now) {
        let id = direction.pop_due(now).expect("a due packet leaves");
        out.push(Departure {
            id,
            due,
            popped_at: now,
        });
    }
}

/// Offers one packet and tells from the drop counters what happened.
fn offer(direction: &mut VirtualDirection, id: u64, len: u32, now: Nanos) -> Offered {
    let counts = |d: &VirtualDirection| (d.stats().dropped_loss, d.stats().dropped_queue);
    let (lost, queue_dropped) = counts(direction);
    let admitted = direction.offer(id, len, now);
    let outcome = match counts(direction) {
        (l, q) if (l, q) == (lost, queue_dropped) => Offered::Admitted,
        (l, q) if (l, q) == (lost + 1, queue_dropped) => Offered::Lost,
        (l, q) if (l, q) == (lost, queue_dropped + 1) => Offered::QueueDropped,
        other => panic!(
            "one offer changed the drop counts from {:?} to {other:?}",
            (lost, queue_dropped)
        ),
    };
    assert_eq!(
        admitted,
        outcome == Offered::Admitted,
        "offer result and counters disagree"
    );
    outcome
}

/// Each packet accounted for exactly once, and the statistics agree.
fn check_accounting(run: &Run) {
    let mut copies: HashMap<u64, Vec<Nanos>> = HashMap::new();
    for departure in &run.departures {
        copies.entry(departure.id).or_default().push(departure.due);
    }
    let mut duplicated = 0;
    for &(id, _, _, outcome) in &run.offers {
        let left = copies.remove(&id).unwrap_or_default();
        match outcome {
            Offered::Admitted => {
                assert!(
                    matches!(left.len(), 1 | 2),
                    "packet {id} left {} times",
                    left.len()
                );
                assert!(left.windows(2).all(|w| w[0] == w[1]), "copies left apart");
                duplicated += u64::from(left.len() == 2);
            }
            _ => assert!(left.is_empty(), "dropped packet {id} left"),
        }
    }
    assert!(copies.is_empty(), "packets left that were never offered");
    let count = |wanted| run.offers.iter().filter(|o| o.3 == wanted).count() as u64;
    let stats = &run.stats;
    assert_eq!(stats.packets_in, run.offers.len() as u64);
    assert_eq!(stats.dropped_loss, count(Offered::Lost));
    assert_eq!(stats.dropped_queue, count(Offered::QueueDropped));
    assert_eq!(stats.packets_out, run.departures.len() as u64);
    assert_eq!(run.duplicated, duplicated);
    let late = run
        .departures
        .iter()
        .filter(|d| d.popped_at - d.due > LATE_RELEASE)
        .count() as u64;
    assert_eq!(stats.released_late, late, "late releases miscounted");
}

/// Deliveries on a trace: strictly after arrival, in order, on one of the
/// trace's opportunities (repeating with the last timestamp as period), and
/// never more bytes by a time than 1500 per opportunity up to it.
pub fn check_trace_service(timestamps: &[u64], deliveries: &[Delivery]) {
    let period = *timestamps.last().expect("a trace is not empty");
    let offsets: Vec<u64> = timestamps.iter().map(|ms| ms % period).collect();
    let mut delivered = 0u128;
    for (index, delivery) in deliveries.iter().enumerate() {
        assert!(
            delivery.exit > delivery.arrival,
            "delivered at its arrival or before: {delivery:?}"
        );
        assert_eq!(
            delivery.exit % MILLI,
            0,
            "off the millisecond grid: {delivery:?}"
        );
        let ms = delivery.exit / MILLI;
        assert!(
            offsets.contains(&(ms % period)),
            "not on an opportunity: {delivery:?}"
        );
        if index > 0 {
            assert!(
                deliveries[index - 1].exit <= delivery.exit,
                "out of order: {delivery:?}"
            );
        }
        delivered += u128::from(delivery.len);
        let last_at_this_time = deliveries
            .get(index + 1)
            .is_none_or(|next| next.exit > delivery.exit);
        if last_at_this_time {
            let capacity =
                u128::from(TRACE_OPPORTUNITY_BYTES) * opportunities_until(timestamps, ms);
            assert!(
                delivered <= capacity,
                "{delivered} bytes by {ms} ms, capacity {capacity}"
            );
        }
    }
}

/// Opportunities at or before `ms`, counting every repeat of the trace.
fn opportunities_until(timestamps: &[u64], ms: u64) -> u128 {
    let period = *timestamps.last().expect("a trace is not empty");
    timestamps
        .iter()
        .filter(|&&at| at <= ms)
        .map(|&at| u128::from((ms - at) / period) + 1)
        .sum()
}

/// What any settings from a suite must be: at the suite's seed, with
/// times, rates and shares within what the parsers accept.
pub fn check_sane_settings(settings: &LinkSettings, seed: u64) {
    assert_eq!(settings.seed, seed, "settings not at the suite's seed");
    assert!(settings.rtt <= MAX_TIME, "rtt {}", settings.rtt);
    let loss = settings.loss.mean_loss();
    assert!((0.0..=1.0).contains(&loss), "mean loss {loss}");
    assert!(
        (0.0..=1.0).contains(&settings.duplicate),
        "duplicate {}",
        settings.duplicate
    );
    for spec in [&settings.down, &settings.up] {
        if let Some(bits) = spec.mean_bits_per_sec() {
            assert!(bits.is_finite() && bits > 0.0, "rate {bits}");
        }
    }
    assert!(
        !matches!(
            settings.queue,
            Some(QueueLimit::Packets(0) | QueueLimit::Bytes(0))
        ),
        "a queue that holds nothing"
    );
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A delivery of packet 0.
    pub(crate) fn delivery(arrival: Nanos, len: u32, exit: Nanos) -> Delivery {
        Delivery {
            id: 0,
            arrival,
            len,
            exit,
        }
    }

    #[test]
    fn trace_checks_catch_off_schedule_and_overfull_opportunities() {
        let trace = [2, 5, 10];
        check_trace_service(
            &trace,
            &[delivery(0, 1500, 2 * MILLI), delivery(0, 1500, 15 * MILLI)],
        );
        for bad in [
            vec![delivery(0, 100, 3 * MILLI)],
            vec![delivery(2 * MILLI, 100, 2 * MILLI)],
            vec![delivery(0, 1500, 2 * MILLI), delivery(0, 1, 2 * MILLI)],
        ] {
            let caught = std::panic::catch_unwind(|| check_trace_service(&trace, &bad));
            assert!(caught.is_err(), "{bad:?}");
        }
    }
}
