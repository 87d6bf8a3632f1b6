//! Published figures beside ours: for each study claim, our median for the
//! matching cell and whether the direction of the effect agrees.
//!
//! Direction means which protocol of a pair is better. The pairs are every
//! published protocol against the suite's baseline protocol (e.g. h3 vs h2,
//! h1 vs h2); when the baseline has no published figure, every pair of
//! published protocols. Ours names a direction only when its bootstrap
//! interval excludes zero ([`Difference::call`]), as everywhere else in
//! the report.
//!
//! A claim may publish a difference instead of values: a `published` key
//! `a-b` (e.g. `"h2-h3": 200`, study C's "H3 loaded 200 ms faster than
//! H2") is `a`'s value minus `b`'s in the claim's unit. It is compared as
//! the pair `b` vs `a`, with our median difference and its interval in
//! the same unit.
//!
//! A claim about what a cell costs (`measure`, e.g. request header bytes)
//! compares that cost, one value per repetition, instead of the
//! workload's own figure; lower is better.
//!
//! A claim about a swept tunable (`sweep`, e.g. "BBR gives 18 % more RPS
//! than Cubic") publishes a figure per value; each of our protocols is
//! compared across the values, in the cells `WORKLOAD [TUNABLE=VALUE]`.

use std::collections::BTreeMap;

use h3lab_results::bench::{ClaimSweep, StudyClaim, SweptSetting};
use h3lab_results::CostMeasure;

use crate::cell::{CellKey, CellSummary};
use crate::stats::{RelativeDiff, Verdict};
use h3lab_results::difference::{Call, Difference};

/// One protocol's published figure and our median for the same cell (or,
/// for a difference claim, the published difference and ours).
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimRow {
    /// A protocol, or `a − b` for a difference.
    pub protocol: String,
    pub published: f64,
    /// Our median, with its unit and sample count; `None` when the cell was
    /// not run or all its repetitions failed.
    pub ours: Option<(f64, String, usize)>,
}

/// Subject against other: the published effect and ours, relative for
/// published values, absolute for a published difference.
#[derive(Debug, Clone, PartialEq)]
pub struct PairDirection {
    pub subject: String,
    pub other: String,
    pub published: Option<Effect>,
    pub ours: Option<Difference>,
}

/// How our difference of a pair relates to the published one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agreement {
    /// Our interval excludes zero on the published side.
    Agrees,
    /// Our interval spans zero.
    NoClearDifference,
    /// Our interval excludes zero on the other side (or the study
    /// published a tie).
    Differs,
    /// Fewer than two repetitions on a side of ours.
    TooFewRepetitions,
    /// A published figure or one of our cells is missing.
    MissingData,
}

impl Agreement {
    /// The verdict in words, e.g. `direction agrees`.
    pub fn text(self) -> &'static str {
        match self {
            Agreement::Agrees => "direction agrees",
            Agreement::NoClearDifference => "no clear difference",
            Agreement::Differs => "direction DIFFERS",
            Agreement::TooFewRepetitions => "too few repetitions",
            Agreement::MissingData => "direction unknown (missing data)",
        }
    }
}

/// A published effect of subject against other: relative, from two
/// published values, or absolute, from a published difference.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// From two published values.
    Relative(RelativeDiff),
    /// From a published difference: subject's value minus other's.
    Absolute {
        change: f64,
        unit: String,
        verdict: Verdict,
    },
}

impl Effect {
    /// Whether the subject is better.
    pub fn verdict(&self) -> Verdict {
        match self {
            Effect::Relative(diff) => diff.verdict,
            Effect::Absolute { verdict, .. } => *verdict,
        }
    }

    /// e.g. `-29.2 % better` or `-200 ms better`.
    pub fn describe(&self) -> String {
        match self {
            Effect::Relative(diff) => diff.describe(),
            Effect::Absolute {
                change,
                unit,
                verdict,
            } => format!("{change:+} {unit} {}", verdict.word()),
        }
    }
}

impl PairDirection {
    /// Our call, from [`Difference::call`], against the published direction.
    pub fn agreement(&self) -> Agreement {
        let (Some(published), Some(ours)) = (&self.published, &self.ours) else {
            return Agreement::MissingData;
        };
        match (ours.call(), published.verdict()) {
            (Call::TooFewRepetitions, _) => Agreement::TooFewRepetitions,
            (Call::NoClearDifference, _) => Agreement::NoClearDifference,
            (Call::Better, Verdict::Better) | (Call::Worse, Verdict::Worse) => Agreement::Agrees,
            (Call::Better | Call::Worse, _) => Agreement::Differs,
        }
    }

    /// e.g. `h3 vs h2: published -29.2 % better, ours -12.0 % [-15.1, -9.3]:
    /// direction agrees`.
    pub fn describe(&self) -> String {
        let missing = || "no data".to_string();
        format!(
            "{} vs {}: published {}, ours {}: {}",
            self.subject,
            self.other,
            self.published
                .as_ref()
                .map_or_else(missing, Effect::describe),
            self.ours.as_ref().map_or_else(missing, Difference::figure),
            self.agreement().text()
        )
    }
}

#[derive(Debug, Clone)]
pub struct ClaimComparison<'a> {
    pub claim: &'a StudyClaim,
    pub rows: Vec<ClaimRow>,
    pub pairs: Vec<PairDirection>,
}

impl ClaimComparison<'_> {
    /// True when any pair's direction differs, so the caveat must be shown.
    pub fn differs(&self) -> bool {
        self.pairs
            .iter()
            .any(|pair| pair.agreement() == Agreement::Differs)
    }
}

/// Matches each claim with our cells.
pub fn compare_claims<'a>(
    claims: &'a [StudyClaim],
    summaries: &[CellSummary],
    baseline: &str,
) -> Vec<ClaimComparison<'a>> {
    let by_key: BTreeMap<&CellKey, &CellSummary> = summaries.iter().map(|s| (&s.key, s)).collect();
    let costed: BTreeMap<CostMeasure, Vec<CellSummary>> = claims
        .iter()
        .filter_map(|claim| claim.measure)
        .map(|cost| {
            (
                cost,
                summaries.iter().filter_map(|s| s.costing(cost)).collect(),
            )
        })
        .collect();
    let costed_by_key: BTreeMap<CostMeasure, ByKey> = costed
        .iter()
        .map(|(cost, summaries)| (*cost, summaries.iter().map(|s| (&s.key, s)).collect()))
        .collect();
    claims
        .iter()
        .map(|claim| {
            let by_key = match claim.measure {
                Some(cost) => &costed_by_key[&cost],
                None => &by_key,
            };
            if let Some(sweep) = &claim.sweep {
                return compare_sweep(claim, sweep, by_key);
            }
            if let Some(differences) = differences(claim) {
                return compare_difference(claim, &differences, by_key);
            }
            let ours = |protocol: &str| our_cell(claim, by_key, protocol);
            let rows = claim
                .published
                .iter()
                .map(|(protocol, &published)| ClaimRow {
                    protocol: protocol.clone(),
                    published,
                    ours: ours(protocol).and_then(|s| {
                        let stats = s.stats.as_ref()?;
                        Some((stats.median, s.unit.clone(), stats.n))
                    }),
                })
                .collect();
            let pairs = pairs_of(claim, baseline)
                .into_iter()
                .map(|(subject, other)| PairDirection {
                    published: RelativeDiff::new(
                        claim.published[&subject],
                        claim.published[&other],
                        claim.higher_is_better,
                    )
                    .map(Effect::Relative),
                    ours: our_difference(ours(&subject), ours(&other)),
                    subject,
                    other,
                })
                .collect();
            ClaimComparison { claim, rows, pairs }
        })
        .collect()
}

type ByKey<'s> = BTreeMap<&'s CellKey, &'s CellSummary>;

/// Our summary of `protocol` in the claim's cell, when it has data.
fn our_cell<'s>(claim: &StudyClaim, by_key: &ByKey<'s>, protocol: &str) -> Option<&'s CellSummary> {
    let key = CellKey {
        profile: claim.profile.clone(),
        workload: claim.workload.clone(),
        protocol: protocol.to_string(),
        mode: claim.mode.clone(),
        replica: None,
    };
    by_key.get(&key).copied().filter(|s| s.stats.is_some())
}

/// `(a, b, value)` for every `a-b` key when all keys are differences.
fn differences(claim: &StudyClaim) -> Option<Vec<(String, String, f64)>> {
    if claim.published.is_empty() {
        return None;
    }
    claim
        .published
        .iter()
        .map(|(key, &value)| {
            let (a, b) = key.split_once('-')?;
            (!a.is_empty() && !b.is_empty() && !b.contains('-'))
                .then(|| (a.to_string(), b.to_string(), value))
        })
        .collect()
}

/// A claim publishing `a − b`: rows of published and our differences,
/// and the pair `b` vs `a`.
fn compare_difference<'a>(
    claim: &'a StudyClaim,
    differences: &[(String, String, f64)],
    by_key: &ByKey,
) -> ClaimComparison<'a> {
    let mut rows = Vec::new();
    let mut pairs = Vec::new();
    for (a, b, value) in differences {
        let (ours_a, ours_b) = (our_cell(claim, by_key, a), our_cell(claim, by_key, b));
        let ours = ours_a.zip(ours_b).and_then(|(a, b)| {
            let (sa, sb) = (a.stats.as_ref()?, b.stats.as_ref()?);
            Some((sa.median - sb.median, a.unit.clone(), sa.n.min(sb.n)))
        });
        let our_change = ours_b.zip(ours_a).and_then(|(subject, other)| {
            Difference::absolute(
                &subject.samples_by_repetition,
                &other.samples_by_repetition,
                &subject.unit,
                subject.higher_is_better,
                subject.key.seed_against(&other.key),
            )
        });
        rows.push(ClaimRow {
            protocol: format!("{a} − {b}"),
            published: *value,
            ours,
        });
        let change = -value;
        let verdict = if change == 0.0 {
            Verdict::Same
        } else if (change > 0.0) == claim.higher_is_better {
            Verdict::Better
        } else {
            Verdict::Worse
        };
        pairs.push(PairDirection {
            subject: b.clone(),
            other: a.clone(),
            published: value.is_finite().then(|| Effect::Absolute {
                change,
                unit: claim.unit.clone(),
                verdict,
            }),
            ours: our_change,
        });
    }
    ClaimComparison { claim, rows, pairs }
}

/// A claim about a swept tunable: for each of our protocols, each
/// published value's cell against the baseline value's, relative.
fn compare_sweep<'a>(
    claim: &'a StudyClaim,
    sweep: &ClaimSweep,
    by_key: &ByKey,
) -> ClaimComparison<'a> {
    let ran = |value: &str, protocol: &str| {
        let key = CellKey {
            profile: claim.profile.clone(),
            workload: SweptSetting {
                tunable: sweep.tunable.clone(),
                value: value.to_string(),
            }
            .row_label(&claim.workload),
            protocol: protocol.to_string(),
            mode: claim.mode.clone(),
            replica: None,
        };
        by_key.get(&key).copied()
    };
    let cell = |value: &str, protocol: &str| ran(value, protocol).filter(|s| s.stats.is_some());
    // A protocol some value's server does not offer (an h3-only server's
    // h1) was never run there: it has no row, rather than one of no data.
    // One that ran and failed keeps its row, with no data.
    let protocols: std::collections::BTreeSet<&str> = by_key
        .keys()
        .filter(|key| key.profile == claim.profile && key.mode == claim.mode)
        .filter(|key| {
            claim
                .published
                .keys()
                .all(|value| ran(value, &key.protocol).is_some())
        })
        .map(|key| key.protocol.as_str())
        .collect();
    let (mut rows, mut pairs) = (Vec::new(), Vec::new());
    let baseline = &sweep.baseline;
    for protocol in protocols {
        for (value, &published) in &claim.published {
            rows.push(ClaimRow {
                protocol: format!("{protocol} {}={value}", sweep.tunable),
                published,
                ours: cell(value, protocol).and_then(|s| {
                    let stats = s.stats.as_ref()?;
                    Some((stats.median, s.unit.clone(), stats.n))
                }),
            });
            if value == baseline {
                continue;
            }
            pairs.push(PairDirection {
                subject: format!("{protocol} {}={value}", sweep.tunable),
                other: format!("{protocol} {}={baseline}", sweep.tunable),
                published: claim.published.get(baseline).and_then(|&other| {
                    RelativeDiff::new(published, other, claim.higher_is_better)
                        .map(Effect::Relative)
                }),
                ours: our_difference(cell(value, protocol), cell(baseline, protocol)),
            });
        }
    }
    ClaimComparison { claim, rows, pairs }
}

/// Our relative difference of subject against other, seeded like the
/// summary's `vs_baseline` so the same pair shows the same interval.
fn our_difference(
    subject: Option<&CellSummary>,
    other: Option<&CellSummary>,
) -> Option<Difference> {
    let (subject, other) = (subject?, other?);
    Difference::relative(
        &subject.samples_by_repetition,
        &other.samples_by_repetition,
        subject.higher_is_better,
        subject.key.seed_against(&other.key),
    )
}

fn pairs_of(claim: &StudyClaim, baseline: &str) -> Vec<(String, String)> {
    let protocols: Vec<&String> = claim.published.keys().collect();
    if claim.published.contains_key(baseline) {
        return protocols
            .iter()
            .filter(|p| p.as_str() != baseline)
            .map(|subject| (subject.to_string(), baseline.to_string()))
            .collect();
    }
    let mut pairs = Vec::new();
    for (index, other) in protocols.iter().enumerate() {
        for subject in &protocols[index + 1..] {
            pairs.push((subject.to_string(), other.to_string()));
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;
    use crate::summary::summarize;

    /// h3 at 100 to 104 req/s with Cubic and 112 to 116 with BBR; h2 at
    /// 50 with both; five repetitions each.
    fn swept_results() -> h3lab_results::bench::Results {
        let mut results = fixture::results();
        results.cells.clear();
        for (cc, h2, h3) in [("cubic", 50.0, 100.0), ("bbr", 50.0, 112.0)] {
            for rep in 0..fixture::REPETITIONS {
                for (protocol, figure) in [("h2", h2), ("h3", h3 + f64::from(rep))] {
                    let mut record = fixture::rps_record("broadband", protocol, rep, figure, None);
                    record.workload = format!("rps-1k [cc={cc}]");
                    results.cells.push(record);
                }
            }
        }
        results.studies = vec![StudyClaim {
            sweep: Some(ClaimSweep {
                tunable: "cc".into(),
                baseline: "cubic".into(),
            }),
            published: BTreeMap::from([("cubic".into(), 100.0), ("bbr".into(), 118.0)]),
            unit: "% of Cubic's RPS".into(),
            ..results.studies[0].clone()
        }];
        results
    }

    #[test]
    fn a_cost_claim_compares_the_cost_not_the_workloads_figure() {
        let mut results = fixture::results();
        results.cells.clear();
        for rep in 0..fixture::REPETITIONS {
            // h3 is faster, but its request headers cost more.
            for (protocol, rps, header_bytes) in [("h2", 100.0, 800), ("h3", 120.0, 1100)] {
                let mut record = fixture::rps_record("broadband", protocol, rep, rps, None);
                let later = h3lab_results::bench::BlockTally {
                    blocks: 10,
                    bytes: 10 * (header_bytes + u64::from(rep)),
                };
                record.header_blocks = Some(h3lab_results::bench::HeaderBlocks {
                    request_later: later,
                    ..Default::default()
                });
                results.cells.push(record);
            }
        }
        results.studies = vec![StudyClaim {
            published: BTreeMap::from([("h2".into(), 1000.0), ("h3".into(), 800.0)]),
            unit: "B/request".into(),
            higher_is_better: false,
            measure: Some(CostMeasure::RequestHeaderBytes),
            ..results.studies[0].clone()
        }];
        let comparisons = compare_claims(&results.studies, &summarize(&results), "h2");
        let rows = &comparisons[0].rows;
        let h3 = rows.iter().find(|row| row.protocol == "h3").unwrap();
        // 1100 to 1104 bytes a request over the five repetitions.
        assert_eq!(h3.ours, Some((1102.0, "B/request".to_string(), 5)));
        let pair = &comparisons[0].pairs[0];
        assert_eq!(pair.agreement(), Agreement::Differs, "{}", pair.describe());
    }

    #[test]
    fn a_sweep_claim_compares_each_protocol_across_the_values() {
        let results = swept_results();
        let summaries = summarize(&results);
        let comparisons = compare_claims(&results.studies, &summaries, "h2");
        let pairs: Vec<String> = comparisons[0]
            .pairs
            .iter()
            .map(PairDirection::describe)
            .collect();
        assert_eq!(pairs.len(), 2, "{pairs:#?}");
        let expected = [
            (
                "h2 cc=bbr vs h2 cc=cubic: published +18.0 % better",
                Agreement::NoClearDifference,
            ),
            ("h3 cc=bbr vs h3 cc=cubic", Agreement::Agrees),
        ];
        for ((described, pair), (start, agreement)) in
            pairs.iter().zip(&comparisons[0].pairs).zip(expected)
        {
            assert!(described.starts_with(start), "{pairs:#?}");
            assert_eq!(pair.agreement(), agreement, "{pairs:#?}");
        }
        let rows: Vec<(&str, f64, Option<f64>)> = comparisons[0]
            .rows
            .iter()
            .map(|row| {
                (
                    row.protocol.as_str(),
                    row.published,
                    row.ours.as_ref().map(|o| o.0),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("h2 cc=bbr", 118.0, Some(50.0)),
                ("h2 cc=cubic", 100.0, Some(50.0)),
                ("h3 cc=bbr", 118.0, Some(114.0)),
                ("h3 cc=cubic", 100.0, Some(102.0)),
            ]
        );
    }

    #[test]
    fn pairs_every_protocol_with_the_baseline() {
        let results = fixture::results();
        let summaries = summarize(&results);
        let comparisons = compare_claims(&results.studies, &summaries, "h2");

        let rps = &comparisons[0];
        let pairs: Vec<(&str, &str)> = rps
            .pairs
            .iter()
            .map(|p| (p.subject.as_str(), p.other.as_str()))
            .collect();
        assert_eq!(pairs, [("h1", "h2"), ("h3", "h2")]);
        assert!(rps.pairs.iter().all(|p| p.agreement() == Agreement::Agrees));
        assert!(!rps.differs());
        let h3 = rps.rows.iter().find(|r| r.protocol == "h3").unwrap();
        assert_eq!(h3.published, 42100.0);
        assert_eq!(h3.ours, Some((250.0, "req/s".to_string(), 5)));
        // The same interval as the summary's vs_baseline of the same cell.
        let summary = summaries
            .iter()
            .find(|s| {
                s.key.profile == "broadband" && s.key.workload == "rps-1k" && s.key.protocol == "h3"
            })
            .unwrap();
        assert_eq!(rps.pairs[1].ours, summary.vs_baseline);

        // Published: h3 cold 2 RTT vs h2 3 RTT (better); ours 75 ms vs 65 ms,
        // every h3 repetition slower than every h2 one (clearly worse).
        let cold = &comparisons[1];
        let pair = &cold.pairs[0];
        assert_eq!(pair.published.as_ref().unwrap().verdict(), Verdict::Better);
        assert_eq!(pair.ours.as_ref().unwrap().call(), Call::Worse);
        assert_eq!(pair.agreement(), Agreement::Differs);
        assert!(cold.differs());
        assert!(pair.describe().ends_with("direction DIFFERS"));
    }

    /// Published h1 slower than h2 (120 vs 115 ms); ours from single-sample
    /// repetitions.
    fn h1_against_h2(h1: &[f64], h2: &[f64]) -> PairDirection {
        let repetitions = |values: &[f64]| values.iter().map(|&v| vec![v]).collect::<Vec<_>>();
        PairDirection {
            subject: "h1".into(),
            other: "h2".into(),
            published: RelativeDiff::new(120.0, 115.0, false).map(Effect::Relative),
            ours: Difference::relative(&repetitions(h1), &repetitions(h2), false, 1),
        }
    }

    #[test]
    fn an_opposite_difference_inside_the_noise_names_no_direction() {
        // Ours: h1 median 61.9 below h2 63.9, but the ranges overlap.
        let h2 = [59.0, 63.9, 64.0, 62.5, 67.0];
        let small = h1_against_h2(&[60.0, 61.9, 66.0, 58.5, 65.0], &h2);
        assert_eq!(small.ours.as_ref().unwrap().call(), Call::NoClearDifference);
        assert_eq!(small.agreement(), Agreement::NoClearDifference);
        assert!(
            small.describe().ends_with(": no clear difference"),
            "{}",
            small.describe()
        );
        // A clear gap on the other side of the published one differs...
        let opposite = h1_against_h2(&[50.0, 51.0, 52.0, 53.0, 54.0], &h2);
        assert_eq!(opposite.agreement(), Agreement::Differs);
        // ...and one on the published side agrees.
        let same_side = h1_against_h2(&[70.0, 71.0, 72.0, 73.0, 74.0], &h2);
        assert_eq!(same_side.agreement(), Agreement::Agrees);
    }

    #[test]
    fn one_repetition_is_too_few_to_compare_a_direction() {
        let mut results = fixture::results();
        results.cells.retain(|r| r.repetition == 0);
        let comparisons = compare_claims(&results.studies, &summarize(&results), "h2");
        let pair = &comparisons[1].pairs[0];
        assert_eq!(pair.agreement(), Agreement::TooFewRepetitions);
        assert!(!comparisons[1].differs());
        assert!(pair.describe().ends_with(": too few repetitions"));
    }

    #[test]
    fn without_a_published_baseline_every_pair_is_compared() {
        let mut results = fixture::results();
        results.studies[0].published.remove("h2");
        results.studies[0].profile = "nowhere".into();
        let comparisons = compare_claims(&results.studies, &summarize(&results), "h2");
        let pair = &comparisons[0].pairs[0];
        assert_eq!((pair.subject.as_str(), pair.other.as_str()), ("h3", "h1"));
        assert_eq!(pair.ours, None);
        assert_eq!(pair.agreement(), Agreement::MissingData);
        assert!(comparisons[0].rows.iter().all(|r| r.ours.is_none()));
    }

    #[test]
    fn a_published_difference_is_compared_as_a_pair() {
        let mut results = fixture::with_page_repetitions(5);
        // Study C style: "H3 loaded 200 ms faster than H2" on broadband.
        let mut claim = results.studies.last().unwrap().clone();
        claim.profile = "broadband".into();
        claim.published = BTreeMap::from([("h2-h3".into(), 200.0)]);
        results.studies = vec![claim];
        let comparisons = compare_claims(&results.studies, &summarize(&results), "h2");
        let comparison = &comparisons[0];
        // Ours: 100 loads each, repetition r is r % slower. Medians over the
        // five repetitions: h2 (390 × 1.03 + 400 × 1.01) / 2 = 402.85, h3
        // (300 × 1.01 + 295 × 1.03) / 2 = 303.425; of repetition r alone
        // h2 395 × (1 + r / 100), h3 297.5 × (1 + r / 100).
        let (difference, unit, n) = comparison.rows[0].ours.clone().unwrap();
        assert_eq!(comparison.rows[0].protocol, "h2 − h3");
        assert_eq!(comparison.rows[0].published, 200.0);
        assert!((difference - 99.425).abs() < 1e-9, "{difference}");
        assert_eq!((unit.as_str(), n), ("ms", 100));
        let pair = &comparison.pairs[0];
        assert_eq!((pair.subject.as_str(), pair.other.as_str()), ("h3", "h2"));
        assert_eq!(pair.published.as_ref().unwrap().verdict(), Verdict::Better);
        let ours = pair.ours.as_ref().unwrap();
        assert_eq!(ours.scale, h3lab_results::difference::Scale::Absolute);
        assert!(
            (ours.estimate + 99.425).abs() < 1e-9,
            "h3 − h2 = −(h2 − h3)"
        );
        // Five repetitions a side, wholly apart: the ends are the third
        // smallest and third largest of the 25 differences of an h3
        // repetition's median and an h2 one's (found by bisection, hence
        // the tolerance); in ms, as the published difference.
        let (low, high) = ours.interval.unwrap();
        assert!((low - (297.5 - 395.0 * 1.03)).abs() < 1e-5, "{low}");
        assert!(
            (high - (297.5 * 1.04 - 395.0 * 1.01)).abs() < 1e-5,
            "{high}"
        );
        assert_eq!(
            pair.describe(),
            "h3 vs h2: published -200 ms better, ours -99.43 ms [-109.3, -89.55]: direction agrees"
        );

        // A published slow-down disagrees with ours.
        results.studies[0].published = BTreeMap::from([("h2-h3".into(), -50.0)]);
        let comparisons = compare_claims(&results.studies, &summarize(&results), "h2");
        assert!(comparisons[0].differs());
    }
}
