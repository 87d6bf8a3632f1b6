//! The trace target: Mahimahi trace text (arbitrary, valid, or a mutated
//! valid trace) parses or fails with a message naming the trace. A parsed
//! trace has exactly the mean rate its timestamps give, and the rate it
//! drives delivers only on its opportunities, never before a packet
//! arrived, and never more than 1500 bytes per opportunity.

use arbitrary::{Result, Unstructured};
use linkem::fuzzing::VirtualDirection;
use linkem::model::{QueueLimit, RateSpec, Trace, MILLI, TRACE_OPPORTUNITY_BYTES};
use linkem::LinkSettings;

use crate::input::{arbitrary_timestamps, mutate, render, soup};
use crate::oracle::{check_trace_service, Delivery};
use crate::target::Target;

/// The name traces get here; every error must name it.
const NAME: &str = "fuzz.down";

const WORDS: &[&str] = &[
    "0",
    "1",
    "2",
    "5",
    "10",
    "1000",
    "60000",
    "-1",
    "+7",
    "1.5",
    "1e3",
    " ",
    "\t",
    "\r",
    "",
    "18446744073709551615",
    "18446744073709551616",
    "18446744073709",
    "x",
    "\u{feff}1",
];

/// The trace target (no state).
pub struct TraceTarget;

impl Target for TraceTarget {
    fn check(&mut self, u: &mut Unstructured) -> Result<()> {
        let valid = arbitrary_timestamps(u)?;
        let (text, must_parse) = match u.int_in_range(0..=2)? {
            0 => (render(&valid, u)?, !too_long(&valid)),
            1 => (mutate(&render(&valid, u)?, u, WORDS)?, false),
            _ => (soup(u, WORDS)?, false),
        };
        let ours = timestamps_of(&text);
        match Trace::parse(NAME, &text) {
            Err(err) => {
                let message = format!("{err:#}");
                assert!(
                    message.contains(NAME),
                    "error does not name the trace: {message}"
                );
                assert!(
                    !must_parse,
                    "a valid trace was refused: {message}\n{text:?}"
                );
                assert!(
                    ours.is_none() || too_long(ours.as_deref().unwrap_or(&[])),
                    "a trace this harness reads as valid was refused: {message}\n{text:?}"
                );
            }
            Ok(trace) => {
                let ours =
                    ours.unwrap_or_else(|| panic!("accepted a trace that is not valid: {text:?}"));
                check_mean_rate(&trace, &ours);
                drive(trace, &ours, u)?;
            }
        }
        Ok(())
    }
}

/// Whether the trace's period is beyond what linkem accepts (one week),
/// which keeps its nanosecond times far from overflowing.
fn too_long(timestamps: &[u64]) -> bool {
    timestamps
        .last()
        .is_some_and(|&last| last > linkem::model::MAX_TRACE_MS)
}

/// This harness's own reading of a trace: one integer per non-blank line,
/// never decreasing, the last one positive.
fn timestamps_of(text: &str) -> Option<Vec<u64>> {
    let values: Vec<u64> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(|line| line.parse().ok())
        .collect::<Option<_>>()?;
    let ordered = values.windows(2).all(|w| w[0] <= w[1]);
    (ordered && values.last().is_some_and(|&last| last > 0)).then_some(values)
}

fn check_mean_rate(trace: &Trace, timestamps: &[u64]) {
    let rate = RateSpec::Trace(trace.clone())
        .mean_bits_per_sec()
        .expect("a trace has a rate");
    let period_s = *timestamps.last().expect("not empty") as f64 / 1000.0;
    let expected = timestamps.len() as f64 * f64::from(TRACE_OPPORTUNITY_BYTES) * 8.0 / period_s;
    assert!(rate.is_finite() && rate > 0.0, "trace rate {rate}");
    assert!(
        (rate - expected).abs() <= expected * 1e-9,
        "trace rate {rate}, its timestamps give {expected}"
    );
}

/// Offers packets to a downstream direction served by the trace alone (no
/// delay, no loss, no queue limit) and checks every delivery.
fn drive(trace: Trace, timestamps: &[u64], u: &mut Unstructured) -> Result<()> {
    let settings = LinkSettings {
        down: RateSpec::Trace(trace),
        queue: Some(QueueLimit::Unlimited),
        ..LinkSettings::default()
    };
    let mut direction = VirtualDirection::downstream(&settings);
    let period = *timestamps.last().expect("not empty");
    let mut arrivals = Vec::new();
    let mut now = 0u64;
    for id in 0..u.int_in_range(0..=200u64)? {
        now += match u.int_in_range(0..=3)? {
            0 => 0,
            1 => u.int_in_range(0..=MILLI)?,
            2 => u.int_in_range(0..=period.min(10_000) * MILLI)?,
            _ => u.int_in_range(0..=3 * period.min(1_000_000) * MILLI)?,
        };
        let len = u.int_in_range(0..=4000u32)?;
        assert!(direction.offer(id, len, now), "an unlimited queue dropped");
        arrivals.push((now, len));
    }
    let mut deliveries = Vec::new();
    while let Some(due) = direction.next_due() {
        let id = direction.pop_due(due).expect("due now") as usize;
        let (arrival, len) = arrivals[id];
        deliveries.push(Delivery {
            id: id as u64,
            arrival,
            len,
            exit: due,
        });
    }
    assert_eq!(deliveries.len(), arrivals.len(), "packets went missing");
    check_trace_service(timestamps, &deliveries);
    Ok(())
}
