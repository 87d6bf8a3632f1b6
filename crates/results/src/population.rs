//! A population of users (docs/population.md): the groups a suite's
//! `[population]` names, as `results.json` records them, and the mixture
//! of their samples weighted by share, with a bootstrap that resamples
//! each group's repetitions on their own.
//!
//! A group's distribution on one side (h3 off or on) is the mean of its
//! repetitions' empirical distributions: each repetition is one run of the
//! group's conditions and weighs the same. The population's is the groups'
//! weighted by share, and, at a rollout fraction `f`, each group's share is
//! split `1 − f` off and `f` on. A quantile of a mixture is the smallest
//! sample value at which its distribution reaches the fraction (Hyndman &
//! Fan type 1): interpolating between samples of two groups would invent
//! a load time nobody had.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::difference::CONFIDENCE;
use crate::quantile::quantile_sorted;
use crate::vocab::{Loader, Proto, Visit};

/// Bootstrap rounds per interval. 2,000 put a 95 % interval's ends within
/// about a tenth of a standard error of where more rounds would.
pub const RESAMPLES: usize = 2_000;

/// `suite.population` in `results.json`: who the users are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Population {
    /// The groups, in the suite's order; their shares add up to 1.
    pub groups: Vec<Group>,
    /// Published figures to print beside ours.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub published: Vec<PublishedPopulationFigure>,
}

/// One group of users.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// The group's name; also the profile its cells ran on.
    pub name: String,
    /// Its share of the users, 0 to 1.
    pub share: f64,
    /// The network it starts from: a built-in profile or a `[[profile]]`.
    pub network: String,
    /// What its network does to UDP: `open`, `blocked`, `blocked-after:N`
    /// or `throttle:RATE`.
    pub udp: String,
    /// How h3 is found when it is on: `alt-svc` or `https-record`.
    pub discovery: String,
    /// What these users get with h3 off (h2, or h1).
    pub off: Proto,
    /// What they get with h3 on: `auto`.
    pub on: Proto,
    /// The loader its page loads ran in, when the group chose one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loader: Option<Loader>,
    /// First or repeat visits, when the group chose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visit: Option<Visit>,
    /// Where the share comes from, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// These users change networks mid-session: their handoffs ran with
    /// h3 off and on (`results.handoffs`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub handoffs: bool,
}

fn is_false(value: &bool) -> bool {
    !value
}

/// A study's figure about a population, shown beside the same figure of
/// ours.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedPopulationFigure {
    /// Which study (studies.md).
    pub study: String,
    /// What it is, in words.
    pub label: String,
    /// The group it matches; `None` for the whole population.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The workload it matches; `None` for every one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// Which of our figures it matches.
    pub measure: PopulationMeasure,
    /// The study's value with h3 off, when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off: Option<f64>,
    /// The study's value with h3 on, when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<f64>,
    /// The study's change from off to on in percent, when it gives only
    /// that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_percent: Option<f64>,
    /// The unit of `off` and `on`.
    pub unit: String,
    /// What the study said where it gave no figure, or why ours may differ.
    #[serde(default)]
    pub note: String,
}

/// A figure of a population the report can put beside a study's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PopulationMeasure {
    /// The median page load time (or request latency).
    P50,
    /// The 75th percentile.
    P75,
    /// The 95th percentile.
    P95,
    /// The 99th percentile.
    P99,
    /// Connections per page load.
    Connections,
    /// The server's CPU per request.
    ServerCpu,
    /// The share of network handoffs that end in a connection reset.
    HandoffResets,
}

impl PopulationMeasure {
    /// The quantile a percentile measure stands for.
    pub fn quantile(self) -> Option<f64> {
        match self {
            PopulationMeasure::P50 => Some(0.50),
            PopulationMeasure::P75 => Some(0.75),
            PopulationMeasure::P95 => Some(0.95),
            PopulationMeasure::P99 => Some(0.99),
            PopulationMeasure::Connections
            | PopulationMeasure::ServerCpu
            | PopulationMeasure::HandoffResets => None,
        }
    }
}

/// One repetition's samples as a distribution: values with counts (one per
/// page load, or a latency histogram's buckets).
#[derive(Debug, Clone, PartialEq)]
pub struct Repetition {
    values: Vec<f64>,
    /// The fraction of the repetition at or below `values[i]`.
    cumulative: Vec<f64>,
}

impl Repetition {
    /// The distribution of `points` (value, count); `None` when no point
    /// has a finite value and a count.
    pub fn new(points: impl IntoIterator<Item = (f64, u64)>) -> Option<Repetition> {
        let mut points: Vec<(f64, u64)> = points
            .into_iter()
            .filter(|(value, count)| value.is_finite() && *count > 0)
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total: u64 = points.iter().map(|(_, count)| count).sum();
        if total == 0 {
            return None;
        }
        let mut values = Vec::with_capacity(points.len());
        let mut cumulative = Vec::with_capacity(points.len());
        let mut below = 0;
        for (value, count) in points {
            below += count;
            if values.last() == Some(&value) {
                *cumulative.last_mut().expect("pushed with the value") =
                    below as f64 / total as f64;
            } else {
                values.push(value);
                cumulative.push(below as f64 / total as f64);
            }
        }
        Some(Repetition { values, cumulative })
    }

    /// Samples that each count once.
    pub fn of_samples(samples: &[f64]) -> Option<Repetition> {
        Repetition::new(samples.iter().map(|&value| (value, 1)))
    }

    /// The fraction of the repetition at or below `x`.
    fn cdf(&self, x: f64) -> f64 {
        match self.values.partition_point(|&value| value <= x) {
            0 => 0.0,
            at => self.cumulative[at - 1],
        }
    }
}

/// One group's repetitions with h3 off and with h3 on.
#[derive(Debug, Clone)]
pub struct GroupSamples {
    /// The group's share of the population, 0 to 1.
    pub share: f64,
    /// Repetitions with h3 off.
    pub off: Vec<Repetition>,
    /// Repetitions with h3 on.
    pub on: Vec<Repetition>,
}

impl GroupSamples {
    /// Repetition `at` of the off ones followed by the on ones.
    fn repetition(&self, at: usize) -> &Repetition {
        match at.checked_sub(self.off.len()) {
            None => &self.off[at],
            Some(on) => &self.on[on],
        }
    }
}

/// The groups of a population, ready to be mixed and resampled.
#[derive(Debug, Clone)]
pub struct Mixture {
    groups: Vec<GroupSamples>,
    /// Every value any repetition holds, sorted: a mixture's quantile is
    /// one of them.
    candidates: Vec<f64>,
}

/// A figure of the population and its [`CONFIDENCE`] interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The figure from the repetitions as they are.
    pub value: f64,
    /// The bootstrap's percentile interval.
    pub interval: (f64, f64),
}

impl Estimate {
    /// Whether the interval leaves out zero.
    pub fn excludes_zero(&self) -> bool {
        self.interval.0 > 0.0 || self.interval.1 < 0.0
    }
}

/// Which repetitions of each group each side holds in a bootstrap round
/// or a permutation: indices into the group's off repetitions followed by
/// its on ones.
#[derive(Debug, Clone)]
struct Draw {
    off: Vec<Vec<usize>>,
    on: Vec<Vec<usize>>,
}

/// The mixture as one bootstrap round (or the data itself) sees it.
pub struct View<'a> {
    mixture: &'a Mixture,
    draw: &'a Draw,
}

impl Mixture {
    /// The mixture of `groups`; `None` when a group with a share has no
    /// repetition on a side, since the population's figure is then
    /// unknown, not the other groups' figure.
    pub fn new(groups: Vec<GroupSamples>) -> Option<Mixture> {
        let total: f64 = groups.iter().map(|group| group.share).sum();
        if total <= 0.0 {
            return None;
        }
        let known = |group: &GroupSamples| {
            group.share == 0.0 || (!group.off.is_empty() && !group.on.is_empty())
        };
        if !groups.iter().all(known) {
            return None;
        }
        let mut candidates: Vec<f64> = (groups.iter())
            .flat_map(|group| group.off.iter().chain(&group.on))
            .flat_map(|repetition| repetition.values.iter().copied())
            .collect();
        candidates.sort_by(f64::total_cmp);
        candidates.dedup();
        Some(Mixture { groups, candidates })
    }

    /// The fewest repetitions any side of any group with a share has.
    pub fn fewest_repetitions(&self) -> usize {
        (self.groups.iter())
            .filter(|group| group.share > 0.0)
            .flat_map(|group| [group.off.len(), group.on.len()])
            .min()
            .unwrap_or(0)
    }

    /// `statistic` of the data alone, without an interval.
    pub fn value(&self, statistic: impl Fn(&View) -> f64) -> f64 {
        statistic(&View {
            mixture: self,
            draw: &self.itself(),
        })
    }

    /// `statistic` of the data, and its interval from [`RESAMPLES`] rounds
    /// that each draw every group's repetitions with replacement, on each
    /// side apart: a group with few repetitions widens the interval.
    pub fn estimate(&self, seed: u64, statistic: impl Fn(&View) -> f64) -> Estimate {
        let value = self.value(&statistic);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut rounds: Vec<f64> = (0..RESAMPLES)
            .map(|_| {
                let draw = self.draw(&mut rng);
                statistic(&View {
                    mixture: self,
                    draw: &draw,
                })
            })
            .collect();
        rounds.sort_by(f64::total_cmp);
        let tail = (1.0 - CONFIDENCE) / 2.0;
        Estimate {
            value,
            interval: (
                quantile_sorted(&rounds, tail),
                quantile_sorted(&rounds, 1.0 - tail),
            ),
        }
    }

    /// The population's distribution at `on_fraction`, from the
    /// repetitions as they are, as steps: each value with the fraction at
    /// or below it (for a CDF plot).
    pub fn steps(&self, on_fraction: f64) -> Vec<(f64, f64)> {
        let mut steps: Vec<(f64, f64)> = (self.candidates.iter())
            .map(|&x| (x, self.value(|view| view.cdf(on_fraction, x))))
            .collect();
        steps.dedup_by(|later, earlier| later.1 == earlier.1);
        steps
    }

    /// Every repetition once: the data itself.
    fn itself(&self) -> Draw {
        Draw {
            off: self
                .groups
                .iter()
                .map(|g| (0..g.off.len()).collect())
                .collect(),
            on: (self.groups.iter())
                .map(|g| (g.off.len()..g.off.len() + g.on.len()).collect())
                .collect(),
        }
    }

    /// A bootstrap round: each side of each group redrawn from itself.
    fn draw(&self, rng: &mut ChaCha8Rng) -> Draw {
        let mut pick = |from: usize, count: usize| -> Vec<usize> {
            (0..count)
                .map(|_| from + rng.random_range(0..count))
                .collect()
        };
        let off = self.groups.iter().map(|g| pick(0, g.off.len())).collect();
        let on = (self.groups.iter())
            .map(|g| pick(g.off.len(), g.on.len()))
            .collect();
        Draw { off, on }
    }

    /// A permutation: each group's repetitions dealt anew between its two
    /// sides, as many to each as before.
    fn deal(&self, rng: &mut ChaCha8Rng) -> Draw {
        let mut draw = Draw {
            off: Vec::new(),
            on: Vec::new(),
        };
        for group in &self.groups {
            let mut all: Vec<usize> = (0..group.off.len() + group.on.len()).collect();
            all.shuffle(rng);
            draw.on.push(all.split_off(group.off.len()));
            draw.off.push(all);
        }
        draw
    }

    /// The p-value of "h3 on and off are alike" for `statistic` (a change,
    /// zero when they are): the share of [`RESAMPLES`] deals of each
    /// group's repetitions between its sides whose statistic is at least
    /// as far from zero as the data's. When nothing differs every deal is
    /// as likely as the data's, so a call at p ≤ [`crate::difference::LEVEL`]
    /// is wrong at most that often, which a bootstrap's interval of few
    /// repetitions is not (`examples/population_aa.rs`).
    pub fn p_value(&self, seed: u64, statistic: impl Fn(&View) -> f64) -> f64 {
        let observed = self.value(&statistic).abs();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let as_far = (0..RESAMPLES)
            .filter(|_| {
                let draw = self.deal(&mut rng);
                let dealt = statistic(&View {
                    mixture: self,
                    draw: &draw,
                });
                dealt.abs() >= observed * (1.0 - 1e-12)
            })
            .count();
        (1 + as_far) as f64 / (1 + RESAMPLES) as f64
    }
}

impl View<'_> {
    /// The `q` quantile of the population when a fraction `on_fraction` of
    /// every group has h3 on and the rest has it off.
    pub fn quantile(&self, on_fraction: f64, q: f64) -> f64 {
        let candidates = &self.mixture.candidates;
        let first_reaching = candidates.partition_point(|&x| self.cdf(on_fraction, x) < q - 1e-12);
        candidates[first_reaching.min(candidates.len() - 1)]
    }

    /// The population's fraction above `x` when a fraction `on_fraction`
    /// of every group has h3 on (the share of handoffs that reset, when
    /// each repetition is 1 for a reset and 0 for none).
    pub fn fraction_above(&self, on_fraction: f64, x: f64) -> f64 {
        1.0 - self.cdf(on_fraction, x)
    }

    /// The population's fraction at or below `x`.
    fn cdf(&self, on_fraction: f64, x: f64) -> f64 {
        let mean = |group: &GroupSamples, drawn: &[usize]| {
            let sum: f64 = drawn.iter().map(|&at| group.repetition(at).cdf(x)).sum();
            sum / drawn.len() as f64
        };
        let mut below = 0.0;
        let mut total = 0.0;
        for (index, group) in self.mixture.groups.iter().enumerate() {
            if group.share == 0.0 {
                continue;
            }
            let off = mean(group, &self.draw.off[index]);
            let on = mean(group, &self.draw.on[index]);
            below += group.share * ((1.0 - on_fraction) * off + on_fraction * on);
            total += group.share;
        }
        below / total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repetitions(samples: &[&[f64]]) -> Vec<Repetition> {
        (samples.iter())
            .map(|samples| Repetition::of_samples(samples).unwrap())
            .collect()
    }

    fn group(share: f64, off: &[&[f64]], on: &[&[f64]]) -> GroupSamples {
        GroupSamples {
            share,
            off: repetitions(off),
            on: repetitions(on),
        }
    }

    /// The `q` quantile as the definition says: every sample copied in
    /// proportion to its weight, sorted, and the first whose rank reaches
    /// `q` of them.
    fn by_copies(weighted: &[(usize, &[f64])], q: f64) -> f64 {
        let mut copies: Vec<f64> = (weighted.iter())
            .flat_map(|(copies, samples)| {
                samples
                    .iter()
                    .flat_map(move |&value| std::iter::repeat_n(value, *copies))
            })
            .collect();
        copies.sort_by(f64::total_cmp);
        let rank = (q * copies.len() as f64 - 1e-9).ceil() as usize;
        copies[rank.max(1) - 1]
    }

    #[test]
    fn the_mixture_weighs_each_group_by_its_share_not_its_sample_count() {
        let near: Vec<f64> = (1..=100).map(f64::from).collect();
        let far: Vec<f64> = (1001..=1040).map(f64::from).collect();
        // 75 % of users have 100 samples, 25 % have 40: by copies, each of
        // the first group's samples counts 3 × 40 and each of the second's
        // 100, so that the groups weigh 12,000 and 4,000.
        let mixture = Mixture::new(vec![
            group(0.75, &[&near], &[&near]),
            group(0.25, &[&far], &[&far]),
        ])
        .unwrap();
        for q in [0.5, 0.75, 0.95, 0.99] {
            let direct = by_copies(&[(120, &near), (100, &far)], q);
            let ours = mixture.estimate(1, |view| view.quantile(0.0, q));
            assert_eq!(ours.value, direct, "q = {q}");
        }
        let on = mixture.estimate(1, |view| view.quantile(1.0, 0.99)).value;
        assert_eq!(on, by_copies(&[(120, &near), (100, &far)], 0.99));
    }

    #[test]
    fn a_rollout_fraction_splits_each_group_between_its_two_sides() {
        let off: Vec<f64> = (1..=10).map(|x| f64::from(x) * 100.0).collect();
        let on: Vec<f64> = (1..=10).map(f64::from).collect();
        let mixture = Mixture::new(vec![group(1.0, &[&off], &[&on])]).unwrap();
        for (fraction, copies) in [(0.1, (9, 1)), (0.5, (1, 1)), (0.8, (1, 4))] {
            for q in [0.5, 0.75, 0.99] {
                let direct = by_copies(&[(copies.0, &off), (copies.1, &on)], q);
                let ours = mixture.estimate(1, |view| view.quantile(fraction, q)).value;
                assert_eq!(ours, direct, "fraction {fraction}, q {q}");
            }
        }
    }

    /// Two repetitions a side, each one value: the bootstrap's rounds can
    /// be counted out. The median of a 50/50 mixture whose groups do not
    /// overlap is the largest value the lower group drew, so it is 10 in
    /// the rounds that drew the 10 twice (a quarter) and 20 in the rest;
    /// the interval runs from 10 to 20.
    #[test]
    fn the_interval_is_the_bootstraps_counted_out() {
        let mixture = Mixture::new(vec![
            group(0.5, &[&[10.0], &[20.0]], &[&[10.0]]),
            group(0.5, &[&[100.0], &[200.0]], &[&[100.0]]),
        ])
        .unwrap();
        let median = mixture.estimate(3, |view| view.quantile(0.0, 0.5));
        assert_eq!(median.value, 20.0);
        assert_eq!(median.interval, (10.0, 20.0));
        // Four times the repetitions of the same two values: a round now
        // gives 10 only when all eight draws are 10s, 1 in 256, which is
        // inside the 2.5 % tail, so the interval closes on 20.
        let many: Vec<&[f64]> = [&[10.0][..], &[20.0]].repeat(4);
        let steady = Mixture::new(vec![
            group(0.5, &many, &[&[10.0]]),
            group(0.5, &[&[100.0], &[200.0]], &[&[100.0]]),
        ])
        .unwrap();
        let median = steady.estimate(3, |view| view.quantile(0.0, 0.5));
        assert_eq!(median.interval, (20.0, 20.0));
    }

    #[test]
    fn a_group_with_fewer_repetitions_widens_the_interval() {
        // The same four values, once or four times over.
        let spread = |count: usize| -> Vec<Vec<f64>> {
            (0..count)
                .map(|at| vec![100.0 + 10.0 * (at % 4) as f64])
                .collect()
        };
        let width = |count: usize| {
            let samples = spread(count);
            let slices: Vec<&[f64]> = samples.iter().map(Vec::as_slice).collect();
            let mixture = Mixture::new(vec![group(1.0, &slices, &slices)]).unwrap();
            let difference =
                mixture.estimate(5, |view| view.quantile(1.0, 0.5) - view.quantile(0.0, 0.5));
            difference.interval.1 - difference.interval.0
        };
        assert!(width(4) > width(16), "{} against {}", width(4), width(16));
    }

    #[test]
    fn a_group_without_samples_on_a_side_leaves_the_population_unknown() {
        let known = group(0.9, &[&[1.0]], &[&[1.0]]);
        let failed = GroupSamples {
            share: 0.1,
            off: repetitions(&[&[2.0]]),
            on: Vec::new(),
        };
        assert!(Mixture::new(vec![known.clone(), failed]).is_none());
        assert!(Mixture::new(vec![known]).is_some());
    }

    /// Two repetitions a side, one value each: of the six deals of the
    /// four between the sides, two put the medians as far apart as the
    /// data (1 and 2 against 3 and 4, either way round), so p is 1/3.
    #[test]
    fn the_p_value_counts_the_deals_as_far_from_zero_as_the_data() {
        let mixture = Mixture::new(vec![group(1.0, &[&[1.0], &[2.0]], &[&[3.0], &[4.0]])]).unwrap();
        let median_change = |view: &View| view.quantile(1.0, 0.5) - view.quantile(0.0, 0.5);
        let p = mixture.p_value(9, median_change);
        assert!((p - 1.0 / 3.0).abs() < 0.03, "{p}");
        let alike = Mixture::new(vec![group(1.0, &[&[1.0], &[3.0]], &[&[1.0], &[3.0]])]).unwrap();
        assert_eq!(alike.p_value(9, median_change), 1.0);
    }

    #[test]
    fn histogram_counts_weigh_their_values() {
        let repetition = Repetition::new([(5.0, 3), (1.0, 1), (5.0, 0), (f64::NAN, 2)]).unwrap();
        assert_eq!(repetition.cdf(0.5), 0.0);
        assert_eq!(repetition.cdf(1.0), 0.25);
        assert_eq!(repetition.cdf(7.0), 1.0);
        assert!(Repetition::new([(f64::NAN, 1)]).is_none());
    }
}
