//! How often the population verdict calls a difference when there is none
//! (an A/A): every group's two sides drawn from the same distribution.
//! `cargo run --release -p h3lab-results --example population_aa`

use h3lab_results::difference::LEVEL;
use h3lab_results::population::{GroupSamples, Mixture, Repetition, View};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A repetition of `loads` page loads: a level that varies between
/// repetitions (the path, the machine) and a spread within.
fn repetition(rng: &mut ChaCha8Rng, median: f64, loads: usize) -> Repetition {
    let level = median * (1.0 + 0.05 * normal(rng));
    let samples: Vec<f64> = (0..loads)
        .map(|_| {
            level * (0.08 * normal(rng)).exp() * if rng.random::<f64>() < 0.05 { 3.0 } else { 1.0 }
        })
        .collect();
    Repetition::of_samples(&samples).unwrap()
}

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let (u, v): (f64, f64) = (rng.random(), rng.random());
    (-2.0 * u.max(1e-300).ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

fn main() {
    let groups = [(0.55, 240.0), (0.30, 720.0), (0.10, 2700.0), (0.05, 240.0)];
    for repetitions in [4, 5, 8] {
        let experiments = 400;
        let mut bootstrap = [0usize; 4];
        let mut permutation = [0usize; 4];
        let mut rng = ChaCha8Rng::seed_from_u64(repetitions as u64);
        for experiment in 0..experiments {
            let samples = groups
                .iter()
                .map(|&(share, median)| GroupSamples {
                    share,
                    off: (0..repetitions)
                        .map(|_| repetition(&mut rng, median, 4))
                        .collect(),
                    on: (0..repetitions)
                        .map(|_| repetition(&mut rng, median, 4))
                        .collect(),
                })
                .collect();
            let mixture = Mixture::new(samples).unwrap();
            for (at, q) in [0.5, 0.75, 0.95, 0.99].into_iter().enumerate() {
                let change = |view: &View| view.quantile(1.0, q) - view.quantile(0.0, q);
                let interval = mixture.estimate(experiment as u64, change);
                bootstrap[at] += usize::from(interval.excludes_zero());
                let p = mixture.p_value(experiment as u64, change);
                permutation[at] += usize::from(p <= LEVEL);
            }
        }
        let rates = |calls: [usize; 4]| -> String {
            let rates: Vec<String> = (calls.iter())
                .map(|&c| format!("{:.1} %", 100.0 * c as f64 / experiments as f64))
                .collect();
            rates.join(", ")
        };
        println!(
            "{repetitions} repetitions a side, {experiments} A/A experiments, false calls at \
             p50, p75, p95, p99: bootstrap interval {}; permutation test {}",
            rates(bootstrap),
            rates(permutation)
        );
    }
}
