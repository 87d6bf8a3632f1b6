//! Seeded file sizes that each lie in their range and sum to an exact total.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// An inclusive range of file sizes in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SizeRange {
    pub lo: u64,
    pub hi: u64,
}

impl SizeRange {
    /// `lo..=hi` bytes.
    pub const fn new(lo: u64, hi: u64) -> Self {
        Self { lo, hi }
    }

    fn room(self) -> f64 {
        (self.hi - self.lo) as f64
    }
}

/// One size per range, drawn log-uniformly (few large files, many small
/// ones, as on real pages) and then scaled so that they sum to exactly
/// `total` while staying in their ranges.
///
/// # Panics
/// If `total` is outside the sum of the lower and upper bounds: the shapes
/// are fixed, so that is a bug in their definition.
pub(super) fn exact_sizes(rng: &mut ChaCha8Rng, ranges: &[SizeRange], total: u64) -> Vec<u64> {
    let floor: u64 = ranges.iter().map(|r| r.lo).sum();
    let ceiling: u64 = ranges.iter().map(|r| r.hi).sum();
    assert!(
        (floor..=ceiling).contains(&total),
        "total {total} outside {floor}..={ceiling}"
    );
    let weights: Vec<f64> = ranges.iter().map(|r| log_uniform(rng, *r)).collect();
    let slack = water_fill(ranges, &weights, (total - floor) as f64);
    let mut sizes: Vec<u64> = ranges
        .iter()
        .zip(&slack)
        .map(|(r, s)| r.lo + (s.floor() as u64).min(r.hi - r.lo))
        .collect();
    spread_remainder(ranges, &mut sizes, total);
    sizes
}

/// How far above its lower bound a log-uniform draw lands (at least one byte,
/// so every file takes part in the scaling).
fn log_uniform(rng: &mut ChaCha8Rng, range: SizeRange) -> f64 {
    let (lo, hi) = ((range.lo.max(1)) as f64, (range.hi.max(1)) as f64);
    let drawn = (lo.ln() + rng.random::<f64>() * (hi.ln() - lo.ln())).exp();
    (drawn - lo).max(0.0) + 1.0
}

/// Scales `weights` by one factor so they sum to `target`, capping each at
/// its range's room and sharing what the capped ones cannot take among the rest.
fn water_fill(ranges: &[SizeRange], weights: &[f64], target: f64) -> Vec<f64> {
    let mut capped = vec![false; ranges.len()];
    loop {
        let taken: f64 = (0..ranges.len())
            .filter(|&i| capped[i])
            .map(|i| ranges[i].room())
            .sum();
        let free: f64 = (0..ranges.len())
            .filter(|&i| !capped[i])
            .map(|i| weights[i])
            .sum();
        let factor = if free > 0.0 {
            (target - taken) / free
        } else {
            0.0
        };
        let newly: Vec<usize> = (0..ranges.len())
            .filter(|&i| !capped[i] && weights[i] * factor > ranges[i].room())
            .collect();
        if newly.is_empty() {
            return (0..ranges.len())
                .map(|i| match capped[i] {
                    true => ranges[i].room(),
                    false => weights[i] * factor,
                })
                .collect();
        }
        for i in newly {
            capped[i] = true;
        }
    }
}

/// Adds the bytes rounding left over, one at a time in file order, to files
/// below their upper bound (and takes off any excess the same way).
fn spread_remainder(ranges: &[SizeRange], sizes: &mut [u64], total: u64) {
    let mut sum: u64 = sizes.iter().sum();
    while sum != total {
        let before = sum;
        for (size, range) in sizes.iter_mut().zip(ranges) {
            if sum < total && *size < range.hi {
                *size += 1;
                sum += 1;
            } else if sum > total && *size > range.lo {
                *size -= 1;
                sum -= 1;
            }
        }
        assert_ne!(before, sum, "sizes cannot reach the total");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn sizes_are_in_range_and_sum_exactly() {
        let ranges = [
            SizeRange::new(2, 10),
            SizeRange::new(1, 1000),
            SizeRange::new(5, 5),
        ];
        for seed in 0..50 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            for total in [8, 9, 100, 555, 1015] {
                let sizes = exact_sizes(&mut rng, &ranges, total);
                assert_eq!(sizes.iter().sum::<u64>(), total, "seed {seed}");
                for (size, range) in sizes.iter().zip(&ranges) {
                    assert!((range.lo..=range.hi).contains(size), "{size} {range:?}");
                }
            }
        }
    }
}
