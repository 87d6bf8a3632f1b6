//! Descriptive statistics over a cell's samples, and the relative
//! difference of two single values such as published figures (measured
//! differences, with their interval, are in `difference`).
//!
//! Percentiles are `h3lab_results::quantile`'s: linear interpolation
//! between closest ranks (Hyndman & Fan type 7).

use h3lab_results::quantile::quantile_sorted;
use serde::Serialize;

/// Summary of a set of finite samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleStats {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    pub p90: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n − 1) divided by the mean; `None` with
    /// fewer than two samples or a zero mean.
    pub cv: Option<f64>,
}

impl SampleStats {
    /// Statistics of `samples`, or `None` when there is no sample. Callers
    /// must pass finite values only (see [`split_finite`]).
    pub fn of(samples: &[f64]) -> Option<SampleStats> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        Some(SampleStats {
            n,
            median: quantile_sorted(&sorted, 0.5),
            mean,
            p90: quantile_sorted(&sorted, 0.9),
            p99: quantile_sorted(&sorted, 0.99),
            min: sorted[0],
            max: sorted[n - 1],
            cv: coefficient_of_variation(&sorted, mean),
        })
    }
}

/// Separates finite samples from NaN and infinities, which no statistic may
/// silently absorb. Returns the finite ones and how many were dropped.
pub fn split_finite(samples: &[f64]) -> (Vec<f64>, usize) {
    let finite: Vec<f64> = samples.iter().copied().filter(|v| v.is_finite()).collect();
    let dropped = samples.len() - finite.len();
    (finite, dropped)
}

fn coefficient_of_variation(samples: &[f64], mean: f64) -> Option<f64> {
    if samples.len() < 2 || mean == 0.0 {
        return None;
    }
    let squares: f64 = samples.iter().map(|v| (v - mean).powi(2)).sum();
    let stddev = (squares / (samples.len() - 1) as f64).sqrt();
    Some(stddev / mean.abs())
}

/// Whether a change is an improvement, given which direction is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Worse,
    Same,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Same => "same",
        }
    }
}

/// Relative difference of a value against a reference value, both exact
/// (published), so the direction is read off the sign.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RelativeDiff {
    /// `(value − reference) / reference × 100`.
    pub percent: f64,
    pub verdict: Verdict,
}

impl RelativeDiff {
    /// `None` when the reference is zero (no meaningful ratio) or either
    /// value is not finite.
    pub fn new(value: f64, reference: f64, higher_is_better: bool) -> Option<RelativeDiff> {
        if reference == 0.0 || !value.is_finite() || !reference.is_finite() {
            return None;
        }
        let percent = (value - reference) / reference.abs() * 100.0;
        let verdict = if value == reference {
            Verdict::Same
        } else if (value > reference) == higher_is_better {
            Verdict::Better
        } else {
            Verdict::Worse
        };
        Some(RelativeDiff { percent, verdict })
    }

    /// e.g. `+12.3 % better`.
    pub fn describe(&self) -> String {
        format!("{:+.1} % {}", self.percent, self.verdict.word())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_unsorted_samples() {
        let stats = SampleStats::of(&[10.0, 30.0, 20.0, 40.0, 50.0]).unwrap();
        assert_eq!(stats.n, 5);
        assert_eq!(stats.median, 30.0);
        assert_eq!(stats.mean, 30.0);
        // h = 4 × 0.9 = 3.6 → 40 + 0.6 × 10
        assert!((stats.p90 - 46.0).abs() < 1e-12);
        // h = 4 × 0.99 = 3.96 → 40 + 0.96 × 10
        assert!((stats.p99 - 49.6).abs() < 1e-12);
        assert_eq!((stats.min, stats.max), (10.0, 50.0));
        // squares 400+100+0+100+400 = 1000, / 4 = 250, sqrt = 15.811..., / 30
        let expected_cv = 250f64.sqrt() / 30.0;
        assert!((stats.cv.unwrap() - expected_cv).abs() < 1e-12);
    }

    #[test]
    fn single_sample_has_no_spread() {
        let stats = SampleStats::of(&[7.5]).unwrap();
        assert_eq!(
            (stats.median, stats.p99, stats.min, stats.max),
            (7.5, 7.5, 7.5, 7.5)
        );
        assert_eq!(stats.cv, None);
        assert_eq!(SampleStats::of(&[]), None);
    }

    #[test]
    fn non_finite_samples_are_counted_not_used() {
        let (finite, dropped) = split_finite(&[1.0, f64::NAN, 3.0, f64::INFINITY]);
        assert_eq!(finite, vec![1.0, 3.0]);
        assert_eq!(dropped, 2);
    }

    #[test]
    fn relative_difference_respects_direction() {
        let faster = RelativeDiff::new(112.3, 100.0, true).unwrap();
        assert!((faster.percent - 12.3).abs() < 1e-9);
        assert_eq!(faster.verdict, Verdict::Better);
        assert_eq!(faster.describe(), "+12.3 % better");

        let slower_latency = RelativeDiff::new(850.0, 1200.0, false).unwrap();
        assert!((slower_latency.percent - (-29.1666)).abs() < 1e-3);
        assert_eq!(slower_latency.verdict, Verdict::Better);
        assert_eq!(slower_latency.describe(), "-29.2 % better");

        let fewer_requests = RelativeDiff::new(670.0, 1120.0, true).unwrap();
        assert_eq!(fewer_requests.verdict, Verdict::Worse);

        assert_eq!(
            RelativeDiff::new(5.0, 5.0, true).unwrap().verdict,
            Verdict::Same
        );
        assert_eq!(RelativeDiff::new(5.0, 0.0, true), None);
    }
}
