//! Propagation delay with jitter, and the optional reordering and duplication.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

use super::{Nanos, Stage, Verdict};

/// The distribution jitter is drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum JitterShape {
    /// Uniform in `[-amount, +amount]`.
    Uniform,
    /// Normal with standard deviation `amount`.
    Normal,
}

/// Random variation of the one-way delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jitter {
    /// Half-width (uniform) or standard deviation (normal), in nanoseconds.
    #[serde(rename = "amount_ns")]
    pub(crate) amount: Nanos,
    /// The distribution it is drawn from.
    pub(crate) shape: JitterShape,
}

/// Fixed propagation delay plus jitter. Packets never overtake each other
/// here: a packet leaves no earlier than the one before it.
pub(crate) struct Delay {
    base: Nanos,
    jitter: Option<(Jitter, ChaCha8Rng)>,
    last_departure: Nanos,
}

impl Delay {
    pub fn new(base: Nanos, jitter: Option<(Jitter, ChaCha8Rng)>) -> Self {
        Delay {
            base,
            jitter,
            last_departure: 0,
        }
    }

    fn sample_jitter(&mut self) -> f64 {
        let Some((jitter, rng)) = &mut self.jitter else {
            return 0.0;
        };
        let amount = jitter.amount as f64;
        match jitter.shape {
            JitterShape::Uniform => rng.random_range(-amount..=amount),
            JitterShape::Normal => Normal::new(0.0, amount)
                .expect("a finite, non-negative standard deviation")
                .sample(rng),
        }
    }
}

impl Stage for Delay {
    fn offer(&mut self, _len: u32, at: Nanos) -> Verdict {
        let delay = (self.base as f64 + self.sample_jitter()).max(0.0) as Nanos;
        let departure = (at + delay).max(self.last_departure);
        self.last_departure = departure;
        Verdict::Pass(departure)
    }
}

/// Holds back a random share of packets by an extra delay, so later packets
/// overtake them.
pub(crate) struct Reorder {
    probability: f64,
    extra: Nanos,
    rng: ChaCha8Rng,
}

impl Reorder {
    pub fn new(probability: f64, extra: Nanos, rng: ChaCha8Rng) -> Self {
        Reorder {
            probability,
            extra,
            rng,
        }
    }
}

impl Stage for Reorder {
    fn offer(&mut self, _len: u32, at: Nanos) -> Verdict {
        if self.rng.random::<f64>() < self.probability {
            Verdict::Pass(at + self.extra)
        } else {
            Verdict::Pass(at)
        }
    }
}

/// Sends a random share of packets twice.
pub(crate) struct Duplicate {
    probability: f64,
    rng: ChaCha8Rng,
}

impl Duplicate {
    pub fn new(probability: f64, rng: ChaCha8Rng) -> Self {
        Duplicate { probability, rng }
    }
}

impl Stage for Duplicate {
    fn offer(&mut self, _len: u32, at: Nanos) -> Verdict {
        if self.rng.random::<f64>() < self.probability {
            Verdict::Duplicate(at)
        } else {
            Verdict::Pass(at)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{stream, Impairment, Way, MILLI};

    fn departures(stage: &mut dyn Stage, arrivals: impl Iterator<Item = Nanos>) -> Vec<Nanos> {
        arrivals
            .map(|at| match stage.offer(1500, at) {
                Verdict::Pass(t) => t,
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    #[test]
    fn fixed_delay_is_exact_for_every_packet() {
        let mut delay = Delay::new(25 * MILLI, None);
        let arrivals: Vec<Nanos> = (0..1000).map(|i| i * 37_003).collect();
        let out = departures(&mut delay, arrivals.iter().copied());
        for (at, left) in arrivals.iter().zip(out) {
            assert_eq!(left - at, 25 * MILLI);
        }
    }

    #[test]
    fn jitter_never_reorders_and_varies_the_delay() {
        for shape in [JitterShape::Uniform, JitterShape::Normal] {
            let jitter = Jitter {
                amount: 5 * MILLI,
                shape,
            };
            let rng = stream(3, Way::Up, Impairment::Jitter);
            let mut delay = Delay::new(30 * MILLI, Some((jitter, rng)));
            let arrivals: Vec<Nanos> = (0..20_000).map(|i| i * 2 * MILLI).collect();
            let out = departures(&mut delay, arrivals.iter().copied());
            assert!(out.windows(2).all(|w| w[0] <= w[1]), "{shape:?} reordered");
            let delays: Vec<Nanos> = arrivals.iter().zip(&out).map(|(a, d)| d - a).collect();
            let min = *delays.iter().min().unwrap();
            let max = *delays.iter().max().unwrap();
            assert!(max - min > 5 * MILLI, "{shape:?} jitter had no effect");
            let mean = delays.iter().sum::<Nanos>() as f64 / delays.len() as f64;
            // The FIFO floor only ever adds delay; the mean stays near base.
            assert!(mean >= 30.0 * MILLI as f64 - 0.2 * MILLI as f64);
            assert!(mean <= 35.0 * MILLI as f64);
        }
    }

    #[test]
    fn uniform_jitter_stays_within_its_bounds_when_spaced_out() {
        let jitter = Jitter {
            amount: 2 * MILLI,
            shape: JitterShape::Uniform,
        };
        let mut delay = Delay::new(
            10 * MILLI,
            Some((jitter, stream(1, Way::Down, Impairment::Jitter))),
        );
        // Arrivals 10 ms apart: the FIFO floor never binds.
        for i in 0..5000 {
            let at = i * 10 * MILLI;
            let Verdict::Pass(t) = delay.offer(100, at) else {
                panic!()
            };
            assert!((8 * MILLI..=12 * MILLI).contains(&(t - at)));
        }
    }

    #[test]
    fn reordering_reorders_the_configured_share() {
        let n = 100_000u64;
        let mut reorder = Reorder::new(0.05, 3 * MILLI, stream(2, Way::Down, Impairment::Reorder));
        let out = departures(&mut reorder, (0..n).map(|i| i * 100_000));
        let held = (0..n as usize)
            .filter(|&i| out[i] != i as Nanos * 100_000)
            .count() as f64;
        let sigma = (n as f64 * 0.05 * 0.95).sqrt();
        assert!((held - n as f64 * 0.05).abs() <= 4.0 * sigma, "held {held}");
        assert!(out.windows(2).any(|w| w[0] > w[1]), "nothing overtaken");
    }

    #[test]
    fn duplication_copies_the_configured_share() {
        let n = 100_000;
        let mut dup = Duplicate::new(0.01, stream(2, Way::Up, Impairment::Duplicate));
        let copies = (0..n)
            .filter(|&i| matches!(dup.offer(1500, i), Verdict::Duplicate(t) if t == i))
            .count() as f64;
        let sigma = (n as f64 * 0.01 * 0.99).sqrt();
        assert!(
            (copies - n as f64 * 0.01).abs() <= 4.0 * sigma,
            "copies {copies}"
        );
    }
}
