//! Whether one set of repetitions differs from another: the difference of
//! the medians with a 95 % percentile-bootstrap interval, and the call
//! made from it. Every verdict the report prints ("vs baseline",
//! `h3lab compare`, published vs ours) comes from [`Difference::call`].
//!
//! The bootstrap resamples whole repetitions (a cluster bootstrap):
//! samples of one repetition share its conditions (machine load, path,
//! seed), so resampling them one by one would make a ttfb cell of many
//! connections look far more certain than its few repetitions allow. Each
//! of [`RESAMPLES`] rounds draws, for each side independently, as many
//! repetitions as it has, with replacement, pools their samples and takes
//! the median; the interval is the 2.5th and 97.5th percentile of the
//! statistic over the rounds. The generator (ChaCha8) is seeded from the
//! cells compared, so the same results always give the same interval.
//! See docs/statistics.md.

use crate::quantile::{median, quantile_sorted};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Bootstrap rounds per interval.
pub const RESAMPLES: usize = 10_000;

/// Probability the interval is meant to cover.
pub const CONFIDENCE: f64 = 0.95;

/// Fewer repetitions with samples on either side give no interval.
pub const MIN_REPETITIONS: usize = 2;

/// How a difference is expressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// `(subject − reference) / |reference| × 100`.
    Relative,
    /// `subject − reference`, in the metric's unit.
    Absolute,
}

/// What the interval lets us say about the subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// The interval lies wholly on the better side of zero.
    Better,
    /// The interval lies wholly on the worse side of zero.
    Worse,
    /// The interval includes zero.
    NoClearDifference,
    /// Fewer than [`MIN_REPETITIONS`] on a side: no interval, no guess.
    TooFewRepetitions,
}

impl Call {
    /// The call as the report prints it.
    pub fn word(self) -> &'static str {
        match self {
            Call::Better => "better",
            Call::Worse => "worse",
            Call::NoClearDifference => "no clear difference",
            Call::TooFewRepetitions => "too few repetitions",
        }
    }

    /// Better or worse, as opposed to undecided.
    pub fn is_clear(self) -> bool {
        matches!(self, Call::Better | Call::Worse)
    }
}

/// A subject's median against a reference's, with its interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// Relative (%) or absolute.
    pub scale: Scale,
    /// `%` for a relative difference, else the metric's unit.
    pub unit: String,
    /// The difference of the medians of all samples of each side.
    pub estimate: f64,
    /// The [`CONFIDENCE`] interval of the same quantity; `None` with too
    /// few repetitions.
    pub interval: Option<(f64, f64)>,
    /// Whether a positive difference is better.
    pub higher_is_better: bool,
}

impl Difference {
    /// Relative difference of `subject` against `reference`, each given as
    /// the samples of its repetitions. `None` when a side has no sample
    /// or the reference median is zero (no ratio).
    pub fn relative(
        subject: &[Vec<f64>],
        reference: &[Vec<f64>],
        higher_is_better: bool,
        seed: u64,
    ) -> Option<Difference> {
        let reference_median = median(&mut pooled(reference))?;
        if reference_median == 0.0 {
            return None;
        }
        let (scale, unit) = (Scale::Relative, "%");
        Difference::new(subject, reference, scale, unit, higher_is_better, seed)
    }

    /// Absolute difference `subject − reference` in `unit`; `None` when a
    /// side has no sample.
    pub fn absolute(
        subject: &[Vec<f64>],
        reference: &[Vec<f64>],
        unit: &str,
        higher_is_better: bool,
        seed: u64,
    ) -> Option<Difference> {
        let scale = Scale::Absolute;
        Difference::new(subject, reference, scale, unit, higher_is_better, seed)
    }

    fn new(
        subject: &[Vec<f64>],
        reference: &[Vec<f64>],
        scale: Scale,
        unit: &str,
        higher_is_better: bool,
        seed: u64,
    ) -> Option<Difference> {
        let subject = with_samples(subject);
        let reference = with_samples(reference);
        let statistic = statistic_of(scale);
        let estimate = statistic(
            median(&mut pooled(&subject))?,
            median(&mut pooled(&reference))?,
        );
        Some(Difference {
            scale,
            unit: unit.to_string(),
            estimate,
            interval: bootstrap_interval(&subject, &reference, statistic, seed),
            higher_is_better,
        })
    }

    /// The verdict: better or worse only when the interval excludes zero.
    pub fn call(&self) -> Call {
        match self.interval {
            None => Call::TooFewRepetitions,
            Some((low, _)) if low > 0.0 => self.direction(true),
            Some((_, high)) if high < 0.0 => self.direction(false),
            Some(_) => Call::NoClearDifference,
        }
    }

    fn direction(&self, subject_higher: bool) -> Call {
        if subject_higher == self.higher_is_better {
            Call::Better
        } else {
            Call::Worse
        }
    }

    /// The estimate and its interval, e.g. `+12.3 % [+4.0, +20.1]` or
    /// `-97.50 ms [-120.0, -80.00]`; the estimate alone without interval.
    pub fn figure(&self) -> String {
        let estimate = format!("{} {}", self.signed(self.estimate), self.unit);
        match self.interval {
            Some((low, high)) => {
                format!("{estimate} [{}, {}]", self.signed(low), self.signed(high))
            }
            None => estimate,
        }
    }

    /// The figure and the call, e.g. `+12.3 % [+4.0, +20.1] better`,
    /// `+1.2 % [-3.0, +5.5] no clear difference` or
    /// `+1.2 % (too few repetitions)`.
    pub fn describe(&self) -> String {
        match self.call() {
            Call::TooFewRepetitions => {
                format!("{} ({})", self.figure(), Call::TooFewRepetitions.word())
            }
            call => format!("{} {}", self.figure(), call.word()),
        }
    }

    fn signed(&self, value: f64) -> String {
        let text = match self.scale {
            Scale::Relative => format!("{value:.1}"),
            Scale::Absolute => number(value),
        };
        if value > 0.0 {
            format!("+{text}")
        } else {
            text
        }
    }
}

/// A seed for comparing `subject` with `reference` (each a cell named in
/// words): the 64-bit FNV-1a hash of `"<subject> vs <reference>"`, stable
/// across builds and platforms, unlike the standard library's hasher.
pub fn seed_for(subject: &str, reference: &str) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    format!("{subject} vs {reference}")
        .bytes()
        .fold(OFFSET_BASIS, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(PRIME)
        })
}

/// About four significant figures, without exponent notation.
pub fn number(value: f64) -> String {
    let magnitude = value.abs();
    let decimals = if magnitude >= 1000.0 || magnitude == 0.0 {
        0
    } else if magnitude >= 100.0 {
        1
    } else if magnitude >= 10.0 {
        2
    } else {
        3
    };
    format!("{value:.decimals$}")
}

type Statistic = fn(f64, f64) -> f64;

fn statistic_of(scale: Scale) -> Statistic {
    match scale {
        Scale::Relative => relative_percent,
        Scale::Absolute => |subject, reference| subject - reference,
    }
}

/// A resample's reference median may be zero even when the whole
/// reference's is not: then the ratio is infinite in the subject's
/// direction, or zero when both are zero.
fn relative_percent(subject: f64, reference: f64) -> f64 {
    if reference == 0.0 {
        return if subject == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(subject)
        };
    }
    (subject - reference) / reference.abs() * 100.0
}

/// Repetitions that recorded at least one sample.
fn with_samples(repetitions: &[Vec<f64>]) -> Vec<&[f64]> {
    repetitions
        .iter()
        .filter(|samples| !samples.is_empty())
        .map(Vec::as_slice)
        .collect()
}

fn pooled<S: AsRef<[f64]>>(repetitions: &[S]) -> Vec<f64> {
    repetitions
        .iter()
        .flat_map(|samples| samples.as_ref().iter().copied())
        .collect()
}

fn bootstrap_interval(
    subject: &[&[f64]],
    reference: &[&[f64]],
    statistic: Statistic,
    seed: u64,
) -> Option<(f64, f64)> {
    if subject.len() < MIN_REPETITIONS || reference.len() < MIN_REPETITIONS {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut pool = Vec::new();
    let mut statistics: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let subject_median = resampled_median(subject, &mut rng, &mut pool);
            let reference_median = resampled_median(reference, &mut rng, &mut pool);
            statistic(subject_median, reference_median)
        })
        .collect();
    statistics.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    Some((
        quantile_sorted(&statistics, tail),
        quantile_sorted(&statistics, 1.0 - tail),
    ))
}

/// The median of the pooled samples of as many repetitions as there are,
/// drawn with replacement; `pool` is reused between rounds.
fn resampled_median(repetitions: &[&[f64]], rng: &mut ChaCha8Rng, pool: &mut Vec<f64>) -> f64 {
    pool.clear();
    for _ in 0..repetitions.len() {
        pool.extend_from_slice(repetitions[rng.random_range(0..repetitions.len())]);
    }
    median(pool).expect("every repetition drawn has samples")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_sample_each(values: &[f64]) -> Vec<Vec<f64>> {
        values.iter().map(|&value| vec![value]).collect()
    }

    #[test]
    fn overlapping_repetitions_make_no_clear_difference() {
        // Medians 250 vs 240 (+4.2 %), but the ranges 230..270 and 220..260 overlap.
        let subject = one_sample_each(&[230.0, 250.0, 270.0]);
        let reference = one_sample_each(&[220.0, 240.0, 260.0]);
        let difference = Difference::relative(&subject, &reference, true, 1).unwrap();
        assert!((difference.estimate - 10.0 / 240.0 * 100.0).abs() < 1e-9);
        let (low, high) = difference.interval.unwrap();
        assert!(low < 0.0 && high > 0.0, "{low} {high}");
        assert_eq!(difference.call(), Call::NoClearDifference);
        assert_eq!(
            difference.describe(),
            "+4.2 % [-11.5, +22.7] no clear difference"
        );
    }

    #[test]
    fn a_clear_gap_is_better_or_worse_by_direction() {
        let subject = one_sample_each(&[250.0, 240.0, 260.0]);
        let reference = one_sample_each(&[200.0, 210.0, 220.0]);
        let rate = Difference::relative(&subject, &reference, true, 1).unwrap();
        assert_eq!(rate.call(), Call::Better);
        assert_eq!(rate.describe(), "+19.0 % [+9.1, +30.0] better");
        let time = Difference::relative(&subject, &reference, false, 1).unwrap();
        assert_eq!(time.call(), Call::Worse);
        let faster = Difference::relative(&reference, &subject, false, 1).unwrap();
        assert_eq!(faster.call(), Call::Better);
        assert!(faster.estimate < 0.0);
    }

    /// docs/statistics.md: with three single-sample repetitions per side
    /// the interval is [min_a − max_b, max_a − min_b], whatever the seed.
    #[test]
    fn three_repetitions_give_the_range_interval() {
        let a = [240.0, 250.0, 260.0];
        let b = [200.0, 210.0, 225.0];
        for seed in [0, 1, seed_for("x", "y")] {
            let absolute = Difference::absolute(
                &one_sample_each(&a),
                &one_sample_each(&b),
                "req/s",
                true,
                seed,
            )
            .unwrap();
            assert_eq!(absolute.interval, Some((240.0 - 225.0, 260.0 - 200.0)));
            let relative =
                Difference::relative(&one_sample_each(&a), &one_sample_each(&b), true, seed)
                    .unwrap();
            let (low, high) = relative.interval.unwrap();
            assert!((low - (240.0 - 225.0) / 225.0 * 100.0).abs() < 1e-9);
            assert!((high - (260.0 - 200.0) / 200.0 * 100.0).abs() < 1e-9);
        }
    }

    #[test]
    fn repetitions_not_samples_are_resampled() {
        // Each repetition's 50 samples sit within ±0.5 of its level, but the
        // levels overlap: 100, 110, 120 against 105, 115, 125. Resampling
        // single samples would call this clearly; repetitions cannot.
        let repetitions = |levels: [f64; 3]| -> Vec<Vec<f64>> {
            levels
                .iter()
                .map(|level| (0..50).map(|i| level - 0.5 + f64::from(i) / 50.0).collect())
                .collect()
        };
        let difference = Difference::relative(
            &repetitions([100.0, 110.0, 120.0]),
            &repetitions([105.0, 115.0, 125.0]),
            true,
            3,
        )
        .unwrap();
        assert_eq!(difference.call(), Call::NoClearDifference, "{difference:?}");
    }

    #[test]
    fn the_same_input_gives_the_same_interval() {
        let subject = vec![
            vec![1.0, 5.0, 2.0],
            vec![3.0, 9.0],
            vec![4.0, 4.5, 7.0, 8.0],
        ];
        let reference = vec![vec![2.0, 6.0], vec![1.0, 8.0, 3.0], vec![5.0], vec![2.5]];
        let seed = seed_for("broadband/ttfb/cold/h3", "broadband/ttfb/cold/h2");
        let first = Difference::relative(&subject, &reference, false, seed).unwrap();
        let again = Difference::relative(&subject, &reference, false, seed).unwrap();
        assert_eq!(first, again);
        let (low, high) = first.interval.unwrap();
        assert!(low < high, "not a degenerate interval: {low} {high}");
        assert_eq!(
            seed,
            seed_for("broadband/ttfb/cold/h3", "broadband/ttfb/cold/h2")
        );
        assert_ne!(
            seed,
            seed_for("broadband/ttfb/cold/h2", "broadband/ttfb/cold/h3")
        );
    }

    #[test]
    fn one_repetition_on_a_side_is_too_few() {
        // 20 samples, but from one repetition (e.g. one run of page loads).
        let loads: Vec<f64> = (0..20).map(f64::from).collect();
        let subject = vec![loads.clone()];
        let reference = vec![vec![100.0], vec![]];
        let difference = Difference::relative(&subject, &reference, false, 1).unwrap();
        assert_eq!(difference.interval, None);
        assert_eq!(difference.call(), Call::TooFewRepetitions);
        assert!(!difference.call().is_clear());
        assert_eq!(difference.describe(), "-90.5 % (too few repetitions)");
        // The empty repetition does not count: the reference has one.
        let reverse = Difference::relative(&one_sample_each(&[1.0, 2.0]), &reference, true, 1);
        assert_eq!(reverse.unwrap().call(), Call::TooFewRepetitions);
    }

    #[test]
    fn no_ratio_without_a_reference_median() {
        let zero = one_sample_each(&[0.0, 0.0]);
        assert_eq!(Difference::relative(&zero, &zero, true, 1), None);
        assert_eq!(Difference::relative(&zero, &[], true, 1), None);
        let absolute = Difference::absolute(&zero, &zero, "ms", false, 1).unwrap();
        assert_eq!(absolute.figure(), "0 ms [0, 0]");
        assert_eq!(absolute.call(), Call::NoClearDifference);
    }
}
