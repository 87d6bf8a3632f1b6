//! Quantiles of samples, the one way h3lab computes them from raw values
//! (HdrHistogram's own quantiles answer for histograms): linear
//! interpolation between closest ranks, Hyndman & Fan type 7, the default
//! of numpy, R and spreadsheet `PERCENTILE.INC`. For sorted samples
//! `x[0..n]` and quantile `q`, take `h = (n - 1) q` and return
//! `x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h])`. With one
//! sample every quantile is that sample; an even count's median is the
//! mean of the two middle samples.

/// The `q` quantile (a fraction in `[0, 1]`) of already sorted, non-empty
/// samples.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lower = h.floor() as usize;
    let upper = (lower + 1).min(sorted.len() - 1);
    sorted[lower] + (h - lower as f64) * (sorted[upper] - sorted[lower])
}

/// The median as [`quantile_sorted`] computes it, by selection instead of
/// sorting (for callers that take many, such as a bootstrap); reorders
/// `samples`. `None` without samples.
pub fn median(samples: &mut [f64]) -> Option<f64> {
    let count = samples.len();
    if count == 0 {
        return None;
    }
    let (below, &mut upper, _) = samples.select_nth_unstable_by(count / 2, f64::total_cmp);
    if count % 2 == 1 {
        return Some(upper);
    }
    let lower = below.iter().copied().max_by(f64::total_cmp)?;
    Some(lower + 0.5 * (upper - lower))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_closest_ranks() {
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&sorted, 0.5), 2.5);
        // h = 3 × 0.9 = 2.7 → 3 + 0.7 × (4 − 3)
        assert!((quantile_sorted(&sorted, 0.9) - 3.7).abs() < 1e-12);
        // h = 3 × 0.99 = 2.97 → 3.97
        assert!((quantile_sorted(&sorted, 0.99) - 3.97).abs() < 1e-12);
        assert_eq!(quantile_sorted(&sorted, 0.0), 1.0);
        assert_eq!(quantile_sorted(&sorted, 1.0), 4.0);
    }

    #[test]
    fn selected_medians_equal_the_sorted_ones() {
        for samples in [
            vec![3.0],
            vec![4.0, 1.0],
            vec![5.0, 1.0, 4.0, 2.0, 9.0, 7.0],
            vec![2.0, 8.0, 5.0],
        ] {
            let mut sorted = samples.clone();
            sorted.sort_by(f64::total_cmp);
            assert_eq!(
                median(&mut samples.clone()),
                Some(quantile_sorted(&sorted, 0.5))
            );
        }
        assert_eq!(median(&mut []), None);
    }
}
