//! Whether one set of repetitions differs from another: the difference of
//! the medians, the exact permutation test of "no difference" behind the
//! call, and the 95 % interval found by inverting that test. Every verdict
//! the report prints ("vs baseline", `h3lab compare`, published vs ours,
//! A/A runs) comes from [`Difference::call`].
//!
//! Repetitions are the units: samples of one repetition share its
//! conditions (machine load, path, seed), so the test deals whole
//! repetitions between the sides ([`crate::permutation`]). A call is made
//! only when its p-value is at most [`LEVEL`], so when nothing differs a
//! verdict is wrong at most 5 % of the time; with too few repetitions to
//! ever reach that, the difference is shown with no call and with the
//! count it would need. The interval holds every shift of the subject that
//! the same test would not reject, so it excludes zero exactly when the
//! call is better or worse. See docs/statistics.md.

use crate::permutation::{p_value, smallest_p, Arrangements};
use crate::quantile::median;
use serde::Serialize;

/// Probability the interval is meant to cover.
pub const CONFIDENCE: f64 = 0.95;

/// The largest p-value called better or worse: the false-verdict rate per
/// verdict when nothing differs.
pub const LEVEL: f64 = 1.0 - CONFIDENCE;

/// Bisection steps for each end of the interval: the bracket shrinks by
/// 2^-30, far below the precision figures are printed with.
const BISECTIONS: usize = 30;

/// How a difference is expressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// `(subject − reference) / |reference| × 100`.
    Relative,
    /// `subject − reference`, in the metric's unit.
    Absolute,
}

/// What the test lets us say about the subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// Called, and the subject is better.
    Better,
    /// Called, and the subject is worse.
    Worse,
    /// Not called: the p-value is above [`LEVEL`].
    NoClearDifference,
    /// So few repetitions that no outcome could be called at [`LEVEL`]:
    /// no verdict is guessed.
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

/// The fewest repetitions per side with which a call at [`LEVEL`] is
/// possible at all: 4 (the smallest p-value of 4 against 4 is 2 / 70).
pub fn repetitions_needed() -> usize {
    (2..)
        .find(|&n| smallest_p(n, n) <= LEVEL)
        .expect("some count reaches any level above zero")
}

/// Whether `subject` against `reference` repetitions can be called at
/// [`LEVEL`] at all.
fn reachable(subject: usize, reference: usize) -> bool {
    subject > 0 && reference > 0 && smallest_p(subject, reference) <= LEVEL
}

/// The p-value of "no difference" that [`Difference::call`] decides by,
/// alone (no interval): `None` with too few repetitions.
pub fn p_value_of(subject: &[Vec<f64>], reference: &[Vec<f64>], seed: u64) -> Option<f64> {
    let subject = with_samples(subject);
    let reference = with_samples(reference);
    reachable(subject.len(), reference.len())
        .then(|| ShiftTest::new(&subject, &reference, Scale::Absolute, seed).p_at(0.0))
}

/// A subject's median against a reference's, with its test and interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// Relative (%) or absolute.
    pub scale: Scale,
    /// `%` for a relative difference, else the metric's unit.
    pub unit: String,
    /// The difference of the medians of all samples of each side.
    pub estimate: f64,
    /// The [`CONFIDENCE`] interval of the same quantity (every shift the
    /// test does not reject); `None` with too few repetitions. An end may
    /// be infinite when no shift that way is ever rejected.
    pub interval: Option<(f64, f64)>,
    /// The permutation test's two-sided p-value of "no difference";
    /// `None` with too few repetitions.
    pub p_value: Option<f64>,
    /// The shift the test is centred on (the Hodges-Lehmann estimate of
    /// the repetitions' medians): the interval is grown from it, and a
    /// call's direction is its sign. It differs from `estimate` (pooled
    /// samples) only when repetitions' spreads differ.
    pub centre: Option<f64>,
    /// The smallest difference this run could have called, given its
    /// spread: the interval's larger half-width (a true difference that
    /// large would have put the interval's end at zero).
    pub detectable: Option<f64>,
    /// Repetitions with samples: the subject's and the reference's.
    pub repetitions: (usize, usize),
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
        let reference_median = median(&mut pooled(&with_samples(reference)))?;
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
        let estimate = scale.of(
            median(&mut pooled(&subject))?,
            median(&mut pooled(&reference))?,
        );
        let mut difference = Difference {
            scale,
            unit: unit.to_string(),
            estimate,
            interval: None,
            p_value: None,
            centre: None,
            detectable: None,
            repetitions: (subject.len(), reference.len()),
            higher_is_better,
        };
        if reachable(subject.len(), reference.len()) {
            let test = ShiftTest::new(&subject, &reference, scale, seed);
            let p = test.p_at(0.0);
            let centre = test.centre();
            let interval = test.interval(centre, p);
            difference.p_value = Some(p);
            difference.centre = Some(centre);
            difference.interval = Some(interval);
            difference.detectable = Some((centre - interval.0).max(interval.1 - centre))
                .filter(|width| width.is_finite());
        }
        Some(difference)
    }

    /// The verdict: better or worse only when the test's p-value is at
    /// most [`LEVEL`].
    pub fn call(&self) -> Call {
        match (self.p_value, self.centre) {
            (Some(p), Some(centre)) if p <= LEVEL => self.direction(centre > 0.0),
            (Some(_), _) => Call::NoClearDifference,
            (None, _) => Call::TooFewRepetitions,
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
    /// A called difference whose interval's near end rounds to zero (tied
    /// samples: zero itself is rejected, any shift past it is not) shows
    /// that end open, `+7.1 % (0, +14.6]`.
    pub fn figure(&self) -> String {
        let estimate = format!("{} {}", self.signed(self.estimate), self.unit);
        let Some((low, high)) = self.interval else {
            return estimate;
        };
        let open_at_zero =
            |end: f64| self.call().is_clear() && self.unsigned(end.abs()) == self.unsigned(0.0);
        let low = match open_at_zero(low) {
            true => "(0".to_string(),
            false => format!("[{}", self.signed(low)),
        };
        let high = match open_at_zero(high) {
            true => "0)".to_string(),
            false => format!("{}]", self.signed(high)),
        };
        format!("{estimate} {low}, {high}")
    }

    /// What the run could resolve, e.g. `detects ±6.1 %`; for too few
    /// repetitions, how many a call would need, e.g. `3 and 3
    /// repetitions, a call needs 4 each`.
    pub fn resolution(&self) -> String {
        match (self.call(), self.detectable) {
            (Call::TooFewRepetitions, _) => format!(
                "{} and {} repetitions, a call needs {} each",
                self.repetitions.0,
                self.repetitions.1,
                repetitions_needed()
            ),
            (_, Some(width)) => format!("detects ±{} {}", self.unsigned(width), self.unit),
            (_, None) => "detects no bounded difference".to_string(),
        }
    }

    /// The figure, the call and the resolution, e.g. `+12.3 % [+4.0,
    /// +20.1] better (detects ±8.0 %)`, or `+1.2 % (too few repetitions:
    /// 3 and 3 repetitions, a call needs 4 each)`.
    pub fn describe(&self) -> String {
        match self.call() {
            Call::TooFewRepetitions => format!(
                "{} ({}: {})",
                self.figure(),
                Call::TooFewRepetitions.word(),
                self.resolution()
            ),
            call => format!("{} {} ({})", self.figure(), call.word(), self.resolution()),
        }
    }

    fn signed(&self, value: f64) -> String {
        let text = self.unsigned(value);
        if value > 0.0 {
            format!("+{text}")
        } else {
            text
        }
    }

    fn unsigned(&self, value: f64) -> String {
        match self.scale {
            Scale::Relative => format!("{value:.1}"),
            Scale::Absolute => number(value),
        }
    }
}

impl Scale {
    /// The difference of a subject's and a reference's value.
    fn of(self, subject: f64, reference: f64) -> f64 {
        match self {
            Scale::Relative => (subject - reference) / reference.abs() * 100.0,
            Scale::Absolute => subject - reference,
        }
    }

    /// A subject value with the difference `shift` taken out: what it
    /// would be if the subject were the reference.
    fn unshift(self, value: f64, shift: f64) -> f64 {
        match self {
            Scale::Relative => value / (1.0 + shift / 100.0),
            Scale::Absolute => value - shift,
        }
    }
}

/// The permutation test of "the subject is the reference shifted by δ",
/// for any δ: the subject's samples with δ taken out against the
/// reference's, over one set of arrangements.
struct ShiftTest<'a> {
    subject: &'a [&'a [f64]],
    reference: &'a [&'a [f64]],
    scale: Scale,
    arrangements: Arrangements,
}

impl<'a> ShiftTest<'a> {
    fn new(
        subject: &'a [&'a [f64]],
        reference: &'a [&'a [f64]],
        scale: Scale,
        seed: u64,
    ) -> ShiftTest<'a> {
        let arrangements = Arrangements::new(subject.len(), reference.len(), seed);
        ShiftTest {
            subject,
            reference,
            scale,
            arrangements,
        }
    }

    /// The p-value of the shift `shift`. A relative shift of −100 % or
    /// below (a subject of zero or less) is rejected outright.
    fn p_at(&self, shift: f64) -> f64 {
        if self.scale == Scale::Relative && shift <= -100.0 {
            return 0.0;
        }
        let unshifted: Vec<Vec<f64>> = self
            .subject
            .iter()
            .map(|samples| {
                samples
                    .iter()
                    .map(|&v| self.scale.unshift(v, shift))
                    .collect()
            })
            .collect();
        let all: Vec<&[f64]> = unshifted
            .iter()
            .map(Vec::as_slice)
            .chain(self.reference.iter().copied())
            .collect();
        p_value(&all, &self.arrangements)
    }

    /// The Hodges-Lehmann shift: the median, over every pair of a
    /// subject and a reference repetition, of the difference of their
    /// medians. There the rank sum sits at its expectation, so the test
    /// does not reject it.
    fn centre(&self) -> f64 {
        let medians = |side: &[&[f64]]| -> Vec<f64> {
            side.iter()
                .filter_map(|samples| median(&mut samples.to_vec()))
                .collect()
        };
        let reference = medians(self.reference);
        let mut pairs: Vec<f64> = medians(self.subject)
            .iter()
            .flat_map(|&s| reference.iter().map(move |&r| self.scale.of(s, r)))
            .filter(|difference| !difference.is_nan())
            .collect();
        median(&mut pairs).unwrap_or(0.0)
    }

    fn rejects(&self, shift: f64) -> bool {
        self.p_at(shift) <= LEVEL
    }

    /// Every shift from the centre out to where the test first rejects,
    /// each way. It always holds the centre and, when the call is "no
    /// clear difference", zero as well, so the interval excludes zero
    /// exactly when a call is made.
    fn interval(&self, centre: f64, p_at_zero: f64) -> (f64, f64) {
        let zero_rejected = p_at_zero <= LEVEL;
        let low = self.end(centre, -1.0, zero_rejected && centre > 0.0);
        let high = self.end(centre, 1.0, zero_rejected && centre < 0.0);
        match zero_rejected {
            true => (low, high),
            false => (low.min(0.0), high.max(0.0)),
        }
    }

    /// The last shift not rejected going from `estimate` towards `way`
    /// (−1 down, +1 up); with `zero_first`, zero is the rejected end the
    /// search starts from. Infinite when nothing that way is rejected.
    fn end(&self, estimate: f64, way: f64, zero_first: bool) -> f64 {
        let rejected = match zero_first {
            true => Some(0.0),
            false => self.first_rejected(estimate, way),
        };
        let Some(mut rejected) = rejected else {
            return f64::INFINITY.copysign(way);
        };
        let mut accepted = estimate;
        for _ in 0..BISECTIONS {
            let middle = 0.5 * (accepted + rejected);
            match self.rejects(middle) {
                true => rejected = middle,
                false => accepted = middle,
            }
        }
        accepted
    }

    /// A shift beyond the estimate, towards `way`, that the test rejects:
    /// steps doubling from the samples' own spread (towards −100 % by
    /// halving, for a relative shift downwards).
    fn first_rejected(&self, estimate: f64, way: f64) -> Option<f64> {
        if self.scale == Scale::Relative && way < 0.0 {
            return (1..=60)
                .map(|k| -100.0 + (estimate + 100.0) / 2f64.powi(k))
                .find(|&shift| self.rejects(shift));
        }
        let step = match self.scale {
            Scale::Relative => 1.0,
            Scale::Absolute => self.spread().max(estimate.abs()).max(f64::MIN_POSITIVE),
        };
        (0..=60)
            .map(|k| estimate + way * step * 2f64.powi(k))
            .find(|&shift| self.rejects(shift))
    }

    /// The range of all samples of both sides.
    fn spread(&self) -> f64 {
        let all = self
            .subject
            .iter()
            .chain(self.reference)
            .flat_map(|s| s.iter());
        let (low, high) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
        high - low
    }
}

/// A seed for comparing `subject` with `reference` (each a cell named in
/// words): the 64-bit FNV-1a hash of `"<subject> vs <reference>"`, stable
/// across builds and platforms, unlike the standard library's hasher. It
/// seeds the drawn arrangements when there are too many to enumerate.
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
    let decimals = if magnitude >= 1000.0 || magnitude == 0.0 || !magnitude.is_finite() {
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

/// Repetitions that recorded at least one finite sample.
pub(crate) fn with_samples(repetitions: &[Vec<f64>]) -> Vec<&[f64]> {
    repetitions
        .iter()
        .filter(|samples| !samples.is_empty())
        .map(Vec::as_slice)
        .collect()
}

pub(crate) fn pooled(repetitions: &[&[f64]]) -> Vec<f64> {
    repetitions
        .iter()
        .flat_map(|samples| samples.iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::range_bootstrap;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn one_sample_each(values: &[f64]) -> Vec<Vec<f64>> {
        values.iter().map(|&value| vec![value]).collect()
    }

    /// Exchangeable repetitions: each a level drawn around 100 (the
    /// repetition's conditions), with `samples` samples scattered around
    /// it (the loads or connections of one repetition).
    fn repetitions(rng: &mut ChaCha8Rng, count: usize, samples: usize) -> Vec<Vec<f64>> {
        (0..count)
            .map(|_| {
                let level = 100.0 + 10.0 * rng.random::<f64>();
                (0..samples).map(|_| level + rng.random::<f64>()).collect()
            })
            .collect()
    }

    /// The share of A/A comparisons (both sides drawn alike) that a rule
    /// calls better or worse, over `trials`.
    fn false_verdict_share(
        count: usize,
        samples: usize,
        trials: usize,
        rule: impl Fn(&[Vec<f64>], &[Vec<f64>], u64) -> Call,
    ) -> f64 {
        let mut rng = ChaCha8Rng::seed_from_u64(60);
        let called = (0..trials)
            .filter(|&trial| {
                let a = repetitions(&mut rng, count, samples);
                let b = repetitions(&mut rng, count, samples);
                rule(&a, &b, trial as u64).is_clear()
            })
            .count();
        called as f64 / trials as f64
    }

    fn permutation_rule(a: &[Vec<f64>], b: &[Vec<f64>], seed: u64) -> Call {
        match p_value_of(a, b, seed) {
            None => Call::TooFewRepetitions,
            Some(p) if p <= LEVEL => Call::Better,
            Some(_) => Call::NoClearDifference,
        }
    }

    /// Binomial slack: 3 standard errors of a share of `trials` at LEVEL.
    fn slack(trials: usize) -> f64 {
        3.0 * (LEVEL * (1.0 - LEVEL) / trials as f64).sqrt()
    }

    #[test]
    fn the_permutation_rule_is_wrong_at_most_its_level_on_a_a_comparisons() {
        let trials = 4000;
        for (count, samples) in [(4, 1), (5, 1), (6, 1), (5, 5), (4, 10)] {
            let share = false_verdict_share(count, samples, trials, permutation_rule);
            assert!(
                share <= LEVEL + slack(trials),
                "{count} repetitions of {samples}: {share}"
            );
            assert!(share > 0.0, "{count} × {samples}: some calls are made");
        }
    }

    #[test]
    fn the_old_range_rule_is_wrong_twice_its_level_at_three_repetitions() {
        let trials = 2000;
        let old = |a: &[Vec<f64>], b: &[Vec<f64>], seed| range_bootstrap::call(a, b, true, seed);
        let share = false_verdict_share(3, 1, trials, old);
        // 2 / C(6, 3) = 10 %: the same check the new rule passes fails.
        assert!(share > LEVEL + slack(trials), "{share}");
        assert!((share - 0.10).abs() < 0.02, "{share}");
        let new = false_verdict_share(3, 1, trials, permutation_rule);
        assert_eq!(new, 0.0, "three repetitions are too few for any call");
    }

    #[test]
    fn the_call_is_the_p_value_against_the_level() {
        let subject = one_sample_each(&[250.0, 240.0, 260.0, 255.0]);
        let reference = one_sample_each(&[200.0, 210.0, 220.0, 205.0]);
        let rate = Difference::relative(&subject, &reference, true, 1).unwrap();
        assert_eq!(rate.p_value, Some(2.0 / 70.0));
        assert_eq!(rate.p_value, p_value_of(&subject, &reference, 1));
        assert_eq!(rate.call(), Call::Better);
        let time = Difference::relative(&subject, &reference, false, 1).unwrap();
        assert_eq!(time.call(), Call::Worse);
        let faster = Difference::relative(&reference, &subject, false, 1).unwrap();
        assert_eq!(faster.call(), Call::Better);
        assert!(faster.estimate < 0.0);
    }

    #[test]
    fn the_interval_excludes_zero_exactly_when_a_call_is_made() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for trial in 0..40 {
            let a = repetitions(&mut rng, 5, 2);
            let mut b = repetitions(&mut rng, 5, 2);
            // Every other trial, a real difference of 8 %.
            if trial % 2 == 0 {
                b.iter_mut().flatten().for_each(|v| *v *= 1.08);
            }
            for difference in [
                Difference::relative(&a, &b, true, trial).unwrap(),
                Difference::absolute(&a, &b, "ms", true, trial).unwrap(),
            ] {
                let (low, high) = difference.interval.unwrap();
                assert!(low <= difference.estimate && difference.estimate <= high);
                let excludes_zero = low > 0.0 || high < 0.0;
                assert_eq!(
                    excludes_zero,
                    difference.call().is_clear(),
                    "{difference:?}"
                );
            }
        }
    }

    #[test]
    fn the_interval_ends_where_the_test_starts_to_reject() {
        let subject = one_sample_each(&[110.0, 112.0, 108.0, 111.0, 109.0]);
        let reference = one_sample_each(&[100.0, 103.0, 98.0, 101.0, 99.0]);
        let difference = Difference::absolute(&subject, &reference, "ms", false, 1).unwrap();
        let (low, high) = difference.interval.unwrap();
        let shifted =
            |shift: f64| -> Vec<Vec<f64>> { subject.iter().map(|s| vec![s[0] - shift]).collect() };
        let p = |shift| p_value_of(&shifted(shift), &reference, 1).unwrap();
        assert!(p(low) > LEVEL && p(high) > LEVEL);
        assert!(p(low - 0.01) <= LEVEL && p(high + 0.01) <= LEVEL);
        assert_eq!(difference.call(), Call::Worse);
        let detectable = difference.detectable.unwrap();
        let centre = difference.centre.unwrap();
        assert_eq!(detectable, (centre - low).max(high - centre));
    }

    #[test]
    fn a_call_on_tied_samples_shows_its_open_end_at_zero() {
        // Two values tie across the sides: zero is rejected (p = 10/252),
        // any shift past it is not, so the interval is (0, ...].
        let subject = one_sample_each(&[215.0, 225.0, 235.0, 220.0, 230.0]);
        let reference = one_sample_each(&[200.0, 210.0, 220.0, 205.0, 215.0]);
        let difference = Difference::relative(&subject, &reference, true, 1).unwrap();
        assert_eq!(difference.call(), Call::Better);
        assert!(difference.interval.unwrap().0 > 0.0);
        assert!(
            difference.figure().starts_with("+7.1 % (0, +"),
            "{}",
            difference.figure()
        );
        let lower = Difference::relative(&reference, &subject, true, 1).unwrap();
        assert_eq!(lower.call(), Call::Worse);
        assert!(lower.figure().ends_with(", 0)"), "{}", lower.figure());
    }

    #[test]
    fn the_direction_is_the_centre_of_the_test() {
        // The test ranks the repetitions' medians: every subject
        // repetition's (11) is above every reference's (9 to 9.3), so it
        // calls the difference at p = 2/70, and the interval, grown from
        // the centre of the test, excludes zero on the same side.
        let subject = vec![vec![1.0, 11.0, 12.0]; 4];
        let reference: Vec<Vec<f64>> = (0..4)
            .map(|i| vec![0.0, 9.0 + f64::from(i) / 10.0, 30.0])
            .collect();
        let difference = Difference::absolute(&subject, &reference, "ms", true, 1).unwrap();
        assert_eq!(difference.p_value, Some(2.0 / 70.0));
        assert!(difference.centre.unwrap() > 0.0);
        assert_eq!(difference.call(), Call::Better);
        let (low, _) = difference.interval.unwrap();
        assert!(low > 0.0, "{difference:?}");
    }

    #[test]
    fn repetitions_not_samples_are_the_units() {
        // Each repetition's 50 samples sit within ±0.5 of its level, but the
        // levels interleave: treating samples as units would call this.
        let levels = |levels: [f64; 5]| -> Vec<Vec<f64>> {
            levels
                .iter()
                .map(|level| (0..50).map(|i| level - 0.5 + f64::from(i) / 50.0).collect())
                .collect()
        };
        let difference = Difference::relative(
            &levels([100.0, 110.0, 120.0, 130.0, 140.0]),
            &levels([105.0, 115.0, 125.0, 135.0, 145.0]),
            true,
            3,
        )
        .unwrap();
        assert_eq!(difference.call(), Call::NoClearDifference, "{difference:?}");
        assert!(difference
            .describe()
            .contains("no clear difference (detects ±"));
    }

    #[test]
    fn the_same_input_gives_the_same_verdict_even_when_arrangements_are_drawn() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let subject = repetitions(&mut rng, 10, 3);
        let reference = repetitions(&mut rng, 10, 3);
        let seed = seed_for("broadband/ttfb/cold/h3", "broadband/ttfb/cold/h2");
        let first = Difference::relative(&subject, &reference, false, seed).unwrap();
        let again = Difference::relative(&subject, &reference, false, seed).unwrap();
        assert_eq!(first, again);
        let (low, high) = first.interval.unwrap();
        assert!(low < high, "not a degenerate interval: {low} {high}");
        assert_ne!(
            seed,
            seed_for("broadband/ttfb/cold/h2", "broadband/ttfb/cold/h3")
        );
    }

    #[test]
    fn too_few_repetitions_say_how_many_a_call_needs() {
        assert_eq!(repetitions_needed(), 4);
        let subject = one_sample_each(&[250.0, 240.0, 260.0]);
        let reference = vec![vec![100.0], vec![110.0], vec![105.0], vec![]];
        let difference = Difference::relative(&subject, &reference, false, 1).unwrap();
        assert_eq!(difference.interval, None);
        assert_eq!(difference.p_value, None);
        assert_eq!(
            difference.repetitions,
            (3, 3),
            "the empty repetition does not count"
        );
        assert_eq!(difference.call(), Call::TooFewRepetitions);
        assert!(!difference.call().is_clear());
        assert_eq!(
            difference.describe(),
            "+138.1 % (too few repetitions: 3 and 3 repetitions, a call needs 4 each)"
        );
        // 20 loads of one repetition are still one repetition.
        let loads: Vec<f64> = (0..20).map(f64::from).collect();
        let one = Difference::relative(&[loads], &reference, false, 1).unwrap();
        assert_eq!(one.call(), Call::TooFewRepetitions);
    }

    #[test]
    fn no_ratio_without_a_reference_median() {
        let zero = one_sample_each(&[0.0, 0.0, 0.0, 0.0]);
        assert_eq!(Difference::relative(&zero, &zero, true, 1), None);
        assert_eq!(Difference::relative(&zero, &[], true, 1), None);
        let absolute = Difference::absolute(&zero, &zero, "ms", false, 1).unwrap();
        assert_eq!(absolute.figure(), "0 ms [0, 0]");
        assert_eq!(absolute.call(), Call::NoClearDifference);
    }

    #[test]
    fn a_subject_of_zeros_is_called_on_the_far_side_of_zero() {
        let zero = one_sample_each(&[0.0, 0.0, 0.0, 0.0]);
        let some = one_sample_each(&[1.0, 2.0, 3.0, 4.0]);
        let difference = Difference::relative(&zero, &some, false, 1).unwrap();
        assert_eq!(difference.estimate, -100.0);
        assert_eq!(difference.call(), Call::Better);
        assert!(difference.interval.unwrap().1 < 0.0);
    }
}
