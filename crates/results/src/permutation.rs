//! The exact test behind every verdict: a two-sample permutation test of
//! whole repetitions (clusters of samples), and the interval found by
//! inverting it. Pure arithmetic on samples; see docs/statistics.md.
//!
//! Under "no difference" the repetitions of both sides are exchangeable,
//! so every way of dealing them into a subject side and a reference side of
//! the same sizes is as likely as the one observed. Each repetition is
//! summarised by its median, and the statistic is the Wilcoxon rank sum of
//! the subject's repetitions (midranks for ties): the p-value is the share
//! of arrangements whose rank sum is at least as far from its expectation
//! as the observed one. Ranks, not the difference of pooled medians, are
//! tested because a median ignores its extremes: with 4 repetitions a side
//! many arrangements share the observed medians' difference, and no
//! outcome could reach 5 %. It is exact (every
//! arrangement, when there are at most [`ENUMERATED`]) or a Monte Carlo
//! estimate that is still valid, `(1 + hits) / (1 + draws)`, above that.
//! Either way a verdict at level α is wrong at most α of the time when
//! nothing differs, whatever the samples' distribution.

use crate::quantile::median;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// At most this many arrangements are enumerated; more are sampled.
pub const ENUMERATED: u64 = 20_000;

/// Arrangements drawn when there are too many to enumerate.
pub const DRAWN: usize = 9_999;

/// Which repetitions each arrangement gives the subject side, as a flat
/// table of `total` flags per arrangement. The observed arrangement
/// (the first `subject` repetitions) is always the first.
pub struct Arrangements {
    total: usize,
    flags: Vec<bool>,
    /// Enumerated (exact) rather than drawn.
    exact: bool,
}

impl Arrangements {
    /// Every way (or [`DRAWN`] random ways plus the observed one) of
    /// choosing `subject` of `subject + reference` repetitions.
    pub fn new(subject: usize, reference: usize, seed: u64) -> Arrangements {
        let total = subject + reference;
        let exact = choose(total, subject) <= ENUMERATED;
        let mut flags = Vec::new();
        let observed: Vec<bool> = (0..total).map(|index| index < subject).collect();
        flags.extend_from_slice(&observed);
        if exact {
            let mut chosen: Vec<usize> = (0..subject).collect();
            while next_combination(&mut chosen, total) {
                flags.extend((0..total).map(|index| chosen.contains(&index)));
            }
        } else {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut deal = observed;
            for _ in 0..DRAWN {
                deal.shuffle(&mut rng);
                flags.extend_from_slice(&deal);
            }
        }
        Arrangements {
            total,
            flags,
            exact,
        }
    }

    fn iter(&self) -> impl Iterator<Item = &[bool]> {
        self.flags.chunks(self.total)
    }

    /// How many arrangements there are (the observed one included).
    pub fn count(&self) -> usize {
        self.flags.len() / self.total.max(1)
    }

    /// Whether the p-value is exact.
    pub fn exact(&self) -> bool {
        self.exact
    }
}

/// The binomial coefficient, saturating at `u64::MAX`.
pub fn choose(n: usize, k: usize) -> u64 {
    let k = k.min(n - k.min(n));
    (0..k).fold(1u64, |acc, i| {
        acc.saturating_mul((n - i) as u64) / (i as u64 + 1)
    })
}

/// The smallest two-sided p-value `subject` against `reference`
/// repetitions can reach: the two most extreme arrangements of
/// `C(subject + reference, subject)`. (With unequal sides the mirror of
/// the most extreme one may be less extreme; counting it anyway keeps the
/// rule on the safe side.)
pub fn smallest_p(subject: usize, reference: usize) -> f64 {
    2.0 / choose(subject + reference, subject) as f64
}

/// Steps `chosen` (sorted indices below `total`) to the next combination
/// in lexicographic order; false after the last.
fn next_combination(chosen: &mut [usize], total: usize) -> bool {
    let k = chosen.len();
    let Some(position) = (0..k).rev().find(|&i| chosen[i] < total - k + i) else {
        return false;
    };
    chosen[position] += 1;
    for i in position + 1..k {
        chosen[i] = chosen[i - 1] + 1;
    }
    true
}

/// The two-sided p-value of "no difference" between the first `subject`
/// repetitions of `repetitions` (each non-empty) and the rest, over
/// `arrangements`: the share of arrangements whose rank sum of the
/// repetitions' medians is at least as far from its expectation as the
/// observed one's.
pub fn p_value(repetitions: &[&[f64]], arrangements: &Arrangements) -> f64 {
    let medians: Vec<f64> = repetitions
        .iter()
        .map(|samples| median(&mut samples.to_vec()).unwrap_or(f64::NAN))
        .collect();
    let ranks = midranks(&medians);
    let mut deals = arrangements.iter();
    let Some(observed) = deals.next() else {
        return 1.0;
    };
    let subject = observed.iter().filter(|&&in_subject| in_subject).count();
    let expected = subject as f64 * (repetitions.len() as f64 + 1.0) / 2.0;
    let distance = |flags: &[bool]| {
        let sum: f64 = ranks
            .iter()
            .zip(flags)
            .filter(|(_, &s)| s)
            .map(|(r, _)| r)
            .sum();
        (sum - expected).abs()
    };
    // Midranks are halves, so sums are exact; the margin only guards
    // against a sum's rounding.
    let threshold = distance(observed) - 1e-9;
    let hits = deals.filter(|flags| distance(flags) >= threshold).count();
    (1 + hits) as f64 / arrangements.count() as f64
}

/// Ranks from 1, tied values sharing the mean of their ranks.
fn midranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let tied = order[start..]
            .iter()
            .take_while(|&&i| values[i] == values[order[start]])
            .count();
        let rank = start as f64 + (tied as f64 + 1.0) / 2.0;
        for &i in &order[start..start + tied] {
            ranks[i] = rank;
        }
        start += tied;
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(values: &[f64]) -> Vec<Vec<f64>> {
        values.iter().map(|&value| vec![value]).collect()
    }

    fn p(subject: &[f64], reference: &[f64]) -> f64 {
        let all: Vec<Vec<f64>> = single(subject)
            .into_iter()
            .chain(single(reference))
            .collect();
        let slices: Vec<&[f64]> = all.iter().map(Vec::as_slice).collect();
        p_value(
            &slices,
            &Arrangements::new(subject.len(), reference.len(), 7),
        )
    }

    #[test]
    fn combinations_are_counted_and_enumerated_exactly() {
        assert_eq!(choose(6, 3), 20);
        assert_eq!(choose(8, 4), 70);
        assert_eq!(choose(10, 5), 252);
        assert_eq!(choose(3, 0), 1);
        let arrangements = Arrangements::new(3, 3, 1);
        assert!(arrangements.exact());
        assert_eq!(arrangements.count(), 20);
        let distinct: std::collections::BTreeSet<Vec<bool>> =
            arrangements.iter().map(<[bool]>::to_vec).collect();
        assert_eq!(distinct.len(), 20, "every arrangement once");
        assert!(arrangements
            .iter()
            .all(|f| f.iter().filter(|&&s| s).count() == 3));
    }

    #[test]
    fn separated_sides_reach_the_smallest_p_and_no_lower() {
        // 4 against 4, wholly apart: the observed and its mirror of 70.
        assert_eq!(
            p(&[10.0, 11.0, 12.0, 13.0], &[1.0, 2.0, 3.0, 4.0]),
            2.0 / 70.0
        );
        assert_eq!(smallest_p(4, 4), 2.0 / 70.0);
        // 3 against 3 can never go below 2 / 20.
        assert_eq!(p(&[10.0, 11.0, 12.0], &[1.0, 2.0, 3.0]), 0.1);
        assert_eq!(smallest_p(3, 3), 0.1);
    }

    #[test]
    fn ties_share_their_ranks() {
        assert_eq!(midranks(&[3.0, 1.0, 3.0, 2.0]), [3.5, 1.0, 3.5, 2.0]);
        assert_eq!(midranks(&[5.0, 5.0, 5.0]), [2.0, 2.0, 2.0]);
    }

    #[test]
    fn identical_sides_have_p_one() {
        assert_eq!(p(&[5.0, 6.0, 7.0, 8.0], &[5.0, 6.0, 7.0, 8.0]), 1.0);
    }

    #[test]
    fn many_repetitions_are_sampled_with_a_valid_p() {
        let arrangements = Arrangements::new(10, 10, 3);
        assert!(!arrangements.exact());
        assert_eq!(arrangements.count(), DRAWN + 1);
        let subject: Vec<f64> = (0..10).map(|i| 100.0 + f64::from(i)).collect();
        let reference: Vec<f64> = (0..10).map(f64::from).collect();
        let value = p(&subject, &reference);
        assert!(value <= 2.0 / (DRAWN + 1) as f64 * 3.0, "{value}");
        assert!(value >= 1.0 / (DRAWN + 1) as f64);
    }
}
