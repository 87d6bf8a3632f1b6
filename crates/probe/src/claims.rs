//! The studies' claims about migration and head-of-line blocking, with our
//! figures beside them.

use std::fmt;

use h3lab_results::Proto;
use serde::Serialize;

use crate::summary::Summary;

/// Study B: connection resets during a network handoff fell 40 % with
/// HTTP/3's connection migration.
const STUDY_B_RESET_CHANGE_PERCENT: f64 = -40.0;

/// Study A: HTTP/3 shows 40 % lower head-of-line blocking latency than
/// HTTP/2 at 1 % loss.
const STUDY_A_HOL_CHANGE_PERCENT: f64 = -40.0;

/// One published claim and what this run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Claim {
    /// The study (see `studies.md`): `A` or `B`.
    pub study: &'static str,
    /// The claim in a few words.
    pub claim: &'static str,
    /// Their figure.
    pub theirs: String,
    /// Ours, from this run.
    pub ours: String,
    /// Their change in percent, when the claim is one.
    pub theirs_change_percent: Option<f64>,
    /// Ours; `None` when it cannot be computed (a protocol not run, or no
    /// h2 failure to compare with).
    pub ours_change_percent: Option<f64>,
    /// Whether ours points the same way as theirs; `None` when unknown.
    pub same_direction: Option<bool>,
}

impl Claim {
    /// A claim that a figure falls by `theirs` percent, beside our
    /// `change`: the same direction when ours falls too.
    fn fall(
        study: &'static str,
        claim: &'static str,
        theirs: f64,
        ours: String,
        change: Option<f64>,
    ) -> Claim {
        Claim {
            study,
            claim,
            theirs: format!("{theirs:+.0} %"),
            ours,
            theirs_change_percent: Some(theirs),
            ours_change_percent: change,
            same_direction: change.map(|change| change < 0.0),
        }
    }
}

/// One line: the claim, theirs, ours, and whether they point the same way.
impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = match self.same_direction {
            Some(true) => "same direction",
            Some(false) => "OTHER direction",
            None => "not comparable",
        };
        write!(
            f,
            "study {}, {}: theirs {}; ours {} ({verdict})",
            self.study, self.claim, self.theirs, self.ours
        )
    }
}

/// Study A's "connection migration: yes/no" and study B's "40 % fewer
/// resets during handoff", from the protocols that ran.
pub fn compare(results: &[(Proto, &Summary)]) -> Vec<Claim> {
    vec![migration_claim(results), resets_claim(results)]
}

fn migration_claim(results: &[(Proto, &Summary)]) -> Claim {
    let expected = |proto: Proto| proto == Proto::H3;
    let yes_no = |yes: bool| if yes { "yes" } else { "no" };
    let ours: Vec<String> = results
        .iter()
        .map(|(proto, summary)| format!("{proto} {}", yes_no(summary.survived)))
        .collect();
    let agrees = results
        .iter()
        .all(|(proto, summary)| summary.survived == expected(*proto));
    Claim {
        study: "A",
        claim: "connection migration",
        theirs: "h1 no, h2 no, h3 yes".to_string(),
        ours: ours.join(", "),
        theirs_change_percent: None,
        ours_change_percent: None,
        same_direction: (!results.is_empty()).then_some(agrees),
    }
}

fn resets_claim(results: &[(Proto, &Summary)]) -> Claim {
    let failed = |wanted: Proto| {
        results
            .iter()
            .find(|(proto, _)| *proto == wanted)
            .map(|(_, summary)| summary.failed)
    };
    let (h2, h3) = (failed(Proto::H2), failed(Proto::H3));
    let change = match (h2, h3) {
        (Some(h2), Some(h3)) if h2 > 0 => Some((h3 as f64 - h2 as f64) / h2 as f64 * 100.0),
        _ => None,
    };
    let ours = match (h2, h3, change) {
        (Some(h2), Some(h3), Some(change)) => {
            format!("failed requests h2 {h2}, h3 {h3}: {change:+.0} %")
        }
        (Some(0), Some(h3), None) => {
            format!("failed requests h2 0, h3 {h3}: no h2 failure to compare")
        }
        _ => "needs both h2 and h3 runs".to_string(),
    };
    Claim::fall(
        "B",
        "connection resets during handoff, h3 against h2",
        STUDY_B_RESET_CHANGE_PERCENT,
        ours,
        change,
    )
}

/// Study A's head-of-line claim beside ours: the mean per-stream stall of
/// h3 against h2's, on the same path at `loss_percent`. `None` means a
/// protocol was not run or had no measured stream.
pub fn hol_claim(
    h2_mean_stall_ms: Option<f64>,
    h3_mean_stall_ms: Option<f64>,
    loss_percent: f64,
) -> Claim {
    let change = match (h2_mean_stall_ms, h3_mean_stall_ms) {
        (Some(h2), Some(h3)) if h2 > 0.0 => Some((h3 - h2) / h2 * 100.0),
        _ => None,
    };
    let ours = match (h2_mean_stall_ms, h3_mean_stall_ms, change) {
        (Some(h2), Some(h3), Some(change)) => format!(
            "mean stall per stream at {loss_percent} % loss: h2 {h2:.1} ms, h3 {h3:.1} ms: {change:+.0} %"
        ),
        (Some(_), Some(h3), None) => {
            format!("h2 never stalled at {loss_percent} % loss (h3 {h3:.1} ms): nothing to compare")
        }
        _ => "needs measured h2 and h3 runs".to_string(),
    };
    Claim::fall(
        "A",
        "head-of-line blocking latency, h3 against h2 at 1 % loss",
        STUDY_A_HOL_CHANGE_PERCENT,
        ours,
        change,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::{summarise, ConnectionRecord, Observed, RequestRecord};
    use h3lab_results::ErrorKind;
    use std::time::Duration;

    /// A run of `total` requests of which `failed` failed, on one
    /// connection that survived when none failed.
    fn summary(total: u64, failed: u64) -> Summary {
        let requests = (0..total)
            .map(|i| RequestRecord {
                intended_at: Duration::from_millis(i * 20),
                finished_at: Duration::from_millis(i * 20 + 21),
                error: (i < failed).then_some(ErrorKind::Reset),
                connection: Some(0),
            })
            .collect();
        let broken = (failed > 0).then_some(Duration::from_millis(30));
        let observed = Observed {
            requests,
            connections: vec![ConnectionRecord {
                ready_at: Duration::ZERO,
                broken_at: broken,
            }],
            switched_at: Duration::from_millis(10),
        };
        summarise(&observed, Duration::from_millis(40))
    }

    #[test]
    fn h3_surviving_and_tcp_breaking_agrees_with_both_studies() {
        let (h1, h2, h3) = (summary(10, 2), summary(10, 4), summary(10, 0));
        let claims = compare(&[(Proto::H1, &h1), (Proto::H2, &h2), (Proto::H3, &h3)]);
        assert_eq!(claims[0].ours, "h1 no, h2 no, h3 yes");
        assert_eq!(claims[0].same_direction, Some(true));
        assert_eq!(claims[1].ours_change_percent, Some(-100.0));
        assert_eq!(claims[1].ours, "failed requests h2 4, h3 0: -100 %");
        assert_eq!(claims[1].same_direction, Some(true));
    }

    #[test]
    fn hol_claim_compares_mean_stalls_and_says_when_it_cannot() {
        let lower = hol_claim(Some(80.0), Some(2.0), 1.0);
        assert_eq!(lower.ours_change_percent, Some(-97.5));
        assert_eq!(lower.same_direction, Some(true));
        assert!(
            lower.ours.contains("h2 80.0 ms, h3 2.0 ms: -98 %"),
            "{}",
            lower.ours
        );
        let higher = hol_claim(Some(2.0), Some(3.0), 2.0);
        assert_eq!(higher.same_direction, Some(false));
        let none = hol_claim(Some(0.0), Some(1.0), 1.0);
        assert_eq!(none.ours_change_percent, None);
        assert!(none.ours.contains("h2 never stalled"), "{}", none.ours);
        assert_eq!(
            hol_claim(None, Some(1.0), 1.0).ours,
            "needs measured h2 and h3 runs"
        );
    }

    #[test]
    fn h3_failing_more_than_h2_is_the_other_direction() {
        let (h2, h3) = (summary(10, 2), summary(10, 3));
        let claims = compare(&[(Proto::H2, &h2), (Proto::H3, &h3)]);
        assert_eq!(claims[0].same_direction, Some(false));
        assert_eq!(claims[1].ours_change_percent, Some(50.0));
        assert_eq!(claims[1].same_direction, Some(false));
    }

    #[test]
    fn without_h2_failures_or_an_h2_run_the_change_is_unknown() {
        let (h2, h3) = (summary(10, 0), summary(10, 0));
        let claims = compare(&[(Proto::H2, &h2), (Proto::H3, &h3)]);
        assert_eq!(claims[1].ours_change_percent, None);
        assert_eq!(claims[1].same_direction, None);
        assert!(
            claims[1].ours.contains("no h2 failure"),
            "{}",
            claims[1].ours
        );
        let only_h3 = compare(&[(Proto::H3, &h3)]);
        assert_eq!(only_h3[1].ours, "needs both h2 and h3 runs");
    }
}
