//! The link target: any settings and any packet sequence through both
//! directions of the model, driven in virtual time as the forwarding thread
//! drives it. Checked for every input:
//!
//! - the same seed gives the same decisions (two runs compared whole);
//! - every offered packet is lost, queue-dropped or delivered (once, or
//!   twice when duplicated), and the statistics count exactly that;
//! - nothing leaves before its arrival plus the shortest delay the settings
//!   allow (propagation minus jitter, plus serialization), nor before its
//!   departure time; packets leave in arrival order unless reordering is on;
//! - random loss hits only the loss direction, and its pattern does not
//!   depend on the other impairments;
//! - without jitter or reordering, where a packet's bottleneck exit is
//!   known: the queue is drop-tail with the configured (or documented
//!   default) limit, a fixed rate serializes exactly, a trace delivers on
//!   its opportunities.

use std::collections::{HashMap, VecDeque};

use arbitrary::{Result, Unstructured};
use linkem::config::{
    parse_jitter, LossDirection, Overrides, ReorderSpec, DEFAULT_QUEUE_FLOOR_BYTES,
};
use linkem::model::{LossModel, Nanos, QueueLimit, RateSpec, Trace, UdpPolicy, MILLI};
use linkem::LinkSettings;

use crate::input::{arbitrary_packets, arbitrary_timestamps, pick, render, Packet};
use crate::oracle::{check_trace_service, checked_run, simulate, Delivery, Offered, Run};
use crate::target::Target;

/// The link target (no state).
pub struct LinkTarget;

impl Target for LinkTarget {
    fn check(&mut self, u: &mut Unstructured) -> Result<()> {
        let scenario = Scenario::arbitrary(u)?;
        let packets = arbitrary_packets(u)?;
        check_scenario(&scenario, &packets);
        Ok(())
    }
}

/// Link settings together with what the harness needs to know of them
/// that `LinkSettings` keeps private (jitter's size and shape, traces).
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The settings the model is built from.
    pub settings: LinkSettings,
    /// Jitter as (amount in ns, normal rather than uniform).
    pub jitter: Option<(Nanos, bool)>,
    /// The timestamps of each direction's trace, if it has one.
    pub traces: [Option<Vec<u64>>; 2],
}

impl Scenario {
    /// Settings of every kind the command line and suites can give.
    pub fn arbitrary(u: &mut Unstructured) -> Result<Scenario> {
        let (down, down_trace) = arbitrary_rate(u)?;
        let (up, up_trace) = arbitrary_rate(u)?;
        let jitter = match u.ratio(1, 3)? {
            true => Some((arbitrary_delay(u)?, u.arbitrary::<bool>()?)),
            false => None,
        };
        let mut settings = LinkSettings {
            rtt: 2 * arbitrary_delay(u)?,
            down,
            up,
            loss: LossModel::Bernoulli {
                p: arbitrary_share(u)?,
            },
            loss_direction: pick(
                u,
                &[LossDirection::Down, LossDirection::Up, LossDirection::Both],
            )?,
            jitter: jitter.map(|(amount, normal)| {
                let shape = if normal { "normal" } else { "uniform" };
                parse_jitter(&format!("{amount}ns:{shape}")).expect("a valid jitter")
            }),
            queue: arbitrary_queue(u)?,
            reorder: match u.ratio(1, 4)? {
                true => Some(ReorderSpec {
                    probability: arbitrary_share(u)?,
                    extra_delay: arbitrary_delay(u)?,
                }),
                false => None,
            },
            duplicate: match u.ratio(1, 4)? {
                true => arbitrary_share(u)?,
                false => 0.0,
            },
            // The fuzzed packets are not UDP, which is all a policy acts on.
            udp: UdpPolicy::Open,
            seed: u.arbitrary()?,
        };
        if u.ratio(1, 4)? {
            settings = with_gilbert_loss(settings, u)?;
        }
        Ok(Scenario {
            settings,
            jitter,
            traces: [up_trace, down_trace],
        })
    }

    fn trace(&self, upstream: bool) -> Option<&[u64]> {
        self.traces[usize::from(!upstream)].as_deref()
    }

    fn rate(&self, upstream: bool) -> &RateSpec {
        match upstream {
            true => &self.settings.up,
            false => &self.settings.down,
        }
    }

    /// The queue limit as linkem documents it: the given one, else one
    /// bandwidth-delay product with a 64 KiB floor (none when unlimited).
    fn queue_limit(&self, upstream: bool) -> QueueLimit {
        if let Some(limit) = self.settings.queue {
            return limit;
        }
        match self.rate(upstream).mean_bits_per_sec() {
            None => QueueLimit::Unlimited,
            Some(bits) => {
                let bdp = bits / 8.0 * (self.settings.rtt as f64 / 1e9);
                QueueLimit::Bytes((bdp as u64).max(DEFAULT_QUEUE_FLOOR_BYTES))
            }
        }
    }

    /// The shortest one-way delay jitter can leave.
    fn min_delay(&self) -> Nanos {
        let base = self.settings.rtt / 2;
        match self.jitter {
            None => base,
            Some((_, true)) => 0,
            Some((amount, false)) => base.saturating_sub(amount),
        }
    }

    fn loses(&self, upstream: bool) -> bool {
        match self.settings.loss_direction {
            LossDirection::Down => !upstream,
            LossDirection::Up => upstream,
            LossDirection::Both => true,
        }
    }
}

fn arbitrary_delay(u: &mut Unstructured) -> Result<Nanos> {
    Ok(match u.int_in_range(0..=9)? {
        0..=2 => 0,
        3..=8 => u.int_in_range(0..=200 * MILLI)?,
        _ => u.int_in_range(0..=1_800_000 * MILLI)?,
    })
}

/// A probability, with 0 and 1 themselves common.
fn arbitrary_share(u: &mut Unstructured) -> Result<f64> {
    Ok(match u.int_in_range(0..=5)? {
        0 => 0.0,
        1 => 1.0,
        _ => f64::from(u.int_in_range(0..=10_000u32)?) / 10_000.0,
    })
}

/// A rate the parsers accept (1 bit/s to 1 Tbit/s), unlimited, or a trace.
fn arbitrary_rate(u: &mut Unstructured) -> Result<(RateSpec, Option<Vec<u64>>)> {
    Ok(match u.int_in_range(0..=5)? {
        0 => (RateSpec::Unlimited, None),
        1 => {
            // Within the week linkem accepts; the trace target checks the rest.
            let timestamps: Vec<u64> = arbitrary_timestamps(u)?
                .into_iter()
                .map(|ms| ms.min(linkem::model::MAX_TRACE_MS))
                .collect();
            let trace = Trace::parse("fuzz", &render(&timestamps, u)?).expect("a valid trace");
            (RateSpec::Trace(trace), Some(timestamps))
        }
        _ => {
            let exponent = u.int_in_range(0..=12u32)?;
            let bits_per_sec = u.int_in_range(1..=10u64.pow(exponent))?;
            (RateSpec::Fixed { bits_per_sec }, None)
        }
    })
}

fn arbitrary_queue(u: &mut Unstructured) -> Result<Option<QueueLimit>> {
    Ok(match u.int_in_range(0..=4)? {
        0 | 1 => None,
        2 => Some(QueueLimit::Packets(u.int_in_range(1..=500)?)),
        3 => Some(QueueLimit::Bytes(u.int_in_range(1..=2_000_000)?)),
        _ => Some(QueueLimit::Unlimited),
    })
}

/// The settings with Gilbert-Elliott loss, given as the command line and
/// suites give it.
fn with_gilbert_loss(settings: LinkSettings, u: &mut Unstructured) -> Result<LinkSettings> {
    let mut percents = Vec::new();
    for _ in 0..4 {
        percents.push(format!("{}%", arbitrary_share(u)? * 100.0));
    }
    let overrides = Overrides {
        loss_model: Some(format!("gilbert:{}", percents.join(","))),
        ..Overrides::default()
    };
    let settings = overrides
        .apply(Some(settings))
        .expect("valid gilbert parameters")
        .expect("a path");
    Ok(settings)
}

/// Runs both directions twice, checks determinism and every invariant.
pub fn check_scenario(scenario: &Scenario, packets: &[Packet]) {
    for upstream in [true, false] {
        let run = checked_run(&scenario.settings, packets, upstream);
        check_timing(scenario, &run, upstream);
        check_loss(scenario, packets, &run, upstream);
        if scenario.jitter.is_none() && scenario.settings.reorder.is_none() {
            check_bottleneck(scenario, &run, upstream);
        }
    }
}

/// Never before arrival + the shortest delay + serialization; popped in
/// departure order; in arrival order unless reordering is on.
fn check_timing(scenario: &Scenario, run: &Run, upstream: bool) {
    let arrivals: HashMap<u64, (Nanos, u32)> = run
        .offers
        .iter()
        .map(|&(id, at, len, _)| (id, (at, len)))
        .collect();
    for departure in &run.departures {
        let (arrival, len) = arrivals[&departure.id];
        let service = match scenario.rate(upstream) {
            RateSpec::Fixed { bits_per_sec } => serialization(len, *bits_per_sec),
            RateSpec::Trace(_) => 1,
            RateSpec::Unlimited => 0,
        };
        let earliest = u128::from(arrival) + u128::from(scenario.min_delay()) + u128::from(service);
        assert!(
            u128::from(departure.due) >= earliest,
            "packet {} arrived at {arrival} and left at {}, before {earliest}",
            departure.id,
            departure.due
        );
    }
    let dues: Vec<Nanos> = run.departures.iter().map(|d| d.due).collect();
    assert!(
        dues.windows(2).all(|w| w[0] <= w[1]),
        "released out of departure order"
    );
    if scenario.settings.reorder.is_none() {
        let ids: Vec<u64> = run.departures.iter().map(|d| d.id).collect();
        assert!(
            ids.windows(2).all(|w| w[0] <= w[1]),
            "reordered without reordering on"
        );
    }
}

/// Loss only in the loss direction, all of it at 100 %, and the same loss
/// pattern with every other impairment removed.
fn check_loss(scenario: &Scenario, packets: &[Packet], run: &Run, upstream: bool) {
    let lost: Vec<u64> = run
        .offers
        .iter()
        .filter(|o| o.3 == Offered::Lost)
        .map(|o| o.0)
        .collect();
    if !scenario.loses(upstream) {
        assert!(lost.is_empty(), "loss outside the loss direction");
    }
    if scenario.loses(upstream) && scenario.settings.loss == (LossModel::Bernoulli { p: 1.0 }) {
        assert_eq!(
            lost.len(),
            run.offers.len(),
            "100 % loss let packets through"
        );
    }
    let bare = LinkSettings {
        rtt: 0,
        down: RateSpec::Unlimited,
        up: RateSpec::Unlimited,
        jitter: None,
        queue: None,
        reorder: None,
        duplicate: 0.0,
        ..scenario.settings.clone()
    };
    let bare_run = simulate(&bare, packets, upstream);
    let bare_lost: Vec<u64> = bare_run
        .offers
        .iter()
        .filter(|o| o.3 == Offered::Lost)
        .map(|o| o.0)
        .collect();
    assert_eq!(
        lost, bare_lost,
        "the loss pattern depends on other impairments"
    );
}

/// Bottleneck exits (departure minus the fixed delay) follow the queue's
/// drop-tail rule and the rate's own rule.
fn check_bottleneck(scenario: &Scenario, run: &Run, upstream: bool) {
    let base = scenario.settings.rtt / 2;
    let exits: HashMap<u64, Nanos> = run
        .departures
        .iter()
        .map(|d| (d.id, d.due - base))
        .collect();
    let limit = scenario.queue_limit(upstream);
    let mut held: VecDeque<(Nanos, u32)> = VecDeque::new();
    let mut held_bytes = 0u64;
    let mut deliveries = Vec::new();
    for &(id, arrival, len, outcome) in &run.offers {
        while held.front().is_some_and(|&(exit, _)| exit <= arrival) {
            let (_, bytes) = held.pop_front().expect("checked");
            held_bytes -= u64::from(bytes);
        }
        let room = match limit {
            QueueLimit::Packets(max) => (held.len() as u64) < max,
            QueueLimit::Bytes(max) => held_bytes + u64::from(len) <= max,
            QueueLimit::Unlimited => true,
        };
        match outcome {
            Offered::Lost => continue,
            Offered::QueueDropped => assert!(!room, "packet {id} dropped with room in {limit:?}"),
            Offered::Admitted => {
                assert!(room, "packet {id} admitted over {limit:?}");
                let exit = exits[&id];
                held.push_back((exit, len));
                held_bytes += u64::from(len);
                deliveries.push(Delivery {
                    id,
                    arrival,
                    len,
                    exit,
                });
            }
        }
    }
    match scenario.rate(upstream) {
        RateSpec::Unlimited => {
            assert!(
                deliveries.iter().all(|d| d.exit == d.arrival),
                "an unlimited rate held a packet"
            );
        }
        RateSpec::Fixed { bits_per_sec } => check_serialization(&deliveries, *bits_per_sec),
        RateSpec::Trace(_) => {
            let timestamps = scenario.trace(upstream).expect("the trace's timestamps");
            check_trace_service(timestamps, &deliveries);
        }
    }
}

/// Nanoseconds to send `len` bytes at `bits_per_sec`, rounded up.
fn serialization(len: u32, bits_per_sec: u64) -> Nanos {
    let bits = u128::from(len) * 8 * 1_000_000_000;
    bits.div_ceil(u128::from(bits_per_sec)) as Nanos
}

/// Each packet leaves once the one before it has, plus its own time on
/// the wire.
fn check_serialization(deliveries: &[Delivery], bits_per_sec: u64) {
    let mut free_at = 0u128;
    for delivery in deliveries {
        let start = free_at.max(u128::from(delivery.arrival));
        free_at = start + u128::from(serialization(delivery.len, bits_per_sec));
        assert_eq!(
            u128::from(delivery.exit),
            free_at,
            "packet {} at {bits_per_sec} bit/s",
            delivery.id
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::tests::delivery;

    #[test]
    fn exact_serialization_passes_and_a_nanosecond_off_fails() {
        // 1500 bytes at 12 Mbit/s: 1 ms each, back to back from 0.
        let good = [delivery(0, 1500, MILLI), delivery(0, 1500, 2 * MILLI)];
        check_serialization(&good, 12_000_000);
        let early = [delivery(0, 1500, MILLI), delivery(0, 1500, 2 * MILLI - 1)];
        let caught = std::panic::catch_unwind(|| check_serialization(&early, 12_000_000));
        assert!(caught.is_err());
    }
}
