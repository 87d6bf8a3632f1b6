//! The rule verdicts followed before they were calibrated (issue 60): a
//! 95 % percentile bootstrap of whole repetitions, called when the interval
//! excludes zero. With 3 single-sample repetitions a side its interval is
//! exactly `[min_a − max_b, max_a − min_b]`, so it calls whenever the two
//! ranges do not overlap: 2 / C(6, 3) = 10 % of the time when nothing
//! differs. Kept only to measure that: `h3lab report --aa` counts its false
//! verdicts beside the permutation test's, and the tests show it misses
//! its level. Nothing else calls it.

use crate::difference::{pooled, with_samples, Call, CONFIDENCE};
use crate::quantile::{median, quantile_sorted};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Bootstrap rounds per interval, as the old rule ran them.
pub const RESAMPLES: usize = 10_000;

/// The old rule's call of `subject` against `reference` (relative, as
/// the baseline comparisons were): better or worse when the bootstrap
/// interval of the relative difference of medians excludes zero; too few
/// repetitions below 2 a side.
pub fn call(
    subject: &[Vec<f64>],
    reference: &[Vec<f64>],
    higher_is_better: bool,
    seed: u64,
) -> Call {
    let subject = with_samples(subject);
    let reference = with_samples(reference);
    let Some((low, high)) = interval(&subject, &reference, seed) else {
        return Call::TooFewRepetitions;
    };
    let subject_higher = if low > 0.0 {
        true
    } else if high < 0.0 {
        false
    } else {
        return Call::NoClearDifference;
    };
    match subject_higher == higher_is_better {
        true => Call::Better,
        false => Call::Worse,
    }
}

fn interval(subject: &[&[f64]], reference: &[&[f64]], seed: u64) -> Option<(f64, f64)> {
    if subject.len() < 2 || reference.len() < 2 {
        return None;
    }
    if median(&mut pooled(reference))? == 0.0 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut pool = Vec::new();
    let mut statistics: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let a = resampled_median(subject, &mut rng, &mut pool);
            let b = resampled_median(reference, &mut rng, &mut pool);
            relative_percent(a, b)
        })
        .collect();
    statistics.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    Some((
        quantile_sorted(&statistics, tail),
        quantile_sorted(&statistics, 1.0 - tail),
    ))
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

    /// docs/statistics.md: with three single-sample repetitions per side
    /// the old rule calls exactly when the ranges do not overlap.
    #[test]
    fn three_repetitions_call_when_the_ranges_do_not_overlap() {
        let single =
            |values: &[f64]| -> Vec<Vec<f64>> { values.iter().map(|&v| vec![v]).collect() };
        let apart = call(
            &single(&[240.0, 250.0, 260.0]),
            &single(&[200.0, 210.0, 225.0]),
            true,
            1,
        );
        assert_eq!(apart, Call::Better);
        let touching = call(
            &single(&[226.0, 250.0, 260.0]),
            &single(&[200.0, 210.0, 225.0]),
            true,
            1,
        );
        assert_eq!(touching, Call::Better, "no overlap, however close");
        let overlapping = call(
            &single(&[224.0, 250.0, 260.0]),
            &single(&[200.0, 210.0, 225.0]),
            true,
            1,
        );
        assert_eq!(overlapping, Call::NoClearDifference);
    }
}
