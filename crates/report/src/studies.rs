//! Published figures beside ours: for each study claim, our median for the
//! matching cell and whether the direction of the effect agrees.
//!
//! Direction means which protocol of a pair is better. The pairs are every
//! published protocol against the suite's baseline protocol (e.g. h3 vs h2,
//! h1 vs h2); when the baseline has no published figure, every pair of
//! published protocols.
//!
//! A claim may publish a difference instead of values: a `published` key
//! `a-b` (e.g. `"h2-h3": 200`, study C's "H3 loaded 200 ms faster than
//! H2") is `a`'s value minus `b`'s in the claim's unit. It is compared as
//! the pair `b` vs `a` with our median difference beside it.

use std::collections::BTreeMap;

use h3lab_results::bench::StudyClaim;

use crate::stats::{RelativeDiff, Verdict};
use crate::summary::{CellKey, CellSummary};

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

/// Subject against other: published and measured relative difference.
#[derive(Debug, Clone, PartialEq)]
pub struct PairDirection {
    pub subject: String,
    pub other: String,
    pub published: Option<Effect>,
    pub ours: Option<RelativeDiff>,
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

/// A measured difference smaller than this (in %) names no direction: on a
/// shared 2-core machine repetitions spread by about that much.
pub const NOISE_PERCENT: f64 = 5.0;

impl PairDirection {
    /// `Some(true)` when both say the same protocol is better (or both tie),
    /// `None` when either side is missing.
    pub fn agrees(&self) -> Option<bool> {
        Some(self.published.as_ref()?.verdict() == self.ours?.verdict)
    }

    /// A disagreement that is not just our difference being within noise.
    pub fn clearly_differs(&self) -> bool {
        self.agrees() == Some(false) && self.ours.is_some_and(|d| d.percent.abs() >= NOISE_PERCENT)
    }

    /// The verdict in words, e.g. `direction agrees`.
    pub fn verdict(&self) -> &'static str {
        match self.agrees() {
            Some(true) => "direction agrees",
            Some(false) if self.clearly_differs() => "direction DIFFERS",
            Some(false) => "ours within ±5 %: no clear direction",
            None => "direction unknown (missing data)",
        }
    }

    /// e.g. `h3 vs h2: published -29.2 % better, ours -12.0 % better: direction agrees`.
    pub fn describe(&self) -> String {
        let missing = || "no data".to_string();
        format!(
            "{} vs {}: published {}, ours {}: {}",
            self.subject,
            self.other,
            self.published
                .as_ref()
                .map_or_else(missing, Effect::describe),
            self.ours.map_or_else(missing, |d| d.describe()),
            self.verdict()
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
        self.pairs.iter().any(PairDirection::clearly_differs)
    }
}

/// Matches each claim with our cells.
pub fn compare_claims<'a>(
    claims: &'a [StudyClaim],
    summaries: &[CellSummary],
    baseline: &str,
) -> Vec<ClaimComparison<'a>> {
    let by_key: BTreeMap<&CellKey, &CellSummary> = summaries.iter().map(|s| (&s.key, s)).collect();
    claims
        .iter()
        .map(|claim| {
            if let Some(differences) = differences(claim) {
                return compare_difference(claim, &differences, &by_key);
            }
            let ours = |protocol: &str| -> Option<&CellSummary> {
                let key = CellKey {
                    profile: claim.profile.clone(),
                    workload: claim.workload.clone(),
                    protocol: protocol.to_string(),
                    mode: claim.mode.clone(),
                };
                by_key.get(&key).copied().filter(|s| s.stats.is_some())
            };
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
            ours: our_difference(ours_b, ours_a),
        });
    }
    ClaimComparison { claim, rows, pairs }
}

fn our_difference(
    subject: Option<&CellSummary>,
    other: Option<&CellSummary>,
) -> Option<RelativeDiff> {
    let (subject, other) = (subject?, other?);
    RelativeDiff::new(
        subject.stats.as_ref()?.median,
        other.stats.as_ref()?.median,
        subject.higher_is_better,
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
    use crate::stats::Verdict;
    use crate::summary::summarize;

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
        assert!(rps.pairs.iter().all(|p| p.agrees() == Some(true)));
        assert!(!rps.differs());
        let h3 = rps.rows.iter().find(|r| r.protocol == "h3").unwrap();
        assert_eq!(h3.published, 42100.0);
        assert_eq!(h3.ours, Some((250.0, "req/s".to_string(), 3)));

        // Published: h3 cold 2 RTT vs h2 3 RTT (better); ours 73 ms vs 63 ms (worse).
        let cold = &comparisons[1];
        let pair = &cold.pairs[0];
        assert_eq!(pair.published.as_ref().unwrap().verdict(), Verdict::Better);
        assert_eq!(pair.ours.unwrap().verdict, Verdict::Worse);
        assert_eq!(pair.agrees(), Some(false));
        assert!(cold.differs());
        assert!(pair.describe().ends_with("direction DIFFERS"));
    }

    #[test]
    fn a_small_opposite_difference_names_no_direction() {
        let published = RelativeDiff::new(120.0, 115.0, false).map(Effect::Relative);
        let small = PairDirection {
            subject: "h1".into(),
            other: "h2".into(),
            published,
            ours: RelativeDiff::new(61.9, 63.9, false),
        };
        assert_eq!(small.agrees(), Some(false));
        assert!(!small.clearly_differs(), "-3.1 % is within noise");
        assert!(
            small.describe().ends_with("no clear direction"),
            "{}",
            small.describe()
        );
        let large = PairDirection {
            ours: RelativeDiff::new(50.0, 63.9, false),
            ..small
        };
        assert!(large.clearly_differs());
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
        assert_eq!(pair.agrees(), None);
        assert!(comparisons[0].rows.iter().all(|r| r.ours.is_none()));
    }

    #[test]
    fn a_published_difference_is_compared_as_a_pair() {
        let mut results = fixture::with_pages();
        // Study C style: "H3 loaded 200 ms faster than H2" on broadband.
        let mut claim = results.studies.last().unwrap().clone();
        claim.profile = "broadband".into();
        claim.published = BTreeMap::from([("h2-h3".into(), 200.0)]);
        results.studies = vec![claim];
        let comparisons = compare_claims(&results.studies, &summarize(&results), "h2");
        let comparison = &comparisons[0];
        // Ours: h2 median 395 − h3 median 297.5 = 97.5 ms, 20 loads each.
        assert_eq!(
            comparison.rows,
            [ClaimRow {
                protocol: "h2 − h3".into(),
                published: 200.0,
                ours: Some((97.5, "ms".into(), 20)),
            }]
        );
        let pair = &comparison.pairs[0];
        assert_eq!((pair.subject.as_str(), pair.other.as_str()), ("h3", "h2"));
        assert_eq!(pair.published.as_ref().unwrap().verdict(), Verdict::Better);
        assert_eq!(pair.ours.unwrap().verdict, Verdict::Better);
        assert_eq!(
            pair.describe(),
            "h3 vs h2: published -200 ms better, ours -24.7 % better: direction agrees"
        );

        // A published slow-down disagrees with ours.
        results.studies[0].published = BTreeMap::from([("h2-h3".into(), -50.0)]);
        let comparisons = compare_claims(&results.studies, &summarize(&results), "h2");
        assert!(comparisons[0].differs());
    }
}
