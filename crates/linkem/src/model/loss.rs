//! Random loss: independent (Bernoulli) or bursty (Gilbert-Elliott).

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{DropCause, Nanos, Stage, Verdict};

/// The four Gilbert-Elliott parameters, as netem's `gemodel` names them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GilbertElliott {
    /// P(good -> bad) per packet.
    pub(crate) p: f64,
    /// P(bad -> good) per packet; the mean stay in the bad state is `1/r`.
    pub(crate) r: f64,
    /// Loss probability in the good state (`1-h`).
    pub(crate) loss_good: f64,
    /// Loss probability in the bad state (`1-k`).
    pub(crate) loss_bad: f64,
}

impl GilbertElliott {
    /// Long-run loss fraction: time share of each state times its loss.
    pub(crate) fn mean_loss(&self) -> f64 {
        let total = self.p + self.r;
        if total == 0.0 {
            return self.loss_good;
        }
        (self.r * self.loss_good + self.p * self.loss_bad) / total
    }
}

/// How packets are lost at random.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "model")]
pub enum LossModel {
    /// Each packet is lost independently with this probability.
    Bernoulli {
        /// Loss probability per packet (0 to 1).
        p: f64,
    },
    /// Two-state bursty loss.
    Gilbert(GilbertElliott),
}

impl LossModel {
    /// No loss at all.
    pub(crate) const NONE: LossModel = LossModel::Bernoulli { p: 0.0 };

    /// Long-run loss fraction.
    pub fn mean_loss(&self) -> f64 {
        match self {
            LossModel::Bernoulli { p } => *p,
            LossModel::Gilbert(ge) => ge.mean_loss(),
        }
    }
}

/// The loss stage.
pub(crate) struct Loss {
    model: LossModel,
    in_bad_state: bool,
    rng: ChaCha8Rng,
}

impl Loss {
    pub fn new(model: LossModel, rng: ChaCha8Rng) -> Self {
        Loss {
            model,
            in_bad_state: false,
            rng,
        }
    }

    fn lost(&mut self) -> bool {
        match self.model {
            LossModel::Bernoulli { p } => self.rng.random::<f64>() < p,
            LossModel::Gilbert(ge) => {
                let loss = if self.in_bad_state {
                    ge.loss_bad
                } else {
                    ge.loss_good
                };
                let switch = if self.in_bad_state { ge.r } else { ge.p };
                // Two draws per packet whatever the outcome, so the stream
                // stays aligned with the packet index.
                let lost = self.rng.random::<f64>() < loss;
                if self.rng.random::<f64>() < switch {
                    self.in_bad_state = !self.in_bad_state;
                }
                lost
            }
        }
    }
}

impl Stage for Loss {
    fn offer(&mut self, _len: u32, at: Nanos) -> Verdict {
        if self.lost() {
            Verdict::Drop(DropCause::Loss)
        } else {
            Verdict::Pass(at)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{stream, Impairment, Way};

    fn loss(model: LossModel, seed: u64) -> Loss {
        Loss::new(model, stream(seed, Way::Down, Impairment::Loss))
    }

    fn outcomes(stage: &mut Loss, n: usize) -> Vec<bool> {
        (0..n)
            .map(|i| stage.offer(1500, i as Nanos) == Verdict::Drop(DropCause::Loss))
            .collect()
    }

    /// |observed - expected| within 4 binomial standard deviations.
    fn assert_fraction(lost: usize, n: usize, p: f64) {
        let sigma = (n as f64 * p * (1.0 - p)).sqrt();
        let diff = (lost as f64 - n as f64 * p).abs();
        assert!(
            diff <= 4.0 * sigma,
            "lost {lost} of {n}, expected {} +- {}",
            n as f64 * p,
            4.0 * sigma
        );
    }

    #[test]
    fn bernoulli_loss_fraction_is_within_four_sigma() {
        for (p, seed) in [(0.001, 1), (0.01, 2), (0.05, 3), (0.15, 4)] {
            let n = 200_000;
            let lost = outcomes(&mut loss(LossModel::Bernoulli { p }, seed), n)
                .into_iter()
                .filter(|&l| l)
                .count();
            assert_fraction(lost, n, p);
        }
    }

    #[test]
    fn zero_and_full_loss_are_exact() {
        let none = outcomes(&mut loss(LossModel::NONE, 9), 10_000);
        assert!(none.iter().all(|&l| !l));
        let all = outcomes(&mut loss(LossModel::Bernoulli { p: 1.0 }, 9), 10_000);
        assert!(all.iter().all(|&l| l));
    }

    fn bursts(lost: &[bool]) -> Vec<usize> {
        lost.split(|&l| !l)
            .filter(|run| !run.is_empty())
            .map(<[bool]>::len)
            .collect()
    }

    #[test]
    fn gilbert_elliott_bursts_match_the_model() {
        let ge = GilbertElliott {
            p: 0.01,
            r: 0.25,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let n = 400_000;
        let lost = outcomes(&mut loss(LossModel::Gilbert(ge), 42), n);
        let runs = bursts(&lost);
        let mean_burst = runs.iter().sum::<usize>() as f64 / runs.len() as f64;
        // Burst lengths are geometric with mean 1/r; the sample mean of
        // `runs.len()` of them has standard deviation sqrt(1-r)/r/sqrt(m).
        let expected = 1.0 / ge.r;
        let sigma = (1.0 - ge.r).sqrt() / ge.r / (runs.len() as f64).sqrt();
        assert!(
            (mean_burst - expected).abs() <= 4.0 * sigma,
            "mean burst {mean_burst}, expected {expected} +- {}",
            4.0 * sigma
        );
        // Long-run loss p/(p+r) within a loose bound (losses are correlated).
        let fraction = lost.iter().filter(|&&l| l).count() as f64 / n as f64;
        let expected_fraction = ge.mean_loss();
        assert!(
            (fraction - expected_fraction).abs() < 0.1 * expected_fraction,
            "loss {fraction}, expected {expected_fraction}"
        );
    }

    #[test]
    fn gilbert_elliott_good_state_loss_applies() {
        let ge = GilbertElliott {
            p: 0.0,
            r: 1.0,
            loss_good: 0.02,
            loss_bad: 1.0,
        };
        let n = 100_000;
        let lost = outcomes(&mut loss(LossModel::Gilbert(ge), 5), n);
        assert_fraction(lost.iter().filter(|&&l| l).count(), n, 0.02);
    }

    #[test]
    fn same_seed_same_decisions_other_seed_other_decisions() {
        let model = LossModel::Bernoulli { p: 0.1 };
        let a = outcomes(&mut loss(model, 7), 10_000);
        let b = outcomes(&mut loss(model, 7), 10_000);
        let c = outcomes(&mut loss(model, 8), 10_000);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
