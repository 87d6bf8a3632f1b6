//! The studies' claims about migration, with our figures beside them.

use h3lab_results::Proto;

use super::summary::Summary;
use crate::claim::Claim;

/// Study B: connection resets during a network handoff fell 40 % with
/// HTTP/3's connection migration.
const STUDY_B_RESET_CHANGE_PERCENT: f64 = -40.0;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::summary::{summarise, ConnectionRecord, Observed, RequestRecord};
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
